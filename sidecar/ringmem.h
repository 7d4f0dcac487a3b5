/* ringmem: the replay ring's memory. The ring frees its entries strictly
   oldest first, so they are carved one after another from chunks instead
   of one malloc each: the first chunks are small (an idle session's ring
   costs a few KiB), the next ones double up to RINGMEM_CHUNK_MAX, and
   chunks of that size are 2 MiB-aligned and offered to the kernel for
   transparent huge pages. A flood's first 64 MiB (the default
   --replay-bytes) then cost a few dozen page faults, not 16,000, and a
   chunk whose entries are all gone is kept for the next ones (one spare)
   instead of going back to the allocator. No I/O, no locking: one
   session's loop owns its ring. */
#ifndef PTG_RINGMEM_H
#define PTG_RINGMEM_H

#include <stddef.h>

#include "list.h"

/* The largest chunk, and the size from which chunks are huge-page backed. */
#define RINGMEM_CHUNK_MAX (2u << 20)
/* The first chunk. */
#define RINGMEM_CHUNK_MIN (16u << 10)

struct ringmem_chunk;

struct ringmem {
	TAILQ_HEAD(ringmem_chunks, ringmem_chunk) chunks; /* oldest first */
	struct ringmem_chunk *spare; /* an emptied chunk of the largest size */
	size_t next_size;	     /* the next new chunk's size */
	size_t max_size;	     /* chunks grow up to this */
};

/* budget: the most the ring keeps. Chunks grow to a quarter of it (a
   power of two between RINGMEM_CHUNK_MIN and RINGMEM_CHUNK_MAX), so what
   the chunks hold beyond the ring's entries (the freed start of the
   oldest chunk, the unused end of the newest and the spare) stays below
   three of them. */
void ringmem_init(struct ringmem *m, size_t budget);
/* n bytes, 16-aligned, newer than every block handed out before. Never
   fails (aborts when out of memory, as xmalloc). */
void *ringmem_alloc(struct ringmem *m, size_t n);
/* Frees the oldest block still handed out. */
void ringmem_free_oldest(struct ringmem *m);
/* Frees every block and chunk; m is then as ringmem_init left it. */
void ringmem_release(struct ringmem *m);

#endif
