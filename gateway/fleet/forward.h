/* forward: a REST request for an instance another gateway of the fleet
   owns, sent there as it is (method, target, end-to-end headers, body)
   through libcurl on the loop (curlev), signed with the fleet's secret
   (fleetauth) and carrying the client's address in X-Forwarded-For; the
   owner's status and end-to-end headers come back bounded, then its
   body streamed through a bounded window: past FORWARD_WINDOW bytes not
   yet read the owner's transfer is paused, so a forward holds the same
   memory whatever the body's size and a slow client slows the owner.
   A deadline bounds the wait for the head and every pause of the owner
   mid-body: an owner that is down or silent is an answer (or a broken
   body) in seconds, never a hang. Mutual TLS when the operator gives a
   client certificate (--fleet-cert, --fleet-key) and a CA
   (--fleet-cacert) for https:// fleet URLs. */
#ifndef PTG_FORWARD_H
#define PTG_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fleetauth.h"
#include "list.h"

struct buf;
struct ev_loop;
struct forward;
struct forward_call;

#define FORWARD_HEADERS_MAX	 64	     /* headers in an owner's answer */
#define FORWARD_HEADER_BYTES_MAX (16 * 1024) /* their bytes together */
/* Body bytes a call holds for its client; the owner is paused past it. */
#define FORWARD_WINDOW (256 * 1024)

struct forward_opts {
	const struct fleetauth *auth;	 /* the fleet's key (copied) */
	const char *cacert, *cert, *key; /* PEM files for https:// owners, or NULL */
	long connect_timeout_ms;	 /* reaching the owner */
	long timeout_ms; /* the owner's head, and any silence of its body */
};

struct forward_header {
	const char *name, *value;
};

/* One request as the client sent it. */
struct forward_request {
	const char *owner_url; /* the owner's fleet URL: http[s]://HOST[:PORT][/] */
	const char *method;
	const char *target; /* raw request target, query included */
	const struct forward_header
	    *headers; /* the client's, hop-by-hop ones dropped here */
	size_t n_headers;
	const char *client; /* the client's address, sent as X-Forwarded-For */
	const void *body;
	size_t body_len;
};

/* The owner's head. rc: 0 with its status and headers, or -ECONNREFUSED
   (the owner could not be reached), -ETIMEDOUT, -E2BIG (its head passed
   a cap), -EIO (anything else) with a message in err. */
struct forward_answer {
	int rc;
	long status;
	const struct forward_header *headers; /* end-to-end ones only */
	size_t n_headers;
	int64_t length; /* the owner's Content-Length, or -1 */
	const char *err;
};

/* Called once from the loop (never from inside forward_http); a and
   what it points to live until it returns. With rc < 0 the call is
   freed when it returns; with rc 0 the body follows (forward_read) and
   the call lives until forward_cancel. */
typedef void (*forward_head_cb)(void *user, const struct forward_answer *a);
/* forward_read has something new to say: bytes, the body's end or its
   break. Called from the loop, possibly from inside forward_read. */
typedef void (*forward_body_cb)(void *user);

/* NULL with the reason in err when libcurl cannot start. */
struct forward *forward_new(struct ev_loop *loop, const struct forward_opts *o, char *err,
			    size_t errlen);
/* Cancels every call (no callback) and frees f. NULL is a no-op. */
void forward_free(struct forward *f);

/* Sends rq to its owner. Returns the call, or NULL when it cannot start
   (a bad URL, an over-long field): head is then never called. */
struct forward_call *forward_http(struct forward *f, const struct forward_request *rq,
				  forward_head_cb head, forward_body_cb body, void *user);
/* Up to cap bytes of the owner's body into dst, as read(2) says it:
   n > 0 bytes; 0 the body ended whole; -EAGAIN nothing yet (body is
   called when there is); another negative errno: the body broke (the
   owner went away -EIO, fell silent -ETIMEDOUT). */
ssize_t forward_read(struct forward_call *c, void *dst, size_t cap);
/* Ends a call, its transfer aborted if under way (the client went
   away), and frees it: head and body are not called again. NULL is a
   no-op. */
void forward_cancel(struct forward_call *c);

/* 1 when name is a hop-by-hop header (RFC 9110 7.6.1), or one the
   forwarding sets itself (Content-Length, X-Forwarded-For, the fleet
   header, Date): never copied from one side to the other. Host is
   kept: the owner sees the name the client asked for, as its Origin
   check and URLs need. */
bool forward_hop_header(const char *name);
/* pairs holds n_pairs headers, each name and value NUL-terminated one
   after the other: the ones forwarded (forward_hop_header's left out)
   as a new array pointing into pairs, *n of them. */
struct forward_header *forward_headers_of(const struct buf *pairs, size_t n_pairs,
					  size_t *n);
/* Calls in flight, and counters since start. */
struct forward_stats {
	uint64_t in_flight;
	uint64_t requests;	  /* calls started */
	uint64_t failed;	  /* calls that ended with rc < 0 */
	uint64_t broken;	  /* answers the owner broke off mid-body */
	uint64_t relays_active;	  /* WebSocket attaches relayed now (relay.c) */
	uint64_t relays;	  /* relays started */
	uint64_t relays_failed;	  /* attaches whose owner could not be reached */
	uint64_t relay_bytes_in;  /* client to owner */
	uint64_t relay_bytes_out; /* owner to client */
};
void forward_get_stats(const struct forward *f, struct forward_stats *s);
/* Appends the ptygate_forward_* and ptygate_relay_* families in the
   Prometheus text format (zeros for a NULL f: forwarding off). */
void forward_metrics(const struct forward *f, struct buf *out);
/* The list of relays started on f (relay.c keeps it). */
struct relay;
LIST_HEAD(relay_list, relay);
struct relay_list *forward_relay_list(struct forward *f);
/* The counters themselves, for relay.c to update. */
struct forward_stats *forward_stats_of(struct forward *f);
/* Applies o's TLS files, HTTP/1.1 and the protocol limits to easy (a
   CURL *), for every connection to another gateway (relay.c too). */
void forward_setup_easy(const struct forward *f, void *easy);
/* f's loop, its curl multi on that loop and its fleet key, for relay.c. */
struct ev_loop *forward_loop(const struct forward *f);
struct curlev *forward_curlev(const struct forward *f);
const struct fleetauth *forward_auth(const struct forward *f);
/* The fleet's key, read again (SIGHUP): what is signed from now on uses
   it; requests under way keep what they were signed with. */
void forward_set_auth(struct forward *f, const struct fleetauth *auth);

#endif
