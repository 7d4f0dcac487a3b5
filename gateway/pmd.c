/* pmd: libdeflate's whole-buffer stream, reshaped into a
   permessage-deflate body, and the process's inflater (see pmd.h). */
#include "pmd.h"

#include <libdeflate.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>

#include <zlib.h>

#define PMD_LEVEL_MAX 12

/* One compressor per level for the process, made at first use (about
   660 KiB at level 6, 200 at level 1), never freed: the gateway is one
   loop. */
static struct libdeflate_compressor *compressor(int level)
{
	static struct libdeflate_compressor *c[PMD_LEVEL_MAX + 1];

	if (level < 1 || level > PMD_LEVEL_MAX)
		abort(); /* a caller's bug: levels are constants */
	if (!c[level] && !(c[level] = libdeflate_alloc_compressor(level)))
		abort(); /* only on out of memory: the xalloc policy */
	return c[level];
}

z_stream *pmd_inflater(void)
{
	static z_stream z;
	static bool ready;

	if (!ready) {
		if (inflateInit2(&z, -15) != Z_OK)
			abort(); /* only on out of memory: the xalloc policy */
		ready = true;
	}
	inflateReset(&z);
	return &z;
}

/* Where, in bits from the start of body, the last block's header begins
   and the stream ends. Inflates body (which inflates to n bytes) one
   block at a time: zlib's Z_BLOCK stops after each end-of-block code,
   the final block's included, and data_type then holds the unused bits
   of the last byte read, 64 when the block that ended was the final
   one, 128 for being between blocks. (At Z_STREAM_END the unused bits
   are already dropped.) Returns -1 when body is not exactly one
   complete stream of n bytes. The inflated bytes are not needed (zlib
   keeps its own window), so one small sink is written over and over
   rather than a frame-sized buffer taken per frame. */
static int find_ends(const uint8_t *body, size_t len, size_t n, size_t *last, size_t *end)
{
	z_stream *z = pmd_inflater();
	uint8_t sink[16384];
	bool ended = false;
	int rc = Z_OK;

	*last = 0;
	z->next_in = (Bytef *)body;
	z->avail_in = (uInt)len;
	z->avail_out = 0;
	while (rc == Z_OK) {
		uInt in0, out0;
		size_t at;

		if (z->avail_out == 0) {
			z->next_out = sink;
			z->avail_out = sizeof(sink);
		}
		in0 = z->avail_in;
		out0 = z->avail_out;
		rc = inflate(z, Z_BLOCK);
		at = (size_t)(z->next_in - body) * 8 - (size_t)(z->data_type & 7);
		if (rc == Z_OK && (z->data_type & 128)) {
			if (z->data_type & 64)
				*end = at, ended = true;
			else
				*last = at; /* the next block's header starts here */
		}
		if (rc == Z_OK && z->avail_in == in0 && z->avail_out == out0)
			rc = Z_BUF_ERROR; /* no progress: truncated */
		if (z->total_out > n)
			rc = Z_DATA_ERROR; /* more than was compressed */
	}
	return rc == Z_STREAM_END && ended && z->avail_in == 0 && z->total_out == n ? 0
										    : -1;
}

size_t pmd_deflate(int level, const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	size_t len, last, end = 0, used;

	if (n > UINT_MAX / 2 || cap > UINT_MAX / 2)
		return 0; /* zlib's counters are 32 bits */
	len = libdeflate_deflate_compress(compressor(level), in, n, out, cap);
	if (len == 0 || find_ends(out, len, n, &last, &end) < 0)
		return 0;
	if (end <= (len - 1) * 8 || end > len * 8)
		return 0; /* the stream ends before its last byte: not libdeflate's */
	out[last / 8] &= (uint8_t) ~(1u << (last % 8)); /* BFINAL off */
	used = end - (len - 1) * 8; /* bits of the last byte: 1 to 8 */
	out[len - 1] &= (uint8_t)((1u << used) - 1);
	/* The empty stored block's header is three zero bits (BFINAL 0, type
	   00) after the end; its length fields start at the next byte, and
	   they are the receiver's 00 00 ff ff. Three bits not left in the
	   last byte take one more. */
	if (8 - used >= 3)
		return len;
	if (len + 1 > cap)
		return 0;
	out[len] = 0;
	return len + 1;
}
