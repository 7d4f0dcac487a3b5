/* pmd: the gateway's permessage-deflate codec state (RFC 7692): the
   body of an outgoing message, made whole by libdeflate, and the one
   raw inflater the process keeps.

   libdeflate compresses a buffer in one call at half of zlib's CPU time
   per byte or less on terminal text, with slightly fewer bytes, but it
   can only end a stream with a block marked final. Chromium fails the
   connection on such a message (RFC 7692 7.2.3.3 allows it; node's ws
   and Python's websockets take it), so the body is reshaped into what
   zlib's Z_SYNC_FLUSH would have given: the final block unmarked and an
   empty stored block begun after it, whose 00 00 ff ff the receiver
   appends itself (7.2.1). Finding where the last block starts and where
   the stream ends takes one inflate pass (zlib's Z_BLOCK), at a tenth
   to a third of the compression's cost.

   Every body stands alone (no context takeover), so the same bytes
   serve every client that agreed. */
#ifndef PTG_PMD_H
#define PTG_PMD_H

#include <stddef.h>
#include <stdint.h>

#include <zlib.h>

/* Compresses in[0..n) at level (1 to 12) into out, which has room for
   cap bytes. Returns the body's length, or 0 when it would not fit in
   cap (the caller's way of asking for a gain: cap < n). */
size_t pmd_deflate(int level, const uint8_t *in, size_t n, uint8_t *out, size_t cap);

/* The process's raw inflater (15-bit window), made at first use (about
   40 KiB with its window) and reset on every call. ws.c inflates client
   messages with it and pmd_deflate walks its bodies with it; each use
   runs to its end before returning to the loop, so they never overlap. */
z_stream *pmd_inflater(void);

#endif
