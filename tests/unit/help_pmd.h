/* help_pmd: a permessage-deflate message inflated the way a client
   inflates it (RFC 7692 7.2.2): the body, then 00 00 ff ff, through the
   client's raw inflater with Z_SYNC_FLUSH. The gateway's bodies must
   never end the stream (no block marked final: Chromium fails the
   connection on one), so a client may keep one inflater, never reset,
   from message to message; callers pass theirs. Shared by the unit tests
   and the fuzzer of the coder, so all hold bodies to one client. */
#ifndef PTG_TEST_HELP_PMD_H
#define PTG_TEST_HELP_PMD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "buf.h"

/* Appends what body inflates to out; 0 when it all inflated without
   ending the stream, -1 otherwise. */
static inline int help_pmd_inflate(z_stream *z, const uint8_t *body, size_t len,
				   struct buf *out)
{
	static const uint8_t tail[4] = {0x00, 0x00, 0xff, 0xff};
	uint8_t *in = malloc(len + 4);
	int r;

	if (!in)
		return -1;
	if (len > 0)
		memcpy(in, body, len);
	memcpy(in + len, tail, 4);
	z->next_in = in;
	z->avail_in = (uInt)(len + 4);
	do {
		z->next_out = buf_reserve(out, 65536);
		z->avail_out = 65536;
		r = inflate(z, Z_SYNC_FLUSH);
		buf_commit(out, 65536 - z->avail_out);
	} while (r == Z_OK && z->avail_out == 0);
	free(in);
	/* Z_BUF_ERROR: nothing left to do, the stream still open. */
	return (r == Z_OK || r == Z_BUF_ERROR) && z->avail_in == 0 ? 0 : -1;
}

#endif
