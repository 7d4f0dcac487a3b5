/* unit: cli */
/* cli/cli.c: path escaping, the target options with their environment
   fallbacks, and the sanitiser of network text (cli_clean) with the
   printers built on it (cli_error, cli_print, cli_print_json). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

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

static char *clean(const char *s, size_t n)
{
	static char out[512];
	struct buf b = BUF_INIT;

	cli_clean(s, n, &b);
	assert_true(buf_size(&b) < sizeof(out));
	memcpy(out, buf_head(&b), buf_size(&b));
	out[buf_size(&b)] = '\0';
	buf_free(&b);
	return out;
}

/* A literal, NULs inside included. */
#define CLEAN(lit) clean(lit, sizeof(lit) - 1)

static void test_clean(void **state)
{
	(void)state;
	/* What a hostile 403 body held: a window title, a screen clear. */
	assert_string_equal(CLEAN("\033]0;pwned\007\033[2J"),
			    "\\x1b]0;pwned\\x07\\x1b[2J");
	assert_string_equal(CLEAN("a\tb\nc\rd\x7f"), "a\\x09b\\x0ac\\x0dd\\x7f");
	/* C1: CSI (U+009B) and OSC (U+009D) as UTF-8, and as raw bytes. */
	assert_string_equal(clean("\xc2\x9b"
				  "2J\xc2\x9d"
				  "0;x",
				  9),
			    "\\u009b2J\\u009d0;x");
	assert_string_equal(clean("\x9b"
				  "2J",
				  3),
			    "\\x9b2J");
	/* Printable UTF-8 stays: U+00A0 and up, CJK, an emoji. */
	assert_string_equal(CLEAN("caf\xc3\xa9 \xc2\xa0\xe6\x97\xa5\xf0\x9f\x98\x80"),
			    "caf\xc3\xa9 \xc2\xa0\xe6\x97\xa5\xf0\x9f\x98\x80");
	/* Invalid UTF-8: a truncated sequence, an overlong one, a NUL. */
	assert_string_equal(CLEAN("x\xe6\x97"), "x\\xe6\\x97");
	assert_string_equal(CLEAN("\xc0\x9b"), "\\xc0\\x9b");
	assert_string_equal(CLEAN("a\0b"), "a\\x00b");
	assert_string_equal(CLEAN(""), "");
}

/* Runs fn with stderr (or stdout) into a pipe; returns what it wrote. */
static char *capture(int fd, void (*fn)(void))
{
	static char out[1024];
	int p[2], saved = dup(fd);
	ssize_t n;

	assert_int_equal(pipe(p), 0);
	fflush(NULL);
	assert_true(dup2(p[1], fd) >= 0);
	close(p[1]);
	fn();
	fflush(NULL);
	assert_true(dup2(saved, fd) >= 0);
	close(saved);
	n = read(p[0], out, sizeof(out) - 1);
	close(p[0]);
	assert_true(n >= 0);
	out[n] = '\0';
	return out;
}

static void error_with_escapes(void)
{
	cli_error("the gateway refused the attach: HTTP 403 %s",
		  "\033]0;pwned\007\033[2J\xc2\x9b");
}

static void print_with_escapes(void)
{
	cli_print(stdout, "\r\n", "%s: %s", "label", "a\033[31mred\nline");
	cli_print_json(stdout, "{\n  \"a\": \"x\x7fy\\u001b\"\n}");
}

static void test_printers_clean(void **state)
{
	(void)state;
	assert_string_equal(capture(STDERR_FILENO, error_with_escapes),
			    "ptygate: the gateway refused the attach: HTTP 403 "
			    "\\x1b]0;pwned\\x07\\x1b[2J\\u009b\n");
	assert_string_equal(capture(STDOUT_FILENO, print_with_escapes),
			    "label: a\\x1b[31mred\\x0aline\r\n"
			    "{\n  \"a\": \"x\\u007fy\\u001b\"\n}");
}

static const struct option test_opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"quiet", no_argument, NULL, 'q'},
    {"session", required_argument, NULL, 's'},
    {NULL, 0, NULL, 0},
};

/* Parses argv (NULL-terminated) with cli_getopt; the options seen go to
   seen as "q", "o=VALUE", ... joined by ' ', the operands to ops. Returns
   the first error getopt reported ('?' or ':'), else 0. */
static int parse_line(char **argv, char *seen, size_t n, struct cli_operands *ops)
{
	int argc = 0, c;

	while (argv[argc])
		argc++;
	seen[0] = '\0';
	cli_getopt_reset();
	while ((c = cli_getopt(argc, argv, "qo:", test_opts, ops)) != -1) {
		if (c == '?' || c == ':')
			return c;
		snprintf(seen + strlen(seen), n - strlen(seen), "%s%c%s%s",
			 seen[0] ? " " : "", c, optarg ? "=" : "", optarg ? optarg : "");
	}
	return 0;
}

/* Options anywhere ("sessions get ID -o json" too),
   clusters of short options, "--" ending the options. */
static void test_getopt_options_anywhere(void **state)
{
	char a0[] = "get", a1[] = "ID", a2[] = "-o", a3[] = "json", a4[] = "--quiet",
	     a5[] = "more", a6[] = "-qo", a7[] = "text", a8[] = "--", a9[] = "-o",
	     a10[] = "-", a11[] = "--session=S";
	char *line1[] = {a0, a1, a2, a3, a4, a5, NULL};
	char *line2[] = {a0, a6, a7, a1, a11, a8, a9, a4, NULL};
	char *line3[] = {a0, a10, a4, NULL};
	struct cli_operands ops = {0};
	char seen[128];

	assert_int_equal(parse_line(line1, seen, sizeof(seen), &ops), 0);
	assert_string_equal(seen, "o=json q");
	assert_int_equal(ops.n, 2);
	assert_string_equal(ops.v[0], "ID");
	assert_string_equal(ops.v[1], "more");
	assert_int_equal(ops.dashdash, -1);
	assert_string_equal(line1[1], "ID"); /* argv is not reordered */
	cli_operands_free(&ops);

	assert_int_equal(parse_line(line2, seen, sizeof(seen), &ops), 0);
	assert_string_equal(seen, "q o=text s=S");
	assert_int_equal(ops.n, 3);
	assert_string_equal(ops.v[0], "ID");
	assert_int_equal(ops.dashdash, 1);
	assert_string_equal(ops.v[1], "-o"); /* after "--": an operand */
	assert_string_equal(ops.v[2], "--quiet");
	cli_operands_free(&ops);

	assert_int_equal(parse_line(line3, seen, sizeof(seen), &ops), 0);
	assert_string_equal(seen, "q");
	assert_int_equal(ops.n, 1);
	assert_string_equal(ops.v[0], "-"); /* stdin, by convention: an operand */
	cli_operands_free(&ops);
}

static void test_getopt_errors(void **state)
{
	char a0[] = "get", a1[] = "ID", a2[] = "--bogus", a3[] = "-o";
	char *unknown[] = {a0, a1, a2, NULL};
	char *missing[] = {a0, a1, a3, NULL};
	struct cli_operands ops = {0};
	char seen[64];

	assert_int_equal(parse_line(unknown, seen, sizeof(seen), &ops), '?');
	assert_string_equal(unknown[optind - 1], "--bogus");
	cli_operands_free(&ops);
	assert_int_equal(parse_line(missing, seen, sizeof(seen), &ops), ':');
	cli_operands_free(&ops);
}

static void test_shell_quote(void **state)
{
	struct buf b = BUF_INIT;
	const char *words[] = {"/bin/sh", "-c", "echo 'a b'; x", "", "k=v,w@h:1%"};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (i)
			buf_append_str(&b, " ");
		cli_shell_quote(words[i], &b);
	}
	*buf_reserve(&b, 1) = '\0';
	assert_string_equal((const char *)b.data,
			    "/bin/sh -c 'echo '\\''a b'\\''; x' '' k=v,w@h:1%");
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_path_escape),
	    cmocka_unit_test(test_getopt_options_anywhere),
	    cmocka_unit_test(test_getopt_errors),
	    cmocka_unit_test(test_shell_quote),
	    cmocka_unit_test(test_clean),
	    cmocka_unit_test(test_printers_clean),
	    cmocka_unit_test(test_target_env_fallbacks),
	    cmocka_unit_test(test_target_token_file),
	    cmocka_unit_test(test_target_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
