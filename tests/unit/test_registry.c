/* unit: gateway */
/* registry: registry_route, the one decision of where an instance is
   served, on a registry that is built but never started (no etcd is
   reached): LOCAL for the gateway's own instance first, REMOTE with the
   owner's URL from the cache (also while the cache is out of sync),
   UNKNOWN or UNAVAILABLE for a miss as the cache is in sync or not, never
   a route back to this gateway; without --registry only LOCAL or
   UNKNOWN; a NULL registry UNKNOWN. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "addr.h"
#include "config.h"
#include "ev.h"
#include "metrics.h"
#include "registry.h"
#include "registry_int.h"
#include "upstream.h"

struct fixture {
	struct gw_config *cfg;
	struct ev_loop *loop;
	struct metrics metrics;
	struct keyset *link_keys;
	uint16_t port;
	struct upstream_host up_host;
	struct registry_host host;
	struct upstream *local;
};

/* The gateway's instance lookup as the registry asks it: the one local
   instance is served here. */
static struct upstream *served(void *owner, const char *instance_id)
{
	struct fixture *f = owner;

	return strcmp(instance_id, upstream_instance(f->local)) == 0 ? f->local : NULL;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct addr a;
	char err[128];

	f->cfg = calloc(1, sizeof(*f->cfg));
	gw_config_defaults(f->cfg);
	snprintf(f->cfg->gateway_id, sizeof(f->cfg->gateway_id), "gw-self");
	snprintf(f->cfg->public_url, sizeof(f->cfg->public_url), "http://self:1");
	f->loop = ev_loop_new();
	f->up_host = (struct upstream_host){.loop = f->loop,
					    .cfg = f->cfg,
					    .metrics = &f->metrics,
					    .link_keys = &f->link_keys};
	f->host = (struct registry_host){.loop = f->loop,
					 .cfg = f->cfg,
					 .public_port = &f->port,
					 .owner = f,
					 .upstream = served};
	assert_int_equal(
	    addr_parse("unix:/nonexistent/ptg-test.sock", &a, err, sizeof(err)), 0);
	f->local = upstream_new(&f->up_host, "local-1", &a);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	upstream_free(f->local);
	ev_loop_free(f->loop);
	free(f->cfg);
	free(f);
	return 0;
}

static void test_without_registry(void **state)
{
	struct fixture *f = *state;
	struct registry *r = registry_new(&f->host);
	const char *url = "x";

	assert_non_null(r);
	assert_int_equal(registry_route(r, "local-1", &url), REGISTRY_LOCAL);
	assert_null(url);
	assert_int_equal(registry_route(r, "elsewhere", &url), REGISTRY_UNKNOWN);
	assert_int_equal(registry_route(NULL, "local-1", &url), REGISTRY_UNKNOWN);
	assert_false(registry_up(r));
	registry_free(r);
}

static void test_routes_from_the_cache(void **state)
{
	struct fixture *f = *state;
	struct registry *r;
	const char *url = NULL;

	snprintf(f->cfg->registry, sizeof(f->cfg->registry), "http://127.0.0.1:1");
	r = registry_new(&f->host);
	assert_non_null(r);
	assert_int_equal(routecache_put(r->routes, "remote-1", "gw-b", "http://b:2", 5),
			 0);
	assert_int_equal(
	    routecache_put(r->routes, "stale-1", "gw-self", "http://self:1", 4), 0);
	/* The gateway's own instance first, even if the cache names another. */
	assert_int_equal(routecache_put(r->routes, "local-1", "gw-b", "http://b:2", 5),
			 0);
	assert_int_equal(registry_route(r, "local-1", &url), REGISTRY_LOCAL);

	/* Not in sync (etcd away): cached routes still answer, misses 503. */
	assert_int_equal(registry_route(r, "remote-1", &url), REGISTRY_REMOTE);
	assert_string_equal(url, "http://b:2");
	assert_int_equal(registry_route(r, "nowhere", &url), REGISTRY_UNAVAILABLE);
	assert_null(url);
	assert_int_equal(registry_route(r, "stale-1", &url), REGISTRY_UNAVAILABLE);

	r->in_sync = 1;
	assert_int_equal(registry_route(r, "remote-1", &url), REGISTRY_REMOTE);
	assert_int_equal(registry_route(r, "nowhere", &url), REGISTRY_UNKNOWN);
	/* A key naming this gateway for an instance it does not serve is a
	   leftover, never a route back to itself. */
	assert_int_equal(registry_route(r, "stale-1", &url), REGISTRY_UNKNOWN);
	assert_null(url);
	registry_free(r);
	f->cfg->registry[0] = '\0';
}

static const char *readyz_state(const struct registry *r, char *out, size_t cap)
{
	json_t *j = registry_readyz(r);

	snprintf(out, cap, "%s", json_string_value(json_object_get(j, "state")));
	json_decref(j);
	return out;
}

/* While etcd refuses the range reads (no credentials, say), the retries
   in flight are not a sync under way: /readyz says down throughout, not
   syncing whenever it happens to look during a retry. */
static void test_refused_reads_are_down_not_syncing(void **state)
{
	struct fixture *f = *state;
	struct registry *r;
	char got[32];

	snprintf(f->cfg->registry, sizeof(f->cfg->registry), "http://127.0.0.1:1");
	r = registry_new(&f->host); /* as --registry makes it, never started */
	assert_non_null(r);
	r->syncing = 1;
	assert_string_equal(readyz_state(r, got, sizeof(got)), "syncing");
	r->range_failing = 1; /* the last range read was refused */
	assert_string_equal(readyz_state(r, got, sizeof(got)), "down");
	r->syncing = 0;
	assert_string_equal(readyz_state(r, got, sizeof(got)), "down");
	registry_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_without_registry, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_routes_from_the_cache, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refused_reads_are_down_not_syncing,
					    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
