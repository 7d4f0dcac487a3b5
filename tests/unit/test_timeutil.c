/* unit: shared */
/* timeutil: the exact RFC 3339 text, parsing offsets and fractions, and
   refusal of malformed or out-of-range stamps. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "timeutil.h"

/* 2026-05-09T14:30:00.182Z */
#define T_2026 INT64_C(1778337000182)

static void test_format(void **state)
{
	char out[TS_STRLEN + 1];

	time_format_ms(T_2026, out);
	assert_string_equal(out, "2026-05-09T14:30:00.182Z");
	time_format_ms(0, out);
	assert_string_equal(out, "1970-01-01T00:00:00.000Z");
	time_format_ms(-1, out);
	assert_string_equal(out, "1969-12-31T23:59:59.999Z");
	time_format_ms(INT64_C(951782400000), out);
	assert_string_equal(out, "2000-02-29T00:00:00.000Z");
	time_format_ms(INT64_C(253402300799999), out);
	assert_string_equal(out, "9999-12-31T23:59:59.999Z");
	assert_int_equal(strlen(out), TS_STRLEN);
}

static void test_parse(void **state)
{
	int64_t ms = 0;

	assert_int_equal(time_parse_rfc3339("2026-05-09T14:30:00.182Z", &ms), 0);
	assert_int_equal(ms, T_2026);
	assert_int_equal(time_parse_rfc3339("2026-05-09T16:30:00.182+02:00", &ms), 0);
	assert_int_equal(ms, T_2026);
	assert_int_equal(time_parse_rfc3339("2026-05-09T09:00:00.182-05:30", &ms), 0);
	assert_int_equal(ms, T_2026);
	assert_int_equal(time_parse_rfc3339("2026-05-09t14:30:00.18200001z", &ms), 0);
	assert_int_equal(ms, T_2026);
	assert_int_equal(time_parse_rfc3339("2026-05-09T14:30:00Z", &ms), 0);
	assert_int_equal(ms, T_2026 - 182);
	assert_int_equal(time_parse_rfc3339("2026-05-09T14:30:00.1Z", &ms), 0);
	assert_int_equal(ms, T_2026 - 82);
	assert_int_equal(time_parse_rfc3339("1970-01-01T00:00:00+00:00", &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(time_parse_rfc3339("2000-02-29T00:00:00Z", &ms), 0);
	assert_int_equal(ms, INT64_C(951782400000));
}

static void test_roundtrip(void **state)
{
	static const int64_t v[] = {
	    0, 1, 999, 86399999, T_2026, INT64_C(4102444800000), -86400000};
	char out[TS_STRLEN + 1];
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int64_t ms;

		time_format_ms(v[i], out);
		assert_int_equal(time_parse_rfc3339(out, &ms), 0);
		assert_int_equal(ms, v[i]);
	}
}

static void test_parse_rejects(void **state)
{
	static const char *const bad[] = {
	    "",
	    "2026-05-09",
	    "2026-05-09T14:30:00",   /* no offset */
	    "2026-05-09 14:30:00Z",  /* space for T */
	    "2026-05-09T14:30:00.Z", /* empty fraction */
	    "2026-5-09T14:30:00Z",
	    "2026-05-09T14:30Z",
	    "2026-13-09T14:30:00Z",
	    "2026-00-09T14:30:00Z",
	    "2026-02-29T14:30:00Z", /* not a leap year */
	    "2100-02-29T00:00:00Z",
	    "2026-04-31T00:00:00Z",
	    "2026-05-00T00:00:00Z",
	    "2026-05-09T24:00:00Z",
	    "2026-05-09T14:60:00Z",
	    "2026-05-09T14:30:61Z",
	    "2026-05-09T14:30:00+0200",
	    "2026-05-09T14:30:00+24:00",
	    "2026-05-09T14:30:00+02:60",
	    "2026-05-09T14:30:00Zjunk",
	    "2026-05-09T14:30:00.182Z ",
	    "+2026-05-09T14:30:00Z",
	    "2026-05-09T14:30:0aZ",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t ms = 42;

		assert_int_equal(time_parse_rfc3339(bad[i], &ms), -EINVAL);
		assert_int_equal(ms, 42);
	}
}

static void test_leap_second(void **state)
{
	int64_t ms;

	assert_int_equal(time_parse_rfc3339("2016-12-31T23:59:60Z", &ms), 0);
	assert_int_equal(ms, INT64_C(1483228799999));
}

static void test_clocks(void **state)
{
	int64_t a = time_mono_ms(), b = time_mono_ms();
	int64_t now = time_now_ms();

	assert_true(b >= a);
	assert_true(now > INT64_C(1700000000000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_format),	cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_roundtrip),	cmocka_unit_test(test_parse_rejects),
	    cmocka_unit_test(test_leap_second), cmocka_unit_test(test_clocks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
