/* outq: one connection's output queue, a ring of chunks written with
   writev. A chunk is either a reference to a shared struct wsframe (fan-out
   data, queued on many connections at once) or a private copy of bytes
   (wslay's control frames, the HTTP 101 response). Only the head chunk may
   be partly written. The queue only ever holds whole WebSocket frames
   (see ws.h), which is what lets outq_drop_data cut data out of it while
   the stream stays valid. Bounding is the caller's: check
   outq_would_overflow before pushing data. */
#ifndef PTG_OUTQ_H
#define PTG_OUTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "ws.h"

struct outq_chunk;

struct outq {
	/* A ring, not a list: queuing a shared frame is then a store, not an
	   allocation. With a thousand observers the chunk a frame took on
	   every connection, malloc'd and freed, was 14% of the gateway. */
	struct outq_chunk *ring; /* cap slots, NULL while cap is 0 */
	unsigned head;		 /* slot of the first chunk */
	unsigned count;		 /* chunks queued */
	unsigned cap;		 /* slots: 0 or a power of two */
	size_t head_off;	 /* bytes of the first chunk already written */
	size_t bytes;		 /* bytes queued and not yet written */
	/* Where the private bytes pushed last stand in their frame, so each
	   chunk knows whether a frame starts with it (outq_drop_unsent):
	   wslay hands a frame over in pieces, and a piece that does not fit
	   the tail chunk starts a new one. */
	uint64_t frame_left; /* bytes of the current frame still to come */
	uint8_t hdr[14];     /* a frame header being pushed */
	uint8_t hdr_n;
	/* outq_oldest_waiting's answer, kept up to date by every change at
	   the head: every frame delivered to a connection asks it, and with
	   a thousand observers reading the head chunk for it was a cache
	   miss per connection per frame (11% of the gateway's CPU). */
	bool waiting;
	int64_t waiting_ms;
};

/* Makes q empty. */
void outq_init(struct outq *q);
/* Drops every chunk (unreferencing frames); q is left empty. NULL is a
   no-op. */
void outq_clear(struct outq *q);

/* Queues frame f, taking a reference of its own (the caller keeps its),
   at now_ms (any monotonic clock; see outq_oldest_waiting). */
void outq_push_frame(struct outq *q, struct wsframe *f, int64_t now_ms);
/* Queues a private copy of n bytes, appended to the tail chunk when that
   is private too. */
void outq_push_bytes(struct outq *q, const void *p, size_t n);

/* Bytes queued and not yet written. */
static inline size_t outq_bytes(const struct outq *q)
{
	return q->bytes;
}
/* Whether queuing add more bytes would take q past limit. */
bool outq_would_overflow(const struct outq *q, size_t add, size_t limit);

/* When the oldest data frame nobody has started writing was queued (the
   now_ms of its push), for the latency bound of a slow connection
   (docs/protocol.md); false when there is none. */
bool outq_oldest_waiting(const struct outq *q, int64_t *queued_ms);

/* Fills up to max iovecs with the queued bytes, in order, for writev;
   returns how many were filled (0 when empty). */
int outq_iov(const struct outq *q, struct iovec *iov, int max);
/* Marks n written bytes done (n <= outq_bytes), freeing finished chunks. */
void outq_consume(struct outq *q, size_t n);

/* Drops every data frame not yet started, keeping a partly written head
   (the peer has part of it) and all private bytes (control frames must
   still go out). Returns the number of bytes dropped. Used for
   PTY_OUTPUT_LAGGED (docs/protocol.md, "A slow connection"). */
size_t outq_drop_data(struct outq *q);

/* Drops every frame nobody has started writing, private ones too, and
   keeps only the rest of a partly written one: what a connection does
   before its close frame when the peer is to see that close now, not
   after megabytes of backlog. Call it between whole frames (never from
   inside wslay's send). Returns the number of bytes dropped. */
size_t outq_drop_unsent(struct outq *q);

#endif
