/* unit: cli */
/* cli/token.c: scope lists, the claims it builds, and tokens minted by
   `ptygate token mint` verified by the gateway's own auth_jwt_verify. */
#include "../../cli/token.c"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "auth_jwt.h"
#include "cli.h"
#include "linkcred.h"
#include "log.h"

static char tmpdir[64];

static int setup_dir(void **state)
{
	strcpy(tmpdir, "/tmp/test_cli_token.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void path_in(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", tmpdir, name);
}

/* Runs token_main on a NULL-terminated list, capturing stdout in out. */
static int run_token(struct buf *out, ...)
{
	char *argv[32];
	int argc = 0, saved, rc;
	FILE *tmp = tmpfile();
	va_list ap;
	char chunk[512];
	size_t n;

	va_start(ap, out);
	while ((argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	fflush(stdout);
	saved = dup(1);
	dup2(fileno(tmp), 1);
	rc = token_main(argc, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	rewind(tmp);
	while ((n = fread(chunk, 1, sizeof(chunk), tmp)) > 0)
		buf_append(out, chunk, n);
	*buf_reserve(out, 1) = '\0';
	fclose(tmp);
	return rc;
}

static void test_scopes_dedupe_and_order(void **state)
{
	struct token_spec s = {0};

	assert_int_equal(token_add_scopes(&s, "tasks  pty:control"), 0);
	assert_int_equal(token_add_scopes(&s, "tasks sessions "), 0);
	assert_string_equal(s.scope, "tasks pty:control sessions");
	assert_int_equal(token_add_scopes(&s, "pty:observe"), 0);
	assert_string_equal(s.scope, "tasks pty:control sessions pty:observe");
	assert_int_equal(token_add_scopes(&s, "tasks pty:admin"), -EINVAL);
	assert_int_equal(token_add_scopes(&s, "pty:contro"), -EINVAL);
}

static void test_claims_json(void **state)
{
	struct token_spec s = {
	    .sub = "alice", .instance = "inst-42", .ttl = 60, .nbf_in = -1};
	json_t *o;
	char *j;

	token_add_scopes(&s, "pty:control");
	j = token_claims_json(&s, 1000);
	o = json_loads(j, 0, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "sub")), "alice");
	assert_string_equal(json_string_value(json_object_get(o, "instance_id")),
			    "inst-42");
	assert_string_equal(json_string_value(json_object_get(o, "scope")),
			    "pty:control");
	assert_int_equal(json_integer_value(json_object_get(o, "iat")), 1000);
	assert_int_equal(json_integer_value(json_object_get(o, "exp")), 1060);
	assert_null(json_object_get(o, "session_id"));
	assert_null(json_object_get(o, "nbf"));
	assert_null(json_object_get(o, "aud"));
	assert_null(json_object_get(o, "iss"));
	json_decref(o);
	free(j);

	s.session = "*";
	s.nbf_in = 30;
	s.audience = "gw";
	s.issuer = "ops";
	j = token_claims_json(&s, 1000);
	o = json_loads(j, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(o, "session_id")), "*");
	assert_int_equal(json_integer_value(json_object_get(o, "nbf")), 1030);
	assert_string_equal(json_string_value(json_object_get(o, "aud")), "gw");
	assert_string_equal(json_string_value(json_object_get(o, "iss")), "ops");
	json_decref(o);
	free(j);
}

/* Verifies tok (with its trailing newline) against ks. */
static int verify(const struct keyset *ks, const struct jwt_policy *pol,
		  const struct buf *tok, struct jwt_claims *c)
{
	size_t n = buf_size(tok);

	assert_true(n > 1);
	assert_int_equal(buf_head(tok)[n - 1], '\n');
	return auth_jwt_verify(ks, pol, (const char *)buf_head(tok), n - 1, time(NULL),
			       c);
}

static void test_mint_eddsa_verifies(void **state)
{
	char sk[128], pk[128], spec[160], err[LOG_ERR_MAX];
	struct keyset *ks = keys_new();
	struct jwt_policy pol = {"gw", "ops", JWT_LEEWAY_S};
	struct buf tok = BUF_INIT, none = BUF_INIT;
	struct jwt_claims c;

	path_in(sk, sizeof(sk), "ed.pem");
	path_in(pk, sizeof(pk), "ed.pub");
	assert_int_equal(run_token(&none, "token", "keygen", "--out-private", sk,
				   "--out-public", pk, NULL),
			 CLI_OK);
	assert_int_equal(buf_size(&none), 0);
	snprintf(spec, sizeof(spec), "k1=%s", pk);
	assert_int_equal(keys_load_ed25519_file(ks, spec, err, sizeof(err)), 0);
	assert_int_equal(run_token(&tok, "token", "mint", "--ed25519-key", sk, "--kid",
				   "k1", "--sub", "alice", "--instance", "inst-42",
				   "--session", "s-1", "--scope", "pty:control tasks",
				   "--scope", "sessions", "--ttl", "30m", "--audience",
				   "gw", "--issuer", "ops", NULL),
			 CLI_OK);
	assert_int_equal(verify(ks, &pol, &tok, &c), JWT_OK);
	assert_string_equal(c.sub, "alice");
	assert_string_equal(c.instance_id, "inst-42");
	assert_string_equal(c.session_id, "s-1");
	assert_string_equal(c.kid, "k1");
	assert_int_equal(c.alg, JWT_EDDSA);
	assert_int_equal(c.scopes,
			 SCOPE_OBSERVE | SCOPE_CONTROL | SCOPE_TASKS | SCOPE_SESSIONS);
	assert_int_equal(c.exp - c.iat, 1800);
	assert_int_equal(auth_jwt_claims_allow(&c, "inst-42", "s-1"), 0);
	assert_int_equal(auth_jwt_claims_allow(&c, "inst-42", "s-2"), -EACCES);
	pol.audience = "other";
	assert_int_equal(verify(ks, &pol, &tok, &c), JWT_WRONG_AUDIENCE);

	/* keygen never overwrites. */
	assert_int_equal(run_token(&none, "token", "keygen", "--out-private", sk,
				   "--out-public", pk, NULL),
			 CLI_FAIL);
	keys_free(ks);
	buf_free(&tok);
	buf_free(&none);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_mint_hs256_defaults_and_nbf(void **state)
{
	char sec[128], other[128], err[LOG_ERR_MAX];
	struct keyset *ks = keys_new(), *wrong = keys_new();
	struct buf tok = BUF_INIT;
	struct jwt_claims c;

	path_in(sec, sizeof(sec), "hs.secret");
	path_in(other, sizeof(other), "hs2.secret");
	write_file(sec, "0123456789abcdef0123456789abcdef-secret\n");
	write_file(other, "another-secret-of-enough-length-0123456789\n");
	assert_int_equal(keys_load_hs256_file(ks, sec, err, sizeof(err)), 0);
	assert_int_equal(keys_load_hs256_file(wrong, other, err, sizeof(err)), 0);
	assert_int_equal(run_token(&tok, "token", "mint", "--hs256-secret-file", sec,
				   "--sub", "bob", "--instance", "*", NULL),
			 CLI_OK);
	assert_int_equal(verify(ks, NULL, &tok, &c), JWT_OK);
	assert_int_equal(c.alg, JWT_HS256);
	assert_string_equal(c.instance_id, "*");
	assert_string_equal(c.session_id, "");
	assert_int_equal(c.scopes, SCOPE_OBSERVE); /* the default scope */
	assert_int_equal(c.exp - c.iat, 3600);	   /* the default ttl */
	assert_int_equal(verify(wrong, NULL, &tok, &c), JWT_BAD_SIGNATURE);

	buf_reset(&tok);
	assert_int_equal(run_token(&tok, "token", "mint", "--hs256-secret-file", sec,
				   "--sub", "bob", "--instance", "i", "--not-before-in",
				   "1h", NULL),
			 CLI_OK);
	assert_int_equal(verify(ks, NULL, &tok, &c), JWT_NOT_YET_VALID);
	keys_free(ks);
	keys_free(wrong);
	buf_free(&tok);
}

static void test_mint_usage_errors(void **state)
{
	char sec[128];
	struct buf out = BUF_INIT;

	path_in(sec, sizeof(sec), "hs.secret");
	write_file(sec, "0123456789abcdef0123456789abcdef-secret\n");
	assert_int_equal(
	    run_token(&out, "token", "mint", "--sub", "a", "--instance", "i", NULL),
	    CLI_USAGE);
	assert_int_equal(run_token(&out, "token", "mint", "--hs256-secret-file", sec,
				   "--ed25519-key", sec, "--sub", "a", "--instance", "i",
				   NULL),
			 CLI_USAGE);
	assert_int_equal(run_token(&out, "token", "mint", "--hs256-secret-file", sec,
				   "--instance", "i", NULL),
			 CLI_USAGE);
	assert_int_equal(run_token(&out, "token", "mint", "--hs256-secret-file", sec,
				   "--sub", "a", "--instance", "i", "--scope", "root",
				   NULL),
			 CLI_USAGE);
	assert_int_equal(run_token(&out, "token", "mint", "--hs256-secret-file", sec,
				   "--sub", "a", "--instance", "i", "--ttl", "0", NULL),
			 CLI_USAGE);
	assert_int_equal(run_token(&out, "token", "mint", "--hs256-secret-file", sec,
				   "--sub", "a", "--instance", "i", "--kid", "a b", NULL),
			 CLI_USAGE);
	assert_int_equal(run_token(&out, "token", "mint", "--hs256-secret-file", sec,
				   "--sub", "a", "--instance", "i", "extra", NULL),
			 CLI_USAGE);
	assert_int_equal(run_token(&out, "token", "mint", "--nope", NULL), CLI_USAGE);
	assert_int_equal(run_token(&out, "token", "mint", "--ttl", NULL), CLI_USAGE);
	assert_int_equal(run_token(&out, "token", "frob", NULL), CLI_USAGE);
	assert_int_equal(run_token(&out, "token", "keygen", "--out-public", sec, NULL),
			 CLI_USAGE);
	/* Nothing reaches stdout on a usage error. */
	assert_int_equal(buf_size(&out), 0);
	/* A key file that does not exist is a failure, not a usage error. */
	assert_int_equal(run_token(&out, "token", "mint", "--ed25519-key", "/nonexistent",
				   "--sub", "a", "--instance", "i", NULL),
			 CLI_FAIL);
	assert_int_equal(run_token(&out, "token", "mint", "--help", NULL), CLI_OK);
	assert_non_null(
	    strstr((const char *)buf_head(&out), "Usage: ptygate token mint"));
	buf_free(&out);
}

/* --audience ptygate-link: an instance credential the gateway's link
   verifier takes and its client verifier refuses, and what it may not
   carry. */
static void test_mint_link_credential(void **state)
{
	char sk[128], pk[128], spec[160], err[LOG_ERR_MAX];
	struct keyset *ks = keys_new();
	struct buf tok = BUF_INIT, none = BUF_INIT;
	struct jwt_claims c;
	struct linkcred lc;
	int64_t now = time(NULL);

	path_in(sk, sizeof(sk), "link.pem");
	path_in(pk, sizeof(pk), "link.pub");
	assert_int_equal(run_token(&none, "token", "keygen", "--out-private", sk,
				   "--out-public", pk, NULL),
			 CLI_OK);
	snprintf(spec, sizeof(spec), "prov1=%s", pk);
	assert_int_equal(keys_load_ed25519_file(ks, spec, err, sizeof(err)), 0);
	assert_int_equal(run_token(&tok, "token", "mint", "--audience", "ptygate-link",
				   "--instance", "vm-42", "--ed25519-key", sk, "--kid",
				   "prov1", "--ttl", "10m", NULL),
			 CLI_OK);
	assert_int_equal(linkcred_verify(ks, (const char *)buf_head(&tok),
					 buf_size(&tok) - 1, now, &lc),
			 LINKCRED_OK);
	assert_string_equal(lc.instance_id, "vm-42");
	assert_string_equal(lc.sub, "vm-42"); /* sub defaults to the instance */
	assert_string_equal(lc.kid, "prov1");
	assert_int_equal(lc.exp - lc.iat, 600);
	assert_true(lc.iat >= now - 5 && lc.iat <= now + 5);
	/* Never a client token: no scope, and the audience guard. */
	assert_null(strstr((const char *)buf_head(&tok), "scope"));
	assert_int_equal(verify(ks, NULL, &tok, &c), JWT_WRONG_AUDIENCE);

	/* An explicit --sub is kept. */
	buf_reset(&tok);
	assert_int_equal(run_token(&tok, "token", "mint", "--audience", "ptygate-link",
				   "--instance", "vm-42", "--sub", "provisioner",
				   "--ed25519-key", sk, NULL),
			 CLI_OK);
	assert_int_equal(linkcred_verify(ks, (const char *)buf_head(&tok),
					 buf_size(&tok) - 1, now, &lc),
			 LINKCRED_OK);
	assert_string_equal(lc.sub, "provisioner");
	assert_int_equal(lc.exp - lc.iat, 3600); /* the default ttl */

	/* Refused: '*', a bad id, no instance, scopes, a session, HS256. */
	buf_reset(&none);
	assert_int_equal(run_token(&none, "token", "mint", "--audience", "ptygate-link",
				   "--instance", "*", "--ed25519-key", sk, NULL),
			 CLI_USAGE);
	assert_int_equal(run_token(&none, "token", "mint", "--audience", "ptygate-link",
				   "--instance", "a/b", "--ed25519-key", sk, NULL),
			 CLI_USAGE);
	assert_int_equal(run_token(&none, "token", "mint", "--audience", "ptygate-link",
				   "--ed25519-key", sk, NULL),
			 CLI_USAGE);
	assert_int_equal(run_token(&none, "token", "mint", "--audience", "ptygate-link",
				   "--instance", "vm-42", "--ed25519-key", sk, "--scope",
				   "pty:observe", NULL),
			 CLI_USAGE);
	assert_int_equal(run_token(&none, "token", "mint", "--audience", "ptygate-link",
				   "--instance", "vm-42", "--ed25519-key", sk,
				   "--session", "s-1", NULL),
			 CLI_USAGE);
	path_in(spec, sizeof(spec), "hs.secret");
	write_file(spec, "0123456789abcdef0123456789abcdef-secret\n");
	assert_int_equal(run_token(&none, "token", "mint", "--audience", "ptygate-link",
				   "--instance", "vm-42", "--hs256-secret-file", spec,
				   NULL),
			 CLI_USAGE);
	assert_int_equal(buf_size(&none), 0);
	assert_int_equal(run_token(&none, "token", "mint", "--help", NULL), CLI_OK);
	assert_non_null(strstr((const char *)buf_head(&none), "--audience ptygate-link"));
	keys_free(ks);
	buf_free(&tok);
	buf_free(&none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scopes_dedupe_and_order),
	    cmocka_unit_test(test_claims_json),
	    cmocka_unit_test(test_mint_eddsa_verifies),
	    cmocka_unit_test(test_mint_hs256_defaults_and_nbf),
	    cmocka_unit_test(test_mint_usage_errors),
	    cmocka_unit_test(test_mint_link_credential),
	};

	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
