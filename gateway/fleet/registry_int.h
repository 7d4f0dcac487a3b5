/* registry_int: what the registry's files share and nothing else sees:
   the registry's fields and its parts' functions. The calls go one way:
   registry.c (the lease, the timers, lookups and reports) composes
   registry_keys.c (this gateway's own keys) and registry_sync.c (the
   routing cache's range and watch); both of those use registry_core.c
   (keys, failed requests, the kick, a lost lease), which calls none of
   them. What keys must hear of the lease and the watch reaches it through
   struct registry__keys_events, wired by registry.c. */
#ifndef PTG_REGISTRY_INT_H
#define PTG_REGISTRY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "etcd.h"
#include "etcdjson.h"
#include "ev.h"
#include "list.h"
#include "ptg_limits.h"
#include "registry.h"
#include "routecache.h"

/* A request's answer is capped at this: two of the largest values etcd
   takes (1.5 MiB each, a third more in base64) fit, so a range goes on,
   its pages halved down to two keys, whatever else shares the prefix. */
#define REGISTRY__BODY_MAX (8u << 20)
/* One message of the watch stream at most. */
#define REGISTRY__WATCH_MSG_MAX (4u << 20)
struct registry__local; /* registry_keys.c's */
struct registry__op;

/* What registry_keys.c hears of the core and the watch. */
struct registry__keys_events {
	/* The lease is gone: every key is to be written again. */
	void (*lease_lost)(struct registry *r);
	/* The watch saw instance key id change to an owner other than us
	   (under lease), or go (lease 0). */
	void (*instance_changed)(struct registry *r, const char *id, int64_t lease);
	/* The watch saw this gateway's own gateway key go: claim it again. */
	void (*gateway_key_gone)(struct registry *r);
};

struct registry {
	const struct registry_host *host;
	const struct registry__keys_events *keys_events;
	bool enabled; /* --registry given */
	struct etcd *etcd;
	char id[256];
	char boot[64]; /* this process's UUIDv7: tells it from a twin of its id */
	char url[512];
	char prefix[256];
	char prefix_end[256];
	int64_t ttl_s;
	char user[256];
	char password[256];
	bool authenticated;
	struct etcd_req *auth_req;
	/* the lease */
	int64_t lease;
	int64_t lease_ok_ms; /* the last grant or keep-alive answered */
	struct etcd_req *lease_req;
	bool gateway_written;
	bool gateway_claiming;
	bool gateway_refused; /* logged once until it is written */
	struct ev_timer *tick;
	struct ev_timer *kick; /* flush soon, outside libcurl's callbacks */
	/* this gateway's instances */
	struct registry__local **locals;
	size_t n_locals;
	size_t flush_from; /* where the next flush looks first */
	LIST_HEAD(, registry__op) ops;
	size_t n_ops;
	/* the routing cache */
	struct routecache *routes;   /* instance -> owner */
	struct routecache *gateways; /* gateway id -> its fleet URL */
	bool in_sync;
	bool syncing;
	bool range_failing; /* the last range read failed: "down", not "syncing" */
	bool synced_once;   /* a sync after the first is a resync */
	int64_t revision;
	struct buf page_from; /* the key the next range page starts at */
	int64_t page_limit;   /* keys a range page asks for: halved on a page too big */
	struct etcd_req *range_req;
	struct etcd_req *watch_req;
	const char *watch_endpoint; /* the member the watch streams from */
	const char *lease_endpoint; /* the member the last keep-alive went to */
	struct etcdjson_split split;
	struct ev_timer *resync;
	int64_t resync_backoff_ms;
	uint64_t rng; /* xorshift state for the backoff's jitter, never 0 */
	bool full;    /* the cache is at --max-routes (logged once) */
	/* counters */
	uint64_t resyncs;
	uint64_t request_errors;
	uint64_t claims_refused;
	uint64_t lease_grants;
	uint64_t leases_lost;
	uint64_t keys_skipped;
};

/* registry_core.c */
/* Logs a failed request once and counts it. */
void registry__request_failed(struct registry *r, const char *what, int rc, long status,
			      const char *err);
/* The lease is known to be gone: every key is to be written again
   (keys_events->lease_lost). */
void registry__lease_lost(struct registry *r, const char *why);
/* Arms the flush on the next loop turn (safe inside libcurl's callbacks). */
void registry__kick(struct registry *r);
/* The prefix's key for kind ("instances/" or "gateways/") and name. */
void registry__key(const struct registry *r, const char *kind, const char *name,
		   char *out, size_t cap);

/* registry_keys.c */
/* The keys_events registry.c wires: registry_keys.c's handlers. */
extern const struct registry__keys_events registry__keys_handlers;
/* Sends what this gateway's keys need (the gateway key first, then the
   instances'), within a bound on requests in flight. */
void registry__flush(struct registry *r);
/* Cancels the requests in flight and frees this gateway's keys. */
void registry__keys_free(struct registry *r);

/* registry_sync.c */
/* Starts a range of the prefix then its watch; the cache keeps serving. */
void registry__sync_start(struct registry *r);
void registry__sync_stop(struct registry *r);
/* A request to endpoint failed at the transport: if the watch streams
   from that member, it is restarted elsewhere (a resync). */
void registry__member_silent(struct registry *r, const char *endpoint);
/* The resync timer's callback: a sync after the backoff. */
void registry__on_resync(struct ev_timer *t, void *user);

#endif
