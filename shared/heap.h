/* heap: an intrusive binary min-heap. Each element embeds a heap_node
   that remembers its position, so removing any element (not only the
   minimum) is O(log n); the event loop keeps its timers in one. */
#ifndef PTG_HEAP_H
#define PTG_HEAP_H

#include <stdbool.h>
#include <stddef.h>

#define HEAP_NONE ((size_t)-1)

/* Embedded in each element; index is HEAP_NONE while not in a heap. */
struct heap_node {
	size_t index;
};

/* True when a orders strictly before b. */
typedef int (*heap_less_fn)(const struct heap_node *a, const struct heap_node *b);

struct heap {
	struct heap_node **nodes;
	size_t n;
	size_t cap;
	heap_less_fn less;
};

/* An empty heap ordered by less; allocates nothing yet. */
void heap_init(struct heap *h, heap_less_fn less);
/* Frees the array; the elements belong to the caller. */
void heap_free(struct heap *h);
/* Inserts node, which must not be in a heap; grows via xalloc (aborts
   on out-of-memory, never fails). */
void heap_push(struct heap *h, struct heap_node *node);
/* Removes node if it is in h; a no-op for a node in no heap. */
void heap_remove(struct heap *h, struct heap_node *node);
/* The minimum, or NULL when empty; stays in the heap. */
struct heap_node *heap_min(const struct heap *h);
/* Marks node as in no heap; call once before its first push. */
void heap_node_init(struct heap_node *node);

#endif
