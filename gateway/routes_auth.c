/* routes_auth: who may: the bearer token from the Authorization header,
   its verification (failures counted), and the REST API's checks in the
   order of SPEC 9: 401, then 404 for the instance, then 403 for scopes
   and the token's instance and session claims. The attach checks, which
   take the token from the subprotocol too, are in routes_attach.c. */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "gateway.h"
#include "routes_int.h"
#include "timeutil.h"

int routes__unauthenticated(struct route_req *rq, const char *message)
{
	routes__error(rq, 401, "UNAUTHENTICATED", message);
	rq->www_authenticate = 1;
	return -EACCES;
}

int routes__verify(struct route_req *rq, const char *tok, size_t len,
			  struct jwt_claims *c)
{
	struct gateway *gw = rq->gw;
	int rc = jwt_verify(gw->keys, &gw->policy, tok, len, time_now_ms() / 1000, c);

	if (rc != JWT_OK) {
		gw->metrics.auth_failures++;
		return routes__unauthenticated(rq, jwt_strerror(rc));
	}
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

static int routes__auth_header(struct route_req *rq, struct jwt_claims *c)
{
	const char *tok;
	size_t len;

	if (routes_bearer(rq->authorization, &tok, &len) < 0)
		return routes__unauthenticated(
		    rq, "an Authorization: Bearer token is required");
	return routes__verify(rq, tok, len, c);
}

int routes__forbidden(struct route_req *rq, const char *message)
{
	routes__error(rq, 403, "PERMISSION_DENIED", message);
	return -EACCES;
}

/* The REST checks in SPEC order: 401, 404 instance, 403. need_scopes is
   any of the bits; session NULL asks for the whole instance. */
struct upstream *routes__rest_gate(struct route_req *rq, unsigned need_scopes,
					  const char *session, struct jwt_claims *c)
{
	struct upstream *up;

	if (routes__auth_header(rq, c) < 0 || !(up = routes__instance(rq)))
		return NULL;
	if (!(c->scopes & need_scopes)) {
		routes__forbidden(
		    rq, need_scopes & SCOPE_OBSERVE
			    ? "the token lacks scope 'sessions' or 'pty:observe'"
			    : "the token lacks scope 'sessions'");
		return NULL;
	}
	if (jwt_claims_allow(c, rq->m.instance, session) < 0) {
		routes__forbidden(rq,
				  "the token is not valid for this instance or session");
		return NULL;
	}
	return up;
}
