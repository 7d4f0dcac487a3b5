/* unit: sidecar */
/* gather: a lone read (an echo, an answer to input, the first after a
   pause) goes at once; a stream's reads are held until GATHER_MIN bytes
   or GATHER_WAIT_US; every byte goes out once, in order, in spans of at
   most GATHER_MAX. The clock is the test's. */
#include "../../sidecar/gather.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"

#define T0 1000000 /* any start: the clock is the caller's */

struct sink {
	struct buf out;	  /* every emitted byte, in order */
	size_t spans[64]; /* the length of each emit */
	int n;
	struct gather *g; /* flushed from inside emit when reenter is set */
	int reenter;
};

static void emit(void *user, const uint8_t *p, size_t n)
{
	struct sink *k = user;

	assert_true(n > 0 && n <= GATHER_MAX);
	buf_append(&k->out, p, n);
	if (k->n < 64)
		k->spans[k->n] = n;
	k->n++;
	if (k->reenter)
		gather_flush(k->g);
}

struct fixture {
	struct gather g;
	struct sink k;
	uint8_t data[2 << 20]; /* what the "PTY" produces, in order */
	size_t fed;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	for (size_t i = 0; i < sizeof(f->data); i++)
		f->data[i] = (uint8_t)(i * 7 + i / 251);
	buf_init(&f->k.out);
	f->k.g = &f->g;
	gather_init(&f->g, emit, &f->k);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	gather_free(&f->g);
	buf_free(&f->k.out);
	free(f);
	return 0;
}

/* The next n bytes of the data, read at t. */
static int64_t take(struct fixture *f, size_t n, int64_t t)
{
	int64_t due = gather_take(&f->g, f->data + f->fed, n, t);

	f->fed += n;
	return due;
}

/* What was emitted is exactly what was fed up to `upto`, in order. */
static void assert_emitted(const struct fixture *f, size_t upto)
{
	assert_int_equal(buf_size(&f->k.out), upto);
	assert_memory_equal(buf_head(&f->k.out), f->data, upto);
}

static void test_a_lone_read_goes_at_once(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(take(f, 1, T0), 0);
	assert_int_equal(f->k.n, 1);
	assert_emitted(f, 1);
	/* The next, well after: a new burst, at once too. */
	assert_int_equal(take(f, 3000, T0 + GATHER_STREAM_US), 0);
	assert_int_equal(f->k.n, 2);
	assert_emitted(f, 3001);
	assert_false(gather_holding(&f->g));
}

static void test_a_stream_is_joined_up_to_the_minimum(void **state)
{
	struct fixture *f = *state;
	int64_t t = T0;

	take(f, 4096, t); /* the first of the burst: at once */
	assert_int_equal(f->k.n, 1);
	for (size_t held = 4096; held < GATHER_MIN; held += 4096) {
		t += 300;
		/* Held: due GATHER_WAIT_US after the first held read. */
		assert_int_equal(take(f, 4096, t), T0 + 300 + GATHER_WAIT_US - t);
		assert_int_equal(f->k.n, 1);
	}
	t += 300;
	assert_int_equal(take(f, 4096, t), 0); /* GATHER_MIN held: out */
	assert_int_equal(f->k.n, 2);
	assert_int_equal(f->k.spans[1], GATHER_MIN);
	assert_emitted(f, 4096 + GATHER_MIN);
}

static void test_the_deadline_flushes(void **state)
{
	struct fixture *f = *state;

	take(f, 2000, T0);
	assert_int_equal(take(f, 2000, T0 + 100), GATHER_WAIT_US);
	assert_true(gather_holding(&f->g));
	gather_flush(&f->g); /* the caller's timer */
	assert_int_equal(f->k.n, 2);
	assert_emitted(f, 4000);
	/* A stream read past the deadline (the timer late) goes with what
	   is held, at once. */
	take(f, 100, T0 + 1000);
	assert_int_equal(take(f, 100, T0 + 1000 + GATHER_WAIT_US + 1), 0);
	assert_emitted(f, 4200);
}

static void test_output_after_input_goes_at_once(void **state)
{
	struct fixture *f = *state;
	int64_t t = T0 + 200;

	take(f, 4096, T0);
	assert_true(take(f, 4096, T0 + 100) > 0);
	gather_input(&f->g, T0 + 150); /* a keystroke in the middle of the stream */
	assert_int_equal(take(f, 1, t), 0);
	/* The held bytes and the echo, together, in order. */
	assert_int_equal(f->k.n, 2);
	assert_int_equal(f->k.spans[1], 4097);
	/* The stream goes on: every read goes at once while the answer may
	   still be coming (its bytes within GATHER_ANSWER_MAX), then the
	   stream is gathered again. */
	for (; t + 100 < T0 + 150 + GATHER_AFTER_INPUT_US; t += 100)
		assert_int_equal(take(f, 50, t + 100), 0);
	assert_true(f->g.answered < GATHER_ANSWER_MAX);
	assert_int_equal(buf_size(&f->k.out), f->fed);
	assert_true(take(f, 100, T0 + 150 + GATHER_AFTER_INPUT_US) > 0);
	gather_flush(&f->g);
	assert_emitted(f, f->fed);
}

/* `ls -lR` and Enter: the flood the input started goes at once only
   up to GATHER_ANSWER_MAX; after that its reads are joined as any
   stream's, though the input was only a moment ago. */
static void test_a_flood_after_input_is_joined_past_the_answer(void **state)
{
	struct fixture *f = *state;
	int64_t t = T0;
	int at_once;

	gather_input(&f->g, t);
	for (size_t sent = 0; sent < GATHER_ANSWER_MAX; sent += 4096)
		assert_int_equal(take(f, 4096, t += 100), 0);
	at_once = f->k.n;
	assert_int_equal(at_once, GATHER_ANSWER_MAX / 4096);
	/* Still well within GATHER_AFTER_INPUT_US of the input. */
	for (size_t held = 0; held + 4096 < GATHER_MIN; held += 4096)
		assert_true(take(f, 4096, t += 100) > 0);
	assert_int_equal(f->k.n, at_once);
	assert_true(t - T0 < GATHER_AFTER_INPUT_US / 2);
	assert_int_equal(take(f, 4096, t += 100), 0);
	assert_int_equal(f->k.n, at_once + 1);
	assert_int_equal(f->k.spans[at_once], GATHER_MIN);
	/* The next input opens a new answer. */
	gather_input(&f->g, t += 100);
	assert_int_equal(take(f, 10, t += 100), 0);
	assert_int_equal(f->k.n, at_once + 2);
	assert_emitted(f, f->fed);
}

static void test_spans_never_pass_the_maximum(void **state)
{
	struct fixture *f = *state;

	take(f, 1000, T0);
	take(f, GATHER_MIN - 1000, T0 + 10); /* held, just under */
	assert_true(gather_holding(&f->g));
	/* A full read does not fit beside it: the held go first, alone. */
	assert_int_equal(take(f, GATHER_MAX, T0 + 20), 0);
	assert_int_equal(f->k.n, 3);
	assert_int_equal(f->k.spans[1], GATHER_MIN - 1000);
	assert_int_equal(f->k.spans[2], GATHER_MAX);
	assert_emitted(f, 1000 + GATHER_MIN - 1000 + GATHER_MAX);
}

static void test_a_flush_from_inside_emit_emits_nothing_twice(void **state)
{
	struct fixture *f = *state;

	f->k.reenter = 1;
	take(f, 10, T0);
	take(f, 10, T0 + 10);
	gather_flush(&f->g);
	gather_flush(&f->g);
	assert_int_equal(f->k.n, 2);
	assert_emitted(f, 20);
}

/* Reads of random sizes at random gaps, the timer flushing on time:
   every byte once, in order, no span over the maximum, and nothing held
   past its deadline. */
static void test_random_streams_lose_and_repeat_nothing(void **state)
{
	struct fixture *f = *state;
	unsigned seed = 12345;
	int64_t t = T0, due_at = 0;

	while (f->fed < sizeof(f->data) - GATHER_MAX) {
		unsigned r;
		size_t n;
		int64_t gap, due;

		seed = seed * 1103515245u + 12345u;
		r = seed >> 16; /* the LCG's low bits repeat too soon */
		n = 1 + (r * 40503u) % (r & 1 ? 4096 : GATHER_MAX);
		gap = (r >> 5) % (r & 2 ? 500 : 8000);
		if (due_at && t + gap >= due_at) {
			gather_flush(&f->g); /* the timer fires first */
			due_at = 0;
		}
		t += gap;
		if ((r & 60) == 4)
			gather_input(&f->g, t);
		due = take(f, n, t);
		if (due && !due_at)
			due_at = t + due;
		if (due)
			assert_true(t + due <= due_at);
		if (!due)
			due_at = 0;
	}
	gather_flush(&f->g);
	assert_emitted(f, f->fed);
	assert_true(f->k.n > 10);
}

static void test_trim_frees_an_empty_gather_only(void **state)
{
	struct fixture *f = *state;

	take(f, 10, T0);
	take(f, 10, T0 + 10);
	gather_trim(&f->g);
	assert_true(gather_holding(&f->g)); /* held bytes are kept */
	gather_flush(&f->g);
	gather_trim(&f->g);
	assert_null(f->g.held.data);
	assert_emitted(f, 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_a_lone_read_goes_at_once, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_stream_is_joined_up_to_the_minimum,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_the_deadline_flushes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_output_after_input_goes_at_once, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_flood_after_input_is_joined_past_the_answer, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_spans_never_pass_the_maximum, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_a_flush_from_inside_emit_emits_nothing_twice, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_random_streams_lose_and_repeat_nothing,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_trim_frees_an_empty_gather_only, setup,
					    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
