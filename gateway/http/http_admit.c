/* http_admit: who gets in, and for how long. The accept policy at the
   limits (on_accept: 429 past an address's cap, eviction of the oldest
   head at the gateway's, 503 when full), the count of each accepted
   socket's address, or of its client behind a trusted proxy, and the
   deadline by which a request head must be whole. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "config.h"
#include "ev.h"
#include "http_int.h"
#include "log.h"
#include "metrics.h"
#include "num.h"
#include "peers.h"
#include "timeutil.h"
#include "xalloc.h"

/* ---- the request deadline ----
   MHD's timeout counts only inactivity, so a client sending one byte a
   second would hold its connection forever. Every connection waiting
   for a request is on h->heads with a deadline; all deadlines are now
   plus the same timeout, so appending keeps the list sorted and one
   timer for its front suffices. */

static void head_timer_update(struct http *h)
{
	struct http_sock *first = TAILQ_FIRST(&h->heads);
	int64_t now;

	if (!first || (h->head_timer_at && h->head_timer_at <= first->deadline))
		return;
	now = time_mono_ms();
	h->head_timer_at = first->deadline;
	ev_timer_arm(h->head_timer, first->deadline > now ? first->deadline - now : 1, 0);
}

void http__head_disarm(struct http_sock *s)
{
	struct http *h = s->h;

	if (!s->deadline)
		return;
	TAILQ_REMOVE(&h->heads, s, head_entry);
	s->deadline = 0;
}

void http__head_arm(struct http_sock *s)
{
	struct http *h = s->h;

	http__head_disarm(s);
	s->deadline = time_mono_ms() + (int64_t)h->cfg->request_head_timeout_s * 1000;
	TAILQ_INSERT_TAIL(&h->heads, s, head_entry);
	head_timer_update(h);
}

/* Cuts every connection past its deadline: a shutdown makes MHD read
   end-of-file and close it on its next run (MHD has no call to close a
   connection it holds). */
void http__head_expired(struct ev_timer *t, void *user)
{
	struct http *h = user;
	int64_t now = time_mono_ms();
	struct http_sock *s;

	h->head_timer_at = 0;
	while ((s = TAILQ_FIRST(&h->heads)) && s->deadline <= now) {
		char a[64];

		peer_addr_str(&s->peer, a, sizeof(a));
		log_debug("http", "%s: no whole request in %u s, closing", a,
			  h->cfg->request_head_timeout_s);
		shutdown(s->fd, SHUT_RDWR);
		http__head_disarm(s);
		h->kick = true;
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
		 h->cfg->max_conns, h->cfg->max_conns_per_ip);
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
	return held >= (uint64_t)h->cfg->max_conns + HTTP__EXTRA_CONNS;
}

/* What an evicted connection is told, written straight to its socket:
   MHD has written nothing on a connection still waiting for its request
   head. Over TLS the socket is the front's pair: a client still in its
   handshake is only closed (tlsfront.h). */
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
	struct http_sock *s = TAILQ_FIRST(&h->heads);

	if (h->n_evicting >= HTTP__EVICTING_MAX)
		return false;
	while (s && s->refuse) /* at most HTTP__REFUSALS_MAX of them */
		s = TAILQ_NEXT(s, head_entry);
	if (!s)
		return false;
	tell_evicted(s->fd);
	/* MHD reads end-of-file and closes it on its next run. */
	shutdown(s->fd, SHUT_RDWR);
	http__head_disarm(s);
	s->evicted = true;
	h->n_evicting++;
	h->kick = true;
	h->metrics->heads_evicted++;
	log_refusal(h, &s->peer, "connection evicted at the limit: no request head yet");
	return true;
}

/* The connection from a is accepted to be answered status and closed,
   while fewer than HTTP__REFUSALS_MAX are; otherwise it is closed at
   once, unanswered. */
static enum MHD_Result refuse_conn(struct http *h, const struct peer_addr *a,
				   unsigned status)
{
	struct metrics *m = h->metrics;

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
enum MHD_Result http__on_accept(void *cls, const struct sockaddr *sa, socklen_t len)
{
	struct http *h = cls;
	const struct gw_config *cfg = h->cfg;
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

/* MHD runs the policy on the clients of its own listener; the TLS
   front's clients it is given (MHD_add_connection, which runs none). */
int http__admit_tls(void *user, int plain_fd, const struct sockaddr *sa, socklen_t len)
{
	struct http *h = user;

	if (http__on_accept(h, sa, len) != MHD_YES) {
		close(plain_fd);
		return -1;
	}
	/* sock_start takes the verdict from inside this call. */
	if (MHD_add_connection(h->d, plain_fd, sa, len) != MHD_YES) {
		h->verdict = 0;
		h->metrics->conns_dropped++;
		return -1; /* MHD closed plain_fd */
	}
	h->kick = true;
	return 0;
}

static void sock_start(struct http *h, struct MHD_Connection *c, void **ctx)
{
	const struct gw_config *cfg = h->cfg;
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
	http__head_arm(s);
	*ctx = s;
}

static void sock_closed(struct http_sock *s)
{
	s->h->n_refusing -= s->refuse ? 1 : 0;
	s->h->n_evicting -= s->evicted ? 1 : 0;
	if (s->counted)
		peer_table_give(s->h->peers, &s->peer);
	http__head_disarm(s);
	free(s);
}

void http__notify_conn(void *cls, struct MHD_Connection *c, void **ctx,
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
int http__count_client(struct http_req *r, struct http_sock *s, const char *method)
{
	const struct gw_config *cfg = r->h->cfg;
	/* With --fleet-listen, only its authenticated peers forward. */
	int fleet_door = r->h->role == ROUTE_FLEET || !cfg->fleet_listen_host[0];
	const char *xff;

	r->fleet = s && fleet_door &&
		   httpfleet_forwarded(r->h->routes_host->fleet, r->c, method, r->target,
				       &r->client);
	if (!s || (!s->trusted && !r->fleet))
		return 0;
	if (r->fleet && s->counted) {
		peer_table_give(r->h->peers, &s->peer);
		s->counted = false;
	}
	xff = MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, "X-Forwarded-For");
	if (!r->fleet)
		peer_client(cfg->trusted_proxies, cfg->n_trusted_proxies, &s->peer, xff,
			    &r->client);
	if (peer_table_take(r->h->peers, &r->client, cfg->max_conns_per_ip) < 0) {
		r->h->metrics->conns_refused_address++;
		log_refusal(r->h, &r->client, "request refused (429), client at its cap");
		return -EBUSY;
	}
	r->client_counted = true;
	return 0;
}
