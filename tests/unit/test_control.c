/* unit: sidecar */
/* test_control: the pending control requests of an approve session:
   adding, a repeated ask, the cap, removal in order, expiry on an
   injected clock, the next deadline. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "control.h"

static int link_a; /* an address used as an opaque link key */

static void test_add_and_find(void **state)
{
	struct control c = {0};

	(void)state;
	assert_int_equal(control_next_deadline(&c), -1);
	assert_int_equal(control_add(&c, &link_a, 7, "c-01", "bob", 1000, 50000, 60000),
			 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(control_find(&c, "c-01"), 0);
	assert_int_equal(control_find(&c, "c-02"), -1);
	assert_ptr_equal(c.v[0].link, &link_a);
	assert_int_equal(c.v[0].attach_id, 7);
	assert_string_equal(c.v[0].label, "bob");
	assert_int_equal(c.v[0].expires_ms, 61000);
	assert_int_equal(c.v[0].expires_wall_ms, 110000);
	assert_int_equal(control_next_deadline(&c), 61000);
}

static void test_repeat_keeps_first_deadline(void **state)
{
	struct control c = {0};

	(void)state;
	assert_int_equal(control_add(&c, &link_a, 1, "c-01", "a", 0, 0, 1000), 0);
	assert_int_equal(control_add(&c, &link_a, 1, "c-01", "a", 900, 900, 1000), 1);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.v[0].expires_ms, 1000);
}

static void test_cap(void **state)
{
	struct control c = {0};
	char id[24];

	(void)state;
	for (int i = 0; i < CONTROL_PENDING_MAX; i++) {
		snprintf(id, sizeof(id), "c-%02d", i);
		assert_int_equal(
		    control_add(&c, &link_a, (uint64_t)i + 1, id, "", i, i, 10), 0);
	}
	assert_int_equal(control_add(&c, &link_a, 99, "c-99", "", 0, 0, 10), -ENOSPC);
	assert_int_equal(c.n, CONTROL_PENDING_MAX);
	/* A place freed is a place taken. */
	control_remove(&c, 0, NULL);
	assert_int_equal(control_add(&c, &link_a, 99, "c-99", "", 0, 0, 10), 0);
	assert_int_equal(control_find(&c, "c-99"), CONTROL_PENDING_MAX - 1);
}

static void test_remove_keeps_order(void **state)
{
	struct control c = {0};
	struct control_request out;

	(void)state;
	control_add(&c, &link_a, 1, "c-a", "", 0, 0, 10);
	control_add(&c, &link_a, 2, "c-b", "", 0, 0, 10);
	control_add(&c, &link_a, 3, "c-c", "", 0, 0, 10);
	control_remove(&c, 1, &out);
	assert_string_equal(out.client_id, "c-b");
	assert_int_equal(c.n, 2);
	assert_string_equal(c.v[0].client_id, "c-a");
	assert_string_equal(c.v[1].client_id, "c-c");
	control_remove(&c, 5, &out); /* out of range: nothing */
	assert_int_equal(c.n, 2);
}

static void test_expiry_on_injected_clock(void **state)
{
	struct control c = {0};
	struct control_request out;

	(void)state;
	control_add(&c, &link_a, 1, "c-a", "", 0, 0, 5000);
	control_add(&c, &link_a, 2, "c-b", "", 1000, 1000, 2000); /* lapses first */
	assert_int_equal(control_next_deadline(&c), 3000);
	assert_int_equal(control_take_expired(&c, 2999, &out), 0);
	assert_int_equal(control_take_expired(&c, 3000, &out), 1);
	assert_string_equal(out.client_id, "c-b");
	assert_int_equal(control_next_deadline(&c), 5000);
	assert_int_equal(control_take_expired(&c, 4999, &out), 0);
	assert_int_equal(control_take_expired(&c, 99999, &out), 1);
	assert_string_equal(out.client_id, "c-a");
	assert_int_equal(control_take_expired(&c, 99999, &out), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(control_next_deadline(&c), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_add_and_find),
	    cmocka_unit_test(test_repeat_keeps_first_deadline),
	    cmocka_unit_test(test_cap),
	    cmocka_unit_test(test_remove_keeps_order),
	    cmocka_unit_test(test_expiry_on_injected_clock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
