/* unit: sidecar */
/* The screen model against output meant to break it: libvterm 0.1.4
   writes past a row for a character wider than the screen, which a
   program could make with combining marks libvterm counts two columns
   wide (U+302A..U+302F, U+3099..U+309A), or on a one-column screen with a
   broken UTF-8 sequence libvterm completes across an escape sequence.
   Each case crashed the sidecar before the filter in screen.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_wide_marks_take_no_column),
	    cmocka_unit_test(test_split_marks_do_not_crash),
	    cmocka_unit_test(test_one_column_broken_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
