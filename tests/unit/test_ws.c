/* unit: gateway */
/* ws: client frames are built here, masked as a browser would, and fed
   whole and one byte at a time; what the codec writes is parsed back as
   server frames. Also the shared wsframe_text encoding. */
#include "../../gateway/ws.c"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "buf.h"
#include "frames.h"
#include "help_pmd.h"

/* ---- what the test reads of ws.c, which it includes ---- */

/* True when wslay's state is released (between frames, nothing queued,
   not closing): what an idle connection costs is then struct ws only,
   but for the one connection whose state is kept for its next message. */
static bool ws_at_rest(const struct ws *ws)
{
	return ws->ctx == NULL || kept == ws;
}

/* The code of the close this side sent, or 1006 (none yet). */
static uint16_t ws_close_code_sent(const struct ws *ws)
{
	return ws->ctx ? wslay_event_get_status_code_sent(ws->ctx) : 0;
}

enum { OP_CONT = 0, OP_TEXT = 1, OP_BIN = 2, OP_CLOSE = 8, OP_PING = 9, OP_PONG = 10 };

static const uint8_t mask_key[4] = {0x37, 0xfa, 0x21, 0x3d};

/* What the callbacks saw. */
struct rec {
	struct ws *ws;
	struct buf out;
	struct buf text; /* the last text message */
	int ntext, nbinary, nclose, npong;
	size_t binary_len;
	uint16_t close_code;
	char reason[128];
	bool close_in_text; /* on_text answers with ws_send_close */
};

static void on_write(const uint8_t *p, size_t n, void *user)
{
	struct rec *r = user;

	assert_true(n > 0);
	buf_append(&r->out, p, n);
}

static void on_text(const char *p, size_t n, void *user)
{
	struct rec *r = user;

	r->ntext++;
	buf_reset(&r->text);
	buf_append(&r->text, p, n);
	if (r->close_in_text && !ws_close_sent(r->ws))
		assert_int_equal(ws_send_close(r->ws, 4400, "enough"), 0);
}

static void on_binary(size_t n, void *user)
{
	struct rec *r = user;

	r->nbinary++;
	r->binary_len = n;
}

static void on_close_frame(uint16_t code, const char *reason, size_t n, void *user)
{
	struct rec *r = user;

	r->nclose++;
	r->close_code = code;
	assert_true(n < sizeof(r->reason));
	memcpy(r->reason, reason, n);
	r->reason[n] = '\0';
}

static void on_pong(const uint8_t *p, size_t n, void *user)
{
	((struct rec *)user)->npong++;
}

static const struct ws_callbacks cbs = {on_write, on_text, on_binary, on_close_frame,
					on_pong};

static void rec_init(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->out);
	buf_init(&r->text);
	r->ws = ws_new(&cbs, r);
}

static void rec_free(struct rec *r)
{
	ws_free(r->ws);
	buf_free(&r->out);
	buf_free(&r->text);
}

/* Appends a client frame; rsv goes in bits 4..6 of the first byte. */
static void cframe_ex(struct buf *b, int fin, int rsv, int op, const void *p, size_t n,
		      bool masked)
{
	uint8_t h[14];
	size_t hl = 2, i;
	uint8_t *dst;

	h[0] = (uint8_t)((fin ? 0x80 : 0) | rsv << 4 | op);
	if (n < 126) {
		h[1] = (uint8_t)n;
	} else if (n < 65536) {
		h[1] = 126;
		h[2] = (uint8_t)(n >> 8);
		h[3] = (uint8_t)n;
		hl = 4;
	} else {
		h[1] = 127;
		for (i = 0; i < 8; i++)
			h[2 + i] = (uint8_t)((uint64_t)n >> (56 - 8 * i));
		hl = 10;
	}
	if (masked) {
		h[1] |= 0x80;
		memcpy(h + hl, mask_key, 4);
		hl += 4;
	}
	buf_append(b, h, hl);
	dst = buf_reserve(b, n + 1);
	for (i = 0; i < n; i++)
		dst[i] = ((const uint8_t *)p)[i] ^ (masked ? mask_key[i % 4] : 0);
	buf_commit(b, n);
}

static void cframe(struct buf *b, int fin, int op, const void *p, size_t n)
{
	cframe_ex(b, fin, 0, op, p, n, true);
}

static void cclose(struct buf *b, uint16_t code, const char *reason)
{
	uint8_t p[128];
	size_t n = strlen(reason);

	p[0] = (uint8_t)(code >> 8);
	p[1] = (uint8_t)code;
	memcpy(p + 2, reason, n);
	cframe(b, 1, OP_CLOSE, p, n + 2);
}

/* Feeds in whole or one byte at a time; returns the last ws_feed result. */
static int feed(struct rec *r, const struct buf *in, bool bytewise)
{
	size_t i, n = buf_size(in);
	int ret = 0;

	if (!bytewise)
		return ws_feed(r->ws, buf_head(in), n);
	for (i = 0; i < n; i++)
		ret = ws_feed(r->ws, buf_head(in) + i, 1);
	return ret;
}

/* Parses the server frame at *off of r->out; returns its opcode. */
static int sframe(const struct rec *r, size_t *off, const uint8_t **pl, size_t *n)
{
	const uint8_t *p = buf_head(&r->out) + *off;
	size_t left = buf_size(&r->out) - *off, hl = 2;
	uint64_t len;

	assert_true(left >= 2);
	assert_int_equal(p[0] & 0x70, 0);    /* no reserved bits */
	assert_int_equal(p[0] & 0x80, 0x80); /* never fragmented */
	assert_int_equal(p[1] & 0x80, 0);    /* servers do not mask */
	len = p[1] & 0x7f;
	if (len == 126) {
		len = (uint64_t)p[2] << 8 | p[3];
		hl = 4;
	} else if (len == 127) {
		len = 0;
		for (hl = 2; hl < 10; hl++)
			len = len << 8 | p[hl];
	}
	assert_true(left >= hl + len);
	*pl = p + hl;
	*n = (size_t)len;
	*off += hl + (size_t)len;
	return p[0] & 0x0f;
}

/* Asserts r->out is exactly one close frame with code (0: no payload). */
static void expect_only_close(const struct rec *r, uint16_t code)
{
	const uint8_t *pl;
	size_t off = 0, n;

	assert_int_equal(sframe(r, &off, &pl, &n), OP_CLOSE);
	assert_int_equal(off, buf_size(&r->out));
	if (code == 0) {
		assert_int_equal(n, 0);
		return;
	}
	assert_true(n >= 2);
	assert_int_equal(pl[0] << 8 | pl[1], code);
	assert_true(ws_close_sent(r->ws));
	assert_int_equal(ws_close_code_sent(r->ws), code);
}

/* Feeds in both ways, each on a fresh codec, expecting a lone close. */
static void expect_rejected(const struct buf *in, uint16_t code)
{
	int bytewise;

	for (bytewise = 0; bytewise < 2; bytewise++) {
		struct rec r;

		rec_init(&r);
		assert_int_equal(feed(&r, in, bytewise), -ESHUTDOWN);
		expect_only_close(&r, code);
		assert_int_equal(r.ntext, 0);
		assert_int_equal(r.nclose, 0);
		rec_free(&r);
	}
}

static void test_text(void **state)
{
	int bytewise;

	for (bytewise = 0; bytewise < 2; bytewise++) {
		struct buf in = BUF_INIT;
		struct rec r;

		rec_init(&r);
		cframe(&in, 1, OP_TEXT, "{\"op\":\"ping\"}", 13);
		cframe(&in, 1, OP_TEXT, "", 0);
		assert_int_equal(feed(&r, &in, bytewise), 0);
		assert_int_equal(r.ntext, 2);
		assert_int_equal(buf_size(&r.text), 0);
		assert_int_equal(buf_size(&r.out), 0);
		assert_false(ws_close_sent(r.ws));
		buf_reset(&in);
		cframe(&in, 1, OP_TEXT, "caf\xc3\xa9", 5);
		assert_int_equal(feed(&r, &in, bytewise), 0);
		assert_int_equal(r.ntext, 3);
		assert_memory_equal(buf_head(&r.text), "caf\xc3\xa9", 5);
		buf_free(&in);
		rec_free(&r);
	}
}

/* Three fragments with a ping between, and a UTF-8 sequence split across
   fragments: one message, and the pong goes out before it completes. */
static void test_fragmented(void **state)
{
	int bytewise;

	for (bytewise = 0; bytewise < 2; bytewise++) {
		struct buf in = BUF_INIT;
		const uint8_t *pl;
		size_t off = 0, n;
		struct rec r;

		rec_init(&r);
		cframe(&in, 0, OP_TEXT, "Hel\xc3", 4);
		cframe(&in, 1, OP_PING, "p1", 2);
		cframe(&in, 0, OP_CONT, "\xa9lo, ", 5);
		cframe(&in, 1, OP_CONT, "world", 5);
		assert_int_equal(feed(&r, &in, bytewise), 0);
		assert_int_equal(r.ntext, 1);
		assert_int_equal(buf_size(&r.text), 14);
		assert_memory_equal(buf_head(&r.text), "Hel\xc3\xa9lo, world", 14);
		assert_int_equal(sframe(&r, &off, &pl, &n), OP_PONG);
		assert_int_equal(n, 2);
		assert_memory_equal(pl, "p1", 2);
		assert_int_equal(off, buf_size(&r.out));
		buf_free(&in);
		rec_free(&r);
	}
}

static void test_binary(void **state)
{
	int bytewise;

	for (bytewise = 0; bytewise < 2; bytewise++) {
		struct buf in = BUF_INIT;
		struct rec r;

		rec_init(&r);
		cframe(&in, 0, OP_BIN, "\x00\xff", 2);
		cframe(&in, 1, OP_CONT, "\x01", 1);
		assert_int_equal(feed(&r, &in, bytewise), 0);
		assert_int_equal(r.nbinary, 1);
		assert_int_equal(r.binary_len, 3);
		assert_int_equal(r.ntext, 0);
		buf_free(&in);
		rec_free(&r);
	}
}

static void test_ping_pong(void **state)
{
	int bytewise;

	for (bytewise = 0; bytewise < 2; bytewise++) {
		struct buf in = BUF_INIT;
		const uint8_t *pl;
		size_t off = 0, n;
		struct rec r;

		rec_init(&r);
		cframe(&in, 1, OP_PING, "abc", 3);
		cframe(&in, 1, OP_PING, "", 0);
		cframe(&in, 1, OP_PONG, "x", 1);
		assert_int_equal(feed(&r, &in, bytewise), 0);
		assert_int_equal(sframe(&r, &off, &pl, &n), OP_PONG);
		assert_int_equal(n, 3);
		assert_memory_equal(pl, "abc", 3);
		assert_int_equal(sframe(&r, &off, &pl, &n), OP_PONG);
		assert_int_equal(n, 0);
		assert_int_equal(off, buf_size(&r.out));
		assert_int_equal(r.npong, 1);
		buf_free(&in);
		rec_free(&r);
	}
}

static void test_peer_close(void **state)
{
	int bytewise;

	for (bytewise = 0; bytewise < 2; bytewise++) {
		struct buf in = BUF_INIT;
		const uint8_t *pl;
		size_t off = 0, n;
		struct rec r;

		rec_init(&r);
		cclose(&in, 1001, "bye");
		cframe(&in, 1, OP_TEXT, "late", 4);
		assert_int_equal(feed(&r, &in, bytewise), -ESHUTDOWN);
		assert_int_equal(r.nclose, 1);
		assert_int_equal(r.close_code, 1001);
		assert_string_equal(r.reason, "bye");
		assert_int_equal(r.ntext, 0); /* nothing after the close */
		assert_true(ws_close_received(r.ws));
		assert_true(ws_close_sent(r.ws));
		/* The echo carries the peer's code. */
		assert_int_equal(sframe(&r, &off, &pl, &n), OP_CLOSE);
		assert_int_equal(pl[0] << 8 | pl[1], 1001);
		assert_int_equal(off, buf_size(&r.out));
		assert_int_equal(ws_send_ping(r.ws, NULL, 0), -ESHUTDOWN);
		assert_int_equal(ws_send_close(r.ws, 1000, NULL), -ESHUTDOWN);
		buf_free(&in);
		rec_free(&r);
	}
}

static void test_peer_close_empty(void **state)
{
	struct buf in = BUF_INIT;
	struct rec r;

	rec_init(&r);
	cframe(&in, 1, OP_CLOSE, "", 0);
	assert_int_equal(feed(&r, &in, false), -ESHUTDOWN);
	assert_int_equal(r.nclose, 1);
	assert_int_equal(r.close_code, WS_CLOSE_NO_STATUS);
	expect_only_close(&r, 0);
	buf_free(&in);
	rec_free(&r);
}

/* A close reason with multi-byte UTF-8 is accepted however the frame is
   cut: byte by byte, or straddling wslay's 4 KiB read buffer. */
static void test_close_reason_utf8(void **state)
{
	static const char pad[4090];
	int bytewise;

	for (bytewise = 0; bytewise < 2; bytewise++) {
		struct buf in = BUF_INIT;
		const uint8_t *pl;
		size_t off = 0, n;
		struct rec r;

		rec_init(&r);
		cframe(&in, 1, OP_TEXT, pad, sizeof(pad));
		cclose(&in, 1000, "d\xc3\xa9j\xc3\xa0 vu \xe2\x82\xac");
		assert_int_equal(feed(&r, &in, bytewise), -ESHUTDOWN);
		assert_int_equal(r.ntext, 1);
		assert_int_equal(r.nclose, 1);
		assert_string_equal(r.reason, "d\xc3\xa9j\xc3\xa0 vu \xe2\x82\xac");
		assert_int_equal(sframe(&r, &off, &pl, &n), OP_CLOSE);
		assert_int_equal(pl[0] << 8 | pl[1], 1000);
		assert_int_equal(off, buf_size(&r.out));
		buf_free(&in);
		rec_free(&r);
	}
}

/* The largest message passes, one byte more gets 1009, whether in one
   frame or fragments. */
static void test_max_message(void **state)
{
	char *big = malloc(WS_MAX_MESSAGE + 1);
	struct buf in = BUF_INIT;
	int bytewise;

	memset(big, 'a', WS_MAX_MESSAGE + 1);
	for (bytewise = 0; bytewise < 2; bytewise++) {
		struct rec r;

		rec_init(&r);
		buf_reset(&in);
		cframe(&in, 0, OP_TEXT, big, WS_MAX_MESSAGE - 10);
		cframe(&in, 1, OP_CONT, big, 10);
		assert_int_equal(feed(&r, &in, bytewise), 0);
		assert_int_equal(r.ntext, 1);
		assert_int_equal(buf_size(&r.text), WS_MAX_MESSAGE);
		rec_free(&r);
	}
	buf_reset(&in);
	cframe(&in, 1, OP_TEXT, big, WS_MAX_MESSAGE + 1);
	expect_rejected(&in, WS_CLOSE_TOO_BIG);
	buf_reset(&in);
	cframe(&in, 0, OP_TEXT, big, WS_MAX_MESSAGE / 2);
	cframe(&in, 1, OP_CONT, big, WS_MAX_MESSAGE / 2 + 1);
	expect_rejected(&in, WS_CLOSE_TOO_BIG);
	buf_free(&in);
	free(big);
}

static void test_bad_utf8(void **state)
{
	struct buf in = BUF_INIT;

	cframe(&in, 1, OP_TEXT, "ok\xff", 3);
	expect_rejected(&in, WS_CLOSE_INVALID_DATA);
	buf_reset(&in); /* truncated sequence at the end of the message */
	cframe(&in, 0, OP_TEXT, "ok", 2);
	cframe(&in, 1, OP_CONT, "\xc3", 1);
	expect_rejected(&in, WS_CLOSE_INVALID_DATA);
	buf_reset(&in); /* overlong encoding of '/' */
	cframe(&in, 1, OP_TEXT, "\xc0\xaf", 2);
	expect_rejected(&in, WS_CLOSE_INVALID_DATA);
	buf_reset(&in); /* UTF-16 surrogate */
	cframe(&in, 1, OP_TEXT, "\xed\xa0\x80", 3);
	expect_rejected(&in, WS_CLOSE_INVALID_DATA);
	buf_reset(&in); /* close reason */
	cclose(&in, 1000, "\xff");
	expect_rejected(&in, WS_CLOSE_INVALID_DATA);
	buf_free(&in);
}

static void test_protocol_errors(void **state)
{
	static const uint8_t nonminimal[] = {0x81, 0xfe, 0x00, 0x05, 1, 2, 3, 4};
	static const uint8_t nonminimal64[] = {0x81, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const uint8_t huge64[] = {0x81, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0};
	char long_ping[126];
	struct buf in = BUF_INIT;

	memset(long_ping, 'p', sizeof(long_ping));
	cframe_ex(&in, 1, 0, OP_TEXT, "hi", 2, false); /* unmasked */
	expect_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_reset(&in);
	cframe_ex(&in, 1, 4, OP_TEXT, "hi", 2, true); /* RSV1 */
	expect_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_reset(&in);
	cframe(&in, 1, 3, "hi", 2); /* reserved data opcode */
	expect_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_reset(&in);
	cframe(&in, 1, 0xb, "", 0); /* reserved control opcode */
	expect_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_reset(&in);
	cframe(&in, 1, OP_CONT, "hi", 2); /* continuation of nothing */
	expect_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_reset(&in);
	cframe(&in, 0, OP_TEXT, "a", 1); /* new message inside a fragmented one */
	cframe(&in, 1, OP_TEXT, "b", 1);
	expect_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_reset(&in);
	cframe(&in, 0, OP_PING, "", 0); /* fragmented control frame */
	expect_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_reset(&in);
	cframe(&in, 1, OP_PING, long_ping, sizeof(long_ping)); /* control > 125 */
	expect_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_reset(&in);
	cframe(&in, 1, OP_CLOSE, "\x03", 1); /* close payload of one byte */
	expect_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_reset(&in);
	cframe_ex(&in, 1, 0, OP_CLOSE, "\x03\xe8", 2, false); /* unmasked close */
	expect_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_reset(&in);
	cclose(&in, 1005, ""); /* a code no one may send */
	expect_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_reset(&in);
	buf_append(&in, nonminimal, sizeof(nonminimal));
	expect_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_reset(&in);
	buf_append(&in, nonminimal64, sizeof(nonminimal64));
	expect_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_reset(&in);
	buf_append(&in, huge64, sizeof(huge64));
	expect_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_free(&in);
}

/* Valid frames before a bad one are delivered; the close comes after any
   pong they caused. */
static void test_error_after_good(void **state)
{
	int bytewise;

	for (bytewise = 0; bytewise < 2; bytewise++) {
		struct buf in = BUF_INIT;
		const uint8_t *pl;
		size_t off = 0, n;
		struct rec r;

		rec_init(&r);
		cframe(&in, 1, OP_TEXT, "one", 3);
		cframe(&in, 1, OP_PING, "x", 1);
		cframe(&in, 0, OP_PING, "", 0);
		cframe(&in, 1, OP_TEXT, "two", 3);
		assert_int_equal(feed(&r, &in, bytewise), -ESHUTDOWN);
		assert_int_equal(r.ntext, 1);
		assert_int_equal(sframe(&r, &off, &pl, &n), OP_PONG);
		assert_int_equal(sframe(&r, &off, &pl, &n), OP_CLOSE);
		assert_int_equal(pl[0] << 8 | pl[1], WS_CLOSE_PROTOCOL);
		assert_int_equal(off, buf_size(&r.out));
		buf_free(&in);
		rec_free(&r);
	}
}

static void test_server_close_then_peer(void **state)
{
	struct buf in = BUF_INIT;
	const uint8_t *pl;
	size_t off = 0, n;
	struct rec r;

	rec_init(&r);
	assert_int_equal(ws_send_ping(r.ws, "hb", 2), 0);
	assert_int_equal(sframe(&r, &off, &pl, &n), OP_PING);
	assert_memory_equal(pl, "hb", 2);
	assert_int_equal(ws_send_ping(r.ws, NULL, 126), -EINVAL);
	assert_int_equal(ws_send_close(r.ws, 1004, NULL), -EINVAL);
	assert_int_equal(ws_send_close(r.ws, 0, "why"), -EINVAL);
	assert_false(ws_close_sent(r.ws));
	assert_int_equal(ws_send_close(r.ws, 4401, "token expired"), 0);
	assert_true(ws_close_sent(r.ws));
	assert_int_equal(sframe(&r, &off, &pl, &n), OP_CLOSE);
	assert_int_equal(n, 2 + 13);
	assert_int_equal(pl[0] << 8 | pl[1], 4401);
	assert_memory_equal(pl + 2, "token expired", 13);
	assert_int_equal(ws_send_close(r.ws, 1000, NULL), -ESHUTDOWN);
	assert_int_equal(ws_send_ping(r.ws, NULL, 0), -ESHUTDOWN);
	/* The peer still talks until its close, which gets no second echo. */
	cframe(&in, 1, OP_TEXT, "x", 1);
	cclose(&in, 4401, "");
	assert_int_equal(feed(&r, &in, false), -ESHUTDOWN);
	assert_int_equal(r.ntext, 1);
	assert_int_equal(r.nclose, 1);
	assert_true(ws_close_received(r.ws));
	assert_int_equal(off, buf_size(&r.out));
	buf_free(&in);
	rec_free(&r);
}

/* A close sent from inside a callback goes out when ws_feed returns; the
   peer's messages still arrive until its own close (RFC 6455 1.4). */
static void test_close_in_callback(void **state)
{
	struct buf in = BUF_INIT;
	struct rec r;

	rec_init(&r);
	r.close_in_text = true;
	cframe(&in, 1, OP_TEXT, "a", 1);
	cframe(&in, 1, OP_TEXT, "b", 1);
	assert_int_equal(feed(&r, &in, false), 0);
	assert_int_equal(r.ntext, 2); /* reading goes on until the peer closes */
	r.close_in_text = false;
	expect_only_close(&r, 4400);
	buf_free(&in);
	rec_free(&r);
}

static void check_header(size_t len, size_t hl, const uint8_t *want)
{
	char *payload = malloc(len + 1);
	struct wsframe *f;

	memset(payload, 'j', len);
	f = wsframe_text(payload, len);
	assert_int_equal(f->refs, 1);
	assert_int_equal(f->len, hl + len);
	assert_memory_equal(f->data, want, hl);
	assert_memory_equal(f->data + hl, payload, len);
	wsframe_unref(f);
	free(payload);
}

/* A connection that sends message after message keeps its wslay state
   (making it again was a quarter of a keystroke's work); one that comes
   to rest frees the state another kept, so at most one is held at rest,
   never one in use. */
static void test_one_state_kept_at_rest(void **state)
{
	struct buf in = BUF_INIT, partial = BUF_INIT;
	struct rec a, b;
	wslay_event_context_ptr first;

	rec_init(&a);
	rec_init(&b);
	cframe(&in, 1, OP_TEXT, "key", 3);
	assert_int_equal(feed(&a, &in, false), 0);
	first = a.ws->ctx;
	assert_non_null(first);
	assert_true(ws_at_rest(a.ws));
	assert_int_equal(feed(&a, &in, false), 0);
	assert_ptr_equal(a.ws->ctx, first); /* the same state, not made anew */
	assert_int_equal(a.ntext, 2);

	assert_int_equal(feed(&b, &in, false), 0); /* b at rest: a's state goes */
	assert_null(a.ws->ctx);
	assert_non_null(b.ws->ctx);

	/* a in the middle of a frame: b coming to rest must not free a's. */
	cframe(&partial, 1, OP_TEXT, "hello", 5);
	assert_int_equal(ws_feed(a.ws, buf_head(&partial), 3), 0);
	assert_false(ws_at_rest(a.ws));
	assert_int_equal(feed(&b, &in, false), 0);
	assert_non_null(a.ws->ctx);
	assert_int_equal(ws_feed(a.ws, buf_head(&partial) + 3, buf_size(&partial) - 3),
			 0);
	assert_int_equal(a.ntext, 3);
	assert_memory_equal(buf_head(&a.text), "hello", 5);
	assert_null(b.ws->ctx); /* a came to rest last */

	/* The kept connection goes away: nothing is freed twice after. */
	rec_free(&a);
	assert_int_equal(feed(&b, &in, false), 0);
	assert_true(ws_at_rest(b.ws));
	assert_int_equal(b.ntext, 3);
	buf_free(&in);
	buf_free(&partial);
	rec_free(&b);
}

/* wslay's state exists only while needed: an idle connection holds none
   (memory per idle connection), and what spans frames (a
   fragmented message, the message size limit) survives its release. */
static void test_rest_between_frames(void **state)
{
	struct buf in = BUF_INIT;
	const uint8_t *pl;
	size_t off = 0, n;
	char big[101];
	struct rec r;

	rec_init(&r);
	assert_true(ws_at_rest(r.ws));
	cframe(&in, 1, OP_TEXT, "hello", 5);
	assert_int_equal(ws_feed(r.ws, buf_head(&in), 3), 0);
	assert_false(ws_at_rest(r.ws)); /* inside a frame */
	assert_int_equal(ws_feed(r.ws, buf_head(&in) + 3, buf_size(&in) - 3), 0);
	assert_true(ws_at_rest(r.ws));
	assert_int_equal(r.ntext, 1);

	buf_reset(&in);
	cframe(&in, 0, OP_TEXT, "frag", 4);
	assert_int_equal(feed(&r, &in, false), 0);
	assert_false(ws_at_rest(r.ws)); /* inside a fragmented message */
	buf_reset(&in);
	cframe(&in, 1, OP_PING, "p", 1);
	assert_int_equal(feed(&r, &in, false), 0);
	assert_false(ws_at_rest(r.ws));
	buf_reset(&in);
	cframe(&in, 1, OP_CONT, "ment", 4);
	assert_int_equal(feed(&r, &in, false), 0);
	assert_true(ws_at_rest(r.ws));
	assert_int_equal(r.ntext, 2);
	assert_memory_equal(buf_head(&r.text), "fragment", 8);
	assert_int_equal(sframe(&r, &off, &pl, &n), OP_PONG);

	assert_int_equal(ws_send_ping(r.ws, "x", 1), 0);
	assert_true(ws_at_rest(r.ws)); /* written out at once */
	assert_int_equal(sframe(&r, &off, &pl, &n), OP_PING);

	ws_set_max_message(r.ws, 100);
	memset(big, 'a', sizeof(big));
	buf_reset(&in);
	cframe(&in, 1, OP_TEXT, big, sizeof(big));
	assert_int_equal(feed(&r, &in, false), -ESHUTDOWN);
	assert_int_equal(sframe(&r, &off, &pl, &n), OP_CLOSE);
	assert_int_equal(pl[0] << 8 | pl[1], WS_CLOSE_TOO_BIG);
	assert_false(ws_at_rest(r.ws)); /* closing: kept to the end */
	assert_true(ws_close_sent(r.ws));
	buf_free(&in);
	rec_free(&r);
}

/* ws.c is included, so GCC 12 inlines wsframe_unref's free into this test
   and, not knowing the count was 2, takes the reads of f->refs after it
   for uses after free. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif
static void test_wsframe(void **state)
{
	static const uint8_t h125[] = {0x81, 125};
	static const uint8_t h126[] = {0x81, 126, 0x00, 0x7e};
	static const uint8_t h65535[] = {0x81, 126, 0xff, 0xff};
	static const uint8_t h65536[] = {0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0};
	static const uint8_t h0[] = {0x81, 0};
	struct wsframe *f;

	check_header(0, 2, h0);
	check_header(125, 2, h125);
	check_header(126, 4, h126);
	check_header(65535, 4, h65535);
	check_header(65536, 10, h65536);
	f = wsframe_text("{}", 2);
	assert_ptr_equal(wsframe_ref(f), f);
	assert_int_equal(f->refs, 2);
	wsframe_unref(f);
	assert_int_equal(f->refs, 1);
	wsframe_unref(f);
	wsframe_unref(NULL);
	ws_free(NULL);
}
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic pop
#endif

/* Raw deflate of p as a client would send it (RFC 7692 7.2.1): the sync
   flush's 00 00 ff ff removed. */
static void deflate_raw(const void *p, size_t n, struct buf *out)
{
	z_stream z = {0};
	size_t bound;

	assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY),
			 Z_OK);
	bound = deflateBound(&z, n) + 16;
	z.next_in = (Bytef *)p;
	z.avail_in = (uInt)n;
	z.next_out = buf_reserve(out, bound);
	z.avail_out = (uInt)bound;
	assert_int_equal(deflate(&z, Z_SYNC_FLUSH), Z_OK);
	assert_int_equal(z.avail_in, 0);
	buf_commit(out, bound - z.avail_out - 4);
	deflateEnd(&z);
}

/* Inflates a server frame's payload the way a client does. */
static void inflate_raw(const uint8_t *p, size_t n, struct buf *out)
{
	z_stream z = {0};

	assert_int_equal(inflateInit2(&z, -15), Z_OK);
	assert_int_equal(help_pmd_inflate(&z, p, n, out), 0);
	inflateEnd(&z);
}

static void rec_init_deflate(struct rec *r)
{
	rec_init(r);
	ws_set_deflate(r->ws, true);
}

/* A compressed client message, whole and fragmented (RSV1 on the first
   frame only), inflated before on_text sees it; plain messages still
   pass on the same connection. */
static void test_deflate_receive(void **state)
{
	static const char msg[] =
	    "{\"type\":\"input\",\"data\":\"ls -lR /usr/share/doc\\r\"}";
	struct buf z = BUF_INIT, in = BUF_INIT;
	int bytewise;

	deflate_raw(msg, strlen(msg), &z);
	for (bytewise = 0; bytewise < 2; bytewise++) {
		struct rec r;

		rec_init_deflate(&r);
		buf_reset(&in);
		cframe_ex(&in, 1, 4, OP_TEXT, buf_head(&z), buf_size(&z), true);
		cframe_ex(&in, 0, 4, OP_TEXT, buf_head(&z), 3, true);
		cframe(&in, 1, OP_CONT, buf_head(&z) + 3, buf_size(&z) - 3);
		cframe(&in, 1, OP_TEXT, "plain", 5);
		cframe_ex(&in, 1, 4, OP_BIN, buf_head(&z), buf_size(&z), true);
		assert_int_equal(feed(&r, &in, bytewise), 0);
		assert_int_equal(r.ntext, 3);
		assert_int_equal(r.nbinary, 1);
		assert_int_equal(r.binary_len, strlen(msg));
		assert_int_equal(buf_size(&r.out), 0);
		assert_true(ws_at_rest(r.ws));
		rec_free(&r);
	}
	{
		struct rec r;

		rec_init_deflate(&r);
		buf_reset(&in);
		cframe_ex(&in, 1, 4, OP_TEXT, buf_head(&z), buf_size(&z), true);
		assert_int_equal(feed(&r, &in, false), 0);
		assert_int_equal(buf_size(&r.text), strlen(msg));
		assert_memory_equal(buf_head(&r.text), msg, strlen(msg));
		rec_free(&r);
	}
	/* Without the extension agreed RSV1 is a protocol error. */
	buf_reset(&in);
	cframe_ex(&in, 1, 4, OP_TEXT, buf_head(&z), buf_size(&z), true);
	expect_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_free(&in);
	buf_free(&z);
}

/* Feeds in to fresh deflate codecs, whole and bytewise, expecting a
   lone close with code and no message delivered. */
static void expect_deflate_rejected(const struct buf *in, uint16_t code)
{
	for (int bytewise = 0; bytewise < 2; bytewise++) {
		struct rec r;

		rec_init_deflate(&r);
		assert_int_equal(feed(&r, in, bytewise), -ESHUTDOWN);
		expect_only_close(&r, code);
		assert_int_equal(r.ntext + r.nbinary, 0);
		rec_free(&r);
	}
}

/* The inflated size counts against the message limit: a bomb (16 MiB of
   zeros in about 16 KiB) closes with 1009 after inflating no more than
   the limit and a step; exactly the limit passes. */
static void test_deflate_bomb(void **state)
{
	size_t big = 16u << 20;
	char *zeros = calloc(1, big);
	struct buf z = BUF_INIT, in = BUF_INIT;
	struct rec r;

	memset(zeros, 'a', big);
	deflate_raw(zeros, big, &z);
	assert_true(buf_size(&z) < big / 500);
	cframe_ex(&in, 1, 4, OP_TEXT, buf_head(&z), buf_size(&z), true);
	expect_deflate_rejected(&in, WS_CLOSE_TOO_BIG);

	buf_reset(&z);
	buf_reset(&in);
	deflate_raw(zeros, WS_MAX_MESSAGE + 1, &z);
	cframe_ex(&in, 1, 4, OP_TEXT, buf_head(&z), buf_size(&z), true);
	expect_deflate_rejected(&in, WS_CLOSE_TOO_BIG);

	buf_reset(&z);
	buf_reset(&in);
	deflate_raw(zeros, WS_MAX_MESSAGE, &z);
	cframe_ex(&in, 1, 4, OP_TEXT, buf_head(&z), buf_size(&z), true);
	rec_init_deflate(&r);
	assert_int_equal(feed(&r, &in, false), 0);
	assert_int_equal(r.ntext, 1);
	assert_int_equal(buf_size(&r.text), WS_MAX_MESSAGE);
	rec_free(&r);

	/* A lower limit holds the same way. */
	buf_reset(&z);
	buf_reset(&in);
	deflate_raw(zeros, 4097, &z);
	cframe_ex(&in, 1, 4, OP_TEXT, buf_head(&z), buf_size(&z), true);
	rec_init_deflate(&r);
	ws_set_max_message(r.ws, 4096);
	assert_int_equal(feed(&r, &in, false), -ESHUTDOWN);
	expect_only_close(&r, WS_CLOSE_TOO_BIG);
	rec_free(&r);
	buf_free(&z);
	buf_free(&in);
	free(zeros);
}

/* Data that does not inflate, inflated text that is not UTF-8 (1007),
   and RSV1 where RFC 7692 6 forbids it: control frames, continuations
   (1002). */
static void test_deflate_bad(void **state)
{
	static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x01};
	static const uint8_t bad_utf8[] = {'a', 0xc3, 0x28};
	struct buf z = BUF_INIT, in = BUF_INIT;

	cframe_ex(&in, 1, 4, OP_TEXT, junk, sizeof(junk), true);
	expect_deflate_rejected(&in, WS_CLOSE_INVALID_DATA);
	buf_reset(&in);
	deflate_raw(bad_utf8, sizeof(bad_utf8), &z);
	cframe_ex(&in, 1, 4, OP_TEXT, buf_head(&z), buf_size(&z), true);
	expect_deflate_rejected(&in, WS_CLOSE_INVALID_DATA);
	buf_reset(&in);
	cframe_ex(&in, 1, 4, OP_PING, "hb", 2, true);
	expect_deflate_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_reset(&in);
	cframe_ex(&in, 0, 4, OP_TEXT, buf_head(&z), 1, true);
	cframe_ex(&in, 1, 4, OP_CONT, buf_head(&z) + 1, buf_size(&z) - 1, true);
	expect_deflate_rejected(&in, WS_CLOSE_PROTOCOL);
	buf_free(&z);
	buf_free(&in);
}

/* The compressed variant: made once and kept with the frame, RSV1 set,
   inflating to the payload; small or incompressible payloads stay
   plain. */
static void test_wsframe_pick(void **state)
{
	struct buf text = BUF_INIT, back = BUF_INIT;
	struct wsframe *f, *d, *small, *noise;
	uint32_t x = 1;
	char rnd[4096];

	for (int i = 0; i < 200; i++)
		buf_appendf(&text, "-rw-r--r-- 1 root root %5d Jan  1 00:00 file%d.txt\n",
			    i * 37, i);
	f = wsframe_text((const char *)buf_head(&text), buf_size(&text));
	assert_ptr_equal(wsframe_pick(f, false), f);
	d = wsframe_pick(f, true);
	assert_ptr_not_equal(d, f);
	assert_ptr_equal(wsframe_pick(f, true), d);
	assert_int_equal(d->data[0], 0xc1); /* FIN, RSV1, text */
	assert_true(d->len < f->len / 3);
	inflate_raw(d->data + 4, d->len - 4, &back);
	assert_int_equal(d->data[1], 126);
	assert_int_equal((size_t)(d->data[2] << 8 | d->data[3]), d->len - 4);
	assert_int_equal(buf_size(&back), buf_size(&text));
	assert_memory_equal(buf_head(&back), buf_head(&text), buf_size(&text));
	/* A queue's reference keeps the variant past its frame. */
	wsframe_ref(d);
	wsframe_unref(f);
	assert_int_equal(d->refs, 1);
	wsframe_unref(d);

	small = wsframe_text("{\"type\":\"pong\"}", 15);
	assert_ptr_equal(wsframe_pick(small, true), small);
	wsframe_unref(small);
	for (size_t i = 0; i < sizeof(rnd); i++) {
		x = x * 1103515245u + 12345u;
		rnd[i] = (char)(33 + (x >> 16) % 90);
	}
	noise = wsframe_text(rnd, 100);
	assert_ptr_equal(wsframe_pick(noise, true), noise);
	wsframe_unref(noise);
	buf_free(&text);
	buf_free(&back);
}

/* An Output frame of n bytes, as the gateway sends it. */
static struct wsframe *output_frame(size_t n)
{
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__OutputFrame o = PTG__OUTPUT_FRAME__INIT;
	struct buf json = BUF_INIT;
	uint8_t *data = malloc(n);
	struct wsframe *w;

	for (size_t i = 0; i < n; i++)
		data[i] = (uint8_t) "total 48 drwxr-xr-x root\r\n"[i % 27];
	f.sequence = 1234567;
	f.ts_ms = 1765000000000;
	f.kind_case = PTG__FRAME__KIND_OUTPUT;
	f.output = &o;
	o.data.data = data;
	o.data.len = n;
	assert_int_equal(frames_session_frame(&f, NULL, 0, &json), 0);
	w = wsframe_text((const char *)buf_head(&json), buf_size(&json));
	buf_free(&json);
	free(data);
	return w;
}

/* A keystroke's echo goes plain to a client that agreed deflate:
   compressing its 200-odd bytes saved a few dozen and cost every echo
   about 30 us at p50 (docs/benchmarks.md). A screenful still goes
   compressed. */
static void test_echo_not_compressed(void **state)
{
	struct wsframe *echo = output_frame(1), *screen = output_frame(2000);

	assert_true(echo->len > 150); /* the JSON around one byte */
	assert_ptr_equal(wsframe_pick(echo, true), echo);
	assert_ptr_not_equal(wsframe_pick(screen, true), screen);
	wsframe_unref(echo);
	wsframe_unref(screen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text),
	    cmocka_unit_test(test_fragmented),
	    cmocka_unit_test(test_binary),
	    cmocka_unit_test(test_ping_pong),
	    cmocka_unit_test(test_peer_close),
	    cmocka_unit_test(test_peer_close_empty),
	    cmocka_unit_test(test_close_reason_utf8),
	    cmocka_unit_test(test_max_message),
	    cmocka_unit_test(test_bad_utf8),
	    cmocka_unit_test(test_protocol_errors),
	    cmocka_unit_test(test_error_after_good),
	    cmocka_unit_test(test_server_close_then_peer),
	    cmocka_unit_test(test_close_in_callback),
	    cmocka_unit_test(test_rest_between_frames),
	    cmocka_unit_test(test_one_state_kept_at_rest),
	    cmocka_unit_test(test_wsframe),
	    cmocka_unit_test(test_deflate_receive),
	    cmocka_unit_test(test_deflate_bomb),
	    cmocka_unit_test(test_deflate_bad),
	    cmocka_unit_test(test_wsframe_pick),
	    cmocka_unit_test(test_echo_not_compressed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
