/* frames: the server's JSON frames, written directly into a struct buf.
   Output and Keyframe are the hot path (one JSON encode and one base64
   encode per frame, shared by every recipient), so the envelope is built by
   hand and the base64 goes straight into the output buffer: no intermediate
   json_t, no copy of the encoded bytes. Payloads that arrive as json_t (A2A
   replies) are dumped by Jansson into the same buffer. Every string from
   outside goes through str, which escapes, repairs UTF-8 and enforces the
   schema's maxLength (in code points). */
#include "frames.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "b64.h"
#include "ptg_limits.h"
#include "timeutil.h"
#include "utf8.h"
#include "uuid.h"

#define FRAMES__NO_LIMIT SIZE_MAX

static const struct frames_error_row errors[FRAMES_CODE_COUNT] = {
    [FRAMES_TASK_NOT_FOUND] = {PTYWS_ERR_TASK_NOT_FOUND, PTYWS_A2A_TASK_NOT_FOUND, -32001,
			       0, false},
    [FRAMES_TASK_NOT_CANCELABLE] = {PTYWS_ERR_TASK_NOT_CANCELABLE,
				    PTYWS_A2A_TASK_NOT_CANCELABLE, -32002, 0, false},
    [FRAMES_INVALID_REQUEST] = {PTYWS_ERR_INVALID_REQUEST, PTYWS_A2A_INVALID_REQUEST,
				-32600, 0, false},
    [FRAMES_UNSUPPORTED_OPERATION] = {PTYWS_ERR_UNSUPPORTED_OPERATION,
				      PTYWS_A2A_UNSUPPORTED_OPERATION, -32004, 0, false},
    [FRAMES_UNAUTHENTICATED] = {PTYWS_ERR_UNAUTHENTICATED, PTYWS_A2A_UNAUTHENTICATED, 0,
				401, false},
    [FRAMES_PERMISSION_DENIED] = {PTYWS_ERR_PERMISSION_DENIED,
				  PTYWS_A2A_PERMISSION_DENIED, 0, 403, false},
    [FRAMES_RATE_LIMITED] = {PTYWS_ERR_RATE_LIMITED, PTYWS_A2A_RATE_LIMITED, 0, 429,
			     true},
    [FRAMES_INTERNAL] = {PTYWS_ERR_INTERNAL, PTYWS_A2A_INTERNAL, -32603, 0, true},
    [FRAMES_REPLAY_OUT_OF_RANGE] = {PTYWS_ERR_REPLAY_OUT_OF_RANGE, NULL, 0, 0, false},
};

static const char *const goodbye_reasons[] = {
    [FRAMES_BYE_SERVER_SHUTDOWN] = PTYWS_BYE_SERVER_SHUTDOWN,
    [FRAMES_BYE_SESSION_CLOSED] = PTYWS_BYE_SESSION_CLOSED,
    [FRAMES_BYE_PRINCIPAL_REVOKED] = PTYWS_BYE_PRINCIPAL_REVOKED,
    [FRAMES_BYE_RATE_LIMITED] = PTYWS_BYE_RATE_LIMITED,
    [FRAMES_BYE_OTHER] = PTYWS_BYE_OTHER,
};

static const char *const streams[] = {PTYWS_STREAM_STDOUT, PTYWS_STREAM_STDERR,
				      PTYWS_STREAM_LOG};
static const char *const close_reasons[] = {
    PTYWS_CLOSED_NORMAL,  PTYWS_CLOSED_KILLED,
    PTYWS_CLOSED_TIMEOUT, PTYWS_CLOSED_INSTANCE_TERMINATED,
    PTYWS_CLOSED_ERROR,
};
static const char *const frame_errors[] = {
    PTYWS_FRAME_ERR_WRITE_FAILED,
    PTYWS_FRAME_ERR_RESIZE_FAILED,
    PTYWS_FRAME_ERR_OUTPUT_LAGGED,
    PTYWS_FRAME_ERR_KEYFRAME_UNAVAILABLE,
};

#define FRAMES__COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The table row of code (never NULL for a valid code). */
static const struct frames_error_row *frames_error_row(enum frames_code code)
{
	if ((unsigned)code >= FRAMES_CODE_COUNT)
		code = FRAMES_INTERNAL;
	return &errors[code];
}

enum frames_code frames_code_from_link(Ptg__ErrorCode code)
{
	switch (code) {
	case PTG__ERROR_CODE__INVALID_REQUEST:
	case PTG__ERROR_CODE__NOT_FOUND:
	case PTG__ERROR_CODE__ERR_SESSION_EXITED:
		return FRAMES_INVALID_REQUEST;
	case PTG__ERROR_CODE__PERMISSION_DENIED:
		return FRAMES_PERMISSION_DENIED;
	case PTG__ERROR_CODE__RATE_LIMITED:
		return FRAMES_RATE_LIMITED;
	case PTG__ERROR_CODE__TASK_NOT_FOUND:
		return FRAMES_TASK_NOT_FOUND;
	case PTG__ERROR_CODE__TASK_NOT_CANCELABLE:
		return FRAMES_TASK_NOT_CANCELABLE;
	case PTG__ERROR_CODE__UNSUPPORTED:
		return FRAMES_UNSUPPORTED_OPERATION;
	default:
		return FRAMES_INTERNAL;
	}
}

/* ---- JSON text primitives ---- */

/* Appends the JSON escape of '"', '\\' or a control character. */
static void escape(struct buf *out, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};

	if (c == '"' || c == '\\') {
		e[1] = (char)c;
		buf_append(out, e, 2);
		return;
	}
	buf_append(out, e, sizeof(e));
}

/* Appends s (n bytes) as a quoted JSON string of at most max_chars code
   points; each byte that is not part of valid UTF-8 becomes U+FFFD. */
static void strn(struct buf *out, const char *s, size_t n, size_t max_chars)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0, chars = 0, len;

	buf_append(out, "\"", 1);
	for (; i < n && chars < max_chars; chars++) {
		len = utf8_seq_len(p + i, n - i);
		if (len == 1 && !(p[i] < 0x20 || p[i] == '"' || p[i] == '\\')) {
			i++;
			continue;
		}
		buf_append(out, p + run, i - run);
		if (len == 0)
			buf_append(out, "\xEF\xBF\xBD", 3);
		else if (len == 1)
			escape(out, p[i]);
		else
			buf_append(out, p + i, len);
		i += len ? len : 1;
		run = i;
	}
	buf_append(out, p + run, i - run);
	buf_append(out, "\"", 1);
}

static void str(struct buf *out, const char *s, size_t max_chars)
{
	strn(out, s ? s : "", s ? strlen(s) : 0, max_chars);
}

/* `,"key":` */
static void put_key(struct buf *out, const char *key)
{
	buf_appendf(out, ",\"%s\":", key);
}

static int dump_cb(const char *p, size_t n, void *data)
{
	buf_append(data, p, n);
	return 0;
}

/* Dumps v compactly; anything but an object (or a failed dump) is {}. */
static void json(struct buf *out, json_t *v)
{
	size_t mark = buf_size(out);

	if (json_is_object(v) && json_dump_callback(v, dump_cb, out, JSON_COMPACT) == 0)
		return;
	/* A failed dump may have written part of v: drop it. */
	out->len = out->off + mark;
	buf_append_str(out, "{}");
}

/* `{"op":"<op><suffix>","id":"…","ts":"…"[,"sequence":N]`; the caller
   goes on with `,"payload":…}`. */
/* v in decimal. */
static void u64(struct buf *out, uint64_t v)
{
	char d[20];
	size_t i = sizeof(d);

	do
		d[--i] = (char)('0' + v % 10);
	while ((v /= 10));
	buf_append(out, d + i, sizeof(d) - i);
}

static void head(struct buf *out, const char *op, const char *suffix, const char *id,
		 int64_t ts_ms, const uint64_t *sequence)
{
	char fresh[UUID_STRLEN + 1], ts[TS_STRLEN + 1], name[128];
	size_t n_op = strnlen(op, sizeof(name) - 1);
	size_t n_suffix = strnlen(suffix, sizeof(name) - 1 - n_op);

	if (!id) {
		uuid_v7_new(fresh);
		id = fresh;
	}
	time_format_ms(ts_ms, ts);
	/* No printf on this path: every frame to every client passes here. */
	memcpy(name, op, n_op);
	memcpy(name + n_op, suffix, n_suffix);
	buf_append_str(out, "{\"op\":");
	strn(out, name, n_op + n_suffix, FRAMES__NO_LIMIT);
	buf_append_str(out, ",\"id\":");
	str(out, id, FRAMES__NO_LIMIT);
	buf_append_str(out, ",\"ts\":\"");
	buf_append_str(out, ts);
	buf_append_str(out, "\"");
	if (sequence) {
		buf_append_str(out, ",\"sequence\":");
		u64(out, *sequence);
	}
	buf_append_str(out, ",\"payload\":");
}

/* ---- binding frames ---- */

void frames_binding_hello(const char *id, const char *session_id,
			  uint64_t current_sequence, int64_t now_ms, struct buf *out)
{
	static const uint64_t zero;

	head(out, PTYWS_OP_HELLO, "", id, now_ms, &zero);
	buf_append_str(out, "{\"binding_uri\":\"" PTYWS_BINDING_URI "\","
			    "\"binding_version\":\"" PTYWS_BINDING_VERSION "\","
			    "\"supported_operations\":[\"" PTYWS_OP_SEND_MESSAGE
			    "\",\"" PTYWS_OP_SEND_STREAMING "\",\"" PTYWS_OP_GET_TASK
			    "\",\"" PTYWS_OP_LIST_TASKS "\",\"" PTYWS_OP_CANCEL_TASK
			    "\",\"" PTYWS_OP_SUBSCRIBE_TO_TASK "\"],"
			    "\"activated_extensions\":[],\"session\":{\"session_id\":");
	str(out, session_id, FRAMES__NO_LIMIT);
	buf_appendf(out, ",\"current_sequence\":%" PRIu64 "},", current_sequence);
	buf_append_str(out, "\"session_host\":{\"supported_backends\":[\"native\"],"
			    "\"default_backend\":\"native\","
			    "\"supported_classes\":[\"direct\"],"
			    "\"default_class\":\"direct\",\"observe_supported\":true,"
			    "\"drive_supported\":true,\"reattach_supported\":true}}}");
}

static void a2a_error(struct buf *out, const struct frames_error_row *row,
		      const char *message)
{
	if (!row->a2a_type) {
		buf_append_str(out, "null");
		return;
	}
	buf_appendf(out, "{\"type\":\"%s\",\"message\":", row->a2a_type);
	str(out, message, FRAMES__NO_LIMIT);
	if (row->jsonrpc_code)
		buf_appendf(out, ",\"code\":%d}", row->jsonrpc_code);
	else
		buf_appendf(out, ",\"http_status\":%d}", row->http_status);
}

void frames_error(enum frames_code code, const char *id_echo, const char *message,
		  int64_t now_ms, struct buf *out)
{
	const struct frames_error_row *row = frames_error_row(code);

	head(out, PTYWS_OP_ERROR, "", id_echo, now_ms, NULL);
	buf_appendf(out, "{\"code\":\"%s\",\"message\":", row->code);
	str(out, message, FRAMES__NO_LIMIT);
	put_key(out, "a2a_error");
	a2a_error(out, row, message);
	buf_appendf(out, ",\"retryable\":%s}}", row->retryable ? "true" : "false");
}

void frames_goodbye(const char *id, enum frames_goodbye_reason reason, const char *detail,
		    int64_t now_ms, struct buf *out)
{
	if ((unsigned)reason >= FRAMES__COUNT(goodbye_reasons))
		reason = FRAMES_BYE_OTHER;
	head(out, PTYWS_OP_GOODBYE, "", id, now_ms, NULL);
	buf_appendf(out, "{\"reason\":\"%s\"", goodbye_reasons[reason]);
	if (detail && *detail) {
		put_key(out, "detail");
		str(out, detail, PTG_DETAIL_MAX_CHARS);
	}
	buf_append_str(out, "}}");
}

void frames_pong(const char *id_echo, const char *client_ts, int64_t now_ms,
		 struct buf *out)
{
	char ts[TS_STRLEN + 1];

	time_format_ms(now_ms, ts);
	head(out, PTYWS_OP_PONG, "", id_echo, now_ms, NULL);
	buf_append_str(out, "{\"client_ts\":");
	str(out, client_ts, FRAMES__NO_LIMIT);
	buf_appendf(out, ",\"server_ts\":\"%s\"}}", ts);
}

void frames_service_update_response(const char *id_echo, json_t *params, int64_t now_ms,
				    struct buf *out)
{
	head(out, PTYWS_OP_UPDATE_PARAMS, PTYWS_SUFFIX_RESPONSE, id_echo, now_ms, NULL);
	buf_append_str(out, "{\"service_parameters\":");
	json(out, params);
	buf_append_str(out, "}}");
}

void frames_reply(const char *op, bool accepted, const char *id_echo, json_t *payload,
		  int64_t now_ms, struct buf *out)
{
	head(out, op, accepted ? PTYWS_SUFFIX_ACCEPTED : PTYWS_SUFFIX_RESPONSE, id_echo,
	     now_ms, NULL);
	json(out, payload);
	buf_append_str(out, "}");
}

void frames_task_status_update(const char *id, json_t *payload,
			       json_t *service_parameters, int64_t now_ms,
			       struct buf *out)
{
	char fresh[UUID_STRLEN + 1], ts[TS_STRLEN + 1];

	/* Hand-built head: service_parameters sits before payload. */
	if (!id) {
		uuid_v7_new(fresh);
		id = fresh;
	}
	time_format_ms(now_ms, ts);
	buf_append_str(out, "{\"op\":\"" PTYWS_OP_TASK_STATUS "\",\"id\":");
	str(out, id, FRAMES__NO_LIMIT);
	buf_appendf(out, ",\"ts\":\"%s\"", ts);
	if (service_parameters) {
		put_key(out, "service_parameters");
		json(out, service_parameters);
	}
	put_key(out, "payload");
	json(out, payload);
	buf_append_str(out, "}");
}

/* ---- pty.session_frame (docs/protocol.md, "Session frames") ---- */

static void output(struct buf *out, const Ptg__OutputFrame *o)
{
	buf_append_str(out, "{\"kind\":\"" PTYWS_KIND_OUTPUT "\",\"stream\":\"");
	buf_append_str(out, streams[o->stream]);
	buf_append_str(out, "\",\"data\":\"");
	b64_encode(o->data.data, o->data.len, out);
	buf_append_str(out, "\"}");
}

static void role_assigned(struct buf *out, const Ptg__RoleAssignedFrame *r)
{
	buf_appendf(out,
		    "{\"kind\":\"" PTYWS_KIND_ROLE_ASSIGNED
		    "\",\"role\":\"%s\",\"client_id\":",
		    r->role == PTG__ROLE__ROLE_CONTROLLER ? PTYWS_ROLE_CONTROLLER
							  : PTYWS_ROLE_OBSERVER);
	str(out, r->client_id, PTG_CLIENT_ID_MAX_CHARS);
	if (r->downgraded) {
		buf_append_str(out, ",\"downgraded\":true");
		if (r->reason && *r->reason) {
			put_key(out, "reason");
			str(out, r->reason, PTG_REASON_MAX_CHARS);
		}
	}
	buf_append_str(out, "}");
}

static void members(struct buf *out, Ptg__Member **m, size_t n)
{
	size_t i;

	buf_append_str(out, "[");
	for (i = 0; i < n; i++) {
		buf_append_str(out, i ? ",{\"client_id\":" : "{\"client_id\":");
		str(out, m[i]->client_id, PTG_CLIENT_ID_MAX_CHARS);
		put_key(out, "label");
		str(out, m[i]->label, PTG_LABEL_MAX_CHARS);
		buf_append_str(out, "}");
	}
	buf_append_str(out, "]");
}

static void membership(struct buf *out, const Ptg__MembershipChangedFrame *m)
{
	buf_append_str(out, "{\"kind\":\"" PTYWS_KIND_MEMBERSHIP "\",\"controllers\":");
	members(out, m->controllers, m->n_controllers);
	put_key(out, "observers");
	members(out, m->observers, m->n_observers);
	buf_append_str(out, "}");
}

static void keyframe(struct buf *out, const Ptg__KeyframeFrame *k)
{
	buf_append_str(out, "{\"kind\":\"" PTYWS_KIND_KEYFRAME "\",\"snapshot\":\"");
	b64_encode(k->snapshot.data, k->snapshot.len, out);
	buf_appendf(out,
		    "\",\"snapshot_format\":\"" PTYWS_SNAPSHOT_FORMAT "\","
		    "\"snapshot_cols\":%" PRIu32 ",\"snapshot_rows\":%" PRIu32
		    ",\"anchor_sequence\":%" PRIu64 "}",
		    k->cols, k->rows, k->anchor_sequence);
}

static void closed(struct buf *out, const Ptg__ClosedFrame *c)
{
	buf_append_str(out, "{\"kind\":\"" PTYWS_KIND_CLOSED "\",\"exit_code\":");
	if (c->has_exit_code)
		buf_appendf(out, "%" PRId32, c->exit_code);
	else
		buf_append_str(out, "null");
	buf_appendf(out, ",\"reason\":\"%s\"", close_reasons[c->reason]);
	if (c->detail && *c->detail) {
		put_key(out, "detail");
		str(out, c->detail, PTG_DETAIL_MAX_CHARS);
	}
	buf_append_str(out, "}");
}

static void frame_error(struct buf *out, const Ptg__ErrorFrame *e)
{
	buf_appendf(out,
		    "{\"kind\":\"" PTYWS_KIND_ERROR "\",\"code\":\"%s\",\"message\":",
		    frame_errors[e->code]);
	str(out, e->message, PTG_DETAIL_MAX_CHARS);
	buf_append_str(out, "}");
}

/* Whether f has a kind whose enum values the binding can express; the
   enums come from a peer and index the name tables. */
static bool frame_ok(const Ptg__Frame *f)
{
	switch (f->kind_case) {
	case PTG__FRAME__KIND_OUTPUT:
		return f->output && (unsigned)f->output->stream < FRAMES__COUNT(streams);
	case PTG__FRAME__KIND_RESIZE:
		return f->resize;
	case PTG__FRAME__KIND_ROLE_ASSIGNED:
		return f->role_assigned &&
		       (f->role_assigned->role == PTG__ROLE__ROLE_CONTROLLER ||
			f->role_assigned->role == PTG__ROLE__ROLE_OBSERVER);
	case PTG__FRAME__KIND_MEMBERSHIP:
		return f->membership;
	case PTG__FRAME__KIND_KEYFRAME:
		return f->keyframe;
	case PTG__FRAME__KIND_CLOSED:
		return f->closed &&
		       (unsigned)f->closed->reason < FRAMES__COUNT(close_reasons);
	case PTG__FRAME__KIND_ERROR:
		return f->error && (unsigned)f->error->code < FRAMES__COUNT(frame_errors);
	default:
		return false;
	}
}

static void kind(struct buf *out, const Ptg__Frame *f)
{
	switch (f->kind_case) {
	case PTG__FRAME__KIND_OUTPUT:
		output(out, f->output);
		break;
	case PTG__FRAME__KIND_RESIZE:
		buf_appendf(out,
			    "{\"kind\":\"" PTYWS_KIND_RESIZE "\",\"cols\":%" PRIu32
			    ",\"rows\":%" PRIu32 "}",
			    f->resize->cols, f->resize->rows);
		break;
	case PTG__FRAME__KIND_ROLE_ASSIGNED:
		role_assigned(out, f->role_assigned);
		break;
	case PTG__FRAME__KIND_MEMBERSHIP:
		membership(out, f->membership);
		break;
	case PTG__FRAME__KIND_KEYFRAME:
		keyframe(out, f->keyframe);
		break;
	case PTG__FRAME__KIND_CLOSED:
		closed(out, f->closed);
		break;
	default:
		frame_error(out, f->error);
		break;
	}
}

int frames_session_frame(const Ptg__Frame *f, const char *id, int64_t now_ms,
			 struct buf *out)
{
	if (!frame_ok(f))
		return -EINVAL;
	/* Replayed frames keep the ts they were made with (docs/protocol.md,
	   "Joining a session"). */
	head(out, PTYWS_OP_SESSION_FRAME, "", id, f->ts_ms ? f->ts_ms : now_ms,
	     &f->sequence);
	kind(out, f);
	buf_append_str(out, "}");
	return 0;
}

/* ---- the control approval extension ---- */

static const char *const control_events[] = {"",
					     PTYWS_CONTROL_REQUESTED,
					     PTYWS_CONTROL_APPROVED,
					     PTYWS_CONTROL_DENIED,
					     PTYWS_CONTROL_EXPIRED,
					     PTYWS_CONTROL_WITHDRAWN};

static void client_ref(struct buf *out, const char *client_id, const char *label)
{
	buf_append_str(out, "{\"client_id\":");
	str(out, client_id, PTG_CLIENT_ID_MAX_CHARS);
	put_key(out, "label");
	str(out, label, PTG_LABEL_MAX_CHARS);
}

static void control_pending(struct buf *out, const Ptg__ControlNotice *n)
{
	char ts[TS_STRLEN + 1];
	size_t i;

	buf_append_str(out, "[");
	for (i = 0; i < n->n_pending && i < FRAMES_CONTROL_PENDING_MAX; i++) {
		if (i)
			buf_append_str(out, ",");
		client_ref(out, n->pending[i]->client_id, n->pending[i]->label);
		time_format_ms(n->pending[i]->expires_at_ms, ts);
		buf_append_str(out, ",\"expires_at\":\"");
		buf_append_str(out, ts);
		buf_append_str(out, "\"}");
	}
	buf_append_str(out, "]");
}

void frames_control_notice(const Ptg__ControlNotice *n, int64_t now_ms, struct buf *out)
{
	unsigned ev = (unsigned)n->event;

	head(out, PTYWS_OP_CONTROL_REQUESTS, "", NULL, now_ms, NULL);
	buf_append_str(out,
		       "{\"policy\":\"" PTYWS_CONTROL_POLICY_APPROVE "\",\"pending\":");
	control_pending(out, n);
	if (ev && ev < sizeof(control_events) / sizeof(control_events[0])) {
		buf_append_str(out, ",\"event\":{\"kind\":\"");
		buf_append_str(out, control_events[ev]);
		buf_append_str(out, "\",\"client_id\":");
		str(out, n->client_id, PTG_CLIENT_ID_MAX_CHARS);
		put_key(out, "label");
		str(out, n->label, PTG_LABEL_MAX_CHARS);
		if (n->by_client_id[0]) {
			put_key(out, "by");
			client_ref(out, n->by_client_id, n->by_label);
			buf_append_str(out, "}");
		}
		buf_append_str(out, "}");
	}
	buf_append_str(out, "}}");
}

void frames_control_decided(const char *id_echo, const char *client_id, bool approve,
			    int64_t now_ms, struct buf *out)
{
	head(out, PTYWS_OP_CONTROL_DECIDED, "", id_echo, now_ms, NULL);
	buf_append_str(out, "{\"client_id\":");
	str(out, client_id, PTG_CLIENT_ID_MAX_CHARS);
	buf_append_str(out, approve ? ",\"approve\":true}}" : ",\"approve\":false}}");
}
