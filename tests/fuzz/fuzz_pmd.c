/* fuzz_pmd: libFuzzer harness for pmd_deflate, the gateway's
   permessage-deflate coder. The input's first byte picks the level (1
   to 12), the rest is the payload. Oracles beyond the sanitizers:
   - a body inflates back to the payload exactly the way a client
     inflates a message (body, then 00 00 ff ff, Z_SYNC_FLUSH) without
     the stream ending: no block marked final, which Chromium refuses;
   - a second body inflates after it in the same inflater, not reset
     (a client may keep its inflater from message to message);
   - with less room than the payload, a body is 0 or shorter than it. */
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "buf.h"
#include "fuzz_oracle.h"
#include "help_pmd.h"
#include "pmd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inflates body as a client does through z; the output must be want. */
static void client_inflate(z_stream *z, const uint8_t *body, size_t len,
			   const uint8_t *want, size_t n)
{
	struct buf out = BUF_INIT;

	fuzz__assert(help_pmd_inflate(z, body, len, &out) == 0);
	fuzz__assert(buf_size(&out) == n);
	fuzz__assert(n == 0 || !memcmp(buf_head(&out), want, n));
	buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data + 1;
	size_t n = size ? size - 1 : 0, cap = n + 64, len;
	z_stream z = {0};
	uint8_t *body;
	int level;

	if (size == 0 || n > 1 << 20)
		return 0;
	level = data[0] % 12 + 1;
	body = malloc(cap);
	len = pmd_deflate(level, p, n, body, cap);
	fuzz__assert(len > 0 && len <= cap);
	fuzz__assert(inflateInit2(&z, -15) == Z_OK);
	client_inflate(&z, body, len, p, n);
	client_inflate(&z, body, len, p, n);
	if (n > 0) {
		len = pmd_deflate(level, p, n, body, n - 1);
		fuzz__assert(len < n);
		if (len > 0)
			client_inflate(&z, body, len, p, n);
	}
	inflateEnd(&z);
	free(body);
	return 0;
}
