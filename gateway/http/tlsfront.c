/* tlsfront: see tlsfront.h. */
#include "tlsfront.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>

#include "addr.h"
#include "ev.h"
#include "list.h"
#include "log.h"
#include "metrics.h"
#include "peers.h"
#include "timeutil.h"
#include "tls.h"
#include "xalloc.h"

#define TLSFRONT__RECORD       (16 * 1024)  /* a TLS record's largest payload */
#define TLSFRONT__NOTSENT      (128 * 1024) /* unsent bytes in the kernel, as conn.c's */
#define TLSFRONT__ACCEPT_BURST 64	    /* accepts per wake, then other work */
#define TLSFRONT__REST_MS      100 /* the listener rests when out of descriptors */
#define TLSFRONT__RETRIES      16  /* non-fatal handshake errors in a row */

/* Bytes one side has not taken yet: on the heap only while there are. */
struct pending {
	uint8_t *p;
	size_t off, len;
};

struct tlsfront_conn {
	struct tlsfront *f;
	int tcp;  /* the client's socket */
	int pair; /* our end of the pair; MHD (then conn.c) has the other */
	gnutls_session_t s;
	struct tls_cred *cred; /* what s uses, held until s goes */
	struct ev_io *tcp_io, *pair_io;
	struct ev_timer *linger;      /* armed once a side has ended */
	struct pending toward_pair;   /* decrypted, refused by the pair */
	struct pending toward_client; /* from the pair, refused by the socket */
	bool open;		      /* the handshake is done */
	bool record_held;	      /* GnuTLS holds a record the socket refused */
	bool client_done;	      /* nothing more goes into the pair */
	bool pair_done;		      /* nothing more comes out of it */
	char peer[64];
	LIST_ENTRY(tlsfront_conn) entry;
};

struct tlsfront {
	struct tlsfront_host host;
	int lfd;
	struct ev_io *io;
	struct ev_timer *rest;
	int64_t rest_logged_ms;
	LIST_HEAD(, tlsfront_conn) conns;
};

/* One loop, one relay step at a time: a record in flight is read here. */
static uint8_t scratch[TLSFRONT__RECORD];

static void pending_keep(struct pending *q, const uint8_t *p, size_t n)
{
	q->p = xmalloc(n);
	memcpy(q->p, p, n);
	q->off = 0;
	q->len = n;
}

static void pending_drop(struct pending *q)
{
	free(q->p);
	q->p = NULL;
	q->off = q->len = 0;
}

static void conn_close(struct tlsfront_conn *c)
{
	LIST_REMOVE(c, entry);
	ev_io_free(c->tcp_io);
	ev_io_free(c->pair_io);
	ev_timer_free(c->linger);
	if (c->s)
		gnutls_deinit(c->s);
	tls_cred_unref(c->cred);
	close(c->tcp);
	close(c->pair);
	pending_drop(&c->toward_pair);
	pending_drop(&c->toward_client);
	free(c);
}

static void on_linger(struct ev_timer *t, void *user)
{
	struct tlsfront_conn *c = user;

	log_debug("http", "%s: closing a TLS connection %d ms after one side ended",
		  c->peer, TLSFRONT_LINGER_MS);
	conn_close(c);
}

/* What one side ended leaves the other is written within the linger. */
static void start_linger(struct tlsfront_conn *c)
{
	if (!c->linger)
		c->linger =
		    ev_timer_new(c->f->host.loop, TLSFRONT_LINGER_MS, 0, on_linger, c);
}

/* ---- client to pair ---- */

static bool would_block(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* The pair takes no more: MHD or conn.c closed their end (what they
   wrote before is still read out of ours), or the client ended. */
static void stop_toward_pair(struct tlsfront_conn *c)
{
	c->client_done = true;
	pending_drop(&c->toward_pair);
	shutdown(c->pair, SHUT_WR);
	start_linger(c);
}

/* What the pair took of p[0, n): 0 when it is full; a pair that takes
   nothing more ends the way toward it. */
static size_t pair_take(struct tlsfront_conn *c, const uint8_t *p, size_t n)
{
	ssize_t w = send(c->pair, p, n, MSG_NOSIGNAL);

	if (w >= 0)
		return (size_t)w;
	if (!would_block())
		stop_toward_pair(c);
	return 0;
}

static void into_pair(struct tlsfront_conn *c, const uint8_t *p, size_t n)
{
	size_t w = pair_take(c, p, n);

	if (w < n && !c->client_done)
		pending_keep(&c->toward_pair, p + w, n - w);
}

static void flush_toward_pair(struct tlsfront_conn *c)
{
	struct pending *q = &c->toward_pair;

	if (!q->p)
		return;
	q->off += pair_take(c, q->p + q->off, q->len - q->off);
	if (q->p && q->off == q->len)
		pending_drop(q);
}

/* Records from the client while the pair takes them. Bounded by the
   pair's buffer: MHD and conn.c read it only after this returns. Returns
   0, or -1 on a TLS error (the connection ends). */
static int from_client(struct tlsfront_conn *c)
{
	ssize_t n;

	flush_toward_pair(c);
	while (!c->client_done && !c->toward_pair.p) {
		n = gnutls_record_recv(c->s, scratch, sizeof(scratch));
		if (n > 0) {
			into_pair(c, scratch, (size_t)n);
		} else if (n == 0 || n == GNUTLS_E_PREMATURE_TERMINATION) {
			stop_toward_pair(c); /* close_notify, or only a FIN */
		} else if (n == GNUTLS_E_AGAIN) {
			break;
		} else if (n != GNUTLS_E_INTERRUPTED &&
			   n != GNUTLS_E_WARNING_ALERT_RECEIVED) {
			log_debug("http", "%s: TLS: %s", c->peer,
				  gnutls_strerror((int)n));
			return -1;
		}
	}
	return 0;
}

/* ---- pair to client ---- */

/* Sends p[0, n) in records; what the socket refuses is kept, GnuTLS
   holding the record it had begun (its bytes lead what is kept). */
static int to_client(struct tlsfront_conn *c, const uint8_t *p, size_t n)
{
	size_t off = 0;
	ssize_t w;

	while (off < n) {
		w = gnutls_record_send(c->s, p + off, n - off);
		if (w > 0) {
			off += (size_t)w;
		} else if (w == GNUTLS_E_AGAIN) {
			c->record_held = true;
			pending_keep(&c->toward_client, p + off, n - off);
			return 0;
		} else if (w != GNUTLS_E_INTERRUPTED) {
			return -1;
		}
	}
	return 0;
}

/* The held record first (GnuTLS finishes it when called with nothing
   new, and counts its bytes), then the rest of what was kept. */
static int flush_toward_client(struct tlsfront_conn *c)
{
	struct pending *q = &c->toward_client;
	ssize_t w;

	while (q->p) {
		w = c->record_held
			? gnutls_record_send(c->s, NULL, 0)
			: gnutls_record_send(c->s, q->p + q->off, q->len - q->off);
		if (w == GNUTLS_E_AGAIN) {
			c->record_held = true;
			return 0;
		}
		if (w == GNUTLS_E_INTERRUPTED)
			continue;
		if (w < 0)
			return -1;
		c->record_held = false;
		q->off += (size_t)w;
		if (q->off >= q->len)
			pending_drop(q);
	}
	return 0;
}

/* What MHD or conn.c wrote, while the client's socket takes it. Bounded
   by the pair's buffer, as from_client. Returns 0, or -1 on a TLS
   error. */
static int from_pair(struct tlsfront_conn *c)
{
	ssize_t n;

	if (flush_toward_client(c) < 0)
		return -1;
	while (!c->pair_done && !c->toward_client.p) {
		n = recv(c->pair, scratch, sizeof(scratch), 0);
		if (n > 0) {
			if (to_client(c, scratch, (size_t)n) < 0)
				return -1;
			/* A short read drained the pair: no read only to meet
			   EAGAIN (the poll is level-triggered). */
			if ((size_t)n < sizeof(scratch))
				break;
		} else if (n == 0 || !would_block()) {
			c->pair_done = true;
			start_linger(c);
		} else if (errno != EINTR) {
			break;
		}
	}
	return 0;
}

/* ---- the connection ---- */

static void watch(struct tlsfront_conn *c)
{
	unsigned tcp = 0, pair = 0;

	if (!c->client_done && !c->toward_pair.p)
		tcp |= EV_READ;
	if (c->record_held)
		tcp |= EV_WRITE;
	if (!c->pair_done && !c->toward_client.p)
		pair |= EV_READ;
	if (c->toward_pair.p)
		pair |= EV_WRITE;
	ev_io_set(c->tcp_io, tcp);
	ev_io_set(c->pair_io, pair);
}

/* The ways an event moves bytes. */
enum { TOWARD_PAIR = 1, TOWARD_CLIENT = 2 };

/* Each way the event opened, as far as it goes now: a side that did not
   wake is not read (the read would only meet EAGAIN, a system call more
   per keystroke). Once the pair has ended and its last bytes are
   written, the client is told (close_notify) and the connection ends. */
static void relay(struct tlsfront_conn *c, unsigned ways)
{
	if (((ways & TOWARD_CLIENT) && from_pair(c) < 0) ||
	    ((ways & TOWARD_PAIR) && from_client(c) < 0)) {
		conn_close(c);
		return;
	}
	if (c->pair_done && !c->toward_client.p) {
		gnutls_bye(c->s, GNUTLS_SHUT_WR); /* best effort: no waiting */
		conn_close(c);
		return;
	}
	watch(c);
}

static void handshake(struct tlsfront_conn *c)
{
	int rc, tries = 0;

	do
		rc = gnutls_handshake(c->s);
	while (rc < 0 && rc != GNUTLS_E_AGAIN && !gnutls_error_is_fatal(rc) &&
	       ++tries < TLSFRONT__RETRIES);
	if (rc == GNUTLS_E_SUCCESS) {
		c->open = true;
		/* the request may have come with the last flight */
		relay(c, TOWARD_PAIR | TOWARD_CLIENT);
		return;
	}
	if (rc == GNUTLS_E_AGAIN) {
		ev_io_set(c->tcp_io,
			  gnutls_record_get_direction(c->s) ? EV_WRITE : EV_READ);
		return;
	}
	c->f->host.metrics->tls_handshakes_failed++;
	log_debug("http", "%s: %s: TLS handshake failed: %s", c->peer, c->f->host.what,
		  gnutls_strerror(rc));
	conn_close(c);
}

static void on_tcp(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct tlsfront_conn *c = user;

	if (c->open)
		relay(c, (events & EV_READ ? TOWARD_PAIR : 0) |
			     (events & EV_WRITE ? TOWARD_CLIENT : 0));
	else
		handshake(c);
}

/* Before the handshake is done MHD has nothing to write: its end turning
   readable means it closed it (the head deadline, or an eviction). */
static void on_pair(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct tlsfront_conn *c = user;

	if (c->open)
		relay(c, (events & EV_READ ? TOWARD_CLIENT : 0) |
			     (events & EV_WRITE ? TOWARD_PAIR : 0));
	else
		conn_close(c);
}

/* The fleet listener's check, once the client's certificate (or its
   absence) is known: nonzero fails the handshake with an alert. */
static int verify_client(gnutls_session_t s)
{
	struct tlsfront_conn *c = gnutls_session_get_ptr(s);
	char why[LOG_ERR_MAX];

	if (tls_client_check(s, why, sizeof(why)) == 0)
		return 0;
	c->f->host.metrics->fleet_tls_refused++;
	log_warn("http", "%s: %s handshake refused: %s", c->peer, c->f->host.what, why);
	return -1;
}

/* The session takes the credentials loaded last (SIGHUP) and holds them
   until it ends (tls.h). */
static int session_new(struct tlsfront_conn *c)
{
	struct tls_store *t = c->f->host.tls;
	int rc;

	rc = gnutls_init(&c->s, GNUTLS_SERVER | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL);
	if (rc < 0) {
		c->s = NULL;
		return rc;
	}
	c->cred = tls_cred_ref(t->current);
	rc = gnutls_set_default_priority(c->s);
	if (rc == 0)
		rc = gnutls_credentials_set(c->s, GNUTLS_CRD_CERTIFICATE, c->cred->x509);
	if (rc < 0)
		return rc;
	if (t->ca_file[0]) {
		/* Asked, not required: a client without one reaches
		   verify_client, which logs and counts it. */
		gnutls_certificate_server_set_request(c->s, GNUTLS_CERT_REQUEST);
		gnutls_session_set_ptr(c->s, c);
		gnutls_session_set_verify_function(c->s, verify_client);
	}
	/* The request head's deadline bounds the handshake (tlsfront.h). */
	gnutls_handshake_set_timeout(c->s, 0);
	gnutls_transport_set_int(c->s, c->tcp);
	return 0;
}

static void peer_text(const struct sockaddr_storage *ss, char *out, size_t cap)
{
	struct peer_addr a;

	if (peer_addr_from_sockaddr((const struct sockaddr *)ss, &a) == 0)
		peer_addr_str(&a, out, cap);
	else
		snprintf(out, cap, "?");
}

static void conn_open(struct tlsfront *f, int tcp, const struct sockaddr_storage *ss,
		      socklen_t len)
{
	struct tlsfront_conn *c;
	int sv[2], rc;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
		log_warn("http", "%s: no socket pair for a TLS client: %s", f->host.what,
			 strerror(errno));
		close(tcp);
		return;
	}
	if (f->host.admit(f->host.user, sv[1], (const struct sockaddr *)ss, len) < 0) {
		close(sv[0]);
		close(tcp);
		return;
	}
	c = xcalloc(1, sizeof(*c));
	c->f = f;
	c->tcp = tcp;
	c->pair = sv[0];
	LIST_INSERT_HEAD(&f->conns, c, entry);
	peer_text(ss, c->peer, sizeof(c->peer));
	addr_tcp_whole_writes(tcp, TLSFRONT__NOTSENT);
	rc = session_new(c);
	c->tcp_io = ev_io_new(f->host.loop, tcp, EV_READ, on_tcp, c);
	c->pair_io = ev_io_new(f->host.loop, c->pair, EV_READ, on_pair, c);
	if (rc < 0 || !c->tcp_io || !c->pair_io) {
		log_warn("http", "%s: %s: cannot start TLS: %s", c->peer, f->host.what,
			 rc < 0 ? gnutls_strerror(rc) : strerror(errno));
		conn_close(c);
		return;
	}
	handshake(c);
}

/* ---- the listener ---- */

static void on_rested(struct ev_timer *t, void *user)
{
	struct tlsfront *f = user;

	ev_io_set(f->io, EV_READ);
}

/* Out of descriptors or memory the pending client stays queued, and a
   level-triggered listener would wake the loop at once: it rests. */
static void rest(struct tlsfront *f, int e)
{
	int64_t now = time_mono_ms();

	if (now - f->rest_logged_ms >= 1000) {
		f->rest_logged_ms = now;
		log_warn("http", "%s: cannot accept: %s (resting %d ms)", f->host.what,
			 strerror(e), TLSFRONT__REST_MS);
	}
	ev_io_set(f->io, 0);
	ev_timer_arm(f->rest, TLSFRONT__REST_MS, 0);
}

static void on_listen(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct tlsfront *f = user;
	struct sockaddr_storage ss;
	socklen_t len;
	int tcp;

	for (int i = 0; i < TLSFRONT__ACCEPT_BURST; i++) {
		len = sizeof(ss);
		tcp = accept4(fd, (struct sockaddr *)&ss, &len,
			      SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (tcp >= 0) {
			conn_open(f, tcp, &ss, len);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM)
			rest(f, errno);
		return;
	}
}

struct tlsfront *tlsfront_new(const struct tlsfront_host *host, int listen_fd)
{
	struct tlsfront *f = xcalloc(1, sizeof(*f));

	f->host = *host;
	f->lfd = listen_fd;
	LIST_INIT(&f->conns);
	f->rest = ev_timer_new(host->loop, -1, 0, on_rested, f);
	f->io = ev_io_new(host->loop, listen_fd, EV_READ, on_listen, f);
	if (!f->io) {
		int e = errno;

		tlsfront_free(f);
		errno = e;
		return NULL;
	}
	return f;
}

/* At the gateway's exit the loop has stopped: what was written into the
   pair last (the goodbyes conn.c flushes after the loop) goes out now if
   the client's socket takes it, then close_notify. */
static void last_words(struct tlsfront_conn *c)
{
	if (c->open && from_pair(c) == 0 && !c->toward_client.p)
		gnutls_bye(c->s, GNUTLS_SHUT_WR);
}

void tlsfront_free(struct tlsfront *f)
{
	struct tlsfront_conn *c, *next;

	if (!f)
		return;
	LIST_FOREACH_SAFE(c, &f->conns, entry, next) {
		last_words(c);
		conn_close(c);
	}
	ev_io_free(f->io);
	ev_timer_free(f->rest);
	close(f->lfd);
	free(f);
}
