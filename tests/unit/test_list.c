/* unit: shared */
/* list: the FOREACH_SAFE forms added to <sys/queue.h> visit every
   element once, in order, while the loop frees the element it is on;
   STAILQ_LAST names the tail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "list.h"

#define N_ITEMS 9

struct item {
	int key;
	LIST_ENTRY(item) l;
	TAILQ_ENTRY(item) t;
	SLIST_ENTRY(item) s;
	STAILQ_ENTRY(item) sq;
};

static struct item *item_new(int key)
{
	struct item *it = calloc(1, sizeof(*it));

	assert_non_null(it);
	it->key = key;
	return it;
}

static void tailq_frees_odd_keys(void **state)
{
	TAILQ_HEAD(, item) head = TAILQ_HEAD_INITIALIZER(head);
	struct item *it, *next;
	int seen = 0, left = 0;

	(void)state;
	for (int i = 0; i < N_ITEMS; i++) {
		it = item_new(i); /* the macros name their element more than once */
		TAILQ_INSERT_TAIL(&head, it, t);
	}
	TAILQ_FOREACH_SAFE(it, &head, t, next) {
		assert_int_equal(it->key, seen++);
		if (it->key % 2) {
			TAILQ_REMOVE(&head, it, t);
			free(it);
		}
	}
	assert_int_equal(seen, N_ITEMS);
	TAILQ_FOREACH_SAFE(it, &head, t, next) {
		assert_int_equal(it->key, 2 * left++);
		TAILQ_REMOVE(&head, it, t);
		free(it);
	}
	assert_int_equal(left, (N_ITEMS + 1) / 2);
	assert_true(TAILQ_EMPTY(&head));
}

static void list_frees_every_element(void **state)
{
	LIST_HEAD(, item) head = LIST_HEAD_INITIALIZER(head);
	struct item *it, *next;
	int seen = 0;

	(void)state;
	for (int i = 0; i < N_ITEMS; i++) {
		it = item_new(i);
		LIST_INSERT_HEAD(&head, it, l);
	}
	LIST_FOREACH_SAFE(it, &head, l, next) {
		assert_int_equal(it->key, N_ITEMS - 1 - seen++);
		LIST_REMOVE(it, l);
		free(it);
	}
	assert_int_equal(seen, N_ITEMS);
	assert_true(LIST_EMPTY(&head));
}

static void singly_linked_forms_free_as_they_go(void **state)
{
	SLIST_HEAD(, item) sh = SLIST_HEAD_INITIALIZER(sh);
	STAILQ_HEAD(, item) qh = STAILQ_HEAD_INITIALIZER(qh);
	struct item *it, *next;
	int seen = 0;

	(void)state;
	for (int i = 0; i < N_ITEMS; i++) {
		it = item_new(i);
		SLIST_INSERT_HEAD(&sh, it, s);
		it = item_new(i);
		STAILQ_INSERT_TAIL(&qh, it, sq);
	}
	SLIST_FOREACH_SAFE(it, &sh, s, next) {
		seen++;
		SLIST_REMOVE_HEAD(&sh, s);
		free(it);
	}
	STAILQ_FOREACH_SAFE(it, &qh, sq, next) {
		assert_int_equal(it->key, seen++ - N_ITEMS);
		STAILQ_REMOVE_HEAD(&qh, sq);
		free(it);
	}
	assert_int_equal(seen, 2 * N_ITEMS);
	assert_true(SLIST_EMPTY(&sh) && STAILQ_EMPTY(&qh));
}

static void stailq_last_is_the_tail(void **state)
{
	STAILQ_HEAD(, item) qh = STAILQ_HEAD_INITIALIZER(qh);
	struct item *it, *next;

	(void)state;
	assert_null(STAILQ_LAST(&qh, item, sq));
	for (int i = 0; i < N_ITEMS; i++) {
		it = item_new(i);
		STAILQ_INSERT_TAIL(&qh, it, sq);
		assert_ptr_equal(STAILQ_LAST(&qh, item, sq), it);
	}
	STAILQ_FOREACH_SAFE(it, &qh, sq, next)
		free(it);
	STAILQ_INIT(&qh);
	assert_null(STAILQ_LAST(&qh, item, sq));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(tailq_frees_odd_keys),
	    cmocka_unit_test(list_frees_every_element),
	    cmocka_unit_test(singly_linked_forms_free_as_they_go),
	    cmocka_unit_test(stailq_last_is_the_tail),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
