/* gateway: the gateway daemon as a whole: its loop, configuration, keys,
   instance links, HTTP servers, connections and metrics; start-up,
   SIGHUP reload and SIGTERM shutdown. */
#ifndef PTG_GATEWAY_H
#define PTG_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>

#include "auth_jwt.h"
#include "config.h"
#include "conn.h"
#include "ev.h"
#include "http.h"
#include "linklisten.h"
#include "metrics.h"
#include "registry.h"
#include "upstream.h"

struct linkcred;

struct gateway {
	struct gw_config *cfg;
	struct ev_loop *loop;
	struct keyset *keys;
	struct keyset *link_keys;      /* --link-key: instance credentials; SIGHUP */
	struct linklisten *linklisten; /* --link-listen, or NULL */
	struct jwt_policy policy;
	struct upstream **ups;
	size_t n_ups;
	struct http *http;		    /* the public listener */
	struct http *admin;		    /* --admin-listen, or NULL */
	struct http *fleet_http;	    /* --fleet-listen, or NULL */
	uint16_t fleet_port;		    /* its port as bound */
	struct conn_set conns;		    /* every upgraded connection */
	struct conn_host conn_host;	    /* what each connection sees of the gateway */
	struct upstream_host upstream_host; /* what each instance link sees of it */
	struct linklisten_host linklisten_host; /* what the link listeners see */
	struct routes_host routes_host;		/* what every HTTP request sees */
	struct http_host http_host;		/* what the HTTP listeners see */
	struct registry_host registry_host;	/* what the fleet's registry sees */
	struct metrics metrics;
	struct conn_slots *slots;  /* connection counts per principal/instance */
	struct restlimit *rest;	   /* REST requests per principal (routes_auth.c) */
	struct registry *registry; /* the fleet's (registry.h), never NULL */
	struct forward *forward;   /* to the owning gateway (forward.h), or NULL */
	struct fleetauth *fleet;   /* --fleet-secret-file's key, or NULL */
	bool stopping;
	struct ev_timer *grace; /* bounds the goodbye at shutdown */
	struct ev_timer *tick;
};

/* Builds everything from cfg (keys loaded, listeners bound). Returns NULL
   after printing why to stderr. */
struct gateway *gateway_new(struct gw_config *cfg);
void gateway_free(struct gateway *gw);
/* Runs until SIGTERM/SIGINT, then says goodbye to every client. */
int gateway_run(struct gateway *gw);

#endif
