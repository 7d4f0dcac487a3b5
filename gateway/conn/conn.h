/* conn: one client WebSocket connection after the upgrade: socket I/O,
   the WebSocket codec, the bounded output queue, heartbeat, the client
   ops (docs/protocol.md, "Client ops"), and the connection's end. */
#ifndef PTG_CONN_H
#define PTG_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth_jwt.h"
#include "buf.h"
#include "frames.h"
#include "link.pb-c.h"
#include "list.h"
#include "ptg_limits.h"

struct conn;
struct conn_set;
struct envelope;
struct ev_loop;
struct json_t;
struct task_conn;
struct gw_config;
struct metrics;
struct upstream;

/* What a connection needs from its owner, and all it sees of it: given
   at conn_new, it outlives every connection. The connection never
   reaches the gateway as a whole. */
struct conn_host {
	struct ev_loop *loop;
	const struct gw_config *cfg; /* the limits: queue, op rate, frames, heartbeat */
	const struct jwt_policy *policy; /* the token's expiry leeway */
	struct metrics *metrics;
	struct conn_set *conns; /* the set every started connection joins */
	void *owner;		/* the first argument of the calls below */
	/* The link of instance_id, or NULL when the gateway has no such
	   instance (any more). */
	struct upstream *(*upstream)(void *owner, const char *instance_id);
	/* Gives back the connection slot reserved for principal on instance
	   before the 101. */
	void (*slot_release)(void *owner, const char *principal, const char *instance);
	/* The A2A task ops, served above the connection (task_ops.h): a
	   task frame from the client, and the connection letting go of its
	   instance's link (when it ends, or the instance is removed). */
	void (*task_op)(struct conn *c, const struct envelope *env);
	void (*tasks_gone)(struct conn *c);
	/* The client ops (docs/protocol.md), served above the socket and the
	   WebSocket: one whole text frame from the client. */
	void (*client_text)(struct conn *c, const char *p, size_t n);
};

/* Whoever handed the connection its socket: when the connection ends,
   release(hold, fd) closes fd (or has it closed) and lets go of what
   hold counted for it. */
struct conn_socket {
	void (*release)(void *hold, int fd);
	void *hold;
};

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

/* How long one conn_set_flush writes to observers (see there): the most
   the link and the controllers wait for their turn. With 1,000
   observers of a flood, 2 ms held the controller's echo p99 at 100-120
   ms; 0.5 ms brought it to 69-78 ms and the session 1.27x faster, for
   0.88x-0.99x of the observers' aggregate (docs/benchmarks.md). */
#define CONN_FAN_SLICE_US 500
/* What one observer may be written in one turn's slice. The slice is
   checked between observers, and a socket with a large receive window
   (loopback, a fast path) takes megabytes in one go: with 1,000
   observers one observer's write was measured at up to 77 ms, turns at
   20-40 ms, and the controller's input and the link waited that long.
   The rest of its queue goes on a later turn. */
#define CONN_FAN_WRITE_MAX (128 * 1024)

/* Connections with output to write, oldest first. */
TAILQ_HEAD(conn_fifo, conn);

/* The connection set: the one owner of every upgraded connection of the
   gateway. A connection is never freed inside its own callbacks: it is
   moved to `dead` and freed by conn_set_flush before the next poll.
   Output is written controllers first: an observer's write waits for the
   turn's fan-out slice, a controller's never (see conn_set_flush). */
struct conn_set {
	LIST_HEAD(, conn) all;	 /* every started connection */
	struct conn_fifo first;	 /* to write this turn: all but joined observers */
	struct conn_fifo fan;	 /* joined observers, written within the slice */
	SLIST_HEAD(, conn) dead; /* connections to free before the next poll */
};

/* An empty set. */
void conn_set_init(struct conn_set *s);

/* Before the 101: a connection for ctx with everything it needs but its
   socket. NULL (logged, counted in /metrics) when the gateway cannot set
   one up now: the caller refuses the upgrade with 503. */
struct conn *conn_new(const struct conn_host *host, const struct attach_ctx *ctx);
/* The upgrade did not happen after all: frees c (the connection slot was
   never passed to it). */
void conn_discard(struct conn *c);
/* After the 101: c takes over the upgraded socket fd, the bytes MHD read
   past the handshake, and sock, given back through sock->release when
   it ends; joins the host's connection set and sends binding_hello.
   The connection slot reserved before the 101 passes to c, which
   releases it (host->slot_release) when it ends. */
void conn_start(struct conn *c, int fd, const char *extra, size_t extra_len,
		const struct conn_socket *sock);

/* The gateway's before-poll hook: writes what connections queued and
   frees the ones that ended. Every connection but joined observers is
   written in full; observers, oldest first, for at most
   CONN_FAN_SLICE_US a call and CONN_FAN_WRITE_MAX bytes each, so a turn
   stays short with a thousand of them and the link and the controllers
   are served every few milliseconds.
   Observers left over are written on the next turns (the loop does not
   sleep meanwhile); while they wait their queues grow, and one that
   overflows falls behind like any slow client (docs/protocol.md, "A
   slow connection"). */
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
bool conn_set_empty(const struct conn_set *s);
/* Bytes queued toward clients: in all, and in the deepest queue. */
void conn_set_queue_stats(const struct conn_set *s, uint64_t *total, uint64_t *max);

/* One whole client text frame: the client ops (conn_ops.c), what the
   owner gives as conn_host.client_text. */
void conn_handle_text(struct conn *c, const char *p, size_t n);

/* What the task ops (task_ops.h) see of a connection and do with it. */

/* Queues a complete JSON text as one WebSocket frame of its own. */
void conn_send_json(struct conn *c, const struct buf *json);
/* Queues an Error frame echoing id; counts a violation for
   INVALID_REQUEST and UNSUPPORTED_OPERATION. */
void conn_send_error(struct conn *c, enum frames_code code, const char *id,
		     const char *message);
/* The link to the sidecar dropped: the attachment is gone. */
void conn_link_lost(struct conn *c);
/* The connection has ended (it is only waiting to be freed). */
bool conn_ended(const struct conn *c);
/* Hello sent, and no join held, asked for or being left, nor closing. */
bool conn_unjoined(const struct conn *c);
/* Whether a frame of len bytes would take the connection's non-empty
   queue over --max-queue-bytes. */
bool conn_queue_full_for(const struct conn *c, size_t len);
/* The instance's link; NULL once it is gone. */
struct upstream *conn_upstream(const struct conn *c);
const struct attach_ctx *conn_attach_ctx(const struct conn *c);
const char *conn_log_ctx(const struct conn *c);
/* The client's trace id ("" when it sent none). */
const char *conn_trace_id(const struct conn *c);
/* The client's service_parameters (NULL when it sent none). */
struct json_t *conn_service_params(const struct conn *c);
/* Where the task ops keep their state for c (NULL until a task op). */
struct task_conn **conn_tasks(struct conn *c);

#endif
