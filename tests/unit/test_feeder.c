/* unit: sidecar */
/* The feeder hands a session's output to a background thread for the
   screen model. It must leave the screen exactly as feeding every byte
   on the loop would (at every sync, whatever the thread was doing), feed
   floods off the loop and lone keystrokes on it, keep what waits beside a
   batch bounded, and let a feeder go while the thread holds its batch. */
#include "../../sidecar/feeder.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "buf.h"
#include "screen.h"
#define HELP_SCREEN_SEED 2026u
#include "help_screen.h"

/* ---- what the test reads of feeder.c, which it includes ---- */

/* The feeder's counters, thread_bytes as the thread has counted it. */
static void feeder_stats(const struct feeder *f, struct feeder_stats *out)
{
	*out = f->st;
	out->thread_bytes = atomic_load_explicit(&f->thread_bytes, memory_order_relaxed);
}

/* The most output of all feeders together that has waited for the model,
   as seen when a batch was handed over or found busy. */
static size_t feeder_total_peak(void)
{
	return total_peak;
}

/* The thread takes no batch from now until the loop has to wait for one
   (past FEEDER_PENDING_MAX or FEEDER_TOTAL_MAX), as if the model were
   slower than any output, whatever the scheduler does; feeder_sync and
   feeder_free meanwhile take a held batch back and feed it here. */
static void feeder_hold_until_wait(void)
{
	workq_hold(the_queue());
}

static void random_bytes(struct buf *out, size_t n)
{
	uint8_t *p = buf_reserve(out, n);

	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)next_rand();
	buf_commit(out, n);
}

/* Full-screen redraws: cursor addressing, colours, text. */
static void tui_frames(struct buf *out, size_t frames, unsigned cols, unsigned rows)
{
	for (size_t f = 0; f < frames; f++) {
		buf_appendf(out, "\x1b[H\x1b[3%um", (unsigned)(f % 8));
		for (unsigned r = 1; r <= rows; r++) {
			buf_appendf(out, "\x1b[%u;1H\x1b[4%um", r,
				    (unsigned)(next_rand() % 8));
			for (unsigned c = 0; c < cols; c++)
				buf_append(out, &"abcdefghij"[(f + r + c) % 10], 1);
		}
	}
}

static void lines(struct buf *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf_appendf(out, "%08zx: %u %u %u\r\n", i, next_rand(), next_rand(),
			    next_rand());
}

/* in goes through a feeder in random chunks, kicked now and then, and
   through screen_feed on a reference; the screens are compared at random
   sync points and at the end. */
static void compare_stream(const struct buf *in, unsigned cols, unsigned rows)
{
	struct screen *s = screen_new(cols, rows), *ref = screen_new(cols, rows);
	struct feeder *f = feeder_new(s);
	size_t off = 0, fed_ref = 0;
	int64_t now_ms = 1;

	while (off < buf_size(in)) {
		size_t n = 1 + next_rand() % 70000;

		if (n > buf_size(in) - off)
			n = buf_size(in) - off;
		feeder_append(f, buf_head(in) + off, n);
		off += n;
		/* Some kicks come within FEEDER_KICK_GAP_MS and wait. */
		now_ms += next_rand() % (2 * FEEDER_KICK_GAP_MS);
		if (next_rand() % 3 == 0)
			feeder_kick(f, now_ms);
		if (next_rand() % 40 == 0 || off == buf_size(in)) {
			feeder_sync(f);
			assert_int_equal(feeder_unsynced(f), 0);
			screen_feed(ref, buf_head(in) + fed_ref, off - fed_ref);
			fed_ref = off;
			assert_same_screen(s, ref);
		}
	}
	feeder_free(f);
	screen_free(s);
	screen_free(ref);
}

static void test_same_screen_as_feeding_on_the_loop(void **state)
{
	struct buf in = BUF_INIT;

	(void)state;
	random_bytes(&in, 3u << 20);
	compare_stream(&in, 80, 24);
	buf_reset(&in);
	tui_frames(&in, 400, 120, 30);
	compare_stream(&in, 120, 30);
	buf_reset(&in);
	lines(&in, 100000);
	compare_stream(&in, 100, 40);
	buf_free(&in);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits (at most 10 s) until the thread has fed `bytes` in all. */
static void await_thread_bytes(struct feeder *f, uint64_t bytes)
{
	struct feeder_stats st;
	double end = now_s() + 10;

	do {
		feeder_stats(f, &st);
		if (st.thread_bytes >= bytes)
			return;
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	} while (now_s() < end);
	fail_msg("the thread fed %llu of %llu bytes in 10 s",
		 (unsigned long long)st.thread_bytes, (unsigned long long)bytes);
}

/* A flood read in 64 KiB batches, the PTY running dry after each, is fed
   by the thread, each kick asking to come back. Once the PTY runs dry
   with next to nothing waiting, the thread feeds what it held back of
   the flood with it, and the model is up to date before any join. A
   lone keystroke's echo after that stays for the next sync. */
static void test_floods_off_the_loop_keystrokes_on_it(void **state)
{
	struct screen *s = screen_new(120, 30), *ref = screen_new(120, 30);
	struct feeder *f = feeder_new(s);
	struct feeder_stats st;
	struct buf in = BUF_INIT;
	size_t flood;

	(void)state;
	lines(&in, 40000);
	flood = buf_size(&in) / 65536 * 65536;
	for (size_t off = 0; off < flood; off += 65536) {
		feeder_append(f, buf_head(&in) + off, 65536);
		assert_int_equal(feeder_kick(f, 1 + (int64_t)off), FEEDER_KICK_GAP_MS);
		await_thread_bytes(f, off + 65536);
	}
	/* Each batch's last screen waited for the next batch, which left it
	   out: libvterm was fed about one screen in all (1.6 KB), not one a
	   batch (36 KB, 2% of the flood, before batches held their end). */
	workq_wait_idle(the_queue(), &f->item);
	assert_true(buf_size(&f->carry) > 0);
	feeder_append(f, (const uint8_t *)"x", 1);
	assert_int_equal(feeder_kick(f, 1 + (int64_t)flood), 0);
	workq_wait_idle(the_queue(), &f->item);
	assert_int_equal(buf_size(&f->carry), 0);
	assert_true(screen_vterm_bytes(s) < flood / 200);
	screen_feed(ref, buf_head(&in), flood);
	screen_feed(ref, (const uint8_t *)"x", 1);
	assert_same_screen(s, ref);

	feeder_append(f, (const uint8_t *)"y", 1);
	assert_int_equal(feeder_kick(f, 2 + (int64_t)flood), 0);
	feeder_sync(f);
	feeder_stats(f, &st);
	assert_int_equal(st.thread_bytes, flood + 1);
	assert_int_equal(st.loop_bytes, 1);
	feeder_free(f);
	screen_free(s);
	screen_free(ref);
	buf_free(&in);
}

/* The end of a flood test: s (fed through f) must show what ref shows
   after a plain feed of in's first n bytes; everything is freed. */
static void check_and_free(struct feeder *f, struct screen *s, struct screen *ref,
			   struct buf *in, size_t n)
{
	screen_feed(ref, buf_head(in), n);
	assert_same_screen(s, ref);
	feeder_free(f);
	screen_free(s);
	screen_free(ref);
	buf_free(in);
}

/* Appends in[*off..+n) and kicks at now; returns what the kick asked
   for, once the thread has fed what it was given. */
static int64_t append_kick(struct feeder *f, const struct buf *in, size_t *off, size_t n,
			   int64_t now)
{
	int64_t again;

	feeder_append(f, buf_head(in) + *off, n);
	*off += n;
	again = feeder_kick(f, now);
	workq_wait_idle(the_queue(), &f->item);
	return again;
}

/* A flood runs dry every few reads, often right after a batch was handed
   over with a few bytes waiting, and its program may leave the PTY empty
   for a few ms while it waits for a core. The first such moment looks
   like output stopping, and the end the thread held back is fed; once
   output resumes that soon, the end stays held at every pause (fed
   there, it cost libvterm a screen of the flood each time), until
   FEEDER_QUIET_MS without output. */
static void test_pauses_of_a_flood_hold_the_end(void **state)
{
	struct screen *s = screen_new(120, 30), *ref = screen_new(120, 30);
	struct feeder *f = feeder_new(s);
	struct buf in = BUF_INIT;
	size_t off = 0;
	int64_t now = 1;
	bool first = true;

	(void)state;
	lines(&in, 40000);
	while (off + 65536 + 100 <= buf_size(&in)) {
		assert_int_equal(append_kick(f, &in, &off, 65536, now),
				 FEEDER_KICK_GAP_MS);
		/* Dry with a few bytes waiting, then dry with none. */
		now += FEEDER_KICK_GAP_MS;
		if (first) {
			/* looks stopped */
			assert_int_equal(append_kick(f, &in, &off, 100, now), 0);
			first = false;
		} else {
			assert_int_equal(append_kick(f, &in, &off, 100, now),
					 FEEDER_QUIET_MS);
			assert_int_equal(feeder_kick(f, now + FEEDER_KICK_GAP_MS),
					 FEEDER_QUIET_MS - FEEDER_KICK_GAP_MS);
			assert_true(buf_size(&f->carry) > 0);
		}
		now += FEEDER_KICK_GAP_MS;
	}
	/* Quiet for FEEDER_QUIET_MS since the last output: stopped. */
	assert_int_equal(feeder_kick(f, now - FEEDER_KICK_GAP_MS + FEEDER_QUIET_MS), 0);
	workq_wait_idle(the_queue(), &f->item);
	assert_int_equal(buf_size(&f->carry), 0);
	assert_true(screen_vterm_bytes(s) < off / 200);
	check_and_free(f, s, ref, &in, off);
}

/* A flood that paused is over once output has stopped for
   FEEDER_QUIET_MS, even when a Keyframe's sync fed its held end before
   a kick could: a screen drawn at once later is fed as soon as it
   stops, so a join right after it finds the model up to date. */
static void test_a_screen_after_a_flood_is_fed_at_once(void **state)
{
	struct screen *s = screen_new(120, 30), *ref = screen_new(120, 30);
	struct feeder *f = feeder_new(s);
	struct buf in = BUF_INIT;
	size_t off = 0;

	(void)state;
	lines(&in, 20000);
	assert_true(buf_size(&in) >= 3 * 65536 + 3 * 100);
	/* A flood that looked stopped at 6 and went on at 11: flooding. */
	assert_int_equal(append_kick(f, &in, &off, 65536, 1), FEEDER_KICK_GAP_MS);
	assert_int_equal(append_kick(f, &in, &off, 100, 6), 0);
	assert_int_equal(append_kick(f, &in, &off, 65536, 11), FEEDER_KICK_GAP_MS);
	assert_int_equal(append_kick(f, &in, &off, 100, 16), FEEDER_QUIET_MS);
	feeder_sync(f); /* a Keyframe: the held end fed here */
	assert_int_equal(buf_size(&f->carry), 0);
	/* 100 ms later, a screen drawn at once. */
	assert_int_equal(append_kick(f, &in, &off, 65536, 116), FEEDER_KICK_GAP_MS);
	assert_true(buf_size(&f->carry) > 0);
	assert_int_equal(append_kick(f, &in, &off, 100, 121), 0);
	assert_int_equal(buf_size(&f->carry), 0);
	check_and_free(f, s, ref, &in, off);
}

/* A flood's dry moments come every few reads: past a burst, a kick within
   FEEDER_KICK_GAP_MS of the last hands nothing over and says when to
   kick again; the kick then hands everything that waited. A kick that
   hands a batch over asks to come back FEEDER_KICK_GAP_MS later. */
static void test_kicks_past_the_burst_wait(void **state)
{
	struct screen *s = screen_new(80, 24), *ref = screen_new(80, 24);
	struct feeder *f = feeder_new(s);
	struct feeder_stats st;
	struct buf in = BUF_INIT;
	const size_t chunk = 16384, burst = FEEDER_KICK_BURST;
	const int64_t t0 = 5000;
	size_t off = 0;

	(void)state;
	lines(&in, 8000);
	for (; off < burst * chunk; off += chunk) {
		feeder_append(f, buf_head(&in) + off, chunk);
		assert_int_equal(feeder_kick(f, t0 + 1), FEEDER_KICK_GAP_MS);
		await_thread_bytes(f, off + chunk);
	}
	feeder_append(f, buf_head(&in) + off, chunk);
	assert_int_equal(feeder_kick(f, t0 + 2), FEEDER_KICK_GAP_MS - 1);
	feeder_append(f, buf_head(&in) + off + chunk, chunk);
	assert_int_equal(feeder_kick(f, t0 + FEEDER_KICK_GAP_MS), 1);
	feeder_stats(f, &st);
	assert_int_equal(st.thread_bytes, burst * chunk);
	assert_int_equal(feeder_kick(f, t0 + 1 + FEEDER_KICK_GAP_MS), FEEDER_KICK_GAP_MS);
	await_thread_bytes(f, off + 2 * chunk);
	off += 2 * chunk;
	feeder_append(f, buf_head(&in) + off, buf_size(&in) - off);
	feeder_sync(f);
	check_and_free(f, s, ref, &in, buf_size(&in));
}

/* Output appended faster than the model takes it waits beside the
   thread's batch up to FEEDER_PENDING_MAX, never more: there the loop
   waits for the thread; nothing is lost on the way. The thread is held
   until the loop waits, so the bound is reached on any machine (left to
   the scheduler, a thread that fed as fast as the loop copied never let
   it). */
static void test_pending_output_is_bounded(void **state)
{
	struct screen *s = screen_new(120, 30), *ref = screen_new(120, 30);
	struct feeder *f = feeder_new(s);
	struct feeder_stats st;
	struct buf in = BUF_INIT;

	(void)state;
	tui_frames(&in, 5000, 120, 30);
	assert_true(buf_size(&in) > FEEDER_HANDOFF + FEEDER_PENDING_MAX + 65536);
	feeder_hold_until_wait();
	for (size_t off = 0; off < buf_size(&in); off += 65536) {
		size_t n = buf_size(&in) - off < 65536 ? buf_size(&in) - off : 65536;
		feeder_append(f, buf_head(&in) + off, n);
	}
	feeder_sync(f);
	feeder_stats(f, &st);
	/* The bound was reached, and it held. */
	assert_true(st.waits >= 1);
	assert_true(st.pending_peak >= FEEDER_PENDING_MAX);
	assert_true(st.pending_peak < FEEDER_PENDING_MAX + 65536);
	assert_int_equal(st.thread_bytes + st.loop_bytes, buf_size(&in));
	check_and_free(f, s, ref, &in, buf_size(&in));
}

/* Many sessions flooding at once share the one thread: what waits for
   the model, all sessions together, stays near FEEDER_TOTAL_MAX (each
   session may pass it by what it hands over before it finds the thread
   busy), far below what each session's own bound would allow. */
static void test_all_sessions_together_are_bounded(void **state)
{
	enum { N = 12, CHUNK = 65536 };
	struct screen *s[N], *ref = screen_new(120, 30);
	struct feeder *f[N];
	struct buf in = BUF_INIT;
	size_t bound = FEEDER_TOTAL_MAX + N * (size_t)(FEEDER_HANDOFF + CHUNK);

	(void)state;
	tui_frames(&in, 1500, 120, 30);
	for (int i = 0; i < N; i++) {
		s[i] = screen_new(120, 30);
		f[i] = feeder_new(s[i]);
	}
	for (size_t off = 0; off < buf_size(&in); off += CHUNK) {
		size_t n = buf_size(&in) - off < CHUNK ? buf_size(&in) - off : CHUNK;
		for (int i = 0; i < N; i++)
			feeder_append(f[i], buf_head(&in) + off, n);
	}
	if (feeder_total_peak() >= bound)
		fail_msg("%zu bytes waited for the model at once (bound %zu)",
			 feeder_total_peak(), bound);
	screen_feed(ref, buf_head(&in), buf_size(&in));
	for (int i = 0; i < N; i++) {
		feeder_sync(f[i]);
		assert_same_screen(s[i], ref);
		feeder_free(f[i]);
		screen_free(s[i]);
	}
	screen_free(ref);
	buf_free(&in);
}

/* Sessions end while the thread holds their batch, queued or being fed:
   each feeder goes (and its screen after it) without a use after free
   or a leak (the sanitizer build runs this). */
static void test_free_while_the_thread_holds_a_batch(void **state)
{
	enum { N = 8 };
	struct screen *s[N];
	struct feeder *f[N];
	struct buf in = BUF_INIT;

	(void)state;
	random_bytes(&in, 1u << 20);
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < N; i++) {
			s[i] = screen_new(80, 24);
			f[i] = feeder_new(s[i]);
			feeder_append(f[i], buf_head(&in), buf_size(&in));
		}
		for (int i = N - 1; i >= 0; i--) {
			feeder_free(f[i]);
			screen_free(s[i]);
		}
	}
	buf_free(&in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_screen_as_feeding_on_the_loop),
	    cmocka_unit_test(test_floods_off_the_loop_keystrokes_on_it),
	    cmocka_unit_test(test_kicks_past_the_burst_wait),
	    cmocka_unit_test(test_pauses_of_a_flood_hold_the_end),
	    cmocka_unit_test(test_a_screen_after_a_flood_is_fed_at_once),
	    cmocka_unit_test(test_pending_output_is_bounded),
	    cmocka_unit_test(test_all_sessions_together_are_bounded),
	    cmocka_unit_test(test_free_while_the_thread_holds_a_batch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
