/* bench_wslay: what the bench's WebSocket client (bench_ws.c) and its
   one-hop server (bench_onehop.c) tell wslay the same way. */
#ifndef PTG_BENCH_WSLAY_H
#define PTG_BENCH_WSLAY_H

#include <errno.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <wslay/wslay.h>

/* wslay's send callback on a non-blocking socket: what the socket took,
   or -1 with wslay told to wait (EAGAIN, EINTR) or to fail. */
static inline ssize_t bench_wslay_send(wslay_event_context_ptr ctx, int fd,
				       const uint8_t *p, size_t len)
{
	ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

	if (n >= 0)
		return n;
	wslay_event_set_error(ctx, errno == EAGAIN || errno == EINTR
				       ? WSLAY_ERR_WOULDBLOCK
				       : WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

#endif
