/* b64: strict base64 (RFC 4648 section 4) and base64url without padding
   (section 5, as JWTs and the bearer subprotocol use it). */
#ifndef PTG_B64_H
#define PTG_B64_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Appends the padded standard encoding of src to out (no NUL). */
void b64_encode(const uint8_t *src, size_t n, struct buf *out);
/* Appends the url-safe encoding without padding. */
void b64url_encode(const uint8_t *src, size_t n, struct buf *out);
/* Exact encoded length of n bytes, padded standard form. */
size_t b64_encoded_len(size_t n);

/* Decodes the padded standard form and appends the bytes to out. Rejects
   any character outside the alphabet, whitespace included, a length that
   is not a multiple of 4, misplaced or excess padding, and non-zero
   trailing bits. Returns 0, or -EINVAL (out keeps what it had). */
int b64_decode(const char *src, size_t n, struct buf *out);
/* Same for base64url without padding ('=' is rejected). */
int b64url_decode(const char *src, size_t n, struct buf *out);
/* Upper bound of the decoded size of n encoded chars. */
size_t b64_decoded_max(size_t n);

#endif
