/* ev: the single-threaded event loop. epoll watches the ios of the
   owners and one signalfd for all signals; timers cost no fd: they live
   in a binary min-heap on a monotonic deadline (as in libuv and redis),
   and the earliest deadline bounds the epoll_wait. A turn is: hooks
   (flush queued writes, free objects marked closing), wait, I/O
   callbacks, expired timers. ios and timers freed during a turn's
   callbacks are only marked dead and reclaimed after them, so a later
   event of the same turn never touches freed memory. */
#include "ev.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "heap.h"
#include "list.h"
#include "log.h"
#include "xalloc.h"

#define EV_BATCH 64

enum src_kind { EV__IO, EV__TIMER, EV__SIGNAL };

/* The head of everything epoll's data.ptr points at. */
struct source {
	enum src_kind kind;
	bool dead;
	SLIST_ENTRY(source) dead_entry;
};

struct ev_io {
	struct source src; /* first: events carry a pointer to it */
	struct ev_loop *loop;
	int fd;
	unsigned events;
	bool registered;
	bool urgent; /* dispatched before the turn's other ios */
	ev_io_cb cb;
	void *user;
};

struct ev_timer {
	struct source src;
	struct ev_loop *loop;
	struct heap_node node; /* in loop->timers while armed and not due */
	int64_t deadline;      /* CLOCK_MONOTONIC ns */
	uint64_t seq;	       /* arming order, breaks deadline ties */
	int64_t repeat_ms;
	bool armed;
	bool due; /* in this turn's due list, not yet fired */
	ev_timer_cb cb;
	void *user;
};

struct signal_src {
	ev_signal_cb cb;
	void *user;
};

struct hook {
	ev_hook_cb cb;
	void *user;
};

struct ev_loop {
	int epfd;
	int sigfd;
	struct source sigsrc;
	sigset_t sigmask;
	struct signal_src signals[_NSIG];
	struct hook *hooks;
	size_t nhooks;
	bool in_hooks;
	bool stop;
	bool again; /* a hook left work: the next wait does not block */
	bool dispatching;
	SLIST_HEAD(, source) dead;
	struct heap timers;
	uint64_t timer_seq;
	struct ev_timer **due; /* this turn's expired timers, in order */
	size_t ndue;
	size_t due_cap;
};

static int timer_less(const struct heap_node *a, const struct heap_node *b);

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
	heap_init(&loop->timers, timer_less);
	return loop;
}

static void release(struct source *s)
{
	/* Both kinds were closed or unregistered when marked dead. */
	free(s);
}

static void reap(struct ev_loop *loop)
{
	struct source *s;

	while ((s = SLIST_FIRST(&loop->dead))) {
		SLIST_REMOVE_HEAD(&loop->dead, dead_entry);
		release(s);
	}
}

/* Frees s now, or after the batch when one is being dispatched. */
static void retire(struct ev_loop *loop, struct source *s)
{
	s->dead = true;
	if (!loop->dispatching) {
		release(s);
		return;
	}
	SLIST_INSERT_HEAD(&loop->dead, s, dead_entry);
}

void ev_loop_free(struct ev_loop *loop)
{
	if (!loop)
		return;
	reap(loop);
	if (loop->sigfd >= 0) {
		close(loop->sigfd);
		sigprocmask(SIG_UNBLOCK, &loop->sigmask, NULL);
	}
	close(loop->epfd);
	heap_free(&loop->timers);
	free(loop->due);
	free(loop->hooks);
	free(loop);
}

void ev_loop_stop(struct ev_loop *loop)
{
	loop->stop = true;
}

/* ---- ios ---- */

static uint32_t epoll_mask(unsigned events)
{
	return (events & EV_READ ? EPOLLIN | EPOLLRDHUP : 0) |
	       (events & EV_WRITE ? EPOLLOUT : 0);
}

/* Brings the epoll registration in line with io->events. An io with no
   events is removed so a hung-up fd does not spin the loop. */
static int io_sync(struct ev_io *io)
{
	struct epoll_event ee = {.events = epoll_mask(io->events), .data.ptr = &io->src};
	int op;

	if (io->events == 0) {
		if (!io->registered)
			return 0;
		io->registered = false;
		return epoll_ctl(io->loop->epfd, EPOLL_CTL_DEL, io->fd, NULL) < 0 ? -errno
										  : 0;
	}
	op = io->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(io->loop->epfd, op, io->fd, &ee) < 0)
		return -errno;
	io->registered = true;
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
	err = io_sync(io);
	if (err == 0 && events == 0) {
		io->events = 0;
		err = io_sync(io);
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
	err = io_sync(io);
	if (err < 0)
		log_error(NULL, "ev: watching fd %d: %s", io->fd, strerror(-err));
}

void ev_io_set_urgent(struct ev_io *io, bool urgent)
{
	io->urgent = urgent;
}

bool ev_io_urgent(const struct ev_io *io)
{
	return io->urgent;
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
	io_sync(io);
	retire(io->loop, &io->src);
}

static void io_dispatch(struct ev_io *io, uint32_t ee)
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

#define EV__NS_PER_MS INT64_C(1000000)

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* from + ms, saturating: a huge delay means "never" rather than a wrap
   into the past. */
static int64_t add_ms(int64_t from, int64_t ms)
{
	if (ms > (INT64_MAX - from) / EV__NS_PER_MS)
		return INT64_MAX;
	return from + ms * EV__NS_PER_MS;
}

static struct ev_timer *timer_of(const struct heap_node *n)
{
	return (struct ev_timer *)((char *)n - offsetof(struct ev_timer, node));
}

/* Deadline order; equal deadlines fire in the order they were armed. */
static int timer_less(const struct heap_node *a, const struct heap_node *b)
{
	const struct ev_timer *x = timer_of(a), *y = timer_of(b);

	if (x->deadline != y->deadline)
		return x->deadline < y->deadline;
	return x->seq < y->seq;
}

/* Takes t out of the heap and out of this turn's due list. */
static void timer_unlink(struct ev_timer *t)
{
	heap_remove(&t->loop->timers, &t->node);
	t->due = false;
}

static void timer_insert(struct ev_timer *t, int64_t deadline)
{
	t->deadline = deadline;
	t->seq = t->loop->timer_seq++;
	heap_push(&t->loop->timers, &t->node);
}

struct ev_timer *ev_timer_new(struct ev_loop *loop, int64_t after_ms, int64_t repeat_ms,
			      ev_timer_cb cb, void *user)
{
	struct ev_timer *t = xcalloc(1, sizeof(*t));

	t->src.kind = EV__TIMER;
	t->loop = loop;
	t->cb = cb;
	t->user = user;
	heap_node_init(&t->node);
	ev_timer_arm(t, after_ms, repeat_ms);
	return t;
}

void ev_timer_arm(struct ev_timer *t, int64_t after_ms, int64_t repeat_ms)
{
	if (t->src.dead)
		return;
	if (after_ms < 0) {
		ev_timer_disarm(t);
		return;
	}
	timer_unlink(t);
	t->repeat_ms = repeat_ms > 0 ? repeat_ms : 0;
	t->armed = true;
	/* Measured from the clock now, not from the turn's start, so a
	   timer never fires before after_ms have really passed. */
	timer_insert(t, add_ms(now_ns(), after_ms));
}

void ev_timer_disarm(struct ev_timer *t)
{
	if (t->src.dead)
		return;
	timer_unlink(t);
	t->armed = false;
}

bool ev_timer_armed(const struct ev_timer *t)
{
	return t->armed;
}

void ev_timer_free(struct ev_timer *t)
{
	if (!t || t->src.dead)
		return;
	timer_unlink(t);
	t->armed = false;
	retire(t->loop, &t->src);
}

/* The epoll_wait timeout until the earliest deadline, rounded up to a
   whole ms so the wait never ends before it; -1 with no timer armed. */
static int poll_timeout(const struct ev_loop *loop)
{
	const struct heap_node *min = heap_min(&loop->timers);
	int64_t left, ms;

	if (!min)
		return -1;
	left = timer_of(min)->deadline - now_ns();
	if (left <= 0)
		return 0;
	ms = left / EV__NS_PER_MS + (left % EV__NS_PER_MS != 0);
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

static void timer_fire(struct ev_timer *t, int64_t now)
{
	if (t->repeat_ms > 0) {
		int64_t period = add_ms(0, t->repeat_ms);
		int64_t missed = (now - t->deadline) / period;

		/* Missed periods collapse into this one call; the next
		   deadline stays on the period's grid. */
		timer_insert(t, add_ms(t->deadline, (missed + 1) * t->repeat_ms));
	} else {
		t->armed = false;
	}
	t->cb(t, t->user);
}

/* Fires every timer due now, each at most once: the due ones are moved
   to a list first, so one that re-arms itself at 0 ms (or is re-armed
   by another) waits for the next turn and cannot starve I/O. A timer
   disarmed, re-armed or freed by an earlier callback of the list is
   skipped; freed ones stay allocated until the turn ends. */
static void run_timers(struct ev_loop *loop)
{
	int64_t now = now_ns();
	struct heap_node *min;
	size_t i;

	while ((min = heap_min(&loop->timers)) && timer_of(min)->deadline <= now) {
		struct ev_timer *t = timer_of(min);

		heap_remove(&loop->timers, min);
		t->due = true;
		if (loop->ndue == loop->due_cap) {
			loop->due_cap = loop->due_cap ? loop->due_cap * 2 : 16;
			loop->due =
			    xrealloc(loop->due, loop->due_cap * sizeof(*loop->due));
		}
		loop->due[loop->ndue++] = t;
	}
	for (i = 0; i < loop->ndue; i++) {
		struct ev_timer *t = loop->due[i];

		if (t->src.dead || !t->due)
			continue;
		t->due = false;
		timer_fire(t, now);
	}
	loop->ndue = 0;
}

/* ---- signals ---- */

/* Ignored, not blocked: a blocked signal raised after the loop stopped
   would stay pending until ev_loop_free unblocks it, then take its
   default action (SIGPIPE's kills). A child's spawn resets it. */
static int ignore(int signo)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};

	return sigaction(signo, &ign, NULL) < 0 ? -errno : 0;
}

int ev_signal_add(struct ev_loop *loop, int signo, ev_signal_cb cb, void *user)
{
	struct epoll_event ee = {.events = EPOLLIN, .data.ptr = &loop->sigsrc};
	sigset_t one;
	int fd;

	if (signo <= 0 || signo >= _NSIG || loop->signals[signo].cb)
		return -EINVAL;
	if (!cb)
		return ignore(signo);
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

static void signal_dispatch(struct ev_loop *loop)
{
	struct signalfd_siginfo si;

	while (read(loop->sigfd, &si, sizeof(si)) == sizeof(si)) {
		struct signal_src *h;

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
static void compact_hooks(struct ev_loop *loop)
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
		compact_hooks(loop);
}

static void run_hooks(struct ev_loop *loop)
{
	size_t i;

	/* Indexed, not cached: a hook may add hooks (and so realloc). */
	loop->in_hooks = true;
	for (i = 0; i < loop->nhooks; i++) {
		if (loop->hooks[i].cb)
			loop->hooks[i].cb(loop->hooks[i].user);
	}
	loop->in_hooks = false;
	compact_hooks(loop);
}

static bool is_urgent(const struct source *s)
{
	return s->kind == EV__IO && ((const struct ev_io *)s)->urgent;
}

/* One turn's callbacks: the ready urgent ios, then the other ready fds,
   each group in epoll's order, each fd once; then the expired timers in
   deadline order. */
static void dispatch(struct ev_loop *loop, const struct epoll_event *ev, int n)
{
	bool done[EV_BATCH] = {false};

	loop->dispatching = true;
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < n; i++) {
			struct source *s = ev[i].data.ptr;

			if (done[i] || (pass == 0 && !is_urgent(s)))
				continue;
			done[i] = true;
			if (s->dead)
				continue;
			if (s->kind == EV__IO)
				io_dispatch((struct ev_io *)s, ev[i].events);
			else
				signal_dispatch(loop);
		}
	}
	run_timers(loop);
	loop->dispatching = false;
	reap(loop);
}

void ev_loop_again(struct ev_loop *loop)
{
	loop->again = true;
}

int ev_loop_run(struct ev_loop *loop)
{
	struct epoll_event ev[EV_BATCH];

	loop->stop = false;
	for (;;) {
		int n;

		run_hooks(loop);
		if (loop->stop)
			return 0;
		n = epoll_wait(loop->epfd, ev, EV_BATCH,
			       loop->again ? 0 : poll_timeout(loop));
		loop->again = false;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		dispatch(loop, ev, n);
	}
}
