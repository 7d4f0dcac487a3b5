/* unit: sidecar */
/* dialer: the redial backoff on an injected clock and random source: the
   ceilings double from the base to the cap and stay there, every delay
   lies within [0, ceiling] (the extremes of the random source reach both
   ends), a link up long enough resets the schedule and a shorter one
   does not, and a cap below the base is the base. Then the options:
   --dial repeatable up to its bound, needing --instance-token-file and
   sparing --listen, and --dial-backoff-max in ms or s/m/h. */
#include "../../sidecar/dialer.c"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"

struct fake {
	int64_t now;
	uint32_t next_random; /* what random() answers */
	unsigned draws;
};

static int64_t fake_now(void *user)
{
	return ((struct fake *)user)->now;
}

static uint32_t fake_random(void *user)
{
	struct fake *f = user;

	f->draws++;
	return f->next_random;
}

static struct dialer_env env_of(struct fake *f)
{
	struct dialer_env e = {fake_now, fake_random, f};

	return e;
}

/* With the random source at its top, each delay is its ceiling mod
   (ceiling + 1) of UINT32_MAX: take the draw that lands on the ceiling. */
static uint32_t top_of(int64_t ceiling)
{
	return (uint32_t)(UINT32_MAX - UINT32_MAX % (uint64_t)(ceiling + 1) - 1);
}

static void test_ceilings_double_to_the_cap(void **state)
{
	static const int64_t want[] = {100,  200,   400,   800,	  1600,	 3200,
				       6400, 12800, 25600, 30000, 30000, 30000};
	struct fake f = {0};
	struct dialer_env e = env_of(&f);
	struct dialer_backoff b;

	(void)state;
	dialer_backoff_init(&b, &e, 100, 30000, 10000);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		f.next_random = top_of(want[i]);
		assert_int_equal(dialer_backoff_next(&b), want[i]);
		f.now += want[i];
	}
	assert_int_equal(f.draws, 12);
}

static void test_jitter_bounds(void **state)
{
	static const uint32_t randoms[] = {0,	1,     99,	   100,
					   101, 12345, 0x7fffffff, UINT32_MAX};
	struct fake f = {0};
	struct dialer_env e = env_of(&f);
	struct dialer_backoff b;

	(void)state;
	for (size_t r = 0; r < sizeof(randoms) / sizeof(randoms[0]); r++) {
		int64_t ceiling = 100;

		dialer_backoff_init(&b, &e, 100, 5000, 10000);
		f.next_random = randoms[r];
		for (int i = 0; i < 10; i++) {
			int64_t d = dialer_backoff_next(&b);

			assert_true(d >= 0 && d <= ceiling);
			assert_int_equal(d,
					 (int64_t)(randoms[r] % (uint64_t)(ceiling + 1)));
			ceiling = ceiling * 2 > 5000 ? 5000 : ceiling * 2;
		}
	}
	/* A random source at 0 gives an immediate retry, never a negative one. */
	f.next_random = 0;
	dialer_backoff_init(&b, &e, 100, 5000, 10000);
	assert_int_equal(dialer_backoff_next(&b), 0);
}

/* The next delay, with the random source at the top of want's range,
   must be want: so the ceiling in force was want. */
static void expect_ceiling(struct dialer_backoff *b, struct fake *f, int64_t want)
{
	f->next_random = top_of(want);
	assert_int_equal(dialer_backoff_next(b), want);
}

/* Draws n delays at the top of each ceiling (no link between them);
   returns the last ceiling. */
static int64_t climb(struct dialer_backoff *b, struct fake *f, int n)
{
	int64_t ceiling = -1;

	for (int i = 0; i < n; i++) {
		ceiling = b->ceiling_ms;
		expect_ceiling(b, f, ceiling);
	}
	return ceiling;
}

static void test_reset_after_a_long_link(void **state)
{
	struct fake f = {.now = 1000000};
	struct dialer_env e = env_of(&f);
	struct dialer_backoff b;

	(void)state;
	dialer_backoff_init(&b, &e, 100, 30000, 10000);
	assert_int_equal(climb(&b, &f, 6), 3200);
	/* A link up 9.999 s: the schedule goes on climbing. */
	dialer_backoff_up(&b);
	f.now += 9999;
	expect_ceiling(&b, &f, 6400);
	/* Up exactly the reset time: back to the base. */
	dialer_backoff_up(&b);
	f.now += 10000;
	expect_ceiling(&b, &f, 100);
	expect_ceiling(&b, &f, 200);
	/* A reset is for the link that just ended: failures after it climb,
	   however long they took. */
	f.now += 60000;
	expect_ceiling(&b, &f, 400);
	/* A long link at the cap resets too. */
	assert_int_equal(climb(&b, &f, 10), 30000);
	dialer_backoff_up(&b);
	f.now += 3600000;
	expect_ceiling(&b, &f, 100);
}

static void test_cap_below_base(void **state)
{
	struct fake f = {0};
	struct dialer_env e = env_of(&f);
	struct dialer_backoff b;

	(void)state;
	dialer_backoff_init(&b, &e, 100, 50, 10000);
	expect_ceiling(&b, &f, 100);
	expect_ceiling(&b, &f, 100);
	/* A cap that is not a power-of-two multiple of the base is reached
	   exactly. */
	dialer_backoff_init(&b, &e, 100, 1000, 10000);
	assert_int_equal(climb(&b, &f, 4), 800);
	expect_ceiling(&b, &f, 1000);
	expect_ceiling(&b, &f, 1000);
}

/* config_parse of the NULL-terminated arguments (after the program's
   name), stderr silenced. */
static int parse(struct sidecar_config *c, const char *const *args)
{
	char *argv[32] = {"ptygate-sidecar"};
	int argc = 1, rc;
	FILE *saved = stderr;

	while (args[argc - 1] && argc < 31) {
		argv[argc] = (char *)args[argc - 1];
		argc++;
	}
	config_defaults(c);
	stderr = fopen("/dev/null", "w");
	rc = config_parse(c, argc, argv);
	fclose(stderr);
	stderr = saved;
	return rc;
}

static void test_dial_options(void **state)
{
	static const char *const dial_only[] = {"--dial", "vsock:2:7000",
						"--instance-token-file", "/t", NULL};
	static const char *const two[] = {"--dial",
					  "unix:/run/gw-a.sock",
					  "--dial",
					  "tcp:127.0.0.1:7000",
					  "--instance-token-file",
					  "/t",
					  "--listen",
					  "unix:/tmp/ptg-unit-never.sock",
					  "--dial-backoff-max",
					  "750ms",
					  NULL};
	static const char *const no_token[] = {"--dial", "vsock:2:7000", NULL};
	static const char *const neither[] = {"--instance-token-file", "/t", NULL};
	struct sidecar_config c;
	const char *args[32];
	int n = 0;

	(void)state;
	assert_int_equal(parse(&c, dial_only), 0);
	assert_int_equal(c.n_dial, 1);
	assert_int_equal(c.dial[0].kind, ADDR_VSOCK);
	assert_int_equal(c.dial[0].cid, 2);
	assert_false(c.listen_given);
	assert_int_equal(c.dial_backoff_max_ms, 30000);
	assert_int_equal(parse(&c, two), 0);
	assert_int_equal(c.n_dial, 2);
	assert_int_equal(c.dial[1].kind, ADDR_TCP);
	assert_true(c.listen_given);
	assert_int_equal(c.dial_backoff_max_ms, 750);
	assert_int_equal(parse(&c, no_token), -EINVAL);
	assert_int_equal(parse(&c, neither), -EINVAL);

	/* At most SIDECAR_MAX_DIALS addresses. */
	args[n++] = "--instance-token-file";
	args[n++] = "/t";
	for (int i = 0; i < SIDECAR_MAX_DIALS; i++) {
		args[n++] = "--dial";
		args[n++] = "unix:/run/gw.sock";
	}
	args[n] = NULL;
	assert_int_equal(parse(&c, args), 0);
	assert_int_equal(c.n_dial, SIDECAR_MAX_DIALS);
	args[n++] = "--dial";
	args[n++] = "unix:/run/gw.sock";
	args[n] = NULL;
	assert_int_equal(parse(&c, args), -EINVAL);
}

static void test_backoff_max_values(void **state)
{
	static const struct {
		const char *arg;
		int64_t ms; /* -1: refused */
	} cases[] = {
	    {"100ms", 100}, {"3600000ms", 3600000},
	    {"99ms", -1},   {"3600001ms", -1},
	    {"1", 1000},    {"45s", 45000},
	    {"2m", 120000}, {"1h", 3600000},
	    {"0", -1},	    {"0s", -1},
	    {"2h", -1},	    {"ms", -1},
	    {"-5s", -1},    {"1.5s", -1},
	    {" 5s", -1},    {"5x", -1},
	};
	struct sidecar_config c;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[] = {
		    "--dial", "unix:/run/gw.sock",  "--instance-token-file",
		    "/t",     "--dial-backoff-max", cases[i].arg,
		    NULL};
		int rc = parse(&c, args);

		if (cases[i].ms < 0) {
			if (rc != -EINVAL)
				fail_msg("'%s' taken", cases[i].arg);
			continue;
		}
		if (rc != 0 || c.dial_backoff_max_ms != cases[i].ms)
			fail_msg("'%s': rc %d, %lld ms", cases[i].arg, rc,
				 (long long)c.dial_backoff_max_ms);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ceilings_double_to_the_cap),
	    cmocka_unit_test(test_jitter_bounds),
	    cmocka_unit_test(test_reset_after_a_long_link),
	    cmocka_unit_test(test_cap_below_base),
	    cmocka_unit_test(test_dial_options),
	    cmocka_unit_test(test_backoff_max_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
