/* unit: shared */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "utf8.h"

static size_t len_of(const char *s)
{
	return utf8_seq_len((const unsigned char *)s, strlen(s));
}

static void test_valid_sequences(void **state)
{
	assert_int_equal(len_of("a"), 1);
	assert_int_equal(len_of("\xC2\x80"), 2);	 /* U+0080 */
	assert_int_equal(len_of("\xDF\xBF"), 2);	 /* U+07FF */
	assert_int_equal(len_of("\xE0\xA0\x80"), 3);	 /* U+0800 */
	assert_int_equal(len_of("\xED\x9F\xBF"), 3);	 /* U+D7FF */
	assert_int_equal(len_of("\xEE\x80\x80"), 3);	 /* U+E000 */
	assert_int_equal(len_of("\xEF\xBF\xBD"), 3);	 /* U+FFFD */
	assert_int_equal(len_of("\xF0\x90\x80\x80"), 4); /* U+10000 */
	assert_int_equal(len_of("\xF4\x8F\xBF\xBF"), 4); /* U+10FFFF */
	/* Only the first sequence counts. */
	assert_int_equal(len_of("\xC3\xA9tail"), 2);
}

static void test_invalid_sequences(void **state)
{
	static const char *const bad[] = {
	    "\x80",
	    "\xBF", /* stray continuation bytes */
	    "\xC0\x80",
	    "\xC1\xBF",		/* overlong two-byte forms */
	    "\xE0\x9F\xBF",	/* overlong three-byte form */
	    "\xF0\x8F\xBF\xBF", /* overlong four-byte form */
	    "\xED\xA0\x80",
	    "\xED\xBF\xBF",	/* surrogates */
	    "\xF4\x90\x80\x80", /* past U+10FFFF */
	    "\xF5\x80\x80\x80",
	    "\xFF", /* never lead bytes */
	    "\xC3(",
	    "\xE2\x82(", /* a continuation missing */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(len_of(bad[i]), 0);
	/* Truncated: fewer bytes left than the lead byte promises. */
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xE2\x82\xAC", 2), 0);
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xF0\x90\x80\x80", 3), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid_sequences),
	    cmocka_unit_test(test_invalid_sequences),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
