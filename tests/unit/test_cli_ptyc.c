/* unit: cli */
/* cli/ptyc.c: what reaches the screen and in which order (the sequence
   filter and Keyframe anchors, the join flows: docs/protocol.md,
   "Sequences, replay and keyframes"), notices, and the client frames it
   builds. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "b64.h"
#include "ptyc.h"
#include "timeutil.h"
#include "uuid.h"

struct rec {
	struct buf screen;
	char notices[8][512];
	int n_notices;
};

static void rec_screen(const uint8_t *p, size_t n, void *user)
{
	struct rec *r = user;

	buf_append(&r->screen, p, n);
}

static void rec_notice(const char *line, void *user)
{
	struct rec *r = user;

	assert_true(r->n_notices < 8);
	snprintf(r->notices[r->n_notices++], sizeof(r->notices[0]), "%s", line);
}

static struct ptyc *new_client(struct rec *r)
{
	static const struct ptyc_callbacks cb = {rec_screen, rec_notice};

	memset(r, 0, sizeof(*r));
	return ptyc_new(&cb, r);
}

static const char *screen(struct rec *r)
{
	*buf_reserve(&r->screen, 1) = '\0';
	return (const char *)buf_head(&r->screen);
}

/* Feeds a server frame built from a printf-style JSON template. */
static int feed(struct ptyc *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int feed(struct ptyc *p, const char *fmt, ...)
{
	char text[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return ptyc_handle(p, text, strlen(text));
}

#define FRAME                                                                            \
	"{\"op\":\"pty.session_frame\",\"id\":\"x\",\"ts\":\"t\",\"sequence\":%d,"       \
	"\"payload\":"
#define OUTPUT(seq, b64)                                                                 \
	feed(p, FRAME "{\"kind\":\"Output\",\"stream\":\"stdout\",\"data\":\"%s\"}}",    \
	     seq, b64)
#define KEYFRAME(seq, anchor, b64)                                                       \
	feed(p,                                                                          \
	     FRAME                                                                       \
	     "{\"kind\":\"Keyframe\",\"snapshot\":\"%s\",\"snapshot_format\":"           \
	     "\"vt100-screen-state-v1\",\"snapshot_cols\":80,\"snapshot_rows\":24,"      \
	     "\"anchor_sequence\":%d}}",                                                 \
	     seq, b64, anchor)

/* base64 of short screen texts */
#define B_KF1 "S0Yx" /* KF1 */
#define B_KF2 "S0Yy" /* KF2 */
#define B_A   "QQ==" /* A */
#define B_B   "Qg==" /* B */
#define B_C   "Qw==" /* C */
#define B_D   "RA==" /* D */

static void test_fresh_join_order_and_filter(void **state)
{
	struct rec r;
	struct ptyc *p = new_client(&r);

	assert_string_equal(ptyc_role(p), "");
	assert_int_equal(feed(p,
			      FRAME "{\"kind\":\"RoleAssigned\",\"role\":\"controller\","
				    "\"client_id\":\"c-1\"}}",
			      1),
			 0);
	assert_string_equal(ptyc_role(p), "controller");
	assert_int_equal(feed(p,
			      FRAME "{\"kind\":\"MembershipChanged\",\"controllers\":[],"
				    "\"observers\":[]}}",
			      2),
			 0);
	assert_int_equal(KEYFRAME(3, 3, B_KF1), 0);
	assert_int_equal(OUTPUT(2, B_A), 0); /* at or below the anchor: dropped */
	assert_int_equal(OUTPUT(3, B_A), 0);
	assert_int_equal(OUTPUT(4, B_B), 0);
	assert_int_equal(OUTPUT(4, B_B), 0); /* duplicate */
	assert_int_equal(OUTPUT(6, B_C), 0); /* a gap is fine */
	assert_int_equal(OUTPUT(5, B_D), 0); /* late: dropped */
	assert_string_equal(screen(&r), "KF1BC");
	assert_int_equal(ptyc_last_sequence(p), 6);
	/* A stale Keyframe changes nothing; a newer periodic one is not
	   written (the screen is in sync: it would only repaint it) but
	   anchors. */
	assert_int_equal(KEYFRAME(6, 6, B_KF2), 0);
	assert_int_equal(KEYFRAME(9, 9, B_KF2), 0);
	assert_int_equal(OUTPUT(8, B_A), 0);
	assert_int_equal(OUTPUT(10, B_D), 0);
	assert_string_equal(screen(&r), "KF1BCD");
	assert_int_equal(r.n_notices, 0);
	ptyc_free(p);
	buf_free(&r.screen);
}

static void test_replay_flow_role_has_higher_sequence(void **state)
{
	struct rec r;
	struct ptyc *p = new_client(&r);

	/* RoleAssigned takes the next number (101), then the replay of 51.. */
	feed(p,
	     FRAME
	     "{\"kind\":\"RoleAssigned\",\"role\":\"observer\",\"client_id\":\"c\"}}",
	     101);
	OUTPUT(51, B_A);
	OUTPUT(52, B_B);
	KEYFRAME(102, 102, B_KF1);
	OUTPUT(103, B_C);
	assert_string_equal(screen(&r), "ABKF1C");
	assert_string_equal(ptyc_role(p), "observer");
	ptyc_free(p);
	buf_free(&r.screen);
}

static void test_lag_makes_the_next_keyframe_written(void **state)
{
	struct rec r;
	struct ptyc *p = new_client(&r);

	KEYFRAME(3, 3, B_KF1);
	OUTPUT(4, B_A);
	feed(p,
	     FRAME
	     "{\"kind\":\"Error\",\"code\":\"PTY_OUTPUT_LAGGED\",\"message\":\"m\"}}",
	     9);
	KEYFRAME(10, 10, B_KF2);
	KEYFRAME(11, 11, B_KF1); /* in sync again: not written */
	OUTPUT(12, B_B);
	assert_string_equal(screen(&r), "KF1AKF2B");
	ptyc_free(p);
	buf_free(&r.screen);
}

/* The snapshot's RIS would wipe the user's scrollback and settings: it is
   replaced by a soft reset and a clear of the visible screen. */
static void test_keyframe_without_full_reset(void **state)
{
	struct rec r;
	struct ptyc *p = new_client(&r);

	/* base64 of "\033[?1049l\033cHI" */
	KEYFRAME(5, 5, "G1s/MTA0OWwbY0hJ");
	assert_null(strstr(screen(&r), "\033c"));
	assert_non_null(strstr(screen(&r), "\033[?1049l\033[!p"));
	assert_non_null(strstr(screen(&r), "\033[H\033[2JHI"));
	ptyc_free(p);
	buf_free(&r.screen);
}

/* A reconnect resuming after sequence 40: the terminal already
   shows everything up to 40. The join's Keyframe at the same anchor (the
   replay brought nothing) repaints without ED 2, which tmux and VTE
   scroll into the scrollback (29 duplicate lines); frames up to 40 are
   dropped, later ones written. */
static void test_resume_repaints_without_scrolling(void **state)
{
	struct rec r;
	struct ptyc *p = new_client(&r);

	ptyc_resume(p, 40);
	OUTPUT(40, B_A);		      /* already shown */
	KEYFRAME(40, 40, "G1s/MTA0OWwbY0hJ"); /* "\033[?1049l\033cHI" */
	OUTPUT(41, B_B);
	KEYFRAME(45, 45, B_KF2); /* periodic: in sync, not written */
	assert_null(strstr(screen(&r), "\033[2J"));
	assert_null(strstr(screen(&r), "\033c"));
	assert_non_null(strstr(screen(&r), "\033[9999;9999H\033[1J\033[HHIB"));
	assert_int_equal(ptyc_last_sequence(p), 45);
	ptyc_free(p);
	buf_free(&r.screen);

	/* With a replay, the replayed frames come first, then the Keyframe. */
	p = new_client(&r);
	ptyc_resume(p, 40);
	OUTPUT(41, B_A);
	OUTPUT(42, B_B);
	KEYFRAME(42, 42, B_KF1);
	assert_string_equal(screen(&r), "ABKF1");
	ptyc_free(p);
	buf_free(&r.screen);

	/* Out of range: the old screen is lost; the Keyframe is applied as
	   on a fresh join, its clear pushing the old screen to scrollback. */
	p = new_client(&r);
	ptyc_resume(p, 40);
	feed(p, "{\"op\":\"Error\",\"id\":\"j\",\"ts\":\"t\",\"payload\":{\"code\":"
		"\"REPLAY_OUT_OF_RANGE\",\"message\":\"m\"}}");
	KEYFRAME(30, 30, "G1s/MTA0OWwbY0hJ");
	assert_non_null(strstr(screen(&r), "\033[H\033[2JHI"));
	ptyc_free(p);
	buf_free(&r.screen);
}

static void test_keyframe_anchor_field_wins(void **state)
{
	struct rec r;
	struct ptyc *p = new_client(&r);

	/* The anchor, not the envelope sequence, sets what is dropped. */
	KEYFRAME(20, 25, B_KF1);
	OUTPUT(24, B_A);
	OUTPUT(26, B_B);
	/* Output without a sequence cannot be de-duplicated: written. */
	feed(p, "{\"op\":\"pty.session_frame\",\"id\":\"x\",\"ts\":\"t\",\"payload\":{"
		"\"kind\":"
		"\"Output\",\"stream\":\"log\",\"data\":\"" B_C "\"}}");
	assert_string_equal(screen(&r), "KF1BC");
	ptyc_free(p);
	buf_free(&r.screen);
}

static void test_notices(void **state)
{
	struct rec r;
	struct ptyc *p = new_client(&r);
	const char *reason;
	int code;

	feed(p,
	     FRAME "{\"kind\":\"RoleAssigned\",\"role\":\"observer\",\"client_id\":\"c\","
		   "\"downgraded\":true,\"reason\":\"controllers full\"}}",
	     1);
	assert_string_equal(r.notices[0],
			    "joined as observer, downgraded: controllers full");
	feed(p, "{\"op\":\"Error\",\"id\":\"x\",\"ts\":\"t\",\"payload\":{\"code\":"
		"\"PERMISSION_DENIED\",\"message\":\"no \\u001b[31mway\"}}");
	assert_string_equal(r.notices[1], "error PERMISSION_DENIED: no ?[31mway");
	feed(p,
	     FRAME
	     "{\"kind\":\"Error\",\"code\":\"PTY_OUTPUT_LAGGED\",\"message\":\"slow\"}}",
	     2);
	assert_string_equal(r.notices[2], "session error PTY_OUTPUT_LAGGED: slow");
	assert_false(ptyc_closed(p, &code));
	feed(p, FRAME "{\"kind\":\"Closed\",\"exit_code\":3,\"reason\":\"normal\"}}", 3);
	assert_true(ptyc_closed(p, &code));
	assert_int_equal(code, 3);
	assert_string_equal(r.notices[3], "session ended: exit code 3 (normal)");
	assert_false(ptyc_goodbye(p, &reason));
	feed(p, "{\"op\":\"binding_goodbye\",\"id\":\"x\",\"ts\":\"t\",\"payload\":{"
		"\"reason\":"
		"\"session_closed\"}}");
	assert_true(ptyc_goodbye(p, &reason));
	assert_string_equal(reason, "session_closed");
	assert_int_equal(r.n_notices, 4);
	ptyc_free(p);
	buf_free(&r.screen);
}

static json_t *parse(char *s);

#define CONTROL                                                                          \
	"{\"op\":\"ptygate.control_requests\",\"id\":\"x\",\"ts\":\"t\",\"payload\":"

/* Control approval: who asked, the key that answers (for a controller),
   the outcome, and the oldest request kept for the answer. */
static void test_control_requests(void **state)
{
	struct rec r;
	struct ptyc *p = new_client(&r);
	json_t *o;

	feed(p,
	     FRAME "{\"kind\":\"RoleAssigned\",\"role\":\"controller\","
		   "\"client_id\":\"c-a\"}}",
	     1);
	feed(p, CONTROL "{\"policy\":\"approve\",\"pending\":[]}}");
	assert_null(ptyc_control_pending(p));
	assert_int_equal(r.n_notices, 0);
	feed(p, CONTROL "{\"policy\":\"approve\",\"pending\":[{\"client_id\":\"c-b\","
			"\"label\":\"bob\",\"expires_at\":\"t\"}],\"event\":{\"kind\":"
			"\"requested\",\"client_id\":\"c-b\",\"label\":\"bob\"}}}");
	assert_string_equal(ptyc_control_pending(p), "c-b");
	assert_string_equal(
	    r.notices[0], "bob (c-b) asks for control: Ctrl-] then y approves, n denies");
	feed(p, CONTROL "{\"policy\":\"approve\",\"pending\":[],\"event\":{\"kind\":"
			"\"denied\",\"client_id\":\"c-b\",\"label\":\"bob\",\"by\":{"
			"\"client_id\":\"c-a\",\"label\":\"alice\"}}}}");
	assert_null(ptyc_control_pending(p));
	assert_string_equal(r.notices[1], "control: bob (c-b) denied by alice (c-a)");
	feed(p, "{\"op\":\"ptygate.control_decided\",\"id\":\"x\",\"ts\":\"t\","
		"\"payload\":{\"client_id\":\"c-b\",\"approve\":false}}");
	assert_string_equal(r.notices[2], "control: you denied c-b");
	assert_int_equal(ptyc_handle(p, CONTROL "{}}", strlen(CONTROL "{}}")), -EPROTO);
	ptyc_free(p);
	buf_free(&r.screen);

	o = parse(ptyc_msg_decide("c-b", true));
	assert_string_equal(json_string_value(json_object_get(o, "op")),
			    "ptygate.decide_control");
	assert_string_equal(json_string_value(json_object_get(
				json_object_get(o, "payload"), "client_id")),
			    "c-b");
	assert_true(
	    json_is_true(json_object_get(json_object_get(o, "payload"), "approve")));
	json_decref(o);
}

static void test_malformed_and_unknown(void **state)
{
	struct rec r;
	struct ptyc *p = new_client(&r);

	assert_int_equal(feed(p, "not json"), -EPROTO);
	assert_int_equal(feed(p, "[1,2]"), -EPROTO);
	assert_int_equal(feed(p, "{\"op\":\"binding_hello\"}"), -EPROTO); /* no payload */
	assert_int_equal(OUTPUT(1, "QQ="), -EPROTO);			  /* bad base64 */
	assert_int_equal(
	    feed(p, FRAME "{\"kind\":\"RoleAssigned\",\"role\":\"boss\"}}", 2), -EPROTO);
	assert_int_equal(r.n_notices, 5);
	assert_non_null(strstr(r.notices[0], "malformed"));
	/* Unknown ops and kinds are ignored quietly. */
	assert_int_equal(feed(p, "{\"op\":\"pong\",\"payload\":{}}"), 0);
	assert_int_equal(feed(p, FRAME "{\"kind\":\"Resize\",\"cols\":3,\"rows\":4}}", 3),
			 0);
	assert_int_equal(feed(p, FRAME "{\"kind\":\"Future\"}}", 4), 0);
	/* A Keyframe in another format is not written. */
	assert_int_equal(feed(p,
			      FRAME
			      "{\"kind\":\"Keyframe\",\"snapshot\":\"" B_KF1 "\","
			      "\"snapshot_format\":\"other\",\"anchor_sequence\":5}}",
			      5),
			 0);
	assert_int_equal(r.n_notices, 6);
	assert_int_equal(buf_size(&r.screen), 0);
	/* The malformed Output did not move the filter: sequence 1 still writes. */
	assert_int_equal(OUTPUT(1, B_A), 0);
	assert_string_equal(screen(&r), "A");
	ptyc_free(p);
	buf_free(&r.screen);
	ptyc_free(NULL);
}

static json_t *parse(char *s)
{
	json_t *o = json_loads(s, 0, NULL);
	const char *ts;
	int64_t ms;

	free(s);
	assert_non_null(o);
	assert_true(uuid_is_valid(json_string_value(json_object_get(o, "id"))));
	ts = json_string_value(json_object_get(o, "ts"));
	assert_non_null(ts);
	assert_int_equal(strlen(ts), TS_STRLEN);
	assert_int_equal(time_parse_rfc3339(ts, &ms), 0);
	assert_null(json_object_get(o, "sequence"));
	return o;
}

static void test_builders(void **state)
{
	struct ptyc_join j = {.cols = 120, .rows = 30, .label = "alice@laptop"};
	const uint8_t bytes[] = {'l', 's', '\n', 0, 0xff};
	json_t *o, *pl;
	struct buf b = BUF_INIT;

	o = parse(ptyc_msg_join(&j));
	pl = json_object_get(o, "payload");
	assert_string_equal(json_string_value(json_object_get(o, "op")),
			    "pty.join_session");
	assert_string_equal(
	    json_string_value(json_array_get(json_object_get(o, "extensions"), 0)),
	    PTYWS_EXT_PTY);
	assert_string_equal(
	    json_string_value(json_array_get(json_object_get(o, "extensions"), 1)),
	    PTYWS_EXT_CONTROL);
	assert_int_equal(json_array_size(json_object_get(o, "extensions")), 2);
	assert_null(json_object_get(o, "replay_from"));
	assert_string_equal(json_string_value(json_object_get(pl, "role")), "controller");
	assert_int_equal(json_integer_value(json_object_get(pl, "cols")), 120);
	assert_int_equal(json_integer_value(json_object_get(pl, "rows")), 30);
	assert_string_equal(json_string_value(json_object_get(pl, "client_label")),
			    "alice@laptop");
	json_decref(o);

	j.observer = true;
	j.replay = true;
	j.replay_from = 0;
	j.label = NULL;
	o = parse(ptyc_msg_join(&j));
	pl = json_object_get(o, "payload");
	assert_string_equal(json_string_value(json_object_get(pl, "role")), "observer");
	assert_int_equal(json_integer_value(json_object_get(o, "replay_from")), 0);
	assert_true(json_is_integer(json_object_get(o, "replay_from")));
	assert_null(json_object_get(pl, "client_label"));
	json_decref(o);

	/* No size (a client without a terminal): none sent, so the join
	   cannot resize a shared session. */
	j.cols = j.rows = 0;
	o = parse(ptyc_msg_join(&j));
	pl = json_object_get(o, "payload");
	assert_null(json_object_get(pl, "cols"));
	assert_null(json_object_get(pl, "rows"));
	json_decref(o);

	o = parse(ptyc_msg_input(bytes, sizeof(bytes)));
	pl = json_object_get(o, "payload");
	assert_string_equal(json_string_value(json_object_get(o, "op")),
			    "pty.session_input");
	assert_int_equal(
	    b64_decode(json_string_value(json_object_get(pl, "data")),
		       strlen(json_string_value(json_object_get(pl, "data"))), &b),
	    0);
	assert_int_equal(buf_size(&b), sizeof(bytes));
	assert_memory_equal(buf_head(&b), bytes, sizeof(bytes));
	assert_null(json_object_get(o, "extensions"));
	json_decref(o);
	buf_free(&b);

	o = parse(ptyc_msg_resize(100, 40));
	pl = json_object_get(o, "payload");
	assert_string_equal(json_string_value(json_object_get(o, "op")),
			    "pty.session_resize");
	assert_int_equal(json_integer_value(json_object_get(pl, "cols")), 100);
	assert_int_equal(json_integer_value(json_object_get(pl, "rows")), 40);
	json_decref(o);

	o = parse(ptyc_msg_leave());
	assert_string_equal(json_string_value(json_object_get(o, "op")),
			    "pty.leave_session");
	assert_int_equal(json_object_size(json_object_get(o, "payload")), 0);
	assert_true(json_is_object(json_object_get(o, "payload")));
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fresh_join_order_and_filter),
	    cmocka_unit_test(test_replay_flow_role_has_higher_sequence),
	    cmocka_unit_test(test_keyframe_anchor_field_wins),
	    cmocka_unit_test(test_lag_makes_the_next_keyframe_written),
	    cmocka_unit_test(test_keyframe_without_full_reset),
	    cmocka_unit_test(test_resume_repaints_without_scrolling),
	    cmocka_unit_test(test_notices),
	    cmocka_unit_test(test_control_requests),
	    cmocka_unit_test(test_malformed_and_unknown),
	    cmocka_unit_test(test_builders),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
