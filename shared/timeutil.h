/* timeutil: clocks and RFC 3339 timestamps. */
#ifndef PTG_TIMEUTIL_H
#define PTG_TIMEUTIL_H

#include <stdint.h>

#define TS_STRLEN 24 /* 2026-05-09T14:30:00.182Z */

/* Wall clock, ms since the Unix epoch. */
int64_t time_now_ms(void);
/* Monotonic clock in ms, for timeouts and rates. */
int64_t time_mono_ms(void);
/* Monotonic clock in microseconds, for latencies. */
int64_t time_mono_us(void);
/* Formats ms since the epoch as RFC 3339 UTC with milliseconds. */
void time_format_ms(int64_t ms, char out[TS_STRLEN + 1]);
/* Parses an RFC 3339 timestamp (any offset, optional fraction); returns
   0 and sets *ms, or -EINVAL. */
int time_parse_rfc3339(const char *s, int64_t *ms);

#endif
