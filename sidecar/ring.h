/* ring: the per-session replay ring (docs/protocol.md, "Sequences,
   replay and keyframes"). Holds copies of the encoded
   broadcast frames with their sequence and timestamp, evicts oldest first
   past the retention limits, and answers replay range checks. No I/O. */
#ifndef PTG_RING_H
#define PTG_RING_H

#include <stddef.h>
#include <stdint.h>

/* Bytes charged per retained entry on top of its blob: the entry header,
   its slot pointer and allocator slack. Fixed so budgets are predictable. */
#define RING_ENTRY_OVERHEAD 64

/* A frame is retained while it is among the newest max_frames OR younger
   than max_age_ms, and all of that within max_bytes (sum of len +
   RING_ENTRY_OVERHEAD). The newest frame is always kept. A zero max_frames
   or max_age_ms retains nothing by that rule alone. */
struct ring_limits {
	uint32_t max_frames;
	int64_t max_age_ms;
	size_t max_bytes;
};

struct ring_entry {
	uint64_t sequence;
	int64_t ts_ms;
	size_t len;
	uint8_t data[];
};

struct ring;

/* A new empty ring with a copy of *lim. Free with ring_free. */
struct ring *ring_new(const struct ring_limits *lim);
/* Frees the ring and every entry; NULL is a no-op. */
void ring_free(struct ring *r);
/* Copies len bytes of data as frame seq stamped ts_ms, then evicts by the
   frame-count and byte rules and by age relative to ts_ms. Returns 0, or
   -EINVAL (nothing stored) when seq is 0 or does not exceed every earlier
   one (appended or evicted). */
int ring_append(struct ring *r, uint64_t seq, int64_t ts_ms, const void *data,
		size_t len);
/* Evicts by age at now_ms (and the other rules); for a periodic timer. */
void ring_expire(struct ring *r, int64_t now_ms);
/* Declares every frame up to seq gone (a ring rebuilt after a restart
   holds none of them): replays from before seq are out of range, and
   appends must be numbered above it. */
void ring_forget_through(struct ring *r, uint64_t seq);
/* The highest sequence ever evicted + 1; 1 when nothing was evicted. */
uint64_t ring_oldest_retained(const struct ring *r);
/* The replay range, the one rule for memory and disk: 0 when a
   replay from (exclusive) replay_from can be served, i.e. replay_from + 1
   >= oldest (the oldest sequence retained anywhere) and replay_from <=
   current (the session counter); -ERANGE otherwise. */
int ring_check_range(uint64_t replay_from, uint64_t oldest, uint64_t current);
/* Calls cb for each retained entry with sequence > after, oldest first.
   Stops at the first non-zero cb result and returns it; else 0. The ring
   must not be modified from cb. Entries are owned by the ring. */
int ring_foreach_after(const struct ring *r, uint64_t after,
		       int (*cb)(const struct ring_entry *e, void *user), void *user);

#endif
