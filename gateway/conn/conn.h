/* conn: one client WebSocket connection after the upgrade: socket I/O,
   the WebSocket codec, the bounded output queue, heartbeat, the client
   ops of SPEC 2, 4 and 5, and the connection's end. */
#ifndef PTG_CONN_H
#define PTG_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth_jwt.h"
#include "http.h"
#include "link.pb-c.h"
#include "ptg_limits.h"

struct gateway;

/* What the upgrade established (http.c fills it before the 101). No
   link pointer: the connection looks its instance's link up by id when
   it starts, and the connection set takes it away from the connection
   before an instance's link is freed. */
struct attach_ctx {
	char instance_id[PTG_ID_MAX + 1];
	char session_id[PTG_ID_MAX + 1];
	struct jwt_claims claims;  /* the verified token */
	uint64_t current_sequence; /* for binding_hello */
	bool deflate;		   /* permessage-deflate agreed */
	int64_t requested_us;	   /* the upgrade request's start; 0 once timed */
};

struct conn;

/* How long one conn_set_flush writes to observers (see there). */
#define CONN_FAN_SLICE_US 2000
/* What one observer may be written in one turn's slice. The slice is
   checked between observers, and a socket with a large receive window
   (loopback, a fast path) takes megabytes in one go: with 1,000
   observers one observer's write was measured at up to 77 ms, turns at
   20-40 ms, and the controller's input and the link waited that long.
   The rest of its queue goes on a later turn. */
#define CONN_FAN_WRITE_MAX (128 * 1024)

/* Connections with output to write, oldest first. */
struct conn_fifo {
	struct conn *head, *tail;
};

/* The connection set: the one owner of every upgraded connection of the
   gateway. A connection is never freed inside its own callbacks: it is
   moved to `dead` and freed by conn_set_flush before the next poll.
   Output is written controllers first: an observer's write waits for the
   turn's fan-out slice, a controller's never (see conn_set_flush). */
struct conn_set {
	struct conn *all;	/* every started connection */
	struct conn_fifo first; /* to write this turn: all but joined observers */
	struct conn_fifo fan;	/* joined observers, written within the slice */
	struct conn *dead;	/* connections to free before the next poll */
};

/* Before the 101: a connection for ctx with everything it needs but its
   socket. NULL (logged, counted in /metrics) when the gateway cannot set
   one up now: the caller refuses the upgrade with 503. */
struct conn *conn_new(struct gateway *gw, const struct attach_ctx *ctx);
/* The upgrade did not happen after all: frees c (the connection slot was
   never passed to it). */
void conn_discard(struct conn *c);
/* After the 101: c takes over the upgraded socket fd, the bytes MHD read
   past the handshake, and what it holds of the listener (given back
   with http_release when it ends); joins the gateway's connection set
   and sends binding_hello. The connection slot (gateway_slot_acquire)
   passes to c, which releases it when it ends. */
void conn_start(struct conn *c, int fd, const char *extra, size_t extra_len,
		const struct http_hold *hold);

/* The gateway's before-poll hook: writes what connections queued and
   frees the ones that ended. Every connection but joined observers is
   written in full; observers, oldest first, for at most
   CONN_FAN_SLICE_US a call and CONN_FAN_WRITE_MAX bytes each, so a turn
   stays short with a thousand of them and the link and the controllers
   are served every few milliseconds.
   Observers left over are written on the next turns (the loop does not
   sleep meanwhile); while they wait their queues grow, and one that
   overflows falls behind (SPEC 5.3) like any slow client. */
void conn_set_flush(struct conn_set *s);
/* conn_set_flush without the observers' slice: one slice a turn. */
void conn_set_flush_first(struct conn_set *s);
/* Frees every connection at once (the loop is over). */
void conn_set_free(struct conn_set *s);
/* Server shutdown: goodbye server_shutdown, close 1000, to every one. */
void conn_set_shutdown(struct conn_set *s);
/* The instance is about to be removed (SIGHUP): each of its connections
   is detached, told binding_goodbye {reason: other} and closed with 4404,
   and lets go of the instance's link, which may then be freed. */
void conn_set_drop_instance(struct conn_set *s, const char *instance_id);
int conn_set_empty(const struct conn_set *s);
/* Bytes queued toward clients: in all, and in the deepest queue. */
void conn_set_queue_stats(const struct conn_set *s, uint64_t *total, uint64_t *max);

#endif
