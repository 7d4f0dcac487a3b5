/* approval: the `approve` control policy of a session (docs/protocol.md,
   "Control approval"). An observer's ask for control, at its join or by
   pty.request_role, waits for a controller while one is there: the asker
   is answered RoleAssigned observer (downgraded, "waiting ..."), every
   member's link gets the pending list (ControlNotice), and a controller's
   DecideControl, the request's deadline or the asker's leaving ends it.
   With no controller left, the oldest request is granted: nobody is left
   to object, as an open session would grant it. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "session_int.h"
#include "timeutil.h"
#include "wire.h"
#include "xalloc.h"

#define WAIT_REASON "waiting for a controller's approval"

static int approving(const struct session *s)
{
	return s->control_policy == PTG__CONTROL_POLICY__CONTROL_APPROVE;
}

bool session_control_gates(struct session *s, bool may_control)
{
	return approving(s) && may_control && !s->exited &&
	       members_count(s->members, MEMBER_CONTROLLER) > 0;
}

const char *session_control_owner_refusal(const struct session *s, const char *principal)
{
	if (s->control_policy != PTG__CONTROL_POLICY__CONTROL_OWNER_ONLY ||
	    (s->owner[0] && principal && strcmp(principal, s->owner) == 0))
		return NULL;
	return "only the session's owner may control it (control policy owner_only)";
}

const char *session_control_wait_reason(void)
{
	return WAIT_REASON;
}

/* ---- notices ---- */

static void send_notice(struct session *s, const struct member *target,
			Ptg__ControlEventKind event, const struct control_request *about,
			const struct member *by)
{
	Ptg__LinkMessage lm = PTG__LINK_MESSAGE__INIT;
	Ptg__ControlNotice n = PTG__CONTROL_NOTICE__INIT;
	Ptg__ControlPending items[CONTROL_PENDING_MAX], *ptrs[CONTROL_PENDING_MAX];

	for (unsigned i = 0; i < s->control.n; i++) {
		ptg__control_pending__init(&items[i]);
		items[i].client_id = s->control.v[i].client_id;
		items[i].label = s->control.v[i].label;
		items[i].expires_at_ms = s->control.v[i].expires_wall_ms;
		ptrs[i] = &items[i];
	}
	n.session_id = s->id;
	n.pending = ptrs;
	n.n_pending = s->control.n;
	n.event = event;
	n.client_id = (char *)(about ? about->client_id : "");
	n.label = (char *)(about ? about->label : "");
	n.by_client_id = (char *)(by ? by->client_id : "");
	n.by_label = (char *)(by ? by->label : "");
	lm.msg_case = PTG__LINK_MESSAGE__MSG_CONTROL_NOTICE;
	lm.control_notice = &n;
	if (target) {
		n.target_attach_id = target->attach_id;
		linkconn_send(target->link, &lm);
		return;
	}
	for (unsigned i = 0; i < members_nlinks(s->members); i++)
		linkconn_send(members_link(s->members, i), &lm);
}

/* ---- deadlines ---- */

static void on_due(struct ev_timer *t, void *user);

static void arm(struct session *s)
{
	int64_t at = control_next_deadline(&s->control), now = time_mono_ms();

	if (!s->control_timer)
		s->control_timer = ev_timer_new(s->loop, -1, 0, on_due, s);
	if (at < 0) {
		ev_timer_disarm(s->control_timer);
		return;
	}
	ev_timer_arm(s->control_timer, at > now ? at - now : 0, 0);
}

static struct member *asker(struct session *s, const struct control_request *r)
{
	return members_find(s->members, r->link, r->attach_id);
}

static void on_due(struct ev_timer *t, void *user)
{
	struct session *s = user;
	struct control_request r;
	struct member *m;
	char why[96];

	(void)t;
	while (control_take_expired(&s->control, time_mono_ms(), &r)) {
		log_info(s->log_ctx, "audit: control request client=%s expired",
			 r.client_id);
		if ((m = asker(s, &r))) {
			snprintf(why, sizeof(why), "no controller answered within %u s",
				 s->cfg->control_timeout_s);
			session_emit_role(s, m, true, why);
		}
		send_notice(s, NULL, PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_EXPIRED, &r,
			    NULL);
	}
	arm(s);
}

void session_control_free(struct session *s)
{
	ev_timer_free(s->control_timer);
	s->control_timer = NULL;
}

/* ---- asking ---- */

/* m (an observer) waits for approval; its RoleAssigned answer says so
   (unless its join's RoleAssigned said it already: answered). */
static void hold(struct session *s, struct member *m, bool answered)
{
	int rc =
	    control_add(&s->control, m->link, m->attach_id, m->client_id, m->label,
			time_mono_ms(), time_now_ms(), s->cfg->control_timeout_s * 1000u);

	if (rc < 0) {
		session_emit_role(
		    s, m, true, "too many control requests are waiting; ask again later");
		return;
	}
	if (!answered)
		session_emit_role(s, m, true, WAIT_REASON);
	if (rc == 1)
		return; /* asked before: the same request goes on */
	log_info(s->log_ctx, "audit: control requested client=%s", m->client_id);
	send_notice(s, NULL, PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_REQUESTED,
		    &s->control.v[s->control.n - 1], NULL);
	arm(s);
}

bool session_control_ask(struct session *s, struct member *m)
{
	if (m->role != MEMBER_OBSERVER || !session_control_gates(s, m->may_control) ||
	    members_count(s->members, MEMBER_CONTROLLER) >= s->cfg->max_controllers)
		return 0;
	hold(s, m, false);
	return 1;
}

/* ---- ending requests ---- */

static void grant(struct session *s, struct member *m, const struct member *by)
{
	bool downgraded, changed;
	const char *reason;

	changed =
	    members_request_role(s->members, m, MEMBER_CONTROLLER, &downgraded, &reason);
	log_info(s->log_ctx, "audit: role client=%s role=%s (approved by %s)",
		 m->client_id, m->role == MEMBER_CONTROLLER ? "controller" : "observer",
		 by ? by->client_id : "nobody: no controller was left");
	session_emit_role(s, m, downgraded, reason);
	if (changed)
		session_emit_membership(s);
}

void session_control_joined(struct session *s, struct member *m)
{
	if (!approving(s))
		return;
	/* Its own copy first: what waits, and that the session asks. */
	send_notice(s, m, PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_NONE, NULL, NULL);
	if (!m->asks_control)
		return;
	m->asks_control = false;
	if (m->role == MEMBER_OBSERVER && session_control_gates(s, m->may_control))
		hold(s, m, true);
	else
		grant(s, m, NULL); /* the controllers left while it joined */
}

void session_control_withdraw(struct session *s, struct member *m)
{
	struct control_request r;
	int i = control_find(&s->control, m->client_id);

	if (i < 0)
		return;
	control_remove(&s->control, (unsigned)i, &r);
	send_notice(s, NULL, PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_WITHDRAWN, &r, NULL);
	arm(s);
}

void session_control_prune(struct session *s)
{
	struct control_request r;
	struct member *m;

	for (unsigned i = 0; i < s->control.n;) {
		if (asker(s, &s->control.v[i])) {
			i++;
			continue;
		}
		control_remove(&s->control, i, &r);
		send_notice(s, NULL, PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_WITHDRAWN, &r,
			    NULL);
	}
	/* The last controller is gone: the oldest asker takes over. */
	while (s->control.n && !s->exited &&
	       !members_count(s->members, MEMBER_CONTROLLER)) {
		control_remove(&s->control, 0, &r);
		if ((m = asker(s, &r)))
			grant(s, m, NULL);
		send_notice(s, NULL, PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_APPROVED, &r,
			    NULL);
	}
	arm(s);
}

static const char *decide_refusal(struct session *s, const struct member *by,
				  const Ptg__DecideControl *dc, Ptg__ErrorCode *code)
{
	*code = PTG__ERROR_CODE__INVALID_REQUEST;
	if (!approving(s))
		return "the session's control policy is open: nothing waits for approval";
	if (by->role != MEMBER_CONTROLLER) {
		*code = PTG__ERROR_CODE__PERMISSION_DENIED;
		return "only a controller may approve or deny control requests";
	}
	if (control_find(&s->control, dc->client_id) < 0)
		return "no control request is waiting from that client";
	if (dc->approve && s->exited)
		return "the session has exited";
	if (dc->approve &&
	    members_count(s->members, MEMBER_CONTROLLER) >= s->cfg->max_controllers) {
		*code = PTG__ERROR_CODE__RATE_LIMITED;
		return "the session has as many controllers as it may: one must step "
		       "down first";
	}
	return NULL;
}

void session_decide_control(struct session *s, struct linkconn *lc,
			    const Ptg__DecideControl *dc)
{
	struct member *by = members_find(s->members, lc, dc->attach_id), *m;
	struct control_request r;
	Ptg__ErrorCode code;
	const char *why;
	char reason[200];

	if (!by) {
		wire_send_error(lc, dc->request_id, dc->attach_id, dc->client_op_id,
				PTG__ERROR_CODE__NOT_FOUND, "not attached");
		return;
	}
	if ((why = decide_refusal(s, by, dc, &code))) {
		wire_send_error(lc, dc->request_id, dc->attach_id, dc->client_op_id, code,
				"%s", why);
		return;
	}
	control_remove(&s->control, (unsigned)control_find(&s->control, dc->client_id),
		       &r);
	wire_send_error(lc, dc->request_id, dc->attach_id, dc->client_op_id,
			PTG__ERROR_CODE__OK, "%s", dc->approve ? "approved" : "denied");
	log_info(s->log_ctx, "audit: control request client=%s %s by %s", r.client_id,
		 dc->approve ? "approved" : "denied", by->client_id);
	if (!(m = asker(s, &r))) {
		/* pruned on every leave: cannot happen */
	} else if (dc->approve) {
		grant(s, m, by);
	} else {
		snprintf(reason, sizeof(reason), "control denied by %s", by->client_id);
		session_emit_role(s, m, true, reason);
	}
	send_notice(s, NULL,
		    dc->approve ? PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_APPROVED
				: PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_DENIED,
		    &r, by);
	arm(s);
}
