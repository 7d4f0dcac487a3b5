/* fuzz_relayhead: libFuzzer harness for the parser of an owning
   gateway's answer head (relay_parse_head: what a forwarded attach reads
   before its 101, from another host). Oracles beyond the sanitizers:
   - a head it accepts ends with its blank line, within the input and
     the cap, with a status of 100..599 and at most FORWARD_HEADERS_MAX
     pairs, each a non-empty name of token characters and a value free
     of CR, LF and other controls but tab;
   - any shorter prefix of an accepted head is "not yet" (0), never an
     error or another head: the answer is the same however the bytes
     arrive. */
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "forward.h"
#include "fuzz_oracle.h"
#include "relay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_pairs(const struct buf *pairs, size_t n)
{
	const char *p = (const char *)buf_head(pairs), *end = p + buf_size(pairs);

	fuzz__assert(n <= FORWARD_HEADERS_MAX);
	for (size_t i = 0; i < n; i++) {
		size_t name = strlen(p), value;

		fuzz__assert(name > 0 && p + name < end);
		for (size_t k = 0; k < name; k++)
			fuzz__assert(p[k] > ' ' && p[k] < 127 && p[k] != ':');
		p += name + 1;
		value = strlen(p);
		fuzz__assert(p + value < end);
		for (size_t k = 0; k < value; k++)
			fuzz__assert((unsigned char)p[k] >= ' ' || p[k] == '\t');
		p += value + 1;
	}
	fuzz__assert(p == end);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct buf pairs;
	unsigned status = 0, st2;
	size_t n = 0, n2;
	long len;

	buf_init(&pairs);
	len = relay_parse_head(s, size, &status, &pairs, &n);
	if (len > 0) {
		fuzz__assert((size_t)len <= size && len <= RELAY_HEAD_MAX);
		fuzz__assert(len >= 4 && !memcmp(s + len - 4, "\r\n\r\n", 4));
		fuzz__assert(status >= 100 && status <= 599);
		check_pairs(&pairs, n);
		for (size_t cut = 0; cut < (size_t)len; cut += 1 + cut / 8)
			fuzz__assert(relay_parse_head(s, cut, &st2, &pairs, &n2) == 0);
	}
	buf_free(&pairs);
	return 0;
}
