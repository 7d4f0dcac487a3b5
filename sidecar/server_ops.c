/* server_ops: the sidecar's session registry (sorted by id) and the
   handlers of the gateway's requests on a link, in a table indexed by
   the LinkMessage's case; each handler validates what the gateway sent
   and answers bad input with an error reply, never by exiting. The
   links they arrive on are server.c's, which calls in here, never the
   other way. */
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#include "ev.h"
#include "link.h"
#include "linkconn.h"
#include "log.h"
#include "ptg_limits.h"
#include "recstore.h"
#include "server.h"
#include "server_int.h"
#include "session.h"
#include "stats.h"
#include "store.h"
#include "tasks.h"
#include "timeutil.h"
#include "wire.h"
#include "xalloc.h"

#define MAX_ARGS       256
#define MAX_ARG_BYTES  4096
#define MAX_ARGV_TOTAL (16 * 1024) /* keeps a list of every session small */
#define MAX_ENV	       256
#define MAX_ENV_TOTAL  (64 * 1024)

/* A session list is paged and bounded (README "Session REST API"): a
   page holds at most LIST_PAGE_MAX sessions (LIST_PAGE_DEFAULT when the
   request names none) and stops early past LIST_PAGE_BYTES, and each
   entry's argv is cut to LIST_ARGV_BYTES (GetSession has it whole), so
   one answer costs the link and the gateway's loop a bounded amount
   however many sessions there are. */
#define LIST_PAGE_DEFAULT 100
#define LIST_PAGE_MAX	  500
#define LIST_PAGE_BYTES	  (256 * 1024)
#define LIST_ARGV_BYTES	  256

/* ---- session registry ----
   Sorted by session id (UUIDv7, so by creation), so a list's page starts
   where the last one ended however sessions come and go between them. */

/* The index of the first session whose id sorts after id (strict) or,
   with or_equal, at or after it. */
static size_t lower_bound(const struct server *srv, const char *id, bool or_equal)
{
	size_t lo = 0, hi = srv->n_sessions;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(session_id(srv->sessions[mid]), id);

		if (c < 0 || (c == 0 && !or_equal))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct session *find_session(struct server *srv, const char *id)
{
	size_t i = lower_bound(srv, id, true);

	if (i < srv->n_sessions && strcmp(session_id(srv->sessions[i]), id) == 0)
		return srv->sessions[i];
	return NULL;
}

static void insert_session(struct server *srv, struct session *s)
{
	size_t i = lower_bound(srv, session_id(s), true);

	srv->sessions =
	    xrealloc(srv->sessions, (srv->n_sessions + 1) * sizeof(*srv->sessions));
	memmove(&srv->sessions[i + 1], &srv->sessions[i],
		(srv->n_sessions - i) * sizeof(*srv->sessions));
	srv->sessions[i] = s;
	srv->n_sessions++;
}

static void remove_session(struct server *srv, size_t i)
{
	struct session_counts c;

	session_counts(srv->sessions[i], &c);
	srv->gone.pty_bytes += c.pty_bytes;
	srv->gone.input_bytes += c.input_bytes;
	log_info(session_log_ctx(srv->sessions[i]), "reaped");
	session_forget(srv->sessions[i]);
	session_free(srv->sessions[i]);
	srv->n_sessions--;
	memmove(&srv->sessions[i], &srv->sessions[i + 1],
		(srv->n_sessions - i) * sizeof(*srv->sessions));
}

int server__by_id(const void *a, const void *b)
{
	return strcmp(session_id(*(struct session *const *)a),
		      session_id(*(struct session *const *)b));
}

void server__reap_sessions(struct server *srv, int64_t now_ms)
{
	for (size_t i = 0; i < srv->n_sessions;) {
		if (session_reapable(srv->sessions[i], now_ms))
			remove_session(srv, i);
		else
			i++;
	}
}

/* The exited session with no member that exited first, the one a full
   sidecar lets go to make room; SIZE_MAX when there is none. */
static size_t oldest_evictable(const struct server *srv)
{
	size_t best = SIZE_MAX;
	int64_t best_ms = INT64_MAX, t;

	for (size_t i = 0; i < srv->n_sessions; i++) {
		t = session_evictable_since(srv->sessions[i]);
		if (t >= 0 && t < best_ms) {
			best_ms = t;
			best = i;
		}
	}
	return best;
}

/* Looks up a session named by a request; answers NOT_FOUND itself. */
static struct session *session_or_reply(struct link *l, const char *id,
					uint64_t request_id, uint64_t attach_id,
					const char *client_op_id)
{
	struct session *s = find_session(l->srv, id);

	if (!s)
		wire_send_error(l->lc, request_id, attach_id, client_op_id,
				PTG__ERROR_CODE__NOT_FOUND, "no session %.64s", id);
	return s;
}

/* Answers a session request (create, get, kill) in the reply lane. */
static void reply_session(struct link *l, uint64_t request_id, struct session *s)
{
	Ptg__Reply r = PTG__REPLY__INIT;
	Ptg__SessionInfo info;

	session_info(s, &info);
	r.request_id = request_id;
	r.code = PTG__ERROR_CODE__OK;
	r.result_case = PTG__REPLY__RESULT_SESSION;
	r.session = &info;
	wire_send_answer(l->lc, &r);
	session_info_release(&info);
}

/* ---- handlers ---- */

static void on_hello(struct link *l, const Ptg__LinkMessage *m)
{
	const struct sidecar_config *c = l->srv->cfg;
	Ptg__LinkMessage out = PTG__LINK_MESSAGE__INIT;
	Ptg__HelloAck ack = PTG__HELLO_ACK__INIT;
	Ptg__Limits lim = PTG__LIMITS__INIT;

	if (m->hello->protocol_version != PTG__PROTOCOL_VERSION__PROTOCOL_VERSION_1) {
		linkconn_close(l->lc, "unsupported protocol version");
		return;
	}
	l->said_hello = true;
	if (!l->hooks)
		log_info(linkconn_name(l->lc), "gateway '%.64s' linked",
			 m->hello->gateway_id);
	lim.max_controllers = c->max_controllers;
	lim.max_observers = c->max_observers;
	lim.replay_frames = c->replay_frames;
	lim.replay_seconds = c->replay_seconds;
	lim.replay_bytes = c->replay_bytes;
	lim.keyframe_seconds = c->keyframe_seconds;
	lim.keyframe_frames = c->keyframe_frames;
	lim.default_cols = c->default_cols;
	lim.default_rows = c->default_rows;
	ack.protocol_version = PTG__PROTOCOL_VERSION__PROTOCOL_VERSION_1;
	ack.instance_id = (char *)c->instance_id;
	ack.limits = &lim;
	ack.reports_stats = 1;
	ack.control_approval = 1;
	out.msg_case = PTG__LINK_MESSAGE__MSG_HELLO_ACK;
	out.hello_ack = &ack;
	linkconn_send(l->lc, &out);
	/* After the ack: what the owner sends now follows the opening. */
	if (l->hooks && l->hooks->on_linked)
		l->hooks->on_linked(l->hooks_user, m->hello->gateway_id);
}

static const char *check_create(const Ptg__CreateSession *c)
{
	size_t argv_total = 0, env_total = 0;

	if (c->n_argv > MAX_ARGS || c->n_env > MAX_ENV)
		return "too many arguments or environment variables (256 at most)";
	for (size_t i = 0; i < c->n_argv; i++) {
		if (strlen(c->argv[i]) > MAX_ARG_BYTES)
			return "an argument is longer than 4096 bytes";
		argv_total += strlen(c->argv[i]) + 1;
	}
	if (argv_total > MAX_ARGV_TOTAL)
		return "the command is longer than 16 KiB in all";
	for (size_t i = 0; i < c->n_env; i++)
		env_total += strlen(c->env[i]->name) + strlen(c->env[i]->value) + 2;
	if (env_total > MAX_ENV_TOTAL)
		return "the environment is larger than 64 KiB in all";
	if (c->n_argv && !c->argv[0][0])
		return "the command name is empty";
	for (size_t i = 0; i < c->n_env; i++) {
		const char *n = c->env[i]->name;
		if (!n[0] || strchr(n, '=') ||
		    strlen(n) + strlen(c->env[i]->value) > MAX_ARG_BYTES)
			return "bad environment variable (empty name, '=' in name, or "
			       "too long)";
	}
	if ((c->cols || c->rows) && !PTG_DIM_OK(c->cols, c->rows))
		return "cols and rows must be 1 to " PTG_STR(PTG_DIM_MAX);
	if (strlen(c->cwd) > 4096 || strlen(c->label) > PTG_LABEL_MAX_BYTES)
		return "cwd or label too long";
	if (c->control_policy != PTG__CONTROL_POLICY__CONTROL_OPEN &&
	    c->control_policy != PTG__CONTROL_POLICY__CONTROL_APPROVE &&
	    c->control_policy != PTG__CONTROL_POLICY__CONTROL_OWNER_ONLY)
		return "unknown control policy";
	if (strlen(c->owner) > STORE_OWNER_MAX)
		return "owner too long";
	return NULL;
}

static char **make_env(const Ptg__CreateSession *c)
{
	char **env = xcalloc(c->n_env + 1, sizeof(*env));

	for (size_t i = 0; i < c->n_env; i++) {
		size_t n = strlen(c->env[i]->name) + strlen(c->env[i]->value) + 2;
		env[i] = xmalloc(n);
		snprintf(env[i], n, "%s=%s", c->env[i]->name, c->env[i]->value);
	}
	return env;
}

static void on_create(struct link *l, const Ptg__LinkMessage *m)
{
	const Ptg__CreateSession *c = m->create_session;
	struct server *srv = l->srv;
	struct session_params p = {
	    .cwd = c->cwd,
	    .cols = c->cols,
	    .rows = c->rows,
	    .policy = c->policy,
	    .control_policy = c->control_policy,
	    .owner = c->owner,
	    .label = c->label,
	};
	const char *bad = check_create(c);
	char err[LOG_ERR_MAX];
	struct session *s;
	char **env, **argv;
	bool full;

	if (bad) {
		wire_send_answer_error(l->lc, c->request_id,
				       PTG__ERROR_CODE__INVALID_REQUEST, "%s", bad);
		return;
	}
	/* Exited sessions are reaped when due (on_tick), not here: a create
	   takes the place of the oldest exited one only when the sidecar is
	   full, and only once its own program has started. */
	full = srv->n_sessions >= srv->cfg->max_sessions;
	if (full && oldest_evictable(srv) == SIZE_MAX) {
		wire_send_answer_error(l->lc, c->request_id,
				       PTG__ERROR_CODE__RATE_LIMITED,
				       "too many sessions (%u)", srv->cfg->max_sessions);
		return;
	}
	env = make_env(c);
	p.env_extra = env;
	/* protobuf-c arrays are counted; exec wants them NULL-terminated. */
	argv = xcalloc(c->n_argv + 1, sizeof(*argv));
	if (c->n_argv) /* no argv (the default shell): c->argv is NULL */
		memcpy(argv, c->argv, c->n_argv * sizeof(*argv));
	p.argv = argv;
	s = session_new(srv->cfg, srv->loop, &p, err, sizeof(err));
	free(argv);
	for (size_t i = 0; env[i]; i++)
		free(env[i]);
	free(env);
	if (!s) {
		log_warn(linkconn_name(l->lc), "create session: %s", err);
		wire_send_answer_error(l->lc, c->request_id,
				       PTG__ERROR_CODE__INVALID_REQUEST, "%s", err);
		return;
	}
	if (full) {
		log_info(session_log_ctx(srv->sessions[oldest_evictable(srv)]),
			 "making room for a new session (--max-sessions %u)",
			 srv->cfg->max_sessions);
		remove_session(srv, oldest_evictable(srv));
	}
	insert_session(srv, s);
	reply_session(l, c->request_id, s);
}

/* One entry of a list page; cut holds the argument argv was cut in. */
struct list_entry {
	Ptg__SessionInfo info;
	char **argv; /* the summary's (owned), or NULL: info.argv is whole */
	char cut[LIST_ARGV_BYTES + 1];
};

/* Cuts e's argv to LIST_ARGV_BYTES (each argument counted with its NUL),
   the last one kept cut at a UTF-8 character boundary. */
static void summarise_argv(struct list_entry *e)
{
	size_t used = 0, n = 0;

	for (; n < e->info.n_argv; n++) {
		size_t len = strlen(e->info.argv[n]);

		if (len + 1 > LIST_ARGV_BYTES - used)
			break;
		used += len + 1;
	}
	if (n == e->info.n_argv)
		return;
	e->argv = xcalloc(n + 1, sizeof(*e->argv));
	memcpy(e->argv, e->info.argv, n * sizeof(*e->argv));
	if (used + 1 < LIST_ARGV_BYTES) {
		size_t keep = LIST_ARGV_BYTES - used - 1;

		while (keep > 0 && ((unsigned char)e->info.argv[n][keep] & 0xc0) == 0x80)
			keep--;
		memcpy(e->cut, e->info.argv[n], keep);
		e->cut[keep] = '\0';
		if (keep > 0)
			e->argv[n++] = e->cut;
	}
	e->info.argv = e->argv;
	e->info.n_argv = n;
	e->info.argv_truncated = 1;
}

/* Fills list with the page of sessions whose ids sort after after: up to the page
   size, and past the first entry no further than LIST_PAGE_BYTES;
   next_after names the last entry when more follow. */
static void fill_page(struct server *srv, const char *after, size_t want,
		      struct list_entry *e, Ptg__SessionInfo **ptrs,
		      Ptg__SessionList *list)
{
	size_t i = after[0] ? lower_bound(srv, after, false) : 0, bytes = 0;

	list->sessions = ptrs;
	for (; i < srv->n_sessions && list->n_sessions < want; i++) {
		struct list_entry *x = &e[list->n_sessions];

		session_info(srv->sessions[i], &x->info);
		summarise_argv(x);
		bytes += ptg__session_info__get_packed_size(&x->info);
		if (list->n_sessions > 0 && bytes > LIST_PAGE_BYTES) {
			session_info_release(&x->info);
			free(x->argv);
			break;
		}
		ptrs[list->n_sessions++] = &x->info;
	}
	/* The ids stay valid until the answer is sent. */
	list->next_after = i < srv->n_sessions && list->n_sessions > 0
			       ? ptrs[list->n_sessions - 1]->session_id
			       : "";
}

static void on_list(struct link *l, const Ptg__LinkMessage *m)
{
	Ptg__Reply r = PTG__REPLY__INIT;
	Ptg__SessionList list = PTG__SESSION_LIST__INIT;
	const Ptg__ListSessions *ls = m->list_sessions;
	size_t want = ls->page_size ? ls->page_size : LIST_PAGE_DEFAULT;
	struct list_entry *e;
	Ptg__SessionInfo **ptrs;

	if (want > LIST_PAGE_MAX)
		want = LIST_PAGE_MAX;
	e = xcalloc(want, sizeof(*e));
	ptrs = xcalloc(want, sizeof(*ptrs));
	fill_page(l->srv, ls->after, want, e, ptrs, &list);
	r.request_id = m->list_sessions->request_id;
	r.result_case = PTG__REPLY__RESULT_SESSIONS;
	r.sessions = &list;
	wire_send_answer(l->lc, &r);
	for (size_t i = 0; i < list.n_sessions; i++) {
		session_info_release(&e[i].info);
		free(e[i].argv);
	}
	free(ptrs);
	free(e);
}

static void on_get(struct link *l, const Ptg__LinkMessage *m)
{
	const Ptg__GetSession *g = m->get_session;
	struct session *s = find_session(l->srv, g->session_id);

	if (s)
		reply_session(l, g->request_id, s);
	else
		wire_send_answer_error(l->lc, g->request_id, PTG__ERROR_CODE__NOT_FOUND,
				       "no session %.64s", g->session_id);
}

/* A page of a session's recording, live or exited. */
static void on_export(struct link *l, const Ptg__LinkMessage *m)
{
	const Ptg__ExportSession *q = m->export_session;
	struct session *s = find_session(l->srv, q->session_id);
	Ptg__Reply r = PTG__REPLY__INIT;
	Ptg__ExportChunk c = PTG__EXPORT_CHUNK__INIT;
	struct buf out = BUF_INIT;
	uint8_t carry[4];

	if (!s) {
		wire_send_answer_error(l->lc, q->request_id, PTG__ERROR_CODE__NOT_FOUND,
				       "no session %.64s", q->session_id);
		return;
	}
	c.carry.data = carry;
	session_export_page(s, q, &out, &c);
	r.request_id = q->request_id;
	r.code = PTG__ERROR_CODE__OK;
	r.result_case = PTG__REPLY__RESULT_EXPORT_CHUNK;
	r.export_chunk = &c;
	wire_send_answer(l->lc, &r);
	buf_free(&out);
}

static void on_kill(struct link *l, const Ptg__LinkMessage *m)
{
	const Ptg__KillSession *k = m->kill_session;
	struct session *s = find_session(l->srv, k->session_id);

	if (!s) {
		wire_send_answer_error(l->lc, k->request_id, PTG__ERROR_CODE__NOT_FOUND,
				       "no session %.64s", k->session_id);
		return;
	}
	session_kill(s, "ended by request");
	reply_session(l, k->request_id, s);
}

static void on_attach(struct link *l, const Ptg__LinkMessage *m)
{
	const Ptg__Attach *a = m->attach;
	struct session *s = session_or_reply(l, a->session_id, a->request_id,
					     a->attach_id, a->client_op_id);

	if (s)
		session_attach(s, l->lc, a);
}

static void on_detach(struct link *l, const Ptg__LinkMessage *m)
{
	const Ptg__Detach *d = m->detach;
	struct session *s = find_session(l->srv, d->session_id);

	if ((!s || session_detach(s, l->lc, d->attach_id, d->request_id,
				  d->client_op_id) < 0) &&
	    d->request_id)
		wire_send_error(l->lc, d->request_id, d->attach_id, d->client_op_id,
				PTG__ERROR_CODE__NOT_FOUND, "not attached");
}

static void on_input(struct link *l, const Ptg__LinkMessage *m)
{
	const Ptg__Input *in = m->input;
	struct session *s =
	    session_or_reply(l, in->session_id, 0, in->attach_id, in->client_op_id);

	if (s)
		session_input(s, l->lc, in);
}

static void on_resize(struct link *l, const Ptg__LinkMessage *m)
{
	const Ptg__Resize *rz = m->resize;
	struct session *s =
	    session_or_reply(l, rz->session_id, 0, rz->attach_id, rz->client_op_id);

	if (s)
		session_resize(s, l->lc, rz);
}

static void on_request_role(struct link *l, const Ptg__LinkMessage *m)
{
	const Ptg__RequestRole *rr = m->request_role;
	struct session *s =
	    session_or_reply(l, rr->session_id, 0, rr->attach_id, rr->client_op_id);

	if (s)
		session_request_role(s, l->lc, rr);
}

static void on_decide_control(struct link *l, const Ptg__LinkMessage *m)
{
	const Ptg__DecideControl *dc = m->decide_control;
	struct session *s = session_or_reply(l, dc->session_id, dc->request_id,
					     dc->attach_id, dc->client_op_id);

	if (s)
		session_decide_control(s, l->lc, dc);
}

static void on_request_keyframe(struct link *l, const Ptg__LinkMessage *m)
{
	const Ptg__RequestKeyframe *rk = m->request_keyframe;
	struct session *s =
	    session_or_reply(l, rk->session_id, 0, rk->attach_id, rk->client_op_id);

	if (s)
		session_request_keyframe(s, l->lc, rk);
}

static void on_task(struct link *l, const Ptg__LinkMessage *m)
{
	tasks_request(l->srv->tasks, l->lc, m->task_request,
		      find_session(l->srv, m->task_request->session_id));
}

static void on_stats(struct link *l, const Ptg__LinkMessage *m)
{
	Ptg__Reply r = PTG__REPLY__INIT;
	Ptg__SidecarStats st;

	stats_fill(l->srv->sessions, l->srv->n_sessions, &l->srv->gone,
		   l->srv->cfg->state_dir[0] != '\0', &st);
	r.request_id = m->get_stats->request_id;
	r.code = PTG__ERROR_CODE__OK;
	r.result_case = PTG__REPLY__RESULT_STATS;
	r.stats = &st;
	wire_send_answer(l->lc, &r);
}

static const handler_fn handlers[] = {
    [PTG__LINK_MESSAGE__MSG_HELLO] = on_hello,
    [PTG__LINK_MESSAGE__MSG_CREATE_SESSION] = on_create,
    [PTG__LINK_MESSAGE__MSG_LIST_SESSIONS] = on_list,
    [PTG__LINK_MESSAGE__MSG_GET_SESSION] = on_get,
    [PTG__LINK_MESSAGE__MSG_KILL_SESSION] = on_kill,
    [PTG__LINK_MESSAGE__MSG_ATTACH] = on_attach,
    [PTG__LINK_MESSAGE__MSG_DETACH] = on_detach,
    [PTG__LINK_MESSAGE__MSG_INPUT] = on_input,
    [PTG__LINK_MESSAGE__MSG_RESIZE] = on_resize,
    [PTG__LINK_MESSAGE__MSG_REQUEST_ROLE] = on_request_role,
    [PTG__LINK_MESSAGE__MSG_REQUEST_KEYFRAME] = on_request_keyframe,
    [PTG__LINK_MESSAGE__MSG_TASK_REQUEST] = on_task,
    [PTG__LINK_MESSAGE__MSG_EXPORT_SESSION] = on_export,
    [PTG__LINK_MESSAGE__MSG_GET_STATS] = on_stats,
    [PTG__LINK_MESSAGE__MSG_DECIDE_CONTROL] = on_decide_control,
};

handler_fn server__handler(unsigned msg_case)
{
	if (msg_case >= sizeof(handlers) / sizeof(handlers[0]))
		return NULL;
	return handlers[msg_case];
}
