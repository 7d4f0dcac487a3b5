/* b64: strict base64 (RFC 4648 section 4) and unpadded base64url
   (section 5). The decoders accept exactly one encoding per byte string:
   no whitespace, no excess padding, no non-zero trailing bits. */
#include "b64.h"

#include <errno.h>
#include <string.h>

static const char std[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void encode(const uint8_t *src, size_t n, struct buf *out, const char *alpha,
		   int pad)
{
	size_t i;
	char *p = (char *)buf_reserve(out, b64_encoded_len(n));
	char *start = p;

	for (i = 0; i + 3 <= n; i += 3) {
		uint32_t v =
		    (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8 | src[i + 2];

		*p++ = alpha[v >> 18 & 63];
		*p++ = alpha[v >> 12 & 63];
		*p++ = alpha[v >> 6 & 63];
		*p++ = alpha[v & 63];
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)src[i] << 16;

		*p++ = alpha[v >> 18 & 63];
		*p++ = alpha[v >> 12 & 63];
		if (pad) {
			*p++ = '=';
			*p++ = '=';
		}
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8;

		*p++ = alpha[v >> 18 & 63];
		*p++ = alpha[v >> 12 & 63];
		*p++ = alpha[v >> 6 & 63];
		if (pad)
			*p++ = '=';
	}
	buf_commit(out, (size_t)(p - start));
}

void b64_encode(const uint8_t *src, size_t n, struct buf *out)
{
	encode(src, n, out, std, 1);
}

void b64url_encode(const uint8_t *src, size_t n, struct buf *out)
{
	encode(src, n, out, url_alphabet, 0);
}

size_t b64_encoded_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

size_t b64_decoded_max(size_t n)
{
	return (n + 3) / 4 * 3;
}

/* Each byte's value in an alphabet, 255 when it is not in it: tables,
   as decoding every Keyframe and input frame byte by byte with compares
   took ~1.7 ns a byte. Built from the alphabets before main runs, so
   they cannot disagree with the encoder and no thread sees them half
   built. */
static uint8_t std_values[256], url_values[256];

__attribute__((constructor)) static void build_values(void)
{
	memset(std_values, 0xff, sizeof(std_values));
	memset(url_values, 0xff, sizeof(url_values));
	for (int i = 0; i < 64; i++) {
		std_values[(uint8_t)std[i]] = (uint8_t)i;
		url_values[(uint8_t)url_alphabet[i]] = (uint8_t)i;
	}
}

static const uint8_t *values(int url)
{
	return url ? url_values : std_values;
}

/* Value of c in the alphabet, or -1. */
static int value(char c, int url)
{
	uint8_t v = values(url)[(uint8_t)c];

	return v == 0xff ? -1 : v;
}

/* Decodes n (1..4) significant chars of one group into out; rejects a
   lone char (n == 1) and set bits below the last whole byte. */
static int group(const char *s, size_t n, int url, uint8_t *dst, size_t *produced)
{
	uint32_t v = 0;
	size_t i;

	if (n < 2)
		return -EINVAL;
	for (i = 0; i < 4; i++) {
		int d = i < n ? value(s[i], url) : 0;

		if (d < 0)
			return -EINVAL;
		v = v << 6 | (uint32_t)d;
	}
	*produced = n - 1;
	if (n == 2 && (v & 0xffff))
		return -EINVAL;
	if (n == 3 && (v & 0xff))
		return -EINVAL;
	dst[0] = v >> 16 & 0xff;
	dst[1] = v >> 8 & 0xff;
	dst[2] = v & 0xff;
	return 0;
}

/* Decodes sig significant chars (padding already stripped). */
static int decode(const char *src, size_t sig, int url, struct buf *out)
{
	size_t i, k;
	uint8_t *dst = buf_reserve(out, b64_decoded_max(sig) + 3);
	uint8_t *start = dst;
	const uint8_t *t = values(url);

	/* Whole groups with one check of all four values; the last group,
	   which may be partial or padded, by group(). */
	for (i = 0; i + 4 < sig; i += 4) {
		const uint8_t *c = (const uint8_t *)src + i;
		uint32_t a = t[c[0]], b = t[c[1]], d = t[c[2]], e = t[c[3]];
		uint32_t v = a << 18 | b << 12 | d << 6 | e;

		if ((a | b | d | e) & 0x80)
			return -EINVAL;
		dst[0] = (uint8_t)(v >> 16);
		dst[1] = (uint8_t)(v >> 8);
		dst[2] = (uint8_t)v;
		dst += 3;
	}
	for (; i < sig; i += 4) {
		size_t n = sig - i < 4 ? sig - i : 4;

		/* Nothing is committed until the end, so out keeps what it had. */
		if (group(src + i, n, url, dst, &k) < 0)
			return -EINVAL;
		dst += k;
	}
	buf_commit(out, (size_t)(dst - start));
	return 0;
}

int b64_decode(const char *src, size_t n, struct buf *out)
{
	size_t sig = n;

	if (n % 4 != 0)
		return -EINVAL;
	/* At most two '=', only at the very end. */
	if (sig > 0 && src[sig - 1] == '=')
		sig--;
	if (sig > 0 && src[sig - 1] == '=')
		sig--;
	if (sig % 4 == 1)
		return -EINVAL;
	return decode(src, sig, 0, out);
}

int b64url_decode(const char *src, size_t n, struct buf *out)
{
	if (n % 4 == 1)
		return -EINVAL;
	return decode(src, n, 1, out);
}
