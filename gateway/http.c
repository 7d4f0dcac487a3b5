/* http: libmicrohttpd in external epoll mode on the gateway's one loop.
   MHD's epoll fd is watched with an ev_io, its timeouts with an ev_timer
   re-armed from MHD_get_timeout after every MHD_run, and the gateway's
   before-poll hook runs MHD once more when something outside it changed
   a connection (http_run_pending), so no answer waits for the next
   packet. Policy lives in routes.c; this file adapts MHD to struct
   route_req: the raw target (from the URI log callback, before MHD
   unescapes anything), headers, a body capped at ROUTES_BODY_MAX, and
   the answer, including the 101 and the socket handover to conn.c.

   A request's state lives from the URI log callback to MHD's
   completion notice, which for an upgraded connection comes only when
   conn.c closes it through MHD_upgrade_action. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "conn.h"
#include "ev.h"
#include "gateway.h"
#include "log.h"
#include "routes.h"
#include "timeutil.h"
#include "wshandshake.h"
#include "xalloc.h"

#define HTTP__DISCARD_MAX (1u << 20) /* body bytes read past the cap before hanging up   \
				      */
#define HTTP__MEMORY_LIMIT   (64 * 1024) /* MHD's per-connection pool: headers */
#define HTTP__TIMEOUT_S	     30		 /* an idle HTTP connection */
#define HTTP__EXTRA_CONNS    64		 /* HTTP requests beyond the WebSocket limit */
#define HTTP__PER_IP_RESERVE 16		 /* slots one address can never take */

struct http {
	struct gateway *gw;
	enum http_role role;
	struct MHD_Daemon *d;
	struct ev_io *io;
	struct ev_timer *timer;
	uint16_t port;
	int kick;	   /* a request was resumed: run MHD before the next poll */
	int64_t deadline;  /* of the armed timer (monotonic ms), 0: none */
};

struct http_req {
	struct http *h;
	struct MHD_Connection *c;
	char *target; /* the raw request target */
	struct buf body;
	struct buf protocols; /* Sec-WebSocket-Protocol lines joined */
	size_t discarded;
	int started, handled, suspended, too_large;
	struct route_req rq;
	struct conn *conn; /* made before the 101, started after it */
};

/* Runs MHD, then arms the timer for MHD's next timeout; the timerfd is
   only re-armed when the deadline moves earlier, since a timer firing
   early costs one idle MHD_run and re-arming costs a syscall per run. */
static void http__run(struct http *h)
{
	MHD_UNSIGNED_LONG_LONG t;
	int64_t deadline;

	h->kick = 0;
	MHD_run(h->d);
	if (MHD_get_timeout(h->d, &t) != MHD_YES)
		return;
	if (t > INT32_MAX)
		t = INT32_MAX;
	deadline = time_mono_ms() + (int64_t)t;
	if (h->deadline && h->deadline <= deadline)
		return;
	h->deadline = deadline;
	ev_timer_arm(h->timer, (int64_t)t, 0);
}

static void http__io(struct ev_io *io, int fd, unsigned events, void *user)
{
	http__run(user);
}

static void http__timer(struct ev_timer *t, void *user)
{
	struct http *h = user;

	h->deadline = 0;
	http__run(h);
}

/* MHD in external mode has no wake-up channel: a request resumed from a
   sidecar reply, or an upgraded socket conn.c handed back, needs an
   MHD_run before the next poll, or its answer or close would wait for
   unrelated traffic. The gateway's before-poll hook calls this after it
   has written and freed connections. */
void http_run_pending(struct http *h)
{
	if (h && h->kick)
		http__run(h);
}

void http_wake(struct http *h)
{
	if (h)
		h->kick = 1;
}

static void http__mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	log_warn("http", "libmicrohttpd: %s", line);
}

static struct http_req *http__req_new(struct http *h, struct MHD_Connection *c,
				      const char *target)
{
	struct http_req *r = xcalloc(1, sizeof(*r));

	r->h = h;
	r->c = c;
	r->target = xstrdup(target ? target : "/");
	buf_init(&r->body);
	buf_init(&r->protocols);
	routes_req_init(&r->rq);
	return r;
}

static void http__req_free(struct http_req *r)
{
	conn_discard(r->conn);
	routes_req_clear(&r->rq);
	buf_free(&r->body);
	buf_free(&r->protocols);
	free(r->target);
	free(r);
}

/* MHD's first sight of a request: the raw target, before unescaping. */
static void *http__uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
	return http__req_new(cls, c, uri);
}

static void http__completed(void *cls, struct MHD_Connection *c, void **req_cls,
			    enum MHD_RequestTerminationCode toe)
{
	struct http_req *r = *req_cls;

	if (!r)
		return;
	http__req_free(r);
	*req_cls = NULL;
}

/* conn.c takes the socket; the connection slot passes with it. */
static void http__upgraded(void *cls, struct MHD_Connection *c, void *req_cls,
			   const char *extra, size_t extra_len, MHD_socket sock,
			   struct MHD_UpgradeResponseHandle *urh)
{
	struct http_req *r = cls;

	struct conn *conn = r->conn;

	r->rq.slot_held = 0;
	r->conn = NULL;
	conn_start(conn, sock, extra, extra_len, urh);
}

static enum MHD_Result http__answer(struct http_req *r);

static enum MHD_Result http__queue_upgrade(struct http_req *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ok;

	/* The connection is set up before the 101, so a gateway out of
	   resources can still refuse the upgrade (SPEC 1: 503, JSON body). */
	r->conn = conn_new(r->h->gw, &r->rq.attach);
	if (!r->conn) {
		r->h->gw->metrics.upgrades_refused++;
		buf_reset(&r->rq.out);
		routes_error_body("UNAVAILABLE", "the gateway cannot take another connection now",
				  &r->rq.out);
		r->rq.status = 503;
		r->rq.content_type = "application/json";
		return http__answer(r);
	}
	resp = MHD_create_response_for_upgrade(http__upgraded, r);
	if (!resp)
		return MHD_NO;
	/* MHD itself adds "Connection: Upgrade" to an upgrade response. */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
	MHD_add_response_header(resp, "Sec-WebSocket-Accept", r->rq.ws_accept);
	MHD_add_response_header(resp, "Sec-WebSocket-Protocol", WSHS_PROTOCOL);
	ok = MHD_queue_response(r->c, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
	MHD_destroy_response(resp);
	return ok;
}

static struct MHD_Response *http__body(struct route_req *rq)
{
	struct MHD_Response *resp;

	if (rq->file_fd >= 0) {
		resp = MHD_create_response_from_fd64(rq->file_size, rq->file_fd);
		if (resp)
			rq->file_fd = -1; /* MHD closes it */
		return resp;
	}
	return MHD_create_response_from_buffer(buf_size(&rq->out), buf_head(&rq->out),
					       MHD_RESPMEM_MUST_COPY);
}

/* Sends what the routes answered. */
static enum MHD_Result http__answer(struct http_req *r)
{
	struct route_req *rq = &r->rq;
	struct MHD_Response *resp;
	enum MHD_Result ok;
	char n[16];

	if (rq->status == 101)
		return http__queue_upgrade(r);
	resp = http__body(rq);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rq->content_type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (rq->allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, rq->allow);
	if (rq->www_authenticate)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	if (rq->retry_after) {
		snprintf(n, sizeof(n), "%d", rq->retry_after);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, n);
	}
	ok = MHD_queue_response(r->c, rq->status, resp);
	MHD_destroy_response(resp);
	return ok;
}

static enum MHD_Result http__too_large(struct http_req *r)
{
	char msg[64];

	snprintf(msg, sizeof(msg), "the request body exceeds %d bytes", ROUTES_BODY_MAX);
	buf_reset(&r->rq.out);
	routes_error_body("INVALID_REQUEST", msg, &r->rq.out);
	r->rq.status = 413;
	return http__answer(r);
}

/* Joins every Sec-WebSocket-Protocol line with ", " (RFC 9110 5.3). */
static enum MHD_Result http__protocol_line(void *cls, enum MHD_ValueKind kind,
					   const char *key, const char *value)
{
	struct buf *b = cls;

	if (strcasecmp(key, "Sec-WebSocket-Protocol") != 0 || !value)
		return MHD_YES;
	if (buf_size(b))
		buf_append_str(b, ", ");
	buf_append_str(b, value);
	return MHD_YES;
}

static const char *http__header(struct http_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, name);
}

/* The request is whole: fill the route request and ask the routes. */
static void http__handle(struct http_req *r, const char *method)
{
	struct route_req *rq = &r->rq;

	MHD_get_connection_values(r->c, MHD_HEADER_KIND, http__protocol_line,
				  &r->protocols);
	buf_append(&r->protocols, "", 1);
	rq->gw = r->h->gw;
	rq->role = r->h->role;
	rq->method = method;
	rq->target = r->target;
	rq->authorization = http__header(r, MHD_HTTP_HEADER_AUTHORIZATION);
	rq->upgrade = http__header(r, MHD_HTTP_HEADER_UPGRADE);
	rq->connection = http__header(r, MHD_HTTP_HEADER_CONNECTION);
	rq->ws_version = http__header(r, "Sec-WebSocket-Version");
	rq->ws_key = http__header(r, "Sec-WebSocket-Key");
	rq->ws_protocol =
	    buf_size(&r->protocols) > 1 ? (const char *)buf_head(&r->protocols) : NULL;
	rq->body = (const char *)buf_head(&r->body);
	rq->body_len = buf_size(&r->body);
	rq->user = r;
	r->handled = 1;
	if (routes_handle(rq) == 1) {
		r->suspended = 1;
		MHD_suspend_connection(r->c);
	}
}

/* The routes' late answer: MHD calls the access handler again. */
static void http__done(struct route_req *rq)
{
	struct http_req *r = rq->user;

	if (!r->suspended)
		return;
	r->suspended = 0;
	MHD_resume_connection(r->c);
	r->h->kick = 1;
}

/* The first call: count, and refuse a declared oversized body at once. */
static enum MHD_Result http__first(struct http_req *r)
{
	const char *cl = http__header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);

	r->started = 1;
	r->rq.done = http__done;
	r->h->gw->metrics.http_requests++;
	if (cl && strtoull(cl, NULL, 10) > ROUTES_BODY_MAX)
		return http__too_large(r);
	return MHD_YES;
}

static enum MHD_Result http__upload(struct http_req *r, const char *data, size_t *n)
{
	if (!r->too_large && buf_size(&r->body) + *n <= ROUTES_BODY_MAX) {
		buf_append(&r->body, data, *n);
	} else {
		r->too_large = 1;
		r->discarded += *n;
		if (r->discarded > HTTP__DISCARD_MAX)
			return MHD_NO;
	}
	*n = 0;
	return MHD_YES;
}

static enum MHD_Result http__access(void *cls, struct MHD_Connection *c, const char *url,
				    const char *method, const char *version,
				    const char *upload_data, size_t *upload_data_size,
				    void **req_cls)
{
	struct http_req *r = *req_cls;

	if (!r)
		*req_cls = r = http__req_new(cls, c, url);
	if (!r->started)
		return http__first(r);
	if (*upload_data_size)
		return http__upload(r, upload_data, upload_data_size);
	if (r->too_large)
		return http__too_large(r);
	if (!r->handled)
		http__handle(r, method);
	if (r->suspended)
		return MHD_YES;
	return http__answer(r);
}

/* Resolves host (a numeric address or a name) for binding exactly it. */
static int http__resolve(const char *host, uint16_t port, struct sockaddr_storage *ss,
			 char *err, size_t errlen)
{
	struct addrinfo hints = {0}, *ai;
	int rc;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_ADDRCONFIG;
	rc = getaddrinfo(host, NULL, &hints, &ai);
	if (rc != 0 &&
	    (hints.ai_flags = 0, rc = getaddrinfo(host, NULL, &hints, &ai)) != 0) {
		snprintf(err, errlen, "cannot resolve '%s': %s", host, gai_strerror(rc));
		return -EINVAL;
	}
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	freeaddrinfo(ai);
	return 0;
}

static struct MHD_Daemon *http__start(struct http *h, const struct sockaddr_storage *ss)
{
	const struct gw_config *cfg = h->gw->cfg;
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE |
			 MHD_USE_ERROR_LOG;
	unsigned limit = cfg->max_conns + HTTP__EXTRA_CONNS;

	if (ss->ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* A reverse proxy brings many clients from one address, so the
	   per-IP cap only keeps one address from taking the last slots;
	   the per-principal limit is the real per-client bound. */
	return MHD_start_daemon(
	    flags, 0, NULL, NULL, http__access, h, MHD_OPTION_EXTERNAL_LOGGER,
	    http__mhd_log, h, MHD_OPTION_SOCK_ADDR, ss,
	    MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, MHD_OPTION_CONNECTION_LIMIT,
	    limit, MHD_OPTION_PER_IP_CONNECTION_LIMIT, limit - HTTP__PER_IP_RESERVE,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP__TIMEOUT_S,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP__MEMORY_LIMIT,
	    MHD_OPTION_URI_LOG_CALLBACK, http__uri_log, h, MHD_OPTION_NOTIFY_COMPLETED,
	    http__completed, h, MHD_OPTION_END);
}

struct http *http_new(struct gateway *gw, const char *host, uint16_t port,
		      enum http_role role, char *err, size_t errlen)
{
	struct http *h = xcalloc(1, sizeof(*h));
	const union MHD_DaemonInfo *info;
	struct sockaddr_storage ss;

	h->gw = gw;
	h->role = role;
	if (http__resolve(host, port, &ss, err, errlen) < 0)
		goto out_free;
	h->d = http__start(h, &ss);
	if (!h->d) {
		snprintf(err, errlen, "cannot listen on %s port %u: %s", host, port,
			 strerror(errno ? errno : EADDRINUSE));
		goto out_free;
	}
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : port;
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
	h->io = info ? ev_io_new(gw->loop, info->epoll_fd, EV_READ, http__io, h) : NULL;
	if (!h->io) {
		snprintf(err, errlen, "cannot watch libmicrohttpd's epoll fd");
		goto out_free;
	}
	h->timer = ev_timer_new(gw->loop, -1, 0, http__timer, h);
	h->kick = 1;
	return h;
out_free:
	http_free(h);
	return NULL;
}

void http_free(struct http *h)
{
	if (!h)
		return;
	ev_timer_free(h->timer);
	ev_io_free(h->io);
	if (h->d)
		MHD_stop_daemon(h->d);
	free(h);
}

uint16_t http_port(const struct http *h)
{
	return h->port;
}
