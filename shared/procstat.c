/* procstat: reads /proc/self/stat, /proc/stat's btime, /proc/self/fd and
   RLIMIT_NOFILE; the parsers take text and do no I/O. */
#include "procstat.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "xalloc.h"

/* Fields of /proc/PID/stat (proc(5)), counted from 1; the ones read here
   all come after the command, field 2. */
#define STAT_UTIME     14
#define STAT_STIME     15
#define STAT_STARTTIME 22
#define STAT_VSIZE     23
#define STAT_RSS       24

/* /proc/stat's intr line grows with the interrupt count: a generous cap. */
#define PROCSTAT_TEXT_MAX (1u << 20)

static int field_u64(const char *p, unsigned field, uint64_t *out)
{
	char *end;

	/* p is field 3's start; skip to the wanted one. */
	for (unsigned f = 3; f < field; f++) {
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
		p++;
	}
	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(p, &end, 10);
	if (errno || (*end != ' ' && *end != '\n' && *end != '\0'))
		return -EINVAL;
	return 0;
}

/* Parses the text of /proc/PID/stat (the command field may hold spaces
   and parentheses: fields are counted after its last ')'). hz is
   sysconf(_SC_CLK_TCK), page the page size, boot_s /proc/stat's btime.
   Fills the CPU, memory and start fields of *out. Returns 0, or -EINVAL
   for text that is not a stat line. */
static int procstat_parse(const char *stat, long hz, long page, int64_t boot_s,
			  struct procstat *out)
{
	const char *p = strrchr(stat, ')');
	uint64_t ut, st, start, vsize, rss;

	if (!p || p[1] != ' ' || hz <= 0 || page <= 0)
		return -EINVAL;
	p += 2;
	if (field_u64(p, STAT_UTIME, &ut) || field_u64(p, STAT_STIME, &st) ||
	    field_u64(p, STAT_STARTTIME, &start) || field_u64(p, STAT_VSIZE, &vsize) ||
	    field_u64(p, STAT_RSS, &rss))
		return -EINVAL;
	out->cpu_ms = (ut + st) * 1000 / (uint64_t)hz;
	out->rss_bytes = rss * (uint64_t)page;
	out->vsize_bytes = vsize;
	out->start_time_ms = boot_s * 1000 + (int64_t)(start * 1000 / (uint64_t)hz);
	return 0;
}

/* The boot time, from the "btime N" line of /proc/stat's text; 0 and
 *boot_s set, or -EINVAL. */
static int procstat_parse_btime(const char *text, int64_t *boot_s)
{
	const char *p = text;
	char *end;

	while (p && strncmp(p, "btime ", 6) != 0) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (!p || p[6] < '0' || p[6] > '9')
		return -EINVAL;
	errno = 0;
	*boot_s = strtoll(p + 6, &end, 10);
	return errno || (*end != '\n' && *end != '\0') ? -EINVAL : 0;
}

/* The whole text of a /proc file (its size reads as 0), NUL-terminated;
   NULL when it cannot be read or passes PROCSTAT_TEXT_MAX bytes. */
static char *slurp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0, cap = 4096;
	char *text;
	ssize_t n = 1;

	if (fd < 0)
		return NULL;
	text = xmalloc(cap);
	while (n > 0 || (n < 0 && errno == EINTR)) {
		if (len + 1 == cap && cap >= PROCSTAT_TEXT_MAX)
			break;
		if (len + 1 == cap)
			text = xrealloc(text, cap *= 2);
		n = read(fd, text + len, cap - 1 - len);
		if (n > 0)
			len += (size_t)n;
	}
	close(fd);
	if (n != 0) {
		free(text);
		return NULL;
	}
	text[len] = '\0';
	return text;
}

static uint64_t count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	uint64_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n > 0 ? n - 1 : 0; /* not the directory's own fd */
}

int procstat_read(struct procstat *out)
{
	char *stat = slurp("/proc/self/stat"), *sys = slurp("/proc/stat");
	struct rlimit rl;
	int64_t boot_s = 0;
	int rc = -EIO;

	memset(out, 0, sizeof(*out));
	if (stat && sys && procstat_parse_btime(sys, &boot_s) == 0)
		rc = procstat_parse(stat, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE),
				    boot_s, out);
	free(stat);
	free(sys);
	if (rc < 0)
		return rc;
	out->open_fds = count_fds();
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		out->max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
	return 0;
}
