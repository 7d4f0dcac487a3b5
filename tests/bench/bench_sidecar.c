/* bench_sidecar: PTY-to-link throughput of a real ptygate-sidecar against
   a plain forkpty read loop of the same output, in the same run, and the
   sidecar's memory with 100 idle sessions.

   Usage: bench_sidecar PATH/TO/ptygate-sidecar [MiB (256)] [runs (3)]

   The program is `cat` of a file of terminal-like lines (hex dump rows
   with CR LF from the PTY). Plain: forkpty, read until EOF. Sidecar: a
   session runs the same cat once an attached controller sends a newline;
   the clock runs from that input to the Closed frame, and every Output
   byte is counted on the link. Runs alternate; medians are reported.
   CPU per MB: the sidecar's own CPU time (its threads, not the program's
   cat) against the plain loop's reader, both from the kernel's counters,
   with the part spent in the kernel (system time) beside each.
   PTG_BENCH_WORKLOAD picks the output: hex (default), long, tui, random.
   PTG_BENCH_STATE_DIR=1 runs the sidecar with --state-dir (durable
   history sealed with a key made at start, --fsync interval:100ms, its
   default). PTG_BENCH_SIDECAR_ARGS adds options, split at spaces: with
   "--replay-bytes 4194304" the history ring is full after 4 MiB, so the
   run measures the steady state rather than a ring's first fill.
   A durable run also times sealing the same output alone, in records of
   the runs' mean Output frame, with the product's seal.c: with the plain
   loop's reader it is the least a sealed durable sidecar can spend. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_data.h"
#include "bench_proc.h"
#include "buf.h"
#include "link.h"
#include "seal.h"

static char dir[] = "/tmp/ptg-bench-XXXXXX";
static char data_path[256], sock_path[100];

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void remove_files(void);

/* Only the bench's own process calls it (its children exec at once). */
static void die(const char *what)
{
	fprintf(stderr, "bench_sidecar: %s: %s\n", what, strerror(errno));
	remove_files();
	exit(1);
}

static void make_data(size_t bytes)
{
	FILE *f = fopen(data_path, "w");
	int r;

	if (!f)
		die("data file");
	r = bench_data_write(f, getenv("PTG_BENCH_WORKLOAD"), bytes);
	if (fclose(f) != 0)
		die("data file");
	if (r < 0) {
		fprintf(stderr, "bench_sidecar: PTG_BENCH_WORKLOAD: %s\n",
			BENCH_DATA_WORKLOADS);
		remove_files();
		exit(2);
	}
}

/* CPU seconds (user + system) of a process's own threads, the system
   part of them and their minor page faults. */
static double proc_cpu_s(pid_t pid, double *sys_s, unsigned long *minflt)
{
	struct bench_proc st;

	if (bench_proc_read(pid, &st) < 0)
		die("read /proc/PID/stat");
	*sys_s = st.sys_s;
	*minflt = st.minflt;
	return st.cpu_s;
}

/* This process's CPU seconds, and the system part of them. */
static double self_cpu_s(double *sys_s)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*sys_s = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* ---- plain loop ---- */

static double run_plain(size_t *got)
{
	struct winsize ws = {.ws_row = 30, .ws_col = 120};
	static char b[65536];
	double t0 = now_s();
	ssize_t n;
	int fd;
	pid_t p = forkpty(&fd, NULL, NULL, &ws);

	if (p < 0)
		die("forkpty");
	if (p == 0) {
		execlp("cat", "cat", data_path, (char *)NULL);
		_exit(127);
	}
	*got = 0;
	while ((n = read(fd, b, sizeof(b))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			*got += (size_t)n;
	close(fd);
	waitpid(p, NULL, 0);
	return now_s() - t0;
}

/* ---- a minimal blocking link client ---- */

struct client {
	int fd;
	struct buf in;
};

static void send_msg(struct client *c, Ptg__LinkMessage *m)
{
	struct buf out = BUF_INIT;
	size_t off = 0;

	link_encode(m, &out);
	while (off < buf_size(&out)) {
		ssize_t n = write(c->fd, buf_head(&out) + off, buf_size(&out) - off);
		if (n <= 0)
			die("link write");
		off += (size_t)n;
	}
	buf_free(&out);
}

static Ptg__LinkMessage *recv_msg(struct client *c)
{
	Ptg__LinkMessage *m;

	for (;;) {
		int rc = link_decode(&c->in, &m);
		if (rc == 1)
			return m;
		if (rc < 0)
			die("link decode");
		uint8_t *p = buf_reserve(&c->in, 1 << 20);
		ssize_t n = read(c->fd, p, 1 << 20);
		if (n <= 0)
			die("link read");
		buf_commit(&c->in, (size_t)n);
	}
}

static void connect_link(struct client *c)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Hello h = PTG__HELLO__INIT;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	for (int i = 0; i < 100; i++) {
		c->fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		close(c->fd);
		c->fd = -1;
		usleep(50000);
	}
	if (c->fd < 0)
		die("connect to the sidecar");
	buf_init(&c->in);
	h.protocol_version = PTG__PROTOCOL_VERSION__PROTOCOL_VERSION_1;
	h.gateway_id = "bench";
	m.msg_case = PTG__LINK_MESSAGE__MSG_HELLO;
	m.hello = &h;
	send_msg(c, &m);
	link_message_free(recv_msg(c));
}

/* Creates a session running argv; returns its id (malloc'd). */
static char *create(struct client *c, char **argv, size_t argc, uint64_t req)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT, *r;
	Ptg__CreateSession cs = PTG__CREATE_SESSION__INIT;
	char *id;

	cs.request_id = req;
	cs.argv = argv;
	cs.n_argv = argc;
	m.msg_case = PTG__LINK_MESSAGE__MSG_CREATE_SESSION;
	m.create_session = &cs;
	send_msg(c, &m);
	while ((r = recv_msg(c))->msg_case != PTG__LINK_MESSAGE__MSG_REPLY)
		link_message_free(r);
	if (r->reply->result_case != PTG__REPLY__RESULT_SESSION) {
		fprintf(stderr, "bench_sidecar: create failed: %s\n", r->reply->message);
		exit(1);
	}
	id = strdup(r->reply->session->session_id);
	link_message_free(r);
	return id;
}

static void attach_and_start(struct client *c, const char *sid)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Attach a = PTG__ATTACH__INIT;
	Ptg__Input in = PTG__INPUT__INIT;
	Ptg__Scope scopes[] = {PTG__SCOPE__SCOPE_PTY_OBSERVE,
			       PTG__SCOPE__SCOPE_PTY_CONTROL};

	a.request_id = 99;
	a.attach_id = 1;
	a.session_id = (char *)sid;
	a.role = PTG__ROLE__ROLE_CONTROLLER;
	a.principal = "bench";
	a.scopes = scopes;
	a.n_scopes = 2;
	m.msg_case = PTG__LINK_MESSAGE__MSG_ATTACH;
	m.attach = &a;
	send_msg(c, &m);
	in.attach_id = 1;
	in.session_id = (char *)sid;
	in.data.data = (uint8_t *)"\n";
	in.data.len = 1;
	m.msg_case = PTG__LINK_MESSAGE__MSG_INPUT;
	m.input = &in;
	send_msg(c, &m);
}

/* Counts Output bytes until Closed; the first is the echo of our newline. */
static double run_sidecar(struct client *c, uint64_t req, size_t *got, unsigned *frames)
{
	char script[600];
	char *argv[] = {"sh", "-c", script};
	Ptg__LinkMessage *r;
	double t0;
	int closed = 0;

	snprintf(script, sizeof(script), "stty -echo; read x; exec cat '%s'", data_path);
	char *sid = create(c, argv, 3, req);
	usleep(200000); /* let sh reach `read` */
	*got = 0;
	*frames = 0;
	t0 = now_s();
	attach_and_start(c, sid);
	while (!closed) {
		r = recv_msg(c);
		if (r->msg_case == PTG__LINK_MESSAGE__MSG_FRAME) {
			if (r->frame->kind_case == PTG__FRAME__KIND_OUTPUT) {
				*got += r->frame->output->data.len;
				(*frames)++;
			}
			closed = r->frame->kind_case == PTG__FRAME__KIND_CLOSED;
		}
		link_message_free(r);
	}
	free(sid);
	return now_s() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void idle_sessions(struct client *c, pid_t sidecar)
{
	char *argv[] = {"sleep", "600"};
	long before = bench_proc_rss_kib(sidecar);

	for (int i = 0; i < 100; i++)
		free(create(c, argv, 2, 1000 + i));
	sleep(1);
	printf("memory: sidecar RSS %ld KiB at start, %ld KiB with 100 idle sessions "
	       "(%.1f KiB per session)\n",
	       before, bench_proc_rss_kib(sidecar),
	       (bench_proc_rss_kib(sidecar) - before) / 100.0);
}

/* The sidecar's argv: its fixed options (11 at most) and room for
   PTG_BENCH_SIDECAR_ARGS, then the NULL. */
#define SIDECAR_ARGV_MAX 32

/* PTG_BENCH_SIDECAR_ARGS, split at spaces into argv from n on, short of
   its last slot (the NULL); returns the new count. */
static int extra_args(char **argv, int n)
{
	static char copy[512];
	const char *env = getenv("PTG_BENCH_SIDECAR_ARGS");
	char *tok, *save = NULL;

	if (!env)
		return n;
	snprintf(copy, sizeof(copy), "%s", env);
	for (tok = strtok_r(copy, " ", &save); tok && n < SIDECAR_ARGV_MAX - 1;
	     tok = strtok_r(NULL, " ", &save))
		argv[n++] = tok;
	return n;
}

/* PTG_BENCH_STATE_DIR=1: the sidecar keeps durable history. */
static bool durable_run(void)
{
	const char *durable = getenv("PTG_BENCH_STATE_DIR");

	return durable && *durable == '1';
}

static pid_t start_sidecar(const char *bin)
{
	char listen[300], state[300], key[300];
	char *argv[SIDECAR_ARGV_MAX] = {(char *)bin,   "--listen", listen,
					"--log-level", "warn",	   "--max-sessions",
					"200"};
	int n = 7;
	pid_t p;

	snprintf(listen, sizeof(listen), "unix:%s", sock_path);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(key, sizeof(key), "%s/state.key", dir); /* made at first start */
	if (durable_run()) {
		argv[n++] = "--state-dir";
		argv[n++] = state;
		argv[n++] = "--state-key-file";
		argv[n++] = key;
	}
	n = extra_args(argv, n);
	argv[n] = NULL;
	p = fork();
	if (p == 0) {
		execv(bin, argv);
		_exit(127);
	}
	return p;
}

/* Removes the state dir a durable run leaves (the bench's own files). */
static void remove_state(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/state' '%s/state.key'", dir, dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_sidecar: could not remove %s/state and its key\n",
			dir);
}

static pid_t sidecar_pid; /* 0 until started */

/* Stops the sidecar and removes the run's files: its data (as large as
   the run), the socket, the state and the directory. */
static void remove_files(void)
{
	if (sidecar_pid > 0) {
		kill(sidecar_pid, SIGTERM);
		waitpid(sidecar_pid, NULL, 0);
		sidecar_pid = 0;
	}
	if (strstr(dir, "XXXXXX"))
		return; /* no directory made yet */
	remove_state();
	unlink(data_path);
	unlink(sock_path);
	rmdir(dir);
}

/* Milliseconds of CPU per MB to seal the data file's bytes (read into
   memory first) as the frame log does: one stream, one sealed message per
   record of `record` bytes, under a key made here. */
static double seal_ms_per_mb(size_t record)
{
	static struct seal_keys keys = {.n = 1};
	uint8_t hdr[SEAL_HEADER_BYTES], *data, *out;
	struct seal_stream st;
	struct stat sb;
	size_t n, off;
	double t0, spent;
	int fd = open(data_path, O_RDONLY);

	if (fd < 0 || fstat(fd, &sb) < 0)
		die("data file");
	randombytes_buf(keys.k[0].key, sizeof(keys.k[0].key));
	seal_push_init(&st, &keys, hdr);
	data = malloc((size_t)sb.st_size);
	out = malloc(seal_sealed_len(&st, record));
	if (!data || !out || read(fd, data, (size_t)sb.st_size) != sb.st_size)
		die("data file");
	close(fd);
	t0 = bench_thread_cpu_s();
	for (off = 0; off < (size_t)sb.st_size; off += n) {
		n = (size_t)sb.st_size - off < record ? (size_t)sb.st_size - off : record;
		seal_push(&st, data + off, n, out);
	}
	spent = bench_thread_cpu_s() - t0;
	free(out);
	free(data);
	return spent * 1e3 / (sb.st_size / 1e6);
}

/* A durable run's floor: sealing alone, median of runs, and with the
   plain loop's reader (pcpu_median) beside it. */
static void report_seal_floor(int runs, size_t record, double pcpu_median)
{
	double ms[16];

	if (sodium_init() < 0)
		die("sodium_init");
	for (int i = 0; i < runs; i++)
		ms[i] = seal_ms_per_mb(record);
	qsort(ms, (size_t)runs, sizeof(double), cmp_double);
	printf("sealing alone (median of %d, records of %zu bytes): %.2f ms/MB (range "
	       "%.2f-%.2f); with the plain loop's reader %.2f ms/MB, the least a sealed "
	       "durable sidecar spends\n",
	       runs, record, ms[runs / 2], ms[0], ms[runs - 1],
	       ms[runs / 2] + pcpu_median);
}

int main(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 256, got;
	int runs = argc > 3 ? atoi(argv[3]) : 3;
	double plain[16], side[16], ratio[16], pcpu[16], scpu[16], ps, ss, c0;
	double sys0, sys1, psys;
	unsigned long f0, f1;
	struct client c;
	unsigned frames;
	size_t frame_sum = 0, frame_count = 0; /* over the runs, for the seal floor */

	if (argc < 2 || runs < 1 || runs > 16 || !mib) {
		fprintf(stderr,
			"usage: bench_sidecar PATH/TO/ptygate-sidecar [MiB] [runs]\n");
		return 2;
	}
	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(data_path, sizeof(data_path), "%s/out.txt", dir);
	snprintf(sock_path, sizeof(sock_path), "%s/s.sock", dir);
	make_data(mib << 20);
	sidecar_pid = start_sidecar(argv[1]);
	connect_link(&c);
	idle_sessions(&c, sidecar_pid);
	run_plain(&got); /* untimed: warms the page cache for the data file */
	for (int i = 0; i < runs; i++) {
		c0 = self_cpu_s(&sys0);
		plain[i] = run_plain(&got);
		pcpu[i] = (self_cpu_s(&sys1) - c0) * 1e3 / (got / 1e6);
		psys = (sys1 - sys0) * 1e3 / (got / 1e6);
		ps = got / plain[i] / 1e6;
		c0 = proc_cpu_s(sidecar_pid, &sys0, &f0);
		side[i] = run_sidecar(&c, 10 + i, &got, &frames);
		frame_sum += got;
		frame_count += frames ? frames : 1;
		scpu[i] = (proc_cpu_s(sidecar_pid, &sys1, &f1) - c0) * 1e3 / (got / 1e6);
		ss = got / side[i] / 1e6;
		printf("run %d: plain %.1f MB/s %.2f ms CPU/MB (%.2f in the kernel), "
		       "sidecar %.1f MB/s "
		       "%.2f ms CPU/MB (%.2f in the kernel) %.0f page faults/MB, ratio "
		       "%.2f (%zu bytes in %u Output frames, %.1f KiB each)\n",
		       i + 1, ps, pcpu[i], psys, ss, scpu[i],
		       (sys1 - sys0) * 1e3 / (got / 1e6), (double)(f1 - f0) / (got / 1e6),
		       ss / ps, got, frames, got / 1024.0 / (frames ? frames : 1));
		plain[i] = ps;
		side[i] = ss;
		ratio[i] = ss / ps;
	}
	qsort(plain, (size_t)runs, sizeof(double), cmp_double);
	qsort(side, (size_t)runs, sizeof(double), cmp_double);
	qsort(ratio, (size_t)runs, sizeof(double), cmp_double);
	qsort(pcpu, (size_t)runs, sizeof(double), cmp_double);
	qsort(scpu, (size_t)runs, sizeof(double), cmp_double);
	printf("throughput (median of %d, %zu MiB): plain forkpty loop %.1f MB/s, "
	       "sidecar to link %.1f MB/s; median of the paired ratios %.2f, range "
	       "%.2f-%.2f (target >= 0.80)\n",
	       runs, mib, plain[runs / 2], side[runs / 2], ratio[runs / 2], ratio[0],
	       ratio[runs - 1]);
	printf("cpu (median of %d): plain loop's reader %.2f ms/MB (range "
	       "%.2f-%.2f), sidecar %.2f ms/MB (range %.2f-%.2f; target <= 5)\n",
	       runs, pcpu[runs / 2], pcpu[0], pcpu[runs - 1], scpu[runs / 2], scpu[0],
	       scpu[runs - 1]);
	if (durable_run())
		report_seal_floor(runs, frame_sum / frame_count, pcpu[runs / 2]);
	remove_files();
	return 0;
}
