/* join: attachments of a session: the three join flows in their exact order
   (docs/protocol.md, "Joining a session"), leave, role requests and
   keyframe requests. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "ptg_limits.h"
#include "session_int.h"
#include "timeutil.h"
#include "wire.h"

static int has_scope(const Ptg__Attach *a, Ptg__Scope want)
{
	for (size_t i = 0; i < a->n_scopes; i++)
		if (a->scopes[i] == want)
			return 1;
	return 0;
}

/* ---- attach ---- */

/* The first controller's size is applied before its Keyframe
   (docs/protocol.md, "Client ops"). */
static void apply_join_size(struct session *s, const struct member *m, unsigned cols,
			    unsigned rows)
{
	int rc;

	if (m->role != MEMBER_CONTROLLER || !cols || s->exited ||
	    members_count(s->members, MEMBER_CONTROLLER) != 1 ||
	    (cols == s->cols && rows == s->rows))
		return;
	rc = session_apply_size(s, cols, rows);
	if (rc < 0)
		log_warn(s->log_ctx, "join size %ux%u: %s", cols, rows, strerror(-rc));
}

static int check_attach(struct session *s, struct linkconn *lc, const Ptg__Attach *a)
{
	const char *why = NULL;
	Ptg__ErrorCode code = PTG__ERROR_CODE__INVALID_REQUEST;

	if (a->role != PTG__ROLE__ROLE_CONTROLLER && a->role != PTG__ROLE__ROLE_OBSERVER)
		why = "role must be controller or observer";
	else if ((a->cols || a->rows) && !PTG_DIM_OK(a->cols, a->rows))
		why = "cols and rows must be 1 to " PTG_STR(PTG_DIM_MAX);
	else if (!a->attach_id || members_find(s->members, lc, a->attach_id))
		why = "attach id missing or already in use";
	else if (!has_scope(a, PTG__SCOPE__SCOPE_PTY_OBSERVE) &&
		 !has_scope(a, PTG__SCOPE__SCOPE_PTY_CONTROL)) {
		why = "the token grants neither pty:observe nor pty:control";
		code = PTG__ERROR_CODE__PERMISSION_DENIED;
	}
	if (!why)
		return 0;
	wire_send_error(lc, a->request_id, a->attach_id, a->client_op_id, code, "%s",
			why);
	return -EINVAL;
}

static void describe_out_of_range(struct session *s, uint64_t n, char *out, size_t len)
{
	if (n > s->seq)
		snprintf(out, len,
			 "replay_from=%llu is ahead of the current sequence "
			 "(sequence=%llu)",
			 (unsigned long long)n, (unsigned long long)s->seq);
	else
		snprintf(out, len,
			 "replay_from=%llu precedes oldest retained frame "
			 "(sequence=%llu)",
			 (unsigned long long)n,
			 (unsigned long long)session_state_oldest(s));
}

static void send_attach_reply(struct session *s, struct linkconn *lc,
			      const Ptg__Attach *a, const struct member *m,
			      const char *replay_error)
{
	Ptg__Reply r = PTG__REPLY__INIT;
	Ptg__AttachResult ar = PTG__ATTACH_RESULT__INIT;

	ar.client_id = (char *)m->client_id;
	ar.role = session_wire_role(m->role);
	ar.replay_error = (char *)replay_error;
	ar.current_sequence = s->seq;
	r.request_id = a->request_id;
	r.attach_id = a->attach_id;
	r.client_op_id = a->client_op_id;
	r.code = PTG__ERROR_CODE__OK;
	r.result_case = PTG__REPLY__RESULT_ATTACH;
	r.attach = &ar;
	wire_send_reply(lc, &r);
}

static struct member *admit(struct session *s, struct linkconn *lc, const Ptg__Attach *a,
			    bool *downgraded, const char **reason)
{
	enum member_role want =
	    a->role == PTG__ROLE__ROLE_CONTROLLER ? MEMBER_CONTROLLER : MEMBER_OBSERVER;
	const char *not_owner = session_control_owner_refusal(s, a->principal);
	int may_control =
	    has_scope(a, PTG__SCOPE__SCOPE_PTY_CONTROL) && !s->exited && !not_owner;
	/* Under approve, a controller's join waits for approval as an observer. */
	bool asks = want == MEMBER_CONTROLLER && session_control_gates(s, may_control);
	struct member *m;

	m = members_join(s->members, lc, a->attach_id, asks ? MEMBER_OBSERVER : want,
			 may_control, a->label, downgraded, reason);
	if (m && asks) {
		m->asks_control = true;
		*downgraded = true;
		*reason = session_control_wait_reason();
	}
	if (m && not_owner) {
		m->not_owner = true;
		if (want == MEMBER_CONTROLLER &&
		    has_scope(a, PTG__SCOPE__SCOPE_PTY_CONTROL))
			*reason = not_owner;
	}
	if (m && s->exited && want == MEMBER_CONTROLLER) {
		*downgraded = true;
		*reason = "the session has exited";
	}
	return m;
}

/* The join flow after the replay: the join size, the Keyframe,
   MembershipChanged, and Closed for an exited session. */
static void join_after_replay(struct session *s, struct member *m, unsigned cols,
			      unsigned rows)
{
	apply_join_size(s, m, cols, rows);
	session_emit_keyframe(s, m);
	session_emit_membership_joined(s, m);
	session_control_joined(s, m);
	if (s->exited)
		session_emit_closed(s, m);
}

void session_attach(struct session *s, struct linkconn *lc, const Ptg__Attach *a)
{
	char replay_error[WIRE_MSG_MAX] = "";
	bool downgraded, replay;
	const char *reason;
	struct member *m;

	if (check_attach(s, lc, a) < 0)
		return;
	replay = a->has_replay_from;
	if (replay && session_state_check_replay(s, a->replay_from) < 0) {
		describe_out_of_range(s, a->replay_from, replay_error,
				      sizeof(replay_error));
		replay = 0;
	}
	m = admit(s, lc, a, &downgraded, &reason);
	if (!m) {
		wire_send_error(lc, a->request_id, a->attach_id, a->client_op_id,
				PTG__ERROR_CODE__RATE_LIMITED,
				"session is full (%u controllers, %u observers)",
				members_count(s->members, MEMBER_CONTROLLER),
				members_count(s->members, MEMBER_OBSERVER));
		return;
	}
	log_info(s->log_ctx, "audit: attach principal=%s client=%s role=%s trace=%s",
		 a->principal, m->client_id,
		 m->role == MEMBER_CONTROLLER ? "controller" : "observer", a->trace_id);
	send_attach_reply(s, lc, a, m, replay_error);
	if (replay_error[0]) {
		apply_join_size(s, m, a->cols, a->rows);
		session_emit_keyframe(s, m);
		session_emit_role(s, m, downgraded, reason);
		session_emit_membership_joined(s, m);
	} else if (replay) {
		session_emit_role(s, m, downgraded, reason);
		/* History older than memory streams over later loop turns;
		   the flow goes on in join_after_replay. */
		if (session_replay_start(s, m, a->replay_from, a->cols, a->rows,
					 join_after_replay))
			return;
		session_state_replay(s, lc, a->attach_id, a->replay_from);
		join_after_replay(s, m, a->cols, a->rows);
		return;
	} else {
		session_emit_role(s, m, downgraded, reason);
		session_emit_membership_joined(s, m);
		apply_join_size(s, m, a->cols, a->rows);
		session_emit_keyframe(s, m);
	}
	session_control_joined(s, m);
	if (s->exited)
		session_emit_closed(s, m);
}

/* ---- leave ---- */

static int link_has_member(struct session *s, struct linkconn *lc)
{
	for (struct member *m = members_first(s->members); m;
	     m = members_next(s->members, m))
		if (m->link == lc)
			return 1;
	return 0;
}

/* A member left: end the session by policy. */
static void after_leave(struct session *s, bool was_controller)
{
	if (was_controller &&
	    s->policy == PTG__POLICY__POLICY_TERMINATE_ON_LAST_CONTROLLER &&
	    !members_count(s->members, MEMBER_CONTROLLER) && !s->exited)
		session_kill(s,
			     "the last controller left (terminate_on_last_controller)");
}

int session_detach(struct session *s, struct linkconn *lc, uint64_t attach_id,
		   uint64_t reply_request_id, const char *client_op_id)
{
	struct member *m = members_find(s->members, lc, attach_id);
	bool was_controller;

	if (!m)
		return -ENOENT;
	log_info(s->log_ctx, "audit: leave client=%s role=%s", m->client_id,
		 m->role == MEMBER_CONTROLLER ? "controller" : "observer");
	session_replay_cancel(s, m);
	was_controller = m->role == MEMBER_CONTROLLER;
	members_leave(s->members, m);
	session_emit_membership(s);
	session_control_prune(s);
	/* The leaver sees the final membership too (docs/protocol.md,
	   "Client ops": pty.leave_session), even when it was its link's last member here.
	 */
	if (!link_has_member(s, lc))
		wire_send_frame(lc, buf_head(&s->pack), buf_size(&s->pack), 0);
	if (reply_request_id)
		wire_send_error(lc, reply_request_id, attach_id, client_op_id,
				PTG__ERROR_CODE__OK, "left");
	after_leave(s, was_controller);
	return 0;
}

void session_drop_link(struct session *s, struct linkconn *lc)
{
	unsigned controllers = members_count(s->members, MEMBER_CONTROLLER);

	session_replay_cancel_link(s, lc);
	if (!members_drop_link(s->members, lc))
		return;
	session_emit_membership(s);
	session_control_prune(s);
	after_leave(s, members_count(s->members, MEMBER_CONTROLLER) < controllers);
}

/* ---- roles and keyframes ---- */

void session_request_role(struct session *s, struct linkconn *lc,
			  const Ptg__RequestRole *rr)
{
	struct member *m = members_find(s->members, lc, rr->attach_id);
	enum member_role want =
	    rr->role == PTG__ROLE__ROLE_CONTROLLER ? MEMBER_CONTROLLER : MEMBER_OBSERVER;
	const char *reason;
	bool changed, downgraded;

	if (!m) {
		wire_send_error(lc, 0, rr->attach_id, rr->client_op_id,
				PTG__ERROR_CODE__NOT_FOUND, "not attached");
		return;
	}
	if (m->replaying) {
		/* Its RoleAssigned would overtake the history still coming. */
		wire_send_error(
		    lc, 0, rr->attach_id, rr->client_op_id, PTG__ERROR_CODE__RATE_LIMITED,
		    "the join's replay is in progress: ask again after its Keyframe");
		return;
	}
	if (s->exited && want == MEMBER_CONTROLLER) {
		session_emit_role(s, m, true, "the session has exited");
		return;
	}
	if (want == MEMBER_CONTROLLER && m->not_owner && m->role == MEMBER_OBSERVER) {
		session_emit_role(s, m, true, session_control_owner_refusal(s, NULL));
		return;
	}
	if (want == MEMBER_CONTROLLER && session_control_ask(s, m))
		return;
	if (want == MEMBER_OBSERVER)
		session_control_withdraw(s, m);
	changed = members_request_role(s->members, m, want, &downgraded, &reason);
	log_info(s->log_ctx, "audit: role client=%s role=%s%s", m->client_id,
		 m->role == MEMBER_CONTROLLER ? "controller" : "observer",
		 downgraded ? " (request refused)" : "");
	session_emit_role(s, m, downgraded, reason);
	if (changed)
		session_emit_membership(s);
	if (changed && want == MEMBER_OBSERVER)
		session_control_prune(s); /* the last controller may have stepped down */
}

void session_request_keyframe(struct session *s, struct linkconn *lc,
			      const Ptg__RequestKeyframe *rk)
{
	struct member *m = members_find(s->members, lc, rk->attach_id);
	int64_t now = time_mono_ms();

	if (!m) {
		wire_send_error(lc, 0, rk->attach_id, rk->client_op_id,
				PTG__ERROR_CODE__NOT_FOUND, "not attached");
		return;
	}
	if (m->replaying) {
		/* The replay's own Keyframe is coming; a link that fell behind
		   ends the replay there (the frames it dropped are gone). */
		if (rk->lag_recovery)
			session_replay_stop(s, m, "the connection fell behind");
		return;
	}
	if (!rk->lag_recovery && m->last_keyframe_request_ms &&
	    now - m->last_keyframe_request_ms < 1000) {
		wire_send_error(lc, 0, rk->attach_id, rk->client_op_id,
				PTG__ERROR_CODE__RATE_LIMITED,
				"at most one keyframe request a second");
		return;
	}
	if (rk->lag_recovery) {
		char msg[WIRE_MSG_MAX];
		snprintf(msg, sizeof(msg),
			 "the connection fell behind: %llu bytes of "
			 "output were dropped; a Keyframe follows",
			 (unsigned long long)rk->lag_dropped_bytes);
		session_emit_error(
		    s, m, PTG__FRAME_ERROR_CODE__FRAME_ERROR_PTY_OUTPUT_LAGGED, msg);
	} else {
		m->last_keyframe_request_ms = now;
	}
	session_emit_keyframe(s, m);
}
