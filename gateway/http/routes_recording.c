/* routes_recording: GET /agents/{i}/sessions/{s}/recording, a session's
   recording as asciicast v2, live or exited, streamed. The sidecar
   answers ExportSession a page at a time (at most 1 MiB). The first page
   decides the status (a refusal or a missing session is a JSON error as
   on every route); after it the body is pulled by the HTTP server as the
   client reads (routes_stream_read), and the next page is asked for only
   while less than a page waits, so one export holds at most about two
   pages whatever the history's size or the client's speed. The export
   ends where the history ended when it began (the end the first page
   pins), so a live program printing faster than the client reads never
   keeps it going. A link lost
   after the 200 ends the body with an error (the chunked answer is cut,
   never closed as if whole). Scope: sessions or pty:observe (a recording
   shows what observing shows), for that instance and session. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "routes_int.h"
#include "upstream.h"
#include "xalloc.h"

#define RECORDING_TYPE "application/x-asciicast"
#define PAGE_BYTES     (1u << 20)

struct route_export {
	struct upstream *up;
	uint64_t after;
	uint64_t until; /* the export's end, pinned by the first page */
	int64_t start_ts_ms;
	uint8_t carry[4];
	size_t carry_len;
	struct buf pages; /* received, not yet handed to the HTTP server */
	size_t held;	  /* of pages, counted in ptygate_reply_bytes */
	bool asking;	  /* a page is in flight */
	bool done;	  /* the export ends here */
	bool failed;	  /* the link failed after the 200 */
};

/* The memory the export holds counts in ptygate_reply_bytes. */
static void account(struct route_req *rq)
{
	struct route_export *x = rq->export;
	size_t now = buf_size(&x->pages);

	rq->gateway->metrics->reply_bytes += now;
	rq->gateway->metrics->reply_bytes -= x->held;
	x->held = now;
}

/* Takes one page's data and cursor. */
static void take_page(struct route_req *rq, const Ptg__ExportChunk *c)
{
	struct route_export *x = rq->export;

	buf_append(&x->pages, c->data.data, c->data.len);
	account(rq);
	if (c->done || c->next_after <= x->after || c->carry.len > 3) {
		x->done = true;
		return;
	}
	x->after = c->next_after;
	if (!x->until)
		x->until = c->until_sequence;
	x->start_ts_ms = c->start_ts_ms;
	if (c->carry.len) /* no carry: protobuf-c's data is NULL */
		memcpy(x->carry, c->carry.data, c->carry.len);
	x->carry_len = c->carry.len;
}

static int page_ok(const Ptg__Reply *r)
{
	return r && r->code == PTG__ERROR_CODE__OK && r->export_chunk;
}

static void ask_message(struct route_req *rq, Ptg__ExportSession *q, Ptg__LinkMessage *m)
{
	struct route_export *x = rq->export;

	q->request_id = upstream_next_id(x->up);
	q->session_id = rq->m.session;
	q->after_sequence = x->after;
	q->start_ts_ms = x->start_ts_ms;
	q->carry.data = x->carry;
	q->carry.len = x->carry_len;
	q->max_bytes = PAGE_BYTES;
	q->until_sequence = x->until;
	m->msg_case = PTG__LINK_MESSAGE__MSG_EXPORT_SESSION;
	m->export_session = q;
}

/* A later page: the HTTP server, waiting for it, is woken through
   rq->done. */
static void on_more(const Ptg__Reply *r, void *user)
{
	struct route_req *rq = user;
	struct route_export *x = rq->export;

	rq->pending_up = NULL;
	x->asking = false;
	if (page_ok(r))
		take_page(rq, r->export_chunk);
	else
		x->failed = true;
	if (rq->done)
		rq->done(rq);
}

static void ask_more(struct route_req *rq)
{
	struct route_export *x = rq->export;
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__ExportSession q = PTG__EXPORT_SESSION__INIT;

	ask_message(rq, &q, &m);
	x->asking = true;
	rq->pending_up = x->up;
	rq->pending_id = q.request_id;
	if (upstream_request(x->up, &m, q.request_id, on_more, rq) < 0) {
		rq->pending_up = NULL;
		x->asking = false;
		x->failed = true;
	}
}

ssize_t routes_stream_read(struct route_req *rq, void *out, size_t cap)
{
	struct route_export *x = rq->export;
	size_t n = buf_size(&x->pages) < cap ? buf_size(&x->pages) : cap;

	if (n) {
		memcpy(out, buf_head(&x->pages), n);
		buf_consume(&x->pages, n);
		account(rq);
	}
	if (!x->asking && !x->done && !x->failed && buf_size(&x->pages) < PAGE_BYTES)
		ask_more(rq);
	if (n)
		return (ssize_t)n;
	if (x->failed)
		return ROUTES_STREAM_ERROR;
	return x->done ? ROUTES_STREAM_END : 0;
}

/* The first page: the status. */
static void on_first(struct route_req *rq, const Ptg__Reply *r)
{
	if (!page_ok(r)) {
		if (r && r->code == PTG__ERROR_CODE__OK)
			routes__error(rq, 502, "BAD_GATEWAY",
				      "the sidecar sent no recording");
		else
			routes__link_error(rq, r);
		return;
	}
	take_page(rq, r->export_chunk);
	rq->status = 200;
	rq->content_type = RECORDING_TYPE;
	rq->streamed = true;
}

void routes__export_free(struct route_req *rq)
{
	struct route_export *x = rq->export;

	if (!x)
		return;
	rq->gateway->metrics->reply_bytes -= x->held;
	buf_free(&x->pages);
	free(x);
	rq->export = NULL;
}

int routes__recording(struct route_req *rq)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__ExportSession q = PTG__EXPORT_SESSION__INIT;
	struct jwt_claims c;
	struct upstream *up =
	    routes__rest_gate(rq, SCOPE_SESSIONS | SCOPE_OBSERVE, rq->m.session, &c);

	if (!up)
		return 0;
	if (!upstream_up(up))
		return routes__unavailable(rq);
	rq->export = xcalloc(1, sizeof(*rq->export));
	rq->export->up = up;
	buf_init(&rq->export->pages);
	ask_message(rq, &q, &m);
	return routes__ask(rq, up, &m, q.request_id, on_first);
}
