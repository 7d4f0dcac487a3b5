/* http_int: what the files of the http module share and nothing else
   sees: the listener, its accepted sockets and requests, and the calls
   between http.c (MHD on the loop, listening), http_admit.c (the accept
   policy and the request deadline) and http_request.c (requests, their
   answers and the upgrade handover). */
#ifndef PTG_HTTP_INT_H
#define PTG_HTTP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "buf.h"
#include "httpfleet.h"
#include "list.h"
#include "peers.h"
#include "routes.h"
#include "tls.h"

struct conn_host;
struct ev_timer;
struct gw_config;
struct metrics;
struct tlsfront;

#define HTTP__DISCARD_MAX                                                                \
	(1u << 20) /* body bytes read past the cap before hanging up                     \
		    */
/* MHD's per-connection pool. It holds the request head (an upgraded
   WebSocket leaves MHD at once: hand_out). 16 KiB admits a head of about 12 KiB, the
   largest legitimate one: an 8 KiB token (JWT_MAX_TOKEN) as the bearer
   subprotocol (10.9 KiB in base64url) with 1.5 KiB of browser headers.
   Bigger heads get 431. */
#define HTTP__MEMORY_LIMIT  (16 * 1024)
#define HTTP__TIMEOUT_S	    30		/* an idle HTTP connection */
#define HTTP__FORWARD_BLOCK (32 * 1024) /* a forwarded body, read at a time */
#define HTTP__EXTRA_CONNS   64		/* HTTP requests beyond the WebSocket limit */
/* Connections past the limit that are answered 429 or 503 and closed,
   at once (nginx's limit_conn answers too): each holds MHD's pool until
   its head is read and the answer written, so there are at most this
   many; past them a connection is closed unanswered (counted). */
#define HTTP__REFUSALS_MAX 32
/* Heads evicted at the limit whose sockets MHD has not yet closed (it
   does on its next run): the new connection takes their place at once. */
#define HTTP__EVICTING_MAX 32
#define HTTP__BACKLOG	   511 /* the listen queue, as nginx's default */

/* What an upgraded connection holds of its listener until it ends. The
   socket leaves libmicrohttpd at the upgrade (MHD would keep its
   connection and its pool, most of what an idle client costs, for the
   socket's whole life): the connection owns a duplicate of the fd, and
   the per-address count it was admitted under. Should the duplicate
   fail, MHD keeps the socket and urh closes it. */
struct http_hold {
	struct http *h;
	struct MHD_UpgradeResponseHandle *urh; /* NULL: the fd is the connection's */
	struct peer_addr peer;		       /* counted in h's table when counted */
	bool counted;
};

struct http {
	/* what the listener sees of the gateway (struct http_host) */
	const struct gw_config *cfg;
	struct metrics *metrics;
	const struct conn_host *conn_host;
	const struct routes_host *routes_host;
	enum route_listener role;
	struct MHD_Daemon *d;
	struct ev_io *io;
	struct ev_timer *timer;
	uint16_t port;
	bool kick;	  /* a request was resumed: run MHD before the next poll */
	int64_t deadline; /* of the armed timer (monotonic ms), 0: none */
	struct peer_table *peers;      /* connections per untrusted peer, requests
					  per client behind a trusted proxy */
	TAILQ_HEAD(, http_sock) heads; /* waiting for a request, by deadline */
	struct ev_timer *head_timer;
	int64_t head_timer_at;	   /* deadline the head timer is armed for, 0: none */
	int64_t refused_logged_ms; /* last per-address refusal logged */
	unsigned n_refusing;	   /* accepted to be answered 429 or 503 */
	unsigned n_evicting;	   /* evicted heads MHD has yet to close */
	unsigned verdict;	   /* on_accept's for the socket it admits: 0, 429, 503 */
	struct tls_store tls;	   /* --tls-cert and --tls-key when has_tls */
	bool has_tls;
	struct tlsfront *front; /* accepts and terminates TLS when has_tls */
	/* Plain upgraded sockets handed to conn.c, for MHD to let go of
	   after the run that upgraded them (let_go). */
	struct MHD_UpgradeResponseHandle **handed;
	size_t n_handed, cap_handed;
	size_t n_out; /* plain upgraded sockets handed out and still open */
};

/* One accepted TCP connection, from MHD's start notice to its close
   notice (an upgraded one until conn.c closes it). */
struct http_sock {
	struct http *h;
	int fd;
	struct peer_addr peer;
	bool counted;	  /* holds one count of peer in h->peers */
	bool trusted;	  /* the peer is a --trusted-proxy */
	unsigned refuse;  /* 429 or 503: answered so and closed; 0: admitted */
	bool evicted;	  /* cut at the limit while sending its head */
	int64_t deadline; /* the request must be whole by then (monotonic ms); 0: not
			     waiting */
	TAILQ_ENTRY(http_sock) head_entry; /* in h->heads while deadline != 0 */
};

struct http_req {
	struct http *h;
	struct MHD_Connection *c;
	char *target; /* the raw request target */
	struct buf body;
	struct buf protocols; /* Sec-WebSocket-Protocol lines joined */
	size_t discarded;
	bool started, handled, suspended, too_large, upgraded;
	bool close_after;	       /* the answer ends the connection */
	bool client_counted;	       /* holds one count of client in h->peers */
	struct peer_addr client;       /* behind a trusted proxy: from X-Forwarded-For */
	int64_t start_us;	       /* its first byte, for the latency histograms */
	struct route_req *rq;	       /* NULL once upgraded: conn.c has what it needs */
	struct conn *conn;	       /* made before the 101, started after it */
	struct httpfleet_headers hdrs; /* gathered when the request is forwarded */
	bool fleet; /* forwarded by a gateway of the fleet: client is its client */
	char client_text[64]; /* the client's address, for forwarding */
};

/* http_admit.c: MHD's accept policy callback and connection notices. */
enum MHD_Result http__on_accept(void *cls, const struct sockaddr *sa, socklen_t len);
void http__notify_conn(void *cls, struct MHD_Connection *c, void **ctx,
		       enum MHD_ConnectionNotificationCode code);
/* The TLS front's new client (tlsfront_host.admit): the accept policy,
   then MHD takes plain_fd. Returns 0, or -1 with plain_fd closed. */
int http__admit_tls(void *user, int plain_fd, const struct sockaddr *sa, socklen_t len);
/* The request deadline: s waits for a request head (again), or no more. */
void http__head_arm(struct http_sock *s);
void http__head_disarm(struct http_sock *s);
/* The head timer's callback: heads past their deadline are cut. */
void http__head_expired(struct ev_timer *t, void *user);
/* Counts r's client behind a trusted proxy, or behind a gateway of the
   fleet that forwarded r (method and target are signed), in the
   per-address table. Returns 0, or -EBUSY with a 429 refusal logged
   when it is at its cap. */
int http__count_client(struct http_req *r, struct http_sock *s, const char *method);

/* http_request.c: MHD's request callbacks. */
void *http__uri_log(void *cls, const char *uri, struct MHD_Connection *c);
void http__completed(void *cls, struct MHD_Connection *c, void **req_cls,
		     enum MHD_RequestTerminationCode toe);
enum MHD_Result http__on_request(void *cls, struct MHD_Connection *c, const char *url,
				 const char *method, const char *version,
				 const char *upload_data, size_t *upload_data_size,
				 void **req_cls);

#endif
