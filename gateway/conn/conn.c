/* conn: a client connection's socket, WebSocket codec, output queue,
   heartbeat and end. Output is queued and written from the gateway's
   before-poll hook, so a burst of frames leaves in one writev; EV_WRITE
   is armed only while bytes remain. A connection is never freed inside
   its own callbacks: it is marked dead and freed by the hook. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "config.h"
#include "conn_int.h"
#include "log.h"
#include "metrics.h"
#include "ptg_limits.h"
#include "timeutil.h"
#include "upstream.h"
#include "uuid.h"
#include "xalloc.h"

/* What one connection may read per loop turn: a client sending as fast
   as it can (WebSocket Pings, ops) costs every other connection at most
   this much parsing per turn (16 KiB: about 2,300 minimal Pings). */
#define READ_CHUNK (16 * 1024)
#define LINGER_MS  2000 /* how long we wait for the peer's close frame */
/* Unsent bytes the kernel may hold per client socket (TCP_NOTSENT_LOWAT):
   enough for a full-speed writer to never find the socket dry between
   two turns of the loop. */
#define NOTSENT_LOWAT (128 * 1024)
/* Reading resumes once a paused connection's queue is down to half the
   cap, so a client at the edge does not flip the epoll mask per frame. */
#define RESUME_DIVISOR 2
/* Queued pieces one writev hands the kernel: well past what a socket takes
   in one call from a queue of frame headers and payloads. */
#define WRITE_IOV_MAX 64

static void conn_kill(struct conn *c, const char *why);
static void update_pressure(struct conn *c);

/* ---- output ---- */

static void fifo_push(struct conn_fifo *q, struct conn *c)
{
	c->dirty = q;
	TAILQ_INSERT_TAIL(q, c, dirty_entry);
}

static void fifo_remove(struct conn *c)
{
	struct conn_fifo *q = c->dirty;

	if (!q)
		return;
	TAILQ_REMOVE(q, c, dirty_entry);
	c->dirty = NULL;
}

/* Joined observers share the fan-out slice; everyone else (controllers,
   connections not yet joined, closing ones) is written every turn. */
void conn_mark_dirty(struct conn *c)
{
	struct conn_set *s = c->host->conns;

	if (c->dirty || c->dead)
		return;
	/* EV_WRITE armed: the socket was full at the last write, and epoll
	   says when it takes more (on_io); trying before is a wasted writev
	   per frame per connection, a thousand a frame in a big fan-out. The
	   queue's growth still counts for backpressure. */
	if (c->io && (ev_io_events(c->io) & EV_WRITE)) {
		update_pressure(c);
		return;
	}
	fifo_push(c->state == CONN_JOINED && c->role == PTG__ROLE__ROLE_OBSERVER
		      ? &s->fan
		      : &s->first,
		  c);
}

static void on_ws_write(const uint8_t *p, size_t n, void *user)
{
	struct conn *c = user;

	outq_push_bytes(&c->q, p, n);
	conn_mark_dirty(c);
}

/* The connection's own frames (replies, errors, hello, goodbye) are
   private bytes of its queue: they count against its cap like any byte,
   and PTY_OUTPUT_LAGGED never drops them (only shared session data). */
void conn_send_json(struct conn *c, const struct buf *json)
{
	struct wsframe *wf;

	if (c->dead || ws_close_sent(c->ws))
		return;
	wf = wsframe_text((const char *)buf_head(json), buf_size(json));
	outq_push_bytes(&c->q, wf->data, wf->len);
	wsframe_unref(wf);
	c->host->metrics->frames_out++;
	conn_mark_dirty(c);
}

void conn_send_error(struct conn *c, enum frames_code code, const char *id,
		     const char *message)
{
	struct buf out = BUF_INIT;

	frames_error(code, id, message, time_now_ms(), &out);
	conn_send_json(c, &out);
	buf_free(&out);
	/* Every error the client's own ops cause is a violation (a failure
	   of the gateway or the sandbox is not). */
	if (code != FRAMES_INVALID_REQUEST && code != FRAMES_UNSUPPORTED_OPERATION &&
	    code != FRAMES_PERMISSION_DENIED)
		return;
	if (++c->violations >= c->host->cfg->violation_limit)
		conn_close(c, PTG_CLOSE_VIOLATIONS, "too many protocol violations");
}

/* Drops a ptygate.decide_control still waiting for its reply (the ops
   send it; the connection's end forgets it, so no call goes back up). */
static void forget_decision(struct conn *c)
{
	if (!c->pending_decision)
		return;
	if (c->up)
		upstream_cancel(c->up, c->pending_decision->request_id);
	free(c->pending_decision);
	c->pending_decision = NULL;
}

/* Tells the sidecar the attachment is gone (no reply wanted), and drops
   a join or leave still waiting for its reply. */
static void detach_quietly(struct conn *c)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Detach d = PTG__DETACH__INIT;

	if (c->pending_request && c->up)
		upstream_cancel(c->up, c->pending_request);
	c->pending_request = 0;
	forget_decision(c);
	if (!c->attach_id || !c->up) {
		c->attach_id = 0;
		return;
	}
	d.attach_id = c->attach_id;
	d.session_id = c->ctx.session_id;
	m.msg_case = PTG__LINK_MESSAGE__MSG_DETACH;
	m.detach = &d;
	upstream_unbind(c->up, c->attach_id);
	upstream_send(c->up, &m);
	log_info(c->log_ctx, "audit: detached");
	c->attach_id = 0;
}

/* ---- the op rate: a token bucket of --max-ops-per-sec holding two
   seconds' worth, so a paste or a pipelined join passes at once ---- */

static void refill_ops(struct conn *c)
{
	int64_t rate = c->host->cfg->max_ops_per_sec, cap = 2 * rate * 1000;
	int64_t now = time_mono_ms();

	c->op_tokens =
	    c->op_tokens_ms ? c->op_tokens + (now - c->op_tokens_ms) * rate : cap;
	c->op_tokens_ms = now;
	if (c->op_tokens > cap)
		c->op_tokens = cap;
}

/* Milliseconds until the bucket holds an op again (0: it does). */
static int64_t throttle_left_ms(struct conn *c)
{
	int64_t rate = c->host->cfg->max_ops_per_sec;

	refill_ops(c);
	return c->op_tokens >= 0 ? 0 : (-c->op_tokens + rate - 1) / rate;
}

void conn_take_op(struct conn *c)
{
	int64_t cap = 2 * (int64_t)c->host->cfg->max_ops_per_sec * 1000;

	refill_ops(c);
	c->op_tokens -= 1000;
	if (c->op_tokens < -cap) /* one read's worth past the rate at most */
		c->op_tokens = -cap;
	if (c->op_tokens >= 0 || c->throttled)
		return;
	c->throttled = true;
	c->host->metrics->ops_throttled++;
	if (!c->dead && c->state != CONN_CLOSING)
		ev_timer_arm(c->heartbeat, throttle_left_ms(c), 0);
	conn_mark_dirty(c); /* the flush drops EV_READ */
}

/* Backpressure: a connection whose queue is over the cap is not read
   (everything it makes the gateway hold comes from what it sends) until
   the queue is down to half; over the cap for --queue-stall-timeout, the
   heartbeat closes it. */
static void update_pressure(struct conn *c)
{
	const struct gw_config *cfg = c->host->cfg;
	size_t queued = outq_bytes(&c->q);

	if (!c->paused && queued > cfg->max_queue_bytes) {
		c->paused = true;
		c->over_since_ms = time_mono_ms();
		c->host->metrics->backpressure_events++;
		log_info(c->log_ctx,
			 "queue %zu bytes over the cap: not reading the client", queued);
		if (!c->dead && c->state != CONN_CLOSING)
			ev_timer_arm(c->heartbeat, (int64_t)cfg->queue_stall_s * 1000, 0);
	} else if (c->paused && queued <= cfg->max_queue_bytes / RESUME_DIVISOR) {
		c->paused = false;
		/* Nothing could be read meanwhile: liveness starts over. */
		c->last_rx_ms = time_mono_ms();
		c->ping_sent_ms = 0;
		if (!c->dead && c->state != CONN_CLOSING)
			ev_timer_arm(c->heartbeat,
				     c->throttled ? throttle_left_ms(c)
						  : (int64_t)cfg->ping_interval_s * 1000,
				     0);
	}
	/* A write cut at its bound found the socket taking more: the
	   connection is queued for the next slice, not left to epoll. */
	ev_io_set(c->io, (c->paused || c->throttled ? 0 : EV_READ) |
			     (queued && !c->write_cut ? EV_WRITE : 0));
}

/* writev without SIGPIPE: a client gone (over TLS, the front's end of
   its socket pair, closed at once) is EPIPE, never a signal. SIGPIPE
   is only blocked while the loop runs (ev.h); one raised by the
   goodbyes written after it (conn_set_flush) killed the gateway once
   ev_loop_free unblocked it. */
static ssize_t send_iov(int fd, struct iovec *iov, int cnt)
{
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};

	return sendmsg(fd, &m, MSG_NOSIGNAL);
}

/* Shortens iov[0..cnt) to at most max bytes; returns the new count. */
static int trim_iov(struct iovec *iov, int cnt, size_t max)
{
	size_t sum = 0;

	for (int i = 0; i < cnt; i++) {
		if (iov[i].iov_len >= max - sum) {
			iov[i].iov_len = max - sum;
			return i + 1;
		}
		sum += iov[i].iov_len;
	}
	return cnt;
}

/* Writes what the socket takes, at most max bytes (c->write_cut says
   when that bound, not the socket, stopped it). Returns 0, or -1 when
   the socket failed. */
static int write_out(struct conn *c, size_t max)
{
	struct iovec iov[WRITE_IOV_MAX];
	size_t done = 0;
	ssize_t n;
	int cnt;

	c->write_cut = false;
	while (outq_bytes(&c->q)) {
		if (done == max) {
			c->write_cut = true;
			c->host->metrics->fanout_writes_cut++;
			break;
		}
		cnt = trim_iov(iov, outq_iov(&c->q, iov, WRITE_IOV_MAX), max - done);
		n = send_iov(c->fd, iov, cnt);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0)
			return -1;
		c->host->metrics->bytes_out += (uint64_t)n;
		outq_consume(&c->q, (size_t)n);
		done += (size_t)n;
	}
	update_pressure(c);
	return 0;
}

/* After our close frame is out and the peer's has arrived (or the peer is
   gone), the TCP connection ends. */
static void maybe_finish(struct conn *c)
{
	if (ws_close_sent(c->ws) && ws_close_received(c->ws) && !outq_bytes(&c->q))
		conn_kill(c, "closed");
}

static void flush(struct conn *c, size_t max)
{
	if (c->dead)
		return;
	if (write_out(c, max) < 0) {
		conn_kill(c, "write failed");
		return;
	}
	maybe_finish(c);
}

/* ---- input ---- */

static void on_ws_text(const char *p, size_t n, void *user)
{
	struct conn *c = user;

	c->host->metrics->frames_in++;
	c->last_rx_ms = time_mono_ms();
	if (c->state == CONN_CLOSING)
		return;
	c->host->client_text(c, p, n);
}

static void on_ws_binary(size_t n, void *user)
{
	struct conn *c = user;

	c->last_rx_ms = time_mono_ms();
	if (c->state != CONN_CLOSING)
		conn_send_error(c, FRAMES_INVALID_REQUEST, NULL,
				"binary frames are not accepted: send JSON text frames");
}

static void on_ws_close(uint16_t code, const char *reason, size_t n, void *user)
{
	struct conn *c = user;

	log_info(c->log_ctx, "client closed (%u)", code);
	detach_quietly(c);
	c->state = CONN_CLOSING;
}

/* Liveness is a pong or a whole frame read, never bytes alone: a peer
   trickling one byte at a time does not stay alive by it. */
static void on_ws_pong(const uint8_t *p, size_t n, void *user)
{
	struct conn *c = user;

	c->last_rx_ms = time_mono_ms();
	c->ping_sent_ms = 0;
}

static const struct ws_callbacks ws_cbs = {
    .on_write = on_ws_write,
    .on_text = on_ws_text,
    .on_binary = on_ws_binary,
    .on_close = on_ws_close,
    .on_pong = on_ws_pong,
};

static void read_in(struct conn *c)
{
	uint8_t chunk[READ_CHUNK];
	ssize_t n;

	/* One chunk per turn; epoll reports the rest on the next one. */
	do
		n = read(c->fd, chunk, sizeof(chunk));
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n <= 0) {
		detach_quietly(c);
		conn_kill(c, n == 0 ? "peer closed the socket" : "read failed");
		return;
	}
	if (ws_feed(c->ws, chunk, (size_t)n) < 0 && c->state != CONN_CLOSING) {
		/* A protocol error: wslay queued the close with its code. */
		detach_quietly(c);
		c->state = CONN_CLOSING;
	}
}

static void on_io(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct conn *c = user;

	if (events & EV_READ)
		read_in(c);
	/* Written by the before-poll hook, in its order and slice; until
	   then the socket's readiness is known and need not be reported. */
	if (!c->dead && (events & EV_WRITE)) {
		ev_io_set(c->io, ev_io_events(c->io) & ~EV_WRITE);
		conn_mark_dirty(c);
	}
	if (!c->dead)
		maybe_finish(c);
}

/* ---- ending ---- */

void conn_close(struct conn *c, uint16_t code, const char *reason)
{
	if (c->dead || ws_close_sent(c->ws))
		return;
	log_info(c->log_ctx, "closing with %u: %s", code, reason);
	detach_quietly(c);
	c->state = CONN_CLOSING;
	ws_send_close(c->ws, code, reason);
	ev_timer_arm(c->linger, LINGER_MS, 0);
	conn_mark_dirty(c);
}

void conn_goodbye(struct conn *c, enum frames_goodbye_reason reason, uint16_t code)
{
	static const char *const text[] = {
	    [FRAMES_BYE_SERVER_SHUTDOWN] = "server shutting down",
	    [FRAMES_BYE_SESSION_CLOSED] = "session closed",
	    [FRAMES_BYE_PRINCIPAL_REVOKED] = "token expired",
	    [FRAMES_BYE_RATE_LIMITED] = "rate limited",
	    [FRAMES_BYE_OTHER] = "closing",
	};
	struct buf out = BUF_INIT;

	if (c->dead || ws_close_sent(c->ws))
		return;
	frames_goodbye(NULL, reason, NULL, time_now_ms(), &out);
	conn_send_json(c, &out);
	buf_free(&out);
	conn_close(c, code, text[reason]);
}

static void on_linger(struct ev_timer *t, void *user)
{
	conn_kill(user, "no close frame from the client in time");
}

/* Ends the connection now: the hook frees it. */
static void conn_kill(struct conn *c, const char *why)
{
	if (c->dead)
		return;
	log_debug(c->log_ctx, "connection ended: %s", why);
	detach_quietly(c);
	c->dead = true;
	ev_timer_disarm(c->heartbeat);
	ev_timer_disarm(c->expiry);
	ev_timer_disarm(c->linger);
	if (c->io)
		ev_io_set(c->io, 0);
	SLIST_INSERT_HEAD(&c->host->conns->dead, c, dead_entry);
}

/* ---- heartbeat and token expiry ---- */

/* The peer is to see our close now: behind its backlog (up to
   --max-queue-bytes at a slow reader's pace) the close frame would still
   be queued when the linger ends the socket, and the peer would see its
   TCP connection end without a word. What it has not been sent goes. */
static void drop_backlog(struct conn *c)
{
	size_t n = outq_drop_unsent(&c->q);

	if (!n)
		return;
	c->host->metrics->close_dropped_bytes += n;
	log_info(c->log_ctx, "%zu unsent bytes dropped so the close goes next", n);
}

static void on_heartbeat(struct ev_timer *t, void *user)
{
	struct conn *c = user;
	const struct gw_config *cfg = c->host->cfg;
	int64_t now = time_mono_ms(), idle = now - c->last_rx_ms;
	int64_t interval = (int64_t)cfg->ping_interval_s * 1000;

	if (c->paused) {
		/* Not reading: no pong can be seen; the stall bound applies. */
		int64_t left =
		    c->over_since_ms + (int64_t)cfg->queue_stall_s * 1000 - now;
		if (left > 0) {
			ev_timer_arm(t, left, 0);
			return;
		}
		c->host->metrics->queue_stall_closes++;
		log_info(c->log_ctx, "queue over the cap for %us: closing",
			 cfg->queue_stall_s);
		/* Close 4429, "rate limited": it sends but does not read. */
		drop_backlog(c);
		conn_goodbye(c, FRAMES_BYE_RATE_LIMITED, PTG_CLOSE_LIMITED);
		return;
	}
	if (c->throttled) {
		int64_t left = throttle_left_ms(c);
		if (left > 0) {
			ev_timer_arm(t, left, 0);
			return;
		}
		/* Read again; nothing could be read meanwhile. */
		c->throttled = false;
		c->last_rx_ms = now;
		c->ping_sent_ms = 0;
		update_pressure(c);
		ev_timer_arm(t, interval, 0);
		return;
	}
	if (c->ping_sent_ms && c->last_rx_ms <= c->ping_sent_ms &&
	    now - c->ping_sent_ms >= (int64_t)cfg->pong_timeout_s * 1000) {
		c->host->metrics->heartbeat_timeouts++;
		log_info(c->log_ctx, "no pong in %us: reaping", cfg->pong_timeout_s);
		/* The close frame goes next and is written now, while the
		   socket takes it; a half-open peer that never answers it is
		   ended by the linger timer (LINGER_MS), so it holds nothing
		   for longer. */
		drop_backlog(c);
		conn_close(c, WS_CLOSE_SERVER_ERROR, "heartbeat timeout");
		flush(c, SIZE_MAX);
		return;
	}
	if (c->ping_sent_ms && c->last_rx_ms > c->ping_sent_ms)
		c->ping_sent_ms = 0;
	if (!c->ping_sent_ms && idle >= interval) {
		ws_send_ping(c->ws, "hb", 2);
		c->ping_sent_ms = now;
		ev_timer_arm(t, (int64_t)cfg->pong_timeout_s * 1000, 0);
		return;
	}
	ev_timer_arm(t, c->ping_sent_ms ? 100 : interval - idle, 0);
}

static void on_expiry(struct ev_timer *t, void *user)
{
	struct conn *c = user;

	log_info(c->log_ctx, "token expired during the connection");
	conn_send_error(c, FRAMES_UNAUTHENTICATED, NULL, "the token has expired");
	conn_goodbye(c, FRAMES_BYE_PRINCIPAL_REVOKED, PTG_CLOSE_REVOKED);
}

static void arm_expiry(struct conn *c)
{
	int64_t left_ms =
	    (c->ctx.claims.exp + c->host->policy->leeway_s) * 1000 - time_now_ms();

	ev_timer_arm(c->expiry, left_ms > 0 ? left_ms : 0, 0);
}

/* ---- start and free ---- */

void conn_take_role(struct conn *c, int role)
{
	c->role = role;
	conn_count_role(c, role);
	/* A controller's input is read before a link's turn of fan-out in
	   the same loop turn (ev_io_set_urgent). */
	if (c->io)
		ev_io_set_urgent(c->io, role == PTG__ROLE__ROLE_CONTROLLER);
}

void conn_count_role(struct conn *c, int role)
{
	struct metrics *m = c->host->metrics;

	if (c->counted_role == role)
		return;
	if (c->counted_role == PTG__ROLE__ROLE_CONTROLLER)
		m->conns_controller--;
	else if (c->counted_role == PTG__ROLE__ROLE_OBSERVER)
		m->conns_observer--;
	else
		m->conns_pending--;
	if (role == PTG__ROLE__ROLE_CONTROLLER)
		m->conns_controller++;
	else if (role == PTG__ROLE__ROLE_OBSERVER)
		m->conns_observer++;
	else
		m->conns_pending++;
	c->counted_role = role;
}

void conn_update_log_ctx(struct conn *c)
{
	struct buf b = BUF_INIT;

	/* key=value words: --log-format json makes each a field (log.h). */
	buf_appendf(&b, "conn=%u instance=%.64s session=%.40s principal=%.64s", c->serial,
		    c->ctx.instance_id, c->ctx.session_id, c->ctx.claims.sub);
	if (c->client_id[0])
		buf_appendf(&b, " client=%.40s", c->client_id);
	if (c->trace_id[0])
		buf_appendf(&b, " trace=%.64s", c->trace_id);
	snprintf(c->log_ctx, sizeof(c->log_ctx), "%.*s", (int)buf_size(&b),
		 (const char *)buf_head(&b));
	buf_free(&b);
}

static void send_hello(struct conn *c)
{
	struct buf out = BUF_INIT;

	frames_binding_hello(NULL, c->ctx.session_id, c->ctx.current_sequence,
			     time_now_ms(), &out);
	conn_send_json(c, &out);
	buf_free(&out);
}

/* Frees what conn_new made. */
static void conn_destroy(struct conn *c)
{
	ev_io_free(c->io);
	ev_timer_free(c->heartbeat);
	ev_timer_free(c->expiry);
	ev_timer_free(c->linger);
	ws_free(c->ws);
	outq_clear(&c->q);
	json_decref(c->service_params);
	free(c);
}

struct conn *conn_new(const struct conn_host *host, const struct attach_ctx *ctx)
{
	static unsigned serial;
	struct conn *c = xcalloc(1, sizeof(*c));

	c->host = host;
	c->fd = -1;
	c->ctx = *ctx;
	c->serial = ++serial;
	c->state = CONN_OPEN;
	outq_init(&c->q);
	conn_update_log_ctx(c);
	c->ws = ws_new(&ws_cbs, c);
	c->heartbeat = ev_timer_new(host->loop, -1, 0, on_heartbeat, c);
	c->expiry = ev_timer_new(host->loop, -1, 0, on_expiry, c);
	c->linger = ev_timer_new(host->loop, -1, 0, on_linger, c);
	if (!c->ws) {
		log_warn(c->log_ctx,
			 "refusing the upgrade: cannot set up a connection: %s",
			 strerror(errno ? errno : ENOMEM));
		host->metrics->conns_setup_failed++;
		conn_destroy(c);
		return NULL;
	}
	ws_set_max_message(c->ws, host->cfg->max_frame_bytes);
	ws_set_deflate(c->ws, ctx->deflate);
	return c;
}

void conn_discard(struct conn *c)
{
	if (c)
		conn_destroy(c);
}

void conn_start(struct conn *c, int fd, const char *extra, size_t extra_len,
		const struct conn_socket *sock)
{
	const struct conn_host *host = c->host;
	struct conn_set *s = host->conns;

	c->fd = fd;
	c->sock = *sock;
	c->started = true;
	c->last_rx_ms = time_mono_ms();
	LIST_INSERT_HEAD(&s->all, c, all_entry);
	host->metrics->conns_pending++;
	c->io = ev_io_new(host->loop, fd, EV_READ, on_io, c);
	if (!c->io) {
		/* Past the 101 nothing can be refused any more: hang up. */
		log_warn(c->log_ctx, "cannot watch the upgraded socket: %s",
			 strerror(errno));
		host->metrics->conns_setup_failed++;
		conn_kill(c, "cannot watch the socket");
		return;
	}
	/* What the peer has not yet been sent stays in our queue, where lag
	   can drop it (a slow connection), instead of megabytes of it in the
	   kernel ahead of the next frame. */
	addr_tcp_whole_writes(fd, NOTSENT_LOWAT);
	log_info(c->log_ctx, "upgraded%s", c->ctx.deflate ? " (permessage-deflate)" : "");
	/* Looked up now, not before the 101: a reload in between may have
	   removed the instance. */
	c->up = host->upstream(host->owner, c->ctx.instance_id);
	send_hello(c);
	if (!c->up) {
		conn_goodbye(c, FRAMES_BYE_OTHER, PTG_CLOSE_GONE);
		return;
	}
	ev_timer_arm(c->heartbeat, (int64_t)host->cfg->ping_interval_s * 1000, 0);
	arm_expiry(c);
	if (extra_len && ws_feed(c->ws, (const uint8_t *)extra, extra_len) < 0)
		c->state = CONN_CLOSING;
}

static void conn_free(struct conn *c)
{
	const struct conn_host *host = c->host;

	detach_quietly(c);
	c->host->tasks_gone(c);
	fifo_remove(c);
	LIST_REMOVE(c, all_entry);
	conn_count_role(c, 0);
	host->metrics->conns_pending--;
	host->slot_release(host->owner, c->ctx.claims.sub, c->ctx.instance_id);
	/* The io goes before the fd it watches is closed. */
	ev_io_free(c->io);
	c->io = NULL;
	c->sock.release(c->sock.hold, c->fd);
	conn_destroy(c);
}

/* Writes the head of q; one cut at max goes to q's tail, so the rest of
   its queue waits for the others' turn, not for epoll. */
static void flush_next(struct conn_fifo *q, size_t max)
{
	struct conn *c = TAILQ_FIRST(q);

	fifo_remove(c);
	if (c->dead)
		return;
	flush(c, max);
	if (!c->dead && c->write_cut && !c->dirty)
		fifo_push(q, c);
}

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void free_dead(struct conn_set *s)
{
	struct conn *c;

	while ((c = SLIST_FIRST(&s->dead))) {
		SLIST_REMOVE_HEAD(&s->dead, dead_entry);
		conn_free(c);
	}
}

/* Every connection but joined observers, in full. */
static void flush_first(struct conn_set *s)
{
	while (!TAILQ_EMPTY(&s->first))
		flush_next(&s->first, SIZE_MAX);
}

void conn_set_flush(struct conn_set *s)
{
	int64_t end = now_us() + CONN_FAN_SLICE_US;

	flush_first(s);
	/* At least one observer a turn, so the slice always moves on. */
	do {
		if (!TAILQ_EMPTY(&s->fan))
			flush_next(&s->fan, CONN_FAN_WRITE_MAX);
	} while (!TAILQ_EMPTY(&s->fan) && now_us() < end);
	if (!TAILQ_EMPTY(&s->fan))
		ev_loop_again(TAILQ_FIRST(&s->fan)->host->loop);
	free_dead(s);
}

void conn_set_flush_first(struct conn_set *s)
{
	flush_first(s);
	free_dead(s);
}

void conn_set_init(struct conn_set *s)
{
	LIST_INIT(&s->all);
	TAILQ_INIT(&s->first);
	TAILQ_INIT(&s->fan);
	SLIST_INIT(&s->dead);
}

void conn_set_free(struct conn_set *s)
{
	struct conn *c;

	SLIST_INIT(&s->dead);
	while ((c = LIST_FIRST(&s->all)))
		conn_free(c);
}

void conn_set_shutdown(struct conn_set *s)
{
	struct conn *c;

	LIST_FOREACH(c, &s->all, all_entry)
		conn_goodbye(c, FRAMES_BYE_SERVER_SHUTDOWN, WS_CLOSE_NORMAL);
}

void conn_set_drop_instance(struct conn_set *s, const char *instance_id)
{
	struct conn *c;

	LIST_FOREACH(c, &s->all, all_entry) {
		if (!c->up || strcmp(c->ctx.instance_id, instance_id) != 0)
			continue;
		log_info(c->log_ctx, "the instance was removed from this gateway");
		/* Close 4404, "session gone": through this gateway it is (a new
		   attach gets 404). */
		conn_goodbye(c, FRAMES_BYE_OTHER, PTG_CLOSE_GONE);
		detach_quietly(c); /* when already closing, goodbye did nothing */
		c->host->tasks_gone(c);
		c->up = NULL;
	}
}

bool conn_set_empty(const struct conn_set *s)
{
	return LIST_EMPTY(&s->all);
}

void conn_set_queue_stats(const struct conn_set *s, uint64_t *total, uint64_t *max)
{
	const struct conn *c;

	*total = *max = 0;
	LIST_FOREACH(c, &s->all, all_entry) {
		size_t b = outq_bytes(&c->q);
		*total += b;
		*max = b > *max ? b : *max;
	}
}

void conn_link_lost(struct conn *c)
{
	/* Called while the upstream drops its bindings: nothing to detach. */
	c->attach_id = 0;
	if (c->dead)
		return;
	conn_send_error(c, FRAMES_INTERNAL, NULL,
			"the link to the sandbox was lost; reconnect with replay_from");
	conn_goodbye(c, FRAMES_BYE_OTHER, WS_CLOSE_SERVER_ERROR);
}
