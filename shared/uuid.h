/* uuid: UUIDv7 (RFC 9562): 48-bit Unix ms timestamp, version 7, random
   bits from the kernel, lower-case canonical text. Monotonic within a
   process: ids made in the same millisecond still sort in order. */
#ifndef PTG_UUID_H
#define PTG_UUID_H

#include <stdbool.h>

#define UUID_STRLEN 36

/* Writes 36 chars plus NUL into out. */
void uuid_v7_new(char out[UUID_STRLEN + 1]);
/* 1 when s is a canonical lower- or upper-case UUID of any version. */
bool uuid_is_valid(const char *s);

#endif
