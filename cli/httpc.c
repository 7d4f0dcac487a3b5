/* httpc: a thin libcurl easy-handle wrapper for the session REST calls.
   The bearer header is built here and wiped after the request, as it
   holds the token. Redirects are not followed: a token must never be
   replayed to a host the operator did not name. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>
#include <sodium.h>

#include "httpc.h"

/* libcurl's write callback: appends to the body, refusing past the cap. */
static size_t collect_body(char *p, size_t size, size_t nmemb, void *user)
{
	struct buf *b = user;
	size_t n = size * nmemb;

	if (buf_size(b) + n > HTTPC_BODY_MAX)
		return 0; /* libcurl fails the transfer with CURLE_WRITE_ERROR */
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
		  struct curl_slist *h, struct httpc_response *r, char *ebuf)
{
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)HTTPC_TIMEOUT_MS);
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

int httpc_request(const char *method, const char *url, const char *bearer,
		  const char *json, struct httpc_response *r, char *err, size_t errlen)
{
	char ebuf[CURL_ERROR_SIZE] = "";
	struct buf auth = BUF_INIT;
	struct curl_slist *h;
	CURLcode cc;
	CURL *c;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    !(c = curl_easy_init())) {
		snprintf(err, errlen, "libcurl failed to initialise");
		return -EIO;
	}
	h = headers(bearer, json, &auth);
	setup(c, method, url, json, h, r, ebuf);
	cc = curl_easy_perform(c);
	if (cc != CURLE_OK) {
		snprintf(err, errlen, "%s %s: %s", method, url,
			 cc == CURLE_WRITE_ERROR ? "response body too large"
			 : ebuf[0]		 ? ebuf
						 : curl_easy_strerror(cc));
		rc = -EIO;
	} else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
		*buf_reserve(&r->body, 1) = '\0';
	}
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	if (auth.data)
		sodium_memzero(auth.data, auth.cap);
	buf_free(&auth);
	curl_global_cleanup();
	return rc;
}

void httpc_response_free(struct httpc_response *r)
{
	if (r)
		buf_free(&r->body);
}
