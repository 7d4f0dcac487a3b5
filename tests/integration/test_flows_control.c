/* test_flows_control: the approve control policy over the link: the
   HelloAck offers it; an observer's ask is answered "waiting" and every
   link of the session gets the pending list (ControlNotice); an
   observer's DecideControl is refused; a controller's deny and approve
   (the asker's RoleAssigned and the membership); a request lapses after
   --control-seconds; a dropped link withdraws its asker's request, and
   the oldest asker takes over from the last controller. A real
   ptygate-sidecar driven over its link (flows_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "flows_fixture.h"

/* A sidecar with an approve session, "ctl" controlling it on link a
   (attach 1), and "obs" (pty:control, as observer) on link b (attach 2). */
static void approve_session(struct fixture *fx, const char *const *extra,
			    char sid[FLOWS_SID_MAX], struct peer **a, struct peer **b,
			    char obs_id[32])
{
	struct create_req cr = {SH, SH_ENV, 80, 24, PTG__POLICY__POLICY_KEEP_RUNNING};
	struct attach_req o = {.attach_id = 2,
			       .role = PTG__ROLE__ROLE_OBSERVER,
			       .label = "obs",
			       .scopes = SC_OBSERVE | SC_CONTROL};
	struct joined j;

	sidecar_start(fx, extra);
	*a = peer_open(fx);
	create_session_controlled(*a, &cr, PTG__CONTROL_POLICY__CONTROL_APPROVE, sid);
	join_simple(*a, sid, 1, PTG__ROLE__ROLE_CONTROLLER, "ctl", &j);
	*b = peer_open(fx);
	o.session = sid;
	join(*b, &o, &j);
	snprintf(obs_id, 32, "%s", j.client_id);
}

/* The next ControlNotice on p, skipping frames (output, membership). */
static Ptg__ControlNotice *expect_notice(struct peer *p, Ptg__ControlEventKind event)
{
	for (;;) {
		Ptg__LinkMessage *m = peer_must_recv(p, STEP_MS, "a ControlNotice");

		if (m->msg_case == PTG__LINK_MESSAGE__MSG_FRAME)
			continue;
		if (m->msg_case != PTG__LINK_MESSAGE__MSG_CONTROL_NOTICE) {
			describe("unexpected", m);
			fail_msg("expected a ControlNotice");
		}
		if (m->control_notice->event == event)
			return m->control_notice;
	}
}

/* The next frame of kind for target, skipping notices and noise. */
static Ptg__Frame *expect_for(struct peer *p, Ptg__Frame__KindCase kind, uint64_t target)
{
	for (;;) {
		Ptg__LinkMessage *m = peer_must_recv(p, STEP_MS, "a frame");

		if (m->msg_case == PTG__LINK_MESSAGE__MSG_FRAME &&
		    m->frame->kind_case == kind && m->frame->target_attach_id == target)
			return m->frame;
	}
}

static uint64_t decide(struct peer *p, const char *sid, uint64_t aid, const char *who,
		       int approve)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__DecideControl dc = PTG__DECIDE_CONTROL__INIT;

	dc.request_id = ++p->next_rid;
	dc.attach_id = aid;
	dc.session_id = (char *)sid;
	dc.client_op_id = "d1";
	dc.client_id = (char *)who;
	dc.approve = approve;
	m.msg_case = PTG__LINK_MESSAGE__MSG_DECIDE_CONTROL;
	m.decide_control = &dc;
	peer_send(p, &m);
	return dc.request_id;
}

static Ptg__ErrorCode decided(struct peer *p, uint64_t rid)
{
	for (;;) {
		Ptg__LinkMessage *m = peer_must_recv(p, STEP_MS, "the decision's reply");

		if (m->msg_case == PTG__LINK_MESSAGE__MSG_REPLY &&
		    m->reply->request_id == rid)
			return m->reply->code;
	}
}

static void ask(struct peer *a, struct peer *b, const char *sid, const char *obs_id)
{
	Ptg__ControlNotice *n;
	Ptg__Frame *f;

	send_request_role(b, sid, 2, PTG__ROLE__ROLE_CONTROLLER);
	f = expect_for(b, PTG__FRAME__KIND_ROLE_ASSIGNED, 2);
	assert_int_equal(f->role_assigned->role, PTG__ROLE__ROLE_OBSERVER);
	assert_true(f->role_assigned->downgraded);
	assert_string_equal(f->role_assigned->reason,
			    "waiting for a controller's approval");
	n = expect_notice(a, PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_REQUESTED);
	assert_int_equal(n->target_attach_id, 0);
	assert_int_equal(n->n_pending, 1);
	assert_string_equal(n->pending[0]->client_id, obs_id);
	assert_string_equal(n->pending[0]->label, "obs");
	assert_string_equal(n->client_id, obs_id);
	expect_notice(b, PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_REQUESTED);
}

static void test_deny_then_approve(void **state)
{
	struct fixture *fx = *state;
	struct peer *a, *b;
	Ptg__ControlNotice *n;
	Ptg__Frame *f;
	char sid[FLOWS_SID_MAX], obs[32];

	approve_session(fx, NULL, sid, &a, &b, obs);
	ask(a, b, sid, obs);
	assert_int_equal(decided(b, decide(b, sid, 2, obs, 1)),
			 PTG__ERROR_CODE__PERMISSION_DENIED);

	assert_int_equal(decided(a, decide(a, sid, 1, obs, 0)), PTG__ERROR_CODE__OK);
	f = expect_for(b, PTG__FRAME__KIND_ROLE_ASSIGNED, 2);
	assert_int_equal(f->role_assigned->role, PTG__ROLE__ROLE_OBSERVER);
	assert_non_null(strstr(f->role_assigned->reason, "denied"));
	n = expect_notice(a, PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_DENIED);
	assert_int_equal(n->n_pending, 0);
	assert_string_equal(n->by_label, "ctl");
	assert_int_equal(decided(a, decide(a, sid, 1, obs, 1)),
			 PTG__ERROR_CODE__INVALID_REQUEST);

	ask(a, b, sid, obs);
	assert_int_equal(decided(a, decide(a, sid, 1, obs, 1)), PTG__ERROR_CODE__OK);
	f = expect_for(b, PTG__FRAME__KIND_ROLE_ASSIGNED, 2);
	assert_int_equal(f->role_assigned->role, PTG__ROLE__ROLE_CONTROLLER);
	f = expect_for(b, PTG__FRAME__KIND_MEMBERSHIP, 0);
	assert_int_equal(f->membership->n_controllers, 2);
	expect_notice(b, PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_APPROVED);
	assert_int_equal(get_session(peer_open(fx), sid)->control_policy,
			 PTG__CONTROL_POLICY__CONTROL_APPROVE);
}

static void test_request_lapses(void **state)
{
	static const char *const args[] = {"--control-seconds", "1", NULL};
	struct fixture *fx = *state;
	struct peer *a, *b;
	Ptg__Frame *f;
	char sid[FLOWS_SID_MAX], obs[32];

	approve_session(fx, args, sid, &a, &b, obs);
	ask(a, b, sid, obs);
	assert_string_equal(
	    expect_notice(a, PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_EXPIRED)->client_id,
	    obs);
	f = expect_for(b, PTG__FRAME__KIND_ROLE_ASSIGNED, 2);
	assert_non_null(
	    strstr(f->role_assigned->reason, "no controller answered within 1 s"));
}

static void test_link_drop_withdraws_and_last_controller_hands_over(void **state)
{
	struct fixture *fx = *state;
	struct attach_req third = {.attach_id = 3,
				   .role = PTG__ROLE__ROLE_CONTROLLER,
				   .label = "late",
				   .scopes = SC_OBSERVE | SC_CONTROL};
	struct peer *a, *b, *c;
	struct joined j;
	Ptg__ControlNotice *n;
	Ptg__Frame *f;
	char sid[FLOWS_SID_MAX], obs[32];

	approve_session(fx, NULL, sid, &a, &b, obs);
	/* A join asking for control waits too, and its link's drop withdraws it. */
	c = peer_open(fx);
	third.session = sid;
	join(c, &third, &j);
	assert_int_equal(j.role, PTG__ROLE__ROLE_OBSERVER);
	assert_string_equal(j.ra->reason, "waiting for a controller's approval");
	n = expect_notice(a, PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_REQUESTED);
	assert_string_equal(n->label, "late");
	peer_drop(c);
	n = expect_notice(a, PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_WITHDRAWN);
	assert_string_equal(n->label, "late");
	assert_int_equal(n->n_pending, 0);

	ask(a, b, sid, obs);
	peer_drop(a);
	f = expect_for(b, PTG__FRAME__KIND_ROLE_ASSIGNED, 2);
	assert_int_equal(f->role_assigned->role, PTG__ROLE__ROLE_CONTROLLER);
	n = expect_notice(b, PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_APPROVED);
	assert_string_equal(n->by_client_id, "");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    FLOWS_TEST(test_deny_then_approve),
	    FLOWS_TEST(test_request_lapses),
	    FLOWS_TEST(test_link_drop_withdraws_and_last_controller_hands_over),
	};

	return FLOWS_RUN("flows_control", tests);
}
