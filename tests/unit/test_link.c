/* unit: shared */
/* link: framing round trips, a stream fed one byte at a time, the size
   cap checked on the header alone, and bodies that are not messages. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip),
	    cmocka_unit_test(test_big_endian_length),
	    cmocka_unit_test(test_one_byte_at_a_time),
	    cmocka_unit_test(test_over_cap),
	    cmocka_unit_test(test_bad_bodies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
