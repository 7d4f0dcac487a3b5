/* bench_screen: the screen model alone (screen_feed_tail, as the
   sidecar's feeder thread runs it), without the PTY, the link or the
   kernel around it, whose noise on a shared machine hides the model's
   share in bench_sidecar.

   Usage: bench_screen [workload (hex)] [MiB (64)] [batch KiB] [runs (9)]

   The workload is bench_sidecar's (bench_data.h), with each line feed
   made CR LF as the PTY's line discipline does. Each run feeds all of it
   to a fresh 120x30 model in batches of `batch` KiB (default: the
   feeder's hand-over, FEEDER_HANDOFF; a feeder that falls behind hands
   over larger batches) and is timed by the thread's CPU clock. Reported:
   ms of CPU per MB (median, min, max of the runs) and the share of the
   bytes the model handed to libvterm. To compare two builds, run both
   binaries in turn a few times and compare medians and minimums. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_data.h"
#include "bench_proc.h"
#include "buf.h"
#include "feeder.h"
#include "screen.h"

#define BENCH_RUNS_MAX 99

/* The workload as the PTY hands it on: LF becomes CR LF. */
static int load(struct buf *out, const char *w, size_t bytes)
{
	char *raw = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&raw, &len);
	int r;

	if (!f)
		return -1;
	r = bench_data_write(f, w, bytes);
	fclose(f);
	for (size_t i = 0; r == 0 && i < len; i++) {
		if (raw[i] == '\n')
			buf_append(out, "\r", 1);
		buf_append(out, raw + i, 1);
	}
	free(raw);
	return r;
}

/* One run: CPU seconds to feed p[0..n) and bring the model up to all of
   it (as a Keyframe's sync does; *sync_s gets that last step's share,
   which a join right after the flood would wait for); *vterm gets
   libvterm's bytes. With hold false, each batch is fed whole
   (screen_feed_tail). */
static double run(const uint8_t *p, size_t n, size_t batch, bool hold, uint64_t *vterm,
		  double *sync_s)
{
	struct screen *s = screen_new(120, 30);
	struct buf carry = BUF_INIT;
	double t0 = bench_thread_cpu_s(), t, t_sync;

	for (size_t off = 0; off < n; off += batch) {
		size_t k = n - off < batch ? n - off : batch;

		if (hold)
			screen_feed_carried(s, &carry, p + off, k, FEEDER_HOLD_MAX);
		else
			screen_feed_tail(s, p + off, k);
	}
	t_sync = bench_thread_cpu_s();
	screen_feed_tail(s, buf_head(&carry), buf_size(&carry));
	t = bench_thread_cpu_s() - t0;
	*sync_s = bench_thread_cpu_s() - t_sync;
	*vterm = screen_vterm_bytes(s);
	screen_free(s);
	buf_free(&carry);
	return t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static unsigned long arg_or(int argc, char **argv, int i, unsigned long dflt,
			    unsigned long max)
{
	char *end;
	unsigned long v;

	if (argc <= i)
		return dflt;
	v = strtoul(argv[i], &end, 10);
	if (*end || v == 0 || v > max) {
		fprintf(stderr, "bench_screen: %s: a number from 1 to %lu\n", argv[i],
			max);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	const char *w = argc > 1 ? argv[1] : "hex";
	size_t mib = arg_or(argc, argv, 2, 64, 4096);
	size_t batch = arg_or(argc, argv, 3, FEEDER_HANDOFF >> 10, 1u << 20) << 10;
	unsigned runs = (unsigned)arg_or(argc, argv, 4, 9, BENCH_RUNS_MAX);
	double t[BENCH_RUNS_MAX], sync[BENCH_RUNS_MAX], mb;
	struct buf data = BUF_INIT;
	uint64_t vterm = 0;
	const char *hold_env = getenv("PTG_BENCH_HOLD");
	bool hold = !hold_env || strcmp(hold_env, "0") != 0;

	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		printf("usage: bench_screen [workload] [MiB] [batch KiB] [runs]\n"
		       "workloads: %s\n",
		       BENCH_DATA_WORKLOADS);
		return 0;
	}
	if (load(&data, w, mib << 20) < 0) {
		fprintf(stderr, "bench_screen: workload: %s\n", BENCH_DATA_WORKLOADS);
		return 2;
	}
	mb = (double)buf_size(&data) / 1e6;
	for (unsigned i = 0; i < runs; i++)
		t[i] =
		    run(buf_head(&data), buf_size(&data), batch, hold, &vterm, &sync[i]);
	qsort(t, runs, sizeof(t[0]), cmp_double);
	qsort(sync, runs, sizeof(sync[0]), cmp_double);
	printf("%s, %.1f MB in %zu KiB batches%s, %u runs: %.2f ms of CPU per MB "
	       "(min %.2f, max %.2f); libvterm fed %.1f%% of the bytes; the sync "
	       "after the last batch %.2f ms (max %.2f)\n",
	       w, mb, batch >> 10, hold ? "" : " (none held back)", runs,
	       t[runs / 2] * 1e3 / mb, t[0] * 1e3 / mb, t[runs - 1] * 1e3 / mb,
	       100.0 * (double)vterm / (double)buf_size(&data), sync[runs / 2] * 1e3,
	       sync[runs - 1] * 1e3);
	buf_free(&data);
	return 0;
}
