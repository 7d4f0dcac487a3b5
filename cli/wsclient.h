/* wsclient: the client side of one WebSocket connection (RFC 6455) for
   `ptygate attach`. The opening handshake is written by hand over a TCP
   socket (docs/protocol.md, "1. Opening a connection": offer "pty-ws.v1", bearer token in
   Authorization, check Sec-WebSocket-Accept and the echoed subprotocol); framing is
   wslay's client context, which masks every frame with a key from
   libsodium's randombytes_buf. wss:// (and https://) go through TLS
   (tlsio.h, GnuTLS) with the server's certificate verified.

   The pure parts (URL split, request text, response check) are public
   too, so they are tested without a socket. */
#ifndef PTG_CLI_WSCLIENT_H
#define PTG_CLI_WSCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define WSCLIENT_HEAD_MAX    (16 * 1024)	/* handshake response header */
#define WSCLIENT_BODY_MAX    (64 * 1024)	/* a refusal's body we read */
#define WSCLIENT_MESSAGE_MAX (64 * 1024 * 1024) /* a server message (Keyframes) */
#define WSCLIENT_CLOSE_LOST  1006		/* no close frame: connection lost */

/* Where a gateway URL points: scheme http:// or ws:// (https:// or wss://:
   tls), host, port, and a path prefix (no trailing '/') the attach path is
   appended to. */
struct wsclient_addr {
	bool tls;
	char host[256]; /* IPv6 literals without their brackets */
	char port[8];
	char authority[272]; /* the Host header value, as written in the URL */
	char prefix[1024];
};

/* Splits url ("http://", "ws://", "https://" or "wss://"
   host[:port][/prefix]; the port defaults to 80, or 443 with TLS).
   Returns 0, or -EINVAL with a one-line reason in err. */
int wsclient_split_url(const char *url, struct wsclient_addr *a, char *err,
		       size_t errlen);

/* Appends the upgrade request for path (already escaped) with the
   Sec-WebSocket-Key key and the bearer token (may be NULL). */
void wsclient_request(const struct wsclient_addr *a, const char *path, const char *key,
		      const char *token, struct buf *out);

/* The permessage-deflate offer the CLI makes (RFC 7692): the server's
   messages each compressed on their own, so they inflate with one reset
   state; the CLI's own messages (keystrokes) are sent plain. */
#define WSCLIENT_DEFLATE_OFFER "permessage-deflate; server_no_context_takeover"

/* wsclient_request with a Sec-WebSocket-Extensions offer (NULL: none):
   the CLI's deflate offer, and the load client's. */
void wsclient_request_ext(const struct wsclient_addr *a, const char *path,
			  const char *key, const char *token, const char *extensions,
			  struct buf *out);

/* Checks the server's answer p[0, n) to a request whose expected
   Sec-WebSocket-Accept is accept; eof says the peer has closed. Returns
   1 when the upgrade succeeded (*head_len: the bytes of the answer's
   header; what follows is WebSocket data), 0 when more bytes are needed,
   -ECONNREFUSED for an HTTP refusal (err: "HTTP 401 UNAUTHENTICATED:
   message" from its JSON body) or -EPROTO for a bad answer (err says
   why). */
int wsclient_check_response(const char *p, size_t n, bool eof, const char *accept,
			    size_t *head_len, char *err, size_t errlen);

struct wsclient;

/* What the connection reports, with the user pointer given to
   wsclient_connect. Callbacks may queue messages but not free the
   client. */
struct wsclient_callbacks {
	/* A complete text message (not NUL-terminated). */
	void (*on_text)(const char *p, size_t n, void *user);
	/* The peer's close frame; code 1005 when it had none. The echo is
	   queued already. */
	void (*on_close)(uint16_t code, const char *reason, size_t n, void *user);
};

/* Connects to url, sends the upgrade for path (escaped) with token, and
   waits up to timeout_ms for the answer. Returns the open connection
   (non-blocking; cb copied; callbacks may already have fired for data
   that came with the answer), or NULL with a one-line reason in err. */
struct wsclient *wsclient_connect(const char *url, const char *path, const char *token,
				  int timeout_ms, const struct wsclient_callbacks *cb,
				  void *user, char *err, size_t errlen);
/* The same, with TLS options for a wss:// url (NULL: verify against the
   system's trust store). */
struct tlsio_opts;
struct wsclient *wsclient_connect_tls(const char *url, const char *path,
				      const char *token, int timeout_ms,
				      const struct tlsio_opts *tls,
				      const struct wsclient_callbacks *cb, void *user,
				      char *err, size_t errlen);
/* Closes the socket and frees. NULL is a no-op. */
void wsclient_free(struct wsclient *c);

/* The socket, and the poll events the connection wants now. */
int wsclient_fd(const struct wsclient *c);
short wsclient_events(const struct wsclient *c);
/* Acts on poll's revents: reads what arrived (callbacks fire), writes what
   is queued. Returns 0, or -ECONNRESET when the peer vanished without a
   close frame, -EPROTO for a protocol error (a close is queued), -EIO. */
int wsclient_handle(struct wsclient *c, short revents);

/* Queues a text message of n bytes and tries to send it at once.
   Returns 0, or -ESHUTDOWN once a close has been queued or sent. */
int wsclient_send_text(struct wsclient *c, const char *p, size_t n);
/* Queues a close frame with code (reason may be NULL) and tries to send
   it. Returns 0 or -ESHUTDOWN when a close was already queued. */
int wsclient_close(struct wsclient *c, uint16_t code, const char *reason);
/* Bytes queued and not yet written (for back-pressure). */
size_t wsclient_queued(const struct wsclient *c);
/* Whether the connection has nothing left to read or write: the closing
   handshake is over (or the connection failed). */
bool wsclient_done(const struct wsclient *c);
/* The close code the peer sent, or WSCLIENT_CLOSE_LOST. */
uint16_t wsclient_close_code(const struct wsclient *c);

#endif
