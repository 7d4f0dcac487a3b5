/* unit: gateway */
/* routecache: put, get, replace and delete; the cap on entries; a
   generation's sweep keeps what was put since it began; many entries
   (the table grows) all found again; the bytes it reports come back to
   the empty table's when it empties. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "routecache.h"

static void test_put_get_replace_delete(void **state)
{
	struct routecache *c = routecache_new(10);
	const struct routecache_entry *e;
	size_t empty = routecache_bytes(c);

	assert_null(routecache_get(c, "i1"));
	assert_int_equal(routecache_put(c, "i1", "gw-a", "http://a", 7), 0);
	e = routecache_get(c, "i1");
	assert_non_null(e);
	assert_string_equal(e->gateway, "gw-a");
	assert_string_equal(e->url, "http://a");
	assert_int_equal(e->lease, 7);
	assert_int_equal(routecache_put(c, "i1", "gw-b", "http://b", 8), 0);
	assert_int_equal(routecache_size(c), 1);
	assert_string_equal(routecache_get(c, "i1")->gateway, "gw-b");
	assert_true(routecache_bytes(c) > empty);
	assert_int_equal(routecache_del(c, "i1"), 0);
	assert_int_equal(routecache_del(c, "i1"), -ENOENT);
	assert_int_equal(routecache_size(c), 0);
	assert_int_equal(routecache_bytes(c), empty);
	routecache_free(c);
	routecache_free(NULL);
}

static void test_cap(void **state)
{
	struct routecache *c = routecache_new(2);

	assert_int_equal(routecache_put(c, "a", "g", "u", 1), 0);
	assert_int_equal(routecache_put(c, "b", "g", "u", 1), 0);
	assert_int_equal(routecache_put(c, "c", "g", "u", 1), -ENOSPC);
	/* Replacing an entry is not a new one. */
	assert_int_equal(routecache_put(c, "b", "g2", "u2", 2), 0);
	assert_int_equal(routecache_size(c), 2);
	routecache_free(c);
}

static void test_generation_sweep(void **state)
{
	struct routecache *c = routecache_new(10);

	routecache_put(c, "old", "g", "u", 1);
	routecache_put(c, "kept", "g", "u", 1);
	routecache_begin(c);
	/* Lookups go on from the old map while the new one is read. */
	assert_non_null(routecache_get(c, "old"));
	routecache_put(c, "kept", "g", "u", 2);
	routecache_put(c, "new", "g", "u", 2);
	assert_int_equal(routecache_sweep(c), 1);
	assert_null(routecache_get(c, "old"));
	assert_non_null(routecache_get(c, "kept"));
	assert_non_null(routecache_get(c, "new"));
	routecache_free(c);
}

static void test_many(void **state)
{
	enum { N = 20000 };
	struct routecache *c = routecache_new(N);
	char name[32];

	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "inst-%d", i);
		assert_int_equal(routecache_put(c, name, "gw", "http://gw", i), 0);
	}
	assert_int_equal(routecache_size(c), N);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "inst-%d", i);
		assert_int_equal(routecache_get(c, name)->lease, i);
	}
	for (int i = 0; i < N; i += 2) {
		snprintf(name, sizeof(name), "inst-%d", i);
		assert_int_equal(routecache_del(c, name), 0);
	}
	assert_int_equal(routecache_size(c), N / 2);
	assert_null(routecache_get(c, "inst-0"));
	assert_non_null(routecache_get(c, "inst-1"));
	routecache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_put_get_replace_delete),
	    cmocka_unit_test(test_cap),
	    cmocka_unit_test(test_generation_sweep),
	    cmocka_unit_test(test_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
