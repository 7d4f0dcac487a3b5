/* conn: one client WebSocket connection after the upgrade: socket I/O,
   the WebSocket codec, the bounded output queue, heartbeat, the client
   ops of SPEC 2, 4 and 5, and the connection's end. */
#ifndef PTG_CONN_H
#define PTG_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "auth_jwt.h"
#include "link.pb-c.h"

struct gateway;
struct upstream;
struct wsframe;
struct MHD_UpgradeResponseHandle;

/* What the upgrade established (http.c fills it before the 101). */
struct attach_ctx {
	char instance_id[129];
	char session_id[129];
	struct jwt_claims claims;   /* the verified token */
	uint64_t current_sequence;  /* for binding_hello */
	struct upstream *up;
};

struct conn;

/* Takes over an upgraded socket: fd, the bytes MHD read past the
   handshake, and the handle to close through MHD when done. Sends
   binding_hello. The connection slot (gateway_slot_acquire) passes to
   the conn, which releases it when it ends. */
void conn_start(struct gateway *gw, int fd, const char *extra, size_t extra_len,
		struct MHD_UpgradeResponseHandle *urh, const struct attach_ctx *ctx);

/* A frame from the sidecar for this connection; wf is the encoded
   WebSocket frame shared by every recipient (the conn takes a ref). */
void conn_deliver(struct conn *c, const Ptg__Frame *f, struct wsframe *wf);
/* A reply to one of this connection's attach-scoped requests. */
void conn_on_reply(struct conn *c, const Ptg__Reply *r);
/* The link to the sidecar dropped: the attachment is gone. */
void conn_link_lost(struct conn *c);
/* Server shutdown: goodbye server_shutdown, close 1000. */
void conn_shutdown(struct conn *c);
/* The gateway's before-poll hook: writes what connections queued and
   frees the ones that ended. */
void conn_flush_all(struct gateway *gw);
/* Frees every connection at once (the loop is over). */
void conn_free_all(struct gateway *gw);

#endif
