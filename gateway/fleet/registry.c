/* registry: the fleet registry's life (see registry.h): the lease and
   its keep-alive on one timer at a third of the TTL, etcd's
   authentication, the lookup and the reports. It composes the parts (see
   registry_int.h): this gateway's own keys are written by
   registry_keys.c, the routing cache is kept by registry_sync.c, and
   what they share is registry_core.c's. */
#include "registry.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "ev.h"
#include "fdio.h"
#include "log.h"
#include "registry_int.h"
#include "timeutil.h"
#include "uuid.h"
#include "xalloc.h"

#define REGISTRY__CONNECT_MS 2000
/* The revoke at exit waits at most this long: an unreachable etcd must
   not hold up a shutdown (the lease then lapses by itself). */
#define REGISTRY__LEAVE_MS 1000

static void lease_step(struct registry *r);

static void on_kick(struct ev_timer *t, void *user)
{
	struct registry *r = user;

	/* A lease found gone is granted again now, not at the next tick. */
	if (!r->lease && (!r->user[0] || r->authenticated))
		lease_step(r);
	registry__flush(r);
}

/* ---- authentication ---- */

static void on_auth(void *user, int rc, long status, const char *body, size_t len,
		    const char *err)
{
	struct registry *r = user;
	char token[1024], why[LOG_ERR_MAX];

	r->auth_req = NULL;
	if (rc < 0 || status != 200) {
		registry__request_failed(r, "authenticate", rc, status,
					 rc < 0 ? err : body);
		return;
	}
	if (etcdjson_auth_reply(body, len, token, sizeof(token), why, sizeof(why)) < 0) {
		registry__request_failed(r, "authenticate", 0, status, why);
		return;
	}
	etcd_set_token(r->etcd, token);
	r->authenticated = true;
	log_info(NULL, "registry: authenticated to etcd as %s", r->user);
	registry__kick(r);
}

static void authenticate(struct registry *r)
{
	struct buf b = BUF_INIT;

	etcd_set_token(r->etcd, NULL);
	etcdjson_auth_req(&b, r->user, r->password);
	r->auth_req =
	    etcd_post(r->etcd, "/v3/auth/authenticate", (const char *)buf_head(&b),
		      buf_size(&b), r->ttl_s * 1000 / 3, REGISTRY__BODY_MAX, on_auth, r);
	buf_free(&b);
}

/* ---- the lease ---- */

static void on_grant(void *user, int rc, long status, const char *body, size_t len,
		     const char *err)
{
	struct registry *r = user;
	int64_t lease = 0, ttl = 0;
	char why[LOG_ERR_MAX];

	r->lease_req = NULL;
	if (rc < 0 || status != 200) {
		registry__request_failed(r, "lease grant", rc, status,
					 rc < 0 ? err : body);
		if (rc < 0)
			registry__member_silent(r, r->lease_endpoint);
		return;
	}
	if (etcdjson_grant_reply(body, len, &lease, &ttl, why, sizeof(why)) < 0) {
		registry__request_failed(r, "lease grant", 0, status, why);
		return;
	}
	r->lease = lease;
	r->lease_ok_ms = time_mono_ms();
	r->lease_grants++;
	log_info(NULL, "registry: lease %lld granted (TTL %lld s) by %s",
		 (long long)lease, (long long)ttl, etcd_endpoint(r->etcd));
	registry__flush(r);
}

static void on_keepalive(void *user, int rc, long status, const char *body, size_t len,
			 const char *err)
{
	struct registry *r = user;
	int64_t ttl = 0;
	char why[LOG_ERR_MAX];

	r->lease_req = NULL;
	if (rc < 0 || status != 200) {
		registry__request_failed(r, "lease keep-alive", rc, status,
					 rc < 0 ? err : body);
		if (rc < 0)
			registry__member_silent(r, r->lease_endpoint);
		return;
	}
	if (etcdjson_keepalive_reply(body, len, &ttl, why, sizeof(why)) < 0) {
		registry__request_failed(r, "lease keep-alive", 0, status, why);
		return;
	}
	if (ttl == 0) {
		registry__lease_lost(r, "etcd no longer knows it");
		registry__kick(r);
		return;
	}
	r->lease_ok_ms = time_mono_ms();
}

static void lease_step(struct registry *r)
{
	struct buf b = BUF_INIT;
	const char *path = "/v3/lease/grant";
	etcd_done_cb cb = on_grant;

	if (r->lease_req)
		return;
	if (r->lease) {
		etcdjson_lease_req(&b, r->lease);
		path = "/v3/lease/keepalive";
		cb = on_keepalive;
	} else {
		etcdjson_grant_req(&b, r->ttl_s);
	}
	/* Answered within a third of the TTL, or tried again on the next
	   tick while the lease still stands. */
	r->lease_endpoint = etcd_endpoint(r->etcd);
	r->lease_req = etcd_post(r->etcd, path, (const char *)buf_head(&b), buf_size(&b),
				 r->ttl_s * 1000 / 3, REGISTRY__BODY_MAX, cb, r);
	buf_free(&b);
}

static void on_tick(struct ev_timer *t, void *user)
{
	struct registry *r = user;

	if (r->user[0] && !r->authenticated) {
		if (!r->auth_req)
			authenticate(r);
		return;
	}
	/* No keep-alive answered for a whole TTL: etcd has let the lease go
	   (or will before any answer could come), and the keys with it. */
	if (r->lease && time_mono_ms() - r->lease_ok_ms > r->ttl_s * 1000)
		registry__lease_lost(r, "no keep-alive answered within the TTL");
	lease_step(r);
	registry__flush(r);
	if (!r->syncing && !r->in_sync && !ev_timer_armed(r->resync))
		registry__sync_start(r);
}

/* ---- life ---- */

/* The password file into out[outlen]: 0, or -1 with the reason in err. */
static int read_password(const char *path, char *out, size_t outlen, char *err,
			 size_t errlen)
{
	struct buf b = BUF_INIT;
	size_t n;

	if (fd_read_file(path, FDIO_REGULAR, outlen - 1, &b, err, errlen) < 0) {
		buf_free(&b);
		return -1;
	}
	n = buf_size(&b);
	while (n > 0 && (buf_head(&b)[n - 1] == '\n' || buf_head(&b)[n - 1] == '\r'))
		n--;
	memcpy(out, buf_head(&b), n);
	out[n] = '\0';
	memset(buf_head(&b), 0, buf_size(&b));
	buf_free(&b);
	return 0;
}

/* Gateways reach each other over HTTP: a ws:// or wss:// public URL
   names the same listener as http:// or https://. */
static void fleet_url(struct registry *r, const char *url)
{
	if (strncmp(url, "ws://", 5) == 0)
		snprintf(r->url, sizeof(r->url), "http://%s", url + 5);
	else if (strncmp(url, "wss://", 6) == 0)
		snprintf(r->url, sizeof(r->url), "https://%s", url + 6);
	else
		snprintf(r->url, sizeof(r->url), "%s", url);
}

/* Without --fleet-url: the URL of --fleet-listen as bound, or without
   it and --public-url, that of --listen. */
static void derive_url(struct registry *r)
{
	const struct gw_config *c = r->host->cfg;
	int fleet = c->fleet_listen_host[0] && r->host->fleet_port;
	const char *h = fleet ? c->fleet_listen_host : c->listen_host;
	bool v6 = strchr(h, ':') != NULL;

	snprintf(r->url, sizeof(r->url), "%s://%s%s%s:%u",
		 fleet || c->tls_cert[0] ? "https" : "http", v6 ? "[" : "", h,
		 v6 ? "]" : "", fleet ? *r->host->fleet_port : *r->host->public_port);
}

static int configure(struct registry *r, const struct gw_config *c)
{
	size_t plen = strlen(c->registry_prefix);
	char err[LOG_ERR_MAX];

	if (plen == 0 || plen > 200) {
		fprintf(stderr, "ptygate-gateway: --registry-prefix: 1 to 200 bytes\n");
		return -1;
	}
	snprintf(r->prefix, sizeof(r->prefix), "%s", c->registry_prefix);
	etcdjson_prefix_end(r->prefix, r->prefix_end);
	snprintf(r->id, sizeof(r->id), "%s", c->gateway_id);
	/* With --fleet-listen and no --fleet-url, derive_url names it. */
	fleet_url(r, c->fleet_url[0]	       ? c->fleet_url
		     : c->fleet_listen_host[0] ? ""
					       : c->public_url);
	r->ttl_s = c->registry_ttl_s;
	snprintf(r->user, sizeof(r->user), "%s", c->registry_user);
	if (r->user[0] && read_password(c->registry_password_file, r->password,
					sizeof(r->password), err, sizeof(err)) < 0) {
		fprintf(stderr, "ptygate-gateway: --registry-password-file: %s\n", err);
		return -1;
	}
	return 0;
}

static struct etcd *client(struct registry *r, const struct gw_config *c)
{
	struct etcd_opts o = {
	    .endpoints = c->registry,
	    .cacert = c->registry_cacert,
	    .cert = c->registry_cert,
	    .key = c->registry_key,
	    .connect_timeout_ms = REGISTRY__CONNECT_MS,
	};
	char err[LOG_ERR_MAX];
	struct etcd *e = etcd_new(r->host->loop, &o, err, sizeof(err));

	if (!e)
		fprintf(stderr, "ptygate-gateway: --registry: %s\n", err);
	return e;
}

struct registry *registry_new(const struct registry_host *host)
{
	struct registry *r = xcalloc(1, sizeof(*r));
	const struct gw_config *c = host->cfg;

	r->host = host;
	r->keys_events = &registry__keys_handlers;
	if (!c->registry[0])
		return r;
	r->enabled = true;
	r->resync_backoff_ms = 200;
	uuid_v7_new(r->boot);
	r->rng =
	    ((uint64_t)time_mono_us() << 16) ^ (uint64_t)getpid() ^ 0x9e3779b97f4a7c15ull;
	if (configure(r, c) < 0 || !(r->etcd = client(r, c))) {
		registry_free(r);
		return NULL;
	}
	r->routes = routecache_new(c->max_routes);
	r->gateways = routecache_new(c->max_routes);
	etcdjson_split_init(&r->split, REGISTRY__WATCH_MSG_MAX);
	r->tick = ev_timer_new(host->loop, -1, 0, on_tick, r);
	r->kick = ev_timer_new(host->loop, -1, 0, on_kick, r);
	r->resync = ev_timer_new(host->loop, -1, 0, registry__on_resync, r);
	return r;
}

void registry_start(struct registry *r)
{
	if (!r || !r->enabled)
		return;
	if (!r->url[0])
		derive_url(r);
	log_info(
	    NULL,
	    "registry: gateway %s (fleet URL %s) in etcd at %s, prefix %s, TTL %lld s",
	    r->id, r->url, etcd_endpoint(r->etcd), r->prefix, (long long)r->ttl_s);
	ev_timer_arm(r->tick, 0, r->ttl_s * 1000 / 3);
}

void registry_reload(struct registry *r)
{
	const char *path = r && r->enabled ? r->host->cfg->registry_password_file : "";
	char pw[sizeof(r->password)], err[LOG_ERR_MAX];

	if (!path[0])
		return;
	if (read_password(path, pw, sizeof(pw), err, sizeof(err)) < 0) {
		log_error(NULL,
			  "SIGHUP: keeping the current etcd password: "
			  "--registry-password-file: %s",
			  err);
		return;
	}
	memcpy(r->password, pw, sizeof(pw));
	explicit_bzero(pw, sizeof(pw));
	log_info(NULL,
		 "SIGHUP: the etcd password re-read from %s (used at the next "
		 "authentication)",
		 path);
}

void registry_leave(struct registry *r)
{
	struct buf b = BUF_INIT;

	if (!r || !r->enabled || !r->lease)
		return;
	etcdjson_lease_req(&b, r->lease);
	if (etcd_post_blocking(r->etcd, "/v3/lease/revoke", (const char *)buf_head(&b),
			       buf_size(&b), REGISTRY__LEAVE_MS) == 0)
		log_info(NULL,
			 "registry: lease %lld revoked: this gateway's keys are gone",
			 (long long)r->lease);
	else
		log_warn(NULL,
			 "registry: lease %lld not revoked: its keys go within the TTL",
			 (long long)r->lease);
	r->lease = 0;
	buf_free(&b);
}

void registry_free(struct registry *r)
{
	if (!r)
		return;
	registry__sync_stop(r);
	registry__keys_free(r);
	etcd_free(r->etcd);
	routecache_free(r->routes);
	routecache_free(r->gateways);
	etcdjson_split_free(&r->split);
	buf_free(&r->page_from);
	ev_timer_free(r->tick);
	ev_timer_free(r->kick);
	ev_timer_free(r->resync);
	memset(r->password, 0, sizeof(r->password));
	free(r);
}

/* ---- lookups and reports ---- */

enum registry_route registry_route(const struct registry *r, const char *instance_id,
				   const char **owner_url)
{
	const struct routecache_entry *e;

	*owner_url = NULL;
	if (!r)
		return REGISTRY_UNKNOWN;
	if (r->host->upstream(r->host->owner, instance_id))
		return REGISTRY_LOCAL;
	if (!r->enabled)
		return REGISTRY_UNKNOWN;
	e = routecache_get(r->routes, instance_id);
	/* A key naming this gateway for an instance it does not serve is a
	   leftover of its previous life: never a route back to itself. */
	if (e && strcmp(e->gateway, r->id) != 0) {
		*owner_url = e->url;
		return REGISTRY_REMOTE;
	}
	if (!r->in_sync)
		return REGISTRY_UNAVAILABLE;
	return REGISTRY_UNKNOWN;
}

bool registry_up(const struct registry *r)
{
	return r && r->enabled && r->lease && r->in_sync;
}

static const char *state(const struct registry *r)
{
	if (!r->enabled)
		return "off";
	if (registry_up(r))
		return "up";
	/* Retries of a range etcd keeps refusing are not a sync under way. */
	if (r->syncing && !r->in_sync && !r->range_failing)
		return "syncing";
	return "down";
}

json_t *registry_readyz(const struct registry *r)
{
	if (!r || !r->enabled)
		return json_pack("{s:s}", "state", "off");
	return json_pack("{s:s,s:s,s:b,s:I,s:I}", "state", state(r), "gateway_id", r->id,
			 "lease", r->lease != 0, "routes",
			 (json_int_t)routecache_size(r->routes), "gateways",
			 (json_int_t)routecache_size(r->gateways));
}

static void family(struct buf *out, const char *name, const char *type, const char *help,
		   unsigned long long v)
{
	buf_appendf(out, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type,
		    name, v);
}

void registry_metrics(const struct registry *r, struct buf *out)
{
	if (!r || !r->enabled)
		return;
	family(out, "ptygate_registry_up", "gauge",
	       "1 while the registry holds its lease and its cache is in sync with etcd",
	       (unsigned long long)registry_up(r));
	family(out, "ptygate_registry_routes", "gauge",
	       "Instances in the routing cache, this gateway's own included",
	       routecache_size(r->routes));
	family(out, "ptygate_registry_gateways", "gauge", "Gateways in the routing cache",
	       routecache_size(r->gateways));
	family(out, "ptygate_registry_cache_bytes", "gauge",
	       "Memory the routing cache holds", routecache_bytes(r->routes));
	family(out, "ptygate_registry_resyncs_total", "counter",
	       "Range reads of the whole prefix after the watch broke",
	       (unsigned long long)r->resyncs);
	family(out, "ptygate_registry_request_errors_total", "counter",
	       "Requests to etcd that failed or were refused",
	       (unsigned long long)r->request_errors);
	family(out, "ptygate_registry_claims_refused_total", "counter",
	       "Instance keys not written because another live gateway holds them",
	       (unsigned long long)r->claims_refused);
	family(out, "ptygate_registry_keys_skipped_total", "counter",
	       "Keys under the prefix left out of the map (malformed or too long)",
	       (unsigned long long)r->keys_skipped);
	family(out, "ptygate_registry_lease_grants_total", "counter", "Leases granted",
	       (unsigned long long)r->lease_grants);
	family(out, "ptygate_registry_leases_lost_total", "counter",
	       "Leases found gone (keys written again under a new one)",
	       (unsigned long long)r->leases_lost);
}
