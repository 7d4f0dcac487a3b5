/* routes_reply: setting a request's answer (a JSON document, a JSON
   error, the refusal for a failed sidecar reply), and asking the sidecar:
   a request that needs the sidecar waits on upstream_request and its
   answer goes back through rq->done. */
#include <errno.h>
#include <stdlib.h>

#include "metrics.h"
#include "routes_int.h"
#include "upstream.h"

/* Takes v; the answer is its compact text. Returns 0. */
int routes__json(struct route_req *rq, unsigned status, json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT);

	buf_reset(&rq->out);
	if (s)
		buf_append_str(&rq->out, s);
	free(s);
	json_decref(v);
	rq->status = status;
	rq->content_type = ROUTES__JSON;
	return 0;
}

int routes__error(struct route_req *rq, unsigned status, const char *code,
		  const char *message)
{
	buf_reset(&rq->out);
	routes_error_body(code, message, &rq->out);
	rq->status = status;
	rq->content_type = ROUTES__JSON;
	rq->retry_after = status == 429 ? 1 : 0;
	return 0;
}

void routes_refuse(struct route_req *rq, unsigned status, const char *code,
		   const char *message)
{
	routes__error(rq, status, code, message);
}

int routes__link_error(struct route_req *rq, const Ptg__Reply *r)
{
	const char *name;
	unsigned status;

	if (!r)
		return routes__error(rq, 503, "UNAVAILABLE",
				     "the instance's sidecar is unreachable");
	status = routes_status_from_link(r->code, &name);
	return routes__error(rq, status, name,
			     r->message && r->message[0] ? r->message : name);
}

struct upstream *routes__instance(struct route_req *rq)
{
	struct upstream *up = rq->gateway->upstream(rq->gateway->owner, rq->m.instance);

	if (!up)
		routes__error(rq, 404, "NOT_FOUND", "unknown instance");
	return up;
}

void routes__count(struct route_req *rq)
{
	if (rq->m.id == ROUTE_ATTACH && rq->status != 101)
		rq->gateway->metrics->upgrades_refused++;
}

/* An answer made from a sidecar reply counts in ptygate_reply_bytes
   until its request ends (routes_req_clear): its text, and the copy the
   HTTP server sends from. */
static void hold_answer(struct route_req *rq)
{
	rq->held_bytes = 2 * buf_size(&rq->out);
	rq->gateway->metrics->reply_bytes += rq->held_bytes;
}

static void reply_cb(const Ptg__Reply *r, void *user)
{
	struct route_req *rq = user;

	rq->pending_up = NULL;
	rq->on_reply(rq, r);
	if (rq->pending_up)
		return; /* on_reply asked again: a recording's next page */
	hold_answer(rq);
	rq->answered = true;
	if (!rq->in_handle) {
		routes__count(rq);
		if (rq->done)
			rq->done(rq);
	}
}

int routes__ask(struct route_req *rq, struct upstream *up, const Ptg__LinkMessage *m,
		uint64_t id, void (*on_reply)(struct route_req *, const Ptg__Reply *))
{
	rq->on_reply = on_reply;
	rq->answered = false;
	rq->pending_up = up;
	rq->pending_id = id;
	if (upstream_request(up, m, id, reply_cb, rq) < 0) {
		rq->pending_up = NULL;
		on_reply(rq, NULL);
		return 0;
	}
	return rq->answered ? 0 : 1;
}

int routes__unavailable(struct route_req *rq)
{
	return routes__link_error(rq, NULL);
}
