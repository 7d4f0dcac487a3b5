/* metrics_sidecar: the families each instance's sidecar reports of
   itself (sidestats.h), labelled by instance; an instance without a
   current answer shows only ptygate_sidecar_up 0. */
#include <inttypes.h>
#include <stddef.h>

#include "metrics.h"
#include "metrics_int.h"
#include "sidestats.h"

enum unit { PLAIN, MS_AS_SECONDS };

struct sidecar_family {
	const char *name;
	const char *type;
	const char *help;
	enum unit unit;
	uint64_t (*value)(const struct sidestats_figures *f);
};

#define METRICS__FIG(field)                                                              \
	static uint64_t fig_##field(const struct sidestats_figures *f)                   \
	{                                                                                \
		return (uint64_t)f->field;                                               \
	}
METRICS__FIG(uptime_ms)
METRICS__FIG(attachments)
METRICS__FIG(pty_bytes)
METRICS__FIG(pty_input_bytes)
METRICS__FIG(state_dir)
METRICS__FIG(framelog_bytes)
METRICS__FIG(rss_bytes)
METRICS__FIG(cpu_ms)
METRICS__FIG(open_fds)

static uint64_t fig_report(const struct sidestats_figures *f)
{
	return f->at_ms > 0 ? (uint64_t)f->at_ms : 0;
}

static const struct sidecar_family families[] = {
    {"ptygate_sidecar_last_report_timestamp_seconds", "gauge",
     "When the sidecar's last report arrived, Unix time.", MS_AS_SECONDS, fig_report},
    {"ptygate_sidecar_uptime_seconds", "gauge", "Seconds since the sidecar started.",
     MS_AS_SECONDS, fig_uptime_ms},
    {"ptygate_sidecar_attachments", "gauge",
     "Attachments to the sidecar's sessions, through every gateway.", PLAIN,
     fig_attachments},
    {"ptygate_sidecar_pty_bytes_total", "counter",
     "Bytes the sidecar read from its sessions' PTYs since it started.", PLAIN,
     fig_pty_bytes},
    {"ptygate_sidecar_pty_input_bytes_total", "counter",
     "Bytes the sidecar wrote to its sessions' PTYs (their input) since it started.",
     PLAIN, fig_pty_input_bytes},
    {"ptygate_sidecar_state_dir", "gauge",
     "1 when the sidecar keeps durable history (--state-dir).", PLAIN, fig_state_dir},
    {"ptygate_sidecar_framelog_bytes", "gauge",
     "Bytes of the sidecar's frame logs on disk, every session.", PLAIN,
     fig_framelog_bytes},
    {"ptygate_sidecar_resident_memory_bytes", "gauge",
     "The sidecar process's resident memory.", PLAIN, fig_rss_bytes},
    {"ptygate_sidecar_cpu_seconds_total", "counter",
     "The sidecar process's user and system CPU time.", MS_AS_SECONDS, fig_cpu_ms},
    {"ptygate_sidecar_open_fds", "gauge", "The sidecar process's open descriptors.",
     PLAIN, fig_open_fds},
};

static const struct sidestats *current(const struct metrics_link *l)
{
	return l->stats && l->stats->have ? l->stats : NULL;
}

/* `NAME{instance="ID"` with the label escaped; the caller closes it. */
static void sample(struct buf *out, const char *name, const struct metrics_link *l)
{
	buf_appendf(out, "%s{instance=\"", name);
	metrics__label(out, l->instance ? l->instance : "");
	buf_append_str(out, "\"");
}

static void value(struct buf *out, enum unit unit, uint64_t v)
{
	if (unit == MS_AS_SECONDS)
		buf_appendf(out, "} %" PRIu64 ".%03" PRIu64 "\n", v / 1000, v % 1000);
	else
		buf_appendf(out, "} %" PRIu64 "\n", v);
}

static void up_and_build(const struct metrics_link *links, unsigned n, struct buf *out)
{
	metrics__head(out, "ptygate_sidecar_up", "gauge",
		      "1 when the instance's sidecar answered the gateway's latest "
		      "report request (every 5 s).");
	for (unsigned i = 0; i < n; i++) {
		sample(out, "ptygate_sidecar_up", &links[i]);
		value(out, PLAIN, current(&links[i]) ? 1 : 0);
	}
	metrics__head(
	    out, "ptygate_sidecar_build_info", "gauge",
	    "Always 1; the sidecar's version and the commit it was built from.");
	for (unsigned i = 0; i < n; i++) {
		const struct sidestats *s = current(&links[i]);

		if (!s)
			continue;
		sample(out, "ptygate_sidecar_build_info", &links[i]);
		buf_append_str(out, ",version=\"");
		metrics__label(out, s->last.version);
		buf_append_str(out, "\",commit=\"");
		metrics__label(out, s->last.commit);
		buf_append_str(out, "\"} 1\n");
	}
}

static void sessions(const struct metrics_link *links, unsigned n, struct buf *out)
{
	metrics__head(out, "ptygate_sidecar_sessions", "gauge",
		      "The sidecar's sessions by state (exited: not reaped yet).");
	for (unsigned i = 0; i < n; i++) {
		const struct sidestats *s = current(&links[i]);

		if (!s)
			continue;
		sample(out, "ptygate_sidecar_sessions", &links[i]);
		buf_appendf(out, ",state=\"running\"} %" PRIu32 "\n",
			    s->last.sessions_running);
		sample(out, "ptygate_sidecar_sessions", &links[i]);
		buf_appendf(out, ",state=\"exited\"} %" PRIu32 "\n",
			    s->last.sessions_exited);
	}
}

void metrics_render_sidecars(const struct metrics_link *links, unsigned n,
			     struct buf *out)
{
	up_and_build(links, n, out);
	sessions(links, n, out);
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		metrics__head(out, families[f].name, families[f].type, families[f].help);
		for (unsigned i = 0; i < n; i++) {
			const struct sidestats *s = current(&links[i]);

			if (!s)
				continue;
			sample(out, families[f].name, &links[i]);
			value(out, families[f].unit, families[f].value(&s->last));
		}
	}
}
