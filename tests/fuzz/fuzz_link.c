/* fuzz_link: libFuzzer harness for the link framing and protobuf-c
   unpacking the sidecar and gateway apply to every byte from a link. The
   input is fed in chunks whose sizes come from the input itself, so
   split frames are exercised too. */
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "link.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf in = BUF_INIT;
	size_t chunk = size ? (size_t)data[0] % 64 + 1 : 1;
	Ptg__LinkMessage *m;
	int rc = 0;

	for (size_t off = size ? 1 : 0; off < size && rc >= 0; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;
		buf_append(&in, data + off, n);
		while ((rc = link_decode(&in, &m)) == 1) {
			struct buf again = BUF_INIT;
			/* Whatever decodes must encode again. */
			link_encode(m, &again);
			buf_free(&again);
			link_message_free(m);
		}
	}
	buf_free(&in);
	return 0;
}
