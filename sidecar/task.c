/* task: see task.h. jansson builds and parses every JSON form; the
   canonical keys are A2A v1.0's (camelCase, TASK_STATE_*, ROLE_*). */
#include "task.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "buf.h"
#include "timeutil.h"
#include "utf8.h"
#include "xalloc.h"

#define MAX_PARTS 64

static const char *const state_names[] = {
    [TASK_SUBMITTED] = "TASK_STATE_SUBMITTED", [TASK_WORKING] = "TASK_STATE_WORKING",
    [TASK_COMPLETED] = "TASK_STATE_COMPLETED", [TASK_FAILED] = "TASK_STATE_FAILED",
    [TASK_CANCELED] = "TASK_STATE_CANCELED",   [TASK_REJECTED] = "TASK_STATE_REJECTED",
};

static const char *const stream_names[] = {"stdout", "stderr"};

const char *task_state_name(enum task_state s)
{
	return state_names[s];
}

int task_state_parse(const char *s, enum task_state *out)
{
	static const char *const older[] = {"submitted", "working",  "completed",
					    "failed",	 "canceled", "rejected"};

	for (size_t i = 0; i < sizeof(state_names) / sizeof(state_names[0]); i++) {
		if (strcmp(s, state_names[i]) == 0 || strcmp(s, older[i]) == 0) {
			*out = (enum task_state)i;
			return 0;
		}
	}
	return -EINVAL;
}

bool task_is_terminal(const struct task *t)
{
	return t->state >= TASK_COMPLETED;
}

/* ---- UTF-8 ---- */

/* s as valid UTF-8 (bad bytes become U+FFFD), a new JSON string. */
static json_t *task_json_text(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;
	struct buf b = BUF_INIT;
	json_t *s;

	for (size_t i = 0; i < n;) {
		size_t k = utf8_seq_len(u + i, n - i);
		if (k) {
			buf_append(&b, u + i, k);
			i += k;
		} else {
			buf_append(&b, "\xEF\xBF\xBD", 3);
			i++;
		}
	}
	s = json_stringn_nocheck(buf_size(&b) ? (const char *)buf_head(&b) : "",
				 buf_size(&b));
	buf_free(&b);
	return s;
}

/* How many of the n bytes at p end on a character boundary: a trailing
   lead byte whose sequence is not complete yet is held back. */
static size_t complete_prefix(const char *p, size_t n)
{
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char c = (unsigned char)p[n - back];
		size_t need;
		if ((c & 0xC0) == 0x80)
			continue;
		need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
		return need > back ? n - back : n;
	}
	return n;
}

/* ---- the inbound message ---- */

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

/* A part: {"text": ...} in v1.0, or {"kind": "text", "text": ...}. */
static const char *part_text(json_t *part, size_t *len)
{
	json_t *text = json_object_get(part, "text");
	json_t *kind = json_object_get(part, "kind");

	if (!json_is_object(part) || !json_is_string(text))
		return NULL;
	if (kind &&
	    !(json_is_string(kind) && strcmp(json_string_value(kind), "text") == 0))
		return NULL;
	*len = json_string_length(text);
	return json_string_value(text);
}

static int role_is_user(json_t *role)
{
	const char *r = json_string_value(role);

	return r && (strcmp(r, "ROLE_USER") == 0 || strcmp(r, "user") == 0);
}

static int check_id(json_t *v, const char *name, char *out, char *err, size_t errlen)
{
	const char *s = json_string_value(v);

	if (!s || !s[0] || strlen(s) > PTG_TASK_ID_MAX)
		return fail(err, errlen, 1,
			    "message.%s must be a string of 1 to %d bytes", name,
			    PTG_TASK_ID_MAX);
	snprintf(out, PTG_TASK_ID_MAX + 1, "%s", s);
	return 0;
}

/* Joins the text parts into out->command (no NUL bytes, at most max). */
static int join_parts(json_t *parts, size_t max, struct task_send *out, char *err,
		      size_t errlen)
{
	struct buf cmd = BUF_INIT;
	size_t i, len;
	json_t *part;

	if (!json_is_array(parts) || json_array_size(parts) == 0 ||
	    json_array_size(parts) > MAX_PARTS)
		return fail(err, errlen, 1,
			    "message.parts must be an array of 1 to %d "
			    "text parts",
			    MAX_PARTS);
	json_array_foreach(parts, i, part)
	{
		const char *text = part_text(part, &len);
		if (!text || memchr(text, 0, len)) {
			buf_free(&cmd);
			return fail(err, errlen, 1,
				    "message.parts[%zu] must be a text part "
				    "{\"text\": ...} without NUL characters",
				    i);
		}
		buf_append(&cmd, text, len);
		if (buf_size(&cmd) > max) {
			buf_free(&cmd);
			return fail(err, errlen, 1,
				    "the message's text is longer than %zu bytes", max);
		}
	}
	if (buf_size(&cmd) == 0) {
		buf_free(&cmd);
		return fail(err, errlen, 1,
			    "the message's text is empty: nothing to run");
	}
	buf_append(&cmd, "", 1);
	out->command = xstrdup((const char *)buf_head(&cmd));
	buf_free(&cmd);
	return 0;
}

static json_t *canonical_message(const char *message_id, const char *session_id,
				 const char *command)
{
	return json_pack("{s:s, s:s, s:s, s:[{s:s}]}", "messageId", message_id,
			 "contextId", session_id, "role", "ROLE_USER", "parts", "text",
			 command);
}

static int check_message(json_t *m, const char *session_id, size_t max,
			 struct task_send *out, char *err, size_t errlen)
{
	json_t *ctx = json_object_get(m, "contextId");
	const char *key;
	json_t *v;

	if (!json_is_object(m))
		return fail(err, errlen, 1, "payload.message must be an object");
	json_object_foreach(m, key, v)
	{
		static const char *const known[] = {
		    "messageId", "role",       "parts", "contextId",	    "taskId",
		    "metadata",	 "extensions", "kind",	"referenceTaskIds", NULL};
		size_t i;
		for (i = 0; known[i] && strcmp(known[i], key) != 0; i++)
			;
		if (!known[i])
			return fail(err, errlen, 1,
				    "payload.message has an unknown field '%.64s'", key);
	}
	if (check_id(json_object_get(m, "messageId"), "messageId", out->message_id, err,
		     errlen))
		return 1;
	if (!role_is_user(json_object_get(m, "role")))
		return fail(err, errlen, 1,
			    "message.role must be ROLE_USER (or \"user\")");
	if (ctx && !json_is_null(ctx) &&
	    !(json_is_string(ctx) && strcmp(json_string_value(ctx), session_id) == 0))
		return fail(err, errlen, 3,
			    "message.contextId names another session; a "
			    "connection's tasks belong to its own session");
	if (json_object_get(m, "taskId") && !json_is_null(json_object_get(m, "taskId")))
		return fail(err, errlen, 1,
			    "message.taskId: a task takes one message; "
			    "send a new message for a new command");
	return join_parts(json_object_get(m, "parts"), max, out, err, errlen);
}

int task_parse_send(const char *params_json, const char *session_id, size_t max_command,
		    struct task_send *out, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root = json_loads(params_json, JSON_REJECT_DUPLICATES, &jerr);
	const char *key;
	json_t *v;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(root)) {
		json_decref(root);
		return fail(err, errlen, 1,
			    "the payload must be an object {message: {...}}");
	}
	json_object_foreach(root, key, v)
	{
		if (strcmp(key, "message") && strcmp(key, "configuration") &&
		    strcmp(key, "metadata")) {
			rc = fail(err, errlen, 1, "payload has an unknown field '%.64s'",
				  key);
			break;
		}
	}
	if (!rc)
		rc = check_message(json_object_get(root, "message"), session_id,
				   max_command, out, err, errlen);
	json_decref(root);
	if (rc) {
		task_send_release(out);
		return rc;
	}
	out->message = canonical_message(out->message_id, session_id, out->command);
	return 0;
}

void task_send_release(struct task_send *s)
{
	json_decref(s->message);
	free(s->command);
	s->message = NULL;
	s->command = NULL;
}

/* ---- the task ---- */

static void set_log_ctx(struct task *t)
{
	snprintf(t->log_ctx, sizeof(t->log_ctx), "session=%.64s task=%s%s%.128s",
		 t->session_id, t->id, t->trace_id[0] ? " trace=" : "", t->trace_id);
}

struct task *task_new(const char *session_id, const char *owner, struct task_send *s,
		      const char *idem_key, const char *trace_id, int64_t now_ms)
{
	struct task *t = xcalloc(1, sizeof(*t));

	uuid_v7_new(t->id);
	snprintf(t->session_id, sizeof(t->session_id), "%s", session_id);
	snprintf(t->owner, sizeof(t->owner), "%s", owner);
	snprintf(t->message_id, sizeof(t->message_id), "%s", s->message_id);
	snprintf(t->idem_key, sizeof(t->idem_key), "%s", idem_key ? idem_key : "");
	snprintf(t->trace_id, sizeof(t->trace_id), "%s", trace_id ? trace_id : "");
	t->message = s->message;
	t->command = s->command;
	s->message = NULL;
	s->command = NULL;
	json_object_set_new(t->message, "taskId", json_string(t->id));
	t->state = TASK_SUBMITTED;
	t->created_ms = t->updated_ms = now_ms;
	set_log_ctx(t);
	return t;
}

bool task_visible(const struct task *t, const char *principal, int all_principals)
{
	return all_principals || (t->owner[0] && strcmp(t->owner, principal) == 0);
}

void task_free(struct task *t)
{
	if (!t)
		return;
	json_decref(t->message);
	free(t->command);
	free(t->status_text);
	free(t->out[0].data);
	free(t->out[1].data);
	free(t);
}

void task_set_state(struct task *t, enum task_state state, const char *text,
		    int64_t now_ms)
{
	t->state = state;
	t->updated_ms = now_ms;
	free(t->status_text);
	t->status_text = text ? xstrdup(text) : NULL;
}

void task_append_output(struct task *t, enum task_stream_id s, const char *p, size_t n,
			size_t cap)
{
	struct task_stream *o = &t->out[s];
	size_t used = t->out[0].len + t->out[1].len;
	size_t room = cap > used ? cap - used : 0;
	size_t take = n < room ? n : room;

	o->total += n;
	if (take < n)
		o->truncated = true;
	if (!take)
		return;
	if (o->len + take > o->cap) {
		o->cap = o->len + take > o->cap * 2 ? o->len + take : o->cap * 2;
		o->data = xrealloc(o->data, o->cap);
	}
	memcpy(o->data + o->len, p, take);
	o->len += take;
}

void task_set_exit(struct task *t, int status, int64_t now_ms)
{
	char text[160];

	if (WIFSIGNALED(status)) {
		const char *abbrev = sigabbrev_np(WTERMSIG(status));
		t->signal = WTERMSIG(status);
		snprintf(text, sizeof(text),
			 "the command was killed by signal %d (SIG%s)", t->signal,
			 abbrev ? abbrev : "?");
	} else {
		t->has_exit_code = true;
		t->exit_code = WEXITSTATUS(status);
		snprintf(text, sizeof(text), "the command exited with code %d",
			 t->exit_code);
	}
	if (task_is_terminal(t))
		return; /* canceled first: the kill was ours and is said already */
	task_set_state(
	    t, t->has_exit_code && t->exit_code == 0 ? TASK_COMPLETED : TASK_FAILED, text,
	    now_ms);
}

/* ---- JSON out ---- */

static json_t *agent_message(const struct task *t, const char *text, const char *suffix)
{
	char mid[UUID_STRLEN + 16];

	/* Stable per status so every copy of the task names it the same. */
	snprintf(mid, sizeof(mid), "%s-%s", t->id, suffix);
	return json_pack("{s:s, s:s, s:s, s:s, s:[{s:o}]}", "messageId", mid, "contextId",
			 t->session_id, "taskId", t->id, "role", "ROLE_AGENT", "parts",
			 "text", task_json_text(text, strlen(text)));
}

static json_t *status_json(const struct task *t)
{
	char ts[TS_STRLEN + 1];
	json_t *st;

	time_format_ms(t->updated_ms, ts);
	st = json_pack("{s:s, s:s}", "state", task_state_name(t->state), "timestamp", ts);
	if (t->status_text)
		json_object_set_new(st, "message",
				    agent_message(t, t->status_text, "status"));
	return st;
}

/* The artifact of stream s holding its bytes [from, end). */
static json_t *artifact_json(const struct task *t, enum task_stream_id s, size_t from,
			     size_t end)
{
	const struct task_stream *o = &t->out[s];

	return json_pack("{s:s, s:s, s:[{s:o}]}", "artifactId", stream_names[s], "name",
			 stream_names[s], "parts", "text",
			 task_json_text(o->data ? o->data + from : "", end - from));
}

static json_t *metadata_json(const struct task *t)
{
	json_t *md = json_pack("{s:s}", "command", t->command);

	if (t->has_exit_code)
		json_object_set_new(md, "exit_code", json_integer(t->exit_code));
	if (t->signal) {
		const char *abbrev = sigabbrev_np(t->signal);
		char name[32];
		snprintf(name, sizeof(name), "SIG%s", abbrev ? abbrev : "UNKNOWN");
		json_object_set_new(md, "signal", json_string(name));
		json_object_set_new(md, "signal_number", json_integer(t->signal));
	}
	return md;
}

json_t *task_json(const struct task *t, long history_length)
{
	json_t *arts = json_array(), *hist = json_array();

	for (int s = TASK_STDOUT; s <= TASK_STDERR; s++) {
		const struct task_stream *o = &t->out[s];
		json_t *a;
		if (!o->total)
			continue;
		a = artifact_json(t, (enum task_stream_id)s, 0, o->len);
		json_object_set_new(
		    a, "metadata",
		    json_pack("{s:s, s:I, s:I, s:b}", "stream", stream_names[s], "bytes",
			      (json_int_t)o->total, "kept_bytes", (json_int_t)o->len,
			      "truncated", o->truncated));
		json_array_append_new(arts, a);
	}
	json_array_append(hist, t->message);
	if (task_is_terminal(t) && t->status_text)
		json_array_append_new(hist, agent_message(t, t->status_text, "status"));
	while (history_length >= 0 && json_array_size(hist) > (size_t)history_length)
		json_array_remove(hist, 0);
	return json_pack("{s:s, s:s, s:o, s:o, s:o, s:o}", "id", t->id, "contextId",
			 t->session_id, "status", status_json(t), "artifacts", arts,
			 "history", hist, "metadata", metadata_json(t));
}

json_t *task_status_delta(const struct task *t)
{
	return json_pack("{s:o, s:b}", "status", status_json(t), "final",
			 task_is_terminal(t));
}

json_t *task_output_delta(struct task *t)
{
	json_t *arts = json_array();

	for (int s = TASK_STDOUT; s <= TASK_STDERR; s++) {
		struct task_stream *o = &t->out[s];
		size_t end = complete_prefix(o->data, o->len);
		if (end <= o->announced)
			continue;
		json_array_append_new(
		    arts, artifact_json(t, (enum task_stream_id)s, o->announced, end));
		o->announced = end;
	}
	if (!json_array_size(arts)) {
		json_decref(arts);
		return NULL;
	}
	return json_pack("{s:o, s:b}", "artifacts", arts, "append", 1);
}

/* ---- the record on disk ---- */

static json_t *stream_record(const struct task_stream *o)
{
	return json_pack("{s:o, s:I, s:b}", "text",
			 task_json_text(o->data ? o->data : "", o->len), "total",
			 (json_int_t)o->total, "truncated", o->truncated);
}

char *task_record(const struct task *t)
{
	json_t *r = json_pack(
	    "{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:O, s:s, s:o, s:o}",
	    "version", 2, "id", t->id, "session_id", t->session_id, "owner", t->owner,
	    "message_id", t->message_id, "idempotency_key", t->idem_key, "trace_id",
	    t->trace_id, "state", task_state_name(t->state), "created_ms",
	    (json_int_t)t->created_ms, "updated_ms", (json_int_t)t->updated_ms, "message",
	    t->message, "command", t->command, "stdout", stream_record(&t->out[0]),
	    "stderr", stream_record(&t->out[1]));
	char *text;

	if (t->status_text)
		json_object_set_new(r, "status_text", json_string(t->status_text));
	if (t->has_exit_code)
		json_object_set_new(r, "exit_code", json_integer(t->exit_code));
	if (t->signal)
		json_object_set_new(r, "signal", json_integer(t->signal));
	text = json_dumps(r, JSON_COMPACT);
	json_decref(r);
	return text;
}

static int copy_field(json_t *r, const char *key, char *dst, size_t cap)
{
	const char *s = json_string_value(json_object_get(r, key));

	if (!s || strlen(s) >= cap)
		return -1;
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

static int load_stream(json_t *r, const char *key, struct task_stream *o)
{
	json_t *s = json_object_get(r, key);
	json_t *text = json_object_get(s, "text");

	if (!json_is_string(text) || !json_is_integer(json_object_get(s, "total")))
		return -1;
	o->len = o->cap = json_string_length(text);
	o->data = o->len ? xmalloc(o->len) : NULL;
	if (o->len)
		memcpy(o->data, json_string_value(text), o->len);
	o->announced = o->len;
	o->total = (uint64_t)json_integer_value(json_object_get(s, "total"));
	o->truncated = json_is_true(json_object_get(s, "truncated"));
	return 0;
}

static int load_record(json_t *r, struct task *t)
{
	json_t *exit_code = json_object_get(r, "exit_code");
	json_t *sig = json_object_get(r, "signal");
	const char *text = json_string_value(json_object_get(r, "status_text"));
	/* Version 1 records have no owner: they stay nobody's ("") rather
	   than everybody's, as nothing says whose they were. */
	int owned = json_integer_value(json_object_get(r, "version")) >= 2;

	if (copy_field(r, "id", t->id, sizeof(t->id)) || !uuid_is_valid(t->id) ||
	    copy_field(r, "session_id", t->session_id, sizeof(t->session_id)) ||
	    (owned &&
	     (copy_field(r, "owner", t->owner, sizeof(t->owner)) || !t->owner[0])) ||
	    copy_field(r, "message_id", t->message_id, sizeof(t->message_id)) ||
	    copy_field(r, "idempotency_key", t->idem_key, sizeof(t->idem_key)) ||
	    copy_field(r, "trace_id", t->trace_id, sizeof(t->trace_id)) ||
	    !json_is_string(json_object_get(r, "state")) ||
	    task_state_parse(json_string_value(json_object_get(r, "state")), &t->state) ||
	    !json_is_object(json_object_get(r, "message")) ||
	    !json_is_string(json_object_get(r, "command")) ||
	    load_stream(r, "stdout", &t->out[0]) || load_stream(r, "stderr", &t->out[1]))
		return -1;
	t->created_ms = json_integer_value(json_object_get(r, "created_ms"));
	t->updated_ms = json_integer_value(json_object_get(r, "updated_ms"));
	t->message = json_incref(json_object_get(r, "message"));
	t->command = xstrdup(json_string_value(json_object_get(r, "command")));
	t->status_text = text ? xstrdup(text) : NULL;
	t->has_exit_code = json_is_integer(exit_code);
	t->exit_code = (int)json_integer_value(exit_code);
	t->signal = (int)json_integer_value(sig);
	return 0;
}

struct task *task_from_record(const char *data, size_t n)
{
	/* Output is kept byte for byte, NUL included (as \u0000). */
	json_t *r = json_loadb(data, n, JSON_ALLOW_NUL, NULL);
	struct task *t = xcalloc(1, sizeof(*t));

	if (!json_is_object(r) || load_record(r, t) < 0) {
		json_decref(r);
		task_free(t);
		return NULL;
	}
	json_decref(r);
	set_log_ctx(t);
	return t;
}
