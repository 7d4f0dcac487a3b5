/* ws: one WebSocket server connection's codec (RFC 6455), with no I/O.
   Received bytes go in through ws_feed; complete messages come out
   through callbacks; every byte wslay wants to send (pongs, close frames,
   pings) comes out through on_write, which must take it all (the
   connection appends it to its output queue, gateway/conn/outq.h).

   Outgoing data does not pass through wslay. A server text message is
   built once as a complete frame (struct wsframe: header + payload) and
   the same bytes are queued by reference on every connection that gets
   it. Mixing those frames and wslay's control frames in one output
   stream is safe because of how wslay writes: wslay_frame_send emits a
   frame's header and then its payload, and only stops inside a frame
   when the send callback takes fewer bytes than offered. on_write always
   takes everything, so every wslay_event_send call leaves wslay between
   frames: the output queue then only ever holds whole frames, whichever
   side produced them, and a shared frame appended after a flush can never
   land inside a control frame. The converse holds too: a shared frame is
   queued whole by one outq push. RFC 6455 5.4 allows control frames
   between any two frames, and our data messages are never fragmented.

   The frame layer's own protocol errors (a fragmented or oversized
   control frame, a close payload of one byte, a non-minimal length) are
   found by a header scan here before wslay sees the bytes, because wslay
   answers those with a close frame without a status code; they close
   with 1002 instead. The same scan holds a close frame back until it is
   whole, as wslay checks a close reason's UTF-8 only within one received
   chunk. Everything else is wslay's: 1002 for unmasked
   frames, reserved bits, bad opcodes and continuation errors, 1007 for
   text that is not UTF-8, 1009 past WS_MAX_MESSAGE. */
#ifndef PTG_WS_H
#define PTG_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest message a client may send (1 MiB, docs/protocol.md "Frames");
   more gets 1009. */
#define WS_MAX_MESSAGE (1024 * 1024)
/* Close codes this module emits or callers commonly use. */
#define WS_CLOSE_NORMAL	      1000
#define WS_CLOSE_PROTOCOL     1002
#define WS_CLOSE_NO_STATUS    1005
#define WS_CLOSE_INVALID_DATA 1007
#define WS_CLOSE_TOO_BIG      1009
#define WS_CLOSE_SERVER_ERROR 1011

struct ws;

/* Callbacks, each with the trailing user pointer given to ws_new. Only
   on_write is required. They run inside ws_feed (or, for on_write, also
   inside ws_send_ping and ws_send_close); none may free the ws or call
   ws_feed. */
struct ws_callbacks {
	/* Bytes to send, in order; must accept all n. */
	void (*on_write)(const uint8_t *p, size_t n, void *user);
	/* A complete text message, valid UTF-8 (not NUL-terminated). */
	void (*on_text)(const char *p, size_t n, void *user);
	/* A complete binary message of n bytes (the content is dropped). */
	void (*on_binary)(size_t n, void *user);
	/* The peer's close frame; code is 1005 when it had none. wslay has
	   already queued the echo, written when ws_feed returns. */
	void (*on_close)(uint16_t code, const char *reason, size_t n, void *user);
	/* A pong with its payload (at most 125 bytes). */
	void (*on_pong)(const uint8_t *p, size_t n, void *user);
};

/* Creates a codec for one server connection; cb is copied. */
struct ws *ws_new(const struct ws_callbacks *cb, void *user);
/* Frees it. NULL is a no-op. */
void ws_free(struct ws *ws);
/* Sets the largest message accepted (default WS_MAX_MESSAGE); a larger
   one ends the connection with 1009. */
void ws_set_max_message(struct ws *ws, size_t n);
/* Agrees permessage-deflate (RFC 7692, as wshandshake negotiated it:
   no context takeover either way) before the first byte is fed: client
   messages with RSV1 set are inflated whole, the inflated size held to
   the message limit (1009 past it, 1007 for data that does not inflate
   or text that is not UTF-8). The inflate state is one for the process,
   reset per message, so a connection holds none. */
void ws_set_deflate(struct ws *ws, bool on);

/* Feeds n received bytes: callbacks fire for what completes, then any
   frames wslay queued (pong, close echo, protocol-error close) are written
   through on_write before it returns. Returns 0 while the connection still
   reads, -ESHUTDOWN once reading has ended (a close was received, or sent
   for a protocol error); bytes past that point are discarded and the
   caller drains its output and closes. */
int ws_feed(struct ws *ws, const uint8_t *p, size_t n);

/* Queues a ping with up to 125 bytes of payload and flushes it (deferred
   to the end of ws_feed when called from a callback). Returns 0, -EINVAL
   for a longer payload, -ESHUTDOWN once a close is queued. */
int ws_send_ping(struct ws *ws, const void *p, size_t n);
/* Queues a close frame (code 0: none; reason up to 123 bytes of UTF-8)
   and flushes it like ws_send_ping. The caller sends no data frame after
   this. Returns 0, -EINVAL, or -ESHUTDOWN when a close is already queued. */
int ws_send_close(struct ws *ws, uint16_t code, const char *reason);
/* Whether a close frame is queued or written by this side (by
   ws_send_close, as an echo, or for a protocol error): no more data. */
bool ws_close_sent(const struct ws *ws);
/* Whether the peer's close frame has arrived. */
bool ws_close_received(const struct ws *ws);

/* A complete server text frame shared by reference between connections.
   Not thread-safe: the gateway is one event loop. */
struct wsframe {
	unsigned refs;
	bool deflate_tried;	  /* deflated was made, or found no gain */
	struct wsframe *deflated; /* the RSV1 variant, or NULL (owned) */
	size_t len;		  /* header + payload */
	uint8_t data[];		  /* FIN | text opcode, unmasked length, then payload */
};

/* Payloads under this many bytes are sent plain to every client (RFC
   7692 lets RSV1 differ per message). A keystroke's echo is a frame of
   about 200 bytes: compressing it saved some 30 of them and made every
   echo to a deflate client about 30 us slower at p50, zlib's state
   being cold between keystrokes (docs/benchmarks.md). Below 1 KiB a
   frame saves a few hundred bytes at most. */
#define WSFRAME_DEFLATE_MIN 1024

/* Builds the frame for a text message of len bytes (the caller vouches it
   is UTF-8, e.g. JSON from jansson). Returns it with one reference. */
struct wsframe *wsframe_text(const char *payload, size_t len);
/* The frame to send a client: f itself, or, when deflate was agreed,
   f's permessage-deflate variant (pmd.h: the payload deflated
   whole, RSV1 set; no context takeover, so the same bytes serve every
   client that agreed). The
   variant is made once, on first demand, and kept with f; f itself is
   returned for a small payload or one deflate does not shrink. No
   reference is taken. */
struct wsframe *wsframe_pick(struct wsframe *f, bool deflate);
/* Takes another reference; returns f. */
struct wsframe *wsframe_ref(struct wsframe *f);
/* Drops a reference, freeing the frame at zero. NULL is a no-op. */
void wsframe_unref(struct wsframe *f);

#endif
