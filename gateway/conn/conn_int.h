/* conn_int: a connection's fields, shared by conn.c (socket, WebSocket,
   queue, heartbeat, ending) and conn_ops.c (client ops, sidecar frames
   and replies). Not for any other module. */
#ifndef PTG_CONN_INT_H
#define PTG_CONN_INT_H

#include <stdbool.h>

#include <jansson.h>

#include "buf.h"
#include "conn.h"
#include "envelope.h"
#include "ev.h"
#include "frames.h"
#include "outq.h"
#include "upstream.h"
#include "ws.h"

enum conn_state {
	CONN_OPEN,    /* hello sent, not joined */
	CONN_JOINING, /* Attach sent, waiting for the reply */
	CONN_JOINED,
	CONN_LEAVING, /* Detach sent, waiting for the reply */
	CONN_CLOSING, /* our close frame is queued: no more data */
};

/* A ptygate.decide_control sent to the sidecar, awaiting its reply: the
   ops make it, the reply or the connection's end frees it. */
struct decision {
	struct conn *c;
	uint64_t request_id;
	char op_id[PTG_MSG_ID_MAX_BYTES + 1];
	struct envelope_decide d;
};

struct conn {
	const struct conn_host *host;
	struct upstream *up;	       /* the instance's link; NULL once it is gone */
	bool started;		       /* in the set, holding the connection slot */
	LIST_ENTRY(conn) all_entry;    /* host->conns->all */
	TAILQ_ENTRY(conn) dirty_entry; /* in a conn_set FIFO */
	struct conn_fifo *dirty;       /* which one; NULL: none */
	SLIST_ENTRY(conn) dead_entry;
	bool dead;	  /* freed by the before-poll hook */
	int counted_role; /* the metrics gauge it is in (0: pending) */

	int fd;
	struct ev_io *io;
	struct conn_socket sock; /* who gets the socket back at the end */
	struct ws *ws;
	struct outq q;
	struct attach_ctx ctx;
	char log_ctx[256];
	unsigned serial;

	enum conn_state state;
	bool spoke;		/* the first client frame has arrived */
	bool pty_extension;	/* activated by the first frame */
	bool control_extension; /* control approval: activated by the first frame */
	json_t *service_params;
	char trace_id[PTG_TASK_ID_MAX + 1];

	uint64_t attach_id;		   /* set at the join; 0 when there is none */
	uint64_t pending_request;	   /* Attach or Detach awaiting its reply */
	struct decision *pending_decision; /* a DecideControl awaiting its reply */
	char pending_op_id[PTG_MSG_ID_MAX_BYTES + 1];
	int role; /* Ptg__Role */
	char client_id[64];
	bool lagged; /* dropped output, awaiting the Keyframe */
	unsigned violations;
	struct task_conn *tasks; /* task_ops.c; NULL until a task op */

	bool paused;	       /* queue over the cap: not reading */
	int64_t over_since_ms; /* when it went over */
	bool throttled;	       /* over the op rate: not reading */
	bool write_cut;	       /* its last write stopped at its bound, not EAGAIN */
	int64_t op_tokens;     /* the op rate bucket, in 1/1000 ops */
	int64_t op_tokens_ms;  /* when it was last refilled */

	int64_t last_rx_ms; /* the last whole frame or pong read */
	int64_t ping_sent_ms;
	struct ev_timer *heartbeat;
	struct ev_timer *expiry;
	struct ev_timer *linger; /* bounds the close handshake */
};

/* Spends one op of the connection's rate (--max-ops-per-sec). Ops are
   never refused: over the rate, the connection is not read until its
   bucket refills (the ops already read are still handled). */
void conn_take_op(struct conn *c);

/* Has the before-poll hook write this connection's queue. */
void conn_mark_dirty(struct conn *c);
/* binding_goodbye, then close code. */
void conn_goodbye(struct conn *c, enum frames_goodbye_reason reason, uint16_t code);
/* Closes with code (no goodbye): no more data is queued after this. */
void conn_close(struct conn *c, uint16_t code, const char *reason);
/* Moves the connection to the metrics gauge of role (0: not joined). */
void conn_count_role(struct conn *c, int role);
/* c's role from the sidecar: kept, counted, and a controller's reads
   made urgent. */
void conn_take_role(struct conn *c, int role);
/* Refreshes the log context after the client id or trace id changed. */
void conn_update_log_ctx(struct conn *c);

#endif
