/* ws: a WebSocket server connection over wslay's event API, fed from
   memory. wslay's recv callback serves the bytes of the ws_feed call in
   progress and reports WOULDBLOCK when they run out; its send callback
   hands every byte to on_write, which takes all of it, so wslay always
   finishes the frame it starts (see ws.h for why that matters). A small
   header scan runs ahead of wslay to turn the frame layer's errors into
   a 1002 close. Shared outgoing text frames (wsframe_*) live here too. */
#include "ws.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <wslay/wslay.h>
#include <zlib.h>

#include "buf.h"
#include "deflate_budget.h"
#include "pmd.h"
#include "timeutil.h"
#include "utf8.h"
#include "xalloc.h"

#define WS__CTRL_MAX   125
#define WS__REASON_MAX 123

/* A close frame at most: header with mask key, then 125 bytes. */
#define WS__HOLD_MAX (2 + 4 + WS__CTRL_MAX)

/* Frame boundaries as the peer sends them, tracked ahead of wslay. */
struct frame_scan {
	uint8_t hdr[10]; /* the two fixed bytes and the extended length */
	unsigned have;	 /* header bytes of the current frame seen */
	uint64_t skip;	 /* payload bytes of the current frame still to pass */
	bool hold;	 /* the current frame is a close frame */
	bool in_msg;	 /* a fragmented message is incomplete (no FIN yet) */
};

/* How frame_scan classes the next run of bytes. */
enum seg_kind {
	WS__PASS,      /* give to wslay now */
	WS__HOLD,      /* part of a close frame: keep */
	WS__HOLD_DONE, /* ends a close frame: keep, then give it all to wslay */
	WS__BAD,       /* the next byte completes a bad header */
};

/* wslay's contexts cost about 8.5 KiB per connection (a 4 KiB frame
   input buffer among them), and an idle terminal connection needs none
   of it: ctx exists only from the first byte of input or a control frame
   to send until the connection is at rest again (rest), and for the
   one connection that came to rest last (`kept`, below), so that one
   sending message after message does not make it anew each time. */
struct ws {
	wslay_event_context_ptr ctx; /* NULL at rest, unless this is `kept` */
	size_t max_message;
	struct ws_callbacks cb;
	void *user;
	const uint8_t *in; /* the unread part of the bytes being fed */
	size_t in_len;
	bool in_feed;	   /* inside wslay_event_recv: flushing is deferred */
	bool close_queued; /* this side queued a close frame itself */
	bool deflate;	   /* permessage-deflate agreed */
	struct frame_scan scan;
	uint8_t hold[WS__HOLD_MAX]; /* the close frame being received */
	size_t hold_len;
};

static unsigned ext_len(const uint8_t *hdr)
{
	unsigned len7 = hdr[1] & 0x7f;

	return len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
}

static uint64_t payload_len(const uint8_t *hdr)
{
	unsigned i, ext = ext_len(hdr);
	uint64_t v = 0;

	if (ext == 0)
		return hdr[1] & 0x7f;
	for (i = 0; i < ext; i++)
		v = v << 8 | hdr[2 + i];
	return v;
}

/* Whether the header collected so far breaks a frame-layer rule that wslay
   would report without a close code: RFC 6455 5.2 (minimal length, 63-bit
   length), 5.5 (control frames are whole and short), 5.5.1 (a close
   payload is empty or holds a code). */
static bool header_bad(const struct frame_scan *s)
{
	unsigned op = s->hdr[0] & 0x0f, len7 = s->hdr[1] & 0x7f;
	unsigned ext = ext_len(s->hdr);
	uint64_t len;

	/* RFC 7692 6: RSV1 marks a message's first frame only. */
	if (s->have == 2 && (s->hdr[0] & 0x40) && (op == 0 || (op & 0x08)))
		return true;
	if (s->have == 2 && (op & 0x08))
		return !(s->hdr[0] & 0x80) || len7 > WS__CTRL_MAX ||
		       (op == WSLAY_CONNECTION_CLOSE && len7 == 1);
	if (ext == 0 || s->have != 2 + ext)
		return false;
	len = payload_len(s->hdr);
	if (ext == 2)
		return len < 126;
	return len < 65536 || (len >> 63);
}

/* Takes header byte c; returns false, leaving the scan as it was, when c
   completes a bad header. */
static bool scan_header(struct frame_scan *s, uint8_t c)
{
	/* Past the length come only the mask key bytes, which need no look. */
	if (s->have < sizeof(s->hdr))
		s->hdr[s->have] = c;
	if (s->have + 1 >= 2) {
		bool bad;

		s->have++;
		bad = header_bad(s);
		s->have--;
		if (bad)
			return false;
	}
	s->have++;
	if (s->have >= 2 &&
	    s->have == 2 + ext_len(s->hdr) + ((s->hdr[1] & 0x80) ? 4 : 0)) {
		s->skip = payload_len(s->hdr);
		s->have = 0;
		if (!(s->hdr[0] & 0x08)) /* a data frame: text, binary, continuation */
			s->in_msg = !(s->hdr[0] & 0x80);
	}
	return true;
}

/* Classes the longest prefix of p (n > 0) handled one way; sets *k to its
   length. Close frames are held back and handed to wslay whole, because
   wslay validates a close reason per received chunk and gets it wrong
   when the payload arrives in pieces. */
static enum seg_kind frame_scan(struct frame_scan *s, const uint8_t *p, size_t n,
				size_t *k)
{
	bool hold = (s->have == 0 && s->skip == 0)
			? (p[0] & 0x0f) == WSLAY_CONNECTION_CLOSE
			: s->hold;
	size_t i = 0;

	while (i < n) {
		if (s->skip > 0) {
			size_t m = s->skip < n - i ? (size_t)s->skip : n - i;

			s->skip -= m;
			i += m;
		} else {
			if (s->have == 0) {
				if (((p[i] & 0x0f) == WSLAY_CONNECTION_CLOSE) != hold)
					break;
				s->hold = hold;
			}
			if (!scan_header(s, p[i]))
				break;
			i++;
		}
		if (hold && s->have == 0 && s->skip == 0) {
			*k = i;
			return WS__HOLD_DONE;
		}
	}
	*k = i;
	if (i == 0)
		return WS__BAD;
	return hold ? WS__HOLD : WS__PASS;
}

static ssize_t recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
		       void *user)
{
	struct ws *ws = user;
	size_t n = ws->in_len < len ? ws->in_len : len;

	if (n == 0) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	memcpy(buf, ws->in, n);
	ws->in += n;
	ws->in_len -= n;
	return (ssize_t)n;
}

static ssize_t send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len,
		       int flags, void *user)
{
	struct ws *ws = user;

	ws->cb.on_write(data, len, ws->user);
	return (ssize_t)len;
}

static void on_close(struct ws *ws, const struct wslay_event_on_msg_recv_arg *arg)
{
	const char *reason = "";
	size_t n = 0;

	if (!ws->cb.on_close)
		return;
	if (arg->msg_length > 2) {
		reason = (const char *)arg->msg + 2;
		n = arg->msg_length - 2;
	}
	ws->cb.on_close(arg->status_code ? arg->status_code : WS_CLOSE_NO_STATUS, reason,
			n, ws->user);
}

/* Ends reading and queues a close with code, from inside wslay's recv. */
static void close_with(struct ws *ws, uint16_t code)
{
	wslay_event_shutdown_read(ws->ctx);
	if (wslay_event_queue_close(ws->ctx, code, NULL, 0) == 0)
		ws->close_queued = true;
}

/* Inflates a compressed message into out, at most max bytes; returns
   0, -EMSGSIZE past max, -EINVAL for data that does not inflate. With no
   context takeover a client message inflates on its own, so the state
   is the process's one (pmd.h), nothing per connection. */
static int inflate_msg(const uint8_t *p, size_t n, size_t max, struct buf *out)
{
	static const uint8_t tail[4] = {0x00, 0x00, 0xff, 0xff};
	z_stream *z = pmd_inflater();
	int r = Z_OK;

	for (int part = 0; part < 2 && r != Z_STREAM_END; part++) {
		z->next_in = (Bytef *)(part ? tail : p);
		z->avail_in = part ? sizeof(tail) : (uInt)n;
		do {
			size_t room = 16384;

			if (buf_size(out) > max)
				return -EMSGSIZE;
			z->next_out = buf_reserve(out, room);
			z->avail_out = (uInt)room;
			r = inflate(z, Z_SYNC_FLUSH);
			if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR)
				return -EINVAL;
			buf_commit(out, room - z->avail_out);
		} while (z->avail_out == 0 && r != Z_STREAM_END);
	}
	return buf_size(out) > max ? -EMSGSIZE : 0;
}

static bool text_valid(const uint8_t *p, size_t n)
{
	size_t k;

	for (; n > 0; p += k, n -= k)
		if ((k = utf8_seq_len(p, n)) == 0)
			return false;
	return true;
}

/* A message with RSV1: inflated, bounded, checked, then delivered. */
static void on_deflated(struct ws *ws, const struct wslay_event_on_msg_recv_arg *arg)
{
	struct buf out = BUF_INIT;
	int r = arg->msg_length > UINT32_MAX
		    ? -EMSGSIZE
		    : inflate_msg(arg->msg, arg->msg_length, ws->max_message, &out);

	if (r == -EMSGSIZE)
		close_with(ws, WS_CLOSE_TOO_BIG);
	else if (r < 0 || (arg->opcode == WSLAY_TEXT_FRAME &&
			   !text_valid(buf_head(&out), buf_size(&out))))
		close_with(ws, WS_CLOSE_INVALID_DATA);
	else if (arg->opcode == WSLAY_TEXT_FRAME && ws->cb.on_text)
		ws->cb.on_text((const char *)buf_head(&out), buf_size(&out), ws->user);
	else if (arg->opcode == WSLAY_BINARY_FRAME && ws->cb.on_binary)
		ws->cb.on_binary(buf_size(&out), ws->user);
	buf_free(&out);
}

static void msg_cb(wslay_event_context_ptr ctx,
		   const struct wslay_event_on_msg_recv_arg *arg, void *user)
{
	struct ws *ws = user;

	if (arg->rsv & WSLAY_RSV1_BIT) {
		on_deflated(ws, arg);
		return;
	}
	switch (arg->opcode) {
	case WSLAY_TEXT_FRAME:
		if (ws->cb.on_text)
			ws->cb.on_text((const char *)arg->msg, arg->msg_length, ws->user);
		break;
	case WSLAY_BINARY_FRAME:
		if (ws->cb.on_binary)
			ws->cb.on_binary(arg->msg_length, ws->user);
		break;
	case WSLAY_CONNECTION_CLOSE:
		on_close(ws, arg);
		break;
	case WSLAY_PONG:
		if (ws->cb.on_pong)
			ws->cb.on_pong(arg->msg, arg->msg_length, ws->user);
		break;
	default: /* a ping: wslay has queued the pong */
		break;
	}
}

/* The one connection of this thread whose wslay state is kept while at
   rest. Making it anew costs some 12,000 instructions (a 4 KiB buffer
   zeroed among them), a quarter of the gateway's work for a keystroke:
   a connection that sends message after message (someone typing) keeps
   it, while an idle connection still holds none. A connection that
   comes to rest frees the kept one first, so at most one is held beyond
   those in use. Only rest() keeps, only a blank state: any use through
   ctx_of() takes it back from `kept` first. */
static _Thread_local struct ws *kept;

static wslay_event_context_ptr ctx_of(struct ws *ws)
{
	static const struct wslay_event_callbacks wcb = {
	    .recv_callback = recv_cb,
	    .send_callback = send_cb,
	    .on_msg_recv_callback = msg_cb,
	};

	if (kept == ws)
		kept = NULL; /* in use: no other connection may free it now */
	if (ws->ctx)
		return ws->ctx;
	if (wslay_event_context_server_init(&ws->ctx, &wcb, ws) != 0) {
		/* wslay fails only when malloc does: the same policy as xmalloc. */
		abort();
	}
	wslay_event_config_set_max_recv_msg_length(ws->ctx, ws->max_message);
	if (ws->deflate)
		wslay_event_config_set_allowed_rsv_bits(ws->ctx, WSLAY_RSV1_BIT);
	return ws->ctx;
}

/* Frees the kept connection's wslay state. */
static void free_kept(void)
{
	if (!kept)
		return;
	wslay_event_context_free(kept->ctx);
	kept->ctx = NULL;
	kept = NULL;
}

/* Lets wslay's state go when nothing in it matters any more: between
   frames, outside a fragmented message, nothing queued, no close sent
   or received (the closing handshake keeps it to the end). The state is
   kept, as the one of `kept`, until another connection comes to rest. */
static void rest(struct ws *ws)
{
	wslay_event_context_ptr ctx = ws->ctx;

	if (!ctx || kept == ws || ws->in_feed || ws->scan.have || ws->scan.skip ||
	    ws->scan.in_msg || ws->hold_len || ws->close_queued ||
	    wslay_event_get_queued_msg_count(ctx) || !wslay_event_get_read_enabled(ctx) ||
	    !wslay_event_get_write_enabled(ctx) || wslay_event_get_close_sent(ctx) ||
	    wslay_event_get_close_received(ctx))
		return;
	free_kept();
	kept = ws;
}

struct ws *ws_new(const struct ws_callbacks *cb, void *user)
{
	struct ws *ws = xcalloc(1, sizeof(*ws));

	assert(cb->on_write != NULL);
	ws->cb = *cb;
	ws->user = user;
	ws->max_message = WS_MAX_MESSAGE;
	return ws;
}

void ws_set_max_message(struct ws *ws, size_t n)
{
	ws->max_message = n;
	if (ws->ctx)
		wslay_event_config_set_max_recv_msg_length(ws->ctx, n);
}

void ws_set_deflate(struct ws *ws, bool on)
{
	ws->deflate = on;
	if (ws->ctx)
		wslay_event_config_set_allowed_rsv_bits(ws->ctx, on ? WSLAY_RSV1_BIT
								    : WSLAY_RSV_NONE);
}

void ws_free(struct ws *ws)
{
	if (ws == NULL)
		return;
	if (kept == ws)
		kept = NULL;
	if (ws->ctx)
		wslay_event_context_free(ws->ctx);
	free(ws);
}

/* Runs wslay over n bytes; callbacks fire, flushing waits. */
static void on_bytes(struct ws *ws, const uint8_t *p, size_t n)
{
	ws->in = p;
	ws->in_len = n;
	ws->in_feed = true;
	/* Its errors all end reading, which ws_feed reports. */
	(void)wslay_event_recv(ctx_of(ws));
	ws->in_feed = false;
	ws->in = NULL;
	ws->in_len = 0;
}

/* Writes every frame wslay has queued through on_write. Returns 0. */
static int flush(struct ws *ws)
{
	if (ws->in_feed || !ws->ctx)
		return 0;
	/* on_write takes everything, so wslay cannot stop short or fail. */
	(void)wslay_event_send(ws->ctx);
	return 0;
}

/* Ends the connection for a frame-layer error, after anything wslay had
   queued (wslay would send its own close ahead of a pending pong). */
static void fail(struct ws *ws)
{
	flush(ws);
	wslay_event_shutdown_read(ctx_of(ws));
	if (wslay_event_queue_close(ws->ctx, WS_CLOSE_PROTOCOL, NULL, 0) == 0)
		ws->close_queued = true;
}

/* Keeps k bytes of a close frame; hands the frame over once whole. */
static void hold_partial(struct ws *ws, const uint8_t *p, size_t k, bool done)
{
	/* header_bad refuses a longer close frame before it gets here. */
	assert(k <= sizeof(ws->hold) - ws->hold_len);
	memcpy(ws->hold + ws->hold_len, p, k);
	ws->hold_len += k;
	if (done) {
		on_bytes(ws, ws->hold, ws->hold_len);
		ws->hold_len = 0;
	}
}

int ws_feed(struct ws *ws, const uint8_t *p, size_t n)
{
	enum seg_kind seg;
	size_t k;

	if (n == 0)
		return ws->ctx && !wslay_event_get_read_enabled(ws->ctx) ? -ESHUTDOWN : 0;
	while (n > 0 && wslay_event_get_read_enabled(ctx_of(ws))) {
		seg = frame_scan(&ws->scan, p, n, &k);
		switch (seg) {
		case WS__PASS:
			on_bytes(ws, p, k);
			break;
		case WS__HOLD:
		case WS__HOLD_DONE:
			hold_partial(ws, p, k, seg == WS__HOLD_DONE);
			break;
		case WS__BAD:
			fail(ws);
			k = n;
			break;
		}
		p += k;
		n -= k;
	}
	flush(ws);
	if (!wslay_event_get_read_enabled(ws->ctx))
		return -ESHUTDOWN;
	rest(ws);
	return 0;
}

static int queue(struct ws *ws, uint8_t opcode, const void *p, size_t n)
{
	struct wslay_event_msg msg = {opcode, p ? p : "", n};
	int r = wslay_event_queue_msg(ctx_of(ws), &msg);

	if (r == WSLAY_ERR_NO_MORE_MSG)
		return -ESHUTDOWN;
	if (r != 0)
		return -EINVAL;
	flush(ws);
	rest(ws);
	return 0;
}

int ws_send_ping(struct ws *ws, const void *p, size_t n)
{
	if (n > WS__CTRL_MAX)
		return -EINVAL;
	return queue(ws, WSLAY_PING, p, n);
}

/* RFC 6455 7.4: codes a sender may put in a close frame. */
static bool code_sendable(uint16_t code)
{
	if (code >= 3000 && code <= 4999)
		return true;
	return code >= 1000 && code <= 1014 && code != 1004 && code != 1005 &&
	       code != 1006;
}

int ws_send_close(struct ws *ws, uint16_t code, const char *reason)
{
	size_t n = reason ? strlen(reason) : 0;
	int r;

	if (n > WS__REASON_MAX || (code == 0 && n > 0) || (code && !code_sendable(code)))
		return -EINVAL;
	r = wslay_event_queue_close(ctx_of(ws), code,
				    (const uint8_t *)(reason ? reason : ""), n);
	if (r == WSLAY_ERR_NO_MORE_MSG)
		return -ESHUTDOWN;
	if (r != 0)
		return -EINVAL;
	ws->close_queued = true;
	return flush(ws);
}

bool ws_close_sent(const struct ws *ws)
{
	/* wslay stops reading exactly when it queues a close on its own. */
	if (!ws->ctx)
		return ws->close_queued; /* at rest: no close either way */
	return ws->close_queued || wslay_event_get_close_sent(ws->ctx) ||
	       !wslay_event_get_read_enabled(ws->ctx);
}

bool ws_close_received(const struct ws *ws)
{
	return ws->ctx && wslay_event_get_close_received(ws->ctx);
}

static size_t header_len(size_t len)
{
	return len < 126 ? 2 : len < 65536 ? 4 : 10;
}

/* A frame of len payload bytes with first header byte b0, payload
   uncopied. */
static struct wsframe *frame_new(uint8_t b0, size_t len)
{
	size_t hlen = header_len(len);
	struct wsframe *f;
	unsigned i;

	if (len > SIZE_MAX - sizeof(*f) - hlen)
		abort();
	f = xmalloc(sizeof(*f) + hlen + len);
	f->refs = 1;
	f->deflate_tried = false;
	f->deflated = NULL;
	f->len = hlen + len;
	f->data[0] = b0;
	if (hlen == 2) {
		f->data[1] = (uint8_t)len;
	} else {
		f->data[1] = hlen == 4 ? 126 : 127;
		for (i = 0; i < hlen - 2; i++)
			f->data[hlen - 1 - i] = (uint8_t)((uint64_t)len >> (8 * i));
	}
	return f;
}

struct wsframe *wsframe_text(const char *payload, size_t len)
{
	struct wsframe *f = frame_new(0x80 | WSLAY_TEXT_FRAME, len);

	if (len > 0)
		memcpy(f->data + header_len(len), payload, len);
	return f;
}

/* Frames are compressed whole by pmd_deflate at the level the loop's
   compression budget gives (deflate_budget.h). */
static struct deflate_budget budget;

/* The loop's own CPU time: what compressing took from it, not the time
   the machine gave to others meanwhile. */
static int64_t thread_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Deflates f's payload into a new RSV1 frame, or NULL when that would
   not be smaller. */
static struct wsframe *deflate_frame(const struct wsframe *f)
{
	size_t hlen = (f->data[1] & 0x7f) == 127   ? 10
		      : (f->data[1] & 0x7f) == 126 ? 4
						   : 2;
	size_t n = f->len - hlen, out_len;
	int64_t c0 = thread_cpu_us();
	int level = deflate_budget_level(&budget, time_mono_us());
	struct wsframe *d;
	uint8_t *tmp = xmalloc(n);

	/* Room for less than the payload: 0 back means no gain. */
	out_len = pmd_deflate(level, f->data + hlen, n, tmp, n - 1);
	deflate_budget_spent(&budget, time_mono_us(), thread_cpu_us() - c0);
	if (out_len == 0 || header_len(out_len) + out_len >= f->len) {
		free(tmp);
		return NULL;
	}
	d = frame_new(f->data[0] | 0x40, out_len);
	memcpy(d->data + header_len(out_len), tmp, out_len);
	free(tmp);
	return d;
}

struct wsframe *wsframe_pick(struct wsframe *f, bool deflate)
{
	if (!deflate || f->len < WSFRAME_DEFLATE_MIN + 2)
		return f;
	if (!f->deflate_tried) {
		f->deflated = deflate_frame(f);
		f->deflate_tried = true;
	}
	return f->deflated ? f->deflated : f;
}

struct wsframe *wsframe_ref(struct wsframe *f)
{
	assert(f->refs > 0);
	f->refs++;
	return f;
}

void wsframe_unref(struct wsframe *f)
{
	if (f == NULL)
		return;
	assert(f->refs > 0);
	if (--f->refs == 0) {
		wsframe_unref(f->deflated);
		free(f);
	}
}
