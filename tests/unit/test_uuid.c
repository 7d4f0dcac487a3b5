/* unit: shared */
/* uuid: UUIDv7 layout, timestamp, ordering, and the validator. */
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "timeutil.h"
#include "uuid.h"

#define N_IDS 10000

static void test_format_and_order(void **state)
{
	static char ids[N_IDS][UUID_STRLEN + 1];
	regex_t re;
	int i;

	assert_int_equal(
	    regcomp(&re,
		    "^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
		    "[0-9a-f]{12}$",
		    REG_EXTENDED | REG_NOSUB),
	    0);
	for (i = 0; i < N_IDS; i++) {
		uuid_v7_new(ids[i]);
		assert_int_equal(strlen(ids[i]), UUID_STRLEN);
		assert_int_equal(regexec(&re, ids[i], 0, NULL, 0), 0);
		assert_true(uuid_is_valid(ids[i]));
		if (i > 0)
			assert_true(strcmp(ids[i - 1], ids[i]) < 0);
	}
	regfree(&re);
}

static void test_timestamp(void **state)
{
	char id[UUID_STRLEN + 1], hex[13];
	int64_t before = time_now_ms(), after, ts;

	uuid_v7_new(id);
	after = time_now_ms();
	memcpy(hex, id, 8);
	memcpy(hex + 8, id + 9, 4);
	hex[12] = '\0';
	ts = (int64_t)strtoull(hex, NULL, 16);
	/* The counter may borrow a few ms ahead after the burst above. */
	assert_true(ts >= before);
	assert_true(ts <= after + 10);
}

static void test_random_part_differs(void **state)
{
	char a[UUID_STRLEN + 1], b[UUID_STRLEN + 1];

	uuid_v7_new(a);
	uuid_v7_new(b);
	assert_string_not_equal(a + 19, b + 19);
}

static void test_is_valid(void **state)
{
	assert_true(uuid_is_valid("01890a5d-ac96-774b-bcce-b302099a8057"));
	assert_true(uuid_is_valid("01890A5D-AC96-774B-BCCE-B302099A8057"));
	assert_true(uuid_is_valid("f81d4fae-7dec-11d0-a765-00a0c91e6bf6"));
	assert_false(uuid_is_valid(""));
	assert_false(uuid_is_valid("01890a5d-ac96-774b-bcce-b302099a805"));
	assert_false(uuid_is_valid("01890a5d-ac96-774b-bcce-b302099a80577"));
	assert_false(uuid_is_valid("01890a5dac96-774b-bcce-b302099a8057a"));
	assert_false(uuid_is_valid("01890a5d-ac96-774b-bcce_b302099a8057"));
	assert_false(uuid_is_valid("01890a5g-ac96-774b-bcce-b302099a8057"));
	assert_false(uuid_is_valid("{1890a5d-ac96-774b-bcce-b302099a8057}"));
	assert_false(uuid_is_valid(" 01890a5d-ac96-774b-bcce-b302099a8057"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_format_and_order),
	    cmocka_unit_test(test_timestamp),
	    cmocka_unit_test(test_random_part_differs),
	    cmocka_unit_test(test_is_valid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
