/* httpfleet: what the HTTP server does for a request it forwards to the
   owning gateway, and for the owner's answer: every header of the
   request gathered as it came (for forward.h), and the owner's headers
   put on the answer. Apart from http.c, which holds MHD's request. */
#ifndef PTG_HTTPFLEET_H
#define PTG_HTTPFLEET_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#include "buf.h"
#include "forward.h"
#include "peers.h"

struct fleetauth;

#define HTTPFLEET_HEADERS_MAX 128 /* a head within MHD's 16 KiB pool holds fewer */

struct httpfleet_headers {
	struct buf store; /* "name\0value\0" pairs */
	struct forward_header *h;
	size_t n;
	bool done;
};

/* The request's headers, gathered on the first call (at most
   HTTPFLEET_HEADERS_MAX); they live until httpfleet_clear. */
const struct forward_header *httpfleet_collect(struct MHD_Connection *c,
					       struct httpfleet_headers *hs, size_t *n);
void httpfleet_clear(struct httpfleet_headers *hs);
/* 1 when the request on c carries a fleet header that verifies under key
   (NULL: no fleet secret) for method and target: it came from a gateway
   of the fleet, and *client is the one address its X-Forwarded-For
   names. 0 otherwise (the routes refuse a header that does not verify). */
bool httpfleet_forwarded(const struct fleetauth *key, struct MHD_Connection *c,
			 const char *method, const char *target,
			 struct peer_addr *client);
/* Puts the owner's headers h[0, n) on resp; Upgrade and Connection are
   MHD's for a 101. */
void httpfleet_answer_headers(struct MHD_Response *resp, const struct forward_header *h,
			      size_t n);

#endif
