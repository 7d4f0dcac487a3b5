/* tlsfront: the gateway's own TLS termination in front of a listener.

   libmicrohttpd 0.9.75 relays an upgraded WebSocket over its TLS through
   buffers carved from the connection's memory pool, which its write
   buffer has taken by then: the relay falls back to an 8-byte emergency
   buffer, a 26-byte record per 4 bytes (a 2 MB listing did not reach a
   wss:// client in 120 s). So the gateway accepts on a TLS listener
   itself and gives MHD the plain end of a socket pair, as though the
   client had connected in the clear:

     client --TLS over TCP-- tlsfront --socket pair-- MHD, then conn.c

   Everything behind the pair is the plain path: the accept policy sees
   the client's address (admit), the request head's deadline also bounds
   the handshake (MHD never writes before a request, so the pair's end
   turning readable during the handshake means MHD cut it), and an
   upgraded socket leaves MHD for conn.c or the fleet relay.

   Each connection is relayed both ways a record (16 KiB) at a time, on
   the loop. The only buffers are what one side has not yet taken,
   allocated while it has not: decrypted bytes the pair refused, or bytes
   the client's socket refused (GnuTLS holds the record it was writing).
   A side is not read while the other cannot take more, so a slow client
   slows the gateway's writes into the pair, where conn.c sees it. */
#ifndef PTG_TLSFRONT_H
#define PTG_TLSFRONT_H

#include <stddef.h>
#include <sys/socket.h>

struct ev_loop;
struct metrics;
struct tls_store;
struct tlsfront;

/* Descriptors one TLS client holds: its socket and the pair's two ends. */
#define TLSFRONT_FDS 3
/* What an ended side leaves the other to write, at most this long. */
#define TLSFRONT_LINGER_MS 5000

struct tlsfront_host {
	struct ev_loop *loop;
	/* The credentials each handshake takes (tls.h); a store with a CA
	   file asks every client for a certificate it signs. */
	struct tls_store *tls;
	struct metrics *metrics; /* tls_handshakes_failed, fleet_tls_refused */
	const char *what;	 /* the listener, for the log: "--listen" */
	/* A new client: plain_fd is the pair's end for MHD, and admit owns
	   it from the call on. Returns 0, or -1 when the client is refused
	   (plain_fd already closed). */
	int (*admit)(void *user, int plain_fd, const struct sockaddr *sa, socklen_t len);
	void *user;
};

/* Accepts TLS clients on listen_fd (listening, non-blocking), which it
   owns from now on. Never NULL: allocation aborts (xalloc.h); NULL with
   errno only when the listener cannot be watched. */
struct tlsfront *tlsfront_new(const struct tlsfront_host *host, int listen_fd);
/* Closes the listener and every client's socket and pair end. NULL is a
   no-op. */
void tlsfront_free(struct tlsfront *f);

#endif
