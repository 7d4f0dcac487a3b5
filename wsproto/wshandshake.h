/* wshandshake: the pure parts of the RFC 6455 server opening handshake:
   the Sec-WebSocket-Accept computation, the Sec-WebSocket-Protocol offer
   ("pty-ws.v1" and the browser's "bearer.<base64url(token)>"),
   and the checks on Upgrade, Connection and Sec-WebSocket-Version. No I/O:
   the HTTP layer hands header values in and sends the answer. */
#ifndef PTG_WSHANDSHAKE_H
#define PTG_WSHANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>

/* The subprotocol the server echoes, exactly. */
#define WSHS_PROTOCOL "pty-ws.v1"
/* Bounds on what a client may send in Sec-WebSocket-Protocol. */
#define WSHS_PROTOCOL_HEADER_MAX (16 * 1024)
#define WSHS_TOKEN_MAX		 (8 * 1024)
/* Length of a Sec-WebSocket-Accept value, without the NUL. */
#define WSHS_ACCEPT_LEN 28

/* What a Sec-WebSocket-Protocol offer held. */
struct wshs_offer {
	bool v1;	  /* "pty-ws.v1" was offered */
	char *token;	  /* the decoded bearer token, NUL-terminated, or NULL */
	size_t token_len; /* its length without the NUL */
};

/* Validates client_key (the Sec-WebSocket-Key value: base64 of exactly 16
   bytes, surrounding spaces and tabs ignored) and writes the matching
   Sec-WebSocket-Accept value, NUL-terminated, into out. Returns 0, or
   -EINVAL (out is then an empty string). */
int wshs_accept_key(const char *client_key, char out[WSHS_ACCEPT_LEN + 1]);

/* Parses a Sec-WebSocket-Protocol value (several header lines joined by
   the caller with ", "; NULL when absent) into *o, which the caller
   releases with wshs_offer_clear. Elements are comma separated with
   optional spaces or tabs; empty elements are ignored, unknown ones too.
   Returns 0; -EMSGSIZE when the value exceeds WSHS_PROTOCOL_HEADER_MAX or
   the token WSHS_TOKEN_MAX; -EINVAL for an element that is not an HTTP
   token (so "=" padding is refused), a bearer entry that is not strict
   unpadded base64url of printable ASCII, or more than one bearer entry.
   On error *o is left empty. */
int wshs_parse_protocols(const char *value, struct wshs_offer *o);

/* Wipes and frees the token; leaves *o empty. NULL is a no-op. */
void wshs_offer_clear(struct wshs_offer *o);

/* Checks the Upgrade, Connection and Sec-WebSocket-Version values (NULL
   when absent): Upgrade lists "websocket" and Connection lists "upgrade"
   (both case-insensitive tokens), and the version is exactly 13. Returns
   NULL when all hold, else a static reason for the 400 response. */
const char *wshs_check_upgrade(const char *upgrade, const char *connection,
			       const char *version);

/* permessage-deflate (RFC 7692). The gateway always answers with
   server_no_context_takeover (each server message compressed on its own,
   so one compressed frame serves every client that agreed) and
   client_no_context_takeover (which RFC 7692 7.1.1.2 lets a server add
   unasked: each client message then inflates on its own, so no inflate
   window is held per connection). Offers asking the server for a window
   under 15 bits are declined (RFC 7692 5: a configuration the server
   does not support), as is any offer with an unknown, repeated or
   ill-valued parameter; the next offer is then tried. */
#define WSHS_EXTENSIONS_HEADER_MAX (8 * 1024)
#define WSHS_DEFLATE_RESPONSE_MAX  128

struct wshs_deflate {
	bool on; /* an offer was accepted */
	/* The Sec-WebSocket-Extensions value to answer with ("" when off). */
	char response[WSHS_DEFLATE_RESPONSE_MAX];
};

/* Picks the first acceptable permessage-deflate offer from a
   Sec-WebSocket-Extensions value (several lines joined with ", "; NULL
   when absent). Never fails the handshake: a malformed or oversized
   value, or no acceptable offer, leaves d->on false. */
void wshs_parse_extensions(const char *value, struct wshs_deflate *d);

/* Origins (RFC 6454) as the gateway compares them: "scheme://host[:port]"
   with scheme http or https (ws and wss count as http and https, so a
   ws(s):// public URL compares with a page's Origin), lower case, the
   scheme's default port dropped. */
#define WSHS_ORIGIN_MAX 255

/* Canonicalises s[0..n) into out. Returns 0, or -EINVAL for anything
   else (a path, userinfo, query, "null", another scheme, a bad port). */
int wshs_origin_canon(const char *s, size_t n, char out[WSHS_ORIGIN_MAX + 1]);

/* May a browser page from origin (the Origin header, NULL when absent)
   open a WebSocket here? No Origin: yes (not a browser, or a browser
   that does not send it, and tokens are never cookies). With an
   allow-list (canonical entries): only its members. Without one: only
   the same origin, i.e. the Origin's host and port equal the Host header
   (host, NULL when absent) or those of public_url ("" when not set). */
bool wshs_origin_allowed(const char *origin, const char *host, const char *public_url,
			 const char (*allowed)[WSHS_ORIGIN_MAX + 1], size_t n_allowed);

#endif
