/* bench_proc: another process's CPU time, page faults and resident
   memory as /proc reports them, for the benchmarks that measure a
   daemon from outside; and the calling thread's CPU time, for those
   that time work of their own. */
#ifndef PTG_BENCH_PROC_H
#define PTG_BENCH_PROC_H

struct bench_proc {
	double cpu_s;	      /* user + system, of all its threads */
	double sys_s;	      /* the system part */
	unsigned long minflt; /* minor page faults */
};

/* Reads pid's figures from /proc/PID/stat. Returns 0, or -1 when pid is
   not positive or its stat cannot be read or parsed. */
int bench_proc_read(long pid, struct bench_proc *out);
/* pid's resident set in KiB (VmRSS), or -1. */
long bench_proc_rss_kib(long pid);
/* The CPU seconds of the calling thread. */
double bench_thread_cpu_s(void);

#endif
