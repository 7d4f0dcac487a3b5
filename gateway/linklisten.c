/* linklisten: see linklisten.h. Accepted links wait in a list, each with
   its opening buffer and a deadline timer, until their credential is
   verified (handed to gateway_register) or refused. A link whose opening
   is complete is not checked in the turn its bytes arrive: it joins a
   queue that a before-poll hook works through at most OPENINGS_PER_TURN
   (or OPENINGS_TURN_US) a turn, so a flood of connecting sidecars costs
   every other fd on the loop a bounded slice of each turn, not a
   thousand Ed25519 checks and registrations at once. */
#include "linklisten.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#include "addr.h"
#include "ev.h"
#include "gateway.h"
#include "link.h"
#include "linkcred.h"
#include "log.h"
#include "metrics.h"
#include "timeutil.h"
#include "xalloc.h"

/* Links one wake-up of a listener accepts: a flood of connecting peers
   yields to everything else on the loop between batches. */
#define ACCEPT_BATCH 32
/* How long a listener rests when the process is out of descriptors (it
   would otherwise be woken again at once, for ever). */
#define ACCEPT_PAUSE_MS 1000
/* Credentials checked (and links registered: a Hello, an upstream) in one
   loop turn, at most: an Ed25519 check is some 50-100 us, so a turn
   spends about half a millisecond on openings; the rest wait for the
   next turns, which do not block while any are queued. */
#define OPENINGS_PER_TURN 8
#define OPENINGS_TURN_US  1000

struct listener {
	struct linklisten *ll;
	int fd;
	struct ev_io *io;
	struct ev_timer *pause;
	char name[160];
};

struct pending_link {
	struct linklisten *ll;
	int fd;
	struct ev_io *io;
	struct ev_timer *deadline;
	char peer[160];
	size_t len;
	int queued; /* its opening complete, in the check queue */
	struct pending_link *prev, *next;
	struct pending_link *qprev, *qnext; /* the check queue, oldest first */
	uint8_t in[LINKLISTEN_OPENING_MAX];
};

struct linklisten {
	struct gateway *gw;
	struct listener *ls;
	size_t n_ls;
	struct pending_link *pending; /* awaiting their credential */
	size_t n_pending;
	struct pending_link *queue, *queue_tail; /* complete, to be checked */
};

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- the credential step ---- */

/* The cheap half of linklisten_opening, on the frame alone: 0 while more
   bytes are needed, 1 when one whole frame is there (its check is
   queued), -LINK_REFUSAL_GARBAGE for a length past the buffer or bytes
   after the frame. Whole frames only are decoded and checked. */
static int opening_framed(const uint8_t *in, size_t len)
{
	uint32_t body;

	if (len < 4)
		return 0;
	body =
	    (uint32_t)in[0] << 24 | (uint32_t)in[1] << 16 | (uint32_t)in[2] << 8 | in[3];
	if (body > LINKLISTEN_OPENING_MAX - 4 || len > 4 + (size_t)body)
		return -LINK_REFUSAL_GARBAGE;
	return len == 4 + (size_t)body;
}

int linklisten_opening(const struct keyset *ks, const uint8_t *in, size_t len,
		       int64_t now_s, struct linkcred *out)
{
	struct buf b = BUF_INIT;
	Ptg__LinkMessage *m = NULL;
	int rc = opening_framed(in, len);

	if (rc <= 0)
		return rc;
	buf_append(&b, in, len);
	rc = link_decode(&b, &m);
	buf_free(&b);
	if (rc != 1)
		return -LINK_REFUSAL_GARBAGE;
	if (m->msg_case != PTG__LINK_MESSAGE__MSG_LINK_CREDENTIAL) {
		link_message_free(m);
		return -LINK_REFUSAL_NO_CREDENTIAL;
	}
	{
		const char *tok =
		    m->link_credential->token ? m->link_credential->token : "";

		rc = linkcred_verify(ks, tok, strlen(tok), now_s, out);
	}
	link_message_free(m);
	return rc == LINKCRED_OK ? 1 : rc; /* linkcred's -err is its refusal */
}

/* ---- refusals ---- */

/* LinkRefused {reason}, written once without waiting (the peer may not
   read; the close follows whatever happens), then the close. */
static void refuse_fd(int fd, int reason)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__LinkRefused r = PTG__LINK_REFUSED__INIT;
	struct buf out = BUF_INIT;
	ssize_t n;

	r.reason = (char *)metrics_link_refusal_name(reason);
	m.msg_case = PTG__LINK_MESSAGE__MSG_LINK_REFUSED;
	m.link_refused = &r;
	link_encode(&m, &out);
	n = send(fd, buf_head(&out), buf_size(&out), MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)n;
	buf_free(&out);
	close(fd);
}

static void refuse(struct linklisten *ll, int fd, const char *peer, int reason)
{
	const char *why = reason < LINKCRED_N_REASONS ? linkcred_strerror(-reason) : NULL;

	ll->gw->metrics.link_refusals[reason]++;
	log_warn("link-listen", "link from %s refused: %s%s%s", peer,
		 metrics_link_refusal_name(reason), why ? ": " : "", why ? why : "");
	refuse_fd(fd, reason);
}

/* ---- links awaiting their credential ---- */

/* Takes pl out of the list and frees it; its fd is returned (-1 when
   closed). */
static int pending_end(struct pending_link *pl, int keep_fd)
{
	struct linklisten *ll = pl->ll;
	int fd = pl->fd;

	if (pl->prev)
		pl->prev->next = pl->next;
	else
		ll->pending = pl->next;
	if (pl->next)
		pl->next->prev = pl->prev;
	if (pl->queued) {
		if (pl->qprev)
			pl->qprev->qnext = pl->qnext;
		else
			ll->queue = pl->qnext;
		if (pl->qnext)
			pl->qnext->qprev = pl->qprev;
		else
			ll->queue_tail = pl->qprev;
	}
	ll->n_pending--;
	ll->gw->metrics.links_pending = ll->n_pending;
	ev_io_free(pl->io);
	ev_timer_free(pl->deadline);
	free(pl);
	if (keep_fd)
		return fd;
	close(fd);
	return -1;
}

static void pending_refuse(struct pending_link *pl, int reason)
{
	struct linklisten *ll = pl->ll;
	char peer[sizeof(pl->peer)];
	int fd;

	memcpy(peer, pl->peer, sizeof(peer));
	fd = pending_end(pl, 1);
	refuse(ll, fd, peer, reason);
}

/* A verified credential: the link goes to its instance. */
static void pending_accept(struct pending_link *pl, const struct linkcred *c)
{
	struct linklisten *ll = pl->ll;
	char peer[sizeof(pl->peer)];
	int refusal = 0, fd;

	memcpy(peer, pl->peer, sizeof(peer));
	fd = pending_end(pl, 1);
	if (gateway_register(ll->gw, c, fd, peer, &refusal) < 0) {
		refuse(ll, fd, peer, refusal);
		return;
	}
	log_info("link-listen", "link from %s: instance %s (kid '%s', expires in %lld s)",
		 peer, c->instance_id, c->kid,
		 (long long)(c->exp - time_now_ms() / 1000));
}

static void on_pending_deadline(struct ev_timer *t, void *user)
{
	pending_refuse(user, LINK_REFUSAL_TIMEOUT);
}

/* The complete opening is checked in a later turn's hook; its fd is not
   read meanwhile (nothing may follow the credential anyway). */
static void queue_check(struct pending_link *pl)
{
	struct linklisten *ll = pl->ll;

	ev_io_set(pl->io, 0);
	pl->queued = 1;
	pl->qprev = ll->queue_tail;
	pl->qnext = NULL;
	if (ll->queue_tail)
		ll->queue_tail->qnext = pl;
	else
		ll->queue = pl;
	ll->queue_tail = pl;
	ev_loop_again(ll->gw->loop);
}

/* One bounded read: the opening never holds more than its buffer. */
static void on_pending_read(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct pending_link *pl = user;
	ssize_t n = read(fd, pl->in + pl->len, sizeof(pl->in) - pl->len);
	int rc;

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		pending_refuse(pl, LINK_REFUSAL_CLOSED);
		return;
	}
	pl->len += (size_t)n;
	rc = opening_framed(pl->in, pl->len);
	if (rc == 1)
		queue_check(pl);
	else if (rc < 0)
		pending_refuse(pl, -rc);
	else if (pl->len == sizeof(pl->in))
		pending_refuse(pl, LINK_REFUSAL_GARBAGE);
}

/* The full decision on a queued opening: registered or refused. */
static void check_opening(struct pending_link *pl)
{
	struct linkcred c;
	int rc = linklisten_opening(pl->ll->gw->link_keys, pl->in, pl->len,
				    time_now_ms() / 1000, &c);

	if (rc == 1)
		pending_accept(pl, &c);
	else
		pending_refuse(pl, rc < 0 ? -rc : LINK_REFUSAL_GARBAGE);
}

/* Before each poll: the queued openings, oldest first, up to the turn's
   budget; with some left, the next poll does not block. The most done
   in one turn is a gauge, so the bound can be seen holding. */
static void check_queued(void *user)
{
	struct linklisten *ll = user;
	int64_t t0 = mono_us();
	size_t done = 0;

	while (ll->queue && done < OPENINGS_PER_TURN) {
		check_opening(ll->queue);
		done++;
		if (mono_us() - t0 >= OPENINGS_TURN_US)
			break;
	}
	if (done > ll->gw->metrics.link_openings_turn_max)
		ll->gw->metrics.link_openings_turn_max = done;
	if (ll->queue)
		ev_loop_again(ll->gw->loop);
}

/* "tcp:HOST:PORT", "vsock:CID:PORT" (the CID the host gave the VM) or
   "unix:PATH pid N" for the peer of an accepted link. */
static void peer_name(int fd, const struct sockaddr_storage *ss, const char *listener,
		      char *out, size_t cap)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(out, cap, "tcp:%s:%u", host, ntohs(in->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(out, cap, "tcp:[%s]:%u", host, ntohs(in6->sin6_port));
	} else if (ss->ss_family == AF_VSOCK) {
		const struct sockaddr_vm *vm = (const void *)ss;
		snprintf(out, cap, "vsock:%u:%u (cid %u)", vm->svm_cid, vm->svm_port,
			 vm->svm_cid);
	} else {
		struct ucred cr;
		socklen_t len = sizeof(cr);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0)
			snprintf(out, cap, "%.100s pid %d", listener, (int)cr.pid);
		else
			snprintf(out, cap, "%.100s", listener);
	}
}

static void pending_add(struct linklisten *ll, int fd, const char *peer)
{
	struct pending_link *pl = xcalloc(1, sizeof(*pl));

	pl->ll = ll;
	pl->fd = fd;
	snprintf(pl->peer, sizeof(pl->peer), "%s", peer);
	pl->io = ev_io_new(ll->gw->loop, fd, EV_READ, on_pending_read, pl);
	if (!pl->io) {
		log_warn("link-listen", "link from %s: cannot watch it: %s", peer,
			 strerror(errno));
		close(fd);
		free(pl);
		return;
	}
	pl->deadline =
	    ev_timer_new(ll->gw->loop, (int64_t)ll->gw->cfg->link_auth_timeout_s * 1000,
			 0, on_pending_deadline, pl);
	pl->next = ll->pending;
	if (pl->next)
		pl->next->prev = pl;
	ll->pending = pl;
	ll->n_pending++;
	ll->gw->metrics.links_pending = ll->n_pending;
}

/* ---- listeners ---- */

static void on_unpause(struct ev_timer *t, void *user)
{
	struct listener *l = user;

	ev_io_set(l->io, EV_READ);
}

/* Out of descriptors: the listener rests, logged once per rest. */
static void pause_listener(struct listener *l)
{
	log_error(l->name, "accept: %s; not accepting links for %d ms", strerror(errno),
		  ACCEPT_PAUSE_MS);
	ev_io_set(l->io, 0);
	ev_timer_arm(l->pause, ACCEPT_PAUSE_MS, 0);
}

static void on_accept(struct ev_io *io, int lfd, unsigned events, void *user)
{
	struct listener *l = user;
	struct linklisten *ll = l->ll;

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char peer[160];
		int fd = accept4(lfd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				pause_listener(l);
			return; /* EAGAIN, or a peer gone before it was taken */
		}
		memset((char *)&ss + sl, 0, sizeof(ss) - sl);
		peer_name(fd, &ss, l->name + 5, peer, sizeof(peer));
		if (ll->n_pending >= ll->gw->cfg->max_pending_links)
			refuse(ll, fd, peer, LINK_REFUSAL_PENDING_FULL);
		else
			pending_add(ll, fd, peer);
	}
}

static int listen_one(struct linklisten *ll, struct listener *l, const struct addr *a,
		      char *err, size_t errlen)
{
	char why[256], text[128];

	addr_format(a, text, sizeof(text));
	l->ll = ll;
	l->fd = addr_listen(a, 0, why, sizeof(why));
	if (l->fd < 0) {
		snprintf(err, errlen, "%s: %s", text, why);
		return -1;
	}
	snprintf(l->name, sizeof(l->name), "from %s", text);
	l->io = ev_io_new(ll->gw->loop, l->fd, EV_READ, on_accept, l);
	if (!l->io) {
		snprintf(err, errlen, "%s: cannot watch it: %s", text, strerror(errno));
		close(l->fd);
		l->fd = -1;
		return -1;
	}
	l->pause = ev_timer_new(ll->gw->loop, -1, 0, on_unpause, l);
	log_info(NULL, "accepting sidecar links on %s", text);
	return 0;
}

struct linklisten *linklisten_new(struct gateway *gw, char *err, size_t errlen)
{
	struct linklisten *ll = xcalloc(1, sizeof(*ll));
	const struct gw_config *c = gw->cfg;

	ll->gw = gw;
	ll->ls = xcalloc(c->n_link_listen, sizeof(*ll->ls));
	ev_hook_add(gw->loop, check_queued, ll);
	for (size_t i = 0; i < c->n_link_listen; i++) {
		if (listen_one(ll, &ll->ls[i], &c->link_listen[i], err, errlen) < 0) {
			linklisten_free(ll);
			return NULL;
		}
		ll->n_ls++;
	}
	return ll;
}

void linklisten_free(struct linklisten *ll)
{
	if (!ll)
		return;
	ev_hook_remove(ll->gw->loop, check_queued, ll);
	while (ll->pending)
		pending_end(ll->pending, 0);
	for (size_t i = 0; i < ll->n_ls; i++) {
		ev_io_free(ll->ls[i].io);
		ev_timer_free(ll->ls[i].pause);
		close(ll->ls[i].fd);
	}
	free(ll->ls);
	free(ll);
}
