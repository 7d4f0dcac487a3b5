/* etcdjson: the JSON of etcd's v3 gateway, with no I/O (see etcdjson.h).
   The gateway maps protobuf to JSON: bytes fields are base64, 64-bit
   integers are strings (numbers are taken too), and fields at their
   default value (a PUT event's type, a zero revision) are left out. */
#include "etcdjson.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "b64.h"
#include "xalloc.h"

static void say(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (!whylen)
		return;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

/* ---- requests ---- */

static json_t *b64_string(const char *s, size_t n)
{
	struct buf b = BUF_INIT;
	json_t *j;

	b64_encode((const uint8_t *)s, n, &b);
	j = json_stringn((const char *)buf_head(&b), buf_size(&b));
	buf_free(&b);
	return j;
}

static json_t *b64_str(const char *s)
{
	return b64_string(s, strlen(s));
}

static json_t *int64_str(int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_string(s);
}

/* Appends j's compact text to out and drops j. */
static void emit(struct buf *out, json_t *j)
{
	size_t n = json_dumpb(j, NULL, 0, JSON_COMPACT);

	if (n)
		json_dumpb(j, (char *)buf_reserve(out, n), n, JSON_COMPACT);
	buf_commit(out, n);
	json_decref(j);
}

void etcdjson_range_req(struct buf *out, const char *key, size_t key_len,
			const char *range_end, int64_t revision, int64_t limit)
{
	json_t *j = json_pack("{s:o}", "key", b64_string(key, key_len));

	if (range_end)
		json_object_set_new(j, "range_end", b64_str(range_end));
	if (revision > 0)
		json_object_set_new(j, "revision", int64_str(revision));
	if (limit > 0)
		json_object_set_new(j, "limit", int64_str(limit));
	emit(out, j);
}

void etcdjson_grant_req(struct buf *out, int64_t ttl_s)
{
	emit(out, json_pack("{s:o}", "TTL", int64_str(ttl_s)));
}

void etcdjson_lease_req(struct buf *out, int64_t lease)
{
	emit(out, json_pack("{s:o}", "ID", int64_str(lease)));
}

void etcdjson_auth_req(struct buf *out, const char *user, const char *password)
{
	emit(out, json_pack("{s:s,s:s}", "name", user, "password", password));
}

void etcdjson_watch_req(struct buf *out, const char *key, const char *range_end,
			int64_t start_revision)
{
	json_t *c =
	    json_pack("{s:o,s:o}", "key", b64_str(key), "range_end", b64_str(range_end));

	if (start_revision > 0)
		json_object_set_new(c, "start_revision", int64_str(start_revision));
	emit(out, json_pack("{s:o}", "create_request", c));
}

void etcdjson_claim_req(struct buf *out, const char *key, const char *value,
			int64_t lease, int64_t mod_revision)
{
	json_t *cmp;
	json_t *put = json_pack("{s:{s:o,s:o,s:o}}", "request_put", "key", b64_str(key),
				"value", b64_str(value), "lease", int64_str(lease));

	if (mod_revision > 0)
		cmp =
		    json_pack("{s:o,s:s,s:s,s:o}", "key", b64_str(key), "target", "MOD",
			      "result", "EQUAL", "mod_revision", int64_str(mod_revision));
	else
		cmp = json_pack("{s:o,s:s,s:s,s:o}", "key", b64_str(key), "target",
				"CREATE", "result", "EQUAL", "create_revision",
				int64_str(0));
	emit(out, json_pack("{s:[o],s:[o],s:[{s:{s:o}}]}", "compare", cmp, "success", put,
			    "failure", "request_range", "key", b64_str(key)));
}

void etcdjson_release_req(struct buf *out, const char *key, int64_t lease)
{
	json_t *cmp = json_pack("{s:o,s:s,s:s,s:o}", "key", b64_str(key), "target",
				"LEASE", "result", "EQUAL", "lease", int64_str(lease));

	emit(out, json_pack("{s:[o],s:[{s:{s:o}}]}", "compare", cmp, "success",
			    "request_delete_range", "key", b64_str(key)));
}

void etcdjson_prefix_end(const char *prefix, char *out)
{
	size_t n = strlen(prefix);

	memcpy(out, prefix, n + 1);
	while (n > 0) {
		unsigned char c = (unsigned char)out[n - 1];

		if (c < 0xff) {
			out[n - 1] = (char)(c + 1);
			out[n] = '\0';
			return;
		}
		n--;
	}
	/* Every byte 0xff: the range to the end of the key space. */
	out[0] = '\0';
}

/* ---- replies ---- */

/* An int64 as the gateway writes it (a string), or a plain number; an
   absent field is 0. Returns 0 or -1. */
static int get_int64(const json_t *obj, const char *name, int64_t *out)
{
	const json_t *v = json_object_get(obj, name);
	const char *s;
	char *end;
	long long n;

	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v))
		return -1;
	s = json_string_value(v);
	if (!*s || json_string_length(v) > 20)
		return -1;
	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = n;
	return 0;
}

/* Decodes the base64 field name of obj into out[cap] (NUL-terminated,
   no NUL inside when text). Absent: "". Returns the length, or -1. */
static long get_bytes(const json_t *obj, const char *name, char *out, size_t cap,
		      bool text)
{
	const json_t *v = json_object_get(obj, name);
	struct buf b = BUF_INIT;
	long n;

	out[0] = '\0';
	if (!v)
		return 0;
	if (!json_is_string(v) || json_string_length(v) > b64_encoded_len(cap))
		return -1;
	if (b64_decode(json_string_value(v), json_string_length(v), &b) < 0 ||
	    buf_size(&b) > cap || (text && memchr(buf_head(&b), '\0', buf_size(&b)))) {
		buf_free(&b);
		return -1;
	}
	n = (long)buf_size(&b);
	memcpy(out, buf_head(&b), buf_size(&b));
	out[n] = '\0';
	buf_free(&b);
	return n;
}

static int get_kv(const json_t *j, struct etcdjson_kv *kv, char *why, size_t whylen)
{
	long vn;

	if (!json_is_object(j)) {
		say(why, whylen, "a kv is not an object");
		return -EPROTO;
	}
	if (get_bytes(j, "key", kv->key, ETCDJSON_FIELD_MAX, true) <= 0) {
		say(why, whylen, "a kv's key is missing, not base64 or too long");
		return -EPROTO;
	}
	vn = get_bytes(j, "value", kv->value, ETCDJSON_FIELD_MAX, false);
	if (vn < 0) {
		say(why, whylen, "a kv's value is not base64 or too long");
		return -EPROTO;
	}
	kv->value_len = (size_t)vn;
	if (get_int64(j, "mod_revision", &kv->mod_revision) < 0 ||
	    get_int64(j, "create_revision", &kv->create_revision) < 0 ||
	    get_int64(j, "lease", &kv->lease) < 0) {
		say(why, whylen, "a kv's revision or lease is not a number");
		return -EPROTO;
	}
	return 0;
}

/* Parses body as an object; an {"error": ...} answer is refused with its
   message. Returns the object or NULL. */
static json_t *load(const char *body, size_t len, char *why, size_t whylen)
{
	json_error_t err;
	json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
	const json_t *e;

	if (!j) {
		say(why, whylen, "not JSON: %s", err.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		say(why, whylen, "not a JSON object");
		json_decref(j);
		return NULL;
	}
	e = json_object_get(j, "error");
	if (e) {
		/* Unary answers: {"error": TEXT, "code": N, "message": TEXT};
		   a stream's: {"error": {"grpc_code": N, "message": TEXT}}. */
		const char *m = json_is_string(e)
				    ? json_string_value(e)
				    : json_string_value(json_object_get(e, "message"));

		say(why, whylen, "etcd error: %.200s", m ? m : "(no message)");
		json_decref(j);
		return NULL;
	}
	return j;
}

static int header_revision(const json_t *j, int64_t *rev)
{
	const json_t *h = json_object_get(j, "header");

	*rev = 0;
	if (h && (!json_is_object(h) || get_int64(h, "revision", rev) < 0))
		return -1;
	return 0;
}

static int get_kvs(const json_t *arr, struct etcdjson_range *out, char *why,
		   size_t whylen)
{
	size_t n = json_array_size(arr);

	if (arr && !json_is_array(arr)) {
		say(why, whylen, "kvs is not an array");
		return -EPROTO;
	}
	if (n > ETCDJSON_PAGE_MAX) {
		say(why, whylen, "%zu kvs in one page, over %d", n, ETCDJSON_PAGE_MAX);
		return -EPROTO;
	}
	out->kvs = xcalloc(n ? n : 1, sizeof(*out->kvs));
	for (size_t i = 0; i < n; i++, out->n++) {
		/* The first bad kv's reason stays in why. */
		char scratch[8];
		int first = out->n_bad == 0;

		if (get_kv(json_array_get(arr, i), &out->kvs[i], first ? why : scratch,
			   first ? whylen : sizeof(scratch)) == 0)
			continue;
		memset(&out->kvs[i], 0, sizeof(out->kvs[i]));
		out->kvs[i].bad = true;
		out->n_bad++;
	}
	return 0;
}

/* The raw key of the page's last kv, however long: paging goes on from
   it even when that kv is bad. */
static int last_key(const json_t *kv, struct etcdjson_range *out, char *why,
		    size_t whylen)
{
	const json_t *k = json_object_get(kv, "key");

	if (!json_is_string(k) ||
	    b64_decode(json_string_value(k), json_string_length(k), &out->last_key) < 0 ||
	    buf_size(&out->last_key) == 0) {
		say(why, whylen, "the page's last key cannot be read: no next page");
		return -EPROTO;
	}
	return 0;
}

int etcdjson_range_reply(const char *body, size_t len, struct etcdjson_range *out,
			 char *why, size_t whylen)
{
	json_t *j = load(body, len, why, whylen);
	const json_t *more;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!j)
		return -EPROTO;
	if (header_revision(j, &out->revision) < 0 || out->revision <= 0) {
		say(why, whylen, "no header revision");
		json_decref(j);
		return -EPROTO;
	}
	more = json_object_get(j, "more");
	out->more = more && json_is_true(more);
	rc = get_kvs(json_object_get(j, "kvs"), out, why, whylen);
	if (rc == 0 && out->n > 0)
		rc = last_key(json_array_get(json_object_get(j, "kvs"), out->n - 1), out,
			      why, whylen);
	json_decref(j);
	if (rc < 0)
		etcdjson_range_free(out);
	return rc;
}

void etcdjson_range_free(struct etcdjson_range *r)
{
	buf_free(&r->last_key);
	free(r->kvs);
	r->kvs = NULL;
	r->n = 0;
}

int etcdjson_grant_reply(const char *body, size_t len, int64_t *lease, int64_t *ttl,
			 char *why, size_t whylen)
{
	json_t *j = load(body, len, why, whylen);
	bool bad;

	if (!j)
		return -EPROTO;
	bad = get_int64(j, "ID", lease) < 0 || get_int64(j, "TTL", ttl) < 0 ||
	      *lease <= 0 || *ttl <= 0;
	json_decref(j);
	if (bad) {
		say(why, whylen, "a lease grant without an ID and a TTL");
		return -EPROTO;
	}
	return 0;
}

int etcdjson_keepalive_reply(const char *body, size_t len, int64_t *ttl, char *why,
			     size_t whylen)
{
	json_t *j = load(body, len, why, whylen);
	const json_t *r;
	bool bad;

	if (!j)
		return -EPROTO;
	r = json_object_get(j, "result");
	bad = !json_is_object(r) || get_int64(r, "TTL", ttl) < 0 || *ttl < 0;
	json_decref(j);
	if (bad) {
		say(why, whylen, "a keep-alive answer without a result");
		return -EPROTO;
	}
	return 0;
}

int etcdjson_auth_reply(const char *body, size_t len, char *token, size_t tokcap,
			char *why, size_t whylen)
{
	json_t *j = load(body, len, why, whylen);
	const char *t;
	bool bad;

	if (!j)
		return -EPROTO;
	t = json_string_value(json_object_get(j, "token"));
	bad = !t || !*t || strlen(t) >= tokcap || strpbrk(t, "\r\n");
	if (!bad)
		snprintf(token, tokcap, "%s", t);
	json_decref(j);
	if (bad) {
		say(why, whylen, "an authenticate answer without a usable token");
		return -EPROTO;
	}
	return 0;
}

static int succeeded_of(const json_t *j, bool *succeeded)
{
	const json_t *s = json_object_get(j, "succeeded");

	if (s && !json_is_boolean(s))
		return -1;
	*succeeded = s && json_is_true(s);
	return 0;
}

int etcdjson_txn_reply(const char *body, size_t len, bool *succeeded, char *why,
		       size_t whylen)
{
	json_t *j = load(body, len, why, whylen);
	bool bad;

	if (!j)
		return -EPROTO;
	bad = succeeded_of(j, succeeded) < 0;
	json_decref(j);
	if (bad) {
		say(why, whylen, "a transaction answer whose succeeded is not a boolean");
		return -EPROTO;
	}
	return 0;
}

/* The failure branch's one response_range, its first kv into current. */
static int failure_kv(const json_t *j, struct etcdjson_kv *current, char *why,
		      size_t whylen)
{
	const json_t *rs = json_object_get(j, "responses");
	const json_t *rr = json_object_get(json_array_get(rs, 0), "response_range");
	const json_t *kvs = json_object_get(rr, "kvs");

	if (!json_is_array(rs) || json_array_size(rs) != 1 || !json_is_object(rr) ||
	    (kvs && !json_is_array(kvs))) {
		say(why, whylen, "a refused claim without the key's range");
		return -EPROTO;
	}
	if (json_array_size(kvs) == 0)
		return 0;
	return get_kv(json_array_get(kvs, 0), current, why, whylen);
}

int etcdjson_claim_reply(const char *body, size_t len, bool *succeeded,
			 struct etcdjson_kv *current, char *why, size_t whylen)
{
	json_t *j = load(body, len, why, whylen);
	int rc = 0;

	memset(current, 0, sizeof(*current));
	if (!j)
		return -EPROTO;
	if (succeeded_of(j, succeeded) < 0) {
		say(why, whylen, "a claim answer whose succeeded is not a boolean");
		rc = -EPROTO;
	} else if (!*succeeded) {
		rc = failure_kv(j, current, why, whylen);
	}
	json_decref(j);
	return rc;
}

static int get_event(const json_t *e, struct etcdjson_event *ev, char *why, size_t whylen)
{
	const json_t *type = json_object_get(e, "type");
	const char *t = json_string_value(type);

	if (!json_is_object(e)) {
		say(why, whylen, "an event is not an object");
		return -EPROTO;
	}
	if (type && (!t || (strcmp(t, "PUT") && strcmp(t, "DELETE")))) {
		say(why, whylen, "an event of an unknown type");
		return -EPROTO;
	}
	ev->deleted = t && strcmp(t, "DELETE") == 0;
	return get_kv(json_object_get(e, "kv"), &ev->kv, why, whylen);
}

static int get_events(const json_t *arr, struct etcdjson_watch *out, char *why,
		      size_t whylen)
{
	size_t n = json_array_size(arr);

	if (arr && !json_is_array(arr)) {
		say(why, whylen, "events is not an array");
		return -EPROTO;
	}
	out->events = xcalloc(n ? n : 1, sizeof(*out->events));
	for (size_t i = 0; i < n; i++, out->n++) {
		char scratch[8];
		int first = out->n_bad == 0;

		if (get_event(json_array_get(arr, i), &out->events[i],
			      first ? why : scratch,
			      first ? whylen : sizeof(scratch)) == 0)
			continue;
		memset(&out->events[i], 0, sizeof(out->events[i]));
		out->events[i].kv.bad = true;
		out->n_bad++;
	}
	return 0;
}

static int flag(const json_t *obj, const char *name, bool *out)
{
	const json_t *v = json_object_get(obj, name);

	*out = v && json_is_true(v);
	return v && !json_is_boolean(v) ? -1 : 0;
}

int etcdjson_watch_msg(const char *body, size_t len, struct etcdjson_watch *out,
		       char *why, size_t whylen)
{
	json_t *j = load(body, len, why, whylen);
	const json_t *r;
	int rc = -EPROTO;

	memset(out, 0, sizeof(*out));
	if (!j)
		return -EPROTO;
	r = json_object_get(j, "result");
	if (!json_is_object(r))
		say(why, whylen, "a watch message without a result");
	else if (header_revision(r, &out->revision) < 0 ||
		 flag(r, "created", &out->created) < 0 ||
		 flag(r, "canceled", &out->canceled) < 0 ||
		 get_int64(r, "compact_revision", &out->compact_revision) < 0)
		say(why, whylen, "a watch message with a malformed field");
	else
		rc = get_events(json_object_get(r, "events"), out, why, whylen);
	json_decref(j);
	if (rc < 0)
		etcdjson_watch_free(out);
	return rc;
}

void etcdjson_watch_free(struct etcdjson_watch *w)
{
	free(w->events);
	w->events = NULL;
	w->n = 0;
}

/* ---- the stream splitter ---- */

void etcdjson_split_init(struct etcdjson_split *s, size_t max)
{
	memset(s, 0, sizeof(*s));
	buf_init(&s->pending);
	s->max = max;
}

void etcdjson_split_free(struct etcdjson_split *s)
{
	buf_free(&s->pending);
}

/* Advances the object scanner over byte c (inside an object). */
static void scan(struct etcdjson_split *s, char c)
{
	if (s->in_string) {
		if (s->escaped)
			s->escaped = false;
		else if (c == '\\')
			s->escaped = true;
		else if (c == '"')
			s->in_string = false;
		return;
	}
	if (c == '"')
		s->in_string = true;
	else if (c == '{' || c == '[')
		s->depth++;
	else if (c == '}' || c == ']')
		s->depth--;
}

int etcdjson_split_feed(struct etcdjson_split *s, const char *data, size_t n,
			etcdjson_msg_cb cb, void *user)
{
	for (size_t i = 0; i < n; i++) {
		char c = data[i];

		if (s->depth == 0) {
			if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
				continue;
			if (c != '{')
				return -EPROTO;
		}
		if (buf_size(&s->pending) >= s->max)
			return -E2BIG;
		buf_append(&s->pending, &c, 1);
		scan(s, c);
		/* Closed by a bracket: not an object, whatever the JSON parser
		   would make of it. */
		if (s->depth <= 0 && c != '}')
			return -EPROTO;
		if (s->depth == 0) {
			int rc = cb((const char *)buf_head(&s->pending),
				    buf_size(&s->pending), user);

			buf_reset(&s->pending);
			if (rc)
				return rc;
		}
	}
	return 0;
}
