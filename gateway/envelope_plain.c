/* envelope_plain: the plain input op, recognized without a JSON tree.

   A keystroke is the op a client sends most, and Jansson's tree for it
   (an object, its hash table, a copy of every key and string, all freed
   again) was over half of the gateway's work per keystroke. What the
   clients send for it has one shape:

     {"op":"pty.session_input","id":"...","ts":"...","payload":{"data":"..."}}

   in any member order, "ts" optional, with any JSON whitespace between
   tokens. This file takes exactly that shape, with every string printable
   ASCII without escapes, and nothing else: any other byte, member, type,
   repeated member, or text after the object, and the caller parses the
   frame with Jansson as before, which accepts or refuses it with the
   message that names the field. So whatever is taken here, Jansson would
   have taken with the same meaning (fuzz_envelope checks that on every
   input), and every refusal still comes from one place. */
#include <string.h>

#include "envelope_int.h"
#include "xalloc.h"

enum plain_member {
	PLAIN_ID = 1u << 0,
	PLAIN_OP = 1u << 1,
	PLAIN_TS = 1u << 2,
	PLAIN_PAYLOAD = 1u << 3,
};

struct scan {
	const char *p, *end;
};

struct plain {
	const char *id, *data;
	size_t id_len, data_len;
	unsigned seen;
};

static void skip_space(struct scan *s)
{
	while (s->p < s->end &&
	       (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static bool eat(struct scan *s, char c)
{
	skip_space(s);
	if (s->p == s->end || *s->p != c)
		return false;
	s->p++;
	return true;
}

/* A string of printable ASCII without escapes; *str and *n borrow it. */
static bool plain_string(struct scan *s, const char **str, size_t *n)
{
	const char *start;

	if (!eat(s, '"'))
		return false;
	start = s->p;
	while (s->p < s->end && *s->p != '"') {
		if (*s->p < 0x20 || *s->p > 0x7e || *s->p == '\\')
			return false;
		s->p++;
	}
	if (s->p == s->end)
		return false;
	*str = start;
	*n = (size_t)(s->p - start);
	s->p++;
	return true;
}

static bool is(const char *str, size_t n, const char *want)
{
	return n == strlen(want) && memcmp(str, want, n) == 0;
}

/* {"data":"..."} */
static bool payload(struct scan *s, struct plain *out)
{
	const char *key;
	size_t n;

	return eat(s, '{') && plain_string(s, &key, &n) && is(key, n, "data") &&
	       eat(s, ':') && plain_string(s, &out->data, &out->data_len) && eat(s, '}');
}

/* One member of the frame's object, each at most once. */
static bool member(struct scan *s, struct plain *out)
{
	const char *key, *str;
	size_t n, len;
	enum plain_member which;
	bool ok;

	if (!plain_string(s, &key, &n) || !eat(s, ':'))
		return false;
	if (is(key, n, "id")) {
		which = PLAIN_ID;
		ok = plain_string(s, &out->id, &out->id_len);
	} else if (is(key, n, "op")) {
		which = PLAIN_OP;
		ok = plain_string(s, &str, &len) && is(str, len, PTYWS_OP_INPUT);
	} else if (is(key, n, "ts")) {
		which = PLAIN_TS;
		ok = plain_string(s, &str, &len);
	} else if (is(key, n, "payload")) {
		which = PLAIN_PAYLOAD;
		ok = payload(s, out);
	} else {
		return false;
	}
	if (!ok || (out->seen & which))
		return false;
	out->seen |= which;
	return true;
}

bool envelope_plain_input(const char *text, size_t len, struct envelope **out)
{
	struct scan s = {text, text + len};
	struct plain p = {0};
	struct envelope *env;
	char *data;

	*out = NULL;
	if (!eat(&s, '{'))
		return false;
	do {
		if (!member(&s, &p))
			return false;
	} while (eat(&s, ','));
	if (!eat(&s, '}'))
		return false;
	skip_space(&s);
	if (s.p != s.end || (p.seen & (PLAIN_ID | PLAIN_OP | PLAIN_PAYLOAD)) !=
				(PLAIN_ID | PLAIN_OP | PLAIN_PAYLOAD))
		return false;
	/* The id's bounds are envelope.c's to refuse. */
	if (p.id_len == 0 || p.id_len > PTG_MSG_ID_MAX_CHARS)
		return false;
	/* One allocation: the envelope, then its copy of payload.data. */
	env = xcalloc(1, sizeof(*env) + p.data_len + 1);
	data = (char *)(env + 1);
	memcpy(data, p.data, p.data_len);
	memcpy(env->id, p.id, p.id_len);
	env->op = PTYWS_OP_INPUT;
	env->op_kind = ENVELOPE_OP_PTY_INPUT;
	env->plain_data = data;
	env->plain_data_len = p.data_len;
	*out = env;
	return true;
}
