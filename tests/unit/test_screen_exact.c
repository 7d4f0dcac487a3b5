/* unit: sidecar */
/* screen_feed_tail against plain libvterm fed one byte at a time: after
   random bytes, full-screen redraws and long lines, every cell, the
   cursor and the pen must be the same, and so must they after a probe
   that reads state a snapshot does not show (a combining character joins
   the last glyph, a glyph at a pending wrap wraps). Unlike
   test_screen_tail.c, which compares snapshots of two screens, the
   reference here is libvterm alone, untouched by the modes tracker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <vterm.h>

#include "buf.h"
#include "screen.h"
#define HELP_SCREEN_SEED 2463534242u
#include "help_screen.h"

struct ref {
	VTerm *vt;
	VTermScreen *vs;
	VTermState *state;
};

static void ref_init(struct ref *r, unsigned cols, unsigned rows)
{
	r->vt = vterm_new((int)rows, (int)cols);
	vterm_set_utf8(r->vt, 1);
	r->vs = vterm_obtain_screen(r->vt);
	r->state = vterm_obtain_state(r->vt);
	vterm_screen_enable_altscreen(r->vs, 1);
	vterm_screen_reset(r->vs, 1);
}

static void ref_feed(struct ref *r, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		vterm_input_write(r->vt, (const char *)p + i, 1);
}

static bool attrs_eq(const VTermScreenCellAttrs *a, const VTermScreenCellAttrs *b)
{
	return a->bold == b->bold && a->underline == b->underline &&
	       a->italic == b->italic && a->blink == b->blink &&
	       a->reverse == b->reverse && a->strike == b->strike && a->font == b->font &&
	       a->dwl == b->dwl && a->dhl == b->dhl;
}

/* libvterm 0.1.4 leaves some cells holding whatever its stack held after
   certain broken UTF-8 in a write, so which junk two models show depends
   on their call stacks, not on what they were fed: any value past
   Unicode (but the wide-tail marker) matches any other. */
static bool junk(uint32_t c)
{
	return c > 0x10ffff && c != (uint32_t)-1;
}

static void assert_cell_eq(const VTermScreenCell *a, const VTermScreenCell *b, int row,
			   int col, const char *what)
{
	bool same = a->width == b->width && attrs_eq(&a->attrs, &b->attrs) &&
		    vterm_color_is_equal(&a->fg, &b->fg) &&
		    vterm_color_is_equal(&a->bg, &b->bg);

	for (int i = 0; same && i < VTERM_MAX_CHARS_PER_CELL; i++) {
		same = a->chars[i] == b->chars[i] ||
		       (junk(a->chars[i]) && junk(b->chars[i]));
		if (!a->chars[i])
			break;
	}

	if (!same)
		fail_msg("%s: cell %d,%d differs: U+%04X/%d against U+%04X/%d", what, row,
			 col, a->chars[0], a->width, b->chars[0], b->width);
}

/* Cells, cursor and pen of the model against the reference. */
static void assert_same(struct screen *s, struct ref *r, unsigned cols, unsigned rows,
			const char *what)
{
	const VTermScreen *vs = screen_vterm_screen(s);
	const VTermState *st = screen_vterm_state(s);
	VTermPos pos, a, b;

	for (pos.row = 0; pos.row < (int)rows; pos.row++)
		for (pos.col = 0; pos.col < (int)cols; pos.col++) {
			VTermScreenCell x, y;

			vterm_screen_get_cell(vs, pos, &x);
			vterm_screen_get_cell(r->vs, pos, &y);
			assert_cell_eq(&x, &y, pos.row, pos.col, what);
		}
	vterm_state_get_cursorpos(st, &a);
	vterm_state_get_cursorpos(r->state, &b);
	if (a.row != b.row || a.col != b.col)
		fail_msg("%s: cursor %d,%d against %d,%d", what, a.row, a.col, b.row,
			 b.col);
	for (VTermAttr at = VTERM_ATTR_BOLD; at <= VTERM_ATTR_BACKGROUND; at++) {
		VTermValue x, y;

		vterm_state_get_penattr(st, at, &x);
		vterm_state_get_penattr(r->state, at, &y);
		if (at == VTERM_ATTR_FOREGROUND || at == VTERM_ATTR_BACKGROUND)
			assert_true(vterm_color_is_equal(&x.color, &y.color));
		else
			assert_int_equal(x.number, y.number);
	}
}

/* What a Keyframe's sync does: feeds what was held back. */
static void feed_carry(struct screen *s, struct buf *carry)
{
	screen_feed_tail(s, buf_head(carry), buf_size(carry));
	buf_reset(carry);
}

/* Feeds in in chunks of `chunk` through screen_feed_tail, and to the
   reference: plain libvterm one byte at a time (plain), or else
   screen_feed in the same chunks, for input whose broken UTF-8 libvterm
   judges by where writes end. With hold, chunks go through
   screen_feed_tail_hold instead, and every fourth chunk the held bytes
   are fed and the two compared (a later reset could hide a difference).
   Compares, then probes both a byte at a time and compares again. */
static void check_held(const struct buf *in, unsigned cols, unsigned rows, size_t chunk,
		       bool plain, size_t hold, const char *what)
{
	struct buf carry = BUF_INIT;

	static const char probe[] = "\xcc\x81"
				    "Z\xcc\x81"
				    "\x1b[7mQ";
	struct screen *s = screen_new(cols, rows), *slow = NULL;
	struct ref r;

	if (plain) {
		ref_init(&r, cols, rows);
	} else {
		slow = screen_new(cols, rows);
		r.vt = NULL;
		r.vs = (VTermScreen *)screen_vterm_screen(slow);
		r.state = (VTermState *)screen_vterm_state(slow);
	}
	for (size_t off = 0, k = 0; off < buf_size(in); off += chunk, k++) {
		size_t n = buf_size(in) - off < chunk ? buf_size(in) - off : chunk;

		if (hold)
			screen_feed_carried(s, &carry, buf_head(in) + off, n, hold);
		else
			screen_feed_tail(s, buf_head(in) + off, n);
		/* What the tail keeps between batches is storage only: letting
		   it go now and then (a quiet tick) changes nothing. */
		if (k % 3 == 2)
			screen_trim(s);
		if (slow)
			screen_feed(slow, buf_head(in) + off, n);
		else
			ref_feed(&r, buf_head(in) + off, n);
		if (hold && k % 4 == 3) {
			feed_carry(s, &carry);
			assert_same(s, &r, cols, rows, what);
		}
	}
	feed_carry(s, &carry);
	buf_free(&carry);
	assert_same(s, &r, cols, rows, what);
	for (size_t i = 0; i < sizeof(probe) - 1; i++) {
		screen_feed_tail(s, (const uint8_t *)probe + i, 1);
		if (slow)
			screen_feed(slow, (const uint8_t *)probe + i, 1);
		else
			ref_feed(&r, (const uint8_t *)probe + i, 1);
	}
	assert_same(s, &r, cols, rows, what);
	if (plain)
		vterm_free(r.vt);
	screen_free(slow);
	screen_free(s);
}

/* check_held for both ways of feeding: each batch whole, and a flood's
   batches with up to 128 KiB held back (the feeder's FEEDER_HOLD_MAX). */
static void check(const struct buf *in, unsigned cols, unsigned rows, size_t chunk,
		  bool plain, const char *what)
{
	check_held(in, cols, rows, chunk, plain, 0, what);
	check_held(in, cols, rows, chunk, plain, 128u << 10, what);
}

/* Random bytes, with ESC and CSI made common enough to reach modes,
   scroll regions and the alternate screen. */
static void make_random(struct buf *out, size_t n)
{
	static const char *const seq[] = {"\x1b[", "\x1b[?", "\x1b", "\r\n", "\xc2\x9b"};

	while (buf_size(out) < n) {
		uint32_t r = next_rand();

		if (r % 64 == 0)
			buf_append_str(out, seq[(r >> 8) % 5]);
		else
			buf_append(out, &r, 3);
	}
}

static unsigned gcd(unsigned a, unsigned b)
{
	while (b) {
		unsigned t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* Full-screen repaints as a TUI makes them: every row addressed, colours
   every few cells, now and then a frame that misses one cell, ends on a
   pending wrap, or changes state between frames (bold without a reset,
   hidden cursor, auto-wrap off, a charset). */
static void make_tui(struct buf *out, unsigned cols, unsigned rows, size_t bytes)
{
	static const char *const between[] = {
	    "\x1b[1m", "\x1b[?25l", "\x1b[?7l", "\x1b[?7h", "\x1b(0", "\x1b(B", "\x1b[4m",
	    "\x1b[?1049h", "\x1b[?1049l", "\x1b[3;5r", "\x1b[r",
	    /* CSIs the redraw lexer must take apart exactly: a first
	       parameter of zeros (a reset) or led by one (not), empty
	       parameters, one of six digits, and more parameter bytes
	       than its 32-byte fast path looks at. */
	    "\x1b[00;1m", "\x1b[01;4m", "\x1b[;3H", "\x1b[2;H", "\x1b[;H",
	    "\x1b[000002;1H", "\x1b[1;4;7;38;5;100;48;5;200;38;5;101;48;5;201m",
	    "\x1b[0;1;4;7;38;5;100;48;5;200;38;5;101;48;5;201m"};

	/* Attributes an SGR sets or clears beside the colours: a pen that
	   depends on every SGR since the last reset. */
	static const char *const attrs[] = {"0;",  "1;",     "4;",  "7;",
					    "22;", "24;27;", "00;", "01;"};

	while (buf_size(out) < bytes) {
		unsigned skip_row = next_rand() % 5 == 0 ? next_rand() % rows : rows;
		bool full_last = next_rand() % 3 == 0, shuffled = next_rand() % 3 == 0;
		unsigned step = 1;

		/* A step prime to rows visits every row once. */
		while (shuffled && rows > 2 && (step < 2 || gcd(step, rows) != 1))
			step = 2 + next_rand() % (rows - 1);

		if (next_rand() % 40 == 0)
			buf_append_str(out, between[next_rand() % (sizeof(between) /
								   sizeof(between[0]))]);
		buf_append_str(out, next_rand() % 2 ? "\x1b[H" : "\x1b[1;1f");
		for (unsigned i = 1, r; i <= rows; i++) {
			/* Rows in order, or in a shuffled one: a glyph that wraps on
			   the last row scrolls rows already written. */
			r = shuffled ? 1 + (i * step) % rows : i;
			unsigned width =
			    cols - (r - 1 == skip_row) - (r == rows && !full_last);

			unsigned col = next_rand() % 7 ? 1 : 0;
			/* Now and then a third parameter, which libvterm ignores and
			   the redraw lexer must not read as part of the second. */
			const char *third = next_rand() % 40 ? "" : ";5";

			buf_appendf(out, "\x1b[%u;%u%sH", r, col, third);
			for (unsigned c = 0; c < width; c += 4) {
				unsigned k = width - c < 4 ? width - c : 4;

				buf_appendf(out, "\x1b[%s38;5;%u;48;5;%um",
					    next_rand() % 3 ? "" : attrs[next_rand() % 8],
					    next_rand() % 256, next_rand() % 256);
				for (unsigned j = 0; j < k; j++)
					buf_appendf(out, "%c",
						    'a' + (char)(next_rand() % 26));
				if (next_rand() % 50 == 0)
					buf_append_str(out, "\x1b[m");
			}
			if (next_rand() % 3 == 0)
				buf_append_str(out, "\x1b[0m");
		}
	}
}

static void make_long_lines(struct buf *out, size_t n)
{
	while (buf_size(out) < n) {
		for (uint32_t k = next_rand() % 20000; k--;)
			buf_append(out, "abcdefgh" + k % 8, 1);
		buf_append_str(out, next_rand() % 2 ? "\r\n" : "\x1b[32m");
	}
}

static const size_t chunks[] = {1, 100, 4096, 65536, 1 << 20};
static const unsigned sizes[][2] = {{120, 30}, {80, 24}, {20, 5}, {7, 3}, {2, 2}};

static void test_random_bytes(void **state)
{
	for (int round = 0; round < 10; round++) {
		struct buf in = BUF_INIT;

		make_random(&in, 20000 + next_rand() % 200000);
		check(&in, sizes[round % 5][0], sizes[round % 5][1],
		      chunks[1 + round % 4], false, "random");
		buf_free(&in);
	}
}

static void test_tui_redraws(void **state)
{
	static const size_t big[] = {65536, 1 << 20, 300000, 4096};

	for (int round = 0; round < 20; round++) {
		struct buf in = BUF_INIT;
		unsigned cols = sizes[round % 5][0], rows = sizes[round % 5][1];

		make_tui(&in, cols, rows, 100000 + next_rand() % 500000);
		check(&in, cols, rows, big[round % 4], true, "tui");
		/* Frames made for another width wrap, or leave cells alone. */
		check(&in, cols + 1, rows, big[(round + 1) % 4], true,
		      "tui, one column more");
		if (cols > 2) {
			check(&in, cols - 1, rows, big[(round + 2) % 4], true,
			      "tui, narrower");
			check(&in, cols - 1, rows + 1, big[(round + 3) % 4], true,
			      "tui, narrower and taller");
		}
		buf_free(&in);
	}
}

static void test_long_lines(void **state)
{
	for (int round = 0; round < 10; round++) {
		struct buf in = BUF_INIT;

		make_long_lines(&in, 100000 + next_rand() % 400000);
		check(&in, sizes[round % 5][0], sizes[round % 5][1],
		      chunks[1 + round % 4], true, "long lines");
		buf_free(&in);
	}
}

/* A restart at a RIS, then far more than the feeder holds back of
   output nothing else skips (cursor moves back and text over it, no line
   feed, no repaint): the batch is fed up to its last 128 KiB, those are
   held, and every byte must reach the model once, in order (a byte fed
   twice or lost moves every later glyph). */
static void test_held_after_reset(void **state)
{
	struct buf in = BUF_INIT;

	(void)state;
	/* A write of text that starts with the accented letter goes through
	   libvterm's own UTF-8 decoder, whose state at the RIS is then known
	   (modes_find_reset restarts at no RIS before that). */
	buf_append_str(&in, "junk\r\xc3\xa9\r\x1b"
			    "c\x1b"
			    "7");
	for (unsigned i = 0; buf_size(&in) < (300u << 10); i++)
		buf_appendf(&in, "%c%c%c\x1b[%uD", 'a' + i % 26, 'A' + i % 23,
			    '0' + i % 10, i % 3 ? 2 : 3);
	check(&in, 80, 24, 1 << 20, true, "held after a reset");
	check(&in, 80, 24, 200000, true, "held after a reset, two batches");
	buf_free(&in);
}

/* Only a flood holds anything back: a repaint of part of the screen,
   which nothing skips, is fed whole (a join right after it finds the
   model up to date), while full repaints hold back their last one. */
static void test_held_only_after_a_skip(void **state)
{
	struct buf partial = BUF_INIT, full = BUF_INIT;
	struct screen *s = screen_new(120, 30);
	size_t held;

	(void)state;
	/* Rows 1-20 of 30, over and over: 40 KB, no cell of rows 21-30. */
	for (unsigned f = 0; buf_size(&partial) < 40000; f++)
		for (unsigned r = 1; r <= 20; r++)
			buf_appendf(&partial, "\x1b[%u;1H\x1b[3%um%0120u", r, f % 8,
				    f * r);
	held =
	    screen_feed_tail_hold(s, buf_head(&partial), buf_size(&partial), 128u << 10);
	assert_int_equal(held, 0);
	for (unsigned f = 0; buf_size(&full) < 100000; f++)
		for (unsigned r = 1; r <= 30; r++)
			buf_appendf(&full, "\x1b[%u;1H\x1b[3%um%0120u", r, f % 8, f * r);
	held = screen_feed_tail_hold(s, buf_head(&full), buf_size(&full), 128u << 10);
	assert_true(held > 0 && held < buf_size(&full) / 2);
	screen_free(s);
	buf_free(&partial);
	buf_free(&full);
}

/* The redraw skip must happen: repaints of a 120x30 screen, a megabyte at
   a time, cost libvterm about the last screenful of each, not all. */
static void test_redraws_are_skipped(void **state)
{
	struct buf in = BUF_INIT;
	struct screen *s = screen_new(120, 30);
	size_t off, n;

	for (unsigned f = 0; buf_size(&in) < (8u << 20); f++) {
		buf_append_str(&in, "\x1b[H");
		for (unsigned r = 1; r <= 30; r++) {
			buf_appendf(&in, "\x1b[%u;1H", r);
			for (unsigned c = 0; c < 120; c += 6)
				buf_appendf(&in, "\x1b[38;5;%u;48;5;%um%06u",
					    (f + r + c) % 256, (f * 7 + c) % 256,
					    (f * 1000 + r * 120 + c) % 1000000);
			buf_append_str(&in, "\x1b[0m");
		}
	}
	for (off = 0; off < buf_size(&in); off += n) {
		n = buf_size(&in) - off < (1 << 20) ? buf_size(&in) - off : 1 << 20;
		screen_feed_tail(s, buf_head(&in) + off, n);
	}
	if (screen_vterm_bytes(s) > buf_size(&in) / 10)
		fail_msg("libvterm was fed %llu of %zu bytes",
			 (unsigned long long)screen_vterm_bytes(s), buf_size(&in));
	screen_free(s);
	buf_free(&in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_bytes),
	    cmocka_unit_test(test_tui_redraws),
	    cmocka_unit_test(test_long_lines),
	    cmocka_unit_test(test_redraws_are_skipped),
	    cmocka_unit_test(test_held_after_reset),
	    cmocka_unit_test(test_held_only_after_a_skip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
