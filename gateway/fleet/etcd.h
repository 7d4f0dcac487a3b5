/* etcd: a client of etcd's v3 JSON gateway on the daemon's event loop:
   libcurl's multi socket interface drives ev ios and one ev timer, so no
   request blocks the loop and no thread is made. Requests are POSTs of a
   JSON body, each with a timeout; a streamed answer (a watch) is handed
   over as it arrives. The client tries its endpoints in turn: a request
   that fails at the transport moves the next one to the next endpoint. */
#ifndef PTG_ETCD_H
#define PTG_ETCD_H

#include <stddef.h>

struct ev_loop;
struct etcd;
struct etcd_req;

#define ETCD_MAX_ENDPOINTS 16

struct etcd_opts {
	const char *endpoints; /* "URL[,URL...]", each http:// or https:// */
	const char *cacert;    /* PEM bundle to verify etcd's certificate, or NULL */
	const char *cert;      /* client certificate (PEM), or NULL */
	const char *key;       /* its key, or NULL */
	long connect_timeout_ms;
};

/* The end of a request. rc: 0 with the HTTP status and the whole body
   (for a stream: what was not handed to on_data, usually nothing), or a
   negative errno-like value (-ETIMEDOUT, -ECONNREFUSED, -EIO, -E2BIG:
   the body went over its cap) with a message in err. The request is
   freed after the callback returns. */
typedef void (*etcd_done_cb)(void *user, int rc, long status, const char *body,
			     size_t len, const char *err);
/* A streamed answer's bytes. Return 0, or non-zero to abort the request
   (its done callback then gets -ECANCELED). */
typedef int (*etcd_data_cb)(void *user, const char *data, size_t len);

/* Parses the endpoints; NULL with the reason in err when they are bad or
   libcurl cannot start. */
struct etcd *etcd_new(struct ev_loop *loop, const struct etcd_opts *o, char *err,
		      size_t errlen);
/* Cancels every request (no callback) and frees the client. */
void etcd_free(struct etcd *e);
/* The "Authorization" token etcd's authentication gave; NULL clears it. */
void etcd_set_token(struct etcd *e, const char *token);
/* The endpoint the next request goes to. */
const char *etcd_endpoint(const struct etcd *e);

/* POSTs body to path ("/v3/kv/range") and calls done once, within
   timeout_ms; the answer is capped at max_body bytes. */
struct etcd_req *etcd_post(struct etcd *e, const char *path, const char *body, size_t len,
			   long timeout_ms, size_t max_body, etcd_done_cb done,
			   void *user);
/* The same for a streaming answer: on_data gets its bytes as they come;
   no overall timeout (TCP keep-alive finds a dead peer). */
struct etcd_req *etcd_stream(struct etcd *e, const char *path, const char *body,
			     size_t len, etcd_data_cb on_data, etcd_done_cb done,
			     void *user);
/* POSTs body to path and waits for the answer, at most timeout_ms: for
   the daemon's last words after its loop has ended, never on the loop.
   Returns 0 (any HTTP status) or a negative errno. */
int etcd_post_blocking(struct etcd *e, const char *path, const char *body, size_t len,
		       long timeout_ms);
/* Ends a request without calling its done callback. Not from inside the
   request's own on_data callback (return non-zero there instead). */
void etcd_cancel(struct etcd_req *q);

#endif
