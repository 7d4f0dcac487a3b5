/* ring: the per-session replay ring (docs/protocol.md, "Sequences,
   replay and keyframes"). A circular array of entry
   pointers in sequence order (capacity a power of two, doubled when full,
   halved when a quarter full) so append and evict are amortized O(1) and a
   replay finds its start by binary search. Eviction is strictly oldest
   first: a frame leaves only once every older frame has, which keeps
   "highest sequence ever evicted" a single number, and lets the entries
   be carved one after another from chunks (ringmem.h) instead of one
   malloc each. */
#include "ring.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ringmem.h"
#include "xalloc.h"

#define RING_MIN_CAP 16

struct ring {
	struct ring_limits lim;
	struct ringmem mem; /* the entries, oldest first */
	struct ring_entry **slot;
	size_t cap;  /* power of two */
	size_t head; /* slot of the oldest entry */
	size_t count;
	size_t bytes;
	uint64_t last_seq;	  /* highest sequence ever appended */
	uint64_t evicted_through; /* highest sequence ever evicted, 0 if none */
};

static size_t charge(const struct ring_entry *e)
{
	return e->len + RING_ENTRY_OVERHEAD;
}

/* The i-th oldest entry. */
static struct ring_entry *at(const struct ring *r, size_t i)
{
	return r->slot[(r->head + i) & (r->cap - 1)];
}

/* Moves the entries, in order, into a fresh array of newcap slots. */
static void resize(struct ring *r, size_t newcap)
{
	struct ring_entry **ns = xcalloc(newcap, sizeof(*ns));

	for (size_t i = 0; i < r->count; i++)
		ns[i] = at(r, i);
	free(r->slot);
	r->slot = ns;
	r->cap = newcap;
	r->head = 0;
}

struct ring *ring_new(const struct ring_limits *lim)
{
	struct ring *r = xcalloc(1, sizeof(*r));

	r->lim = *lim;
	ringmem_init(&r->mem, lim->max_bytes);
	r->cap = RING_MIN_CAP;
	r->slot = xcalloc(r->cap, sizeof(*r->slot));
	return r;
}

void ring_free(struct ring *r)
{
	if (!r)
		return;
	ringmem_release(&r->mem);
	free(r->slot);
	free(r);
}

/* Younger than max_age_ms at now_ms; a timestamp in the future is young. */
static int is_young(const struct ring *r, int64_t ts_ms, int64_t now_ms)
{
	int64_t age;

	if (r->lim.max_age_ms <= 0)
		return 0;
	if (__builtin_sub_overflow(now_ms, ts_ms, &age))
		return now_ms < ts_ms;
	return age < r->lim.max_age_ms;
}

/* Whether the oldest entry may stay: the byte budget overrides the
   count-or-age rule. */
static int front_kept(const struct ring *r, int64_t now_ms)
{
	if (r->bytes > r->lim.max_bytes)
		return 0;
	if (r->count <= r->lim.max_frames)
		return 1;
	return is_young(r, at(r, 0)->ts_ms, now_ms);
}

static void pop_front(struct ring *r)
{
	struct ring_entry *e = at(r, 0);

	r->evicted_through = e->sequence;
	r->bytes -= charge(e);
	ringmem_free_oldest(&r->mem);
	r->slot[r->head] = NULL;
	r->head = (r->head + 1) & (r->cap - 1);
	r->count--;
	if (r->cap > RING_MIN_CAP && r->count < r->cap / 4)
		resize(r, r->cap / 2);
}

static void evict(struct ring *r, int64_t now_ms)
{
	while (r->count > 1 && !front_kept(r, now_ms))
		pop_front(r);
}

int ring_append(struct ring *r, uint64_t seq, int64_t ts_ms, const void *data, size_t len)
{
	struct ring_entry *e;

	if (seq == 0 || seq <= r->last_seq)
		return -EINVAL;
	if (len > SIZE_MAX - sizeof(*e) - RING_ENTRY_OVERHEAD)
		return -EINVAL;
	e = ringmem_alloc(&r->mem, sizeof(*e) + len);
	e->sequence = seq;
	e->ts_ms = ts_ms;
	e->len = len;
	if (len)
		memcpy(e->data, data, len);
	if (r->count == r->cap)
		resize(r, r->cap * 2);
	r->slot[(r->head + r->count) & (r->cap - 1)] = e;
	r->count++;
	r->bytes += charge(e);
	r->last_seq = seq;
	evict(r, ts_ms);
	return 0;
}

void ring_expire(struct ring *r, int64_t now_ms)
{
	evict(r, now_ms);
}

void ring_forget_through(struct ring *r, uint64_t seq)
{
	if (seq > r->evicted_through)
		r->evicted_through = seq;
	if (seq > r->last_seq)
		r->last_seq = seq;
}

uint64_t ring_oldest_retained(const struct ring *r)
{
	return r->evicted_through + 1;
}

int ring_check_range(uint64_t replay_from, uint64_t oldest, uint64_t current)
{
	/* replay_from + 1 >= oldest, written without overflow. */
	if (replay_from > current || replay_from + 1 < oldest)
		return -ERANGE;
	return 0;
}

/* Index of the oldest entry with sequence > after; count if none. */
static size_t first_after(const struct ring *r, uint64_t after)
{
	size_t lo = 0, hi = r->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (at(r, mid)->sequence <= after)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ring_foreach_after(const struct ring *r, uint64_t after,
		       int (*cb)(const struct ring_entry *e, void *user), void *user)
{
	for (size_t i = first_after(r, after); i < r->count; i++) {
		int rc = cb(at(r, i), user);

		if (rc)
			return rc;
	}
	return 0;
}
