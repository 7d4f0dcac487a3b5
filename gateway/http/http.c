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
   completion notice. A plain upgraded socket leaves MHD right after the
   run that upgraded it (conn.c owns a duplicate of its fd, checked on
   Debian's MHD 0.9.75: it takes the socket out of its epoll set before
   the upgrade callback and closes its fd without a shutdown); over TLS,
   MHD relays the socket and the notice comes when conn.c closes it
   through MHD_upgrade_action. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netinet/in.h>

#include <jansson.h>
#include <microhttpd.h>

#include "conn.h"
#include "ev.h"
#include "config.h"
#include "fleetauth.h"
#include "httpfleet.h"
#include "metrics.h"
#include "log.h"
#include "num.h"
#include "peers.h"
#include "relay.h"
#include "routes.h"
#include "timeutil.h"
#include "tls.h"
#include "webfiles.h"
#include "wshandshake.h"
#include "xalloc.h"

#define HTTP__DISCARD_MAX                                                                \
	(1u << 20) /* body bytes read past the cap before hanging up                     \
		    */
/* MHD's per-connection pool. It holds the request head; over TLS MHD
   keeps it (mostly touched) for the whole life of an upgraded WebSocket
   (a plain one leaves MHD at once: hand_out), where 64 KiB made
   about 50 KiB a connection. 16 KiB admits a head of about 12 KiB, the
   largest legitimate one: an 8 KiB token (JWT_MAX_TOKEN) as the bearer
   subprotocol (10.9 KiB in base64url) with 1.5 KiB of browser headers.
   Bigger heads get 431. */
#define HTTP__MEMORY_LIMIT (16 * 1024)
#define HTTP__TIMEOUT_S	   30 /* an idle HTTP connection */
#define HTTP__EXTRA_CONNS  64 /* HTTP requests beyond the WebSocket limit */
/* Connections past the limit that are answered 429 or 503 and closed,
   at once (nginx's limit_conn answers too): each holds MHD's pool until
   its head is read and the answer written, so there are at most this
   many; past them a connection is closed unanswered (counted). */
#define HTTP__REFUSALS_MAX 32
/* Heads evicted at the limit whose sockets MHD has not yet closed (it
   does on its next run): the new connection takes their place at once. */
#define HTTP__EVICTING_MAX 32
#define HTTP__BACKLOG	   511 /* the listen queue, as nginx's default */

/* What an upgraded connection holds of its listener until it ends. A
   plain socket leaves libmicrohttpd at the upgrade (MHD would keep its
   connection and its pool, most of what an idle client costs, for the
   socket's whole life): the connection owns a duplicate of the fd, and
   the per-address count it was admitted under. Over TLS, MHD relays
   the socket, so it keeps it: urh closes it. */
struct http_hold {
	struct http *h;
	struct MHD_UpgradeResponseHandle *urh; /* NULL: the fd is the connection's */
	struct peer_addr peer;		       /* counted in h's table when counted */
	int counted;
};

struct http {
	const struct http_host *host;
	enum route_listener role;
	struct MHD_Daemon *d;
	struct ev_io *io;
	struct ev_timer *timer;
	uint16_t port;
	int kick;	  /* a request was resumed: run MHD before the next poll */
	int64_t deadline; /* of the armed timer (monotonic ms), 0: none */
	struct peer_table *peers;	      /* connections per untrusted peer, requests
						 per client behind a trusted proxy */
	struct http_sock *heads, *heads_tail; /* waiting for a request, by deadline */
	struct ev_timer *head_timer;
	int64_t head_timer_at;	   /* deadline the head timer is armed for, 0: none */
	int64_t refused_logged_ms; /* last per-address refusal logged */
	unsigned n_refusing;	   /* accepted to be answered 429 or 503 */
	unsigned n_evicting;	   /* evicted heads MHD has yet to close */
	unsigned verdict;	   /* on_accept's for the socket it admits: 0, 429, 503 */
	struct tls_store tls;	   /* --tls-cert and --tls-key when has_tls */
	int has_tls;
	/* Plain upgraded sockets handed to conn.c, for MHD to let go of
	   after the run that upgraded them (let_go). */
	struct MHD_UpgradeResponseHandle **handed;
	size_t n_handed, cap_handed;
	size_t n_out; /* plain upgraded sockets handed out and still open */
};

/* One accepted TCP connection, from MHD's start notice to its close
   notice (an upgraded one until conn.c closes it). */
struct http_sock {
	struct http *h;
	int fd;
	struct peer_addr peer;
	int counted;	       /* holds one count of peer in h->peers */
	int trusted;	       /* the peer is a --trusted-proxy */
	unsigned refuse;       /* 429 or 503: answered so and closed; 0: admitted */
	int evicted;	       /* cut at the limit while sending its head */
	int64_t deadline;      /* the request must be whole by then (monotonic ms); 0: not
				  waiting */
	struct tls_cred *cred; /* what this connection's TLS session uses */
	struct http_sock *prev, *next; /* in h->heads while deadline != 0 */
};

struct http_req {
	struct http *h;
	struct MHD_Connection *c;
	char *target; /* the raw request target */
	struct buf body;
	struct buf protocols; /* Sec-WebSocket-Protocol lines joined */
	size_t discarded;
	int started, handled, suspended, too_large, upgraded;
	int close_after;	       /* the answer ends the connection */
	int client_counted;	       /* holds one count of client in h->peers */
	struct peer_addr client;       /* behind a trusted proxy: from X-Forwarded-For */
	int64_t start_us;	       /* its first byte, for the latency histograms */
	struct route_req *rq;	       /* NULL once upgraded: conn.c has what it needs */
	struct conn *conn;	       /* made before the 101, started after it */
	struct httpfleet_headers hdrs; /* gathered when the request is forwarded */
	int fleet; /* forwarded by a gateway of the fleet: client is its client */
	char client_text[64]; /* the client's address, for forwarding */
};

static void let_go(struct http *h);

/* Runs MHD, then arms the timer for MHD's next timeout; the timerfd is
   only re-armed when the deadline moves earlier, since a timer firing
   early costs one idle MHD_run. */
static void run(struct http *h)
{
	MHD_UNSIGNED_LONG_LONG t;
	int64_t deadline;

	h->kick = 0;
	MHD_run(h->d);
	if (h->n_handed) {
		let_go(h);
		MHD_run(h->d); /* frees what MHD held for them */
	}
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

static void on_io(struct ev_io *io, int fd, unsigned events, void *user)
{
	run(user);
}

static void on_timer(struct ev_timer *t, void *user)
{
	struct http *h = user;

	h->deadline = 0;
	run(h);
}

/* MHD in external mode has no wake-up channel: a request resumed from a
   sidecar reply, or an upgraded socket conn.c handed back, needs an
   MHD_run before the next poll, or its answer or close would wait for
   unrelated traffic. The gateway's before-poll hook calls this after it
   has written and freed connections. */
void http_run_pending(struct http *h)
{
	if (!h || !h->kick)
		return;
	run(h);
}

/* ---- the request deadline ----
   MHD's timeout counts only inactivity, so a client sending one byte a
   second would hold its connection forever. Every connection waiting
   for a request is on h->heads with a deadline; all deadlines are now
   plus the same timeout, so appending keeps the list sorted and one
   timer for its front suffices. */

static void head_timer_update(struct http *h)
{
	int64_t now;

	if (!h->heads || (h->head_timer_at && h->head_timer_at <= h->heads->deadline))
		return;
	now = time_mono_ms();
	h->head_timer_at = h->heads->deadline;
	ev_timer_arm(h->head_timer,
		     h->heads->deadline > now ? h->heads->deadline - now : 1, 0);
}

static void head_disarm(struct http_sock *s)
{
	struct http *h = s->h;

	if (!s->deadline)
		return;
	*(s->prev ? &s->prev->next : &h->heads) = s->next;
	*(s->next ? &s->next->prev : &h->heads_tail) = s->prev;
	s->prev = s->next = NULL;
	s->deadline = 0;
}

static void head_arm(struct http_sock *s)
{
	struct http *h = s->h;

	head_disarm(s);
	s->deadline =
	    time_mono_ms() + (int64_t)h->host->cfg->request_head_timeout_s * 1000;
	s->prev = h->heads_tail;
	*(h->heads_tail ? &h->heads_tail->next : &h->heads) = s;
	h->heads_tail = s;
	head_timer_update(h);
}

/* Cuts every connection past its deadline: a shutdown makes MHD read
   end-of-file and close it on its next run (MHD has no call to close a
   connection it holds). */
static void head_expired(struct ev_timer *t, void *user)
{
	struct http *h = user;
	int64_t now = time_mono_ms();

	h->head_timer_at = 0;
	while (h->heads && h->heads->deadline <= now) {
		struct http_sock *s = h->heads;
		char a[64];

		peer_addr_str(&s->peer, a, sizeof(a));
		log_debug("http", "%s: no whole request in %u s, closing", a,
			  h->host->cfg->request_head_timeout_s);
		shutdown(s->fd, SHUT_RDWR);
		head_disarm(s);
		h->kick = 1;
	}
	head_timer_update(h);
}

/* ---- the connection limit and per-address caps ---- */

static void log_refusal(struct http *h, const struct peer_addr *a, const char *what)
{
	int64_t now = time_mono_ms();
	char text[64];

	if (now - h->refused_logged_ms < 1000)
		return; /* one line a second at most under a flood */
	h->refused_logged_ms = now;
	peer_addr_str(a, text, sizeof(text));
	log_warn("http", "%s: %s (--max-conns %u, --max-conns-per-ip %u)", text, what,
		 h->host->cfg->max_conns, h->host->cfg->max_conns_per_ip);
}

/* MHD's connection limit counted the WebSockets too while it kept them:
   the sockets handed out still count against it, so the gateway holds no
   more sockets than before (what fit_fd_limit budgets for). Refused
   connections being answered, and evicted ones MHD has yet to close,
   hold no place. */
static bool over_limit(struct http *h)
{
	const union MHD_DaemonInfo *di =
	    MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
	uint64_t held;

	if (!di)
		return false;
	held = (uint64_t)di->num_connections + h->n_out - h->n_refusing - h->n_evicting;
	return held >= (uint64_t)h->host->cfg->max_conns + HTTP__EXTRA_CONNS;
}

/* What an evicted plain connection is told, written straight to its
   socket: MHD has written nothing on a connection still waiting for its
   request head. Over TLS it is only closed. */
static void tell_evicted(int fd)
{
	static const char body[] =
	    "{\"code\":\"UNAVAILABLE\",\"message\":\"the gateway is "
	    "at its connection limit and closed this connection, "
	    "which had not sent its request in time\"}";
	char text[512];
	int n = snprintf(text, sizeof(text),
			 "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
			 "application/json\r\nCache-Control: no-store\r\nRetry-After: "
			 "1\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
			 sizeof(body) - 1, body);

	(void)!send(fd, text, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* At the limit, the connection that has waited longest for its request
   head (a slow sender, or an idle keep-alive) makes room: a crowd of
   trickling connections from many addresses cannot keep a client that
   sends its request at once, an authenticated attach, out. Refused
   connections are not evicted: they hold no place. Returns whether one
   was. */
static bool evict_oldest_head(struct http *h)
{
	struct http_sock *s = h->heads;

	if (h->n_evicting >= HTTP__EVICTING_MAX)
		return false;
	while (s && s->refuse) /* at most HTTP__REFUSALS_MAX of them */
		s = s->next;
	if (!s)
		return false;
	if (!h->has_tls)
		tell_evicted(s->fd);
	/* MHD reads end-of-file and closes it on its next run. */
	shutdown(s->fd, SHUT_RDWR);
	head_disarm(s);
	s->evicted = 1;
	h->n_evicting++;
	h->kick = 1;
	h->host->metrics->heads_evicted++;
	log_refusal(h, &s->peer, "connection evicted at the limit: no request head yet");
	return true;
}

/* The connection from a is accepted to be answered status and closed,
   while fewer than HTTP__REFUSALS_MAX are; otherwise it is closed at
   once, unanswered. */
static enum MHD_Result refuse_conn(struct http *h, const struct peer_addr *a,
				   unsigned status)
{
	struct metrics *m = h->host->metrics;

	if (h->n_refusing >= HTTP__REFUSALS_MAX) {
		m->conns_dropped++;
		log_refusal(h, a,
			    "connection closed unanswered: too many refusals at once");
		return MHD_NO;
	}
	if (status == 429)
		m->conns_refused_address++;
	else
		m->conns_refused_full++;
	log_refusal(h, a,
		    status == 429 ? "connection refused (429), address at its cap"
				  : "connection refused (503), the gateway is full");
	h->verdict = status;
	return MHD_YES;
}

/* MHD's accept policy: an untrusted peer at its cap (an IPv6 /64, or its
   /56, at PEERS_SITE_FACTOR times it) is answered 429; at the limit the
   oldest head is evicted, or with none to evict, the new connection is
   answered 503. A trusted proxy brings many clients: they are counted
   per request, by X-Forwarded-For. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *sa, socklen_t len)
{
	struct http *h = cls;
	const struct gw_config *cfg = h->host->cfg;
	struct peer_addr a;

	h->verdict = 0;
	if (peer_addr_from_sockaddr(sa, &a) < 0)
		return over_limit(h) ? MHD_NO : MHD_YES;
	if (!peer_trusted(cfg->trusted_proxies, cfg->n_trusted_proxies, &a) &&
	    peer_table_full(h->peers, &a, cfg->max_conns_per_ip))
		return refuse_conn(h, &a, 429);
	if (over_limit(h) && !evict_oldest_head(h))
		return refuse_conn(h, &a, 503);
	return MHD_YES;
}

/* Before its handshake, a new TLS connection gets the credentials
   loaded last (SIGHUP), and holds them until it closes (tls.h). Should
   that fail it keeps MHD's, those loaded at start, which never go away. */
static void tls_cred(struct http_sock *s, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *tls =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	struct tls_cred *cur = s->h->tls.current;

	if (!tls || !tls->tls_session || !cur ||
	    gnutls_credentials_set(tls->tls_session, GNUTLS_CRD_CERTIFICATE, cur->x509) <
		0)
		return;
	s->cred = tls_cred_ref(cur);
}

static void sock_start(struct http *h, struct MHD_Connection *c, void **ctx)
{
	const struct gw_config *cfg = h->host->cfg;
	const union MHD_ConnectionInfo *fd, *addr;
	struct peer_addr peer;
	struct http_sock *s;

	fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	addr = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!fd || !addr || peer_addr_from_sockaddr(addr->client_addr, &peer) < 0)
		return;
	s = xcalloc(1, sizeof(*s));
	s->h = h;
	s->fd = fd->connect_fd;
	s->peer = peer;
	s->trusted = peer_trusted(cfg->trusted_proxies, cfg->n_trusted_proxies, &s->peer);
	/* The accept policy's verdict on this very socket: MHD calls it,
	   then this, for each connection it accepts. */
	s->refuse = h->verdict;
	h->verdict = 0;
	h->n_refusing += s->refuse ? 1 : 0;
	/* Unlimited here: the accept policy checked the cap just before. */
	s->counted = !s->trusted && !s->refuse &&
		     peer_table_take(h->peers, &s->peer, UINT32_MAX) == 0;
	if (h->has_tls)
		tls_cred(s, c);
	head_arm(s);
	*ctx = s;
}

static void sock_closed(struct http_sock *s)
{
	s->h->n_refusing -= s->refuse ? 1 : 0;
	s->h->n_evicting -= s->evicted ? 1 : 0;
	tls_cred_unref(s->cred);
	if (s->counted)
		peer_table_give(s->h->peers, &s->peer);
	head_disarm(s);
	free(s);
}

static void notify_conn(void *cls, struct MHD_Connection *c, void **ctx,
			enum MHD_ConnectionNotificationCode code)
{
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		sock_start(cls, c, ctx);
	else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *ctx) {
		sock_closed(*ctx);
		*ctx = NULL;
	}
}

/* Behind a trusted proxy, or forwarded by a gateway of the fleet (its
   fleet header verified): the client from X-Forwarded-For takes one
   count for the life of the request (a WebSocket's whole life), a
   forwarding gateway's socket none (it brings many clients). Returns 0,
   or -EBUSY when that client is at its cap. */
static int count_client(struct http_req *r, struct http_sock *s, const char *method)
{
	const struct gw_config *cfg = r->h->host->cfg;
	const char *xff;

	r->fleet = s && httpfleet_forwarded(r->h->host->routes->fleet, r->c, method,
					    r->target, &r->client);
	if (!s || (!s->trusted && !r->fleet))
		return 0;
	if (r->fleet && s->counted) {
		peer_table_give(r->h->peers, &s->peer);
		s->counted = 0;
	}
	xff = MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, "X-Forwarded-For");
	if (!r->fleet)
		peer_client(cfg->trusted_proxies, cfg->n_trusted_proxies, &s->peer, xff,
			    &r->client);
	if (peer_table_take(r->h->peers, &r->client, cfg->max_conns_per_ip) < 0) {
		r->h->host->metrics->conns_refused_address++;
		log_refusal(r->h, &r->client, "request refused (429), client at its cap");
		return -EBUSY;
	}
	r->client_counted = 1;
	return 0;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	log_warn("http", "libmicrohttpd: %s", line);
}

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
static void *uri_log(void *cls, const char *uri, struct MHD_Connection *c)
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
static void completed(void *cls, struct MHD_Connection *c, void **req_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct http_req *r = *req_cls;
	struct http_sock *s = sock_of(c);

	if (!r)
		return;
	if (r->client_counted)
		peer_table_give(r->h->peers, &r->client);
	if (s && !r->upgraded && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		head_arm(s);
	req_free(r);
	*req_cls = NULL;
}

/* MHD closes the sockets it handed out (its copies of the fds: conn.c
   has its own) once the run that upgraded them is over; closing one
   from inside its own upgrade callback is not something MHD allows. */
static void let_go(struct http *h)
{
	for (size_t i = 0; i < h->n_handed; i++)
		MHD_upgrade_action(h->handed[i], MHD_UPGRADE_ACTION_CLOSE);
	h->n_handed = 0;
}

/* A plain socket leaves MHD: conn.c gets a duplicate of the fd and the
   address count the connection was admitted under (the socket's own, or
   behind a trusted proxy its client's), and MHD closes its fd. Returns
   the duplicate, or -1 (then MHD keeps the socket, as over TLS). */
static int hand_out(struct http_req *r, MHD_socket sock,
		    struct MHD_UpgradeResponseHandle *urh, struct http_hold *hold)
{
	struct http *h = r->h;
	struct http_sock *s = sock_of(r->c);
	int fd;

	if (h->has_tls || !s)
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
	h->kick = 1;
	if (s->counted) {
		hold->peer = s->peer;
		hold->counted = 1;
		s->counted = 0;
	} else if (r->client_counted) {
		hold->peer = r->client;
		hold->counted = 1;
		r->client_counted = 0;
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
		h->kick = 1; /* MHD closes it on its next run */
	} else if (fd >= 0) {
		close(fd);
		h->n_out--;
	}
	if (hold->counted)
		peer_table_give(h->peers, &hold->peer);
	hold->counted = 0;
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
	r->rq->slot_held = 0;
	r->upgraded = 1;
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
	r->upgraded = 1;
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
	   resources can still refuse the upgrade (SPEC 1: 503, JSON body). */
	r->rq->attach.requested_us = r->start_us;
	r->conn = conn_new(r->h->host->conn, &r->rq->attach);
	if (!r->conn) {
		r->h->host->metrics->upgrades_refused++;
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

static struct MHD_Response *route_body(struct route_req *rq)
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
	metrics_count_refusal(r->h->host->metrics, rq->status);
	metrics_observe(&r->h->host->metrics->http_latency[rq->m.id % METRICS_ROUTES],
			time_mono_us() - r->start_us);
	if (rq->status == 101)
		return routes_relayed(rq) ? queue_relayed(r) : queue_upgrade(r);
	resp = route_body(rq);
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
	rq->gateway = r->h->host->routes;
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
	r->handled = 1;
	if (routes_handle(rq) == 1) {
		r->suspended = 1;
		MHD_suspend_connection(r->c);
	}
}

/* The request is whole: its deadline is met, and behind a trusted proxy
   its client is counted. Returns 0, or -EBUSY with a 429 to answer. */
static int whole(struct http_req *r, const char *method)
{
	struct http_sock *s = sock_of(r->c);

	if (s)
		head_disarm(s);
	if (count_client(r, s, method) == 0)
		return 0;
	r->handled = 1;
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
	r->suspended = 0;
	MHD_resume_connection(r->c);
	r->h->kick = 1;
}

/* A connection the accept policy refused: its request is answered with
   the refusal, whatever it asked, and the connection closes after it. */
static enum MHD_Result answer_refusal(struct http_req *r, unsigned status)
{
	r->handled = 1;
	r->close_after = 1;
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

	r->started = 1;
	r->start_us = time_mono_us();
	r->rq->done = done;
	r->h->host->metrics->http_requests++;
	if (s && s->refuse)
		return answer_refusal(r, s->refuse);
	return cl ? check_length(r, cl) : MHD_YES;
}

static enum MHD_Result upload(struct http_req *r, const char *data, size_t *n)
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
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

/* Resolves host (a numeric address or a name) for binding exactly it. */
static int resolve(const char *host, uint16_t port, struct sockaddr_storage *ss,
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

/* The listening socket is ours, not MHD's: SO_REUSEADDR only (a restart
   binds at once over TIME_WAIT), never SO_REUSEPORT, so a second gateway
   on a busy port fails its start instead of silently sharing the port
   with the first (the kernel would split connections between them). */
static int listen_socket(const struct sockaddr_storage *ss, char *err, size_t errlen)
{
	socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						  : sizeof(struct sockaddr_in);
	int fd, one = 1, e;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (ss->ss_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    bind(fd, (const struct sockaddr *)ss, len) < 0 ||
	    listen(fd, HTTP__BACKLOG) < 0) {
		e = errno;
		snprintf(err, errlen, "%s%s", strerror(e),
			 e == EADDRINUSE ? " (is another gateway running?)" : "");
		close(fd);
		return -1;
	}
	return fd;
}

static uint16_t bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;
	return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					      : ((struct sockaddr_in *)&ss)->sin_port);
}

static struct MHD_Daemon *start(struct http *h, int lfd)
{
	const struct gw_config *cfg = h->host->cfg;
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE |
			 MHD_USE_ERROR_LOG;
	/* Past our own limit (over_limit), room for the refusals being
	   answered and the evicted sockets not yet closed. */
	unsigned limit =
	    cfg->max_conns + HTTP__EXTRA_CONNS + HTTP__REFUSALS_MAX + HTTP__EVICTING_MAX;
	struct MHD_OptionItem o[16];
	size_t n = 0;

#define HTTP__OPT(opt, v, p) (o[n++] = (struct MHD_OptionItem){(opt), (intptr_t)(v), (p)})
	HTTP__OPT(MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, h);
	HTTP__OPT(MHD_OPTION_LISTEN_SOCKET, lfd, NULL);
	HTTP__OPT(MHD_OPTION_CONNECTION_LIMIT, limit, NULL);
	/* MHD's own per-IP limit cannot spare a trusted proxy: on_accept
	   and notify_conn count addresses instead. */
	HTTP__OPT(MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify_conn, h);
	HTTP__OPT(MHD_OPTION_CONNECTION_TIMEOUT, HTTP__TIMEOUT_S, NULL);
	HTTP__OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP__MEMORY_LIMIT, NULL);
	HTTP__OPT(MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)uri_log, h);
	HTTP__OPT(MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, h);
	if (h->has_tls) {
		flags |= MHD_USE_TLS;
		HTTP__OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls.cert_pem);
		HTTP__OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls.key_pem);
	}
	HTTP__OPT(MHD_OPTION_END, 0, NULL);
#undef HTTP__OPT
	return MHD_start_daemon(flags, 0, on_accept, h, on_request, h, MHD_OPTION_ARRAY,
				o, MHD_OPTION_END);
}

/* Plain HTTP carries bearer tokens in the clear: only on loopback,
   unless the operator says a TLS-terminating proxy is in front. */
static int loopback(const struct sockaddr_storage *ss)
{
	struct peer_addr a;
	struct peer_cidr lo4, lo6;

	if (peer_addr_from_sockaddr((const struct sockaddr *)ss, &a) < 0)
		return 0;
	peer_cidr_parse("127.0.0.0/8", &lo4);
	peer_cidr_parse("::1/128", &lo6);
	return peer_cidr_contains(&lo4, &a) || peer_cidr_contains(&lo6, &a);
}

static int tls_setup(struct http *h, const struct sockaddr_storage *ss, char *err,
		     size_t errlen)
{
	const struct gw_config *cfg = h->host->cfg;

	if (h->role != ROUTE_PUBLIC)
		return 0;
	if (!cfg->tls_cert[0]) {
		if (cfg->allow_plaintext || loopback(ss))
			return 0;
		snprintf(err, errlen,
			 "plain HTTP and ws:// off loopback would carry tokens in the "
			 "clear: give --tls-cert and --tls-key, or --allow-plaintext "
			 "behind a TLS-terminating proxy");
		return -EINVAL;
	}
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		snprintf(err, errlen, "this libmicrohttpd is built without TLS");
		return -ENOTSUP;
	}
	if (tls_store_init(&h->tls, cfg->tls_cert, cfg->tls_key, err, errlen) < 0)
		return -EINVAL;
	h->has_tls = 1;
	return 0;
}

struct http *http_new(const struct http_host *hh, const char *host, uint16_t port,
		      enum route_listener role, char *err, size_t errlen)
{
	struct http *h = xcalloc(1, sizeof(*h));
	const union MHD_DaemonInfo *info;
	struct sockaddr_storage ss;
	int lfd;

	h->host = hh;
	h->role = role;
	h->peers = peer_table_new();
	h->head_timer = ev_timer_new(hh->loop, -1, 0, head_expired, h);
	h->timer = ev_timer_new(hh->loop, -1, 0, on_timer, h);
	if (resolve(host, port, &ss, err, errlen) < 0)
		goto out_free;
	if (tls_setup(h, &ss, err, errlen) < 0)
		goto out_free;
	lfd = listen_socket(&ss, err, errlen);
	if (lfd < 0)
		goto out_free;
	h->port = bound_port(lfd);
	h->d = start(h, lfd);
	if (!h->d) {
		close(lfd);
		snprintf(err, errlen, "libmicrohttpd did not start (see the log)");
		goto out_free;
	}
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
	h->io = info ? ev_io_new(hh->loop, info->epoll_fd, EV_READ, on_io, h) : NULL;
	if (!h->io) {
		snprintf(err, errlen, "cannot watch libmicrohttpd's epoll fd");
		goto out_free;
	}
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
		MHD_stop_daemon(h->d); /* its close notices use what follows */
	ev_timer_free(h->head_timer);
	peer_table_free(h->peers);
	free(h->handed);
	if (h->has_tls)
		tls_store_clear(&h->tls);
	free(h);
}

void http_reload(struct http *h)
{
	char err[512];

	if (!h || !h->has_tls)
		return;
	if (tls_store_reload(&h->tls, err, sizeof(err)) < 0)
		log_error("http", "SIGHUP: keeping the current certificate: %s", err);
	else
		log_info("http", "SIGHUP: certificate and key re-read from %s and %s",
			 h->tls.cert_file, h->tls.key_file);
}

uint16_t http_port(const struct http *h)
{
	return h->port;
}
