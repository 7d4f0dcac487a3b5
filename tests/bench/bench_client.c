/* bench_client: the load client of the benchmark suite (tests/bench/run.py
   drives it). One mode per invocation; every result is a line
   "RESULT name value" on stdout, so the driver can pair runs and take
   medians. Gateway modes talk pty-ws/v1 to a real gateway (bench_ws.c);
   the baseline modes run the same workload on a plain forkpty loop or a
   loopback TCP socket in this process.

   Usage: bench_client [--gateway HOST:PORT] [--instance ID] [--token T]
			[--gateway-pid P] [--sidecar-pid P] MODE ARGS...
   Modes (SESSION is a session id; see each function for its workload):
     attach SESSION SAMPLES        upgrade->101, 101->hello, join->Keyframe
     echo SESSION SAMPLES          keystroke->echo through both hops
     throughput SESSION            MB/s of a generator to its end marker
     fanout-observers SESSION N START SECONDS
				   N observers streaming through a window (N may
				   be 0: the controller alone, run.py's baseline)
     fanout-echo SESSION START SECONDS
				   the fan-out's controller: echo while they stream
     joins SESSION N               N observers join at once, time to all Keyframes
     hold N PER SECONDS SESSION... N observers over the sessions, held idle
     memory N PER SESSION...       gateway RSS per idle attached connection
     replay SESSION SAMPLES BACK   replay_from current-BACK to the Keyframe
     keyframe SESSION SAMPLES      join->Keyframe time and bytes per cell
     plain-throughput SCRIPT       baseline: forkpty sh -c SCRIPT read to EOF
     pty-echo SAMPLES              baseline: keystroke->echo on a bare PTY
     tcp-echo SAMPLES              baseline: one-byte loopback TCP round trip
     onehop-echo SAMPLES           echo, through bench_onehop at --gateway
     onehop-throughput             throughput, through bench_onehop at --gateway
				   (results named onehop.*; --gateway-pid: its pid)
   Environment: PTG_BENCH_TOKEN (the default --token); PTG_BENCH_DEFLATE=1
   makes every connection offer permessage-deflate (client_no_context_
   takeover, server_no_context_takeover) and inflate what comes
   compressed (bench_ws.h); wire bytes are counted before inflating. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_proc.h"
#include "bench_ws.h"

#define MARKER "PTG-BENCH-END"
#define READY  "PTG-READY"

static const char *instance = "bench";
static bool onehop;		       /* the one-hop reference, not a gateway */
static const char *result_prefix = ""; /* "onehop." for its results */
static long gateway_pid, sidecar_pid;

/* ---- results ---- */

static void result(const char *name, double v)
{
	printf("RESULT %s%s %.6g\n", result_prefix, name, v);
	fflush(stdout);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorts v and reports name.p50, .p99, .max (scaled), and the count over
   over (when over > 0). */
static void percentiles(const char *name, double *v, size_t n, double scale, double over)
{
	char k[96];
	size_t slow = 0;

	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_double);
	snprintf(k, sizeof(k), "%s.p50", name);
	result(k, v[n / 2] * scale);
	/* Nearest rank, the ceil(0.99 n)-th value: of 100 samples the 99th
	   (n * 99 / 100 as an index was the 100th, the maximum). */
	snprintf(k, sizeof(k), "%s.p99", name);
	result(k, v[(n * 99 + 99) / 100 - 1] * scale);
	snprintf(k, sizeof(k), "%s.max", name);
	result(k, v[n - 1] * scale);
	if (over > 0) {
		for (size_t i = 0; i < n; i++)
			slow += v[i] > over;
		snprintf(k, sizeof(k), "%s.over10ms", name);
		result(k, (double)slow);
	}
}

/* pid's CPU seconds, 0 when /proc does not tell (no such pid given). */
static double cpu_seconds(long pid)
{
	struct bench_proc st;

	return bench_proc_read(pid, &st) == 0 ? st.cpu_s : 0;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_client: %s\n", what);
	exit(1);
}

/* ---- helpers over many connections ---- */

struct group {
	struct bws *c;
	size_t n;
};

static void attach_path(const char *sid, char *out, size_t n)
{
	snprintf(out, n, "/agents/%s/sessions/%s/attach", instance, sid);
}

static bool all_hello(void *arg)
{
	struct group *g = arg;

	for (size_t i = 0; i < g->n; i++)
		if (!g->c[i].got_hello && g->c[i].st != BWS_DEAD)
			return false;
	return true;
}

static bool all_keyframe(void *arg)
{
	struct group *g = arg;

	for (size_t i = 0; i < g->n; i++)
		if (!g->c[i].got_keyframe && !g->c[i].join_failed &&
		    g->c[i].st != BWS_DEAD)
			return false;
	return true;
}

static size_t joined(const struct group *g)
{
	size_t k = 0;

	for (size_t i = 0; i < g->n; i++)
		k += g->c[i].got_keyframe;
	return k;
}

static size_t count_dead(const struct group *g)
{
	size_t dead = 0;

	for (size_t i = 0; i < g->n; i++)
		if (g->c[i].st == BWS_DEAD && !g->c[i].got_closed) {
			if (dead++ < 3)
				fprintf(stderr, "bench_client: conn %zu: %s\n", i,
					g->c[i].err);
		}
	return dead;
}

/* Opens g's connections to the sessions sids[i / per] in batches (the
   listen backlog is finite) and waits for every hello. */
static void open_all(struct group *g, char **sids, size_t per, bool fast, int sources)
{
	char path[256];
	const size_t batch = 200;

	for (size_t i = 0; i < g->n; i += batch) {
		struct group part = {g->c + i, g->n - i < batch ? g->n - i : batch};

		for (size_t j = 0; j < part.n; j++) {
			struct bws *c = &part.c[j];

			c->idx = (int)(i + j);
			c->fast = fast;
			attach_path(sids[(i + j) / per], path, sizeof(path));
			bws_open(c, path,
				 sources ? (int)((i + j) % (size_t)sources) : -1);
		}
		if (!bws_run(all_hello, &part, 60))
			die("connections did not all get binding_hello in 60 s");
	}
}

static void close_all(struct group *g)
{
	for (size_t i = 0; i < g->n; i++)
		bws_close(&g->c[i]);
}

static bool one_keyframe(void *arg)
{
	struct bws *c = arg;

	return c->got_keyframe || c->st == BWS_DEAD;
}

static bool one_hello(void *arg)
{
	struct bws *c = arg;

	return c->got_hello || c->st == BWS_DEAD;
}

/* Connects, joins with role (replay_from >= 0: a reconnect), waits for the
   joiner's Keyframe. */
static void attach_one(struct bws *c, const char *sid, const char *role, int64_t back)
{
	char path[256];

	attach_path(sid, path, sizeof(path));
	bws_open(c, path, -1);
	if (!bws_run(one_hello, c, 30) || c->st == BWS_DEAD)
		die(c->err[0] ? c->err : "no binding_hello in 30 s");
	bws_join(c, role, back < 0 ? -1 : (int64_t)c->hello_seq - back);
	if (!bws_run(one_keyframe, c, 30) || c->st == BWS_DEAD)
		die(c->err[0] ? c->err : "no Keyframe in 30 s");
}

static bool one_open(void *arg)
{
	struct bws *c = arg;

	return c->st == BWS_OPEN || c->st == BWS_DEAD;
}

/* A controller's terminal: a session joined through the gateway, or, for
   the one-hop reference, the connection itself (its own fresh PTY). */
static void open_terminal(struct bws *c, const char *sid)
{
	if (!onehop) {
		attach_one(c, sid, "controller", -1);
		return;
	}
	bws_open(c, "/", -1);
	if (!bws_run(one_open, c, 30) || c->st != BWS_OPEN)
		die(c->err[0] ? c->err : "the one-hop reference did not answer in 30 s");
}

/* ---- (a) attach latency ---- */

static int mode_attach(const char *sid, size_t samples)
{
	double *up = calloc(samples, sizeof(double)),
	       *hello = calloc(samples, sizeof(double));
	double *kf = calloc(samples, sizeof(double));

	for (size_t i = 0; i < samples; i++) {
		struct bws c = {.idx = (int)i};

		attach_one(&c, sid, "observer", -1);
		up[i] = c.t_101 - c.t_upgrade;
		hello[i] = c.t_hello - c.t_101;
		kf[i] = c.t_keyframe - c.t_join;
		bws_close(&c);
	}
	percentiles("attach.upgrade_to_101_ms", up, samples, 1e3, 0);
	percentiles("attach.101_to_hello_ms", hello, samples, 1e3, 0);
	percentiles("attach.join_to_keyframe_ms", kf, samples, 1e3, 0);
	return 0;
}

/* ---- (b) echo, and the controller of (d) ---- */

/* The echo controller: each keystroke is a byte from 'g'..'z' (never in
   a hex dump), sent when the previous one has come back, or with a gap
   (PTG_BENCH_ECHO_GAP_MS), at the first frame past it: a person typing
   beside a stream, not a program typing flat out. */
struct echo {
	double *lat;
	size_t n, max, lost;
	double t_sent, gap_s, t_due;
	uint8_t next;
	bool ready, started;
};

static void echo_send(struct bws *c, struct echo *e)
{
	uint8_t b = (uint8_t)('g' + e->next++ % 20);

	c->want = b;
	e->t_sent = bws_now();
	bws_input(c, &b, 1);
}

static void echo_frame(struct bws *c, const struct bws_frame *f)
{
	struct echo *e = c->user;

	if (e->t_due > 0 && bws_now() >= e->t_due) {
		e->t_due = 0;
		echo_send(c, e);
	}
	if (!strcmp(f->kind, "Error") &&
	    memmem(f->text, f->wire_len, "PTY_OUTPUT_LAGGED", 17) && e->ready &&
	    c->want >= 0) {
		/* The echo may have been among the dropped frames: a new sample. */
		e->lost++;
		echo_send(c, e);
		return;
	}
	if (strcmp(f->kind, "Output") || !f->data_len)
		return;
	if (!e->ready) {
		/* The program prints READY once its terminal is set up. */
		if (bws_scan_marker(c, f->data, f->data_len, READY)) {
			e->ready = true;
			echo_send(c, e);
		}
		return;
	}
	if (c->want >= 0 && memchr(f->data, c->want, f->data_len)) {
		e->lat[e->n++] = bws_now() - e->t_sent;
		c->want = -1;
		if (e->n < e->max && e->gap_s > 0)
			e->t_due = bws_now() + e->gap_s;
		else if (e->n < e->max)
			echo_send(c, e);
	}
}

static bool echo_done(void *arg)
{
	struct bws *c = arg;
	struct echo *e = c->user;

	return e->n >= e->max || c->st == BWS_DEAD;
}

/* The session runs `stty -echo -icanon min 1; dd bs=1 count=1; printf
   READY; exec cat`: one byte starts it, then cat echoes every keystroke. */
static int mode_echo(const char *sid, size_t samples)
{
	struct echo e = {.lat = calloc(samples, sizeof(double)), .max = samples};
	struct bws c = {.decode = true, .user = &e};
	double gw0, sc0, me0, gw_us, sc_us;

	open_terminal(&c, sid);
	c.on_frame = echo_frame;
	gw0 = cpu_seconds(gateway_pid);
	sc0 = cpu_seconds(sidecar_pid);
	me0 = cpu_seconds(getpid());
	bws_input(&c, "s", 1);
	if (!bws_run(echo_done, &c, 600) || e.n < samples)
		die("echo samples did not all come back");
	percentiles("echo.us", e.lat, e.n, 1e6, 0.010);
	/* CPU per keystroke, the round trip's work in each process (clock
	   ticks: 10 ms over some 10,000 keys, 1 us of resolution). */
	gw_us = (cpu_seconds(gateway_pid) - gw0) * 1e6 / e.n;
	sc_us = (cpu_seconds(sidecar_pid) - sc0) * 1e6 / e.n;
	result("echo.gateway_cpu_us", gw_us);
	result("echo.sidecar_cpu_us", sc_us);
	result("echo.daemons_cpu_us", gw_us + sc_us);
	result("echo.client_cpu_us", (cpu_seconds(getpid()) - me0) * 1e6 / e.n);
	bws_close(&c);
	free(e.lat);
	return 0;
}

/* ---- (c) throughput ---- */

static void tp_frame(struct bws *c, const struct bws_frame *f)
{
	if (!strcmp(f->kind, "Output") &&
	    bws_scan_marker(c, f->data, f->data_len, MARKER) && !c->t_mark)
		c->t_mark = bws_now();
}

static bool tp_done(void *arg)
{
	struct bws *c = arg;

	return c->t_mark > 0 || c->got_closed || c->st == BWS_DEAD;
}

/* The session runs `stty -echo; dd bs=1 count=1; GENERATOR; printf
   MARKER`: the clock runs from the newline that starts it to the marker. */
static int mode_throughput(const char *sid)
{
	struct bws c = {.decode = true};
	double t0, gw0, sc0, me0, dt;
	uint64_t start_bytes;

	open_terminal(&c, sid);
	c.on_frame = tp_frame;
	start_bytes = c.out_bytes;
	gw0 = cpu_seconds(gateway_pid);
	sc0 = cpu_seconds(sidecar_pid);
	me0 = cpu_seconds(getpid());
	t0 = bws_now();
	bws_input(&c, "\n", 1);
	if (!bws_run(tp_done, &c, 900) || !(c.t_mark || c.t_closed)) {
		fprintf(stderr, "bench_client: no end marker nor Closed: %s\n", c.err);
		return 1;
	}
	/* A lagged client lost output (the marker perhaps): Closed ends it. */
	dt = (c.t_mark ? c.t_mark : c.t_closed) - t0;
	result("throughput.mb_s", (double)(c.out_bytes - start_bytes) / dt / 1e6);
	result("throughput.bytes", (double)(c.out_bytes - start_bytes));
	result("throughput.gateway_cpu_pct", 100 * (cpu_seconds(gateway_pid) - gw0) / dt);
	result("throughput.sidecar_cpu_pct", 100 * (cpu_seconds(sidecar_pid) - sc0) / dt);
	result("throughput.client_cpu_pct", 100 * (cpu_seconds(getpid()) - me0) / dt);
	result("throughput.seq_errors", (double)c.seq_errors);
	result("throughput.lagged", (double)c.lagged);
	bws_close(&c);
	return 0;
}

/* ---- (d) fan-out ----
   The observers and the controller run in separate processes (run.py
   starts them): a load client reading a thousand streams would otherwise
   time its own backlog, not the gateway's, as the controller's echo. The
   processes agree on the window by the wall clock: each joins, keeps
   reading until START (seconds since the epoch), then measures WINDOW
   seconds. */

static double window_start, window_end; /* bws_now() times */

static bool reached_start(void *arg)
{
	return bws_now() >= window_start;
}

static bool reached_end(void *arg)
{
	return bws_now() >= window_end;
}

/* Converts START (wall clock) to the monotonic clock of bws_now(). */
static void set_window(const char *start, size_t window_s)
{
	struct timespec wall;
	char *end;
	double at = strtod(start, &end);

	if (*end || at <= 0)
		die("START must be seconds since the epoch");
	clock_gettime(CLOCK_REALTIME, &wall);
	window_start = bws_now() + (at - ((double)wall.tv_sec + wall.tv_nsec / 1e9));
	window_end = window_start + (double)window_s;
}

/* N observers of SESSION (one process's share); the session's stream
   starts when the controller's process sends its first byte at START. */
static int mode_fanout_observers(const char *sid, size_t n, const char *start,
				 size_t window_s)
{
	struct group obs = {calloc(n ? n : 1, sizeof(struct bws)), n};
	char *sids[] = {(char *)sid};
	uint64_t wire = 0, out = 0, msgs = 0, deflated = 0, seq_errors = 0, lagged = 0;

	set_window(start, window_s);
	open_all(&obs, sids, n, true, 0);
	for (size_t i = 0; i < n; i++)
		bws_join(&obs.c[i], "observer", -1);
	if (!bws_run(all_keyframe, &obs, window_start - bws_now() + 60))
		fprintf(
		    stderr,
		    "bench_client: observers did not all get an answer to their join\n");
	if (bws_now() > window_start)
		fprintf(stderr,
			"bench_client: the joins ended %.1f s after the window's start\n",
			bws_now() - window_start);
	bws_run(reached_start, NULL, window_start - bws_now() + 1);
	for (size_t i = 0; i < n; i++) {
		obs.c[i].wire_bytes = 0;
		obs.c[i].out_bytes = 0;
		obs.c[i].frames = 0;
		obs.c[i].deflated = 0;
	}
	bws_run(reached_end, NULL, window_end - bws_now() + 1);
	for (size_t i = 0; i < n; i++) {
		wire += obs.c[i].wire_bytes;
		out += obs.c[i].out_bytes;
		msgs += obs.c[i].frames;
		deflated += obs.c[i].deflated;
		seq_errors += obs.c[i].seq_errors;
		lagged += obs.c[i].lagged;
	}
	result("fanout.observers", (double)n);
	result("fanout.joined", (double)joined(&obs));
	result("fanout.dead", (double)count_dead(&obs));
	result("fanout.wire_bytes", (double)wire);
	/* The terminal output those messages carried (their base64's length). */
	result("fanout.output_bytes", (double)out);
	result("fanout.msgs", (double)msgs);
	result("fanout.deflated_msgs", (double)deflated);
	result("fanout.seq_errors", (double)seq_errors);
	result("fanout.lagged", (double)lagged);
	close_all(&obs);
	return 0;
}

/* The controller of the fan-out session, alone in its process: starts
   the stream at START (the session runs `stty -echo -icanon min 1; dd
   bs=1 count=1; (while :; do cat FILE; done) & exec cat`) and times the
   echo of one keystroke after another through the window, with the
   gateway's CPU over it. */
static int mode_fanout_echo(const char *sid, const char *start, size_t window_s)
{
	const char *gap_ms = getenv("PTG_BENCH_ECHO_GAP_MS");
	struct echo e = {.lat = calloc(1000000, sizeof(double)),
			 .max = 1000000,
			 .ready = true,
			 .gap_s = gap_ms ? atof(gap_ms) / 1e3 : 0};
	struct bws ctl = {.decode = true, .user = &e, .idx = -1};
	uint64_t session_out;
	double gw0, dt;

	set_window(start, window_s);
	attach_one(&ctl, sid, "controller", -1);
	bws_run(reached_start, NULL, window_start - bws_now() + 1);
	ctl.on_frame = echo_frame;
	session_out = ctl.out_bytes;
	gw0 = cpu_seconds(gateway_pid);
	bws_input(&ctl, "s", 1);
	echo_send(&ctl, &e);
	bws_run(reached_end, NULL, window_end - bws_now() + 1);
	dt = bws_now() - window_start;
	result("fanout.gateway_cpu_s", cpu_seconds(gateway_pid) - gw0);
	result("fanout.session_mb_s", (double)(ctl.out_bytes - session_out) / dt / 1e6);
	result("fanout.controller_seq_errors", (double)ctl.seq_errors);
	result("fanout.controller_lagged", (double)ctl.lagged);
	result("fanout.echo_samples", (double)e.n);
	result("fanout.echo_lost", (double)e.lost);
	percentiles("fanout.echo_us", e.lat, e.n, 1e6, 0.010);
	bws_close(&ctl);
	free(e.lat);
	return 0;
}

/* N observers joined to the sessions SESSION... (PER each), read and
   held idle for SECONDS: the other sessions' connections beside a
   fan-out (run.py's "sessions" benchmark). Says how many joined as soon
   as they have, so the fan-out can start. */
static int mode_hold(size_t n, size_t per, size_t seconds, char **sids, size_t nsids)
{
	struct group g = {calloc(n, sizeof(struct bws)), n};

	if ((n + per - 1) / per > nsids)
		die("hold needs enough sessions");
	open_all(&g, sids, per, true, 16);
	for (size_t i = 0; i < n; i++)
		bws_join(&g.c[i], "observer", -1);
	if (!bws_run(all_keyframe, &g, 300))
		die("joins did not all get their Keyframe in 300 s");
	result("hold.joined", (double)joined(&g));
	fflush(stdout);
	window_end = bws_now() + (double)seconds;
	bws_run(reached_end, NULL, (double)seconds + 1);
	result("hold.dead", (double)count_dead(&g));
	close_all(&g);
	return 0;
}

/* ---- (f) joins ---- */

static int mode_joins(const char *sid, size_t n)
{
	struct group g = {calloc(n, sizeof(struct bws)), n};
	char *sids[] = {(char *)sid};
	uint64_t wire = 0, done = 0;
	double t0, last = 0;
	bool ok;

	open_all(&g, sids, n, true, 0);
	for (size_t i = 0; i < n; i++)
		g.c[i].wire_bytes = 0;
	t0 = bws_now();
	for (size_t i = 0; i < n; i++)
		bws_join(&g.c[i], "observer", -1);
	ok = bws_run(all_keyframe, &g, 120);
	for (size_t i = 0; i < n; i++) {
		wire += g.c[i].wire_bytes;
		if (g.c[i].got_keyframe) {
			done++;
			if (g.c[i].t_keyframe > last)
				last = g.c[i].t_keyframe;
		}
	}
	result("joins.n", (double)n);
	result("joins.completed", (double)done);
	result("joins.all_ms", ok ? (last - t0) * 1e3 : -1);
	result("joins.wire_mib", (double)wire / (1 << 20));
	close_all(&g);
	return 0;
}

/* ---- (e) memory ---- */

static int mode_memory(size_t n, size_t per, char **sids, size_t nsids)
{
	struct group g = {calloc(n, sizeof(struct bws)), n};
	long before, after;

	if (gateway_pid <= 0 || (n + per - 1) / per > nsids)
		die("memory needs --gateway-pid and enough sessions");
	before = bench_proc_rss_kib(gateway_pid);
	open_all(&g, sids, per, true, 16);
	for (size_t i = 0; i < n; i++)
		bws_join(&g.c[i], "observer", -1);
	if (!bws_run(all_keyframe, &g, 300))
		die("joins did not all get their Keyframe in 300 s");
	sleep(1);
	after = bench_proc_rss_kib(gateway_pid);
	result("memory.connections", (double)n);
	result("memory.joined", (double)joined(&g));
	result("memory.dead", (double)count_dead(&g));
	result("memory.gateway_rss_kib", (double)after);
	result("memory.kib_per_conn", (double)(after - before) / (double)n);
	close_all(&g);
	return 0;
}

/* ---- (g) replay, (h) keyframe ---- */

/* The session's program waits for one byte, writes its screen, then the
   marker (in an invisible title sequence): a controller starts it and
   waits until the screen is complete. */
static void prime(const char *sid)
{
	struct bws c = {.decode = true, .idx = -1};

	attach_one(&c, sid, "controller", -1);
	c.on_frame = tp_frame;
	bws_input(&c, "s", 1);
	if (!bws_run(tp_done, &c, 120) || !c.t_mark)
		die("the session did not print its end marker");
	bws_close(&c);
}

/* Opens every sample's connection first (a hello may take a while and
   is measured by the attach mode), then joins them one at a time: each
   sample is one join -> Keyframe on an otherwise quiet session. */
static struct group open_samples(const char *sid, size_t samples)
{
	struct group g = {calloc(samples, sizeof(struct bws)), samples};
	char *sids[] = {(char *)sid};

	open_all(&g, sids, samples, false, 0);
	return g;
}

static double join_sample(struct bws *c, int64_t back)
{
	bws_join(c, "observer", back < 0 ? -1 : (int64_t)c->hello_seq - back);
	if (!bws_run(one_keyframe, c, 30) || !c->got_keyframe)
		die(c->err[0] ? c->err : "no Keyframe in 30 s");
	bws_close(c);
	return c->t_keyframe - c->t_join;
}

static int mode_replay(const char *sid, size_t samples, int64_t back)
{
	double *t = calloc(samples, sizeof(double));
	uint64_t frames = 0;
	struct group g;

	prime(sid);
	g = open_samples(sid, samples);
	for (size_t i = 0; i < samples; i++) {
		/* The hello's current_sequence is stale once earlier samples
		   joined and left: the reference is the session's now. */
		g.c[i].hello_seq = g.c[i ? i - 1 : 0].last_seq > g.c[i].hello_seq
				       ? g.c[i ? i - 1 : 0].last_seq
				       : g.c[i].hello_seq;
		t[i] = join_sample(&g.c[i], back);
		frames = g.c[i].frames;
	}
	result("replay.frames_received", (double)frames);
	percentiles("replay.join_to_keyframe_ms", t, samples, 1e3, 0);
	return 0;
}

static int mode_keyframe(const char *sid, size_t samples)
{
	double *t = calloc(samples, sizeof(double));
	size_t bytes = 0, wire = 0;
	unsigned cells = 1;
	struct group g;

	prime(sid);
	g = open_samples(sid, samples);
	for (size_t i = 0; i < samples; i++) {
		t[i] = join_sample(&g.c[i], -1);
		/* The first join after the screen was drawn is also the one that
		   has the screen model parse the output (the sidecar feeds
		   libvterm lazily, after a quiet second or when asked). */
		if (i == 0)
			result("keyframe.first_join_ms", t[0] * 1e3);
		bytes = g.c[i].keyframe_bytes;
		wire = g.c[i].keyframe_wire_bytes;
		cells = g.c[i].keyframe_cells ? g.c[i].keyframe_cells : 1;
	}
	result("keyframe.bytes", (double)bytes);
	result("keyframe.bytes_per_cell", (double)bytes / cells);
	result("keyframe.wire_bytes", (double)wire);
	result("keyframe.wire_bytes_per_cell", (double)wire / cells);
	percentiles("keyframe.join_to_keyframe_ms", t, samples, 1e3, 0);
	return 0;
}

/* ---- baselines ---- */

/* forkpty of sh -c script, 120x30 like the sessions. */
static pid_t pty_spawn(const char *script, int *fd)
{
	struct winsize ws = {.ws_row = 30, .ws_col = 120};
	pid_t p = forkpty(fd, NULL, NULL, &ws);

	if (p < 0)
		die("forkpty");
	if (p == 0) {
		execl("/bin/sh", "sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	return p;
}

/* The plain PTY loop: the same generator as the session, read until EOF
   with 64 KiB reads, as a terminal server with no protocol would. */
static int mode_plain_throughput(const char *gen)
{
	static uint8_t b[65536];
	char script[4096];
	size_t got = 0;
	ssize_t n;
	double t0;
	int fd;
	pid_t p;

	snprintf(script, sizeof(script), "%s; printf '\\n%%s\\n' " MARKER, gen);
	t0 = bws_now();
	p = pty_spawn(script, &fd);
	while ((n = read(fd, b, sizeof(b))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			got += (size_t)n;
	result("plain.mb_s", (double)got / (bws_now() - t0) / 1e6);
	result("plain.bytes", (double)got);
	close(fd);
	waitpid(p, NULL, 0);
	return 0;
}

/* Reads fd until byte (or the READY text) arrives. */
static void pty_await(int fd, const char *what, size_t len)
{
	char b[4096];
	size_t have = 0;

	for (;;) {
		ssize_t n = read(fd, b + have, sizeof(b) - 1 - have);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			die("pty read");
		}
		have += (size_t)n;
		if (memmem(b, have, what, len))
			return;
		if (have > sizeof(b) / 2) {
			memmove(b, b + have - len, len);
			have = len;
		}
	}
}

static int mode_pty_echo(size_t samples)
{
	double *lat = calloc(samples, sizeof(double));
	int fd;
	pid_t p = pty_spawn("stty -echo -icanon min 1; dd bs=1 count=1 >/dev/null 2>&1; "
			    "printf " READY "; exec cat",
			    &fd);

	if (write(fd, "s", 1) != 1)
		die("pty write");
	pty_await(fd, READY, strlen(READY));
	for (size_t i = 0; i < samples; i++) {
		char c = (char)('g' + i % 20);
		double t0 = bws_now();

		if (write(fd, &c, 1) != 1)
			die("pty write");
		pty_await(fd, &c, 1);
		lat[i] = bws_now() - t0;
	}
	percentiles("ptyecho.us", lat, samples, 1e6, 0.010);
	kill(p, SIGKILL);
	close(fd);
	waitpid(p, NULL, 0);
	return 0;
}

static int mode_tcp_echo(size_t samples)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	double *lat = calloc(samples, sizeof(double));
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0), fd;
	char c;
	pid_t p;

	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 1) < 0 ||
	    getsockname(ls, (struct sockaddr *)&sa, &len) < 0)
		die("tcp listen");
	p = fork();
	if (p == 0) { /* the echo server: one byte back for every byte */
		int s = accept(ls, NULL, NULL);

		setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		while (read(s, &c, 1) == 1 && write(s, &c, 1) == 1)
			;
		_exit(0);
	}
	close(ls);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("tcp connect");
	for (size_t i = 0; i < samples; i++) {
		double t0 = bws_now();

		c = 'x';
		if (write(fd, &c, 1) != 1 || read(fd, &c, 1) != 1)
			die("tcp echo");
		lat[i] = bws_now() - t0;
	}
	percentiles("tcpecho.us", lat, samples, 1e6, 0.010);
	close(fd);
	waitpid(p, NULL, 0);
	return 0;
}

/* ---- main ---- */

static size_t count_arg(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (*end || !v || v > 1000000)
		die("a count must be 1 to 1000000");
	return v;
}

/* A count that may be 0 (the fan-out's observers). */
static size_t count_arg0(const char *s)
{
	return strcmp(s, "0") ? count_arg(s) : 0;
}

static int run_mode(int argc, char **argv)
{
	const char *m = argv[0];

	if (!strcmp(m, "plain-throughput") && argc == 2)
		return mode_plain_throughput(argv[1]);
	if (!strcmp(m, "pty-echo") && argc == 2)
		return mode_pty_echo(count_arg(argv[1]));
	if (!strcmp(m, "tcp-echo") && argc == 2)
		return mode_tcp_echo(count_arg(argv[1]));
	if (!strncmp(m, "onehop-", 7)) {
		onehop = true;
		result_prefix = "onehop.";
		bws_set_onehop();
		if (!strcmp(m, "onehop-echo") && argc == 2)
			return mode_echo("-", count_arg(argv[1]));
		if (!strcmp(m, "onehop-throughput") && argc == 1)
			return mode_throughput("-");
	}
	if (!strcmp(m, "attach") && argc == 3)
		return mode_attach(argv[1], count_arg(argv[2]));
	if (!strcmp(m, "echo") && argc == 3)
		return mode_echo(argv[1], count_arg(argv[2]));
	if (!strcmp(m, "throughput") && argc == 2)
		return mode_throughput(argv[1]);
	if (!strcmp(m, "fanout-observers") && argc == 5)
		return mode_fanout_observers(argv[1], count_arg0(argv[2]), argv[3],
					     count_arg(argv[4]));
	if (!strcmp(m, "fanout-echo") && argc == 4)
		return mode_fanout_echo(argv[1], argv[2], count_arg(argv[3]));
	if (!strcmp(m, "hold") && argc >= 5)
		return mode_hold(count_arg(argv[1]), count_arg(argv[2]),
				 count_arg(argv[3]), argv + 4, (size_t)argc - 4);
	if (!strcmp(m, "joins") && argc == 3)
		return mode_joins(argv[1], count_arg(argv[2]));
	if (!strcmp(m, "memory") && argc >= 4)
		return mode_memory(count_arg(argv[1]), count_arg(argv[2]), argv + 3,
				   (size_t)argc - 3);
	if (!strcmp(m, "replay") && argc == 4)
		return mode_replay(argv[1], count_arg(argv[2]),
				   (int64_t)count_arg(argv[3]));
	if (!strcmp(m, "keyframe") && argc == 3)
		return mode_keyframe(argv[1], count_arg(argv[2]));
	fprintf(stderr,
		"bench_client: unknown mode or wrong arguments: %s (see the "
		"comment at the top of bench_client.c)\n",
		m);
	return 2;
}

int main(int argc, char **argv)
{
	const char *gw = "127.0.0.1:8080", *token = getenv("PTG_BENCH_TOKEN");
	char host[64] = "127.0.0.1", *port;
	int i = 1;

	signal(SIGPIPE, SIG_IGN);
	for (; i + 1 < argc && !strncmp(argv[i], "--", 2); i += 2) {
		if (!strcmp(argv[i], "--gateway"))
			gw = argv[i + 1];
		else if (!strcmp(argv[i], "--instance"))
			instance = argv[i + 1];
		else if (!strcmp(argv[i], "--token"))
			token = argv[i + 1];
		else if (!strcmp(argv[i], "--gateway-pid"))
			gateway_pid = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--sidecar-pid"))
			sidecar_pid = atol(argv[i + 1]);
		else
			break;
	}
	if (i >= argc)
		die("usage: bench_client [--gateway HOST:PORT] [--instance ID] [--token "
		    "T] "
		    "[--gateway-pid P] [--sidecar-pid P] MODE ARGS...");
	snprintf(host, sizeof(host), "%s", gw);
	port = strrchr(host, ':');
	if (!port)
		die("--gateway must be HOST:PORT");
	*port++ = '\0';
	bws_setup(host, port, token);
	return run_mode(argc - i, argv + i);
}
