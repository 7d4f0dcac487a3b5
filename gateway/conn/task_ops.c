/* task_ops: see task_ops.h. Each connection that uses tasks gets a
   subscriber id on its instance's link (from the attach id counter, so it
   never collides with an attachment), bound there with a sink of its own
   so the link hands it its TaskUpdates, and a list of its requests in
   flight, both in struct task_conn. Every request names the connection's
   principal (the token's sub), whose own tasks are all it sees unless
   the token has tasks:all. The sidecar's task JSON is read with
   JSON_ALLOW_NUL: a task's output is kept byte for byte, and a NUL byte
   in it is "\u0000", valid JSON that must not make the task unreadable. */
#include "task_ops.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "conn.h"
#include "envelope.h"
#include "frames.h"
#include "list.h"
#include "log.h"
#include "timeutil.h"
#include "upstream.h"
#include "xalloc.h"

#define MAX_IN_FLIGHT 64 /* task requests awaiting the sidecar, per connection */

struct pending_op {
	struct conn *c;
	uint64_t request_id;
	enum envelope_op op;
	char client_id[PTG_MSG_ID_MAX_BYTES + 1];
	LIST_ENTRY(pending_op) entry;
};

struct task_conn {
	bool link_gone; /* the upstream may be freed: never touch it */
	uint64_t sub_id;
	LIST_HEAD(, pending_op) pending;
	unsigned n_pending;
};

struct op_row {
	Ptg__TaskOp link_op;
	const char *name; /* the reply's op, before .Response / .Accepted */
	bool accepted;
};

static const struct op_row *op_row(enum envelope_op op)
{
	static const struct op_row send = {PTG__TASK_OP__TASK_OP_SEND,
					   PTYWS_OP_SEND_MESSAGE, false};
	static const struct op_row stream = {PTG__TASK_OP__TASK_OP_SEND_STREAMING,
					     PTYWS_OP_SEND_STREAMING, true};
	static const struct op_row get = {PTG__TASK_OP__TASK_OP_GET, PTYWS_OP_GET_TASK,
					  false};
	static const struct op_row list = {PTG__TASK_OP__TASK_OP_LIST,
					   PTYWS_OP_LIST_TASKS, false};
	static const struct op_row cancel = {PTG__TASK_OP__TASK_OP_CANCEL,
					     PTYWS_OP_CANCEL_TASK, false};
	static const struct op_row sub = {PTG__TASK_OP__TASK_OP_SUBSCRIBE,
					  PTYWS_OP_SUBSCRIBE_TO_TASK, true};
	static const struct op_row unsub = {PTG__TASK_OP__TASK_OP_UNSUBSCRIBE,
					    PTYWS_OP_UNSUBSCRIBE, false};

	switch (op) {
	case ENVELOPE_OP_SEND_MESSAGE:
		return &send;
	case ENVELOPE_OP_SEND_STREAMING_MESSAGE:
		return &stream;
	case ENVELOPE_OP_GET_TASK:
		return &get;
	case ENVELOPE_OP_LIST_TASKS:
		return &list;
	case ENVELOPE_OP_CANCEL_TASK:
		return &cancel;
	case ENVELOPE_OP_SUBSCRIBE_TO_TASK:
		return &sub;
	case ENVELOPE_OP_UNSUBSCRIBE:
		return &unsub;
	default:
		return NULL;
	}
}

static void deliver(struct conn *c, const Ptg__TaskUpdate *tu);

static void sink_task_update(const Ptg__TaskUpdate *tu, void *user)
{
	struct conn *c = user;

	if (!conn_ended(c))
		deliver(c, tu);
}

/* The link dropped (the binding is gone with it; the link fails the
   pending requests itself). A connection that only used tasks is told
   and closed as a joined one is, so its client reconnects. */
static void sink_link_lost(void *user)
{
	struct conn *c = user;

	(*conn_tasks(c))->link_gone = true;
	if (conn_unjoined(c))
		conn_link_lost(c);
}

static const struct upstream_sink task_sink = {
    .link_lost = sink_link_lost,
    .task_update = sink_task_update,
};

static struct task_conn *task_conn_of(struct conn *c)
{
	struct task_conn **tc = conn_tasks(c);
	struct upstream *up = conn_upstream(c);

	if (!*tc) {
		*tc = xcalloc(1, sizeof(**tc));
		(*tc)->sub_id = upstream_attach_id(up);
		upstream_bind(up, (*tc)->sub_id, conn_attach_ctx(c)->session_id,
			      &task_sink, c);
	}
	return *tc;
}

static void unlink_pending(struct task_conn *tc, struct pending_op *p)
{
	LIST_REMOVE(p, entry);
	tc->n_pending--;
}

/* Leaves out of a ListTasks answer what is not a task object, so one bad
   entry never fails the page. */
static void drop_unreadable_tasks(struct conn *c, json_t *payload)
{
	json_t *tasks = json_object_get(payload, "tasks");
	size_t dropped = 0;

	for (size_t i = 0; i < json_array_size(tasks);) {
		json_t *t = json_array_get(tasks, i);
		if (json_is_object(t) && json_is_string(json_object_get(t, "id"))) {
			i++;
			continue;
		}
		json_array_remove(tasks, i);
		dropped++;
	}
	if (dropped)
		log_warn(conn_log_ctx(c), "ListTasks: %zu unreadable tasks left out",
			 dropped);
}

static void on_reply(const Ptg__Reply *r, void *user)
{
	struct pending_op *p = user;
	struct conn *c = p->c;
	const struct op_row *row = op_row(p->op);
	struct buf out = BUF_INIT;
	json_t *payload;

	unlink_pending(*conn_tasks(c), p);
	if (!r) {
		conn_send_error(c, FRAMES_INTERNAL, p->client_id,
				"the sandbox did not answer the task request");
	} else if (r->code != PTG__ERROR_CODE__OK) {
		conn_send_error(c, frames_code_from_link(r->code), p->client_id,
				r->message);
	} else {
		payload = r->result_case == PTG__REPLY__RESULT_TASK_JSON
			      ? json_loads(r->task_json, JSON_ALLOW_NUL, NULL)
			      : NULL;
		if (json_is_object(payload) && p->op == ENVELOPE_OP_LIST_TASKS)
			drop_unreadable_tasks(c, payload);
		if (!json_is_object(payload)) {
			conn_send_error(c, FRAMES_INTERNAL, p->client_id,
					"the sandbox sent an unreadable task answer");
		} else {
			frames_reply(row->name, row->accepted, p->client_id, payload,
				     time_now_ms(), &out);
			conn_send_json(c, &out);
		}
		json_decref(payload);
	}
	buf_free(&out);
	free(p);
}

/* The connection's idempotency_key service parameter, "" when none;
   NULL when it is not a string of at most PTG_TASK_ID_MAX bytes. */
static const char *idempotency_key(const struct conn *c)
{
	json_t *k = json_object_get(conn_service_params(c), "idempotency_key");

	if (!k)
		return "";
	if (!json_is_string(k) || json_string_length(k) > PTG_TASK_ID_MAX)
		return NULL;
	return json_string_value(k);
}

static int check_request(struct conn *c, const struct envelope *env, const char **idem)
{
	const struct task_conn *tc = *conn_tasks(c);

	if (!(conn_attach_ctx(c)->claims.scopes & SCOPE_TASKS)) {
		conn_send_error(c, FRAMES_PERMISSION_DENIED, env->id,
				"task operations need the `tasks` scope");
		return -1;
	}
	if (env->payload && !json_is_object(env->payload)) {
		conn_send_error(c, FRAMES_INVALID_REQUEST, env->id,
				"payload must be an object");
		return -1;
	}
	*idem = idempotency_key(c);
	if (!*idem) {
		conn_send_error(
		    c, FRAMES_INVALID_REQUEST, env->id,
		    "service_parameters.idempotency_key must be a string of at "
		    "most " PTG_STR(PTG_TASK_ID_MAX) " bytes");
		return -1;
	}
	if (tc && tc->n_pending >= MAX_IN_FLIGHT) {
		conn_send_error(c, FRAMES_RATE_LIMITED, env->id,
				"too many task requests in flight on this connection");
		return -1;
	}
	return 0;
}

void task_ops_handle(struct conn *c, const struct envelope *env)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__TaskRequest tr = PTG__TASK_REQUEST__INIT;
	const struct op_row *row = op_row(env->op_kind);
	const struct attach_ctx *ctx = conn_attach_ctx(c);
	struct upstream *up = conn_upstream(c);
	struct task_conn *tc;
	struct pending_op *p;
	const char *idem;
	char *params;

	if (!row || check_request(c, env, &idem) < 0)
		return;
	tc = *conn_tasks(c);
	if (!up || (tc && tc->link_gone)) {
		conn_send_error(c, FRAMES_INTERNAL, env->id,
				"the link to the sandbox was lost");
		return;
	}
	tc = task_conn_of(c);
	params = env->payload ? json_dumps(env->payload, JSON_COMPACT) : NULL;
	tr.request_id = upstream_next_id(up);
	tr.attach_id = tc->sub_id;
	tr.session_id = (char *)ctx->session_id;
	tr.op = row->link_op;
	tr.params_json = params ? params : "{}";
	tr.idempotency_key = (char *)idem;
	tr.client_op_id = (char *)env->id;
	tr.trace_id = (char *)conn_trace_id(c);
	tr.principal = (char *)ctx->claims.sub;
	tr.all_principals = (ctx->claims.scopes & SCOPE_TASKS_ALL) != 0;
	m.msg_case = PTG__LINK_MESSAGE__MSG_TASK_REQUEST;
	m.task_request = &tr;
	p = xcalloc(1, sizeof(*p));
	p->c = c;
	p->op = env->op_kind;
	p->request_id = tr.request_id;
	snprintf(p->client_id, sizeof(p->client_id), "%s", env->id);
	if (upstream_request(up, &m, tr.request_id, on_reply, p) < 0) {
		conn_send_error(c, FRAMES_INTERNAL, env->id,
				"the sandbox is unreachable");
		free(p);
	} else {
		LIST_INSERT_HEAD(&tc->pending, p, entry);
		tc->n_pending++;
		log_info(conn_log_ctx(c), "task op %s", env->op);
	}
	free(params);
}

/* A client that does not read gets no unbounded queue of task updates:
   each carries the whole task, so an update may be skipped while the
   queue is over its limit, except a terminal one, which is the last. */
static bool skip_for_backlog(struct conn *c, json_t *task, size_t len)
{
	const char *state =
	    json_string_value(json_object_get(json_object_get(task, "status"), "state"));
	bool terminal = state && strcmp(state, "TASK_STATE_SUBMITTED") &&
			strcmp(state, "TASK_STATE_WORKING");

	return !terminal && conn_queue_full_for(c, len);
}

static void deliver(struct conn *c, const Ptg__TaskUpdate *tu)
{
	json_t *task = json_loads(tu->task_json, JSON_ALLOW_NUL, NULL);
	json_t *delta = tu->delta_json[0]
			    ? json_loads(tu->delta_json, JSON_ALLOW_NUL, NULL)
			    : json_object();
	struct buf out = BUF_INIT;

	if (!json_is_object(task) || !json_is_object(delta)) {
		log_warn(conn_log_ctx(c), "dropping an unreadable task update");
	} else if (skip_for_backlog(c, task,
				    strlen(tu->task_json) + strlen(tu->delta_json))) {
		log_debug(conn_log_ctx(c),
			  "task update skipped: the client is behind (the next "
			  "one carries the whole task)");
	} else {
		json_t *payload = json_pack("{s:O, s:O}", "task", task, "delta", delta);
		frames_task_status_update(NULL, payload, conn_service_params(c),
					  time_now_ms(), &out);
		conn_send_json(c, &out);
		json_decref(payload);
	}
	json_decref(task);
	json_decref(delta);
	buf_free(&out);
}

void task_ops_conn_gone(struct conn *c)
{
	struct task_conn **slot = conn_tasks(c), *tc = *slot;
	struct upstream *up = conn_upstream(c);
	const struct attach_ctx *ctx = conn_attach_ctx(c);
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__TaskRequest tr = PTG__TASK_REQUEST__INIT;

	if (!tc)
		return;
	if (tc->link_gone || !up) {
		/* The link failed every pending request already. */
		free(tc);
		*slot = NULL;
		return;
	}
	upstream_unbind(up, tc->sub_id);
	while (!LIST_EMPTY(&tc->pending)) {
		struct pending_op *p = LIST_FIRST(&tc->pending);

		LIST_REMOVE(p, entry);
		upstream_cancel(up, p->request_id);
		free(p);
	}
	/* No reply wanted: params "" ends every subscription of sub_id. */
	tr.attach_id = tc->sub_id;
	tr.session_id = (char *)ctx->session_id;
	tr.principal = (char *)ctx->claims.sub;
	tr.op = PTG__TASK_OP__TASK_OP_UNSUBSCRIBE;
	m.msg_case = PTG__LINK_MESSAGE__MSG_TASK_REQUEST;
	m.task_request = &tr;
	upstream_send(up, &m);
	free(tc);
	*slot = NULL;
}
