/* linklisten: see linklisten.h. Everything before the registration runs
   on linkverify's worker thread, on its own loop, at a lower CPU
   priority: the listeners are accepted there, and accepted links wait in
   a list, each with its opening buffer and a deadline timer, until their
   credential is verified or refused (refusals are sent, logged and
   counted there too). Only a verified link, its fd with its claims and
   peer, goes to the gateway's loop (host->admit), at most
   OPENINGS_PER_TURN a turn: a flood of connecting sidecars costs the
   clients a bounded slice of each turn and the CPU the worker is left,
   not a thousand accepts, reads and Ed25519 checks at the loop's
   priority. The gateway's counters and gauges the worker changes are
   changed atomically (metrics.c reads every one atomically). */
#include "linklisten.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#include "addr.h"
#include "config.h"
#include "ev.h"
#include "link.h"
#include "linkcred.h"
#include "linkverify.h"
#include "list.h"
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
/* Checked links registered (an upstream, its Hello) in one loop turn, at
   most; the rest wait for the next turns. */
#define OPENINGS_PER_TURN 8
/* An opening's buffer in the link itself: a usual credential (a few
   hundred bytes) fits; a longer frame gets a buffer of its size, up to
   LINKLISTEN_OPENING_MAX. A flood's thousand links did not all need the
   largest, zeroed. */
#define OPENING_SMALL 1024

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
	LIST_ENTRY(pending_link) entry;
	uint8_t *in; /* small, or a buffer of the frame's size */
	size_t cap;
	uint8_t small[OPENING_SMALL]; /* last: not zeroed */
};

/* A verified link on its way to the loop. */
struct verified_link {
	int fd;
	char peer[160];
	struct linkcred cred;
};

struct linklisten {
	const struct linklisten_host *host;
	struct ev_loop *wl; /* the worker's: listeners and pending links */
	struct listener *ls;
	size_t n_ls;
	LIST_HEAD(, pending_link) pending; /* awaiting their credential; worker */
	size_t n_pending;		   /* worker */
	size_t max_pending;
	int64_t auth_timeout_ms;
	struct linkverify *verify; /* the worker */
	pthread_mutex_t keys_mu;   /* over keys: the worker checks with it */
	struct keyset *keys;	   /* the worker's copy of *host->link_keys */
};

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

	__atomic_fetch_add(&ll->host->metrics->link_refusals[reason], 1,
			   __ATOMIC_RELAXED);
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

	LIST_REMOVE(pl, entry);
	ll->n_pending--;
	__atomic_store_n(&ll->host->metrics->links_pending, ll->n_pending,
			 __ATOMIC_RELAXED);
	ev_io_free(pl->io);
	ev_timer_free(pl->deadline);
	if (pl->in != pl->small)
		free(pl->in);
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

/* On the loop, a few a turn: a verified link registered, or refused
   when its instance cannot take it. The most done in one turn is a
   gauge, so the bound can be seen holding. */
static void on_verified(void *user, void *item)
{
	struct linklisten *ll = user;
	struct verified_link *vl = item;
	const struct linkcred *c = &vl->cred;
	int refusal = 0;

	ll->host->metrics->link_openings_turn_max = linkverify_turn_max(ll->verify);
	if (ll->host->admit(ll->host->owner, c, vl->fd, vl->peer, &refusal) < 0)
		refuse(ll, vl->fd, vl->peer, refusal);
	else
		log_info("link-listen",
			 "link from %s: instance %s (kid '%s', expires in %lld s)",
			 vl->peer, c->instance_id, c->kid,
			 (long long)(c->exp - time_now_ms() / 1000));
	free(vl);
}

/* Verified links the loop never took (shutdown): closed. */
static void on_dropped(void *user, void *item)
{
	struct verified_link *vl = item;

	close(vl->fd);
	free(vl);
}

/* On the worker: a verified credential sends the link to the loop. */
static void pending_accept(struct pending_link *pl, const struct linkcred *c)
{
	struct linklisten *ll = pl->ll;
	struct verified_link *vl = xmalloc(sizeof(*vl));

	memcpy(vl->peer, pl->peer, sizeof(vl->peer));
	vl->cred = *c;
	vl->fd = pending_end(pl, 1);
	linkverify_post(ll->verify, vl);
}

static void on_pending_deadline(struct ev_timer *t, void *user)
{
	pending_refuse(user, LINK_REFUSAL_TIMEOUT);
}

/* ---- the worker's keys ---- */

static int same_keys(const struct keyset *a, const struct keyset *b)
{
	if (keys_count(a) != keys_count(b))
		return 0;
	for (size_t i = 0; i < keys_count(a); i++) {
		const struct keyset_key *x = keys_get(a, i), *y = keys_get(b, i);

		if (x->alg != y->alg || strcmp(x->kid, y->kid) != 0 || x->len != y->len ||
		    memcmp(x->material, y->material, x->len) != 0)
			return 0;
	}
	return 1;
}

static struct keyset *copy_keys(const struct keyset *src)
{
	struct keyset *ks = keys_new();

	for (size_t i = 0; i < keys_count(src); i++) {
		const struct keyset_key *k = keys_get(src, i);
		const char *kid = k->kid[0] ? k->kid : NULL;

		if (k->alg == JWT_EDDSA)
			(void)keys_add_ed25519_pub(ks, kid, k->material);
		else
			(void)keys_add_hs256(ks, kid, k->material, k->len);
	}
	return ks;
}

/* The gateway's set is replaced on SIGHUP, on the loop, while the worker
   may be checking: the worker checks with a copy of its own, swapped
   under keys_mu (the loop waits for one check at most). */
void linklisten_keys_changed(struct linklisten *ll)
{
	struct keyset *ks, *old;

	if (!ll || !*ll->host->link_keys || same_keys(ll->keys, *ll->host->link_keys))
		return;
	ks = copy_keys(*ll->host->link_keys);
	pthread_mutex_lock(&ll->keys_mu);
	old = ll->keys;
	ll->keys = ks;
	pthread_mutex_unlock(&ll->keys_mu);
	keys_free(old);
}

/* On the worker: the full check of a complete opening, then the link
   goes to the loop or is refused. */
static void check_opening(struct pending_link *pl)
{
	struct linklisten *ll = pl->ll;
	struct linkcred c;
	int rc;

	pthread_mutex_lock(&ll->keys_mu);
	rc = linklisten_opening(ll->keys, pl->in, pl->len, time_now_ms() / 1000, &c);
	pthread_mutex_unlock(&ll->keys_mu);
	/* Before the link is posted, so a registration the loop sees
	   always follows its check's yield. */
	linkverify_give_way();
	if (rc == 1)
		pending_accept(pl, &c);
	else
		pending_refuse(pl, rc < 0 ? -rc : LINK_REFUSAL_GARBAGE);
}

/* Once the frame's length is known: a frame longer than the small buffer
   (and within LINKLISTEN_OPENING_MAX, or opening_framed refuses it) gets
   a buffer of its size. */
static void fit_frame(struct pending_link *pl)
{
	size_t need;

	if (pl->in != pl->small || pl->len < 4)
		return;
	need = 4 + ((size_t)pl->in[0] << 24 | (size_t)pl->in[1] << 16 |
		    (size_t)pl->in[2] << 8 | pl->in[3]);
	if (need <= sizeof(pl->small) || need > LINKLISTEN_OPENING_MAX)
		return;
	pl->in = xmalloc(need);
	memcpy(pl->in, pl->small, pl->len);
	pl->cap = need;
}

/* One bounded read: the opening never holds more than its buffer. */
static void on_pending_read(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct pending_link *pl = user;
	ssize_t n = read(fd, pl->in + pl->len, pl->cap - pl->len);
	int rc;

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		pending_refuse(pl, LINK_REFUSAL_CLOSED);
		return;
	}
	pl->len += (size_t)n;
	fit_frame(pl);
	rc = opening_framed(pl->in, pl->len);
	if (rc == 1)
		check_opening(pl);
	else if (rc < 0)
		pending_refuse(pl, -rc);
	else if (pl->len == pl->cap)
		pending_refuse(pl, LINK_REFUSAL_GARBAGE);
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
	struct pending_link *pl = xmalloc(sizeof(*pl));

	memset(pl, 0, offsetof(struct pending_link, small));
	pl->in = pl->small;
	pl->cap = sizeof(pl->small);

	pl->ll = ll;
	pl->fd = fd;
	snprintf(pl->peer, sizeof(pl->peer), "%s", peer);
	pl->io = ev_io_new(ll->wl, fd, EV_READ, on_pending_read, pl);
	if (!pl->io) {
		log_warn("link-listen", "link from %s: cannot watch it: %s", peer,
			 strerror(errno));
		close(fd);
		free(pl);
		return;
	}
	pl->deadline =
	    ev_timer_new(ll->wl, ll->auth_timeout_ms, 0, on_pending_deadline, pl);
	LIST_INSERT_HEAD(&ll->pending, pl, entry);
	ll->n_pending++;
	__atomic_store_n(&ll->host->metrics->links_pending, ll->n_pending,
			 __ATOMIC_RELAXED);
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

/* On the worker, like everything up to the verified credential. */
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
		if (ll->n_pending >= ll->max_pending)
			refuse(ll, fd, peer, LINK_REFUSAL_PENDING_FULL);
		else
			pending_add(ll, fd, peer);
	}
}

static int listen_one(struct linklisten *ll, struct listener *l, const struct addr *a,
		      char *err, size_t errlen)
{
	char why[LOG_ERR_MAX], text[128];

	addr_format(a, text, sizeof(text));
	l->ll = ll;
	l->fd = addr_listen(a, 0, why, sizeof(why));
	if (l->fd < 0) {
		snprintf(err, errlen, "%s: %s", text, why);
		return -1;
	}
	snprintf(l->name, sizeof(l->name), "from %s", text);
	l->io = ev_io_new(ll->wl, l->fd, EV_READ, on_accept, l);
	if (!l->io) {
		snprintf(err, errlen, "%s: cannot watch it: %s", text, strerror(errno));
		close(l->fd);
		l->fd = -1;
		return -1;
	}
	l->pause = ev_timer_new(ll->wl, -1, 0, on_unpause, l);
	log_info(NULL, "accepting sidecar links on %s", text);
	return 0;
}

/* The listeners are watched on the worker's loop before its thread
   starts; from then on only the worker touches them. */
struct linklisten *linklisten_new(const struct linklisten_host *host, char *err,
				  size_t errlen)
{
	struct linklisten *ll = xcalloc(1, sizeof(*ll));
	const struct gw_config *c = host->cfg;

	ll->host = host;
	ll->max_pending = c->max_pending_links;
	ll->auth_timeout_ms = (int64_t)c->link_auth_timeout_s * 1000;
	pthread_mutex_init(&ll->keys_mu, NULL);
	ll->keys = *host->link_keys ? copy_keys(*host->link_keys) : keys_new();
	ll->ls = xcalloc(c->n_link_listen, sizeof(*ll->ls));
	ll->verify =
	    linkverify_new(host->loop, on_verified, on_dropped, ll, OPENINGS_PER_TURN);
	if (!ll->verify) {
		snprintf(err, errlen, "cannot start the link worker: %s",
			 strerror(errno));
		linklisten_free(ll);
		return NULL;
	}
	ll->wl = linkverify_loop(ll->verify);
	for (size_t i = 0; i < c->n_link_listen; i++) {
		if (listen_one(ll, &ll->ls[i], &c->link_listen[i], err, errlen) < 0) {
			linklisten_free(ll);
			return NULL;
		}
		ll->n_ls++;
	}
	if (linkverify_start(ll->verify) < 0) {
		snprintf(err, errlen, "cannot start the link worker: %s",
			 strerror(errno));
		linklisten_free(ll);
		return NULL;
	}
	return ll;
}

/* The worker stopped first: then its loop's watchers are freed here, and
   the verified links the loop never took are closed. */
void linklisten_free(struct linklisten *ll)
{
	if (!ll)
		return;
	linkverify_stop(ll->verify);
	while (!LIST_EMPTY(&ll->pending))
		pending_end(LIST_FIRST(&ll->pending), 0);
	for (size_t i = 0; i < ll->n_ls; i++) {
		ev_io_free(ll->ls[i].io);
		ev_timer_free(ll->ls[i].pause);
		close(ll->ls[i].fd);
	}
	linkverify_free(ll->verify);
	keys_free(ll->keys);
	pthread_mutex_destroy(&ll->keys_mu);
	free(ll->ls);
	free(ll);
}
