/* unit: sidecar */
/* sidecar/config.c: --default-size is COLSxROWS in the num grammar:
   digits only, each within the dimensions of SPEC 5.1. sscanf("%ux%u")
   took " 80x24", "+80x24", "-1x24" and 4294967297 (wrapped to 1). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "help_ranges.h"

static int parse_size(const char *value, struct sidecar_config *c)
{
	char *argv[] = {"ptygate-sidecar", "--listen",	  "unix:/tmp/ptg-unit-never.sock",
			"--default-size",  (char *)value, NULL};

	config_defaults(c);
	return config_parse(c, 5, argv);
}

static void test_default_size_within_bounds(void **state)
{
	struct sidecar_config c;

	assert_int_equal(parse_size("80x24", &c), 0);
	assert_int_equal(c.default_cols, 80);
	assert_int_equal(c.default_rows, 24);
	assert_int_equal(parse_size("1x1", &c), 0);
	assert_int_equal(parse_size("1024x1024", &c), 0);
	assert_int_equal(c.default_cols, 1024);
	assert_int_equal(c.default_rows, 1024);
}

static void test_default_size_refuses_loose_numbers(void **state)
{
	static const char *const bad[] = {
	    "",	      "80",	 "x24",		  "80x",	   " 80x24",
	    "80x24 ", "80 x24",	 "+80x24",	  "80x+24",	   "-1x24",
	    "0x24",   "80x0",	 "1025x24",	  "80x1025",	   "80x24x2",
	    "80X24",  "0x50x24", "4294967297x24", "80x4294967297",
	};
	struct sidecar_config c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse_size(bad[i], &c) != -EINVAL)
			fail_msg("--default-size '%s' was accepted", bad[i]);
	}
}

static void show_help(void)
{
	struct sidecar_config c;
	char *argv[] = {"ptygate-sidecar", "--help", NULL};

	config_defaults(&c);
	assert_int_equal(config_parse(&c, 2, argv), 1);
}

static int try_option(const char *opt, const char *value)
{
	struct sidecar_config c;
	char *argv[] = {"ptygate-sidecar", "--listen",	  "unix:/tmp/ptg-unit-never.sock",
			(char *)opt,	   (char *)value, NULL};

	config_defaults(&c);
	return config_parse(&c, 5, argv);
}

/* Every "LO-HI" and "(DEFAULT)" --help states is what the parser holds. */
static void test_help_states_the_parsers_ranges(void **state)
{
	char *text = help_capture(show_help);

	assert_non_null(text);
	assert_non_null(strstr(text, "--task-max-running N"));
	assert_true(help_check_ranges(text, try_option) >= 20);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_size_within_bounds),
	    cmocka_unit_test(test_default_size_refuses_loose_numbers),
	    cmocka_unit_test(test_help_states_the_parsers_ranges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
