/* outq: a STAILQ of chunks with a write offset into the first.
   Shared frames are queued by reference so fan-out costs one pointer per
   connection; private bytes are copied, and small consecutive pushes (a
   control frame arrives from wslay as header, then payload) share one
   chunk. */
#include "outq.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* Room a private chunk gets at least: a whole control frame (2 + 125). */
#define OUTQ__PRIVATE_MIN 256

struct outq_chunk {
	STAILQ_ENTRY(outq_chunk) entry;
	struct wsframe *frame; /* shared data, or NULL for private bytes */
	int64_t queued_ms;     /* when a frame was pushed */
	bool starts_frame;     /* a WebSocket frame begins at its first byte */
	size_t len;	       /* private bytes used */
	size_t cap;	       /* private bytes allocated */
	uint8_t bytes[];
};

static const uint8_t *data(const struct outq_chunk *c)
{
	return c->frame ? c->frame->data : c->bytes;
}

static size_t chunk_len(const struct outq_chunk *c)
{
	return c->frame ? c->frame->len : c->len;
}

static void chunk_free(struct outq_chunk *c)
{
	wsframe_unref(c->frame);
	free(c);
}

static void append(struct outq *q, struct outq_chunk *c)
{
	STAILQ_INSERT_TAIL(&q->chunks, c, entry);
	q->bytes += chunk_len(c);
}

void outq_init(struct outq *q)
{
	STAILQ_INIT(&q->chunks);
	q->head_off = 0;
	q->bytes = 0;
	q->frame_left = 0;
	q->hdr_n = 0;
	q->waiting = false;
}

/* Finds the oldest data frame nobody has started writing. A started head
   is on its way. Only a few chunks are looked at, so a client whose own
   replies fill its queue cannot make every change a walk: its frames
   then wait for the byte cap instead. */
static void find_waiting(struct outq *q)
{
	const struct outq_chunk *c = STAILQ_FIRST(&q->chunks);

	if (c && q->head_off > 0)
		c = STAILQ_NEXT(c, entry);
	for (int i = 0; c && i < 4; c = STAILQ_NEXT(c, entry), i++) {
		if (c->frame) {
			q->waiting = true;
			q->waiting_ms = c->queued_ms;
			return;
		}
	}
	q->waiting = false;
}

void outq_clear(struct outq *q)
{
	struct outq_chunk *c, *next;

	if (q == NULL)
		return;
	STAILQ_FOREACH_SAFE(c, &q->chunks, entry, next)
		chunk_free(c);
	outq_init(q);
}

void outq_push_frame(struct outq *q, struct wsframe *f, int64_t now_ms)
{
	struct outq_chunk *c = xmalloc(sizeof(*c));

	c->frame = wsframe_ref(f);
	c->starts_frame = true;
	c->queued_ms = now_ms;
	c->len = 0;
	c->cap = 0;
	append(q, c);
	if (!q->waiting)
		find_waiting(q);
}

/* The header's length once enough of it is known, else 0 (RFC 6455
   5.2: 2 bytes, 2 or 8 of extended length, 4 of mask). */
static size_t header_len(const uint8_t *h, size_t n)
{
	unsigned len7;

	if (n < 2)
		return 0;
	len7 = h[1] & 0x7f;
	return 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + (h[1] & 0x80 ? 4 : 0);
}

static uint64_t payload_len(const uint8_t *h)
{
	unsigned len7 = h[1] & 0x7f;
	uint64_t v = 0;

	if (len7 < 126)
		return len7;
	for (unsigned i = 0; i < (len7 == 126 ? 2u : 8u); i++)
		v = v << 8 | h[2 + i];
	return v;
}

static bool at_frame_start(const struct outq *q)
{
	return q->frame_left == 0 && q->hdr_n == 0;
}

/* Follows the frames through n pushed private bytes. */
static void track(struct outq *q, const uint8_t *p, size_t n)
{
	while (n) {
		if (q->frame_left) {
			size_t k = q->frame_left < n ? (size_t)q->frame_left : n;
			q->frame_left -= k;
			p += k;
			n -= k;
			continue;
		}
		q->hdr[q->hdr_n++] = *p++;
		n--;
		if (q->hdr_n == header_len(q->hdr, q->hdr_n)) {
			q->frame_left = payload_len(q->hdr);
			q->hdr_n = 0;
		}
	}
}

void outq_push_bytes(struct outq *q, const void *p, size_t n)
{
	struct outq_chunk *c = STAILQ_LAST(&q->chunks, outq_chunk, entry);
	size_t cap;

	if (n == 0)
		return;
	if (c && !c->frame && c->cap - c->len >= n) {
		memcpy(c->bytes + c->len, p, n);
		c->len += n;
		q->bytes += n;
		track(q, p, n);
		return;
	}
	cap = n > OUTQ__PRIVATE_MIN ? n : OUTQ__PRIVATE_MIN;
	c = xmalloc(sizeof(*c) + cap);
	c->frame = NULL;
	c->starts_frame = at_frame_start(q);
	c->cap = cap;
	c->len = n;
	memcpy(c->bytes, p, n);
	append(q, c);
	track(q, p, n);
}

bool outq_would_overflow(const struct outq *q, size_t add, size_t limit)
{
	return q->bytes > limit || add > limit - q->bytes;
}

bool outq_oldest_waiting(const struct outq *q, int64_t *queued_ms)
{
	if (q->waiting)
		*queued_ms = q->waiting_ms;
	return q->waiting;
}

int outq_iov(const struct outq *q, struct iovec *iov, int max)
{
	const struct outq_chunk *c;
	size_t off = q->head_off;
	int i = 0;

	for (c = STAILQ_FIRST(&q->chunks); c && i < max; c = STAILQ_NEXT(c, entry), i++) {
		iov[i].iov_base = (void *)(data(c) + off);
		iov[i].iov_len = chunk_len(c) - off;
		off = 0;
	}
	return i;
}

void outq_consume(struct outq *q, size_t n)
{
	if (n > q->bytes)
		abort();
	q->bytes -= n;
	while (n > 0) {
		struct outq_chunk *c = STAILQ_FIRST(&q->chunks);
		size_t left = chunk_len(c) - q->head_off;

		if (n < left) {
			q->head_off += n;
			break;
		}
		n -= left;
		STAILQ_REMOVE_HEAD(&q->chunks, entry);
		q->head_off = 0;
		chunk_free(c);
	}
	find_waiting(q);
}

size_t outq_drop_data(struct outq *q)
{
	struct outq_chunk *c = STAILQ_FIRST(&q->chunks), *next;
	size_t before = q->bytes;
	bool first = true;

	STAILQ_INIT(&q->chunks);
	q->bytes = 0;
	for (; c; c = next, first = false) {
		next = STAILQ_NEXT(c, entry);
		/* A started head must finish; private bytes are control frames. */
		if (c->frame && !(first && q->head_off > 0))
			chunk_free(c);
		else
			append(q, c);
	}
	/* A dropped head had no offset; a kept one keeps its offset. */
	q->bytes -= q->head_off;
	find_waiting(q);
	return before - q->bytes;
}

size_t outq_drop_unsent(struct outq *q)
{
	struct outq_chunk *c = STAILQ_FIRST(&q->chunks), *next;
	size_t before = q->bytes;

	STAILQ_INIT(&q->chunks);
	q->bytes = 0;
	/* A started head goes on to its frame's end: the chunks that carry
	   the rest of that frame (none starts a frame) are kept with it. */
	if (c && q->head_off > 0) {
		do {
			next = STAILQ_NEXT(c, entry);
			append(q, c);
			c = next;
		} while (c && !c->starts_frame);
		q->bytes -= q->head_off;
	}
	for (; c; c = next) {
		next = STAILQ_NEXT(c, entry);
		chunk_free(c);
	}
	find_waiting(q);
	return before - q->bytes;
}
