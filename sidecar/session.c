/* session: a session's process and PTY, its output and Keyframe cadence,
   size, exit and kill, and its one constructor. Frames go out through
   session_emit.c, durable state through session_state.c; the join flows
   live in join.c, above this file. */
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "ptg_limits.h"
#include "session_int.h"
#include "store.h"
#include "timeutil.h"
#include "tty.h"
#include "wire.h"
#include "xalloc.h"

/* One Output frame carries at most this much; reads are batched up to it
   so a busy program yields few large frames while a keystroke echo still
   goes out alone, at once. */
#define OUTPUT_BATCH (64 * 1024)
/* Less than this from a PTY's first read means it was all but empty (its
   line discipline hands out up to 4 KiB per read). */
#define OUTPUT_SHORT_READ 1024
/* Past this much of a batch, a read takes only what the line discipline
   already holds (FIONREAD): it does not wait for the kernel's worker to
   move the next 4 KiB over. A flood then keeps the loop from the other
   sessions and the links for a few reads, not sixteen round trips with
   the worker, so a keystroke's echo in another session waits less
   (docs/benchmarks.md), and frames stay 16 KiB or more. */
#define OUTPUT_NOWAIT_AFTER (16 * 1024)
/* A wake-up that read less than this leaves the session's PTY urgent
   (ev_io_set_urgent): read before a flooding session's in the next turn. */
#define OUTPUT_URGENT_MAX (4 * 1024)

static void on_pty(struct ev_io *io, int fd, unsigned events, void *user);
static void release_output(struct session *s);
static void emit_gathered(void *user, const uint8_t *p, size_t n);
static void sync_screen(struct session *s);

static char **strv_dup(char *const *v)
{
	size_t n = 0;
	char **out;

	while (v && v[n])
		n++;
	out = xcalloc(n + 1, sizeof(*out));
	for (size_t i = 0; i < n; i++)
		out[i] = xstrdup(v[i]);
	return out;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* The login shell of the session's user, for a create without a command
   (pointing into getpwnam's or the environment's storage). */
static const char *login_shell(const struct sidecar_config *cfg)
{
	const char *sh = cfg->session_user[0] ? NULL : getenv("SHELL");
	struct passwd *pw;

	if (cfg->session_user[0]) {
		pw = getpwnam(cfg->session_user);
		sh = pw && pw->pw_shell && pw->pw_shell[0] ? pw->pw_shell : "/bin/sh";
	} else if (!sh || !sh[0]) {
		pw = getpwuid(getuid());
		sh = pw && pw->pw_shell && pw->pw_shell[0] ? pw->pw_shell : "/bin/sh";
	}
	return sh;
}

/* The replay ring (docs/protocol.md, "Sequences, replay and keyframes"),
   sized by the sidecar's flags. */
static struct ring *new_ring(const struct sidecar_config *cfg)
{
	struct ring_limits lim = {
	    .max_frames = cfg->replay_frames,
	    .max_age_ms = (int64_t)cfg->replay_seconds * 1000,
	    .max_bytes = cfg->replay_bytes,
	};

	/* With a frame log the ring is only a cache of the recent tail. */
	if (cfg->state_dir[0] && cfg->replay_memory_bytes < lim.max_bytes)
		lim.max_bytes = cfg->replay_memory_bytes;

	return ring_new(&lim);
}

static int start_process(struct session *s, const struct session_params *p, char *err,
			 size_t errlen)
{
	struct tty_spec spec = {
	    .argv = s->argv,
	    .cwd = p->cwd,
	    .env_extra = p->env_extra,
	    .cols = s->cols,
	    .rows = s->rows,
	    .user = s->cfg->session_user[0] ? s->cfg->session_user : NULL,
	};
	int rc = tty_spawn(&spec, &s->master, &s->pid, err, errlen);

	if (rc < 0)
		return rc;
	s->io = ev_io_new(s->loop, s->master, EV_READ, on_pty, s);
	if (!s->io) {
		/* Out of file descriptors (or epoll's limit): a session whose
		   PTY is never read would hang its program, so refuse it. */
		snprintf(err, errlen, "cannot watch the terminal: %s", strerror(errno));
		return -EMFILE;
	}
	ev_io_set_urgent(s->io, true); /* until its output looks like a flood */
	return 0;
}

/* The one constructor: every field from what the session is (p: its
   size, policies, label and argv as given), with no process yet. A new
   session then starts its program; a restored one fills in what its
   record says. */
static struct session *alloc_session(const struct sidecar_config *cfg,
				     struct ev_loop *loop, const struct session_params *p)
{
	struct session *s = xcalloc(1, sizeof(*s));

	s->cfg = cfg;
	s->loop = loop;
	s->master = -1;
	s->cols = p->cols ? p->cols : cfg->default_cols;
	s->rows = p->rows ? p->rows : cfg->default_rows;
	s->policy = p->policy;
	s->control_policy = p->control_policy;
	s->owner = xstrdup(p->owner ? p->owner : "");
	s->label = xstrdup(p->label ? p->label : "");
	s->argv = strv_dup(p->argv);
	buf_init(&s->input);
	buf_init(&s->pack);
	s->screen = screen_new(s->cols, s->rows);
	s->feeder = feeder_new(s->screen);
	gather_init(&s->gather, emit_gathered, s);
	s->ring = new_ring(cfg);
	s->members = members_new(cfg->max_controllers, cfg->max_observers);
	return s;
}

/* Its log lines name it as a field (session=ID, a "session" key in JSON
   logs), not as free text, so a session's lines can be selected. */
static void set_log_ctx(struct session *s)
{
	snprintf(s->log_ctx, sizeof(s->log_ctx), "session=%s", s->id);
}

struct session *session_new(const struct sidecar_config *cfg, struct ev_loop *loop,
			    const struct session_params *p, char *err, size_t errlen)
{
	struct session_params given = *p;
	char *shell[2] = {NULL, NULL};
	struct session *s;

	if (!p->argv || !p->argv[0]) {
		shell[0] = (char *)login_shell(cfg);
		given.argv = shell;
	}
	s = alloc_session(cfg, loop, &given);
	uuid_v7_new(s->id);
	set_log_ctx(s);
	s->created_ms = time_now_ms();
	if (start_process(s, p, err, errlen) < 0) {
		session_free(s);
		return NULL;
	}
	log_info(s->log_ctx, "started pid %d: %s (%ux%u)", (int)s->pid, s->argv[0],
		 s->cols, s->rows);
	session_state_start(s);
	return s;
}

static void emit_log_line(struct session *s, const char *text)
{
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__OutputFrame o = PTG__OUTPUT_FRAME__INIT;

	feeder_append(s->feeder, (const uint8_t *)text, strlen(text));
	o.stream = PTG__STREAM__STREAM_LOG;
	o.data.data = (uint8_t *)text;
	o.data.len = strlen(text);
	f.kind_case = PTG__FRAME__KIND_OUTPUT;
	f.output = &o;
	session_emit(s, &f, NULL);
}

/* The program did not survive: say up to where history was saved, then
   close; nothing padded (docs/protocol.md, "After a sidecar restart"). */
static void state_the_boundary(struct session *s, uint64_t saved_through)
{
	char line[256];

	if (saved_through)
		snprintf(
		    line, sizeof(line),
		    "\r\n[ptygate] the sidecar restarted: this "
		    "session's program was lost in the restart; its history was saved "
		    "up to sequence %llu.\r\n",
		    (unsigned long long)saved_through);
	else
		snprintf(line, sizeof(line),
			 "\r\n[ptygate] the sidecar restarted: this "
			 "session's program was lost in the restart; none of its history "
			 "was saved.\r\n");
	emit_log_line(s, line);
	s->has_exit_code = 0;
	s->close_reason = PTG__CLOSE_REASON__CLOSE_INSTANCE_TERMINATED;
	snprintf(s->detail, sizeof(s->detail),
		 "the sidecar restarted; the program was lost");
	session_emit_closed(s, NULL);
}

struct session *session_restore(const struct sidecar_config *cfg, struct ev_loop *loop,
				const struct store_record *r)
{
	/* The screen file is newer than the record when it has a size. */
	struct session_params p = {
	    .argv = r->argv,
	    .cols = r->screen_cols ? r->screen_cols : r->cols,
	    .rows = r->screen_rows ? r->screen_rows : r->rows,
	    .policy = r->policy,
	    .control_policy = r->control_policy,
	    .owner = r->owner,
	    .label = r->label,
	};
	struct session *s = alloc_session(cfg, loop, &p);
	uint64_t saved;

	memcpy(s->id, r->id, sizeof(s->id));
	set_log_ctx(s);
	s->bytes_before[0] = r->output_bytes;
	s->bytes_before[1] = r->input_bytes;
	s->created_ms = r->created_ms;
	s->reaped = s->exited = true;
	s->has_exit_code = r->has_exit_code;
	s->exit_code = r->exit_code;
	s->close_reason = r->close_reason;
	snprintf(s->detail, sizeof(s->detail), "%s", r->detail);
	s->exited_ms = r->running ? time_now_ms() : r->exited_ms;
	if (r->screen)
		screen_feed(s->screen, r->screen, r->screen_len);
	saved = session_state_restore(s, r);
	if (r->running)
		state_the_boundary(s, saved);
	session_state_persist(s);
	log_info(s->log_ctx,
		 "restored from the state dir at sequence %llu, history on disk "
		 "%llu-%llu%s",
		 (unsigned long long)s->seq,
		 (unsigned long long)(s->log ? framelog_first_seq(s->log) : 0),
		 (unsigned long long)saved, r->running ? " (its program was lost)" : "");
	return s;
}

static void close_pty(struct session *s)
{
	ev_io_free(s->io);
	s->io = NULL;
	if (s->master >= 0)
		close(s->master);
	s->master = -1;
}

void session_free(struct session *s)
{
	if (!s)
		return;
	if (!s->reaped && s->pid > 0)
		kill(-s->pid, SIGKILL);
	release_output(s);
	close_pty(s);
	session_replay_free_all(s);
	session_state_free(s);
	ev_timer_free(s->kill_timer);
	ev_timer_free(s->keyframe_timer);
	ev_timer_free(s->kick_timer);
	ev_timer_free(s->gather_timer);
	gather_free(&s->gather);
	ev_timer_free(s->membership_timer);
	session_control_free(s);
	feeder_free(s->feeder);
	screen_free(s->screen);
	ring_free(s->ring);
	members_free(s->members);
	buf_free(&s->input);
	buf_free(&s->pack);
	strv_free(s->argv);
	free(s->label);
	free(s->owner);
	free(s);
}

const char *session_id(const struct session *s)
{
	return s->id;
}

const char *session_log_ctx(const struct session *s)
{
	return s->log_ctx;
}
pid_t session_pid(const struct session *s)
{
	return s->pid;
}
bool session_exited(const struct session *s)
{
	return s->exited;
}

bool session_reapable(const struct session *s, int64_t now_ms)
{
	return s->exited && !members_first(s->members) &&
	       now_ms - s->exited_ms >= (int64_t)s->cfg->exited_keep_seconds * 1000;
}

int64_t session_evictable_since(const struct session *s)
{
	return s->exited && !members_first(s->members) ? s->exited_ms : -1;
}

/* ---- frames ---- */

uint64_t session_emit_keyframe(struct session *s, const struct member *target)
{
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__KeyframeFrame kf = PTG__KEYFRAME_FRAME__INIT;
	struct buf snap = BUF_INIT;
	char msg[WIRE_MSG_MAX];
	uint64_t seq;

	if (!target) {
		/* Cadence restarts here, made or not: a failed one is not retried
		   on every output frame. */
		s->frames_since_keyframe = 0;
		/* No timer yet when the frame count comes due first (for
		   instance --keyframe-frames 1). */
		if (s->keyframe_timer)
			ev_timer_disarm(s->keyframe_timer);
	}
	sync_screen(s);
	screen_snapshot(s->screen, &snap);
	if (buf_size(&snap) > s->cfg->keyframe_max_bytes) {
		/* A huge screen of distinct colours can outgrow a link message
		   (--keyframe-max-bytes stays below it); the protocol has an
		   Error, KEYFRAME_UNAVAILABLE, for a Keyframe that cannot be made. */
		snprintf(msg, sizeof(msg),
			 "the screen (%ux%u) takes %zu bytes to snapshot, "
			 "more than %u",
			 s->cols, s->rows, buf_size(&snap), s->cfg->keyframe_max_bytes);
		log_warn(s->log_ctx, "%s", msg);
		buf_free(&snap);
		session_emit_error(
		    s, target, PTG__FRAME_ERROR_CODE__FRAME_ERROR_KEYFRAME_UNAVAILABLE,
		    msg);
		return s->seq;
	}
	kf.snapshot.data = buf_head(&snap);
	kf.snapshot.len = buf_size(&snap);
	kf.cols = s->cols;
	kf.rows = s->rows;
	f.kind_case = PTG__FRAME__KIND_KEYFRAME;
	f.keyframe = &kf;
	seq = session_emit(s, &f, target);
	session_state_keyframe_made(s, &snap, target == NULL);
	buf_free(&snap);
	return seq;
}

/* ---- output and keyframe cadence ---- */

/* The screen model (libvterm) is far slower than a PTY can produce, so it
   is fed off the loop (feeder.h) and lazily: output waits until a batch
   is worth feeding, the PTY runs dry, a Keyframe or a resize needs the
   screen, or the session is quiet for a tick; screen_feed_tail then
   skips what cannot reach the final screen. */
static void sync_screen(struct session *s)
{
	feeder_sync(s->feeder);
}

static void on_keyframe_due(struct ev_timer *t, void *user)
{
	struct session *s = user;

	if (s->frames_since_keyframe > 0 && !s->exited)
		session_emit_keyframe(s, NULL);
}

/* During output, a Keyframe at least every keyframe_frames Output
   frames or keyframe_seconds after the first output it does not cover;
   none while idle (docs/protocol.md, "Sequences, replay and keyframes"). */
static void keyframe_cadence(struct session *s)
{
	int64_t due = (int64_t)s->cfg->keyframe_seconds * 1000;

	if (++s->frames_since_keyframe >= s->cfg->keyframe_frames) {
		session_emit_keyframe(s, NULL);
		return;
	}
	if (!s->keyframe_timer)
		s->keyframe_timer = ev_timer_new(s->loop, -1, 0, on_keyframe_due, s);
	if (!ev_timer_armed(s->keyframe_timer))
		ev_timer_arm(s->keyframe_timer, due, 0);
}

static void emit_output(struct session *s, const uint8_t *p, size_t n)
{
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__OutputFrame o = PTG__OUTPUT_FRAME__INIT;

	s->output_since_tick = true;
	s->pty_bytes += n;
	feeder_append(s->feeder, p, n);
	/* Numbered and kept whether or not anyone has joined yet: the
	   history (ring and frame log) holds every byte from the program's
	   start, so a recording of a session nobody watched is whole. A
	   silent program's first join is still numbered 1, 2, 3. */
	o.stream = PTG__STREAM__STREAM_STDOUT;
	o.data.data = (uint8_t *)p;
	o.data.len = n;
	f.kind_case = PTG__FRAME__KIND_OUTPUT;
	f.output = &o;
	session_emit(s, &f, NULL);
	keyframe_cadence(s);
}

static void emit_gathered(void *user, const uint8_t *p, size_t n)
{
	emit_output(user, p, n);
}

static void on_gather_due(struct ev_timer *t, void *user)
{
	(void)t;
	gather_flush(&((struct session *)user)->gather);
}

/* A read's output goes out now, or joins the next reads of a stream
   (gather.h) until the gather's deadline. */
static void take_output(struct session *s, const uint8_t *p, size_t n)
{
	int64_t due_us = gather_take(&s->gather, p, n, time_mono_us());

	if (!due_us)
		return;
	if (!s->gather_timer)
		s->gather_timer = ev_timer_new(s->loop, -1, 0, on_gather_due, s);
	if (!ev_timer_armed(s->gather_timer))
		ev_timer_arm(s->gather_timer, (due_us + 999) / 1000, 0);
}

/* Whether the line discipline holds output now; unlike a read, FIONREAD
   does not wait for the kernel's worker. On error, yes: the read tells. */
static int pty_holds_output(int master)
{
	int n;

	return ioctl(master, FIONREAD, &n) < 0 || n > 0;
}

/* Reads what the PTY has, up to one batch. Returns bytes read, 0 when
   nothing is ready, or -1 when the PTY is finished (EIO: every slave fd
   is closed). */
static ssize_t read_batch(struct session *s, uint8_t *batch)
{
	size_t got = 0;
	ssize_t n;

	while (got < OUTPUT_BATCH) {
		if (got >= OUTPUT_NOWAIT_AFTER && !pty_holds_output(s->master))
			break;
		n = read(s->master, batch + got, OUTPUT_BATCH - got);
		if (n > 0) {
			got += (size_t)n;
			/* A first read this short found the PTY all but empty
			   (a keystroke's echo, a prompt): the frame goes now,
			   without a read only to see EAGAIN; the level-triggered
			   poll reports anything newer. */
			if (got < OUTPUT_SHORT_READ)
				break;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		return got ? (ssize_t)got : -1;
	}
	return (ssize_t)got;
}

/* ---- flow control toward the gateways (SESSION_LINK_HIGH_WATER) ---- */

static void update_io(struct session *s);

/* Counts queued frames only: replies (a session list) wait in their own
   lane behind every frame, so however many are queued they never hold a
   session's output. */
static int links_backed_up(struct session *s, size_t mark)
{
	for (unsigned i = 0; i < members_nlinks(s->members); i++)
		if (linkconn_pending_frames(members_link(s->members, i)) > mark)
			return 1;
	return 0;
}

static void resume_when_drained(void *user);

static void hold_output(struct session *s)
{
	s->output_held = true;
	ev_hook_add(s->loop, resume_when_drained, s);
	update_io(s);
}

static void release_output(struct session *s)
{
	if (!s->output_held)
		return;
	s->output_held = false;
	ev_hook_remove(s->loop, resume_when_drained, s);
	update_io(s);
}

/* A before-poll hook while output is held: the links' writes of this
   turn are done, so their queues are as short as they get. */
static void resume_when_drained(void *user)
{
	struct session *s = user;

	if (!links_backed_up(s, SESSION_LINK_HIGH_WATER / 2))
		release_output(s);
}

static void kick_model(struct session *s);

static void on_kick_due(struct ev_timer *t, void *user)
{
	(void)t;
	kick_model(user);
}

/* The PTY ran dry: the model may follow, now or once the feeder says. */
static void kick_model(struct session *s)
{
	int64_t again = feeder_kick(s->feeder, time_mono_ms());

	if (again <= 0)
		return;
	if (!s->kick_timer)
		s->kick_timer = ev_timer_new(s->loop, -1, 0, on_kick_due, s);
	if (!ev_timer_armed(s->kick_timer))
		ev_timer_arm(s->kick_timer, again, 0);
}

/* Drains the PTY. The PTY is read whether or not anyone is attached, so
   a session nobody watches never stalls its program; only a backed-up
   link of a member holds it (SESSION_LINK_HIGH_WATER). */
static void drain_output(struct session *s)
{
	static uint8_t batch[OUTPUT_BATCH];
	ssize_t n;

	if (links_backed_up(s, SESSION_LINK_HIGH_WATER)) {
		hold_output(s);
		return;
	}
	/* One batch a wake-up; level-triggered, the loop comes back for the
	   rest. A batch is up to 16 reads of the kernel's 4 KiB line
	   discipline buffer, and the first four may wait for the kernel's
	   worker to refill it (OUTPUT_NOWAIT_AFTER): four batches in a row
	   kept a controller's input from the PTY for up to tens of ms on a
	   loaded machine. */
	n = read_batch(s, batch);
	/* A session that printed a few bytes (an echo, a prompt) is read
	   before the other PTYs of the next turn; one that filled most of a
	   batch is a flood and waits its turn. */
	if (n >= 0 && s->io)
		ev_io_set_urgent(s->io, n < OUTPUT_URGENT_MAX);
	if (n > 0)
		take_output(s, batch, (size_t)n);
	if (n < 0) {
		gather_flush(&s->gather);
		/* Every slave fd is closed; the child's status decides when
		   Closed goes out (finish_if_done). */
		ev_io_free(s->io);
		s->io = NULL;
	}
	/* Dry: the output went out; the model may follow. */
	if (n < OUTPUT_BATCH && s->io)
		kick_model(s);
}

static void flush_input(struct session *s);
static void finish_if_done(struct session *s);

static void on_pty(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct session *s = user;

	if (events & EV_WRITE)
		flush_input(s);
	if (events & EV_READ) {
		drain_output(s);
		if (!s->io)
			finish_if_done(s);
	}
}

/* ---- input ---- */

static void update_io(struct session *s)
{
	if (s->io)
		ev_io_set(s->io, (s->output_held ? 0 : EV_READ) |
				     (buf_size(&s->input) ? EV_WRITE : 0));
}

/* Writes pending input without blocking; what the PTY does not take
   waits for EV_WRITE. Returns 0 or a negative errno. */
static int write_input(struct session *s)
{
	ssize_t n;

	while (buf_size(&s->input)) {
		n = write(s->master, buf_head(&s->input), buf_size(&s->input));
		if (n > 0) {
			s->input_bytes += (uint64_t)n;
			gather_input(&s->gather, time_mono_us());
			buf_consume(&s->input, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		return n < 0 ? -errno : -EIO;
	}
	return 0;
}

static void flush_input(struct session *s)
{
	int rc = write_input(s);

	if (rc < 0) {
		log_warn(s->log_ctx, "writing to the PTY: %s; %zu input bytes lost",
			 strerror(-rc), buf_size(&s->input));
		buf_reset(&s->input);
		session_emit_error(s, NULL,
				   PTG__FRAME_ERROR_CODE__FRAME_ERROR_PTY_WRITE_FAILED,
				   "the terminal stopped accepting input");
	}
	update_io(s);
}

void session_input(struct session *s, struct linkconn *lc, const Ptg__Input *in)
{
	struct member *m = members_find(s->members, lc, in->attach_id);

	if (!m) {
		wire_send_error(lc, 0, in->attach_id, in->client_op_id,
				PTG__ERROR_CODE__NOT_FOUND, "not attached");
		return;
	}
	if (m->role != MEMBER_CONTROLLER) {
		wire_send_error(lc, 0, in->attach_id, in->client_op_id,
				PTG__ERROR_CODE__PERMISSION_DENIED,
				"observers cannot send input");
		return;
	}
	if (s->master < 0 || s->reaped) {
		session_emit_error(s, m,
				   PTG__FRAME_ERROR_CODE__FRAME_ERROR_PTY_WRITE_FAILED,
				   "the program has exited");
		return;
	}
	if (buf_size(&s->input) + in->data.len > s->cfg->input_buffer_bytes) {
		/* Never dropped silently: the sender learns this input was not
		   applied, and nothing already accepted is lost. */
		session_emit_error(
		    s, m, PTG__FRAME_ERROR_CODE__FRAME_ERROR_PTY_WRITE_FAILED,
		    "input buffer full: the program is not reading its input");
		return;
	}
	buf_append(&s->input, in->data.data, in->data.len);
	flush_input(s);
}

/* ---- size ---- */

int session_apply_size(struct session *s, unsigned cols, unsigned rows)
{
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__ResizeFrame r = PTG__RESIZE_FRAME__INIT;
	int rc = 0;

	if (s->master >= 0)
		rc = tty_set_size(s->master, cols, rows);
	if (rc < 0)
		return rc;
	/* What was read before the resize is drawn at the old size. */
	gather_flush(&s->gather);
	sync_screen(s);
	s->cols = cols;
	s->rows = rows;
	screen_resize(s->screen, cols, rows);
	r.cols = cols;
	r.rows = rows;
	f.kind_case = PTG__FRAME__KIND_RESIZE;
	f.resize = &r;
	session_emit(s, &f, NULL);
	return 0;
}

void session_resize(struct session *s, struct linkconn *lc, const Ptg__Resize *rz)
{
	struct member *m = members_find(s->members, lc, rz->attach_id);
	char msg[WIRE_MSG_MAX];
	int rc;

	if (!m) {
		wire_send_error(lc, 0, rz->attach_id, rz->client_op_id,
				PTG__ERROR_CODE__NOT_FOUND, "not attached");
		return;
	}
	if (m->role != MEMBER_CONTROLLER) {
		wire_send_error(lc, 0, rz->attach_id, rz->client_op_id,
				PTG__ERROR_CODE__PERMISSION_DENIED,
				"observers cannot resize the terminal");
		return;
	}
	if (!PTG_DIM_OK(rz->cols, rz->rows)) {
		wire_send_error(lc, 0, rz->attach_id, rz->client_op_id,
				PTG__ERROR_CODE__INVALID_REQUEST,
				"cols and rows must be 1 to " PTG_STR(PTG_DIM_MAX));
		return;
	}
	rc = s->exited ? -EIO : session_apply_size(s, rz->cols, rz->rows);
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "resize to %ux%u failed: %s", rz->cols,
			 rz->rows, s->exited ? "the program has exited" : strerror(-rc));
		session_emit_error(
		    s, m, PTG__FRAME_ERROR_CODE__FRAME_ERROR_PTY_RESIZE_FAILED, msg);
	}
}

/* ---- exit and kill ---- */

static void describe_exit(struct session *s)
{
	int st = s->wait_status;

	if (WIFEXITED(st)) {
		s->has_exit_code = 1;
		s->exit_code = WEXITSTATUS(st);
		if (!s->kill_requested) {
			s->close_reason = PTG__CLOSE_REASON__CLOSE_NORMAL;
			snprintf(s->detail, sizeof(s->detail), "exited with status %d",
				 s->exit_code);
		}
		return;
	}
	s->has_exit_code = 0;
	s->close_reason = PTG__CLOSE_REASON__CLOSE_KILLED;
	if (!s->kill_requested)
		snprintf(s->detail, sizeof(s->detail), "terminated by signal %d (%s)",
			 WTERMSIG(st), strsignal(WTERMSIG(st)));
}

/* Closed goes out once the child is reaped and its output is drained. */
static void finish_if_done(struct session *s)
{
	if (s->exited || !s->reaped)
		return;
	if (s->io)
		drain_output(s);
	gather_flush(&s->gather); /* all output before Closed */
	describe_exit(s);
	close_pty(s);
	ev_timer_free(s->kill_timer);
	s->kill_timer = NULL;
	s->exited = true;
	s->exited_ms = time_now_ms();
	log_info(s->log_ctx, "closed: %s", s->detail);
	session_emit_closed(s, NULL);
	session_checkpoint(s);
}

void session_child_exited(struct session *s, int status)
{
	s->reaped = true;
	s->wait_status = status;
	finish_if_done(s);
}

static void on_kill_grace(struct ev_timer *t, void *user)
{
	struct session *s = user;

	if (!s->reaped) {
		log_info(s->log_ctx, "still running after hang-up; sending SIGKILL");
		kill(-s->pid, SIGKILL);
		kill(s->pid, SIGKILL);
	}
}

void session_kill(struct session *s, const char *detail)
{
	if (s->reaped || s->kill_requested)
		return;
	s->kill_requested = true;
	s->close_reason = PTG__CLOSE_REASON__CLOSE_KILLED;
	snprintf(s->detail, sizeof(s->detail), "%s", detail);
	log_info(s->log_ctx, "ending: %s", detail);
	kill(-s->pid, SIGHUP);
	kill(s->pid, SIGHUP);
	kill(-s->pid, SIGCONT);
	s->kill_timer = ev_timer_new(s->loop, s->cfg->kill_grace_ms, 0, on_kill_grace, s);
}

void session_tick(struct session *s, int64_t now_ms)
{
	if (!s->output_since_tick) {
		/* Quiet for a tick: the loop is idle, so the screen catches up
		   now rather than on the next join, and an idle session does
		   not keep a flood's worth of storage. */
		sync_screen(s);
		feeder_trim(s->feeder);
		gather_trim(&s->gather);
	}
	s->output_since_tick = false;
	ring_expire(s->ring, now_ms);
	session_state_tick(s, now_ms);
}

/* ---- info ---- */

void session_counts(const struct session *s, struct session_counts *out)
{
	out->members = members_count(s->members, MEMBER_CONTROLLER) +
		       members_count(s->members, MEMBER_OBSERVER);
	out->pty_bytes = s->pty_bytes;
	out->input_bytes = s->input_bytes;
	out->log_bytes = s->log ? framelog_disk_bytes(s->log) : 0;
}

void session_info(struct session *s, Ptg__SessionInfo *o)
{
	size_t argc = 0;

	ptg__session_info__init(o);
	o->session_id = s->id;
	o->state = s->exited ? PTG__SESSION_STATE__SESSION_EXITED
			     : PTG__SESSION_STATE__SESSION_RUNNING;
	o->pid = s->pid;
	o->cols = s->cols;
	o->rows = s->rows;
	o->current_sequence = s->seq;
	o->oldest_retained_sequence = session_state_oldest(s);
	o->controllers = session_member_list(s, MEMBER_CONTROLLER, &o->n_controllers);
	o->observers = session_member_list(s, MEMBER_OBSERVER, &o->n_observers);
	o->has_exit_code = s->exited && s->has_exit_code;
	o->exit_code = s->exit_code;
	o->created_at_ms = s->created_ms;
	o->exited_at_ms = s->exited ? s->exited_ms : 0;
	o->label = s->label;
	o->policy = s->policy;
	o->control_policy = s->control_policy;
	o->owner = s->owner;
	o->output_bytes = s->bytes_before[0] + s->pty_bytes;
	o->input_bytes = s->bytes_before[1] + s->input_bytes;
	while (s->argv[argc])
		argc++;
	o->argv = s->argv;
	o->n_argv = argc;
	o->close_reason = s->close_reason;
}

void session_info_release(Ptg__SessionInfo *o)
{
	session_member_list_free(o->controllers, o->n_controllers);
	session_member_list_free(o->observers, o->n_observers);
	o->controllers = o->observers = NULL;
	o->n_controllers = o->n_observers = 0;
}
