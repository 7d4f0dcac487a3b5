/* fuzz_routes: libFuzzer harness for the gateway's request routing: the
   path grammar (routes_match), the method check, the token-in-query
   refusal, the Authorization: Bearer parser and the attach upgrade's 400
   checks in their order (routes_attach_check). The input is lines:
     target, method, Upgrade, Connection, Sec-WebSocket-Version,
     Sec-WebSocket-Key, Sec-WebSocket-Protocol, Authorization
   (a missing line is an absent header). Oracles beyond the sanitizers:
   - a matched API route names valid ids and matches again from its
     canonical path; a static file path has no hidden or empty segment;
     with_static only ever adds ROUTE_STATIC, never changes another answer;
   - routes_method_ok agrees with the Allow list it is derived from;
   - a token parameter appended to any query is always found (no earlier
     parameter can hide it), and no query means no token;
   - an accepted attach offered pty-ws.v1 and has an accept key; a refused
     one is a 400 with a JSON body. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz_fields.h"
#include "fuzz_oracle.h"
#include "routes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
	F_TARGET,
	F_METHOD,
	F_UPGRADE,
	F_CONNECTION,
	F_VERSION,
	F_KEY,
	F_PROTOCOL,
	F_AUTH,
	F_COUNT
};

static void check_static(const char *file)
{
	const char *seg = file;

	fuzz__assert(file[0] != '\0' && file[0] != '/');
	for (const char *p = file;; p++) {
		if (*p == '/' || *p == '\0') {
			fuzz__assert(p > seg && seg[0] != '.');
			if (*p == '\0')
				break;
			seg = p + 1;
		}
		fuzz__assert((unsigned char)*p >= 0x20 && *p != 0x7f && *p != '\\');
	}
}

/* The canonical path of an API route matches again, to the same route. */
static void check_canonical(const struct route_match *m)
{
	static const char *const tails[] = {
	    [ROUTE_AGENT_CARD] = "/.well-known/agent-card.json",
	    [ROUTE_SESSIONS] = "/sessions",
	    [ROUTE_SESSION] = "/sessions/%s",
	    [ROUTE_ATTACH] = "/sessions/%s/attach",
	};
	char path[512], tail[300];
	struct route_match again;
	const char *why;

	if (m->id < ROUTE_AGENT_CARD || m->id > ROUTE_ATTACH)
		return;
	snprintf(tail, sizeof(tail), tails[m->id], m->session);
	snprintf(path, sizeof(path), "/agents/%s%s?x=1", m->instance, tail);
	fuzz__assert(routes_match(path, 0, &again, &why) == 0);
	fuzz__assert(again.id == m->id && !strcmp(again.instance, m->instance) &&
		     !strcmp(again.session, m->session));
}

static void match(const char *target)
{
	struct route_match m, ms;
	const char *why = NULL, *why_s = NULL;
	int rc = routes_match(target, 0, &m, &why);
	int rc_s = routes_match(target, 1, &ms, &why_s);

	fuzz__assert(rc == 0 || rc == -ENOENT || rc == -EINVAL);
	fuzz__assert(rc != -EINVAL || (why && why[0]));
	fuzz__assert(rc != 0 || m.id != ROUTE_STATIC);
	if (rc == 0 || rc == -EINVAL) {
		/* --static-dir serves only what the API does not claim */
		fuzz__assert(rc_s == rc && ms.id == m.id &&
			     !strcmp(ms.instance, m.instance) &&
			     !strcmp(ms.session, m.session));
	}
	if (rc == 0 && m.id >= ROUTE_AGENT_CARD && m.id <= ROUTE_ATTACH)
		fuzz__assert(fuzz__valid_id(m.instance, PTG_ID_MAX));
	if (rc == 0 && (m.id == ROUTE_SESSION || m.id == ROUTE_ATTACH))
		fuzz__assert(fuzz__valid_id(m.session, PTG_ID_MAX));
	if (rc == 0)
		check_canonical(&m);
	if (rc_s == 0 && ms.id == ROUTE_STATIC)
		check_static(ms.file);
}

/* The Allow list, split on ", ", holds method exactly. */
static int allowed(const char *allow, const char *method)
{
	size_t n = strlen(method);

	for (const char *p = allow; *p;) {
		size_t len = strcspn(p, ",");

		if (len == n && !memcmp(p, method, n))
			return 1;
		p += len;
		while (*p == ',' || *p == ' ')
			p++;
	}
	return 0;
}

static void methods(const char *method)
{
	for (int id = ROUTE_HEALTHZ; id <= ROUTE_STATIC; id++)
		fuzz__assert(routes_method_ok(id, method) ==
			     allowed(routes_allow(id), method));
}

static void query(const char *target)
{
	size_t n = strlen(target);
	char *more;

	if (!strchr(target, '?'))
		fuzz__assert(!routes_query_has_token(target));
	else
		(void)routes_query_has_token(target);
	if (strchr(target, '#'))
		return;
	more = malloc(n + 16);
	if (!more)
		abort();
	snprintf(more, n + 16, "%s%caccess_token=1", target,
		 strchr(target, '?') ? '&' : '?');
	fuzz__assert(routes_query_has_token(more));
	free(more);
}

static void bearer(const char *h)
{
	const char *tok;
	size_t len;

	if (routes_bearer(h, &tok, &len) < 0)
		return;
	fuzz__assert(h && !strncasecmp(h, "bearer ", 7));
	fuzz__assert(len > 0 && tok > h && tok + len <= h + strlen(h));
	for (size_t i = 0; i < len; i++)
		fuzz__assert(tok[i] != ' ' && tok[i] != '\t');
}

static void attach(char **f)
{
	struct route_req rq;
	struct wshs_offer o = {0};
	json_t *body;

	routes_req_init(&rq);
	rq.method = f[F_METHOD] ? f[F_METHOD] : "GET";
	rq.target = f[F_TARGET];
	rq.upgrade = f[F_UPGRADE];
	rq.connection = f[F_CONNECTION];
	rq.ws_version = f[F_VERSION];
	rq.ws_key = f[F_KEY];
	rq.ws_protocol = f[F_PROTOCOL];
	rq.authorization = f[F_AUTH];
	if (routes_attach_check(&rq, &o) == 0) {
		fuzz__assert(o.v1 && strlen(rq.ws_accept) == WSHS_ACCEPT_LEN);
		fuzz__assert(!o.token || strlen(o.token) == o.token_len);
	} else {
		fuzz__assert(rq.status == 400);
		body = json_loadb((const char *)buf_head(&rq.out), buf_size(&rq.out), 0,
				  NULL);
		fuzz__assert(json_is_object(body));
		json_decref(body);
	}
	wshs_offer_clear(&o);
	routes_req_clear(&rq);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *f[F_COUNT];

	if (size > 64 * 1024)
		return 0;
	fuzz_fields(data, size, f, F_COUNT);
	match(f[F_TARGET]);
	query(f[F_TARGET]);
	if (f[F_METHOD])
		methods(f[F_METHOD]);
	bearer(f[F_AUTH]);
	attach(f);
	fuzz_fields_free(f, F_COUNT);
	return 0;
}
