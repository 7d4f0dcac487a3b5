/* routes_forward: a request for an instance another gateway of the fleet
   owns (the registry's REMOTE) goes there: a REST call or the AgentCard
   through forward.h, an attach through relay.h, the owner's answer
   back as it is. The owner checks the token; this gateway only finds
   the owner. A request that came forwarded (its fleet header verified)
   is never forwarded again: two gateways whose caches disagree for a
   moment answer 503 instead of passing it between them. UNAVAILABLE
   (etcd away and the instance not cached) is a 503 with Retry-After;
   LOCAL and UNKNOWN go on to the local handlers (UNKNOWN is their 404). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fleetauth.h"
#include "forward.h"
#include "log.h"
#include "registry.h"
#include "relay.h"
#include "routes_int.h"
#include "timeutil.h"
#include "xalloc.h"

#define RETRY_AFTER_S 2

struct routes_fwd {
	struct buf store; /* the owner's headers as "name\0value\0" pairs */
	struct forward_header *h;
	size_t n;
	struct forward_call *call;
	bool streams;	/* the owner's head came: its body follows from call */
	int64_t length; /* the owner's Content-Length, or -1 */
	uint64_t sent;	/* body bytes read from call */
	struct relay *relay;
	char url[512]; /* the owner's, for the log */
};

static int instance_route(enum route_id id)
{
	return id == ROUTE_AGENT_CARD || id == ROUTE_SESSIONS || id == ROUTE_SESSION ||
	       id == ROUTE_ATTACH || id == ROUTE_RECORDING;
}

static struct routes_fwd *fwd_of(struct route_req *rq)
{
	if (!rq->fwd) {
		rq->fwd = xcalloc(1, sizeof(*rq->fwd));
		buf_init(&rq->fwd->store);
	}
	return rq->fwd;
}

/* Keeps the owner's end-to-end headers for http.c to send. */
static void keep_headers(struct route_req *rq, const struct forward_header *h, size_t n)
{
	struct routes_fwd *f = fwd_of(rq);
	size_t at = 0;

	buf_reset(&f->store);
	for (size_t i = 0; i < n; i++) {
		buf_append(&f->store, h[i].name, strlen(h[i].name) + 1);
		buf_append(&f->store, h[i].value, strlen(h[i].value) + 1);
	}
	free(f->h);
	f->h = xcalloc(n + 1, sizeof(*f->h));
	for (size_t i = 0; i < n; i++) {
		const char *p = (const char *)buf_head(&f->store) + at;

		f->h[i].name = p;
		f->h[i].value = p + strlen(p) + 1;
		at += strlen(p) + 1 + strlen(f->h[i].value) + 1;
	}
	f->n = n;
}

static void log_failure(struct route_req *rq, const char *url, const char *err)
{
	char ctx[PTG_ID_MAX + 32];

	snprintf(ctx, sizeof(ctx), "fleet instance=%s", rq->m.instance);
	log_warn(ctx, "forwarding %s %.*s to %s failed: %s", rq->method,
		 (int)strcspn(rq->target, "?"), rq->target, url, err);
}

/* The owner's answer, or a 502 when there was none. */
static void answered(struct route_req *rq, int rc, unsigned status,
		     const struct forward_header *h, size_t n, const uint8_t *body,
		     size_t len, const char *err)
{
	if (rc < 0) {
		log_failure(rq, rq->fwd->url, err ? err : "no answer");
		routes__error(rq, rc == -ETIMEDOUT ? 504 : 502, "BAD_GATEWAY",
			      "the gateway that owns this instance did not answer");
	} else {
		rq->status = status;
		buf_reset(&rq->out);
		buf_append(&rq->out, body, len);
		keep_headers(rq, h, n);
	}
	rq->answered = true;
	if (!rq->in_handle && rq->done)
		rq->done(rq);
}

/* The owner's head: its status and headers go out at once, its body
   as it comes (routes_forward_read). */
static void on_head(void *user, const struct forward_answer *a)
{
	struct route_req *rq = user;

	if (a->rc < 0) {
		rq->fwd->call = NULL; /* freed when this returns */
		answered(rq, a->rc, 0, NULL, 0, NULL, 0, a->err);
		return;
	}
	rq->fwd->streams = true;
	rq->fwd->length = a->length;
	answered(rq, 0, (unsigned)a->status, a->headers, a->n_headers, NULL, 0, NULL);
}

/* More of the owner's body, or its end: a reader waiting is woken. */
static void on_body(void *user)
{
	struct route_req *rq = user;

	if (rq->done)
		rq->done(rq);
}

static void on_upgrade(void *user, const struct relay_answer *a)
{
	struct route_req *rq = user;

	if (a->rc == 0 && a->status == 101) {
		/* The client's 101 goes out with these headers; the relay waits
		   for its socket (routes_relay_start). */
		rq->status = 101;
		keep_headers(rq, a->headers, a->n_headers);
		rq->answered = true;
		if (!rq->in_handle && rq->done)
			rq->done(rq);
		return;
	}
	answered(rq, a->rc, a->status, a->headers, a->n_headers, a->body, a->body_len,
		 a->err);
	relay_free(rq->fwd->relay);
	rq->fwd->relay = NULL;
}

static void request_of(struct route_req *rq, const char *url, struct forward_request *fr)
{
	memset(fr, 0, sizeof(*fr));
	fr->owner_url = url;
	fr->method = rq->method;
	fr->target = rq->target;
	if (rq->all_headers)
		fr->headers = rq->all_headers(rq, &fr->n_headers);
	fr->client = rq->client;
	fr->body = rq->body;
	fr->body_len = rq->body_len;
}

static int send_on(struct route_req *rq, struct forward *fw, const char *url)
{
	const struct routes_host *g = rq->gateway;
	struct forward_request fr;
	struct routes_fwd *f = fwd_of(rq);
	struct forward_stats st;

	snprintf(rq->fwd->url, sizeof(rq->fwd->url), "%s", url);
	request_of(rq, url, &fr);
	if (rq->m.id != ROUTE_ATTACH) {
		f->call = forward_http(fw, &fr, on_head, on_body, rq);
		if (!f->call)
			return routes__error(rq, 502, "BAD_GATEWAY",
					     "the request cannot be forwarded");
		return 1;
	}
	forward_get_stats(fw, &st);
	if (st.relays_active >= g->cfg->max_conns) {
		routes__error(
		    rq, 503, "UNAVAILABLE",
		    "the gateway is at its connection limit; try again shortly");
		rq->retry_after = 1;
		return 0;
	}
	f->relay = relay_open(fw, &fr, (long)g->cfg->request_timeout_ms, on_upgrade, rq);
	if (!f->relay)
		return routes__error(rq, 502, "BAD_GATEWAY",
				     "the attach cannot be forwarded");
	return 1;
}

int routes__fleet_check(struct route_req *rq)
{
	const struct routes_host *g = rq->gateway;
	int fleet_listen = g->cfg->fleet_listen_host[0] != '\0';
	int rc;

	if (!rq->fleet_auth && rq->role == ROUTE_FLEET) {
		routes__unauthenticated(rq,
					"--fleet-listen takes forwarded requests only");
		return -EACCES;
	}
	if (!rq->fleet_auth)
		return 0;
	if (fleet_listen && rq->role != ROUTE_FLEET) {
		routes__unauthenticated(rq, "a fleet header, and this gateway takes "
					    "forwarded requests on --fleet-listen only");
		return -EACCES;
	}
	rc = g->fleet ? fleetauth_verify(g->fleet, time_now_ms() / 1000, rq->fleet_auth,
					 rq->method, rq->target,
					 rq->forwarded_for ? rq->forwarded_for : "")
		      : -EACCES;
	if (rc == 0) {
		rq->forwarded = true;
		return 0;
	}
	/* The refusal's log line (http.c) names the client and this reason. */
	routes__unauthenticated(rq, g->fleet ? fleetauth_strerror(rc)
					     : "a fleet header, and this gateway has no "
					       "--fleet-secret-file");
	return -EACCES;
}

int routes__forward(struct route_req *rq)
{
	const struct routes_host *g = rq->gateway;
	const char *url = NULL;
	char ctx[PTG_ID_MAX + 32];

	if (!instance_route(rq->m.id))
		return -ENOENT;
	switch (registry_route(g->registry, rq->m.instance, &url)) {
	case REGISTRY_LOCAL:
	case REGISTRY_UNKNOWN:
		return -ENOENT;
	case REGISTRY_UNAVAILABLE:
		routes__error(rq, 503, "UNAVAILABLE",
			      "the fleet registry is unreachable and this instance's "
			      "gateway is not known here; try again shortly");
		rq->retry_after = RETRY_AFTER_S;
		return 0;
	case REGISTRY_REMOTE:
		break;
	}
	snprintf(ctx, sizeof(ctx), "fleet instance=%s", rq->m.instance);
	if (rq->forwarded) {
		log_warn(ctx,
			 "a forwarded request for an instance served elsewhere (%s): "
			 "not forwarded again",
			 url);
		routes__error(rq, 503, "UNAVAILABLE",
			      "the fleet's gateways disagree on where this instance is "
			      "served; try again shortly");
		rq->retry_after = RETRY_AFTER_S;
		return 0;
	}
	if (!g->forward) {
		log_warn(ctx,
			 "served by another gateway (%s) and this one does not forward",
			 url);
		routes__error(
		    rq, 503, "UNAVAILABLE",
		    "this instance is served by another gateway and this one does "
		    "not forward (no --fleet-secret-file)");
		return 0;
	}
	return send_on(rq, g->forward, url);
}

bool routes_forward_streams(const struct route_req *rq, int64_t *length)
{
	if (!rq->fwd || !rq->fwd->streams)
		return 0;
	*length = rq->fwd->length;
	return 1;
}

ssize_t routes_forward_read(struct route_req *rq, void *dst, size_t cap)
{
	struct routes_fwd *f = rq->fwd;
	ssize_t n = forward_read(f->call, dst, cap);
	char why[96];

	if (n > 0)
		f->sent += (uint64_t)n;
	if (n < 0 && n != -EAGAIN) {
		snprintf(why, sizeof(why),
			 "the owner's answer broke after %llu body bytes: %s",
			 (unsigned long long)f->sent, strerror((int)-n));
		log_failure(rq, f->url, why);
	}
	return n;
}

bool routes_relayed(const struct route_req *rq)
{
	return rq->fwd && rq->fwd->relay && rq->status == 101;
}

void routes_relay_start(struct route_req *rq, int fd, const void *extra, size_t len,
			void (*end)(void *user, struct relay *r), void *user)
{
	const struct gw_config *cfg = rq->gateway->cfg;
	int64_t idle = 2 * (int64_t)(cfg->ping_interval_s + cfg->pong_timeout_s) * 1000;
	struct relay *r = rq->fwd->relay;

	rq->fwd->relay = NULL;
	relay_start(r, fd, extra, len, idle, end, user);
}

void routes__forward_clear(struct route_req *rq)
{
	if (!rq->fwd)
		return;
	forward_cancel(rq->fwd->call);
	relay_free(rq->fwd->relay);
	free(rq->fwd->h);
	buf_free(&rq->fwd->store);
	free(rq->fwd);
	rq->fwd = NULL;
}

const struct forward_header *routes_forwarded_headers(const struct route_req *rq,
						      size_t *n)
{
	*n = rq->fwd ? rq->fwd->n : 0;
	return rq->fwd ? rq->fwd->h : NULL;
}
