/* unit: shared */
/* num_parse_u64: digits only, within bounds, and nothing written on a
   refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "num.h"

static void test_accepts_digits_within_bounds(void **state)
{
	uint64_t v = 0;

	assert_int_equal(num_parse_u64("0", 0, 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(num_parse_u64("10", 0, 10, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(num_parse_u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
}

static void test_refuses_everything_else(void **state)
{
	static const char *const bad[] = {
		"", " 5", "+5", "-1", "5 ", "5x", "0x10", "1e3", "18446744073709551616", "11",
	};
	uint64_t v = 7;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(num_parse_u64(bad[i], 0, 10, &v), -22);
		assert_int_equal(v, 7);
	}
	assert_int_equal(num_parse_u64(NULL, 0, 10, &v), -22);
	assert_int_equal(num_parse_u64("0", 1, 10, &v), -22);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepts_digits_within_bounds),
		cmocka_unit_test(test_refuses_everything_else),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
