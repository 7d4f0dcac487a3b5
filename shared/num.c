/* num: see num.h. strtoull alone would take "+5", " 5" and "-1" (as a
   huge value); only digits are numbers here. */
#include "num.h"

#include <errno.h>
#include <stdlib.h>

int num_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}
