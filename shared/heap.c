/* heap: an array-backed binary min-heap of pointers to embedded nodes.
   Every move writes the node's new index back into it, which is what
   lets heap_remove find an arbitrary node without searching. */
#include "heap.h"

#include <stdlib.h>

#include "xalloc.h"

void heap_init(struct heap *h, heap_less_fn less)
{
	h->nodes = NULL;
	h->n = 0;
	h->cap = 0;
	h->less = less;
}

void heap_free(struct heap *h)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		h->nodes[i]->index = HEAP_NONE;
	free(h->nodes);
	heap_init(h, h->less);
}

static void place(struct heap *h, size_t i, struct heap_node *node)
{
	h->nodes[i] = node;
	node->index = i;
}

/* Moves the node at i towards the root until its parent is not greater. */
static void up(struct heap *h, size_t i)
{
	struct heap_node *node = h->nodes[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!h->less(node, h->nodes[parent]))
			break;
		place(h, i, h->nodes[parent]);
		i = parent;
	}
	place(h, i, node);
}

/* Moves the node at i towards the leaves until no child is smaller. */
static void down(struct heap *h, size_t i)
{
	struct heap_node *node = h->nodes[i];

	for (;;) {
		size_t child = 2 * i + 1;

		if (child >= h->n)
			break;
		if (child + 1 < h->n && h->less(h->nodes[child + 1], h->nodes[child]))
			child++;
		if (!h->less(h->nodes[child], node))
			break;
		place(h, i, h->nodes[child]);
		i = child;
	}
	place(h, i, node);
}

void heap_push(struct heap *h, struct heap_node *node)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 16;
		h->nodes = xrealloc(h->nodes, h->cap * sizeof(*h->nodes));
	}
	place(h, h->n++, node);
	up(h, node->index);
}

void heap_remove(struct heap *h, struct heap_node *node)
{
	size_t i = node->index;
	struct heap_node *last;

	if (i == HEAP_NONE || i >= h->n || h->nodes[i] != node)
		return;
	node->index = HEAP_NONE;
	last = h->nodes[--h->n];
	if (last == node)
		return;
	/* The last node fills the hole; it may belong above or below it. */
	place(h, i, last);
	if (i > 0 && h->less(last, h->nodes[(i - 1) / 2]))
		up(h, i);
	else
		down(h, i);
}

struct heap_node *heap_min(const struct heap *h)
{
	return h->n ? h->nodes[0] : NULL;
}

void heap_node_init(struct heap_node *node)
{
	node->index = HEAP_NONE;
}
