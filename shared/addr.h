/* addr: transport addresses of the link: "unix:/path", "tcp:HOST:PORT"
   (HOST may be a bracketed IPv6 literal) and "vsock:CID:PORT" (CID a
   number, or ANY, HOST, LOCAL). Listening on tcp is refused for anything
   but a loopback address unless the caller allows it. */
#ifndef PTG_ADDR_H
#define PTG_ADDR_H

#include <stddef.h>
#include <stdint.h>

enum addr_kind { ADDR_UNIX, ADDR_TCP, ADDR_VSOCK };

struct addr {
	enum addr_kind kind;
	char path[108]; /* unix */
	char host[256]; /* tcp: as written, brackets removed */
	uint16_t port;	/* tcp */
	uint32_t cid;	/* vsock */
	uint32_t vport; /* vsock */
};

/* Parses s; on failure returns -EINVAL and writes a reason to err. */
int addr_parse(const char *s, struct addr *a, char *err, size_t errlen);
/* Flags of addr_parse_hostport. */
#define ADDR_PORT_OPTIONAL 1 /* HOST or [IPV6] alone: *port is left as it is */
#define ADDR_PORT_ZERO	   2 /* port 0 too (a listener's "any free port") */

/* The one parser of HOST:PORT and [IPV6]:PORT, for link addresses,
   listen flags and URL authorities alike: parses the n bytes at s.
   HOST is 1 to cap - 1 bytes of visible ASCII without '[', ']' or '@';
   one with a ':' must be in brackets, and only one with a ':' may be.
   PORT is 1..65535 in digits only (0 too with ADDR_PORT_ZERO). Returns 0
   with host (brackets removed) and *port set, or -EINVAL with a reason
   in err and neither written. */
int addr_parse_hostport(const char *s, size_t n, unsigned flags, char *host, size_t cap,
			uint16_t *port, char *err, size_t errlen);
/* Room for any address's text form, NUL included: "tcp:[", a host of
   255 bytes, "]:" and a port is the longest. */
#define ADDR_TEXT_MAX 300
/* Formats back to the text form. */
void addr_format(const struct addr *a, char *out, size_t outlen);

#define ADDR_ALLOW_PUBLIC 1

/* Binds and listens, non-blocking, close-on-exec; a stale unix socket
   file is replaced, and a new one is readable and writable by its owner
   only (the link is not authenticated). Returns the fd or a negative errno; err says why.
 */
int addr_listen(const struct addr *a, int flags, char *err, size_t errlen);
/* Starts a non-blocking connect; returns the fd (connection may still be
   in progress: wait for EV_WRITE and check SO_ERROR) or a negative errno. */
int addr_connect(const struct addr *a, char *err, size_t errlen);
/* A TCP socket whose writes are whole messages (WebSocket frames, link
   messages): Nagle off, since it would only hold a lone keystroke's echo
   until the peer's delayed ACK (40-50 ms), and at most notsent_lowat
   bytes unsent in the kernel (TCP_NOTSENT_LOWAT), so what waits stays in
   our queue; what is in flight is left to the network. Best effort. */
void addr_tcp_whole_writes(int fd, int notsent_lowat);
/* Nagle off only (TCP_NODELAY), for a socket whose sender we do not
   drive. Best effort. */
void addr_tcp_nodelay(int fd);

#endif
