/* registry_keys: this gateway's own keys in etcd: its gateway key and one
   key per instance it serves, each written under the lease by a
   transaction that never takes over another live gateway's key (a key
   that is absent, or that names this gateway, is claimed; one under a
   foreign lease is left, logged and counted, and claimed again when the
   watch sees it go), and deleted only while it is still under the
   lease. It calls registry_core.c only: a lost lease and what the watch
   sees reach it through registry__keys_handlers. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "log.h"
#include "registry_int.h"
#include "xalloc.h"

/* Claim rounds before a key waits for the next tick: a key that changes
   under every round is contended by a writer outside the fleet's rules. */
#define REGISTRY__CLAIM_ROUNDS 3

/* Claims and releases in flight at once. */
#define REGISTRY__OPS_MAX 32

/* One of this gateway's instances, as the registry holds it. */
struct registry__local {
	char id[PTG_ID_MAX + 1];
	bool written; /* its key is in etcd under the current lease */
	bool refused; /* another live gateway holds it: wait for its delete */
	struct registry__op *op;
};

/* A request in flight and what it is for. */
struct registry__op {
	struct registry *r;
	LIST_ENTRY(registry__op) entry;
	struct etcd_req *req;
	struct registry__local *local; /* a claim's instance, or NULL */
	bool gateway_key;	       /* a claim of the gateway key */
	int rounds;		       /* a claim's transactions so far */
	int64_t lease;		       /* the lease it was sent under */
	char key[512];
};

static struct registry__op *op_new(struct registry *r, const char *key)
{
	struct registry__op *op = xcalloc(1, sizeof(*op));

	op->r = r;
	snprintf(op->key, sizeof(op->key), "%s", key);
	LIST_INSERT_HEAD(&r->ops, op, entry);
	r->n_ops++;
	return op;
}

static void op_free(struct registry__op *op)
{
	struct registry *r = op->r;

	etcd_cancel(op->req);
	LIST_REMOVE(op, entry);
	r->n_ops--;
	if (op->local)
		op->local->op = NULL;
	if (op->gateway_key)
		r->gateway_claiming = false;
	free(op);
}

static struct registry__local *local_find(const struct registry *r, const char *id)
{
	for (size_t i = 0; i < r->n_locals; i++)
		if (strcmp(r->locals[i]->id, id) == 0)
			return r->locals[i];
	return NULL;
}

/* The value of this gateway's key for op, as compact JSON. */
static char *value_of(const struct registry *r, const struct registry__op *op)
{
	json_t *j = op->gateway_key
			? json_pack("{s:s,s:s,s:s,s:s}", "id", r->id, "url", r->url,
				    "version", PTG_VERSION, "boot", r->boot)
			: json_pack("{s:s,s:s,s:s}", "gateway", r->id, "url", r->url,
				    "boot", r->boot);
	char *s = json_dumps(j, JSON_COMPACT);

	json_decref(j);
	if (!s)
		abort(); /* out of memory: as xmalloc does */
	return s;
}

static void on_claim(void *user, int rc, long status, const char *body, size_t len,
		     const char *err);

static void send_claim(struct registry__op *op, int64_t mod_revision)
{
	struct registry *r = op->r;
	struct buf b = BUF_INIT;
	char *value = value_of(r, op);

	op->lease = r->lease;
	etcdjson_claim_req(&b, op->key, value, r->lease, mod_revision);
	free(value);
	op->req =
	    etcd_post(r->etcd, "/v3/kv/txn", (const char *)buf_head(&b), buf_size(&b),
		      r->ttl_s * 1000 / 3, REGISTRY__BODY_MAX, on_claim, op);
	buf_free(&b);
}

/* Who holds a key, from its value: the gateway id ("gateway" in an
   instance key, "id" in a gateway key), its URL and its process's boot
   id. */
struct holder {
	char id[256];
	char url[512];
	char boot[64];
};

static void holder_of(const struct etcdjson_kv *kv, struct holder *h)
{
	json_t *j = json_loadb(kv->value, kv->value_len, 0, NULL);
	const char *g = json_string_value(json_object_get(j, "gateway"));
	const char *u = json_string_value(json_object_get(j, "url"));
	const char *b = json_string_value(json_object_get(j, "boot"));

	if (!g)
		g = json_string_value(json_object_get(j, "id"));
	snprintf(h->id, sizeof(h->id), "%s", g ? g : "");
	snprintf(h->url, sizeof(h->url), "%s", u ? u : "");
	snprintf(h->boot, sizeof(h->boot), "%s", b ? b : "");
	json_decref(j);
}

static void written(struct registry__op *op)
{
	struct registry *r = op->r;

	if (op->gateway_key) {
		r->gateway_written = true;
		r->gateway_refused = false;
		log_info(NULL, "registry: gateway key %s written under lease %lld",
			 op->key, (long long)r->lease);
	} else if (op->local) {
		op->local->written = true;
		log_debug(NULL, "registry: instance key %s written", op->key);
	}
}

static void refused(struct registry__op *op, const struct etcdjson_kv *cur,
		    const struct holder *h)
{
	struct registry *r = op->r;
	bool twin = strcmp(h->id, r->id) == 0;

	r->claims_refused++;
	if (op->gateway_key) {
		if (!r->gateway_refused)
			log_error(
			    NULL,
			    "registry: gateway id %s is held by another live process "
			    "(url %s, lease %lld): give each gateway its own "
			    "--gateway-id; claimed again when that key goes",
			    r->id, h->url, (long long)cur->lease);
		r->gateway_refused = true;
		return;
	}
	op->local->refused = true;
	log_warn(
	    NULL,
	    "registry: instance %s is held by live gateway %s%s (url %s, lease %lld): "
	    "its key is not taken over; the instance is still served here",
	    op->local->id, h->id, twin ? " (another process with this --gateway-id)" : "",
	    h->url, (long long)cur->lease);
}

/* A claim's transaction failed: cur is the key as it stands. Returns 1
   when the op goes on with another round. */
static int contended(struct registry__op *op, const struct etcdjson_kv *cur)
{
	struct registry *r = op->r;
	struct holder h;

	if (cur->key[0] && cur->lease == r->lease) {
		written(op);
		return 0;
	}
	holder_of(cur, &h);
	/* Another gateway's, or another process's under this gateway's id (a
	   twin, or this gateway's previous run whose lease has not lapsed
	   yet): left alone until the watch sees it go. */
	if (cur->key[0] && (strcmp(h.id, r->id) != 0 || strcmp(h.boot, r->boot) != 0)) {
		refused(op, cur, &h);
		return 0;
	}
	/* Absent by now, or this process's under an earlier lease. */
	if (++op->rounds > REGISTRY__CLAIM_ROUNDS)
		return 0;
	send_claim(op, cur->key[0] ? cur->mod_revision : 0);
	return 1;
}

static void on_claim(void *user, int rc, long status, const char *body, size_t len,
		     const char *err)
{
	struct registry__op *op = user;
	struct registry *r = op->r;
	struct etcdjson_kv *cur = xcalloc(1, sizeof(*cur));
	char why[LOG_ERR_MAX];
	bool ok = false;
	bool failed = true;

	op->req = NULL;
	if (rc < 0 || status != 200)
		registry__request_failed(r, "claim of a key", rc, status,
					 rc < 0 ? err : body);
	/* Written under a lease etcd no longer has (and still the current
	   one): a new lease at once, not at the next keep-alive. */
	if (rc == 0 && status != 200 && op->lease == r->lease &&
	    strstr(body, "requested lease not found")) {
		registry__lease_lost(r, "etcd no longer knows it");
		registry__kick(r);
	} else if (etcdjson_claim_reply(body, len, &ok, cur, why, sizeof(why)) < 0)
		registry__request_failed(r, "claim of a key", 0, status, why);
	else
		failed = false;
	if (!failed && ok) {
		written(op);
	} else if (!failed && contended(op, cur)) {
		free(cur);
		return;
	}
	free(cur);
	op_free(op);
	/* Its slot is free: the next claims go now, not at the next tick. A
	   failed request waits for the tick: etcd may be away. */
	if (!failed)
		registry__kick(r);
}

static void claim_gateway(struct registry *r)
{
	char key[512];
	struct registry__op *op;

	registry__key(r, "gateways/", r->id, key, sizeof(key));
	op = op_new(r, key);
	op->gateway_key = true;
	r->gateway_claiming = true;
	send_claim(op, 0);
}

static void claim_instance(struct registry *r, struct registry__local *l)
{
	char key[512];
	struct registry__op *op;

	registry__key(r, "instances/", l->id, key, sizeof(key));
	op = op_new(r, key);
	op->local = l;
	l->op = op;
	send_claim(op, 0);
}

void registry__flush(struct registry *r)
{
	if (!r->enabled || !r->lease || (r->user[0] && !r->authenticated))
		return;
	/* A refused gateway key waits for the watch to see it go. */
	if (!r->gateway_written && !r->gateway_claiming && !r->gateway_refused)
		claim_gateway(r);
	/* From where the last flush stopped, so a queue of claims costs a
	   step each rather than a scan of every instance each. */
	for (size_t k = 0; k < r->n_locals && r->n_ops < REGISTRY__OPS_MAX; k++) {
		struct registry__local *l;

		if (r->flush_from >= r->n_locals)
			r->flush_from = 0;
		l = r->locals[r->flush_from];
		if (!l->written && !l->refused && !l->op)
			claim_instance(r, l);
		if (r->n_ops < REGISTRY__OPS_MAX)
			r->flush_from++;
	}
}

static void local_changed(struct registry *r, const char *id, int64_t lease)
{
	struct registry__local *l = local_find(r, id);

	if (!l || (lease && lease == r->lease))
		return;
	if (!lease && !l->written && !l->refused)
		return;
	/* Gone (its owner's lease ended, or deleted): this gateway claims it.
	   Taken under another lease: claimed again, which logs the owner. */
	l->written = false;
	l->refused = false;
	registry__kick(r);
}

static void gateway_key_gone(struct registry *r)
{
	r->gateway_written = false;
	r->gateway_refused = false;
	registry__kick(r);
}

/* The lease is gone: every key is written again under the next one. */
static void lease_lost(struct registry *r)
{
	r->gateway_written = false;
	for (size_t i = 0; i < r->n_locals; i++) {
		r->locals[i]->written = false;
		r->locals[i]->refused = false;
	}
}

const struct registry__keys_events registry__keys_handlers = {
    .lease_lost = lease_lost,
    .instance_changed = local_changed,
    .gateway_key_gone = gateway_key_gone,
};

void registry__keys_free(struct registry *r)
{
	while (!LIST_EMPTY(&r->ops))
		op_free(LIST_FIRST(&r->ops));
	for (size_t i = 0; i < r->n_locals; i++)
		free(r->locals[i]);
	free(r->locals);
	r->locals = NULL;
	r->n_locals = 0;
}

/* ---- what the gateway tells the registry ---- */

void registry_instance_up(struct registry *r, const char *instance_id)
{
	struct registry__local *l;

	if (!r || !r->enabled || local_find(r, instance_id))
		return;
	l = xcalloc(1, sizeof(*l));
	snprintf(l->id, sizeof(l->id), "%s", instance_id);
	r->locals = xrealloc(r->locals, (r->n_locals + 1) * sizeof(*r->locals));
	r->locals[r->n_locals++] = l;
	registry__kick(r);
}

static void on_release(void *user, int rc, long status, const char *body, size_t len,
		       const char *err)
{
	struct registry__op *op = user;
	char why[LOG_ERR_MAX];
	bool ok = false;

	op->req = NULL;
	if (rc < 0 || status != 200)
		registry__request_failed(op->r, "delete of a key", rc, status,
					 rc < 0 ? err : body);
	else if (etcdjson_txn_reply(body, len, &ok, why, sizeof(why)) < 0)
		registry__request_failed(op->r, "delete of a key", 0, status, why);
	else
		log_debug(NULL, "registry: instance key %s %s", op->key,
			  ok ? "deleted" : "was not ours to delete");
	op_free(op);
}

static void release(struct registry *r, const char *id)
{
	char key[512];
	struct registry__op *op;
	struct buf b = BUF_INIT;

	registry__key(r, "instances/", id, key, sizeof(key));
	op = op_new(r, key);
	etcdjson_release_req(&b, key, r->lease);
	op->req =
	    etcd_post(r->etcd, "/v3/kv/txn", (const char *)buf_head(&b), buf_size(&b),
		      r->ttl_s * 1000 / 3, REGISTRY__BODY_MAX, on_release, op);
	buf_free(&b);
}

void registry_instance_down(struct registry *r, const char *instance_id)
{
	struct registry__local *l;
	size_t i;

	if (!r || !r->enabled || !(l = local_find(r, instance_id)))
		return;
	if (l->op)
		op_free(l->op);
	/* A claim cancelled in flight may have landed: delete under the lease
	   whatever it wrote. Without a lease, the key went with the old one. */
	if (r->lease && !l->refused)
		release(r, instance_id);
	for (i = 0; r->locals[i] != l; i++)
		;
	r->locals[i] = r->locals[--r->n_locals];
	free(l);
}
