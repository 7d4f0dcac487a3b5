/* routes_int: what the files of the routes module share and nothing
   outside it uses: the answer helpers (routes_reply.c), the token and
   scope checks (routes_auth.c), the URL bases (routes_json.c) and one
   handler per route id (routes_admin.c, routes_sessions.c,
   routes_attach.c, routes_static.c) for the dispatch table in routes.c.
   The double underscore marks them private to the module. */
#ifndef PTG_ROUTES_INT_H
#define PTG_ROUTES_INT_H

#include <stddef.h>

#include <jansson.h>

#include "auth_jwt.h"
#include "routes.h"

#define ROUTES__JSON "application/json"

struct upstream;

/* ---- answers (routes_reply.c) ---- */

/* Takes v; the answer is status with v's compact text. Returns 0. */
int routes__json(struct route_req *rq, unsigned status, json_t *v);
/* The JSON error answer {"code", "message"} (Retry-After: 1 on a 429).
   Returns 0. */
int routes__error(struct route_req *rq, unsigned status, const char *code,
		  const char *message);
/* The answer for a failed sidecar reply; r NULL: the link is down (503). */
int routes__link_error(struct route_req *rq, const Ptg__Reply *r);
/* 503: the instance's sidecar is unreachable. Returns 0. */
int routes__unavailable(struct route_req *rq);
/* The upstream of rq's instance, or NULL with the 404 answer set. */
struct upstream *routes__instance(struct route_req *rq);
/* Counts an attach answered with anything but 101. */
void routes__count(struct route_req *rq);
/* Sends m (request id id) and waits. Returns 1 (waiting) or 0 when the
   answer is already in rq (link down, or an immediate reply). */
int routes__ask(struct route_req *rq, struct upstream *up, const Ptg__LinkMessage *m,
		uint64_t id, void (*on_reply)(struct route_req *, const Ptg__Reply *));

/* ---- who may (routes_auth.c) ---- */

/* 401 with WWW-Authenticate. Returns -EACCES. */
int routes__unauthenticated(struct route_req *rq, const char *message);
/* The REST checks in the protocol's order: 401, 404 instance, 403, then the
   principal's REST rate and concurrency (429 with Retry-After). Returns
   the instance's upstream, or NULL with the refusal in rq; an admitted
   request holds a place until routes__rest_release. */
struct upstream *routes__rest_gate(struct route_req *rq, unsigned need_scopes,
				   const char *session, struct jwt_claims *c);
/* Gives back the in-flight place of an admitted REST request, if any. */
void routes__rest_release(struct route_req *rq);
/* The attach's token into *c: from Authorization: Bearer, else from the
   bearer.<token> subprotocol of o; 401 when neither verifies. */
int routes__attach_auth(struct route_req *rq, const struct wshs_offer *o,
			struct jwt_claims *c);
/* The attach's 403s: claims for rq's instance and session, a scope that
   may connect. Returns 0 or -EACCES with the refusal in rq. */
int routes__attach_allowed(struct route_req *rq, const struct jwt_claims *c);

/* ---- URL bases (routes_json.c) ---- */

/* routes_bases for this gateway's public listener (https/wss under TLS). */
void routes__bases(const struct routes_host *rh, char *http_base, char *ws_base,
		   size_t cap);

/* ---- attach (routes_attach.c) ---- */

/* Gives back the connection slot an attach holds, if any. */
void routes__release_slot(struct route_req *rq);

/* ---- the fleet (routes_forward.c) ---- */

/* The fleet header, when the request has one: verified, the request is
   forwarded (rq->forwarded); not, a 401 is the answer. Returns 0 or
   -EACCES. */
int routes__fleet_check(struct route_req *rq);
/* An instance route for an instance another gateway owns: forwarded
   (returns 1, the answer comes through rq->done) or answered here (0:
   503 when the registry is unavailable, a loop, or no forwarding).
   -ENOENT: served here (local, or unknown: the handler's 404). */
int routes__forward(struct route_req *rq);
/* Drops what a forwarded request holds (a call or relay in flight). */
void routes__forward_clear(struct route_req *rq);

/* ---- handlers, one per route id ---- */

int routes__healthz(struct route_req *rq);    /* routes_admin.c */
int routes__readyz(struct route_req *rq);     /* routes_admin.c */
int routes__metrics(struct route_req *rq);    /* routes_admin.c */
int routes__agent_card(struct route_req *rq); /* routes_admin.c */
int routes__sessions(struct route_req *rq);   /* routes_sessions.c */
int routes__session(struct route_req *rq);    /* routes_sessions.c */
int routes__attach(struct route_req *rq);     /* routes_attach.c */
int routes__static(struct route_req *rq);     /* routes_static.c */
int routes__recording(struct route_req *rq);  /* routes_recording.c */
/* Frees what a recording's export holds (routes_recording.c). */
void routes__export_free(struct route_req *rq);

#endif
