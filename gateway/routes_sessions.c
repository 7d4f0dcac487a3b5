/* routes_sessions: the session REST API of SPEC 9 over the sidecar link:
   list and create (/agents/{i}/sessions), get and kill
   (/agents/{i}/sessions/{s}), each a link request whose reply becomes
   the JSON answer. */
#include <stdio.h>
#include <string.h>

#include "gateway.h"
#include "routes_int.h"
#include "upstream.h"

static void on_list(struct route_req *rq, const Ptg__Reply *r)
{
	json_t *a = json_array();

	if (!r || r->code != PTG__ERROR_CODE__OK) {
		json_decref(a);
		routes__link_error(rq, r);
		return;
	}
	if (r->result_case == PTG__REPLY__RESULT_SESSIONS)
		for (size_t i = 0; i < r->sessions->n_sessions; i++)
			json_array_append_new(
			    a, routes_session_json(r->sessions->sessions[i]));
	routes__json(rq, 200, json_pack("{s:o}", "sessions", a));
}

static int list(struct route_req *rq)
{
	struct jwt_claims c;
	struct upstream *up = routes__rest_gate(rq, SCOPE_SESSIONS, NULL, &c);
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__ListSessions ls = PTG__LIST_SESSIONS__INIT;

	if (!up)
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
	char http_base[600], ws_base[600], url[1200];

	if (!r || r->code != PTG__ERROR_CODE__OK) {
		routes__link_error(rq, r);
		return;
	}
	if (r->result_case != PTG__REPLY__RESULT_SESSION) {
		routes__error(rq, 500, "INTERNAL", "the sidecar sent no session");
		return;
	}
	routes__gw_bases(rq->gw, http_base, ws_base, sizeof(http_base));
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
	char err[256];
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
	int del = !strcmp(rq->method, "DELETE");
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
