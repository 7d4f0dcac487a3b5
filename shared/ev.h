/* ev: the single-threaded event loop of both daemons: epoll for fds,
   an in-loop min-heap for timers (no fd per timer), signalfd for
   signals, and before-poll hooks that flush queued writes and free
   objects marked closing, so none is freed inside its own callback. */
#ifndef PTG_EV_H
#define PTG_EV_H

#include <stdbool.h>
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
/* Runs until ev_loop_stop; returns 0 or a negative errno. Each turn runs
   the hooks, waits for fds (at most until the earliest timer), calls the
   ready ios and signal handlers, then the expired timers. */
int ev_loop_run(struct ev_loop *loop);
void ev_loop_stop(struct ev_loop *loop);
/* For a hook that left work for the next turn: that turn's wait for fds
   does not block (it only collects what is ready). */
void ev_loop_again(struct ev_loop *loop);

/* Watches fd (the caller keeps owning it, and frees the io before closing
   it) for events; NULL with errno set if fd cannot be watched. */
struct ev_io *ev_io_new(struct ev_loop *loop, int fd, unsigned events, ev_io_cb cb,
			void *user);
void ev_io_set(struct ev_io *io, unsigned events);
/* An urgent io's callback runs before the other ios that were ready in
   the same turn (a keystroke's input and echo before a flood's batch);
   ios are not urgent until set so. */
void ev_io_set_urgent(struct ev_io *io, bool urgent);
bool ev_io_urgent(const struct ev_io *io);
unsigned ev_io_events(const struct ev_io *io);
/* Stops watching; safe to call from inside the io's own callback. */
void ev_io_free(struct ev_io *io);

/* Timers hold no fd, so any number may exist. Resolution is 1 ms on
   CLOCK_MONOTONIC: a timer never fires before its delay has passed, and
   later only by the loop's latency. Expired timers fire in deadline
   order (equal deadlines in arming order), each at most once per turn:
   one re-armed at 0 ms from its callback fires again next turn, after
   the fds are polled, so it cannot starve I/O. A repeating timer that
   missed periods fires once and stays on its period's grid. */

/* A timer firing after after_ms, then every repeat_ms (0: once). Not
   armed when after_ms < 0. Never fails (allocation aborts: xalloc.h). */
struct ev_timer *ev_timer_new(struct ev_loop *loop, int64_t after_ms, int64_t repeat_ms,
			      ev_timer_cb cb, void *user);
/* (Re)arms t as ev_timer_new would, replacing any pending expiry;
   after_ms < 0 disarms. Safe from any callback, t's own included. */
void ev_timer_arm(struct ev_timer *t, int64_t after_ms, int64_t repeat_ms);
/* Cancels a pending expiry, also one due later in the current turn. */
void ev_timer_disarm(struct ev_timer *t);
/* 1 while an expiry is pending: inside its callback, 1 only for a
   repeating or re-armed timer. */
bool ev_timer_armed(const struct ev_timer *t);
/* Safe to call from inside any callback, the timer's own included. */
void ev_timer_free(struct ev_timer *t);

/* Blocks signo and delivers it through the loop. One handler per signal.
   cb NULL: signo is ignored (SIG_IGN) for the process's life instead, so
   that it never acts, even after the loop is freed (SIGPIPE: a write to
   a peer gone is EPIPE, never a death). */
int ev_signal_add(struct ev_loop *loop, int signo, ev_signal_cb cb, void *user);

/* Runs cb before every wait for events. */
void ev_hook_add(struct ev_loop *loop, ev_hook_cb cb, void *user);
/* Removes the hook added with this cb and user; safe from inside hooks,
   the hook itself included. */
void ev_hook_remove(struct ev_loop *loop, ev_hook_cb cb, void *user);

#endif
