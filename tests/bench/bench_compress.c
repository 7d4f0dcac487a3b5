/* bench_compress: what compressing one session frame costs the gateway,
   the way it does it (pmd_deflate: libdeflate, then the Z_BLOCK walk
   that shapes the body as a sync flush), against zlib's deflate with
   Z_SYNC_FLUSH from a state reset per frame (the gateway's way before),
   side by side in one invocation.

   The frames are real pty.session_frame messages (frames.c: JSON, the
   output base64) of bench_data's workloads, cut into frames of 4 KiB
   and 32 KiB of output (what a paced stream and a flood make). For each
   workload, frame size, level (6, and 1: the budget's flood level; or
   --levels) and coder: CPU ms per MB of frame bytes, the median of
   PASSES passes over 1 MiB of output with its min-max, and wire bytes
   per frame byte. The passes alternate between the coders. libdeflate's
   stream as it comes (which Chromium refuses) is timed too: the rest of
   pmd_deflate's time is the walk that reshapes it.

     build-release/tests/bench/bench_compress [--levels L,...] [workload ...]

   Workloads: BENCH_DATA_WORKLOADS (all of them by default). */
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zlib.h>

#include "bench_data.h"
#include "buf.h"
#include "frames.h"
#include "link.pb-c.h"
#include "pmd.h"

#define OUTPUT_BYTES (1 << 20)
#define PASSES	     7

struct frames {
	struct buf *frame; /* one JSON text per frame */
	size_t count, bytes;
};

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int make_frames(const char *workload, size_t per_frame, struct frames *fr)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	Ptg__Frame frame = PTG__FRAME__INIT;
	Ptg__OutputFrame o = PTG__OUTPUT_FRAME__INIT;

	if (!f || bench_data_write(f, workload, OUTPUT_BYTES) < 0) {
		if (f)
			fclose(f);
		free(out);
		return -1;
	}
	fclose(f);
	fr->count = (len + per_frame - 1) / per_frame;
	fr->frame = calloc(fr->count, sizeof(*fr->frame));
	fr->bytes = 0;
	frame.kind_case = PTG__FRAME__KIND_OUTPUT;
	frame.output = &o;
	for (size_t i = 0; i < fr->count; i++) {
		size_t at = i * per_frame;

		o.data.data = (uint8_t *)out + at;
		o.data.len = len - at < per_frame ? len - at : per_frame;
		frame.sequence = i + 1;
		frames_session_frame(&frame, "01890a5d-ac96-774b-bcce-b302099a8057",
				     1700000000000 + (int64_t)i, &fr->frame[i]);
		fr->bytes += buf_size(&fr->frame[i]);
	}
	free(out);
	return 0;
}

static void free_frames(struct frames *fr)
{
	for (size_t i = 0; i < fr->count; i++)
		buf_free(&fr->frame[i]);
	free(fr->frame);
}

/* The gateway's coder before libdeflate: one state, reset per frame,
   Z_SYNC_FLUSH, the 00 00 ff ff dropped. */
static size_t zlib_frame(int level, const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	static z_stream z[10];
	static int ready[10];

	if (!ready[level]) {
		if (deflateInit2(&z[level], level, Z_DEFLATED, -15, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK)
			abort();
		ready[level] = 1;
	}
	deflateReset(&z[level]);
	z[level].next_in = (Bytef *)in;
	z[level].avail_in = (uInt)n;
	z[level].next_out = out;
	z[level].avail_out = (uInt)cap;
	if (deflate(&z[level], Z_SYNC_FLUSH) != Z_OK || z[level].avail_in)
		return 0;
	return cap - z[level].avail_out - 4;
}

/* libdeflate alone, its stream as it comes (the final block marked,
   which Chromium refuses): what the Z_BLOCK walk adds is the rest. */
static size_t libdeflate_alone(int level, const uint8_t *in, size_t n, uint8_t *out,
			       size_t cap)
{
	static struct libdeflate_compressor *c[13];

	if (!c[level] && !(c[level] = libdeflate_alloc_compressor(level)))
		abort();
	return libdeflate_deflate_compress(c[level], in, n, out, cap);
}

typedef size_t (*coder)(int, const uint8_t *, size_t, uint8_t *, size_t);

/* One pass over every frame; returns its CPU ms, adds the wire bytes. */
static double pass(coder c, int level, const struct frames *fr, uint8_t *out, size_t cap,
		   size_t *wire)
{
	double t0 = cpu_ms();

	*wire = 0;
	for (size_t i = 0; i < fr->count; i++) {
		size_t n = buf_size(&fr->frame[i]);
		size_t z = c(level, buf_head(&fr->frame[i]), n, out, cap);

		*wire += z ? z : n; /* no gain: the gateway sends it plain */
	}
	return cpu_ms() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void row(const char *workload, size_t per_frame, int level,
		const struct frames *fr)
{
	static const char *const names[3] = {"zlib (before)", "pmd_deflate",
					     "libdeflate alone"};
	coder coders[3] = {zlib_frame, pmd_deflate, libdeflate_alone};
	double ms[3][PASSES], ratio[PASSES];
	size_t cap = 2 * (1 << 20), wire[3] = {0, 0, 0};
	uint8_t *out = malloc(cap);

	for (int p = 0; p < PASSES; p++) {
		for (int k = 0; k < 3; k++) {
			int which = p % 2 ? 2 - k : k; /* alternating order */

			ms[which][p] =
			    pass(coders[which], level, fr, out, cap, &wire[which]);
		}
		ratio[p] = ms[1][p] / ms[0][p];
	}
	for (int k = 0; k < 3; k++) {
		qsort(ms[k], PASSES, sizeof(double), cmp_double);
		printf("| %s | %zu KiB | %d | %s | %.1f (%.1f-%.1f) | %.3f |\n", workload,
		       per_frame >> 10, level, names[k],
		       ms[k][PASSES / 2] * 1e6 / fr->bytes, ms[k][0] * 1e6 / fr->bytes,
		       ms[k][PASSES - 1] * 1e6 / fr->bytes, (double)wire[k] / fr->bytes);
	}
	qsort(ratio, PASSES, sizeof(double), cmp_double);
	printf("| %s | %zu KiB | %d | pmd_deflate / zlib, median of passes | %.2fx "
	       "(%.2f-%.2f) "
	       "| %.2fx |\n",
	       workload, per_frame >> 10, level, ratio[PASSES / 2], ratio[0],
	       ratio[PASSES - 1], (double)wire[1] / wire[0]);
	free(out);
}

/* libdeflate's levels, and so the most --levels may list. */
#define LEVEL_MAX 12

/* Parses "6,1" into levels (1 to LEVEL_MAX); returns how many, or -1. */
static int parse_levels(const char *s, int *levels, int max)
{
	int n = 0;

	while (*s && n < max) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s || v < 1 || v > LEVEL_MAX || (*end && *end != ','))
			return -1;
		levels[n++] = (int)v;
		s = *end ? end + 1 : end;
	}
	return *s || n == 0 ? -1 : n;
}

int main(int argc, char **argv)
{
	static const char *const all[] = {"hex", "long", "tui", "random"};
	static const size_t sizes[] = {4096, 32768};
	int levels[LEVEL_MAX] = {6, 1}, nlevels = 2, first = 1;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: bench_compress [--levels L,...] [workload ...]\n"
		       "levels: 1 to %d (default 6,1)\nworkloads: %s\n",
		       LEVEL_MAX, BENCH_DATA_WORKLOADS);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--levels")) {
		nlevels = argc > 2 ? parse_levels(argv[2], levels, LEVEL_MAX) : -1;
		if (nlevels < 0) {
			fprintf(stderr,
				"bench_compress: --levels %s: want levels 1-%d, "
				"comma-separated\n",
				argc > 2 ? argv[2] : "(missing)", LEVEL_MAX);
			return 2;
		}
		first = 3;
	}
	const char *const *names = argc > first ? (const char *const *)argv + first : all;
	int count = argc > first ? argc - first : 4;

	printf("| workload | output per frame | level | coder | CPU ms per MB of frames, "
	       "median (min-max) of %d | wire bytes per frame byte "
	       "|\n|---|---|---|---|---|---|\n",
	       PASSES);
	for (int w = 0; w < count; w++) {
		for (size_t s = 0; s < 2; s++) {
			struct frames fr;

			if (make_frames(names[w], sizes[s], &fr) < 0) {
				fprintf(stderr,
					"bench_compress: unknown workload %s (%s)\n",
					names[w], BENCH_DATA_WORKLOADS);
				return 2;
			}
			for (int l = 0; l < nlevels; l++)
				row(names[w], sizes[s], levels[l], &fr);
			free_frames(&fr);
		}
	}
	return 0;
}
