/* feeder: see feeder.h. One work-queue (workq.h) whose worker thread
   feeds the batches of every feeder, oldest first. A feeder's batch is
   the thread's from the moment it is queued until the thread has fed it
   (its item busy); its pending output is always the loop's. */
#include "feeder.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "buf.h"
#include "workq.h"
#include "xalloc.h"

/* What a drained feeder keeps for the next output (feeder_trim). */
#define FEEDER_RESERVE (64u << 10)

struct feeder {
	struct screen *scr;
	struct buf pending;	       /* the loop's */
	struct buf batch;	       /* the thread's while item is busy */
	struct buf carry;	       /* the same: what the last batch held back */
	bool flush_next;	       /* the loop's: the next batch holds nothing back */
	bool appended;		       /* the loop's: output came since the last kick */
	bool flooding;		       /* the loop's: output resumed soon after a stop */
	int64_t output_ms;	       /* the loop's: the last kick that found output */
	int64_t stopped_ms;	       /* the loop's: when output last looked stopped */
	bool batch_flush;	       /* the thread's while item is busy: this one */
	size_t unsynced;	       /* the loop's */
	int kicks;		       /* the loop's: kicks left in the burst */
	int64_t kicks_ms;	       /* the loop's: when kicks was last topped up */
	struct workq_item item;	       /* size: the batch's */
	_Atomic uint64_t thread_bytes; /* output the thread fed */
	struct feeder_stats st;	       /* the loop's, but thread_bytes */
};

static struct workq *queue;
static pthread_once_t queue_once = PTHREAD_ONCE_INIT;
static int started; /* 1 running, -1 could not start: the loop feeds */
/* Output waiting for the model (the loop's): in every pending buffer; the
   largest sum seen of it and the batches queued or being fed (the
   queue's size). */
static size_t pending_total, total_peak;
/* Output the feeders' carries hold (the thread's and the loop's). */
static _Atomic size_t held_total;

/* A carry went from before to after bytes. */
static void note_held(size_t before, size_t after)
{
	atomic_fetch_add_explicit(&held_total, after, memory_order_relaxed);
	atomic_fetch_sub_explicit(&held_total, before, memory_order_relaxed);
}

/* Feeds f's batch behind what the last one held back, holding back up
   to max_hold of it again (screen_feed_carried). */
static void feed_batch(struct feeder *f, size_t max_hold)
{
	size_t before = buf_size(&f->carry);

	screen_feed_carried(f->scr, &f->carry, buf_head(&f->batch), buf_size(&f->batch),
			    max_hold);
	buf_reset(&f->batch);
	note_held(before, buf_size(&f->carry));
}

/* On the thread: feeds one batch. */
static void feed(struct workq *q, struct workq_item *it, void *user)
{
	struct feeder *f = WORKQ_OWNER(it, struct feeder, item);
	size_t used = buf_size(&f->batch);

	(void)user;
	feed_batch(f, f->batch_flush ? 0 : FEEDER_HOLD_MAX);
	atomic_fetch_add_explicit(&f->thread_bytes, used, memory_order_relaxed);
	workq_done(q, it);
}

static void make_queue(void)
{
	queue = workq_new(feed, NULL);
}

static struct workq *the_queue(void)
{
	pthread_once(&queue_once, make_queue);
	return queue;
}

/* Starts the thread once. */
static bool thread_running(void)
{
	if (!started)
		started = workq_start(the_queue(), NULL) == 0 ? 1 : -1;
	return started > 0;
}

enum handoff { HANDED, BUSY, NO_THREAD };

/* Output waiting for the model: the pending output of every feeder, and
   queued, the batches queued or being fed; its peak kept. */
static size_t note_total(size_t queued)
{
	size_t total = pending_total + queued +
		       atomic_load_explicit(&held_total, memory_order_relaxed);

	if (total > total_peak)
		total_peak = total;
	return total;
}

static size_t waiting_total(void)
{
	return note_total(workq_size(the_queue()));
}

/* Under the queue's mutex, f's item idle: the pending output becomes
   the batch, and the drained batch's storage the new pending's. */
static void take_pending(struct workq_item *it, void *arg)
{
	struct feeder *f = arg;
	struct buf empty = f->batch;

	(void)it;
	f->batch = f->pending;
	f->pending = empty;
	f->batch_flush = f->flush_next;
	f->flush_next = false;
}

/* Gives the pending output to the thread as f's batch, in one hold of
   the queue's mutex: whether the thread has f's previous batch, the
   queue's size, the hand-over. */
static enum handoff hand_over(struct feeder *f)
{
	size_t n = buf_size(&f->pending), queued = 0;
	bool handed;

	if (!thread_running()) {
		waiting_total();
		return NO_THREAD;
	}
	handed = workq_submit_if_idle(queue, &f->item, n, take_pending, f, &queued) > 0;
	/* As it was before the hand-over, which moves n bytes from the
	   pending output to the queue. */
	note_total(queued);
	if (!handed)
		return BUSY;
	pending_total -= n;
	return HANDED;
}

/* Afterwards the thread has no batch of f's: a queued one is taken off
   the queue (the loop feeds it), a batch being fed is waited for. */
static void take_back(struct feeder *f)
{
	if (workq_take_back(the_queue(), &f->item) == WORKQ_RUNNING)
		f->st.waits++;
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
	f->stopped_ms = INT64_MIN / 2; /* never: far enough back not to overflow */
	buf_init(&f->pending);
	buf_init(&f->batch);
	buf_init(&f->carry);
	return f;
}

void feeder_free(struct feeder *f)
{
	if (!f)
		return;
	take_back(f);
	pending_total -= buf_size(&f->pending);
	note_held(buf_size(&f->carry), 0);
	buf_free(&f->pending);
	buf_free(&f->batch);
	buf_free(&f->carry);
	free(f);
}

/* Whether the model is too far behind f's output, or everyone's. */
static bool too_far_behind(const struct feeder *f)
{
	return buf_size(&f->pending) >= FEEDER_PENDING_MAX ||
	       waiting_total() >= FEEDER_TOTAL_MAX;
}

/* The thread has f's previous batch; f's output keeps waiting beside it
   unless the model is too far behind: then the loop waits for the thread
   to feed that batch (not take it back: what is pending comes after it)
   and hands the pending output over. */
static void beside_busy_batch(struct feeder *f)
{
	if (!too_far_behind(f))
		return;
	f->st.waits++;
	workq_wait_idle(queue, &f->item);
	hand_over(f);
}

void feeder_append(struct feeder *f, const uint8_t *p, size_t n)
{
	enum handoff r;

	buf_append(&f->pending, p, n);
	pending_total += n;
	f->unsynced += n;
	f->appended = true;
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

/* The PTY ran dry with less than FEEDER_KICK_MIN waiting: output has
   stopped, so what the thread held back of the last batch is fed now,
   with what waits, and not by the next join's sync. A flood runs dry
   with little waiting too, right after a batch was handed over or while
   its program waits for a core, and each such feed cost libvterm a
   screen of the flood. So once output has resumed soon after it looked
   stopped (flooding), it has stopped only after FEEDER_QUIET_MS without
   any. */
static int64_t flush_when_quiet(struct feeder *f, int64_t now_ms)
{
	int64_t quiet = now_ms - f->output_ms;

	/* Idle, the item's carry is the loop's to read. */
	if (workq_busy(the_queue(), &f->item))
		return FEEDER_KICK_GAP_MS;
	if (!buf_size(&f->carry))
		return 0;
	if (f->flooding && quiet < FEEDER_QUIET_MS)
		return FEEDER_QUIET_MS - quiet;
	f->flooding = false;
	f->stopped_ms = now_ms;
	f->flush_next = true;
	if (hand_over(f) != HANDED)
		f->flush_next = false; /* no thread: the next sync feeds it */
	return 0;
}

/* A kick that finds output: output that looked stopped less than
   FEEDER_QUIET_MS ago had only paused; after FEEDER_QUIET_MS without
   output (a sync may have fed the end meanwhile), a flood has ended. */
static void note_output(struct feeder *f, int64_t now_ms)
{
	if (now_ms - f->output_ms >= FEEDER_QUIET_MS)
		f->flooding = false;
	if (now_ms - f->stopped_ms < FEEDER_QUIET_MS)
		f->flooding = true;
	f->output_ms = now_ms;
	f->appended = false;
}

int64_t feeder_kick(struct feeder *f, int64_t now_ms)
{
	if (f->appended)
		note_output(f, now_ms);
	if (buf_size(&f->pending) < FEEDER_KICK_MIN)
		return flush_when_quiet(f, now_ms);
	refill_kicks(f, now_ms);
	if (!f->kicks)
		return FEEDER_KICK_GAP_MS - (now_ms - f->kicks_ms);
	switch (hand_over(f)) {
	case HANDED:
		f->kicks--;
		/* Come back: if output has stopped by then, what the thread
		   holds back of this batch is fed there (flush_when_quiet). */
		return FEEDER_KICK_GAP_MS;
	case BUSY:
		return FEEDER_KICK_GAP_MS;
	default:
		return 0; /* no thread: the next sync feeds it */
	}
}

void feeder_sync(struct feeder *f)
{
	size_t held;

	take_back(f);
	held = buf_size(&f->carry);
	pending_total -= buf_size(&f->pending);
	f->st.loop_bytes += buf_size(&f->batch) + buf_size(&f->pending);
	/* What the thread held back, a batch taken back from the queue, the
	   pending output: in that order, and in one feed, so that the model's
	   skips reach across them (the batch is copied behind the carry). */
	buf_append(&f->carry, buf_head(&f->batch), buf_size(&f->batch));
	buf_reset(&f->batch);
	screen_feed_carried(f->scr, &f->carry, buf_head(&f->pending),
			    buf_size(&f->pending), 0);
	buf_reset(&f->pending);
	note_held(held, 0);
	f->unsynced = 0;
}

size_t feeder_unsynced(const struct feeder *f)
{
	return f->unsynced;
}

void feeder_trim(struct feeder *f)
{
	/* While its item is busy the thread has the batch and the model. */
	if (!workq_busy(the_queue(), &f->item)) {
		screen_trim(f->scr);
		if (!buf_size(&f->batch) && f->batch.cap > FEEDER_RESERVE)
			buf_free(&f->batch);
		if (!buf_size(&f->carry) && f->carry.cap > FEEDER_RESERVE)
			buf_free(&f->carry);
	}
	if (!buf_size(&f->pending) && f->pending.cap > FEEDER_RESERVE)
		buf_free(&f->pending);
}
