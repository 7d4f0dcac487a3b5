/* forward: see forward.h. Each call is one easy handle on the shared
   multi (curlev); the owner's header lines are kept as "name\0value\0"
   pairs and turned into an array when the head is whole. Its body goes
   into the call's window; a chunk that would pass FORWARD_WINDOW pauses
   the transfer (libcurl keeps that chunk), and forward_read unpauses it
   once the client has taken half the window. One ev timer is the
   deadline: for the head, then for each silence of the owner while the
   transfer is not paused (a paused one waits for the client, whose own
   bounds are the HTTP server's). */
#include "forward.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "buf.h"
#include "curlev.h"
#include "ev.h"
#include "timeutil.h"
#include "xalloc.h"

#define URL_MAX (2048 + FLEETAUTH_FIELD_MAX)

struct forward {
	struct ev_loop *loop;
	struct curlev *cv;
	struct fleetauth auth;
	char *cacert, *cert, *key;
	long connect_timeout_ms, timeout_ms;
	LIST_HEAD(, forward_call) calls;
	struct relay_list relays; /* started relays (relay.c) */
	struct forward_stats stats;
};

struct forward_call {
	struct forward *f;
	LIST_ENTRY(forward_call) entry;
	struct curlev_job job;
	struct curl_slist *hdrs;
	struct buf head; /* the owner's headers: "name\0value\0" pairs */
	size_t n_head;
	int64_t length;	   /* the owner's Content-Length, or -1 */
	struct buf window; /* body bytes not yet read */
	struct ev_timer *deadline;
	bool too_big, head_given, paused, ended;
	int end_rc;
	char err[CURL_ERROR_SIZE];
	forward_head_cb head_cb;
	forward_body_cb body_cb;
	void *user;
};

static const char *const hop[] = {
    "Connection",
    "Keep-Alive",
    "Proxy-Authenticate",
    "Proxy-Authorization",
    "Proxy-Connection",
    "TE",
    "Trailer",
    "Transfer-Encoding",
    "Upgrade",
    "Content-Length",
    "X-Forwarded-For",
    FLEETAUTH_HEADER,
    "Expect",
    "Date",
};

struct forward_header *forward_headers_of(const struct buf *pairs, size_t n_pairs,
					  size_t *n)
{
	struct forward_header *h = xcalloc(n_pairs + 1, sizeof(*h));
	const char *p = (const char *)buf_head(pairs);

	*n = 0;
	for (size_t i = 0; i < n_pairs; i++) {
		const char *name = p, *value = p + strlen(p) + 1;

		p = value + strlen(value) + 1;
		if (forward_hop_header(name))
			continue;
		h[*n].name = name;
		h[(*n)++].value = value;
	}
	return h;
}

bool forward_hop_header(const char *name)
{
	for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (strcasecmp(name, hop[i]) == 0)
			return 1;
	return 0;
}

/* ---- the owner's answer ---- */

static void call_free(struct forward_call *c);

/* The deadline starts over: the owner has this long for its next bytes. */
static void rearm(struct forward_call *c)
{
	ev_timer_arm(c->deadline, c->f->timeout_ms, 0);
}

static int rc_of(const struct forward_call *c, CURLcode res)
{
	return c->too_big ? -E2BIG : curlev_errno(res);
}

/* The head to the caller, once. */
static void give_head(struct forward_call *c, int rc, const char *err)
{
	struct forward_answer a = {.rc = rc, .length = c->length, .err = err};
	struct forward_header *h = NULL;

	c->head_given = true;
	if (rc == 0) {
		curl_easy_getinfo(c->job.easy, CURLINFO_RESPONSE_CODE, &a.status);
		h = forward_headers_of(&c->head, c->n_head, &a.n_headers);
		a.headers = h;
	} else {
		c->f->stats.failed++;
	}
	c->head_cb(c->user, &a);
	free(h);
}

/* The transfer is over (rc 0: the body ended whole): the caller hears
   of it through the head when none was given, else through body. */
static void finish(struct forward_call *c, int rc, const char *err)
{
	c->ended = true;
	c->end_rc = rc;
	c->f->stats.in_flight--;
	ev_timer_disarm(c->deadline);
	curlev_remove(c->f->cv, &c->job);
	if (c->head_given) {
		if (rc < 0)
			c->f->stats.broken++;
		c->body_cb(c->user);
		return;
	}
	give_head(c, rc, err);
	if (rc < 0)
		call_free(c);
}

static const char *err_of(const struct forward_call *c, CURLcode res)
{
	return c->too_big  ? "the owner's answer is over the forwarding caps"
	       : c->err[0] ? c->err
			   : curl_easy_strerror(res);
}

static void on_done(struct curlev_job *job, CURLcode res)
{
	struct forward_call *c = job->user;

	finish(c, rc_of(c, res), err_of(c, res));
}

static void on_deadline(struct ev_timer *t, void *user)
{
	struct forward_call *c = user;

	snprintf(c->err, sizeof(c->err), "the owner sent nothing for %ld ms",
		 c->f->timeout_ms);
	finish(c, -ETIMEDOUT, c->err);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *user)
{
	struct forward_call *c = user;
	size_t n = size * nmemb;

	if (buf_size(&c->window) && buf_size(&c->window) + n > FORWARD_WINDOW) {
		c->paused = true;
		ev_timer_disarm(c->deadline);
		return CURL_WRITEFUNC_PAUSE;
	}
	buf_append(&c->window, data, n);
	rearm(c);
	if (c->head_given)
		c->body_cb(c->user);
	return n;
}

/* The owner's Content-Length, kept apart: the client's answer has the
   same length when the owner said it, so a short body shows. */
static void keep_length(struct forward_call *c, const char *value, size_t len)
{
	char digits[24];
	uint64_t v;

	if (len == 0 || len >= sizeof(digits) || strspn(value, "0123456789") < len)
		return;
	memcpy(digits, value, len);
	digits[len] = '\0';
	v = strtoull(digits, NULL, 10);
	if (v <= INT64_MAX)
		c->length = (int64_t)v;
}

/* The blank line ending a head: a final one goes to the caller. */
static void head_end(struct forward_call *c)
{
	long status = 0;

	curl_easy_getinfo(c->job.easy, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 200 && !c->head_given) {
		rearm(c);
		give_head(c, 0, NULL);
	}
}

/* One header line. A status line starts the set over (a 100 Continue
   precedes the real answer). */
static size_t on_header(char *data, size_t size, size_t nmemb, void *user)
{
	struct forward_call *c = user;
	size_t n = size * nmemb, len = n, name_len;
	const char *colon, *value;

	if (len >= 4 && memcmp(data, "HTTP", 4) == 0) {
		buf_reset(&c->head);
		c->n_head = 0;
		c->length = -1;
		return n;
	}
	while (len && (data[len - 1] == '\n' || data[len - 1] == '\r'))
		len--;
	if (len == 0) {
		head_end(c);
		return n;
	}
	colon = memchr(data, ':', len);
	if (!colon)
		return n;
	name_len = colon - data;
	if (c->n_head >= FORWARD_HEADERS_MAX ||
	    buf_size(&c->head) + len + 2 > FORWARD_HEADER_BYTES_MAX) {
		c->too_big = true;
		return 0;
	}
	value = colon + 1;
	while (value < data + len && (*value == ' ' || *value == '\t'))
		value++;
	if (name_len == 14 && strncasecmp(data, "Content-Length", 14) == 0)
		keep_length(c, value, data + len - value);
	buf_append(&c->head, data, name_len);
	buf_append(&c->head, "", 1);
	buf_append(&c->head, value, data + len - value);
	buf_append(&c->head, "", 1);
	c->n_head++;
	return n;
}

ssize_t forward_read(struct forward_call *c, void *dst, size_t cap)
{
	size_t n = buf_size(&c->window);

	if (n == 0)
		return c->ended ? c->end_rc : -EAGAIN;
	if (n > cap)
		n = cap;
	memcpy(dst, buf_head(&c->window), n);
	buf_consume(&c->window, n);
	if (c->paused && !c->ended && buf_size(&c->window) <= FORWARD_WINDOW / 2) {
		/* libcurl may hand the chunk it kept over from inside. */
		c->paused = false;
		rearm(c);
		curl_easy_pause(c->job.easy, CURLPAUSE_CONT);
	}
	return (ssize_t)n;
}

/* ---- the request ---- */

static int add_header(struct forward_call *c, const char *name, const char *value)
{
	char line[FLEETAUTH_FIELD_MAX + 256];
	int n = snprintf(line, sizeof(line), "%s: %s", name, value);

	if (n < 0 || (size_t)n >= sizeof(line))
		return -E2BIG;
	c->hdrs = curl_slist_append(c->hdrs, line);
	return c->hdrs ? 0 : -ENOMEM;
}

/* The client's end-to-end headers, then the forwarding's own. */
static int request_headers(struct forward_call *c, const struct forward_request *rq)
{
	char sig[FLEETAUTH_VALUE_MAX];
	const char *client = rq->client ? rq->client : "";

	for (size_t i = 0; i < rq->n_headers; i++)
		if (!forward_hop_header(rq->headers[i].name) &&
		    add_header(c, rq->headers[i].name, rq->headers[i].value) < 0)
			return -E2BIG;
	if (fleetauth_sign(&c->f->auth, time_now_ms() / 1000, rq->method, rq->target,
			   client, sig) < 0)
		return -E2BIG;
	if (add_header(c, "X-Forwarded-For", client) < 0 ||
	    add_header(c, FLEETAUTH_HEADER, sig) < 0)
		return -E2BIG;
	/* No "Expect: 100-continue" round trip: bodies are small. */
	c->hdrs = curl_slist_append(c->hdrs, "Expect:");
	return 0;
}

/* owner_url without its trailing slashes, then the target. */
static int make_url(const struct forward_request *rq, char *url, size_t cap)
{
	size_t n = strlen(rq->owner_url);
	int len;

	while (n && rq->owner_url[n - 1] == '/')
		n--;
	if (rq->target[0] != '/')
		return -EINVAL;
	len = snprintf(url, cap, "%.*s%s", (int)n, rq->owner_url, rq->target);
	return len > 0 && (size_t)len < cap ? 0 : -E2BIG;
}

void forward_setup_easy(const struct forward *f, void *easy)
{
	CURL *e = easy;

	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, f->connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	if (f->cacert)
		curl_easy_setopt(e, CURLOPT_CAINFO, f->cacert);
	if (f->cert)
		curl_easy_setopt(e, CURLOPT_SSLCERT, f->cert);
	if (f->key)
		curl_easy_setopt(e, CURLOPT_SSLKEY, f->key);
}

static int setup(struct forward_call *c, const struct forward_request *rq)
{
	CURL *e = c->job.easy;
	char url[URL_MAX];

	if (make_url(rq, url, sizeof(url)) < 0 || request_headers(c, rq) < 0)
		return -EINVAL;
	forward_setup_easy(c->f, e);
	if (curl_easy_setopt(e, CURLOPT_URL, url) != CURLE_OK)
		return -EINVAL;
	/* The target goes as it came: no "/../" squashed, no redirect followed. */
	curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, rq->method);
	if (strcmp(rq->method, "HEAD") == 0)
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	if (rq->body_len || strcmp(rq->method, "POST") == 0 ||
	    strcmp(rq->method, "PUT") == 0) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)rq->body_len);
		curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, rq->body_len ? rq->body : "");
	}
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->hdrs);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->err);
	return 0;
}

static void call_free(struct forward_call *c)
{
	struct forward *f = c->f;

	LIST_REMOVE(c, entry);
	if (!c->ended)
		f->stats.in_flight--;
	curlev_remove(f->cv, &c->job);
	curl_easy_cleanup(c->job.easy);
	curl_slist_free_all(c->hdrs);
	ev_timer_free(c->deadline);
	buf_free(&c->head);
	buf_free(&c->window);
	free(c);
}

struct forward_call *forward_http(struct forward *f, const struct forward_request *rq,
				  forward_head_cb head, forward_body_cb body, void *user)
{
	struct forward_call *c = xcalloc(1, sizeof(*c));

	c->f = f;
	c->head_cb = head;
	c->body_cb = body;
	c->user = user;
	c->length = -1;
	buf_init(&c->head);
	buf_init(&c->window);
	c->deadline = ev_timer_new(f->loop, f->timeout_ms, 0, on_deadline, c);
	c->job.easy = curl_easy_init();
	c->job.done = on_done;
	c->job.user = c;
	LIST_INSERT_HEAD(&f->calls, c, entry);
	f->stats.in_flight++;
	f->stats.requests++;
	if (!c->job.easy || setup(c, rq) < 0 || curlev_add(f->cv, &c->job) < 0) {
		f->stats.failed++;
		call_free(c);
		return NULL;
	}
	return c;
}

void forward_cancel(struct forward_call *c)
{
	if (c)
		call_free(c);
}

static char *dup_or_null(const char *s)
{
	return s && s[0] ? xstrdup(s) : NULL;
}

struct forward *forward_new(struct ev_loop *loop, const struct forward_opts *o, char *err,
			    size_t errlen)
{
	struct forward *f;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "libcurl failed to start");
		return NULL;
	}
	f = xcalloc(1, sizeof(*f));
	f->loop = loop;
	f->cv = curlev_new(loop);
	if (!f->cv) {
		snprintf(err, errlen, "libcurl failed to make a multi handle");
		free(f);
		curl_global_cleanup();
		return NULL;
	}
	if (o->auth)
		f->auth = *o->auth;
	f->cacert = dup_or_null(o->cacert);
	f->cert = dup_or_null(o->cert);
	f->key = dup_or_null(o->key);
	f->connect_timeout_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 3000;
	f->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 15000;
	return f;
}

void forward_free(struct forward *f)
{
	if (!f)
		return;
	while (!LIST_EMPTY(&f->calls))
		call_free(LIST_FIRST(&f->calls));
	curlev_free(f->cv);
	fleetauth_clear(&f->auth);
	free(f->cacert);
	free(f->cert);
	free(f->key);
	free(f);
	curl_global_cleanup();
}

void forward_get_stats(const struct forward *f, struct forward_stats *s)
{
	*s = f->stats;
}

static void family(struct buf *out, const char *name, const char *type, const char *help,
		   uint64_t v)
{
	buf_appendf(out, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type,
		    name, (unsigned long long)v);
}

void forward_metrics(const struct forward *f, struct buf *out)
{
	static const struct forward_stats none;
	const struct forward_stats *s = f ? &f->stats : &none;

	family(out, "ptygate_forwarded_requests_total", "counter",
	       "REST requests forwarded to the gateway that owns their instance",
	       s->requests);
	family(out, "ptygate_forward_failures_total", "counter",
	       "forwarded REST requests with no answer from the owner (502/504)",
	       s->failed);
	family(out, "ptygate_forward_broken_total", "counter",
	       "forwarded REST answers the owner broke off mid-body (the "
	       "client's answer ended short of whole)",
	       s->broken);
	family(out, "ptygate_forwards_in_flight", "gauge",
	       "forwarded REST requests waiting for the owner's head or "
	       "streaming its body",
	       s->in_flight);
	family(out, "ptygate_relayed_connections", "gauge",
	       "WebSocket attaches relayed to the owning gateway now", s->relays_active);
	family(out, "ptygate_relayed_connections_total", "counter",
	       "WebSocket attaches relayed to the owning gateway", s->relays);
	family(out, "ptygate_relay_failures_total", "counter",
	       "forwarded attaches whose owner could not be reached", s->relays_failed);
	buf_appendf(out,
		    "# HELP ptygate_relay_bytes_total bytes relayed between clients and "
		    "owning gateways\n# TYPE ptygate_relay_bytes_total counter\n"
		    "ptygate_relay_bytes_total{direction=\"to_owner\"} %llu\n"
		    "ptygate_relay_bytes_total{direction=\"to_client\"} %llu\n",
		    (unsigned long long)s->relay_bytes_in,
		    (unsigned long long)s->relay_bytes_out);
}

struct relay_list *forward_relay_list(struct forward *f)
{
	return &f->relays;
}

struct forward_stats *forward_stats_of(struct forward *f)
{
	return &f->stats;
}

struct ev_loop *forward_loop(const struct forward *f)
{
	return f->loop;
}

struct curlev *forward_curlev(const struct forward *f)
{
	return f->cv;
}

const struct fleetauth *forward_auth(const struct forward *f)
{
	return &f->auth;
}

void forward_set_auth(struct forward *f, const struct fleetauth *auth)
{
	f->auth = *auth;
}
