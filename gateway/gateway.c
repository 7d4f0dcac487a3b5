/* gateway: assembles the daemon: keys, one upstream link per instance,
   the HTTP listeners, the before-poll hook that writes and frees
   connections, SIGHUP reload of the instances file, and a graceful
   SIGTERM that says goodbye to every client before exiting. */
#include "gateway.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "conn_int.h"
#include "http.h"
#include "log.h"
#include "timeutil.h"
#include "upstream.h"
#include "xalloc.h"

/* Connections per principal and per instance (SPEC 7: HTTP 429). */
struct slot {
	char key[300];
	unsigned n;
};

struct conn_slots {
	struct slot *v;
	size_t n, cap;
	unsigned total;
};

#define SHUTDOWN_GRACE_MS 2000

/* ---- connection slots ---- */

static struct slot *slot_find(struct conn_slots *cs, const char *key, int create)
{
	for (size_t i = 0; i < cs->n; i++)
		if (strcmp(cs->v[i].key, key) == 0)
			return &cs->v[i];
	if (!create)
		return NULL;
	if (cs->n == cs->cap) {
		cs->cap = cs->cap ? cs->cap * 2 : 32;
		cs->v = xrealloc(cs->v, cs->cap * sizeof(*cs->v));
	}
	snprintf(cs->v[cs->n].key, sizeof(cs->v[cs->n].key), "%s", key);
	cs->v[cs->n].n = 0;
	return &cs->v[cs->n++];
}

static void slot_drop(struct conn_slots *cs, const char *key)
{
	struct slot *s = slot_find(cs, key, 0);

	if (s && --s->n == 0)
		*s = cs->v[--cs->n];
}

int gateway_slot_acquire(struct gateway *gw, const char *principal,
			 const char *instance, const char **what)
{
	char pkey[300], ikey[300];
	struct slot *p, *i;

	snprintf(pkey, sizeof(pkey), "p\n%s", principal);
	snprintf(ikey, sizeof(ikey), "i\n%s", instance);
	p = slot_find(gw->slots, pkey, 1);
	i = slot_find(gw->slots, ikey, 1);
	*what = NULL;
	if (gw->slots->total >= gw->cfg->max_conns)
		*what = "connections to this gateway";
	else if (p->n >= gw->cfg->max_conns_per_principal)
		*what = "connections per principal";
	else if (i->n >= gw->cfg->max_conns_per_instance)
		*what = "connections per instance";
	if (*what) {
		if (!p->n)
			slot_drop(gw->slots, pkey);
		if (!i->n)
			slot_drop(gw->slots, ikey);
		return -EBUSY;
	}
	p->n++;
	slot_find(gw->slots, ikey, 0)->n++;
	gw->slots->total++;
	return 0;
}

void gateway_slot_release(struct gateway *gw, const char *principal,
			  const char *instance)
{
	char key[300];

	snprintf(key, sizeof(key), "p\n%s", principal);
	slot_drop(gw->slots, key);
	snprintf(key, sizeof(key), "i\n%s", instance);
	slot_drop(gw->slots, key);
	gw->slots->total--;
}

/* ---- instances ---- */

struct upstream *gateway_upstream(struct gateway *gw, const char *instance_id)
{
	for (size_t i = 0; i < gw->n_ups; i++)
		if (strcmp(upstream_instance(gw->ups[i]), instance_id) == 0)
			return gw->ups[i];
	return NULL;
}

static void add_instance(struct gateway *gw, const struct gw_instance_cfg *ic)
{
	struct upstream *u = gateway_upstream(gw, ic->id);

	if (u) {
		upstream_set_addr(u, &ic->addr);
		return;
	}
	gw->ups = xrealloc(gw->ups, (gw->n_ups + 1) * sizeof(*gw->ups));
	gw->ups[gw->n_ups++] = upstream_new(gw, ic->id, &ic->addr);
}

/* SIGHUP: the instances file is read again; instances it no longer names
   (and that no --instance flag names) are dropped with their clients. */
static void reload_instances(struct gateway *gw)
{
	struct gw_instance_cfg *list = xcalloc(GW_MAX_INSTANCES, sizeof(*list));
	char err[512];
	size_t n = 0, keep;

	if (!gw->cfg->instances_file[0]) {
		log_info(NULL, "SIGHUP: no instances file to reload");
		free(list);
		return;
	}
	if (gw_config_read_instances(gw->cfg->instances_file, list, GW_MAX_INSTANCES, &n,
				     err, sizeof(err)) < 0) {
		log_error(NULL, "SIGHUP: keeping the current instances: %s", err);
		free(list);
		return;
	}
	for (size_t i = 0; i < n; i++)
		add_instance(gw, &list[i]);
	for (size_t i = 0; i < gw->n_ups;) {
		const char *id = upstream_instance(gw->ups[i]);
		keep = 0;
		for (size_t k = 0; k < n && !keep; k++)
			keep = strcmp(list[k].id, id) == 0;
		for (size_t k = 0; k < gw->cfg->n_instances && !keep; k++)
			keep = strcmp(gw->cfg->instances[k].id, id) == 0;
		if (keep) {
			i++;
			continue;
		}
		log_info(NULL, "SIGHUP: instance %s removed", id);
		upstream_free(gw->ups[i]);
		gw->ups[i] = gw->ups[--gw->n_ups];
	}
	log_info(NULL, "SIGHUP: %zu instances", gw->n_ups);
	free(list);
}

/* ---- loop hooks and signals ---- */

/* Write what connections queued and free the ended ones, then let MHD
   see what that changed (resumed requests, released sockets). */
static void before_poll(void *user)
{
	struct gateway *gw = user;

	conn_flush_all(gw);
	http_run_pending(gw->http);
	http_run_pending(gw->admin);
}

/* The fan-out queue gauges, refreshed once a second for /metrics. */
static void on_tick(struct ev_timer *t, void *user)
{
	struct gateway *gw = user;
	uint64_t total = 0, max = 0;

	for (struct conn *c = gw->conns; c; c = c->next) {
		size_t b = outq_bytes(&c->q);
		total += b;
		max = b > max ? b : max;
	}
	gw->metrics.queue_bytes = total;
	gw->metrics.queue_bytes_max = max;
}

static void on_hup(int signo, void *user)
{
	reload_instances(user);
	http_reload(((struct gateway *)user)->http);
}

static void on_grace_over(struct ev_timer *t, void *user)
{
	ev_loop_stop(((struct gateway *)user)->loop);
}

static void on_stop(int signo, void *user)
{
	struct gateway *gw = user;

	if (gw->stopping) {
		ev_loop_stop(gw->loop);
		return;
	}
	log_info(NULL, "%s: saying goodbye to %s clients", strsignal(signo),
		 gw->conns ? "all" : "no");
	gw->stopping = 1;
	for (struct conn *c = gw->conns; c; c = c->next)
		conn_shutdown(c);
	if (!gw->conns) {
		ev_loop_stop(gw->loop);
		return;
	}
	gw->grace = ev_timer_new(gw->loop, SHUTDOWN_GRACE_MS, 0, on_grace_over, gw);
}

/* During shutdown the loop ends as soon as every client is gone. */
static void stop_when_empty(void *user)
{
	struct gateway *gw = user;

	if (gw->stopping && !gw->conns)
		ev_loop_stop(gw->loop);
}

/* ---- start and stop ---- */

static int load_keys(struct gateway *gw)
{
	char err[512];

	gw->keys = keyset_new();
	for (size_t i = 0; i < gw->cfg->n_keys; i++) {
		const struct gw_key_spec *k = &gw->cfg->keys[i];
		int rc = k->ed25519 ? keyset_load_ed25519_file(gw->keys, k->spec, err, sizeof(err))
				    : keyset_load_hs256_file(gw->keys, k->spec, err, sizeof(err));
		if (rc < 0) {
			fprintf(stderr, "ptygate-gateway: %s: %s\n",
				k->ed25519 ? "--ed25519-public-key" : "--hs256-secret-file", err);
			return -1;
		}
	}
	gw->policy.audience = gw->cfg->audience[0] ? gw->cfg->audience : NULL;
	gw->policy.issuer = gw->cfg->issuer[0] ? gw->cfg->issuer : NULL;
	gw->policy.leeway_s = JWT_LEEWAY_S;
	return 0;
}

static int load_instances(struct gateway *gw)
{
	struct gw_instance_cfg *list;
	char err[512];
	size_t n = 0;

	for (size_t i = 0; i < gw->cfg->n_instances; i++)
		add_instance(gw, &gw->cfg->instances[i]);
	if (!gw->cfg->instances_file[0])
		return 0;
	list = xcalloc(GW_MAX_INSTANCES, sizeof(*list));
	if (gw_config_read_instances(gw->cfg->instances_file, list, GW_MAX_INSTANCES, &n,
				     err, sizeof(err)) < 0) {
		fprintf(stderr, "ptygate-gateway: --instances-file: %s\n", err);
		free(list);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		add_instance(gw, &list[i]);
	free(list);
	return 0;
}

static int start_http(struct gateway *gw)
{
	const struct gw_config *c = gw->cfg;
	char err[512];

	gw->http = http_new(gw, c->listen_host, c->listen_port, HTTP_PUBLIC, err, sizeof(err));
	if (!gw->http) {
		fprintf(stderr, "ptygate-gateway: --listen %s:%u: %s\n", c->listen_host,
			c->listen_port, err);
		return -1;
	}
	log_info(NULL, "listening on http://%s:%u", c->listen_host, http_port(gw->http));
	if (!c->admin_host[0])
		return 0;
	gw->admin = http_new(gw, c->admin_host, c->admin_port, HTTP_ADMIN, err, sizeof(err));
	if (!gw->admin) {
		fprintf(stderr, "ptygate-gateway: --admin-listen %s:%u: %s\n", c->admin_host,
			c->admin_port, err);
		return -1;
	}
	log_info(NULL, "admin routes on http://%s:%u", c->admin_host, http_port(gw->admin));
	return 0;
}

static void write_pid_file(const struct gw_config *c)
{
	FILE *f;

	if (!c->pid_file[0])
		return;
	f = fopen(c->pid_file, "w");
	if (!f) {
		log_warn(NULL, "pid file %s: %s", c->pid_file, strerror(errno));
		return;
	}
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
}

struct gateway *gateway_new(struct gw_config *cfg)
{
	struct gateway *gw = xcalloc(1, sizeof(*gw));

	gw->cfg = cfg;
	gw->loop = ev_loop_new();
	gw->slots = xcalloc(1, sizeof(*gw->slots));
	if (load_keys(gw) < 0 || load_instances(gw) < 0 || start_http(gw) < 0) {
		gateway_free(gw);
		return NULL;
	}
	ev_signal_add(gw->loop, SIGTERM, on_stop, gw);
	ev_signal_add(gw->loop, SIGINT, on_stop, gw);
	ev_signal_add(gw->loop, SIGHUP, on_hup, gw);
	ev_signal_add(gw->loop, SIGPIPE, NULL, NULL);
	ev_hook_add(gw->loop, before_poll, gw);
	ev_hook_add(gw->loop, stop_when_empty, gw);
	gw->tick = ev_timer_new(gw->loop, 1000, 1000, on_tick, gw);
	write_pid_file(cfg);
	return gw;
}

int gateway_run(struct gateway *gw)
{
	int rc = ev_loop_run(gw->loop);

	/* Write out the goodbyes that are still queued. */
	conn_flush_all(gw);
	return rc;
}

void gateway_free(struct gateway *gw)
{
	if (!gw)
		return;
	conn_free_all(gw);
	for (size_t i = 0; i < gw->n_ups; i++)
		upstream_free(gw->ups[i]);
	free(gw->ups);
	http_free(gw->admin);
	http_free(gw->http);
	ev_timer_free(gw->grace);
	ev_timer_free(gw->tick);
	keyset_free(gw->keys);
	if (gw->slots)
		free(gw->slots->v);
	free(gw->slots);
	if (gw->cfg->pid_file[0])
		unlink(gw->cfg->pid_file);
	ev_loop_free(gw->loop);
	free(gw);
}
