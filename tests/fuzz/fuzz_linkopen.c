/* fuzz_linkopen: libFuzzer harness for the opening of a link that dials
   in (linklisten_opening): the bytes a peer sends before it is trusted,
   in chunks whose sizes come from the input, through to the credential
   step's decision. Feeding stops at the first decision, as the gateway
   stops reading there; it must be one of the known ones, and a verified
   credential must name an instance. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "keys.h"
#include "linkcred.h"
#include "linklisten.h"
#include "metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct keyset *keys(void)
{
	static struct keyset *ks;
	static const uint8_t pk[32] = {0xd7, 0x5a, 0x98, 0x01, 0x82, 0xb1, 0x0a,
				       0xb7, 0xd5, 0x4b, 0xfe, 0xd3, 0xc9, 0x64,
				       0x07, 0x3a, 0x0e, 0xe1, 0x72, 0xf3, 0xda,
				       0xa6, 0x23, 0x25, 0xaf, 0x02, 0x1a, 0x68,
				       0xf7, 0x07, 0x51, 0x1a}; /* RFC 8032 test 1 */

	if (!ks) {
		ks = keys_new();
		assert(keys_add_ed25519_pub(ks, "k1", pk) == 0);
	}
	return ks;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t in[LINKLISTEN_OPENING_MAX];
	size_t chunk = size ? (size_t)data[0] % 512 + 1 : 1, len = 0;
	struct linkcred c;
	int rc = 0;

	for (size_t off = size ? 1 : 0; off < size && rc == 0 && len < sizeof(in);
	     off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;

		if (n > sizeof(in) - len)
			n = sizeof(in) - len;
		memcpy(in + len, data + off, n);
		len += n;
		rc = linklisten_opening(keys(), in, len, 1700000000, &c);
		assert(rc == 0 || rc == 1 || (rc < 0 && -rc < LINK_REFUSAL_N));
		if (rc == 1)
			assert(c.instance_id[0]);
	}
	return 0;
}
