/* linkverify: see linkverify.h. The worker runs its own loop; the items
   it posts wait in a work-queue the main loop empties (workq.h), whose
   eventfd wakes the main loop when an item lands in an empty queue; a
   before-poll hook hands them
   over, a few a turn, asking for another turn without sleeping only
   while items remain. A second eventfd, watched on the worker's loop,
   tells it to stop. */
#include "linkverify.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "workq.h"
#include "xalloc.h"

/* A turn hands over items for at most this long (each one is a
   registration: an upstream, its hello). */
#define TURN_US 1000

struct item {
	struct workq_item wi;
	void *p;
};

struct linkverify {
	struct ev_loop *loop; /* the main one */
	struct ev_loop *wl;   /* the worker's */
	linkverify_done_fn done;
	linkverify_drop_fn drop;
	void *user;
	size_t per_turn, turn_max;
	int stop_efd;
	struct ev_io *wake, *stop_io;
	pthread_t thread;
	bool running;
	struct workq *items; /* posted, for the main loop */
};

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The worker gives way to the loop and to everything else at the
   process's priority: openings are unauthenticated work. */
static void lower_priority(void)
{
	int nice_now;

	errno = 0;
	nice_now = getpriority(PRIO_PROCESS, 0);
	if (errno == 0) {
		int want =
		    nice_now + LINKVERIFY_NICE > 19 ? 19 : nice_now + LINKVERIFY_NICE;
		(void)setpriority(PRIO_PROCESS, (id_t)gettid(), want);
	}
}

static void *run(void *arg)
{
	struct linkverify *v = arg;

	lower_priority();
	ev_loop_run(v->wl);
	return NULL;
}

/* On the worker's loop: linkverify_stop asked. */
static void on_stop(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct linkverify *v = user;
	uint64_t n;
	ssize_t r = read(fd, &n, sizeof(n));

	(void)r;
	ev_loop_stop(v->wl);
}

/* The eventfd only wakes the main loop; the hook does the handing over. */
static void on_wake(struct ev_io *io, int fd, unsigned events, void *user)
{
	uint64_t n;
	ssize_t r = read(fd, &n, sizeof(n));

	(void)r;
}

static struct item *pop(struct linkverify *v)
{
	struct workq_item *wi = workq_pop(v->items);

	return wi ? WORKQ_OWNER(wi, struct item, wi) : NULL;
}

/* Before each poll of the main loop: items, oldest first, up to the
   turn's bound; with some left, the next poll does not block. */
static void deliver(void *user)
{
	struct linkverify *v = user;
	int64_t t0 = mono_us();
	size_t done = 0;
	bool more;

	for (;;) {
		struct item *it;
		void *p;

		it = done < v->per_turn ? pop(v) : NULL;
		more = !workq_empty(v->items);
		if (!it)
			break;
		p = it->p;
		free(it);
		v->done(v->user, p);
		done++;
		if (mono_us() - t0 >= TURN_US)
			break;
	}
	if (done > v->turn_max)
		v->turn_max = done;
	if (more)
		ev_loop_again(v->loop);
}

static void close_fds(struct linkverify *v)
{
	ev_io_free(v->wake);
	ev_io_free(v->stop_io);
	workq_free(v->items);
	if (v->stop_efd >= 0)
		close(v->stop_efd);
}

struct linkverify *linkverify_new(struct ev_loop *loop, linkverify_done_fn done,
				  linkverify_drop_fn drop, void *user, size_t per_turn)
{
	struct linkverify *v = xcalloc(1, sizeof(*v));
	int e;

	v->loop = loop;
	v->done = done;
	v->drop = drop;
	v->user = user;
	v->per_turn = per_turn ? per_turn : 1;
	v->items = workq_new(NULL, NULL);
	v->stop_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	v->wl = ev_loop_new();
	if (v->items && v->stop_efd >= 0 && v->wl) {
		v->wake = ev_io_new(loop, workq_wake_fd(v->items), EV_READ, on_wake, v);
		v->stop_io = ev_io_new(v->wl, v->stop_efd, EV_READ, on_stop, v);
		if (v->wake && v->stop_io) {
			ev_hook_add(loop, deliver, v);
			return v;
		}
	}
	e = errno;
	close_fds(v);
	if (v->wl)
		ev_loop_free(v->wl);
	free(v);
	errno = e;
	return NULL;
}

struct ev_loop *linkverify_loop(struct linkverify *v)
{
	return v->wl;
}

int linkverify_start(struct linkverify *v)
{
	int rc = workq_thread_start(&v->thread, "ptg-linkverify", run, v);

	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	v->running = true;
	return 0;
}

void linkverify_stop(struct linkverify *v)
{
	uint64_t one = 1;
	ssize_t n;

	if (!v || !v->running)
		return;
	n = write(v->stop_efd, &one, sizeof(one));
	(void)n; /* a counter at its maximum is still readable */
	pthread_join(v->thread, NULL);
	v->running = false;
}

void linkverify_free(struct linkverify *v)
{
	struct item *it;

	if (!v)
		return;
	linkverify_stop(v);
	ev_hook_remove(v->loop, deliver, v);
	while ((it = pop(v))) {
		v->drop(v->user, it->p);
		free(it);
	}
	close_fds(v);
	ev_loop_free(v->wl);
	free(v);
}

void linkverify_post(struct linkverify *v, void *p)
{
	struct item *it = xcalloc(1, sizeof(*it));

	it->p = p;
	workq_submit(v->items, &it->wi);
}

size_t linkverify_turn_max(const struct linkverify *v)
{
	return v->turn_max;
}

void linkverify_give_way(void)
{
	(void)sched_yield();
}
