/* unit: sidecar */
/* screen_feed_tail restarts libvterm from the last RIS (ESC c) it can:
   the model must end up exactly as screen_feed leaves it, fed the same
   chunks, for random bytes cut anywhere (inside escape sequences and
   UTF-8 characters), and for the state RIS does not reset in libvterm
   0.1.4: the saved cursor, a half-read UTF-8 character, the glyph a
   combining character joins, the alternate screen. After the snapshot
   comparison, a probe reads that hidden state back. */
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
#define HELP_SCREEN_SEED 88172645u
#include "help_screen.h"

/* libvterm 0.1.4 leaves some cells holding whatever its stack held after
   certain broken UTF-8 in a write: any value past Unicode (but the
   wide-tail marker) matches any other, as in test_screen_exact.c. */
static bool junk(uint32_t c)
{
	return c > 0x10ffff && c != (uint32_t)-1;
}

/* The characters of a cell, up to the first 0: libvterm leaves what
   follows it alone. */
static bool chars_eq(const VTermScreenCell *x, const VTermScreenCell *y)
{
	for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL; i++) {
		if (x->chars[i] != y->chars[i] &&
		    !(junk(x->chars[i]) && junk(y->chars[i])))
			return false;
		if (!x->chars[i])
			break;
	}
	return true;
}

static void assert_cells_eq(struct screen *a, struct screen *b, const char *what)
{
	const VTermScreen *va = screen_vterm_screen(a), *vb = screen_vterm_screen(b);
	unsigned cols, rows;
	VTermPos pos, ca, cb;

	screen_size(a, &cols, &rows);
	for (pos.row = 0; pos.row < (int)rows; pos.row++)
		for (pos.col = 0; pos.col < (int)cols; pos.col++) {
			VTermScreenCell x, y;

			vterm_screen_get_cell(va, pos, &x);
			vterm_screen_get_cell(vb, pos, &y);
			if (x.width != y.width || !chars_eq(&x, &y) ||
			    !vterm_color_is_equal(&x.fg, &y.fg) ||
			    !vterm_color_is_equal(&x.bg, &y.bg))
				fail_msg("%s: cell %d,%d: U+%04X/%d against U+%04X/%d",
					 what, pos.row, pos.col, x.chars[0], x.width,
					 y.chars[0], y.width);
		}
	vterm_state_get_cursorpos(screen_vterm_state(a), &ca);
	vterm_state_get_cursorpos(screen_vterm_state(b), &cb);
	if (ca.row != cb.row || ca.col != cb.col)
		fail_msg("%s: cursor %d,%d against %d,%d", what, ca.row, ca.col, cb.row,
			 cb.col);
}

static void assert_same(struct screen *a, struct screen *b, const char *what)
{
	struct buf sa = BUF_INIT, sb = BUF_INIT;

	assert_cells_eq(a, b, what);
	screen_snapshot(a, &sa);
	screen_snapshot(b, &sb);
	if (buf_size(&sa) != buf_size(&sb) ||
	    memcmp(buf_head(&sa), buf_head(&sb), buf_size(&sa)))
		fail_msg("%s: snapshots differ (%zu and %zu bytes)", what, buf_size(&sa),
			 buf_size(&sb));
	buf_free(&sa);
	buf_free(&sb);
}

/* Feeds in to screen_feed_tail and to screen_feed in the same chunks
   (libvterm judges broken UTF-8 by where writes end, so the chunks are
   part of the input), compares, then probes hidden state: the end of a
   half-read character, a combining character, the saved cursor, leaving
   the alternate screen. Returns the bytes libvterm was spared. */
static uint64_t check(const struct buf *in, unsigned cols, unsigned rows,
		      const size_t *chunks, size_t nchunks, const char *what)
{
	static const char *const probe[] = {"\xb8\xad",
					    "\xcc\x81",
					    "Z\xcc\x81",
					    "\x1b"
					    "8",
					    "Q",
					    "\x1b[?1049l",
					    "R",
					    "\x1b[u",
					    "S"};
	struct screen *fast = screen_new(cols, rows), *slow = screen_new(cols, rows);
	uint64_t spared;
	size_t off = 0, k = 0;

	while (off < buf_size(in)) {
		size_t n = chunks[k++ % nchunks];

		n = buf_size(in) - off < n ? buf_size(in) - off : n;
		screen_feed_tail(fast, buf_head(in) + off, n);
		screen_feed(slow, buf_head(in) + off, n);
		off += n;
	}
	assert_same(fast, slow, what);
	for (size_t i = 0; i < sizeof(probe) / sizeof(probe[0]); i++) {
		screen_feed_tail(fast, (const uint8_t *)probe[i], strlen(probe[i]));
		screen_feed(slow, (const uint8_t *)probe[i], strlen(probe[i]));
		assert_same(fast, slow, what);
	}
	spared = screen_vterm_bytes(slow) - screen_vterm_bytes(fast);
	screen_free(fast);
	screen_free(slow);
	return spared;
}

static void make_random(struct buf *out, size_t n)
{
	while (buf_size(out) < n) {
		uint32_t r = next_rand();

		buf_append(out, &r, 4);
	}
}

/* Random bytes with what a restart must get right made common: RIS,
   DECSC and DECRC, half-read and combining characters, NUL and DEL
   inside text, the alternate screen, strings RIS ends, single shifts. */
static void make_spiced(struct buf *out, size_t n, unsigned every)
{
	static const char *const spice[] = {
	    "\x1b"
	    "c",
	    "\x1b"
	    "c",
	    "\x1b"
	    "c",
	    "\x1b"
	    "7",
	    "\x1b"
	    "8",
	    "\x1b[u",
	    "\x1b[s",
	    "\xe4",
	    "\xe4\xb8",
	    "\xcc\x81",
	    "\xf8",
	    "\xfe",
	    "\x7f",
	    "\x00",
	    "\x1b[?1049h",
	    "\x1b[?1049l",
	    "\x1b[?1047h",
	    "\x1b]0;title",
	    "\x1bP",
	    "\x1bN",
	    "\x1b\xe4"
	    "c",
	    "\x1b\x0a"
	    "c",
	    "\x1b(0",
	    "\x0e",
	    "\x1b[5;10H",
	    "\x1b[31;44m",
	    "\r\n",
	    "AAAA",
	};

	while (buf_size(out) < n) {
		uint32_t r = next_rand();

		if (r % every == 0) {
			const char *s =
			    spice[(r >> 8) % (sizeof(spice) / sizeof(spice[0]))];

			/* The NUL spice is one byte long. */
			buf_append(out, s, *s ? strlen(s) : 1);
		} else {
			buf_append(out, &r, 1 + (r >> 30));
		}
	}
}

static const unsigned sizes[][2] = {{120, 30}, {80, 24}, {20, 5}, {7, 3}};

static void test_random_bytes(void **state)
{
	static const size_t chunks[][3] = {
	    {1 << 20, 1 << 20, 1 << 20},
	    {65536, 65536, 65536},
	    {4097, 70001, 9999},
	    {300000, 5000, 123457},
	};

	for (int round = 0; round < 8; round++) {
		struct buf in = BUF_INIT;

		make_random(&in, 500000 + next_rand() % 1500000);
		check(&in, sizes[round % 4][0], sizes[round % 4][1], chunks[round % 4], 3,
		      "random");
		buf_free(&in);
	}
}

static void test_spiced_random(void **state)
{
	static const size_t chunks[][3] = {
	    {1 << 20, 1 << 20, 1 << 20},
	    {65536, 8191, 65536},
	    {4097, 70001, 9999},
	    {300000, 5000, 123457},
	};

	for (int round = 0; round < 24; round++) {
		struct buf in = BUF_INIT;

		make_spiced(&in, 200000 + next_rand() % 600000, round % 3 ? 40 : 400);
		check(&in, sizes[round % 4][0], sizes[round % 4][1],
		      chunks[(round / 4) % 4], 3, "spiced random");
		buf_free(&in);
	}
}

/* Each of the state RIS keeps, set just before a RIS and used after it,
   in one chunk: the restart must not be taken, or must carry it. */
static void test_state_ris_keeps(void **state)
{
	static const char *const cases[][2] = {
	    /* before the RIS, after it */
	    {"\x1b[5;9H\x1b"
	     "7",
	     "X\x1b"
	     "8Y\x1b"
	     "7"}, /* the saved cursor */
	    {"\x1b[5;9H\x1b"
	     "7",
	     "X\x1b[uY\x1b"
	     "7"}, /* SCORC reads it too */
	    {"\xe4\x1b[m", "X\x1b"
			   "7\xb8\xad"}, /* a half-read character */
	    {"\xe4\xb8\x1b[mA", "X\x1b"
				"7\xad"}, /* behind an ASCII write */
	    {"\x1b[3;4HA", "\x1b"
			   "7\x1b[3;5H\xcc\x81"
			   "B"}, /* a combining character */
	    {"\x1b[?1049hALT", "X\x1b"
			       "7"}, /* the alternate screen */
	    {"\x1b]0;title", "X\x1b"
			     "7"}, /* RIS inside a string */
	    {"\x1bN", "\xe4X\x1b"
		      "7\xb8\xad"}, /* a single shift */
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct buf in = BUF_INIT;
		size_t chunk = 1 << 20;

		make_random(&in, 20000);
		buf_append_str(&in, "\x18\x1b[m\r\n");
		for (int i = 0; i < 300; i++)
			buf_append_str(&in, "text\r\n");
		buf_append_str(&in, cases[c][0]);
		buf_append_str(&in, "\x1b"
				    "c");
		buf_append_str(&in, cases[c][1]);
		for (int i = 0; i < 100; i++)
			buf_append_str(&in, "tail\r\n");
		check(&in, 40, 10, &chunk, 1, cases[c][0]);
		buf_free(&in);
	}
}

/* Not RIS, but the same hidden state: text that scrolls off may leave
   a half-read UTF-8 character behind, in either of libvterm's decoders
   (writes that start with ASCII and writes that do not), for what is
   printed after it; skipping lines must keep it. */
static void test_line_skip_keeps_half_read_character(void **state)
{
	static const char *const cases[][2] = {
	    /* before the lines that scroll off, their first line */
	    {"\xe4\x1b[m", "\xb8\xad"}, /* ends a character */
	    {"\xe4\x1b[m", "x"},	/* an ASCII write leaves it */
	    {"x\xe4\x1b[m", "y"},	/* abandons one */
	    {"x\x1b[m", "y\xe4"},	/* starts one */
	    {"x\x1b[m", "\xe4"},	/* starts one alone */
	};

	/* Lines of text, or empty ones, which leave both decoders alone. */
	for (size_t c = 0; c < 2 * sizeof(cases) / sizeof(cases[0]); c++) {
		struct buf in = BUF_INIT;
		size_t chunk = 1 << 20;

		buf_append_str(&in, cases[c / 2][0]);
		buf_append_str(&in, cases[c / 2][1]);
		buf_append_str(&in, "\r\n");
		for (int i = 0; i < 200; i++)
			buf_append_str(&in, c % 2 ? "\r\n" : "line\r\n");
		check(&in, 40, 10, &chunk, 1, cases[c / 2][1]);
		buf_free(&in);
	}
}

/* The session's way: output piles up in a backlog; when it is full the
   model restarts from a RIS and the rest waits for later output (or the
   model catches up, when too much is left). The reference is screen_feed
   cut where the fast model started or stopped writing. */
static void test_restart_then_wait(void **state)
{
	const size_t max = 256 * 1024, read = 4096 * 3 + 7;

	for (int round = 0; round < 6; round++) {
		struct buf in = BUF_INIT, backlog = BUF_INIT;
		struct screen *fast = screen_new(80, 24), *slow = screen_new(80, 24);
		size_t fed = 0, off = 0, waited = 0;

		if (round % 2)
			make_spiced(&in, 3000000, 200);
		else
			make_random(&in, 3000000);
		while (off < buf_size(&in)) {
			size_t n = buf_size(&in) - off < read ? buf_size(&in) - off
							      : read,
			       x;

			buf_append(&backlog, buf_head(&in) + off, n);
			off += n;
			if (buf_size(&backlog) < max)
				continue;
			x = screen_skip_to_reset(fast, buf_head(&backlog),
						 buf_size(&backlog));
			if (x) {
				screen_feed(slow, buf_head(&in) + fed,
					    off - buf_size(&backlog) + x - fed);
				fed = off - buf_size(&backlog) + x;
				buf_consume(&backlog, x);
				waited++;
			}
			if (buf_size(&backlog) > max / 2) {
				screen_feed_tail(fast, buf_head(&backlog),
						 buf_size(&backlog));
				screen_feed(slow, buf_head(&in) + fed, off - fed);
				fed = off;
				buf_reset(&backlog);
			}
		}
		screen_feed_tail(fast, buf_head(&backlog), buf_size(&backlog));
		screen_feed(slow, buf_head(&in) + fed, off - fed);
		assert_same(fast, slow, "restart, then wait");
		if (round % 2 == 0 && waited < 4)
			fail_msg("the model restarted %zu times", waited);
		screen_free(fast);
		screen_free(slow);
		buf_free(&in);
		buf_free(&backlog);
	}
}

/* The restart must happen: random bytes, a megabyte at a time as the
   session feeds them, cost libvterm well under half of themselves. */
static void test_random_is_skipped(void **state)
{
	struct buf in = BUF_INIT;
	size_t chunk = 1 << 20;
	uint64_t spared;

	make_random(&in, 8u << 20);
	spared = check(&in, 120, 30, &chunk, 1, "random, skipped");
	if (spared < buf_size(&in) / 2)
		fail_msg("libvterm was spared %llu of %zu bytes",
			 (unsigned long long)spared, buf_size(&in));
	buf_free(&in);
}

/* Where screen_skip_to_reset stands in: lead bytes of repaint (a write
   that starts past ASCII, so the scan knows the UTF-8 decoder's state,
   then an SGR every few bytes), ESC, mid, final, tail bytes of text, and
   a DECSC and text (a RIS counts once what follows it is known and the
   saved cursor it leaves alone is written again). */
static size_t skip_after(const char *mid, char final, size_t lead, size_t tail)
{
	struct screen *s = screen_new(80, 24);
	struct buf in = BUF_INIT;
	size_t x;

	buf_append(&in, "\xc3\xa9", 2);
	while (buf_size(&in) + 7 <= lead)
		buf_append(&in, "\033[1mab", 7);
	while (buf_size(&in) < lead)
		buf_append(&in, "a", 1);
	buf_append(&in, "\033", 1);
	buf_append(&in, mid, strlen(mid));
	buf_append(&in, &final, 1);
	for (size_t i = 0; i < tail; i++)
		buf_append(&in, "b", 1);
	buf_append(&in, "\0337b", 3);
	x = screen_skip_to_reset(s, buf_head(&in), buf_size(&in));
	screen_free(s);
	buf_free(&in);
	return x;
}

/* The quick look for a RIS reads blocks of bytes: a RIS is found
   wherever it starts in a block and however many bytes the escape parser
   passes over sit inside it (a block's edge among them), and what only
   looks like one (CAN cancels, another final byte) is not taken. */
static void test_ris_found_at_every_offset(void **state)
{
	static const struct {
		const char *mid; /* between ESC and the final byte */
		char final;
		size_t after; /* where the model stands after, past the lead */
	} cases[] = {
	    {"", 'c', 2},
	    {"\a", 'c', 3},
	    {"\x80\x9b", 'c', 4},
	    {"\x07\x7f\x05", 'c', 5},
	    /* forty BELs: past a block's edge wherever it starts */
	    {"\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a\a"
	     "\a\a\a\a\a\a\a\a\a\a",
	     'c', 42},
	    {"\x1b", 'c', 3}, /* the second ESC starts it */
	    {"\a", 'd', 0},
	    {"\x18", 'c', 0},
	    {"\x1a", 'c', 0},
	};
	static const size_t tails[] = {1, 2, 15, 16, 17, 31, 32, 33, 70};

	(void)state;
	for (size_t lead = 4096; lead < 4096 + 70; lead++)
		for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
			for (size_t t = 0; t < sizeof(tails) / sizeof(tails[0]); t++) {
				size_t x = skip_after(cases[k].mid, cases[k].final, lead,
						      tails[t]),
				       want = cases[k].after ? lead + cases[k].after : 0;

				if (x != want)
					fail_msg("case %zu, lead %zu, tail %zu: at %zu, "
						 "not %zu",
						 k, lead, tails[t], x, want);
			}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_bytes),
	    cmocka_unit_test(test_spiced_random),
	    cmocka_unit_test(test_state_ris_keeps),
	    cmocka_unit_test(test_line_skip_keeps_half_read_character),
	    cmocka_unit_test(test_restart_then_wait),
	    cmocka_unit_test(test_random_is_skipped),
	    cmocka_unit_test(test_ris_found_at_every_offset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
