/* linkclient: a tiny blocking client of the link protocol for the
   integration tests: connects to a sidecar's unix socket, sends framed
   LinkMessages and receives the next one with a timeout. Test code only:
   no event loop, one message at a time. */
#ifndef PTG_LINKCLIENT_H
#define PTG_LINKCLIENT_H

#include <stddef.h>

#include "buf.h"
#include "link.h"

struct linkclient {
	int fd;	       /* -1 when closed */
	struct buf in; /* bytes read but not yet decoded */
};

/* Connects to the unix socket at path. Returns 0 or a negative errno;
   on failure c->fd is -1 and nothing needs freeing. */
int linkclient_connect(struct linkclient *c, const char *path);
/* Closes the socket and frees the input buffer; safe to call twice. */
void linkclient_close(struct linkclient *c);
/* Encodes m with link_encode and writes all of it. Returns 0 or a negative
   errno (-EPIPE once the peer has closed). */
int linkclient_send(struct linkclient *c, const Ptg__LinkMessage *m);
/* Writes raw bytes as they are (for malformed-input tests). */
int linkclient_send_raw(struct linkclient *c, const void *p, size_t n);
/* Waits up to timeout_ms for the next whole message. Returns 1 and sets
   *out (free with link_message_free), 0 on timeout, -EPIPE when the peer
   closed the stream, or another negative errno (-EBADMSG, -EMSGSIZE from
   link_decode, or a socket error). */
int linkclient_recv(struct linkclient *c, int timeout_ms, Ptg__LinkMessage **out);
/* Discards whatever arrives until the peer closes the stream. Returns 0
   when it did within timeout_ms, -ETIMEDOUT otherwise. */
int linkclient_wait_eof(struct linkclient *c, int timeout_ms);

#endif
