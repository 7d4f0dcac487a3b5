/* metrics: renders struct metrics in the Prometheus text exposition
   format 0.0.4, one HELP and one TYPE line per family. The families are
   a table so a new counter is one line. */
#include "metrics.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "buildinfo.h"
#include "metrics_int.h"
#include "routes.h"
#include "timeutil.h"

struct family {
	const char *name;
	const char *type; /* "counter" or "gauge" */
	const char *help;
	size_t off; /* of the uint64_t in struct metrics */
};

#define METRICS__F(name, type, help, field)                                              \
	{                                                                                \
		name, type, help, offsetof(struct metrics, field)                        \
	}

static const struct family families[] = {
    METRICS__F("ptygate_fanout_queue_bytes", "gauge",
	       "Bytes queued for clients, all connections together.", queue_bytes),
    METRICS__F("ptygate_fanout_queue_bytes_max", "gauge",
	       "Bytes queued for the most backed-up connection.", queue_bytes_max),
    METRICS__F("ptygate_reply_bytes", "gauge",
	       "Bytes held for sidecar replies: a reply's answer while it is encoded, "
	       "and each answer until its request ends.",
	       reply_bytes),
    METRICS__F("ptygate_link_turn_max_ms", "gauge",
	       "The most CPU time one loop turn spent reading and handing out one "
	       "sidecar link's messages, since start.",
	       link_turn_max_ms),
    METRICS__F("ptygate_links_pending", "gauge",
	       "Links that dialled in and have not yet presented their credential.",
	       links_pending),
    METRICS__F("ptygate_link_openings_turn_max", "gauge",
	       "The most dialled-in links whose credential was checked (and, when "
	       "valid, registered) in one loop turn, since start.",
	       link_openings_turn_max),
    METRICS__F("ptygate_frames_out_total", "counter",
	       "WebSocket frames queued to clients.", frames_out),
    METRICS__F("ptygate_bytes_out_total", "counter", "Bytes written to client sockets.",
	       bytes_out),
    METRICS__F("ptygate_frames_in_total", "counter",
	       "WebSocket messages received from clients.", frames_in),
    METRICS__F("ptygate_replays_total", "counter",
	       "Joins with replay_from within retention.", replays),
    METRICS__F("ptygate_replays_out_of_range_total", "counter",
	       "Joins answered with REPLAY_OUT_OF_RANGE.", replays_out_of_range),
    METRICS__F("ptygate_lag_events_total", "counter",
	       "PTY_OUTPUT_LAGGED errors sent to slow clients.", lag_events),
    METRICS__F("ptygate_auth_failures_total", "counter",
	       "Requests refused 401 for a missing or invalid token, REST and attach.",
	       auth_failures),
    METRICS__F("ptygate_upgrades_refused_total", "counter",
	       "Attach requests answered with an HTTP error.", upgrades_refused),
    METRICS__F("ptygate_link_reconnects_total", "counter",
	       "Sidecar links re-established.", link_reconnects),
    METRICS__F("ptygate_heartbeat_timeouts_total", "counter",
	       "Connections closed for a missing Pong.", heartbeat_timeouts),
    METRICS__F("ptygate_http_requests_total", "counter", "HTTP requests received.",
	       http_requests),
    METRICS__F(
	"ptygate_conn_setup_failures_total", "counter",
	"Upgrades refused (503) or dropped because a connection could not be set up.",
	conns_setup_failed),
    METRICS__F("ptygate_backpressure_events_total", "counter",
	       "Times a client's queue went over --max-queue-bytes and it was not read.",
	       backpressure_events),
    METRICS__F("ptygate_queue_stall_closes_total", "counter",
	       "Clients closed 4429 for staying over the queue cap.", queue_stall_closes),
    METRICS__F("ptygate_ops_throttled_total", "counter",
	       "Times a client went over --max-ops-per-sec and was not read until its "
	       "bucket refilled.",
	       ops_throttled),
    METRICS__F("ptygate_link_instance_mismatches_total", "counter",
	       "Sidecar links refused: the sidecar reported another instance id.",
	       link_instance_mismatches),
    METRICS__F("ptygate_link_violations_total", "counter",
	       "Sidecar links dropped for a message over its caps.", link_violations),
    METRICS__F(
	"ptygate_link_queue_overflows_total", "counter",
	"Sidecar links dropped: over --link-queue-bytes queued toward the sidecar.",
	link_queue_overflows),
    METRICS__F(
	"ptygate_fanout_writes_cut_total", "counter",
	"Observer writes cut at the per-turn bound, the rest left for a later turn.",
	fanout_writes_cut),
    METRICS__F("ptygate_conn_refusals_address_total", "counter",
	       "Connections answered 429: the client's address (or IPv6 /56) at "
	       "--max-conns-per-ip.",
	       conns_refused_address),
    METRICS__F("ptygate_conn_refusals_full_total", "counter",
	       "Connections answered 503: the gateway at its connection cap.",
	       conns_refused_full),
    METRICS__F("ptygate_conn_drops_total", "counter",
	       "Connections closed unanswered: too many refusals under way at once.",
	       conns_dropped),
    METRICS__F("ptygate_head_evictions_total", "counter",
	       "Connections still sending their request head, closed at the "
	       "connection cap to make room.",
	       heads_evicted),
    METRICS__F("ptygate_fleet_tls_refusals_total", "counter",
	       "Handshakes on --fleet-listen refused: no client certificate, or one "
	       "the fleet's CA does not sign.",
	       fleet_tls_refused),
    METRICS__F("ptygate_tls_handshakes_failed_total", "counter",
	       "TLS handshakes that failed (--tls-cert, --fleet-listen): not TLS, "
	       "nothing shared, a broken record, a refused client certificate.",
	       tls_handshakes_failed),
    METRICS__F("ptygate_close_dropped_bytes_total", "counter",
	       "Unsent output dropped so a closing connection's close frame leaves "
	       "next.",
	       close_dropped_bytes),
    METRICS__F("ptygate_link_replies_refused_total", "counter",
	       "Sidecar replies over the protocol's limits, answered 502.",
	       link_replies_refused),
    METRICS__F("ptygate_link_replies_too_large_total", "counter",
	       "Sidecar replies whose JSON answer would pass its cap, answered 502.",
	       link_replies_too_large),
    METRICS__F("ptygate_link_replies_shed_total", "counter",
	       "Sidecar replies answered 503: the answers in flight held their budget.",
	       link_replies_shed),
    METRICS__F("ptygate_link_turns_cut_total", "counter",
	       "Loop turns on a sidecar link cut at the per-turn budget, the rest "
	       "handed out in later turns.",
	       link_turns_cut),
    METRICS__F("ptygate_link_registrations_total", "counter",
	       "Links that dialled in with a valid credential and joined their instance.",
	       link_registrations),
    METRICS__F("ptygate_link_replacements_total", "counter",
	       "Live links of a registered instance replaced by a newer verified one.",
	       link_replacements),
    METRICS__F("ptygate_link_renewals_total", "counter",
	       "Credentials renewed on a live link.", link_renewals),
    METRICS__F("ptygate_registered_instances_removed_total", "counter",
	       "Registered instances removed after --link-grace without their link.",
	       registered_removed),
};

static const char *const refusal_names[LINK_REFUSAL_N - LINKCRED_N_REASONS] = {
    "timeout", "no_credential", "garbage",  "closed",		"pending_full",
    "static",  "max_instances", "flapping", "instance_changed", "lapsed",
};

const char *metrics_link_refusal_name(int reason)
{
	if (reason >= 0 && reason < LINKCRED_N_REASONS)
		return linkcred_reason(-reason);
	if (reason >= LINKCRED_N_REASONS && reason < LINK_REFUSAL_N)
		return refusal_names[reason - LINKCRED_N_REASONS];
	return "unknown";
}

static void refusals(const struct metrics *m, struct buf *out)
{
	metrics__head(out, "ptygate_link_refusals_total", "counter",
		      "Links that dialled in, refused or closed, by reason.");
	for (int r = 1; r < LINK_REFUSAL_N; r++)
		buf_appendf(out,
			    "ptygate_link_refusals_total{reason=\"%s\"} %" PRIu64 "\n",
			    metrics_link_refusal_name(r),
			    __atomic_load_n(&m->link_refusals[r], __ATOMIC_RELAXED));
}

static const unsigned refusal_statuses[3] = {401, 403, 429};

void metrics_count_refusal(struct metrics *m, unsigned status)
{
	for (unsigned i = 0; i < 3; i++)
		m->http_refusals[i] += refusal_statuses[i] == status;
}

static void http_refusals(const struct metrics *m, struct buf *out)
{
	metrics__head(
	    out, "ptygate_http_refusals_total", "counter",
	    "HTTP requests refused, REST and attach, by status: 401 (no or a bad "
	    "token), 403 (not allowed), 429 (a rate or connection limit).");
	for (unsigned i = 0; i < 3; i++)
		buf_appendf(out,
			    "ptygate_http_refusals_total{status=\"%u\"} %" PRIu64 "\n",
			    refusal_statuses[i], m->http_refusals[i]);
}

static void instances(const struct metrics_link *links, unsigned n, struct buf *out)
{
	unsigned reg = 0;

	for (unsigned i = 0; i < n; i++)
		reg += links[i].registered ? 1 : 0;
	metrics__head(
	    out, "ptygate_instances", "gauge",
	    "Instances by kind: configured (flags, instances file) or registered "
	    "(their sidecar dialled in).");
	buf_appendf(out, "ptygate_instances{kind=\"configured\"} %u\n", n - reg);
	buf_appendf(out, "ptygate_instances{kind=\"registered\"} %u\n", reg);
}

/* One gauge per instance; what picks its value from a link. */
static void per_instance(struct buf *out, const char *name, const char *help,
			 const struct metrics_link *links, unsigned n,
			 unsigned (*what)(const struct metrics_link *l))
{
	metrics__head(out, name, "gauge", help);
	for (unsigned i = 0; i < n; i++) {
		buf_appendf(out, "%s{instance=\"", name);
		metrics__label(out, links[i].instance ? links[i].instance : "");
		buf_appendf(out, "\"} %u\n", what(&links[i]));
	}
}

static unsigned link_up(const struct metrics_link *l)
{
	return l->up ? 1 : 0;
}

static unsigned link_sessions(const struct metrics_link *l)
{
	return l->sessions;
}

static unsigned link_clients(const struct metrics_link *l)
{
	return l->clients;
}

static void linked(const struct metrics_link *links, unsigned n, struct buf *out)
{
	unsigned up = 0;

	for (unsigned i = 0; i < n; i++)
		up += link_up(&links[i]);
	metrics__head(out, "ptygate_instances_linked", "gauge",
		      "Instances whose sidecar link is up and greeted.");
	buf_appendf(out, "ptygate_instances_linked %u\n", up);
	per_instance(out, "ptygate_link_up",
		     "1 when the instance's sidecar link is up and greeted.", links, n,
		     link_up);
	per_instance(out, "ptygate_instance_sessions",
		     "Sessions of the instance that this gateway's clients are attached "
		     "to.",
		     links, n, link_sessions);
	per_instance(
	    out, "ptygate_instance_clients",
	    "Client attachments to the instance's sessions through this gateway.", links,
	    n, link_clients);
}

void metrics__head(struct buf *out, const char *name, const char *type, const char *help)
{
	buf_appendf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metrics__label(struct buf *out, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\')
			buf_append_str(out, "\\\\");
		else if (*v == '"')
			buf_append_str(out, "\\\"");
		else if (*v == '\n')
			buf_append_str(out, "\\n");
		else
			buf_append(out, v, 1);
	}
}

static void connections(const struct metrics *m, struct buf *out)
{
	metrics__head(out, "ptygate_connections", "gauge",
		      "Client WebSocket connections by role (pending: not joined yet).");
	buf_appendf(out, "ptygate_connections{role=\"controller\"} %" PRIu64 "\n",
		    m->conns_controller);
	buf_appendf(out, "ptygate_connections{role=\"observer\"} %" PRIu64 "\n",
		    m->conns_observer);
	buf_appendf(out, "ptygate_connections{role=\"pending\"} %" PRIu64 "\n",
		    m->conns_pending);
}

void metrics_render(const struct metrics *m, const struct metrics_link *links,
		    unsigned n_links, struct buf *out)
{
	connections(m, out);
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		const struct family *f = &families[i];
		const uint64_t *v = (const uint64_t *)((const char *)m + f->off);

		metrics__head(out, f->name, f->type, f->help);
		/* read atomically: the link worker changes some (linklisten.c) */
		buf_appendf(out, "%s %" PRIu64 "\n", f->name,
			    __atomic_load_n(v, __ATOMIC_RELAXED));
	}
	refusals(m, out);
	http_refusals(m, out);
	instances(links, n_links, out);
	linked(links, n_links, out);
}

/* ---- latency histograms ---- */

/* Upper bounds, microseconds: a loopback answer takes well under 1 ms, a
   REST call that asks the sidecar a few ms, a recording or a join behind
   a replay from disk up to seconds. */
static const uint64_t bucket_us[METRICS_BUCKETS] = {
    1000,   2500,   5000,    10000,   25000,   50000,	 100000,
    250000, 500000, 1000000, 2500000, 5000000, 10000000, 30000000,
};

static const char *const route_names[METRICS_ROUTES] = {
    [0] = "other",
    [ROUTE_HEALTHZ] = "healthz",
    [ROUTE_READYZ] = "readyz",
    [ROUTE_METRICS] = "metrics",
    [ROUTE_AGENT_CARD] = "agent_card",
    [ROUTE_SESSIONS] = "sessions",
    [ROUTE_SESSION] = "session",
    [ROUTE_ATTACH] = "attach",
    [ROUTE_STATIC] = "static",
    [ROUTE_RECORDING] = "recording",
};
_Static_assert(ROUTE_RECORDING + 1 == METRICS_ROUTES, "a route without its label");

void metrics_observe(struct metrics_hist *h, int64_t us)
{
	uint64_t v = us > 0 ? (uint64_t)us : 0;
	unsigned i = 0;

	while (i < METRICS_BUCKETS && v > bucket_us[i])
		i++;
	h->bucket[i]++;
	h->count++;
	h->sum_us += v;
}

void metrics_observe_since(struct metrics_hist *h, int64_t *since_us)
{
	if (!*since_us)
		return;
	metrics_observe(h, time_mono_us() - *since_us);
	*since_us = 0;
}

/* Microseconds as decimal seconds, exactly (no floating point). */
static void seconds(struct buf *out, uint64_t us)
{
	buf_appendf(out, "%" PRIu64 ".%06" PRIu64, us / 1000000, us % 1000000);
}

/* One histogram's samples; labels is "" or `key="value",`. */
static void hist(struct buf *out, const char *name, const char *labels,
		 const struct metrics_hist *h)
{
	uint64_t cum = 0;

	for (unsigned i = 0; i < METRICS_BUCKETS; i++) {
		cum += h->bucket[i];
		buf_appendf(out, "%s_bucket{%sle=\"", name, labels);
		seconds(out, bucket_us[i]);
		buf_appendf(out, "\"} %" PRIu64 "\n", cum);
	}
	buf_appendf(out, "%s_bucket{%sle=\"+Inf\"} %" PRIu64 "\n", name, labels,
		    h->count);
	buf_appendf(out, "%s_sum", name);
	if (labels[0])
		buf_appendf(out, "{%.*s}", (int)strlen(labels) - 1, labels);
	buf_append_str(out, " ");
	seconds(out, h->sum_us);
	buf_appendf(out, "\n%s_count", name);
	if (labels[0])
		buf_appendf(out, "{%.*s}", (int)strlen(labels) - 1, labels);
	buf_appendf(out, " %" PRIu64 "\n", h->count);
}

void metrics_render_latency(const struct metrics *m, struct buf *out)
{
	char labels[64];

	metrics__head(
	    out, "ptygate_http_request_duration_seconds", "histogram",
	    "HTTP requests from their first byte to their answer (an attach: to "
	    "its 101), by route.");
	for (unsigned r = 0; r < METRICS_ROUTES; r++) {
		snprintf(labels, sizeof(labels), "route=\"%s\",", route_names[r]);
		hist(out, "ptygate_http_request_duration_seconds", labels,
		     &m->http_latency[r]);
	}
	metrics__head(
	    out, "ptygate_attach_duration_seconds", "histogram",
	    "Attaches from the upgrade request to the first frame of the join's "
	    "answer.");
	hist(out, "ptygate_attach_duration_seconds", "", &m->attach_latency);
}

/* ---- build and process ---- */

static void gauge(struct buf *out, const char *name, const char *help, uint64_t v)
{
	metrics__head(out, name, "gauge", help);
	buf_appendf(out, "%s %" PRIu64 "\n", name, v);
}

void metrics_render_process(const struct procstat *p, struct buf *out)
{
	metrics__head(
	    out, "ptygate_build_info", "gauge",
	    "Always 1; the gateway's version and the commit it was built from.");
	buf_append_str(out, "ptygate_build_info{version=\"");
	metrics__label(out, buildinfo_version());
	buf_append_str(out, "\",commit=\"");
	metrics__label(out, buildinfo_commit());
	buf_append_str(out, "\"} 1\n");
	if (!p)
		return;
	metrics__head(out, "process_cpu_seconds_total", "counter",
		      "Total user and system CPU time spent in seconds.");
	buf_append_str(out, "process_cpu_seconds_total ");
	seconds(out, p->cpu_ms * 1000);
	buf_append_str(out, "\n");
	gauge(out, "process_resident_memory_bytes", "Resident memory size in bytes.",
	      p->rss_bytes);
	gauge(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
	      p->vsize_bytes);
	gauge(out, "process_open_fds", "Number of open file descriptors.", p->open_fds);
	gauge(out, "process_max_fds", "Maximum number of open file descriptors.",
	      p->max_fds);
	metrics__head(out, "process_start_time_seconds", "gauge",
		      "Start time of the process since unix epoch in seconds.");
	buf_append_str(out, "process_start_time_seconds ");
	seconds(out, (uint64_t)(p->start_time_ms > 0 ? p->start_time_ms : 0) * 1000);
	buf_append_str(out, "\n");
}
