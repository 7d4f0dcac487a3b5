/* routes_admin: the operator routes, /healthz /readyz /metrics, and the
   AgentCard of an instance; with --admin-listen they are served on the
   admin listener only (routes.c decides). */
#include <stdlib.h>

#include "gateway.h"
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
	int any = 0;

	for (size_t i = 0; i < rq->gw->n_ups; i++) {
		int up = upstream_up(rq->gw->ups[i]);

		any |= up;
		json_object_set_new(inst, upstream_instance(rq->gw->ups[i]),
				    json_string(upstream_state(rq->gw->ups[i])));
	}
	/* The registry's state is reported, not required: a gateway whose etcd
	   is away still serves its own instances and its cached routes. */
	/* A gateway of a fleet serves requests for the others' instances
	   too: ready while it can forward to them, even with none of its own. */
	any |= rq->gw->forward && registry_up(rq->gw->registry);
	return routes__json(rq, any ? 200 : 503,
			    json_pack("{s:o,s:o}", "instances", inst, "registry",
				      registry_readyz(rq->gw->registry)));
}

int routes__metrics(struct route_req *rq)
{
	struct gateway *gw = rq->gw;
	struct metrics_link *links = xcalloc(gw->n_ups ? gw->n_ups : 1, sizeof(*links));
	struct procstat proc;

	for (size_t i = 0; i < gw->n_ups; i++) {
		links[i].instance = upstream_instance(gw->ups[i]);
		links[i].up = upstream_up(gw->ups[i]);
		links[i].registered = upstream_registered(gw->ups[i]);
		upstream_counts(gw->ups[i], &links[i].sessions, &links[i].clients);
		links[i].stats = upstream_stats(gw->ups[i]);
	}
	buf_reset(&rq->out);
	metrics_render(&gw->metrics, links, (unsigned)gw->n_ups, &rq->out);
	metrics_render_sidecars(links, (unsigned)gw->n_ups, &rq->out);
	metrics_render_latency(&gw->metrics, &rq->out);
	metrics_render_process(procstat_read(&proc) == 0 ? &proc : NULL, &rq->out);
	free(links);
	rq->status = 200;
	rq->content_type = ROUTES__PROMETHEUS;
	registry_metrics(gw->registry, &rq->out);
	forward_metrics(gw->forward, &rq->out);
	return 0;
}

int routes__agent_card(struct route_req *rq)
{
	char http_base[600], ws_base[600];
	struct upstream *up = routes__instance(rq);
	const Ptg__Limits *lim = NULL;

	if (!up)
		return 0;
	lim = upstream_limits(up);
	routes__gw_bases(rq->gw, http_base, ws_base, sizeof(http_base));
	return routes__json(rq, 200,
			    routes_agent_card(rq->m.instance, http_base, ws_base, lim));
}
