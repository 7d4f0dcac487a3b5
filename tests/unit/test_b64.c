/* unit: shared */
/* b64: RFC 4648 section 10 vectors, both alphabets, and every way a
   strict decoder must refuse input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "b64.h"

static const struct {
	const char *plain;
	const char *enc;
} vectors[] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

static int dec(const char *s, struct buf *out)
{
	return b64_decode(s, strlen(s), out);
}

static int udec(const char *s, struct buf *out)
{
	return b64url_decode(s, strlen(s), out);
}

static void test_rfc_vectors(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		struct buf b = BUF_INIT;
		size_t n = strlen(vectors[i].plain);

		b64_encode((const uint8_t *)vectors[i].plain, n, &b);
		assert_int_equal(buf_size(&b), strlen(vectors[i].enc));
		assert_int_equal(b64_encoded_len(n), strlen(vectors[i].enc));
		assert_memory_equal(buf_head(&b), vectors[i].enc, buf_size(&b));
		buf_reset(&b);
		assert_int_equal(dec(vectors[i].enc, &b), 0);
		assert_int_equal(buf_size(&b), n);
		assert_memory_equal(buf_head(&b), vectors[i].plain, n);
		assert_true(b64_decoded_max(strlen(vectors[i].enc)) >= n);
		buf_free(&b);
	}
}

static void test_url_vectors(void **state)
{
	static const char *const enc[] = {"",	    "Zg",      "Zm8",	  "Zm9v",
					  "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};
	size_t i;

	for (i = 0; i < sizeof(enc) / sizeof(enc[0]); i++) {
		struct buf b = BUF_INIT;
		size_t n = strlen(vectors[i].plain);

		b64url_encode((const uint8_t *)vectors[i].plain, n, &b);
		assert_int_equal(buf_size(&b), strlen(enc[i]));
		assert_memory_equal(buf_head(&b), enc[i], buf_size(&b));
		buf_reset(&b);
		assert_int_equal(udec(enc[i], &b), 0);
		assert_int_equal(buf_size(&b), n);
		assert_memory_equal(buf_head(&b), vectors[i].plain, n);
		buf_free(&b);
	}
}

static void test_alphabets_differ(void **state)
{
	static const uint8_t bytes[] = {0xfb, 0xff, 0xbf};
	struct buf b = BUF_INIT;

	b64_encode(bytes, 3, &b);
	assert_memory_equal(buf_head(&b), "+/+/", 4);
	buf_reset(&b);
	b64url_encode(bytes, 3, &b);
	assert_memory_equal(buf_head(&b), "-_-_", 4);
	buf_reset(&b);
	assert_int_equal(dec("-_-_", &b), -EINVAL);
	assert_int_equal(udec("+/+/", &b), -EINVAL);
	assert_int_equal(udec("-_-_", &b), 0);
	assert_memory_equal(buf_head(&b), bytes, 3);
	buf_free(&b);
}

static void test_all_bytes_roundtrip(void **state)
{
	uint8_t in[256];
	size_t n, i;

	for (i = 0; i < 256; i++)
		in[i] = (uint8_t)i;
	for (n = 0; n <= 256; n += 17) {
		struct buf e = BUF_INIT, d = BUF_INIT;

		b64_encode(in, n, &e);
		assert_int_equal(b64_decode((char *)buf_head(&e), buf_size(&e), &d), 0);
		assert_int_equal(buf_size(&d), n);
		assert_memory_equal(buf_head(&d), in, n);
		buf_reset(&e);
		buf_reset(&d);
		b64url_encode(in, n, &e);
		assert_int_equal(b64url_decode((char *)buf_head(&e), buf_size(&e), &d),
				 0);
		assert_int_equal(buf_size(&d), n);
		assert_memory_equal(buf_head(&d), in, n);
		buf_free(&e);
		buf_free(&d);
	}
}

static void test_std_rejects(void **state)
{
	static const char *const bad[] = {
	    "Zg=",    "Zg",	  "Z",	      "Zm9vY",	  /* length not % 4 */
	    "Zm9v\n", " Zm9v",	  "Zm 9v",    "Zm9v\r\n", /* whitespace */
	    "Zm9*",   "Zm9v!A==", "Zm9\x80",  "Zm-v",	  /* outside alphabet */
	    "Zm_v",   "====",	  "Z===",     "Zg=a",	  /* bad padding */
	    "=Zg=",   "Zg==Zg==", "Zm9v====", "Zm=v",
	    "Zh==",   "Zm9=",	  "Zm8/Zh==", "QR==", /* trailing bits */
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct buf b = BUF_INIT;

		buf_append_str(&b, "keep");
		assert_int_equal(dec(bad[i], &b), -EINVAL);
		/* A refused input leaves out as it was. */
		assert_int_equal(buf_size(&b), 4);
		assert_memory_equal(buf_head(&b), "keep", 4);
		buf_free(&b);
	}
}

static void test_std_nul_inside(void **state)
{
	struct buf b = BUF_INIT;

	assert_int_equal(b64_decode("Zm\0v", 4, &b), -EINVAL);
	assert_int_equal(buf_size(&b), 0);
	buf_free(&b);
}

static void test_trailing_bits(void **state)
{
	struct buf b = BUF_INIT;

	assert_int_equal(dec("Zg==", &b), 0);
	assert_int_equal(dec("Zh==", &b), -EINVAL);
	assert_int_equal(dec("Zm8=", &b), 0);
	assert_int_equal(dec("Zm9=", &b), -EINVAL);
	assert_int_equal(udec("Zg", &b), 0);
	assert_int_equal(udec("Zh", &b), -EINVAL);
	assert_int_equal(udec("Zm8", &b), 0);
	assert_int_equal(udec("Zm9", &b), -EINVAL);
	assert_int_equal(buf_size(&b), 6);
	assert_memory_equal(buf_head(&b), "ffoffo", 6);
	buf_free(&b);
}

static void test_url_rejects(void **state)
{
	static const char *const bad[] = {
	    "Zg==", "Zm8=",  "Z",  "Zm9vY", "Zm9v=", "Zm+v", "Zm/v",
	    "Zm v", "Zm9\n", "Zh", "Zm9",   "=",     "Zg=",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct buf b = BUF_INIT;

		assert_int_equal(udec(bad[i], &b), -EINVAL);
		assert_int_equal(buf_size(&b), 0);
		buf_free(&b);
	}
}

/* Every byte value at every position of a three-group input: accepted
   exactly when it is in the alphabet, whether its group is a whole one
   (decoded by table) or the last ('=' is never valid here: "Zm9=" has
   trailing bits set). */
static void test_each_byte_each_position(void **state)
{
	static const char std_alpha[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static const char url_alpha[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

	for (int url = 0; url < 2; url++) {
		const char *alpha = url ? url_alpha : std_alpha;

		for (size_t pos = 0; pos < 12; pos++) {
			for (int c = 0; c < 256; c++) {
				char in[13] = "Zm9vYmFyZm9v";
				struct buf b = BUF_INIT;
				bool ok = c && memchr(alpha, c, 64);
				int r;

				in[pos] = (char)c;
				r = url ? b64url_decode(in, 12, &b)
					: b64_decode(in, 12, &b);
				assert_int_equal(r, ok ? 0 : -EINVAL);
				assert_int_equal(buf_size(&b), ok ? 9 : 0);
				buf_free(&b);
			}
		}
	}
}

static void test_lengths(void **state)
{
	assert_int_equal(b64_encoded_len(0), 0);
	assert_int_equal(b64_encoded_len(1), 4);
	assert_int_equal(b64_encoded_len(3), 4);
	assert_int_equal(b64_encoded_len(4), 8);
	assert_int_equal(b64_decoded_max(4), 3);
	assert_true(b64_decoded_max(3) >= 2);
	assert_true(b64_decoded_max(2) >= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rfc_vectors),
	    cmocka_unit_test(test_url_vectors),
	    cmocka_unit_test(test_alphabets_differ),
	    cmocka_unit_test(test_all_bytes_roundtrip),
	    cmocka_unit_test(test_std_rejects),
	    cmocka_unit_test(test_std_nul_inside),
	    cmocka_unit_test(test_trailing_bits),
	    cmocka_unit_test(test_url_rejects),
	    cmocka_unit_test(test_each_byte_each_position),
	    cmocka_unit_test(test_lengths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
