/* unit: shared */
/* buf: growth, consume/compaction, formatting and steal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"

static void test_append_consume(void **state)
{
	struct buf b = BUF_INIT;

	buf_append(&b, "hello", 5);
	buf_append_str(&b, " world");
	assert_int_equal(buf_size(&b), 11);
	assert_memory_equal(buf_head(&b), "hello world", 11);
	buf_consume(&b, 6);
	assert_int_equal(buf_size(&b), 5);
	assert_memory_equal(buf_head(&b), "world", 5);
	buf_consume(&b, 5);
	assert_int_equal(buf_size(&b), 0);
	buf_append(&b, "x", 1);
	assert_memory_equal(buf_head(&b), "x", 1);
	buf_free(&b);
	assert_null(b.data);
	assert_int_equal(buf_size(&b), 0);
	buf_free(NULL);
}

static void test_growth_keeps_content(void **state)
{
	struct buf b;
	size_t i;

	buf_init(&b);
	for (i = 0; i < 100000; i++) {
		uint8_t c = (uint8_t)(i * 7);

		buf_append(&b, &c, 1);
	}
	assert_int_equal(buf_size(&b), 100000);
	for (i = 0; i < 100000; i++)
		assert_int_equal(buf_head(&b)[i], (uint8_t)(i * 7));
	buf_free(&b);
}

static void test_reserve_commit_compacts(void **state)
{
	struct buf b = BUF_INIT;
	uint8_t *p;
	size_t cap;

	buf_append(&b, "0123456789abcdef", 16);
	cap = b.cap;
	buf_consume(&b, 10);
	/* Room exists only once the consumed prefix is reclaimed. */
	p = buf_reserve(&b, cap - 6);
	assert_int_equal(b.cap, cap);
	assert_memory_equal(buf_head(&b), "abcdef", 6);
	memset(p, 'z', cap - 6);
	buf_commit(&b, cap - 6);
	assert_int_equal(buf_size(&b), cap);
	assert_int_equal(buf_head(&b)[6], 'z');
	buf_free(&b);
}

static void test_appendf(void **state)
{
	struct buf b = BUF_INIT;
	char big[3000];

	buf_appendf(&b, "%d-%s", 42, "x");
	assert_int_equal(buf_size(&b), 4);
	assert_memory_equal(buf_head(&b), "42-x", 4);
	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	buf_appendf(&b, "[%s]", big);
	assert_int_equal(buf_size(&b), 4 + 2 + sizeof(big) - 1);
	assert_int_equal(buf_head(&b)[5], 'q');
	assert_int_equal(buf_head(&b)[buf_size(&b) - 1], ']');
	buf_appendf(&b, "%s", "");
	assert_int_equal(buf_size(&b), 4 + 2 + sizeof(big) - 1);
	buf_free(&b);
}

static void test_reset_steal(void **state)
{
	struct buf b = BUF_INIT;
	uint8_t *s;
	size_t len;

	buf_append_str(&b, "garbage");
	buf_reset(&b);
	assert_int_equal(buf_size(&b), 0);
	assert_non_null(b.data);
	buf_append_str(&b, "xxabc");
	buf_consume(&b, 2);
	s = buf_steal(&b, &len);
	assert_int_equal(len, 3);
	assert_string_equal((char *)s, "abc");
	assert_null(b.data);
	assert_int_equal(buf_size(&b), 0);
	free(s);
	s = buf_steal(&b, &len);
	assert_int_equal(len, 0);
	assert_string_equal((char *)s, "");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_append_consume),
	    cmocka_unit_test(test_growth_keeps_content),
	    cmocka_unit_test(test_reserve_commit_compacts),
	    cmocka_unit_test(test_appendf),
	    cmocka_unit_test(test_reset_steal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
