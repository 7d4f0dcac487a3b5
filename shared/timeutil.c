/* timeutil: wall and monotonic clocks in ms, and RFC 3339 text. Civil
   dates are converted by arithmetic (Howard Hinnant's days-from-civil
   algorithm) so neither direction depends on TZ or the C library's
   locale-sensitive time functions. */
#include "timeutil.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static int64_t clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t time_now_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

int64_t time_mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

int64_t time_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = floor_div(y, 400);
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = floor_div(z, 146097);
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* Writes v as exactly n decimal digits. */
static char *put(char *p, unsigned v, int n)
{
	int i;

	for (i = n - 1; i >= 0; i--) {
		p[i] = (char)('0' + v % 10);
		v /= 10;
	}
	return p + n;
}

void time_format_ms(int64_t ms, char out[TS_STRLEN + 1])
{
	int64_t days = floor_div(ms, 86400000);
	unsigned rem = (unsigned)(ms - days * 86400000);
	int64_t y;
	int m, d;
	char *p = out;

	civil_from_days(days, &y, &m, &d);
	/* Years outside 0..9999 do not fit the fixed width; clamp. */
	if (y < 0 || y > 9999) {
		memcpy(out,
		       y < 0 ? "0000-01-01T00:00:00.000Z" : "9999-12-31T23:59:59.999Z",
		       TS_STRLEN + 1);
		return;
	}
	p = put(p, (unsigned)y, 4);
	*p++ = '-';
	p = put(p, (unsigned)m, 2);
	*p++ = '-';
	p = put(p, (unsigned)d, 2);
	*p++ = 'T';
	p = put(p, rem / 3600000, 2);
	*p++ = ':';
	p = put(p, rem / 60000 % 60, 2);
	*p++ = ':';
	p = put(p, rem / 1000 % 60, 2);
	*p++ = '.';
	p = put(p, rem % 1000, 3);
	*p++ = 'Z';
	*p = '\0';
}

/* Reads exactly n digits at *p, advancing it. */
static int digits(const char **p, int n, int *out)
{
	int v = 0, i;

	for (i = 0; i < n; i++) {
		char c = (*p)[i];

		if (c < '0' || c > '9')
			return -EINVAL;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

/* Reads a literal char at *p, advancing it. */
static int expect(const char **p, char c)
{
	if (**p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

static int days_in_month(int y, int m)
{
	static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : dm[m - 1];
}

/* Optional ".digits": the first three give ms, the rest are dropped. */
static int fraction(const char **p, int *ms)
{
	int scale = 100, n = 0;

	*ms = 0;
	if (**p != '.')
		return 0;
	(*p)++;
	for (; **p >= '0' && **p <= '9'; (*p)++, n++) {
		*ms += (**p - '0') * scale;
		scale /= 10;
	}
	return n > 0 ? 0 : -EINVAL;
}

/* "Z" or "+hh:mm" / "-hh:mm", as minutes east of UTC. */
static int offset(const char **p, int *minutes)
{
	int sign, hh, mm;

	if (**p == 'Z' || **p == 'z') {
		(*p)++;
		*minutes = 0;
		return 0;
	}
	if (**p != '+' && **p != '-')
		return -EINVAL;
	sign = **p == '-' ? -1 : 1;
	(*p)++;
	if (digits(p, 2, &hh) || expect(p, ':') || digits(p, 2, &mm) || hh > 23 ||
	    mm > 59)
		return -EINVAL;
	*minutes = sign * (hh * 60 + mm);
	return 0;
}

int time_parse_rfc3339(const char *s, int64_t *ms)
{
	int y, mo, d, h, mi, sec, frac, off;
	const char *p = s;
	int64_t days;

	if (digits(&p, 4, &y) || expect(&p, '-') || digits(&p, 2, &mo) ||
	    expect(&p, '-') || digits(&p, 2, &d))
		return -EINVAL;
	if (*p != 'T' && *p != 't')
		return -EINVAL;
	p++;
	if (digits(&p, 2, &h) || expect(&p, ':') || digits(&p, 2, &mi) ||
	    expect(&p, ':') || digits(&p, 2, &sec) || fraction(&p, &frac) ||
	    offset(&p, &off) || *p != '\0')
		return -EINVAL;
	/* Second 60 is a leap second (RFC 3339 5.7); it counts as :59.999 on
	   a clock that does not have it. */
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 ||
	    sec > 60)
		return -EINVAL;
	if (sec == 60) {
		sec = 59;
		frac = 999;
	}
	days = days_from_civil(y, mo, d);
	*ms = ((days * 24 + h) * 60 + mi - off) * 60000 + (int64_t)sec * 1000 + frac;
	return 0;
}
