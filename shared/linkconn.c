/* linkconn: one link connection on the event loop. Reads are bounded
   per wakeup so one busy peer cannot starve the others; every complete
   message is decoded and handed to on_message. Sends are written at
   once and only what the socket refuses is queued, with EV_WRITE armed
   until the queue drains. There are two queues: the ordered one (session
   frames and every message whose order matters) and the reply lane
   (answers no frame depends on, such as a session list). The reply lane
   is written only while the ordered queue is empty, one whole message at
   a time, so a burst of large answers never holds up a session's output
   by more than the one reply already on the wire. Closing is always deferred to a
   before-poll hook, so no callback ever runs on a freed linkconn. */
#include "linkconn.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "buf.h"
#include "link.h"
#include "log.h"
#include "xalloc.h"

#define LINKCONN_READ_CHUNK  (64 * 1024)
#define LINKCONN_READ_BUDGET (1024 * 1024)
#define LINKCONN_HEADER	     4 /* a message's big-endian length (link.h) */

struct linkconn {
	struct ev_loop *loop;
	struct ev_io *io;
	int fd;
	char *name;
	const struct linkconn_ops *ops;
	void *user;
	struct buf in;
	struct buf out;	    /* the ordered queue: frames first */
	struct buf replies; /* the reply lane: whole messages, after out */
	size_t reply_left;  /* bytes of the reply on the wire still to go; 0: none */
	uint64_t written;   /* bytes the socket took, in all */
	bool closing;
	char reason[160];
	int64_t turn_budget_us; /* 0: none */
	bool backlog; /* whole messages may wait: a turn was cut at the budget */
	int read_end; /* read_some's end (1 or -errno) held behind the backlog */
};

static void on_io(struct ev_io *io, int fd, unsigned events, void *user);
static void reap(void *user);
static void resume(struct linkconn *lc);

/* Best effort: a socket that refuses an option still carries the link.
   vsock keeps its own buffer (the hypervisor's transport sizes it). */
static void tune_socket(int fd)
{
	int domain = 0;
	socklen_t len = sizeof(domain);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0)
		return;
	if (domain == AF_UNIX) {
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int){LINKCONN_KERNEL_QUEUE},
			   sizeof(int));
		return;
	}
	/* Links had no TCP_NODELAY: 1% of keystrokes over a TCP link (a
	   sidecar that registers by dialling) waited 40-50 ms. Only the
	   unsent part is bounded: a fixed send buffer would cap a long
	   link's throughput. */
	if (domain == AF_INET || domain == AF_INET6)
		addr_tcp_whole_writes(fd, LINKCONN_KERNEL_QUEUE);
}

struct linkconn *linkconn_new(struct ev_loop *loop, int fd, const char *name,
			      const struct linkconn_ops *ops, void *user)
{
	struct linkconn *lc = xcalloc(1, sizeof(*lc));

	lc->loop = loop;
	lc->fd = fd;
	lc->name = xstrdup(name ? name : "link");
	lc->ops = ops;
	lc->user = user;
	buf_init(&lc->in);
	buf_init(&lc->out);
	buf_init(&lc->replies);
	tune_socket(fd);
	lc->io = ev_io_new(loop, fd, EV_READ, on_io, lc);
	if (!lc->io) {
		log_error(lc->name, "linkconn: cannot watch fd %d: %s", fd,
			  strerror(errno));
		close(fd);
		free(lc->name);
		free(lc);
		return NULL;
	}
	ev_hook_add(loop, reap, lc);
	return lc;
}

void linkconn_free(struct linkconn *lc)
{
	if (!lc)
		return;
	ev_hook_remove(lc->loop, reap, lc);
	ev_io_free(lc->io);
	close(lc->fd);
	buf_free(&lc->in);
	buf_free(&lc->out);
	buf_free(&lc->replies);
	free(lc->name);
	free(lc);
}

void linkconn_close(struct linkconn *lc, const char *reason)
{
	if (lc->closing)
		return;
	lc->closing = true;
	snprintf(lc->reason, sizeof(lc->reason), "%s", reason ? reason : "closed");
	/* Nothing more is read or written; the hook finishes the job. */
	ev_io_set(lc->io, 0);
}

/* The before-poll hook: reports and frees a linkconn marked closing. */
static void reap(void *user)
{
	struct linkconn *lc = user;

	if (lc->backlog && !lc->closing)
		resume(lc);
	if (!lc->closing)
		return;
	log_debug(lc->name, "link closed: %s", lc->reason);
	if (lc->ops->on_close)
		lc->ops->on_close(lc, lc->reason, lc->user);
	linkconn_free(lc);
}

size_t linkconn_pending(const struct linkconn *lc)
{
	return buf_size(&lc->out) + buf_size(&lc->replies);
}

size_t linkconn_pending_frames(const struct linkconn *lc)
{
	return buf_size(&lc->out);
}

/* The ordered queue may be written now: nothing of it waits and no reply
   is half on the wire. */
static int ordered_idle(const struct linkconn *lc)
{
	return buf_size(&lc->out) == 0 && lc->reply_left == 0;
}

static void arm(struct linkconn *lc)
{
	ev_io_set(lc->io, EV_READ | (linkconn_pending(lc) > 0 ? EV_WRITE : 0));
}

uint64_t linkconn_written(const struct linkconn *lc)
{
	return lc->written;
}

const char *linkconn_name(const struct linkconn *lc)
{
	return lc->name;
}

static void close_errno(struct linkconn *lc, const char *what, int err)
{
	char reason[128];

	snprintf(reason, sizeof(reason), "%s: %s", what, strerror(err));
	linkconn_close(lc, reason);
}

/* What flush writes next: the ordered queue unless a reply is half
   written; else the next whole reply (its length from its header). */
static struct buf *next_queue(struct linkconn *lc, size_t *len)
{
	const uint8_t *h;

	if (lc->reply_left == 0 && buf_size(&lc->out) > 0) {
		*len = buf_size(&lc->out);
		return &lc->out;
	}
	if (lc->reply_left == 0 && buf_size(&lc->replies) >= LINKCONN_HEADER) {
		h = buf_head(&lc->replies);
		lc->reply_left =
		    LINKCONN_HEADER +
		    ((size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3]);
	}
	if (lc->reply_left == 0)
		return NULL;
	*len = lc->reply_left;
	return &lc->replies;
}

/* Writes as much as the socket takes, frames before replies; EV_WRITE
   stays armed only while bytes remain. */
static void flush(struct linkconn *lc)
{
	struct buf *q;
	size_t len;

	while ((q = next_queue(lc, &len)) != NULL) {
		ssize_t n = send(lc->fd, buf_head(q), len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			buf_consume(q, (size_t)n);
			if (q == &lc->replies)
				lc->reply_left -= (size_t)n;
			lc->written += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		buf_reset(&lc->out);
		buf_reset(&lc->replies);
		lc->reply_left = 0;
		close_errno(lc, "write error", n < 0 ? errno : EPIPE);
		return;
	}
	arm(lc);
}

void linkconn_send(struct linkconn *lc, const Ptg__LinkMessage *m)
{
	bool idle = ordered_idle(lc);

	if (lc->closing)
		return;
	link_encode(m, &lc->out);
	/* With bytes already queued, EV_WRITE is armed and keeps order. */
	if (idle)
		flush(lc);
}

void linkconn_send_reply(struct linkconn *lc, const Ptg__LinkMessage *m)
{
	bool idle = linkconn_pending(lc) == 0;

	if (lc->closing)
		return;
	link_encode(m, &lc->replies);
	if (idle)
		flush(lc);
}

/* Writes what the socket takes of iov[0..cnt) straight from the caller's
   memory, and returns how many bytes went; -1 after closing the link. */
static ssize_t writev_direct(struct linkconn *lc, const struct iovec *iov, int cnt)
{
	struct msghdr mh = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)cnt};
	ssize_t n;

	do
		n = sendmsg(lc->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n >= 0) {
		lc->written += (size_t)n;
		return n;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return 0;
	close_errno(lc, "write error", errno);
	return -1;
}

void linkconn_send_iov(struct linkconn *lc, const struct iovec *iov, int cnt)
{
	ssize_t done = 0;

	if (lc->closing)
		return;
	if (ordered_idle(lc))
		done = writev_direct(lc, iov, cnt);
	if (done < 0)
		return;
	/* Queue what the socket did not take, in order. */
	for (int i = 0; i < cnt; i++) {
		size_t skip =
		    (size_t)done < iov[i].iov_len ? (size_t)done : iov[i].iov_len;
		buf_append(&lc->out, (const uint8_t *)iov[i].iov_base + skip,
			   iov[i].iov_len - skip);
		done -= (ssize_t)skip;
	}
	arm(lc);
}

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The loop thread's CPU time: what a turn cost, whatever preemption
   added to its wall-clock time on a loaded machine. */
static int64_t cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Where a turn's CPU clock starts, or TURN_CPU_UNREAD. The CPU clock is
   a system call (about 1.4 us on a VM), not a vDSO read: only a link that
   reports its turns (the gateway's) reads it, and only for a turn with a
   chunk or more of messages to hand out, the kind a budget may cut. A
   smaller turn, such as a keystroke's echo, would pay two such calls for
   a few microseconds of work; it reports its wall-clock time instead. */
#define TURN_CPU_UNREAD (-1)

static int64_t turn_cpu(const struct linkconn *lc)
{
	if (!lc->ops->on_turn || buf_size(&lc->in) < LINKCONN_READ_CHUNK)
		return TURN_CPU_UNREAD;
	return cpu_us();
}

void linkconn_set_urgent(struct linkconn *lc, bool urgent)
{
	ev_io_set_urgent(lc->io, urgent);
}

void linkconn_set_turn_budget(struct linkconn *lc, int64_t budget_us)
{
	lc->turn_budget_us = budget_us;
}

/* Hands every complete message to on_message; stops at a close, or
   once the turn begun at t0 has spent its budget (returns 1: cut). */
static int decode(struct linkconn *lc, int64_t t0)
{
	while (!lc->closing) {
		Ptg__LinkMessage *m;
		int r = link_decode(&lc->in, &m);

		if (r == 0)
			return 0;
		if (r == -EMSGSIZE) {
			linkconn_close(lc, "message too large");
			return 0;
		}
		if (r < 0) {
			linkconn_close(lc, "bad message");
			return 0;
		}
		lc->ops->on_message(lc, m, lc->user);
		link_message_free(m);
		if (lc->turn_budget_us && mono_us() - t0 >= lc->turn_budget_us)
			return 1;
	}
	return 0;
}

/* A cut turn leaves its messages for the before-poll hook, whose next
   poll does not block: every other ready fd gets its callbacks first. */
static void end_turn(struct linkconn *lc, int64_t t0, int64_t cpu0, bool cut)
{
	lc->backlog = cut && !lc->closing;
	if (lc->backlog)
		ev_loop_again(lc->loop);
	if (lc->ops->on_turn) {
		int64_t spent = mono_us() - t0;

		lc->ops->on_turn(lc, spent,
				 cpu0 == TURN_CPU_UNREAD ? spent : cpu_us() - cpu0,
				 lc->backlog, lc->user);
	}
}

/* The end or error read_some met: after the messages before it. */
static void finish_read(struct linkconn *lc, int r)
{
	if (r == 1)
		linkconn_close(lc, "peer closed");
	else if (r < 0)
		close_errno(lc, "read error", -r);
}

/* The next turn of a cut one: more of the messages already read, and
   nothing read from the socket until they are all handed out. */
static void resume(struct linkconn *lc)
{
	int64_t t0 = mono_us(), cpu0 = turn_cpu(lc);

	end_turn(lc, t0, cpu0, decode(lc, t0));
	if (!lc->backlog) {
		finish_read(lc, lc->read_end);
		lc->read_end = 0;
	}
}

/* Reads until the socket is drained or the per-wakeup budget. Returns 1
   at end of stream, a negative errno on error, else 0. */
static int read_some(struct linkconn *lc)
{
	size_t total = 0;

	while (total < LINKCONN_READ_BUDGET) {
		ssize_t n = read(lc->fd, buf_reserve(&lc->in, LINKCONN_READ_CHUNK),
				 LINKCONN_READ_CHUNK);

		if (n > 0) {
			buf_commit(&lc->in, (size_t)n);
			total += (size_t)n;
			/* A short read drained the socket: no read just to see
			   EAGAIN (one syscall per message at keystroke rates);
			   the level-triggered poll reports anything newer. */
			if (n < LINKCONN_READ_CHUNK)
				return 0;
			continue;
		}
		if (n == 0)
			return 1;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -errno;
	}
	return 0;
}

static void on_io(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct linkconn *lc = user;
	int64_t t0, cpu0;
	int r;

	if (lc->closing)
		return;
	if (events & EV_WRITE)
		flush(lc);
	if (lc->closing || !(events & EV_READ) || lc->backlog)
		return;
	t0 = mono_us();
	r = read_some(lc);
	cpu0 = turn_cpu(lc); /* how much the read brought decides */
	/* Messages that arrived before an end or an error still count. */
	end_turn(lc, t0, cpu0, decode(lc, t0));
	if (lc->backlog)
		lc->read_end = r;
	else
		finish_read(lc, r);
}
