/* unit: wsproto */
/* wshandshake: the RFC 6455 sample key, malformed keys, the subprotocol
   offer with and without a bearer token (docs/protocol.md,
   "Opening a connection"), and the upgrade header
   checks. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "b64.h"
#include "buf.h"
#include "wshandshake.h"

static void test_accept_sample(void **state)
{
	char out[WSHS_ACCEPT_LEN + 1];

	/* RFC 6455 section 1.3. */
	assert_int_equal(wshs_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out), 0);
	assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	/* Optional whitespace around a header value is not part of it. */
	assert_int_equal(wshs_accept_key(" \tdGhlIHNhbXBsZSBub25jZQ== ", out), 0);
	assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	/* Another 16-byte key gives another answer. */
	assert_int_equal(wshs_accept_key("AAAAAAAAAAAAAAAAAAAAAA==", out), 0);
	assert_int_equal(strlen(out), WSHS_ACCEPT_LEN);
	assert_string_not_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

static void test_accept_bad_keys(void **state)
{
	static const char *const bad[] = {
	    "",
	    "dGhlIHNhbXBsZSBub25jZQ",	    /* padding missing */
	    "dGhlIHNhbXBsZSBub25jZQ=",	    /* half the padding */
	    "dGhlIHNhbXBsZSBub25jZ===",	    /* too much padding */
	    "dGhlIHNhbXBsZSBub25jZR==",	    /* non-zero trailing bits */
	    "dGhlIHNhbXBs ZSBub25jZQ==",    /* inner space */
	    "dGhlIHNhbXBsZSBub25jZQ==AAAA", /* 19 bytes */
	    "dGhlIHNhbXBsZSBub25j",	    /* 15 bytes */
	    "dGhlIHNhbXBsZSBub25jZQ-_",	    /* base64url alphabet */
	    "dGhlIHNhbXBsZSBub25jZ!==",
	    /* found with fuzz_wshandshake: only the first 88 bytes were read,
	       so a valid key, 64 blanks and anything after it passed */
	    "dGhlIHNhbXBsZSBub25jZQ==                                "
	    "                                junk",
	};
	char out[WSHS_ACCEPT_LEN + 1];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(out, 'x', sizeof(out));
		assert_int_equal(wshs_accept_key(bad[i], out), -EINVAL);
		assert_string_equal(out, "");
	}
	assert_int_equal(wshs_accept_key(NULL, out), -EINVAL);
}

/* "bearer." followed by the unpadded base64url of tok. */
static char *bearer(const char *tok)
{
	struct buf b = BUF_INIT;

	buf_append_str(&b, "bearer.");
	b64url_encode((const uint8_t *)tok, strlen(tok), &b);
	return (char *)buf_steal(&b, NULL);
}

static void expect_offer(const char *value, bool v1, const char *token)
{
	struct wshs_offer o;

	assert_int_equal(wshs_parse_protocols(value, &o), 0);
	assert_int_equal(o.v1, v1);
	if (token == NULL) {
		assert_null(o.token);
	} else {
		assert_non_null(o.token);
		assert_string_equal(o.token, token);
		assert_int_equal(o.token_len, strlen(token));
	}
	wshs_offer_clear(&o);
	assert_null(o.token);
}

static void expect_refused(const char *value, int err)
{
	struct wshs_offer o;

	assert_int_equal(wshs_parse_protocols(value, &o), err);
	assert_false(o.v1);
	assert_null(o.token);
}

static void test_protocols(void **state)
{
	static const char jwt[] = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln";
	char *b = bearer(jwt), line[512];

	expect_offer("pty-ws.v1", true, NULL);
	expect_offer(NULL, false, NULL);
	expect_offer("", false, NULL);
	expect_offer("chat, superchat", false, NULL);
	expect_offer("PTY-WS.V1", false, NULL); /* subprotocols are case-sensitive */
	expect_offer("pty-ws.v1x", false, NULL);
	snprintf(line, sizeof(line), "pty-ws.v1, %s", b);
	expect_offer(line, true, jwt);
	snprintf(line, sizeof(line), "  %s\t,\t pty-ws.v1  ", b);
	expect_offer(line, true, jwt);
	snprintf(line, sizeof(line), "chat,,pty-ws.v1 , , %s,other", b);
	expect_offer(line, true, jwt);
	snprintf(line, sizeof(line), "pty-ws.v1,%s", b);
	expect_offer(line, true, jwt);
	snprintf(line, sizeof(line), "pty-ws.v0, %s", b); /* token but no v1 */
	expect_offer(line, false, jwt);
	expect_offer("pty-ws.v1, pty-ws.v1", true, NULL);
	free(b);
}

static void test_protocols_refused(void **state)
{
	char *b = bearer("a.b.c"), line[512];
	char *big;

	expect_refused("pty-ws.v1, bearer.YS5iLmM=", -EINVAL); /* '=' padding */
	expect_refused("pty-ws.v1, bearer.YS5iLmM==", -EINVAL);
	expect_refused("pty-ws.v1, bearer.YS5i*mM", -EINVAL); /* not base64url */
	expect_refused("pty-ws.v1, bearer.YS5iL", -EINVAL);   /* a lone 6 bits */
	expect_refused("pty-ws.v1, bearer.YS5iLmN", -EINVAL); /* trailing bits set */
	expect_refused("pty-ws.v1, bearer.YS5i+mM", -EINVAL); /* standard alphabet */
	expect_refused("pty-ws.v1, bearer.AA", -EINVAL);      /* a NUL byte */
	expect_refused("pty-ws.v1, bearer.IA", -EINVAL);      /* a space */
	expect_refused("pty-ws.v1 x", -EINVAL);		      /* not a token */
	expect_refused("pty-ws.v1, \"quoted\"", -EINVAL);
	expect_refused("pty-ws.v1; q=1", -EINVAL);
	expect_refused("pty-ws.v1,\x01", -EINVAL);
	expect_refused("pty-ws.v1,caf\xc3\xa9", -EINVAL);
	snprintf(line, sizeof(line), "pty-ws.v1, %s, %s", b, b); /* two tokens */
	expect_refused(line, -EINVAL);
	/* "bearer." with nothing after is just an unknown entry. */
	expect_offer("pty-ws.v1, bearer.", true, NULL);

	/* Bounds: the header, then the token. */
	big = malloc(WSHS_PROTOCOL_HEADER_MAX + 2);
	memset(big, 'a', WSHS_PROTOCOL_HEADER_MAX + 1);
	big[WSHS_PROTOCOL_HEADER_MAX + 1] = '\0';
	expect_refused(big, -EMSGSIZE);
	big[WSHS_PROTOCOL_HEADER_MAX] = '\0';
	expect_offer(big, false, NULL);
	free(big);
	free(b);
}

static void check_token_size(size_t n, int want)
{
	char *tok = malloc(n + 1), *b, *line;
	size_t len;

	memset(tok, 'e', n);
	tok[n] = '\0';
	b = bearer(tok);
	len = strlen(b) + 16;
	line = malloc(len);
	snprintf(line, len, "pty-ws.v1, %s", b);
	if (want == 0)
		expect_offer(line, true, tok);
	else
		expect_refused(line, want);
	free(line);
	free(b);
	free(tok);
}

static void test_token_bounds(void **state)
{
	check_token_size(1, 0);
	check_token_size(WSHS_TOKEN_MAX, 0);
	check_token_size(WSHS_TOKEN_MAX - 1, 0);
	check_token_size(WSHS_TOKEN_MAX + 1, -EMSGSIZE);
	check_token_size(WSHS_TOKEN_MAX + 2, -EMSGSIZE);
	check_token_size(WSHS_TOKEN_MAX + 3, -EMSGSIZE);
	wshs_offer_clear(NULL);
}

static void test_upgrade(void **state)
{
	assert_null(wshs_check_upgrade("websocket", "Upgrade", "13"));
	assert_null(wshs_check_upgrade("WebSocket", "keep-alive, Upgrade", "13"));
	assert_null(wshs_check_upgrade("websocket", "keep-alive,upgrade", " 13 "));
	assert_null(wshs_check_upgrade("h2c, websocket", "UPGRADE", "13"));
	assert_non_null(wshs_check_upgrade(NULL, "Upgrade", "13"));
	assert_non_null(wshs_check_upgrade("h2c", "Upgrade", "13"));
	assert_non_null(wshs_check_upgrade("websockets", "Upgrade", "13"));
	assert_non_null(wshs_check_upgrade("websocket", NULL, "13"));
	assert_non_null(wshs_check_upgrade("websocket", "keep-alive", "13"));
	assert_non_null(wshs_check_upgrade("websocket", "upgraded", "13"));
	assert_non_null(wshs_check_upgrade("websocket", "Upgrade", NULL));
	assert_non_null(wshs_check_upgrade("websocket", "Upgrade", "8"));
	assert_non_null(wshs_check_upgrade("websocket", "Upgrade", "13, 8"));
	assert_non_null(wshs_check_upgrade("websocket", "Upgrade", "130"));
	assert_string_equal(wshs_check_upgrade("websocket", "Upgrade", "7"),
			    "Sec-WebSocket-Version must be 13");
}

static void assert_canon(const char *in, const char *want)
{
	char out[WSHS_ORIGIN_MAX + 1];

	assert_int_equal(wshs_origin_canon(in, strlen(in), out), 0);
	assert_string_equal(out, want);
}

static void test_origin_canon(void **state)
{
	static const char *const bad[] = {
	    "null",
	    "",
	    "http://",
	    "ftp://a.example",
	    "http://a.example/",
	    "http://a.example/x",
	    "http://u@a.example",
	    "http://a.example:",
	    "http://a.example:65536",
	    "http://a.example:8x",
	    "http://a.example?q",
	    "http://a b",
	    "http://[::1",
	    "http://[::1]x",
	    "http://a:1:2",
	    "http://a.example:0",
	    "http://[a.b]",
	    "http://[::1%25eth0]",
	    "http://a.example#x",
	};
	char out[WSHS_ORIGIN_MAX + 1];

	assert_canon("https://Term.Example.COM", "https://term.example.com");
	assert_canon("https://a.example:443", "https://a.example");
	assert_canon("http://a.example:80", "http://a.example");
	assert_canon("http://a.example:8080", "http://a.example:8080");
	assert_canon("wss://a.example:443", "https://a.example");
	assert_canon("ws://127.0.0.1:8080", "http://127.0.0.1:8080");
	assert_canon("http://[::1]:8080", "http://[::1]:8080");
	/* The port is a number: leading zeros and the default drop out. */
	assert_canon("http://a.example:0080", "http://a.example");
	assert_canon("http://[::1]:80", "http://[::1]");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(wshs_origin_canon(bad[i], strlen(bad[i]), out), -EINVAL);
}

static void test_origin_allowed(void **state)
{
	static const char list[2][WSHS_ORIGIN_MAX + 1] = {"https://app.example",
							  "http://localhost:3000"};

	/* No Origin: not a browser page; tokens are never cookies. */
	assert_true(wshs_origin_allowed(NULL, "gw.example", "", NULL, 0));
	/* Same origin by Host, default ports equal to none. */
	assert_true(
	    wshs_origin_allowed("http://127.0.0.1:8080", "127.0.0.1:8080", "", NULL, 0));
	assert_true(
	    wshs_origin_allowed("https://gw.example", "gw.example:443", "", NULL, 0));
	assert_true(wshs_origin_allowed("https://GW.example", "gw.EXAMPLE", "", NULL, 0));
	assert_false(
	    wshs_origin_allowed("http://127.0.0.1:8081", "127.0.0.1:8080", "", NULL, 0));
	assert_false(
	    wshs_origin_allowed("https://evil.example", "gw.example", "", NULL, 0));
	assert_false(wshs_origin_allowed("https://evil.example", NULL, "", NULL, 0));
	assert_false(wshs_origin_allowed("null", "gw.example", "", NULL, 0));
	/* Same origin by --public-url (a proxy rewrote Host). */
	assert_true(wshs_origin_allowed("https://term.example", "10.0.0.5:8080",
					"wss://term.example/base", NULL, 0));
	assert_false(wshs_origin_allowed("https://term.example:8443", "10.0.0.5:8080",
					 "wss://term.example/base", NULL, 0));
	/* An allow-list replaces same-origin. */
	assert_true(
	    wshs_origin_allowed("https://app.example:443", "gw.example", "", list, 2));
	assert_true(
	    wshs_origin_allowed("http://localhost:3000", "gw.example", "", list, 2));
	assert_false(
	    wshs_origin_allowed("https://gw.example", "gw.example", "", list, 2));
	assert_false(
	    wshs_origin_allowed("https://app.example.evil", "gw.example", "", list, 2));
}

/* A list of WSHS_PROTOCOL_HEADER_MAX + 1 bytes whose element tok ends
   right at the bound and goes on with one more letter. */
static char *list_cut_after(const char *tok)
{
	size_t n = strlen(tok);
	char *s = malloc(WSHS_PROTOCOL_HEADER_MAX + 2);

	assert_non_null(s);
	memset(s, 'a', WSHS_PROTOCOL_HEADER_MAX);
	s[WSHS_PROTOCOL_HEADER_MAX - n - 1] = ',';
	memcpy(s + WSHS_PROTOCOL_HEADER_MAX - n, tok, n);
	s[WSHS_PROTOCOL_HEADER_MAX] = 's';
	s[WSHS_PROTOCOL_HEADER_MAX + 1] = '\0';
	return s;
}

/* Found by fuzz_wshandshake: the checks read only the first 16 bytes of
   the version and the first 16 KiB of a list, so what followed was never
   seen: "13", blanks, then garbage passed, and a list cut right after
   "websocket" accepted "websockets". The whole value counts. */
static void test_upgrade_whole_value(void **state)
{
	char *up = list_cut_after("websocket"), *conn = list_cut_after("upgrade");

	assert_non_null(wshs_check_upgrade("websocket", "Upgrade",
					   "13\t\t\t\t\t\t\t\t\t\t\t\t\t\t x"));
	assert_non_null(wshs_check_upgrade("websocket", "Upgrade", "13              8"));
	assert_null(wshs_check_upgrade("websocket", "Upgrade", " 13              "));
	assert_non_null(wshs_check_upgrade(up, "Upgrade", "13"));
	assert_non_null(wshs_check_upgrade("websocket", conn, "13"));
	free(up);
	free(conn);
}

#define PMD_BASE                                                                         \
	"permessage-deflate; server_no_context_takeover; client_no_context_takeover"

static void expect_deflate(const char *offer, const char *response)
{
	struct wshs_deflate d;

	wshs_parse_extensions(offer, &d);
	if (response == NULL) {
		assert_false(d.on);
		assert_string_equal(d.response, "");
	} else {
		assert_true(d.on);
		assert_string_equal(d.response, response);
	}
}

/* What real clients offer, each accepted with both no-context-takeover
   parameters (the client one added unasked, RFC 7692 7.1.1.2). */
static void test_deflate_clients(void **state)
{
	/* Chromium and Firefox */
	expect_deflate("permessage-deflate; client_max_window_bits", PMD_BASE);
	/* python websockets' default offer */
	expect_deflate("permessage-deflate; client_max_window_bits=12", PMD_BASE);
	expect_deflate("permessage-deflate", PMD_BASE);
	expect_deflate("PerMessage-Deflate;Client_No_Context_Takeover", PMD_BASE);
	expect_deflate("permessage-deflate; server_no_context_takeover; "
		       "client_no_context_takeover; client_max_window_bits=\"9\"",
		       PMD_BASE);
	expect_deflate("permessage-deflate; server_max_window_bits=15",
		       PMD_BASE "; server_max_window_bits=15");
	expect_deflate(NULL, NULL);
	expect_deflate("", NULL);
	expect_deflate("x-webkit-deflate-frame", NULL);
}

/* RFC 7692 5: an offer with an unknown, repeated or ill-valued parameter
   is declined, and the next offer is considered. */
static void test_deflate_declined(void **state)
{
	static const char *const bad[] = {
	    "permessage-deflate; foo",
	    "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
	    "permessage-deflate; client_max_window_bits=16",
	    "permessage-deflate; client_max_window_bits=7",
	    "permessage-deflate; client_max_window_bits=010",
	    "permessage-deflate; client_max_window_bits=",
	    "permessage-deflate; server_max_window_bits",
	    "permessage-deflate; server_max_window_bits=10",
	    "permessage-deflate; server_no_context_takeover=1",
	    "permessage-deflate; client_max_window_bits; client_max_window_bits",
	};
	char both[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		expect_deflate(bad[i], NULL);
		snprintf(both, sizeof(both), "%s, permessage-deflate", bad[i]);
		expect_deflate(both, PMD_BASE);
	}
	expect_deflate("x-foo; a=\"b, permessage-deflate\"", NULL);
	expect_deflate("x-foo; a=\"b,c\", permessage-deflate", PMD_BASE);
}

static void test_deflate_oversized(void **state)
{
	size_t n = WSHS_EXTENSIONS_HEADER_MAX + 1;
	char *v = malloc(n + 1);

	memset(v, ' ', n);
	memcpy(v, "permessage-deflate", 18);
	v[n] = '\0';
	expect_deflate(v, NULL);
	v[n - 1] = '\0';
	expect_deflate(v, PMD_BASE);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_accept_sample),
	    cmocka_unit_test(test_accept_bad_keys),
	    cmocka_unit_test(test_protocols),
	    cmocka_unit_test(test_protocols_refused),
	    cmocka_unit_test(test_token_bounds),
	    cmocka_unit_test(test_upgrade),
	    cmocka_unit_test(test_origin_canon),
	    cmocka_unit_test(test_origin_allowed),
	    cmocka_unit_test(test_upgrade_whole_value),
	    cmocka_unit_test(test_deflate_clients),
	    cmocka_unit_test(test_deflate_declined),
	    cmocka_unit_test(test_deflate_oversized),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
