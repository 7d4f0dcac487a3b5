/* http_request: one HTTP request on MHD: its state from the URI log
   callback to MHD's completion notice, the raw target, headers and a
   body capped at ROUTES_BODY_MAX handed to routes_handle as a struct
   route_req, the answer (or a refusal), and for an attach the 101 and
   the socket's handover to conn.c with what it holds of the listener. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "config.h"
#include "conn.h"
#include "fleetauth.h"
#include "http_int.h"
#include "httpfleet.h"
#include "log.h"
#include "metrics.h"
#include "num.h"
#include "peers.h"
#include "relay.h"
#include "routes.h"
#include "timeutil.h"
#include "webfiles.h"
#include "wshandshake.h"
#include "xalloc.h"

/* What a streamed answer (a recording) is written in: MHD's buffer for it. */
#define HTTP_STREAM_BLOCK (64 * 1024)

static struct http_req *req_new(struct http *h, struct MHD_Connection *c,
				const char *target)
{
	struct http_req *r = xcalloc(1, sizeof(*r));

	r->h = h;
	r->c = c;
	r->target = xstrdup(target ? target : "/");
	buf_init(&r->body);
	buf_init(&r->protocols);
	r->rq = xmalloc(sizeof(*r->rq));
	routes_req_init(r->rq);
	return r;
}

/* What a request holds beyond itself: on an upgrade this goes at once,
   since MHD keeps the request until the WebSocket closes. The protocol
   line may hold a bearer token: wiped. */
static void req_release(struct http_req *r)
{
	if (r->rq) {
		routes_req_clear(r->rq);
		free(r->rq);
		r->rq = NULL;
	}
	httpfleet_clear(&r->hdrs);
	if (buf_size(&r->protocols))
		explicit_bzero(buf_head(&r->protocols), buf_size(&r->protocols));
	buf_free(&r->body);
	buf_free(&r->protocols);
	free(r->target);
	r->target = NULL;
}

static void req_free(struct http_req *r)
{
	conn_discard(r->conn);
	req_release(r);
	free(r);
}

/* MHD's first sight of a request: the raw target, before unescaping. */
void *http__uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
	return req_new(cls, c, uri);
}

static struct http_sock *sock_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* A keep-alive connection waits for its next request under the same
   deadline as its first one; an upgraded socket is conn.c's, never cut. */
void http__completed(void *cls, struct MHD_Connection *c, void **req_cls,
		     enum MHD_RequestTerminationCode toe)
{
	struct http_req *r = *req_cls;
	struct http_sock *s = sock_of(c);

	if (!r)
		return;
	if (r->client_counted)
		peer_table_give(r->h->peers, &r->client);
	if (s && !r->upgraded && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		http__head_arm(s);
	req_free(r);
	*req_cls = NULL;
}

/* The socket leaves MHD: conn.c gets a duplicate of the fd and the
   address count the connection was admitted under (the socket's own, or
   behind a trusted proxy its client's), and MHD closes its fd. Returns
   the duplicate, or -1 (then MHD keeps the socket). With TLS the socket
   is the front's pair (tlsfront.h): the same holds. */
static int hand_out(struct http_req *r, MHD_socket sock,
		    struct MHD_UpgradeResponseHandle *urh, struct http_hold *hold)
{
	struct http *h = r->h;
	struct http_sock *s = sock_of(r->c);
	int fd;

	if (!s)
		return -1;
	fd = fcntl(sock, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (h->n_handed == h->cap_handed) {
		h->cap_handed = h->cap_handed ? h->cap_handed * 2 : 16;
		h->handed = xrealloc(h->handed, h->cap_handed * sizeof(*h->handed));
	}
	h->handed[h->n_handed++] = urh;
	h->n_out++;
	h->kick = true;
	if (s->counted) {
		hold->peer = s->peer;
		hold->counted = true;
		s->counted = false;
	} else if (r->client_counted) {
		hold->peer = r->client;
		hold->counted = true;
		r->client_counted = false;
	}
	return fd;
}

/* An upgraded socket's end: closes fd (or has MHD close it) and gives
   the address count back. */
static void let_go_socket(struct http_hold *hold, int fd)
{
	struct http *h = hold->h;

	if (hold->urh) {
		MHD_upgrade_action(hold->urh, MHD_UPGRADE_ACTION_CLOSE);
		h->kick = true; /* MHD closes it on its next run */
	} else if (fd >= 0) {
		close(fd);
		h->n_out--;
	}
	if (hold->counted)
		peer_table_give(h->peers, &hold->peer);
	hold->counted = false;
	hold->urh = NULL;
}

/* The connection ended: its socket is let go and its hold freed. */
static void release(void *user, int fd)
{
	let_go_socket(user, fd);
	free(user);
}

/* conn.c takes the socket; the connection slot passes with it. */
static void on_upgraded(void *cls, struct MHD_Connection *c, void *req_cls,
			const char *extra, size_t extra_len, MHD_socket sock,
			struct MHD_UpgradeResponseHandle *urh)
{
	struct http_req *r = cls;
	struct conn *conn = r->conn;
	struct http_hold *hold = xcalloc(1, sizeof(*hold));
	int fd;

	hold->h = r->h;
	fd = hand_out(r, sock, urh, hold);
	if (fd < 0) {
		fd = sock;
		hold->urh = urh;
	}
	r->rq->slot_held = false;
	r->upgraded = true;
	r->conn = NULL;
	conn_start(conn, fd, extra, extra_len,
		   &(struct conn_socket){.release = release, .hold = hold});
	req_release(r);
}

static enum MHD_Result answer(struct http_req *r);

/* A relayed attach's client socket, and what it holds of the listener. */
struct relayed {
	struct http_hold hold;
	int fd;
};

static void relay_ended(void *user, struct relay *rl)
{
	struct relayed *d = user;

	relay_free(rl);
	let_go_socket(&d->hold, d->fd);
	free(d);
}

/* The owner answered 101: the client's socket goes to the relay. */
static void on_relayed(void *cls, struct MHD_Connection *c, void *req_cls,
		       const char *extra, size_t extra_len, MHD_socket sock,
		       struct MHD_UpgradeResponseHandle *urh)
{
	struct http_req *r = cls;
	struct relayed *d = xcalloc(1, sizeof(*d));

	d->hold.h = r->h;
	d->fd = hand_out(r, sock, urh, &d->hold);
	if (d->fd < 0) {
		d->fd = sock;
		d->hold.urh = urh;
	}
	r->upgraded = true;
	routes_relay_start(r->rq, d->fd, extra, extra_len, relay_ended, d);
	req_release(r);
}

/* The owner's 101 to the client, with the owner's WebSocket headers. */
static enum MHD_Result queue_relayed(struct http_req *r)
{
	struct MHD_Response *resp = MHD_create_response_for_upgrade(on_relayed, r);
	const struct forward_header *h;
	enum MHD_Result ok;
	size_t n;

	if (!resp)
		return MHD_NO;
	h = routes_forwarded_headers(r->rq, &n);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
	httpfleet_answer_headers(resp, h, n);
	ok = MHD_queue_response(r->c, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
	MHD_destroy_response(resp);
	return ok;
}

static enum MHD_Result queue_upgrade(struct http_req *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ok;

	/* The connection is set up before the 101, so a gateway out of
	   resources can still refuse the upgrade (503, JSON body). */
	r->rq->attach.requested_us = r->start_us;
	r->conn = conn_new(r->h->conn_host, &r->rq->attach);
	if (!r->conn) {
		r->h->metrics->upgrades_refused++;
		buf_reset(&r->rq->out);
		routes_error_body("UNAVAILABLE",
				  "the gateway cannot take another connection now",
				  &r->rq->out);
		r->rq->status = 503;
		r->rq->content_type = "application/json";
		return answer(r);
	}
	resp = MHD_create_response_for_upgrade(on_upgraded, r);
	if (!resp)
		return MHD_NO;
	/* MHD itself adds "Connection: Upgrade" to an upgrade response. */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
	MHD_add_response_header(resp, "Sec-WebSocket-Accept", r->rq->ws_accept);
	MHD_add_response_header(resp, "Sec-WebSocket-Protocol", WSHS_PROTOCOL);
	if (r->rq->deflate.on)
		MHD_add_response_header(resp, "Sec-WebSocket-Extensions",
					r->rq->deflate.response);
	ok = MHD_queue_response(r->c, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
	MHD_destroy_response(resp);
	return ok;
}

/* MHD asks for more of a forwarded body. None yet: the connection waits
   suspended until the owner sends more (the routes call done). The
   owner's body breaking breaks the client's answer: MHD closes the
   connection without the chunked answer's last chunk, or short of its
   Content-Length, so no client takes a part for the whole. */
static ssize_t forwarded_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct http_req *r = cls;
	ssize_t n = routes_forward_read(r->rq, out, max);

	if (n > 0)
		return n;
	if (n == -EAGAIN) {
		r->suspended = true;
		MHD_suspend_connection(r->c);
		return 0;
	}
	return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM
		      : MHD_CONTENT_READER_END_WITH_ERROR;
}

/* A streamed body's next block: with none ready yet the connection is
   suspended until the routes call rq->done (done() resumes it), so a
   slow sidecar costs no busy loop and a slow client no memory: nothing
   more is asked of the sidecar while the client has not read. */
static ssize_t stream_block(void *cls, uint64_t pos, char *out, size_t max)
{
	struct http_req *r = cls;
	ssize_t n;

	(void)pos;
	n = routes_stream_read(r->rq, out, max);
	if (n > 0)
		return n;
	if (n == ROUTES_STREAM_END)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (n == ROUTES_STREAM_ERROR) {
		log_warn("http", "a streamed answer ended early: %.*s",
			 (int)strcspn(r->target, "?"), r->target);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	r->suspended = true;
	MHD_suspend_connection(r->c);
	return 0;
}

static struct MHD_Response *route_body(struct http_req *r)
{
	struct route_req *rq = r->rq;
	struct MHD_Response *resp;
	int64_t length;

	if (routes_forward_streams(rq, &length))
		return MHD_create_response_from_callback(
		    length < 0 ? MHD_SIZE_UNKNOWN : (uint64_t)length, HTTP__FORWARD_BLOCK,
		    forwarded_read, r, NULL);
	if (rq->streamed)
		return MHD_create_response_from_callback(
		    MHD_SIZE_UNKNOWN, HTTP_STREAM_BLOCK, stream_block, r, NULL);
	if (rq->file_fd >= 0) {
		resp = MHD_create_response_from_fd64(rq->file_size, rq->file_fd);
		if (resp)
			rq->file_fd = -1; /* MHD closes it */
		return resp;
	}
	return MHD_create_response_from_buffer(buf_size(&rq->out), buf_head(&rq->out),
					       MHD_RESPMEM_MUST_COPY);
}

/* The client's address: behind a trusted proxy, the one X-Forwarded-For
   named once the request was whole. */
static void client_str(struct http_req *r, char *out, size_t cap)
{
	static const struct peer_addr none;
	struct http_sock *s = sock_of(r->c);

	if (s && (s->trusted || r->fleet) && memcmp(&r->client, &none, sizeof(none)) != 0)
		peer_addr_str(&r->client, out, cap);
	else if (s)
		peer_addr_str(&s->peer, out, cap);
	else
		snprintf(out, cap, "unknown");
}

/* A refusal an operator looks for (401, 403, 429), one line each: the
   client's address, the request (its path without the query, which may
   carry a token) and the reason the error body gives. */
static void log_refused(struct http_req *r)
{
	struct route_req *rq = r->rq;
	const char *code = NULL, *msg = NULL;
	char addr[64], ctx[80];
	json_t *body;

	if (rq->status != 401 && rq->status != 403 && rq->status != 429)
		return;
	client_str(r, addr, sizeof(addr));
	body = json_loadb((const char *)buf_head(&rq->out), buf_size(&rq->out), 0, NULL);
	code = json_string_value(json_object_get(body, "code"));
	msg = json_string_value(json_object_get(body, "message"));
	snprintf(ctx, sizeof(ctx), "http addr=%s", addr);
	log_warn(ctx, "refused %u %s: %s %.*s: %s", rq->status, code ? code : "-",
		 rq->method ? rq->method : "-",
		 rq->target ? (int)strcspn(rq->target, "?") : 1,
		 rq->target ? rq->target : "-", msg ? msg : "-");
	json_decref(body);
}

/* Sends what the routes answered. */
static enum MHD_Result answer(struct http_req *r)
{
	struct route_req *rq = r->rq;
	const struct forward_header *fwd;
	struct MHD_Response *resp;
	enum MHD_Result ok;
	size_t n_fwd;
	char n[16];

	log_refused(r);
	metrics_count_refusal(r->h->metrics, rq->status);
	metrics_observe(&r->h->metrics->http_latency[rq->m.id % METRICS_ROUTES],
			time_mono_us() - r->start_us);
	if (rq->status == 101)
		return routes_relayed(rq) ? queue_relayed(r) : queue_upgrade(r);
	resp = route_body(r);
	if (!resp)
		return MHD_NO;
	fwd = routes_forwarded_headers(rq, &n_fwd);
	if (fwd) /* the owner's answer carries the owner's headers */
		httpfleet_answer_headers(resp, fwd, n_fwd);
	else
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
					rq->content_type);
	if (rq->static_file)
		webfiles_headers(resp, rq->static_file);
	else if (!fwd)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (rq->allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, rq->allow);
	if (rq->www_authenticate)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	if (rq->retry_after) {
		snprintf(n, sizeof(n), "%d", rq->retry_after);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, n);
	}
	if (r->close_after)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	ok = MHD_queue_response(r->c, rq->status, resp);
	MHD_destroy_response(resp);
	return ok;
}

/* Answers at once with a JSON error, before any body is read. */
static enum MHD_Result refuse(struct http_req *r, int status, const char *msg)
{
	buf_reset(&r->rq->out);
	routes_error_body("INVALID_REQUEST", msg, &r->rq->out);
	r->rq->status = status;
	return answer(r);
}

static enum MHD_Result reply_too_large(struct http_req *r)
{
	char msg[64];

	snprintf(msg, sizeof(msg), "the request body exceeds %d bytes", ROUTES_BODY_MAX);
	return refuse(r, 413, msg);
}

/* A declared Content-Length: digits only (shared/num.c), at most the
   body cap. libmicrohttpd refuses a malformed one before we see it; this
   holds should it ever let one through. */
static enum MHD_Result check_length(struct http_req *r, const char *cl)
{
	uint64_t len;

	if (num_parse_u64(cl, 0, ROUTES_BODY_MAX, &len) == 0)
		return MHD_YES;
	if (cl[0] && strspn(cl, "0123456789") == strlen(cl))
		return reply_too_large(r); /* digits, but past the cap */
	return refuse(r, 400, "Content-Length must be decimal digits");
}

/* Joins every Sec-WebSocket-Protocol line with ", " (RFC 9110 5.3). */
static enum MHD_Result protocol_line(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	struct buf *b = cls;

	if (strcasecmp(key, "Sec-WebSocket-Protocol") != 0 || !value)
		return MHD_YES;
	if (buf_size(b))
		buf_append_str(b, ", ");
	buf_append_str(b, value);
	return MHD_YES;
}

static const char *header(struct http_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, name);
}

static const struct forward_header *all_headers(struct route_req *rq, size_t *n)
{
	struct http_req *r = rq->user;

	return httpfleet_collect(r->c, &r->hdrs, n);
}

/* The request is whole: fill the route request and ask the routes. */
static void handle(struct http_req *r, const char *method)
{
	struct route_req *rq = r->rq;

	MHD_get_connection_values(r->c, MHD_HEADER_KIND, protocol_line, &r->protocols);
	buf_append(&r->protocols, "", 1);
	rq->gateway = r->h->routes_host;
	rq->role = r->h->role;
	rq->method = method;
	rq->target = r->target;
	rq->authorization = header(r, MHD_HTTP_HEADER_AUTHORIZATION);
	rq->upgrade = header(r, MHD_HTTP_HEADER_UPGRADE);
	rq->connection = header(r, MHD_HTTP_HEADER_CONNECTION);
	rq->ws_version = header(r, "Sec-WebSocket-Version");
	rq->ws_key = header(r, "Sec-WebSocket-Key");
	rq->ws_extensions = header(r, "Sec-WebSocket-Extensions");
	rq->origin = header(r, "Origin");
	rq->host = header(r, MHD_HTTP_HEADER_HOST);
	rq->fleet_auth = header(r, FLEETAUTH_HEADER);
	rq->forwarded_for = header(r, "X-Forwarded-For");
	client_str(r, r->client_text, sizeof(r->client_text));
	rq->client = r->client_text;
	rq->all_headers = all_headers;
	rq->ws_protocol =
	    buf_size(&r->protocols) > 1 ? (const char *)buf_head(&r->protocols) : NULL;
	rq->body = (const char *)buf_head(&r->body);
	rq->body_len = buf_size(&r->body);
	rq->user = r;
	r->handled = true;
	if (routes_handle(rq) == 1) {
		r->suspended = true;
		MHD_suspend_connection(r->c);
	}
}

/* The request is whole: its deadline is met, and behind a trusted proxy
   its client is counted. Returns 0, or -EBUSY with a 429 to answer. */
static int whole(struct http_req *r, const char *method)
{
	struct http_sock *s = sock_of(r->c);

	if (s)
		http__head_disarm(s);
	if (http__count_client(r, s, method) == 0)
		return 0;
	r->handled = true;
	routes_refuse(r->rq, 429, "RATE_LIMITED",
		      "too many connections from this client address");
	return -EBUSY;
}

/* The routes' late answer: MHD calls the access handler again. */
static void done(struct route_req *rq)
{
	struct http_req *r = rq->user;

	if (!r->suspended)
		return;
	r->suspended = false;
	MHD_resume_connection(r->c);
	r->h->kick = true;
}

/* A connection the accept policy refused: its request is answered with
   the refusal, whatever it asked, and the connection closes after it. */
static enum MHD_Result answer_refusal(struct http_req *r, unsigned status)
{
	r->handled = true;
	r->close_after = true;
	if (status == 429)
		routes_refuse(r->rq, 429, "RATE_LIMITED",
			      "too many connections from this client address "
			      "(--max-conns-per-ip)");
	else
		routes_refuse(
		    r->rq, 503, "UNAVAILABLE",
		    "the gateway is at its connection limit; try again shortly");
	r->rq->retry_after = 1;
	return answer(r);
}

/* The first call: count, answer a refused connection, and refuse a
   declared oversized body at once. */
static enum MHD_Result first(struct http_req *r)
{
	const char *cl = header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
	struct http_sock *s = sock_of(r->c);

	r->started = true;
	r->start_us = time_mono_us();
	r->rq->done = done;
	r->h->metrics->http_requests++;
	if (s && s->refuse)
		return answer_refusal(r, s->refuse);
	return cl ? check_length(r, cl) : MHD_YES;
}

static enum MHD_Result upload(struct http_req *r, const char *data, size_t *n)
{
	if (!r->too_large && buf_size(&r->body) + *n <= ROUTES_BODY_MAX) {
		buf_append(&r->body, data, *n);
	} else {
		r->too_large = true;
		r->discarded += *n;
		if (r->discarded > HTTP__DISCARD_MAX)
			return MHD_NO;
	}
	*n = 0;
	return MHD_YES;
}

enum MHD_Result http__on_request(void *cls, struct MHD_Connection *c, const char *url,
				 const char *method, const char *version,
				 const char *upload_data, size_t *upload_data_size,
				 void **req_cls)
{
	struct http_req *r = *req_cls;

	if (!r)
		*req_cls = r = req_new(cls, c, url);
	if (!r->started)
		return first(r);
	if (*upload_data_size)
		return upload(r, upload_data, upload_data_size);
	if (r->too_large)
		return reply_too_large(r);
	if (!r->handled && whole(r, method) < 0)
		return answer(r);
	if (!r->handled)
		handle(r, method);
	if (r->suspended)
		return MHD_YES;
	return answer(r);
}
