/* num: strict parsing of the numbers given on command lines, in config
   files and in the few text fields the daemons read. One grammar for all:
   decimal digits only, no spaces, no '+', a '-' only where a signed value
   is asked for, and a value past the type's range is refused, never
   wrapped. */
#ifndef PTG_NUM_H
#define PTG_NUM_H

#include <stddef.h>
#include <stdint.h>

/* Parses s as a decimal of digits only within [lo, hi]. Returns 0 and
   sets *out, or -EINVAL (*out unchanged). */
int num_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
/* The same for the n bytes at s (not NUL-terminated: a field inside a
   longer text). */
int num_parse_u64_n(const char *s, size_t n, uint64_t lo, uint64_t hi, uint64_t *out);
/* Parses the n bytes at s as lower-case hexadecimal digits (0-9, a-f),
   at most 16 of them: names the daemons give their own files. Returns 0
   and sets *out, or -EINVAL (*out unchanged). */
int num_parse_hex_u64_n(const char *s, size_t n, uint64_t *out);
/* Parses s as an optional '-' and digits within [lo, hi]. Returns 0 and
   sets *out, or -EINVAL (*out unchanged). */
int num_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
/* The same for the n bytes at s. */
int num_parse_i64_n(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *out);
/* Parses a duration in seconds: digits, then optionally one unit, s
   (seconds), m (minutes), h (hours) or d (days), within [0, max]
   seconds. Returns 0 and sets *out, or -EINVAL (*out unchanged). */
int num_parse_duration_s(const char *s, int64_t max, int64_t *out);

#endif
