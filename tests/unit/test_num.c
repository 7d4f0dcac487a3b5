/* unit: shared */
/* num: unsigned, signed and duration parsing: digits only (a '-' only
   for the signed form), within bounds, overflow refused, and nothing
   written on a refusal. */
#include <errno.h>
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

static void test_hex_file_names(void **state)
{
	uint64_t v = 7;

	(void)state;
	assert_int_equal(num_parse_hex_u64_n("00000000000004d2.seg", 16, &v), 0);
	assert_int_equal(v, 1234);
	assert_int_equal(num_parse_hex_u64_n("ffffffffffffffff", 16, &v), 0);
	assert_true(v == UINT64_MAX);
	v = 7;
	/* Upper case, signs, spaces, 0x and more than 16 digits are refused. */
	assert_int_equal(num_parse_hex_u64_n("00000000000004D2", 16, &v), -EINVAL);
	assert_int_equal(num_parse_hex_u64_n("-1", 2, &v), -EINVAL);
	assert_int_equal(num_parse_hex_u64_n(" 1", 2, &v), -EINVAL);
	assert_int_equal(num_parse_hex_u64_n("0x12", 4, &v), -EINVAL);
	assert_int_equal(num_parse_hex_u64_n("10000000000000000", 17, &v), -EINVAL);
	assert_int_equal(num_parse_hex_u64_n("", 0, &v), -EINVAL);
	assert_int_equal(v, 7);
}

static void test_counted_form_reads_only_its_bytes(void **state)
{
	uint64_t v = 7;

	assert_int_equal(num_parse_u64_n("8080/x", 4, 1, 65535, &v), 0);
	assert_int_equal(v, 8080);
	v = 7;
	assert_int_equal(num_parse_u64_n("8080/x", 5, 1, 65535, &v), -EINVAL);
	assert_int_equal(num_parse_u64_n("8080", 0, 0, 65535, &v), -EINVAL);
	assert_int_equal(num_parse_u64_n("65536", 5, 1, 65535, &v), -EINVAL);
	/* A NUL inside the counted bytes is not a digit. */
	assert_int_equal(num_parse_u64_n("1\0"
					 "2",
					 3, 0, 999, &v),
			 -EINVAL);
	assert_int_equal(v, 7);
	/* Overflow is caught digit by digit, however many digits follow. */
	assert_int_equal(num_parse_u64_n("184467440737095516150", 21, 0, UINT64_MAX, &v),
			 -EINVAL);
	assert_int_equal(v, 7);
}

static void test_signed(void **state)
{
	static const struct {
		const char *in;
		int64_t out;
	} good[] = {
	    {"0", 0},
	    {"-0", 0},
	    {"42", 42},
	    {"-42", -42},
	    {"9223372036854775807", INT64_MAX},
	    {"-9223372036854775808", INT64_MIN},
	};
	static const char *const bad[] = {
	    "",
	    "-",
	    "+1",
	    " 1",
	    "1 ",
	    "--1",
	    "-+1",
	    "- 1",
	    "1-",
	    "0x1",
	    "1.0",
	    "9223372036854775808",
	    "-9223372036854775809",
	    "99999999999999999999",
	};
	int64_t v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = 7;
		assert_int_equal(num_parse_i64(good[i].in, INT64_MIN, INT64_MAX, &v), 0);
		assert_true(v == good[i].out);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		assert_int_equal(num_parse_i64(bad[i], INT64_MIN, INT64_MAX, &v),
				 -EINVAL);
		assert_int_equal(v, 7);
	}
	assert_int_equal(num_parse_i64(NULL, INT64_MIN, INT64_MAX, &v), -EINVAL);
	assert_int_equal(num_parse_i64("-11", -10, 10, &v), -EINVAL);
	assert_int_equal(num_parse_i64("11", -10, 10, &v), -EINVAL);
	assert_int_equal(num_parse_i64("-10", -10, 10, &v), 0);
	assert_int_equal(v, -10);
	/* The counted form: only its bytes, and a lone '-' is no number. */
	assert_int_equal(num_parse_i64_n("-7 8", 2, -10, 10, &v), 0);
	assert_int_equal(v, -7);
	v = 3;
	assert_int_equal(num_parse_i64_n("-7 8", 3, -10, 10, &v), -EINVAL);
	assert_int_equal(num_parse_i64_n("-7", 1, -10, 10, &v), -EINVAL);
	assert_int_equal(num_parse_i64_n("", 0, -10, 10, &v), -EINVAL);
	assert_int_equal(v, 3);
}

static void test_duration(void **state)
{
	static const struct {
		const char *in;
		int64_t out;
	} good[] = {
	    {"1h", 3600},
	    {"30m", 1800},
	    {"3600s", 3600},
	    {"3600", 3600},
	    {"2d", 172800},
	    {"0", 0},
	    {"0s", 0},
	    {"315360000", 315360000},
	    {"3650d", 315360000},
	};
	static const char *const bad[] = {
	    "",		 "h",	"-1",  "-1h",  "1x",
	    "1h2",	 " 1h", "1 h", "1.5h", "99999999999999999999",
	    "3651d",	 "s1",	"+5",  "1hh",  "1H",
	    "315360001",
	};
	int64_t v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = -1;
		assert_int_equal(num_parse_duration_s(good[i].in, 315360000, &v), 0);
		assert_int_equal(v, good[i].out);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = -1;
		assert_int_equal(num_parse_duration_s(bad[i], 315360000, &v), -EINVAL);
		assert_int_equal(v, -1);
	}
	assert_int_equal(num_parse_duration_s(NULL, 10, &v), -EINVAL);
	/* The bound holds after the unit: no product wraps past it. */
	assert_int_equal(num_parse_duration_s("213503982334602d", INT64_MAX, &v),
			 -EINVAL);
	assert_int_equal(num_parse_duration_s("106751991167300d", INT64_MAX, &v), 0);
	assert_true(v == 106751991167300LL * 86400);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_accepts_digits_within_bounds),
	    cmocka_unit_test(test_refuses_everything_else),
	    cmocka_unit_test(test_counted_form_reads_only_its_bytes),
	    cmocka_unit_test(test_hex_file_names),
	    cmocka_unit_test(test_signed),
	    cmocka_unit_test(test_duration),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
