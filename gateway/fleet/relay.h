/* relay: a WebSocket attach for an instance another gateway owns. The
   opening: connect to the owner (libcurl, connect-only, so TLS and
   client certificates as for REST), send the client's upgrade request
   with X-Forwarded-For and the fleet header, and read the owner's
   answer head; a non-101 comes back whole (bounded) for the client, a
   101 with the headers the client's 101 must carry. Then the relay:
   bytes both ways as they are (no WebSocket decoding), through two
   bounded buffers; a side is not read while the buffer toward the
   other is full, so a slow reader slows its writer on the other side
   (backpressure both ways). Either side ending ends both, after what
   is buffered toward the other has been written (bounded in time). */
#ifndef PTG_RELAY_H
#define PTG_RELAY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "forward.h"

#define RELAY_BUF_MAX  (256 * 1024) /* bytes buffered in each direction */
#define RELAY_HEAD_MAX (16 * 1024)  /* the owner's answer head */
#define RELAY_BODY_MAX (64 * 1024)  /* a refusal's body */
#define RELAY_FLUSH_MS 5000	    /* writing what is left after a side ended */

struct relay;

/* The owner's answer to the upgrade. rc 0: status, end-to-end headers
   and (for a non-101) the body; rc < 0: -ECONNREFUSED, -ETIMEDOUT, or
   -EPROTO for an answer that is no HTTP/1.1 head or passes a cap, with
   err. */
struct relay_answer {
	int rc;
	unsigned status;
	const struct forward_header *headers;
	size_t n_headers;
	const uint8_t *body;
	size_t body_len;
	const char *err;
};
/* Called once, from the loop. On a 101 the relay waits for relay_start;
   otherwise the caller relay_frees it (after the callback, or inside). */
typedef void (*relay_answer_cb)(void *user, const struct relay_answer *a);
/* Both sides are done: the client's fd is no longer used; the caller
   closes it and relay_frees r (inside the callback is fine). */
typedef void (*relay_end_cb)(void *user, struct relay *r);

/* Opens the upgrade rq (GET, its headers as the client sent them: the
   Sec-WebSocket-* ones go on; Connection and Upgrade are set here) to
   rq->owner_url within timeout_ms. NULL when it cannot start. */
struct relay *relay_open(struct forward *f, const struct forward_request *rq,
			 long timeout_ms, relay_answer_cb cb, void *user);
/* The client has its 101: relays between client_fd (a non-blocking
   socket the caller keeps owning) and the owner, client_extra (bytes the
   client sent after its request head) going to the owner first. Idle
   idle_ms both ways (0: never) ends it. */
void relay_start(struct relay *r, int client_fd, const void *client_extra,
		 size_t extra_len, int64_t idle_ms, relay_end_cb end, void *user);
/* Ends r at any stage without callbacks. NULL is a no-op. */
void relay_free(struct relay *r);
/* Shutdown: ends every relay started on f now, each end callback called
   (which closes the client's socket and frees the relay) before the
   listeners that gave the sockets go. */
void relay_close_all(struct forward *f);

/* Parses an HTTP/1.x answer head in p[0, n): returns the head's length
   (through its blank line) with the status and the "name\0value\0"
   pairs in pairs (n_pairs of them); 0 when the head is not complete yet;
   -EPROTO when it is not a head, or -E2BIG past RELAY_HEAD_MAX or
   FORWARD_HEADERS_MAX. A pure function: the opening's parser and its
   fuzzing entry point. */
struct buf;
ssize_t relay_parse_head(const char *p, size_t n, unsigned *status, struct buf *pairs,
			 size_t *n_pairs);

#endif
