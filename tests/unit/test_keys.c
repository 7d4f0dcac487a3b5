/* unit: auth */
/* keys: the key set, key files ([KID=]FILE, HS256 secret rules, Ed25519
   PEM and raw base64), PEM round trips, the RFC 8410 example key, and
   interoperability with `openssl pkey` when openssl is installed. */
#include "../../auth/keys.c"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "b64.h"
#include "log.h"

/* RFC 8410 section 10.3: an Ed25519 private key and its public key. */
static const char rfc_priv[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n"
    "-----END PRIVATE KEY-----\n";
static const char rfc_pub[] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n"
    "-----END PUBLIC KEY-----\n";

static char dir[64]; /* a private scratch directory per run */

static int setup(void **state)
{
	assert_true(sodium_init() >= 0);
	snprintf(dir, sizeof(dir), "/tmp/ptg-test-keys-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Returns the scratch path of name (static storage, one at a time per slot). */
static const char *path(const char *name)
{
	static char p[4][128];
	static int slot;

	slot = (slot + 1) % 4;
	snprintf(p[slot], sizeof(p[slot]), "%s/%s", dir, name);
	return p[slot];
}

static void write_file(const char *name, const void *data, size_t n)
{
	FILE *f = fopen(path(name), "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static void test_set_basics(void **state)
{
	struct keyset *ks = keys_new();
	uint8_t pk[32], sk[64], zero[32] = {0};
	const struct keyset_key *k;
	char kid[8];
	int i;

	crypto_sign_keypair(pk, sk);
	assert_int_equal(keys_count(ks), 0);
	assert_null(keys_get(ks, 0));
	assert_int_equal(keys_add_hs256(ks, "a", (const uint8_t *)"s", 1), 0);
	assert_int_equal(keys_add_ed25519_pub(ks, NULL, pk), 0);
	assert_int_equal(keys_add_ed25519_pub(ks, NULL, pk), 0); /* no kid: no clash */
	assert_int_equal(keys_add_ed25519_pub(ks, "a", pk), -EEXIST);
	assert_int_equal(keys_add_hs256(ks, "b", (const uint8_t *)"s", 0), -EINVAL);
	assert_int_equal(keys_add_hs256(ks, "b", sk, KEYS_HS256_MAX + 1), -EINVAL);
	assert_int_equal(keys_add_hs256(ks, "", sk, 32), -EINVAL);
	assert_int_equal(keys_add_hs256(ks, "bad kid", sk, 32), -EINVAL);
	assert_int_equal(keys_add_hs256(ks, "x\"y", sk, 32), -EINVAL);
	/* The identity point is small-order: not a usable public key. */
	zero[0] = 1;
	assert_int_equal(keys_add_ed25519_pub(ks, "z", zero), -EINVAL);
	assert_int_equal(keys_count(ks), 3);
	k = keys_get(ks, 0);
	assert_int_equal(k->alg, JWT_HS256);
	assert_string_equal(k->kid, "a");
	assert_int_equal(k->len, 1);
	k = keys_get(ks, 1);
	assert_int_equal(k->alg, JWT_EDDSA);
	assert_string_equal(k->kid, "");
	assert_memory_equal(k->material, pk, 32);
	for (i = 3; i < KEYS_MAX; i++) {
		snprintf(kid, sizeof(kid), "k%d", i);
		assert_int_equal(keys_add_hs256(ks, kid, sk, 32), 0);
	}
	assert_int_equal(keys_add_hs256(ks, "one-more", sk, 32), -ENOSPC);
	keys_free(ks);
	keys_free(NULL);
}

static void test_rfc8410_vector(void **state)
{
	uint8_t sk[64], pk[32];
	struct buf out = BUF_INIT;

	assert_int_equal(keys_parse_private(rfc_priv, strlen(rfc_priv), sk), 0);
	assert_int_equal(keys_parse_public(rfc_pub, strlen(rfc_pub), pk), 0);
	assert_memory_equal(sk + 32, pk, 32); /* libsodium's sk is seed || pk */
	/* Writing gives back the RFC's exact text. */
	keys_pem_private(sk, &out);
	assert_int_equal(buf_size(&out), strlen(rfc_priv));
	assert_memory_equal(buf_head(&out), rfc_priv, strlen(rfc_priv));
	buf_reset(&out);
	keys_pem_public(pk, &out);
	assert_int_equal(buf_size(&out), strlen(rfc_pub));
	assert_memory_equal(buf_head(&out), rfc_pub, strlen(rfc_pub));
	buf_free(&out);
}

static void test_pem_round_trip(void **state)
{
	uint8_t pk[32], sk[64], pk2[32], sk2[64];
	struct buf out = BUF_INIT;
	int i;

	for (i = 0; i < 20; i++) {
		crypto_sign_keypair(pk, sk);
		buf_reset(&out);
		keys_pem_private(sk, &out);
		assert_int_equal(
		    keys_parse_private((char *)buf_head(&out), buf_size(&out), sk2), 0);
		assert_memory_equal(sk, sk2, 64);
		buf_reset(&out);
		keys_pem_public(pk, &out);
		assert_int_equal(
		    keys_parse_public((char *)buf_head(&out), buf_size(&out), pk2), 0);
		assert_memory_equal(pk, pk2, 32);
		/* CRLF line ends and text around the block are fine. */
		buf_reset(&out);
		buf_append_str(&out, "comment\r\n");
		keys_pem_public(pk, &out);
		assert_int_equal(
		    keys_parse_public((char *)buf_head(&out), buf_size(&out), pk2), 0);
		assert_memory_equal(pk, pk2, 32);
	}
	buf_free(&out);
}

static void test_pem_rejects(void **state)
{
	static const char *bad_pub[] = {
	    "",
	    "-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n",
	    /* no END line */
	    "-----BEGIN PUBLIC KEY-----\n"
	    "MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n",
	    /* X25519 OID 1.3.101.110 */
	    "-----BEGIN PUBLIC KEY-----\n"
	    "MCowBQYDK2VuAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n"
	    "-----END PUBLIC KEY-----\n",
	    /* one byte short */
	    "-----BEGIN PUBLIC KEY-----\n"
	    "MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZg==\n"
	    "-----END PUBLIC KEY-----\n",
	    /* a private key where a public one is wanted */
	    "-----BEGIN PRIVATE KEY-----\n"
	    "MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n"
	    "-----END PRIVATE KEY-----\n",
	    /* bad base64 */
	    "-----BEGIN PUBLIC KEY-----\n"
	    "MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE\n"
	    "-----END PUBLIC KEY-----\n",
	    "Gb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZu==", /* 31 bytes */
	    "Gb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE",  /* unpadded */
	    "Gb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE= x",
	};
	uint8_t pk[32], sk[64];
	size_t i;

	for (i = 0; i < sizeof(bad_pub) / sizeof(bad_pub[0]); i++)
		assert_int_equal(keys_parse_public(bad_pub[i], strlen(bad_pub[i]), pk),
				 -EINVAL);
	assert_int_equal(keys_parse_private(rfc_pub, strlen(rfc_pub), sk), -EINVAL);
	assert_int_equal(keys_parse_private("", 0, sk), -EINVAL);
	/* Found by fuzz_jwt: an empty block left the base64 buffer without
	   storage, and buf_head(NULL + 0) is undefined (UBSan aborts). */
	assert_int_equal(keys_parse_private("-----BEGIN PRIVATE KEY-----\n"
					    "-----END PRIVATE KEY-----\n",
					    54, sk),
			 -EINVAL);
	assert_int_equal(
	    keys_parse_public("-----BEGIN PUBLIC KEY----------END PUBLIC KEY-----", 50,
			      pk),
	    -EINVAL);
	/* A public PEM's length is honoured: the END line cut off by n fails. */
	assert_int_equal(keys_parse_public(rfc_pub, strlen(rfc_pub) - 10, pk), -EINVAL);
	/* The raw base64 form, with whitespace around it. */
	assert_int_equal(
	    keys_parse_public("  Gb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n", 47, pk),
	    0);
	assert_int_equal(pk[0], 0x19);
	assert_int_equal(pk[31], 0xe1);
}

static void test_hs256_file(void **state)
{
	static const char secret[] = "an HS256 secret of well over 32 bytes";
	struct keyset *ks = keys_new();
	const struct keyset_key *k;
	struct buf b = BUF_INIT;
	char err[LOG_ERR_MAX], spec[200];

	buf_appendf(&b, "%s\r\n\n", secret);
	write_file("hs", buf_head(&b), buf_size(&b));
	snprintf(spec, sizeof(spec), "k1=%s", path("hs"));
	assert_int_equal(keys_load_hs256_file(ks, spec, err, sizeof(err)), 0);
	k = keys_get(ks, 0);
	assert_string_equal(k->kid, "k1");
	assert_int_equal(k->len, strlen(secret)); /* trailing CR/LF stripped */
	assert_memory_equal(k->material, secret, strlen(secret));
	/* Same file again under the same kid clashes; without a kid it loads. */
	assert_int_equal(keys_load_hs256_file(ks, spec, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "k1"));
	assert_int_equal(keys_load_hs256_file(ks, path("hs"), err, sizeof(err)), 0);
	assert_string_equal(keys_get(ks, 1)->kid, "");
	/* Leading/inner bytes are kept: only trailing CR/LF goes. */
	write_file("hs2", " 0123456789012345678901234567890\n", 33);
	assert_int_equal(keys_load_hs256_file(ks, path("hs2"), err, sizeof(err)), 0);
	assert_int_equal(keys_get(ks, 2)->len, 32);
	/* 31 bytes are too few, even with a newline making 32. */
	write_file("short", "0123456789012345678901234567890\n", 32);
	assert_int_equal(keys_load_hs256_file(ks, path("short"), err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, path("short")));
	assert_non_null(strstr(err, "31"));
	assert_int_equal(keys_load_hs256_file(ks, path("missing"), err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "missing"));
	assert_int_equal(keys_load_hs256_file(ks, dir, err, sizeof(err)), -EINVAL);
	/* A file whose name has '=' is reached with a path that cannot be a kid. */
	write_file("a=b", secret, strlen(secret));
	snprintf(spec, sizeof(spec), "%s", path("a=b"));
	assert_int_equal(keys_load_hs256_file(ks, spec, err, sizeof(err)), 0);
	assert_string_equal(keys_get(ks, 3)->kid, "");
	assert_int_equal(keys_count(ks), 4);
	buf_reset(&b);
	assert_int_equal(keys_read_hs256_secret(path("hs"), &b, err, sizeof(err)), 0);
	assert_int_equal(buf_size(&b), strlen(secret));
	buf_free(&b);
	keys_free(ks);
}

static void test_ed25519_file(void **state)
{
	struct keyset *ks = keys_new();
	struct buf b = BUF_INIT;
	uint8_t pk[32], sk[64];
	char err[LOG_ERR_MAX], spec[200];

	crypto_sign_keypair(pk, sk);
	keys_pem_public(pk, &b);
	write_file("pub.pem", buf_head(&b), buf_size(&b));
	snprintf(spec, sizeof(spec), "2026-05=%s", path("pub.pem"));
	assert_int_equal(keys_load_ed25519_file(ks, spec, err, sizeof(err)), 0);
	assert_string_equal(keys_get(ks, 0)->kid, "2026-05");
	assert_memory_equal(keys_get(ks, 0)->material, pk, 32);
	buf_reset(&b);
	b64_encode(pk, 32, &b);
	buf_append_str(&b, "\n");
	write_file("pub.b64", buf_head(&b), buf_size(&b));
	assert_int_equal(keys_load_ed25519_file(ks, path("pub.b64"), err, sizeof(err)),
			 0);
	assert_memory_equal(keys_get(ks, 1)->material, pk, 32);
	write_file("junk", "hello\n", 6);
	assert_int_equal(keys_load_ed25519_file(ks, path("junk"), err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "junk"));
	assert_non_null(strstr(err, "Ed25519"));
	assert_int_equal(keys_load_ed25519_file(ks, path("nope"), err, sizeof(err)),
			 -ENOENT);
	assert_int_equal(keys_count(ks), 2);
	buf_free(&b);
	keys_free(ks);
}

static void test_generate_files(void **state)
{
	uint8_t sk[64], sig[64];
	struct keyset *ks = keys_new();
	struct stat st;
	char err[LOG_ERR_MAX];

	assert_int_equal(
	    keys_generate_files(path("gen.key"), path("gen.pub"), err, sizeof(err)), 0);
	assert_int_equal(stat(path("gen.key"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(keys_load_private_file(path("gen.key"), sk, err, sizeof(err)),
			 0);
	assert_int_equal(keys_load_ed25519_file(ks, path("gen.pub"), err, sizeof(err)),
			 0);
	assert_memory_equal(keys_get(ks, 0)->material, sk + 32, 32);
	crypto_sign_detached(sig, NULL, (const uint8_t *)"m", 1, sk);
	assert_int_equal(crypto_sign_verify_detached(sig, (const uint8_t *)"m", 1,
						     keys_get(ks, 0)->material),
			 0);
	/* Never overwrites; a failed second file leaves no first file. */
	assert_int_equal(
	    keys_generate_files(path("gen.key"), path("x.pub"), err, sizeof(err)),
	    -EEXIST);
	assert_int_equal(
	    keys_generate_files(path("new.key"), path("gen.pub"), err, sizeof(err)),
	    -EEXIST);
	assert_int_equal(access(path("new.key"), F_OK), -1);
	assert_int_equal(keys_load_private_file(path("gen.pub"), sk, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "PRIVATE KEY"));
	keys_free(ks);
}

static int have_openssl(void)
{
	return system("command -v openssl >/dev/null 2>&1") == 0;
}

static int run(const char *fmt, const char *a, const char *b)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), fmt, a, b);
	return system(cmd);
}

/* Keys from openssl load here, and openssl reads ours to the same text. */
static void test_openssl_interop(void **state)
{
	uint8_t sk[64], pk[32];
	struct buf a = BUF_INIT, b = BUF_INIT;
	char err[LOG_ERR_MAX];
	FILE *f;

	if (!have_openssl())
		skip();
	assert_int_equal(run("openssl genpkey -algorithm ed25519 -out '%s' 2>/dev/null%s",
			     path("o.key"), ""),
			 0);
	assert_int_equal(run("openssl pkey -in '%s' -pubout -out '%s' 2>/dev/null",
			     path("o.key"), path("o.pub")),
			 0);
	assert_int_equal(keys_load_private_file(path("o.key"), sk, err, sizeof(err)), 0);
	f = fopen(path("o.pub"), "r");
	assert_non_null(f);
	buf_reserve(&a, 4096);
	buf_commit(&a, fread(buf_head(&a), 1, 4096, f));
	fclose(f);
	assert_int_equal(keys_parse_public((char *)buf_head(&a), buf_size(&a), pk), 0);
	assert_memory_equal(sk + 32, pk, 32);
	/* Our PEM of the same keys is byte for byte what openssl wrote. */
	keys_pem_public(pk, &b);
	assert_int_equal(buf_size(&a), buf_size(&b));
	assert_memory_equal(buf_head(&a), buf_head(&b), buf_size(&b));
	/* Our generated pair: openssl derives the same public key. */
	assert_int_equal(
	    keys_generate_files(path("g.key"), path("g.pub"), err, sizeof(err)), 0);
	assert_int_equal(run("openssl pkey -in '%s' -pubout -out '%s' 2>/dev/null",
			     path("g.key"), path("g2.pub")),
			 0);
	assert_int_equal(run("cmp -s '%s' '%s'", path("g.pub"), path("g2.pub")), 0);
	assert_int_equal(
	    run("openssl pkey -pubin -in '%s' -noout 2>/dev/null%s", path("g.pub"), ""),
	    0);
	buf_free(&a);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_set_basics),	   cmocka_unit_test(test_rfc8410_vector),
	    cmocka_unit_test(test_pem_round_trip), cmocka_unit_test(test_pem_rejects),
	    cmocka_unit_test(test_hs256_file),	   cmocka_unit_test(test_ed25519_file),
	    cmocka_unit_test(test_generate_files), cmocka_unit_test(test_openssl_interop),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
