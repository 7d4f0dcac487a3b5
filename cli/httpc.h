/* httpc: one blocking HTTP request through libcurl, as the REST commands
   need it: a method, a URL, an optional JSON body and a bearer token in,
   the status and body out. (Named httpc, not http, because gateway/http/http.h
   is the server's module and shares the include path.) */
#ifndef PTG_CLI_HTTPC_H
#define PTG_CLI_HTTPC_H

#include <stddef.h>

#include "buf.h"

#define HTTPC_BODY_MAX	 (16 * 1024 * 1024) /* a larger response is an error */
#define HTTPC_TIMEOUT_MS 30000

struct httpc_response {
	long status;	 /* HTTP status code */
	struct buf body; /* the response body, followed by a NUL outside its size */
};

/* Sends method to url with "Authorization: Bearer <bearer>" (bearer may be
   NULL) and, when json is non-NULL, that body as application/json. Fills
   *r, which the caller releases with httpc_response_free. Returns 0 for
   any HTTP status, or -EIO with a one-line reason in err (no connection,
   timeout, oversized body). */
int httpc_request(const char *method, const char *url, const char *bearer,
		  const char *json, struct httpc_response *r, char *err, size_t errlen);
/* Takes the next n bytes of a streamed body; <0 cuts the transfer. */
typedef int (*httpc_sink_fn)(const void *p, size_t n, void *user);
/* GETs url as httpc_request does, but a 2xx answer's body goes to sink
   as it arrives, whatever its size (r->body stays empty), and only a
   transfer that stalls for HTTPC_TIMEOUT_MS times out; any other
   answer's body is in r->body for its error. Returns 0 when the whole
   body came (a cut chunked answer is -EIO), or -EIO with the reason in
   err. */
int httpc_stream(const char *url, const char *bearer, httpc_sink_fn sink, void *user,
		 struct httpc_response *r, char *err, size_t errlen);
/* Frees the body. NULL is a no-op. */
void httpc_response_free(struct httpc_response *r);

#endif
