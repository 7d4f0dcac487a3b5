/* fleetauth: see fleetauth.h. The MAC covers a version label and each
   field with its length in front, so no two requests sign the same
   bytes. */
#include "fleetauth.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "b64.h"
#include "buf.h"
#include "fdio.h"
#include "num.h"

#define LABEL	"ptygate-fleet-auth-v1"
#define MAC_B64 43 /* base64url of crypto_auth_BYTES (32), unpadded */

int fleetauth_init(struct fleetauth *fa, const void *secret, size_t len)
{
	const unsigned char *s = secret;

	if (len && s[len - 1] == '\n')
		len--;
	if (len && s[len - 1] == '\r')
		len--;
	if (len < FLEETAUTH_SECRET_MIN)
		return -EINVAL;
	crypto_generichash(fa->key, sizeof(fa->key), s, len, (const unsigned char *)LABEL,
			   sizeof(LABEL) - 1);
	return 0;
}

int fleetauth_load(struct fleetauth *fa, const char *path, char *err, size_t errlen)
{
	struct buf b;
	int rc;

	buf_init(&b);
	rc = fd_read_file(path, FDIO_REGULAR, FLEETAUTH_SECRET_MAX, &b, err, errlen);
	if (rc == 0 && fleetauth_init(fa, buf_head(&b), buf_size(&b)) < 0) {
		snprintf(err, errlen, "%s: the fleet secret must hold at least %d bytes",
			 path, FLEETAUTH_SECRET_MIN);
		rc = -EINVAL;
	}
	if (buf_size(&b))
		sodium_memzero(buf_head(&b), buf_size(&b));
	buf_free(&b);
	return rc;
}

void fleetauth_clear(struct fleetauth *fa)
{
	sodium_memzero(fa->key, sizeof(fa->key));
}

static void field(crypto_auth_hmacsha512256_state *st, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	unsigned char len[4] = {n >> 24, n >> 16, n >> 8, n};

	crypto_auth_hmacsha512256_update(st, len, sizeof(len));
	if (n)
		crypto_auth_hmacsha512256_update(st, (const unsigned char *)s, n);
}

static int too_long(const char *s)
{
	return s && strnlen(s, FLEETAUTH_FIELD_MAX + 1) > FLEETAUTH_FIELD_MAX;
}

static void mac(const struct fleetauth *fa, const char *ts, const char *method,
		const char *target, const char *xff, unsigned char out[32])
{
	crypto_auth_hmacsha512256_state st;

	crypto_auth_hmacsha512256_init(&st, fa->key, sizeof(fa->key));
	field(&st, LABEL);
	field(&st, ts);
	field(&st, method);
	field(&st, target);
	field(&st, xff);
	crypto_auth_hmacsha512256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

int fleetauth_sign(const struct fleetauth *fa, int64_t now_s, const char *method,
		   const char *target, const char *xff, char out[FLEETAUTH_VALUE_MAX])
{
	unsigned char m[32];
	char ts[24];
	struct buf b;

	if (too_long(method) || too_long(target) || too_long(xff))
		return -E2BIG;
	snprintf(ts, sizeof(ts), "%" PRId64, now_s);
	mac(fa, ts, method, target, xff, m);
	buf_init(&b);
	buf_appendf(&b, "v1 %s ", ts);
	b64url_encode(m, sizeof(m), &b);
	snprintf(out, FLEETAUTH_VALUE_MAX, "%.*s", (int)buf_size(&b),
		 (const char *)buf_head(&b));
	buf_free(&b);
	return 0;
}

/* "v1 TS MAC": TS a signed decimal, MAC 43 base64url characters. */
static int split(const char *value, char ts[24], unsigned char m[32])
{
	const char *sp;
	size_t n;
	struct buf b;
	int rc = -EINVAL;

	if (!value || strncmp(value, "v1 ", 3) != 0)
		return -EINVAL;
	value += 3;
	sp = strchr(value, ' ');
	n = sp ? (size_t)(sp - value) : 0;
	if (!n || n >= 24 || strlen(sp + 1) != MAC_B64)
		return -EINVAL;
	memcpy(ts, value, n);
	ts[n] = '\0';
	buf_init(&b);
	if (b64url_decode(sp + 1, MAC_B64, &b) == 0 && buf_size(&b) == 32) {
		memcpy(m, buf_head(&b), 32);
		rc = 0;
	}
	buf_free(&b);
	return rc;
}

int fleetauth_verify(const struct fleetauth *fa, int64_t now_s, const char *value,
		     const char *method, const char *target, const char *xff)
{
	unsigned char got[32], want[32];
	char ts[24];
	int64_t t;

	if (too_long(method) || too_long(target) || too_long(xff))
		return -EINVAL;
	if (split(value, ts, got) < 0 ||
	    num_parse_i64(ts, INT64_MIN / 2, INT64_MAX / 2, &t) < 0)
		return -EINVAL;
	mac(fa, ts, method, target, xff, want);
	if (sodium_memcmp(got, want, sizeof(want)) != 0)
		return -EACCES;
	if (t > now_s + FLEETAUTH_SKEW_S || t < now_s - FLEETAUTH_SKEW_S)
		return -ETIMEDOUT;
	return 0;
}

const char *fleetauth_strerror(int err)
{
	switch (err) {
	case 0:
		return "verified";
	case -EACCES:
		return "the fleet MAC does not match";
	case -ETIMEDOUT:
		return "the fleet timestamp is outside the allowed clock skew";
	default:
		return "malformed fleet authentication header";
	}
}
