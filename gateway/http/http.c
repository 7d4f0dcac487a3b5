/* http: libmicrohttpd in external epoll mode on the gateway's one loop.
   MHD's epoll fd is watched with an ev_io, its timeouts with an ev_timer
   re-armed from MHD_get_timeout after every MHD_run, and the gateway's
   before-poll hook runs MHD once more when something outside it changed
   a connection (http_run_pending), so no answer waits for the next
   packet. This file runs MHD and makes the listeners; who is let in is
   http_admit.c's, and each request, its answer and the socket handover
   to conn.c are http_request.c's. Policy lives in routes.c.

   An upgraded socket leaves MHD right after the run that upgraded it
   (conn.c owns a duplicate of its fd, checked on Debian's MHD 0.9.75:
   it takes the socket out of its epoll set before the upgrade callback
   and closes its fd without a shutdown). With TLS, MHD's socket is the
   plain end of a pair behind the gateway's own TLS (tlsfront.h), so the
   same holds: MHD's TLS is not used. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "config.h"
#include "ev.h"
#include "http_int.h"
#include "log.h"
#include "peers.h"
#include "timeutil.h"
#include "tls.h"
#include "tlsfront.h"
#include "xalloc.h"

/* MHD closes the sockets it handed out (its copies of the fds: conn.c
   has its own) once the run that upgraded them is over; closing one
   from inside its own upgrade callback is not something MHD allows. */
static void let_go(struct http *h)
{
	for (size_t i = 0; i < h->n_handed; i++)
		MHD_upgrade_action(h->handed[i], MHD_UPGRADE_ACTION_CLOSE);
	h->n_handed = 0;
}

/* Runs MHD, then arms the timer for MHD's next timeout; the timerfd is
   only re-armed when the deadline moves earlier, since a timer firing
   early costs one idle MHD_run. */
static void run(struct http *h)
{
	MHD_UNSIGNED_LONG_LONG t;
	int64_t deadline;

	h->kick = false;
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

/* With TLS, MHD's sockets are the front's unix socket pairs
   (tlsfront.h): the TCP options it sets around every answer fail there,
   harmlessly (the front sets its own on the client's socket). Nothing
   can tell MHD beforehand: MHD_add_connection takes a socket's kind as
   unknown whatever address it is given, and the address must be the
   client's (the per-address caps and the logs). So the lines go here. */
static bool tcp_option_noise(const char *line)
{
	static const char *const noise[] = {
	    "Setting TCP_NODELAY option",
	    "Setting TCP_CORK option",
	    "Failed to push the data from buffers to the network",
	};

	for (size_t i = 0; i < sizeof(noise) / sizeof(noise[0]); i++)
		if (strncmp(line, noise[i], strlen(noise[i])) == 0)
			return true;
	return false;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	const struct http *h = cls;
	char line[512];
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	if (h->has_tls && tcp_option_noise(line))
		return;
	n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	log_warn("http", "libmicrohttpd: %s", line);
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

/* With TLS, MHD listens on nothing: the TLS front accepts, runs the
   accept policy itself (http__admit_tls) and adds the plain end. */
static struct MHD_Daemon *start(struct http *h, int lfd)
{
	const struct gw_config *cfg = h->cfg;
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
	if (h->has_tls)
		flags |= MHD_USE_NO_LISTEN_SOCKET;
	else
		HTTP__OPT(MHD_OPTION_LISTEN_SOCKET, lfd, NULL);
	HTTP__OPT(MHD_OPTION_CONNECTION_LIMIT, limit, NULL);
	/* MHD's own per-IP limit cannot spare a trusted proxy: on_accept
	   and notify_conn count addresses instead. */
	HTTP__OPT(MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)http__notify_conn, h);
	HTTP__OPT(MHD_OPTION_CONNECTION_TIMEOUT, HTTP__TIMEOUT_S, NULL);
	HTTP__OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP__MEMORY_LIMIT, NULL);
	HTTP__OPT(MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)http__uri_log, h);
	HTTP__OPT(MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)http__completed, h);
	HTTP__OPT(MHD_OPTION_END, 0, NULL);
#undef HTTP__OPT
	return MHD_start_daemon(flags, 0, h->has_tls ? NULL : http__on_accept, h,
				http__on_request, h, MHD_OPTION_ARRAY, o, MHD_OPTION_END);
}

/* The TLS front takes the listening socket; MHD gets its clients. */
static int front_start(struct http *h, struct ev_loop *loop, int lfd, char *err,
		       size_t errlen)
{
	struct tlsfront_host fh = {
	    .loop = loop,
	    .tls = &h->tls,
	    .metrics = h->metrics,
	    .what = h->role == ROUTE_FLEET ? "--fleet-listen" : "--listen",
	    .admit = http__admit_tls,
	    .user = h,
	};

	h->front = tlsfront_new(&fh, lfd);
	if (h->front)
		return 0;
	snprintf(err, errlen, "cannot watch the TLS listener: %s", strerror(errno));
	return -1;
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
	const struct gw_config *cfg = h->cfg;
	int fleet = h->role == ROUTE_FLEET;

	if (h->role == ROUTE_ADMIN)
		return 0;
	if (!fleet && !cfg->tls_cert[0]) {
		if (cfg->allow_plaintext || loopback(ss))
			return 0;
		snprintf(err, errlen,
			 "plain HTTP and ws:// off loopback would carry tokens in the "
			 "clear: give --tls-cert and --tls-key, or --allow-plaintext "
			 "behind a TLS-terminating proxy");
		return -EINVAL;
	}
	if (fleet ? tls_store_init(&h->tls, cfg->fleet_cert, cfg->fleet_key,
				   cfg->fleet_cacert, err, errlen) < 0
		  : tls_store_init(&h->tls, cfg->tls_cert, cfg->tls_key, NULL, err,
				   errlen) < 0)
		return -EINVAL;
	h->has_tls = true;
	return 0;
}

struct http *http_new(const struct http_host *hh, const char *host, uint16_t port,
		      enum route_listener role, char *err, size_t errlen)
{
	struct http *h = xcalloc(1, sizeof(*h));
	const union MHD_DaemonInfo *info;
	struct sockaddr_storage ss;
	int lfd;

	TAILQ_INIT(&h->heads);
	h->cfg = hh->cfg;
	h->metrics = hh->metrics;
	h->conn_host = hh->conn;
	h->routes_host = hh->routes;
	h->role = role;
	h->peers = peer_table_new();
	h->head_timer = ev_timer_new(hh->loop, -1, 0, http__head_expired, h);
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
	if (h->has_tls && front_start(h, hh->loop, lfd, err, errlen) < 0)
		goto out_free; /* the front closed lfd */
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
	h->io = info ? ev_io_new(hh->loop, info->epoll_fd, EV_READ, on_io, h) : NULL;
	if (!h->io) {
		snprintf(err, errlen, "cannot watch libmicrohttpd's epoll fd");
		goto out_free;
	}
	h->kick = true;
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
	tlsfront_free(h->front); /* the clients' sockets and our pair ends */
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
	char err[LOG_ERR_MAX];

	if (!h || !h->has_tls)
		return;
	if (tls_store_reload(&h->tls, err, sizeof(err)) < 0)
		log_error("http", "SIGHUP: keeping the current %s: %s",
			  h->tls.ca_file[0] ? "fleet certificate and CA" : "certificate",
			  err);
	else
		log_info("http", "SIGHUP: certificate and key re-read from %s and %s%s%s",
			 h->tls.cert_file, h->tls.key_file,
			 h->tls.ca_file[0] ? ", client CA from " : "", h->tls.ca_file);
}

uint16_t http_port(const struct http *h)
{
	return h->port;
}
