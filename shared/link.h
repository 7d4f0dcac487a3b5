/* link: framing of the link protocol (proto/link.proto): a 4-byte
   big-endian length, then one packed Ptg__LinkMessage, at most
   LINK_MAX_MESSAGE bytes. Pure codec, no I/O (see linkconn.h). */
#ifndef PTG_LINK_H
#define PTG_LINK_H

#include <stddef.h>

#include "buf.h"
#include "link.pb-c.h"

#define LINK_MAX_MESSAGE (16u * 1024 * 1024)
/* Allocations one decoded message may make (repeated entries, strings):
   far above any honest message, far below a bomb's millions. */
#define LINK_DECODE_MAX_ALLOCS (1u << 18)

/* Appends the framed encoding of m to out. */
void link_encode(const Ptg__LinkMessage *m, struct buf *out);

/* Takes the next whole message from the front of in. Returns 1 and sets
   *out (free with link_message_free), 0 when more bytes are needed,
   -EMSGSIZE when the announced length exceeds the cap, -EBADMSG when the
   bytes do not unpack or carry no message. After an error the stream is
   unusable. */
int link_decode(struct buf *in, Ptg__LinkMessage **out);
void link_message_free(Ptg__LinkMessage *m);

#endif
