/* buf: a growable byte buffer with a read offset. Consumed bytes are
   reclaimed lazily: the content moves to the front only when room is
   needed and the dead prefix is worth reclaiming. */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

uint8_t buf__empty[1];

void buf_init(struct buf *b)
{
	b->data = NULL;
	b->off = 0;
	b->len = 0;
	b->cap = 0;
}

void buf_free(struct buf *b)
{
	if (!b)
		return;
	free(b->data);
	buf_init(b);
}

void buf_reset(struct buf *b)
{
	b->off = 0;
	b->len = 0;
}

uint8_t *buf_reserve(struct buf *b, size_t n)
{
	size_t size = buf_size(b);
	size_t cap;

	if (b->cap - b->len >= n)
		return b->data + b->len;
	/* Reclaim the consumed prefix first when that alone makes room. */
	if (b->off > 0 && b->cap - size >= n) {
		memmove(b->data, b->data + b->off, size);
		b->off = 0;
		b->len = size;
		return b->data + b->len;
	}
	if (n > SIZE_MAX / 2 - b->len)
		abort();
	cap = b->cap ? b->cap : 64;
	while (cap - b->len < n)
		cap *= 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
	return b->data + b->len;
}

void buf_commit(struct buf *b, size_t n)
{
	if (n > b->cap - b->len)
		abort();
	b->len += n;
}

void buf_append(struct buf *b, const void *p, size_t n)
{
	if (n == 0)
		return;
	memcpy(buf_reserve(b, n), p, n);
	b->len += n;
}

void buf_append_str(struct buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}

void buf_appendf(struct buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vappendf(b, fmt, ap);
	va_end(ap);
}

void buf_vappendf(struct buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n <= 0)
		return;
	/* +1 for the NUL vsnprintf writes; it is not committed. */
	vsnprintf((char *)buf_reserve(b, (size_t)n + 1), (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void buf_consume(struct buf *b, size_t n)
{
	if (n > buf_size(b))
		abort();
	b->off += n;
	if (b->off == b->len) {
		b->off = 0;
		b->len = 0;
	}
}

uint8_t *buf_steal(struct buf *b, size_t *len)
{
	size_t size = buf_size(b);
	uint8_t *p;

	if (b->off > 0 && b->data)
		memmove(b->data, b->data + b->off, size);
	b->off = 0;
	b->len = size;
	buf_reserve(b, 1);
	b->data[size] = '\0';
	p = b->data;
	if (len)
		*len = size;
	buf_init(b);
	return p;
}
