/* unit: sidecar */
/* screen_feed_tail must leave the model exactly as screen_feed does: the
   same streams go through both, in the same chunks, and the snapshots
   (cells, cursor, pen and modes) must be byte for byte equal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "screen.h"
#define HELP_SCREEN_SEED 12345u
#include "help_screen.h"

/* Lines of plain text, with now and then a sequence that changes state a
   skipped prefix must not lose: colours, cursor moves, scroll regions,
   the alternate screen, UTF-8 and C1-looking bytes. */
static void make_stream(struct buf *out, size_t lines, int spice)
{
	static const char *const seq[] = {
	    "\x1b[31m",
	    "\x1b[0m",
	    "\x1b[1;44m",
	    "\x1b[5;10H",
	    "\x1b[2J",
	    "\x1b[3;20r",
	    "\x1b[r",
	    "\x1b[?1049h",
	    "\x1b[?1049l",
	    "\x1b[?7l",
	    "\x1b[?7h",
	    "h\xc3\xa9llo \xe4\xb8\xad",
	    "\xc2\x9b"
	    "31m",
	    "\x1b(0qqq\x1b(B",
	    "\x1b[38;2;1;2;3m",
	    "\t",
	    "\x08",
	    "partial-no-newline",
	};

	for (size_t l = 0; l < lines; l++) {
		if (spice && next_rand() % spice == 0)
			buf_append_str(out,
				       seq[next_rand() % (sizeof(seq) / sizeof(seq[0]))]);
		buf_appendf(
		    out, "line %zu %.*s", l, (int)(next_rand() % 150),
		    "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"
		    "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopq"
		    "rstuvwxyz0123456789");
		buf_append_str(out, next_rand() % 9 ? "\r\n" : "\n");
	}
}

static void compare(unsigned cols, unsigned rows, const struct buf *in, size_t chunk)
{
	struct screen *a = screen_new(cols, rows), *b = screen_new(cols, rows);

	for (size_t off = 0; off < buf_size(in); off += chunk) {
		size_t n = buf_size(in) - off < chunk ? buf_size(in) - off : chunk;
		screen_feed(a, buf_head(in) + off, n);
		screen_feed_tail(b, buf_head(in) + off, n);
	}
	assert_same_screen(a, b);
	screen_free(a);
	screen_free(b);
}

static void test_plain_flood(void **state)
{
	struct buf in = BUF_INIT;

	make_stream(&in, 5000, 0);
	compare(80, 24, &in, 65536);
	compare(120, 30, &in, 4096);
	compare(20, 5, &in, 777);
	buf_free(&in);
}

static void test_spiced_streams(void **state)
{
	static const size_t chunks[] = {1, 13, 500, 4096, 65536, 1 << 20};

	for (int round = 0; round < 40; round++) {
		struct buf in = BUF_INIT;
		make_stream(&in, 200 + next_rand() % 3000, 2 + (int)(next_rand() % 60));
		compare(10 + next_rand() % 150, 2 + next_rand() % 50, &in,
			chunks[next_rand() % (sizeof(chunks) / sizeof(chunks[0]))]);
		buf_free(&in);
	}
}

/* The skip must actually happen: a flood of lines costs libvterm a small
   part of a plain feed (counted in the bytes handed to it). */
static void test_flood_skips_unseen_lines(void **state)
{
	struct buf in = BUF_INIT;
	struct screen *s = screen_new(120, 30);

	make_stream(&in, 200000, 0);
	for (size_t off = 0; off < buf_size(&in); off += 1 << 20) {
		size_t n =
		    buf_size(&in) - off < (1 << 20) ? buf_size(&in) - off : 1 << 20;
		screen_feed_tail(s, buf_head(&in) + off, n);
	}
	/* About 17 MB of lines, fed a MiB at a time: only each chunk's last
	   screenful or so (2 x 30 rows of at most 160 bytes) may reach
	   libvterm, not the lines that scroll off unseen. */
	if (screen_vterm_bytes(s) > 17 * 2 * 30 * 160)
		fail_msg("libvterm was fed %llu of %zu bytes",
			 (unsigned long long)screen_vterm_bytes(s), buf_size(&in));
	screen_free(s);
	buf_free(&in);
}

/* Long runs with few or no line feeds, so the skip falls inside wrapped
   lines, mixed with every mode that changes where text lands: auto-wrap
   off, insert, newline mode, origin, scroll and side margins, the
   alternate screen, wide characters, and TUI-style redraws with cursor
   addressing and colours. */
static void make_wrapped_stream(struct buf *out, size_t pieces, int spice)
{
	static const char *const seq[] = {
	    "\x1b[?7l",
	    "\x1b[?7h",
	    "\x1b[4h",
	    "\x1b[4l",
	    "\x1b[20h",
	    "\x1b[20l",
	    "\x1b[?6h",
	    "\x1b[?6l",
	    "\x1b[3;20r",
	    "\x1b[r",
	    "\x1b[2;9r\x1b[?6h",
	    "\x1b[?69h\x1b[5;40s",
	    "\x1b[?69l",
	    "\x1b[5;10H",
	    "\x1b[2J",
	    "\x1b[H\x1b[J",
	    "\x1b[?1049h",
	    "\x1b[?1049l",
	    "\x1b[31;44m",
	    "\x1b[0m",
	    "\x1b[38;5;200m",
	    "\xe4\xb8\xad\xe6\x96\x87",
	    "\xc3\xa9",
	    "\xe4",
	    "\xcc\x81",
	    "e\xcc\x81",
	    "\t",
	    "\x08",
	    "\x1b[K",
	    "\x1b[3C",
	    "\x1b[2A",
	    "\x1b"
	    "7",
	    "\x1b"
	    "8",
	    "\x1b(0lqk\x1b(B",
	    "\x1b[5@",
	    "\x1b[2P",
	    "\x1b[L",
	    "\x1b[M",
	    "\x1bM",
	    "\x1b"
	    "D",
	    "\x1b"
	    "E",
	    "\x1b[1;1H\x1b[?7l",
	};
	static const char letters[] = "abcdefghijklmnopqrstuvwxyz0123456789 .,;:-_=+";

	for (size_t k = 0; k < pieces; k++) {
		uint32_t r = next_rand();

		if (spice && r % spice == 0) {
			buf_append_str(out,
				       seq[next_rand() % (sizeof(seq) / sizeof(seq[0]))]);
			continue;
		}
		if (r % 17 == 1) {
			/* One TUI frame: every row addressed, a colour every 5 cells. */
			for (unsigned row = 1; row <= 12; row++) {
				buf_appendf(out, "\x1b[%u;1H", row);
				for (unsigned c = 0; c < 30; c += 5)
					buf_appendf(out, "\x1b[3%u;4%um%05u",
						    (row + c) % 8, c % 8,
						    next_rand() % 100000);
			}
			buf_append_str(out, "\x1b[0m");
			continue;
		}
		for (uint32_t n = next_rand() % 3000; n--;)
			buf_append(out, &letters[next_rand() % (sizeof(letters) - 1)], 1);
		switch (next_rand() % 6) {
		case 0:
			buf_append_str(out, "\r\n");
			break;
		case 1:
			buf_append_str(out, "\n");
			break;
		case 2:
			buf_append_str(out, "\r");
			break;
		default:
			break;
		}
	}
}

static void test_wrapped_streams(void **state)
{
	static const size_t chunks[] = {1, 7, 500, 4096, 65536, 1 << 20};
	static const unsigned sizes[][2] = {{1, 1},   {1, 5},	 {7, 1},
					    {80, 24}, {120, 30}, {13, 3}};

	for (int round = 0; round < 40; round++) {
		struct buf in = BUF_INIT;
		unsigned cols, rows;

		make_wrapped_stream(&in, 100 + next_rand() % 600,
				    1 + (int)(next_rand() % 20));
		if (round < 12) {
			cols = sizes[round % 6][0];
			rows = sizes[round % 6][1];
		} else {
			cols = 1 + next_rand() % 160;
			rows = 1 + next_rand() % 50;
		}
		compare(cols, rows, &in,
			chunks[next_rand() % (sizeof(chunks) / sizeof(chunks[0]))]);
		buf_free(&in);
	}
}

/* Where the skip point falls relative to a pending wrap: runs of exact
   multiples of the width, one less and one more, ending in LF, CR or
   nothing, before and after LF-only lines. */
static void test_wrap_edges(void **state)
{
	static const char *const ends[] = {"", "\n", "\r", "\r\n", "\n\n", "x\n"};

	for (unsigned cols = 1; cols <= 9; cols += 4)
		for (int delta = -1; delta <= 1; delta++)
			for (size_t e = 0; e < sizeof(ends) / sizeof(ends[0]); e++) {
				struct buf in = BUF_INIT;

				for (int rep = 0; rep < 400; rep++) {
					for (int i = 0;
					     i < (int)cols * (1 + rep % 3) + delta; i++)
						buf_append_str(&in, "w");
					buf_append_str(&in, ends[(e + (size_t)rep) % 6]);
				}
				buf_append_str(&in, "\x1b[31mend");
				compare(cols, 4, &in, 1 << 20);
				compare(cols, 4, &in, 333);
				buf_free(&in);
			}
}

/* A line with no line feed at all (tr '\0' a < /dev/zero): libvterm gets
   a few screens' worth per megabyte, not the megabyte. */
static void test_long_line_is_skipped(void **state)
{
	struct screen *s = screen_new(120, 30), *ref = screen_new(120, 30);
	struct buf in = BUF_INIT;
	uint8_t *p = buf_reserve(&in, 4 << 20);

	memset(p, 'a', 4 << 20);
	buf_commit(&in, 4 << 20);
	for (size_t off = 0; off < buf_size(&in); off += 1 << 20)
		screen_feed_tail(s, buf_head(&in) + off, 1 << 20);
	if (screen_vterm_bytes(s) > 4 * 64 * 1024)
		fail_msg("libvterm was fed %llu of %zu bytes",
			 (unsigned long long)screen_vterm_bytes(s), buf_size(&in));
	screen_feed(ref, buf_head(&in), buf_size(&in));
	assert_same_screen(s, ref);
	buf_free(&in);
	screen_free(s);
	screen_free(ref);
}

/* A run of plain bytes just long enough to be skipped is found wherever
   it starts: after a lead of every length around the run's minimum
   (short runs of text, each ended by a BEL, as a TUI's stream is short
   runs between escape sequences), one line of exactly 4096 bytes, then
   BELs. libvterm gets the lead and about a screenful of the line, not
   the line. */
static void test_shortest_run_found_anywhere(void **state)
{
	static const size_t lead[] = {0, 1, 63, 4095, 4096, 4097, 8191, 10000};
	enum { RUN = 4096 };

	for (size_t i = 0; i < sizeof(lead) / sizeof(lead[0]); i++) {
		struct screen *s = screen_new(20, 5), *ref = screen_new(20, 5);
		struct buf in = BUF_INIT;
		uint8_t *p = buf_reserve(&in, lead[i] + RUN + 3);

		for (size_t k = 0; k < lead[i]; k++)
			p[k] = k % 7 == 6 || k + 1 == lead[i] ? 0x07 : 'x';
		memset(p + lead[i], 'a' + (int)i, RUN);
		memset(p + lead[i] + RUN, 0x07, 3);
		buf_commit(&in, lead[i] + RUN + 3);
		screen_feed_tail(s, buf_head(&in), buf_size(&in));
		if (screen_vterm_bytes(s) > lead[i] + 3 + 1024)
			fail_msg("lead %zu: libvterm was fed %llu of %zu bytes", lead[i],
				 (unsigned long long)screen_vterm_bytes(s),
				 buf_size(&in));
		screen_feed(ref, buf_head(&in), buf_size(&in));
		assert_same_screen(s, ref);
		buf_free(&in);
		screen_free(s);
		screen_free(ref);
	}
}

/* Each batch of a flood costs libvterm about one screenful (rows + 1
   line advances from the bottom row), not two: every advance fed is a
   scroll of the whole screen. Lines and a long line, in batches of the
   feeder's hand-over size. */
static void test_flood_feeds_one_screen_per_batch(void **state)
{
	enum { COLS = 120, ROWS = 30, LINE = 100, BATCH = 256 << 10, TOTAL = 4 << 20 };
	struct screen *lines = screen_new(COLS, ROWS), *longl = screen_new(COLS, ROWS);
	struct buf in = BUF_INIT, flat = BUF_INIT;
	const size_t batches = TOTAL / BATCH;

	while (buf_size(&in) < TOTAL)
		buf_appendf(&in, "%0*zu\r\n", LINE - 2, buf_size(&in));
	memset(buf_reserve(&flat, TOTAL), 'a', TOTAL);
	buf_commit(&flat, TOTAL);
	for (size_t off = 0; off < TOTAL; off += BATCH) {
		screen_feed_tail(lines, buf_head(&in) + off, BATCH);
		screen_feed_tail(longl, buf_head(&flat) + off, BATCH);
	}
	/* Two rows more than the rule: the line the batch ends in, and the
	   bytes before the first skip point. */
	if (screen_vterm_bytes(lines) > batches * (ROWS + 3) * LINE)
		fail_msg("lines: libvterm was fed %llu bytes in %zu batches",
			 (unsigned long long)screen_vterm_bytes(lines), batches);
	if (screen_vterm_bytes(longl) > batches * (ROWS + 3) * COLS)
		fail_msg("long line: libvterm was fed %llu bytes in %zu batches",
			 (unsigned long long)screen_vterm_bytes(longl), batches);
	buf_free(&in);
	buf_free(&flat);
	screen_free(lines);
	screen_free(longl);
}

/* The stretches of test_skip_from_every_row: CR LF lines (left out by
   whole lines), CR text LF lines and one wrapped run (left out inside a
   run of plain bytes). Lines are half the width, so a row the cursor
   only moved onto keeps what was right of them. */
enum stretch { CRLF_LINES, RUN_LINES, WRAPPED_RUN, STRETCHES };

static void append_rep(struct buf *in, char c, unsigned n)
{
	memset(buf_reserve(in, n), c, n);
	buf_commit(in, n);
}

static void append_stretch(struct buf *in, enum stretch kind, unsigned cols, unsigned adv)
{
	for (unsigned a = 0; a < adv; a++) {
		if (kind == RUN_LINES)
			buf_append_str(in, "\r");
		append_rep(in, (char)('a' + a % 26),
			   kind == WRAPPED_RUN ? cols : cols / 2);
		if (kind != WRAPPED_RUN)
			buf_append_str(in, kind == CRLF_LINES ? "\r\n" : "\n");
	}
	if (kind == WRAPPED_RUN)
		append_rep(in, 'h', cols / 2);
}

/* A stretch left out from a cursor that is not on the bottom row: the
   screen is full of text, the cursor starts on every row, and the
   stretch holds from rows - 1 to 2 * rows + 3 line advances, so every
   way of standing in for it is taken: from the bottom row, from where
   the cursor is, and feeding it whole. A run is only looked at from
   4 KiB on, hence the wide screens. */
static void test_skip_from_every_row(void **state)
{
	static const unsigned sizes[][2] = {
	    {7, 4}, {20, 6}, {3, 1}, {2000, 3}, {1500, 6}};

	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		unsigned cols = sizes[z][0], rows = sizes[z][1];

		for (unsigned row = 1; row <= rows; row++)
			for (unsigned adv = rows - 1; adv <= 2 * rows + 3; adv++)
				for (int kind = 0; kind < STRETCHES; kind++) {
					struct buf in = BUF_INIT;

					for (unsigned l = 0; l < rows; l++) {
						buf_append_str(&in, "\r\n");
						append_rep(&in, 'B', cols - 1);
					}
					buf_appendf(&in, "\x1b[%u;2H", row);
					append_stretch(&in, (enum stretch)kind, cols,
						       adv);
					buf_append_str(&in, "\x1b[31mend");
					compare(cols, rows, &in, 1 << 20);
					compare(cols, rows, &in, 1000);
					buf_free(&in);
				}
	}
}

/* libvterm 0.1.4 crashed placing a wide character on a one-column
   screen (a controller may resize to 1 column; any program could then
   take the sidecar down with one CJK character). */
static void test_one_column_wide_char(void **state)
{
	static const char wide[] = "\xe4\xb8\xad\xf0\x9f\x98\x80x\xe4\xb8";
	struct screen *s = screen_new(1, 3);
	struct buf snap = BUF_INIT;

	for (int i = 0; i < 5; i++)
		screen_feed(s, (const uint8_t *)wide, sizeof(wide) - 1);
	screen_feed(s, (const uint8_t *)"\xad", 1); /* completes the held-back one */
	screen_resize(s, 4, 3);
	screen_feed(s, (const uint8_t *)wide, sizeof(wide) - 1);
	screen_resize(s, 1, 2);
	screen_feed(s, (const uint8_t *)"\xad\xe6\x96\x87", 4);
	screen_snapshot(s, &snap);
	assert_true(buf_size(&snap) > 0);
	buf_free(&snap);
	screen_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain_flood),
	    cmocka_unit_test(test_spiced_streams),
	    cmocka_unit_test(test_flood_skips_unseen_lines),
	    cmocka_unit_test(test_wrapped_streams),
	    cmocka_unit_test(test_wrap_edges),
	    cmocka_unit_test(test_long_line_is_skipped),
	    cmocka_unit_test(test_shortest_run_found_anywhere),
	    cmocka_unit_test(test_flood_feeds_one_screen_per_batch),
	    cmocka_unit_test(test_skip_from_every_row),
	    cmocka_unit_test(test_one_column_wide_char),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
