/* gateway: the gateway daemon as a whole: its loop, configuration, keys,
   instance links, HTTP servers, connections and metrics; start-up,
   SIGHUP reload and SIGTERM shutdown. */
#ifndef PTG_GATEWAY_H
#define PTG_GATEWAY_H

#include <stddef.h>

#include "auth_jwt.h"
#include "config.h"
#include "conn.h"
#include "ev.h"
#include "metrics.h"

struct upstream;
struct http;
struct linklisten;
struct linkcred;
struct registry;

struct gateway {
	struct gw_config *cfg;
	struct ev_loop *loop;
	struct keyset *keys;
	struct keyset *link_keys;      /* --link-key: instance credentials; SIGHUP */
	struct linklisten *linklisten; /* --link-listen, or NULL */
	struct jwt_policy policy;
	struct upstream **ups;
	size_t n_ups;
	struct http *http;	    /* the public listener */
	struct http *admin;	    /* --admin-listen, or NULL */
	struct conn_set conns;	    /* every upgraded connection */
	struct conn_host conn_host; /* what each connection sees of the gateway */
	struct metrics metrics;
	struct conn_slots *slots;  /* connection counts per principal/instance */
	struct restlimit *rest;	   /* REST requests per principal (routes_auth.c) */
	struct registry *registry; /* the fleet's (registry.h), never NULL */
	struct forward *forward;   /* to the owning gateway (forward.h), or NULL */
	struct fleetauth *fleet;   /* --fleet-secret-file's key, or NULL */
	int stopping;
	struct ev_timer *grace; /* bounds the goodbye at shutdown */
	struct ev_timer *tick;
};

/* Builds everything from cfg (keys loaded, listeners bound). Returns NULL
   after printing why to stderr. */
struct gateway *gateway_new(struct gw_config *cfg);
void gateway_free(struct gateway *gw);
/* Runs until SIGTERM/SIGINT, then says goodbye to every client. */
int gateway_run(struct gateway *gw);

struct upstream *gateway_upstream(struct gateway *gw, const char *instance_id);

/* A link that dialled in presented cred (verified): hands fd to the
   instance's upstream, adding the instance when it is new. Returns 0
   (fd taken) or -1 with *refusal (enum link_refusal) and fd untouched:
   the id is a configured instance's, --max-instances is reached, or the
   instance's links flap. */
int gateway_register(struct gateway *gw, const struct linkcred *cred, int fd,
		     const char *peer, int *refusal);
/* A registered instance was down for --link-grace: removed (and u freed)
   as an instance dropped from the instances file is. */
void gateway_registered_gone(struct gateway *gw, struct upstream *u);

/* Reserves a connection slot for principal on instance before the 101.
   Returns 0, -EAGAIN when the whole gateway is at --max-conns, or -EBUSY
   at the principal's or the instance's cap; *what names the limit hit. */
int gateway_slot_acquire(struct gateway *gw, const char *principal, const char *instance,
			 const char **what);
void gateway_slot_release(struct gateway *gw, const char *principal,
			  const char *instance);

#endif
