/* unit: auth */
/* auth/linkcred.c: a good link credential, every refusal reason, the
   sidecar's peek, and the audience wall between link credentials and
   client tokens in both directions (auth_jwt_verify's guard). The clock is a
   constant; keys come from fixed seeds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "auth_jwt.h"
#include "b64.h"
#include "linkcred.h"

#define NOW 1700000000LL

static uint8_t sk_prov[64], pk_prov[32], sk_other[64], pk_other[32];

static int setup(void **state)
{
	uint8_t seed[32];

	(void)state;
	if (sodium_init() < 0)
		return -1;
	memset(seed, 1, sizeof(seed));
	crypto_sign_seed_keypair(pk_prov, sk_prov, seed);
	memset(seed, 2, sizeof(seed));
	crypto_sign_seed_keypair(pk_other, sk_other, seed);
	return 0;
}

/* The provisioning key as "k1", and an HS256 secret as "hs". */
static struct keyset *link_keys(void)
{
	struct keyset *ks = keys_new();

	assert_int_equal(keys_add_ed25519_pub(ks, "k1", pk_prov), 0);
	assert_int_equal(
	    keys_add_hs256(ks, "hs", (const uint8_t *)"0123456789abcdef", 16), 0);
	return ks;
}

/* A token signed by sk over claims (JSON), with kid (NULL: none). */
static void mint(struct buf *out, const uint8_t *sk, const char *kid, const char *fmt,
		 ...) __attribute__((format(printf, 4, 5)));
static void mint(struct buf *out, const uint8_t *sk, const char *kid, const char *fmt,
		 ...)
{
	char claims[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(claims, sizeof(claims), fmt, ap);
	va_end(ap);
	buf_reset(out);
	assert_int_equal(auth_jwt_mint_eddsa(sk, kid, claims, out), 0);
}

/* b64url(hdr) "." b64url(pay) "." b64url(Ed25519 signature by sk). */
static void sign_raw(struct buf *out, const char *hdr, const char *pay, const uint8_t *sk)
{
	uint8_t sig[64];

	buf_reset(out);
	b64url_encode((const uint8_t *)hdr, strlen(hdr), out);
	buf_append(out, ".", 1);
	b64url_encode((const uint8_t *)pay, strlen(pay), out);
	crypto_sign_detached(sig, NULL, buf_head(out), buf_size(out), sk);
	buf_append(out, ".", 1);
	b64url_encode(sig, sizeof(sig), out);
}

static int verify(const struct keyset *ks, const struct buf *tok, struct linkcred *c)
{
	return linkcred_verify(ks, (const char *)buf_head(tok), buf_size(tok), NOW, c);
}

static int peek(const struct buf *tok, struct linkcred *c)
{
	return linkcred_peek((const char *)buf_head(tok), buf_size(tok), NOW, c);
}

#define GOOD                                                                             \
	"{\"sub\":\"vm-7\",\"instance_id\":\"vm-7\",\"aud\":\"ptygate-link\","           \
	"\"iat\":%lld,\"exp\":%lld}"

static void test_good_token(void **state)
{
	struct keyset *ks = link_keys();
	struct buf tok = BUF_INIT;
	struct linkcred c;

	mint(&tok, sk_prov, "k1", GOOD, NOW - 5, NOW + 600);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_OK);
	assert_string_equal(c.instance_id, "vm-7");
	assert_string_equal(c.sub, "vm-7");
	assert_string_equal(c.kid, "k1");
	assert_int_equal(c.exp, NOW + 600);
	assert_int_equal(c.iat, NOW - 5);
	assert_int_equal(peek(&tok, &c), LINKCRED_OK);
	assert_string_equal(c.instance_id, "vm-7");
	assert_int_equal(c.exp, NOW + 600);

	/* Without a kid every link key is tried. */
	mint(&tok, sk_prov, NULL, GOOD, NOW, NOW + 600);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_OK);
	assert_string_equal(c.kid, "");
	/* Within the 30 s leeway an expired exp still verifies; peek is strict. */
	mint(&tok, sk_prov, "k1", GOOD, NOW - 100, NOW - 10);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_OK);
	assert_int_equal(peek(&tok, &c), LINKCRED_EXPIRED);
	keys_free(ks);
	buf_free(&tok);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {"",	"garbage", "a.b",      "a.b.c.d",
					  "..", "a..c",	   "e30.e30.", "!!.e30.AAAA"};
	struct keyset *ks = link_keys();
	struct buf tok = BUF_INIT;
	struct linkcred c;
	size_t i;
	char big[JWT_MAX_TOKEN + 2];

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(linkcred_verify(ks, bad[i], strlen(bad[i]), NOW, &c),
				 LINKCRED_MALFORMED);
		assert_int_equal(linkcred_peek(bad[i], strlen(bad[i]), NOW, &c),
				 LINKCRED_MALFORMED);
	}
	assert_int_equal(linkcred_verify(ks, NULL, 0, NOW, &c), LINKCRED_MALFORMED);
	memset(big, 'A', sizeof(big));
	big[10] = big[20] = '.';
	assert_int_equal(linkcred_verify(ks, big, JWT_MAX_TOKEN + 1, NOW, &c),
			 LINKCRED_MALFORMED);
	/* A payload that is not a JSON object, validly signed. */
	sign_raw(&tok, "{\"alg\":\"EdDSA\",\"kid\":\"k1\"}", "[1,2]", sk_prov);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_MALFORMED);
	assert_int_equal(peek(&tok, &c), LINKCRED_MALFORMED);
	/* Duplicate claims are refused, as auth_jwt_verify refuses them. */
	sign_raw(&tok, "{\"alg\":\"EdDSA\"}",
		 "{\"sub\":\"a\",\"instance_id\":\"a\",\"instance_id\":\"b\","
		 "\"aud\":\"ptygate-link\",\"iat\":1700000000,\"exp\":1800000000}",
		 sk_prov);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_MALFORMED);
	/* A header with crit, and a signature of the wrong length (peek). */
	sign_raw(&tok, "{\"alg\":\"EdDSA\",\"crit\":[\"x\"]}", "{}", sk_prov);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_MALFORMED);
	mint(&tok, sk_prov, "k1", GOOD, NOW, NOW + 60);
	buf_append(&tok, "AAAA", 4);
	assert_int_equal(peek(&tok, &c), LINKCRED_MALFORMED);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_MALFORMED);
	assert_string_equal(c.instance_id, "");
	keys_free(ks);
	buf_free(&tok);
}

/* HS256 is refused before any key is tried, even one that would verify:
   a link key is never a shared secret. */
static void test_bad_alg(void **state)
{
	struct keyset *ks = link_keys();
	struct buf tok = BUF_INIT;
	struct jwt_claims jc;
	struct jwt_policy pol = {LINKCRED_AUDIENCE, NULL, JWT_LEEWAY_S};
	struct linkcred c;
	char claims[256];

	snprintf(claims, sizeof(claims), GOOD, NOW, NOW + 600);
	assert_int_equal(auth_jwt_mint_hs256((const uint8_t *)"0123456789abcdef", 16,
					     "hs", claims, &tok),
			 0);
	assert_int_equal(auth_jwt_verify(ks, &pol, (const char *)buf_head(&tok),
					 buf_size(&tok), NOW, &jc),
			 JWT_OK);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_BAD_ALG);
	assert_int_equal(peek(&tok, &c), LINKCRED_BAD_ALG);
	sign_raw(&tok, "{\"alg\":\"none\"}", "{}", sk_prov);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_BAD_ALG);
	keys_free(ks);
	buf_free(&tok);
}

static void test_unknown_kid_and_bad_signature(void **state)
{
	struct keyset *ks = link_keys(), *empty = keys_new();
	struct buf tok = BUF_INIT;
	struct linkcred c;

	mint(&tok, sk_prov, "k9", GOOD, NOW, NOW + 600);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_UNKNOWN_KID);
	/* The HS256 key's kid with an EdDSA token: not a link key. */
	mint(&tok, sk_prov, "hs", GOOD, NOW, NOW + 600);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_UNKNOWN_KID);
	mint(&tok, sk_prov, NULL, GOOD, NOW, NOW + 600);
	assert_int_equal(verify(empty, &tok, &c), LINKCRED_UNKNOWN_KID);

	/* Signed by another key under k1's kid, and without a kid. */
	mint(&tok, sk_other, "k1", GOOD, NOW, NOW + 600);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_BAD_SIGNATURE);
	assert_int_equal(peek(&tok, &c), LINKCRED_OK); /* peek checks no signature */
	mint(&tok, sk_other, NULL, GOOD, NOW, NOW + 600);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_BAD_SIGNATURE);
	/* One payload byte changed after signing. */
	mint(&tok, sk_prov, "k1", GOOD, NOW, NOW + 600);
	{
		char *p = strchr((char *)buf_head(&tok), '.') + 5;

		*p = *p == 'A' ? 'B' : 'A';
	}
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_BAD_SIGNATURE);
	/* An expired token by a foreign key says bad_signature, not expired:
	   nothing in an unverified payload is believed. */
	mint(&tok, sk_other, "k1", GOOD, NOW - 900, NOW - 600);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_BAD_SIGNATURE);
	keys_free(ks);
	keys_free(empty);
	buf_free(&tok);
}

static void test_expired_and_not_yet_valid(void **state)
{
	struct keyset *ks = link_keys();
	struct buf tok = BUF_INIT;
	struct linkcred c;

	mint(&tok, sk_prov, "k1", GOOD, NOW - 900, NOW - 31);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_EXPIRED);
	assert_int_equal(c.exp, NOW - 31); /* kept: when it lapsed */
	assert_string_equal(c.instance_id, "");
	assert_int_equal(peek(&tok, &c), LINKCRED_EXPIRED);
	assert_int_equal(c.exp, NOW - 31);
	mint(&tok, sk_prov, "k1", GOOD, NOW - 900, NOW);
	assert_int_equal(peek(&tok, &c), LINKCRED_EXPIRED);
	mint(&tok, sk_prov, "k1", GOOD, NOW - 900, NOW + 1);
	assert_int_equal(peek(&tok, &c), LINKCRED_OK);

	/* iat ahead of the clock beyond the leeway; within it is fine. */
	mint(&tok, sk_prov, "k1", GOOD, NOW + 31, NOW + 600);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_NOT_YET_VALID);
	assert_int_equal(peek(&tok, &c), LINKCRED_NOT_YET_VALID);
	mint(&tok, sk_prov, "k1", GOOD, NOW + 30, NOW + 600);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_OK);
	/* nbf is the gateway's to check. */
	mint(&tok, sk_prov, "k1",
	     "{\"sub\":\"a\",\"instance_id\":\"a\",\"aud\":\"ptygate-link\","
	     "\"iat\":%lld,\"exp\":%lld,\"nbf\":%lld}",
	     NOW, NOW + 600, NOW + 100);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_NOT_YET_VALID);
	assert_int_equal(peek(&tok, &c), LINKCRED_OK);
	keys_free(ks);
	buf_free(&tok);
}

static void test_wrong_audience(void **state)
{
	static const char *const auds[] = {
	    "",
	    ",\"aud\":\"gw\"",
	    ",\"aud\":\"ptygate-link2\"",
	    ",\"aud\":[\"ptygate-link\"]",
	    ",\"aud\":[\"ptygate-link\",\"gw\"]",
	    ",\"aud\":7",
	};
	struct keyset *ks = link_keys();
	struct buf tok = BUF_INIT;
	struct linkcred c;
	size_t i;

	for (i = 0; i < sizeof(auds) / sizeof(auds[0]); i++) {
		mint(&tok, sk_prov, "k1",
		     "{\"sub\":\"a\",\"instance_id\":\"a\",\"iat\":%lld,\"exp\":%lld%s}",
		     NOW, NOW + 600, auds[i]);
		assert_int_equal(verify(ks, &tok, &c), LINKCRED_WRONG_AUDIENCE);
		assert_int_equal(peek(&tok, &c), LINKCRED_WRONG_AUDIENCE);
	}
	/* The audience is told before the other claims. */
	mint(&tok, sk_prov, "k1", "{\"aud\":\"gw\"}");
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_WRONG_AUDIENCE);
	keys_free(ks);
	buf_free(&tok);
}

static void test_no_instance(void **state)
{
	static const char *const insts[] = {
	    "",
	    ",\"instance_id\":\"*\"",
	    ",\"instance_id\":\"a/b\"",
	    ",\"instance_id\":\"..\"",
	    ",\"instance_id\":\"\"",
	    ",\"instance_id\":7",
	};
	struct keyset *ks = link_keys();
	struct buf tok = BUF_INIT;
	struct linkcred c;
	size_t i;

	for (i = 0; i < sizeof(insts) / sizeof(insts[0]); i++) {
		mint(&tok, sk_prov, "k1",
		     "{\"sub\":\"a\",\"aud\":\"ptygate-link\",\"iat\":%lld,"
		     "\"exp\":%lld%s}",
		     NOW, NOW + 600, insts[i]);
		assert_int_equal(verify(ks, &tok, &c), LINKCRED_NO_INSTANCE);
		assert_int_equal(peek(&tok, &c), LINKCRED_NO_INSTANCE);
	}
	keys_free(ks);
	buf_free(&tok);
}

static void test_bad_claims(void **state)
{
	static const char *const claims[] = {
	    "\"instance_id\":\"a\",\"iat\":1700000000,\"exp\":1800000000",
	    "\"sub\":\"\",\"instance_id\":\"a\",\"iat\":1700000000,\"exp\":1800000000",
	    "\"sub\":\"a\",\"instance_id\":\"a\",\"exp\":1800000000",
	    "\"sub\":\"a\",\"instance_id\":\"a\",\"iat\":1700000000",
	    "\"sub\":\"a\",\"instance_id\":\"a\",\"iat\":1700000000,\"exp\":\"soon\"",
	    "\"sub\":\"a\",\"instance_id\":\"a\",\"iat\":\"x\",\"exp\":1800000000",
	};
	struct keyset *ks = link_keys();
	struct buf tok = BUF_INIT;
	struct linkcred c;
	size_t i;

	for (i = 0; i < sizeof(claims) / sizeof(claims[0]); i++) {
		mint(&tok, sk_prov, "k1", "{\"aud\":\"ptygate-link\",%s}", claims[i]);
		assert_int_equal(verify(ks, &tok, &c), LINKCRED_BAD_CLAIMS);
		assert_int_equal(peek(&tok, &c), LINKCRED_BAD_CLAIMS);
	}
	keys_free(ks);
	buf_free(&tok);
}

/* A client token, even one signed by the provisioning key, is not a link
   credential; and a link credential is no client token, under any client
   policy, auth_jwt_verify's default included. */
static void test_client_and_link_tokens_kept_apart(void **state)
{
	struct keyset *ks = link_keys();
	struct jwt_policy none = JWT_POLICY_DEFAULT, gw = {"gw", NULL, JWT_LEEWAY_S},
			  link = {LINKCRED_AUDIENCE, NULL, JWT_LEEWAY_S};
	struct buf tok = BUF_INIT;
	struct jwt_claims jc;
	struct linkcred c;

#define JV(pol)                                                                          \
	auth_jwt_verify(ks, pol, (const char *)buf_head(&tok), buf_size(&tok), NOW, &jc)
	mint(&tok, sk_prov, "k1",
	     "{\"sub\":\"alice\",\"instance_id\":\"vm-7\",\"scope\":\"pty:control\","
	     "\"iat\":%lld,\"exp\":%lld}",
	     NOW, NOW + 600);
	assert_int_equal(JV(&none), JWT_OK);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_WRONG_AUDIENCE);
	mint(&tok, sk_prov, "k1",
	     "{\"sub\":\"alice\",\"instance_id\":\"vm-7\",\"aud\":\"gw\",\"iat\":%lld,"
	     "\"exp\":%lld}",
	     NOW, NOW + 600);
	assert_int_equal(JV(&gw), JWT_OK);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_WRONG_AUDIENCE);

	mint(&tok, sk_prov, "k1", GOOD, NOW, NOW + 600);
	assert_int_equal(JV(&none), JWT_WRONG_AUDIENCE);
	assert_int_equal(JV(NULL), JWT_WRONG_AUDIENCE);
	assert_int_equal(JV(&gw), JWT_WRONG_AUDIENCE);
	assert_int_equal(JV(&link), JWT_OK);
	/* A list that names a client audience too is still a link token. */
	mint(&tok, sk_prov, "k1",
	     "{\"sub\":\"a\",\"instance_id\":\"vm-7\",\"aud\":[\"gw\",\"ptygate-link\"],"
	     "\"scope\":\"pty:control\",\"iat\":%lld,\"exp\":%lld}",
	     NOW, NOW + 600);
	assert_int_equal(JV(&gw), JWT_WRONG_AUDIENCE);
	assert_int_equal(JV(&none), JWT_WRONG_AUDIENCE);
	assert_int_equal(verify(ks, &tok, &c), LINKCRED_WRONG_AUDIENCE);
#undef JV
	keys_free(ks);
	buf_free(&tok);
}

static void test_reasons(void **state)
{
	int i, j;

	assert_string_equal(linkcred_reason(LINKCRED_OK), "ok");
	assert_string_equal(linkcred_reason(LINKCRED_BAD_SIGNATURE), "bad_signature");
	assert_string_equal(linkcred_reason(LINKCRED_EXPIRED), "expired");
	assert_string_equal(linkcred_reason(LINKCRED_UNKNOWN_KID), "unknown_kid");
	assert_string_equal(linkcred_reason(LINKCRED_WRONG_AUDIENCE), "wrong_audience");
	assert_string_equal(linkcred_reason(LINKCRED_MALFORMED), "malformed");
	assert_string_equal(linkcred_reason(LINKCRED_NO_INSTANCE), "no_instance");
	assert_string_equal(linkcred_reason(-LINKCRED_N_REASONS), "malformed");
	assert_string_equal(linkcred_reason(1), "malformed");
	/* Distinct label names of [a-z_], and a sentence for each. */
	for (i = 0; i < LINKCRED_N_REASONS; i++) {
		const char *r = linkcred_reason(-i);

		assert_int_equal(strspn(r, "abcdefghijklmnopqrstuvwxyz_"), strlen(r));
		assert_true(strlen(linkcred_strerror(-i)) > 0);
		for (j = 0; j < i; j++)
			assert_string_not_equal(r, linkcred_reason(-j));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_token),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_bad_alg),
	    cmocka_unit_test(test_unknown_kid_and_bad_signature),
	    cmocka_unit_test(test_expired_and_not_yet_valid),
	    cmocka_unit_test(test_wrong_audience),
	    cmocka_unit_test(test_no_instance),
	    cmocka_unit_test(test_bad_claims),
	    cmocka_unit_test(test_client_and_link_tokens_kept_apart),
	    cmocka_unit_test(test_reasons),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
