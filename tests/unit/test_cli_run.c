/* unit: cli */
/* cli/run.c: the command text `ptygate run` sends: one word is shell
   text, several are quoted so /bin/sh -c runs them as given; the exit
   code a finished task stands for; and the wait bounded by --timeout. */
#include "../../cli/run.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

static void check(char *const *words, int n, const char *want)
{
	struct buf b = BUF_INIT;

	run_command_text(words, n, &b);
	buf_append(&b, "", 1);
	assert_string_equal((const char *)buf_head(&b), want);
	buf_free(&b);
}

static void test_command_text(void **state)
{
	char *one[] = {"echo a; echo b"};
	char *plain[] = {"ls", "-l", "/tmp"};
	char *quoted[] = {"sh", "-c", "echo it's $HOME", ""};

	check(one, 1, "echo a; echo b");
	check(plain, 3, "ls -l /tmp");
	check(quoted, 4, "sh -c 'echo it'\\''s $HOME' ''");
}

static void test_exit_codes(void **state)
{
	json_t *t = json_pack("{s:{s:i}}", "metadata", "exit_code", 7);

	assert_int_equal(run_exit_code(t, "TASK_STATE_FAILED"), 7);
	assert_int_equal(run_exit_code(t, "TASK_STATE_CANCELED"), 130);
	json_decref(t);
	t = json_pack("{s:{s:i}}", "metadata", "signal_number", 9);
	assert_int_equal(run_exit_code(t, "TASK_STATE_FAILED"), 137);
	json_decref(t);
	t = json_pack("{s:{}}", "metadata");
	assert_int_equal(run_exit_code(t, "TASK_STATE_FAILED"), 1);
	assert_int_equal(run_exit_code(t, "TASK_STATE_COMPLETED"), 0);
	json_decref(t);
}

/* The wait has a bound, so `ptygate run` never hangs. */
static void test_wait_is_bounded(void **state)
{
	assert_int_equal(run_wait_ms(1000, 0, 0), -1); /* --timeout 0: none */
	assert_int_equal(run_wait_ms(1000, 1500, 0), 500);
	assert_int_equal(run_wait_ms(1000, 900, 0), 0);
	assert_int_equal(run_wait_ms(1000, 1000 + 3600000, 0), 60000);
	/* Once closing, the close handshake's bound rules. */
	assert_int_equal(run_wait_ms(1000, 1000 + 3600000, 3000), 2000);
	assert_int_equal(run_wait_ms(1000, 0, 1200), 200);
	assert_int_equal(run_wait_ms(5000, 0, 1200), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_command_text),
	    cmocka_unit_test(test_exit_codes),
	    cmocka_unit_test(test_wait_is_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
