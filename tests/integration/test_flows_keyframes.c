/* test_flows_keyframes: keyframes (docs/protocol.md, "The
   Keyframe's snapshot"): request_keyframe, the cadence
   by frames and by seconds, and a screen too large to snapshot. A real
   ptygate-sidecar driven over its link (flows_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "flows_fixture.h"
#include "timeutil.h"

/* ---- request_keyframe ---- */

/* The answer to the second of two keyframe requests: 1 for its Keyframe,
   0 for its refusal; anything else fails. */
static int second_also_taken(struct peer *p)
{
	Ptg__LinkMessage *m;

	for (;;) {
		m = peer_must_recv(p, STEP_MS, "the second request's answer");
		if (m->msg_case == PTG__LINK_MESSAGE__MSG_FRAME &&
		    m->frame->kind_case == PTG__FRAME__KIND_KEYFRAME &&
		    m->frame->target_attach_id == 9)
			return 1;
		if (m->msg_case != PTG__LINK_MESSAGE__MSG_FRAME || !is_noise(m->frame))
			break;
	}
	if (m->msg_case != PTG__LINK_MESSAGE__MSG_REPLY)
		describe("unexpected", m);
	assert_int_equal(m->msg_case, PTG__LINK_MESSAGE__MSG_REPLY);
	assert_int_equal(m->reply->code, PTG__ERROR_CODE__RATE_LIMITED);
	assert_int_equal(m->reply->attach_id, 9);
	assert_string_equal(m->reply->client_op_id, "op-kf-2");
	return 0;
}

static void test_request_keyframe(void **state)
{
	struct fixture *fx = *state;
	struct peer *p;
	struct joined j;
	Ptg__Frame *f;
	uint64_t seq;
	char sid[FLOWS_SID_MAX];

	p = start_session(fx, NULL, NULL, sid);
	join_simple(p, sid, 9, PTG__ROLE__ROLE_OBSERVER, "obs", &j);
	expect_quiet(p, 200);
	/* Sent together: the Keyframe, sent as the first is taken, comes
	   before the second's refusal. A loaded machine may let a second
	   pass between the two; the second's Keyframe is then right only if
	   a second passed since they were sent, and the pair goes again. */
	for (int round = 0;; round++) {
		int64_t sent = time_mono_ms();

		send_request_keyframe(p, sid, 9, "op-kf-1");
		send_request_keyframe(p, sid, 9, "op-kf-2");
		f = expect_frame(p, PTG__FRAME__KIND_KEYFRAME, 9, STEP_MS);
		assert_int_equal(f->keyframe->anchor_sequence, f->sequence);
		assert_true(f->sequence > j.kf_seq);
		seq = f->sequence;
		if (!second_also_taken(p))
			break;
		assert_true(time_mono_ms() - sent >= 1000);
		assert_true(round < 4);
		sleep_ms(1100);
	}
	/* The sidecar took the first before its Keyframe left: 1.1 s after
	   it came, a second has passed by the sidecar's clock too. */
	sleep_ms(1100);
	send_request_keyframe(p, sid, 9, "op-kf-3");
	f = expect_frame(p, PTG__FRAME__KIND_KEYFRAME, 9, STEP_MS);
	assert_true(f->sequence > seq);
	/* Unknown attachment. */
	send_request_keyframe(p, sid, 99, "op-kf-4");
	expect_error(p, 0, PTG__ERROR_CODE__NOT_FOUND, 99, "op-kf-4");
}

/* ---- keyframe cadence ---- */

static void test_keyframe_cadence_frames(void **state)
{
	/* Only the frame cadence: a loaded machine can take longer than the
	   default 5 s between two commands, and the time cadence would then
	   send a Keyframe early. */
	static const char *const args[] = {"--keyframe-frames", "5", "--keyframe-seconds",
					   "86400", NULL};
	struct fixture *fx = *state;
	unsigned outputs = 0, keyframes = 0;
	Ptg__LinkMessage *m;
	struct peer *p;
	struct joined j;
	char sid[FLOWS_SID_MAX];

	p = start_shell_controller(fx, args, sid, &j);
	/* Each command waits for the last one's output, so each makes at
	   least one Output frame of its own, however the sidecar's reads fall
	   (a program printing on a timer made fewer, larger frames on a
	   loaded machine). */
	for (int i = 1; i <= 40; i++) {
		char cmd[64], marker[32];

		snprintf(cmd, sizeof(cmd), "echo cadence-$((%d*3))done\n", i);
		snprintf(marker, sizeof(marker), "cadence-%ddone", i * 3);
		send_input(p, sid, 1, cmd, NULL);
		while (!text_find(p, p->text_mark, marker)) {
			m = peer_must_recv(p, STEP_MS, "output of the command");
			assert_int_equal(m->msg_case, PTG__LINK_MESSAGE__MSG_FRAME);
			if (m->frame->kind_case == PTG__FRAME__KIND_OUTPUT) {
				if (++outputs > 5)
					fail_msg("%u Output frames without a Keyframe",
						 outputs);
				continue;
			}
			assert_int_equal(m->frame->kind_case, PTG__FRAME__KIND_KEYFRAME);
			assert_int_equal(m->frame->target_attach_id, 0);
			assert_int_equal(m->frame->keyframe->anchor_sequence,
					 m->frame->sequence);
			/* The first prompt may have been printed before we
			   joined: the sidecar counted it, we did not see it. */
			if (keyframes)
				assert_int_equal(outputs, 5);
			else
				assert_true(outputs >= 1 && outputs <= 5);
			outputs = 0;
			keyframes++;
		}
		p->text_mark =
		    (size_t)(text_find(p, p->text_mark, marker) - p->text.data) +
		    strlen(marker);
	}
	if (keyframes < 3)
		fail_msg("only %u cadence Keyframes during sustained output", keyframes);
}

static void test_keyframe_cadence_seconds(void **state)
{
	static const char *const args[] = {"--keyframe-seconds", "1", NULL};
	struct fixture *fx = *state;
	int64_t first_uncovered = 0, now;
	int done = 0, keyframes = 0, outputs = 0, prompt_keyframe = 0;
	Ptg__LinkMessage *m;
	struct peer *p;
	struct joined j;
	char sid[FLOWS_SID_MAX];

	p = start_shell_controller(fx, args, sid, &j);
	send_input(p, sid, 1,
		   "for i in 1 2 3 4 5 6 7 8 9 10; do echo slow $i; sleep 0.3; done; "
		   "echo slow-$((0))end\n",
		   NULL);
	/* Each Keyframe comes about a second after the first output it does
	   not cover; the loop stops after the one covering the end and the
	   prompt after it (were the prompt its own frame after that
	   Keyframe, it would be output while idle). Times are the sidecar's
	   frame stamps, so a slow test process does not stretch them. */
	while (!(done && !first_uncovered)) {
		m = peer_recv(p, STEP_MS);
		if (!m)
			fail_msg("no Keyframe within %d ms of output", STEP_MS);
		assert_int_equal(m->msg_case, PTG__LINK_MESSAGE__MSG_FRAME);
		now = m->frame->ts_ms;
		if (m->frame->kind_case == PTG__FRAME__KIND_OUTPUT) {
			if (!first_uncovered)
				first_uncovered = now;
			outputs++;
			done = text_find(p, 0, "slow-0end\r\n$ ") != NULL;
			continue;
		}
		assert_int_equal(m->frame->kind_case, PTG__FRAME__KIND_KEYFRAME);
		assert_int_equal(m->frame->target_attach_id, 0);
		assert_int_equal(m->frame->keyframe->anchor_sequence, m->frame->sequence);
		if (!first_uncovered) {
			/* Only the first prompt's, printed before we joined
			   (its Keyframe due a second later, at any point from
			   before our join to after the command's start). */
			if (!outputs && !prompt_keyframe++)
				continue;
			fail_msg("a Keyframe that covers no new output");
		}
		/* About a second, not the default's five: a loaded machine's
		   timers run late, so the bound lies between the two. */
		if (now - first_uncovered > 3500)
			fail_msg("Keyframe %lld ms after the first uncovered output",
				 (long long)(now - first_uncovered));
		first_uncovered = 0;
		keyframes++;
	}
	/* About one per second of output (3 s of it: two at least, were the
	   first up to 2 s late), not one per Output frame. */
	assert_true(keyframes >= 2 && keyframes < outputs);
	/* Idle: no Keyframe, nothing at all. */
	m = peer_recv(p, 3000);
	if (m)
		describe("while idle", m);
	assert_null(m);
}

/* ---- a screen too large to snapshot ---- */

static void test_keyframe_unavailable(void **state)
{
	struct fixture *fx = *state;
	const char *extra[] = {"--keyframe-max-bytes", "1024", NULL};
	struct attach_req a = {.attach_id = 2,
			       .role = PTG__ROLE__ROLE_OBSERVER,
			       .label = "late",
			       .scopes = SC_OBSERVE};
	struct peer *p, *q;
	struct joined j;
	Ptg__Frame *f;
	char sid[FLOWS_SID_MAX];

	p = start_shell_controller(fx, extra, sid, &j);
	/* 24 rows of colour changes in every cell: far over 1 KiB. */
	send_input(
	    p, sid, 1,
	    "i=0; while [ $i -lt 24 ]; do printf '\\033[3%dm#\\033[4%dm#' "
	    "1 2 3 4 5 6 1 2 3 4 5 6 1 2 3 4 5 6 1 2 3 4 5 6 1 2 3 4 5 6 1 2 3 4 5 6 "
	    "1 2 3 4 5 6 1 2 3 4 5 6 1 2 3 4 5 6 1 2 3 4 5 6; i=$((i+1)); done; "
	    "echo painted-$((1+1))\n",
	    NULL);
	wait_output(p, "painted-2", STEP_MS);

	/* The joiner gets the Error in place of its Keyframe; the link, the
	   session and the sidecar carry on. */
	q = peer_open(fx);
	a.session = sid;
	attach_ok(q, &a);
	next_frame(q, PTG__FRAME__KIND_ROLE_ASSIGNED, 2);
	next_membership(q, 2);
	f = next_frame(q, PTG__FRAME__KIND_ERROR, 2);
	assert_int_equal(f->error->code,
			 PTG__FRAME_ERROR_CODE__FRAME_ERROR_KEYFRAME_UNAVAILABLE);
	assert_non_null(strstr(f->error->message, "more than 1024"));
	send_input(p, sid, 1, "clear; echo small-$((1+1))\n", NULL);
	wait_output(p, "small-2", STEP_MS);
	send_request_keyframe(q, sid, 2, "op-kf");
	f = expect_frame(q, PTG__FRAME__KIND_KEYFRAME, 2, STEP_MS);
	assert_true(snapshot_shows(f->keyframe, "small-2"));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    FLOWS_TEST(test_request_keyframe),
	    FLOWS_TEST(test_keyframe_cadence_frames),
	    FLOWS_TEST(test_keyframe_cadence_seconds),
	    FLOWS_TEST(test_keyframe_unavailable),
	};

	return FLOWS_RUN("integration.flows_keyframes", tests);
}
