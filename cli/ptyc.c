/* ptyc: the attach client's protocol core. Server messages are dispatched
   by op, then pty.session_frame by payload kind, through tables; only the
   screen frames (Output, Keyframe) take part in the sequence filter, as
   frames addressed to one connection (RoleAssigned) may carry a higher
   number than replayed frames that follow them (docs/protocol.md, "3.
   Sequences, replay and keyframes"). */
#include "ptyc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "b64.h"
#include "timeutil.h"
#include "uuid.h"
#include "xalloc.h"

#define PTYC_RIS "\033c"
/* In place of the snapshot's full reset (RIS), which would also wipe the
   user's scrollback and terminal settings: a soft reset (DECSTR: pen,
   margins, origin, cursor keys, charsets), the modes a snapshot turns on
   but never off (keypad, mouse reporting, focus events, bracketed paste,
   auto-wrap, cursor visible), and a clear of the visible screen. */
#define PTYC_SOFT_RESET                                                                  \
	"\033[!p\033>\033[?1l\033[?1000l\033[?1002l\033[?1003l\033[?1005l\033[?1006l"    \
	"\033[?1015l\033[?1004l\033[?2004l\033[?7h\033[?25h\033[r\033[0m\033[H\033[2J"
/* The same, for the Keyframe of a resumed join: the visible screen is
   cleared with ED 1 from the bottom-right corner, which no terminal
   scrolls into its scrollback (ED 2 does in tmux, VTE and others), so
   the lines already there are not kept twice. */
#define PTYC_SOFT_RESET_RESUME                                                           \
	"\033[!p\033>\033[?1l\033[?1000l\033[?1002l\033[?1003l\033[?1005l\033[?1006l"    \
	"\033[?1015l\033[?1004l\033[?2004l\033[?7h\033[?25h\033[r\033[0m"                \
	"\033[9999;9999H\033[1J\033[H"
#define PTYC_RIS_WINDOW 32 /* how far into a snapshot its reset is looked for */

struct ptyc {
	struct ptyc_callbacks cb;
	void *user;
	char role[16];
	bool have_seq; /* a screen frame has been applied */
	bool resumed;  /* ptyc_resume: the next snapshot repaints without scrolling */
	bool synced;   /* a Keyframe applied on this connection, no lag since */
	uint64_t last_seq;
	bool goodbye;
	char goodbye_reason[64];
	bool closed;
	int exit_code;
	char pending[PTG_CLIENT_ID_MAX_CHARS + 1]; /* the oldest control request */
};

struct ptyc_handler {
	const char *name;
	int (*fn)(struct ptyc *p, const json_t *env, const json_t *payload);
};

static void notice(struct ptyc *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void notice(struct ptyc *p, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	size_t i;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* Text from the network must not drive the user's terminal. */
	for (i = 0; line[i]; i++)
		if ((unsigned char)line[i] < ' ' || line[i] == 0x7f)
			line[i] = '?';
	if (p->cb.on_notice)
		p->cb.on_notice(line, p->user);
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

/* The envelope's sequence; false when it has none. */
static bool sequence(const json_t *env, uint64_t *seq)
{
	const json_t *v = json_object_get(env, "sequence");

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*seq = (uint64_t)json_integer_value(v);
	return true;
}

/* Writes a snapshot with its leading RIS replaced by PTYC_SOFT_RESET. */
static void screen_snapshot(struct ptyc *p, const uint8_t *s, size_t n)
{
	size_t win = n < PTYC_RIS_WINDOW ? n : PTYC_RIS_WINDOW;
	const uint8_t *ris = memmem(s, win, PTYC_RIS, 2);

	if (!ris) {
		p->cb.on_screen(s, n, p->user);
		return;
	}
	const char *reset = p->resumed ? PTYC_SOFT_RESET_RESUME : PTYC_SOFT_RESET;

	p->cb.on_screen(s, (size_t)(ris - s), p->user);
	p->cb.on_screen((const uint8_t *)reset, strlen(reset), p->user);
	p->cb.on_screen(ris + 2, n - (size_t)(ris + 2 - s), p->user);
}

/* Decodes payload[key] and writes it to the screen when seq is newer
   than what the screen holds; seq becomes the screen's. A snapshot is
   written only when the screen needs one: a connection that applied its
   join's Keyframe receives every frame after it (or PTY_OUTPUT_LAGGED),
   so a periodic Keyframe would only repaint the same screen. */
static int apply(struct ptyc *p, const json_t *payload, const char *key, bool has_seq,
		 uint64_t seq)
{
	bool snapshot = !strcmp(key, "snapshot");
	const char *s = json_string_value(json_object_get(payload, key));
	struct buf b = BUF_INIT;

	if (!s || b64_decode(s, strlen(s), &b) < 0)
		return -EPROTO;
	/* A duplicate, or already in the last Keyframe; but a snapshot the
	   screen waits for may stand at the sequence it already holds (a
	   resumed join whose replay brought everything). */
	if (has_seq && p->have_seq &&
	    (seq < p->last_seq || (seq == p->last_seq && !(snapshot && !p->synced)))) {
		buf_free(&b);
		return 0;
	}
	if (has_seq) {
		p->have_seq = true;
		p->last_seq = seq;
	}
	if (snapshot && p->synced) {
		buf_free(&b);
		return 0;
	}
	if (snapshot)
		p->synced = true;
	if (buf_size(&b) && p->cb.on_screen && snapshot)
		screen_snapshot(p, buf_head(&b), buf_size(&b));
	if (snapshot)
		p->resumed = false;
	else if (buf_size(&b) && p->cb.on_screen)
		p->cb.on_screen(buf_head(&b), buf_size(&b), p->user);
	buf_free(&b);
	return 0;
}

static int output(struct ptyc *p, const json_t *env, const json_t *payload)
{
	uint64_t seq = 0;
	bool has = sequence(env, &seq);

	return apply(p, payload, "data", has, seq);
}

static int keyframe(struct ptyc *p, const json_t *env, const json_t *payload)
{
	const json_t *anchor = json_object_get(payload, "anchor_sequence");
	uint64_t seq = 0;
	bool has = sequence(env, &seq);

	if (strcmp(str(payload, "snapshot_format"), PTYWS_SNAPSHOT_FORMAT)) {
		notice(p, "ignored a Keyframe in format '%s'",
		       str(payload, "snapshot_format"));
		return 0;
	}
	if (json_is_integer(anchor) && json_integer_value(anchor) >= 0) {
		seq = (uint64_t)json_integer_value(anchor);
		has = true;
	}
	return apply(p, payload, "snapshot", has, seq);
}

static int on_role(struct ptyc *p, const json_t *env, const json_t *payload)
{
	const char *role = str(payload, "role");
	const char *reason = str(payload, "reason");

	if (strcmp(role, PTYWS_ROLE_CONTROLLER) && strcmp(role, PTYWS_ROLE_OBSERVER))
		return -EPROTO;
	snprintf(p->role, sizeof(p->role), "%s", role);
	if (json_is_true(json_object_get(payload, "downgraded")))
		notice(p, "joined as %s, downgraded%s%s", role, *reason ? ": " : "",
		       reason);
	else if (*reason)
		notice(p, "role is %s: %s", role, reason);
	return 0;
}

static int on_closed(struct ptyc *p, const json_t *env, const json_t *payload)
{
	const json_t *code = json_object_get(payload, "exit_code");
	const char *detail = str(payload, "detail");

	p->closed = true;
	p->exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1;
	if (json_is_integer(code))
		notice(p, "session ended: exit code %d (%s)%s%s", p->exit_code,
		       str(payload, "reason"), *detail ? ": " : "", detail);
	else
		notice(p, "session ended (%s)%s%s", str(payload, "reason"),
		       *detail ? ": " : "", detail);
	return 0;
}

static int frame_error(struct ptyc *p, const json_t *env, const json_t *payload)
{
	if (!strcmp(str(payload, "code"), PTYWS_FRAME_ERR_OUTPUT_LAGGED))
		p->synced = false; /* frames were dropped: the next Keyframe repairs */
	notice(p, "session error %s: %s", str(payload, "code"), str(payload, "message"));
	return 0;
}

static const struct ptyc_handler ptyc_kinds[] = {
    {PTYWS_KIND_OUTPUT, output},	 {PTYWS_KIND_KEYFRAME, keyframe},
    {PTYWS_KIND_ROLE_ASSIGNED, on_role}, {PTYWS_KIND_CLOSED, on_closed},
    {PTYWS_KIND_ERROR, frame_error},
    /* Resize and MembershipChanged change nothing this client shows. */
};

static int dispatch(struct ptyc *p, const struct ptyc_handler *t, size_t n,
		    const char *name, const json_t *env, const json_t *payload)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return t[i].fn(p, env, payload);
	return 0; /* unknown ops and kinds are ignored: newer servers add some */
}

static int session_frame(struct ptyc *p, const json_t *env, const json_t *payload)
{
	return dispatch(p, ptyc_kinds, sizeof(ptyc_kinds) / sizeof(ptyc_kinds[0]),
			str(payload, "kind"), env, payload);
}

static int on_error(struct ptyc *p, const json_t *env, const json_t *payload)
{
	if (!strcmp(str(payload, "code"), PTYWS_ERR_REPLAY_OUT_OF_RANGE)) {
		/* The old screen is lost (REPLAY_OUT_OF_RANGE): the Keyframe replaces it,
		   and pushing it into the scrollback keeps it for the user. */
		p->resumed = false;
		p->have_seq = false;
	}
	notice(p, "error %s: %s", str(payload, "code"), str(payload, "message"));
	return 0;
}

static int on_goodbye(struct ptyc *p, const json_t *env, const json_t *payload)
{
	size_t i;

	p->goodbye = true;
	snprintf(p->goodbye_reason, sizeof(p->goodbye_reason), "%s",
		 str(payload, "reason"));
	for (i = 0; p->goodbye_reason[i]; i++)
		if ((unsigned char)p->goodbye_reason[i] < ' ' ||
		    p->goodbye_reason[i] == 0x7f)
			p->goodbye_reason[i] = '?';
	return 0;
}

/* A control request's name for the user: label and client id, cleaned. */
static void who(const json_t *o, char *out, size_t len)
{
	size_t i;

	snprintf(out, len, "%.64s (%.32s)", str(o, "label"), str(o, "client_id"));
	for (i = 0; out[i]; i++)
		if ((unsigned char)out[i] < ' ' || out[i] == 0x7f)
			out[i] = '?';
}

static int on_control(struct ptyc *p, const json_t *env, const json_t *payload)
{
	const json_t *pending = json_object_get(payload, "pending");
	const json_t *ev = json_object_get(payload, "event"), *by;
	const char *kind = str(ev, "kind");
	char asker[128], decider[128];

	if (!json_is_array(pending))
		return -EPROTO;
	snprintf(p->pending, sizeof(p->pending), "%s",
		 str(json_array_get(pending, 0), "client_id"));
	if (!*kind)
		return 0;
	who(ev, asker, sizeof(asker));
	by = json_object_get(ev, "by");
	who(by, decider, sizeof(decider));
	if (!strcmp(kind, PTYWS_CONTROL_REQUESTED))
		notice(p, "%s asks for control%s", asker,
		       !strcmp(p->role, PTYWS_ROLE_CONTROLLER)
			   ? ": Ctrl-] then y approves, n denies"
			   : "; a controller approves or denies it");
	else if (!strcmp(kind, PTYWS_CONTROL_APPROVED) && by)
		notice(p, "control: %s approved by %s", asker, decider);
	else if (!strcmp(kind, PTYWS_CONTROL_APPROVED))
		notice(p, "control: %s took over (no controller was left)", asker);
	else if (!strcmp(kind, PTYWS_CONTROL_DENIED))
		notice(p, "control: %s denied by %s", asker, decider);
	else
		notice(p, "control: the request of %s %s", asker, kind);
	return 0;
}

static int on_decided(struct ptyc *p, const json_t *env, const json_t *payload)
{
	notice(p, "control: you %s %.32s",
	       json_is_true(json_object_get(payload, "approve")) ? "approved" : "denied",
	       str(payload, "client_id"));
	return 0;
}

static const struct ptyc_handler ptyc_ops[] = {
    {PTYWS_OP_SESSION_FRAME, session_frame}, {PTYWS_OP_ERROR, on_error},
    {PTYWS_OP_GOODBYE, on_goodbye},	     {PTYWS_OP_CONTROL_REQUESTS, on_control},
    {PTYWS_OP_CONTROL_DECIDED, on_decided},
    /* binding_hello, pong and task frames need nothing from this client. */
};

int ptyc_handle(struct ptyc *p, const char *text, size_t n)
{
	json_t *env = json_loadb(text, n, 0, NULL);
	const char *op = json_string_value(json_object_get(env, "op"));
	json_t *payload = json_object_get(env, "payload");
	int rc = -EPROTO;

	if (op && json_is_object(payload))
		rc = dispatch(p, ptyc_ops, sizeof(ptyc_ops) / sizeof(ptyc_ops[0]), op,
			      env, payload);
	if (rc < 0)
		notice(p, "ignored a malformed frame from the gateway%s%s",
		       op ? ": " : "", op ? op : "");
	json_decref(env);
	return rc;
}

struct ptyc *ptyc_new(const struct ptyc_callbacks *cb, void *user)
{
	struct ptyc *p = xcalloc(1, sizeof(*p));

	p->cb = *cb;
	p->user = user;
	return p;
}

void ptyc_resume(struct ptyc *p, uint64_t last_seq)
{
	p->have_seq = true;
	p->last_seq = last_seq;
	p->synced = false;
	p->resumed = true;
}

void ptyc_free(struct ptyc *p)
{
	free(p);
}

const char *ptyc_role(const struct ptyc *p)
{
	return p->role;
}

bool ptyc_goodbye(const struct ptyc *p, const char **reason)
{
	if (reason)
		*reason = p->goodbye_reason;
	return p->goodbye;
}

bool ptyc_closed(const struct ptyc *p, int *exit_code)
{
	if (exit_code)
		*exit_code = p->exit_code;
	return p->closed;
}

uint64_t ptyc_last_sequence(const struct ptyc *p)
{
	return p->last_seq;
}

/* An envelope {op, id, ts, payload}; takes payload's reference. */
static json_t *envelope(const char *op, json_t *payload)
{
	char id[UUID_STRLEN + 1], ts[TS_STRLEN + 1];

	uuid_v7_new(id);
	time_format_ms(time_now_ms(), ts);
	return json_pack("{s:s, s:s, s:s, s:o}", "op", op, "id", id, "ts", ts, "payload",
			 payload);
}

static char *dump(json_t *env)
{
	char *s = json_dumps(env, JSON_COMPACT);

	json_decref(env);
	if (!s)
		abort(); /* jansson fails only on allocation */
	return s;
}

char *ptyc_msg_join(const struct ptyc_join *j)
{
	json_t *payload = json_pack(
	    "{s:s}", "role", j->observer ? PTYWS_ROLE_OBSERVER : PTYWS_ROLE_CONTROLLER);
	json_t *env;

	if (j->cols && j->rows) { /* none: the session's size stays */
		json_object_set_new(payload, "cols", json_integer((json_int_t)j->cols));
		json_object_set_new(payload, "rows", json_integer((json_int_t)j->rows));
	}
	if (j->label)
		json_object_set_new(payload, "client_label", json_string(j->label));
	env = envelope(PTYWS_OP_JOIN, payload);
	json_object_set_new(env, "extensions",
			    json_pack("[s, s]", PTYWS_EXT_PTY, PTYWS_EXT_CONTROL));
	if (j->replay)
		json_object_set_new(env, "replay_from",
				    json_integer((json_int_t)j->replay_from));
	return dump(env);
}

char *ptyc_msg_input(const uint8_t *data, size_t n)
{
	struct buf b = BUF_INIT;
	json_t *payload;

	b64_encode(data, n, &b);
	payload = json_object();
	json_object_set_new(
	    payload, "data",
	    json_stringn(n ? (const char *)buf_head(&b) : "", buf_size(&b)));
	buf_free(&b);
	return dump(envelope(PTYWS_OP_INPUT, payload));
}

char *ptyc_msg_resize(unsigned cols, unsigned rows)
{
	return dump(
	    envelope(PTYWS_OP_RESIZE, json_pack("{s:I, s:I}", "cols", (json_int_t)cols,
						"rows", (json_int_t)rows)));
}

char *ptyc_msg_leave(void)
{
	return dump(envelope(PTYWS_OP_LEAVE, json_object()));
}

const char *ptyc_control_pending(const struct ptyc *p)
{
	return p->pending[0] ? p->pending : NULL;
}

char *ptyc_msg_decide(const char *client_id, bool approve)
{
	return dump(
	    envelope(PTYWS_OP_DECIDE_CONTROL, json_pack("{s:s, s:b}", "client_id",
							client_id, "approve", approve)));
}
