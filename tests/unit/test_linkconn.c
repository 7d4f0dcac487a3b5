/* unit: shared */
/* linkconn: two linkconns on one loop over a socketpair exchanging
   messages (one of ~2 MiB, which must be queued and written under
   EV_WRITE), frames overtaking queued replies at message boundaries, closes from inside
   callbacks, peer close, resets, and bad bytes from a raw peer; what the
   kernel may hold of a link's sends (unix and TCP). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include "ev.h"
#include "link.h"
#include "linkconn.h"

#define BIG (2 * 1024 * 1024 + 123)

struct side {
	struct ev_loop *loop;
	struct linkconn *lc;
	int nmsg;
	int nclose;
	char reason[128];
	int close_after; /* close from on_message after this many */
	int cases[8];
	uint64_t inputs[8]; /* attach_id of each Input, in arrival order */
	int ninputs;
	size_t big_len;
	int big_ok;
	int *closes_total;
	int stop_at;
	int slow_us;		/* on_message takes this long (the turn budget test) */
	struct ev_timer *probe; /* armed at 0 ms by the first message */
	int probe_fired;	/* turns of other callbacks seen so far */
	int probe_seen[8];	/* probe_fired when each message arrived */
	int turns, turns_cut;	/* on_turn calls, and those cut */
	int turn_nmsg;		/* nmsg when the last turn ended */
	int64_t msg_spent_us, msg_cpu_us; /* the last turn that handed out any */
};

static uint8_t *big_data(void)
{
	uint8_t *d = malloc(BIG);
	size_t i;

	assert_non_null(d);
	for (i = 0; i < BIG; i++)
		d[i] = (uint8_t)(i ^ (i >> 8));
	return d;
}

static void on_message(struct linkconn *lc, const Ptg__LinkMessage *m, void *user)
{
	struct side *s = user;

	assert_ptr_equal(lc, s->lc);
	if (s->nmsg < 8)
		s->cases[s->nmsg] = m->msg_case;
	s->nmsg++;
	if (m->msg_case == PTG__LINK_MESSAGE__MSG_INPUT) {
		uint8_t *d = big_data();

		if (s->ninputs < 8)
			s->inputs[s->ninputs++] = m->input->attach_id;
		s->big_len = m->input->data.len;
		s->big_ok = s->big_len == BIG && memcmp(m->input->data.data, d, BIG) == 0;
		free(d);
	}
	if (s->close_after && s->nmsg == s->close_after)
		linkconn_close(lc, "done here");
	if (s->nmsg <= 8)
		s->probe_seen[s->nmsg - 1] = s->probe_fired;
	if (s->probe && s->nmsg == 1)
		ev_timer_arm(s->probe, 0, 0);
	if (s->slow_us)
		usleep((useconds_t)s->slow_us);
}

static void on_turn(struct linkconn *lc, int64_t spent_us, int64_t cpu_us, bool cut,
		    void *user)
{
	struct side *s = user;

	assert_true(spent_us >= 0 && cpu_us >= 0);
	s->turns++;
	s->turns_cut += cut;
	if (s->nmsg > s->turn_nmsg) {
		s->msg_spent_us = spent_us;
		s->msg_cpu_us = cpu_us;
	}
	s->turn_nmsg = s->nmsg;
}

static void on_close(struct linkconn *lc, const char *reason, void *user)
{
	struct side *s = user;

	assert_ptr_equal(lc, s->lc);
	s->nclose++;
	snprintf(s->reason, sizeof(s->reason), "%s", reason);
	/* Harmless after the close: dropped, not written. */
	linkconn_close(lc, "again");
	s->lc = NULL;
	if (s->closes_total && ++*s->closes_total == s->stop_at)
		ev_loop_stop(s->loop);
}

static const struct linkconn_ops ops = {on_message, on_close, on_turn};

static void guard_cb(struct ev_timer *t, void *user)
{
	fail_msg("test timed out in the loop");
}

static void stop_cb(struct ev_timer *t, void *user)
{
	ev_loop_stop(user);
}

static void send_hello(struct linkconn *lc, const char *id)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Hello h = PTG__HELLO__INIT;

	h.gateway_id = (char *)id;
	m.msg_case = PTG__LINK_MESSAGE__MSG_HELLO;
	m.hello = &h;
	linkconn_send(lc, &m);
}

/* A BIG Input tagged attach_id, in order or in the reply lane. */
static void send_big_as(struct linkconn *lc, uint64_t attach_id, int reply_lane)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Input in = PTG__INPUT__INIT;
	uint8_t *d = big_data();

	in.attach_id = attach_id;
	in.data.data = d;
	in.data.len = BIG;
	m.msg_case = PTG__LINK_MESSAGE__MSG_INPUT;
	m.input = &in;
	if (reply_lane)
		linkconn_send_reply(lc, &m);
	else
		linkconn_send(lc, &m);
	free(d);
}

static void send_big(struct linkconn *lc)
{
	send_big_as(lc, 9, 0);
}

struct fixture {
	struct ev_loop *loop;
	struct ev_timer *guard;
	int fd[2];
	struct side a, b;
	int closes;
};

static void fixture_init(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->loop = ev_loop_new();
	assert_non_null(f->loop);
	f->guard = ev_timer_new(f->loop, 10000, 0, guard_cb, NULL);
	assert_int_equal(
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, f->fd), 0);
	f->a.loop = f->b.loop = f->loop;
	f->a.closes_total = f->b.closes_total = &f->closes;
}

static void fixture_done(struct fixture *f)
{
	ev_timer_free(f->guard);
	ev_loop_free(f->loop);
}

static void test_exchange_and_close(void **state)
{
	struct fixture f;

	fixture_init(&f);
	f.a.lc = linkconn_new(f.loop, f.fd[0], "side-a", &ops, &f.a);
	f.b.lc = linkconn_new(f.loop, f.fd[1], "side-b", &ops, &f.b);
	assert_string_equal(linkconn_name(f.a.lc), "side-a");
	send_hello(f.a.lc, "one");
	assert_int_equal(linkconn_pending(f.a.lc), 0);
	send_big(f.a.lc);
	/* The socket cannot take 2 MiB at once: the rest waits in the queue. */
	assert_true(linkconn_pending(f.a.lc) > 0);
	send_hello(f.a.lc, "three");
	send_hello(f.b.lc, "from-b");
	/* b closes itself on the third message; a then sees the peer close. */
	f.b.close_after = 3;
	f.a.stop_at = f.b.stop_at = 2;
	assert_int_equal(ev_loop_run(f.loop), 0);
	assert_int_equal(f.b.nmsg, 3);
	assert_int_equal(f.b.cases[0], PTG__LINK_MESSAGE__MSG_HELLO);
	assert_int_equal(f.b.cases[1], PTG__LINK_MESSAGE__MSG_INPUT);
	assert_int_equal(f.b.cases[2], PTG__LINK_MESSAGE__MSG_HELLO);
	assert_int_equal(f.b.big_len, BIG);
	assert_true(f.b.big_ok);
	assert_int_equal(f.a.nmsg, 1);
	assert_int_equal(f.b.nclose, 1);
	assert_string_equal(f.b.reason, "done here");
	assert_int_equal(f.a.nclose, 1);
	assert_string_equal(f.a.reason, "peer closed");
	fixture_done(&f);
}

static void test_close_stops_delivery(void **state)
{
	struct fixture f;
	int i;

	fixture_init(&f);
	f.a.lc = linkconn_new(f.loop, f.fd[0], "a", &ops, &f.a);
	f.b.lc = linkconn_new(f.loop, f.fd[1], "b", &ops, &f.b);
	for (i = 0; i < 5; i++)
		send_hello(f.a.lc, "x");
	/* All five arrive in one read; closing on the first drops the rest. */
	f.b.close_after = 1;
	f.a.stop_at = f.b.stop_at = 2;
	assert_int_equal(ev_loop_run(f.loop), 0);
	assert_int_equal(f.b.nmsg, 1);
	assert_int_equal(f.b.nclose, 1);
	assert_int_equal(f.a.nclose, 1);
	fixture_done(&f);
}

/* A raw peer writes bytes; the linkconn on the other end must close
   with want_reason and deliver want_msgs messages first. */
static void raw_peer_case(const uint8_t *bytes, size_t n, int want_msgs,
			  const char *want_reason)
{
	struct fixture f;

	fixture_init(&f);
	f.b.lc = linkconn_new(f.loop, f.fd[1], "b", &ops, &f.b);
	f.b.stop_at = 1;
	assert_int_equal(write(f.fd[0], bytes, n), (ssize_t)n);
	assert_int_equal(ev_loop_run(f.loop), 0);
	assert_int_equal(f.b.nmsg, want_msgs);
	assert_int_equal(f.b.nclose, 1);
	assert_string_equal(f.b.reason, want_reason);
	close(f.fd[0]);
	fixture_done(&f);
}

static void test_bad_input(void **state)
{
	static const uint8_t too_big[] = {0x01, 0x00, 0x00, 0x01};
	static const uint8_t garbage[] = {0, 0, 0, 2, 0xff, 0xff};
	/* A good Hello, then an empty body. */
	static const uint8_t good_then_empty[] = {0,	0,    0, 4, 0x0a, 0x02,
						  0x08, 0x01, 0, 0, 0,	  0};

	raw_peer_case(too_big, sizeof(too_big), 0, "message too large");
	raw_peer_case(garbage, sizeof(garbage), 0, "bad message");
	raw_peer_case(good_then_empty, sizeof(good_then_empty), 1, "bad message");
}

static void test_peer_close_after_data(void **state)
{
	static const uint8_t hello[] = {0, 0, 0, 4, 0x0a, 0x02, 0x08, 0x01};
	struct fixture f;

	fixture_init(&f);
	f.b.lc = linkconn_new(f.loop, f.fd[1], "b", &ops, &f.b);
	f.b.stop_at = 1;
	assert_int_equal(write(f.fd[0], hello, sizeof(hello)), (ssize_t)sizeof(hello));
	close(f.fd[0]);
	assert_int_equal(ev_loop_run(f.loop), 0);
	/* The message sent before the close is still delivered. */
	assert_int_equal(f.b.nmsg, 1);
	assert_string_equal(f.b.reason, "peer closed");
	fixture_done(&f);
}

static void probe_cb(struct ev_timer *t, void *user)
{
	struct side *s = user;

	s->probe_fired++;
}

/* A turn budget of 50 us against messages that take 200 us each: one
   message a turn, the loop's other callbacks (a 0 ms timer armed by the
   first message) run before the second, and the peer's close counts
   only after every message read before it. */
static void test_turn_budget(void **state)
{
	static const uint8_t hello[] = {0, 0, 0, 4, 0x0a, 0x02, 0x08, 0x01};
	struct fixture f;

	fixture_init(&f);
	f.b.lc = linkconn_new(f.loop, f.fd[1], "b", &ops, &f.b);
	linkconn_set_turn_budget(f.b.lc, 50);
	f.b.slow_us = 200;
	f.b.probe = ev_timer_new(f.loop, -1, 0, probe_cb, &f.b);
	f.b.stop_at = 1;
	for (int i = 0; i < 5; i++)
		assert_int_equal(write(f.fd[0], hello, sizeof(hello)),
				 (ssize_t)sizeof(hello));
	close(f.fd[0]);
	assert_int_equal(ev_loop_run(f.loop), 0);
	assert_int_equal(f.b.nmsg, 5);
	assert_string_equal(f.b.reason, "peer closed");
	assert_int_equal(f.b.probe_seen[0], 0);
	assert_int_equal(f.b.probe_seen[1], 1);
	/* Five cut turns of one message each, one that found none, and the
	   read that met the end. */
	assert_int_equal(f.b.turns_cut, 5);
	assert_int_equal(f.b.turns, 7);
	ev_timer_free(f.b.probe);
	fixture_done(&f);
}

/* A turn's CPU time: a message that sleeps 20 ms in a turn of 2 MiB
   costs the loop no CPU for the sleep, so the turn reports less CPU time
   than wall-clock time by at least the sleep; a lone small message's
   turn reports its wall-clock time (the CPU clock is a system call a
   keystroke's turn does not pay). */
/* One message from a to b, whose handler sleeps slow_us; b closes
   after it. Leaves the turn's figures in f->b. */
static void one_slow_message(struct fixture *f, bool big, int slow_us)
{
	fixture_init(f);
	f->a.lc = linkconn_new(f->loop, f->fd[0], "a", &ops, &f->a);
	f->b.lc = linkconn_new(f->loop, f->fd[1], "b", &ops, &f->b);
	f->b.slow_us = slow_us;
	f->b.close_after = 1;
	f->a.stop_at = f->b.stop_at = 2;
	if (big)
		send_big(f->a.lc);
	else
		send_hello(f->a.lc, "key");
	assert_int_equal(ev_loop_run(f->loop), 0);
	assert_int_equal(f->b.nmsg, 1);
	assert_true(f->b.msg_spent_us >= slow_us);
}

static void test_turn_cpu_clock(void **state)
{
	struct fixture f;

	one_slow_message(&f, true, 20000);
	assert_true(f.b.big_ok);
	assert_true(f.b.msg_cpu_us + 20000 <= f.b.msg_spent_us);
	fixture_done(&f);

	one_slow_message(&f, false, 2000);
	assert_int_equal(f.b.msg_cpu_us, f.b.msg_spent_us);
	fixture_done(&f);
}

static void test_reset_is_read_error(void **state)
{
	struct fixture f;

	fixture_init(&f);
	f.b.lc = linkconn_new(f.loop, f.fd[1], "b", &ops, &f.b);
	f.b.stop_at = 1;
	/* Closing a unix socket with unread data resets its peer. */
	send_hello(f.b.lc, "unread");
	close(f.fd[0]);
	assert_int_equal(ev_loop_run(f.loop), 0);
	assert_int_equal(f.b.nclose, 1);
	assert_true(strncmp(f.b.reason, "read error: ", 12) == 0);
	fixture_done(&f);
}

/* Pieces of one message, sent straight on an idle link, then behind a
   queued big message: both arrive whole and in order. */
static void test_send_iov(void **state)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Hello h = PTG__HELLO__INIT;
	struct buf pre = BUF_INIT;
	struct iovec iov[3];
	struct fixture f;

	fixture_init(&f);
	f.a.lc = linkconn_new(f.loop, f.fd[0], "a", &ops, &f.a);
	f.b.lc = linkconn_new(f.loop, f.fd[1], "b", &ops, &f.b);
	h.gateway_id = "pieces";
	m.msg_case = PTG__LINK_MESSAGE__MSG_HELLO;
	m.hello = &h;
	link_encode(&m, &pre);
	iov[0] = (struct iovec){buf_head(&pre), 3};
	iov[1] = (struct iovec){buf_head(&pre) + 3, 5};
	iov[2] = (struct iovec){buf_head(&pre) + 8, buf_size(&pre) - 8};
	linkconn_send_iov(f.a.lc, iov, 3);
	send_big(f.a.lc);
	linkconn_send_iov(f.a.lc, iov, 3);
	f.b.close_after = 3;
	f.a.stop_at = f.b.stop_at = 2;
	assert_int_equal(ev_loop_run(f.loop), 0);
	assert_int_equal(f.b.nmsg, 3);
	assert_int_equal(f.b.cases[0], PTG__LINK_MESSAGE__MSG_HELLO);
	assert_int_equal(f.b.cases[1], PTG__LINK_MESSAGE__MSG_INPUT);
	assert_true(f.b.big_ok);
	assert_int_equal(f.b.cases[2], PTG__LINK_MESSAGE__MSG_HELLO);
	buf_free(&pre);
	fixture_done(&f);
}

/* Two large replies, then a frame (pre-framed bytes, the sidecar's
   path) and an ordered message: the first reply is already on the wire
   and is finished whole, then both frames overtake the second reply. */
static void test_frames_before_replies(void **state)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Hello h = PTG__HELLO__INIT;
	struct buf pre = BUF_INIT;
	struct iovec iov;
	struct fixture f;

	fixture_init(&f);
	f.a.lc = linkconn_new(f.loop, f.fd[0], "a", &ops, &f.a);
	f.b.lc = linkconn_new(f.loop, f.fd[1], "b", &ops, &f.b);
	send_big_as(f.a.lc, 1, 1);
	send_big_as(f.a.lc, 2, 1);
	/* The socket took part of reply 1; nothing is queued as a frame. */
	assert_int_equal(linkconn_pending_frames(f.a.lc), 0);
	assert_true(linkconn_pending(f.a.lc) > BIG);
	h.gateway_id = "frame";
	m.msg_case = PTG__LINK_MESSAGE__MSG_HELLO;
	m.hello = &h;
	link_encode(&m, &pre);
	iov = (struct iovec){buf_head(&pre), buf_size(&pre)};
	linkconn_send_iov(f.a.lc, &iov, 1);
	assert_int_equal(linkconn_pending_frames(f.a.lc), buf_size(&pre));
	send_big_as(f.a.lc, 3, 0);
	f.b.close_after = 4;
	f.a.stop_at = f.b.stop_at = 2;
	assert_int_equal(ev_loop_run(f.loop), 0);
	assert_int_equal(f.b.nmsg, 4);
	assert_int_equal(f.b.cases[0], PTG__LINK_MESSAGE__MSG_INPUT);
	assert_int_equal(f.b.cases[1], PTG__LINK_MESSAGE__MSG_HELLO);
	assert_int_equal(f.b.cases[2], PTG__LINK_MESSAGE__MSG_INPUT);
	assert_int_equal(f.b.cases[3], PTG__LINK_MESSAGE__MSG_INPUT);
	assert_int_equal(f.b.ninputs, 3);
	assert_int_equal(f.b.inputs[0], 1);
	assert_int_equal(f.b.inputs[1], 3);
	assert_int_equal(f.b.inputs[2], 2);
	assert_true(f.b.big_ok);
	buf_free(&pre);
	fixture_done(&f);
}

/* On an idle link a reply goes at once, and replies keep their order. */
static void test_replies_in_order(void **state)
{
	struct fixture f;

	fixture_init(&f);
	f.a.lc = linkconn_new(f.loop, f.fd[0], "a", &ops, &f.a);
	f.b.lc = linkconn_new(f.loop, f.fd[1], "b", &ops, &f.b);
	send_hello(f.a.lc, "first");
	send_big_as(f.a.lc, 5, 1);
	send_big_as(f.a.lc, 6, 1);
	send_big_as(f.a.lc, 7, 1);
	f.b.close_after = 4;
	f.a.stop_at = f.b.stop_at = 2;
	assert_int_equal(ev_loop_run(f.loop), 0);
	assert_int_equal(f.b.nmsg, 4);
	assert_int_equal(f.b.cases[0], PTG__LINK_MESSAGE__MSG_HELLO);
	assert_int_equal(f.b.ninputs, 3);
	assert_int_equal(f.b.inputs[0], 5);
	assert_int_equal(f.b.inputs[1], 6);
	assert_int_equal(f.b.inputs[2], 7);
	fixture_done(&f);
}

static void test_free_without_on_close(void **state)
{
	struct fixture f;
	struct ev_timer *t;

	fixture_init(&f);
	f.a.lc = linkconn_new(f.loop, f.fd[0], "a", &ops, &f.a);
	f.b.lc = linkconn_new(f.loop, f.fd[1], "b", &ops, &f.b);
	send_big(f.a.lc);
	linkconn_free(f.a.lc);
	linkconn_free(NULL);
	f.b.stop_at = 1;
	t = ev_timer_new(f.loop, 3000, 0, stop_cb, f.loop);
	assert_int_equal(ev_loop_run(f.loop), 0);
	assert_int_equal(f.a.nclose, 0);
	assert_int_equal(f.b.nclose, 1);
	assert_int_equal(f.b.nmsg, 0);
	ev_timer_free(t);
	fixture_done(&f);
}

/* A peer that stops reading: what the kernel took of a 2 MiB message
   is all ahead of the next frame, out of the sender's reach. The
   default unix buffer (208 KiB) took 219,264 bytes of it here, 64 KiB
   146,176: the kernel doubles what SO_SNDBUF asks, for its bookkeeping,
   and takes one piece past that. */
static void test_unix_kernel_queue_bounded(void **state)
{
	struct fixture f;
	struct linkconn *lc;

	fixture_init(&f);
	lc = linkconn_new(f.loop, f.fd[0], "a", &ops, &f.a);
	assert_non_null(lc);
	send_big(lc);
	assert_true(linkconn_pending(lc) > 0);
	assert_true(linkconn_written(lc) > 0);
	assert_true(linkconn_written(lc) <= 3 * LINKCONN_KERNEL_QUEUE);
	linkconn_free(lc);
	close(f.fd[1]);
	fixture_done(&f);
}

static int tcp_pair(int fd[2])
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) < 0)
		return -1;
	fd[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd[0] < 0 || connect(fd[0], (struct sockaddr *)&a, sizeof(a)) < 0)
		return -1;
	fd[1] = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	close(l);
	return fd[1] < 0 ? -1 : 0;
}

static int tcp_opt(int fd, int opt)
{
	int v = -1;
	socklen_t len = sizeof(v);

	assert_int_equal(getsockopt(fd, IPPROTO_TCP, opt, &v, &len), 0);
	return v;
}

/* Both ends of a TCP link (a sidecar dialling a gateway): Nagle off, or
   a lone keystroke's echo waits for the peer's delayed ACK behind the
   frame before it (40-50 ms for 1% of keystrokes, measured); and only
   LINKCONN_KERNEL_QUEUE unsent. */
static void test_tcp_link_options(void **state)
{
	struct ev_loop *loop = ev_loop_new();
	struct side a = {.loop = loop}, b = {.loop = loop};
	int fd[2] = {-1, -1};

	assert_non_null(loop);
	assert_int_equal(tcp_pair(fd), 0);
	assert_int_equal(tcp_opt(fd[0], TCP_NODELAY), 0);
	a.lc = linkconn_new(loop, fd[0], "a", &ops, &a);
	b.lc = linkconn_new(loop, fd[1], "b", &ops, &b);
	assert_non_null(a.lc);
	assert_non_null(b.lc);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(tcp_opt(fd[i], TCP_NODELAY), 1);
		assert_int_equal(tcp_opt(fd[i], TCP_NOTSENT_LOWAT),
				 LINKCONN_KERNEL_QUEUE);
	}
	linkconn_free(a.lc);
	linkconn_free(b.lc);
	ev_loop_free(loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exchange_and_close),
	    cmocka_unit_test(test_close_stops_delivery),
	    cmocka_unit_test(test_bad_input),
	    cmocka_unit_test(test_peer_close_after_data),
	    cmocka_unit_test(test_turn_budget),
	    cmocka_unit_test(test_turn_cpu_clock),
	    cmocka_unit_test(test_reset_is_read_error),
	    cmocka_unit_test(test_send_iov),
	    cmocka_unit_test(test_frames_before_replies),
	    cmocka_unit_test(test_replies_in_order),
	    cmocka_unit_test(test_free_without_on_close),
	    cmocka_unit_test(test_unix_kernel_queue_bounded),
	    cmocka_unit_test(test_tcp_link_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
