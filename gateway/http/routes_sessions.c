/* routes_sessions: the session REST API (docs/protocol.md, "Around the
   WebSocket") over the sidecar link: list and create
   (/agents/{i}/sessions), get and kill (/agents/{i}/sessions/{s}), each a
   link request whose reply becomes the JSON answer. The list is paged
   (?page_size=N&page_token=T, the answer's next_page_token while more
   follow): the sidecar bounds each page and cuts each entry's command, so
   one answer costs this loop a bounded amount of encoding. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "b64.h"
#include "id.h"
#include "log.h"
#include "num.h"
#include "routes_int.h"
#include "upstream.h"

#define PAGE_SIZE_DEFAULT 100
#define PAGE_SIZE_MAX	  500 /* larger asks are served 500 at a time */
#define PAGE_PARAM_MAX	  128 /* a page_size or page_token value */

/* The raw value of query parameter name in target into out: 1 when
   present, 0 when absent, -EINVAL when longer than cap - 1. Values are
   taken as sent: page_size is digits and page_token base64url, neither
   of which needs escaping. */
static int query_param(const char *target, const char *name, char *out, size_t cap)
{
	const char *q = strchr(target, '?');
	size_t nlen = strlen(name);

	while (q && *q) {
		size_t len;

		q++;
		len = strcspn(q, "&#");
		if (len > nlen && !strncmp(q, name, nlen) && q[nlen] == '=') {
			if (len - nlen - 1 >= cap)
				return -EINVAL;
			memcpy(out, q + nlen + 1, len - nlen - 1);
			out[len - nlen - 1] = '\0';
			return 1;
		}
		q = q[len] == '&' ? q + len : NULL;
	}
	return 0;
}

static int bad_page(struct route_req *rq, const char *why)
{
	routes__error(rq, 400, "INVALID_REQUEST", why);
	return -EINVAL;
}

/* page_size and page_token of a list request into ls (after is the
   storage for the decoded token). Returns 0, or -EINVAL with the 400 in
   rq. */
static int page_params(struct route_req *rq, Ptg__ListSessions *ls, char *after,
		       size_t cap)
{
	char v[PAGE_PARAM_MAX];
	struct buf id = BUF_INIT;
	uint64_t n = PAGE_SIZE_DEFAULT;
	int rc = query_param(rq->target, "page_size", v, sizeof(v)), ok;

	if (rc < 0 || (rc == 1 && num_parse_u64(v, 0, UINT32_MAX, &n) < 0))
		return bad_page(rq, "page_size must be a number: 1 to 500 (0: 100)");
	if (n == 0)
		n = PAGE_SIZE_DEFAULT;
	ls->page_size = (uint32_t)(n > PAGE_SIZE_MAX ? PAGE_SIZE_MAX : n);
	ls->after = "";
	rc = query_param(rq->target, "page_token", v, sizeof(v));
	if (rc == 0 || (rc == 1 && !v[0]))
		return 0;
	ok = rc == 1 && b64url_decode(v, strlen(v), &id) == 0 && buf_size(&id) < cap;
	if (ok) {
		memcpy(after, buf_head(&id), buf_size(&id));
		after[buf_size(&id)] = '\0';
		ok = strlen(after) == buf_size(&id) && id_valid(after);
	}
	buf_free(&id);
	if (!ok)
		return bad_page(rq, "invalid page_token");
	ls->after = after;
	return 0;
}

/* A list entry: the session object, with command_truncated when the
   sidecar cut its command (GET of the session has it whole). */
static json_t *list_entry(const Ptg__SessionInfo *s)
{
	json_t *o = routes_session_json(s);

	if (s->argv_truncated)
		json_object_set_new(o, "command_truncated", json_true());
	return o;
}

static void on_list(struct route_req *rq, const Ptg__Reply *r)
{
	json_t *a = json_array(), *o;
	struct buf tok = BUF_INIT;
	const char *next;

	if (!r || r->code != PTG__ERROR_CODE__OK) {
		json_decref(a);
		routes__link_error(rq, r);
		return;
	}
	if (r->result_case != PTG__REPLY__RESULT_SESSIONS) {
		routes__json(rq, 200, json_pack("{s:o}", "sessions", a));
		return;
	}
	for (size_t i = 0; i < r->sessions->n_sessions; i++)
		json_array_append_new(a, list_entry(r->sessions->sessions[i]));
	o = json_pack("{s:o}", "sessions", a);
	next = r->sessions->next_after;
	if (next && next[0]) {
		b64url_encode((const uint8_t *)next, strlen(next), &tok);
		buf_append(&tok, "", 1);
		json_object_set_new(o, "next_page_token",
				    json_string((const char *)buf_head(&tok)));
		buf_free(&tok);
	}
	routes__json(rq, 200, o);
}

static int list(struct route_req *rq)
{
	struct jwt_claims c;
	struct upstream *up = routes__rest_gate(rq, SCOPE_SESSIONS, NULL, &c);
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__ListSessions ls = PTG__LIST_SESSIONS__INIT;
	char after[PTG_ID_MAX + 1];

	if (!up || page_params(rq, &ls, after, sizeof(after)) < 0)
		return 0;
	if (!upstream_up(up))
		return routes__unavailable(rq);
	ls.request_id = upstream_next_id(up);
	m.msg_case = PTG__LINK_MESSAGE__MSG_LIST_SESSIONS;
	m.list_sessions = &ls;
	return routes__ask(rq, up, &m, ls.request_id, on_list);
}

static void on_create(struct route_req *rq, const Ptg__Reply *r)
{
	char http_base[ROUTES_BASE_MAX], ws_base[ROUTES_BASE_MAX], url[ROUTES_URL_MAX];

	if (!r || r->code != PTG__ERROR_CODE__OK) {
		routes__link_error(rq, r);
		return;
	}
	if (r->result_case != PTG__REPLY__RESULT_SESSION) {
		routes__error(rq, 500, "INTERNAL", "the sidecar sent no session");
		return;
	}
	routes__bases(rq->gateway, http_base, ws_base, sizeof(http_base));
	snprintf(url, sizeof(url), "%s/agents/%s/sessions/%s/attach", ws_base,
		 rq->m.instance, r->session->session_id);
	routes__json(rq, 201, routes_created_json(r->session, url));
}

static int create(struct route_req *rq)
{
	struct jwt_claims c;
	struct upstream *up = routes__rest_gate(rq, SCOPE_SESSIONS, NULL, &c);
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	struct route_create rc;
	char err[LOG_ERR_MAX];
	int ret;

	if (!up)
		return 0;
	if (routes_parse_create(rq->body, rq->body_len, &rc, err, sizeof(err)) < 0) {
		routes_create_clear(&rc);
		return routes__error(rq, 400, "INVALID_REQUEST", err);
	}
	if (!upstream_up(up)) {
		routes_create_clear(&rc);
		return routes__unavailable(rq);
	}
	if (rc.msg.control_policy != PTG__CONTROL_POLICY__CONTROL_OPEN &&
	    !upstream_control_approval(up)) {
		routes_create_clear(&rc);
		return routes__error(rq, 400, "INVALID_REQUEST",
				     "control_policy: this sandbox's sidecar knows "
				     "only \"open\"");
	}
	rc.msg.owner = c.sub;
	rc.msg.request_id = upstream_next_id(up);
	m.msg_case = PTG__LINK_MESSAGE__MSG_CREATE_SESSION;
	m.create_session = &rc.msg;
	ret = routes__ask(rq, up, &m, rc.msg.request_id, on_create);
	routes_create_clear(&rc);
	return ret;
}

int routes__sessions(struct route_req *rq)
{
	return !strcmp(rq->method, "POST") ? create(rq) : list(rq);
}

static void on_session(struct route_req *rq, const Ptg__Reply *r)
{
	if (!r || r->code != PTG__ERROR_CODE__OK) {
		routes__link_error(rq, r);
		return;
	}
	if (r->result_case == PTG__REPLY__RESULT_SESSION)
		routes__json(rq, 200, routes_session_json(r->session));
	else
		routes__json(rq, 200, json_pack("{s:s}", "session_id", rq->m.session));
}

int routes__session(struct route_req *rq)
{
	bool del = !strcmp(rq->method, "DELETE");
	unsigned need = del ? SCOPE_SESSIONS : SCOPE_SESSIONS | SCOPE_OBSERVE;
	struct jwt_claims c;
	struct upstream *up = routes__rest_gate(rq, need, rq->m.session, &c);
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__GetSession g = PTG__GET_SESSION__INIT;
	Ptg__KillSession k = PTG__KILL_SESSION__INIT;
	uint64_t id;

	if (!up)
		return 0;
	if (!upstream_up(up))
		return routes__unavailable(rq);
	id = upstream_next_id(up);
	if (del) {
		k.request_id = id;
		k.session_id = rq->m.session;
		m.msg_case = PTG__LINK_MESSAGE__MSG_KILL_SESSION;
		m.kill_session = &k;
	} else {
		g.request_id = id;
		g.session_id = rq->m.session;
		m.msg_case = PTG__LINK_MESSAGE__MSG_GET_SESSION;
		m.get_session = &g;
	}
	return routes__ask(rq, up, &m, id, on_session);
}
