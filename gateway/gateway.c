/* gateway: assembles the daemon: keys, one upstream link per instance,
   the HTTP listeners, the before-poll hook that writes and frees
   connections, SIGHUP reload of the instances file, and a graceful
   SIGTERM that says goodbye to every client before exiting. */
#include "gateway.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "auth_jwt.h"
#include "conn.h"
#include "fleetauth.h"
#include "forward.h"
#include "http.h"
#include "linkcred.h"
#include "linklisten.h"
#include "log.h"
#include "registry.h"
#include "relay.h"
#include "restlimit.h"
#include "task_ops.h"
#include "timeutil.h"
#include "tlsfront.h"
#include "upstream.h"
#include "xalloc.h"

/* A slot's key: "p\n" and a principal, or "i\n" and an instance id. */
#define SLOT_KEY_MAX (2 + JWT_SUB_MAX + 1)

/* Connections per principal and per instance (HTTP 429 at the upgrade). */
struct slot {
	char key[SLOT_KEY_MAX];
	unsigned n;
};

struct conn_slots {
	struct slot *v;
	size_t n, cap;
	unsigned total;
};

#define SHUTDOWN_GRACE_MS 2000

/* File descriptors the connection budget leaves for everything else: a
   link socket per instance (two while one re-dials), the listeners and
   their epoll fds, key and static files, logs. */
#define FD_SPARE 32
/* Sockets each listener takes beyond the WebSocket limit: plain HTTP
   requests (http.c's HTTP__EXTRA_CONNS, 64), connections being answered
   429 or 503 (HTTP__REFUSALS_MAX, 32) and evicted heads not yet closed
   (HTTP__EVICTING_MAX, 32). */
#define FD_HTTP_EXTRA (64 + 32 + 32)

/* ---- connection slots ----
   The counts live in a growable array, so nothing here hands out a
   pointer into it: every helper finds its entry by key, uses it, and is
   done before anything can append (and realloc) again. */

static long slot_index(const struct conn_slots *cs, const char *key)
{
	for (size_t i = 0; i < cs->n; i++)
		if (strcmp(cs->v[i].key, key) == 0)
			return (long)i;
	return -1;
}

static unsigned slot_count(const struct conn_slots *cs, const char *key)
{
	long i = slot_index(cs, key);

	return i < 0 ? 0 : cs->v[i].n;
}

static void slot_add(struct conn_slots *cs, const char *key)
{
	long i = slot_index(cs, key);

	if (i < 0) {
		if (cs->n == cs->cap) {
			cs->cap = cs->cap ? cs->cap * 2 : 32;
			cs->v = xrealloc(cs->v, cs->cap * sizeof(*cs->v));
		}
		i = (long)cs->n++;
		snprintf(cs->v[i].key, sizeof(cs->v[i].key), "%s", key);
		cs->v[i].n = 0;
	}
	cs->v[i].n++;
}

static void slot_drop(struct conn_slots *cs, const char *key)
{
	long i = slot_index(cs, key);

	if (i >= 0 && --cs->v[i].n == 0)
		cs->v[i] = cs->v[--cs->n];
}

/* Reserves a connection slot for principal on instance before the 101
   (routes_host.slot_acquire). */
static int slot_acquire(void *owner, const char *principal, const char *instance,
			const char **what)
{
	struct gateway *gw = owner;
	char pkey[SLOT_KEY_MAX], ikey[SLOT_KEY_MAX];

	snprintf(pkey, sizeof(pkey), "p\n%s", principal);
	snprintf(ikey, sizeof(ikey), "i\n%s", instance);
	*what = NULL;
	if (gw->slots->total >= gw->cfg->max_conns) {
		*what = "connections to this gateway";
		return -EAGAIN;
	}
	if (slot_count(gw->slots, pkey) >= gw->cfg->max_conns_per_principal)
		*what = "connections per principal";
	else if (slot_count(gw->slots, ikey) >= gw->cfg->max_conns_per_instance)
		*what = "connections per instance";
	if (*what)
		return -EBUSY;
	slot_add(gw->slots, pkey);
	slot_add(gw->slots, ikey);
	gw->slots->total++;
	return 0;
}

static void slot_release(void *owner, const char *principal, const char *instance)
{
	struct gateway *gw = owner;
	char key[SLOT_KEY_MAX];

	snprintf(key, sizeof(key), "p\n%s", principal);
	slot_drop(gw->slots, key);
	snprintf(key, sizeof(key), "i\n%s", instance);
	slot_drop(gw->slots, key);
	gw->slots->total--;
}

/* ---- instances ---- */

static struct upstream *find_upstream(const struct gateway *gw, const char *instance_id)
{
	for (size_t i = 0; i < gw->n_ups; i++)
		if (strcmp(upstream_instance(gw->ups[i]), instance_id) == 0)
			return gw->ups[i];
	return NULL;
}

/* Returns 0, or -1 (logged) when the instance's link cannot be made. */
static int add_instance(struct gateway *gw, const struct gw_instance_cfg *ic)
{
	struct upstream *u = find_upstream(gw, ic->id);

	if (u && upstream_registered(u)) {
		log_error(NULL,
			  "instance %s is registered by its own link; its "
			  "configured address is ignored",
			  ic->id);
		return -1;
	}
	if (u) {
		upstream_set_addr(u, &ic->addr);
		return 0;
	}
	u = upstream_new(&gw->upstream_host, ic->id, &ic->addr);
	gw->ups = xrealloc(gw->ups, (gw->n_ups + 1) * sizeof(*gw->ups));
	gw->ups[gw->n_ups++] = u;
	/* A configured instance is served here from the moment it is. */
	registry_instance_up(gw->registry, ic->id);
	return 0;
}

/* The instance leaves: its connections say goodbye and let go of its
   link first, then the link is freed. */
static void remove_instance(struct gateway *gw, size_t i, const char *why)
{
	const char *id = upstream_instance(gw->ups[i]);

	log_info(NULL, "%s: instance %s removed", why, id);
	registry_instance_down(gw->registry, id);
	conn_set_drop_instance(&gw->conns, id);
	upstream_free(gw->ups[i]);
	gw->ups[i] = gw->ups[--gw->n_ups];
}

/* SIGHUP: the instances file is read again; instances it no longer names
   (and that no --instance flag names) are dropped with their clients. */
static void reload_instances(struct gateway *gw)
{
	struct gw_instance_cfg *list = xcalloc(GW_MAX_INSTANCES, sizeof(*list));
	char err[LOG_ERR_MAX];
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
		(void)add_instance(gw, &list[i]); /* logged; the next SIGHUP retries */
	for (size_t i = 0; i < gw->n_ups;) {
		const char *id = upstream_instance(gw->ups[i]);
		keep = 0;
		for (size_t k = 0; k < n && !keep; k++)
			keep = strcmp(list[k].id, id) == 0;
		for (size_t k = 0; k < gw->cfg->n_flag_instances && !keep; k++)
			keep = strcmp(gw->cfg->instances[k].id, id) == 0;
		if (keep || upstream_registered(gw->ups[i]))
			i++;
		else
			remove_instance(gw, i, "SIGHUP");
	}
	log_info(NULL, "SIGHUP: %zu instances", gw->n_ups);
	free(list);
}

/* ---- registered instances: sidecars that dial in ---- */

/* A link that dialled in presented cred (verified): hands fd to the
   instance's upstream, adding the instance when it is new. Returns 0
   (fd taken) or -1 with *refusal (enum link_refusal) and fd untouched:
   the id is a configured instance's, --max-instances is reached, or the
   instance's links flap. */
static int admit_link(void *owner, const struct linkcred *cred, int fd, const char *peer,
		      int *refusal)
{
	struct gateway *gw = owner;

	struct upstream *u = find_upstream(gw, cred->instance_id);

	if (u && !upstream_registered(u)) {
		*refusal = LINK_REFUSAL_STATIC;
		return -1;
	}
	if (!u && gw->n_ups >= gw->cfg->max_instances) {
		*refusal = LINK_REFUSAL_MAX_INSTANCES;
		return -1;
	}
	if (!u) {
		u = upstream_new_registered(&gw->upstream_host, cred->instance_id);
		gw->ups = xrealloc(gw->ups, (gw->n_ups + 1) * sizeof(*gw->ups));
		gw->ups[gw->n_ups++] = u;
		log_info(NULL, "instance %s registered by a link from %s",
			 cred->instance_id, peer);
		registry_instance_up(gw->registry, cred->instance_id);
	}
	if (upstream_adopt(u, fd, peer, cred->exp) < 0) {
		*refusal = LINK_REFUSAL_FLAPPING;
		return -1;
	}
	gw->metrics.link_registrations++;
	return 0;
}

/* A registered instance was down for --link-grace: removed (and u
   freed) as an instance dropped from the instances file is. */
static void registered_gone(void *owner, struct upstream *u)
{
	struct gateway *gw = owner;

	for (size_t i = 0; i < gw->n_ups; i++) {
		if (gw->ups[i] != u)
			continue;
		gw->metrics.registered_removed++;
		remove_instance(gw, i, "--link-grace over");
		return;
	}
}

/* Loads the --link-key files into a new set: NULL after logging (err)
   when one cannot be read. */
static struct keyset *read_link_keys(const struct gw_config *c, char *err, size_t errlen)
{
	struct keyset *ks = keys_new();

	for (size_t i = 0; ks && i < c->n_link_keys; i++) {
		if (keys_load_ed25519_file(ks, c->link_keys[i], err, errlen) < 0) {
			keys_free(ks);
			return NULL;
		}
	}
	if (!ks)
		snprintf(err, errlen, "cannot initialise libsodium");
	return ks;
}

/* SIGHUP: the link keys are read again (rotation by kid); a key that
   cannot be read keeps the current set. */
static void reload_link_keys(struct gateway *gw)
{
	char err[LOG_ERR_MAX];
	struct keyset *ks;

	if (!gw->cfg->n_link_keys)
		return;
	ks = read_link_keys(gw->cfg, err, sizeof(err));
	if (!ks) {
		log_error(NULL, "SIGHUP: keeping the current link keys: --link-key: %s",
			  err);
		return;
	}
	keys_free(gw->link_keys);
	gw->link_keys = ks;
	linklisten_keys_changed(gw->linklisten);
	log_info(NULL, "SIGHUP: %zu link keys", keys_count(ks));
}

/* ---- loop hooks and signals ---- */

/* Write what connections queued and free the ended ones, then let MHD
   see what that changed (resumed requests, released sockets), then write
   what MHD's run queued. */
static void before_poll(void *user)
{
	struct gateway *gw = user;

	conn_set_flush(&gw->conns);
	http_run_pending(gw->http);
	http_run_pending(gw->admin);
	http_run_pending(gw->fleet_http);
	/* An upgrade completed inside that MHD run queued its binding_hello
	   after the flush above: write it now, not after the next wake-up.
	   Observers had their slice of this turn already. */
	conn_set_flush_first(&gw->conns);
}

/* The fan-out queue gauges, refreshed once a second for /metrics. */
static void on_tick(struct ev_timer *t, void *user)
{
	struct gateway *gw = user;

	conn_set_queue_stats(&gw->conns, &gw->metrics.queue_bytes,
			     &gw->metrics.queue_bytes_max);
}

/* SIGHUP: the fleet secret is read again (rotated on every gateway of
   the fleet together); a file that cannot be read, or is too short,
   keeps the current key. The owner's checks read gw->fleet; the
   forwarder keeps a copy. */
static void reload_fleet_secret(struct gateway *gw)
{
	struct fleetauth fa;
	char err[LOG_ERR_MAX];

	if (!gw->fleet)
		return;
	if (fleetauth_load(&fa, gw->cfg->fleet_secret_file, err, sizeof(err)) < 0) {
		log_error(
		    NULL,
		    "SIGHUP: keeping the current fleet secret: --fleet-secret-file: %s",
		    err);
		return;
	}
	*gw->fleet = fa;
	forward_set_auth(gw->forward, &fa);
	fleetauth_clear(&fa);
	log_info(NULL, "SIGHUP: the fleet secret re-read from %s",
		 gw->cfg->fleet_secret_file);
}

static void on_hup(int signo, void *user)
{
	struct gateway *gw = user;

	reload_instances(gw);
	reload_link_keys(gw);
	http_reload(gw->http);
	reload_fleet_secret(gw);
	http_reload(gw->fleet_http);
	registry_reload(gw->registry);
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
		 conn_set_empty(&gw->conns) ? "no" : "all");
	gw->stopping = true;
	conn_set_shutdown(&gw->conns);
	if (conn_set_empty(&gw->conns)) {
		ev_loop_stop(gw->loop);
		return;
	}
	gw->grace = ev_timer_new(gw->loop, SHUTDOWN_GRACE_MS, 0, on_grace_over, gw);
}

/* During shutdown the loop ends as soon as every client is gone. */
static void stop_when_empty(void *user)
{
	struct gateway *gw = user;

	if (gw->stopping && conn_set_empty(&gw->conns))
		ev_loop_stop(gw->loop);
}

/* ---- start and stop ---- */

static int load_keys(struct gateway *gw)
{
	char err[LOG_ERR_MAX];

	gw->keys = keys_new();
	if (!gw->keys) {
		fprintf(stderr, "ptygate-gateway: cannot initialise libsodium\n");
		return -1;
	}
	for (size_t i = 0; i < gw->cfg->n_keys; i++) {
		const struct gw_key_spec *k = &gw->cfg->keys[i];
		int rc = k->ed25519
			     ? keys_load_ed25519_file(gw->keys, k->spec, err, sizeof(err))
			     : keys_load_hs256_file(gw->keys, k->spec, err, sizeof(err));
		if (rc < 0) {
			fprintf(stderr, "ptygate-gateway: %s: %s\n",
				k->ed25519 ? "--ed25519-public-key"
					   : "--hs256-secret-file",
				err);
			return -1;
		}
	}
	gw->policy.audience = gw->cfg->audience[0] ? gw->cfg->audience : NULL;
	gw->policy.issuer = gw->cfg->issuer[0] ? gw->cfg->issuer : NULL;
	gw->policy.leeway_s = JWT_LEEWAY_S;
	if (!gw->cfg->n_link_keys)
		return 0;
	gw->link_keys = read_link_keys(gw->cfg, err, sizeof(err));
	if (!gw->link_keys) {
		fprintf(stderr, "ptygate-gateway: --link-key: %s\n", err);
		return -1;
	}
	return 0;
}

/* The config holds the --instance flags and the instances file as read
   at start (config.c merged them; n_flag_instances tells them apart). */
static int load_instances(struct gateway *gw)
{
	for (size_t i = 0; i < gw->cfg->n_instances; i++)
		if (add_instance(gw, &gw->cfg->instances[i]) < 0)
			return -1;
	return 0;
}

static int count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", ".." and the directory's own fd */
}

/* Descriptors the link listeners may hold: one per registered instance
   and one per link awaiting its credential. */
static int64_t link_fds(const struct gw_config *c)
{
	return c->n_link_listen
		   ? (int64_t)c->n_link_listen + c->max_instances + c->max_pending_links
		   : 0;
}

/* Raises the soft RLIMIT_NOFILE to the hard one, then lowers --max-conns
   to what fits: a connection costs its socket, three with TLS (timers cost no descriptor:
   ev.h), each listener may hold FD_HTTP_EXTRA plain requests (the admin listener as
   many sockets as the public one), and FD_SPARE stay free. Running out
   of descriptors then means refusals, never a failed timer. */
static int fit_fd_limit(struct gateway *gw)
{
	struct gw_config *c = gw->cfg;
	struct rlimit rl;
	int64_t budget, per_conn, fit, open_now = count_open_fds();

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t want = rl.rlim_max;
		rl.rlim_cur = want;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_warn(NULL, "cannot raise the open-file limit: %s",
				 strerror(errno));
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	/* A TLS client holds its socket and both ends of the pair to MHD. */
	per_conn = (c->tls_cert[0] ? TLSFRONT_FDS : 1) + (c->admin_host[0] ? 1 : 0);
	budget = (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > INT32_MAX
		      ? INT32_MAX
		      : (int64_t)rl.rlim_cur) -
		 (open_now > 0 ? open_now : 0) - FD_SPARE - 2 * (int64_t)gw->n_ups -
		 link_fds(c) -
		 FD_HTTP_EXTRA * (1 + !!c->admin_host[0] + !!c->fleet_listen_host[0]);
	fit = budget / per_conn;
	if (fit < 1)
		fit = 1;
	if ((uint64_t)fit < c->max_conns) {
		log_warn(NULL,
			 "open-file limit %llu: --max-conns lowered from %u to %lld "
			 "(%lld descriptors per connection)",
			 (unsigned long long)rl.rlim_cur, c->max_conns, (long long)fit,
			 (long long)per_conn);
		c->max_conns = (uint32_t)fit;
	} else {
		log_info(NULL, "open-file limit %llu: room for --max-conns %u",
			 (unsigned long long)rl.rlim_cur, c->max_conns);
	}
	return 0;
}

static int start_http(struct gateway *gw)
{
	const struct gw_config *c = gw->cfg;
	char err[LOG_ERR_MAX];

	gw->http = http_new(&gw->http_host, c->listen_host, c->listen_port, ROUTE_PUBLIC,
			    err, sizeof(err));
	if (!gw->http) {
		fprintf(stderr, "ptygate-gateway: --listen %s:%u: %s\n", c->listen_host,
			c->listen_port, err);
		return -1;
	}
	gw->routes_host.public_port = http_port(gw->http);
	log_info(NULL, "listening on http://%s:%u", c->listen_host, http_port(gw->http));
	if (!c->admin_host[0])
		return 0;
	gw->admin = http_new(&gw->http_host, c->admin_host, c->admin_port, ROUTE_ADMIN,
			     err, sizeof(err));
	if (!gw->admin) {
		fprintf(stderr, "ptygate-gateway: --admin-listen %s:%u: %s\n",
			c->admin_host, c->admin_port, err);
		return -1;
	}
	log_info(NULL, "admin routes on http://%s:%u", c->admin_host,
		 http_port(gw->admin));
	return 0;
}

/* --fleet-listen: forwarded requests from the fleet's gateways, over
   mutual TLS. */
static int start_fleet_http(struct gateway *gw)
{
	const struct gw_config *c = gw->cfg;
	char err[LOG_ERR_MAX];

	if (!c->fleet_listen_host[0])
		return 0;
	gw->fleet_http = http_new(&gw->http_host, c->fleet_listen_host,
				  c->fleet_listen_port, ROUTE_FLEET, err, sizeof(err));
	if (!gw->fleet_http) {
		fprintf(stderr, "ptygate-gateway: --fleet-listen %s:%u: %s\n",
			c->fleet_listen_host, c->fleet_listen_port, err);
		return -1;
	}
	gw->fleet_port = http_port(gw->fleet_http);
	log_info(NULL, "fleet requests on https://%s:%u (client certificates from %s)",
		 c->fleet_listen_host, gw->fleet_port, c->fleet_cacert);
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

static int start_links(struct gateway *gw)
{
	char err[LOG_ERR_MAX];

	if (!gw->cfg->n_link_listen)
		return 0;
	gw->linklisten = linklisten_new(&gw->linklisten_host, err, sizeof(err));
	if (!gw->linklisten) {
		fprintf(stderr, "ptygate-gateway: --link-listen: %s\n", err);
		return -1;
	}
	return 0;
}

/* Signals, hooks and the tick. Returns 0 or -1 after printing why. */
static int start_loop(struct gateway *gw)
{
	static const int stop_signals[] = {SIGTERM, SIGINT};

	for (size_t i = 0; i < 2; i++)
		if (ev_signal_add(gw->loop, stop_signals[i], on_stop, gw) < 0)
			goto fail;
	if (ev_signal_add(gw->loop, SIGHUP, on_hup, gw) < 0 ||
	    ev_signal_add(gw->loop, SIGPIPE, NULL, NULL) < 0)
		goto fail;
	ev_hook_add(gw->loop, before_poll, gw);
	ev_hook_add(gw->loop, stop_when_empty, gw);
	gw->tick = ev_timer_new(gw->loop, 1000, 1000, on_tick, gw);
	if (gw->tick)
		return 0;
fail:
	fprintf(stderr, "ptygate-gateway: cannot set up the event loop: %s\n",
		strerror(errno));
	return -1;
}

/* Forwarding to the owning gateway, with --fleet-secret-file: the key
   and the forwarder on the loop. Without it this gateway neither
   forwards nor takes forwarded requests. Returns 0 or -1 after saying
   why on stderr (an unreadable or short secret refuses the start). */
static int start_fleet(struct gateway *gw)
{
	const struct gw_config *c = gw->cfg;
	struct forward_opts o = {
	    .cacert = c->fleet_cacert,
	    .cert = c->fleet_cert,
	    .key = c->fleet_key,
	    /* The TLS handshake counts as connecting: a fixed few seconds
	       turned a loaded owner's slow handshake into a 504. */
	    .connect_timeout_ms = (long)c->request_timeout_ms,
	    .timeout_ms = (long)c->request_timeout_ms + 5000,
	};
	char err[LOG_ERR_MAX];

	if (!c->fleet_secret_file[0]) {
		if (c->registry[0])
			log_warn(NULL, "fleet: no --fleet-secret-file: requests for "
				       "instances other gateways serve answer 503");
		return 0;
	}
	gw->fleet = xcalloc(1, sizeof(*gw->fleet));
	if (fleetauth_load(gw->fleet, c->fleet_secret_file, err, sizeof(err)) < 0) {
		fprintf(stderr, "ptygate-gateway: --fleet-secret-file: %s\n", err);
		return -1;
	}
	o.auth = gw->fleet;
	gw->forward = forward_new(gw->loop, &o, err, sizeof(err));
	if (!gw->forward) {
		fprintf(stderr, "ptygate-gateway: forwarding: %s\n", err);
		return -1;
	}
	gw->routes_host.fleet = gw->fleet;
	gw->routes_host.forward = gw->forward;
	return 0;
}

static struct upstream *host_upstream(void *owner, const char *instance_id)
{
	return find_upstream(owner, instance_id);
}

static struct upstream *const *host_instances(void *owner, size_t *n)
{
	const struct gateway *gw = owner;

	*n = gw->n_ups;
	return gw->ups;
}

/* What the client side is given of the gateway: the HTTP listeners
   (http.h), their routes (routes.h) and the connections (conn.h). */
static void fill_client_hosts(struct gateway *gw)
{
	gw->routes_host = (struct routes_host){
	    .cfg = gw->cfg,
	    .keys = &gw->keys,
	    .policy = &gw->policy,
	    .metrics = &gw->metrics,
	    .rest = gw->rest,
	    .public_port = gw->cfg->listen_port,
	    .owner = gw,
	    .upstream = host_upstream,
	    .instances = host_instances,
	    .slot_acquire = slot_acquire,
	    .slot_release = slot_release,
	};
	gw->http_host = (struct http_host){
	    .loop = gw->loop,
	    .cfg = gw->cfg,
	    .metrics = &gw->metrics,
	    .conn = &gw->conn_host,
	    .routes = &gw->routes_host,
	};
	gw->conn_host = (struct conn_host){
	    .loop = gw->loop,
	    .cfg = gw->cfg,
	    .policy = &gw->policy,
	    .metrics = &gw->metrics,
	    .conns = &gw->conns,
	    .owner = gw,
	    .upstream = host_upstream,
	    .slot_release = slot_release,
	    .task_op = task_ops_handle,
	    .tasks_gone = task_ops_conn_gone,
	    .client_text = conn_handle_text,
	};
}

/* What the link side is given of the gateway: the instance links
   (upstream.h), the --link-listen listeners (linklisten.h) and the
   fleet's registry (registry.h). */
static void fill_link_hosts(struct gateway *gw)
{
	gw->upstream_host = (struct upstream_host){
	    .loop = gw->loop,
	    .cfg = gw->cfg,
	    .metrics = &gw->metrics,
	    .link_keys = &gw->link_keys,
	    .owner = gw,
	    .registered_gone = registered_gone,
	};
	gw->linklisten_host = (struct linklisten_host){
	    .loop = gw->loop,
	    .cfg = gw->cfg,
	    .metrics = &gw->metrics,
	    .link_keys = &gw->link_keys,
	    .owner = gw,
	    .admit = admit_link,
	};
	gw->registry_host = (struct registry_host){
	    .loop = gw->loop,
	    .cfg = gw->cfg,
	    .public_port = &gw->routes_host.public_port,
	    .fleet_port = &gw->fleet_port,
	    .owner = gw,
	    .upstream = host_upstream,
	};
}

struct gateway *gateway_new(struct gw_config *cfg)
{
	struct gateway *gw = xcalloc(1, sizeof(*gw));

	gw->cfg = cfg;
	conn_set_init(&gw->conns);
	gw->loop = ev_loop_new();
	gw->slots = xcalloc(1, sizeof(*gw->slots));
	gw->rest = restlimit_new(cfg->rest_rate, cfg->rest_concurrency);
	if (!gw->loop) {
		fprintf(stderr, "ptygate-gateway: cannot create the event loop: %s\n",
			strerror(errno));
		restlimit_free(gw->rest);
		free(gw->slots);
		free(gw);
		return NULL;
	}
	fill_link_hosts(gw);
	fill_client_hosts(gw);
	gw->registry = registry_new(&gw->registry_host);
	gw->routes_host.registry = gw->registry;
	/* The signals (start_loop) before any listener: once a port
	   answers, a SIGTERM is the orderly goodbye, never the default
	   action's kill. */
	if (!gw->registry || start_fleet(gw) < 0 || load_keys(gw) < 0 ||
	    load_instances(gw) < 0 || fit_fd_limit(gw) < 0 || start_loop(gw) < 0 ||
	    start_http(gw) < 0 || start_fleet_http(gw) < 0 || start_links(gw) < 0) {
		gateway_free(gw);
		return NULL;
	}
	registry_start(gw->registry);
	write_pid_file(cfg);
	return gw;
}

int gateway_run(struct gateway *gw)
{
	int rc = ev_loop_run(gw->loop);

	/* Write out the goodbyes that are still queued. */
	conn_set_flush(&gw->conns);
	registry_leave(gw->registry);
	return rc;
}

void gateway_free(struct gateway *gw)
{
	if (!gw)
		return;
	conn_set_free(&gw->conns);
	if (gw->forward)
		relay_close_all(
		    gw->forward); /* before the listeners their sockets hold */
	registry_free(gw->registry);
	gw->registry = NULL;
	linklisten_free(gw->linklisten);
	for (size_t i = 0; i < gw->n_ups; i++)
		upstream_free(gw->ups[i]);
	free(gw->ups);
	http_free(gw->fleet_http);
	http_free(gw->admin);
	http_free(gw->http);
	forward_free(gw->forward); /* after the requests that may hold its calls */
	if (gw->fleet)
		fleetauth_clear(gw->fleet);
	free(gw->fleet);
	ev_timer_free(gw->grace);
	ev_timer_free(gw->tick);
	keys_free(gw->keys);
	keys_free(gw->link_keys);
	if (gw->slots)
		free(gw->slots->v);
	free(gw->slots);
	restlimit_free(gw->rest);
	if (gw->cfg->pid_file[0])
		unlink(gw->cfg->pid_file);
	ev_loop_free(gw->loop);
	free(gw);
}
