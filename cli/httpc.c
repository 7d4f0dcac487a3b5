/* httpc: a thin libcurl easy-handle wrapper for the session REST calls.
   The bearer header is built here and wiped after the request, as it
   holds the token. Redirects are not followed: a token must never be
   replayed to a host the operator did not name. */
#include "httpc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>
#include <sodium.h>

/* One transfer: where its body goes. */
struct transfer {
	CURL *c;
	struct httpc_response *r;
	httpc_sink_fn sink; /* a 2xx body goes here as it comes; NULL: into r->body */
	void *user;
	bool sink_failed;
};

static int success(CURL *c)
{
	long status = 0;

	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	return status >= 200 && status <= 299;
}

/* libcurl's write callback: a streamed success to its sink, anything
   else appended to the body, refused past the cap (libcurl then fails
   the transfer with CURLE_WRITE_ERROR). */
static size_t take_body(char *p, size_t size, size_t nmemb, void *user)
{
	struct transfer *t = user;
	struct buf *b = &t->r->body;
	size_t n = size * nmemb;

	if (t->sink && success(t->c)) {
		if (t->sink(p, n, t->user) < 0) {
			t->sink_failed = true;
			return 0;
		}
		return n;
	}
	if (buf_size(b) + n > HTTPC_BODY_MAX)
		return 0;
	buf_append(b, p, n);
	return n;
}

/* The request headers; auth is the caller's wiped storage for the
   Authorization line. */
static struct curl_slist *headers(const char *bearer, const char *json, struct buf *auth)
{
	struct curl_slist *h = NULL;

	h = curl_slist_append(h, "Accept: application/json");
	if (json)
		h = curl_slist_append(h, "Content-Type: application/json");
	if (bearer) {
		buf_appendf(auth, "Authorization: Bearer %s", bearer);
		*buf_reserve(auth, 1) = '\0';
		h = curl_slist_append(h, (const char *)buf_head(auth));
	}
	return h;
}

static void setup(CURL *c, const char *method, const char *url, const char *json,
		  struct curl_slist *h, struct transfer *t, char *ebuf)
{
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, take_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
	if (t->sink) {
		/* A stream may take long; only one that stalls is given up. */
		curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)HTTPC_TIMEOUT_MS);
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME,
				 (long)(HTTPC_TIMEOUT_MS / 1000));
	} else {
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)HTTPC_TIMEOUT_MS);
	}
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_USERAGENT, "ptygate/" PTG_VERSION);
	if (json) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, json);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(json));
	} else if (!strcmp(method, "HEAD")) {
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	}
}

static int perform(const char *method, const char *url, const char *bearer,
		   const char *json, struct transfer *t, char *err, size_t errlen)
{
	char ebuf[CURL_ERROR_SIZE] = "";
	struct buf auth = BUF_INIT;
	struct curl_slist *h;
	CURLcode cc;
	int rc = 0;

	memset(t->r, 0, sizeof(*t->r));
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    !(t->c = curl_easy_init())) {
		snprintf(err, errlen, "libcurl failed to initialise");
		return -EIO;
	}
	h = headers(bearer, json, &auth);
	setup(t->c, method, url, json, h, t, ebuf);
	cc = curl_easy_perform(t->c);
	if (cc != CURLE_OK) {
		snprintf(err, errlen, "%s %s: %s", method, url,
			 t->sink_failed		   ? "cannot write what came"
			 : cc == CURLE_WRITE_ERROR ? "response body too large"
			 : ebuf[0]		   ? ebuf
						   : curl_easy_strerror(cc));
		rc = -EIO;
	} else {
		curl_easy_getinfo(t->c, CURLINFO_RESPONSE_CODE, &t->r->status);
		*buf_reserve(&t->r->body, 1) = '\0';
	}
	curl_easy_cleanup(t->c);
	curl_slist_free_all(h);
	if (auth.data)
		sodium_memzero(auth.data, auth.cap);
	buf_free(&auth);
	curl_global_cleanup();
	return rc;
}

int httpc_request(const char *method, const char *url, const char *bearer,
		  const char *json, struct httpc_response *r, char *err, size_t errlen)
{
	struct transfer t = {.r = r};

	return perform(method, url, bearer, json, &t, err, errlen);
}

int httpc_stream(const char *url, const char *bearer, httpc_sink_fn sink, void *user,
		 struct httpc_response *r, char *err, size_t errlen)
{
	struct transfer t = {.r = r, .sink = sink, .user = user};

	return perform("GET", url, bearer, NULL, &t, err, errlen);
}

void httpc_response_free(struct httpc_response *r)
{
	if (r)
		buf_free(&r->body);
}
