/* registry: the fleet registry on etcd: this gateway's lease, its
   gateway key and one key per instance it serves (written under the
   lease, so a dead gateway's keys go by themselves), and the routing
   cache, instance -> owning gateway, kept whole in memory from a watch
   of the prefix so a lookup never waits for etcd. */
#ifndef PTG_REGISTRY_H
#define PTG_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct gateway;
struct buf;
struct ev_loop;
struct gw_config;
struct registry;
struct upstream;

/* What the registry needs from the gateway, and all it sees of it: given
   at registry_new, it outlives the registry. */
struct registry_host {
	struct ev_loop *loop;
	const struct gw_config *cfg;
	const uint16_t *public_port; /* --listen's port as bound, once it is */
	const uint16_t *fleet_port;  /* --fleet-listen's, or NULL */
	void *owner;		     /* the first argument of upstream */
	/* The link of instance_id when this gateway serves it, else NULL. */
	struct upstream *(*upstream)(void *owner, const char *instance_id);
};

enum registry_route {
	REGISTRY_LOCAL,
	REGISTRY_REMOTE,
	REGISTRY_UNKNOWN,
	REGISTRY_UNAVAILABLE
};

/* The registry of the gateway, built from host->cfg's --registry options. Without
   --registry it talks to no etcd and answers only LOCAL or UNKNOWN.
   Returns NULL after printing why to stderr (a bad option value, libcurl
   failing to start). Nothing is sent before registry_start. */
struct registry *registry_new(const struct registry_host *host);
/* Starts the lease, the keys and the watch on the gateway's loop. */
void registry_start(struct registry *r);
/* SIGHUP: --registry-password-file is read again (kept on error, logged)
   for the next authentication; the endpoints, prefix, TTL, id, fleet URL
   and TLS files stay as started. NULL: no-op. */
void registry_reload(struct registry *r);
/* The gateway is leaving, its loop ended: revokes the lease, so its keys
   go now rather than a TTL later (bounded by a second; NULL: no-op). */
void registry_leave(struct registry *r);
void registry_free(struct registry *r);

/* Where instance_id is served. LOCAL: this gateway serves it (decided
   here, from the gateway's own instances, first). REMOTE: *owner_url is
   the owning gateway's fleet URL (valid until the next loop turn).
   UNAVAILABLE: not local, not in the cache, and the registry is not in
   sync (the caller answers 503 with Retry-After). UNKNOWN: no gateway of
   the fleet serves it (404). A NULL registry answers UNKNOWN; a registry
   without --registry answers LOCAL when gw serves it, else UNKNOWN. */
enum registry_route registry_route(const struct registry *r, const char *instance_id,
				   const char **owner_url);

/* The gateway now serves instance_id (configured, or its sidecar dialled
   in): its key is written under the lease, as a transaction that refuses
   to take over another live gateway's key (logged, counted; the instance
   is still served here). Safe to call with a NULL registry. */
void registry_instance_up(struct registry *r, const char *instance_id);
/* The gateway no longer serves instance_id: its key is deleted. */
void registry_instance_down(struct registry *r, const char *instance_id);

/* 1 while the registry is enabled, holds its lease and its cache is in
   sync with etcd (0 without --registry). */
bool registry_up(const struct registry *r);
/* The registry's /readyz value (a new reference): an object with
   "state" ("off", "up", "down", "syncing"), "gateway_id", "lease" (held
   or not), "routes" and "gateways" (in the cache). */
json_t *registry_readyz(const struct registry *r);
/* Appends the ptygate_registry_* families in the Prometheus text format. */
void registry_metrics(const struct registry *r, struct buf *out);

#endif
