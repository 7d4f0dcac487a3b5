/* workq: see workq.h. One mutex guards the FIFO, the items' states, the
   counters and the flags; one condition wakes the worker (work), another
   every waiter (progress: an item done or taken back, room made). */
#include "workq.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "xalloc.h"

struct workq {
	workq_fn fn;
	void *user;
	int wake_fd; /* a loop's queue; -1 with a worker */
	pthread_mutex_t mu;
	pthread_cond_t work, progress;
	STAILQ_HEAD(, workq_item) items;
	size_t size, peak, limit;
	int64_t issued, done;
	bool held, stopping, running;
	pthread_t thread;
};

struct workq *workq_new(workq_fn fn, void *user)
{
	struct workq *q = xcalloc(1, sizeof(*q));

	q->fn = fn;
	q->user = user;
	q->wake_fd = -1;
	if (!fn && (q->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
		free(q);
		return NULL;
	}
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->work, NULL);
	pthread_cond_init(&q->progress, NULL);
	STAILQ_INIT(&q->items);
	return q;
}

/* Lets the worker finish the item it runs and joins it; the items still
   queued stay queued. No-op when no worker runs. */
static void workq_stop(struct workq *q);

void workq_free(struct workq *q)
{
	if (!q)
		return;
	workq_stop(q);
	if (q->wake_fd >= 0)
		close(q->wake_fd);
	pthread_cond_destroy(&q->progress);
	pthread_cond_destroy(&q->work);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

/* The worker: the oldest item, unless held or told to stop. */
static void *run(void *arg)
{
	struct workq *q = arg;
	struct workq_item *it;

	pthread_mutex_lock(&q->mu);
	for (;;) {
		while (!q->stopping && (STAILQ_EMPTY(&q->items) || q->held))
			pthread_cond_wait(&q->work, &q->mu);
		if (q->stopping)
			break;
		it = STAILQ_FIRST(&q->items);
		STAILQ_REMOVE_HEAD(&q->items, entry);
		it->state = WORKQ_RUNNING;
		pthread_mutex_unlock(&q->mu);
		q->fn(q, it, q->user);
		pthread_mutex_lock(&q->mu);
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

int workq_thread_start(pthread_t *t, const char *name, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	if (name)
		pthread_setname_np(*t, name);
	return 0;
}

int workq_start(struct workq *q, const char *name)
{
	int rc = 0;

	pthread_mutex_lock(&q->mu);
	if (!q->running) {
		q->stopping = false;
		rc = workq_thread_start(&q->thread, name, run, q);
		q->running = rc == 0;
	}
	pthread_mutex_unlock(&q->mu);
	return rc;
}

static void workq_stop(struct workq *q)
{
	pthread_mutex_lock(&q->mu);
	if (!q->running) {
		pthread_mutex_unlock(&q->mu);
		return;
	}
	q->stopping = true;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->mu);
	pthread_join(q->thread, NULL);
	pthread_mutex_lock(&q->mu);
	q->running = false;
	pthread_mutex_unlock(&q->mu);
}

/* A caller is about to wait for the worker: a held worker is let go. */
static void wait_locked(struct workq *q)
{
	if (q->held) {
		q->held = false;
		pthread_cond_signal(&q->work);
	}
	pthread_cond_wait(&q->progress, &q->mu);
}

static void wake_loop(struct workq *q)
{
	uint64_t one = 1;
	ssize_t n = write(q->wake_fd, &one, sizeof(one));

	(void)n; /* a counter at its maximum is still readable */
}

/* Waits for room for it, then queues it. Returns its ticket; *was_empty:
   whether the queue was empty, for the loop's wake-up after the unlock. */
static int64_t submit_locked(struct workq *q, struct workq_item *it, bool *was_empty)
{
	while (q->limit && q->size && q->size + it->size > q->limit)
		wait_locked(q);
	it->ticket = ++q->issued;
	it->state = WORKQ_QUEUED;
	*was_empty = STAILQ_EMPTY(&q->items);
	STAILQ_INSERT_TAIL(&q->items, it, entry);
	q->size += it->size;
	if (q->size > q->peak)
		q->peak = q->size;
	pthread_cond_signal(&q->work);
	return it->ticket;
}

int64_t workq_submit(struct workq *q, struct workq_item *it)
{
	int64_t ticket;
	bool was_empty;

	pthread_mutex_lock(&q->mu);
	ticket = submit_locked(q, it, &was_empty);
	pthread_mutex_unlock(&q->mu);
	if (was_empty && q->wake_fd >= 0)
		wake_loop(q);
	return ticket;
}

int64_t workq_submit_if_idle(struct workq *q, struct workq_item *it, size_t size,
			     workq_fill_fn fill, void *arg, size_t *size_before)
{
	int64_t ticket = 0;
	bool was_empty = false;

	pthread_mutex_lock(&q->mu);
	if (size_before)
		*size_before = q->size;
	if (it->state == WORKQ_IDLE) {
		/* Idle, it stays so while the mutex is let go for room: only
		   the caller queues it. */
		it->size = size;
		fill(it, arg);
		ticket = submit_locked(q, it, &was_empty);
	}
	pthread_mutex_unlock(&q->mu);
	if (was_empty && q->wake_fd >= 0)
		wake_loop(q);
	return ticket;
}

void workq_done(struct workq *q, struct workq_item *it)
{
	pthread_mutex_lock(&q->mu);
	q->size -= it->size;
	q->done = it->ticket;
	it->state = WORKQ_IDLE;
	pthread_cond_broadcast(&q->progress);
	pthread_mutex_unlock(&q->mu);
}

void workq_wait(struct workq *q, int64_t ticket)
{
	pthread_mutex_lock(&q->mu);
	while (q->done < ticket)
		wait_locked(q);
	pthread_mutex_unlock(&q->mu);
}

void workq_wait_idle(struct workq *q, struct workq_item *it)
{
	pthread_mutex_lock(&q->mu);
	while (it->state != WORKQ_IDLE)
		wait_locked(q);
	pthread_mutex_unlock(&q->mu);
}

/* Off the queue before the worker took it: uncounted, idle. Room made. */
static void unqueue_locked(struct workq *q, struct workq_item *it)
{
	STAILQ_REMOVE(&q->items, it, workq_item, entry);
	q->size -= it->size;
	it->state = WORKQ_IDLE;
	pthread_cond_broadcast(&q->progress);
}

enum workq_state workq_take_back(struct workq *q, struct workq_item *it)
{
	enum workq_state found;

	pthread_mutex_lock(&q->mu);
	found = it->state;
	if (found == WORKQ_QUEUED)
		unqueue_locked(q, it);
	while (it->state != WORKQ_IDLE)
		wait_locked(q);
	pthread_mutex_unlock(&q->mu);
	return found;
}

bool workq_busy(struct workq *q, struct workq_item *it)
{
	bool busy;

	pthread_mutex_lock(&q->mu);
	busy = it->state != WORKQ_IDLE;
	pthread_mutex_unlock(&q->mu);
	return busy;
}

struct workq_item *workq_pop(struct workq *q)
{
	struct workq_item *it;

	pthread_mutex_lock(&q->mu);
	it = STAILQ_FIRST(&q->items);
	if (it)
		unqueue_locked(q, it);
	pthread_mutex_unlock(&q->mu);
	return it;
}

bool workq_empty(struct workq *q)
{
	bool empty;

	pthread_mutex_lock(&q->mu);
	empty = STAILQ_EMPTY(&q->items);
	pthread_mutex_unlock(&q->mu);
	return empty;
}

int workq_wake_fd(const struct workq *q)
{
	return q->wake_fd;
}

void workq_set_limit(struct workq *q, size_t limit)
{
	pthread_mutex_lock(&q->mu);
	q->limit = limit;
	q->peak = q->size;
	pthread_mutex_unlock(&q->mu);
}

/* A counter the worker updates, read under the mutex. */
static size_t read_locked(struct workq *q, const size_t *counter)
{
	size_t n;

	pthread_mutex_lock(&q->mu);
	n = *counter;
	pthread_mutex_unlock(&q->mu);
	return n;
}

size_t workq_size(struct workq *q)
{
	return read_locked(q, &q->size);
}

size_t workq_peak(struct workq *q)
{
	return read_locked(q, &q->peak);
}

void workq_hold(struct workq *q)
{
	pthread_mutex_lock(&q->mu);
	q->held = true;
	pthread_mutex_unlock(&q->mu);
}
