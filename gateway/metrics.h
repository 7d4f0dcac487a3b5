/* metrics: the gateway's counters and gauges, rendered in the Prometheus
   text format for GET /metrics. Plain fields: the single-threaded loop
   updates them directly. */
#ifndef PTG_METRICS_H
#define PTG_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "linkcred.h"
#include "procstat.h"

struct sidestats;

/* Latency buckets' upper bounds in microseconds (METRICS_BUCKET_US in
   metrics.c): 1 ms to 10 s, then +Inf. */
#define METRICS_BUCKETS 14

/* A latency histogram: per-bucket counts (not cumulative; the last one
   is +Inf), their count and their sum. */
struct metrics_hist {
	uint64_t bucket[METRICS_BUCKETS + 1];
	uint64_t count;
	uint64_t sum_us;
};
/* Counts an HTTP answer of status when it is a refusal an operator
   watches (401, 403, 429); other statuses are not counted. */
struct metrics;
void metrics_count_refusal(struct metrics *m, unsigned status);
/* Counts one latency (negative counts as 0). */
void metrics_observe(struct metrics_hist *h, int64_t us);
/* Counts now - *since_us when *since_us is set, then clears it: a
   latency observed once, at the first of several moments. */
void metrics_observe_since(struct metrics_hist *h, int64_t *since_us);

/* The request latency's route label: enum route_id's values (routes.h),
   0 for a request answered before its route was known. */
#define METRICS_ROUTES 10

/* Why a link that dialled in was refused or closed (the label of
   ptygate_link_refusals_total{reason}, metrics_link_refusal_name): first
   linkcred's reasons (-err of enum linkcred_err), then the gateway's. */
enum link_refusal {
	LINK_REFUSAL_TIMEOUT = LINKCRED_N_REASONS, /* no credential in time */
	LINK_REFUSAL_NO_CREDENTIAL,		   /* its first message was another */
	LINK_REFUSAL_GARBAGE,	       /* bytes that are no link message, or too long */
	LINK_REFUSAL_CLOSED,	       /* the peer left before its credential */
	LINK_REFUSAL_PENDING_FULL,     /* --max-pending-links links awaited theirs */
	LINK_REFUSAL_STATIC,	       /* the id is a configured instance's */
	LINK_REFUSAL_MAX_INSTANCES,    /* --max-instances reached */
	LINK_REFUSAL_FLAPPING,	       /* too many replacements of one instance's link */
	LINK_REFUSAL_INSTANCE_CHANGED, /* a renewal for another instance */
	LINK_REFUSAL_LAPSED,	       /* exp + --link-renew-grace passed while linked */
	LINK_REFUSAL_N
};
const char *metrics_link_refusal_name(int reason);

struct metrics {
	/* gauges */
	uint64_t conns_controller; /* attached connections by role */
	uint64_t conns_observer;
	uint64_t conns_pending;	   /* upgraded, not yet joined */
	uint64_t queue_bytes;	   /* fan-out bytes queued, all connections */
	uint64_t queue_bytes_max;  /* the deepest single queue right now */
	uint64_t reply_bytes;	   /* sidecar replies being answered, and their answers */
	uint64_t link_turn_max_ms; /* the longest loop turn spent on one link */
	uint64_t links_pending;	   /* dialled-in links awaiting their credential */
	uint64_t link_openings_turn_max; /* most credentials checked in one turn */
	/* counters */
	uint64_t frames_out; /* WebSocket frames queued to clients */
	uint64_t bytes_out;  /* bytes written to client sockets */
	uint64_t frames_in;  /* client frames received */
	uint64_t replays;    /* joins with replay_from in range */
	uint64_t replays_out_of_range;
	uint64_t lag_events;	     /* PTY_OUTPUT_LAGGED sent */
	uint64_t auth_failures;	     /* refused tokens */
	uint64_t upgrades_refused;   /* every non-101 answer to an attach */
	uint64_t link_reconnects;    /* sidecar links re-established */
	uint64_t heartbeat_timeouts; /* connections closed 1011 for no pong */
	uint64_t http_requests;
	uint64_t conns_setup_failed; /* upgrades refused (503) or dropped: no resources */
	uint64_t backpressure_events; /* a client's queue went over the cap: not read */
	uint64_t queue_stall_closes;  /* closed 4429 after staying over the cap */
	uint64_t ops_throttled; /* times a client went over --max-ops-per-sec: not read */
	uint64_t link_instance_mismatches; /* hellos refused: another instance id */
	uint64_t link_violations;	   /* links dropped for a message over its caps */
	uint64_t link_queue_overflows;	/* links dropped: the sidecar was not reading */
	uint64_t fanout_writes_cut;	/* observer writes cut at CONN_FAN_WRITE_MAX */
	uint64_t conns_refused_address; /* 429: the client's address at its cap */
	uint64_t conns_refused_full;	/* 503: the gateway at its connection cap */
	uint64_t conns_dropped;		/* closed unanswered: the refusal budget spent */
	uint64_t heads_evicted;	    /* closed while sending their head, to make room */
	uint64_t fleet_tls_refused; /* --fleet-listen: no or a bad client certificate */
	uint64_t
	    tls_handshakes_failed;    /* not TLS, nothing shared, a bad record, refused */
	uint64_t close_dropped_bytes; /* unsent output dropped so a close leaves next */
	uint64_t link_replies_refused; /* replies over the protocol's limits: 502 */
	uint64_t
	    link_replies_too_large;  /* replies whose answer would pass its cap: 502 */
	uint64_t link_replies_shed;  /* replies over the in-flight budget: 503 */
	uint64_t link_turns_cut;     /* link turns cut at the per-turn budget */
	uint64_t link_registrations; /* verified links handed to their instance */
	uint64_t link_replacements;  /* live links replaced by a newer one */
	uint64_t link_renewals;	     /* credentials renewed on a live link */
	uint64_t registered_removed; /* registered instances removed after the grace */
	uint64_t link_refusals[LINK_REFUSAL_N]; /* by enum link_refusal */
	uint64_t http_refusals[3]; /* answered 401, 403, 429 (metrics_count_refusal) */
	/* histograms */
	struct metrics_hist http_latency[METRICS_ROUTES]; /* by enum route_id */
	struct metrics_hist attach_latency; /* upgrade request to the join's answer */
};

/* Appends the exposition text, with HELP and TYPE lines; link_up lists
   each instance's link state (instance id, 1 or 0). */
struct metrics_link {
	const char *instance;
	bool up;
	bool registered;	       /* added by a link that dialled in */
	unsigned sessions;	       /* sessions this gateway has attachments to */
	unsigned clients;	       /* attachments of its clients */
	const struct sidestats *stats; /* what its sidecar reports; NULL: none */
};
void metrics_render(const struct metrics *m, const struct metrics_link *links,
		    unsigned n_links, struct buf *out);
/* Appends what each instance's sidecar reports of itself, labelled by
   instance (metrics_sidecar.c). */
void metrics_render_sidecars(const struct metrics_link *links, unsigned n_links,
			     struct buf *out);
/* Appends the latency histograms (seconds, cumulative buckets). */
void metrics_render_latency(const struct metrics *m, struct buf *out);
/* Appends ptygate_build_info and the process_* families of p (NULL: the
   process families are left out). */
void metrics_render_process(const struct procstat *p, struct buf *out);

#endif
