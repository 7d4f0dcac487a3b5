/* unit: gateway */
/* fleetauth: a signed value verifies for its own request only (method,
   target and X-Forwarded-For each bound), within the clock skew and not
   past it, under the same secret only; malformed values and short
   secrets are refused; the secret file is read with its newline
   dropped. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fleetauth.h"
#include "log.h"

#define SECRET "0123456789abcdef0123456789abcdef"
#define T0     1700000000

static void key(struct fleetauth *fa, const char *secret)
{
	assert_int_equal(fleetauth_init(fa, secret, strlen(secret)), 0);
}

static void test_roundtrip_binds_each_field(void **state)
{
	struct fleetauth fa;
	char v[FLEETAUTH_VALUE_MAX];

	key(&fa, SECRET);
	assert_int_equal(
	    fleetauth_sign(&fa, T0, "GET", "/agents/a/sessions", "10.0.0.7", v), 0);
	assert_int_equal(strncmp(v, "v1 1700000000 ", 14), 0);
	assert_int_equal(
	    fleetauth_verify(&fa, T0, v, "GET", "/agents/a/sessions", "10.0.0.7"), 0);
	assert_int_equal(
	    fleetauth_verify(&fa, T0, v, "POST", "/agents/a/sessions", "10.0.0.7"),
	    -EACCES);
	assert_int_equal(
	    fleetauth_verify(&fa, T0, v, "GET", "/agents/b/sessions", "10.0.0.7"),
	    -EACCES);
	assert_int_equal(
	    fleetauth_verify(&fa, T0, v, "GET", "/agents/a/sessions", "10.0.0.8"),
	    -EACCES);
	assert_int_equal(fleetauth_verify(&fa, T0, v, "GET", "/agents/a/sessions", NULL),
			 -EACCES);
	/* Fields are length-prefixed: moving bytes between two is no match. */
	assert_int_equal(fleetauth_sign(&fa, T0, "GET", "/x", "", v), 0);
	assert_int_equal(fleetauth_verify(&fa, T0, v, "GET/", "x", ""), -EACCES);
	fleetauth_clear(&fa);
}

static void test_skew(void **state)
{
	struct fleetauth fa;
	char v[FLEETAUTH_VALUE_MAX];

	key(&fa, SECRET);
	assert_int_equal(fleetauth_sign(&fa, T0, "GET", "/t", "", v), 0);
	assert_int_equal(fleetauth_verify(&fa, T0 + FLEETAUTH_SKEW_S, v, "GET", "/t", ""),
			 0);
	assert_int_equal(fleetauth_verify(&fa, T0 - FLEETAUTH_SKEW_S, v, "GET", "/t", ""),
			 0);
	assert_int_equal(
	    fleetauth_verify(&fa, T0 + FLEETAUTH_SKEW_S + 1, v, "GET", "/t", ""),
	    -ETIMEDOUT);
	assert_int_equal(
	    fleetauth_verify(&fa, T0 - FLEETAUTH_SKEW_S - 1, v, "GET", "/t", ""),
	    -ETIMEDOUT);
	/* A changed timestamp breaks the MAC before the skew is looked at. */
	v[3] = '2';
	assert_int_equal(fleetauth_verify(&fa, T0, v, "GET", "/t", ""), -EACCES);
}

static void test_other_secret(void **state)
{
	struct fleetauth a, b;
	char v[FLEETAUTH_VALUE_MAX];

	key(&a, SECRET);
	key(&b, SECRET "x");
	assert_int_equal(fleetauth_sign(&a, T0, "GET", "/t", "", v), 0);
	assert_int_equal(fleetauth_verify(&b, T0, v, "GET", "/t", ""), -EACCES);
}

static void test_malformed(void **state)
{
	static const char *bad[] = {
	    "",
	    "v1",
	    "v1 ",
	    "v2 1700000000 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	    "v1 1700000000",
	    "v1 1700000000 short",
	    "v1 1700000000 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	    "v1 17x0000000 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	    "v1  AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	    "v1 1700000000 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
	    "v1 123456789012345678901234 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	};
	struct fleetauth fa;

	key(&fa, SECRET);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(fleetauth_verify(&fa, T0, bad[i], "GET", "/t", ""),
				 -EINVAL);
	assert_int_equal(fleetauth_verify(&fa, T0, NULL, "GET", "/t", ""), -EINVAL);
	assert_non_null(fleetauth_strerror(-EINVAL));
}

static void test_field_bound(void **state)
{
	struct fleetauth fa;
	char v[FLEETAUTH_VALUE_MAX];
	char *big = malloc(FLEETAUTH_FIELD_MAX + 2);

	key(&fa, SECRET);
	memset(big, 'a', FLEETAUTH_FIELD_MAX + 1);
	big[FLEETAUTH_FIELD_MAX + 1] = '\0';
	assert_int_equal(fleetauth_sign(&fa, T0, "GET", big, "", v), -E2BIG);
	big[FLEETAUTH_FIELD_MAX] = '\0';
	assert_int_equal(fleetauth_sign(&fa, T0, "GET", big, "", v), 0);
	assert_int_equal(fleetauth_verify(&fa, T0, v, "GET", big, ""), 0);
	free(big);
}

static void test_short_secret_and_file(void **state)
{
	struct fleetauth fa, fb;
	char path[] = "/tmp/ptg-fleetauth-XXXXXX", err[LOG_ERR_MAX],
	     v[FLEETAUTH_VALUE_MAX];
	int fd;

	assert_int_equal(fleetauth_init(&fa, SECRET, FLEETAUTH_SECRET_MIN - 1), -EINVAL);
	/* The newline ending a file is not secret: 31 bytes and "\n" are short. */
	assert_int_equal(fleetauth_init(&fa, "0123456789abcdef0123456789abcde\n", 32),
			 -EINVAL);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "short\n", 6), 6);
	assert_int_equal(fleetauth_load(&fa, path, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, path));
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, SECRET "\r\n", strlen(SECRET) + 2, 0),
			 (ssize_t)strlen(SECRET) + 2);
	close(fd);
	assert_int_equal(fleetauth_load(&fa, path, err, sizeof(err)), 0);
	key(&fb, SECRET);
	assert_int_equal(fleetauth_sign(&fb, T0, "GET", "/t", "", v), 0);
	assert_int_equal(fleetauth_verify(&fa, T0, v, "GET", "/t", ""), 0);
	unlink(path);
	assert_true(fleetauth_load(&fa, path, err, sizeof(err)) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip_binds_each_field),
	    cmocka_unit_test(test_skew),
	    cmocka_unit_test(test_other_secret),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_field_bound),
	    cmocka_unit_test(test_short_secret_and_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
