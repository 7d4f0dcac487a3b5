/* wire: see wire.h. The LinkMessage field numbers used here come from
   proto/link.proto (LinkMessage.frame = 21, Frame.target_attach_id = 4). */
#include "wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/uio.h>

#include "link.h"
#include "log.h"

enum {
	TAG_LINK_FRAME = (21 << 3) | 2,	 /* length-delimited */
	TAG_FRAME_TARGET = (4 << 3) | 0, /* varint */
};

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

void wire_pack_frame(const Ptg__Frame *f, struct buf *out)
{
	size_t n = ptg__frame__get_packed_size(f);
	uint8_t *p = buf_reserve(out, n);

	buf_commit(out, ptg__frame__pack(f, p));
}

void wire_send_frame(struct linkconn *lc, const uint8_t *frame, size_t len,
		     uint64_t target)
{
	uint8_t head[4 + 2 + 10], tail[1 + 10];
	size_t tlen = 0, hlen, body;
	struct iovec iov[3];

	if (target) {
		tail[0] = TAG_FRAME_TARGET;
		tlen = 1 + put_varint(tail + 1, target);
	}
	/* LinkMessage body: tag, length, frame bytes (+ target field). */
	hlen = 4;
	hlen += put_varint(head + hlen, TAG_LINK_FRAME);
	hlen += put_varint(head + hlen, len + tlen);
	body = hlen - 4 + len + tlen;
	head[0] = (uint8_t)(body >> 24);
	head[1] = (uint8_t)(body >> 16);
	head[2] = (uint8_t)(body >> 8);
	head[3] = (uint8_t)body;
	if (body > LINK_MAX_MESSAGE) {
		/* Frames are bounded where they are made (Output 64 KiB, Keyframe
		   --keyframe-max-bytes); this is the last line of defence of the link. */
		log_error(linkconn_name(lc),
			  "dropping a %zu-byte frame over the link cap", body);
		return;
	}
	iov[0] = (struct iovec){head, hlen};
	iov[1] = (struct iovec){(void *)frame, len};
	iov[2] = (struct iovec){tail, tlen};
	linkconn_send_iov(lc, iov, tlen ? 3 : 2);
}

/* Sends r in order (reply_lane 0) or in the link's reply lane. */
static void send_reply(struct linkconn *lc, Ptg__Reply *r, int reply_lane)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Reply small = PTG__REPLY__INIT;

	m.msg_case = PTG__LINK_MESSAGE__MSG_REPLY;
	m.reply = r;
	if (ptg__link_message__get_packed_size(&m) > LINK_MAX_MESSAGE) {
		/* Bounds on every input keep replies far below the cap; should
		   one still outgrow it, the request fails, not the sidecar. */
		small.request_id = r->request_id;
		small.attach_id = r->attach_id;
		small.client_op_id = r->client_op_id;
		small.code = PTG__ERROR_CODE__INTERNAL;
		small.message = "the answer is larger than a link message";
		m.reply = &small;
	}
	if (reply_lane)
		linkconn_send_reply(lc, &m);
	else
		linkconn_send(lc, &m);
}

void wire_send_reply(struct linkconn *lc, Ptg__Reply *r)
{
	send_reply(lc, r, 0);
}

void wire_send_answer(struct linkconn *lc, Ptg__Reply *r)
{
	send_reply(lc, r, 1);
}

static void send_error(struct linkconn *lc, int reply_lane, uint64_t request_id,
		       uint64_t attach_id, const char *client_op_id, Ptg__ErrorCode code,
		       const char *fmt, va_list ap)
{
	Ptg__Reply r = PTG__REPLY__INIT;
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	r.request_id = request_id;
	r.attach_id = attach_id;
	r.client_op_id = (char *)(client_op_id ? client_op_id : "");
	r.code = code;
	r.message = msg;
	send_reply(lc, &r, reply_lane);
}

void wire_send_error(struct linkconn *lc, uint64_t request_id, uint64_t attach_id,
		     const char *client_op_id, Ptg__ErrorCode code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	send_error(lc, 0, request_id, attach_id, client_op_id, code, fmt, ap);
	va_end(ap);
}

void wire_send_answer_error(struct linkconn *lc, uint64_t request_id, Ptg__ErrorCode code,
			    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	send_error(lc, 1, request_id, 0, NULL, code, fmt, ap);
	va_end(ap);
}
