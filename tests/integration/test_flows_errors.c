/* test_flows_errors: refusals on the link: malformed input closes the
   link, unknown ids get NOT_FOUND replies. A real ptygate-sidecar driven
   over its link (flows_fixture.h). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "flows_fixture.h"

/* ---- bad input ---- */

static void expect_link_closed(struct peer *p)
{
	int rc = linkclient_wait_eof(&p->lc, remaining_ms(3000));

	if (rc < 0)
		fail_msg("the sidecar did not close the link");
}

static void test_bad_input(void **state)
{
	static const uint8_t garbage[] = {0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t huge[] = {0x01, 0x00, 0x00, 0x01, 'x'};
	static const uint8_t empty[] = {0, 0, 0, 0};
	struct fixture *fx = *state;
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__GetSession g = PTG__GET_SESSION__INIT;
	Ptg__Reply reply = PTG__REPLY__INIT;
	struct peer *good, *bad;
	struct joined j;
	char sid[FLOWS_SID_MAX];

	good = start_shell_controller(fx, NULL, sid, &j);

	bad = peer_open(fx);
	assert_int_equal(linkclient_send_raw(&bad->lc, garbage, sizeof(garbage)), 0);
	expect_link_closed(bad);
	bad = peer_open(fx);
	assert_int_equal(linkclient_send_raw(&bad->lc, huge, sizeof(huge)), 0);
	expect_link_closed(bad);
	bad = peer_open(fx);
	assert_int_equal(linkclient_send_raw(&bad->lc, empty, sizeof(empty)), 0);
	expect_link_closed(bad);
	/* A request before Hello. */
	bad = peer_connect(fx);
	g.request_id = 1;
	g.session_id = sid;
	m.msg_case = PTG__LINK_MESSAGE__MSG_GET_SESSION;
	m.get_session = &g;
	peer_send(bad, &m);
	expect_link_closed(bad);
	/* An unsupported protocol version. */
	bad = peer_connect(fx);
	send_hello(bad, PTG__PROTOCOL_VERSION__PROTOCOL_VERSION_UNSPECIFIED);
	expect_link_closed(bad);
	/* A message only the sidecar sends. */
	bad = peer_open(fx);
	m.msg_case = PTG__LINK_MESSAGE__MSG_REPLY;
	m.reply = &reply;
	peer_send(bad, &m);
	expect_link_closed(bad);

	/* The good link is unaffected, and so is the process. */
	send_input(good, sid, 1, "printf 'still-%s\\n' alive\n", NULL);
	wait_output(good, "still-alive", STEP_MS);
	assert_int_equal(kill(fx->pid, 0), 0);
}

/* Requests naming what does not exist are answered, never fatal. */
static void test_not_found_replies(void **state)
{
	struct fixture *fx = *state;
	struct peer *p;
	struct joined j;
	char sid[FLOWS_SID_MAX];

	p = start_shell_controller(fx, NULL, sid, &j);
	expect_error(p, send_get(p, "no-such-session"), PTG__ERROR_CODE__NOT_FOUND, 0,
		     NULL);
	send_input(p, "no-such-session", 1, "x", "op-nosess");
	expect_error(p, 0, PTG__ERROR_CODE__NOT_FOUND, 1, "op-nosess");
	send_input(p, sid, 999, "x", "op-noattach");
	expect_error(p, 0, PTG__ERROR_CODE__NOT_FOUND, 999, "op-noattach");
	send_resize(p, sid, 999, 80, 24, "op-rz");
	expect_error(p, 0, PTG__ERROR_CODE__NOT_FOUND, 999, "op-rz");
	send_request_role(p, sid, 999, PTG__ROLE__ROLE_CONTROLLER);
	expect_error(p, 0, PTG__ERROR_CODE__NOT_FOUND, 999, "op-role");
	expect_error(p, send_detach(p, sid, 999), PTG__ERROR_CODE__NOT_FOUND, 999,
		     "op-leave");
	send_attach(p, &(struct attach_req){.session = "no-such-session",
					    .attach_id = 5,
					    .role = PTG__ROLE__ROLE_OBSERVER,
					    .scopes = SC_OBSERVE,
					    .op = "op-a"});
	expect_error(p, p->next_rid, PTG__ERROR_CODE__NOT_FOUND, 5, "op-a");
	/* Reusing a live attach id on the same link is refused. */
	send_attach(p, &(struct attach_req){.session = sid,
					    .attach_id = 1,
					    .role = PTG__ROLE__ROLE_OBSERVER,
					    .scopes = SC_OBSERVE,
					    .op = "op-dup"});
	expect_error(p, p->next_rid, PTG__ERROR_CODE__INVALID_REQUEST, 1, "op-dup");
	send_input(p, sid, 1, "printf 'still-%s\\n' alive\n", NULL);
	wait_output(p, "still-alive", STEP_MS);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    FLOWS_TEST(test_bad_input),
	    FLOWS_TEST(test_not_found_replies),
	};

	return FLOWS_RUN("integration.flows_errors", tests);
}
