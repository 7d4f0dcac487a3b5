/* ev: the single-threaded event loop of both daemons: epoll for fds,
   timerfd for timers, signalfd for signals, and before-poll hooks that
   flush queued writes and free objects marked closing (STYLE 4, 7). */
#ifndef PTG_EV_H
#define PTG_EV_H

#include <stdint.h>

struct ev_loop;
struct ev_io;
struct ev_timer;

enum { EV_READ = 1, EV_WRITE = 2 };

/* events: the EV_* bits that fired, plus EV_READ on hang-up or error so
   the owner's read sees it. */
typedef void (*ev_io_cb)(struct ev_io *io, int fd, unsigned events, void *user);
typedef void (*ev_timer_cb)(struct ev_timer *t, void *user);
typedef void (*ev_signal_cb)(int signo, void *user);
typedef void (*ev_hook_cb)(void *user);

struct ev_loop *ev_loop_new(void);
/* Frees the loop; every io and timer must be freed first. */
void ev_loop_free(struct ev_loop *loop);
/* Runs until ev_loop_stop; returns 0 or a negative errno. */
int ev_loop_run(struct ev_loop *loop);
void ev_loop_stop(struct ev_loop *loop);

/* Watches fd (the caller keeps owning it, and frees the io before closing
   it) for events; NULL with errno set if fd cannot be watched. */
struct ev_io *ev_io_new(struct ev_loop *loop, int fd, unsigned events,
			ev_io_cb cb, void *user);
void ev_io_set(struct ev_io *io, unsigned events);
unsigned ev_io_events(const struct ev_io *io);
/* Stops watching; safe to call from inside the io's own callback. */
void ev_io_free(struct ev_io *io);

/* A timer firing after after_ms, then every repeat_ms (0: once). Not
   armed when after_ms < 0. */
struct ev_timer *ev_timer_new(struct ev_loop *loop, int64_t after_ms,
			      int64_t repeat_ms, ev_timer_cb cb, void *user);
void ev_timer_arm(struct ev_timer *t, int64_t after_ms, int64_t repeat_ms);
void ev_timer_disarm(struct ev_timer *t);
int ev_timer_armed(const struct ev_timer *t);
/* Safe to call from inside the timer's own callback. */
void ev_timer_free(struct ev_timer *t);

/* Blocks signo and delivers it through the loop. One handler per signal. */
int ev_signal_add(struct ev_loop *loop, int signo, ev_signal_cb cb, void *user);
/* For a forked child before exec: unblocks every signal, since the mask
   ev_signal_add set would otherwise be inherited by the program. */
void ev_signal_child_reset(void);

/* Runs cb before every wait for events. */
void ev_hook_add(struct ev_loop *loop, ev_hook_cb cb, void *user);
/* Removes the hook added with this cb and user; safe from inside hooks,
   the hook itself included. */
void ev_hook_remove(struct ev_loop *loop, ev_hook_cb cb, void *user);

#endif
