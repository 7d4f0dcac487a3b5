/* routes_admin: the operator routes, /healthz /readyz /metrics, and the
   AgentCard of an instance; with --admin-listen they are served on the
   admin listener only (routes.c decides). */
#include <stdbool.h>
#include <stdlib.h>

#include "config.h"
#include "forward.h"
#include "metrics.h"
#include "registry.h"
#include "routes_int.h"
#include "upstream.h"
#include "xalloc.h"

#define ROUTES__PROMETHEUS "text/plain; version=0.0.4; charset=utf-8"

int routes__healthz(struct route_req *rq)
{
	return routes__json(rq, 200, json_pack("{s:s}", "status", "ok"));
}

int routes__readyz(struct route_req *rq)
{
	json_t *inst = json_object();
	size_t n;
	struct upstream *const *ups = rq->gateway->instances(rq->gateway->owner, &n);
	bool any = false;

	for (size_t i = 0; i < n; i++) {
		bool up = upstream_up(ups[i]);

		any |= up;
		json_object_set_new(inst, upstream_instance(ups[i]),
				    json_string(upstream_state(ups[i])));
	}
	/* The registry's state is reported, not required: a gateway whose etcd
	   is away still serves its own instances and its cached routes. */
	/* A gateway of a fleet serves requests for the others' instances
	   too: ready while it can forward to them, even with none of its own. */
	any |= rq->gateway->forward && registry_up(rq->gateway->registry);
	return routes__json(rq, any ? 200 : 503,
			    json_pack("{s:o,s:o}", "instances", inst, "registry",
				      registry_readyz(rq->gateway->registry)));
}

int routes__metrics(struct route_req *rq)
{
	size_t n;
	struct upstream *const *ups = rq->gateway->instances(rq->gateway->owner, &n);
	struct metrics_link *links = xcalloc(n ? n : 1, sizeof(*links));
	struct procstat proc;

	for (size_t i = 0; i < n; i++) {
		links[i].instance = upstream_instance(ups[i]);
		links[i].up = upstream_up(ups[i]);
		links[i].registered = upstream_registered(ups[i]);
		upstream_counts(ups[i], &links[i].sessions, &links[i].clients);
		links[i].stats = upstream_stats(ups[i]);
	}
	buf_reset(&rq->out);
	metrics_render(rq->gateway->metrics, links, (unsigned)n, &rq->out);
	metrics_render_sidecars(links, (unsigned)n, &rq->out);
	metrics_render_latency(rq->gateway->metrics, &rq->out);
	metrics_render_process(procstat_read(&proc) == 0 ? &proc : NULL, &rq->out);
	free(links);
	rq->status = 200;
	rq->content_type = ROUTES__PROMETHEUS;
	registry_metrics(rq->gateway->registry, &rq->out);
	forward_metrics(rq->gateway->forward, &rq->out);
	return 0;
}

int routes__agent_card(struct route_req *rq)
{
	char http_base[ROUTES_BASE_MAX], ws_base[ROUTES_BASE_MAX];
	struct upstream *up = routes__instance(rq);
	const Ptg__Limits *lim = NULL;

	if (!up)
		return 0;
	lim = upstream_limits(up);
	routes__bases(rq->gateway, http_base, ws_base, sizeof(http_base));
	return routes__json(rq, 200,
			    routes_agent_card(rq->m.instance, http_base, ws_base, lim));
}
