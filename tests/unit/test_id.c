/* unit: shared */
/* id: the instance and session id check the gateway's config, instances
   file and REST/attach paths share. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "id.h"
#include "ptg_limits.h"

static void test_valid_ids(void **state)
{
	static const char *const good[] = {
	    "a",   "inst-1", "A.b_c~d:e@f-g", "0",
	    "...", ".a",     "a..b",	      "0190a4b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b",
	};
	char longest[PTG_ID_MAX + 1];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		print_message("%s\n", good[i]);
		assert_true(id_valid(good[i]));
	}
	memset(longest, 'x', PTG_ID_MAX);
	longest[PTG_ID_MAX] = '\0';
	assert_true(id_valid(longest));
}

static void test_invalid_ids(void **state)
{
	/* Empty, the two dot segments, path and query bytes, escapes, space,
	   a non-ASCII byte, and the other URL-reserved characters. */
	static const char *const bad[] = {
	    "",	   ".",	  "..",	 "a/b", "a?b", "a#b", "a%2f", "a b", "caf\xc3\xa9", "a+b",
	    "a,b", "a;b", "a=b", "a&b", "a$b", "a!b", "a*b",  "a'b", "a(b",	    "a[b",
	};
	char over[PTG_ID_MAX + 2];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		print_message("%s\n", bad[i]);
		assert_false(id_valid(bad[i]));
	}
	memset(over, 'x', PTG_ID_MAX + 1);
	over[PTG_ID_MAX + 1] = '\0';
	assert_false(id_valid(over));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid_ids),
	    cmocka_unit_test(test_invalid_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
