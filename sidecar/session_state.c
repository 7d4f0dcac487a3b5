/* session_state: a session's durable state under --state-dir:
   its record with the sequence reservation, its last screen, its frame
   log, the replay of history older than the memory ring, and the rebuild
   after a sidecar restart. session.c, session_emit.c and join.c call in
   through the hooks of session_int.h; nothing here calls back up (no
   frame is sent from here but the ring's replay to one attachment). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "log.h"
#include "ptg_limits.h"
#include "session_int.h"
#include "store.h"
#include "timeutil.h"
#include "wire.h"

/* Sequence numbers are reserved on disk this many at a time: one durable
   record write per block, and a restart continues above the block. */
#define SEQ_BLOCK 1024
/* A changed screen is saved at most this often (and at exit and clean
   shutdown), so after a SIGKILL it is at most this old. */
#define SCREEN_SAVE_MS 1000
/* The share of the frame log's budget (--replay-bytes) past which a
   cadence Keyframe saves the screen before the second is up: retention
   drops whole segments of the oldest frames, and a restart needs every
   frame after the saved screen. */
#define SCREEN_SAVE_LOG_SHARE 4

static int has_state(const struct session *s)
{
	return s->cfg->state_dir[0] != 0;
}

void session_state_persist(struct session *s)
{
	struct store_record r;

	if (!has_state(s))
		return;
	memset(&r, 0, sizeof(r));
	memcpy(r.id, s->id, sizeof(r.id));
	r.sequence = s->seq;
	r.reserved = s->seq_reserved > s->seq ? s->seq_reserved : s->seq;
	r.running = !s->exited;
	r.has_exit_code = s->has_exit_code;
	r.exit_code = s->exit_code;
	r.close_reason = s->close_reason;
	r.cols = s->cols;
	r.rows = s->rows;
	r.policy = s->policy;
	r.control_policy = s->control_policy;
	snprintf(r.owner, sizeof(r.owner), "%s", s->owner);
	r.output_bytes = s->bytes_before[0] + s->pty_bytes;
	r.input_bytes = s->bytes_before[1] + s->input_bytes;
	r.created_ms = s->created_ms;
	r.exited_ms = s->exited_ms;
	snprintf(r.label, sizeof(r.label), "%s", s->label);
	snprintf(r.detail, sizeof(r.detail), "%s", s->detail);
	r.argv = s->argv;
	if (store_write(s->cfg->state_dir, &r) < 0)
		log_warn(s->log_ctx, "cannot write the session record in %s",
			 s->cfg->state_dir);
}

void session_state_reserve(struct session *s)
{
	if (s->seq < s->seq_reserved)
		return;
	s->seq_reserved = s->seq + SEQ_BLOCK;
	session_state_persist(s);
}

static void save_screen(struct session *s, const struct buf *snap)
{
	if (!has_state(s))
		return;
	if (store_write_screen(s->cfg->state_dir, s->id, s->seq, s->cols, s->rows,
			       buf_head(snap), buf_size(snap)) < 0)
		log_warn(s->log_ctx, "cannot write the screen in %s", s->cfg->state_dir);
	s->screen_saved_seq = s->seq;
	s->screen_saved_ms = time_mono_ms();
	s->logged_since_screen = 0;
}

/* The state's own pace: none saved yet, or the last one SCREEN_SAVE_MS
   ago. */
static bool screen_save_due(const struct session *s)
{
	return !s->screen_saved_ms ||
	       time_mono_ms() - s->screen_saved_ms >= SCREEN_SAVE_MS;
}

/* So much was logged since the last save that the log's retention could
   soon drop frames a restart needs to bring that screen up to date. */
static bool log_outgrows_screen(const struct session *s)
{
	return s->logged_since_screen >= s->cfg->replay_bytes / SCREEN_SAVE_LOG_SHARE;
}

/* A Keyframe's snapshot is saved at the state's own pace, as the tick
   saves. Saving every one wrote a file on the loop:
   - for one connection (a join, one that fell behind): a thousand
     observers falling behind at once wrote a thousand files, and a
     controller's echo waited behind them;
   - for the cadence (every 100 Output frames): a keystroke's echo is a
     frame, so one echo in a hundred waited for the file, and the echo's
     p99 doubled.
   A cadence Keyframe saves sooner when the log outgrows the screen (a
   flood). The first one is saved: a restart brings the screen up to date
   from the last one saved, and without one it cannot. */
void session_state_keyframe_made(struct session *s, const struct buf *snap, bool for_all)
{
	if (has_state(s) && (screen_save_due(s) || (for_all && log_outgrows_screen(s))))
		save_screen(s, snap);
}

static void save_current_screen(struct session *s)
{
	struct buf snap = BUF_INIT;

	if (!has_state(s))
		return;
	feeder_sync(s->feeder);
	screen_snapshot(s->screen, &snap);
	save_screen(s, &snap);
	buf_free(&snap);
}

static int screen_changed(const struct session *s)
{
	return feeder_unsynced(s->feeder) || s->seq != s->screen_saved_seq;
}

void session_state_tick(struct session *s, int64_t now_ms)
{
	if (!has_state(s))
		return;
	if (screen_changed(s) && screen_save_due(s))
		save_current_screen(s);
	if (s->log)
		framelog_expire(s->log, now_ms);
}

void session_checkpoint(struct session *s)
{
	save_current_screen(s);
	session_state_persist(s);
	if (s->log)
		framelog_flush(s->log, true);
}

void session_forget(struct session *s)
{
	if (!has_state(s))
		return;
	store_remove(s->cfg->state_dir, s->id);
	framelog_close(s->log);
	s->log = NULL;
	framelog_remove(s->cfg->state_dir, s->id);
}

/* ---- the frame log ---- */

static void on_flush_due(struct ev_timer *t, void *user)
{
	struct session *s = user;

	if (s->log)
		framelog_flush_async(s->log);
}

static void open_log(struct session *s)
{
	const struct sidecar_config *c = s->cfg;
	struct framelog_opts o = {
	    .keys = &c->state_keys,
	    .fsync = c->fsync,
	    .segment_bytes = c->state_segment_bytes,
	    .max_frames = c->replay_frames,
	    .max_age_ms = (int64_t)c->replay_seconds * 1000,
	    .max_bytes = c->replay_bytes,
	};

	if (!has_state(s))
		return;
	s->log = framelog_open(c->state_dir, s->id, &o);
	s->flush_timer = ev_timer_new(s->loop, -1, 0, on_flush_due, s);
}

void session_state_start(struct session *s)
{
	open_log(s);
	session_state_persist(s);
}

void session_state_log(struct session *s, const Ptg__Frame *f, const struct buf *packed)
{
	if (!s->log)
		return;
	framelog_append(s->log, f->sequence, f->ts_ms, (uint8_t)f->kind_case,
			buf_head(packed), buf_size(packed));
	s->logged_since_screen += buf_size(packed);
	if (s->cfg->fsync == FSYNC_INTERVAL && !ev_timer_armed(s->flush_timer))
		ev_timer_arm(s->flush_timer, s->cfg->fsync_interval_ms, 0);
}

void session_state_free(struct session *s)
{
	ev_timer_free(s->flush_timer);
	s->flush_timer = NULL;
	framelog_close(s->log);
	s->log = NULL;
}

/* ---- replay: the disk, then the memory ring ---- */

uint64_t session_state_oldest(const struct session *s)
{
	uint64_t mem = ring_oldest_retained(s->ring);
	uint64_t disk = s->log ? framelog_oldest_retained(s->log) : 0;

	return disk && disk < mem ? disk : mem;
}

int session_state_check_replay(const struct session *s, uint64_t replay_from)
{
	return ring_check_range(replay_from, session_state_oldest(s), s->seq);
}

struct ring_replay {
	struct linkconn *lc;
	uint64_t attach_id;
};

static int replay_entry(const struct ring_entry *e, void *user)
{
	struct ring_replay *rr = user;

	wire_send_frame(rr->lc, e->data, e->len, rr->attach_id);
	return 0;
}

void session_state_replay(struct session *s, struct linkconn *lc, uint64_t attach_id,
			  uint64_t after)
{
	struct ring_replay rr = {lc, attach_id};

	ring_foreach_after(s->ring, after, replay_entry, &rr);
}

/* ---- recordings ---- */

struct page {
	struct export_enc enc;
	struct buf *out;
	size_t max;
	uint64_t last;
	uint64_t until; /* the export's end: frames numbered above it are not in it */
};

enum { PAGE_FULL = 1, PAGE_END = 2 };

/* Adds one frame to the page: PAGE_FULL when the page is full,
   PAGE_END past the export's end. */
static int page_add(struct page *pg, uint64_t seq, int64_t ts_ms, const uint8_t *frame,
		    size_t len)
{
	if (seq > pg->until)
		return PAGE_END;
	if (buf_size(pg->out) >= pg->max)
		return PAGE_FULL;
	export_frame(&pg->enc, frame, len, ts_ms, pg->out);
	pg->last = seq;
	return 0;
}

static int page_entry(const struct ring_entry *e, void *user)
{
	return page_add(user, e->sequence, e->ts_ms, e->data, e->len);
}

/* PAGE_FULL when the page ended before the export did; -1 on a damaged
   record. */
static int page_from_log(struct session *s, struct page *pg, uint64_t after)
{
	struct framelog_reader *rd = framelog_reader_new(s->log, after);
	struct framelog_rec rec;
	int rc, stop = 0;

	while (!stop && (rc = framelog_reader_next(rd, &rec)) == 1)
		stop = page_add(pg, rec.seq, rec.ts_ms, rec.frame, rec.len);
	framelog_reader_free(rd);
	if (!stop && rc < 0) {
		log_warn(s->log_ctx, "export: the history stops at a damaged record (%s)",
			 strerror(-rc));
		return -1;
	}
	return stop;
}

void session_export_page(struct session *s, const Ptg__ExportSession *q, struct buf *out,
			 Ptg__ExportChunk *c)
{
	/* A live program may print faster than the export is read: the
	   export stops at the end the history had on its first page. */
	struct page pg = {.out = out,
			  .last = q->after_sequence,
			  .until = q->until_sequence ? q->until_sequence : s->seq};
	int first = !q->after_sequence && !q->start_ts_ms, more;

	pg.max = q->max_bytes && q->max_bytes < EXPORT_PAGE_MAX ? q->max_bytes
								: EXPORT_PAGE_MAX;
	pg.enc.start_ms = q->start_ts_ms;
	if (q->carry.len <= 3)
		buf_append(&pg.enc.carry, q->carry.data, q->carry.len);
	if (first)
		export_header(out, s->cols, s->rows, s->created_ms, s->label);
	if (s->log)
		more = page_from_log(s, &pg, q->after_sequence);
	else
		more = ring_foreach_after(s->ring, q->after_sequence, page_entry, &pg);
	c->done = more != PAGE_FULL;
	c->until_sequence = pg.until;
	if (c->done)
		export_end(&pg.enc, out);
	c->data.data = buf_head(out);
	c->data.len = buf_size(out);
	c->next_after = pg.last;
	c->start_ts_ms = pg.enc.start_ms;
	/* The carry goes back to the gateway; the next page starts with it. */
	c->carry.len = buf_size(&pg.enc.carry);
	if (c->carry.len) /* an empty buf's head may be NULL */
		memcpy(c->carry.data, buf_head(&pg.enc.carry), c->carry.len);
	buf_free(&pg.enc.carry);
}

/* ---- after a sidecar restart ---- */

/* Brings the saved screen up to the last frame on disk: the Output and
   Resize frames logged after it was saved (at most a second of them). */
static void replay_screen_from_log(struct session *s, uint64_t screen_seq)
{
	struct framelog_reader *rd;
	struct framelog_rec rec;
	Ptg__Frame *f;

	if (!s->log || !screen_seq || screen_seq >= framelog_last_seq(s->log))
		return;
	rd = framelog_reader_new(s->log, screen_seq);
	while (framelog_reader_next(rd, &rec) == 1) {
		if (rec.kind != PTG__FRAME__KIND_OUTPUT &&
		    rec.kind != PTG__FRAME__KIND_RESIZE)
			continue;
		f = ptg__frame__unpack(NULL, rec.len, rec.frame);
		if (!f)
			continue;
		if (f->kind_case == PTG__FRAME__KIND_OUTPUT)
			feeder_append(s->feeder, f->output->data.data,
				      f->output->data.len);
		if (f->kind_case == PTG__FRAME__KIND_RESIZE &&
		    PTG_DIM_OK(f->resize->cols, f->resize->rows)) {
			feeder_sync(s->feeder);
			s->cols = f->resize->cols;
			s->rows = f->resize->rows;
			screen_resize(s->screen, s->cols, s->rows);
		}
		ptg__frame__free_unpacked(f, NULL);
	}
	framelog_reader_free(rd);
	feeder_sync(s->feeder);
}

static uint64_t max3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a > b ? a : b;

	return m > c ? m : c;
}

uint64_t session_state_restore(struct session *s, const struct store_record *r)
{
	uint64_t saved;

	open_log(s);
	replay_screen_from_log(s, r->screen_seq);
	saved = s->log ? framelog_last_seq(s->log) : 0;
	/* Above every number that may have been issued, even ones whose
	   frames were lost with the process. */
	s->seq = max3(r->sequence, r->reserved, saved);
	s->seq_reserved = s->seq;
	ring_forget_through(s->ring, s->seq);
	return saved;
}

/* ---- the sidecar's disk budget ---- */

void session_state_budget(struct session **v, size_t n, uint64_t max_bytes)
{
	uint64_t total = 0;

	if (!max_bytes)
		return;
	for (size_t i = 0; i < n; i++)
		total += v[i]->log ? framelog_disk_bytes(v[i]->log) : 0;
	while (total > max_bytes) {
		struct session *oldest = NULL;
		int64_t ts = INT64_MAX;
		uint64_t freed;

		for (size_t i = 0; i < n; i++) {
			int64_t t = v[i]->log ? framelog_oldest_ts(v[i]->log) : INT64_MAX;
			if (t < ts) {
				ts = t;
				oldest = v[i];
			}
		}
		if (!oldest || !(freed = framelog_drop_oldest(oldest->log)))
			return;
		total -= freed;
	}
}
