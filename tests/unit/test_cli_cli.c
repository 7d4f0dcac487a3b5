/* unit: cli */
/* cli/cli.c: path escaping, and the target options with
   their environment fallbacks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void test_path_escape(void **state)
{
	struct buf b = BUF_INIT;

	cli_path_escape("inst-42_a.b~c", &b);
	cli_path_escape("/x y%\xc3\xa9?", &b);
	*buf_reserve(&b, 1) = '\0';
	assert_string_equal((const char *)b.data, "inst-42_a.b~c%2Fx%20y%25%C3%A9%3F");
	buf_free(&b);
}

static void clear_env(void)
{
	unsetenv("PTYGATE_GATEWAY");
	unsetenv("PTYGATE_INSTANCE");
	unsetenv("PTYGATE_TOKEN");
}

static void test_target_env_fallbacks(void **state)
{
	struct cli_target t = {0};

	clear_env();
	setenv("PTYGATE_GATEWAY", "http://gw.example:9000//", 1);
	setenv("PTYGATE_INSTANCE", "inst-env", 1);
	setenv("PTYGATE_TOKEN", " aaa.bbb.ccc\n", 1);
	assert_int_equal(cli_target_finish(&t, "test"), CLI_OK);
	assert_string_equal(t.gateway, "http://gw.example:9000");
	assert_string_equal(t.instance, "inst-env");
	assert_string_equal(t.token, "aaa.bbb.ccc");
	cli_target_clear(&t);
	assert_null(t.token);

	/* Options win over the environment. */
	memset(&t, 0, sizeof(t));
	assert_true(cli_target_option(&t, CLI_OPT_GATEWAY, "ws://127.0.0.1:1"));
	assert_true(cli_target_option(&t, CLI_OPT_INSTANCE, "inst-opt"));
	assert_true(cli_target_option(&t, CLI_OPT_TOKEN, "x.y.z"));
	assert_false(cli_target_option(&t, 'q', "nope"));
	assert_int_equal(cli_target_finish(&t, "test"), CLI_OK);
	assert_string_equal(t.gateway, "ws://127.0.0.1:1");
	assert_string_equal(t.instance, "inst-opt");
	assert_string_equal(t.token, "x.y.z");
	cli_target_clear(&t);

	/* Default gateway. */
	clear_env();
	memset(&t, 0, sizeof(t));
	t.instance = "i";
	t.token_arg = "t";
	assert_int_equal(cli_target_finish(&t, "test"), CLI_OK);
	assert_string_equal(t.gateway, CLI_DEFAULT_GATEWAY);
	cli_target_clear(&t);
	cli_target_clear(NULL);
}

static void test_target_token_file(void **state)
{
	char path[] = "/tmp/test_cli_cli.XXXXXX";
	struct cli_target t = {0};
	int fd = mkstemp(path);

	clear_env();
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "\n  hdr.pay.sig \r\n", 17), 17);
	close(fd);
	t.instance = "i";
	t.token_file = path;
	assert_int_equal(cli_target_finish(&t, "test"), CLI_OK);
	assert_string_equal(t.token, "hdr.pay.sig");
	cli_target_clear(&t);

	/* A token with a space inside would split the header: refused. */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "a b", 3), 3);
	close(fd);
	memset(&t, 0, sizeof(t));
	t.instance = "i";
	t.token_file = path;
	assert_int_equal(cli_target_finish(&t, "test"), CLI_USAGE);
	assert_null(t.token);
	cli_target_clear(&t);
	unlink(path);

	memset(&t, 0, sizeof(t));
	t.instance = "i";
	t.token_file = path; /* gone now */
	assert_int_equal(cli_target_finish(&t, "test"), CLI_FAIL);
	cli_target_clear(&t);
}

static void test_target_errors(void **state)
{
	struct cli_target t = {0};

	clear_env();
	t.token_arg = "t";
	assert_int_equal(cli_target_finish(&t, "test"), CLI_USAGE); /* no instance */
	cli_target_clear(&t);

	memset(&t, 0, sizeof(t));
	t.instance = "i";
	assert_int_equal(cli_target_finish(&t, "test"), CLI_USAGE); /* no token */
	cli_target_clear(&t);

	memset(&t, 0, sizeof(t));
	t.instance = "i";
	t.token_arg = "t";
	t.token_file = "/dev/null";
	assert_int_equal(cli_target_finish(&t, "test"), CLI_USAGE); /* both */
	cli_target_clear(&t);

	memset(&t, 0, sizeof(t));
	t.instance = "i";
	t.token_arg = "bad\ntoken";
	assert_int_equal(cli_target_finish(&t, "test"), CLI_USAGE);
	cli_target_clear(&t);

	memset(&t, 0, sizeof(t));
	t.instance = "i";
	t.token_arg = "t";
	t.gateway_arg = "no-scheme";
	assert_int_equal(cli_target_finish(&t, "test"), CLI_USAGE);
	cli_target_clear(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_path_escape),
	    cmocka_unit_test(test_target_env_fallbacks),
	    cmocka_unit_test(test_target_token_file),
	    cmocka_unit_test(test_target_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
