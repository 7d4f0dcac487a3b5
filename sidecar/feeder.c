/* feeder: see feeder.h. One thread, a FIFO of feeders whose batch waits
   for it, one mutex. A feeder's batch is the thread's from the moment it
   is queued until the thread has fed it (state QUEUED, then FEEDING);
   its pending output is always the loop's. */
#include "feeder.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>

#include "buf.h"
#include "xalloc.h"

/* What a drained feeder keeps for the next output (feeder_trim). */
#define FEEDER_RESERVE (64u << 10)

enum batch_state { NO_BATCH, QUEUED, FEEDING };

struct feeder {
	struct screen *scr;
	struct buf pending;	/* the loop's */
	struct buf batch;	/* the thread's while state is not NO_BATCH */
	size_t unsynced;	/* the loop's */
	int kicks;		/* the loop's: kicks left in the burst */
	int64_t kicks_ms;	/* the loop's: when kicks was last topped up */
	enum batch_state state; /* under mu */
	struct feeder *next;	/* under mu: the FIFO */
	struct feeder_stats st; /* thread_bytes under mu, the rest the loop's */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t fed = PTHREAD_COND_INITIALIZER;
static struct feeder *head, *tail;
static int started; /* 1 running, -1 could not start: the loop feeds */
/* feeder_hold_until_wait (tests): the thread takes no batch until the
   loop waits for one. */
static bool held;
/* Output waiting for the model: in every pending buffer (the loop's), in
   every batch queued or being fed (under mu); the largest sum seen. */
static size_t pending_total, batched_total, total_peak;

static void *run(void *arg)
{
	struct feeder *f;
	size_t used;

	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (!head || held)
			pthread_cond_wait(&work, &mu);
		f = head;
		head = f->next;
		if (!head)
			tail = NULL;
		f->next = NULL;
		f->state = FEEDING;
		pthread_mutex_unlock(&mu);
		used = buf_size(&f->batch);
		screen_feed_tail(f->scr, buf_head(&f->batch), used);
		buf_reset(&f->batch);
		pthread_mutex_lock(&mu);
		f->st.thread_bytes += used;
		batched_total -= used;
		f->state = NO_BATCH;
		pthread_cond_broadcast(&fed);
	}
	return NULL;
}

/* Starts the thread once. It takes no signal: the loop handles them all
   (as with the syncer's thread). */
static bool thread_running_locked(void)
{
	pthread_t t;
	pthread_attr_t a;
	sigset_t all, old;

	if (started)
		return started > 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	started = pthread_create(&t, &a, run, NULL) == 0 ? 1 : -1;
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return started > 0;
}

enum handoff { HANDED, BUSY, NO_THREAD };

static size_t waiting_total_locked(void)
{
	size_t total = pending_total + batched_total;

	if (total > total_peak)
		total_peak = total;
	return total;
}

/* Gives the pending output to the thread as f's batch. */
static enum handoff hand_over(struct feeder *f)
{
	enum handoff r = HANDED;
	struct buf empty;

	pthread_mutex_lock(&mu);
	waiting_total_locked();
	if (!thread_running_locked()) {
		r = NO_THREAD;
	} else if (f->state != NO_BATCH) {
		r = BUSY;
	} else {
		/* The drained batch's storage becomes the new pending's. */
		empty = f->batch;
		f->batch = f->pending;
		f->pending = empty;
		pending_total -= buf_size(&f->batch);
		batched_total += buf_size(&f->batch);
		f->state = QUEUED;
		if (tail)
			tail->next = f;
		else
			head = f;
		tail = f;
		pthread_cond_signal(&work);
	}
	pthread_mutex_unlock(&mu);
	return r;
}

/* Waits until the thread has fed f's batch; a held thread is let go
   first, or the loop would wait for it forever. */
static void wait_fed_locked(struct feeder *f)
{
	if (f->state != NO_BATCH && held) {
		held = false;
		pthread_cond_signal(&work);
	}
	while (f->state != NO_BATCH)
		pthread_cond_wait(&fed, &mu);
}

/* Afterwards the thread has no batch of f's: a queued one is taken off
   the FIFO (the loop feeds it), a batch being fed is waited for. */
static void take_back_locked(struct feeder *f)
{
	struct feeder **pp, *prev = NULL;

	if (f->state == QUEUED) {
		for (pp = &head; *pp != f; pp = &(*pp)->next)
			prev = *pp;
		*pp = f->next;
		if (tail == f)
			tail = prev;
		f->next = NULL;
		f->state = NO_BATCH;
	}
	if (f->state == FEEDING)
		f->st.waits++;
	wait_fed_locked(f);
}

static void feed_here(struct feeder *f, struct buf *b)
{
	if (!buf_size(b))
		return;
	screen_feed_tail(f->scr, buf_head(b), buf_size(b));
	f->st.loop_bytes += buf_size(b);
	buf_reset(b);
}

struct feeder *feeder_new(struct screen *scr)
{
	struct feeder *f = xcalloc(1, sizeof(*f));

	f->scr = scr;
	f->kicks = FEEDER_KICK_BURST;
	buf_init(&f->pending);
	buf_init(&f->batch);
	return f;
}

void feeder_free(struct feeder *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&mu);
	take_back_locked(f);
	batched_total -= buf_size(&f->batch);
	pthread_mutex_unlock(&mu);
	pending_total -= buf_size(&f->pending);
	buf_free(&f->pending);
	buf_free(&f->batch);
	free(f);
}

/* Whether the model is too far behind f's output, or everyone's. */
static bool too_far_behind_locked(const struct feeder *f)
{
	return buf_size(&f->pending) >= FEEDER_PENDING_MAX ||
	       waiting_total_locked() >= FEEDER_TOTAL_MAX;
}

/* The thread has f's previous batch; f's output keeps waiting beside it
   unless the model is too far behind: then the loop waits for the thread
   to feed that batch (not take it back: what is pending comes after it)
   and hands the pending output over. */
static void beside_busy_batch(struct feeder *f)
{
	bool waited = false;

	pthread_mutex_lock(&mu);
	if (too_far_behind_locked(f)) {
		f->st.waits++;
		wait_fed_locked(f);
		waited = true;
	}
	pthread_mutex_unlock(&mu);
	if (waited)
		hand_over(f);
}

void feeder_append(struct feeder *f, const uint8_t *p, size_t n)
{
	enum handoff r;

	buf_append(&f->pending, p, n);
	pending_total += n;
	f->unsynced += n;
	if (buf_size(&f->pending) > f->st.pending_peak)
		f->st.pending_peak = buf_size(&f->pending);
	if (buf_size(&f->pending) < FEEDER_HANDOFF)
		return;
	r = hand_over(f);
	if (r == BUSY)
		beside_busy_batch(f);
	if (r == NO_THREAD) {
		pending_total -= buf_size(&f->pending);
		feed_here(f, &f->pending);
	}
}

/* Tops the burst up by one kick per FEEDER_KICK_GAP_MS since the last
   top-up; a full burst restarts the clock. */
static void refill_kicks(struct feeder *f, int64_t now_ms)
{
	int64_t earned = (now_ms - f->kicks_ms) / FEEDER_KICK_GAP_MS;

	if (f->kicks + earned >= FEEDER_KICK_BURST) {
		f->kicks = FEEDER_KICK_BURST;
		f->kicks_ms = now_ms;
	} else if (earned > 0) {
		f->kicks += (int)earned;
		f->kicks_ms += earned * FEEDER_KICK_GAP_MS;
	}
}

int64_t feeder_kick(struct feeder *f, int64_t now_ms)
{
	if (buf_size(&f->pending) < FEEDER_KICK_MIN)
		return 0;
	refill_kicks(f, now_ms);
	if (!f->kicks)
		return FEEDER_KICK_GAP_MS - (now_ms - f->kicks_ms);
	switch (hand_over(f)) {
	case HANDED:
		f->kicks--;
		return 0;
	case BUSY:
		return FEEDER_KICK_GAP_MS;
	default:
		return 0; /* no thread: the next sync feeds it */
	}
}

void feeder_sync(struct feeder *f)
{
	pthread_mutex_lock(&mu);
	take_back_locked(f);
	batched_total -= buf_size(&f->batch);
	pthread_mutex_unlock(&mu);
	/* A batch taken back from the FIFO came first. */
	feed_here(f, &f->batch);
	pending_total -= buf_size(&f->pending);
	feed_here(f, &f->pending);
	f->unsynced = 0;
}

size_t feeder_unsynced(const struct feeder *f)
{
	return f->unsynced;
}

void feeder_trim(struct feeder *f)
{
	pthread_mutex_lock(&mu);
	if (f->state == NO_BATCH && !buf_size(&f->batch) && f->batch.cap > FEEDER_RESERVE)
		buf_free(&f->batch);
	pthread_mutex_unlock(&mu);
	if (!buf_size(&f->pending) && f->pending.cap > FEEDER_RESERVE)
		buf_free(&f->pending);
}

void feeder_hold_until_wait(void)
{
	pthread_mutex_lock(&mu);
	held = true;
	pthread_mutex_unlock(&mu);
}

size_t feeder_total_peak(void)
{
	size_t peak;

	pthread_mutex_lock(&mu);
	peak = total_peak;
	pthread_mutex_unlock(&mu);
	return peak;
}

void feeder_stats(const struct feeder *f, struct feeder_stats *out)
{
	pthread_mutex_lock(&mu);
	*out = f->st;
	pthread_mutex_unlock(&mu);
}
