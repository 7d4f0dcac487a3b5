/* etcd: a client of etcd's v3 JSON gateway on the event loop, through
   libcurl's multi socket interface as curlev drives it (see etcd.h). */
#include "etcd.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "buf.h"
#include "curlev.h"
#include "list.h"
#include "xalloc.h"

#define ETCD__URL_MAX	1024
#define ETCD__TOKEN_MAX 1024
/* A streamed answer is handed over as it comes; what may pile up at its
   end unread is small. */
#define ETCD__STREAM_TAIL (64 * 1024)

struct etcd {
	struct curlev *cv;
	char *urls[ETCD_MAX_ENDPOINTS];
	size_t n_urls;
	size_t cur;
	char *cacert, *cert, *key;
	long connect_timeout_ms;
	char auth[ETCD__TOKEN_MAX + 32]; /* "Authorization: TOKEN", or "" */
	LIST_HEAD(, etcd_req) reqs;	 /* in flight */
	size_t n_reqs;
};

struct etcd_req {
	struct curlev_job job; /* first: the job is the request */
	struct etcd *e;
	LIST_ENTRY(etcd_req) entry;
	CURL *easy;
	struct curl_slist *hdrs;
	char *body;
	size_t endpoint;
	struct buf resp;
	size_t max_body;
	bool too_big;
	bool aborted;
	etcd_data_cb on_data;
	etcd_done_cb done;
	void *user;
	char err[CURL_ERROR_SIZE];
};

/* ---- requests ---- */

static size_t on_write(char *data, size_t size, size_t nmemb, void *user)
{
	struct etcd_req *q = user;
	size_t n = size * nmemb;

	if (q->on_data) {
		if (q->on_data(q->user, data, n)) {
			q->aborted = true;
			return 0;
		}
		return n;
	}
	if (buf_size(&q->resp) + n > q->max_body) {
		q->too_big = true;
		return 0;
	}
	buf_append(&q->resp, data, n);
	return n;
}

static int rc_of(const struct etcd_req *q, CURLcode res)
{
	if (q->too_big)
		return -E2BIG;
	if (q->aborted)
		return -ECANCELED;
	return curlev_errno(res);
}

static void unlink_req(struct etcd_req *q)
{
	struct etcd *e = q->e;

	LIST_REMOVE(q, entry);
	e->n_reqs--;
	curlev_remove(e->cv, &q->job);
	curl_easy_cleanup(q->easy);
	curl_slist_free_all(q->hdrs);
	free(q->body);
	buf_free(&q->resp);
	free(q);
}

static void finish(struct etcd_req *q, CURLcode res)
{
	struct etcd *e = q->e;
	long status = 0;
	int rc = rc_of(q, res);
	const char *err = q->err[0] ? q->err : curl_easy_strerror(res);

	curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &status);
	/* A transport failure or a server error: the next request tries the
	   next member. */
	if ((rc < 0 && rc != -E2BIG && rc != -ECANCELED) || status >= 500)
		if (q->endpoint == e->cur)
			e->cur = (e->cur + 1) % e->n_urls;
	buf_append(&q->resp, "", 1);
	q->done(q->user, rc, status, (const char *)buf_head(&q->resp),
		buf_size(&q->resp) - 1, rc < 0 ? err : "");
	unlink_req(q);
}

static void on_done(struct curlev_job *job, CURLcode res)
{
	finish((struct etcd_req *)job, res);
}

static void set_tls(const struct etcd *e, CURL *c)
{
	if (e->cacert)
		curl_easy_setopt(c, CURLOPT_CAINFO, e->cacert);
	if (e->cert)
		curl_easy_setopt(c, CURLOPT_SSLCERT, e->cert);
	if (e->key)
		curl_easy_setopt(c, CURLOPT_SSLKEY, e->key);
}

static CURL *make_easy(struct etcd *e, struct etcd_req *q, const char *path, size_t len)
{
	char url[ETCD__URL_MAX + 256];
	CURL *c = curl_easy_init();

	if (!c)
		return NULL;
	snprintf(url, sizeof(url), "%s%s", e->urls[e->cur], path);
	q->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	if (e->auth[0])
		q->hdrs = curl_slist_append(q->hdrs, e->auth);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, q->hdrs);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, q->body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, q);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, q->err);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, e->connect_timeout_ms);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 5L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 2L);
	set_tls(e, c);
	return c;
}

static struct etcd_req *start(struct etcd *e, const char *path, const char *body,
			      size_t len, etcd_data_cb on_data, etcd_done_cb done,
			      void *user)
{
	struct etcd_req *q = xcalloc(1, sizeof(*q));

	q->e = e;
	q->body = xmalloc(len + 1);
	memcpy(q->body, body, len);
	q->body[len] = '\0';
	q->endpoint = e->cur;
	q->on_data = on_data;
	q->done = done;
	q->user = user;
	buf_init(&q->resp);
	q->easy = make_easy(e, q, path, len);
	q->job.easy = q->easy;
	q->job.done = on_done;
	if (!q->easy || curlev_add(e->cv, &q->job) < 0)
		abort(); /* out of memory in libcurl: as xmalloc does */
	LIST_INSERT_HEAD(&e->reqs, q, entry);
	e->n_reqs++;
	return q;
}

struct etcd_req *etcd_post(struct etcd *e, const char *path, const char *body, size_t len,
			   long timeout_ms, size_t max_body, etcd_done_cb done,
			   void *user)
{
	struct etcd_req *q = start(e, path, body, len, NULL, done, user);

	q->max_body = max_body;
	curl_easy_setopt(q->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
	return q;
}

struct etcd_req *etcd_stream(struct etcd *e, const char *path, const char *body,
			     size_t len, etcd_data_cb on_data, etcd_done_cb done,
			     void *user)
{
	struct etcd_req *q = start(e, path, body, len, on_data, done, user);

	q->max_body = ETCD__STREAM_TAIL;
	return q;
}

int etcd_post_blocking(struct etcd *e, const char *path, const char *body, size_t len,
		       long timeout_ms)
{
	struct etcd_req *q = xcalloc(1, sizeof(*q));
	CURLcode res;

	q->e = e;
	q->body = xmalloc(len + 1);
	memcpy(q->body, body, len);
	q->body[len] = '\0';
	q->max_body = ETCD__STREAM_TAIL;
	buf_init(&q->resp);
	q->easy = make_easy(e, q, path, len);
	if (!q->easy)
		abort(); /* out of memory in libcurl: as xmalloc does */
	curl_easy_setopt(q->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
	res = curl_easy_perform(q->easy);
	curl_easy_cleanup(q->easy);
	curl_slist_free_all(q->hdrs);
	free(q->body);
	buf_free(&q->resp);
	free(q);
	return res == CURLE_OK ? 0 : -EIO;
}

void etcd_cancel(struct etcd_req *q)
{
	if (q)
		unlink_req(q);
}

/* ---- the client ---- */

static int parse_endpoints(struct etcd *e, const char *list, char *err, size_t errlen)
{
	const char *p = list;

	while (*p) {
		size_t n = strcspn(p, ",");

		if (e->n_urls == ETCD_MAX_ENDPOINTS || n == 0 || n > ETCD__URL_MAX ||
		    !((n > 7 && strncmp(p, "http://", 7) == 0) ||
		      (n > 8 && strncmp(p, "https://", 8) == 0))) {
			snprintf(
			    err, errlen,
			    "bad etcd endpoint list \"%.200s\": each must be http:// "
			    "or https:// and there may be at most %d",
			    list, ETCD_MAX_ENDPOINTS);
			return -1;
		}
		/* A trailing slash would double the path's own. */
		while (n > 0 && p[n - 1] == '/')
			n--;
		e->urls[e->n_urls++] = xstrndup(p, n);
		p += n;
		p += strspn(p, "/");
		if (*p == ',')
			p++;
	}
	if (!e->n_urls) {
		snprintf(err, errlen, "no etcd endpoint");
		return -1;
	}
	return 0;
}

static char *dup_or_null(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

struct etcd *etcd_new(struct ev_loop *loop, const struct etcd_opts *o, char *err,
		      size_t errlen)
{
	struct etcd *e = xcalloc(1, sizeof(*e));

	if (parse_endpoints(e, o->endpoints, err, errlen) < 0) {
		etcd_free(e);
		return NULL;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    !(e->cv = curlev_new(loop))) {
		snprintf(err, errlen, "libcurl failed to start");
		etcd_free(e);
		return NULL;
	}
	e->cacert = dup_or_null(o->cacert);
	e->cert = dup_or_null(o->cert);
	e->key = dup_or_null(o->key);
	e->connect_timeout_ms = o->connect_timeout_ms;
	return e;
}

void etcd_free(struct etcd *e)
{
	if (!e)
		return;
	while (!LIST_EMPTY(&e->reqs))
		unlink_req(LIST_FIRST(&e->reqs));
	curlev_free(e->cv);
	for (size_t i = 0; i < e->n_urls; i++)
		free(e->urls[i]);
	free(e->cacert);
	free(e->cert);
	free(e->key);
	free(e);
}

void etcd_set_token(struct etcd *e, const char *token)
{
	if (token && strlen(token) < ETCD__TOKEN_MAX)
		snprintf(e->auth, sizeof(e->auth), "Authorization: %s", token);
	else
		e->auth[0] = '\0';
}

const char *etcd_endpoint(const struct etcd *e)
{
	return e->urls[e->cur];
}
