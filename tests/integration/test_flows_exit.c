/* test_flows_exit: the end of a program and of a session: program exit,
   KillSession (also of a program that ignores SIGHUP), and output drained
   while unattached. A real ptygate-sidecar driven over its link
   (flows_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "flows_fixture.h"
#include "timeutil.h"

/* ---- program exit ---- */

static void test_program_exit(void **state)
{
	struct fixture *fx = *state;
	struct attach_req late = {.attach_id = 2,
				  .role = PTG__ROLE__ROLE_CONTROLLER,
				  .label = "late",
				  .scopes = SC_OBSERVE | SC_CONTROL};
	Ptg__SessionInfo *info;
	struct peer *p, *q;
	struct joined j;
	Ptg__Frame *f;
	char sid[FLOWS_SID_MAX];

	p = start_shell_controller(fx, NULL, sid, &j);
	send_input(p, sid, 1, "printf 'final-%s\\n' screen; exit 3\n", NULL);
	f = expect_frame(p, PTG__FRAME__KIND_CLOSED, 0, STEP_MS);
	assert_true(f->closed->has_exit_code);
	assert_int_equal(f->closed->exit_code, 3);
	assert_int_equal(f->closed->reason, PTG__CLOSE_REASON__CLOSE_NORMAL);
	assert_non_null(text_find(p, 0, "final-screen"));
	info = get_session(p, sid);
	assert_int_equal(info->state, PTG__SESSION_STATE__SESSION_EXITED);
	assert_true(info->has_exit_code);
	assert_int_equal(info->exit_code, 3);
	assert_true(info->exited_at_ms > 0);

	/* Joining the exited session: observer, final screen, then Closed. */
	q = peer_open(fx);
	late.session = sid;
	join(q, &late, &j);
	assert_int_equal(j.role, PTG__ROLE__ROLE_OBSERVER);
	assert_true(j.ra->downgraded);
	assert_true(j.ra->reason[0] != '\0');
	assert_true(snapshot_shows(j.kf, "final-screen"));
	f = next_frame(q, PTG__FRAME__KIND_CLOSED, 2);
	assert_int_equal(f->sequence, j.kf_seq + 1);
	assert_int_equal(f->closed->exit_code, 3);
	assert_int_equal(f->closed->reason, PTG__CLOSE_REASON__CLOSE_NORMAL);
}

static void test_kill_session(void **state)
{
	static const char *const args[] = {"--kill-grace-ms", "500", NULL};
	struct fixture *fx = *state;
	Ptg__SessionInfo *info;
	struct peer *p;
	struct joined j;
	Ptg__Frame *f;
	char sid[FLOWS_SID_MAX];

	p = start_shell_controller(fx, args, sid, &j);
	expect_quiet(p, 200);
	kill_session(p, sid);
	f = expect_frame(p, PTG__FRAME__KIND_CLOSED, 0, STEP_MS);
	assert_int_equal(f->closed->reason, PTG__CLOSE_REASON__CLOSE_KILLED);
	info = get_session(p, sid);
	assert_int_equal(info->state, PTG__SESSION_STATE__SESSION_EXITED);
	assert_int_equal(info->close_reason, PTG__CLOSE_REASON__CLOSE_KILLED);
	/* A program that ignores the hang-up is killed after the grace. */
	send_input(p, sid, 1, "x\n", "op-dead");
	f = expect_frame(p, PTG__FRAME__KIND_ERROR, 1, STEP_MS);
	assert_int_equal(f->error->code,
			 PTG__FRAME_ERROR_CODE__FRAME_ERROR_PTY_WRITE_FAILED);
}

static void test_kill_ignores_hangup(void **state)
{
	static const char *const args[] = {"--kill-grace-ms", "500", NULL};
	static const char *const stubborn[] = {"/bin/sh", "-c",
					       "trap '' HUP TERM; echo stubborn-$((1)); "
					       "while :; do sleep 0.1; done",
					       NULL};
	struct create_req cr = {stubborn, NULL, 80, 24, PTG__POLICY__POLICY_KEEP_RUNNING};
	struct fixture *fx = *state;
	struct peer *p;
	struct joined j;
	Ptg__Frame *f;
	int64_t t0;
	char sid[FLOWS_SID_MAX];

	p = start_session(fx, args, &cr, sid);
	join_simple(p, sid, 1, PTG__ROLE__ROLE_OBSERVER, "obs", &j);
	/* The trap is set once the program has printed its line (before the
	   join, in the Keyframe, or after it): a sleep did not make sure on
	   a loaded machine, and SIGHUP then ended it at once. */
	if (!snapshot_shows(j.kf, "stubborn-1"))
		wait_output(p, "stubborn-1", STEP_MS);
	t0 = time_mono_ms();
	kill_session(p, sid);
	f = expect_frame(p, PTG__FRAME__KIND_CLOSED, 0, STEP_MS);
	assert_int_equal(f->closed->reason, PTG__CLOSE_REASON__CLOSE_KILLED);
	assert_true(time_mono_ms() - t0 >= 400);
}

/* ---- drained while unattached ---- */

/* The sidecar is built like this test; under ASan its screen model runs
   at a few MB/s, so the volume is cut to stay within the time bound. */
#ifdef __SANITIZE_ADDRESS__
#define HEAVY_BYTES "6000000"
#else
#define HEAVY_BYTES "50000000"
#endif

static void test_drained_unattached(void **state)
{
	static const char *const heavy[] = {
	    "/bin/sh", "-c",
	    "head -c 20000000 /dev/zero | od -v | head -c " HEAVY_BYTES
	    " >/dev/tty; echo finished",
	    NULL};
	struct create_req cr = {heavy, NULL, 80, 24, PTG__POLICY__POLICY_KEEP_RUNNING};
	struct fixture *fx = *state;
	Ptg__SessionInfo *info;
	struct joined j;
	struct peer *p;
	char sid[FLOWS_SID_MAX];
	int64_t until;

	p = start_session(fx, NULL, &cr, sid);
	until = time_mono_ms() + 60000;
	do {
		sleep_ms(100);
		info = get_session(p, sid);
	} while (info->state != PTG__SESSION_STATE__SESSION_EXITED &&
		 time_mono_ms() < until);
	if (info->state != PTG__SESSION_STATE__SESSION_EXITED)
		fail_msg("the unattached session stalled (sequence %llu)",
			 (unsigned long long)info->current_sequence);
	assert_true(info->has_exit_code);
	assert_int_equal(info->exit_code, 0);
	/* Everything was read: the final screen ends with the last line. */
	join_simple(p, sid, 1, PTG__ROLE__ROLE_OBSERVER, "late", &j);
	assert_true(snapshot_shows(j.kf, "finished"));
	assert_int_equal(next_frame(p, PTG__FRAME__KIND_CLOSED, 1)->closed->exit_code, 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    FLOWS_TEST(test_program_exit),
	    FLOWS_TEST(test_kill_session),
	    FLOWS_TEST(test_kill_ignores_hangup),
	    FLOWS_TEST(test_drained_unattached),
	};

	return FLOWS_RUN("integration.flows_exit", tests);
}
