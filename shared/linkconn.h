/* linkconn: a link connection on the event loop: reads and decodes
   messages, queues encoded messages and writes them, arming EV_WRITE only
   while bytes remain. Used by the sidecar (accepted links) and the gateway
   (dialled links). */
#ifndef PTG_LINKCONN_H
#define PTG_LINKCONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ev.h"
#include "link.pb-c.h"

struct linkconn;

/* What the kernel may hold of a link's sends (SO_SNDBUF on a unix
   socket, TCP_NOTSENT_LOWAT on TCP). Everything queued there is ahead of
   the next frame, a keystroke's echo included, and none of it can be held
   back or dropped any more: with the default 208 KiB unix buffer, a
   gateway slowed by 100 observers kept it full, and the controller's echo
   p99 beside a flood was 64 ms (35 ms at 64 KiB, where a flood still runs
   as fast; docs/benchmarks.md). The sidecar's own bound
   (SESSION_LINK_HIGH_WATER) is the rest of the queue. */
#define LINKCONN_KERNEL_QUEUE (64 * 1024)

struct linkconn_ops {
	/* One decoded message; the callee does not keep m (it is freed on
	   return). The callback may call linkconn_close. */
	void (*on_message)(struct linkconn *lc, const Ptg__LinkMessage *m, void *user);
	/* The connection ended (peer closed, error, or a bad message);
	   reason says which. Called once; the linkconn is freed right after
	   on_close returns. */
	void (*on_close)(struct linkconn *lc, const char *reason, void *user);
	/* Optional: a read turn ended after spent_us of wall-clock time
	   (reading and handing out messages); cut when the turn budget
	   stopped it. cpu_us is the loop's own CPU time for handing out the
	   messages of a turn that had 64 KiB or more of them; a smaller
	   turn reports its wall-clock time there, an upper bound (reading
	   the CPU clock is a system call a keystroke should not pay). */
	void (*on_turn)(struct linkconn *lc, int64_t spent_us, int64_t cpu_us, bool cut,
			void *user);
};

/* The link's reads go before the other ios ready in the same turn
   (ev_io_set_urgent): the sidecar's links carry keystrokes, which should
   not wait behind a flood's PTY batch. */
void linkconn_set_urgent(struct linkconn *lc, bool urgent);

/* Takes ownership of fd (connected, non-blocking). name goes in logs.
   NULL (fd closed) if the loop cannot watch fd. */
struct linkconn *linkconn_new(struct ev_loop *loop, int fd, const char *name,
			      const struct linkconn_ops *ops, void *user);
/* Frees at once, closing fd, without calling on_close: for shutdown,
   never from inside the linkconn's callbacks. NULL is a no-op. */
void linkconn_free(struct linkconn *lc);
/* Queues m in order with everything sent before it; written at once if
   possible. */
void linkconn_send(struct linkconn *lc, const Ptg__LinkMessage *m);
/* Queues m in the reply lane, for answers no frame's order depends on
   (a session list, one session, a create or kill): written only while
   the ordered queue is empty, one whole message at a time, so frames
   sent later still go first. Replies keep their order among themselves. */
void linkconn_send_reply(struct linkconn *lc, const Ptg__LinkMessage *m);
/* Sends bytes that are already framed link messages (or pieces of them:
   header, body), as link_encode or the sidecar's frame cache produce
   them: written straight from iov when nothing is queued, so a large
   frame is not copied first; queued in order otherwise. */
struct iovec;
void linkconn_send_iov(struct linkconn *lc, const struct iovec *iov, int cnt);
/* Bytes queued but not yet written, both queues (for the link's
   memory bound). */
size_t linkconn_pending(const struct linkconn *lc);
/* Bytes of the ordered queue only: what a new frame waits behind (for
   holding a session's output; queued replies never count). */
size_t linkconn_pending_frames(const struct linkconn *lc);
/* Bytes the socket has taken since the link opened (progress, for
   telling a slow peer from one that stopped reading). */
uint64_t linkconn_written(const struct linkconn *lc);
/* Closes after on_close(reason); safe from inside callbacks (deferred to
   the loop's before-poll hook). */
void linkconn_close(struct linkconn *lc, const char *reason);
/* Bounds the time one loop turn spends reading and handing out this
   link's messages (checked after each message, so one message may run
   over): the rest waits for the next turn, other fds polled in between,
   and nothing more is read meanwhile. 0 (the default): no bound. */
void linkconn_set_turn_budget(struct linkconn *lc, int64_t budget_us);
const char *linkconn_name(const struct linkconn *lc);

#endif
