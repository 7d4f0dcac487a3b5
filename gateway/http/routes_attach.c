/* routes_attach: the attach upgrade (docs/protocol.md, "Opening a
   connection" and "Authentication"), its checks in
   their order (the 400s, the Origin, the token, scopes and claims, the
   connection caps, the link), then the session looked up on the sidecar
   before the 101; the connection slot it holds is released on every
   refusal. */
#include <errno.h>
#include <stdio.h>

#include "config.h"
#include "metrics.h"
#include "routes_int.h"
#include "upstream.h"

void routes__release_slot(struct route_req *rq)
{
	if (!rq->slot_held)
		return;
	rq->gateway->slot_release(rq->gateway->owner, rq->attach.claims.sub,
				  rq->attach.instance_id);
	rq->slot_held = false;
}

static void on_attach(struct route_req *rq, const Ptg__Reply *r)
{
	if (r && r->code == PTG__ERROR_CODE__OK &&
	    r->result_case == PTG__REPLY__RESULT_SESSION) {
		rq->attach.current_sequence = r->session->current_sequence;
		buf_reset(&rq->out);
		rq->status = 101;
		return;
	}
	routes__release_slot(rq);
	if (r && r->code == PTG__ERROR_CODE__NOT_FOUND)
		routes__error(rq, 404, "NOT_FOUND", "unknown session");
	else if (r && r->code == PTG__ERROR_CODE__OK)
		routes__error(rq, 500, "INTERNAL", "the sidecar sent no session");
	else
		routes__link_error(rq, r);
}

/* A browser page may open a terminal only from an allowed origin: the
   same one by default, so a page elsewhere holding a token cannot (and
   a future cookie-based login would not be CSRF-able). */
static int attach_origin(struct route_req *rq)
{
	const struct gw_config *cfg = rq->gateway->cfg;

	if (wshs_origin_allowed(rq->origin, rq->host, cfg->public_url,
				cfg->allowed_origins, cfg->n_allowed_origins))
		return 0;
	routes__error(rq, 403, "PERMISSION_DENIED",
		      cfg->n_allowed_origins
			  ? "this Origin is not in the gateway's --allowed-origin list"
			  : "a cross-origin page may not attach (same origin only; see "
			    "--allowed-origin)");
	return -EPERM;
}

/* The 400s, in order: a token in the query, a malformed upgrade, no
   pty-ws.v1 offered. */
int routes_attach_check(struct route_req *rq, struct wshs_offer *o)
{
	const char *why;

	if (routes_query_has_token(rq->target))
		why = "a token in the query string is refused: use the Authorization "
		      "header "
		      "or the bearer subprotocol";
	else if ((why = wshs_check_upgrade(rq->upgrade, rq->connection, rq->ws_version)))
		;
	else if (wshs_accept_key(rq->ws_key, rq->ws_accept) < 0)
		why = "missing or invalid Sec-WebSocket-Key";
	else if (wshs_parse_protocols(rq->ws_protocol, o) < 0)
		why = "malformed Sec-WebSocket-Protocol";
	else if (!o->v1)
		why = "the subprotocol " WSHS_PROTOCOL " was not offered";
	else
		return 0;
	routes__error(rq, 400, "INVALID_REQUEST", why);
	return -EINVAL;
}

/* 403, then 429 (503 when the whole gateway is full), then 503; on
   success the slot is held. */
static int attach_admit(struct route_req *rq, struct upstream *up)
{
	struct jwt_claims *c = &rq->attach.claims;
	const char *what = "connections";
	char msg[160];
	int rc;

	if (routes__attach_allowed(rq, c) < 0)
		return -EACCES;
	snprintf(rq->attach.instance_id, sizeof(rq->attach.instance_id), "%s",
		 rq->m.instance);
	snprintf(rq->attach.session_id, sizeof(rq->attach.session_id), "%s",
		 rq->m.session);
	rc = rq->gateway->slot_acquire(rq->gateway->owner, c->sub, rq->m.instance, &what);
	if (rc == -EAGAIN) {
		/* Nothing this client did: the gateway is full (503, as
		   nginx's limit_conn answers), and says when to try again. */
		rq->gateway->metrics->conns_refused_full++;
		routes__error(rq, 503, "UNAVAILABLE",
			      "the gateway is at its connection limit (--max-conns); "
			      "try again shortly");
		rq->retry_after = 1;
		return -EBUSY;
	}
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "connection limit reached (%s)",
			 what ? what : "limit");
		routes__error(rq, 429, "RATE_LIMITED", msg);
		return -EBUSY;
	}
	rq->slot_held = true;
	if (!upstream_up(up)) {
		routes__release_slot(rq);
		routes__unavailable(rq);
		return -ENOTCONN;
	}
	return 0;
}

int routes__attach(struct route_req *rq)
{
	struct wshs_offer o = {0};
	struct upstream *up;
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__GetSession g = PTG__GET_SESSION__INIT;
	int rc;

	/* The 400s, then the Origin (403), then the token (401/403). */
	rc = routes_attach_check(rq, &o);
	if (rc == 0)
		rc = attach_origin(rq);
	if (rc == 0)
		rc = routes__attach_auth(rq, &o, &rq->attach.claims);
	wshs_offer_clear(&o);
	if (rc < 0 || !(up = routes__instance(rq)) || attach_admit(rq, up) < 0)
		return 0;
	if (!rq->gateway->cfg->no_deflate)
		wshs_parse_extensions(rq->ws_extensions, &rq->deflate);
	rq->attach.deflate = rq->deflate.on;
	g.request_id = upstream_next_id(up);
	g.session_id = rq->m.session;
	m.msg_case = PTG__LINK_MESSAGE__MSG_GET_SESSION;
	m.get_session = &g;
	return routes__ask(rq, up, &m, g.request_id, on_attach);
}
