/* routes_dispatch: a request's life on the routes side: which listener
   serves which route, the dispatch to one handler per route
   (routes_admin.c, routes_sessions.c, routes_attach.c, routes_static.c,
   routes_recording.c), and what a request holds, given back when it
   ends. The policy (what is refused, in which order, with which status)
   reads from here into the handlers. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "metrics.h"
#include "routes.h"
#include "routes_int.h"
#include "upstream.h"

/* ---- a request's life ---- */

void routes_req_init(struct route_req *rq)
{
	memset(rq, 0, sizeof(*rq));
	buf_init(&rq->out);
	rq->file_fd = -1;
	rq->content_type = ROUTES__JSON;
}

/* ---- dispatch ---- */

static int (*const handlers[])(struct route_req *rq) = {
    [ROUTE_HEALTHZ] = routes__healthz,	   [ROUTE_READYZ] = routes__readyz,
    [ROUTE_METRICS] = routes__metrics,	   [ROUTE_AGENT_CARD] = routes__agent_card,
    [ROUTE_SESSIONS] = routes__sessions,   [ROUTE_SESSION] = routes__session,
    [ROUTE_ATTACH] = routes__attach,	   [ROUTE_STATIC] = routes__static,
    [ROUTE_RECORDING] = routes__recording,
};

/* The operator routes and the AgentCard move to --admin-listen when set. */
static int on_listener(const struct route_req *rq)
{
	enum route_id id = rq->m.id;
	int admin_route = id == ROUTE_HEALTHZ || id == ROUTE_READYZ ||
			  id == ROUTE_METRICS || id == ROUTE_AGENT_CARD;

	if (rq->role == ROUTE_ADMIN)
		return admin_route;
	if (rq->role == ROUTE_FLEET)
		return id == ROUTE_AGENT_CARD || id == ROUTE_SESSIONS ||
		       id == ROUTE_SESSION || id == ROUTE_ATTACH || id == ROUTE_RECORDING;
	return !admin_route || !rq->gateway->cfg->admin_host[0];
}

static int dispatch(struct route_req *rq)
{
	bool with_static = rq->role == ROUTE_PUBLIC && rq->gateway->cfg->static_dir[0];
	const char *why;
	int rc = routes_match(rq->target, with_static, &rq->m, &why);

	if (rc == -EINVAL)
		return routes__error(rq, 400, "INVALID_REQUEST", why);
	if (rc < 0 || !on_listener(rq)) {
		rq->m.id = 0;
		return routes__error(rq, 404, "NOT_FOUND", "no such path");
	}
	if (!routes_method_ok(rq->m.id, rq->method)) {
		routes__error(rq, 405, "INVALID_REQUEST", "method not allowed");
		rq->allow = routes_allow(rq->m.id);
		return 0;
	}
	if (routes__fleet_check(rq) < 0)
		return 0;
	rc = routes__forward(rq);
	if (rc != -ENOENT)
		return rc;
	return handlers[rq->m.id](rq);
}

int routes_handle(struct route_req *rq)
{
	int rc;

	rq->in_handle = true;
	rc = dispatch(rq);
	rq->in_handle = false;
	if (rc == 0)
		routes__count(rq);
	return rc;
}

void routes_req_clear(struct route_req *rq)
{
	if (rq->pending_up) {
		upstream_cancel(rq->pending_up, rq->pending_id);
		rq->pending_up = NULL;
	}
	routes__forward_clear(rq);
	routes__release_slot(rq);
	routes__rest_release(rq);
	if (rq->file_fd >= 0)
		close(rq->file_fd);
	rq->file_fd = -1;
	routes__export_free(rq);
	if (rq->held_bytes)
		rq->gateway->metrics->reply_bytes -= rq->held_bytes;
	rq->held_bytes = 0;
	buf_free(&rq->out);
}
