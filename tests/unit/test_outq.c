/* unit: gateway */
/* outq: frames shared by reference across queues, private bytes, partial
   writes through the iovec view, and drop_data for PTY_OUTPUT_LAGGED.
   Reference counts are checked directly; ASan catches leaks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "outq.h"
#include "ws.h"

/* Writes up to max bytes out of q, as writev would, appending to sink. */
static size_t drain(struct outq *q, size_t max, struct buf *sink)
{
	struct iovec iov[8];
	size_t done = 0;
	int i, n = outq_iov(q, iov, 8);

	for (i = 0; i < n && done < max; i++) {
		size_t k = iov[i].iov_len < max - done ? iov[i].iov_len : max - done;

		buf_append(sink, iov[i].iov_base, k);
		done += k;
	}
	outq_consume(q, done);
	return done;
}

/* No chunk is left, and the iovec view agrees. */
static void assert_empty(const struct outq *q)
{
	struct iovec iov[1];

	assert_int_equal(q->count, 0);
	assert_int_equal(outq_bytes(q), 0);
	assert_int_equal(outq_iov(q, iov, 1), 0);
}

static void drain_all(struct outq *q, size_t step, struct buf *sink)
{
	while (outq_bytes(q) > 0)
		assert_true(drain(q, step, sink) > 0);
}

static void test_fanout_refs(void **state)
{
	struct wsframe *f = wsframe_text("{\"a\":1}", 7);
	struct outq a, b;
	struct buf sa = BUF_INIT, sb = BUF_INIT;

	outq_init(&a);
	outq_init(&b);
	outq_push_frame(&a, f, 0);
	outq_push_frame(&b, f, 0);
	outq_push_frame(&b, f, 0);
	assert_int_equal(f->refs, 4);
	wsframe_unref(f); /* the producer's reference */
	assert_int_equal(outq_bytes(&a), 9);
	assert_int_equal(outq_bytes(&b), 18);
	drain_all(&a, 4, &sa);
	assert_int_equal(f->refs, 2);
	assert_int_equal(buf_size(&sa), 9);
	assert_memory_equal(buf_head(&sa), "\x81\x07{\"a\":1}", 9);
	drain_all(&b, 1, &sb);
	assert_int_equal(buf_size(&sb), 18);
	assert_memory_equal(buf_head(&sb) + 9, "\x81\x07{\"a\":1}", 9);
	/* f is freed now: ASan would report any further use or a leak. */
	assert_empty(&a);
	assert_empty(&b);
	outq_clear(&a); /* an empty queue may keep its ring */
	outq_clear(&b);
	buf_free(&sa);
	buf_free(&sb);
}

static void test_iov_partial(void **state)
{
	struct wsframe *f = wsframe_text("hello", 5);
	struct iovec iov[4];
	struct outq q;
	int n;

	outq_init(&q);
	outq_push_bytes(&q, "HTTP", 4);
	outq_push_frame(&q, f, 0);
	outq_push_bytes(&q, "\x89\x00", 2);
	wsframe_unref(f);
	assert_int_equal(outq_bytes(&q), 4 + 7 + 2);
	n = outq_iov(&q, iov, 4);
	assert_int_equal(n, 3);
	assert_int_equal(iov[0].iov_len, 4);
	assert_int_equal(iov[1].iov_len, 7);
	assert_int_equal(iov[2].iov_len, 2);
	assert_int_equal(outq_iov(&q, iov, 2), 2); /* max is honoured */
	outq_consume(&q, 6); /* all of HTTP, two bytes into the frame */
	n = outq_iov(&q, iov, 4);
	assert_int_equal(n, 2);
	assert_int_equal(iov[0].iov_len, 5);
	assert_memory_equal(iov[0].iov_base, "hello", 5);
	assert_int_equal(outq_bytes(&q), 7);
	outq_consume(&q, 0);
	assert_int_equal(outq_bytes(&q), 7);
	outq_consume(&q, 7);
	assert_int_equal(outq_bytes(&q), 0);
	assert_int_equal(outq_iov(&q, iov, 4), 0);
	/* The queue is reusable once empty. */
	outq_push_bytes(&q, "x", 1);
	assert_int_equal(outq_iov(&q, iov, 4), 1);
	outq_clear(&q);
	assert_int_equal(outq_bytes(&q), 0);
	outq_clear(NULL);
}

/* Consecutive private pushes share a chunk, a larger one gets its own. */
static void test_private_coalesce(void **state)
{
	static char big[1000];
	struct buf sink = BUF_INIT;
	struct iovec iov[8];
	struct outq q;

	memset(big, 'b', sizeof(big));
	outq_init(&q);
	outq_push_bytes(&q, "\x8a\x03", 2);
	outq_push_bytes(&q, "abc", 3);
	outq_push_bytes(&q, "", 0);
	assert_int_equal(outq_iov(&q, iov, 8), 1);
	assert_int_equal(iov[0].iov_len, 5);
	outq_push_bytes(&q, big, sizeof(big));
	assert_int_equal(outq_iov(&q, iov, 8), 2);
	drain_all(&q, 3, &sink);
	assert_int_equal(buf_size(&sink), 1005);
	assert_memory_equal(buf_head(&sink),
			    "\x8a\x03"
			    "abc",
			    5);
	assert_memory_equal(buf_head(&sink) + 5, big, sizeof(big));
	buf_free(&sink);
	outq_clear(&q);
}

/* drop_data keeps the started head and every private byte, in order, and
   releases the dropped frames' references. */
static void test_drop_data(void **state)
{
	struct wsframe *f1 = wsframe_text("one", 3), *f2 = wsframe_text("two", 3);
	struct buf sink = BUF_INIT;
	struct outq q;

	outq_init(&q);
	outq_push_frame(&q, f1, 0);
	outq_push_bytes(&q, "\x8a\x00", 2); /* a pong */
	outq_push_frame(&q, f2, 0);
	outq_push_frame(&q, f1, 0);
	outq_push_bytes(&q, "\x88\x02\x03\xe8", 4); /* a close */
	assert_int_equal(f1->refs, 3);
	assert_int_equal(drain(&q, 2, &sink), 2); /* f1's header is out */
	assert_int_equal(outq_drop_data(&q), 5 + 5);
	assert_int_equal(f1->refs, 2); /* the head copy stays */
	assert_int_equal(f2->refs, 1);
	assert_int_equal(outq_bytes(&q), 3 + 2 + 4);
	drain_all(&q, 100, &sink);
	assert_int_equal(buf_size(&sink), 5 + 2 + 4);
	assert_memory_equal(buf_head(&sink), "\x81\x03one\x8a\x00\x88\x02\x03\xe8", 11);
	assert_int_equal(f1->refs, 1);

	/* An unstarted head frame goes; a started private head stays. */
	buf_reset(&sink);
	outq_push_frame(&q, f2, 0);
	outq_push_bytes(&q, "\x8a\x00", 2);
	assert_int_equal(outq_drop_data(&q), 5);
	assert_int_equal(f2->refs, 1);
	assert_int_equal(drain(&q, 1, &sink), 1);
	outq_push_frame(&q, f1, 0);
	assert_int_equal(outq_drop_data(&q), 5);
	assert_int_equal(outq_bytes(&q), 1);
	/* New data after a drop goes behind what was kept. */
	outq_push_frame(&q, f2, 0);
	drain_all(&q, 100, &sink);
	assert_memory_equal(buf_head(&sink), "\x8a\x00\x81\x03two", 7);
	assert_int_equal(outq_drop_data(&q), 0);
	assert_empty(&q);
	outq_clear(&q);
	wsframe_unref(f1);
	wsframe_unref(f2);
	buf_free(&sink);
}

/* Before a close that must leave now: every frame not started goes,
   private ones too; a started frame finishes, even when wslay's pieces
   of it landed in two chunks (a header in the tail's room, the payload
   in a chunk of its own). */
static void test_drop_unsent(void **state)
{
	struct wsframe *f1 = wsframe_text("one", 3), *f2 = wsframe_text("two", 3);
	uint8_t big[252] = {0x81, 0x7e, 0x00, 248}, ping[2] = {0x89, 0x7d}, body[125];
	struct buf sink = BUF_INIT;
	struct outq q;

	outq_init(&q);
	/* Nothing started: everything goes, the close then leads. */
	outq_push_frame(&q, f1, 0);
	outq_push_bytes(&q, "\x8a\x00", 2);
	outq_push_frame(&q, f2, 0);
	assert_int_equal(outq_drop_unsent(&q), 5 + 2 + 5);
	assert_int_equal(f1->refs, 1);
	assert_int_equal(f2->refs, 1);
	assert_empty(&q);
	outq_push_bytes(&q, "\x88\x02\x03\xf3", 4);
	drain_all(&q, 100, &sink);
	assert_memory_equal(buf_head(&sink), "\x88\x02\x03\xf3", 4);

	/* A started shared frame finishes; the frames behind it go. */
	buf_reset(&sink);
	outq_push_frame(&q, f1, 0);
	outq_push_frame(&q, f2, 0);
	outq_push_bytes(&q, "\x8a\x00", 2);
	assert_int_equal(drain(&q, 2, &sink), 2);
	assert_int_equal(outq_drop_unsent(&q), 5 + 2);
	assert_int_equal(outq_bytes(&q), 3);
	outq_push_bytes(&q, "\x88\x02\x03\xf3", 4);
	drain_all(&q, 100, &sink);
	assert_int_equal(buf_size(&sink), 9);
	assert_memory_equal(buf_head(&sink), "\x81\x03one\x88\x02\x03\xf3", 9);

	/* A private frame split over two chunks: a started head keeps the
	   chunk with the rest of it, and not the frame after. */
	buf_reset(&sink);
	memset(big + 4, 'x', sizeof(big) - 4);
	memset(body, 'p', sizeof(body));
	outq_push_bytes(&q, big, sizeof(big));	 /* one 256-byte chunk */
	outq_push_bytes(&q, ping, 2);		 /* fits its room */
	outq_push_bytes(&q, body, sizeof(body)); /* a chunk of its own */
	outq_push_frame(&q, f1, 0);
	outq_push_bytes(&q, "\x8a\x00", 2);
	assert_int_equal(drain(&q, 10, &sink), 10);
	assert_int_equal(outq_drop_unsent(&q), 5 + 2);
	assert_int_equal(outq_bytes(&q), sizeof(big) + 2 + sizeof(body) - 10);
	drain_all(&q, 1000, &sink);
	assert_int_equal(buf_size(&sink), sizeof(big) + 2 + sizeof(body));
	assert_memory_equal(buf_head(&sink) + sizeof(big), ping, 2);
	assert_int_equal(f1->refs, 1);

	/* The same, not started: the split frame goes whole. */
	outq_push_bytes(&q, big, sizeof(big));
	outq_push_bytes(&q, ping, 2);
	outq_push_bytes(&q, body, sizeof(body));
	assert_int_equal(outq_drop_unsent(&q), sizeof(big) + 2 + sizeof(body));
	assert_empty(&q);
	outq_clear(&q);
	wsframe_unref(f1);
	wsframe_unref(f2);
	buf_free(&sink);
}

static void test_clear_unrefs(void **state)
{
	struct wsframe *f = wsframe_text("x", 1);
	struct outq q;

	outq_init(&q);
	outq_push_frame(&q, f, 0);
	outq_push_frame(&q, f, 0);
	outq_push_bytes(&q, "p", 1);
	outq_consume(&q, 1);
	assert_int_equal(f->refs, 3);
	outq_clear(&q);
	assert_int_equal(f->refs, 1);
	assert_int_equal(outq_bytes(&q), 0);
	wsframe_unref(f);
}

static void test_would_overflow(void **state)
{
	struct outq q;

	outq_init(&q);
	assert_false(outq_would_overflow(&q, 100, 100));
	assert_true(outq_would_overflow(&q, 101, 100));
	outq_push_bytes(&q, "0123456789", 10);
	assert_false(outq_would_overflow(&q, 90, 100));
	assert_true(outq_would_overflow(&q, 91, 100));
	assert_true(outq_would_overflow(&q, SIZE_MAX, 100));
	assert_true(outq_would_overflow(&q, 0, 5)); /* already past */
	assert_false(outq_would_overflow(&q, SIZE_MAX - 10, SIZE_MAX));
	outq_clear(&q);
}

/* The latency bound looks at the oldest frame nobody started writing:
   not a partly written head, not private bytes, none after a drop. */
static void test_oldest_waiting(void **state)
{
	struct wsframe *f = wsframe_text("abc", 3);
	int64_t at = -1;
	struct outq q;

	outq_init(&q);
	assert_false(outq_oldest_waiting(&q, &at));
	outq_push_bytes(&q, "p", 1);
	assert_false(outq_oldest_waiting(&q, &at));
	outq_push_frame(&q, f, 100);
	outq_push_frame(&q, f, 200);
	assert_true(outq_oldest_waiting(&q, &at));
	assert_int_equal(at, 100);
	outq_consume(&q, 2); /* the private byte and part of the first frame */
	assert_true(outq_oldest_waiting(&q, &at));
	assert_int_equal(at, 200);
	outq_drop_data(&q);
	assert_false(outq_oldest_waiting(&q, &at));
	outq_clear(&q);
	wsframe_unref(f);
}

/* The answer is kept, not looked up: every change at the head must move
   it. A frame finished reveals the next, a push into a queue with none
   waiting becomes the answer, and dropping the unsent clears it. */
static void test_oldest_waiting_follows_the_head(void **state)
{
	struct wsframe *f = wsframe_text("abc", 3); /* 5 bytes framed */
	int64_t at = -1;
	struct outq q;

	outq_init(&q);
	outq_push_frame(&q, f, 10);
	outq_push_frame(&q, f, 20);
	outq_push_frame(&q, f, 30);
	outq_consume(&q, 5); /* the first whole, the second not begun */
	assert_true(outq_oldest_waiting(&q, &at));
	assert_int_equal(at, 20);
	outq_consume(&q, 6); /* the second whole and one byte of the third */
	assert_false(outq_oldest_waiting(&q, &at));
	outq_push_frame(&q, f, 40);
	assert_true(outq_oldest_waiting(&q, &at));
	assert_int_equal(at, 40);
	outq_drop_unsent(&q); /* keeps the started third, drops the fourth */
	assert_false(outq_oldest_waiting(&q, &at));
	outq_consume(&q, outq_bytes(&q));
	outq_push_bytes(&q, "p", 1);
	outq_push_frame(&q, f, 50);
	assert_true(outq_oldest_waiting(&q, &at));
	assert_int_equal(at, 50);
	outq_clear(&q);
	assert_false(outq_oldest_waiting(&q, &at));
	wsframe_unref(f);
}

/* Frame i of the ring test: a distinct one-byte payload. */
static struct wsframe *numbered(int i)
{
	char c = (char)('A' + i % 26);

	return wsframe_text(&c, 1);
}

/* The ring keeps order when its head has moved on and it must grow
   while wrapped, a drop compacts a wrapped ring in place, and a ring a
   burst grew is given back once it empties (an idle connection keeps at
   most the smallest ring). */
static void test_ring_wraps_grows_and_shrinks(void **state)
{
	struct wsframe *f[40];
	struct buf sink = BUF_INIT;
	struct outq q;
	char want[40];
	int i;

	for (i = 0; i < 40; i++)
		f[i] = numbered(i);
	outq_init(&q);
	for (i = 0; i < 6; i++)
		outq_push_frame(&q, f[i], i);
	assert_int_equal(drain(&q, 5 * 3, &sink), 15); /* 0..4 written: head at slot 5 */
	for (i = 6; i < 30; i++) /* wraps the 8 slots, then grows twice */
		outq_push_frame(&q, f[i], i);
	assert_true(q.cap >= 32);
	while (outq_bytes(&q))
		drain(&q, 3, &sink);
	for (i = 0; i < 30; i++)
		want[i] = (char)('A' + i % 26);
	assert_int_equal(buf_size(&sink), 30 * 3);
	for (i = 0; i < 30; i++)
		assert_int_equal(buf_head(&sink)[i * 3 + 2], want[i]);
	assert_null(q.ring); /* the burst's ring was given back */

	/* Wrapped again, with private bytes among the frames: a drop keeps
	   them in order and frees the frames. */
	buf_reset(&sink);
	for (i = 0; i < 6; i++)
		outq_push_frame(&q, f[i], i);
	drain(&q, 5 * 3, &sink); /* head at slot 5 of 8, frame 5 not begun */
	outq_push_bytes(&q, "\x8a\x00", 2);
	outq_push_frame(&q, f[6], 6);
	outq_push_bytes(&q, "\x89\x00", 2);
	outq_push_frame(&q, f[7], 7);
	assert_int_equal(outq_drop_data(&q), 3 * 3);
	assert_int_equal(f[6]->refs, 1);
	buf_reset(&sink);
	drain_all(&q, 1, &sink);
	assert_int_equal(buf_size(&sink), 4);
	assert_memory_equal(buf_head(&sink), "\x8a\x00\x89\x00", 4);
	assert_empty(&q);
	outq_clear(&q);
	assert_null(q.ring);
	for (i = 0; i < 40; i++) {
		assert_int_equal(f[i]->refs, 1);
		wsframe_unref(f[i]);
	}
	buf_free(&sink);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fanout_refs),
	    cmocka_unit_test(test_iov_partial),
	    cmocka_unit_test(test_private_coalesce),
	    cmocka_unit_test(test_drop_data),
	    cmocka_unit_test(test_drop_unsent),
	    cmocka_unit_test(test_clear_unrefs),
	    cmocka_unit_test(test_would_overflow),
	    cmocka_unit_test(test_oldest_waiting),
	    cmocka_unit_test(test_oldest_waiting_follows_the_head),
	    cmocka_unit_test(test_ring_wraps_grows_and_shrinks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
