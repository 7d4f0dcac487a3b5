/* unit: gateway */
/* pmd_deflate: every body inflates back to its input the way every
   client inflates a permessage-deflate message (the body, then 00 00 ff
   ff, with Z_SYNC_FLUSH), without ever ending the stream: a body whose
   last block is marked final is what Chromium refuses. Bodies follow
   each other in one inflater never reset (a client may keep its own),
   the stream's end falls at every bit of a byte, streams of many
   blocks keep their shape, and a body that would not fit is 0. */
#include <libdeflate.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "buf.h"
#include "help_pmd.h"
#include "pmd.h"

static uint32_t rnd_state = 12345;

static uint32_t rnd(void)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return rnd_state >> 8;
}

/* Text as a terminal prints it: kind 0 a listing, 1 a hex dump, 2
   random printable bytes; kind 3 is random bytes, which libdeflate
   stores uncompressed (a stored block's end is a byte boundary). */
static void make_text(struct buf *out, int kind, size_t n)
{
	struct buf lines = BUF_INIT, *b = &lines;

	while (buf_size(b) < n) {
		if (kind == 0)
			buf_appendf(b,
				    "-rw-r--r-- 1 root root %6u Jan %2u 00:00 f%u.txt\n",
				    rnd() % 100000, rnd() % 31 + 1, rnd() % 5000);
		else if (kind == 1)
			buf_appendf(b, "%08x  %02x %02x %02x %02x %02x %02x %02x %02x\n",
				    (unsigned)buf_size(b), rnd() & 255, rnd() & 255,
				    rnd() & 255, rnd() & 255, rnd() & 255, rnd() & 255,
				    rnd() & 255, rnd() & 255);
		else if (kind == 2)
			buf_appendf(b, "%c", (char)(33 + rnd() % 90));
		else
			buf_appendf(b, "%c", (char)(1 + rnd() % 255));
	}
	buf_reset(out);
	buf_append(out, buf_head(b), n);
	buf_free(b);
}

/* As a client does; asserts the stream did not end. */
static void client_inflate(z_stream *z, const uint8_t *body, size_t len, struct buf *out)
{
	assert_int_equal(help_pmd_inflate(z, body, len, out), 0);
}

/* Compresses text at level, checks it back through z; returns the
   body's length less libdeflate's own stream's (0 or 1). */
static size_t round_trip(z_stream *z, int level, const struct buf *text)
{
	size_t n = buf_size(text), cap = n + 64, len, plain;
	uint8_t *body = malloc(cap), *ref = malloc(cap);
	struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
	struct buf back = BUF_INIT;

	len = pmd_deflate(level, buf_head(text), n, body, cap);
	assert_true(len > 0);
	plain = libdeflate_deflate_compress(c, buf_head(text), n, ref, cap);
	assert_true(len == plain || len == plain + 1);
	client_inflate(z, body, len, &back);
	assert_int_equal(buf_size(&back), n);
	assert_memory_equal(buf_head(&back), buf_head(text), n);
	libdeflate_free_compressor(c);
	buf_free(&back);
	free(body);
	free(ref);
	return len - plain;
}

static void test_bodies_inflate_in_one_unreset_stream(void **state)
{
	struct buf text = BUF_INIT;
	z_stream z = {0};
	size_t grew = 0, runs = 0;

	(void)state;
	assert_int_equal(inflateInit2(&z, -15), Z_OK);
	for (size_t n = 1; n < 70000; n = n * 5 / 4 + 1) {
		for (int kind = 0; kind < 4; kind++) {
			make_text(&text, kind, n);
			grew += round_trip(&z, 6, &text);
			grew += round_trip(&z, 1, &text);
			runs += 2;
		}
	}
	/* The end fell both where three bits were left in its byte and where
	   they were not, so both shapes of the empty block were made. */
	assert_true(grew > 0 && grew < runs);
	inflateEnd(&z);
	buf_free(&text);
}

/* The number of blocks in a body (zlib's Z_BLOCK stops after each). */
static int blocks(const uint8_t *body, size_t len, size_t n)
{
	z_stream z = {0};
	uint8_t *sink = malloc(n + 1);
	int count = 0, r;

	assert_int_equal(inflateInit2(&z, -15), Z_OK);
	z.next_in = (Bytef *)body;
	z.avail_in = (uInt)len;
	z.next_out = sink;
	z.avail_out = (uInt)(n + 1);
	do {
		r = inflate(&z, Z_BLOCK);
		if (r == Z_OK && (z.data_type & 128))
			count++;
	} while (r == Z_OK && z.avail_in > 0);
	inflateEnd(&z);
	free(sink);
	return count;
}

static void test_many_blocks(void **state)
{
	struct buf text = BUF_INIT, part = BUF_INIT;
	size_t n, len;
	uint8_t *body;
	z_stream z = {0};
	struct buf back = BUF_INIT;

	(void)state;
	/* Statistics that change every 32 KiB make libdeflate start new
	   blocks; the last part, random bytes, ends it with a stored one. */
	for (int i = 0; i < 32; i++) {
		make_text(&part, i == 31 ? 3 : i % 3, 32768);
		buf_append(&text, buf_head(&part), buf_size(&part));
	}
	n = buf_size(&text);
	body = malloc(n);
	len = pmd_deflate(6, buf_head(&text), n, body, n);
	assert_true(len > 0);
	assert_true(blocks(body, len, n) > 4);
	assert_int_equal(inflateInit2(&z, -15), Z_OK);
	client_inflate(&z, body, len, &back);
	assert_int_equal(buf_size(&back), n);
	assert_memory_equal(buf_head(&back), buf_head(&text), n);
	inflateEnd(&z);
	free(body);
	buf_free(&text);
	buf_free(&part);
	buf_free(&back);
}

static void test_no_room_is_zero(void **state)
{
	struct buf text = BUF_INIT;
	uint8_t *body;
	size_t n = 4096, len;

	(void)state;
	/* Random bytes do not shrink: less room than the input is 0. */
	buf_reset(&text);
	for (size_t i = 0; i < n; i++) {
		uint8_t byte = (uint8_t)rnd();

		buf_append(&text, &byte, 1);
	}
	body = malloc(n + 64);
	assert_int_equal(pmd_deflate(6, buf_head(&text), n, body, n - 1), 0);
	/* A body never runs past its room: one byte less than it is 0
	   (libdeflate itself may want a few bytes of slack to say yes). */
	make_text(&text, 0, n);
	len = pmd_deflate(6, buf_head(&text), n, body, n);
	assert_true(len > 0 && len < n / 2);
	assert_int_equal(pmd_deflate(6, buf_head(&text), n, body, len + 16), len);
	assert_int_equal(pmd_deflate(6, buf_head(&text), n, body, len - 1), 0);
	free(body);
	buf_free(&text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bodies_inflate_in_one_unreset_stream),
	    cmocka_unit_test(test_many_blocks),
	    cmocka_unit_test(test_no_room_is_zero),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
