/* wire: the sidecar's outgoing link messages. A frame is packed once; the
   same bytes go into the replay ring and onto every link, and a replayed
   or targeted copy is made by appending the target field to those bytes
   (protobuf merges repeated scalar fields: the last one wins), so replay
   never unpacks anything. */
#ifndef PTG_WIRE_H
#define PTG_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "link.pb-c.h"
#include "linkconn.h"

/* Room for the message of one error Reply or Error frame: a sentence
   with a few names and numbers in it. */
#define WIRE_MSG_MAX 512

/* Packs f (its target_attach_id must be 0) and appends the bytes to out. */
void wire_pack_frame(const Ptg__Frame *f, struct buf *out);
/* Sends packed frame bytes on lc as a LinkMessage, addressed to target
   (0: every attachment of the session on that link). */
void wire_send_frame(struct linkconn *lc, const uint8_t *frame, size_t len,
		     uint64_t target);
/* Sends a Reply with only a code and message (and the echoes). */
void wire_send_error(struct linkconn *lc, uint64_t request_id, uint64_t attach_id,
		     const char *client_op_id, Ptg__ErrorCode code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Sends a filled Reply, in order with the frames sent before it. */
void wire_send_reply(struct linkconn *lc, Ptg__Reply *r);
/* Sends a filled Reply in the link's reply lane (linkconn_send_reply):
   for the answers to CreateSession, ListSessions, GetSession and
   KillSession, which no frame's order depends on and which must never
   hold up a session's frames. */
void wire_send_answer(struct linkconn *lc, Ptg__Reply *r);
/* wire_send_error's counterpart for those requests. */
void wire_send_answer_error(struct linkconn *lc, uint64_t request_id, Ptg__ErrorCode code,
			    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
