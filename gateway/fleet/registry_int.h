/* registry_int: what the registry's files share and nothing else sees:
   the registry's fields (registry.c: the lease, the timers, lookups and
   reports; registry_keys.c: this gateway's own keys; registry_sync.c:
   the routing cache's range and watch). */
#ifndef PTG_REGISTRY_INT_H
#define PTG_REGISTRY_INT_H

#include <stddef.h>
#include <stdint.h>

#include "etcd.h"
#include "ev.h"
#include "etcdjson.h"
#include "ptg_limits.h"
#include "registry.h"
#include "routecache.h"

/* A request's answer is capped at this: two of the largest values etcd
   takes (1.5 MiB each, a third more in base64) fit, so a range goes on,
   its pages halved down to two keys, whatever else shares the prefix. */
#define REGISTRY__BODY_MAX (8u << 20)
/* One message of the watch stream at most. */
#define REGISTRY__WATCH_MSG_MAX (4u << 20)
/* Claims and releases in flight at once. */
#define REGISTRY__OPS_MAX 32

/* One of this gateway's instances, as the registry holds it. */
struct registry__local {
	char id[PTG_ID_MAX + 1];
	int written; /* its key is in etcd under the current lease */
	int refused; /* another live gateway holds it: wait for its delete */
	struct registry__op *op;
};

/* A request in flight and what it is for. */
struct registry__op {
	struct registry *r;
	struct registry__op *prev, *next;
	struct etcd_req *req;
	struct registry__local *local; /* a claim's instance, or NULL */
	int gateway_key;	       /* a claim of the gateway key */
	int rounds;		       /* a claim's transactions so far */
	int64_t lease;		       /* the lease it was sent under */
	char key[512];
};

struct registry {
	const struct registry_host *host;
	int enabled; /* --registry given */
	struct etcd *etcd;
	char id[256];
	char boot[64]; /* this process's UUIDv7: tells it from a twin of its id */
	char url[512];
	char prefix[256];
	char prefix_end[256];
	int64_t ttl_s;
	char user[256];
	char password[256];
	int authenticated;
	struct etcd_req *auth_req;
	/* the lease */
	int64_t lease;
	int64_t lease_ok_ms; /* the last grant or keep-alive answered */
	struct etcd_req *lease_req;
	int gateway_written;
	int gateway_claiming;
	int gateway_refused; /* logged once until it is written */
	struct ev_timer *tick;
	struct ev_timer *kick; /* flush soon, outside libcurl's callbacks */
	/* this gateway's instances */
	struct registry__local **locals;
	size_t n_locals;
	size_t flush_from; /* where the next flush looks first */
	struct registry__op *ops;
	size_t n_ops;
	/* the routing cache */
	struct routecache *routes;   /* instance -> owner */
	struct routecache *gateways; /* gateway id -> its fleet URL */
	int in_sync;
	int syncing;
	int range_failing; /* the last range read failed: "down", not "syncing" */
	int synced_once;   /* a sync after the first is a resync */
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
	int full;     /* the cache is at --max-routes (logged once) */
	/* counters */
	uint64_t resyncs;
	uint64_t request_errors;
	uint64_t claims_refused;
	uint64_t lease_grants;
	uint64_t leases_lost;
	uint64_t keys_skipped;
};

/* Logs a failed request once and counts it. */
void registry__request_failed(struct registry *r, const char *what, int rc, long status,
			      const char *err);
/* The lease is known to be gone: every key is to be written again. */
void registry__lease_lost(struct registry *r, const char *why);
/* Arms the flush on the next loop turn (safe inside libcurl's callbacks). */
void registry__kick(struct registry *r);
/* The prefix's key for kind ("instances/" or "gateways/") and name. */
void registry__key(const struct registry *r, const char *kind, const char *name,
		   char *out, size_t cap);

/* registry_keys.c */
struct registry__op *registry__op_new(struct registry *r, const char *key);
void registry__op_free(struct registry__op *op);
/* Sends what this gateway's keys need (the gateway key first, then the
   instances'), within REGISTRY__OPS_MAX in flight. */
void registry__flush(struct registry *r);
struct registry__local *registry__local_find(const struct registry *r, const char *id);
/* The watch saw instance key id change to an owner other than us, or go. */
void registry__local_changed(struct registry *r, const char *id, int64_t lease);
/* The watch saw this gateway's own gateway key go: claim it again. */
void registry__gateway_key_gone(struct registry *r);

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
