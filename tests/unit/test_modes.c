/* unit: sidecar */
/* modes: the escape-sequence tracker, fed whole, one byte at a time and
   split at every position; its events; libvterm 0.1.4's quirks. */
#include "../../sidecar/modes.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* ---- what the test reads of modes.c, which it includes ---- */

/* True while the last byte parsed was part of a text run. */
static bool modes_in_text(const struct modes *m)
{
	return m->in_text;
}

#define CSI "\033["

static void feed(struct modes *m, const char *p, size_t n)
{
	enum modes_event ev;
	size_t at, k;

	while (n) {
		k = modes_feed(m, (const uint8_t *)p, n, &ev, &at);
		assert_true(k >= 1 && k <= n);
		if (ev != MODES_EV_NONE)
			assert_true(at < k);
		p += k;
		n -= k;
	}
}

typedef void (*check_fn)(const struct modes_state *s);

/* Runs check after feeding p whole, bytewise and split at every point. */
static void each_split(const char *p, check_fn check)
{
	size_t n = strlen(p);

	for (size_t cut = 0; cut <= n; cut++) {
		struct modes *m = modes_new(80, 24);

		feed(m, p, cut);
		feed(m, p + cut, n - cut);
		check(modes_state(m));
		modes_free(m);
	}
	struct modes *m = modes_new(80, 24);
	for (size_t i = 0; i < n; i++)
		feed(m, p + i, 1);
	check(modes_state(m));
	modes_free(m);
}

static void check_defaults(const struct modes_state *s)
{
	assert_false(s->cursor_keys);
	assert_false(s->keypad);
	assert_false(s->origin);
	assert_true(s->autowrap);
	assert_false(s->insert);
	assert_false(s->bracketed_paste);
	assert_int_equal(s->mouse, 0);
	assert_int_equal(s->mouse_enc, 0);
	assert_int_equal(s->top, 0);
	assert_int_equal(s->bottom, -1);
	assert_memory_equal(s->g, "BBBB", 4);
	assert_int_equal(s->gl, 0);
}

static void test_defaults(void **state)
{
	struct modes *m = modes_new(80, 24);

	check_defaults(modes_state(m));
	modes_free(m);
	modes_free(NULL);
}

static void check_many(const struct modes_state *s)
{
	assert_true(s->cursor_keys);
	assert_true(s->keypad);
	assert_true(s->origin);
	assert_false(s->autowrap);
	assert_true(s->insert);
	assert_true(s->newline);
	assert_true(s->bracketed_paste);
	assert_true(s->focus_events);
	assert_int_equal(s->mouse, 1002);
	assert_int_equal(s->mouse_enc, 1006);
	assert_int_equal(s->top, 4);
	assert_int_equal(s->bottom, 20);
	assert_true(s->lr_margins);
	assert_int_equal(s->left, 9);
	assert_int_equal(s->right, 40);
	assert_int_equal(s->g[0], '0');
	assert_int_equal(s->g[1], 'A');
	assert_int_equal(s->gl, 1);
}

static void test_modes_split(void **state)
{
	each_split(CSI "?1h\033=" CSI "?6h" CSI "?7l" CSI "4h" CSI "20h" CSI "?2004h" CSI
		       "?1004h" CSI "?1002h" CSI "?1006h" CSI "5;20r" CSI "?69h" CSI
		       "10;40s"
		       "\033(0\033)A\016text",
		   check_many);
}

static void check_reset(const struct modes_state *s)
{
	check_defaults(s);
	assert_false(s->focus_events);
	assert_false(s->lr_margins);
}

static void test_ris(void **state)
{
	each_split(CSI "?1h\033=" CSI "?6h" CSI "?7l" CSI "?2004h" CSI "?1003h" CSI
		       "?1015h" CSI "5;20r\033(0\016\033c",
		   check_reset);
}

static void check_decstr(const struct modes_state *s)
{
	assert_false(s->cursor_keys);
	assert_false(s->keypad);
	assert_true(s->origin); /* libvterm 0.1.4 ignores DECSTR */
	assert_true(s->bracketed_paste);
}

static void test_decstr(void **state)
{
	each_split(CSI "?1h\033=" CSI "?6h" CSI "?2004h" CSI "!p", check_decstr);
}

/* libvterm applies the first parameter only; input modes take them all. */
static void check_first_param(const struct modes_state *s)
{
	assert_true(s->autowrap); /* ?7 first: set */
	assert_false(s->origin);  /* ?6 second: ignored, as libvterm does */
	assert_true(s->cursor_keys);
	assert_true(s->bracketed_paste);
}

static void test_first_param_quirk(void **state)
{
	each_split(CSI "?7l" CSI "?7;6;1;2004h", check_first_param);
}

static void check_strings(const struct modes_state *s)
{
	assert_false(s->cursor_keys);	 /* inside OSC: not a sequence */
	assert_true(s->bracketed_paste); /* after ESC \ */
	assert_false(s->keypad);	 /* CAN aborted that CSI */
	assert_true(s->focus_events);	 /* CR inside a CSI acts, the CSI goes on */
	assert_int_equal(s->gl, 1);	 /* SO inside an OSC acts too */
}

static void test_strings_and_controls(void **state)
{
	each_split("\033]0;[?1h title\007\033P$q[?1h\033\\" CSI "?2004h" CSI "?1\030h" CSI
		   "?10\r04h\033]2;\016x\033\\",
		   check_strings);
}

static void check_margins(const struct modes_state *s)
{
	assert_int_equal(s->top, 4);
	assert_int_equal(s->bottom, 24); /* clamped to the screen, kept explicit */
}

static void test_margins(void **state)
{
	each_split(CSI "5;100r", check_margins);
	each_split(CSI "5;10r" CSI "10;5r", check_defaults); /* invalid resets */
	each_split(CSI "5;10r" CSI "r", check_defaults);
	each_split(CSI "1;24r", check_defaults);

	struct modes *m = modes_new(80, 24);
	feed(m, CSI "5;20r", 7);
	modes_resize(m, 80, 10);
	assert_int_equal(modes_state(m)->bottom, 10);
	modes_free(m);
}

static void check_mouse_off(const struct modes_state *s)
{
	assert_int_equal(s->mouse, 0);
	assert_int_equal(s->mouse_enc, 1015);
}

static void check_defaults_mouse_x10(const struct modes_state *s)
{
	assert_int_equal(s->mouse, 9);
	assert_int_equal(s->mouse_enc, 0);
}

static void test_mouse(void **state)
{
	each_split(CSI "?1003h" CSI "?1000l" CSI "?1006h" CSI "?1015h", check_mouse_off);
	each_split(CSI "?9h" CSI "?1005h" CSI "?1005l", check_defaults_mouse_x10);
}

static void test_events(void **state)
{
	struct modes *m = modes_new(80, 24);
	const char *p = "ab" CSI "1mc" CSI "?1049hd";
	enum modes_event ev;
	size_t at, k, off = 0, n = strlen(p);
	struct {
		enum modes_event ev;
		size_t at;
	} want[] = {
	    {MODES_EV_TEXT_START, 0}, {MODES_EV_TEXT_END, 2},	{MODES_EV_TEXT_START, 6},
	    {MODES_EV_TEXT_END, 7},   {MODES_EV_ALT_ENTER, 14}, {MODES_EV_TEXT_START, 15},
	};
	size_t w = 0;

	while (off < n) {
		k = modes_feed(m, (const uint8_t *)p + off, n - off, &ev, &at);
		if (ev != MODES_EV_NONE) {
			assert_true(w < sizeof(want) / sizeof(want[0]));
			assert_int_equal(ev, want[w].ev);
			assert_int_equal(off + at, want[w].at);
			w++;
		}
		off += k;
	}
	assert_int_equal(w, sizeof(want) / sizeof(want[0]));
	assert_true(modes_in_text(m));
	assert_int_equal(modes_state(m)->alt_variant, 1049);
	/* Leaving is no event; UTF-8 continuation bytes are text, not C1. */
	feed(m,
	     CSI "?1049l\xc2\x9b"
		 "1h",
	     11);
	assert_true(modes_in_text(m));
	assert_false(modes_state(m)->insert);
	modes_free(m);
}

static void test_pending_wrap_cancel(void **state)
{
	struct modes *m = modes_new(80, 24);

	modes_state(m)->pending_wrap = true;
	feed(m, CSI "1m" CSI "K", 7);
	assert_true(modes_state(m)->pending_wrap);
	feed(m, CSI "1;80H", 7);
	assert_false(modes_state(m)->pending_wrap);
	modes_free(m);
}

static void test_hostile_input(void **state)
{
	struct modes *m = modes_new(80, 24);
	const char *p = CSI "?99999999999999999999h" CSI
			    "1;24;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18;19;20;21r" CSI
			    "?<>=1h" CSI "1 !q"
			    "\033 \033#8\033(";

	feed(m, p, strlen(p));
	check_defaults(modes_state(m));
	for (int i = 0; i < 256; i++) {
		uint8_t c = (uint8_t)i;
		enum modes_event ev;
		size_t at;

		modes_feed(m, &c, 1, &ev, &at);
	}
	modes_free(m);
}

/* The guard events of p fed whole, as "action@index" joined by spaces. */
static void guard_events(const char *p, char *out, size_t cap)
{
	static const char *const names[] = {"drop", "ignore", "margins", "esc"};
	struct modes *m = modes_new(80, 24);
	size_t off = 0, n = strlen(p), len = 0;

	out[0] = 0;
	while (off < n) {
		enum modes_event ev;
		size_t at, k = modes_feed(m, (const uint8_t *)p + off, n - off, &ev, &at);

		if (ev == MODES_EV_GUARD)
			len += (size_t)snprintf(out + len, cap - len, "%s%s@%zu",
						len ? " " : "", names[modes_guard(m)],
						off + at);
		off += k;
	}
	modes_free(m);
}

/* The CSI guard's rules as the tracker applies them (vtguard.h): past
   16 parameters, REP after a glyph that is not printable ASCII, an empty
   scroll region, a string's ESC held until the byte after it. */
static void test_guard_events(void **state)
{
	char seq[64] = CSI, got[128];

	(void)state;
	for (int i = 0; i < 15; i++)
		strcat(seq, "1;");
	strcat(seq, "1;2m");
	guard_events(seq, got, sizeof(got));
	assert_string_equal(got, "drop@33 drop@34");
	guard_events("x" CSI "b\xe4\xb8\xad" CSI "2b", got, sizeof(got));
	assert_string_equal(got, "ignore@10");
	guard_events(CSI "5;3r" CSI "2;3r", got, sizeof(got));
	assert_string_equal(got, "margins@5");
	guard_events("\033]0;t\033\001\\x\033]0;\033\a\033\\", got, sizeof(got));
	assert_string_equal(got, "drop@5 esc@7 drop@13 drop@14 esc@15");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_modes_split),
	    cmocka_unit_test(test_ris),
	    cmocka_unit_test(test_decstr),
	    cmocka_unit_test(test_first_param_quirk),
	    cmocka_unit_test(test_strings_and_controls),
	    cmocka_unit_test(test_margins),
	    cmocka_unit_test(test_mouse),
	    cmocka_unit_test(test_events),
	    cmocka_unit_test(test_pending_wrap_cancel),
	    cmocka_unit_test(test_hostile_input),
	    cmocka_unit_test(test_guard_events),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
