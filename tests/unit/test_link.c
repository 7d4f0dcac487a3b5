/* unit: shared */
/* link: framing round trips, a stream fed one byte at a time, the size
   cap checked on the header alone, bodies that are not messages, and the
   fast framing of packed frames against protobuf-c's packing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "link.h"

static void make_hello(Ptg__LinkMessage *m, Ptg__Hello *h, const char *id)
{
	ptg__hello__init(h);
	h->protocol_version = PTG__PROTOCOL_VERSION__PROTOCOL_VERSION_1;
	h->gateway_id = (char *)id;
	ptg__link_message__init(m);
	m->msg_case = PTG__LINK_MESSAGE__MSG_HELLO;
	m->hello = h;
}

static void make_input(Ptg__LinkMessage *m, Ptg__Input *in, uint8_t *data, size_t n)
{
	ptg__input__init(in);
	in->attach_id = 77;
	in->data.data = data;
	in->data.len = n;
	ptg__link_message__init(m);
	m->msg_case = PTG__LINK_MESSAGE__MSG_INPUT;
	m->input = in;
}

static void check_hello(const Ptg__LinkMessage *m, const char *id)
{
	assert_int_equal(m->msg_case, PTG__LINK_MESSAGE__MSG_HELLO);
	assert_int_equal(m->hello->protocol_version,
			 PTG__PROTOCOL_VERSION__PROTOCOL_VERSION_1);
	assert_string_equal(m->hello->gateway_id, id);
}

static void test_roundtrip(void **state)
{
	Ptg__LinkMessage m1, m2, *out;
	uint8_t data[3000];
	struct buf b = BUF_INIT;
	Ptg__Hello h;
	Ptg__Input in;
	size_t i, n1;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 31);
	make_hello(&m1, &h, "gw-1");
	make_input(&m2, &in, data, sizeof(data));
	link_encode(&m1, &b);
	n1 = ptg__link_message__get_packed_size(&m1);
	assert_int_equal(buf_size(&b), 4 + n1);
	assert_int_equal(buf_head(&b)[0], 0);
	assert_int_equal(buf_head(&b)[3], n1);
	link_encode(&m2, &b);
	assert_int_equal(link_decode(&b, &out), 1);
	check_hello(out, "gw-1");
	link_message_free(out);
	assert_int_equal(link_decode(&b, &out), 1);
	assert_int_equal(out->msg_case, PTG__LINK_MESSAGE__MSG_INPUT);
	assert_int_equal(out->input->attach_id, 77);
	assert_int_equal(out->input->data.len, sizeof(data));
	assert_memory_equal(out->input->data.data, data, sizeof(data));
	link_message_free(out);
	assert_int_equal(link_decode(&b, &out), 0);
	assert_null(out);
	assert_int_equal(buf_size(&b), 0);
	link_message_free(NULL);
	buf_free(&b);
}

static void test_big_endian_length(void **state)
{
	static uint8_t data[70000];
	Ptg__LinkMessage m;
	struct buf b = BUF_INIT;
	Ptg__Input in;
	size_t n;

	make_input(&m, &in, data, sizeof(data));
	link_encode(&m, &b);
	n = ptg__link_message__get_packed_size(&m);
	assert_true(n > 65536);
	assert_int_equal(buf_head(&b)[0], (n >> 24) & 0xff);
	assert_int_equal(buf_head(&b)[1], (n >> 16) & 0xff);
	assert_int_equal(buf_head(&b)[2], (n >> 8) & 0xff);
	assert_int_equal(buf_head(&b)[3], n & 0xff);
	buf_free(&b);
}

static void test_one_byte_at_a_time(void **state)
{
	Ptg__LinkMessage m[3], *out;
	struct buf src = BUF_INIT, in = BUF_INIT;
	size_t ends[3], i, got = 0;
	uint8_t data[] = "ls -l\r";
	Ptg__Hello h1, h2;
	Ptg__Input inp;

	make_hello(&m[0], &h1, "first");
	make_input(&m[1], &inp, data, sizeof(data) - 1);
	make_hello(&m[2], &h2, "");
	for (i = 0; i < 3; i++) {
		link_encode(&m[i], &src);
		ends[i] = buf_size(&src);
	}
	for (i = 0; i < buf_size(&src); i++) {
		int r;

		buf_append(&in, buf_head(&src) + i, 1);
		r = link_decode(&in, &out);
		if (i + 1 != ends[got]) {
			assert_int_equal(r, 0);
			continue;
		}
		/* A message appears exactly with its last byte. */
		assert_int_equal(r, 1);
		if (got == 0)
			check_hello(out, "first");
		else if (got == 1)
			assert_memory_equal(out->input->data.data, "ls -l\r", 6);
		else
			check_hello(out, "");
		link_message_free(out);
		got++;
		assert_int_equal(buf_size(&in), 0);
	}
	assert_int_equal(got, 3);
	buf_free(&src);
	buf_free(&in);
}

static void test_over_cap(void **state)
{
	static const uint8_t over[] = {0x01, 0x00, 0x00, 0x01};
	static const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff};
	static const uint8_t at_cap[] = {0x01, 0x00, 0x00, 0x00};
	Ptg__LinkMessage *out;
	struct buf b = BUF_INIT;

	/* Refused on the header alone: nothing waits for 16 MiB to arrive. */
	buf_append(&b, over, 4);
	assert_int_equal(link_decode(&b, &out), -EMSGSIZE);
	assert_null(out);
	buf_reset(&b);
	buf_append(&b, huge, 4);
	assert_int_equal(link_decode(&b, &out), -EMSGSIZE);
	buf_reset(&b);
	buf_append(&b, at_cap, 4);
	assert_int_equal(link_decode(&b, &out), 0);
	buf_reset(&b);
	buf_append(&b, at_cap, 3);
	assert_int_equal(link_decode(&b, &out), 0);
	buf_free(&b);
}

static int decode_bytes(const uint8_t *p, size_t n)
{
	Ptg__LinkMessage *out = (Ptg__LinkMessage *)1;
	struct buf b = BUF_INIT;
	int r;

	buf_append(&b, p, n);
	r = link_decode(&b, &out);
	assert_null(out);
	buf_free(&b);
	return r;
}

static void test_bad_bodies(void **state)
{
	/* Not protobuf: a field with wire type 7. */
	static const uint8_t garbage[] = {0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff};
	/* Hello field announcing 100 bytes with 1 present. */
	static const uint8_t truncated[] = {0, 0, 0, 3, 0x0a, 0x64, 0x08};
	/* Empty body: valid protobuf, but no message in the oneof. */
	static const uint8_t empty[] = {0, 0, 0, 0};
	/* Only an unknown field 99 (varint): still no message. */
	static const uint8_t unknown[] = {0, 0, 0, 3, 0x98, 0x06, 0x01};

	assert_int_equal(decode_bytes(garbage, sizeof(garbage)), -EBADMSG);
	assert_int_equal(decode_bytes(truncated, sizeof(truncated)), -EBADMSG);
	assert_int_equal(decode_bytes(empty, sizeof(empty)), -EBADMSG);
	assert_int_equal(decode_bytes(unknown, sizeof(unknown)), -EBADMSG);
}

/* A packed Frame with an Output of n bytes (so the frame's length
   crosses the varints' 1-, 2- and 3-byte boundaries). */
static void packed_frame(size_t n, struct buf *out)
{
	static uint8_t data[70000];
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__OutputFrame o = PTG__OUTPUT_FRAME__INIT;
	uint8_t *p;
	size_t i;

	for (i = 0; i < n; i++)
		data[i] = (uint8_t)(i * 7);
	o.data.data = data;
	o.data.len = n;
	f.session_id = (char *)"s-1";
	f.sequence = 42;
	f.kind_case = PTG__FRAME__KIND_OUTPUT;
	f.output = &o;
	p = buf_reserve(out, ptg__frame__get_packed_size(&f));
	buf_commit(out, ptg__frame__pack(&f, p));
}

/* head, frame bytes, tail, as wire_send_frame hands them to the link. */
static void wrapped(const struct buf *frame, uint64_t target, struct buf *out)
{
	struct link_wrap w;

	link_wrap_frame(&w, buf_size(frame), target);
	assert_true(w.head_len <= LINK_WRAP_HEAD_MAX && w.tail_len <= LINK_WRAP_TAIL_MAX);
	assert_int_equal(w.body, w.head_len - 4 + buf_size(frame) + w.tail_len);
	buf_append(out, w.head, w.head_len);
	buf_append(out, buf_head(frame), buf_size(frame));
	buf_append(out, w.tail, w.tail_len);
}

/* Untargeted, the fast framing is protobuf-c's packing byte for byte;
   targeted, it decodes to the same frame with the target set. */
static void test_wrap_frame(void **state)
{
	static const size_t sizes[] = {0, 1, 100, 120, 125, 16370, 16380, 70000};
	static const uint64_t targets[] = {0, 1, 127, 128, 300, UINT64_MAX};
	size_t i, j;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (j = 0; j < sizeof(targets) / sizeof(targets[0]); j++) {
			struct buf frame = BUF_INIT, fast = BUF_INIT, packed = BUF_INIT;
			Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT, *out;

			packed_frame(sizes[i], &frame);
			wrapped(&frame, targets[j], &fast);
			if (!targets[j]) {
				m.msg_case = PTG__LINK_MESSAGE__MSG_FRAME;
				m.frame = ptg__frame__unpack(NULL, buf_size(&frame),
							     buf_head(&frame));
				link_encode(&m, &packed);
				ptg__frame__free_unpacked(m.frame, NULL);
				assert_int_equal(buf_size(&fast), buf_size(&packed));
				assert_memory_equal(buf_head(&fast), buf_head(&packed),
						    buf_size(&packed));
			}
			assert_int_equal(link_decode(&fast, &out), 1);
			assert_int_equal(buf_size(&fast), 0);
			assert_int_equal(out->msg_case, PTG__LINK_MESSAGE__MSG_FRAME);
			assert_int_equal(out->frame->target_attach_id, targets[j]);
			assert_int_equal(out->frame->sequence, 42);
			assert_string_equal(out->frame->session_id, "s-1");
			assert_int_equal(out->frame->output->data.len, sizes[i]);
			link_message_free(out);
			buf_free(&frame);
			buf_free(&fast);
			buf_free(&packed);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip),
	    cmocka_unit_test(test_big_endian_length),
	    cmocka_unit_test(test_one_byte_at_a_time),
	    cmocka_unit_test(test_over_cap),
	    cmocka_unit_test(test_bad_bodies),
	    cmocka_unit_test(test_wrap_frame),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
