/* unit: sidecar */
/* sidecar/config.c and config_table.c: --default-size is COLSxROWS in
   the num grammar: digits only, each within the terminal's dimensions
   (sscanf("%ux%u") took " 80x24", "+80x24", "-1x24" and 4294967297,
   wrapped to 1). The option table: every option documented in --help and
   both manual pages, every range the table's; the config file, and the
   command line winning over it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "config_int.h"
#include "help_opttab.h"
#include "help_ranges.h"
#include "log.h"

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

static int try_option_in(void *cfg, const char *opt, const char *value)
{
	char *argv[] = {"ptygate-sidecar", "--listen",	  "unix:/tmp/ptg-unit-never.sock",
			(char *)opt,	   (char *)value, NULL};

	config_defaults(cfg);
	return config_parse(cfg, 5, argv);
}

static void test_table_documents_every_option(void **state)
{
	assert_true(help_opttab_check_documented(&config__table) >= 40);
}

static void test_ranges_come_from_the_table(void **state)
{
	struct sidecar_config *c = calloc(1, sizeof(*c));

	assert_true(help_opttab_check_ranges(&config__table, try_option_in, c) >= 20);
	free(c);
}

/* The defaults --help states are the ones the sidecar starts with. */
static void test_defaults_are_the_tables(void **state)
{
	struct sidecar_config c;

	config_defaults(&c);
	assert_int_equal(c.replay_frames, 1000);
	assert_int_equal(c.replay_bytes, 64ull << 20);
	assert_int_equal(c.default_cols, 120);
	assert_int_equal(c.default_rows, 30);
	assert_int_equal(c.dial_backoff_max_ms, 30000);
	assert_int_equal(c.fsync, FSYNC_INTERVAL);
	assert_int_equal(c.fsync_interval_ms, 100);
	assert_int_equal(c.log_level, LOG_INFO);
	assert_int_equal(c.task_max_subscribers, 64);
	assert_false(c.instance_id_given);
	assert_true(c.instance_id[0] != '\0');
}

/* Writes text to a new temporary file; returns its path (static). */
static const char *conf_file(const char *text)
{
	static char path[64];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/ptg-sccfg-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static int parse_args(struct sidecar_config *c, int argc, char **argv)
{
	config_defaults(c);
	return config_parse(c, argc, argv);
}

/* --config FILE: the same keys as the long options, applied before the
   command line, which wins; repeatable keys add up. */
static void test_config_file(void **state)
{
	struct sidecar_config *c = calloc(1, sizeof(*c));
	const char *f = conf_file("# a sidecar\n"
				  "\n"
				  "listen = unix:/tmp/ptg-unit-file.sock\n"
				  "  max-sessions=12  \n"
				  "replay-frames = 77\n"
				  "default-size = \"100x40\"\n"
				  "allow-public = true\n"
				  "dial = unix:/tmp/ptg-unit-gw1.sock\n"
				  "instance-token-file = /tmp/ptg-unit-token\n"
				  "log-level = debug\n");
	char *plain[] = {"ptygate-sidecar", "--config", (char *)f, NULL};
	char *over[] = {"ptygate-sidecar",
			"--max-sessions",
			"9",
			"--config",
			(char *)f,
			"--dial",
			"unix:/tmp/ptg-unit-gw2.sock",
			"--log-level",
			"warn",
			NULL};

	assert_int_equal(parse_args(c, 3, plain), 0);
	assert_true(c->listen_given);
	assert_string_equal(c->listen.path, "/tmp/ptg-unit-file.sock");
	assert_int_equal(c->max_sessions, 12);
	assert_int_equal(c->replay_frames, 77);
	assert_int_equal(c->default_cols, 100);
	assert_int_equal(c->default_rows, 40);
	assert_true(c->allow_public);
	assert_int_equal(c->n_dial, 1);
	assert_int_equal(c->log_level, LOG_DEBUG);

	assert_int_equal(parse_args(c, 9, over), 0);
	assert_int_equal(c->max_sessions, 9);
	assert_int_equal(c->replay_frames, 77);
	assert_int_equal(c->n_dial, 2);
	assert_string_equal(c->dial[1].path, "/tmp/ptg-unit-gw2.sock");
	assert_int_equal(c->log_level, LOG_WARN);
	unlink(f);
	free(c);
}

/* What a config file may not hold: an unknown key, a command-line-only
   option, a bad value (with the file and line), a missing file. */
static void test_config_file_refusals(void **state)
{
	static const char *const bad[] = {
	    "listen = unix:/tmp/x.sock\nnosuchkey = 1\n",
	    "listen = unix:/tmp/x.sock\nconfig = /other\n",
	    "listen = unix:/tmp/x.sock\nhelp = true\n",
	    "listen = unix:/tmp/x.sock\nexport-asciicast = s1\n",
	    "listen = unix:/tmp/x.sock\nmax-sessions = 0\n",
	    "listen = unix:/tmp/x.sock\nallow-public = yes\n",
	    "just words\n",
	};
	struct sidecar_config *c = calloc(1, sizeof(*c));
	char *none[] = {"ptygate-sidecar", "--config", "/nonexistent/ptg.conf", NULL};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *f = conf_file(bad[i]);
		char *argv[] = {"ptygate-sidecar", "--config", (char *)f, NULL};

		if (parse_args(c, 3, argv) != -EINVAL)
			fail_msg("config file '%s' was accepted", bad[i]);
		unlink(f);
	}
	assert_int_equal(parse_args(c, 3, none), -EINVAL);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_size_within_bounds),
	    cmocka_unit_test(test_default_size_refuses_loose_numbers),
	    cmocka_unit_test(test_help_states_the_parsers_ranges),
	    cmocka_unit_test(test_table_documents_every_option),
	    cmocka_unit_test(test_ranges_come_from_the_table),
	    cmocka_unit_test(test_defaults_are_the_tables),
	    cmocka_unit_test(test_config_file),
	    cmocka_unit_test(test_config_file_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
