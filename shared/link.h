/* link: framing of the link protocol (proto/link.proto): a 4-byte
   big-endian length, then one packed Ptg__LinkMessage, at most
   LINK_MAX_MESSAGE bytes. Pure codec, no I/O (see linkconn.h). */
#ifndef PTG_LINK_H
#define PTG_LINK_H

#include <stddef.h>
#include <stdint.h>

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

/* The fast framing of a Frame already packed (by ptg__frame__pack), for
   the sidecar's hot path: a PTY read's frame is packed once, and the same
   bytes go into the replay ring and onto every link without being packed
   again into a LinkMessage. The framed message is head, the frame's bytes,
   tail: head is the length prefix and the LinkMessage.frame field's tag
   and length; tail, when target is not 0, is a Frame.target_attach_id
   field appended to the frame's bytes (protobuf merges a repeated scalar
   field, the last one wins, so the frame must have been packed with
   target_attach_id 0). The bytes decode to the LinkMessage link_encode
   would have made (byte for byte when target is 0). */
#define LINK_VARINT_MAX	   10 /* bytes of a 64-bit varint */
#define LINK_WRAP_HEAD_MAX (4 + 2 * LINK_VARINT_MAX)
#define LINK_WRAP_TAIL_MAX (2 * LINK_VARINT_MAX)

struct link_wrap {
	uint8_t head[LINK_WRAP_HEAD_MAX];
	uint8_t tail[LINK_WRAP_TAIL_MAX];
	size_t head_len, tail_len;
	size_t body; /* the message's length, after the 4-byte prefix */
};

/* Fills w for a packed frame of frame_len bytes, addressed to target (0:
   none). The caller checks w->body against LINK_MAX_MESSAGE. */
void link_wrap_frame(struct link_wrap *w, size_t frame_len, uint64_t target);

#endif
