/* test_flows_keyframes: keyframes (SPEC 8): request_keyframe, the cadence
   by frames and by seconds, and a screen too large to snapshot. A real
   ptygate-sidecar driven over its link (flows_fixture.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "flows_fixture.h"
#include "timeutil.h"

/* ---- request_keyframe ---- */

static void test_request_keyframe(void **state)
{
	struct fixture *fx = *state;
	struct peer *p;
	struct joined j;
	Ptg__Frame *f;
	uint64_t seq;
	char sid[64];

	p = start_session(fx, NULL, NULL, sid);
	join_simple(p, sid, 9, PTG__ROLE__ROLE_OBSERVER, "obs", &j);
	expect_quiet(p, 200);
	send_request_keyframe(p, sid, 9, "op-kf-1");
	f = expect_frame(p, PTG__FRAME__KIND_KEYFRAME, 9, 1000);
	assert_int_equal(f->keyframe->anchor_sequence, f->sequence);
	assert_true(f->sequence > j.kf_seq);
	seq = f->sequence;
	send_request_keyframe(p, sid, 9, "op-kf-2");
	expect_error(p, 0, PTG__ERROR_CODE__RATE_LIMITED, 9, "op-kf-2");
	sleep_ms(1100);
	send_request_keyframe(p, sid, 9, "op-kf-3");
	f = expect_frame(p, PTG__FRAME__KIND_KEYFRAME, 9, 1000);
	assert_true(f->sequence > seq);
	/* Unknown attachment. */
	send_request_keyframe(p, sid, 99, "op-kf-4");
	expect_error(p, 0, PTG__ERROR_CODE__NOT_FOUND, 99, "op-kf-4");
}

/* ---- keyframe cadence ---- */

static void test_keyframe_cadence_frames(void **state)
{
	static const char *const args[] = {"--keyframe-frames", "5", NULL};
	struct fixture *fx = *state;
	unsigned outputs = 0, keyframes = 0;
	Ptg__LinkMessage *m;
	struct peer *p;
	struct joined j;
	char sid[64];

	p = start_shell_controller(fx, args, sid, &j);
	send_input(p, sid, 1,
		   "for i in $(seq 1 200); do echo line $i; sleep 0.01; done; "
		   "echo cadence-$((1+1))done\n",
		   NULL);
	while (!text_find(p, 0, "cadence-2done")) {
		m = peer_must_recv(p, STEP_MS, "output of the loop");
		assert_int_equal(m->msg_case, PTG__LINK_MESSAGE__MSG_FRAME);
		if (m->frame->kind_case == PTG__FRAME__KIND_OUTPUT) {
			if (++outputs > 5)
				fail_msg("%u Output frames without a Keyframe", outputs);
			continue;
		}
		assert_int_equal(m->frame->kind_case, PTG__FRAME__KIND_KEYFRAME);
		assert_int_equal(m->frame->target_attach_id, 0);
		assert_int_equal(m->frame->keyframe->anchor_sequence, m->frame->sequence);
		assert_int_equal(outputs, 5);
		outputs = 0;
		keyframes++;
	}
	if (keyframes < 3)
		fail_msg("only %u cadence Keyframes during sustained output", keyframes);
}

static void test_keyframe_cadence_seconds(void **state)
{
	static const char *const args[] = {"--keyframe-seconds", "1", NULL};
	struct fixture *fx = *state;
	int64_t first_uncovered = 0, now;
	int done = 0, keyframes = 0, outputs = 0;
	Ptg__LinkMessage *m;
	struct peer *p;
	struct joined j;
	char sid[64];

	p = start_shell_controller(fx, args, sid, &j);
	/* Let the Keyframe covering the first prompt (printed before we
	   joined) go by, so every uncovered output below is one we saw. */
	expect_quiet(p, 1300);
	send_input(p, sid, 1,
		   "for i in 1 2 3 4 5 6; do echo slow $i; sleep 0.3; done; "
		   "echo slow-$((0))end\n",
		   NULL);
	/* Each Keyframe comes about a second after the first output it does
	   not cover; the loop stops after the one covering the end. */
	while (!(done && !first_uncovered)) {
		m = peer_recv(p, 1600);
		if (!m)
			fail_msg("no Keyframe within 1.6 s of output");
		now = time_mono_ms();
		assert_int_equal(m->msg_case, PTG__LINK_MESSAGE__MSG_FRAME);
		if (m->frame->kind_case == PTG__FRAME__KIND_OUTPUT) {
			if (!first_uncovered)
				first_uncovered = now;
			outputs++;
			done = text_find(p, 0, "slow-0end") != NULL;
			continue;
		}
		assert_int_equal(m->frame->kind_case, PTG__FRAME__KIND_KEYFRAME);
		assert_int_equal(m->frame->target_attach_id, 0);
		assert_int_equal(m->frame->keyframe->anchor_sequence, m->frame->sequence);
		if (!first_uncovered)
			fail_msg("a Keyframe that covers no new output");
		if (now - first_uncovered > 1500)
			fail_msg("Keyframe %lld ms after the first uncovered output",
				 (long long)(now - first_uncovered));
		first_uncovered = 0;
		keyframes++;
	}
	/* About one per second of output, not one per Output frame. */
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
	char sid[64];

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
