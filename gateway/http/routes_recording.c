/* routes_recording: GET /agents/{i}/sessions/{s}/recording, a session's
   recording as asciicast v2 (issue 21), live or exited. The sidecar
   answers ExportSession a page at a time (at most 1 MiB); each page is
   appended to an unlinked temporary file and the next asked for, so the
   gateway holds one page in memory whatever the history's size; the
   answer is that file, sent by the HTTP server in chunks as the client
   reads. Bounded by RECORDING_MAX. Scope: sessions or pty:observe (a
   recording shows what observing shows), for that instance and session. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdio.h"
#include "routes_int.h"
#include "upstream.h"
#include "xalloc.h"

#define RECORDING_TYPE "application/x-asciicast"
#define RECORDING_MAX  (256ull << 20) /* bytes of asciicast one answer may take */
#define PAGE_BYTES     (1u << 20)

struct route_export {
	struct upstream *up;
	uint64_t after;
	int64_t start_ts_ms;
	uint8_t carry[4];
	size_t carry_len;
	uint64_t bytes;
};

static int ask_page(struct route_req *rq);

static int temp_file(void)
{
	const char *dir = getenv("TMPDIR");

	return open(dir && dir[0] ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

static void fail(struct route_req *rq, unsigned status, const char *code, const char *why)
{
	close(rq->file_fd);
	rq->file_fd = -1;
	routes__error(rq, status, code, why);
}

static void on_page(struct route_req *rq, const Ptg__Reply *r)
{
	struct route_export *x = rq->export;
	const Ptg__ExportChunk *c;

	if (!r || r->code != PTG__ERROR_CODE__OK || !r->export_chunk) {
		close(rq->file_fd);
		rq->file_fd = -1;
		if (r && r->code == PTG__ERROR_CODE__OK)
			routes__error(rq, 502, "BAD_GATEWAY",
				      "the sidecar sent no recording");
		else
			routes__link_error(rq, r);
		return;
	}
	c = r->export_chunk;
	x->bytes += c->data.len;
	if (x->bytes > RECORDING_MAX) {
		fail(rq, 413, "RESOURCE_EXHAUSTED",
		     "the recording is larger than 256 MiB; export it on the instance "
		     "(ptygate-sidecar --export-asciicast)");
		return;
	}
	if (fd_write_all(rq->file_fd, c->data.data, c->data.len) < 0) {
		fail(rq, 500, "INTERNAL", "cannot write the recording's temporary file");
		return;
	}
	if (!c->done && c->next_after > x->after && c->carry.len <= 3) {
		x->after = c->next_after;
		x->start_ts_ms = c->start_ts_ms;
		if (c->carry.len) /* no carry: protobuf-c's data is NULL */
			memcpy(x->carry, c->carry.data, c->carry.len);
		x->carry_len = c->carry.len;
		ask_page(rq);
		return;
	}
	rq->file_size = x->bytes;
	if (lseek(rq->file_fd, 0, SEEK_SET) < 0) {
		fail(rq, 500, "INTERNAL", "cannot read the recording's temporary file");
		return;
	}
	rq->status = 200;
	rq->content_type = RECORDING_TYPE;
}

static int ask_page(struct route_req *rq)
{
	struct route_export *x = rq->export;
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__ExportSession q = PTG__EXPORT_SESSION__INIT;

	if (!upstream_up(x->up)) {
		on_page(rq, NULL);
		return 0;
	}
	q.request_id = upstream_next_id(x->up);
	q.session_id = rq->m.session;
	q.after_sequence = x->after;
	q.start_ts_ms = x->start_ts_ms;
	q.carry.data = x->carry;
	q.carry.len = x->carry_len;
	q.max_bytes = PAGE_BYTES;
	m.msg_case = PTG__LINK_MESSAGE__MSG_EXPORT_SESSION;
	m.export_session = &q;
	return routes__ask(rq, x->up, &m, q.request_id, on_page);
}

int routes__recording(struct route_req *rq)
{
	struct jwt_claims c;
	struct upstream *up =
	    routes__rest_gate(rq, SCOPE_SESSIONS | SCOPE_OBSERVE, rq->m.session, &c);

	if (!up)
		return 0;
	if (!upstream_up(up))
		return routes__unavailable(rq);
	rq->file_fd = temp_file();
	if (rq->file_fd < 0)
		return routes__error(rq, 500, "INTERNAL",
				     "cannot make a temporary file for the recording");
	rq->export = xcalloc(1, sizeof(*rq->export));
	rq->export->up = up;
	return ask_page(rq);
}
