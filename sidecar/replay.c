/* replay: a join's replay that needs the disk, streamed. The frames after
   replay_from go out oldest first, from the frame log while the memory ring
   no longer has them, then from the ring, at most REPLAY_TURN_BYTES per
   loop turn and only while the link's output queue is under
   REPLAY_QUEUE_MAX, so a 100 MiB history neither blocks the loop nor piles
   up in memory. The attachment is held "replaying" meanwhile: broadcasts
   skip it (they reach the ring and come through the replay), so the join
   flow's order (docs/protocol.md, "Joining a session") holds exactly: the
   history, then the Keyframe, then MembershipChanged, then live. Each step
   reads where the last one stopped (the ring if it still holds the next
   sequence, else the disk again), so a ring that moves on during a long
   replay skips nothing and repeats nothing.

   A replay that cannot go on (a damaged record, history deleted by
   retention under it, a link that fell behind) stops in one defined way:
   the frames sent so far, an Error PTY_OUTPUT_LAGGED naming the last
   sequence sent, then the Keyframe and the rest of the join flow. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "linkconn.h"
#include "log.h"
#include "session_int.h"
#include "timeutil.h"
#include "wire.h"
#include "xalloc.h"

/* Frame bytes read per loop turn, and the link queue above which the
   replay waits for the gateway to take what was sent: the mark at which
   the sessions on the link stop reading their PTYs, so a replay takes
   its share of the link and live output the rest (a higher one held
   every session of the link for as long as a replay streamed). */
#define REPLAY_TURN_BYTES (1u << 20)
#define REPLAY_QUEUE_MAX  SESSION_LINK_HIGH_WATER
#define REPLAY_WAIT_MS	  2

struct replay {
	struct session *s;
	struct member *m;
	unsigned cols, rows;	      /* the join's size, applied at the end */
	session_replay_done_fn *done; /* the rest of the join flow */
	uint64_t sent;		      /* the last sequence sent */
	struct framelog_reader *rd;   /* NULL while the ring serves */
	bool rd_fresh;		      /* rd has given nothing yet */
	struct ev_timer *timer;
	uint64_t disk_frames, disk_bytes;
	int64_t t0;
	LIST_ENTRY(replay) entry; /* in its session's replays */
};

static void free_replay(struct replay *rp)
{
	LIST_REMOVE(rp, entry);
	rp->m->replaying = false;
	rp->s->n_replaying--;
	framelog_reader_free(rp->rd);
	ev_timer_free(rp->timer);
	free(rp);
}

/* The end of the replay: the rest of the join flow. */
static void finish(struct replay *rp, const char *stop_why)
{
	struct session *s = rp->s;
	struct member *m = rp->m;
	unsigned cols = rp->cols, rows = rp->rows;
	session_replay_done_fn *done = rp->done;
	char msg[WIRE_MSG_MAX];

	if (rp->disk_frames || stop_why)
		log_info(s->log_ctx,
			 "replayed %llu frames (%llu bytes) from disk in %lld ms%s",
			 (unsigned long long)rp->disk_frames,
			 (unsigned long long)rp->disk_bytes,
			 (long long)(time_mono_ms() - rp->t0),
			 stop_why ? ", then stopped" : "");
	if (stop_why) {
		snprintf(msg, sizeof(msg),
			 "the replay stopped after sequence %llu: %s; "
			 "a Keyframe follows",
			 (unsigned long long)rp->sent, stop_why);
		log_warn(s->log_ctx, "%s", msg);
	}
	free_replay(rp);
	if (stop_why)
		session_emit_error(
		    s, m, PTG__FRAME_ERROR_CODE__FRAME_ERROR_PTY_OUTPUT_LAGGED, msg);
	done(s, m, cols, rows);
}

struct ring_step {
	struct replay *rp;
	size_t budget, sent_bytes;
};

static int send_ring_entry(const struct ring_entry *e, void *user)
{
	struct ring_step *st = user;

	wire_send_frame(st->rp->m->link, e->data, e->len, st->rp->m->attach_id);
	st->rp->sent = e->sequence;
	st->sent_bytes += e->len;
	return st->sent_bytes >= st->budget;
}

/* Sends ring entries after rp->sent, up to budget bytes. Returns the
   bytes sent; 0 means the ring had nothing more: caught up. */
static size_t step_ring(struct replay *rp, size_t budget)
{
	struct ring_step st = {rp, budget, 0};

	ring_foreach_after(rp->s->ring, rp->sent, send_ring_entry, &st);
	return st.sent_bytes;
}

/* One record from the disk. Returns its bytes (at least 1), or 0 with
 *why set when the replay cannot go on. */
static size_t step_disk(struct replay *rp, const char **why)
{
	struct framelog *log = rp->s->log;
	struct framelog_rec rec;
	int rc;

	if (!rp->rd) {
		if (!log || rp->sent + 1 < framelog_oldest_retained(log)) {
			*why = "the history after it was deleted from disk meanwhile";
			return 0;
		}
		rp->rd = framelog_reader_new(log, rp->sent);
		rp->rd_fresh = true;
	}
	rc = framelog_reader_next(rp->rd, &rec);
	if (rc == 1) {
		wire_send_frame(rp->m->link, rec.frame, rec.len, rp->m->attach_id);
		rp->sent = rec.seq;
		rp->rd_fresh = false;
		rp->disk_frames++;
		rp->disk_bytes += rec.len;
		return rec.len + 1;
	}
	framelog_reader_free(rp->rd);
	rp->rd = NULL;
	if (rc < 0) {
		*why = "the next record on disk is damaged";
		return 0;
	}
	if (rp->rd_fresh) {
		*why = "the history after it is missing from disk";
		return 0;
	}
	return 1; /* the end of what was on disk: look again */
}

static void pump(struct ev_timer *t, void *user)
{
	struct replay *rp = user;
	size_t budget = REPLAY_TURN_BYTES, n;
	const char *why = NULL;

	while (budget) {
		if (linkconn_pending_frames(rp->m->link) >= REPLAY_QUEUE_MAX) {
			ev_timer_arm(t, REPLAY_WAIT_MS, 0);
			return;
		}
		if (rp->sent + 1 >= ring_oldest_retained(rp->s->ring)) {
			framelog_reader_free(rp->rd);
			rp->rd = NULL;
			n = step_ring(rp, budget);
			if (!n) {
				finish(rp, NULL);
				return;
			}
		} else if (!(n = step_disk(rp, &why))) {
			finish(rp, why);
			return;
		}
		budget -= n < budget ? n : budget;
	}
	ev_timer_arm(t, 0, 0);
}

int session_replay_start(struct session *s, struct member *m, uint64_t after,
			 unsigned cols, unsigned rows, session_replay_done_fn *done)
{
	struct replay *rp;

	if (after + 1 >= ring_oldest_retained(s->ring))
		return 0; /* memory has it all: served in this turn, as always */
	rp = xcalloc(1, sizeof(*rp));
	rp->s = s;
	rp->m = m;
	rp->cols = cols;
	rp->rows = rows;
	rp->done = done;
	rp->sent = after;
	rp->t0 = time_mono_ms();
	rp->timer = ev_timer_new(s->loop, 0, 0, pump, rp);
	LIST_INSERT_HEAD(&s->replays, rp, entry);
	m->replaying = true;
	s->n_replaying++;
	return 1;
}

static struct replay *find_replay(struct session *s, const struct member *m)
{
	struct replay *rp;

	LIST_FOREACH(rp, &s->replays, entry) {
		if (rp->m == m)
			return rp;
	}
	return NULL;
}

void session_replay_cancel(struct session *s, const struct member *m)
{
	struct replay *rp = find_replay(s, m);

	if (rp)
		free_replay(rp);
}

void session_replay_cancel_link(struct session *s, const void *link)
{
	struct replay *rp, *next;

	LIST_FOREACH_SAFE(rp, &s->replays, entry, next) {
		if (rp->m->link == link)
			free_replay(rp);
	}
}

void session_replay_stop(struct session *s, const struct member *m, const char *why)
{
	struct replay *rp = find_replay(s, m);

	if (rp)
		finish(rp, why);
}

void session_replay_free_all(struct session *s)
{
	while (!LIST_EMPTY(&s->replays))
		free_replay(LIST_FIRST(&s->replays));
}
