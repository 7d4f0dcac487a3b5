/* unit: sidecar */
/* test_members: capacities and downgrade reasons, full sessions, role
   requests both ways, leave and drop_link, client ids, join order, and
   label truncation on UTF-8 boundaries. */
#include "../../sidecar/members.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int link_a, link_b; /* addresses used as opaque link keys */

static struct member *join(struct members *m, void *link, uint64_t id, enum member_role r,
			   int may_control, int want_downgraded, const char *want_reason)
{
	bool down = !want_downgraded; /* the call must set it */
	const char *reason = "unset";
	struct member *mb =
	    members_join(m, link, id, r, may_control, "x", &down, &reason);

	assert_non_null(mb);
	assert_int_equal(down, want_downgraded);
	if (want_reason)
		assert_string_equal(reason, want_reason);
	else
		assert_null(reason);
	return mb;
}

static void test_new_free(void **state)
{
	struct members *m = members_new(4, 32);

	assert_int_equal(members_count(m, MEMBER_CONTROLLER), 0);
	assert_int_equal(members_count(m, MEMBER_OBSERVER), 0);
	assert_int_equal(members_count(m, (enum member_role)0), 0);
	assert_null(members_first(m));
	members_free(m);
	members_free(NULL);
}

static void test_controller_capacity(void **state)
{
	struct members *m = members_new(2, 5);
	struct member *mb;

	mb = join(m, &link_a, 1, MEMBER_CONTROLLER, 1, 0, NULL);
	assert_int_equal(mb->role, MEMBER_CONTROLLER);
	mb = join(m, &link_a, 2, MEMBER_CONTROLLER, 1, 0, NULL);
	assert_int_equal(mb->role, MEMBER_CONTROLLER);
	mb = join(m, &link_a, 3, MEMBER_CONTROLLER, 1, 1,
		  "controller capacity reached (2)");
	assert_int_equal(mb->role, MEMBER_OBSERVER);
	assert_int_equal(members_count(m, MEMBER_CONTROLLER), 2);
	assert_int_equal(members_count(m, MEMBER_OBSERVER), 1);
	members_free(m);
}

static void test_downgrade_without_control(void **state)
{
	struct members *m = members_new(4, 32);
	struct member *mb;

	mb = join(m, &link_a, 1, MEMBER_CONTROLLER, 0, 1, "token lacks pty:control");
	assert_int_equal(mb->role, MEMBER_OBSERVER);
	assert_int_equal(mb->may_control, 0);
	assert_int_equal(members_count(m, MEMBER_CONTROLLER), 0);
	/* an observer request is never a downgrade */
	mb = join(m, &link_a, 2, MEMBER_OBSERVER, 0, 0, NULL);
	assert_int_equal(mb->role, MEMBER_OBSERVER);
	mb = join(m, &link_a, 3, MEMBER_OBSERVER, 1, 0, NULL);
	assert_int_equal(mb->role, MEMBER_OBSERVER);
	assert_int_equal(mb->may_control, 1);
	/* an unknown role is taken as observer */
	mb = join(m, &link_a, 4, (enum member_role)0, 1, 0, NULL);
	assert_int_equal(mb->role, MEMBER_OBSERVER);
	members_free(m);
}

static void test_lacking_control_reported_before_capacity(void **state)
{
	struct members *m = members_new(1, 4);

	join(m, &link_a, 1, MEMBER_CONTROLLER, 1, 0, NULL);
	join(m, &link_a, 2, MEMBER_CONTROLLER, 0, 1, "token lacks pty:control");
	join(m, &link_a, 3, MEMBER_CONTROLLER, 1, 1, "controller capacity reached (1)");
	members_free(m);
}

static void test_zero_controllers(void **state)
{
	struct members *m = members_new(0, 1);

	join(m, &link_a, 1, MEMBER_CONTROLLER, 1, 1, "controller capacity reached (0)");
	members_free(m);
}

static void test_observers_full(void **state)
{
	struct members *m = members_new(1, 2);
	bool down;
	const char *reason;

	join(m, &link_a, 1, MEMBER_OBSERVER, 1, 0, NULL);
	join(m, &link_a, 2, MEMBER_OBSERVER, 1, 0, NULL);
	assert_null(members_join(m, &link_a, 3, MEMBER_OBSERVER, 1, "o", &down, &reason));
	assert_int_equal(down, 0);
	/* a controller slot is still free */
	join(m, &link_a, 4, MEMBER_CONTROLLER, 1, 0, NULL);
	/* a downgraded controller has nowhere to go either */
	assert_null(
	    members_join(m, &link_a, 5, MEMBER_CONTROLLER, 1, "c", &down, &reason));
	assert_null(
	    members_join(m, &link_a, 6, MEMBER_CONTROLLER, 0, "c", &down, &reason));
	assert_int_equal(members_count(m, MEMBER_CONTROLLER), 1);
	assert_int_equal(members_count(m, MEMBER_OBSERVER), 2);
	assert_null(members_find(m, &link_a, 3));
	assert_null(members_find(m, &link_a, 5));
	members_free(m);
}

static void request(struct members *m, struct member *mb, enum member_role want,
		    int want_changed, int want_down, const char *want_reason)
{
	bool down = !want_down; /* the call must set it */
	const char *reason = "unset";

	assert_int_equal(members_request_role(m, mb, want, &down, &reason), want_changed);
	assert_int_equal(down, want_down);
	if (want_reason)
		assert_string_equal(reason, want_reason);
	else
		assert_null(reason);
}

static void test_request_role(void **state)
{
	struct members *m = members_new(1, 2);
	struct member *a, *b, *c;

	a = join(m, &link_a, 1, MEMBER_OBSERVER, 1, 0, NULL);
	b = join(m, &link_a, 2, MEMBER_OBSERVER, 0, 0, NULL);
	/* same role: nothing changes, nothing refused */
	request(m, a, MEMBER_OBSERVER, 0, 0, NULL);
	/* observer -> controller */
	request(m, a, MEMBER_CONTROLLER, 1, 0, NULL);
	assert_int_equal(a->role, MEMBER_CONTROLLER);
	assert_int_equal(members_count(m, MEMBER_CONTROLLER), 1);
	assert_int_equal(members_count(m, MEMBER_OBSERVER), 1);
	request(m, a, MEMBER_CONTROLLER, 0, 0, NULL);
	/* refused: no pty:control recorded at join */
	request(m, b, MEMBER_CONTROLLER, 0, 1, "token lacks pty:control");
	assert_int_equal(b->role, MEMBER_OBSERVER);
	/* refused: controllers full */
	c = join(m, &link_b, 1, MEMBER_CONTROLLER, 1, 1,
		 "controller capacity reached (1)");
	request(m, c, MEMBER_CONTROLLER, 0, 1, "controller capacity reached (1)");
	assert_int_equal(c->role, MEMBER_OBSERVER);
	/* refused: controller -> observer while observers are full */
	request(m, a, MEMBER_OBSERVER, 0, 1, "observer capacity reached (2)");
	assert_int_equal(a->role, MEMBER_CONTROLLER);
	/* room again: controller -> observer, and the freed controller slot
	   goes to the next asker */
	members_leave(m, b);
	request(m, a, MEMBER_OBSERVER, 1, 0, NULL);
	assert_int_equal(a->role, MEMBER_OBSERVER);
	request(m, c, MEMBER_CONTROLLER, 1, 0, NULL);
	assert_int_equal(members_count(m, MEMBER_CONTROLLER), 1);
	assert_int_equal(members_count(m, MEMBER_OBSERVER), 1);
	members_free(m);
}

static void test_leave_frees_slot(void **state)
{
	struct members *m = members_new(2, 1);
	struct member *a, *o;
	bool down;
	const char *reason;

	a = join(m, &link_a, 1, MEMBER_CONTROLLER, 1, 0, NULL);
	join(m, &link_a, 2, MEMBER_CONTROLLER, 1, 0, NULL);
	o = join(m, &link_a, 3, MEMBER_OBSERVER, 1, 0, NULL);
	assert_null(members_join(m, &link_a, 4, MEMBER_OBSERVER, 1, "", &down, &reason));
	members_leave(m, a);
	assert_null(members_find(m, &link_a, 1));
	assert_int_equal(members_count(m, MEMBER_CONTROLLER), 1);
	join(m, &link_a, 5, MEMBER_CONTROLLER, 1, 0, NULL);
	members_leave(m, o);
	join(m, &link_a, 6, MEMBER_OBSERVER, 1, 0, NULL);
	assert_int_equal(members_count(m, MEMBER_CONTROLLER), 2);
	assert_int_equal(members_count(m, MEMBER_OBSERVER), 1);
	members_free(m);
}

/* Asserts the members' attach ids, in iteration order, are want[0..n). */
static void expect_order(struct members *m, const uint64_t *want, size_t n)
{
	size_t i = 0;

	for (struct member *mb = members_first(m); mb; mb = members_next(m, mb)) {
		assert_true(i < n);
		assert_int_equal(mb->attach_id, want[i]);
		i++;
	}
	assert_int_equal(i, n);
}

#define ORDER(m, ...)                                                                    \
	do {                                                                             \
		const uint64_t w_[] = {__VA_ARGS__};                                     \
		expect_order(m, w_, sizeof(w_) / sizeof(w_[0]));                         \
	} while (0)

static void test_join_order_and_find(void **state)
{
	struct members *m = members_new(4, 32);
	struct member *mb[6];

	for (uint64_t i = 0; i < 6; i++)
		mb[i] = join(m, i % 2 ? &link_b : &link_a, 10 + i,
			     i % 3 ? MEMBER_OBSERVER : MEMBER_CONTROLLER, 1, 0, NULL);
	ORDER(m, 10, 11, 12, 13, 14, 15);
	/* the key is the pair: the same attach id on two links is two members */
	assert_ptr_equal(members_find(m, &link_a, 10), mb[0]);
	assert_ptr_equal(members_find(m, &link_b, 11), mb[1]);
	assert_null(members_find(m, &link_b, 10));
	assert_ptr_equal(members_find_client(m, mb[4]->client_id), mb[4]);
	assert_null(members_find_client(m, "c-0000000000000000x"));
	/* leaving the middle, the head and the tail keeps the rest in order */
	members_leave(m, mb[2]);
	ORDER(m, 10, 11, 13, 14, 15);
	members_leave(m, mb[0]);
	ORDER(m, 11, 13, 14, 15);
	members_leave(m, mb[5]);
	ORDER(m, 11, 13, 14);
	mb[0] = join(m, &link_a, 20, MEMBER_OBSERVER, 1, 0, NULL);
	ORDER(m, 11, 13, 14, 20);
	/* a role change does not move a member */
	request(m, mb[1], MEMBER_CONTROLLER, 1, 0, NULL);
	ORDER(m, 11, 13, 14, 20);
	members_leave(m, mb[1]);
	members_leave(m, mb[3]);
	members_leave(m, mb[4]);
	members_leave(m, mb[0]);
	assert_null(members_first(m));
	assert_int_equal(members_count(m, MEMBER_CONTROLLER), 0);
	assert_int_equal(members_count(m, MEMBER_OBSERVER), 0);
	join(m, &link_a, 30, MEMBER_OBSERVER, 1, 0, NULL);
	ORDER(m, 30);
	members_free(m);
}

static void test_drop_link(void **state)
{
	struct members *m = members_new(4, 32);
	int link_c;

	join(m, &link_a, 1, MEMBER_CONTROLLER, 1, 0, NULL);
	join(m, &link_b, 2, MEMBER_CONTROLLER, 1, 0, NULL);
	join(m, &link_a, 3, MEMBER_OBSERVER, 1, 0, NULL);
	join(m, &link_b, 4, MEMBER_OBSERVER, 1, 0, NULL);
	join(m, &link_a, 5, MEMBER_CONTROLLER, 1, 0, NULL);
	assert_int_equal(members_drop_link(m, &link_c), 0);
	assert_int_equal(members_drop_link(m, &link_a), 3);
	ORDER(m, 2, 4);
	assert_int_equal(members_count(m, MEMBER_CONTROLLER), 1);
	assert_int_equal(members_count(m, MEMBER_OBSERVER), 1);
	assert_int_equal(members_drop_link(m, &link_a), 0);
	assert_int_equal(members_drop_link(m, &link_b), 2);
	assert_null(members_first(m));
	assert_int_equal(members_count(m, MEMBER_CONTROLLER), 0);
	members_free(m);
}

/* Whether link is among the distinct links members_link lists. */
static int has_link(const struct members *m, void *link)
{
	for (unsigned i = 0; i < members_nlinks(m); i++)
		if (members_link(m, i) == link)
			return 1;
	return 0;
}

/* Frames go once per distinct link: the set follows joins and leaves. */
static void test_distinct_links(void **state)
{
	struct members *m = members_new(4, 32);
	struct member *a1, *a2;

	assert_int_equal(members_nlinks(m), 0);
	a1 = join(m, &link_a, 1, MEMBER_CONTROLLER, 1, 0, NULL);
	join(m, &link_b, 2, MEMBER_OBSERVER, 1, 0, NULL);
	a2 = join(m, &link_a, 3, MEMBER_OBSERVER, 1, 0, NULL);
	assert_int_equal(members_nlinks(m), 2);
	assert_true(has_link(m, &link_a) && has_link(m, &link_b));
	members_leave(m, a1);
	assert_int_equal(members_nlinks(m), 2); /* a2 is still on link_a */
	members_leave(m, a2);
	assert_int_equal(members_nlinks(m), 1);
	assert_false(has_link(m, &link_a));
	join(m, &link_a, 4, MEMBER_OBSERVER, 1, 0, NULL);
	assert_int_equal(members_drop_link(m, &link_b), 1);
	assert_int_equal(members_nlinks(m), 1);
	assert_true(has_link(m, &link_a));
	members_free(m);
}

static void test_client_id_format_and_uniqueness(void **state)
{
	struct members *m = members_new(4, 300);
	struct member *mb[304];
	bool down;
	const char *reason;

	for (int i = 0; i < 304; i++) {
		mb[i] = members_join(m, &link_a, (uint64_t)i,
				     i < 4 ? MEMBER_CONTROLLER : MEMBER_OBSERVER, 1, "",
				     &down, &reason);
		assert_non_null(mb[i]);
		assert_int_equal(strlen(mb[i]->client_id), 18);
		assert_memory_equal(mb[i]->client_id, "c-", 2);
		for (int k = 2; k < 18; k++)
			assert_non_null(strchr("0123456789abcdef", mb[i]->client_id[k]));
	}
	for (int i = 0; i < 304; i++)
		for (int j = i + 1; j < 304; j++)
			assert_string_not_equal(mb[i]->client_id, mb[j]->client_id);
	members_free(m);
}

static const char *joined_label(struct members *m, uint64_t id, const char *label)
{
	bool down;
	const char *reason;
	struct member *mb =
	    members_join(m, &link_a, id, MEMBER_OBSERVER, 0, label, &down, &reason);

	assert_non_null(mb);
	return mb->label;
}

static void test_label(void **state)
{
	enum { L = PTG_LABEL_MAX_BYTES };
	struct members *m = members_new(0, 32);
	char in[L + 100], want[L + 1];

	assert_string_equal(joined_label(m, 1, NULL), "");
	assert_string_equal(joined_label(m, 2, "alice's laptop"), "alice's laptop");

	memset(in, 'a', L + 72);
	in[L + 72] = '\0';
	memset(want, 'a', L);
	want[L] = '\0';
	assert_string_equal(joined_label(m, 3, in), want);
	in[L] = '\0'; /* exactly L: kept whole */
	assert_string_equal(joined_label(m, 4, in), want);

	/* a 2-byte sequence straddling the cut (bytes L-1..L) is dropped */
	memset(in, 'a', L - 1);
	strcpy(in + L - 1, "\xc3\xa9zz");
	want[L - 1] = '\0';
	assert_string_equal(joined_label(m, 5, in), want);
	/* 3 bytes at L-2..L */
	memset(in, 'a', L - 2);
	strcpy(in + L - 2, "\xe2\x82\xac");
	want[L - 2] = '\0';
	assert_string_equal(joined_label(m, 6, in), want);
	/* 4 bytes at L-3..L */
	memset(in, 'a', L - 3);
	strcpy(in + L - 3, "\xf0\x9f\x98\x80");
	want[L - 3] = '\0';
	assert_string_equal(joined_label(m, 7, in), want);
	/* 4 bytes ending exactly at L-1, then more: the sequence stays */
	memset(in, 'a', L - 4);
	strcpy(in + L - 4, "\xf0\x9f\x98\x80"
			   "b");
	memcpy(want, in, L);
	want[L] = '\0';
	assert_string_equal(joined_label(m, 8, in), want);
	/* a 2-byte sequence starting at L leaves L clean bytes */
	memset(in, 'a', L);
	strcpy(in + L, "\xc3\xa9");
	memset(want, 'a', L);
	want[L] = '\0';
	assert_string_equal(joined_label(m, 9, in), want);
	/* all multibyte: L/2 two-byte chars fit exactly; one more is cut */
	for (int i = 0; i < L / 2 + 1; i++)
		memcpy(in + 2 * i, "\xc3\xa9", 2);
	in[L + 2] = '\0';
	memcpy(want, in, L);
	want[L] = '\0';
	assert_string_equal(joined_label(m, 10, in), want);
	/* The protocol's bound is 128 characters: the widest such label (4-byte
	   characters) is kept whole, never cut */
	for (int i = 0; i < PTG_LABEL_MAX_CHARS; i++)
		memcpy(in + 4 * i, "\xf0\x9f\x98\x80", 4);
	in[4 * PTG_LABEL_MAX_CHARS] = '\0';
	assert_string_equal(joined_label(m, 12, in), in);
	/* the caller's buffer is copied, not kept */
	strcpy(in, "before");
	assert_string_equal(joined_label(m, 11, in), "before");
	strcpy(in, "after!");
	assert_string_equal(members_find(m, &link_a, 11)->label, "before");
	members_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_new_free),
	    cmocka_unit_test(test_controller_capacity),
	    cmocka_unit_test(test_downgrade_without_control),
	    cmocka_unit_test(test_lacking_control_reported_before_capacity),
	    cmocka_unit_test(test_zero_controllers),
	    cmocka_unit_test(test_observers_full),
	    cmocka_unit_test(test_request_role),
	    cmocka_unit_test(test_leave_frees_slot),
	    cmocka_unit_test(test_join_order_and_find),
	    cmocka_unit_test(test_drop_link),
	    cmocka_unit_test(test_distinct_links),
	    cmocka_unit_test(test_client_id_format_and_uniqueness),
	    cmocka_unit_test(test_label),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
