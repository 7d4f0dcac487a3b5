/* routes_auth: who may: the bearer token from the Authorization header,
   its verification (failures counted), and the REST API's checks in the
   order: 401, then 404 for the instance, then 403 for scopes
   and the token's instance and session claims; and the attach's token
   (from the header or the bearer subprotocol) and its 403s. Every scope
   check of the HTTP side is here; the sidecar checks the pty scopes of a
   join (sidecar/join.c) and the gateway the tasks scope of each A2A op
   (task_ops.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "metrics.h"
#include "restlimit.h"
#include "routes_int.h"
#include "timeutil.h"
#include "xalloc.h"

int routes__unauthenticated(struct route_req *rq, const char *message)
{
	rq->gateway->metrics->auth_failures++; /* missing or invalid, REST or attach */
	routes__error(rq, 401, "UNAUTHENTICATED", message);
	rq->www_authenticate = true;
	return -EACCES;
}

/* Verifies a bearer token into *c; 401 (counted) when it fails. */
static int verify(struct route_req *rq, const char *tok, size_t len, struct jwt_claims *c)
{
	const struct routes_host *gateway = rq->gateway;
	int rc = auth_jwt_verify(*gateway->keys, gateway->policy, tok, len,
				 time_now_ms() / 1000, c);

	if (rc != JWT_OK)
		return routes__unauthenticated(rq, auth_jwt_strerror(rc));
	return 0;
}

int routes_bearer(const char *h, const char **tok, size_t *len)
{
	size_t n;

	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return -ENOENT;
	h += 7;
	while (*h == ' ' || *h == '\t')
		h++;
	n = strcspn(h, " \t");
	if (!n || h[n + strspn(h + n, " \t")] != '\0')
		return -ENOENT;
	*tok = h;
	*len = n;
	return 0;
}

static int auth_header(struct route_req *rq, struct jwt_claims *c)
{
	const char *tok;
	size_t len;

	if (routes_bearer(rq->authorization, &tok, &len) < 0)
		return routes__unauthenticated(
		    rq, "an Authorization: Bearer token is required");
	return verify(rq, tok, len, c);
}

/* 403. Returns -EACCES. */
static int forbidden(struct route_req *rq, const char *message)
{
	routes__error(rq, 403, "PERMISSION_DENIED", message);
	return -EACCES;
}

/* The per-principal REST limits (--rest-rate, --rest-concurrency): a
   429 with Retry-After, or a place held until routes__rest_release. */
static int rest_admit(struct route_req *rq, const struct jwt_claims *c)
{
	const char *what;
	unsigned retry;
	char msg[128];

	if (restlimit_acquire(rq->gateway->rest, c->sub, time_mono_ms(), &retry, &what) <
	    0) {
		snprintf(msg, sizeof(msg), "too many requests: the limit on %s", what);
		routes__error(rq, 429, "RATE_LIMITED", msg);
		rq->retry_after = (int)retry;
		return -EBUSY;
	}
	rq->rest_principal = xstrdup(c->sub);
	return 0;
}

void routes__rest_release(struct route_req *rq)
{
	if (!rq->rest_principal)
		return;
	restlimit_release(rq->gateway->rest, rq->rest_principal);
	free(rq->rest_principal);
	rq->rest_principal = NULL;
}

/* The REST checks in the protocol's order (an unknown instance is told
   only to an authenticated caller): 401, 404 instance, 403, then the
   principal's rate and concurrency (429). need_scopes is any of the
   bits; session NULL asks for the whole instance. */
struct upstream *routes__rest_gate(struct route_req *rq, unsigned need_scopes,
				   const char *session, struct jwt_claims *c)
{
	struct upstream *up;

	if (auth_header(rq, c) < 0 || !(up = routes__instance(rq)))
		return NULL;
	if (!(c->scopes & need_scopes)) {
		forbidden(rq, need_scopes & SCOPE_OBSERVE
				  ? "the token lacks scope 'sessions' or 'pty:observe'"
				  : "the token lacks scope 'sessions'");
		return NULL;
	}
	if (auth_jwt_claims_allow(c, rq->m.instance, session) < 0) {
		forbidden(rq, "the token is not valid for this instance or session");
		return NULL;
	}
	if (rest_admit(rq, c) < 0)
		return NULL;
	return up;
}

/* The token from Authorization: Bearer, else from the bearer. offer. */
int routes__attach_auth(struct route_req *rq, const struct wshs_offer *o,
			struct jwt_claims *c)
{
	const char *tok;
	size_t len;

	if (routes_bearer(rq->authorization, &tok, &len) == 0)
		return verify(rq, tok, len, c);
	if (o->token)
		return verify(rq, o->token, o->token_len, c);
	return routes__unauthenticated(rq,
				       "a bearer token is required (Authorization header "
				       "or bearer.<token> subprotocol)");
}

/* The attach's 403s: the token's instance and session claims, then a scope
   that may connect. A tasks-only token may connect for the A2A ops
   (docs/protocol.md, "Tasks"); its join is refused by the sidecar, which
   checks the pty scopes (sidecar/join.c). */
int routes__attach_allowed(struct route_req *rq, const struct jwt_claims *c)
{
	if (auth_jwt_claims_allow(c, rq->m.instance, rq->m.session) < 0)
		return forbidden(rq,
				 "the token is not valid for this instance or session");
	if (!(c->scopes & (SCOPE_OBSERVE | SCOPE_CONTROL | SCOPE_TASKS)))
		return forbidden(
		    rq, "the token lacks scope 'pty:observe', 'pty:control' or 'tasks'");
	return 0;
}
