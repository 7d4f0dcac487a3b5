/* stats: the sidecar's health and figures for the gateway's /metrics
   (GetStats on the link, answered with SidecarStats): its build, uptime,
   sessions, attachments, PTY bytes, frame log, memory, CPU and fds. */
#ifndef PTG_STATS_H
#define PTG_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "link.pb-c.h"

struct session;

/* What sessions already reaped read from and wrote to their PTYs. */
struct stats_gone {
	uint64_t pty_bytes, input_bytes;
};
/* Fills *out from the sessions v[0..n), those gone and this process. The
   strings are static. */
void stats_fill(struct session *const *v, size_t n, const struct stats_gone *gone,
		int state_dir, Ptg__SidecarStats *out);

#endif
