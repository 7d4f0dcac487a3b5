/* stats: counts over the sessions plus procstat's figures of the process;
   the server sends them (server.c, on_stats). */
#include "stats.h"

#include "buildinfo.h"
#include "procstat.h"
#include "session.h"
#include "timeutil.h"

static void process(Ptg__SidecarStats *out)
{
	struct procstat p;
	int64_t up;

	if (procstat_read(&p) < 0)
		return;
	up = time_now_ms() - p.start_time_ms;
	out->uptime_ms = up > 0 ? (uint64_t)up : 0;
	out->rss_bytes = p.rss_bytes;
	out->cpu_ms = p.cpu_ms;
	out->open_fds = p.open_fds > UINT32_MAX ? UINT32_MAX : (uint32_t)p.open_fds;
}

void stats_fill(struct session *const *v, size_t n, const struct stats_gone *gone,
		int state_dir, Ptg__SidecarStats *out)
{
	ptg__sidecar_stats__init(out);
	out->version = (char *)buildinfo_version();
	out->commit = (char *)buildinfo_commit();
	out->state_dir = state_dir != 0;
	out->pty_bytes = gone->pty_bytes;
	out->pty_input_bytes = gone->input_bytes;
	for (size_t i = 0; i < n; i++) {
		struct session_counts c;

		session_counts(v[i], &c);
		if (session_exited(v[i]))
			out->sessions_exited++;
		else
			out->sessions_running++;
		out->attachments += c.members;
		out->pty_bytes += c.pty_bytes;
		out->pty_input_bytes += c.input_bytes;
		out->framelog_bytes += c.log_bytes;
	}
	process(out);
}
