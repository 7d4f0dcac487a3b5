/* wshandshake: RFC 6455 section 4.2 server side, as pure functions. The
   subprotocol offer doubles as a token carrier for browsers
   (docs/protocol.md, "Opening a connection"), so its parser is strict:
   every element must be an HTTP token (RFC 9110 5.6.2), the bearer entry
   strict unpadded base64url, lengths bounded before anything is allocated,
   and the decoded token wiped on release. */
#include "wshandshake.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nettle/sha1.h>
#include <sodium.h>

#include "addr.h"
#include "b64.h"
#include "buf.h"

#define WSHS__GUID	  "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WSHS__KEY_LEN	  24 /* base64 of 16 bytes, padded */
#define WSHS__BEARER	  "bearer."
#define WSHS__BEARER_LEN  (sizeof(WSHS__BEARER) - 1)
#define WSHS__ENCODED_MAX ((WSHS_TOKEN_MAX * 4 + 2) / 3)

/* A span of a header value: [p, p + n). */
struct span {
	const char *p;
	size_t n;
};

static int is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* RFC 9110 tchar. */
static int is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return 1;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static struct span trim(const char *p, size_t n)
{
	while (n > 0 && is_ows(p[0])) {
		p++;
		n--;
	}
	while (n > 0 && is_ows(p[n - 1]))
		n--;
	return (struct span){p, n};
}

/* Takes the next comma-separated element of *rest, trimmed; returns 0 when
   the list is exhausted. */
static int next_elem(struct span *rest, struct span *elem)
{
	const char *comma;
	size_t n;

	if (rest->p == NULL)
		return 0;
	comma = memchr(rest->p, ',', rest->n);
	n = comma ? (size_t)(comma - rest->p) : rest->n;
	*elem = trim(rest->p, n);
	if (comma) {
		rest->n -= n + 1;
		rest->p = comma + 1;
	} else {
		rest->p = NULL;
		rest->n = 0;
	}
	return 1;
}

static int span_eq(struct span s, const char *lit)
{
	return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

static int span_ieq(struct span s, const char *lit)
{
	return s.n == strlen(lit) && strncasecmp(s.p, lit, s.n) == 0;
}

/* The whole header value s; 0 when absent or longer than any honest
   value (a prefix must never be judged in place of the value). */
static int parse_value(const char *s, struct span *v)
{
	size_t n;

	if (s == NULL)
		return 0;
	n = strnlen(s, WSHS_PROTOCOL_HEADER_MAX + 1);
	if (n > WSHS_PROTOCOL_HEADER_MAX)
		return 0;
	*v = (struct span){s, n};
	return 1;
}

int wshs_accept_key(const char *client_key, char out[WSHS_ACCEPT_LEN + 1])
{
	uint8_t digest[SHA1_DIGEST_SIZE];
	struct buf raw = BUF_INIT, enc = BUF_INIT;
	struct sha1_ctx sha;
	struct span key;
	int ret = -EINVAL;

	out[0] = '\0';
	if (!parse_value(client_key, &key))
		return -EINVAL;
	key = trim(key.p, key.n);
	if (key.n != WSHS__KEY_LEN || b64_decode(key.p, key.n, &raw) < 0 ||
	    buf_size(&raw) != 16)
		goto out_free;
	sha1_init(&sha);
	sha1_update(&sha, key.n, (const uint8_t *)key.p);
	sha1_update(&sha, strlen(WSHS__GUID), (const uint8_t *)WSHS__GUID);
	sha1_digest(&sha, sizeof(digest), digest);
	b64_encode(digest, sizeof(digest), &enc);
	memcpy(out, buf_head(&enc), WSHS_ACCEPT_LEN);
	out[WSHS_ACCEPT_LEN] = '\0';
	ret = 0;
out_free:
	buf_free(&enc);
	buf_free(&raw);
	return ret;
}

static int is_token(struct span s)
{
	size_t i;

	for (i = 0; i < s.n; i++)
		if (!is_tchar((unsigned char)s.p[i]))
			return 0;
	return s.n > 0;
}

/* A JWT is printable ASCII; anything else is not a token we could verify. */
static int is_printable(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] < 0x21 || p[i] > 0x7e)
			return 0;
	return n > 0;
}

/* Decodes a bearer entry's base64url part into o. The buffer is sized up
   front so no realloc leaves an unwiped copy of the token behind. */
static int take_token(const char *enc, size_t n, struct wshs_offer *o)
{
	struct buf b = BUF_INIT;
	int ret;

	if (o->token)
		return -EINVAL;
	if (n > WSHS__ENCODED_MAX)
		return -EMSGSIZE;
	buf_reserve(&b, b64_decoded_max(n) + 4);
	ret = b64url_decode(enc, n, &b);
	if (ret == 0 && buf_size(&b) > WSHS_TOKEN_MAX)
		ret = -EMSGSIZE;
	else if (ret == 0 && !is_printable(buf_head(&b), buf_size(&b)))
		ret = -EINVAL;
	if (ret < 0) {
		sodium_memzero(b.data, b.cap);
		buf_free(&b);
		return ret;
	}
	o->token = (char *)buf_steal(&b, &o->token_len);
	return 0;
}

int wshs_parse_protocols(const char *value, struct wshs_offer *o)
{
	struct span rest, elem;
	size_t n;
	int ret = 0;

	memset(o, 0, sizeof(*o));
	if (value == NULL)
		return 0;
	n = strnlen(value, WSHS_PROTOCOL_HEADER_MAX + 1);
	if (n > WSHS_PROTOCOL_HEADER_MAX)
		return -EMSGSIZE;
	rest = (struct span){value, n};
	while (ret == 0 && next_elem(&rest, &elem)) {
		if (elem.n == 0)
			continue; /* RFC 9110 5.6.1: empty list elements are ignored */
		if (!is_token(elem))
			ret = -EINVAL;
		else if (span_eq(elem, WSHS_PROTOCOL))
			o->v1 = true;
		else if (elem.n > WSHS__BEARER_LEN &&
			 memcmp(elem.p, WSHS__BEARER, WSHS__BEARER_LEN) == 0)
			ret = take_token(elem.p + WSHS__BEARER_LEN,
					 elem.n - WSHS__BEARER_LEN, o);
	}
	if (ret < 0)
		wshs_offer_clear(o);
	return ret;
}

void wshs_offer_clear(struct wshs_offer *o)
{
	if (o == NULL)
		return;
	if (o->token) {
		sodium_memzero(o->token, o->token_len);
		free(o->token);
	}
	memset(o, 0, sizeof(*o));
}

/* Whether the comma-separated list s holds tok, case-insensitively. */
static int list_has(const char *s, const char *tok)
{
	struct span rest, elem;

	if (!parse_value(s, &rest))
		return 0;
	while (next_elem(&rest, &elem))
		if (span_ieq(elem, tok))
			return 1;
	return 0;
}

const char *wshs_check_upgrade(const char *upgrade, const char *connection,
			       const char *version)
{
	struct span v;

	if (!list_has(upgrade, "websocket"))
		return "Upgrade header must be websocket";
	if (!list_has(connection, "upgrade"))
		return "Connection header must contain upgrade";
	if (!parse_value(version, &v) || !span_eq(trim(v.p, v.n), "13"))
		return "Sec-WebSocket-Version must be 13";
	return NULL;
}

/* ---- Sec-WebSocket-Extensions (RFC 6455 9.1, RFC 7692) ---- */

/* The next list element of *rest up to a comma outside a quoted string;
   returns 0 when exhausted. */
static int next_ext(struct span *rest, struct span *elem)
{
	size_t i = 0;
	int quoted = 0;

	if (rest->p == NULL)
		return 0;
	for (; i < rest->n && (quoted || rest->p[i] != ','); i++) {
		if (quoted && rest->p[i] == '\\' && i + 1 < rest->n)
			i++;
		else if (rest->p[i] == '"')
			quoted = !quoted;
	}
	*elem = trim(rest->p, i);
	if (i < rest->n) {
		rest->p += i + 1;
		rest->n -= i + 1;
	} else {
		rest->p = NULL;
		rest->n = 0;
	}
	return 1;
}

/* Splits s at its first unquoted ';' into *head (trimmed) and *tail. */
static void split_param(struct span s, struct span *head, struct span *tail)
{
	const char *semi = memchr(s.p, ';', s.n);
	size_t n = semi ? (size_t)(semi - s.p) : s.n;

	*head = trim(s.p, n);
	*tail = semi ? (struct span){semi + 1, s.n - n - 1} : (struct span){NULL, 0};
}

/* A window-bits value: "8".."15", bare or quoted (RFC 7692 7.1.2). */
static int window_bits(struct span v, unsigned *bits)
{
	if (v.n >= 2 && v.p[0] == '"' && v.p[v.n - 1] == '"')
		v = (struct span){v.p + 1, v.n - 2};
	if (span_eq(v, "8") || span_eq(v, "9")) {
		*bits = (unsigned)(v.p[0] - '0');
		return 0;
	}
	if (v.n == 2 && v.p[0] == '1' && v.p[1] >= '0' && v.p[1] <= '5') {
		*bits = 10 + (unsigned)(v.p[1] - '0');
		return 0;
	}
	return -EINVAL;
}

enum deflate_param {
	P_SERVER_NCT,
	P_CLIENT_NCT,
	P_SERVER_BITS,
	P_CLIENT_BITS,
	P_COUNT, /* the number of parameters */
};

/* Checks one parameter "name[=value]" of a permessage-deflate offer,
   marking it in *seen; -EINVAL declines the offer. */
static int deflate_param(struct span p, unsigned *seen, bool *server_bits)
{
	static const char *const names[P_COUNT] = {
	    "server_no_context_takeover", "client_no_context_takeover",
	    "server_max_window_bits", "client_max_window_bits"};
	const char *eq = memchr(p.p, '=', p.n);
	struct span name = trim(p.p, eq ? (size_t)(eq - p.p) : p.n), val = {NULL, 0};
	unsigned i, bits;

	if (eq)
		val = trim(eq + 1, p.n - (size_t)(eq + 1 - p.p));
	for (i = 0; i < P_COUNT && !span_ieq(name, names[i]); i++)
		;
	if (i == P_COUNT || (*seen & (1u << i)))
		return -EINVAL;
	*seen |= 1u << i;
	switch (i) {
	case P_SERVER_NCT:
	case P_CLIENT_NCT:
		return eq ? -EINVAL : 0;
	case P_SERVER_BITS:
		/* Our one compressor uses a 15-bit window; a smaller one
		   would need a compressed variant per window size. */
		if (!eq || window_bits(val, &bits) < 0 || bits != 15)
			return -EINVAL;
		*server_bits = true;
		return 0;
	default: /* P_CLIENT_BITS: any window inflates with 15 */
		return eq && window_bits(val, &bits) < 0 ? -EINVAL : 0;
	}
}

/* Whether one offer is permessage-deflate with acceptable parameters. */
static int deflate_offer(struct span offer, bool *server_bits)
{
	struct span name, rest, param;
	unsigned seen = 0;

	split_param(offer, &name, &rest);
	if (!span_ieq(name, "permessage-deflate"))
		return -ENOENT;
	*server_bits = false;
	while (rest.p) {
		split_param(rest, &param, &rest);
		if (deflate_param(param, &seen, server_bits) < 0)
			return -EINVAL;
	}
	return 0;
}

void wshs_parse_extensions(const char *value, struct wshs_deflate *d)
{
	struct span rest, offer;
	bool server_bits;
	size_t n;

	memset(d, 0, sizeof(*d));
	if (value == NULL)
		return;
	n = strnlen(value, WSHS_EXTENSIONS_HEADER_MAX + 1);
	if (n > WSHS_EXTENSIONS_HEADER_MAX)
		return;
	rest = (struct span){value, n};
	while (next_ext(&rest, &offer)) {
		if (offer.n == 0 || deflate_offer(offer, &server_bits) < 0)
			continue;
		d->on = true;
		snprintf(d->response, sizeof(d->response), "%s%s",
			 "permessage-deflate; server_no_context_takeover; "
			 "client_no_context_takeover",
			 server_bits ? "; server_max_window_bits=15" : "");
		return;
	}
}

/* ---- Origin ---- */

static const char *origin_scheme(const char *s, size_t n, size_t *skip,
				 uint16_t *default_port)
{
	static const struct {
		const char *prefix, *scheme;
		uint16_t port;
	} schemes[] = {
	    {"https://", "https", 443},
	    {"http://", "http", 80},
	    {"wss://", "https", 443},
	    {"ws://", "http", 80},
	};

	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t len = strlen(schemes[i].prefix);
		if (n > len && !strncasecmp(s, schemes[i].prefix, len)) {
			*skip = len;
			*default_port = schemes[i].port;
			return schemes[i].scheme;
		}
	}
	return NULL;
}

/* Whether a host parsed by addr_parse_hostport may stand in an origin:
   a name of unreserved characters (no '/', '?', '#' that would end the
   authority), or an IPv6 literal of hex digits, ':' and '.'. */
static int origin_host_ok(const char *host)
{
	int v6 = strchr(host, ':') != NULL;

	for (const char *p = host; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (v6 ? !isxdigit(c) && c != ':' && c != '.'
		       : !isalnum(c) && !strchr("-._~", c))
			return 0;
	}
	return 1;
}

int wshs_origin_canon(const char *s, size_t n, char out[WSHS_ORIGIN_MAX + 1])
{
	char host[WSHS_ORIGIN_MAX + 1], port_text[8] = "";
	const char *scheme;
	size_t skip, len;
	uint16_t def, port;
	char *p;

	out[0] = '\0';
	scheme = origin_scheme(s, n, &skip, &def);
	port = def;
	if (!scheme ||
	    addr_parse_hostport(s + skip, n - skip, ADDR_PORT_OPTIONAL, host,
				sizeof(host), &port, NULL, 0) < 0 ||
	    !origin_host_ok(host))
		return -EINVAL;
	if (port != def)
		snprintf(port_text, sizeof(port_text), ":%u", (unsigned)port);
	len = (size_t)snprintf(out, WSHS_ORIGIN_MAX + 1,
			       strchr(host, ':') ? "%s://[%s]%s" : "%s://%s%s", scheme,
			       host, port_text);
	if (len > WSHS_ORIGIN_MAX) {
		out[0] = '\0';
		return -EINVAL;
	}
	for (p = out; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return 0;
}

/* The canonical origin a request's Host header names, under scheme. */
static int host_origin(const char *canon_origin, const char *host,
		       char out[WSHS_ORIGIN_MAX + 1])
{
	char tmp[WSHS_ORIGIN_MAX + 16];
	const char *sep = strstr(canon_origin, "://");
	int n;

	if (!host || !sep)
		return -EINVAL;
	n = snprintf(tmp, sizeof(tmp), "%.*s%s", (int)(sep + 3 - canon_origin),
		     canon_origin, host);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -EINVAL;
	return wshs_origin_canon(tmp, (size_t)n, out);
}

/* The origin of a public URL: its scheme and authority, path dropped. */
static int url_origin(const char *url, char out[WSHS_ORIGIN_MAX + 1])
{
	const char *sep = strstr(url, "://"), *path;

	if (!sep)
		return -EINVAL;
	path = strchr(sep + 3, '/');
	return wshs_origin_canon(url, path ? (size_t)(path - url) : strlen(url), out);
}

bool wshs_origin_allowed(const char *origin, const char *host, const char *public_url,
			 const char (*allowed)[WSHS_ORIGIN_MAX + 1], size_t n_allowed)
{
	char o[WSHS_ORIGIN_MAX + 1], same[WSHS_ORIGIN_MAX + 1];

	if (!origin)
		return true;
	if (wshs_origin_canon(origin, strlen(origin), o) < 0)
		return false; /* "null" (a sandboxed page, a file) or garbage */
	if (n_allowed) {
		for (size_t i = 0; i < n_allowed; i++)
			if (!strcmp(o, allowed[i]))
				return true;
		return false;
	}
	if (host_origin(o, host, same) == 0 && !strcmp(o, same))
		return true;
	return public_url && public_url[0] && url_origin(public_url, same) == 0 &&
	       !strcmp(o, same);
}
