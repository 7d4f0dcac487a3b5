/* tasks_ops: the TaskRequests of the sidecar's A2A tasks (SendMessage,
   GetTask, CancelTask, SubscribeToTask, Unsubscribe, ListTasks): their
   params, limits and answers. Every lookup goes through visible(): a
   request sees the tasks of its session that its principal owns (all of
   them with all_principals), and another's task is "not found", exactly
   as a task that never existed. The tasks themselves are kept by
   tasks.c. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "ptg_limits.h"
#include "recstore.h"
#include "session.h"
#include "task.h"
#include "task_proc.h"
#include "tasks.h"
#include "tasks_int.h"
#include "timeutil.h"
#include "wire.h"
#include "xalloc.h"

#define LIST_BUDGET (8u << 20) /* a ListTasks reply stays under the link cap */

/* What a request carries besides its params. */
struct req {
	struct tasks *ts;
	struct linkconn *lc;
	const Ptg__TaskRequest *r;
	struct session *s;
};

/* t is of the request's session and its principal may see it. */
static int visible(const struct req *q, const struct task *t)
{
	return strcmp(t->session_id, q->r->session_id) == 0 &&
	       task_visible(t, q->r->principal, q->r->all_principals);
}

static void reply_error(const struct req *q, Ptg__ErrorCode code, const char *msg)
{
	if (!q->r->request_id)
		return;
	wire_send_error(q->lc, q->r->request_id, q->r->attach_id, q->r->client_op_id,
			code, "%s", msg);
}

/* Answers with text, a JSON object. */
static void reply_text(const struct req *q, const char *text)
{
	Ptg__Reply rep = PTG__REPLY__INIT;

	if (!q->r->request_id)
		return;
	rep.request_id = q->r->request_id;
	rep.attach_id = q->r->attach_id;
	rep.client_op_id = q->r->client_op_id;
	rep.code = PTG__ERROR_CODE__OK;
	rep.result_case = PTG__REPLY__RESULT_TASK_JSON;
	rep.task_json = (char *)text;
	wire_send_reply(q->lc, &rep);
}

/* Answers with payload (consumed). */
static void reply_json(const struct req *q, json_t *payload)
{
	char *text = payload ? json_dumps(payload, JSON_COMPACT) : NULL;

	json_decref(payload);
	if (!text) {
		reply_error(q, PTG__ERROR_CODE__INTERNAL,
			    "the task cannot be written as JSON");
		return;
	}
	reply_text(q, text);
	free(text);
}

/* ---- requests ---- */

static struct task *find(const struct req *q, const char *id)
{
	for (size_t i = 0; i < q->ts->n; i++)
		if (strcmp(q->ts->v[i]->id, id) == 0 && visible(q, q->ts->v[i]))
			return q->ts->v[i];
	return NULL;
}

/* The task a repeated messageId or idempotency key names, among those the
   request sees: the principal's own first, so with tasks:all its own
   "m1" is not mistaken for another's. */
static struct task *find_repeat(const struct req *q, const char *message_id)
{
	const char *idem_key = q->r->idempotency_key;
	struct task *other = NULL;

	for (size_t i = 0; i < q->ts->n; i++) {
		struct task *t = q->ts->v[i];
		if (!visible(q, t) ||
		    !(strcmp(t->message_id, message_id) == 0 ||
		      (idem_key[0] && strcmp(t->idem_key, idem_key) == 0)))
			continue;
		if (task_visible(t, q->r->principal, 0))
			return t;
		if (!other)
			other = t;
	}
	return other;
}

static unsigned count_running(struct tasks *ts, const char *session_id)
{
	unsigned n = 0;

	for (size_t i = 0; i < ts->n; i++)
		if (!task_is_terminal(ts->v[i]) &&
		    (!session_id || strcmp(ts->v[i]->session_id, session_id) == 0))
			n++;
	return n;
}

static int streaming(const struct req *q)
{
	return q->r->op == PTG__TASK_OP__TASK_OP_SEND_STREAMING;
}

/* A repeated messageId or idempotency key: the existing task, nothing run. */
static void answer_repeat(const struct req *q, struct task *t)
{
	log_info(t->log_ctx,
		 "repeated message%s%.128s: the existing task is returned, "
		 "nothing is run",
		 q->r->trace_id[0] ? " trace=" : "", q->r->trace_id);
	if (!streaming(q)) {
		reply_json(q, json_pack("{s:o}", "task", task_json(t, -1)));
		return;
	}
	reply_json(q, json_pack("{s:s}", "task_id", t->id));
	tasks__flush_output(t);
	tasks__send_snapshot(t, q->lc, q->r->attach_id);
	if (!task_is_terminal(t))
		tasks__subscribe(q->ts, t, q->lc, q->r->attach_id);
}

static int check_limits(const struct req *q)
{
	const struct sidecar_config *cfg = q->ts->cfg;
	char msg[WIRE_MSG_MAX];

	if (count_running(q->ts, q->r->session_id) >= cfg->task_max_running_session) {
		snprintf(msg, sizeof(msg),
			 "%u tasks are running in this session already; "
			 "try again when one ends",
			 cfg->task_max_running_session);
	} else if (count_running(q->ts, NULL) >= cfg->task_max_running) {
		snprintf(msg, sizeof(msg),
			 "%u tasks are running in this sandbox already; "
			 "try again when one ends",
			 cfg->task_max_running);
	} else {
		return 0;
	}
	reply_error(q, PTG__ERROR_CODE__RATE_LIMITED, msg);
	return -1;
}

static void op_send(const struct req *q)
{
	struct task_send in;
	struct task *t;
	char err[LOG_ERR_MAX];
	int rc;

	if (!q->s) {
		reply_error(q, PTG__ERROR_CODE__NOT_FOUND, "the session is gone");
		return;
	}
	rc = task_parse_send(q->r->params_json, q->r->session_id,
			     q->ts->cfg->task_max_message_bytes, &in, err, sizeof(err));
	if (rc) {
		reply_error(q,
			    rc == 3 ? PTG__ERROR_CODE__PERMISSION_DENIED
				    : PTG__ERROR_CODE__INVALID_REQUEST,
			    err);
		return;
	}
	t = find_repeat(q, in.message_id);
	if (t) {
		task_send_release(&in);
		answer_repeat(q, t);
		return;
	}
	if (check_limits(q) < 0) {
		task_send_release(&in);
		return;
	}
	t = task_new(q->r->session_id, q->r->principal, &in, q->r->idempotency_key,
		     q->r->trace_id, time_now_ms());
	tasks__add(q->ts, t);
	log_info(t->log_ctx, "submitted (message %.128s) by %.256s", t->message_id,
		 t->owner);
	tasks__save(q->ts, t);
	if (streaming(q)) {
		reply_json(q, json_pack("{s:s}", "task_id", t->id));
		tasks__subscribe(q->ts, t, q->lc, q->r->attach_id);
		tasks__notify(t, task_status_delta(t));
	}
	tasks__start(q->ts, t, session_exited(q->s) ? 0 : session_pid(q->s));
	if (task_is_terminal(t)) {
		tasks__finish(q->ts, t);
	} else {
		tasks__save(q->ts, t);
		tasks__notify(t, task_status_delta(t));
	}
	if (!streaming(q))
		reply_json(q, json_pack("{s:o}", "task", task_json(t, -1)));
}

/* ---- params of the other ops ---- */

/* params: the payload object; its keys must be among names (NULL-ended). */
static json_t *parse_params(const struct req *q, const char *const *names)
{
	json_t *p =
	    q->r->params_json[0] ? json_loads(q->r->params_json, 0, NULL) : json_object();
	const char *key;
	json_t *v;
	char msg[WIRE_MSG_MAX];

	if (json_is_null(p)) {
		json_decref(p);
		p = json_object();
	}
	if (!json_is_object(p)) {
		json_decref(p);
		reply_error(q, PTG__ERROR_CODE__INVALID_REQUEST,
			    "the payload must be an object");
		return NULL;
	}
	json_object_foreach(p, key, v)
	{
		size_t i;
		for (i = 0; names[i] && strcmp(names[i], key) != 0; i++)
			;
		if (!names[i]) {
			snprintf(msg, sizeof(msg), "payload has an unknown field '%.64s'",
				 key);
			reply_error(q, PTG__ERROR_CODE__INVALID_REQUEST, msg);
			json_decref(p);
			return NULL;
		}
	}
	return p;
}

/* Either of two spellings (the binding's snake_case, or A2A's camelCase). */
static json_t *get2(json_t *p, const char *a, const char *b)
{
	json_t *v = json_object_get(p, a);

	return v ? v : json_object_get(p, b);
}

/* The task named by task_id (or id); answers the error itself. */
static struct task *named_task(const struct req *q, json_t *p)
{
	json_t *id = get2(p, "task_id", "id");
	struct task *t;

	if (!json_is_string(id) || !json_string_length(id) ||
	    json_string_length(id) > PTG_TASK_ID_MAX) {
		reply_error(q, PTG__ERROR_CODE__INVALID_REQUEST,
			    "payload.task_id must be a task id string");
		return NULL;
	}
	t = find(q, json_string_value(id));
	if (!t) /* another principal's task is not found either: ids do not leak */
		reply_error(q, PTG__ERROR_CODE__TASK_NOT_FOUND,
			    "no such task in this session");
	return t;
}

/* An optional non-negative integer at most max; -1 when absent, -2 bad. */
static long opt_count(json_t *p, const char *a, const char *b, long max)
{
	json_t *v = get2(p, a, b);

	if (!v || json_is_null(v))
		return -1;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > max)
		return -2;
	return (long)json_integer_value(v);
}

static void op_get(const struct req *q)
{
	static const char *const names[] = {"task_id",	     "id",	 "history_length",
					    "historyLength", "metadata", NULL};
	json_t *p = parse_params(q, names);
	struct task *t = p ? named_task(q, p) : NULL;
	long hl;

	if (t) {
		hl = opt_count(p, "history_length", "historyLength", 1000000);
		if (hl == -2)
			reply_error(q, PTG__ERROR_CODE__INVALID_REQUEST,
				    "payload.history_length must be an integer >= 0");
		else
			reply_json(q, json_pack("{s:o}", "task", task_json(t, hl)));
	}
	json_decref(p);
}

static void op_cancel(const struct req *q)
{
	static const char *const names[] = {"task_id", "id", "metadata", NULL};
	json_t *p = parse_params(q, names);
	struct task *t = p ? named_task(q, p) : NULL;
	struct run *r;

	json_decref(p);
	if (!t)
		return;
	if (task_is_terminal(t)) {
		reply_error(q, PTG__ERROR_CODE__TASK_NOT_CANCELABLE,
			    "the task has finished; a finished task cannot be canceled");
		return;
	}
	r = tasks__run_of(t);
	if (r && r->pid)
		kill(-r->pid, SIGKILL);
	if (r) {
		for (int k = 0; k < 2; k++) {
			if (r->fd[k] >= 0)
				tasks__drain(r, k, READS_PER_WAKE);
			tasks__close_pipe(r, k);
		}
	}
	tasks__flush_output(t);
	task_set_state(t, TASK_CANCELED,
		       "canceled by a client: the process group was killed",
		       time_now_ms());
	reply_json(q, json_pack("{s:o}", "task", task_json(t, -1)));
	tasks__finish(q->ts, t);
}

static void op_subscribe(const struct req *q)
{
	static const char *const names[] = {"task_id", "id", "metadata", NULL};
	json_t *p = parse_params(q, names);
	struct task *t = p ? named_task(q, p) : NULL;
	Ptg__SessionInfo info;
	uint64_t seq = 0;

	json_decref(p);
	if (!t)
		return;
	tasks__flush_output(
	    t); /* the snapshot below is where this subscriber's deltas start */
	if (!task_is_terminal(t) &&
	    tasks__subscribe(q->ts, t, q->lc, q->r->attach_id) < 0) {
		reply_error(q, PTG__ERROR_CODE__RATE_LIMITED,
			    "too many subscribers on this task");
		return;
	}
	if (q->s) {
		session_info(q->s, &info);
		seq = info.current_sequence;
		session_info_release(&info);
	}
	reply_json(q, json_pack("{s:I}", "current_sequence", (json_int_t)seq));
	tasks__send_snapshot(t, q->lc, q->r->attach_id);
}

static void op_unsubscribe(const struct req *q)
{
	static const char *const names[] = {"task_id", "id", NULL};
	json_t *p;
	struct task *t;

	if (!q->r->params_json[0]) { /* the connection is gone: every task */
		for (size_t i = 0; i < q->ts->n; i++)
			tasks__unsubscribe(q->ts->v[i], q->lc, q->r->attach_id);
		return;
	}
	p = parse_params(q, names);
	t = p ? named_task(q, p) : NULL;
	json_decref(p);
	if (!t)
		return;
	tasks__unsubscribe(t, q->lc, q->r->attach_id);
	reply_json(q, json_pack("{s:s}", "task_id", t->id));
}

/* The filter of ListTasks: {state?, contextId?}; -1 after answering. */
static int list_filter(const struct req *q, json_t *f, int *state)
{
	json_t *st = f ? get2(f, "state", "status") : NULL;
	json_t *ctx = f ? get2(f, "contextId", "context_id") : NULL;
	enum task_state s;

	*state = -1;
	if (!f || json_is_null(f))
		return 0;
	if (!json_is_object(f) || json_object_size(f) > (size_t)(!!st + !!ctx) ||
	    (st &&
	     (!json_is_string(st) || task_state_parse(json_string_value(st), &s) < 0)) ||
	    (ctx && !json_is_string(ctx))) {
		reply_error(
		    q, PTG__ERROR_CODE__INVALID_REQUEST,
		    "payload.filter may hold state (TASK_STATE_*) and contextId only");
		return -1;
	}
	if (ctx && strcmp(json_string_value(ctx), q->r->session_id) != 0) {
		reply_error(q, PTG__ERROR_CODE__PERMISSION_DENIED,
			    "filter.contextId names another session");
		return -1;
	}
	if (st)
		*state = (int)s;
	return 0;
}

/* Where a page starts in ts->v (newest first, so it is read backwards from
   *end): after the task page_token names, or from the newest without one.
   -1 when the token names no task the request sees (unknown, another
   principal's, or removed since). */
static int page_start(const struct req *q, const json_t *tok, size_t *end)
{
	const struct tasks *ts = q->ts;
	size_t i;

	if (!json_string_length(tok)) {
		*end = ts->n;
		return 0;
	}
	for (i = 0; i < ts->n && (strcmp(ts->v[i]->id, json_string_value(tok)) ||
				  !visible(q, ts->v[i]));
	     i++)
		;
	*end = i;
	return i == ts->n ? -1 : 0;
}

/* Appends t's JSON to the page's text; -1 (logged) when it cannot be
   written, so one bad task is left out instead of failing the page. */
static int append_task(struct buf *page, struct task *t, long hl, int arts)
{
	json_t *t_json = task_json(t, hl);
	char *text;

	if (t_json && !arts)
		json_object_set_new(t_json, "artifacts", json_array());
	text = t_json ? json_dumps(t_json, JSON_COMPACT) : NULL;
	json_decref(t_json);
	if (!text) {
		log_warn(t->log_ctx, "cannot be written as JSON: left out of the list");
		return -1;
	}
	buf_append_str(page, buf_size(page) ? "," : "{\"tasks\":[");
	buf_append_str(page, text);
	free(text);
	return 0;
}

/* Newest first; page_token is the id of the last task of the page before. */
static void op_list(const struct req *q)
{
	static const char *const names[] = {"page_size",	"pageSize",
					    "page_token",	"pageToken",
					    "filter",		"history_length",
					    "historyLength",	"include_artifacts",
					    "includeArtifacts", NULL};
	json_t *p = parse_params(q, names), *tok;
	struct buf page = BUF_INIT;
	long size, hl;
	size_t i, budget = 0, n = 0, skipped = 0;
	int state, arts;

	if (!p)
		return;
	size = opt_count(p, "page_size", "pageSize", 1000000);
	hl = opt_count(p, "history_length", "historyLength", 1000000);
	tok = get2(p, "page_token", "pageToken");
	arts = !json_is_false(get2(p, "include_artifacts", "includeArtifacts"));
	if (size == -2 || hl == -2 ||
	    (tok && !json_is_string(tok) && !json_is_null(tok))) {
		reply_error(q, PTG__ERROR_CODE__INVALID_REQUEST,
			    "payload.page_size and "
			    "history_length must be integers >= 0, page_token a string");
		json_decref(p);
		return;
	}
	if (list_filter(q, json_object_get(p, "filter"), &state) < 0) {
		json_decref(p);
		return;
	}
	if (size <= 0 || size > (long)q->ts->cfg->task_page_max)
		size = q->ts->cfg->task_page_max; /* clamped, as A2A lets a server do */
	if (page_start(q, tok, &i) < 0) {
		reply_error(q, PTG__ERROR_CODE__INVALID_REQUEST,
			    "payload.page_token is unknown or has expired");
		json_decref(p);
		return;
	}
	const char *last = NULL, *next = "";
	while (i-- > 0) {
		struct task *t = q->ts->v[i];
		if (!visible(q, t) || (state >= 0 && (int)t->state != state))
			continue;
		if (n == (size_t)size ||
		    (arts && budget + 6 * (t->out[0].len + t->out[1].len) > LIST_BUDGET &&
		     n)) {
			next = last;
			break;
		}
		last = t->id; /* a skipped task still moves the page on */
		if (append_task(&page, t, hl, arts) < 0) {
			skipped++;
			continue;
		}
		if (arts)
			budget += 6 * (t->out[0].len + t->out[1].len);
		budget += 4096 + strlen(t->command);
		n++;
	}
	if (skipped) {
		char ctx[96];

		snprintf(ctx, sizeof(ctx), "session=%.64s", q->r->session_id);
		log_warn(ctx, "ListTasks: %zu unwritable tasks left out", skipped);
	}
	buf_append_str(&page, buf_size(&page) ? "]" : "{\"tasks\":[]");
	/* Task ids are UUIDs: nothing in next needs escaping. */
	buf_appendf(&page, ",\"next_page_token\":\"%s\",\"page_size\":%ld}", next, size);
	buf_append(&page, "", 1);
	reply_text(q, (const char *)buf_head(&page));
	buf_free(&page);
	json_decref(p);
}

void tasks_request(struct tasks *ts, struct linkconn *lc, const Ptg__TaskRequest *r,
		   struct session *s)
{
	static const char no_principal[] =
	    "the task request names no principal of at most 256 bytes (a "
	    "gateway older than task owners?)";
	struct req q = {ts, lc, r, s};

	/* Every task is someone's: a gateway that names no principal (one
	   from before owners) is refused rather than given a shared one. A
	   connection's end (UNSUBSCRIBE, params "") needs none: it ends the
	   subscriptions of its own attach id. */
	if ((!r->principal[0] || strlen(r->principal) > TASK_OWNER_MAX) &&
	    !(r->op == PTG__TASK_OP__TASK_OP_UNSUBSCRIBE && !r->params_json[0])) {
		reply_error(&q, PTG__ERROR_CODE__INVALID_REQUEST, no_principal);
		return;
	}
	switch (r->op) {
	case PTG__TASK_OP__TASK_OP_SEND:
	case PTG__TASK_OP__TASK_OP_SEND_STREAMING:
		op_send(&q);
		break;
	case PTG__TASK_OP__TASK_OP_GET:
		op_get(&q);
		break;
	case PTG__TASK_OP__TASK_OP_LIST:
		op_list(&q);
		break;
	case PTG__TASK_OP__TASK_OP_CANCEL:
		op_cancel(&q);
		break;
	case PTG__TASK_OP__TASK_OP_SUBSCRIBE:
		op_subscribe(&q);
		break;
	case PTG__TASK_OP__TASK_OP_UNSUBSCRIBE:
		op_unsubscribe(&q);
		break;
	default:
		reply_error(&q, PTG__ERROR_CODE__UNSUPPORTED, "unknown task operation");
	}
}
