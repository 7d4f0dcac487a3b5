/* bench_ws: many pty-ws/v1 client connections in one process on one
   epoll loop, for the load client (bench_client.c).

   The upgrade request and its answer are checked with the CLI's pure
   handshake functions (cli/wsclient.c); framing is wslay's client
   context (masked frames); server frames are parsed with jansson and
   their base64 with shared/b64.c, or, for connections marked fast (the
   fan-out's observers), scanned for op, kind and sequence only, so one
   client process can keep up with a thousand streams. Every connection
   records the times of its upgrade, 101, binding_hello, join and first
   Keyframe, and checks that its sequence numbers only grow.

   With PTG_BENCH_DEFLATE=1 in the environment every connection offers
   permessage-deflate (RFC 7692) with client_no_context_takeover and
   server_no_context_takeover; compressed server messages are inflated
   with zlib (raw inflate of the message and 00 00 ff ff, one reset state
   per process) before they are scanned or parsed. wire_bytes counts the
   messages as they came, before inflating. */
#ifndef PTG_BENCH_WS_H
#define PTG_BENCH_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <wslay/wslay.h>

#include "buf.h"

enum bws_state { BWS_CONNECTING, BWS_HANDSHAKE, BWS_OPEN, BWS_DEAD };

/* One server frame as the mode callbacks see it. */
struct bws_frame {
	char op[48];
	char kind[32];
	bool has_seq;
	uint64_t seq;
	uint64_t current_sequence; /* binding_hello's session.current_sequence */
	const uint8_t *data;	   /* decoded Output data or Keyframe snapshot */
	size_t data_len;
	unsigned cols, rows; /* a Keyframe's snapshot size */
	size_t wire_len;     /* the WebSocket message's length (inflated) */
	const char *text;    /* the raw JSON text */
};

struct bws;
typedef void (*bws_frame_cb)(struct bws *c, const struct bws_frame *f);

struct bws {
	int fd, idx;
	enum bws_state st;
	bool fast;     /* scan, do not parse (no data decoded; out_bytes is
			  the length the Output data's base64 stands for) */
	bool deflate;  /* permessage-deflate agreed in the 101 */
	bool decode;   /* decode Output data and Keyframe snapshots */
	struct buf in; /* the handshake answer, then bytes not yet given to wslay */
	size_t budget; /* bytes this connection may still read in this loop round */
	char accept[32];
	char path[256];
	wslay_event_context_ptr ctx;
	double t_upgrade, t_101, t_hello, t_join, t_keyframe, t_closed;
	uint64_t hello_seq, last_seq, seq_errors, frames, wire_bytes, out_bytes;
	uint64_t lagged, errors;
	uint64_t deflated; /* messages that came compressed */
	bool got_hello, got_keyframe, got_closed;
	bool join_failed;	    /* an Error before the Keyframe */
	size_t keyframe_bytes;	    /* the snapshot, decoded */
	size_t keyframe_wire_bytes; /* its WebSocket message (the JSON text) */
	unsigned keyframe_cells;
	char err[160];
	bws_frame_cb on_frame;
	void *user;
	/* What a mode needs per connection. */
	double t_mark;
	int want; /* an echo byte awaited, or -1 */
	uint8_t tail[32];
	size_t tail_len;
	bool marker;
};

/* Sets the gateway address and the bearer token for every connection;
   raises RLIMIT_NOFILE to its hard limit; reads PTG_BENCH_DEFLATE. */
void bws_setup(const char *host, const char *port, const char *token);
/* Speak the one-hop reference's framing (tests/bench/bench_onehop.c:
   binary '0' + bytes both ways) instead of pty-ws/v1's JSON. */
void bws_set_onehop(void);
/* Monotonic time in seconds. */
double bws_now(void);

/* Starts a connection to path (the attach path); src (0..) picks a source
   address 127.0.0.(2+src) so ten thousand connections do not run out of
   ports; -1 uses the default. Returns 0 or -errno. */
int bws_open(struct bws *c, const char *path, int src);
/* Closes the socket and frees the codec. */
void bws_close(struct bws *c);

/* Runs the loop until done(arg) or timeout_s; returns true when done. */
bool bws_run(bool (*done)(void *arg), void *arg, double timeout_s);

/* Sends one client frame: op, an optional extra envelope fields text
   (",\"replay_from\":5"), and the payload JSON text. */
void bws_send(struct bws *c, const char *op, const char *extra, const char *payload);
/* pty.join_session with the extension activated; replay_from < 0: none. */
void bws_join(struct bws *c, const char *role, int64_t replay_from);
/* pty.session_input with the bytes base64-encoded. */
void bws_input(struct bws *c, const void *p, size_t n);

/* Records output bytes for the end marker; true once marker was seen. */
bool bws_scan_marker(struct bws *c, const uint8_t *p, size_t n, const char *marker);

#endif
