/* tlsio: the TLS side of a `ptygate attach` connection (wss://), with
   GnuTLS: a client session over a connected non-blocking socket, its
   handshake within a deadline, and record reads and writes that report
   "would block" as errno EAGAIN like recv and send do. The server's
   certificate is verified against the system's trust store, or a CA file,
   for the host name of the URL (SNI is sent for names, not for IP
   literals), unless the caller asks for no verification (tests only). */
#ifndef PTG_CLI_TLSIO_H
#define PTG_CLI_TLSIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tlsio_opts {
	const char *ca_file; /* PEM trust anchors in place of the system's, or NULL */
	bool insecure;	     /* accept any certificate: for tests only */
};

struct tlsio;

/* A client session on fd for host, handshaken by the deadline
   (monotonic ms). Returns it, or NULL with a one-line reason in err
   (an untrusted or mismatched certificate says why). fd stays the
   caller's. */
struct tlsio *tlsio_connect(int fd, const char *host, const struct tlsio_opts *o,
			    int64_t deadline, char *err, size_t errlen);
/* Like recv and send on a non-blocking socket: bytes, 0 at the peer's end
   (recv), or -1 with errno EAGAIN (try again when tlsio_events says),
   ECONNRESET or EIO. */
ssize_t tlsio_recv(struct tlsio *t, void *p, size_t n);
ssize_t tlsio_send(struct tlsio *t, const void *p, size_t n);
/* tlsio_send, but more says the caller sends the rest of this message
   next (wslay writes a frame's header and payload apart): a piece of at
   most TLSIO_HEAD_MAX bytes is held and goes out in one record with the
   next send's first bytes, one record and one segment a keystroke
   instead of two. A send that would block is retried with the same
   bytes, as with send. */
#define TLSIO_HEAD_MAX 14 /* a WebSocket frame header's largest */
ssize_t tlsio_send_more(struct tlsio *t, const void *p, size_t n, bool more);
/* The poll events the last call that would block waits for. */
short tlsio_events(const struct tlsio *t);
/* Ends the session (a close_notify, not waited for) and frees. NULL is a
   no-op. */
void tlsio_free(struct tlsio *t);

#endif
