/* unit: sidecar */
/* The snapshot's row caches (screen_int.h, struct row_cache): a snapshot
   taken after every chunk of a stream, each reusing the rows libvterm did
   not damage since the one before, must be byte for byte the snapshot
   encoded afresh from every cell; and a keystroke must cost the next
   snapshot a row or two, not the screen. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "screen.h"
#include "screen_int.h"
#define HELP_SCREEN_SEED 3141592653u
#include "help_screen.h"

#define CSI "\033["

static void feed_str(struct screen *s, const char *p)
{
	screen_feed(s, (const uint8_t *)p, strlen(p));
}

/* Fails unless the cached snapshot is the one encoded from every cell. */
static void assert_cached_is_fresh(struct screen *s)
{
	struct buf cached = BUF_INIT, fresh = BUF_INIT;

	screen_snapshot(s, &cached);
	screen__snapshot_uncached(s, &fresh);
	assert_same_snapshots(&cached, &fresh);
}

/* The pieces a stream is made of: every way a program changes cells,
   the cursor, the pen or the geometry that a row's bytes depend on. */
static const char *const PIECES[] = {
    "x",
    "typed text ",
    "\r\n",
    "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n",
    "\b",
    CSI "31m",
    CSI "1;4;44m",
    CSI "38;5;200m",
    CSI "48;2;10;20;30m",
    CSI "m",
    CSI "7m",
    CSI "K",
    CSI "1K",
    CSI "J",
    CSI "2J",
    CSI "3X",
    CSI "2L",
    CSI "2M",
    CSI "3@",
    CSI "2P",
    CSI "5;10r",
    CSI "r",
    CSI "S",
    CSI "T",
    CSI "H",
    CSI "10;30H",
    CSI "3;1H",
    CSI "?6h",
    CSI "?6l",
    CSI "?69h" CSI "5;20s",
    CSI "?69l",
    CSI "?5h",
    CSI "?5l",
    CSI "?1049h",
    CSI "?1049l",
    CSI "?7l",
    CSI "?7h",
    CSI "4h",
    CSI "4l",
    "\xe4\xb8\xad\xe6\x96\x87",
    "e\xcc\x81",
    "\033c",
    "\033M",
    "\033D",
    "\t",
};

static void feed_piece(struct screen *s)
{
	const char *p = PIECES[next_rand() % (sizeof(PIECES) / sizeof(PIECES[0]))];

	if (next_rand() % 4 == 0) {
		/* A line that ends exactly at the margin: a pending wrap. */
		char line[128];

		memset(line, 'a' + (char)(next_rand() % 26), sizeof(line));
		feed_str(s, CSI "40G");
		screen_feed(s, (const uint8_t *)line, next_rand() % sizeof(line));
		return;
	}
	feed_str(s, p);
}

/* Random streams, snapshotted after every piece: the damage libvterm
   reports marks exactly the rows whose bytes can change. */
static void test_cached_rows_match_a_fresh_encoding(void **state)
{
	(void)state;
	for (int stream = 0; stream < 40; stream++) {
		struct screen *s =
		    screen_new(40 + next_rand() % 60, 5 + next_rand() % 20);

		for (int step = 0; step < 300; step++) {
			feed_piece(s);
			if (next_rand() % 50 == 0)
				screen_resize(s, 20 + next_rand() % 80,
					      3 + next_rand() % 25);
			if (next_rand() % 40 == 0)
				screen_trim(s);
			if (next_rand() % 3 == 0)
				assert_cached_is_fresh(s);
		}
		assert_cached_is_fresh(s);
		screen_free(s);
	}
}

/* The same through screen_feed_tail, which leaves out what scrolls off
   and may restart libvterm at a RIS. */
static void test_cached_rows_through_the_tail_feed(void **state)
{
	struct screen *s = screen_new(80, 24);
	struct buf chunk = BUF_INIT;

	(void)state;
	for (int round = 0; round < 30; round++) {
		buf_reset(&chunk);
		for (int i = 0; i < 200 + (int)(next_rand() % 400); i++)
			buf_appendf(&chunk, CSI "%um line %d of round %d\r\n",
				    31 + next_rand() % 7, i, round);
		if (round % 5 == 0) {
			for (int i = 0; i < 5000; i++)
				buf_append_str(&chunk, "noise ");
			buf_append_str(&chunk, "\033cafter a reset\r\n");
		}
		screen_feed_tail(s, buf_head(&chunk), buf_size(&chunk));
		assert_cached_is_fresh(s);
		feed_str(s, "k");
		assert_cached_is_fresh(s);
	}
	buf_free(&chunk);
	screen_free(s);
}

/* A full screen of text, then a key typed at the prompt on its last row:
   the next snapshot reads that row from libvterm and takes the other
   rows as they were. */
static void test_a_keystroke_reencodes_one_row(void **state)
{
	struct screen *s = screen_new(120, 30);
	struct row_caches *rc = screen__row_caches(s);
	struct buf snap = BUF_INIT;
	uint64_t before;

	(void)state;
	for (int i = 0; i < 40; i++)
		buf_appendf(&snap, CSI "3%dmline %d" CSI "m of a listing\r\n", i % 8, i);
	buf_append_str(&snap, "$ ");
	screen_feed(s, buf_head(&snap), buf_size(&snap));
	buf_reset(&snap);
	screen_snapshot(s, &snap);
	assert_int_equal(rc->encoded, 30);
	for (int key = 0; key < 10; key++) {
		before = rc->encoded;
		feed_str(s, "k");
		buf_reset(&snap);
		screen_snapshot(s, &snap);
		assert_int_equal(rc->encoded - before, 1);
	}
	/* A quiet tick lets the caches go: the next change's snapshot reads
	   every row. */
	screen_trim(s);
	assert_null(rc->v);
	before = rc->encoded;
	feed_str(s, "k");
	buf_reset(&snap);
	screen_snapshot(s, &snap);
	assert_int_equal(rc->encoded - before, 30);
	/* A scroll moves every row: all of them are read again. */
	before = rc->encoded;
	feed_str(s, "\r\n");
	buf_reset(&snap);
	screen_snapshot(s, &snap);
	assert_int_equal(rc->encoded - before, 30);
	assert_cached_is_fresh(s);
	buf_free(&snap);
	screen_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cached_rows_match_a_fresh_encoding),
	    cmocka_unit_test(test_cached_rows_through_the_tail_feed),
	    cmocka_unit_test(test_a_keystroke_reencodes_one_row),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
