/* bench_proc: see bench_proc.h. */
#include "bench_proc.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int bench_proc_read(long pid, struct bench_proc *out)
{
	char path[64], line[1024], *p;
	unsigned long ut, st;
	double tick = (double)sysconf(_SC_CLK_TCK);
	FILE *f;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
	fclose(f);
	/* After "(comm)", which may hold spaces: state is field 3, minflt
	   10, utime and stime (clock ticks) 14 and 15. */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %lu %*u %*u %*u %lu %lu",
			 &out->minflt, &ut, &st) != 3)
		return -1;
	out->cpu_s = (double)(ut + st) / tick;
	out->sys_s = (double)st / tick;
	return 0;
}

long bench_proc_rss_kib(long pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

double bench_thread_cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
