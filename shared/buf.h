/* buf: a growable byte buffer with a read offset, used for socket input,
   output queues and encoders. */
#ifndef PTG_BUF_H
#define PTG_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct buf {
	uint8_t *data; /* bytes [off, len) are the content */
	size_t off;
	size_t len;
	size_t cap;
};

#define BUF_INIT                                                                         \
	{                                                                                \
		NULL, 0, 0, 0                                                            \
	}

/* Number of unread bytes and a pointer to the first. A buf that never
   held storage gives a valid empty span, not NULL + 0 (undefined). */
static inline size_t buf_size(const struct buf *b)
{
	return b->len - b->off;
}
extern uint8_t buf__empty[]; /* the span of a buf without storage */
static inline uint8_t *buf_head(const struct buf *b)
{
	return b->data ? b->data + b->off : buf__empty;
}

void buf_init(struct buf *b);
/* Frees the storage; the buf is left empty and reusable. NULL is a no-op. */
void buf_free(struct buf *b);
/* Drops all content, keeps the storage. */
void buf_reset(struct buf *b);
/* Makes room for n more bytes after len; returns a pointer to them. */
uint8_t *buf_reserve(struct buf *b, size_t n);
/* Marks n bytes written into the area buf_reserve returned. */
void buf_commit(struct buf *b, size_t n);
void buf_append(struct buf *b, const void *p, size_t n);
void buf_append_str(struct buf *b, const char *s);
void buf_appendf(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void buf_vappendf(struct buf *b, const char *fmt, va_list ap);
/* Drops n bytes from the front (n <= buf_size). Compacts lazily. */
void buf_consume(struct buf *b, size_t n);
/* Takes the storage out as a malloc'd block of buf_size bytes plus a
   trailing NUL; the buf is left empty. */
uint8_t *buf_steal(struct buf *b, size_t *len);

#endif
