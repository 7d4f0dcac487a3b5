/* ev: the single-threaded event loop. epoll watches every fd: the ios of
   the owners, one timerfd per timer and one signalfd for all signals.
   Before each wait the loop runs its hooks (flush queued writes, free
   objects marked closing). ios and timers freed while a batch of events
   is being dispatched are only marked dead and reclaimed after the batch,
   so a later event of the same batch never touches freed memory. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "ev.h"
#include "log.h"
#include "xalloc.h"

#define EV_BATCH 64

enum ev__kind { EV__IO, EV__TIMER, EV__SIGNAL };

/* The head of everything epoll's data.ptr points at. */
struct ev__src {
	enum ev__kind kind;
	int dead;
	struct ev__src *next_dead;
};

struct ev_io {
	struct ev__src src; /* first: events carry a pointer to it */
	struct ev_loop *loop;
	int fd;
	unsigned events;
	int registered;
	ev_io_cb cb;
	void *user;
};

struct ev_timer {
	struct ev__src src;
	struct ev_loop *loop;
	int tfd;
	int armed;
	int64_t repeat_ms;
	ev_timer_cb cb;
	void *user;
};

struct ev__signal {
	ev_signal_cb cb;
	void *user;
};

struct ev__hook {
	ev_hook_cb cb;
	void *user;
};

struct ev_loop {
	int epfd;
	int sigfd;
	struct ev__src sigsrc;
	sigset_t sigmask;
	struct ev__signal signals[_NSIG];
	struct ev__hook *hooks;
	size_t nhooks;
	int in_hooks;
	int stop;
	int dispatching;
	struct ev__src *dead;
};

struct ev_loop *ev_loop_new(void)
{
	struct ev_loop *loop = xcalloc(1, sizeof(*loop));

	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		int err = errno;

		free(loop);
		errno = err;
		return NULL;
	}
	loop->sigfd = -1;
	loop->sigsrc.kind = EV__SIGNAL;
	sigemptyset(&loop->sigmask);
	return loop;
}

static void ev__release(struct ev__src *s)
{
	/* Both kinds were closed or unregistered when marked dead. */
	free(s);
}

static void ev__reap(struct ev_loop *loop)
{
	while (loop->dead) {
		struct ev__src *s = loop->dead;

		loop->dead = s->next_dead;
		ev__release(s);
	}
}

/* Frees s now, or after the batch when one is being dispatched. */
static void ev__retire(struct ev_loop *loop, struct ev__src *s)
{
	s->dead = 1;
	if (!loop->dispatching) {
		ev__release(s);
		return;
	}
	s->next_dead = loop->dead;
	loop->dead = s;
}

void ev_loop_free(struct ev_loop *loop)
{
	if (!loop)
		return;
	ev__reap(loop);
	if (loop->sigfd >= 0) {
		close(loop->sigfd);
		sigprocmask(SIG_UNBLOCK, &loop->sigmask, NULL);
	}
	close(loop->epfd);
	free(loop->hooks);
	free(loop);
}

void ev_loop_stop(struct ev_loop *loop)
{
	loop->stop = 1;
}

/* ---- ios ---- */

static uint32_t ev__epoll_mask(unsigned events)
{
	return (events & EV_READ ? EPOLLIN | EPOLLRDHUP : 0) |
	       (events & EV_WRITE ? EPOLLOUT : 0);
}

/* Brings the epoll registration in line with io->events. An io with no
   events is removed so a hung-up fd does not spin the loop. */
static int ev__io_sync(struct ev_io *io)
{
	struct epoll_event ee = {.events = ev__epoll_mask(io->events),
				 .data.ptr = &io->src};
	int op;

	if (io->events == 0) {
		if (!io->registered)
			return 0;
		io->registered = 0;
		return epoll_ctl(io->loop->epfd, EPOLL_CTL_DEL, io->fd, NULL) < 0 ? -errno
										  : 0;
	}
	op = io->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(io->loop->epfd, op, io->fd, &ee) < 0)
		return -errno;
	io->registered = 1;
	return 0;
}

struct ev_io *ev_io_new(struct ev_loop *loop, int fd, unsigned events, ev_io_cb cb,
			void *user)
{
	struct ev_io *io = xcalloc(1, sizeof(*io));
	int err;

	io->src.kind = EV__IO;
	io->loop = loop;
	io->fd = fd;
	io->cb = cb;
	io->user = user;
	/* Register even with no events, to learn now whether fd can be
	   watched at all (regular files and closed fds cannot). */
	io->events = events ? events : EV_READ;
	err = ev__io_sync(io);
	if (err == 0 && events == 0) {
		io->events = 0;
		err = ev__io_sync(io);
	}
	if (err < 0) {
		free(io);
		errno = -err;
		return NULL;
	}
	return io;
}

void ev_io_set(struct ev_io *io, unsigned events)
{
	int err;

	events &= EV_READ | EV_WRITE;
	if (io->src.dead || io->events == events)
		return;
	io->events = events;
	err = ev__io_sync(io);
	if (err < 0)
		log_error(NULL, "ev: watching fd %d: %s", io->fd, strerror(-err));
}

unsigned ev_io_events(const struct ev_io *io)
{
	return io->events;
}

void ev_io_free(struct ev_io *io)
{
	if (!io || io->src.dead)
		return;
	io->events = 0;
	ev__io_sync(io);
	ev__retire(io->loop, &io->src);
}

static void ev__io_dispatch(struct ev_io *io, uint32_t ee)
{
	unsigned fired = 0;

	if (ee & EPOLLIN)
		fired |= EV_READ;
	if (ee & EPOLLOUT)
		fired |= EV_WRITE;
	/* The events may have changed since the wait; report only wanted
	   ones, but always let a hang-up or error reach the reader. */
	fired &= io->events;
	if (ee & (EPOLLERR | EPOLLHUP | EPOLLRDHUP))
		fired |= EV_READ | (ee & EPOLLERR ? io->events & EV_WRITE : 0);
	if (fired && io->registered)
		io->cb(io, io->fd, fired, io->user);
}

/* ---- timers ---- */

static struct timespec ev__ts(int64_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000};

	return ts;
}

struct ev_timer *ev_timer_new(struct ev_loop *loop, int64_t after_ms, int64_t repeat_ms,
			      ev_timer_cb cb, void *user)
{
	struct ev_timer *t = xcalloc(1, sizeof(*t));
	struct epoll_event ee = {.events = EPOLLIN, .data.ptr = &t->src};

	t->src.kind = EV__TIMER;
	t->loop = loop;
	t->cb = cb;
	t->user = user;
	t->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (t->tfd < 0 || epoll_ctl(loop->epfd, EPOLL_CTL_ADD, t->tfd, &ee) < 0) {
		int err = errno;

		if (t->tfd >= 0)
			close(t->tfd);
		free(t);
		errno = err;
		return NULL;
	}
	ev_timer_arm(t, after_ms, repeat_ms);
	return t;
}

void ev_timer_arm(struct ev_timer *t, int64_t after_ms, int64_t repeat_ms)
{
	struct itimerspec its = {0};

	if (t->src.dead)
		return;
	if (after_ms < 0) {
		ev_timer_disarm(t);
		return;
	}
	/* A zero it_value would disarm: "now" is the smallest delay. */
	its.it_value = after_ms > 0 ? ev__ts(after_ms) : (struct timespec){0, 1};
	its.it_interval = ev__ts(repeat_ms > 0 ? repeat_ms : 0);
	t->repeat_ms = repeat_ms > 0 ? repeat_ms : 0;
	t->armed = 1;
	/* Re-arming also clears a pending expiry, so a stale event of the
	   current batch reads nothing and is skipped. */
	timerfd_settime(t->tfd, 0, &its, NULL);
}

void ev_timer_disarm(struct ev_timer *t)
{
	struct itimerspec its = {0};

	if (t->src.dead)
		return;
	t->armed = 0;
	timerfd_settime(t->tfd, 0, &its, NULL);
}

int ev_timer_armed(const struct ev_timer *t)
{
	return t->armed;
}

void ev_timer_free(struct ev_timer *t)
{
	if (!t || t->src.dead)
		return;
	epoll_ctl(t->loop->epfd, EPOLL_CTL_DEL, t->tfd, NULL);
	close(t->tfd);
	t->tfd = -1;
	t->armed = 0;
	ev__retire(t->loop, &t->src);
}

static void ev__timer_dispatch(struct ev_timer *t)
{
	uint64_t ticks;

	if (read(t->tfd, &ticks, sizeof(ticks)) != sizeof(ticks) || !t->armed)
		return;
	if (t->repeat_ms == 0)
		t->armed = 0;
	/* Missed periods of a repeating timer collapse into one call. */
	t->cb(t, t->user);
}

/* ---- signals ---- */

int ev_signal_add(struct ev_loop *loop, int signo, ev_signal_cb cb, void *user)
{
	struct epoll_event ee = {.events = EPOLLIN, .data.ptr = &loop->sigsrc};
	sigset_t one;
	int fd;

	if (signo <= 0 || signo >= _NSIG || loop->signals[signo].cb)
		return -EINVAL;
	sigemptyset(&one);
	sigaddset(&one, signo);
	if (sigprocmask(SIG_BLOCK, &one, NULL) < 0)
		return -errno;
	sigaddset(&loop->sigmask, signo);
	fd = signalfd(loop->sigfd, &loop->sigmask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0) {
		int err = -errno;

		sigdelset(&loop->sigmask, signo);
		sigprocmask(SIG_UNBLOCK, &one, NULL);
		return err;
	}
	if (loop->sigfd < 0) {
		loop->sigfd = fd;
		if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ee) < 0)
			return -errno;
	}
	loop->signals[signo].cb = cb;
	loop->signals[signo].user = user;
	return 0;
}

void ev_signal_child_reset(void)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static void ev__signal_dispatch(struct ev_loop *loop)
{
	struct signalfd_siginfo si;

	while (read(loop->sigfd, &si, sizeof(si)) == sizeof(si)) {
		struct ev__signal *h;

		if (si.ssi_signo >= _NSIG)
			continue;
		h = &loop->signals[si.ssi_signo];
		if (h->cb)
			h->cb((int)si.ssi_signo, h->user);
	}
}

/* ---- hooks and the loop ---- */

void ev_hook_add(struct ev_loop *loop, ev_hook_cb cb, void *user)
{
	loop->hooks = xrealloc(loop->hooks, (loop->nhooks + 1) * sizeof(*loop->hooks));
	loop->hooks[loop->nhooks].cb = cb;
	loop->hooks[loop->nhooks].user = user;
	loop->nhooks++;
}

/* Drops the entries ev_hook_remove blanked while hooks were running. */
static void ev__compact_hooks(struct ev_loop *loop)
{
	size_t i, j = 0;

	for (i = 0; i < loop->nhooks; i++) {
		if (loop->hooks[i].cb)
			loop->hooks[j++] = loop->hooks[i];
	}
	loop->nhooks = j;
}

void ev_hook_remove(struct ev_loop *loop, ev_hook_cb cb, void *user)
{
	size_t i;

	for (i = 0; i < loop->nhooks; i++) {
		if (loop->hooks[i].cb == cb && loop->hooks[i].user == user) {
			loop->hooks[i].cb = NULL;
			break;
		}
	}
	/* Compacting under the running iteration would skip a hook. */
	if (!loop->in_hooks)
		ev__compact_hooks(loop);
}

static void ev__run_hooks(struct ev_loop *loop)
{
	size_t i;

	/* Indexed, not cached: a hook may add hooks (and so realloc). */
	loop->in_hooks = 1;
	for (i = 0; i < loop->nhooks; i++) {
		if (loop->hooks[i].cb)
			loop->hooks[i].cb(loop->hooks[i].user);
	}
	loop->in_hooks = 0;
	ev__compact_hooks(loop);
}

static void ev__dispatch(struct ev_loop *loop, const struct epoll_event *ev, int n)
{
	int i;

	loop->dispatching = 1;
	for (i = 0; i < n; i++) {
		struct ev__src *s = ev[i].data.ptr;

		if (s->dead)
			continue;
		if (s->kind == EV__IO)
			ev__io_dispatch((struct ev_io *)s, ev[i].events);
		else if (s->kind == EV__TIMER)
			ev__timer_dispatch((struct ev_timer *)s);
		else
			ev__signal_dispatch(loop);
	}
	loop->dispatching = 0;
	ev__reap(loop);
}

int ev_loop_run(struct ev_loop *loop)
{
	struct epoll_event ev[EV_BATCH];

	loop->stop = 0;
	for (;;) {
		int n;

		ev__run_hooks(loop);
		if (loop->stop)
			return 0;
		n = epoll_wait(loop->epfd, ev, EV_BATCH, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		ev__dispatch(loop, ev, n);
	}
}
