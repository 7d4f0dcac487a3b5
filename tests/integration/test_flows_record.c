/* test_flows_record: what a session's recording holds and how long it
   is kept: output written before anyone joined is in the history (replay
   and the asciicast export), and exited sessions are reaped when due or,
   one at a time, when the sidecar is full, never at a create otherwise.
   A real ptygate-sidecar driven over its link (flows_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "flows_fixture.h"

static const char *sidecar_path;

/* Prints five ticks and exits, before anyone can have joined. */
static const char *const TICKER[] = {"/bin/sh", "-c", "printf 'tick %d\\n' 1 2 3 4 5",
				     NULL};
static const char *const EXIT0[] = {"/bin/sh", "-c", "exit 0", NULL};
static const char *const WAIT[] = {"/bin/sh", "-c", "read x", NULL};

static void create(struct peer *p, const char *const *argv, char sid[FLOWS_SID_MAX])
{
	struct create_req cr = {argv, NULL, 80, 24, PTG__POLICY__POLICY_KEEP_RUNNING};

	create_session(p, &cr, sid);
}

/* Polls GetSession until the session has exited (bounded by the test's
   deadline, which fails the test). */
static void wait_exited(struct peer *p, const char *sid)
{
	while (get_session(p, sid)->state != PTG__SESSION_STATE__SESSION_EXITED) {
		assert_true(remaining_ms(STEP_MS) > 0);
		sleep_ms(50);
	}
}

/* The reply code of a GetSession of sid. */
static Ptg__ErrorCode get_code(struct peer *p, const char *sid)
{
	return expect_reply(p, send_get(p, sid), STEP_MS)->code;
}

/* Runs ptygate-sidecar --export-asciicast sid over dir into out. */
static void export_file(const char *dir, const char *sid, struct buf *out)
{
	char cmd[1024], chunk[4096];
	FILE *f;
	size_t n;

	snprintf(cmd, sizeof(cmd),
		 "'%s' --export-asciicast %s --state-dir %s --state-plaintext",
		 sidecar_path, sid, dir);
	f = popen(cmd, "r");
	assert_non_null(f);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_append(out, chunk, n);
	assert_int_equal(pclose(f), 0);
	buf_append(out, "", 1);
}

/* ---- output before the first join ---- */

static void test_output_before_join(void **state)
{
	struct fixture *fx = *state;
	char dir[] = "/tmp/ptg-it-rec-XXXXXX";
	const char *extra[] = {"--state-dir", dir, "--state-plaintext", NULL};
	struct attach_req a = {.attach_id = 3,
			       .role = PTG__ROLE__ROLE_OBSERVER,
			       .label = "late",
			       .scopes = SC_OBSERVE,
			       .has_replay = 1,
			       .replay_from = 0};
	struct buf cast = BUF_INIT;
	Ptg__AttachResult *ar;
	struct peer *p;
	const char *text;
	char sid[FLOWS_SID_MAX];

	assert_non_null(mkdtemp(dir));
	sidecar_start(fx, extra);
	p = peer_open(fx);
	create(p, TICKER, sid);
	wait_exited(p, sid);
	/* Every tick was numbered although nobody was there to see it. */
	assert_true(get_session(p, sid)->current_sequence >= 2);
	assert_int_equal(get_session(p, sid)->oldest_retained_sequence, 1);

	/* A replay from 0 holds tick 1 onwards. */
	a.session = sid;
	ar = attach_ok(p, &a);
	assert_string_equal(ar->replay_error, "");
	wait_output(p, "tick 1", STEP_MS);
	wait_output(p, "tick 5", STEP_MS);

	/* So does the export of the durable history. */
	export_file(dir, sid, &cast);
	text = (const char *)buf_head(&cast);
	assert_non_null(strstr(text, "\"version\": 2") ? text
						       : strstr(text, "\"version\":2"));
	assert_non_null(strstr(text, "tick 1\\r\\n"));
	assert_non_null(strstr(text, "tick 5\\r\\n"));
	buf_free(&cast);
	assert_int_equal(sidecar_stop(fx), 0);
	remove_tree(dir);
}

/* A silent program's first join is still numbered 1, 2, 3. */
static void test_silent_first_join(void **state)
{
	struct fixture *fx = *state;
	struct peer *p;
	struct joined j;
	char sid[FLOWS_SID_MAX];

	sidecar_start(fx, NULL);
	p = peer_open(fx);
	create(p, WAIT, sid);
	join_simple(p, sid, 1, PTG__ROLE__ROLE_CONTROLLER, "ctl", &j);
	assert_int_equal(j.role_seq, 1);
	assert_int_equal(j.kf_seq, 3);
}

/* ---- reaping ---- */

/* An exited session not yet due stays through later creates, failed or
   not. */
static void test_create_keeps_exited(void **state)
{
	struct fixture *fx = *state;
	const char *extra[] = {"--exited-keep-seconds", "600", NULL};
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__CreateSession c = PTG__CREATE_SESSION__INIT;
	struct peer *p;
	char a[FLOWS_SID_MAX], b[FLOWS_SID_MAX];

	sidecar_start(fx, extra);
	p = peer_open(fx);
	create(p, EXIT0, a);
	wait_exited(p, a);
	create(p, WAIT, b);
	assert_int_equal(get_code(p, a), PTG__ERROR_CODE__OK);

	/* A create that fails (no program) reaps nothing either. */
	c.request_id = ++p->next_rid;
	c.cwd = "/nonexistent/dir";
	c.cols = 80;
	c.rows = 24;
	m.msg_case = PTG__LINK_MESSAGE__MSG_CREATE_SESSION;
	m.create_session = &c;
	peer_send(p, &m);
	assert_int_not_equal(expect_reply(p, c.request_id, STEP_MS)->code,
			     PTG__ERROR_CODE__OK);
	assert_int_equal(get_code(p, a), PTG__ERROR_CODE__OK);
	assert_int_equal(get_code(p, b), PTG__ERROR_CODE__OK);
}

/* Due (--exited-keep-seconds 0): reaped by the sidecar's tick, with no
   create at all. */
static void test_due_reaped(void **state)
{
	struct fixture *fx = *state;
	const char *extra[] = {"--exited-keep-seconds", "0", NULL};
	struct peer *p;
	char a[FLOWS_SID_MAX];

	sidecar_start(fx, extra);
	p = peer_open(fx);
	create(p, EXIT0, a);
	while (get_code(p, a) == PTG__ERROR_CODE__OK) {
		assert_true(remaining_ms(STEP_MS) > 0);
		sleep_ms(100);
	}
	assert_int_equal(get_code(p, a), PTG__ERROR_CODE__NOT_FOUND);
}

/* Full (--max-sessions 2): a create takes the place of the exited session
   that exited first; with none exited, it is refused. */
static void test_full_takes_oldest(void **state)
{
	struct fixture *fx = *state;
	const char *extra[] = {"--max-sessions", "2", "--exited-keep-seconds", "600",
			       NULL};
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__CreateSession c = PTG__CREATE_SESSION__INIT;
	struct peer *p;
	char a[FLOWS_SID_MAX], b[FLOWS_SID_MAX], d[FLOWS_SID_MAX], e[FLOWS_SID_MAX];

	sidecar_start(fx, extra);
	p = peer_open(fx);
	create(p, EXIT0, a);
	wait_exited(p, a);
	create(p, EXIT0, b);
	wait_exited(p, b);
	create(p, WAIT, d); /* in a's place: a exited first */
	assert_int_equal(get_code(p, a), PTG__ERROR_CODE__NOT_FOUND);
	assert_int_equal(get_code(p, b), PTG__ERROR_CODE__OK);
	create(p, WAIT, e); /* in b's place */
	assert_int_equal(get_code(p, b), PTG__ERROR_CODE__NOT_FOUND);

	/* Two running sessions: nothing to let go, the create is refused. */
	c.request_id = ++p->next_rid;
	c.argv = (char **)WAIT;
	c.n_argv = 3;
	c.cols = 80;
	c.rows = 24;
	m.msg_case = PTG__LINK_MESSAGE__MSG_CREATE_SESSION;
	m.create_session = &c;
	peer_send(p, &m);
	assert_int_equal(expect_reply(p, c.request_id, STEP_MS)->code,
			 PTG__ERROR_CODE__RATE_LIMITED);
	assert_int_equal(get_code(p, d), PTG__ERROR_CODE__OK);
	assert_int_equal(get_code(p, e), PTG__ERROR_CODE__OK);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    FLOWS_TEST(test_output_before_join),  FLOWS_TEST(test_silent_first_join),
	    FLOWS_TEST(test_create_keeps_exited), FLOWS_TEST(test_due_reaped),
	    FLOWS_TEST(test_full_takes_oldest),
	};

	sidecar_path = argc > 1 ? argv[1] : "";
	return FLOWS_RUN("flows_record", tests);
}
