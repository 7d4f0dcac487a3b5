/* unit: shared */
/* heap: random pushes and removals (of the minimum and of arbitrary
   nodes) checked against a plain array after every step, and the
   indices kept in the nodes. */
#include "../../shared/heap.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

/* ---- what the test reads of heap.c, which it includes ---- */

/* 1 while node is in a heap. */
static bool heap_contains(const struct heap_node *node)
{
	return node->index != HEAP_NONE;
}

struct item {
	struct heap_node node; /* first, so a node pointer is an item pointer */
	int key;
};

static int item_less(const struct heap_node *a, const struct heap_node *b)
{
	return ((const struct item *)a)->key < ((const struct item *)b)->key;
}

static int ref_min_key(struct item *items, size_t n)
{
	int min = INT32_MAX;
	size_t i;

	for (i = 0; i < n; i++) {
		if (heap_contains(&items[i].node) && items[i].key < min)
			min = items[i].key;
	}
	return min;
}

/* Every node's index points back at it, and no child is below its parent. */
static void check_shape(const struct heap *h)
{
	size_t i;

	for (i = 0; i < h->n; i++) {
		assert_int_equal(h->nodes[i]->index, i);
		if (i > 0)
			assert_false(item_less(h->nodes[i], h->nodes[(i - 1) / 2]));
	}
}

static void test_random_against_reference(void **state)
{
	enum { N = 600, STEPS = 6000 };
	static struct item items[N];
	struct heap h;
	size_t i, in = 0;

	srand(6);
	heap_init(&h, item_less);
	for (i = 0; i < N; i++) {
		heap_node_init(&items[i].node);
		items[i].key = rand() % 200; /* many equal keys */
	}
	for (i = 0; i < STEPS; i++) {
		struct item *it = &items[rand() % N];
		struct heap_node *min;

		if (heap_contains(&it->node)) {
			heap_remove(&h, &it->node);
			assert_false(heap_contains(&it->node));
			in--;
		} else {
			it->key = rand() % 200;
			heap_push(&h, &it->node);
			in++;
		}
		assert_int_equal(h.n, in);
		check_shape(&h);
		min = heap_min(&h);
		if (in == 0)
			assert_null(min);
		else
			assert_int_equal(((struct item *)min)->key,
					 ref_min_key(items, N));
	}
	/* Draining by the minimum yields the keys in order. */
	{
		int last = -1;
		struct heap_node *min;

		while ((min = heap_min(&h))) {
			assert_true(((struct item *)min)->key >= last);
			last = ((struct item *)min)->key;
			heap_remove(&h, min);
		}
	}
	heap_free(&h);
}

static void test_remove_absent_and_free(void **state)
{
	struct item a = {.key = 1}, b = {.key = 2};
	struct heap h, other;

	heap_init(&h, item_less);
	heap_init(&other, item_less);
	heap_node_init(&a.node);
	heap_node_init(&b.node);
	heap_remove(&h, &a.node); /* never pushed: a no-op */
	heap_push(&h, &a.node);
	heap_push(&other, &b.node);
	heap_remove(&h, &b.node); /* in another heap: left alone */
	assert_true(heap_contains(&b.node));
	assert_int_equal(h.n, 1);
	heap_free(&h);
	assert_false(heap_contains(&a.node));
	assert_null(heap_min(&h));
	heap_free(&other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_against_reference),
	    cmocka_unit_test(test_remove_absent_and_free),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
