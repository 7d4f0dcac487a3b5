/* routes: everything the gateway answers over HTTP except MHD itself:
   the path grammar, the attach checks in their order (docs/protocol.md,
   "Opening a connection"), the session REST API ("Around the WebSocket")
   over the sidecar link, the AgentCard,
   /healthz /readyz /metrics and the static web page. http.c fills a
   struct route_req from the MHD request, calls routes_handle, and sends
   the answer (or the 101 and the socket handover for an attach). The
   module's files and what they share are listed in routes_int.h. */
#ifndef PTG_ROUTES_H
#define PTG_ROUTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "buf.h"
#include "conn.h"
#include "forward.h"
#include "link.pb-c.h"
#include "ptg_limits.h"
#include "wshandshake.h"

#define ROUTES_BODY_MAX (64 * 1024) /* request body cap */
#define ROUTES_FILE_MAX 255	    /* a static file's path */

struct fleetauth;
struct gw_config;
struct keyset;
struct metrics;
struct registry;
struct restlimit;
struct upstream;

/* Which listener a request came to. */
enum route_listener {
	ROUTE_PUBLIC = 1, /* attach, REST, and admin routes unless split off */
	ROUTE_ADMIN = 2,  /* only /healthz /readyz /metrics and the AgentCard */
	ROUTE_FLEET = 3,  /* --fleet-listen: forwarded instance requests only */
};

enum route_id {
	ROUTE_HEALTHZ = 1, /* GET /healthz */
	ROUTE_READYZ,	   /* GET /readyz */
	ROUTE_METRICS,	   /* GET /metrics */
	ROUTE_AGENT_CARD,  /* GET /agents/{i}/.well-known/agent-card.json */
	ROUTE_SESSIONS,	   /* GET, POST /agents/{i}/sessions */
	ROUTE_SESSION,	   /* GET, DELETE /agents/{i}/sessions/{s} */
	ROUTE_ATTACH,	   /* GET /agents/{i}/sessions/{s}/attach (upgrade) */
	ROUTE_STATIC,	   /* GET of a file under --static-dir */
	ROUTE_RECORDING,   /* GET /agents/{i}/sessions/{s}/recording */
};

struct route_match {
	enum route_id id;
	char instance[PTG_ID_MAX + 1];
	char session[PTG_ID_MAX + 1];
	char file[ROUTES_FILE_MAX + 1]; /* ROUTE_STATIC: decoded, "index.html" for / */
};

/* Parses the path of a raw request target (percent-encoded; anything
   from '?' on is ignored). Ids are 1..PTG_ID_MAX of [A-Za-z0-9._~:@-] after
   decoding. Paths that match no API route become ROUTE_STATIC when
   with_static is set. Returns 0; -ENOENT when nothing matches (404);
   -EINVAL for a malformed path (bad escape, %00, a "." or ".." segment,
   a bad id) with a static reason in *why (400). */
int routes_match(const char *target, bool with_static, struct route_match *m,
		 const char **why);
/* The methods route id accepts, for the Allow header ("GET, POST"). */
const char *routes_allow(enum route_id id);
/* 1 when method is one of routes_allow(id). */
bool routes_method_ok(enum route_id id, const char *method);
/* 1 when the query string of target carries what looks like a token: a
   parameter named jwt, bearer, auth, authorization or containing
   "token" (after percent-decoding, any case), or a value shaped like a
   JWT. Such a request is refused whatever else it holds (docs/protocol.md,
   "Opening a connection"). */
bool routes_query_has_token(const char *target);

/* "Bearer <token>" (scheme in any case, the token one run of non-blanks).
   Returns 0 with the token span in h, or -ENOENT. */
int routes_bearer(const char *h, const char **tok, size_t *len);

/* A POST /sessions body, validated; msg points into the owned storage. */
struct route_create {
	json_t *doc;
	char **argv;
	Ptg__EnvVar *env;
	Ptg__EnvVar **envp;
	Ptg__CreateSession msg;
};

/* Parses and strictly validates a create body (empty means {}):
   unknown fields, wrong types and out-of-range values are refused.
   Returns 0, or -EINVAL with a message naming the field in err. Call
   routes_create_clear either way. */
int routes_parse_create(const char *body, size_t len, struct route_create *rc, char *err,
			size_t errlen);
void routes_create_clear(struct route_create *rc);

/* The session object of the REST API (new reference): session_id, state,
   pid, cols, rows, current_sequence, oldest_retained_sequence,
   controllers, observers, exit_code (or null), created_at, exited_at
   (or null), label, policy, command. */
json_t *routes_session_json(const Ptg__SessionInfo *s);
/* The 201 body of a create: session_id, state, cols, rows, created_at,
   attach_url. */
json_t *routes_created_json(const Ptg__SessionInfo *s, const char *attach_url);
/* Room for a URL base (--public-url, or a scheme, host and port), and for
   a whole URL: a base, then a path naming an instance and a session. */
#define ROUTES_BASE_MAX 600
#define ROUTES_URL_MAX	(2 * ROUTES_BASE_MAX)
/* The AgentCard of instance (new reference); lim NULL or zero fields
   fall back to the protocol's defaults. */
json_t *routes_agent_card(const char *instance, const char *http_base,
			  const char *ws_base, const Ptg__Limits *lim);
/* Appends {"code": code, "message": message} to out. */
void routes_error_body(const char *code, const char *message, struct buf *out);
/* Answers status with the JSON error body (Retry-After: 1 on a 429). */
struct route_req;
void routes_refuse(struct route_req *rq, unsigned status, const char *code,
		   const char *message);
/* The HTTP status and error code for a sidecar Reply code. */
unsigned routes_status_from_link(Ptg__ErrorCode code, const char **name);

/* What the routes need from the gateway, and all they see of it: given
   to the listener at http_new, it outlives every request. */
struct routes_host {
	const struct gw_config *cfg;
	struct keyset *const *keys; /* the client tokens' keys, loaded at start */
	const struct jwt_policy *policy;
	struct metrics *metrics;
	struct restlimit *rest;	       /* REST requests per principal (routes_auth.c) */
	struct registry *registry;     /* the fleet's (registry.h) */
	struct forward *forward;       /* to the owning gateway (forward.h), or NULL */
	const struct fleetauth *fleet; /* --fleet-secret-file's key, or NULL */
	uint16_t public_port;	       /* the public listener's, for the URLs */
	void *owner;		       /* the first argument of the calls below */
	/* The link of instance_id, or NULL when there is no such instance. */
	struct upstream *(*upstream)(void *owner, const char *instance_id);
	/* Every instance's link: *n of them. */
	struct upstream *const *(*instances)(void *owner, size_t *n);
	/* Reserves a connection slot for principal on instance before the
	   101: 0, -EAGAIN when the whole gateway is at --max-conns, or
	   -EBUSY at the principal's or the instance's cap, *what naming the
	   limit hit. */
	int (*slot_acquire)(void *owner, const char *principal, const char *instance,
			    const char **what);
	void (*slot_release)(void *owner, const char *principal, const char *instance);
};

/* One HTTP request as the routes see it. http.c zeroes it, fills the
   inputs, calls routes_handle; the answer fields are then set. */
struct route_req {
	/* inputs */
	const struct routes_host *gateway; /* all the routes see of the gateway */
	enum route_listener role;
	const char *method;
	const char *target;	   /* raw request target, query included */
	const char *authorization; /* header values, NULL when absent */
	const char *upgrade, *connection, *ws_version, *ws_key;
	const char *ws_protocol;   /* every Sec-WebSocket-Protocol line, ", "-joined */
	const char *ws_extensions; /* Sec-WebSocket-Extensions, NULL when absent */
	const char *origin, *host; /* Origin and Host, NULL when absent */
	const char *body;
	size_t body_len;
	/* the fleet (routes_forward.c): the fleet header and X-Forwarded-For
	   as received (NULL when absent), the client's address as this
	   gateway sees it, and every header of the request, for forwarding
	   it as it came */
	const char *fleet_auth, *forwarded_for;
	const char *client;
	const struct forward_header *(*all_headers)(struct route_req *rq, size_t *n);
	void (*done)(struct route_req *rq); /* an answer that waited is ready */
	void *user;

	/* the answer */
	unsigned status;	  /* 101: upgrade with attach below */
	struct buf out;		  /* the body (owned; routes_req_clear frees it) */
	const char *content_type; /* static string */
	const char *allow;	  /* Allow header for 405, or NULL */
	bool www_authenticate;	  /* add WWW-Authenticate: Bearer */
	int retry_after;	  /* Retry-After seconds, 0: none */
	int file_fd;		  /* ROUTE_STATIC: body is this file (owned), or -1 */
	uint64_t file_size;
	const char *static_file; /* ROUTE_STATIC served: its path, for webfiles_headers */
	bool streamed; /* the body is pulled through routes_stream_read (a recording) */

	/* an accepted attach (status 101): the connection slot is held until
	   http.c hands ctx to conn_start and clears slot_held */
	struct attach_ctx attach;
	char ws_accept[WSHS_ACCEPT_LEN + 1];
	struct wshs_deflate deflate; /* the permessage-deflate agreed, if any */
	bool slot_held;

	/* private to the routes module (routes*.c) */
	struct route_match m;
	struct upstream *pending_up;
	uint64_t pending_id;
	bool in_handle, answered;
	void (*on_reply)(struct route_req *rq, const Ptg__Reply *r);
	size_t held_bytes;	     /* counted in metrics.reply_bytes until cleared */
	char *rest_principal;	     /* an admitted REST request's place (restlimit) */
	struct route_export *export; /* a recording's pages (routes_recording.c) */
	struct routes_fwd *fwd;	     /* a forwarded request (routes_forward.c) */
	bool forwarded;		     /* its fleet header verified: it came forwarded */
};

/* A streamed answer's next bytes (at most cap) into out: their count,
   0 when none is ready yet (the HTTP server waits for rq->done, then
   reads again), ROUTES_STREAM_END when the body is whole, or
   ROUTES_STREAM_ERROR when it cannot be finished (the answer must be
   cut, not ended as if whole). */
#define ROUTES_STREAM_END   (-1)
#define ROUTES_STREAM_ERROR (-2)
ssize_t routes_stream_read(struct route_req *rq, void *out, size_t cap);

/* A forwarded request's answer carries the owner's headers: NULL when
   it is not one (http.c then adds its own). */
const struct forward_header *routes_forwarded_headers(const struct route_req *rq,
						      size_t *n);
/* 1 when rq's answer is an owner's whose body streams from the owner
   (routes_forward_read), with the owner's Content-Length in *length (-1:
   not given, the answer is chunked). */
bool routes_forward_streams(const struct route_req *rq, int64_t *length);
/* The owner's body as forward_read gives it: n bytes, 0 its end,
   -EAGAIN none yet (rq->done is called when there are), another
   negative errno when it broke (logged here). */
ssize_t routes_forward_read(struct route_req *rq, void *dst, size_t cap);
/* 1 when rq's 101 is an owner's, to be relayed (routes_relay_start)
   rather than served by a connection of this gateway. */
bool routes_relayed(const struct route_req *rq);
/* The client has its 101: the relay to the owner takes fd (extra: what
   the client sent after its head); end is called once both sides are
   done, to close fd and relay_free the relay. */
struct relay;
void routes_relay_start(struct route_req *rq, int fd, const void *extra, size_t len,
			void (*end)(void *user, struct relay *r), void *user);

/* The 400 checks of an attach upgrade on rq's inputs, in order: a token
   in the query, a malformed upgrade, no pty-ws.v1 offered. *o starts
   zeroed and is released with wshs_offer_clear either way. Returns 0 with
   the offer in *o and rq->ws_accept set, or -EINVAL with the 400 answer
   in rq. Uses nothing but rq, so it
   is also the attach checks' fuzzing entry point. */
int routes_attach_check(struct route_req *rq, struct wshs_offer *o);

/* Zeroes rq for a new request (no file, JSON answer). */
void routes_req_init(struct route_req *rq);
/* Answers rq. Returns 0 when the answer is in rq, or 1 when it waits on
   the sidecar: rq->done(rq) is then called later from the loop (never
   from inside routes_handle) with the answer in rq. */
int routes_handle(struct route_req *rq);
/* The client went away: drops a pending sidecar request (done is not
   called), releases a connection slot still held, and frees the answer.
   Safe on a finished or never-started request. */
void routes_req_clear(struct route_req *rq);

#endif
