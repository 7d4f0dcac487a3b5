/* test_flows_roles: roles and control (docs/protocol.md, "Roles"): capacity
   and role requests, the control scope, terminate_on_last_controller,
   resize bounds and the first controller's size. A real ptygate-sidecar
   driven over its link (flows_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "flows_fixture.h"

/* ---- capacity and roles ---- */

static void test_capacity_and_roles(void **state)
{
	static const char *const args[] = {"--max-controllers", "1", "--max-observers",
					   "1", NULL};
	struct fixture *fx = *state;
	struct attach_req third;
	struct peer *a, *b, *c;
	struct joined j;
	Ptg__Frame *f;
	char sid[FLOWS_SID_MAX];

	a = start_session(fx, args, NULL, sid);
	join_simple(a, sid, 1, PTG__ROLE__ROLE_CONTROLLER, "first", &j);
	b = peer_open(fx);
	join_simple(b, sid, 2, PTG__ROLE__ROLE_CONTROLLER, "second", &j);
	assert_int_equal(j.role, PTG__ROLE__ROLE_OBSERVER);
	assert_int_equal(j.ra->role, PTG__ROLE__ROLE_OBSERVER);
	assert_true(j.ra->downgraded);
	assert_true(j.ra->reason[0] != '\0');
	assert_int_equal(j.mc->n_controllers, 1);
	assert_int_equal(j.mc->n_observers, 1);

	/* Full on both counts: RATE_LIMITED, and nothing else follows. */
	c = peer_open(fx);
	third = (struct attach_req){.session = sid,
				    .attach_id = 3,
				    .role = PTG__ROLE__ROLE_OBSERVER,
				    .scopes = SC_OBSERVE,
				    .op = "op-third"};
	send_attach(c, &third);
	expect_error(c, c->next_rid, PTG__ERROR_CODE__RATE_LIMITED, 3, "op-third");
	expect_quiet(c, 300);

	/* Asking for control while it is taken: refused, role stays. */
	send_request_role(b, sid, 2, PTG__ROLE__ROLE_CONTROLLER);
	f = expect_frame(b, PTG__FRAME__KIND_ROLE_ASSIGNED, 2, STEP_MS);
	assert_int_equal(f->role_assigned->role, PTG__ROLE__ROLE_OBSERVER);
	assert_true(f->role_assigned->downgraded);
	assert_true(f->role_assigned->reason[0] != '\0');
	expect_quiet(b, 300);

	/* The controller leaves; now the request is granted. */
	detach_ok(a, sid, 1);
	f = expect_frame(b, PTG__FRAME__KIND_MEMBERSHIP, 0, STEP_MS);
	assert_int_equal(f->membership->n_controllers, 0);
	send_request_role(b, sid, 2, PTG__ROLE__ROLE_CONTROLLER);
	f = expect_frame(b, PTG__FRAME__KIND_ROLE_ASSIGNED, 2, STEP_MS);
	assert_int_equal(f->role_assigned->role, PTG__ROLE__ROLE_CONTROLLER);
	assert_false(f->role_assigned->downgraded);
	f = expect_frame(b, PTG__FRAME__KIND_MEMBERSHIP, 0, STEP_MS);
	assert_int_equal(f->membership->n_controllers, 1);
	assert_int_equal(f->membership->n_observers, 0);
	assert_string_equal(f->membership->controllers[0]->label, "second");
}

static void test_role_needs_control_scope(void **state)
{
	struct fixture *fx = *state;
	struct attach_req req = {.attach_id = 4,
				 .role = PTG__ROLE__ROLE_CONTROLLER,
				 .label = "reader",
				 .scopes = SC_OBSERVE};
	struct peer *p;
	struct joined j;
	Ptg__Frame *f;
	char sid[FLOWS_SID_MAX];

	p = start_session(fx, NULL, NULL, sid);
	req.session = sid;
	join(p, &req, &j);
	assert_int_equal(j.role, PTG__ROLE__ROLE_OBSERVER);
	assert_true(j.ra->downgraded);
	assert_true(j.ra->reason[0] != '\0');
	assert_int_equal(j.mc->n_controllers, 0);
	/* A later request cannot get around the token's scopes. */
	send_request_role(p, sid, 4, PTG__ROLE__ROLE_CONTROLLER);
	f = expect_frame(p, PTG__FRAME__KIND_ROLE_ASSIGNED, 4, STEP_MS);
	assert_int_equal(f->role_assigned->role, PTG__ROLE__ROLE_OBSERVER);
	assert_true(f->role_assigned->downgraded);
	expect_quiet(p, 300);
	/* No scope at all: refused outright. */
	req.attach_id = 5;
	req.scopes = 0;
	req.op = "op-noscope";
	send_attach(p, &req);
	expect_error(p, p->next_rid, PTG__ERROR_CODE__PERMISSION_DENIED, 5, "op-noscope");
}

/* ---- terminate_on_last_controller ---- */

static void test_terminate_on_last_controller(void **state)
{
	struct fixture *fx = *state;
	struct create_req cr = {SH, SH_ENV, 80, 24,
				PTG__POLICY__POLICY_TERMINATE_ON_LAST_CONTROLLER};
	struct peer *c, *o, *c2;
	struct joined j;
	Ptg__Frame *f;
	char sid[FLOWS_SID_MAX], sid2[FLOWS_SID_MAX];

	c = start_session(fx, NULL, &cr, sid);
	join_simple(c, sid, 1, PTG__ROLE__ROLE_CONTROLLER, "ctl", &j);
	o = peer_open(fx);
	join_simple(o, sid, 2, PTG__ROLE__ROLE_OBSERVER, "obs", &j);
	detach_ok(c, sid, 1);
	f = expect_frame(o, PTG__FRAME__KIND_MEMBERSHIP, 0, STEP_MS);
	assert_int_equal(f->membership->n_controllers, 0);
	f = expect_frame(o, PTG__FRAME__KIND_CLOSED, 0, STEP_MS);
	assert_int_equal(f->closed->reason, PTG__CLOSE_REASON__CLOSE_KILLED);

	/* The controller's link dropping counts as leaving too. */
	create_session(o, &cr, sid2);
	c2 = peer_open(fx);
	join_simple(c2, sid2, 3, PTG__ROLE__ROLE_CONTROLLER, "ctl2", &j);
	join_simple(o, sid2, 4, PTG__ROLE__ROLE_OBSERVER, "obs2", &j);
	peer_drop(c2);
	f = expect_frame(o, PTG__FRAME__KIND_MEMBERSHIP, 0, STEP_MS);
	assert_int_equal(f->membership->n_controllers, 0);
	f = expect_frame(o, PTG__FRAME__KIND_CLOSED, 0, STEP_MS);
	assert_string_equal(f->session_id, sid2);
	assert_int_equal(f->closed->reason, PTG__CLOSE_REASON__CLOSE_KILLED);
}

/* ---- resize bounds and the first controller's size ---- */

static void test_resize_bounds(void **state)
{
	struct fixture *fx = *state;
	struct attach_req big = {.attach_id = 2,
				 .role = PTG__ROLE__ROLE_CONTROLLER,
				 .cols = 2000,
				 .rows = 10,
				 .scopes = SC_OBSERVE | SC_CONTROL,
				 .op = "op-big"};
	struct attach_req sized = {.attach_id = 1,
				   .role = PTG__ROLE__ROLE_CONTROLLER,
				   .cols = 100,
				   .rows = 40,
				   .label = "ctl",
				   .scopes = SC_OBSERVE | SC_CONTROL};
	Ptg__AttachResult *ar;
	struct peer *p;
	Ptg__Frame *f;
	char sid[FLOWS_SID_MAX];

	p = start_session(fx, NULL, NULL, sid);
	expect_quiet(p, 200);
	/* The first controller's size differs: Resize before its Keyframe. */
	sized.session = sid;
	ar = attach_ok(p, &sized);
	assert_int_equal(ar->role, PTG__ROLE__ROLE_CONTROLLER);
	next_frame(p, PTG__FRAME__KIND_ROLE_ASSIGNED, 1);
	next_membership(p, 1);
	f = next_frame(p, PTG__FRAME__KIND_RESIZE, 0);
	assert_int_equal(f->resize->cols, 100);
	assert_int_equal(f->resize->rows, 40);
	f = next_frame(p, PTG__FRAME__KIND_KEYFRAME, 1);
	assert_int_equal(f->keyframe->cols, 100);
	assert_int_equal(f->keyframe->rows, 40);

	send_resize(p, sid, 1, 0, 10, "op-r0");
	expect_error(p, 0, PTG__ERROR_CODE__INVALID_REQUEST, 1, "op-r0");
	send_resize(p, sid, 1, 1025, 10, "op-r1");
	expect_error(p, 0, PTG__ERROR_CODE__INVALID_REQUEST, 1, "op-r1");
	send_resize(p, sid, 1, 10, 1025, "op-r2");
	expect_error(p, 0, PTG__ERROR_CODE__INVALID_REQUEST, 1, "op-r2");
	send_resize(p, sid, 1, 1024, 1, "op-r3");
	f = expect_frame(p, PTG__FRAME__KIND_RESIZE, 0, STEP_MS);
	assert_int_equal(f->resize->cols, 1024);
	assert_int_equal(f->resize->rows, 1);
	big.session = sid;
	send_attach(p, &big);
	expect_error(p, p->next_rid, PTG__ERROR_CODE__INVALID_REQUEST, 2, "op-big");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    FLOWS_TEST(test_capacity_and_roles),
	    FLOWS_TEST(test_role_needs_control_scope),
	    FLOWS_TEST(test_terminate_on_last_controller),
	    FLOWS_TEST(test_resize_bounds),
	};

	return FLOWS_RUN("integration.flows_roles", tests);
}
