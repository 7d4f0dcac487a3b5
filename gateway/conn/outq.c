/* outq: a ring of chunks with a write offset into the first.
   Shared frames are queued by reference so fan-out costs one slot per
   connection; private bytes are copied, and small consecutive pushes (a
   control frame arrives from wslay as header, then payload) share one
   buffer. */
#include "outq.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* Room a private buffer gets at least: a whole control frame (2 + 125). */
#define OUTQ__PRIVATE_MIN 256
/* Slots a ring starts with, and keeps once its queue empties: a bigger
   ring, grown by a burst, is given back then, so an idle connection
   holds at most this many (24 bytes each). */
#define OUTQ__RING_MIN 8

struct outq_private {
	bool starts_frame; /* a WebSocket frame begins at its first byte */
	size_t len;	   /* bytes used */
	size_t cap;	   /* bytes allocated */
	uint8_t bytes[];
};

/* One slot: a shared frame, or private bytes. */
struct outq_chunk {
	struct wsframe *frame;	   /* shared data, or NULL */
	struct outq_private *priv; /* private bytes when frame is NULL */
	int64_t queued_ms;	   /* when a frame was pushed */
};

static struct outq_chunk *slot(const struct outq *q, unsigned i)
{
	return &q->ring[(q->head + i) & (q->cap - 1)];
}

static const uint8_t *data(const struct outq_chunk *c)
{
	return c->frame ? c->frame->data : c->priv->bytes;
}

static size_t chunk_len(const struct outq_chunk *c)
{
	return c->frame ? c->frame->len : c->priv->len;
}

static bool starts_frame(const struct outq_chunk *c)
{
	return c->frame || c->priv->starts_frame;
}

static void chunk_free(struct outq_chunk *c)
{
	wsframe_unref(c->frame);
	free(c->priv);
}

/* Moves the chunks to a ring of cap slots, in order from slot 0. */
static void resize(struct outq *q, unsigned cap)
{
	struct outq_chunk *ring = xmalloc(cap * sizeof(*ring));

	for (unsigned i = 0; i < q->count; i++)
		ring[i] = *slot(q, i);
	free(q->ring);
	q->ring = ring;
	q->cap = cap;
	q->head = 0;
}

static void append(struct outq *q, const struct outq_chunk *c)
{
	if (q->count == q->cap)
		resize(q, q->cap ? q->cap * 2 : OUTQ__RING_MIN);
	*slot(q, q->count++) = *c;
	q->bytes += chunk_len(c);
}

/* Called whenever the queue empties: a ring a burst grew is returned. */
static void shrink_when_empty(struct outq *q)
{
	if (q->count > 0)
		return;
	q->head = 0;
	if (q->cap > OUTQ__RING_MIN) {
		free(q->ring);
		q->ring = NULL;
		q->cap = 0;
	}
}

void outq_init(struct outq *q)
{
	q->ring = NULL;
	q->head = 0;
	q->count = 0;
	q->cap = 0;
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
	unsigned i = q->head_off > 0 ? 1 : 0;

	for (unsigned seen = 0; i < q->count && seen < 4; i++, seen++) {
		const struct outq_chunk *c = slot(q, i);

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
	if (q == NULL)
		return;
	for (unsigned i = 0; i < q->count; i++)
		chunk_free(slot(q, i));
	free(q->ring);
	outq_init(q);
}

void outq_push_frame(struct outq *q, struct wsframe *f, int64_t now_ms)
{
	struct outq_chunk c = {.frame = wsframe_ref(f), .queued_ms = now_ms};

	append(q, &c);
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
	struct outq_chunk *tail = q->count ? slot(q, q->count - 1) : NULL;
	struct outq_chunk c = {0};
	size_t cap;

	if (n == 0)
		return;
	if (tail && !tail->frame && tail->priv->cap - tail->priv->len >= n) {
		memcpy(tail->priv->bytes + tail->priv->len, p, n);
		tail->priv->len += n;
		q->bytes += n;
		track(q, p, n);
		return;
	}
	cap = n > OUTQ__PRIVATE_MIN ? n : OUTQ__PRIVATE_MIN;
	c.priv = xmalloc(sizeof(*c.priv) + cap);
	c.priv->starts_frame = at_frame_start(q);
	c.priv->cap = cap;
	c.priv->len = n;
	memcpy(c.priv->bytes, p, n);
	append(q, &c);
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
	size_t off = q->head_off;
	int i = 0;

	for (; (unsigned)i < q->count && i < max; i++) {
		const struct outq_chunk *c = slot(q, (unsigned)i);

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
		struct outq_chunk *c = slot(q, 0);
		size_t left = chunk_len(c) - q->head_off;

		if (n < left) {
			q->head_off += n;
			break;
		}
		n -= left;
		chunk_free(c);
		q->head = (q->head + 1) & (q->cap - 1);
		q->count--;
		q->head_off = 0;
	}
	shrink_when_empty(q);
	find_waiting(q);
}

/* Keeps the chunks keep() says yes to, in order, freeing the rest; the
   kept ones move up in the ring in place. Returns the bytes dropped. */
static size_t filter(struct outq *q,
		     bool (*keep)(const struct outq *q, unsigned i, void *st), void *st)
{
	size_t before = q->bytes;
	unsigned kept = 0;
	bool head_kept = false;

	q->bytes = 0;
	for (unsigned i = 0; i < q->count; i++) {
		struct outq_chunk *c = slot(q, i);

		if (!keep(q, i, st)) {
			chunk_free(c);
			continue;
		}
		head_kept |= i == 0;
		q->bytes += chunk_len(c);
		*slot(q, kept++) = *c;
	}
	q->count = kept;
	/* A dropped head had no offset; a kept one keeps its offset. */
	if (head_kept)
		q->bytes -= q->head_off;
	else
		q->head_off = 0;
	shrink_when_empty(q);
	find_waiting(q);
	return before - q->bytes;
}

static bool started_head(const struct outq *q, unsigned i)
{
	return i == 0 && q->head_off > 0;
}

/* A started head must finish; private bytes are control frames. */
static bool keep_unless_data(const struct outq *q, unsigned i, void *st)
{
	(void)st;
	return !slot(q, i)->frame || started_head(q, i);
}

size_t outq_drop_data(struct outq *q)
{
	return filter(q, keep_unless_data, NULL);
}

/* A started head goes on to its frame's end: the chunks that carry the
   rest of that frame (none starts a frame) are kept with it. *in_head
   says whether chunk i is still inside that frame. */
static bool keep_started_frame(const struct outq *q, unsigned i, void *st)
{
	bool *in_head = st;

	if (i == 0)
		*in_head = started_head(q, 0);
	else if (*in_head && starts_frame(slot(q, i)))
		*in_head = false;
	return *in_head;
}

size_t outq_drop_unsent(struct outq *q)
{
	bool in_head = false;

	return filter(q, keep_started_frame, &in_head);
}
