/* utf8: strict UTF-8 (RFC 3629) sequence validation, for text that must
   reach JSON intact: client frames' strings and task output. */
#ifndef PTG_UTF8_H
#define PTG_UTF8_H

#include <stddef.h>

/* Length (1 to 4) of the valid UTF-8 sequence at p, which has n > 0 bytes
   left; 0 when it is invalid: a stray continuation byte, a truncated
   sequence, an overlong form, a surrogate, or a value past U+10FFFF. */
size_t utf8_seq_len(const unsigned char *p, size_t n);

#endif
