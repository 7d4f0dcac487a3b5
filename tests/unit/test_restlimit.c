/* unit: gateway */
/* restlimit: the per-principal REST limits on an injected clock: the
   burst of two seconds, the refill and Retry-After, the in-flight cap and
   its release, principals kept apart, and the table's bound. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "restlimit.h"

static int admit(struct restlimit *rl, const char *who, int64_t now, unsigned *retry)
{
	const char *what;
	unsigned r;
	int rc = restlimit_acquire(rl, who, now, retry ? retry : &r, &what);

	if (rc < 0)
		assert_non_null(what);
	return rc;
}

static void test_burst_then_refill(void **state)
{
	struct restlimit *rl = restlimit_new(5, 1000);
	unsigned retry = 0;

	for (int i = 0; i < 10; i++)
		assert_int_equal(admit(rl, "a", 1000, NULL), 0);
	assert_int_equal(admit(rl, "a", 1000, &retry), -EBUSY);
	assert_int_equal(retry, 1);
	/* 5 a second: one more every 200 ms. */
	assert_int_equal(admit(rl, "a", 1199, NULL), -EBUSY);
	assert_int_equal(admit(rl, "a", 1200, NULL), 0);
	assert_int_equal(admit(rl, "a", 1200, NULL), -EBUSY);
	/* Another principal has its own bucket. */
	assert_int_equal(admit(rl, "b", 1200, NULL), 0);
	restlimit_free(rl);
}

static void test_retry_after_rounds_up(void **state)
{
	struct restlimit *rl = restlimit_new(1, 1000);
	unsigned retry = 0;

	assert_int_equal(admit(rl, "slow", 0, NULL), 0);
	assert_int_equal(admit(rl, "slow", 0, NULL), 0);
	assert_int_equal(admit(rl, "slow", 0, &retry), -EBUSY);
	assert_int_equal(retry, 1);
	assert_int_equal(admit(rl, "slow", 999, NULL), -EBUSY);
	assert_int_equal(admit(rl, "slow", 1000, NULL), 0);
	restlimit_free(rl);
}

static void test_in_flight(void **state)
{
	struct restlimit *rl = restlimit_new(1000, 2);
	const char *what;
	unsigned retry;

	assert_int_equal(admit(rl, "p", 0, NULL), 0);
	assert_int_equal(admit(rl, "p", 0, NULL), 0);
	assert_int_equal(restlimit_acquire(rl, "p", 0, &retry, &what), -EBUSY);
	assert_string_equal(what, "requests in flight per principal");
	assert_int_equal(admit(rl, "q", 0, NULL), 0);
	restlimit_release(rl, "p");
	assert_int_equal(admit(rl, "p", 0, NULL), 0);
	/* A release of nothing held changes nothing. */
	restlimit_release(rl, "nobody");
	restlimit_release(rl, "q");
	restlimit_release(rl, "q");
	assert_int_equal(admit(rl, "q", 0, NULL), 0);
	assert_int_equal(admit(rl, "q", 0, NULL), 0);
	assert_int_equal(admit(rl, "q", 0, NULL), -EBUSY);
	restlimit_free(rl);
}

/* A full table makes room from entries that would start afresh anyway;
   while every entry has a request in flight, a new principal waits. */
static void test_table_bound(void **state)
{
	struct restlimit *rl = restlimit_new(1, 1);
	char who[32];

	for (int i = 0; i < RESTLIMIT_MAX_PRINCIPALS; i++) {
		snprintf(who, sizeof(who), "p%d", i);
		assert_int_equal(admit(rl, who, 0, NULL), 0);
	}
	assert_int_equal(admit(rl, "late", 0, NULL), -EBUSY);
	for (int i = 0; i < RESTLIMIT_MAX_PRINCIPALS; i++) {
		snprintf(who, sizeof(who), "p%d", i);
		restlimit_release(rl, who);
	}
	/* Released but their buckets still refilling: kept. */
	assert_int_equal(admit(rl, "late", 500, NULL), -EBUSY);
	assert_int_equal(admit(rl, "late", 1000, NULL), 0);
	restlimit_free(rl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_burst_then_refill),
	    cmocka_unit_test(test_retry_after_rounds_up),
	    cmocka_unit_test(test_in_flight),
	    cmocka_unit_test(test_table_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
