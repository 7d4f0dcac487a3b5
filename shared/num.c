/* num: see num.h. strtoull and strtoll alone would take " 5", "+5", and
   "-1" (as a huge unsigned value); here the digits are read by hand and
   every step is checked for overflow. */
#include "num.h"

#include <errno.h>
#include <string.h>

int num_parse_u64_n(const char *s, size_t n, uint64_t lo, uint64_t hi, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

int num_parse_hex_u64_n(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || n == 0 || n > 16)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else
			return -EINVAL;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

int num_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	return num_parse_u64_n(s, s ? strlen(s) : 0, lo, hi, out);
}

int num_parse_i64_n(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *out)
{
	/* The magnitude of INT64_MIN is one more than INT64_MAX. */
	const uint64_t neg_max = (uint64_t)INT64_MAX + 1;
	int neg = s && n && s[0] == '-';
	uint64_t mag;
	int64_t v;

	if (num_parse_u64_n(s ? s + neg : NULL, n - (size_t)neg, 0,
			    neg ? neg_max : INT64_MAX, &mag) < 0)
		return -EINVAL;
	if (!neg)
		v = (int64_t)mag;
	else if (mag == neg_max)
		v = INT64_MIN;
	else
		v = -(int64_t)mag;
	if (v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

int num_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	return num_parse_i64_n(s, s ? strlen(s) : 0, lo, hi, out);
}

int num_parse_duration_s(const char *s, int64_t max, int64_t *out)
{
	static const struct {
		char unit;
		uint64_t seconds;
	} units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
	size_t n = s ? strlen(s) : 0;
	uint64_t mul = 1, v;

	if (n == 0 || max < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (s[n - 1] == units[i].unit) {
			mul = units[i].seconds;
			n--;
			break;
		}
	}
	if (num_parse_u64_n(s, n, 0, (uint64_t)max / mul, &v) < 0)
		return -EINVAL;
	*out = (int64_t)(v * mul);
	return 0;
}
