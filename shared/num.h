/* num: strict parsing of numbers given on command lines and in config
   files. */
#ifndef PTG_NUM_H
#define PTG_NUM_H

#include <stdint.h>

/* Parses s as a decimal of digits only (no sign, no spaces) within
   [lo, hi]. Returns 0 and sets *out, or -EINVAL (*out unchanged). */
int num_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

#endif
