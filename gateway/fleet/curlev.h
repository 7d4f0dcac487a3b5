/* curlev: libcurl's multi socket interface on the daemon's event loop:
   curl's sockets become ev ios and its timeout one ev timer, so
   gateway-to-gateway requests never block the loop and make no thread.
   A job is the caller's easy handle with a callback for its end. */
#ifndef PTG_CURLEV_H
#define PTG_CURLEV_H

#include <stdbool.h>

#include <curl/curl.h>

struct ev_loop;
struct curlev;
struct curlev_job;

/* The end of job's transfer (for CURLOPT_CONNECT_ONLY: connected, or
   not). Called from the loop, never from inside curlev_add. The job
   stays added (a connect-only connection lives as long as its handle
   is in the multi) until curlev_remove. */
typedef void (*curlev_done_cb)(struct curlev_job *job, CURLcode res);

struct curlev_job {
	CURL *easy; /* the caller's; set before curlev_add */
	curlev_done_cb done;
	void *user;
	bool added; /* private */
};

/* NULL when libcurl cannot make a multi handle. */
struct curlev *curlev_new(struct ev_loop *loop);
/* Every job must be removed first. NULL is a no-op. */
void curlev_free(struct curlev *cv);
/* Starts job (its easy handle's CURLOPT_PRIVATE becomes job). Returns 0
   or -EIO. */
int curlev_add(struct curlev *cv, struct curlev_job *job);
/* Stops job, finished or not, without calling done (its connection is
   closed or pooled as libcurl decides); the easy handle stays the
   caller's. Safe from inside done. A job not added: a no-op. */
void curlev_remove(struct curlev *cv, struct curlev_job *job);
/* A transfer's end as the fleet's callers report it: 0, -ETIMEDOUT,
   -ECONNREFUSED when the peer could not be reached or sent nothing
   (connect, name, TLS handshake, send, empty answer), else -EIO. */
int curlev_errno(CURLcode res);

#endif
