/* registry_sync: the routing cache, kept whole from etcd: a range read of
   the prefix in pages at one revision, then a watch from the revision
   after it. The watch's stream is cut into messages (each capped) and
   applied as they come; when it breaks, or etcd says its start was
   compacted, the cache is read again (range + revision), logged and
   counted, while lookups go on from the map as it stands. It calls
   registry_core.c only; what the watch sees of this gateway's own keys
   goes to them through keys_events. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "id.h"
#include "log.h"
#include "registry_int.h"

#define REGISTRY__RESYNC_MIN_MS 200
#define REGISTRY__RESYNC_MAX_MS 5000

static const char INSTANCES[] = "instances/";
static const char GATEWAYS[] = "gateways/";

/* The name after prefix and kind in key, or NULL. */
static const char *name_in(const struct registry *r, const char *key, const char *kind)
{
	size_t p = strlen(r->prefix), k = strlen(kind);

	if (strncmp(key, r->prefix, p) != 0 || strncmp(key + p, kind, k) != 0)
		return NULL;
	key += p + k;
	return id_valid(key) ? key : NULL;
}

/* Reads {"gateway"|"id": ID, "url": URL} into gw and url; 0 or -1. */
static int owner_of(const struct etcdjson_kv *kv, const char *field, char *gw,
		    size_t gcap, char *url, size_t ucap)
{
	json_t *j = json_loadb(kv->value, kv->value_len, 0, NULL);
	const char *g = json_string_value(json_object_get(j, field));
	const char *u = json_string_value(json_object_get(j, "url"));
	bool ok = g && u && *g && strlen(g) < gcap && strlen(u) < ucap;

	if (ok) {
		snprintf(gw, gcap, "%s", g);
		snprintf(url, ucap, "%s", u);
	}
	json_decref(j);
	return ok ? 0 : -1;
}

static void put_route(struct registry *r, struct routecache *c, const char *name,
		      const char *gw, const char *url, int64_t lease)
{
	if (routecache_put(c, name, gw, url, lease) == 0) {
		r->full = false;
		return;
	}
	if (!r->full)
		log_error(NULL,
			  "registry: the routing cache holds --max-routes (%zu) entries: "
			  "%s and what follows are not cached",
			  routecache_size(c), name);
	r->full = true;
}

static void apply_put(struct registry *r, const struct etcdjson_kv *kv)
{
	char gw[256], url[512];
	const char *name;

	if (kv->bad)
		return;
	if ((name = name_in(r, kv->key, INSTANCES))) {
		if (owner_of(kv, "gateway", gw, sizeof(gw), url, sizeof(url)) < 0) {
			log_debug(NULL, "registry: %s: a value that names no owner",
				  kv->key);
			return;
		}
		put_route(r, r->routes, name, gw, url, kv->lease);
		r->keys_events->instance_changed(r, name, kv->lease);
	} else if ((name = name_in(r, kv->key, GATEWAYS))) {
		if (owner_of(kv, "id", gw, sizeof(gw), url, sizeof(url)) == 0)
			put_route(r, r->gateways, name, gw, url, kv->lease);
	}
}

static void apply_delete(struct registry *r, const struct etcdjson_kv *kv)
{
	const char *name;

	if (kv->bad)
		return;
	if ((name = name_in(r, kv->key, INSTANCES))) {
		routecache_del(r->routes, name);
		r->keys_events->instance_changed(r, name, 0);
	} else if ((name = name_in(r, kv->key, GATEWAYS))) {
		routecache_del(r->gateways, name);
		if (strcmp(name, r->id) == 0)
			r->keys_events->gateway_key_gone(r);
	}
}

/* Half the backoff plus a random part of the other half: when a member
   dies every gateway's watch on it breaks at once, and a fleet that read
   the whole prefix again in step would hit the survivors together. */
static int64_t jittered(struct registry *r, int64_t ms)
{
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 7;
	r->rng ^= r->rng << 17;
	return ms / 2 + (int64_t)(r->rng % (uint64_t)(ms / 2 + 1));
}

/* Keys etcd holds under the prefix that no gateway wrote (too long, not
   base64): left out of the map, logged and counted, never a reason to
   refuse the rest. */
static void skipped(struct registry *r, size_t n, const char *why)
{
	if (!n)
		return;
	r->keys_skipped += n;
	log_warn(NULL, "registry: %zu keys under %s left out of the map: %s", n,
		 r->prefix, why);
}

static void failed(struct registry *r, const char *why)
{
	int64_t wait = jittered(r, r->resync_backoff_ms);

	r->syncing = false;
	r->in_sync = false;
	log_warn(NULL,
		 "registry: the routing cache is out of sync (%s): resyncing in %lld ms",
		 why, (long long)wait);
	ev_timer_arm(r->resync, wait, 0);
	r->resync_backoff_ms *= 2;
	if (r->resync_backoff_ms > REGISTRY__RESYNC_MAX_MS)
		r->resync_backoff_ms = REGISTRY__RESYNC_MAX_MS;
}

/* ---- the watch ---- */

static int on_msg(const char *msg, size_t len, void *user)
{
	struct registry *r = user;
	struct etcdjson_watch w;
	char why[LOG_ERR_MAX];

	if (etcdjson_watch_msg(msg, len, &w, why, sizeof(why)) < 0) {
		log_warn(NULL, "registry: a watch message refused: %s", why);
		return -EPROTO;
	}
	if (w.canceled || w.compact_revision > 0) {
		log_warn(NULL, "registry: the watch was %s (compacted at %lld)",
			 w.canceled ? "canceled" : "compacted",
			 (long long)w.compact_revision);
		etcdjson_watch_free(&w);
		return -ESTALE;
	}
	skipped(r, w.n_bad, why);
	for (size_t i = 0; i < w.n; i++) {
		if (w.events[i].deleted)
			apply_delete(r, &w.events[i].kv);
		else
			apply_put(r, &w.events[i].kv);
	}
	if (w.revision > r->revision)
		r->revision = w.revision;
	etcdjson_watch_free(&w);
	return 0;
}

static int on_watch_data(void *user, const char *data, size_t len)
{
	struct registry *r = user;
	int rc = etcdjson_split_feed(&r->split, data, len, on_msg, r);

	if (rc == -E2BIG)
		log_warn(NULL, "registry: a watch message over %u bytes",
			 REGISTRY__WATCH_MSG_MAX);
	else if (rc == -EPROTO)
		log_warn(NULL, "registry: the watch stream is not JSON objects");
	return rc != 0;
}

static void on_watch_done(void *user, int rc, long status, const char *body, size_t len,
			  const char *err)
{
	struct registry *r = user;
	char why[LOG_ERR_MAX];

	r->watch_req = NULL;
	if (rc < 0 && rc != -ECANCELED)
		registry__request_failed(r, "watch", rc, status, err);
	snprintf(why, sizeof(why), "the watch ended%s%.200s",
		 rc < 0 && rc != -ECANCELED ? ": " : "",
		 rc < 0 && rc != -ECANCELED ? err : "");
	failed(r, why);
}

static void start_watch(struct registry *r)
{
	struct buf b = BUF_INIT;

	etcdjson_split_free(&r->split);
	etcdjson_split_init(&r->split, REGISTRY__WATCH_MSG_MAX);
	etcdjson_watch_req(&b, r->prefix, r->prefix_end, r->revision + 1);
	r->watch_endpoint = etcd_endpoint(r->etcd);
	r->watch_req = etcd_stream(r->etcd, "/v3/watch", (const char *)buf_head(&b),
				   buf_size(&b), on_watch_data, on_watch_done, r);
	buf_free(&b);
}

/* ---- the range ---- */

static void send_page(struct registry *r);

static void synced(struct registry *r)
{
	size_t gone = routecache_sweep(r->routes);

	routecache_sweep(r->gateways);
	r->syncing = false;
	r->in_sync = true;
	r->range_failing = false;
	r->resync_backoff_ms = REGISTRY__RESYNC_MIN_MS;
	log_info(NULL,
		 "registry: routing cache in sync at revision %lld: %zu instances, %zu "
		 "gateways (%zu routes dropped)",
		 (long long)r->revision, routecache_size(r->routes),
		 routecache_size(r->gateways), gone);
	start_watch(r);
}

static void on_range(void *user, int rc, long status, const char *body, size_t len,
		     const char *err)
{
	struct registry *r = user;
	struct etcdjson_range page;
	char why[LOG_ERR_MAX];
	int first = r->revision == 0;

	r->range_req = NULL;
	if (rc == -E2BIG && r->page_limit > 2) {
		/* Big values under the prefix: smaller pages, the same read (two
		   keys at least: a page after the first repeats its first). */
		r->page_limit /= 2;
		send_page(r);
		return;
	}
	if (rc < 0 || status != 200) {
		registry__request_failed(r, "range of the prefix", rc, status,
					 rc < 0 ? err : body);
		r->range_failing = true;
		failed(r, "the range read failed");
		return;
	}
	if (etcdjson_range_reply(body, len, &page, why, sizeof(why)) < 0) {
		registry__request_failed(r, "range of the prefix", 0, status, why);
		r->range_failing = true;
		failed(r, "the range read failed");
		return;
	}
	if (first)
		r->revision = page.revision;
	/* The page's first kv was the last page's own: counted there. */
	skipped(r, page.n_bad - (!first && page.n > 0 && page.kvs[0].bad), why);
	/* A page after the first starts with the key that ended the one
	   before (the revision is fixed, so it is still there). */
	for (size_t i = first ? 0 : 1; i < page.n; i++)
		apply_put(r, &page.kvs[i]);
	if (page.more && page.n > 0) {
		buf_reset(&r->page_from);
		buf_append(&r->page_from, buf_head(&page.last_key),
			   buf_size(&page.last_key));
		etcdjson_range_free(&page);
		send_page(r);
		return;
	}
	etcdjson_range_free(&page);
	synced(r);
}

static void send_page(struct registry *r)
{
	struct buf b = BUF_INIT;

	etcdjson_range_req(&b, (const char *)buf_head(&r->page_from),
			   buf_size(&r->page_from), r->prefix_end, r->revision,
			   r->page_limit);
	r->range_req =
	    etcd_post(r->etcd, "/v3/kv/range", (const char *)buf_head(&b), buf_size(&b),
		      r->ttl_s * 1000, REGISTRY__BODY_MAX, on_range, r);
	buf_free(&b);
}

void registry__sync_start(struct registry *r)
{
	if (r->syncing || r->watch_req)
		return;
	if (r->synced_once)
		r->resyncs++;
	r->synced_once = true;
	r->syncing = true;
	r->revision = 0;
	r->page_limit = ETCDJSON_PAGE_MAX;
	routecache_begin(r->routes);
	routecache_begin(r->gateways);
	buf_reset(&r->page_from);
	buf_append_str(&r->page_from, r->prefix);
	send_page(r);
}

void registry__member_silent(struct registry *r, const char *endpoint)
{
	if (!r->watch_req || r->watch_endpoint != endpoint)
		return;
	/* A member that stopped answering may still hold the watch's
	   connection open (a hung process, a partition): nothing would come
	   and nothing would break. Read the map again from another one. */
	etcd_cancel(r->watch_req);
	r->watch_req = NULL;
	failed(r, "the watch's member stopped answering keep-alives");
}

void registry__sync_stop(struct registry *r)
{
	etcd_cancel(r->range_req);
	etcd_cancel(r->watch_req);
	r->range_req = NULL;
	r->watch_req = NULL;
}

void registry__on_resync(struct ev_timer *t, void *user)
{
	registry__sync_start(user);
}
