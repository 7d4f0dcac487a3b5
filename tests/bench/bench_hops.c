/* bench_hops: a preloaded library (LD_PRELOAD) that timestamps a
   process's reads, writes and waits, so that tests/bench/hops.py can lay
   the processes of one keystroke's echo side by side (client, gateway,
   sidecar, or client, nginx, one-hop reference) and say how long each
   hop took: a process's own work, a system call, a wake-up.

   Each call of read, write, readv, writev, recv, send, recvfrom, sendto,
   recvmsg, sendmsg, epoll_wait and epoll_pwait that goes through the C
   library's exported symbol is recorded: when it was entered and when it
   returned (CLOCK_MONOTONIC, the same clock in every process), the
   thread, the CPU it returned on, the descriptor (for a wait: its timeout
   in ms) and the result. Failed reads and writes are not recorded. The
   records stay in memory (at most HOPS_MAX, about 50 MB of address space
   touched only as it fills) and are written when the process exits
   normally, to $PTG_HOPS_DIR/hops.PID, one line each, after a first line
   "# EXECUTABLE", or when SIGHUP or SIGTERM ends it while their action
   is the default one (a session's program when its terminal hangs up).
   Without PTG_HOPS_DIR at start the library records nothing. nginx clears its workers'
   environment, so the directory is read once, when the library is loaded.

   A benchmark tool, not part of the product: the calls cost two clock
   reads and a store each. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dlsym(RTLD_NEXT), sched_getcpu */
#endif
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define HOPS_MAX (1u << 21)

/* What a record is about; hops.py reads these numbers. */
enum hops_call {
	HOPS_READ = 1,
	HOPS_WRITE,
	HOPS_READV,
	HOPS_WRITEV,
	HOPS_RECV,
	HOPS_SEND,
	HOPS_RECVMSG,
	HOPS_SENDMSG,
	HOPS_WAIT,
	HOPS_RECVFROM,
	HOPS_SENDTO,
};

struct hops_record {
	uint64_t entered_ns, returned_ns;
	int32_t tid, call, fd, result, cpu;
};

static struct hops_record *records;
static unsigned n_records;
static char out_dir[512];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void record(enum hops_call call, int fd, long result, uint64_t entered)
{
	unsigned i;

	if (!records)
		return;
	i = __atomic_fetch_add(&n_records, 1, __ATOMIC_RELAXED);
	if (i >= HOPS_MAX)
		return;
	records[i] = (struct hops_record){
	    .entered_ns = entered,
	    .returned_ns = now_ns(),
	    .tid = (int32_t)syscall(SYS_gettid),
	    .call = call,
	    .fd = fd,
	    .result = (int32_t)result,
	    .cpu = sched_getcpu(),
	};
}

static void hops_write(void);

/* A signal whose action was the default (to end the process): the
   records are written, then the default action is taken. Not
   async-signal-safe, but the process is ending and a benchmark's
   records are all that is at stake. */
static void hops_on_signal(int sig)
{
	hops_write();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_if_default(int sig)
{
	struct sigaction old;

	if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
		signal(sig, hops_on_signal);
}

__attribute__((constructor)) static void hops_start(void)
{
	const char *dir = getenv("PTG_HOPS_DIR");
	void *p;

	if (!dir || !*dir ||
	    (size_t)snprintf(out_dir, sizeof(out_dir), "%s", dir) >= sizeof(out_dir))
		return;
	p = mmap(NULL, sizeof(*records) * HOPS_MAX, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	records = p == MAP_FAILED ? NULL : p;
	catch_if_default(SIGHUP);
	catch_if_default(SIGTERM);
}

__attribute__((destructor)) static void hops_write(void)
{
	static int written;
	char path[600], exe[512];
	unsigned n = n_records < HOPS_MAX ? n_records : HOPS_MAX;
	ssize_t len;
	FILE *f;

	if (!records || __atomic_exchange_n(&written, 1, __ATOMIC_RELAXED))
		return;
	snprintf(path, sizeof(path), "%s/hops.%d", out_dir, (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return;
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[len > 0 ? len : 0] = '\0';
	fprintf(f, "# %s\n", exe);
	for (unsigned i = 0; i < n; i++) {
		const struct hops_record *r = &records[i];

		fprintf(f, "%llu %llu %d %d %d %d %d\n",
			(unsigned long long)r->entered_ns,
			(unsigned long long)r->returned_ns, r->tid, r->call, r->fd,
			r->result, r->cpu);
	}
	fclose(f);
}

/* The C library's own function, found once. */
#define REAL(name)                                                                       \
	static __typeof__(name) *real;                                                   \
	if (!real) {                                                                     \
		real = (__typeof__(name) *)dlsym(RTLD_NEXT, #name);                      \
	}

/* An I/O call, defined in one line: recorded when it moved bytes (or
   saw the end). PARAMS and ARGS are the call's parameters and the same
   names passed on; fd is always the first. */
#define IO_CALL(kind, name, params, args)                                                \
	ssize_t name params                                                              \
	{                                                                                \
		REAL(name);                                                              \
		uint64_t t = now_ns();                                                   \
		ssize_t r = real args;                                                   \
		if (r >= 0)                                                              \
			record(kind, fd, (long)r, t);                                    \
		return r;                                                                \
	}

IO_CALL(HOPS_READ, read, (int fd, void *buf, size_t n), (fd, buf, n))
IO_CALL(HOPS_WRITE, write, (int fd, const void *buf, size_t n), (fd, buf, n))
IO_CALL(HOPS_READV, readv, (int fd, const struct iovec *iov, int n), (fd, iov, n))
IO_CALL(HOPS_WRITEV, writev, (int fd, const struct iovec *iov, int n), (fd, iov, n))
IO_CALL(HOPS_RECV, recv, (int fd, void *buf, size_t n, int flags), (fd, buf, n, flags))
IO_CALL(HOPS_SEND, send, (int fd, const void *buf, size_t n, int flags),
	(fd, buf, n, flags))
IO_CALL(HOPS_RECVMSG, recvmsg, (int fd, struct msghdr *msg, int flags), (fd, msg, flags))
IO_CALL(HOPS_SENDMSG, sendmsg, (int fd, const struct msghdr *msg, int flags),
	(fd, msg, flags))
IO_CALL(HOPS_RECVFROM, recvfrom,
	(int fd, void *buf, size_t n, int flags, struct sockaddr *from, socklen_t *len),
	(fd, buf, n, flags, from, len))
IO_CALL(HOPS_SENDTO, sendto,
	(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to,
	 socklen_t len),
	(fd, buf, n, flags, to, len))

/* A wait: recorded with its timeout (ms, at most 30 s) in place of a
   descriptor, whatever it returned. */
static int wait_timeout(int ms)
{
	return ms > 30000 ? 30000 : ms;
}

int epoll_wait(int epfd, struct epoll_event *events, int max, int ms)
{
	REAL(epoll_wait);
	uint64_t t = now_ns();
	int r = real(epfd, events, max, ms);

	record(HOPS_WAIT, wait_timeout(ms), r, t);
	return r;
}

int epoll_pwait(int epfd, struct epoll_event *events, int max, int ms,
		const sigset_t *mask)
{
	REAL(epoll_pwait);
	uint64_t t = now_ns();
	int r = real(epfd, events, max, ms, mask);

	record(HOPS_WAIT, wait_timeout(ms), r, t);
	return r;
}
