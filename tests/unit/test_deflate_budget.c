/* unit: gateway */
/* deflate_budget: level 6 while compressing takes at most its share of
   a 100 ms window, level 1 for the window after one that took more, and
   back to level 6 once a window stays within it or the loop went quiet.
   The clock is the test's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "deflate_budget.h"

#define T0  5000000
#define WIN DEFLATE_BUDGET_WINDOW_US
/* The most a window may spend at level 6, and just past it. */
#define SHARE (WIN * DEFLATE_BUDGET_SHARE_PCT / 100)

/* Compresses for spent us, frames every step us, through one window
   starting at t; returns the levels' last. */
static int window(struct deflate_budget *b, int64_t t, int64_t spent, int64_t step)
{
	int level = 0;

	for (int64_t used = 0, now = t; used < spent && now < t + WIN; now += step) {
		int64_t d = spent - used < step / 2 ? spent - used : step / 2;

		level = deflate_budget_level(b, now);
		deflate_budget_spent(b, now + d, d);
		used += d;
	}
	return level;
}

static void test_a_light_stream_stays_at_the_best_level(void **state)
{
	struct deflate_budget b = {0};

	(void)state;
	assert_int_equal(deflate_budget_level(&b, T0), DEFLATE_LEVEL_BEST);
	for (int w = 0; w < 5; w++)
		assert_int_equal(window(&b, T0 + w * WIN, SHARE, 1000),
				 DEFLATE_LEVEL_BEST);
	assert_int_equal(deflate_budget_level(&b, T0 + 5 * WIN), DEFLATE_LEVEL_BEST);
}

static void test_a_flood_drops_to_the_fast_level_then_comes_back(void **state)
{
	struct deflate_budget b = {0};

	(void)state;
	/* The first window over its share: the next is fast. */
	assert_int_equal(window(&b, T0, SHARE + 1000, 1000), DEFLATE_LEVEL_BEST);
	assert_int_equal(deflate_budget_level(&b, T0 + WIN), DEFLATE_LEVEL_FAST);
	/* Still flooding: still fast. */
	assert_int_equal(window(&b, T0 + WIN, WIN / 2, 1000), DEFLATE_LEVEL_FAST);
	assert_int_equal(deflate_budget_level(&b, T0 + 2 * WIN), DEFLATE_LEVEL_FAST);
	/* A window within its share: the best level again after it. */
	window(&b, T0 + 2 * WIN, SHARE / 2, 1000);
	assert_int_equal(deflate_budget_level(&b, T0 + 3 * WIN), DEFLATE_LEVEL_BEST);
}

static void test_a_quiet_loop_forgets_an_old_flood(void **state)
{
	struct deflate_budget b = {0};

	(void)state;
	window(&b, T0, WIN, 1000); /* all of a window spent compressing */
	/* Nothing for seconds: that window says nothing about now. */
	assert_int_equal(deflate_budget_level(&b, T0 + 50 * WIN), DEFLATE_LEVEL_BEST);
}

static void test_one_long_compression_counts(void **state)
{
	struct deflate_budget b = {0};

	(void)state;
	/* A single frame that took 30 ms: over a fifth of the window. */
	assert_int_equal(deflate_budget_level(&b, T0), DEFLATE_LEVEL_BEST);
	deflate_budget_spent(&b, T0 + 30000, 30000);
	assert_int_equal(deflate_budget_level(&b, T0 + WIN + 1), DEFLATE_LEVEL_FAST);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_light_stream_stays_at_the_best_level),
	    cmocka_unit_test(test_a_flood_drops_to_the_fast_level_then_comes_back),
	    cmocka_unit_test(test_a_quiet_loop_forgets_an_old_flood),
	    cmocka_unit_test(test_one_long_compression_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
