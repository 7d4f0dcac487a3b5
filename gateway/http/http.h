/* http: libmicrohttpd on the gateway's event loop (MHD's epoll fd watched
   by ev, MHD_run from the loop): the session REST API, the AgentCard,
   /healthz /readyz /metrics, and the attach upgrade (docs/protocol.md,
   "Opening a connection") with every refusal as its HTTP status and JSON
   body. */
#ifndef PTG_HTTP_H
#define PTG_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "routes.h"

struct conn_host;
struct ev_loop;
struct gw_config;
struct http;
struct metrics;

/* What a listener needs from the gateway, and all it sees of it: given
   at http_new, it outlives the listener. */
struct http_host {
	struct ev_loop *loop;
	const struct gw_config *cfg;
	struct metrics *metrics;
	const struct conn_host *conn;	  /* given to every upgraded connection */
	const struct routes_host *routes; /* given to every request */
};

/* Listens on host:port (port 0: a free one). Returns NULL and writes the
   reason to err. */
struct http *http_new(const struct http_host *hh, const char *host, uint16_t port,
		      enum route_listener role, char *err, size_t errlen);
void http_free(struct http *h);
/* Runs MHD if a request was resumed or an upgraded socket handed back
   since its last run (external mode has no wake-up of its own); the
   gateway calls it before every poll. NULL is a no-op. */
void http_run_pending(struct http *h);
/* SIGHUP: re-reads --tls-cert and --tls-key (the fleet listener's
   --fleet-cert, --fleet-key and --fleet-cacert), keeping the current
   ones on error; new handshakes use them, open connections keep theirs.
   NULL or a plain listener: a no-op. */
void http_reload(struct http *h);

/* The port actually bound. */
uint16_t http_port(const struct http *h);

#endif
