/* fuzz_wshandshake: libFuzzer harness for the opening handshake's header
   parsers: the Sec-WebSocket-Protocol offer (pty-ws.v1 and the browser's
   bearer.<base64url(token)>), the Upgrade and Connection token lists, the
   version, and the Sec-WebSocket-Key. The whole input (up to its first
   NUL) is tried as each header; its lines are also tried as Upgrade,
   Connection and Sec-WebSocket-Version together. Oracles beyond the
   sanitizers:
   - a refused offer is left empty; an accepted token is printable ASCII
     of token_len bytes within WSHS_TOKEN_MAX, and re-encoded as
     "pty-ws.v1, bearer.<b64url>" it parses back to the same token;
   - the checks accept exactly what an independent reading of RFC 6455
     4.2.1 accepts (websocket in Upgrade, upgrade in Connection, both
     case-insensitive list tokens; version 13);
   - a permessage-deflate answer (Sec-WebSocket-Extensions) always holds
     both no-context-takeover parameters, and only for a value naming it;
   - an accepted key is the whole value (24 characters between blanks),
     and gives 28 base64 characters, the same with blanks around it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "b64.h"
#include "buf.h"
#include "fuzz_fields.h"
#include "fuzz_oracle.h"
#include "wshandshake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip(const struct wshs_offer *o)
{
	struct buf hdr = BUF_INIT;
	struct wshs_offer again;

	buf_append_str(&hdr, WSHS_PROTOCOL ", bearer.");
	b64url_encode((const uint8_t *)o->token, o->token_len, &hdr);
	buf_append(&hdr, "", 1);
	fuzz__assert(wshs_parse_protocols((const char *)buf_head(&hdr), &again) == 0);
	fuzz__assert(again.v1 && again.token_len == o->token_len &&
		     !memcmp(again.token, o->token, o->token_len));
	wshs_offer_clear(&again);
	buf_free(&hdr);
}

static void protocols(const char *value)
{
	struct wshs_offer o;
	int rc = wshs_parse_protocols(value, &o);

	fuzz__assert(rc == 0 || rc == -EINVAL || rc == -EMSGSIZE);
	if (rc < 0) {
		fuzz__assert(!o.v1 && !o.token && !o.token_len);
		return;
	}
	if (o.token) {
		fuzz__assert(o.token_len > 0 && o.token_len <= WSHS_TOKEN_MAX);
		fuzz__assert(strlen(o.token) == o.token_len);
		for (size_t i = 0; i < o.token_len; i++)
			fuzz__assert(o.token[i] > 0x20 && o.token[i] < 0x7f);
		roundtrip(&o);
	}
	wshs_offer_clear(&o);
	fuzz__assert(!o.token && !o.v1);
}

/* RFC 9110 list of tokens with optional blanks: does it hold want? */
static int list_has(const char *s, const char *want)
{
	size_t n = strlen(want);

	if (!s || strlen(s) > WSHS_PROTOCOL_HEADER_MAX)
		return 0; /* longer than any honest value: refused whole */
	for (;;) {
		size_t len = strcspn(s, ","), a = 0, b = len;

		while (a < b && (s[a] == ' ' || s[a] == '\t'))
			a++;
		while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t'))
			b--;
		if (b - a == n && !strncasecmp(s + a, want, n))
			return 1;
		if (!s[len])
			return 0;
		s += len + 1;
	}
}

static int version_ok(const char *v)
{
	size_t a, b;

	if (!v || strlen(v) > WSHS_PROTOCOL_HEADER_MAX)
		return 0;
	a = strspn(v, " \t");
	b = strlen(v);
	while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'))
		b--;
	return b - a == 2 && !memcmp(v + a, "13", 2);
}

static void upgrade(const char *up, const char *conn, const char *ver)
{
	int want =
	    list_has(up, "websocket") && list_has(conn, "upgrade") && version_ok(ver);
	const char *why = wshs_check_upgrade(up, conn, ver);

	fuzz__assert((why == NULL) == want);
	fuzz__assert(!why || why[0]);
}

static void check_key(const char *key)
{
	char out[WSHS_ACCEPT_LEN + 1], again[WSHS_ACCEPT_LEN + 1], padded[64];

	if (wshs_accept_key(key, out) < 0) {
		fuzz__assert(out[0] == '\0');
		return;
	}
	fuzz__assert(strlen(out) == WSHS_ACCEPT_LEN && out[WSHS_ACCEPT_LEN - 1] == '=');
	/* the whole value was the key: 24 characters between blanks */
	fuzz__assert(strlen(key) - strspn(key, " \t") >= 24 &&
		     strspn(key + strspn(key, " \t") + 24, " \t") ==
			 strlen(key + strspn(key, " \t") + 24));
	if (strlen(key) < 40) {
		snprintf(padded, sizeof(padded), " \t%s\t ", key);
		fuzz__assert(wshs_accept_key(padded, again) == 0 && !strcmp(out, again));
	}
}

/* A permessage-deflate answer always carries both no-context-takeover
   parameters (what lets one compressed frame serve every client), and an
   offer is accepted only when it names the extension. */
static void extensions(const char *value)
{
	static const char base[] = "permessage-deflate; server_no_context_takeover; "
				   "client_no_context_takeover";
	struct wshs_deflate d;

	wshs_parse_extensions(value, &d);
	if (!d.on) {
		fuzz__assert(d.response[0] == '\0');
		return;
	}
	fuzz__assert(strcasestr(value, "permessage-deflate") != NULL);
	fuzz__assert(!strcmp(d.response, base) ||
		     !strcmp(d.response,
			     "permessage-deflate; server_no_context_takeover; "
			     "client_no_context_takeover; server_max_window_bits=15"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *whole, *f[3];

	if (size > 64 * 1024)
		return 0;
	whole = strndup((const char *)data, size);
	if (!whole)
		abort();
	protocols(whole);
	extensions(whole);
	upgrade(whole, whole, whole);
	check_key(whole);
	fuzz_fields(data, size, f, 3);
	upgrade(f[0], f[1], f[2]);
	fuzz_fields_free(f, 3);
	free(whole);
	return 0;
}
