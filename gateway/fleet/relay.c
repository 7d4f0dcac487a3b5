/* relay: see relay.h. The owner's socket belongs to libcurl (its
   connect-only easy handle stays in the multi while the relay lives, or
   curl closes it); a duplicate of it is what the relay polls, and bytes
   go through curl_easy_send and curl_easy_recv, which do the TLS when
   the fleet URL is https. Callbacks to the caller are made from a
   zero-delay timer, never from inside the relay's own io callbacks. */
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>

#include "buf.h"
#include "curlev.h"
#include "ev.h"
#include "num.h"
#include "timeutil.h"
#include "xalloc.h"

#define PUMP_ROUNDS 32 /* read/write rounds a turn before yielding to the loop */

enum state {
	S_CONNECT, /* curl connecting */
	S_SEND,	   /* the upgrade request going out */
	S_HEAD,	   /* reading the answer head */
	S_BODY,	   /* reading a refusal's body */
	S_WAIT,	   /* 101 answered, waiting for relay_start */
	S_RELAY,   /* bytes both ways */
	S_FLUSH,   /* one side ended: writing what is left to the other */
	S_DONE,	   /* answered with a failure, or ended */
};

struct relay {
	struct forward *f;
	struct ev_loop *loop;
	struct forward_stats *st;
	enum state state;
	struct curlev_job job;
	int ofd, cfd;
	struct ev_io *oio, *cio;
	struct buf to_owner, to_client;
	/* the opening */
	struct buf head, pairs;
	size_t n_pairs, head_len, body_want;
	unsigned status;
	bool body_to_eof;
	char err[CURL_ERROR_SIZE + 64];
	/* timers: the opening's deadline, then the idle bound and the flush */
	struct ev_timer *timer, *kick;
	int64_t idle_ms, last_io;
	bool owner_eof, client_eof, counted;
	/* what the kick delivers */
	bool answer_due, end_due;
	int answer_rc;
	relay_answer_cb acb;
	void *auser;
	relay_end_cb ecb;
	void *euser;
	LIST_ENTRY(relay) entry; /* in the forward's list once started */
};

static void pump(struct relay *r);
static void opening(struct relay *r);

/* ---- the answer head ---- */

static int token_char(char c)
{
	return c > ' ' && c < 127 && !strchr("\"(),/:;<=>?@[\\]{}", c);
}

/* One "name: value" line of len bytes into pairs. */
static int header_line(const char *l, size_t len, struct buf *pairs)
{
	const char *colon = memchr(l, ':', len), *v, *end = l + len;

	if (!colon || colon == l)
		return -EPROTO;
	for (const char *p = l; p < colon; p++)
		if (!token_char(*p))
			return -EPROTO;
	v = colon + 1;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	for (const char *p = v; p < end; p++)
		if ((unsigned char)*p < ' ' && *p != '\t')
			return -EPROTO;
	buf_append(pairs, l, colon - l);
	buf_append(pairs, "", 1);
	buf_append(pairs, v, end - v);
	buf_append(pairs, "", 1);
	return 0;
}

static int status_line(const char *l, size_t len, unsigned *status)
{
	uint64_t s;

	if (len < 12 ||
	    (memcmp(l, "HTTP/1.1 ", 9) != 0 && memcmp(l, "HTTP/1.0 ", 9) != 0) ||
	    (len > 12 && l[12] != ' ') || num_parse_u64_n(l + 9, 3, 100, 599, &s) < 0)
		return -EPROTO;
	*status = (unsigned)s;
	return 0;
}

ssize_t relay_parse_head(const char *p, size_t n, unsigned *status, struct buf *pairs,
			 size_t *n_pairs)
{
	size_t lim = n < RELAY_HEAD_MAX ? n : RELAY_HEAD_MAX;
	const char *end = memmem(p, lim, "\r\n\r\n", 4), *l, *eol;

	if (!end)
		return n >= RELAY_HEAD_MAX ? -E2BIG : 0;
	buf_reset(pairs);
	*n_pairs = 0;
	eol = memmem(p, end + 2 - p, "\r\n", 2);
	if (status_line(p, eol - p, status) < 0)
		return -EPROTO;
	for (l = eol + 2; l < end + 2; l = eol + 2) {
		eol = memmem(l, end + 2 - l, "\r\n", 2);
		if (++*n_pairs > FORWARD_HEADERS_MAX)
			return -E2BIG;
		if (header_line(l, eol - l, pairs) < 0)
			return -EPROTO;
	}
	return end + 4 - p;
}

/* The pairs of the head, hop-by-hop ones left out. */
static struct forward_header *headers_of(struct relay *r, size_t *n)
{
	return forward_headers_of(&r->pairs, r->n_pairs, n);
}

static const char *pair(struct relay *r, const char *want)
{
	const char *p = (const char *)buf_head(&r->pairs);

	for (size_t i = 0; i < r->n_pairs; i++) {
		const char *value = p + strlen(p) + 1;

		if (strcasecmp(p, want) == 0)
			return value;
		p = value + strlen(value) + 1;
	}
	return NULL;
}

/* ---- callbacks, from the kick timer ---- */

static void deliver_answer(struct relay *r)
{
	struct relay_answer a = {.rc = r->answer_rc, .status = r->status};
	struct forward_header *h = NULL;

	if (a.rc == 0) {
		h = headers_of(r, &a.n_headers);
		a.headers = h;
		if (r->status != 101) {
			a.body = buf_head(&r->head) + r->head_len;
			a.body_len = buf_size(&r->head) - r->head_len;
		}
	} else {
		r->st->relays_failed++;
		a.err = r->err;
	}
	r->answer_due = false;
	r->acb(r->auser, &a); /* may free r */
	free(h);
}

static void on_kick(struct ev_timer *t, void *user)
{
	struct relay *r = user;

	if (r->answer_due) {
		deliver_answer(r);
		return;
	}
	if (r->end_due) {
		r->end_due = false;
		r->ecb(r->euser, r); /* may free r */
		return;
	}
	pump(r);
}

static void watch(struct ev_io *io, unsigned events);

static void answer(struct relay *r, int rc, const char *fmt, const char *why)
{
	if (rc < 0) {
		snprintf(r->err, sizeof(r->err), fmt, why);
		r->state = S_DONE;
	} else {
		r->state = r->status == 101 ? S_WAIT : S_DONE;
	}
	r->answer_rc = rc;
	r->answer_due = true;
	ev_timer_disarm(r->timer);
	watch(r->oio, 0);
	ev_timer_arm(r->kick, 0, 0);
}

/* ---- the owner's side, through curl ---- */

static ssize_t owner_send(struct relay *r, const void *p, size_t n)
{
	size_t done = 0;
	CURLcode rc = curl_easy_send(r->job.easy, p, n, &done);

	if (rc == CURLE_AGAIN)
		return -EAGAIN;
	return rc == CURLE_OK ? (ssize_t)done : -EIO;
}

/* Returns the bytes read, 0 at the owner's end, -EAGAIN or -EIO. */
static ssize_t owner_recv(struct relay *r, void *p, size_t n)
{
	size_t got = 0;
	CURLcode rc = curl_easy_recv(r->job.easy, p, n, &got);

	if (rc == CURLE_AGAIN)
		return -EAGAIN;
	return rc == CURLE_OK ? (ssize_t)got : -EIO;
}

/* ---- the opening ---- */

static void send_head(struct relay *r)
{
	while (buf_size(&r->to_owner)) {
		ssize_t n = owner_send(r, buf_head(&r->to_owner), buf_size(&r->to_owner));

		if (n == -EAGAIN) {
			ev_io_set(r->oio, EV_WRITE);
			return;
		}
		if (n <= 0)
			return answer(r, -ECONNREFUSED, "sending to the owner failed%s",
				      "");
		buf_consume(&r->to_owner, n);
	}
	r->state = S_HEAD;
	ev_io_set(r->oio, EV_READ);
	opening(r);
}

/* The head is whole: a 101 is answered at once (what followed it is the
   owner's first bytes for the client); anything else after its body. */
static void head_done(struct relay *r, long len)
{
	const char *cl;
	uint64_t want;

	r->head_len = len;
	if (r->status == 101) {
		buf_append(&r->to_client, buf_head(&r->head) + len,
			   buf_size(&r->head) - len);
		return answer(r, 0, NULL, NULL);
	}
	cl = pair(r, "Content-Length");
	if (pair(r, "Transfer-Encoding"))
		return answer(r, -EPROTO, "the owner's refusal is %s", "chunked");
	if (cl && num_parse_u64(cl, 0, RELAY_BODY_MAX, &want) < 0)
		return answer(r, -EPROTO, "the owner's refusal is %s",
			      "over the body cap");
	r->body_to_eof = !cl;
	r->body_want = cl ? want : RELAY_BODY_MAX;
	r->state = S_BODY;
}

static void read_answer(struct relay *r)
{
	size_t cap = RELAY_HEAD_MAX + RELAY_BODY_MAX;
	long len;
	ssize_t n;

	for (;;) {
		if (r->state == S_BODY &&
		    buf_size(&r->head) - r->head_len >= r->body_want) {
			/* Bytes past the declared body are dropped. */
			r->head.len = r->head.off + r->head_len + r->body_want;
			return answer(r, 0, NULL, NULL);
		}
		if (buf_size(&r->head) >= cap)
			return answer(r, -EPROTO, "the owner's answer is %s",
				      "over its cap");
		n = owner_recv(r, buf_reserve(&r->head, cap - buf_size(&r->head)),
			       cap - buf_size(&r->head));
		if (n == -EAGAIN)
			return;
		if (n == 0 && r->state == S_BODY && r->body_to_eof)
			return answer(r, 0, NULL, NULL);
		if (n <= 0)
			return answer(r, -ECONNREFUSED,
				      "the owner closed before answering%s", "");
		buf_commit(&r->head, n);
		if (r->state != S_HEAD)
			continue;
		len =
		    relay_parse_head((const char *)buf_head(&r->head), buf_size(&r->head),
				     &r->status, &r->pairs, &r->n_pairs);
		if (len < 0)
			return answer(r, -EPROTO, "the owner's answer is %s",
				      "no HTTP/1.1 head");
		if (len > 0) {
			head_done(r, len);
			if (r->state != S_BODY)
				return;
		}
	}
}

static void opening(struct relay *r)
{
	if (r->state == S_SEND)
		send_head(r);
	else if (r->state == S_HEAD || r->state == S_BODY)
		read_answer(r);
}

static void on_owner(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct relay *r = user;

	if (r->state < S_WAIT)
		opening(r);
	else
		pump(r);
}

static void on_connected(struct curlev_job *job, CURLcode res)
{
	struct relay *r = job->user;
	curl_socket_t s = CURL_SOCKET_BAD;

	if (res != CURLE_OK) {
		return answer(
		    r, res == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED,
		    "the owner could not be reached: %s", curl_easy_strerror(res));
	}
	curl_easy_getinfo(job->easy, CURLINFO_ACTIVESOCKET, &s);
	/* Polled through a duplicate: curl may still have the socket in its
	   own epoll set while the handle is in the multi. */
	r->ofd = s == CURL_SOCKET_BAD ? -1 : fcntl(s, F_DUPFD_CLOEXEC, 0);
	r->oio = r->ofd >= 0 ? ev_io_new(r->loop, r->ofd, EV_WRITE, on_owner, r) : NULL;
	if (!r->oio)
		return answer(r, -EIO, "the owner's socket cannot be watched%s", "");
	r->state = S_SEND;
	send_head(r);
}

static void on_deadline(struct ev_timer *t, void *user);

/* ---- the request head ---- */

static void host_of(const char *url, char *out, size_t cap)
{
	const char *h = strstr(url, "://");
	size_t n;

	h = h ? h + 3 : url;
	n = strcspn(h, "/?#");
	snprintf(out, cap, "%.*s", (int)n, h);
}

static int request_head(struct relay *r, const struct forward_request *rq)
{
	char sig[FLEETAUTH_VALUE_MAX], host[512];
	const char *client = rq->client ? rq->client : "";
	int have_host = 0;

	if (fleetauth_sign(forward_auth(r->f), time_now_ms() / 1000, "GET", rq->target,
			   client, sig) < 0)
		return -E2BIG;
	buf_appendf(&r->to_owner, "GET %s HTTP/1.1\r\n", rq->target);
	for (size_t i = 0; i < rq->n_headers; i++) {
		const struct forward_header *h = &rq->headers[i];

		if (forward_hop_header(h->name))
			continue;
		have_host |= strcasecmp(h->name, "Host") == 0;
		buf_appendf(&r->to_owner, "%s: %s\r\n", h->name, h->value);
	}
	if (!have_host) {
		host_of(rq->owner_url, host, sizeof(host));
		buf_appendf(&r->to_owner, "Host: %s\r\n", host);
	}
	buf_appendf(&r->to_owner,
		    "Upgrade: websocket\r\nConnection: Upgrade\r\nX-Forwarded-For: %s\r\n"
		    "%s: %s\r\n\r\n",
		    client, FLEETAUTH_HEADER, sig);
	return buf_size(&r->to_owner) > RELAY_HEAD_MAX ? -E2BIG : 0;
}

static int start_connect(struct relay *r, const struct forward_request *rq)
{
	char url[1024];
	size_t n = strcspn(rq->owner_url, "?#");

	if (snprintf(url, sizeof(url), "%.*s", (int)n, rq->owner_url) >= (int)sizeof(url))
		return -E2BIG;
	r->job.easy = curl_easy_init();
	if (!r->job.easy)
		return -EIO;
	forward_setup_easy(r->f, r->job.easy);
	if (curl_easy_setopt(r->job.easy, CURLOPT_URL, url) != CURLE_OK)
		return -EINVAL;
	curl_easy_setopt(r->job.easy, CURLOPT_CONNECT_ONLY, 1L);
	r->job.done = on_connected;
	r->job.user = r;
	return curlev_add(forward_curlev(r->f), &r->job);
}

struct relay *relay_open(struct forward *f, const struct forward_request *rq,
			 long timeout_ms, relay_answer_cb cb, void *user)
{
	struct relay *r = xcalloc(1, sizeof(*r));

	r->f = f;
	r->loop = forward_loop(f);
	r->st = forward_stats_of(f);
	r->ofd = r->cfd = -1;
	r->acb = cb;
	r->auser = user;
	buf_init(&r->to_owner);
	buf_init(&r->to_client);
	buf_init(&r->head);
	buf_init(&r->pairs);
	r->timer = ev_timer_new(r->loop, timeout_ms, 0, on_deadline, r);
	r->kick = ev_timer_new(r->loop, -1, 0, on_kick, r);
	if (rq->target[0] != '/' || request_head(r, rq) < 0 || start_connect(r, rq) < 0) {
		relay_free(r);
		return NULL;
	}
	return r;
}

/* ---- the relay ---- */

static size_t room(const struct buf *b)
{
	return buf_size(b) < RELAY_BUF_MAX ? RELAY_BUF_MAX - buf_size(b) : 0;
}

static void watch(struct ev_io *io, unsigned events)
{
	if (io)
		ev_io_set(io, events);
}

static void end(struct relay *r)
{
	if (r->state == S_DONE)
		return;
	r->state = S_DONE;
	watch(r->cio, 0);
	watch(r->oio, 0);
	ev_timer_disarm(r->timer);
	r->end_due = true;
	ev_timer_arm(r->kick, 0, 0);
}

/* Each returns 1 when bytes moved, 0 when not, -1 when that side failed. */
static int client_in(struct relay *r)
{
	ssize_t n;

	if (r->client_eof || !room(&r->to_owner))
		return 0;
	n = read(r->cfd, buf_reserve(&r->to_owner, room(&r->to_owner)),
		 room(&r->to_owner));
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	if (n == 0) {
		r->client_eof = true;
		return 1;
	}
	buf_commit(&r->to_owner, n);
	r->st->relay_bytes_in += n;
	return 1;
}

static int owner_out(struct relay *r)
{
	ssize_t n;

	if (!buf_size(&r->to_owner))
		return 0;
	n = owner_send(r, buf_head(&r->to_owner), buf_size(&r->to_owner));
	if (n == -EAGAIN)
		return 0;
	if (n < 0)
		return -1;
	buf_consume(&r->to_owner, n);
	return n > 0;
}

static int owner_in(struct relay *r)
{
	ssize_t n;

	if (r->owner_eof || !room(&r->to_client))
		return 0;
	n = owner_recv(r, buf_reserve(&r->to_client, room(&r->to_client)),
		       room(&r->to_client));
	if (n == -EAGAIN)
		return 0;
	if (n < 0)
		return -1;
	if (n == 0) {
		r->owner_eof = true;
		return 1;
	}
	buf_commit(&r->to_client, n);
	r->st->relay_bytes_out += n;
	return 1;
}

static int client_out(struct relay *r)
{
	ssize_t n;

	if (!buf_size(&r->to_client))
		return 0;
	n = send(r->cfd, buf_head(&r->to_client), buf_size(&r->to_client), MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	buf_consume(&r->to_client, n);
	return n > 0;
}

/* Which events each side waits for, given the buffers. */
static void interest(struct relay *r)
{
	unsigned c = 0, o = 0;

	if (!r->client_eof && room(&r->to_owner))
		c |= EV_READ;
	if (buf_size(&r->to_client))
		c |= EV_WRITE;
	if (!r->owner_eof && room(&r->to_client))
		o |= EV_READ;
	if (buf_size(&r->to_owner))
		o |= EV_WRITE;
	ev_io_set(r->cio, c);
	ev_io_set(r->oio, o);
}

/* One side ended: the relay ends once what it sent is written to the
   other side, within RELAY_FLUSH_MS. */
static int finished(struct relay *r)
{
	if (r->client_eof && !buf_size(&r->to_owner))
		return 1;
	if (r->owner_eof && !buf_size(&r->to_client))
		return 1;
	if ((r->client_eof || r->owner_eof) && r->state == S_RELAY) {
		r->state = S_FLUSH;
		ev_timer_arm(r->timer, RELAY_FLUSH_MS, 0);
	}
	return 0;
}

static void pump(struct relay *r)
{
	int round, moved = 1;

	if (r->state != S_RELAY && r->state != S_FLUSH)
		return;
	for (round = 0; moved && round < PUMP_ROUNDS; round++) {
		int a = client_in(r), b = owner_out(r), c = owner_in(r),
		    d = client_out(r);

		if (a < 0 || b < 0 || c < 0 || d < 0)
			return end(r);
		moved = a | b | c | d;
		if (moved)
			r->last_io = time_mono_ms();
	}
	if (finished(r))
		return end(r);
	interest(r);
	/* Still moving: TLS may hold decrypted bytes no poll reports. */
	if (moved)
		ev_timer_arm(r->kick, 0, 0);
}

static void on_client(struct ev_io *io, int fd, unsigned events, void *user)
{
	pump(user);
}

static void on_deadline(struct ev_timer *t, void *user)
{
	struct relay *r = user;
	int64_t quiet;

	if (r->state < S_WAIT)
		return answer(r, -ETIMEDOUT, "the owner did not answer in time%s", "");
	if (r->state == S_FLUSH)
		return end(r);
	quiet = time_mono_ms() - r->last_io;
	if (quiet >= r->idle_ms)
		return end(r);
	ev_timer_arm(r->timer, r->idle_ms - quiet, 0);
}

void relay_start(struct relay *r, int client_fd, const void *client_extra,
		 size_t extra_len, int64_t idle_ms, relay_end_cb endcb, void *user)
{
	r->cfd = client_fd;
	r->ecb = endcb;
	r->euser = user;
	r->idle_ms = idle_ms;
	r->last_io = time_mono_ms();
	r->state = S_RELAY;
	LIST_INSERT_HEAD(forward_relay_list(r->f), r, entry);
	r->st->relays++;
	r->st->relays_active++;
	r->counted = true;
	if (extra_len)
		buf_append(&r->to_owner, client_extra, extra_len);
	r->st->relay_bytes_in += extra_len;
	r->cio = ev_io_new(r->loop, client_fd, EV_READ, on_client, r);
	if (!r->cio)
		return end(r);
	if (idle_ms > 0)
		ev_timer_arm(r->timer, idle_ms, 0);
	ev_timer_arm(r->kick, 0, 0);
}

void relay_free(struct relay *r)
{
	if (!r)
		return;
	if (r->counted) {
		r->st->relays_active--;
		LIST_REMOVE(r, entry);
	}
	ev_io_free(r->cio);
	ev_io_free(r->oio);
	if (r->ofd >= 0)
		close(r->ofd);
	ev_timer_free(r->timer);
	ev_timer_free(r->kick);
	if (r->job.easy) {
		curlev_remove(forward_curlev(r->f), &r->job);
		curl_easy_cleanup(r->job.easy);
	}
	buf_free(&r->to_owner);
	buf_free(&r->to_client);
	buf_free(&r->head);
	buf_free(&r->pairs);
	free(r);
}

void relay_close_all(struct forward *f)
{
	struct relay_list *relays = forward_relay_list(f);
	struct relay *r;

	while ((r = LIST_FIRST(relays))) {
		r->state = S_DONE;
		r->end_due = false;
		r->ecb(r->euser, r);
		if (LIST_FIRST(relays) ==
		    r) /* the callback left it: it goes all the same */
			relay_free(r);
	}
}
