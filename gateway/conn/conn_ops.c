/* conn_ops: what a connection does with client frames (docs/protocol.md),
   and with the frames and replies the sidecar sends it. Ops dispatch
   through a table; each handler is short and validates before it sends
   anything to the sidecar. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "conn_int.h"
#include "log.h"
#include "metrics.h"
#include "ptg_limits.h"
#include "timeutil.h"
#include "upstream.h"
#include "xalloc.h"

typedef void (*op_fn)(struct conn *c, const struct envelope *env);

/* ---- sending ---- */

static void send_reply_error(struct conn *c, const Ptg__Reply *r)
{
	conn_send_error(c, frames_code_from_link(r->code),
			r->client_op_id[0] ? r->client_op_id : NULL, r->message);
}

/* ---- the sidecar side of an attachment ---- */

/* How the instance's link reaches a joined connection. */
static const struct upstream_sink sink;

static void on_attach_reply(const Ptg__Reply *r, void *user)
{
	struct conn *c = user;

	c->pending_request = 0;
	if (!r) {
		conn_send_error(c, FRAMES_INTERNAL, c->pending_op_id,
				"the sandbox did not answer the join");
		conn_goodbye(c, FRAMES_BYE_OTHER, WS_CLOSE_SERVER_ERROR);
		return;
	}
	if (r->code != PTG__ERROR_CODE__OK) {
		c->attach_id = 0; /* the sidecar admitted nobody */
		send_reply_error(c, r);
		if (r->code == PTG__ERROR_CODE__RATE_LIMITED)
			conn_close(c, PTG_CLOSE_LIMITED, "session full");
		else if (r->code == PTG__ERROR_CODE__NOT_FOUND)
			conn_close(c, PTG_CLOSE_GONE, "session gone");
		else
			c->state = CONN_OPEN;
		return;
	}
	c->state = CONN_JOINED;
	upstream_bind(c->up, c->attach_id, c->ctx.session_id, &sink, c);
	if (r->result_case == PTG__REPLY__RESULT_ATTACH) {
		snprintf(c->client_id, sizeof(c->client_id), "%s", r->attach->client_id);
		conn_take_role(c, r->attach->role);
		conn_update_log_ctx(c);
		if (r->attach->replay_error[0]) {
			c->host->metrics->replays_out_of_range++;
			conn_send_error(c, FRAMES_REPLAY_OUT_OF_RANGE, c->pending_op_id,
					r->attach->replay_error);
		}
	}
	log_info(c->log_ctx, "audit: attached as %s",
		 c->role == PTG__ROLE__ROLE_CONTROLLER ? PTYWS_ROLE_CONTROLLER
						       : PTYWS_ROLE_OBSERVER);
}

static void on_leave_reply(const Ptg__Reply *r, void *user)
{
	struct conn *c = user;

	c->pending_request = 0;
	if (c->attach_id && c->up)
		upstream_unbind(c->up, c->attach_id);
	c->attach_id = 0;
	log_info(c->log_ctx, "audit: left");
	conn_goodbye(c, FRAMES_BYE_SESSION_CLOSED, WS_CLOSE_NORMAL);
}

static void sink_reply(const Ptg__Reply *r, void *user)
{
	struct conn *c = user;

	if (r->code != PTG__ERROR_CODE__OK)
		send_reply_error(c, r);
}

/* lag_dropped: 0 for a client's request; else the bytes the gateway
   dropped, and the sidecar answers with PTY_OUTPUT_LAGGED and a Keyframe. */
static void request_keyframe(struct conn *c, const char *op_id, size_t lag_dropped)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__RequestKeyframe rk = PTG__REQUEST_KEYFRAME__INIT;

	rk.attach_id = c->attach_id;
	rk.session_id = c->ctx.session_id;
	rk.client_op_id = (char *)(op_id ? op_id : "");
	rk.lag_recovery = lag_dropped > 0;
	rk.lag_dropped_bytes = lag_dropped;
	m.msg_case = PTG__LINK_MESSAGE__MSG_REQUEST_KEYFRAME;
	m.request_keyframe = &rk;
	upstream_send(c->up, &m);
}

/* A connection that cannot keep up (docs/protocol.md, "A slow connection")
   loses what it has not yet received, is told so, and gets a Keyframe;
   nobody else waits. The sidecar numbers both frames; until the Keyframe
   comes, output for this connection is skipped. */
static void fall_behind(struct conn *c)
{
	size_t dropped = outq_drop_data(&c->q);

	c->host->metrics->lag_events++;
	c->lagged = true;
	log_info(c->log_ctx, "output queue over its bound: dropped %zu bytes", dropped);
	request_keyframe(c, NULL, dropped ? dropped : 1);
}

static int skip_while_lagged(struct conn *c, const Ptg__Frame *f)
{
	if (!c->lagged)
		return 0;
	/* The recovery Keyframe ends the lag, and so does word that none can
	   be made (the screen is too large): then output flows again. */
	if (f->target_attach_id &&
	    (f->kind_case == PTG__FRAME__KIND_KEYFRAME ||
	     (f->kind_case == PTG__FRAME__KIND_ERROR &&
	      f->error->code ==
		  PTG__FRAME_ERROR_CODE__FRAME_ERROR_KEYFRAME_UNAVAILABLE))) {
		c->lagged = false;
		return 0;
	}
	return f->kind_case == PTG__FRAME__KIND_OUTPUT ||
	       f->kind_case == PTG__FRAME__KIND_KEYFRAME;
}

/* The latency bound (--max-queue-ms): output that has waited this long
   for a client is worth less to it than a Keyframe of the screen now,
   as a tmux client that falls behind gets a redraw instead of its
   backlog. A client that keeps up never holds output that old. */
static int too_old(const struct conn *c, int64_t now_ms)
{
	uint32_t max_ms = c->host->cfg->max_queue_ms;
	int64_t queued_ms;

	/* Lagged, it has asked for its Keyframe already. */
	return max_ms && !c->lagged && outq_oldest_waiting(&c->q, &queued_ms) &&
	       now_ms - queued_ms >= (int64_t)max_ms;
}

/* A frame from the sidecar for this connection; wf is the encoded
   WebSocket frame shared by every recipient (the conn takes a ref). */
static void deliver(struct conn *c, const Ptg__Frame *f, struct wsframe *wf,
		    int64_t now_ms)
{
	if (c->dead || ws_close_sent(c->ws) || skip_while_lagged(c, f))
		return;
	/* Made once per frame for all that agreed deflate (ws.h). */
	wf = wsframe_pick(wf, c->ctx.deflate);
	/* An empty queue takes any one frame, however large: lag means
	   frames waiting behind others, not one big frame. */
	if (outq_bytes(&c->q) &&
	    (outq_would_overflow(&c->q, wf->len, c->host->cfg->max_queue_bytes) ||
	     too_old(c, now_ms))) {
		fall_behind(c);
		if (f->kind_case == PTG__FRAME__KIND_OUTPUT)
			return;
	}
	outq_push_frame(&c->q, wf, now_ms);
	c->host->metrics->frames_out++;
	metrics_observe_since(&c->host->metrics->attach_latency, &c->ctx.requested_us);
	conn_mark_dirty(c);
	if (f->kind_case == PTG__FRAME__KIND_ROLE_ASSIGNED) {
		conn_take_role(c, f->role_assigned->role);
		log_info(c->log_ctx, "audit: role %s%s",
			 c->role == PTG__ROLE__ROLE_CONTROLLER ? PTYWS_ROLE_CONTROLLER
							       : PTYWS_ROLE_OBSERVER,
			 f->role_assigned->downgraded ? " (downgraded)" : "");
	}
	if (f->kind_case == PTG__FRAME__KIND_CLOSED)
		conn_goodbye(c, FRAMES_BYE_SESSION_CLOSED, WS_CLOSE_NORMAL);
}

static void sink_frame(const Ptg__Frame *f, struct wsframe *wf, int64_t now_ms,
		       void *user)
{
	deliver(user, f, wf, now_ms);
}

static void sink_link_lost(void *user)
{
	conn_link_lost(user);
}

static void sink_control(const Ptg__ControlNotice *n, void *user)
{
	struct conn *c = user;
	struct buf out = BUF_INIT;

	if (!c->control_extension || c->dead)
		return;
	frames_control_notice(n, time_now_ms(), &out);
	conn_send_json(c, &out);
	buf_free(&out);
}

static const struct upstream_sink sink = {
    .frame = sink_frame,
    .reply = sink_reply,
    .link_lost = sink_link_lost,
    .control = sink_control,
};

/* ---- client ops ---- */

static int has_scope(const struct conn *c, unsigned bit)
{
	return (c->ctx.claims.scopes & bit) != 0;
}

static Ptg__Scope *scope_list(const struct conn *c, size_t *n)
{
	static Ptg__Scope list[4];

	*n = 0;
	if (has_scope(c, SCOPE_OBSERVE) || has_scope(c, SCOPE_CONTROL))
		list[(*n)++] = PTG__SCOPE__SCOPE_PTY_OBSERVE;
	if (has_scope(c, SCOPE_CONTROL))
		list[(*n)++] = PTG__SCOPE__SCOPE_PTY_CONTROL;
	if (has_scope(c, SCOPE_TASKS))
		list[(*n)++] = PTG__SCOPE__SCOPE_TASKS;
	if (has_scope(c, SCOPE_SESSIONS))
		list[(*n)++] = PTG__SCOPE__SCOPE_SESSIONS;
	return list;
}

static void op_join(struct conn *c, const struct envelope *env)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Attach a = PTG__ATTACH__INIT;
	struct envelope_join j;
	struct envelope_error err;
	uint64_t id;

	if (c->state != CONN_OPEN) {
		conn_send_error(c, FRAMES_INVALID_REQUEST, env->id,
				"pty.join_session may be sent once per connection");
		return;
	}
	if (envelope_join(env, &j, &err) < 0) {
		conn_send_error(c, FRAMES_INVALID_REQUEST, err.id, err.message);
		return;
	}
	a.attach_id = upstream_attach_id(c->up);
	a.session_id = c->ctx.session_id;
	a.role = j.role;
	a.cols = j.cols;
	a.rows = j.rows;
	a.label = j.label;
	a.principal = c->ctx.claims.sub;
	a.scopes = scope_list(c, &a.n_scopes);
	a.has_replay_from = env->has_replay_from;
	a.replay_from = env->replay_from;
	a.client_op_id = (char *)env->id;
	a.trace_id = c->trace_id;
	a.request_id = id = upstream_next_id(c->up);
	m.msg_case = PTG__LINK_MESSAGE__MSG_ATTACH;
	m.attach = &a;
	if (upstream_request(c->up, &m, id, on_attach_reply, c) < 0) {
		conn_send_error(c, FRAMES_INTERNAL, env->id,
				"the sandbox is unreachable");
		conn_goodbye(c, FRAMES_BYE_OTHER, WS_CLOSE_SERVER_ERROR);
		return;
	}
	/* Known from now on: ops sent right behind the join reach the sidecar
	   after the Attach, and a client gone before the reply is detached. */
	c->attach_id = a.attach_id;
	if (env->has_replay_from)
		c->host->metrics->replays++;
	c->pending_request = id;
	snprintf(c->pending_op_id, sizeof(c->pending_op_id), "%s", env->id);
	c->state = CONN_JOINING;
}

/* The ops that need a join, and controller ones a controller. Ops sent
   right behind the join go on: the sidecar handles them after the Attach
   and checks the role itself. */
static int ready_for(struct conn *c, const struct envelope *env, bool controller_only)
{
	if (c->state != CONN_JOINED && c->state != CONN_JOINING) {
		conn_send_error(c, FRAMES_INVALID_REQUEST, env->id,
				"join the session first (pty.join_session)");
		return 0;
	}
	/* One request in flight at a time: leave waits for the join. */
	if (c->state == CONN_JOINING && env->op_kind == ENVELOPE_OP_PTY_LEAVE) {
		conn_send_error(c, FRAMES_INVALID_REQUEST, env->id,
				"the join is still in progress");
		return 0;
	}
	if (controller_only && c->state == CONN_JOINED &&
	    c->role != PTG__ROLE__ROLE_CONTROLLER) {
		conn_send_error(c, FRAMES_PERMISSION_DENIED, env->id,
				"only controllers may do this; you are an observer");
		return 0;
	}
	return 1;
}

static void op_input(struct conn *c, const struct envelope *env)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Input in = PTG__INPUT__INIT;
	struct envelope_error err;
	struct buf data = BUF_INIT;

	if (!ready_for(c, env, true))
		return;
	if (envelope_input(env, &data, &err) < 0) {
		buf_free(&data);
		conn_send_error(c, FRAMES_INVALID_REQUEST, err.id, err.message);
		return;
	}
	in.attach_id = c->attach_id;
	in.session_id = c->ctx.session_id;
	in.client_op_id = (char *)env->id;
	in.data.data = buf_head(&data);
	in.data.len = buf_size(&data);
	m.msg_case = PTG__LINK_MESSAGE__MSG_INPUT;
	m.input = &in;
	upstream_send(c->up, &m);
	buf_free(&data);
}

static void op_resize(struct conn *c, const struct envelope *env)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Resize rz = PTG__RESIZE__INIT;
	struct envelope_resize r;
	struct envelope_error err;

	if (!ready_for(c, env, true))
		return;
	if (envelope_resize(env, &r, &err) < 0) {
		conn_send_error(c, FRAMES_INVALID_REQUEST, err.id, err.message);
		return;
	}
	rz.attach_id = c->attach_id;
	rz.session_id = c->ctx.session_id;
	rz.client_op_id = (char *)env->id;
	rz.cols = r.cols;
	rz.rows = r.rows;
	m.msg_case = PTG__LINK_MESSAGE__MSG_RESIZE;
	m.resize = &rz;
	upstream_send(c->up, &m);
}

static void op_request_role(struct conn *c, const struct envelope *env)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__RequestRole rr = PTG__REQUEST_ROLE__INIT;
	struct envelope_error err;
	Ptg__Role role;

	if (!ready_for(c, env, false))
		return;
	if (envelope_request_role(env, &role, &err) < 0) {
		conn_send_error(c, FRAMES_INVALID_REQUEST, err.id, err.message);
		return;
	}
	rr.attach_id = c->attach_id;
	rr.session_id = c->ctx.session_id;
	rr.client_op_id = (char *)env->id;
	rr.role = role;
	m.msg_case = PTG__LINK_MESSAGE__MSG_REQUEST_ROLE;
	m.request_role = &rr;
	upstream_send(c->up, &m);
}

static void op_request_keyframe(struct conn *c, const struct envelope *env)
{
	struct envelope_error err;

	if (!ready_for(c, env, false))
		return;
	if (envelope_no_fields(env, &err) < 0) {
		conn_send_error(c, FRAMES_INVALID_REQUEST, err.id, err.message);
		return;
	}
	request_keyframe(c, env->id, 0);
}

static void op_leave(struct conn *c, const struct envelope *env)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Detach d = PTG__DETACH__INIT;
	struct envelope_error err;
	uint64_t id;

	if (!ready_for(c, env, false))
		return;
	if (envelope_no_fields(env, &err) < 0) {
		conn_send_error(c, FRAMES_INVALID_REQUEST, err.id, err.message);
		return;
	}
	d.attach_id = c->attach_id;
	d.session_id = c->ctx.session_id;
	d.client_op_id = (char *)env->id;
	d.request_id = id = upstream_next_id(c->up);
	m.msg_case = PTG__LINK_MESSAGE__MSG_DETACH;
	m.detach = &d;
	if (upstream_request(c->up, &m, id, on_leave_reply, c) < 0) {
		on_leave_reply(NULL, c);
		return;
	}
	c->pending_request = id;
	c->state = CONN_LEAVING;
}

static void on_decide_reply(const Ptg__Reply *r, void *user)
{
	struct decision *dn = user;
	struct buf out = BUF_INIT;

	dn->c->pending_decision = NULL;
	if (!r)
		conn_send_error(dn->c, FRAMES_INTERNAL, dn->op_id,
				"the sandbox did not answer the decision");
	else if (r->code != PTG__ERROR_CODE__OK)
		send_reply_error(dn->c, r);
	else {
		frames_control_decided(dn->op_id, dn->d.client_id, dn->d.approve,
				       time_now_ms(), &out);
		conn_send_json(dn->c, &out);
		buf_free(&out);
	}
	free(dn);
}

/* ptygate.decide_control: a controller approves or denies a pending
   control request (docs/protocol.md, "Control approval"). One at a
   time per connection. */
static void op_decide_control(struct conn *c, const struct envelope *env)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__DecideControl dc = PTG__DECIDE_CONTROL__INIT;
	struct envelope_error err;
	struct decision *dn;

	if (!c->control_extension || !upstream_control_approval(c->up)) {
		conn_send_error(c, FRAMES_UNSUPPORTED_OPERATION, env->id,
				!c->control_extension
				    ? "the control approval extension was not activated "
				      "on this connection's first frame"
				    : "the sandbox does not support control approval");
		return;
	}
	if (!ready_for(c, env, true))
		return;
	if (c->pending_decision) {
		conn_send_error(c, FRAMES_RATE_LIMITED, env->id,
				"a decision is still on its way: one at a time");
		return;
	}
	dn = xcalloc(1, sizeof(*dn));
	if (envelope_decide_control(env, &dn->d, &err) < 0) {
		free(dn);
		conn_send_error(c, FRAMES_INVALID_REQUEST, err.id, err.message);
		return;
	}
	dn->c = c;
	snprintf(dn->op_id, sizeof(dn->op_id), "%s", env->id);
	dc.attach_id = c->attach_id;
	dc.session_id = c->ctx.session_id;
	dc.client_op_id = (char *)env->id;
	dc.client_id = dn->d.client_id;
	dc.approve = dn->d.approve;
	dc.request_id = dn->request_id = upstream_next_id(c->up);
	m.msg_case = PTG__LINK_MESSAGE__MSG_DECIDE_CONTROL;
	m.decide_control = &dc;
	if (upstream_request(c->up, &m, dn->request_id, on_decide_reply, dn) < 0) {
		free(dn);
		conn_send_error(c, FRAMES_INTERNAL, env->id,
				"the sandbox is unreachable");
		return;
	}
	c->pending_decision = dn;
}

static void op_ping(struct conn *c, const struct envelope *env)
{
	struct envelope_error err;
	const char *client_ts;
	struct buf out = BUF_INIT;

	if (envelope_ping(env, &client_ts, &err) < 0) {
		conn_send_error(c, FRAMES_INVALID_REQUEST, err.id, err.message);
		return;
	}
	frames_pong(env->id, client_ts, time_now_ms(), &out);
	conn_send_json(c, &out);
	buf_free(&out);
}

static void take_service_params(struct conn *c, json_t *params)
{
	json_t *trace = json_object_get(params, "trace_id");

	json_decref(c->service_params);
	c->service_params = json_incref(params);
	snprintf(c->trace_id, sizeof(c->trace_id), "%s",
		 json_is_string(trace) ? json_string_value(trace) : "");
	conn_update_log_ctx(c);
}

static void op_update_params(struct conn *c, const struct envelope *env)
{
	struct envelope_error err;
	struct buf out = BUF_INIT;
	json_t *params;

	if (envelope_service_update(env, &params, &err) < 0) {
		conn_send_error(c, FRAMES_INVALID_REQUEST, err.id, err.message);
		return;
	}
	take_service_params(c, params);
	frames_service_update_response(env->id, c->service_params, time_now_ms(), &out);
	conn_send_json(c, &out);
	buf_free(&out);
}

static void op_task(struct conn *c, const struct envelope *env)
{
	c->host->task_op(c, env);
}

static void op_push_config(struct conn *c, const struct envelope *env)
{
	conn_send_error(c, FRAMES_UNSUPPORTED_OPERATION, env->id,
			"push notifications are not supported over this binding");
}

static void op_unknown(struct conn *c, const struct envelope *env)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "unknown op '%.64s'", env->op);
	conn_send_error(c, FRAMES_UNSUPPORTED_OPERATION, env->id, msg);
}

static const op_fn ops[] = {
    [ENVELOPE_OP_UNKNOWN] = op_unknown,
    [ENVELOPE_OP_PTY_JOIN] = op_join,
    [ENVELOPE_OP_PTY_INPUT] = op_input,
    [ENVELOPE_OP_PTY_RESIZE] = op_resize,
    [ENVELOPE_OP_PTY_REQUEST_ROLE] = op_request_role,
    [ENVELOPE_OP_PTY_REQUEST_KEYFRAME] = op_request_keyframe,
    [ENVELOPE_OP_PTY_LEAVE] = op_leave,
    [ENVELOPE_OP_PING] = op_ping,
    [ENVELOPE_OP_UPDATE_SERVICE_PARAMETERS] = op_update_params,
    [ENVELOPE_OP_SEND_MESSAGE] = op_task,
    [ENVELOPE_OP_SEND_STREAMING_MESSAGE] = op_task,
    [ENVELOPE_OP_GET_TASK] = op_task,
    [ENVELOPE_OP_LIST_TASKS] = op_task,
    [ENVELOPE_OP_CANCEL_TASK] = op_task,
    [ENVELOPE_OP_SUBSCRIBE_TO_TASK] = op_task,
    [ENVELOPE_OP_UNSUBSCRIBE] = op_task,
    [ENVELOPE_OP_PUSH_CONFIG] = op_push_config,
    [ENVELOPE_OP_CONTROL_DECIDE] = op_decide_control,
};

/* `extensions` and `service_parameters` count on the first frame only
   (docs/protocol.md, "Frames"). */
static void first_frame(struct conn *c, const struct envelope *env)
{
	c->spoke = true;
	c->pty_extension = env->pty_extension;
	c->control_extension = env->control_extension;
	if (env->service_parameters)
		take_service_params(c, env->service_parameters);
}

void conn_handle_text(struct conn *c, const char *p, size_t n)
{
	struct envelope_error err;
	struct envelope *env;

	if (!c->up)
		return; /* the instance is gone: the connection is closing */
	if (envelope_parse(p, n, &env, &err) < 0) {
		conn_send_error(c, FRAMES_INVALID_REQUEST, err.id, err.message);
		return;
	}
	conn_take_op(c);
	if (!c->spoke)
		first_frame(c, env);
	if (envelope_op_is_pty(env->op_kind) && !c->pty_extension)
		conn_send_error(c, FRAMES_UNSUPPORTED_OPERATION, env->id,
				"the pty-extensions/v1 extension was not activated on "
				"this connection's first frame");
	else
		ops[env->op_kind](c, env);
	envelope_free(env);
}

/* ---- what the task ops see ---- */

bool conn_ended(const struct conn *c)
{
	return c->dead;
}

bool conn_unjoined(const struct conn *c)
{
	return c->state == CONN_OPEN;
}

bool conn_queue_full_for(const struct conn *c, size_t len)
{
	return outq_bytes(&c->q) &&
	       outq_would_overflow(&c->q, len, c->host->cfg->max_queue_bytes);
}

struct upstream *conn_upstream(const struct conn *c)
{
	return c->up;
}

const struct attach_ctx *conn_attach_ctx(const struct conn *c)
{
	return &c->ctx;
}

const char *conn_log_ctx(const struct conn *c)
{
	return c->log_ctx;
}

const char *conn_trace_id(const struct conn *c)
{
	return c->trace_id;
}

json_t *conn_service_params(const struct conn *c)
{
	return c->service_params;
}

struct task_conn **conn_tasks(struct conn *c)
{
	return &c->tasks;
}
