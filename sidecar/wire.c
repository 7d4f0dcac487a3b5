/* wire: see wire.h. The framing of packed frames is shared/link.c's
   (link_wrap_frame). */
#include "wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/uio.h>

#include "link.h"
#include "log.h"

void wire_pack_frame(const Ptg__Frame *f, struct buf *out)
{
	size_t n = ptg__frame__get_packed_size(f);
	uint8_t *p = buf_reserve(out, n);

	buf_commit(out, ptg__frame__pack(f, p));
}

void wire_send_frame(struct linkconn *lc, const uint8_t *frame, size_t len,
		     uint64_t target)
{
	struct link_wrap w;
	struct iovec iov[3];

	link_wrap_frame(&w, len, target);
	if (w.body > LINK_MAX_MESSAGE) {
		/* Frames are bounded where they are made (Output 64 KiB, Keyframe
		   --keyframe-max-bytes); this is the last line of defence of the link. */
		log_error(linkconn_name(lc),
			  "dropping a %zu-byte frame over the link cap", w.body);
		return;
	}
	iov[0] = (struct iovec){w.head, w.head_len};
	iov[1] = (struct iovec){(void *)frame, len};
	iov[2] = (struct iovec){w.tail, w.tail_len};
	linkconn_send_iov(lc, iov, w.tail_len ? 3 : 2);
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
	char msg[WIRE_MSG_MAX];

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
