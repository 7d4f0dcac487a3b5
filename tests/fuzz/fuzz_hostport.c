/* fuzz_hostport: libFuzzer harness for the one HOST:PORT parser
   (addr_parse_hostport: link addresses, --listen, the CLI's gateway URL)
   and the number parser under it (num). The first byte picks the flags,
   the rest is the text. Oracles beyond the sanitizers, against a
   grammar written here independently:
   - a refusal writes neither host nor port;
   - an accepted host is 1..cap-1 visible ASCII bytes without '[', ']'
     or '@', holds a ':' exactly when the text was bracketed, and the
     port is in range (0 only with ADDR_PORT_ZERO);
   - written back ([HOST]:PORT or HOST:PORT) it parses to the same. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "fuzz_oracle.h"
#include "num.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ__CAP 40 /* small, so the host length bound is reached */

static int host_ok(const char *h)
{
	size_t n = strlen(h);

	if (n < 1 || n >= FUZZ__CAP)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (h[i] < 0x21 || h[i] > 0x7e || strchr("[]@", h[i]))
			return 0;
	return 1;
}

static void check_accepted(const char *s, size_t n, unsigned flags, const char *host,
			   uint16_t port)
{
	char again[FUZZ__CAP], text[FUZZ__CAP + 16];
	uint16_t port2 = 7;
	int len;

	fuzz__assert(host_ok(host));
	fuzz__assert(!!strchr(host, ':') == (n > 0 && s[0] == '['));
	fuzz__assert(port != 0 || (flags & ADDR_PORT_ZERO));
	len = snprintf(text, sizeof(text), strchr(host, ':') ? "[%s]:%u" : "%s:%u", host,
		       (unsigned)port);
	fuzz__assert(len > 0 && (size_t)len < sizeof(text));
	fuzz__assert(addr_parse_hostport(text, (size_t)len, flags | ADDR_PORT_ZERO, again,
					 sizeof(again), &port2, NULL, 0) == 0);
	fuzz__assert(!strcmp(again, host) && port2 == port);
}

/* num_parse_u64_n against a digit-by-digit reading done here. */
static void check_num(const char *s, size_t n)
{
	uint64_t v = 7, want = 0;
	int ok = n > 0 && n <= 19; /* 19 digits always fit in 64 bits */

	for (size_t i = 0; ok && i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			ok = 0;
		else
			want = want * 10 + (uint64_t)(s[i] - '0');
	}
	if (n > 0 && n <= 19)
		fuzz__assert((num_parse_u64_n(s, n, 0, UINT64_MAX, &v) == 0) == ok);
	else if (num_parse_u64_n(s, n, 0, UINT64_MAX, &v) != 0)
		fuzz__assert(v == 7);
	if (ok)
		fuzz__assert(v == want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char host[FUZZ__CAP] = "unset";
	const char *s = (const char *)data + 1;
	uint16_t port = 4321;
	unsigned flags;
	size_t n;

	if (size < 1)
		return 0;
	flags = data[0] & (ADDR_PORT_OPTIONAL | ADDR_PORT_ZERO);
	n = size - 1;
	check_num(s, n);
	if (addr_parse_hostport(s, n, flags, host, sizeof(host), &port, NULL, 0) < 0) {
		fuzz__assert(!strcmp(host, "unset") && port == 4321);
		return 0;
	}
	check_accepted(s, n, flags, host, port);
	return 0;
}
