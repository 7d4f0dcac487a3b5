/* unit: auth */
/* auth_jwt: verification of well-formed, forged, mangled and expired
   tokens, claim rules, scopes, authorization and minting. Keys are
   generated in the test; the clock is the constant NOW. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "auth_jwt.h"
#include "b64.h"
#include "keys.h"

#define NOW 1700000000LL

static uint8_t ed_pk[32], ed_sk[64];   /* key "ed1" */
static uint8_t ed2_pk[32], ed2_sk[64]; /* key "ed2" */
static const uint8_t hs_secret[] = "0123456789abcdef0123456789abcdef-hs";

/* A valid claims object; extra is spliced in (starting with ','). */
static char *claims(const char *extra)
{
	static char s[8192 + 512];

	snprintf(s, sizeof(s),
		 "{\"sub\":\"alice\",\"exp\":%lld,\"instance_id\":\"inst-1\","
		 "\"scope\":\"pty:observe\"%s}",
		 NOW + 600, extra ? extra : "");
	return s;
}

/* Mints with the ed1 key unless hs is set; returns a malloc'd string. */
static char *mint(int hs, const char *kid, const char *claims_json)
{
	struct buf out = BUF_INIT;
	size_t n;
	int rc;

	if (hs)
		rc = auth_jwt_mint_hs256(hs_secret, sizeof(hs_secret) - 1, kid,
					 claims_json, &out);
	else
		rc = auth_jwt_mint_eddsa(ed_sk, kid, claims_json, &out);
	assert_int_equal(rc, 0);
	return (char *)buf_steal(&out, &n);
}

enum sigmode { SIG_NONE, SIG_EDDSA, SIG_HS256, SIG_JUNK };

/* Builds a token from raw header and payload JSON, signed as mode says
   (SIG_HS256 with secret/len). */
static char *raw_token(const char *hdr, const char *pay, enum sigmode mode,
		       const uint8_t *secret, size_t len)
{
	struct buf t = BUF_INIT;
	uint8_t sig[64];
	size_t n;

	b64url_encode((const uint8_t *)hdr, strlen(hdr), &t);
	buf_append(&t, ".", 1);
	b64url_encode((const uint8_t *)pay, strlen(pay), &t);
	if (mode == SIG_EDDSA)
		crypto_sign_detached(sig, NULL, buf_head(&t), buf_size(&t), ed_sk);
	if (mode == SIG_HS256) {
		crypto_auth_hmacsha256_state st;

		crypto_auth_hmacsha256_init(&st, secret, len);
		crypto_auth_hmacsha256_update(&st, buf_head(&t), buf_size(&t));
		crypto_auth_hmacsha256_final(&st, sig);
	}
	if (mode == SIG_JUNK)
		memset(sig, 0x41, sizeof(sig));
	buf_append(&t, ".", 1);
	if (mode != SIG_NONE)
		b64url_encode(sig, mode == SIG_HS256 ? 32 : 64, &t);
	return (char *)buf_steal(&t, &n);
}

/* A key set with ed1 (kid "ed1"), ed2 (kid "ed2") and the HS secret
   (kid "hs1"). */
static struct keyset *full_set(void)
{
	struct keyset *ks = keys_new();

	assert_non_null(ks);
	assert_int_equal(keys_add_ed25519_pub(ks, "ed1", ed_pk), 0);
	assert_int_equal(keys_add_ed25519_pub(ks, "ed2", ed2_pk), 0);
	assert_int_equal(keys_add_hs256(ks, "hs1", hs_secret, sizeof(hs_secret) - 1), 0);
	return ks;
}

static int verify(const struct keyset *ks, const struct jwt_policy *pol, const char *t,
		  struct jwt_claims *c)
{
	return auth_jwt_verify(ks, pol, t, strlen(t), NOW, c);
}

/* Verifies t against full_set with the default policy; frees t. */
static int check(char *t)
{
	struct keyset *ks = full_set();
	struct jwt_claims c;
	int rc = verify(ks, NULL, t, &c);

	keys_free(ks);
	free(t);
	return rc;
}

static int setup(void **state)
{
	assert_true(sodium_init() >= 0);
	crypto_sign_keypair(ed_pk, ed_sk);
	crypto_sign_keypair(ed2_pk, ed2_sk);
	return 0;
}

static void test_good_eddsa(void **state)
{
	struct keyset *ks = full_set();
	struct jwt_claims c;
	char *t = mint(0, "ed1",
		       "{\"sub\":\"alice\",\"exp\":1700000600,\"nbf\":1699999000,"
		       "\"iat\":1699999001,\"instance_id\":\"inst-1\","
		       "\"session_id\":\"sess-9\",\"scope\":\"pty:control tasks\"}");

	assert_int_equal(verify(ks, NULL, t, &c), JWT_OK);
	assert_string_equal(c.sub, "alice");
	assert_string_equal(c.instance_id, "inst-1");
	assert_string_equal(c.session_id, "sess-9");
	assert_string_equal(c.kid, "ed1");
	assert_int_equal(c.alg, JWT_EDDSA);
	assert_int_equal(c.exp, 1700000600);
	assert_int_equal(c.nbf, 1699999000);
	assert_int_equal(c.iat, 1699999001);
	assert_int_equal(c.scopes, SCOPE_OBSERVE | SCOPE_CONTROL | SCOPE_TASKS);
	free(t);
	keys_free(ks);
}

static void test_good_hs256(void **state)
{
	struct keyset *ks = full_set();
	struct jwt_claims c;
	char *t = mint(1, "hs1", claims(NULL));

	assert_int_equal(verify(ks, NULL, t, &c), JWT_OK);
	assert_string_equal(c.kid, "hs1");
	assert_int_equal(c.alg, JWT_HS256);
	assert_string_equal(c.session_id, "");
	free(t);
	keys_free(ks);
}

/* Keys as short as one byte and longer than the 64-byte block work. */
static void test_hs256_key_lengths(void **state)
{
	static const size_t lens[] = {1, 31, 64, 65, 200, KEYS_HS256_MAX};
	uint8_t key[KEYS_HS256_MAX];
	struct jwt_claims c;
	struct buf out = BUF_INIT;
	size_t i;

	randombytes_buf(key, sizeof(key));
	/* HMAC pads a short key with zero bytes, so a key whose last byte is
	   0 equals the key one byte shorter: keep every tested end nonzero. */
	for (i = 0; i < sizeof(key); i++)
		key[i] |= 1;
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct keyset *ks = keys_new();

		assert_int_equal(keys_add_hs256(ks, NULL, key, lens[i]), 0);
		buf_reset(&out);
		assert_int_equal(
		    auth_jwt_mint_hs256(key, lens[i], NULL, claims(NULL), &out), 0);
		assert_int_equal(verify(ks, NULL, (char *)buf_head(&out), &c), JWT_OK);
		/* One key byte less is another key. */
		keys_free(ks);
		ks = keys_new();
		if (lens[i] > 1) {
			assert_int_equal(keys_add_hs256(ks, NULL, key, lens[i] - 1), 0);
			assert_int_equal(verify(ks, NULL, (char *)buf_head(&out), &c),
					 JWT_BAD_SIGNATURE);
		}
		keys_free(ks);
	}
	buf_free(&out);
}

static void test_expiry_and_leeway(void **state)
{
	struct keyset *ks = full_set();
	struct jwt_policy strict = {NULL, NULL, 0};
	struct jwt_claims c;
	char *t;

	/* NOW is 1700000000. */
	t = raw_token("{\"alg\":\"EdDSA\"}",
		      "{\"sub\":\"a\",\"exp\":1699999971,\"instance_id\":\"*\"}",
		      SIG_EDDSA, NULL, 0);
	assert_int_equal(verify(ks, NULL, t, &c), JWT_OK); /* 29 s late: leeway */
	assert_int_equal(verify(ks, &strict, t, &c), JWT_EXPIRED);
	free(t);
	t = raw_token("{\"alg\":\"EdDSA\"}",
		      "{\"sub\":\"a\",\"exp\":1699999970,\"instance_id\":\"*\"}",
		      SIG_EDDSA, NULL, 0);
	assert_int_equal(verify(ks, NULL, t, &c), JWT_EXPIRED); /* exactly 30 s */
	assert_string_equal(c.sub, ""); /* nothing leaks out of a failure */
	free(t);
	t = raw_token("{\"alg\":\"EdDSA\"}",
		      "{\"sub\":\"a\",\"exp\":1000,\"instance_id\":\"*\"}", SIG_EDDSA,
		      NULL, 0);
	assert_int_equal(verify(ks, NULL, t, &c), JWT_EXPIRED);
	free(t);
	/* A fractional exp is rounded down. */
	t = raw_token("{\"alg\":\"EdDSA\"}",
		      "{\"sub\":\"a\",\"exp\":1699999970.9,\"instance_id\":\"*\"}",
		      SIG_EDDSA, NULL, 0);
	assert_int_equal(verify(ks, NULL, t, &c), JWT_EXPIRED);
	free(t);
	t = raw_token("{\"alg\":\"EdDSA\"}",
		      "{\"sub\":\"a\",\"exp\":1700000000.5,\"instance_id\":\"*\"}",
		      SIG_EDDSA, NULL, 0);
	assert_int_equal(verify(ks, &strict, t, &c), JWT_EXPIRED);
	assert_int_equal(verify(ks, NULL, t, &c), JWT_OK);
	free(t);
	keys_free(ks);
}

static void test_not_yet_valid(void **state)
{
	struct keyset *ks = full_set();
	struct jwt_claims c;
	char extra[64];
	char *t;

	snprintf(extra, sizeof(extra), ",\"nbf\":%lld", NOW + 31);
	t = mint(0, NULL, claims(extra));
	assert_int_equal(verify(ks, NULL, t, &c), JWT_NOT_YET_VALID);
	free(t);
	snprintf(extra, sizeof(extra), ",\"nbf\":%lld", NOW + 30);
	t = mint(0, NULL, claims(extra));
	assert_int_equal(verify(ks, NULL, t, &c), JWT_OK);
	assert_int_equal(c.nbf, NOW + 30);
	free(t);
	/* Fractional nbf rounds up: 30.2 s ahead is 31. */
	snprintf(extra, sizeof(extra), ",\"nbf\":%lld.2", NOW + 30);
	t = mint(0, NULL, claims(extra));
	assert_int_equal(verify(ks, NULL, t, &c), JWT_NOT_YET_VALID);
	free(t);
	/* An expired token says expired, not early. */
	t = mint(0, NULL,
		 "{\"sub\":\"a\",\"exp\":5,\"nbf\":9999999999,\"instance_id\":\"*\"}");
	assert_int_equal(verify(ks, NULL, t, &c), JWT_EXPIRED);
	free(t);
	keys_free(ks);
}

static void test_wrong_key(void **state)
{
	struct keyset *ks = keys_new();
	struct jwt_claims c;
	uint8_t other[32];
	char *t;

	assert_int_equal(keys_add_ed25519_pub(ks, NULL, ed2_pk), 0);
	randombytes_buf(other, sizeof(other));
	assert_int_equal(keys_add_hs256(ks, NULL, other, sizeof(other)), 0);
	t = mint(0, NULL, claims(NULL));
	assert_int_equal(verify(ks, NULL, t, &c), JWT_BAD_SIGNATURE);
	free(t);
	t = mint(1, NULL, claims(NULL));
	assert_int_equal(verify(ks, NULL, t, &c), JWT_BAD_SIGNATURE);
	free(t);
	keys_free(ks);
	/* An empty set, and no set at all, have no key. */
	ks = keys_new();
	t = mint(0, NULL, claims(NULL));
	assert_int_equal(verify(ks, NULL, t, &c), JWT_NO_KEY);
	assert_int_equal(verify(NULL, NULL, t, &c), JWT_NO_KEY);
	free(t);
	keys_free(ks);
}

static void test_kid_selection(void **state)
{
	struct keyset *ks = full_set();
	struct jwt_claims c;
	struct buf out = BUF_INIT;

	/* ed2's token under kid ed2 passes, under kid ed1 does not even though
	   ed2 is in the set: a kid pins the key. */
	assert_int_equal(auth_jwt_mint_eddsa(ed2_sk, "ed2", claims(NULL), &out), 0);
	assert_int_equal(verify(ks, NULL, (char *)buf_head(&out), &c), JWT_OK);
	assert_string_equal(c.kid, "ed2");
	buf_reset(&out);
	assert_int_equal(auth_jwt_mint_eddsa(ed2_sk, "ed1", claims(NULL), &out), 0);
	assert_int_equal(verify(ks, NULL, (char *)buf_head(&out), &c), JWT_BAD_SIGNATURE);
	buf_reset(&out);
	/* Without a kid every EdDSA key is tried. */
	assert_int_equal(auth_jwt_mint_eddsa(ed2_sk, NULL, claims(NULL), &out), 0);
	assert_int_equal(verify(ks, NULL, (char *)buf_head(&out), &c), JWT_OK);
	assert_string_equal(c.kid, "");
	buf_reset(&out);
	assert_int_equal(auth_jwt_mint_eddsa(ed2_sk, "nope", claims(NULL), &out), 0);
	assert_int_equal(verify(ks, NULL, (char *)buf_head(&out), &c), JWT_NO_KEY);
	buf_reset(&out);
	/* A kid naming a key of the other alg finds nothing. */
	assert_int_equal(auth_jwt_mint_eddsa(ed_sk, "hs1", claims(NULL), &out), 0);
	assert_int_equal(verify(ks, NULL, (char *)buf_head(&out), &c), JWT_NO_KEY);
	buf_free(&out);
	assert_int_equal(check(raw_token("{\"alg\":\"EdDSA\",\"kid\":\"\"}", claims(NULL),
					 SIG_EDDSA, NULL, 0)),
			 JWT_MALFORMED);
	assert_int_equal(check(raw_token("{\"alg\":\"EdDSA\",\"kid\":7}", claims(NULL),
					 SIG_EDDSA, NULL, 0)),
			 JWT_MALFORMED);
	keys_free(ks);
}

static void test_refused_algs(void **state)
{
	static const char *hdrs[] = {
	    "{\"alg\":\"RS256\"}", "{\"alg\":\"HS512\"}", "{\"alg\":\"none\"}",
	    "{\"alg\":\"None\"}",  "{\"alg\":\"NONE\"}",  "{\"alg\":\"ES256\"}",
	    "{\"alg\":\"eddsa\"}", "{\"alg\":\"hs256\"}", "{\"alg\":\"Ed25519\"}",
	};
	size_t i;

	for (i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
		assert_int_equal(
		    check(raw_token(hdrs[i], claims(NULL), SIG_NONE, NULL, 0)),
		    JWT_BAD_ALG);
		assert_int_equal(
		    check(raw_token(hdrs[i], claims(NULL), SIG_JUNK, NULL, 0)),
		    JWT_BAD_ALG);
		assert_int_equal(
		    check(raw_token(hdrs[i], claims(NULL), SIG_EDDSA, NULL, 0)),
		    JWT_BAD_ALG);
	}
	assert_int_equal(check(raw_token("{}", claims(NULL), SIG_EDDSA, NULL, 0)),
			 JWT_MALFORMED);
	assert_int_equal(
	    check(raw_token("{\"alg\":1}", claims(NULL), SIG_EDDSA, NULL, 0)),
	    JWT_MALFORMED);
	assert_int_equal(
	    check(raw_token("{\"alg\":\"EdDSA\",\"crit\":[\"b64\"],\"b64\":false}",
			    claims(NULL), SIG_EDDSA, NULL, 0)),
	    JWT_MALFORMED);
	assert_int_equal(check(raw_token("{\"alg\":\"EdDSA\",\"typ\":3}", claims(NULL),
					 SIG_EDDSA, NULL, 0)),
			 JWT_MALFORMED);
	assert_int_equal(check(raw_token("{\"alg\":\"EdDSA\",\"typ\":\"at+jwt\"}",
					 claims(NULL), SIG_EDDSA, NULL, 0)),
			 JWT_OK);
	assert_int_equal(check(raw_token("{\"alg\":\"EdDSA\",\"alg\":\"EdDSA\"}",
					 claims(NULL), SIG_EDDSA, NULL, 0)),
			 JWT_MALFORMED);
	assert_int_equal(
	    check(raw_token("[\"EdDSA\"]", claims(NULL), SIG_EDDSA, NULL, 0)),
	    JWT_MALFORMED);
}

/* The classic confusion: an attacker signs HS256 with the server's public
   key (raw bytes or PEM text) as the secret. */
static void test_alg_key_confusion(void **state)
{
	struct keyset *ks = keys_new();
	struct buf pem = BUF_INIT;
	struct jwt_claims c;
	char *t;

	assert_int_equal(keys_add_ed25519_pub(ks, "ed1", ed_pk), 0);
	keys_pem_public(ed_pk, &pem);
	t = raw_token("{\"alg\":\"HS256\"}", claims(NULL), SIG_HS256, ed_pk, 32);
	assert_int_equal(verify(ks, NULL, t, &c), JWT_NO_KEY);
	free(t);
	t = raw_token("{\"alg\":\"HS256\",\"kid\":\"ed1\"}", claims(NULL), SIG_HS256,
		      ed_pk, 32);
	assert_int_equal(verify(ks, NULL, t, &c), JWT_NO_KEY);
	free(t);
	t = raw_token("{\"alg\":\"HS256\"}", claims(NULL), SIG_HS256, buf_head(&pem),
		      buf_size(&pem));
	assert_int_equal(verify(ks, NULL, t, &c), JWT_NO_KEY);
	free(t);
	t = mint(1, NULL, claims(NULL));
	assert_int_equal(verify(ks, NULL, t, &c), JWT_NO_KEY);
	free(t);
	keys_free(ks);
	/* And the reverse: an EdDSA token against an HS256-only set. */
	ks = keys_new();
	assert_int_equal(keys_add_hs256(ks, NULL, hs_secret, sizeof(hs_secret) - 1), 0);
	t = mint(0, NULL, claims(NULL));
	assert_int_equal(verify(ks, NULL, t, &c), JWT_NO_KEY);
	free(t);
	keys_free(ks);
	buf_free(&pem);
}

/* A payload swapped in from another valid token, a flipped signature bit,
   a short signature. */
static void test_tampered(void **state)
{
	char *good = mint(0, NULL, claims(NULL));
	char *evil = mint(0, NULL,
			  "{\"sub\":\"alice\",\"exp\":1700000600,\"instance_id\":\"*\","
			  "\"scope\":\"pty:control\"}");
	char *d1g = strchr(good, '.'), *d2g = strchr(d1g + 1, '.');
	char *d1e = strchr(evil, '.'), *d2e = strchr(d1e + 1, '.');
	struct buf t = BUF_INIT, sig = BUF_INIT;
	size_t n;

	buf_append(&t, good, (size_t)(d1g - good) + 1);
	buf_append(&t, d1e + 1, (size_t)(d2e - d1e - 1));
	buf_append_str(&t, d2g);
	assert_int_equal(check((char *)buf_steal(&t, &n)), JWT_BAD_SIGNATURE);
	/* Flip one bit of the decoded signature and re-encode it. */
	assert_int_equal(b64url_decode(d2g + 1, strlen(d2g + 1), &sig), 0);
	assert_int_equal(buf_size(&sig), 64);
	buf_head(&sig)[10] ^= 0x04;
	buf_append(&t, good, (size_t)(d2g - good) + 1);
	b64url_encode(buf_head(&sig), buf_size(&sig), &t);
	assert_int_equal(check((char *)buf_steal(&t, &n)), JWT_BAD_SIGNATURE);
	/* A signature one byte short is malformed. */
	buf_append(&t, good, (size_t)(d2g - good) + 1);
	b64url_encode(buf_head(&sig), 63, &t);
	assert_int_equal(check((char *)buf_steal(&t, &n)), JWT_MALFORMED);
	buf_free(&sig);
	free(good);
	free(evil);
}

static void test_truncated_and_garbage(void **state)
{
	static const char *junk[] = {
	    "",
	    ".",
	    "..",
	    "...",
	    "a",
	    "a.b",
	    "a.b.c",
	    "a.b.c.d",
	    "e30.e30.",
	    "eyJhbGciOiJFZERTQSJ9..",
	    "eyJhbGciOiJFZERTQSJ9.e30.!!!!",
	};
	struct keyset *ks = full_set();
	struct jwt_claims c;
	char *t = mint(0, "ed1", claims(NULL));
	size_t i, len = strlen(t);
	struct buf b = BUF_INIT;

	for (i = 0; i < len; i++)
		assert_int_not_equal(auth_jwt_verify(ks, NULL, t, i, NOW, &c), JWT_OK);
	for (i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
		assert_int_equal(verify(ks, NULL, junk[i], &c), JWT_MALFORMED);
	assert_int_equal(auth_jwt_verify(ks, NULL, NULL, 0, NOW, &c), JWT_MALFORMED);
	/* Anything around a valid token spoils it. */
	buf_appendf(&b, " %s", t);
	assert_int_equal(
	    auth_jwt_verify(ks, NULL, (char *)buf_head(&b), buf_size(&b), NOW, &c),
	    JWT_MALFORMED);
	buf_reset(&b);
	buf_appendf(&b, "%s\n", t);
	assert_int_equal(
	    auth_jwt_verify(ks, NULL, (char *)buf_head(&b), buf_size(&b), NOW, &c),
	    JWT_MALFORMED);
	buf_reset(&b);
	buf_appendf(&b, "%s.", t);
	assert_int_equal(
	    auth_jwt_verify(ks, NULL, (char *)buf_head(&b), buf_size(&b), NOW, &c),
	    JWT_MALFORMED);
	/* The length given is the token: the NUL after it is not looked at,
	   bytes within it are. */
	assert_int_equal(auth_jwt_verify(ks, NULL, t, len, NOW, &c), JWT_OK);
	buf_free(&b);
	free(t);
	keys_free(ks);
}

/* '=' padding in any segment is refused. */
static void test_padding_rejected(void **state)
{
	char *t = mint(1, "hs1", claims(NULL));
	char *d1 = strchr(t, '.'), *d2 = strchr(d1 + 1, '.');
	struct buf b = BUF_INIT;
	size_t n, seg;

	/* Pad the header segment to a multiple of 4. */
	seg = (size_t)(d1 - t);
	buf_append(&b, t, seg);
	buf_append(&b, "====", (4 - seg % 4) % 4 ? (4 - seg % 4) % 4 : 4);
	buf_append_str(&b, d1);
	assert_int_equal(check((char *)buf_steal(&b, &n)), JWT_MALFORMED);
	/* The HS256 signature is 43 chars: one '=' makes it canonical base64. */
	assert_int_equal(strlen(d2 + 1), 43);
	buf_appendf(&b, "%s=", t);
	assert_int_equal(check((char *)buf_steal(&b, &n)), JWT_MALFORMED);
	/* The standard alphabet is not base64url. */
	buf_append_str(&b, t);
	for (n = 0; n < buf_size(&b); n++)
		if (buf_head(&b)[n] == '_' || buf_head(&b)[n] == '-')
			buf_head(&b)[n] = buf_head(&b)[n] == '_' ? '/' : '+';
	*buf_reserve(&b, 1) = '\0';
	if (strcmp((char *)buf_head(&b), t))
		assert_int_equal(check((char *)buf_steal(&b, &n)), JWT_MALFORMED);
	buf_free(&b);
	assert_int_equal(check(t), JWT_OK);
}

static void test_required_claims(void **state)
{
	static const char *bad[] = {
	    "{\"exp\":1700000600,\"instance_id\":\"i\"}",
	    "{\"sub\":\"a\",\"instance_id\":\"i\"}",
	    "{\"sub\":\"a\",\"exp\":1700000600}",
	    "{\"sub\":\"\",\"exp\":1700000600,\"instance_id\":\"i\"}",
	    "{\"sub\":7,\"exp\":1700000600,\"instance_id\":\"i\"}",
	    "{\"sub\":\"a\",\"exp\":\"1700000600\",\"instance_id\":\"i\"}",
	    "{\"sub\":\"a\",\"exp\":null,\"instance_id\":\"i\"}",
	    "{\"sub\":\"a\",\"exp\":1e300,\"instance_id\":\"i\"}",
	    "{\"sub\":\"a\",\"exp\":9223372036854775807,\"instance_id\":\"i\"}",
	    "{\"sub\":\"a\",\"exp\":1700000600,\"instance_id\":\"\"}",
	    "{\"sub\":\"a\",\"exp\":1700000600,\"instance_id\":[\"i\"]}",
	    "{\"sub\":\"a\",\"exp\":1700000600,\"instance_id\":\"i\",\"session_id\":"
	    "\"\"}",
	    "{\"sub\":\"a\",\"exp\":1700000600,\"instance_id\":\"i\",\"session_id\":1}",
	    "{\"sub\":\"a\\nb\",\"exp\":1700000600,\"instance_id\":\"i\"}",
	    "{\"sub\":\"a\",\"exp\":1700000600,\"instance_id\":\"i\",\"nbf\":\"x\"}",
	    "{\"sub\":\"a\",\"exp\":1700000600,\"instance_id\":\"i\",\"iat\":true}",
	    "{\"sub\":\"a\",\"exp\":1700000600,\"instance_id\":\"i\",\"scope\":["
	    "\"tasks\"]}",
	    "{\"sub\":\"a\",\"exp\":1700000600,\"instance_id\":\"i\",\"iss\":5}",
	    "{\"sub\":\"a\",\"exp\":1700000600,\"instance_id\":\"i\",\"aud\":5}",
	};
	char big[JWT_SUB_MAX + 2], pay[512];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(check(mint(0, NULL, bad[i])), JWT_BAD_CLAIMS);
	/* sub of 256 bytes is fine, 257 is not. */
	memset(big, 'x', sizeof(big));
	big[JWT_SUB_MAX] = '\0';
	snprintf(pay, sizeof(pay),
		 "{\"sub\":\"%s\",\"exp\":1700000600,\"instance_id\":\"i\"}", big);
	assert_int_equal(check(mint(0, NULL, pay)), JWT_OK);
	big[JWT_SUB_MAX] = 'x';
	big[JWT_SUB_MAX + 1] = '\0';
	snprintf(pay, sizeof(pay),
		 "{\"sub\":\"%s\",\"exp\":1700000600,\"instance_id\":\"i\"}", big);
	assert_int_equal(check(mint(0, NULL, pay)), JWT_BAD_CLAIMS);
	/* Duplicate claims and a non-object payload are malformed. */
	assert_int_equal(
	    check(raw_token("{\"alg\":\"EdDSA\"}",
			    "{\"sub\":\"a\",\"sub\":\"root\",\"exp\":1700000600,"
			    "\"instance_id\":\"i\"}",
			    SIG_EDDSA, NULL, 0)),
	    JWT_MALFORMED);
	/* Jansson refuses \u0000 in strings unless asked; so do we. */
	assert_int_equal(check(raw_token("{\"alg\":\"EdDSA\"}",
					 "{\"sub\":\"a\\u0000b\",\"exp\":1700000600,"
					 "\"instance_id\":\"i\"}",
					 SIG_EDDSA, NULL, 0)),
			 JWT_MALFORMED);
	assert_int_equal(
	    check(raw_token("{\"alg\":\"EdDSA\"}", "[1]", SIG_EDDSA, NULL, 0)),
	    JWT_MALFORMED);
	assert_int_equal(
	    check(raw_token("{\"alg\":\"EdDSA\"}", "{\"sub\":", SIG_EDDSA, NULL, 0)),
	    JWT_MALFORMED);
}

static void test_audience(void **state)
{
	struct keyset *ks = full_set();
	struct jwt_policy pol = {"ptygate", NULL, JWT_LEEWAY_S};
	static const struct {
		const char *extra;
		int with_pol, without;
	} cases[] = {
	    {",\"aud\":\"ptygate\"", JWT_OK, JWT_OK},
	    {",\"aud\":[\"other\",\"ptygate\"]", JWT_OK, JWT_OK},
	    {",\"aud\":\"other\"", JWT_WRONG_AUDIENCE, JWT_OK},
	    {",\"aud\":\"ptygatex\"", JWT_WRONG_AUDIENCE, JWT_OK},
	    {",\"aud\":[\"other\"]", JWT_WRONG_AUDIENCE, JWT_OK},
	    {",\"aud\":[]", JWT_WRONG_AUDIENCE, JWT_OK},
	    {"", JWT_WRONG_AUDIENCE, JWT_OK},
	    {",\"aud\":[\"ptygate\",1]", JWT_BAD_CLAIMS, JWT_BAD_CLAIMS},
	    {",\"aud\":{\"x\":\"ptygate\"}", JWT_BAD_CLAIMS, JWT_BAD_CLAIMS},
	};
	struct jwt_claims c;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *t = mint(0, NULL, claims(cases[i].extra));

		assert_int_equal(verify(ks, &pol, t, &c), cases[i].with_pol);
		assert_int_equal(verify(ks, NULL, t, &c), cases[i].without);
		free(t);
	}
	keys_free(ks);
}

static void test_issuer(void **state)
{
	struct keyset *ks = full_set();
	struct jwt_policy pol = {NULL, "https://idp.example", JWT_LEEWAY_S};
	struct jwt_claims c;
	char *t;

	t = mint(0, NULL, claims(",\"iss\":\"https://idp.example\""));
	assert_int_equal(verify(ks, &pol, t, &c), JWT_OK);
	free(t);
	t = mint(0, NULL, claims(",\"iss\":\"https://idp.example.evil\""));
	assert_int_equal(verify(ks, &pol, t, &c), JWT_WRONG_ISSUER);
	assert_int_equal(verify(ks, NULL, t, &c), JWT_OK);
	free(t);
	t = mint(0, NULL, claims(NULL));
	assert_int_equal(verify(ks, &pol, t, &c), JWT_WRONG_ISSUER);
	free(t);
	keys_free(ks);
}

static unsigned scopes_of(const char *scope)
{
	struct keyset *ks = full_set();
	struct jwt_claims c;
	char pay[512];
	char *t;

	if (scope)
		snprintf(pay, sizeof(pay),
			 "{\"sub\":\"a\",\"exp\":1700000600,\"instance_id\":\"i\","
			 "\"scope\":\"%s\"}",
			 scope);
	else
		snprintf(pay, sizeof(pay),
			 "{\"sub\":\"a\",\"exp\":1700000600,\"instance_id\":\"i\"}");
	t = mint(0, NULL, pay);
	assert_int_equal(verify(ks, NULL, t, &c), JWT_OK);
	free(t);
	keys_free(ks);
	return c.scopes;
}

static void test_scopes(void **state)
{
	assert_int_equal(scopes_of(NULL), 0);
	assert_int_equal(scopes_of(""), 0);
	assert_int_equal(scopes_of("pty:observe"), SCOPE_OBSERVE);
	assert_int_equal(scopes_of("pty:control"), SCOPE_OBSERVE | SCOPE_CONTROL);
	assert_int_equal(scopes_of("pty:observe tasks sessions"),
			 SCOPE_OBSERVE | SCOPE_TASKS | SCOPE_SESSIONS);
	assert_int_equal(scopes_of("  tasks   bogus pty:controller pty: sessions "),
			 SCOPE_TASKS | SCOPE_SESSIONS);
	assert_int_equal(scopes_of("PTY:CONTROL admin pty:observe:x"), 0);
	assert_int_equal(scopes_of("sessions,tasks"), 0);
	/* tasks:all is tasks and every principal's tasks of the session. */
	assert_int_equal(scopes_of("tasks:all"), SCOPE_TASKS | SCOPE_TASKS_ALL);
	assert_int_equal(scopes_of("tasks:al tasks:all:x"), 0);
}

static void test_claims_allow(void **state)
{
	struct jwt_claims c;

	memset(&c, 0, sizeof(c));
	strcpy(c.instance_id, "*");
	assert_int_equal(auth_jwt_claims_allow(&c, "any", "s1"), 0);
	assert_int_equal(auth_jwt_claims_allow(&c, "any", NULL), 0);
	strcpy(c.instance_id, "inst-1");
	assert_int_equal(auth_jwt_claims_allow(&c, "inst-1", "s1"), 0);
	assert_int_equal(auth_jwt_claims_allow(&c, "inst-1", NULL), 0);
	assert_int_equal(auth_jwt_claims_allow(&c, "inst-2", "s1"), -EACCES);
	assert_int_equal(auth_jwt_claims_allow(&c, "inst-", "s1"), -EACCES);
	assert_int_equal(auth_jwt_claims_allow(&c, NULL, "s1"), -EACCES);
	strcpy(c.session_id, "s1");
	assert_int_equal(auth_jwt_claims_allow(&c, "inst-1", "s1"), 0);
	assert_int_equal(auth_jwt_claims_allow(&c, "inst-1", "s2"), -EACCES);
	assert_int_equal(auth_jwt_claims_allow(&c, "inst-1", NULL), -EACCES);
	assert_int_equal(auth_jwt_claims_allow(&c, "inst-2", "s1"), -EACCES);
	/* Zeroed claims (a failed verify) allow nothing. */
	memset(&c, 0, sizeof(c));
	assert_int_equal(auth_jwt_claims_allow(&c, "inst-1", "s1"), -EACCES);
}

/* "*" as session_id in the token reads as any session. */
static void test_session_star(void **state)
{
	struct keyset *ks = full_set();
	struct jwt_claims c;
	char *t = mint(0, NULL, claims(",\"session_id\":\"*\""));

	assert_int_equal(verify(ks, NULL, t, &c), JWT_OK);
	assert_string_equal(c.session_id, "");
	assert_int_equal(auth_jwt_claims_allow(&c, "inst-1", "whatever"), 0);
	assert_int_equal(auth_jwt_claims_allow(&c, "inst-9", "whatever"), -EACCES);
	free(t);
	keys_free(ks);
}

/* The size cap applies before anything else, and a token just under it
   still verifies. */
static void test_size_cap(void **state)
{
	static char pad[JWT_MAX_TOKEN];
	struct keyset *ks = full_set();
	struct jwt_claims c;
	size_t lo = 0, hi = sizeof(pad) - 1;
	char extra[JWT_MAX_TOKEN + 32];
	char *t = NULL;

	/* Binary search the padding that makes the token exactly the cap. */
	while (lo < hi) {
		size_t mid = (lo + hi + 1) / 2;

		memset(pad, 'p', mid);
		pad[mid] = '\0';
		snprintf(extra, sizeof(extra), ",\"pad\":\"%s\"", pad);
		free(t);
		t = mint(0, NULL, claims(extra));
		if (strlen(t) <= JWT_MAX_TOKEN)
			lo = mid;
		else
			hi = mid - 1;
	}
	memset(pad, 'p', lo);
	pad[lo] = '\0';
	snprintf(extra, sizeof(extra), ",\"pad\":\"%s\"", pad);
	free(t);
	t = mint(0, NULL, claims(extra));
	assert_true(strlen(t) <= JWT_MAX_TOKEN && strlen(t) > JWT_MAX_TOKEN - 4);
	assert_int_equal(verify(ks, NULL, t, &c), JWT_OK);
	free(t);
	pad[lo] = 'p';
	pad[lo + 1] = '\0';
	snprintf(extra, sizeof(extra), ",\"pad\":\"%s\"", pad);
	t = mint(0, NULL, claims(extra));
	assert_true(strlen(t) > JWT_MAX_TOKEN);
	assert_int_equal(verify(ks, NULL, t, &c), JWT_MALFORMED);
	free(t);
	keys_free(ks);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

/* Random byte edits of a valid token never crash and never verify. */
static void test_mutations(void **state)
{
	static const char alphabet[] = "AQgw-_.=+/ \x00\xff{}\"eyJ0";
	struct keyset *ks = full_set();
	char *good[2] = {mint(0, NULL, claims(NULL)), mint(1, "hs1", claims(NULL))};
	char t[JWT_MAX_TOKEN];
	struct jwt_claims c;
	int iter, k, rc;

	for (iter = 0; iter < 40000; iter++) {
		const char *g = good[iter & 1];
		size_t len = strlen(g), pos;
		int edits = 1 + (int)(rng() % 4);

		memcpy(t, g, len);
		for (k = 0; k < edits; k++) {
			pos = rng() % len;
			switch (rng() % 4) {
			case 0: /* replace with any byte */
				t[pos] = (char)rng();
				break;
			case 1: /* replace with a likely one */
				t[pos] = alphabet[rng() % (sizeof(alphabet) - 1)];
				break;
			case 2: /* delete */
				memmove(t + pos, t + pos + 1, len - pos - 1);
				len--;
				break;
			default: /* flip a bit */
				t[pos] ^= (char)(1 << (rng() % 8));
			}
		}
		rc = auth_jwt_verify(ks, NULL, t, len, NOW, &c);
		if (len == strlen(g) && !memcmp(t, g, len))
			assert_int_equal(rc, JWT_OK);
		else
			assert_int_not_equal(rc, JWT_OK);
	}
	free(good[0]);
	free(good[1]);
	keys_free(ks);
}

static void test_mint_errors(void **state)
{
	struct buf out = BUF_INIT;
	char long_kid[KEYS_KID_MAX + 2];

	memset(long_kid, 'k', sizeof(long_kid) - 1);
	long_kid[sizeof(long_kid) - 1] = '\0';
	assert_int_equal(auth_jwt_mint_eddsa(ed_sk, NULL, "[1]", &out), -EINVAL);
	assert_int_equal(auth_jwt_mint_eddsa(ed_sk, NULL, "not json", &out), -EINVAL);
	assert_int_equal(auth_jwt_mint_eddsa(ed_sk, NULL, "{\"a\":1,\"a\":2}", &out),
			 -EINVAL);
	assert_int_equal(auth_jwt_mint_eddsa(ed_sk, NULL, NULL, &out), -EINVAL);
	assert_int_equal(auth_jwt_mint_eddsa(ed_sk, "", "{}", &out), -EINVAL);
	assert_int_equal(auth_jwt_mint_eddsa(ed_sk, long_kid, "{}", &out), -EINVAL);
	assert_int_equal(auth_jwt_mint_hs256(hs_secret, 0, NULL, "{}", &out), -EINVAL);
	assert_int_equal(buf_size(&out), 0);
	/* Output is appended and NUL-terminated; the header is as documented. */
	buf_append_str(&out, "Bearer ");
	assert_int_equal(auth_jwt_mint_hs256(hs_secret, 3, "k", "{ \"x\" : 1 }", &out),
			 0);
	assert_int_equal(strncmp((char *)buf_head(&out), "Bearer ", 7), 0);
	assert_int_equal(buf_head(&out)[buf_size(&out)], '\0');
	assert_int_equal(strlen((char *)buf_head(&out)), buf_size(&out));
	/* {"alg":"HS256","typ":"JWT","kid":"k"} and {"x":1} */
	assert_int_equal(
	    strncmp((char *)buf_head(&out) + 7,
		    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImsifQ.eyJ4IjoxfQ.", 62),
	    0);
	buf_free(&out);
}

static void test_strerror(void **state)
{
	int e, f;

	for (e = JWT_WRONG_ISSUER; e <= JWT_OK; e++) {
		assert_non_null(auth_jwt_strerror(e));
		for (f = e + 1; f <= JWT_OK; f++)
			assert_string_not_equal(auth_jwt_strerror(e),
						auth_jwt_strerror(f));
	}
	assert_non_null(auth_jwt_strerror(-1000));
	assert_string_equal(auth_jwt_strerror(JWT_EXPIRED), "token expired");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_eddsa),
	    cmocka_unit_test(test_good_hs256),
	    cmocka_unit_test(test_hs256_key_lengths),
	    cmocka_unit_test(test_expiry_and_leeway),
	    cmocka_unit_test(test_not_yet_valid),
	    cmocka_unit_test(test_wrong_key),
	    cmocka_unit_test(test_kid_selection),
	    cmocka_unit_test(test_refused_algs),
	    cmocka_unit_test(test_alg_key_confusion),
	    cmocka_unit_test(test_tampered),
	    cmocka_unit_test(test_truncated_and_garbage),
	    cmocka_unit_test(test_padding_rejected),
	    cmocka_unit_test(test_required_claims),
	    cmocka_unit_test(test_audience),
	    cmocka_unit_test(test_issuer),
	    cmocka_unit_test(test_scopes),
	    cmocka_unit_test(test_claims_allow),
	    cmocka_unit_test(test_session_star),
	    cmocka_unit_test(test_size_cap),
	    cmocka_unit_test(test_mutations),
	    cmocka_unit_test(test_mint_errors),
	    cmocka_unit_test(test_strerror),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
