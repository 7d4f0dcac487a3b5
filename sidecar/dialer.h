/* dialer: dial-out (--dial ADDR): one dialer per gateway
   address keeps a link to it. It connects without blocking the loop
   (bounded by DIALER_CONNECT_MS), sends the instance credential
   (LinkCredential) as the link's first message, then hands the
   connection to the server, where it lives exactly as an accepted link.
   When the link ends (closed, refused, stalled, never answered) it dials
   again after a backoff: full jitter under a ceiling that doubles from
   DIALER_BACKOFF_BASE_MS to --dial-backoff-max, back to the base after a
   link that stayed up DIALER_BACKOFF_RESET_MS. Every state change is one
   log line. A renewed credential (the file rewritten) is sent again on
   every link that is up. */
#ifndef PTG_DIALER_H
#define PTG_DIALER_H

#include <stdint.h>

#include "addr.h"

#define DIALER_BACKOFF_BASE_MS	100
#define DIALER_BACKOFF_RESET_MS 10000 /* a link up this long resets the backoff */
#define DIALER_CONNECT_MS	10000 /* a connect still in progress then fails */
#define DIALER_HELLO_MS		30000 /* a link with no Hello by then is dropped */

struct server;
struct credential;
struct sidecar_config;

/* The clock and the random source of the backoff, injectable for tests.
   now_ms is monotonic. */
struct dialer_env {
	int64_t (*now_ms)(void *user);
	uint32_t (*random)(void *user);
	void *user;
};

/* The redial schedule of one address: a pure state machine on its env. */
struct dialer_backoff {
	const struct dialer_env *env;
	int64_t base_ms, cap_ms, reset_ms;
	int64_t ceiling_ms; /* the next delay is drawn from [0, ceiling_ms] */
	int64_t up_since;   /* now_ms when the current link came up; -1: none */
};

/* Every dialer of one sidecar and the credential they present. */
struct dialer_group;

/* One dialer per cfg->dial address on srv's loop, each dialling at once,
   presenting cred's token (cred and cfg outlive the group); the group
   also polls cred's file (CREDENTIAL_POLL_MS) and sends a renewed token
   on every link that is up. env NULL: the real clock and random source.
   Never fails (allocation aborts). */
struct dialer_group *dialer_group_new(struct server *srv,
				      const struct sidecar_config *cfg,
				      struct credential *cred,
				      const struct dialer_env *env);
/* Stops dialling: frees the timers and any connect in progress. Links
   already handed to the server stay its own (server_free closes them),
   so call this before server_free. NULL is a no-op. */
void dialer_group_free(struct dialer_group *g);

#endif
