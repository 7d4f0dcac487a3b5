/* envelope: strict parsing of client frames and of the payloads of the
   client verbs (docs/protocol.md, "Frames" and "Client ops"). Jansson does
   the JSON; this file does the typing: every field is checked for presence,
   type and bounds, and each failure says which field, so a client author
   can fix it from the Error alone. Duplicate keys and unknown envelope
   fields are refused (the binding's schema has additionalProperties:
   false). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "b64.h"
#include "envelope_int.h"
#include "timeutil.h"
#include "uuid.h"
#include "xalloc.h"

#define ENVELOPE__TS_MAX 64 /* bytes of a client_ts worth echoing */

static const struct {
	const char *name;
	enum envelope_op kind;
} ops[] = {
    {PTYWS_OP_JOIN, ENVELOPE_OP_PTY_JOIN},
    {PTYWS_OP_INPUT, ENVELOPE_OP_PTY_INPUT},
    {PTYWS_OP_RESIZE, ENVELOPE_OP_PTY_RESIZE},
    {PTYWS_OP_REQUEST_ROLE, ENVELOPE_OP_PTY_REQUEST_ROLE},
    {PTYWS_OP_REQUEST_KEYFRAME, ENVELOPE_OP_PTY_REQUEST_KEYFRAME},
    {PTYWS_OP_LEAVE, ENVELOPE_OP_PTY_LEAVE},
    {PTYWS_OP_PING, ENVELOPE_OP_PING},
    {PTYWS_OP_UPDATE_PARAMS, ENVELOPE_OP_UPDATE_SERVICE_PARAMETERS},
    {PTYWS_OP_SEND_MESSAGE, ENVELOPE_OP_SEND_MESSAGE},
    {PTYWS_OP_SEND_STREAMING, ENVELOPE_OP_SEND_STREAMING_MESSAGE},
    {PTYWS_OP_GET_TASK, ENVELOPE_OP_GET_TASK},
    {PTYWS_OP_LIST_TASKS, ENVELOPE_OP_LIST_TASKS},
    {PTYWS_OP_CANCEL_TASK, ENVELOPE_OP_CANCEL_TASK},
    {PTYWS_OP_SUBSCRIBE_TO_TASK, ENVELOPE_OP_SUBSCRIBE_TO_TASK},
    {PTYWS_OP_UNSUBSCRIBE, ENVELOPE_OP_UNSUBSCRIBE},
    {PTYWS_OP_SET_PUSH_CONFIG, ENVELOPE_OP_PUSH_CONFIG},
    {PTYWS_OP_GET_PUSH_CONFIG, ENVELOPE_OP_PUSH_CONFIG},
    {PTYWS_OP_LIST_PUSH_CONFIG, ENVELOPE_OP_PUSH_CONFIG},
    {PTYWS_OP_DELETE_PUSH_CONFIG, ENVELOPE_OP_PUSH_CONFIG},
    {PTYWS_OP_DECIDE_CONTROL, ENVELOPE_OP_CONTROL_DECIDE},
};

/* The envelope fields a client may send; `sequence` is handled apart. */
static const char *const fields[] = {
    "op", "id", "ts", "replay_from", "service_parameters", "extensions", "payload", NULL,
};

/* Cuts s back to its last complete UTF-8 sequence, so a message that
   snprintf truncated mid-character stays valid UTF-8. */
static void trim_utf8(char *s)
{
	size_t n = strlen(s), i = n, need;
	unsigned char c;

	while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
		i--;
	if (i == 0)
		return;
	c = (unsigned char)s[i - 1];
	if (c < 0x80)
		return;
	need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
	if (n - (i - 1) < need)
		s[i - 1] = '\0';
}

/* Fills err's message and returns -EINVAL; err->id must be set already
   (or empty, in which case a fresh UUIDv7 goes there). */
static int __attribute__((format(printf, 2, 3)))
fail(struct envelope_error *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	trim_utf8(err->message);
	if (err->id[0] == '\0')
		uuid_v7_new(err->id);
	return -EINVAL;
}

/* Length of s cut to at most max bytes at a character boundary, for
   quoting client text (keys, parser errors) inside a message. */
static int clip(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n <= max)
		return (int)n;
	while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
		max--;
	return (int)max;
}

/* Code points in a valid UTF-8 string of n bytes. */
static size_t utf8_chars(const char *s, size_t n)
{
	size_t i, chars = 0;

	for (i = 0; i < n; i++)
		chars += ((unsigned char)s[i] & 0xC0) != 0x80;
	return chars;
}

/* A string of at most max_chars code points; *s and *n borrow it. */
static bool short_string(json_t *v, size_t max_chars, const char **s, size_t *n)
{
	if (!json_is_string(v))
		return false;
	*s = json_string_value(v);
	*n = json_string_length(v);
	return utf8_chars(*s, *n) <= max_chars;
}

/* Maps an op name to its kind (ENVELOPE_OP_UNKNOWN if none). */
static enum envelope_op envelope_op_lookup(const char *op)
{
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(ops[i].name, op) == 0)
			return ops[i].kind;
	return ENVELOPE_OP_UNKNOWN;
}

bool envelope_op_is_pty(enum envelope_op kind)
{
	return kind >= ENVELOPE_OP_PTY_JOIN && kind <= ENVELOPE_OP_PTY_LEAVE;
}

/* The id comes first so every later error can echo it. */
static int take_id(json_t *root, struct envelope *env, struct envelope_error *err)
{
	json_t *v = json_object_get(root, "id");
	const char *s;
	size_t n;

	if (!v)
		return fail(err, "missing field 'id'");
	if (!short_string(v, PTG_MSG_ID_MAX_CHARS, &s, &n) || n == 0)
		return fail(err,
			    "field 'id' must be a string of 1 to %d "
			    "characters",
			    PTG_MSG_ID_MAX_CHARS);
	memcpy(env->id, s, n + 1);
	memcpy(err->id, s, n + 1);
	return 0;
}

static int check_fields(json_t *root, struct envelope_error *err)
{
	const char *key;
	json_t *v;
	size_t i;

	if (json_object_get(root, "sequence"))
		return fail(err, "field 'sequence' must not be set by a "
				 "client");
	json_object_foreach(root, key, v)
	{
		for (i = 0; fields[i]; i++)
			if (strcmp(fields[i], key) == 0)
				break;
		if (!fields[i])
			return fail(err, "unknown field '%.*s'", clip(key, 64), key);
	}
	return 0;
}

static int take_op(json_t *root, struct envelope *env, struct envelope_error *err)
{
	json_t *v = json_object_get(root, "op");
	json_t *ts = json_object_get(root, "ts");

	if (!v)
		return fail(err, "missing field 'op'");
	if (!json_is_string(v))
		return fail(err, "field 'op' must be a string");
	env->op = json_string_value(v);
	env->op_kind = envelope_op_lookup(env->op);
	/* ts is informational only; type it, ignore its value. */
	if (ts && !json_is_string(ts))
		return fail(err, "field 'ts' must be a string");
	return 0;
}

static int take_replay_from(json_t *root, struct envelope *env,
			    struct envelope_error *err)
{
	json_t *v = json_object_get(root, "replay_from");

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return fail(err, "field 'replay_from' must be a "
				 "non-negative integer or null");
	env->has_replay_from = true;
	env->replay_from = (uint64_t)json_integer_value(v);
	return 0;
}

static int take_extensions(json_t *root, struct envelope *env, struct envelope_error *err)
{
	json_t *v = json_object_get(root, "extensions"), *e;
	size_t i, j;

	if (!v)
		return 0;
	if (!json_is_array(v))
		return fail(err, "field 'extensions' must be an array "
				 "of strings");
	if (json_array_size(v) > ENVELOPE_EXTENSIONS_MAX)
		return fail(err,
			    "field 'extensions' has more than %d "
			    "entries",
			    ENVELOPE_EXTENSIONS_MAX);
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e))
			return fail(err, "field 'extensions' must be an "
					 "array of strings");
		for (j = 0; j < i; j++)
			if (json_equal(e, json_array_get(v, j)))
				return fail(err, "field 'extensions' "
						 "repeats an entry");
		if (strcmp(json_string_value(e), PTYWS_EXT_PTY) == 0)
			env->pty_extension = true;
		if (strcmp(json_string_value(e), PTYWS_EXT_CONTROL) == 0)
			env->control_extension = true;
	}
	env->has_extensions = true;
	return 0;
}

/* The trace id goes into log lines verbatim: only an id's characters. */
static int check_trace_id(json_t *k, const char *field, struct envelope_error *err)
{
	const char *s = json_string_value(k);
	size_t n = json_string_length(k);

	if (n > ENVELOPE_TRACE_ID_MAX || strlen(s) != n ||
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		      "0123456789-._:") != n)
		return fail(err,
			    "field '%s.trace_id' must be at most %d characters of "
			    "A-Z a-z 0-9 - . _ :",
			    field, ENVELOPE_TRACE_ID_MAX);
	return 0;
}

/* Typed and bounded, as the schema types the well-known keys. */
static int check_service_params(json_t *v, const char *field, struct envelope_error *err)
{
	static const char *const known[] = {"trace_id", "idempotency_key", "tenant_id"};
	size_t i;
	json_t *k;

	if (!json_is_object(v))
		return fail(err, "field '%s' must be an object", field);
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		k = json_object_get(v, known[i]);
		if (k && !json_is_string(k))
			return fail(err, "field '%s.%s' must be a string", field,
				    known[i]);
	}
	k = json_object_get(v, "trace_id");
	if (k && check_trace_id(k, field, err) < 0)
		return -EINVAL;
	if (json_dumpb(v, NULL, 0, JSON_COMPACT) > ENVELOPE_SERVICE_PARAMS_MAX)
		return fail(err, "field '%s' exceeds %d bytes encoded", field,
			    ENVELOPE_SERVICE_PARAMS_MAX);
	return 0;
}

static int take_rest(json_t *root, struct envelope *env, struct envelope_error *err)
{
	json_t *sp = json_object_get(root, "service_parameters");
	json_t *payload = json_object_get(root, "payload");

	if (sp) {
		if (check_service_params(sp, "service_parameters", err))
			return -EINVAL;
		env->service_parameters = json_incref(sp);
	}
	if (!payload)
		return fail(err, "missing field 'payload'");
	if (!json_is_object(payload) && !json_is_null(payload))
		return fail(err, "field 'payload' must be an object or "
				 "null");
	env->payload = json_is_null(payload) ? NULL : payload;
	return 0;
}

static int fill(struct envelope *env, struct envelope_error *err)
{
	json_t *root = env->root;

	if (!json_is_object(root))
		return fail(err, "frame must be a JSON object");
	if (take_id(root, env, err) || check_fields(root, err) ||
	    take_op(root, env, err) || take_replay_from(root, env, err) ||
	    take_extensions(root, env, err) || take_rest(root, env, err))
		return -EINVAL;
	return 0;
}

int envelope_parse(const char *text, size_t len, struct envelope **out,
		   struct envelope_error *err)
{
	/* A keystroke needs no tree: the plain input op is taken as it is. */
	if (envelope_plain_input(text, len, out))
		return 0;
	return envelope_parse_tree(text, len, out, err);
}

int envelope_parse_tree(const char *text, size_t len, struct envelope **out,
			struct envelope_error *err)
{
	struct envelope *env;
	json_error_t jerr;

	*out = NULL;
	err->id[0] = '\0';
	err->message[0] = '\0';
	env = xcalloc(1, sizeof(*env));
	/* Duplicate keys would let two readers see different frames. */
	env->root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!env->root) {
		envelope_free(env);
		return fail(err, "malformed JSON: %.*s", clip(jerr.text, 160), jerr.text);
	}
	if (fill(env, err)) {
		envelope_free(env);
		return -EINVAL;
	}
	*out = env;
	return 0;
}

void envelope_free(struct envelope *env)
{
	if (!env)
		return;
	json_decref(env->service_parameters);
	json_decref(env->root);
	free(env);
}

/* ---- payload validators ---- */

/* Starts a validation: err echoes env's id; the payload must be an
   object with only the named fields. */
static int check_payload(const struct envelope *env, const char *const *allowed,
			 json_t **obj, struct envelope_error *err)
{
	const char *key;
	json_t *v;
	size_t i;

	memcpy(err->id, env->id, sizeof(err->id));
	err->message[0] = '\0';
	*obj = env->payload;
	if (!*obj)
		return fail(err, "field 'payload' must be an object");
	if (!allowed)
		return 0;
	json_object_foreach(*obj, key, v)
	{
		for (i = 0; allowed[i]; i++)
			if (strcmp(allowed[i], key) == 0)
				break;
		if (!allowed[i])
			return fail(err, "unknown field 'payload.%.*s'", clip(key, 64),
				    key);
	}
	return 0;
}

/* An optional cols/rows value; *out stays 0 when absent. */
static int dim(json_t *obj, const char *name, bool required, uint32_t *out,
	       struct envelope_error *err)
{
	json_t *v = json_object_get(obj, name);
	json_int_t n;

	*out = 0;
	if (!v && !required)
		return 0;
	if (!v)
		return fail(err, "missing field 'payload.%s'", name);
	n = json_is_integer(v) ? json_integer_value(v) : 0;
	if (n < 1 || n > PTG_DIM_MAX)
		return fail(err,
			    "field 'payload.%s' must be an integer "
			    "from 1 to %d",
			    name, PTG_DIM_MAX);
	*out = (uint32_t)n;
	return 0;
}

static int role(json_t *obj, Ptg__Role *out, struct envelope_error *err)
{
	json_t *v = json_object_get(obj, "role");
	const char *s = json_is_string(v) ? json_string_value(v) : "";

	if (!v)
		return fail(err, "missing field 'payload.role'");
	if (strcmp(s, PTYWS_ROLE_CONTROLLER) == 0)
		*out = PTG__ROLE__ROLE_CONTROLLER;
	else if (strcmp(s, PTYWS_ROLE_OBSERVER) == 0)
		*out = PTG__ROLE__ROLE_OBSERVER;
	else
		return fail(err, "field 'payload.role' must be "
				 "\"" PTYWS_ROLE_CONTROLLER "\" or \"" PTYWS_ROLE_OBSERVER
				 "\"");
	return 0;
}

static int label(json_t *obj, char *out, struct envelope_error *err)
{
	json_t *v = json_object_get(obj, "client_label");
	const char *s;
	size_t n;

	out[0] = '\0';
	if (!v)
		return 0;
	if (!short_string(v, PTG_LABEL_MAX_CHARS, &s, &n))
		return fail(err,
			    "field 'payload.client_label' must be a "
			    "string of at most %d characters",
			    PTG_LABEL_MAX_CHARS);
	memcpy(out, s, n + 1);
	return 0;
}

int envelope_join(const struct envelope *env, struct envelope_join *out,
		  struct envelope_error *err)
{
	static const char *const allowed[] = {"role", "cols", "rows", "client_label",
					      NULL};
	json_t *obj;

	memset(out, 0, sizeof(*out));
	if (check_payload(env, allowed, &obj, err) || role(obj, &out->role, err) ||
	    dim(obj, "cols", false, &out->cols, err) ||
	    dim(obj, "rows", false, &out->rows, err) || label(obj, out->label, err))
		return -EINVAL;
	if (!out->cols != !out->rows)
		return fail(err, "fields 'payload.cols' and "
				 "'payload.rows' must be given together");
	return 0;
}

/* Exact decoded size of a padded base64 string whose length is a
   multiple of 4 (others are malformed and left to the decoder). */
static size_t b64_size(const char *s, size_t n)
{
	if (n == 0 || n % 4)
		return n / 4 * 3;
	return n / 4 * 3 - (s[n - 1] == '=') - (s[n - 2] == '=');
}

/* payload.data's base64 text; *s and *n borrow it. */
static int input_data(const struct envelope *env, const char **s, size_t *n,
		      struct envelope_error *err)
{
	static const char *const allowed[] = {"data", NULL};
	json_t *obj, *v;

	if (env->plain_data) { /* only the plain input op has it */
		memcpy(err->id, env->id, sizeof(err->id));
		err->message[0] = '\0';
		*s = env->plain_data;
		*n = env->plain_data_len;
		return 0;
	}
	if (check_payload(env, allowed, &obj, err))
		return -EINVAL;
	v = json_object_get(obj, "data");
	if (!v)
		return fail(err, "missing field 'payload.data'");
	if (!json_is_string(v))
		return fail(err, "field 'payload.data' must be a base64 "
				 "string");
	*s = json_string_value(v);
	*n = json_string_length(v);
	return 0;
}

int envelope_input(const struct envelope *env, struct buf *out,
		   struct envelope_error *err)
{
	const char *s = NULL;
	size_t n = 0;

	if (input_data(env, &s, &n, err))
		return -EINVAL;
	/* Bound before decoding: never allocate for an oversized input. */
	if (b64_size(s, n) > PTG_INPUT_MAX)
		return fail(err,
			    "oversized input: 'payload.data' "
			    "decodes to more than %u bytes",
			    PTG_INPUT_MAX);
	if (b64_decode(s, n, out))
		return fail(err, "field 'payload.data' is not valid "
				 "base64");
	return 0;
}

int envelope_resize(const struct envelope *env, struct envelope_resize *out,
		    struct envelope_error *err)
{
	static const char *const allowed[] = {"cols", "rows", NULL};
	json_t *obj;

	if (check_payload(env, allowed, &obj, err) ||
	    dim(obj, "cols", true, &out->cols, err) ||
	    dim(obj, "rows", true, &out->rows, err))
		return -EINVAL;
	return 0;
}

int envelope_decide_control(const struct envelope *env, struct envelope_decide *out,
			    struct envelope_error *err)
{
	static const char *const allowed[] = {"client_id", "approve", NULL};
	json_t *obj, *id, *yes;
	size_t n;

	if (check_payload(env, allowed, &obj, err))
		return -EINVAL;
	id = json_object_get(obj, "client_id");
	yes = json_object_get(obj, "approve");
	n = json_is_string(id) ? json_string_length(id) : 0;
	if (!n || n > PTG_CLIENT_ID_MAX_CHARS)
		return fail(err, "field 'payload.client_id' must be a client id");
	if (!json_is_boolean(yes))
		return fail(err, "field 'payload.approve' must be true or false");
	memcpy(out->client_id, json_string_value(id), n);
	out->client_id[n] = '\0';
	out->approve = json_is_true(yes);
	return 0;
}

int envelope_request_role(const struct envelope *env, Ptg__Role *out,
			  struct envelope_error *err)
{
	static const char *const allowed[] = {"role", NULL};
	json_t *obj;

	if (check_payload(env, allowed, &obj, err) || role(obj, out, err))
		return -EINVAL;
	return 0;
}

int envelope_no_fields(const struct envelope *env, struct envelope_error *err)
{
	static const char *const allowed[] = {NULL};
	json_t *obj;

	if (!env->payload) { /* null carries no fields either */
		memcpy(err->id, env->id, sizeof(err->id));
		return 0;
	}
	return check_payload(env, allowed, &obj, err);
}

int envelope_ping(const struct envelope *env, const char **client_ts,
		  struct envelope_error *err)
{
	json_t *obj, *v;
	int64_t ms;

	/* The binding's PingPayload is open: extra fields are ignored. */
	if (check_payload(env, NULL, &obj, err))
		return -EINVAL;
	v = json_object_get(obj, "client_ts");
	if (!v)
		return fail(err, "missing field 'payload.client_ts'");
	if (!json_is_string(v) || json_string_length(v) > ENVELOPE__TS_MAX ||
	    time_parse_rfc3339(json_string_value(v), &ms))
		return fail(err, "field 'payload.client_ts' must be an "
				 "RFC 3339 timestamp");
	*client_ts = json_string_value(v);
	return 0;
}

int envelope_service_update(const struct envelope *env, json_t **params,
			    struct envelope_error *err)
{
	json_t *obj, *v;

	if (check_payload(env, NULL, &obj, err))
		return -EINVAL;
	v = json_object_get(obj, "service_parameters");
	if (!v)
		return fail(err, "missing field "
				 "'payload.service_parameters'");
	if (check_service_params(v, "payload.service_parameters", err))
		return -EINVAL;
	*params = v;
	return 0;
}
