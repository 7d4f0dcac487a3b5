/* procstat: this process's CPU time, memory, file descriptors and start
   time as the kernel reports them under /proc, in the units of the
   Prometheus process metrics (seconds, bytes). */
#ifndef PTG_PROCSTAT_H
#define PTG_PROCSTAT_H

#include <stdint.h>

struct procstat {
	uint64_t cpu_ms;       /* user + system CPU time */
	uint64_t rss_bytes;    /* resident set */
	uint64_t vsize_bytes;  /* virtual memory */
	int64_t start_time_ms; /* Unix time the process started, in ms */
	uint64_t open_fds;     /* entries of /proc/self/fd */
	uint64_t max_fds;      /* RLIMIT_NOFILE's soft limit */
};

/* Reads this process's figures from /proc. Returns 0, or a negative
   errno when /proc cannot be read (then *out is zeroed). */
int procstat_read(struct procstat *out);

#endif
