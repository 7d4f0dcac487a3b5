/* unit: sidecar */
/* test_ringmem: blocks carved oldest first keep their bytes until freed,
   whatever their sizes; chunks grow to a quarter of the budget, the
   largest ones 2 MiB-aligned; what the chunks hold beyond the live
   blocks stays under three chunks; an emptied chunk is reused, and
   release frees everything. */
#include "../../sidecar/ringmem.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* ---- what the test reads of ringmem.c, which it includes ---- */

/* Bytes of chunks held: in use, partly used or spare. */
static size_t footprint(const struct ringmem *m)
{
	const struct ringmem_chunk *c;
	size_t n = m->spare ? m->spare->size : 0;

	TAILQ_FOREACH(c, &m->chunks, link)
		n += c->size;
	return n;
}

static size_t chunks(const struct ringmem *m)
{
	const struct ringmem_chunk *c;
	size_t n = 0;

	TAILQ_FOREACH(c, &m->chunks, link)
		n++;
	return n;
}

/* ---- a FIFO of blocks, each filled with a pattern of its own ---- */

#define MAXQ 8192

struct block {
	uint8_t *p;
	size_t n;
	uint8_t tag;
};

struct fifo {
	struct block q[MAXQ];
	size_t head, count, live_bytes;
	uint8_t next_tag;
};

static uint32_t rng = 2463534242u;

static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static void push(struct ringmem *m, struct fifo *f, size_t n)
{
	struct block *b = &f->q[(f->head + f->count) % MAXQ];

	assert_true(f->count < MAXQ);
	b->p = ringmem_alloc(m, n);
	b->n = n;
	b->tag = f->next_tag++;
	assert_int_equal((uintptr_t)b->p % 16, 0);
	memset(b->p, b->tag, n);
	f->count++;
	f->live_bytes += n;
}

static void pop(struct ringmem *m, struct fifo *f)
{
	struct block *b = &f->q[f->head];

	for (size_t i = 0; i < b->n; i++)
		if (b->p[i] != b->tag)
			fail_msg("block of %zu bytes changed at %zu", b->n, i);
	ringmem_free_oldest(m);
	f->head = (f->head + 1) % MAXQ;
	f->count--;
	f->live_bytes -= b->n;
}

/* ---- tests ---- */

/* Output frames of every size, kept under a budget as the ring keeps
   them: no block overlaps another, and the chunks never hold three
   chunks more than the live blocks. */
static void test_blocks_keep_their_bytes(void **state)
{
	static const size_t budgets[] = {1024, 100 << 10, 8 << 20, 64 << 20};
	static struct fifo f;

	(void)state;
	for (size_t k = 0; k < sizeof(budgets) / sizeof(budgets[0]); k++) {
		struct ringmem m;

		memset(&f, 0, sizeof(f));
		ringmem_init(&m, budgets[k]);
		for (int i = 0; i < 6000; i++) {
			size_t n =
			    next_rand() % 7 ? next_rand() % 70000 : next_rand() % 300;

			push(&m, &f, n);
			while (f.count > 1 && f.live_bytes > budgets[k])
				pop(&m, &f);
			if (footprint(&m) > f.live_bytes + 3 * (m.max_size + 70000))
				fail_msg("budget %zu: %zu bytes of chunks for %zu live",
					 budgets[k], footprint(&m), f.live_bytes);
		}
		while (f.count)
			pop(&m, &f);
		ringmem_release(&m);
		assert_int_equal(footprint(&m), 0);
	}
}

/* Chunks double from RINGMEM_CHUNK_MIN to a quarter of the budget; the
   2 MiB ones start on a 2 MiB boundary, where the kernel can back them
   with one huge page. */
static void test_chunks_grow_to_a_quarter_of_the_budget(void **state)
{
	struct ringmem small, big;
	size_t aligned = 0;

	(void)state;
	ringmem_init(&small, 1 << 20);
	ringmem_init(&big, 64 << 20);
	assert_int_equal(small.max_size, 256 << 10);
	assert_int_equal(big.max_size, RINGMEM_CHUNK_MAX);
	for (int i = 0; i < 1000; i++) {
		size_t before = chunks(&big);
		uint8_t *p = ringmem_alloc(&big, 40000);

		ringmem_alloc(&small, 40000);
		if (chunks(&big) > before &&
		    TAILQ_LAST(&big.chunks, ringmem_chunks)->size == RINGMEM_CHUNK_MAX) {
			assert_int_equal((uintptr_t)(p - header) % RINGMEM_CHUNK_MAX, 0);
			aligned++;
		}
	}
	assert_true(aligned >= 10);
	assert_int_equal(TAILQ_LAST(&small.chunks, ringmem_chunks)->size, 256 << 10);
	ringmem_release(&small);
	ringmem_release(&big);
}

/* A ring at its budget frees a chunk for every one it fills: the emptied
   one comes back as the next (no new memory to fault in), and a ring
   that empties keeps its one chunk. */
static void test_emptied_chunks_are_reused(void **state)
{
	static struct fifo f;
	struct ringmem m;
	size_t steady;

	(void)state;
	memset(&f, 0, sizeof(f));
	ringmem_init(&m, 16 << 20);
	for (int i = 0; i < 2000; i++) {
		push(&m, &f, 32768);
		while (f.live_bytes > (16 << 20))
			pop(&m, &f);
	}
	steady = footprint(&m);
	for (int i = 0; i < 4000; i++) {
		struct ringmem_chunk *spare = m.spare;

		push(&m, &f, 32768);
		if (spare && !m.spare)
			assert_ptr_equal(TAILQ_LAST(&m.chunks, ringmem_chunks), spare);
		while (f.live_bytes > (16 << 20))
			pop(&m, &f);
		assert_true(footprint(&m) <= steady);
	}
	while (f.count)
		pop(&m, &f);
	assert_int_equal(chunks(&m), 1);
	push(&m, &f, 100);
	assert_int_equal(chunks(&m), 1);
	pop(&m, &f);
	ringmem_release(&m);
}

/* A block larger than any chunk gets a chunk of its own. */
static void test_a_block_larger_than_a_chunk(void **state)
{
	static struct fifo f;
	struct ringmem m;

	(void)state;
	memset(&f, 0, sizeof(f));
	ringmem_init(&m, 64 << 20);
	push(&m, &f, 10);
	push(&m, &f, 5 << 20);
	push(&m, &f, 10);
	assert_int_equal(chunks(&m), 3);
	pop(&m, &f);
	pop(&m, &f);
	pop(&m, &f);
	ringmem_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_blocks_keep_their_bytes),
	    cmocka_unit_test(test_chunks_grow_to_a_quarter_of_the_budget),
	    cmocka_unit_test(test_emptied_chunks_are_reused),
	    cmocka_unit_test(test_a_block_larger_than_a_chunk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
