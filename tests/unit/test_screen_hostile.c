/* unit: sidecar */
/* The screen model against output meant to break it. libvterm 0.1.4
   writes past a row for a character wider than the screen, which a
   program could make with combining marks libvterm counts two columns
   wide (U+302A..U+302F, U+3099..U+309A), or on a one-column screen with a
   broken UTF-8 sequence libvterm completes across an escape sequence; and
   it moves its cursor to column -1 for a C1 control sent as UTF-8 at the
   end of a line, where a tab stop set is written before its table. Each
   case crashed the sidecar or corrupted its heap before screen.c's
   filters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "screen.h"

static void cell_at(struct screen *s, int row, int col, VTermScreenCell *c)
{
	vterm_screen_get_cell(screen_vterm_screen(s), (VTermPos){row, col}, c);
}

static void cursor(struct screen *s, VTermPos *pos)
{
	vterm_state_get_cursorpos(screen_vterm_state(s), pos);
}

/* 'A', then n marks, then 'B'. */
static size_t marked_text(uint8_t *out, unsigned n, const uint8_t mark[3])
{
	size_t k = 0;

	out[k++] = 'A';
	for (unsigned i = 0; i < n; i++, k += 3)
		memcpy(out + k, mark, 3);
	out[k++] = 'B';
	return k;
}

/* The marks take no column, as on a terminal: A and B side by side. */
static void test_wide_marks_take_no_column(void **state)
{
	static const uint8_t marks[][3] = {{0xe3, 0x80, 0xaa},
					   {0xe3, 0x80, 0xaf},
					   {0xe3, 0x82, 0x99},
					   {0xe3, 0x82, 0x9a}};
	uint8_t text[1 + 45 * 3 + 1];
	VTermScreenCell c;
	VTermPos pos;

	(void)state;
	for (size_t m = 0; m < sizeof(marks) / sizeof(marks[0]); m++) {
		struct screen *s = screen_new(80, 24);
		size_t n = marked_text(text, 45, marks[m]);

		screen_feed(s, text, n);
		cell_at(s, 0, 0, &c);
		assert_int_equal(c.chars[0], 'A');
		cell_at(s, 0, 1, &c);
		assert_int_equal(c.chars[0], 'B');
		cursor(s, &pos);
		assert_int_equal(pos.row, 0);
		assert_int_equal(pos.col, 2);
		screen_free(s);
	}
}

/* A mark split by every possible write boundary, on a 2x2 screen. */
static void test_split_marks_do_not_crash(void **state)
{
	static const uint8_t mark[3] = {0xe3, 0x82, 0x99};
	uint8_t text[1 + 4 * 3 + 1];
	size_t n = marked_text(text, 4, mark);

	(void)state;
	for (size_t cut = 1; cut < n; cut++) {
		for (size_t cut2 = cut; cut2 < n; cut2++) {
			struct screen *s = screen_new(2, 2);
			VTermScreenCell c;

			screen_feed(s, text, cut);
			screen_feed(s, text + cut, cut2 - cut);
			screen_feed(s, text + cut2, n - cut2);
			cell_at(s, 0, 0, &c);
			assert_int_equal(c.chars[0], 'A');
			screen_free(s);
		}
	}
}

/* A broken lead byte, a CSI, then bytes that would complete it. */
static void test_one_column_broken_utf8(void **state)
{
	static const uint8_t seq[] = {0xec, 0x1b, '[', 0x9c};
	struct screen *s = screen_new(1, 1);

	(void)state;
	screen_feed(s, seq, sizeof(seq));
	screen_feed(s, (const uint8_t *)"\xbf\xbd", 2);
	screen_free(s);
}

/* A C1 control as UTF-8 in the last column, then a tab stop set (HTS):
   the cursor stays on the screen and the tab stop is where it is. */
static void test_c1_controls_are_dropped(void **state)
{
	static const char *const at_end[] = {"K>\xc2\x8c\033H", "K>\xc2\x80\033H",
					     "K>\xc2\x9f\033H"};
	VTermPos pos;

	(void)state;
	for (size_t i = 0; i < sizeof(at_end) / sizeof(at_end[0]); i++) {
		for (size_t cut = 1; cut < strlen(at_end[i]); cut++) {
			struct screen *s = screen_new(2, 3);

			screen_feed(s, (const uint8_t *)at_end[i], cut);
			screen_feed(s, (const uint8_t *)at_end[i] + cut,
				    strlen(at_end[i]) - cut);
			cursor(s, &pos);
			assert_true(pos.col >= 0 && pos.col < 2);
			screen_free(s);
		}
	}
}

static void feed_str(struct screen *s, const char *t)
{
	screen_feed(s, (const uint8_t *)t, strlen(t));
}

static void assert_cursor_on(struct screen *s, int cols, int rows)
{
	VTermPos pos;

	cursor(s, &pos);
	assert_true(pos.col >= 0 && pos.col < cols);
	assert_true(pos.row >= 0 && pos.row < rows);
}

/* A character's first byte, a control, then what would complete it: the
   control ends it (U+FFFD), as libvterm would otherwise make U+0097 of
   C2 05 97, a C1 control drawn at width -1. */
static void test_broken_utf8_across_a_control(void **state)
{
	struct screen *s = screen_new(2, 3);

	(void)state;
	feed_str(s, "K>\xc2\x05\x97");
	assert_cursor_on(s, 2, 3);
	screen_free(s);
}

/* Shrinking the rows with text below the cursor: libvterm scrolled the
   lines off the top and left its cursor at row -1. */
static void test_resize_keeps_the_cursor_on_screen(void **state)
{
	struct screen *s = screen_new(8, 6);

	(void)state;
	feed_str(s, "\033[3;1Hred\033[0H\n");
	screen_resize(s, 8, 1);
	assert_cursor_on(s, 8, 1);
	feed_str(s, "after");
	assert_cursor_on(s, 8, 1);
	screen_free(s);
}

/* A double-width line made on two columns, then one column: libvterm's
   back tab (CSI Z) went to column -1 on a line zero columns wide. Also
   when ESC # and 6 come in separate writes around the resize. */
static void test_one_column_double_width_line(void **state)
{
	struct screen *s = screen_new(2, 2);

	(void)state;
	feed_str(s, "\033#6A");
	screen_resize(s, 1, 1);
	feed_str(s, "\033[Z\033[gx");
	assert_cursor_on(s, 1, 1);
	screen_free(s);
	s = screen_new(2, 2);
	feed_str(s, "\033#");
	screen_resize(s, 1, 1);
	feed_str(s, "6Z\tx\033[g\033[Zk");
	assert_cursor_on(s, 1, 1);
	screen_free(s);
}

/* A CSI with more parameters than libvterm's array holds overflowed it;
   also when the CSI begins after intermediate bytes (ESC " [), which
   libvterm's parser still takes as a CSI. */
static void test_csi_with_many_parameters(void **state)
{
	char seq[128] = "\033\"\"[1";
	struct screen *s = screen_new(9, 1);

	(void)state;
	memset(seq + 5, ';', 60);
	strcpy(seq + 65, "l");
	feed_str(s, seq);
	memcpy(seq, "\033[1", 3);
	feed_str(s, seq + 0);
	feed_str(s, "x");
	assert_cursor_on(s, 9, 1);
	screen_free(s);
}

/* Margins set on 8x4, then the screen shrinks to one row; and a cursor
   saved low on the screen, restored after a shrink: libvterm scrolled with
   negative counts and restored the cursor outside the screen. An empty
   region (top at or past the bottom) is refused as the modes tracker
   does. */
static void test_margins_and_saved_cursor_after_a_shrink(void **state)
{
	struct screen *s = screen_new(8, 4);

	(void)state;
	feed_str(s, "\033[4;31r\033[5;5Hx\0337");
	screen_resize(s, 8, 1);
	feed_str(s, "\0338y\r\n\033[Mz\n\n");
	assert_cursor_on(s, 8, 1);
	feed_str(s, "\033[3r\n\033[Lw");
	assert_cursor_on(s, 8, 1);
	screen_free(s);
}

/* REP (CSI b) with no glyph since the start or a reset, or after one of
   width 0, made libvterm loop forever: one line of output froze the
   sidecar. After printable ASCII it still repeats. */
static void test_repeat_without_a_glyph_returns(void **state)
{
	struct screen *s = screen_new(80, 24);
	VTermPos pos;

	(void)state;
	feed_str(s, "\033[b");
	feed_str(s, "\033c\033[5b");
	feed_str(s, "a\xe2\x80\x8b\033[3b");
	feed_str(s, "\r\nab");
	feed_str(s, "\033[3b");
	cursor(s, &pos);
	assert_int_equal(pos.row, 1);
	assert_int_equal(pos.col, 5);
	screen_free(s);
}

/* Feeds t in two writes cut at each byte in turn, each to a fresh
   cols x rows screen, and checks the cursor and the last column of the
   first row after each. */
static void feed_cut_everywhere(const char *t, int cols, int rows, uint32_t last_cell)
{
	size_t n = strlen(t);

	for (size_t cut = 0; cut < n; cut++) {
		struct screen *s = screen_new((unsigned)cols, (unsigned)rows);
		VTermScreenCell c;

		screen_feed(s, (const uint8_t *)t, cut);
		screen_feed(s, (const uint8_t *)t + cut, n - cut);
		assert_cursor_on(s, cols, rows);
		cell_at(s, 0, cols - 1, &c);
		assert_int_equal(c.chars[0], last_cell);
		screen_free(s);
	}
}

/* A wide glyph, a string sequence (a window title, say) whose text the
   guard took for glyphs, then REP in the last column: libvterm repeated
   the wide glyph there and wrote past the row. Strings end at BEL or
   ST, and begin even after intermediate bytes (ESC # ], which fuzz_screen
   found). REP is ignored after the wide glyph, kept after ASCII. */
static void test_repeat_after_a_string_sequence(void **state)
{
	(void)state;
	feed_cut_everywhere("\xe4\xb8\xad\033]0;t\a\033[8G\033[b", 8, 2, 0);
	feed_cut_everywhere("\xe4\xb8\xad\033P1;t\033\\\033[8G\033[b", 8, 2, 0);
	feed_cut_everywhere("\xe4\xb8\xad\033#]x\033[8G\033[b", 8, 2, 0);
	feed_cut_everywhere("x\033]0;t\a\033[8G\033[b", 8, 2, 'x');
}

/* A C1 control as UTF-8 (dropped) inside a CSI sequence with too many
   parameters: the guard took the dropped character for the end of the
   sequence while libvterm, which never saw it, went on reading
   parameters past its array. */
static void test_csi_hiding_behind_a_dropped_character(void **state)
{
	char seq[128] = "\033[\xc2\x85";
	struct screen *s = screen_new(9, 1);

	(void)state;
	for (size_t i = 0; i < 40; i++)
		strcat(seq, "1;");
	strcat(seq, "7mx");
	feed_str(s, seq);
	assert_cursor_on(s, 9, 1);
	screen_free(s);
}

/* n bytes at the very end of a readable page, with an unreadable one
   after it: reading past them faults. */
static uint8_t *at_page_end(uint8_t *pages, size_t page, const char *t, size_t n)
{
	memcpy(pages + page - n, t, n);
	return pages + page - n;
}

/* In a string, ESC, a control (or NUL, DEL, BEL), then \: libvterm took
   it for ST and copied the string from before the start of the write, so
   strncpy read past the end of the output (valgrind saw the bytes after
   it; at a page's end it faults). Also with the ESC ending one write,
   and with ESC and \\ in writes of their own after the control: libvterm
   must get the two in one write. The string ends there and the control
   still acts. */
static void test_string_terminator_after_a_control(void **state)
{
	static const char controls[] = {0x00, 0x01, 0x07, 0x0a, 0x7f};
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	VTermScreenCell c;

	(void)state;
	assert_true(pages != MAP_FAILED);
	assert_int_equal(mprotect(pages + page, page, PROT_NONE), 0);
	for (size_t k = 0; k < sizeof(controls); k++) {
		char t[] = "\033]0;ab\033?\\";
		int row = controls[k] == 0x0a;

		for (int split = 0; split < 3; split++) {
			struct screen *s;

			if (split == 2 && controls[k] == 0x07)
				continue; /* BEL in the string ends it */
			s = screen_new(8, 2);
			t[7] = controls[k];
			if (split == 2) {
				/* The string and the control in a write, ESC
				   and \\ in two more. */
				char u[] = "\033]0;a?";

				u[6] = controls[k];
				screen_feed(s, (const uint8_t *)u, 7);
				feed_str(s, "\033");
				screen_feed(s, at_page_end(pages, page, "\\", 1), 1);
			} else if (split) {
				feed_str(s, "\033]0;ab\033");
				screen_feed(s, at_page_end(pages, page, t + 7, 2), 2);
			} else {
				screen_feed(s, at_page_end(pages, page, t, 9), 9);
			}
			feed_str(s, "x");
			cell_at(s, row, 0, &c);
			assert_int_equal(c.chars[0], 'x');
			screen_free(s);
		}
	}
	munmap(pages, 2 * page);
}

/* A double-width line on two columns, then one column: after_shrink saved
   the cursor while the line was zero columns wide, in column -1, where
   DECRC put it back. */
static void test_one_column_saved_cursor(void **state)
{
	struct screen *s = screen_new(2, 2);

	(void)state;
	feed_str(s, "\033#4");
	screen_resize(s, 1, 4);
	feed_str(s, "\0338");
	assert_cursor_on(s, 1, 4);
	feed_str(s, "x");
	assert_cursor_on(s, 1, 4);
	screen_free(s);
}

/* Row 0's first n characters as ASCII ('.' for a blank). */
static void row0(struct screen *s, char *out, int n)
{
	VTermScreenCell c;

	for (int col = 0; col < n; col++) {
		cell_at(s, 0, col, &c);
		out[col] = c.chars[0] ? (char)c.chars[0] : '.';
	}
	out[n] = 0;
}

/* A C1 control as UTF-8 (dropped) inside the CSI that enters the
   alternate screen: libvterm entered it, the modes tracker, which read
   the character and took it for the sequence's end, did not see the
   switch and kept no copy of the normal screen, so a snapshot lost it.
   Back on the normal screen, a screen made from the snapshot shows what
   the model does. */
static void test_hidden_switch_of_screens(void **state)
{
	struct screen *s = screen_new(8, 2), *again = screen_new(8, 2);
	struct buf snap = BUF_INIT;
	char a[9], b[9];

	(void)state;
	feed_str(s, "hello\033[?\xc2\x80"
		    "1049halt");
	assert_true(screen_altscreen(s));
	screen_snapshot(s, &snap);
	screen_feed(again, buf_head(&snap), buf_size(&snap));
	feed_str(s, "\033[?1049l");
	feed_str(again, "\033[?1049l");
	row0(s, a, 8);
	row0(again, b, 8);
	assert_string_equal(a, "hello...");
	assert_string_equal(b, a);
	buf_free(&snap);
	screen_free(again);
	screen_free(s);
}

/* A scroll region low on the screen, a character the output ends inside,
   then a shrink to one row: the character went to libvterm, broken, ahead
   of the repairs, and was drawn with the old margins; wrapping, it
   scrolled a region below the screen with negative counts (fuzz_screen).
   Also on one column, where the character is held as well. */
static void test_character_held_across_a_shrink(void **state)
{
	static const unsigned from[][2] = {{5, 4}, {1, 4}};
	static const unsigned to[][2] = {{2, 1}, {1, 1}};

	(void)state;
	for (size_t k = 0; k < 2; k++) {
		struct screen *s = screen_new(from[k][0], from[k][1]);

		feed_str(s, "\033[4r\xc3\xe9\xb9");
		screen_resize(s, to[k][0], to[k][1]);
		assert_cursor_on(s, (int)to[k][0], (int)to[k][1]);
		feed_str(s, "\x01xyz");
		assert_cursor_on(s, (int)to[k][0], (int)to[k][1]);
		screen_free(s);
	}
}

/* Random output at small sizes, where the edge cases live (the cases
   above were found this way). It runs without a crash under ASan;
   valgrind still sees libvterm's string-sequence copy read bytes it never
   set (the open defect docs/testing.md names). */
static void test_random_output_small_screens(void **state)
{
	static uint8_t buf[1 << 16];
	uint32_t x = 2463534242u;

	(void)state;
	for (unsigned cols = 1; cols <= 4; cols++) {
		for (unsigned rows = 1; rows <= 3; rows++) {
			struct screen *s = screen_new(cols, rows);
			struct buf snap = BUF_INIT;

			for (int round = 0; round < 24; round++) {
				size_t n = 1 + (x % sizeof(buf));

				for (size_t i = 0; i < n; i++) {
					x ^= x << 13;
					x ^= x >> 17;
					x ^= x << 5;
					buf[i] = (uint8_t)x;
				}
				screen_feed(s, buf, n);
			}
			screen_snapshot(s, &snap);
			assert_true(buf_size(&snap) > 0);
			buf_free(&snap);
			screen_free(s);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_wide_marks_take_no_column),
	    cmocka_unit_test(test_split_marks_do_not_crash),
	    cmocka_unit_test(test_one_column_broken_utf8),
	    cmocka_unit_test(test_c1_controls_are_dropped),
	    cmocka_unit_test(test_broken_utf8_across_a_control),
	    cmocka_unit_test(test_resize_keeps_the_cursor_on_screen),
	    cmocka_unit_test(test_one_column_double_width_line),
	    cmocka_unit_test(test_csi_with_many_parameters),
	    cmocka_unit_test(test_margins_and_saved_cursor_after_a_shrink),
	    cmocka_unit_test(test_repeat_without_a_glyph_returns),
	    cmocka_unit_test(test_repeat_after_a_string_sequence),
	    cmocka_unit_test(test_csi_hiding_behind_a_dropped_character),
	    cmocka_unit_test(test_string_terminator_after_a_control),
	    cmocka_unit_test(test_one_column_saved_cursor),
	    cmocka_unit_test(test_hidden_switch_of_screens),
	    cmocka_unit_test(test_character_held_across_a_shrink),
	    cmocka_unit_test(test_random_output_small_screens),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
