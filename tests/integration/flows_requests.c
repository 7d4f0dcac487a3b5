/* flows_requests: the link requests the integration tests send and the join
   flows they expect (docs/protocol.md, "Joining a session"; see
   flows_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "flows_fixture.h"

const char *const SH[] = {"/bin/sh", NULL};
const char *const SH_ENV[] = {"PS1=$ ", "PS2=> ", "ENV=", NULL};

void create_session(struct peer *p, const struct create_req *cr, char id[FLOWS_SID_MAX])
{
	create_session_controlled(p, cr, PTG__CONTROL_POLICY__CONTROL_OPEN, id);
}

void create_session_controlled(struct peer *p, const struct create_req *cr,
			       Ptg__ControlPolicy control, char id[FLOWS_SID_MAX])
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__CreateSession c = PTG__CREATE_SESSION__INIT;
	Ptg__EnvVar vars[8], *pv[8];
	char names[8][32];
	Ptg__Reply *r;

	c.request_id = ++p->next_rid;
	c.argv = (char **)cr->argv;
	while (cr->argv[c.n_argv])
		c.n_argv++;
	for (; cr->env && cr->env[c.n_env] && c.n_env < 8; c.n_env++) {
		const char *kv = cr->env[c.n_env], *eq = strchr(kv, '=');

		ptg__env_var__init(&vars[c.n_env]);
		snprintf(names[c.n_env], sizeof(names[0]), "%.*s", (int)(eq - kv), kv);
		vars[c.n_env].name = names[c.n_env];
		vars[c.n_env].value = (char *)eq + 1;
		pv[c.n_env] = &vars[c.n_env];
	}
	c.env = pv;
	c.cols = cr->cols;
	c.rows = cr->rows;
	c.policy = cr->policy;
	c.control_policy = control;
	m.msg_case = PTG__LINK_MESSAGE__MSG_CREATE_SESSION;
	m.create_session = &c;
	peer_send(p, &m);
	r = expect_reply(p, c.request_id, STEP_MS);
	if (r->code != PTG__ERROR_CODE__OK)
		fail_msg("create session: %d %s", r->code, r->message);
	assert_int_equal(r->result_case, PTG__REPLY__RESULT_SESSION);
	snprintf(id, FLOWS_SID_MAX, "%s", r->session->session_id);
}

void create_sh(struct peer *p, unsigned cols, unsigned rows, char id[FLOWS_SID_MAX])
{
	struct create_req cr = {SH, SH_ENV, cols, rows, PTG__POLICY__POLICY_KEEP_RUNNING};

	create_session(p, &cr, id);
}

uint64_t send_attach(struct peer *p, const struct attach_req *a)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Attach at = PTG__ATTACH__INIT;
	Ptg__Scope scopes[2];

	at.request_id = ++p->next_rid;
	at.attach_id = a->attach_id;
	at.session_id = (char *)a->session;
	at.role = a->role;
	at.cols = a->cols;
	at.rows = a->rows;
	at.label = (char *)(a->label ? a->label : "");
	at.principal = "tester";
	if (a->scopes & SC_OBSERVE)
		scopes[at.n_scopes++] = PTG__SCOPE__SCOPE_PTY_OBSERVE;
	if (a->scopes & SC_CONTROL)
		scopes[at.n_scopes++] = PTG__SCOPE__SCOPE_PTY_CONTROL;
	at.scopes = scopes;
	at.has_replay_from = a->has_replay;
	at.replay_from = a->replay_from;
	at.client_op_id = (char *)(a->op ? a->op : "op-join");
	m.msg_case = PTG__LINK_MESSAGE__MSG_ATTACH;
	m.attach = &at;
	peer_send(p, &m);
	return at.request_id;
}

/* Sends the attach and checks its successful Reply. */
Ptg__AttachResult *attach_ok(struct peer *p, const struct attach_req *a)
{
	uint64_t rid = send_attach(p, a);
	Ptg__Reply *r = expect_reply(p, rid, STEP_MS);

	if (r->code != PTG__ERROR_CODE__OK)
		fail_msg("attach: %d %s", r->code, r->message);
	assert_int_equal(r->result_case, PTG__REPLY__RESULT_ATTACH);
	assert_int_equal(r->attach_id, a->attach_id);
	assert_string_equal(r->client_op_id, a->op ? a->op : "op-join");
	assert_true(r->attach->client_id[0] != '\0');
	return r->attach;
}

/* The fresh-join flow: Reply, then RoleAssigned (joiner), MembershipChanged
   (all) and Keyframe (joiner) back to back. */
void join(struct peer *p, const struct attach_req *a, struct joined *j)
{
	Ptg__AttachResult *ar = attach_ok(p, a);
	Ptg__Frame *f;

	assert_string_equal(ar->replay_error, "");
	snprintf(j->client_id, sizeof(j->client_id), "%s", ar->client_id);
	j->role = ar->role;
	f = next_frame(p, PTG__FRAME__KIND_ROLE_ASSIGNED, a->attach_id);
	j->role_seq = f->sequence;
	j->ra = f->role_assigned;
	assert_string_equal(j->ra->client_id, j->client_id);
	assert_int_equal(j->ra->role, ar->role);
	f = next_membership(p, a->attach_id);
	assert_int_equal(f->sequence, j->role_seq + 1);
	j->mc = f->membership;
	f = next_frame(p, PTG__FRAME__KIND_KEYFRAME, a->attach_id);
	assert_int_equal(f->keyframe->anchor_sequence, f->sequence);
	j->kf = f->keyframe;
	j->kf_seq = f->sequence;
}

struct peer *start_session(struct fixture *fx, const char *const *extra,
			   const struct create_req *cr, char sid[FLOWS_SID_MAX])
{
	struct peer *p;

	sidecar_start(fx, extra);
	p = peer_open(fx);
	if (cr)
		create_session(p, cr, sid);
	else
		create_sh(p, 80, 24, sid);
	return p;
}

struct peer *start_shell_controller(struct fixture *fx, const char *const *extra,
				    char sid[FLOWS_SID_MAX], struct joined *j)
{
	struct peer *p = start_session(fx, extra, NULL, sid);

	join_simple(p, sid, 1, PTG__ROLE__ROLE_CONTROLLER, "ctl", j);
	return p;
}

void join_simple(struct peer *p, const char *sid, uint64_t aid, Ptg__Role role,
		 const char *label, struct joined *j)
{
	struct attach_req a = {
	    .session = sid,
	    .attach_id = aid,
	    .role = role,
	    .label = label,
	    .scopes = SC_OBSERVE | (role == PTG__ROLE__ROLE_CONTROLLER ? SC_CONTROL : 0),
	};

	join(p, &a, j);
}

void send_input(struct peer *p, const char *sid, uint64_t aid, const char *data,
		const char *op)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Input in = PTG__INPUT__INIT;

	in.attach_id = aid;
	in.session_id = (char *)sid;
	in.data.data = (uint8_t *)data;
	in.data.len = strlen(data);
	in.client_op_id = (char *)(op ? op : "");
	m.msg_case = PTG__LINK_MESSAGE__MSG_INPUT;
	m.input = &in;
	peer_send(p, &m);
}

void send_resize(struct peer *p, const char *sid, uint64_t aid, unsigned cols,
		 unsigned rows, const char *op)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Resize rz = PTG__RESIZE__INIT;

	rz.attach_id = aid;
	rz.session_id = (char *)sid;
	rz.cols = cols;
	rz.rows = rows;
	rz.client_op_id = (char *)(op ? op : "");
	m.msg_case = PTG__LINK_MESSAGE__MSG_RESIZE;
	m.resize = &rz;
	peer_send(p, &m);
}

void send_request_role(struct peer *p, const char *sid, uint64_t aid, Ptg__Role role)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__RequestRole rr = PTG__REQUEST_ROLE__INIT;

	rr.attach_id = aid;
	rr.session_id = (char *)sid;
	rr.role = role;
	rr.client_op_id = "op-role";
	m.msg_case = PTG__LINK_MESSAGE__MSG_REQUEST_ROLE;
	m.request_role = &rr;
	peer_send(p, &m);
}

void send_request_keyframe(struct peer *p, const char *sid, uint64_t aid, const char *op)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__RequestKeyframe rk = PTG__REQUEST_KEYFRAME__INIT;

	rk.attach_id = aid;
	rk.session_id = (char *)sid;
	rk.client_op_id = (char *)op;
	m.msg_case = PTG__LINK_MESSAGE__MSG_REQUEST_KEYFRAME;
	m.request_keyframe = &rk;
	peer_send(p, &m);
}

void send_lag_recovery(struct peer *p, const char *sid, uint64_t aid, uint64_t dropped)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__RequestKeyframe rk = PTG__REQUEST_KEYFRAME__INIT;

	rk.attach_id = aid;
	rk.session_id = (char *)sid;
	rk.client_op_id = "";
	rk.lag_recovery = 1;
	rk.lag_dropped_bytes = dropped;
	m.msg_case = PTG__LINK_MESSAGE__MSG_REQUEST_KEYFRAME;
	m.request_keyframe = &rk;
	peer_send(p, &m);
}

uint64_t send_detach(struct peer *p, const char *sid, uint64_t aid)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Detach d = PTG__DETACH__INIT;

	d.request_id = ++p->next_rid;
	d.attach_id = aid;
	d.session_id = (char *)sid;
	d.client_op_id = "op-leave";
	m.msg_case = PTG__LINK_MESSAGE__MSG_DETACH;
	m.detach = &d;
	peer_send(p, &m);
	return d.request_id;
}

/* Detach: the final MembershipChanged reaches the leaver's link, then
   the Reply. Returns the last membership before the Reply (earlier ones
   may still be queued from other joins). */
Ptg__MembershipChangedFrame *detach_ok(struct peer *p, const char *sid, uint64_t aid)
{
	uint64_t rid = send_detach(p, sid, aid);
	Ptg__MembershipChangedFrame *mc = NULL;
	Ptg__LinkMessage *m;

	for (;;) {
		m = peer_must_recv(p, STEP_MS, "the detach reply");
		if (m->msg_case == PTG__LINK_MESSAGE__MSG_REPLY &&
		    m->reply->request_id == rid)
			break;
		assert_int_equal(m->msg_case, PTG__LINK_MESSAGE__MSG_FRAME);
		if (m->frame->kind_case == PTG__FRAME__KIND_MEMBERSHIP &&
		    !m->frame->target_attach_id)
			mc = m->frame->membership;
		else if (!is_noise(m->frame))
			fail_msg("unexpected %s before the detach reply",
				 kind_name(m->frame));
	}
	if (!mc)
		fail_msg("the leaver's link got no MembershipChanged before the Reply");
	assert_int_equal(m->reply->code, PTG__ERROR_CODE__OK);
	assert_int_equal(m->reply->attach_id, aid);
	assert_string_equal(m->reply->client_op_id, "op-leave");
	return mc;
}

uint64_t send_get(struct peer *p, const char *sid)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__GetSession g = PTG__GET_SESSION__INIT;

	g.request_id = ++p->next_rid;
	g.session_id = (char *)sid;
	m.msg_case = PTG__LINK_MESSAGE__MSG_GET_SESSION;
	m.get_session = &g;
	peer_send(p, &m);
	return g.request_id;
}

Ptg__SessionInfo *get_session(struct peer *p, const char *sid)
{
	Ptg__Reply *r = expect_reply(p, send_get(p, sid), STEP_MS);

	if (r->code != PTG__ERROR_CODE__OK)
		fail_msg("get session: %d %s", r->code, r->message);
	assert_int_equal(r->result_case, PTG__REPLY__RESULT_SESSION);
	return r->session;
}

void kill_session(struct peer *p, const char *sid)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__KillSession k = PTG__KILL_SESSION__INIT;
	Ptg__Reply *r;

	k.request_id = ++p->next_rid;
	k.session_id = (char *)sid;
	m.msg_case = PTG__LINK_MESSAGE__MSG_KILL_SESSION;
	m.kill_session = &k;
	peer_send(p, &m);
	r = expect_reply(p, k.request_id, STEP_MS);
	assert_int_equal(r->code, PTG__ERROR_CODE__OK);
}

/* The out-of-range flow: Reply with replay_error, then Keyframe,
   RoleAssigned, MembershipChanged. Returns the replay_error. */
const char *join_out_of_range(struct peer *p, const struct attach_req *a)
{
	Ptg__AttachResult *ar = attach_ok(p, a);
	Ptg__Frame *kf, *ra, *mc;

	assert_true(ar->replay_error[0] != '\0');
	kf = next_frame(p, PTG__FRAME__KIND_KEYFRAME, a->attach_id);
	assert_int_equal(kf->keyframe->anchor_sequence, kf->sequence);
	ra = next_frame(p, PTG__FRAME__KIND_ROLE_ASSIGNED, a->attach_id);
	assert_int_equal(ra->sequence, kf->sequence + 1);
	assert_string_equal(ra->role_assigned->client_id, ar->client_id);
	mc = next_membership(p, a->attach_id);
	assert_int_equal(mc->sequence, ra->sequence + 1);
	return ar->replay_error;
}
