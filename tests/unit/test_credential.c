/* unit: sidecar */
/* sidecar/credential.c: the instance token file at start (unreadable,
   too large, empty, garbage, expired, wrong audience, a client token, a
   good one), the instance id it settles, and its changes: a renewal by
   rename or in place is picked up, a bad change keeps the old token. The
   clock is a constant; the files are real. */
#include "../../sidecar/credential.c"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "auth_jwt.h"
#include "log.h"

/* ---- what the test reads of credential.c, which it includes ---- */

/* The instance the token names; it never changes while c lives. */
static const char *credential_instance_id(const struct credential *c)
{
	return c->claims.instance_id;
}

/* The current token's exp, seconds since the epoch. */
static int64_t credential_expires_at(const struct credential *c)
{
	return c->claims.exp;
}

#define NOW 1700000000LL

static char dir[64], path[128];
static uint8_t sk[64];

static int setup(void **state)
{
	uint8_t seed[32], pk[32];

	(void)state;
	strcpy(dir, "/tmp/test_credential.XXXXXX");
	if (!mkdtemp(dir) || sodium_init() < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/instance.token", dir);
	memset(seed, 3, sizeof(seed));
	crypto_sign_seed_keypair(pk, sk, seed);
	log_set_level(LOG_ERROR); /* the refusals are expected */
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A link credential for inst with sub, iat and exp, in out (NUL-ended). */
static void link_token(struct buf *out, const char *inst, const char *sub, long long iat,
		       long long exp)
{
	char claims[512];

	snprintf(claims, sizeof(claims),
		 "{\"sub\":\"%s\",\"instance_id\":\"%s\",\"aud\":\"ptygate-link\","
		 "\"iat\":%lld,\"exp\":%lld}",
		 sub, inst, iat, exp);
	buf_reset(out);
	assert_int_equal(auth_jwt_mint_eddsa(sk, "k1", claims, out), 0);
}

/* Writes text to p in place (same inode: truncate and write). */
static void write_in_place(const char *p, const char *text)
{
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	chmod(p, 0600);
}

/* Writes text as the platform renews: a temporary file renamed over p. */
static void write_renamed(const char *p, const char *text)
{
	char tmp[160];

	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	write_in_place(tmp, text);
	assert_int_equal(rename(tmp, p), 0);
}

/* credential_load of path must fail with err holding each of the NULL-
   terminated fragments. */
static void load_fails(const char *p, ...)
{
	char err[LOG_ERR_MAX] = "";
	const char *frag;
	va_list ap;

	assert_null(credential_load(p, NOW, err, sizeof(err)));
	va_start(ap, p);
	while ((frag = va_arg(ap, const char *)) != NULL)
		if (!strstr(err, frag))
			fail_msg("'%s' not in '%s'", frag, err);
	va_end(ap);
}

static void test_unreadable_and_not_a_token(void **state)
{
	char sub[160], big[CREDENTIAL_FILE_MAX + 2];
	struct buf tok = BUF_INIT;

	load_fails("/nonexistent/instance.token", "/nonexistent/instance.token",
		   "No such file", NULL);
	snprintf(sub, sizeof(sub), "%s/adir", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	load_fails(sub, sub, "not a regular file", NULL);
	snprintf(sub, sizeof(sub), "%s/fifo", dir);
	assert_int_equal(mkfifo(sub, 0600), 0);
	load_fails(sub, "not a regular file", NULL);

	memset(big, 'A', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	write_in_place(path, big);
	load_fails(path, path, "larger than", NULL);
	write_in_place(path, "");
	load_fails(path, path, "empty", NULL);
	write_in_place(path, " \n\r\n");
	load_fails(path, "empty", NULL);
	write_in_place(path, "garbage\n");
	load_fails(path, path, "malformed", NULL);
	/* A token with a newline inside is not one token. */
	buf_append_str(&tok, "eyJhbGciOiJFZERTQSJ9\n.e30.AAAA");
	*buf_reserve(&tok, 1) = '\0';
	write_in_place(path, (const char *)buf_head(&tok));
	load_fails(path, "malformed", NULL);
	buf_free(&tok);
}

static void test_expired_wrong_audience_client_token(void **state)
{
	struct buf tok = BUF_INIT;

	link_token(&tok, "vm-1", "vm-1", NOW - 3600, NOW - 60);
	write_in_place(path, (const char *)buf_head(&tok));
	load_fails(path, path, "expired at 2023-11-14T22:12:20.000Z, 60 s ago", NULL);

	buf_reset(&tok);
	assert_int_equal(
	    auth_jwt_mint_eddsa(sk, "k1",
				"{\"sub\":\"alice\",\"instance_id\":\"vm-1\","
				"\"scope\":\"pty:control\",\"iat\":1700000000,"
				"\"exp\":1800000000}",
				&tok),
	    0);
	write_in_place(path, (const char *)buf_head(&tok));
	load_fails(path, path, "wrong_audience", NULL);
	buf_reset(&tok);
	assert_int_equal(
	    auth_jwt_mint_eddsa(sk, "k1",
				"{\"sub\":\"a\",\"instance_id\":\"*\","
				"\"aud\":\"ptygate-link\",\"iat\":1700000000,"
				"\"exp\":1800000000}",
				&tok),
	    0);
	write_in_place(path, (const char *)buf_head(&tok));
	load_fails(path, "no_instance", NULL);
	buf_free(&tok);
}

static void test_good_token_and_instance(void **state)
{
	struct buf tok = BUF_INIT, text = BUF_INIT;
	struct credential *c;
	char err[LOG_ERR_MAX], inst[PTG_ID_MAX + 1]; /* as config.h's instance_id */
	size_t len;

	link_token(&tok, "vm-1", "vm-1", NOW, NOW + 600);
	buf_append_str(&text, "\n  ");
	buf_append(&text, buf_head(&tok), buf_size(&tok));
	buf_append_str(&text, "\r\n");
	*buf_reserve(&text, 1) = '\0';
	write_in_place(path, (const char *)buf_head(&text));
	c = credential_load(path, NOW, err, sizeof(err));
	assert_non_null(c);
	assert_string_equal(credential_token(c, &len), (const char *)buf_head(&tok));
	assert_int_equal(len, buf_size(&tok));
	assert_string_equal(credential_instance_id(c), "vm-1");
	assert_int_equal(credential_expires_at(c), NOW + 600);

	/* The token's instance replaces the default (the hostname)... */
	strcpy(inst, "myhost");
	assert_int_equal(
	    credential_settle_instance(c, inst, sizeof(inst), 0, err, sizeof(err)), 0);
	assert_string_equal(inst, "vm-1");
	/* ...agrees with a given --instance-id, and refuses another. */
	assert_int_equal(
	    credential_settle_instance(c, inst, sizeof(inst), 1, err, sizeof(err)), 0);
	strcpy(inst, "vm-2");
	assert_int_equal(
	    credential_settle_instance(c, inst, sizeof(inst), 1, err, sizeof(err)),
	    -EINVAL);
	assert_string_equal(inst, "vm-2");
	assert_non_null(strstr(err, "--instance-id vm-2 differs from instance_id vm-1"));
	assert_non_null(strstr(err, path));
	/* Nothing changed: nothing new. */
	assert_int_equal(credential_check_changed(c, NOW + 1), 0);
	assert_int_equal(credential_check_changed(c, NOW + 2), 0);
	credential_free(c);
	credential_free(NULL);
	buf_free(&tok);
	buf_free(&text);
}

static void test_changes(void **state)
{
	struct buf t1 = BUF_INIT, t2 = BUF_INIT, t3 = BUF_INIT, bad = BUF_INIT;
	struct credential *c;
	char err[LOG_ERR_MAX];

	link_token(&t1, "vm-1", "vm-1", NOW, NOW + 600);
	write_renamed(path, (const char *)buf_head(&t1));
	c = credential_load(path, NOW, err, sizeof(err));
	assert_non_null(c);

	/* Renewed by rename: picked up. */
	link_token(&t2, "vm-1", "vm-1", NOW + 300, NOW + 900);
	write_renamed(path, (const char *)buf_head(&t2));
	assert_int_equal(credential_check_changed(c, NOW + 300), 1);
	assert_string_equal(credential_token(c, NULL), (const char *)buf_head(&t2));
	assert_int_equal(credential_expires_at(c), NOW + 900);
	assert_int_equal(credential_check_changed(c, NOW + 301), 0);
	/* The same token written again: a change of file, not of token. */
	write_renamed(path, (const char *)buf_head(&t2));
	assert_int_equal(credential_check_changed(c, NOW + 302), 0);

	/* Bad changes keep the current token: garbage, a client token, an
	   expired one, another instance, the file gone, one too large. */
	write_renamed(path, "garbage");
	assert_true(credential_check_changed(c, NOW + 310) < 0);
	assert_int_equal(credential_check_changed(c, NOW + 311), 0); /* told once */
	assert_string_equal(credential_token(c, NULL), (const char *)buf_head(&t2));
	link_token(&bad, "vm-1", "vm-1", NOW, NOW + 305);
	write_renamed(path, (const char *)buf_head(&bad));
	assert_true(credential_check_changed(c, NOW + 320) < 0);
	link_token(&bad, "vm-9", "vm-9", NOW + 300, NOW + 900);
	write_renamed(path, (const char *)buf_head(&bad));
	assert_true(credential_check_changed(c, NOW + 330) < 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(credential_check_changed(c, NOW + 340), -ENOENT);
	assert_int_equal(credential_check_changed(c, NOW + 341), 0);
	assert_string_equal(credential_token(c, NULL), (const char *)buf_head(&t2));
	assert_string_equal(credential_instance_id(c), "vm-1");
	assert_int_equal(credential_expires_at(c), NOW + 900);

	/* Back, renewed in place with a longer sub (another size): taken. */
	write_in_place(path, (const char *)buf_head(&t1));
	assert_int_equal(credential_check_changed(c, NOW + 350), 1);
	assert_string_equal(credential_token(c, NULL), (const char *)buf_head(&t1));
	link_token(&t3, "vm-1", "vm-1-renewed", NOW + 400, NOW + 1000);
	write_in_place(path, (const char *)buf_head(&t3));
	assert_int_equal(credential_check_changed(c, NOW + 400), 1);
	assert_string_equal(credential_token(c, NULL), (const char *)buf_head(&t3));
	assert_int_equal(credential_expires_at(c), NOW + 1000);
	credential_free(c);
	buf_free(&t1);
	buf_free(&t2);
	buf_free(&t3);
	buf_free(&bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unreadable_and_not_a_token),
	    cmocka_unit_test(test_expired_wrong_audience_client_token),
	    cmocka_unit_test(test_good_token_and_instance),
	    cmocka_unit_test(test_changes),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
