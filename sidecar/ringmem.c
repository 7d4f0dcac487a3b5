/* ringmem: see ringmem.h. A chunk is a header and the blocks after it;
   it counts its live blocks, and the oldest live block is always in the
   oldest chunk, so freeing needs no pointer. */
#include "ringmem.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "xalloc.h"

#define ALIGN	    16
#define ROUND_UP(n) (((n) + ALIGN - 1) & ~(size_t)(ALIGN - 1))

struct ringmem_chunk {
	TAILQ_ENTRY(ringmem_chunk) link;
	size_t size; /* the whole chunk, header included */
	size_t used; /* from the chunk's start, header included */
	size_t live; /* blocks handed out from it and not freed */
	bool mapped; /* a huge-page chunk of its own mapping */
};

static const size_t header = ROUND_UP(sizeof(struct ringmem_chunk));

/* RINGMEM_CHUNK_MAX bytes at an address aligned to it (the kernel backs
   only aligned 2 MiB ranges with a huge page); NULL when mmap fails. */
static void *map_aligned(void)
{
	size_t want = RINGMEM_CHUNK_MAX, lead;
	uint8_t *p = mmap(NULL, 2 * want, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	lead = (want - (uintptr_t)p % want) % want;
	if (lead)
		munmap(p, lead);
	munmap(p + lead + want, want - lead);
	/* Advice only: a kernel without THP leaves it 4 KiB pages. */
	(void)madvise(p + lead, want, MADV_HUGEPAGE);
	return p + lead;
}

static struct ringmem_chunk *chunk_new(size_t size)
{
	struct ringmem_chunk *c = NULL;
	bool mapped = false;

	if (size == RINGMEM_CHUNK_MAX) {
		c = map_aligned();
		mapped = c != NULL;
	}
	if (!c)
		c = xmalloc(size);
	*c = (struct ringmem_chunk){.size = size, .used = header, .mapped = mapped};
	return c;
}

static void chunk_free(struct ringmem_chunk *c)
{
	if (c->mapped)
		munmap(c, c->size);
	else
		free(c);
}

void ringmem_init(struct ringmem *m, size_t budget)
{
	TAILQ_INIT(&m->chunks);
	m->spare = NULL;
	m->next_size = RINGMEM_CHUNK_MIN;
	m->max_size = RINGMEM_CHUNK_MIN;
	while (m->max_size < RINGMEM_CHUNK_MAX && m->max_size * 2 <= budget / 4)
		m->max_size *= 2;
}

/* A chunk with room for a block of n (rounded) bytes: the spare when it
   fits, else a new one of the next size (or just large enough). */
static struct ringmem_chunk *fresh_chunk(struct ringmem *m, size_t n)
{
	struct ringmem_chunk *c = m->spare;
	size_t size = m->next_size;

	if (c && header + n <= c->size) {
		m->spare = NULL;
		c->used = header;
		return c;
	}
	if (size < m->max_size)
		m->next_size = size * 2;
	if (header + n > size)
		size = header + n;
	return chunk_new(size);
}

void *ringmem_alloc(struct ringmem *m, size_t n)
{
	struct ringmem_chunk *c = TAILQ_LAST(&m->chunks, ringmem_chunks);
	void *p;

	n = ROUND_UP(n ? n : 1);
	if (!c || c->size - c->used < n) {
		c = fresh_chunk(m, n);
		TAILQ_INSERT_TAIL(&m->chunks, c, link);
	}
	p = (uint8_t *)c + c->used;
	c->used += n;
	c->live++;
	return p;
}

/* An emptied chunk: kept as the spare when it is of the largest size
   and there is none, else freed. */
static void retire(struct ringmem *m, struct ringmem_chunk *c)
{
	if (!m->spare && c->size == m->max_size) {
		m->spare = c;
		return;
	}
	chunk_free(c);
}

void ringmem_free_oldest(struct ringmem *m)
{
	struct ringmem_chunk *c = TAILQ_FIRST(&m->chunks);

	if (!c || !c->live)
		abort(); /* a caller's bug: nothing handed out */
	c->live--;
	if (c->live)
		return;
	TAILQ_REMOVE(&m->chunks, c, link);
	if (TAILQ_EMPTY(&m->chunks)) {
		/* The newest chunk emptied: it takes the next blocks again. */
		c->used = header;
		TAILQ_INSERT_TAIL(&m->chunks, c, link);
		return;
	}
	retire(m, c);
}

void ringmem_release(struct ringmem *m)
{
	struct ringmem_chunk *c, *t;

	TAILQ_FOREACH_SAFE(c, &m->chunks, link, t)
		chunk_free(c);
	if (m->spare)
		chunk_free(m->spare);
	TAILQ_INIT(&m->chunks);
	m->spare = NULL;
	m->next_size = RINGMEM_CHUNK_MIN;
}
