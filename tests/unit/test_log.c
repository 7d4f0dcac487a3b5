/* unit: gateway */
/* log: the JSON line (it parses, whatever bytes the message and context
   hold; its fields, the context's key=value words among them), the text
   line's control characters replaced, the journald priority prefixes and
   JOURNAL_STREAM matched against the fd's device and inode. Linked with
   the gateway's library for jansson, which parses the lines. */
#include "../../shared/log.c"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

/* ---- what the test reads of log.c, which it includes ---- */

static void log_set_journal(bool on)
{
	journal = on;
}

static char line[LOG_LINE_MAX * 6 + 512];

static json_t *json_line(enum log_level lvl, const char *ctx, const char *msg)
{
	size_t n = log_format_line(line, sizeof(line), lvl, ctx, msg);
	json_error_t err;
	json_t *j;

	assert_true(n > 2);
	assert_int_equal(line[n - 1], '\n');
	assert_null(memchr(line, '\n', n - 1));
	j = json_loadb(line, n, 0, &err);
	if (!j)
		fail_msg("not JSON (%s): %.*s", err.text, (int)n, line);
	return j;
}

static const char *field(json_t *j, const char *key)
{
	return json_string_value(json_object_get(j, key));
}

static int setup_json(void **state)
{
	(void)state;
	log_set_format(LOG_FORMAT_JSON);
	log_set_journal(false);
	log_set_ident("ptygate-gateway");
	return 0;
}

static void test_json_fields(void **state)
{
	json_t *j;

	(void)state;
	j = json_line(
	    LOG_WARN,
	    "conn=7 instance=vm-1 session=s1 principal=alice client=web trace=abc",
	    "request refused");
	assert_string_equal(field(j, "level"), "warn");
	assert_string_equal(field(j, "ident"), "ptygate-gateway");
	assert_string_equal(field(j, "msg"), "request refused");
	assert_string_equal(field(j, "conn"), "7");
	assert_string_equal(field(j, "instance"), "vm-1");
	assert_string_equal(field(j, "session"), "s1");
	assert_string_equal(field(j, "principal"), "alice");
	assert_string_equal(field(j, "client"), "web");
	assert_string_equal(field(j, "trace"), "abc");
	assert_null(json_object_get(j, "ctx"));
	assert_int_equal(strlen(field(j, "ts")), 24);
	json_decref(j);

	j = json_line(LOG_WARN, "http addr=::1", "refused");
	assert_string_equal(field(j, "addr"), "::1");
	assert_string_equal(field(j, "ctx"), "http");
	json_decref(j);

	/* Words that are not fields stay together as "ctx". */
	j = json_line(LOG_INFO, "http other=1 trace=t9", "m");
	assert_string_equal(field(j, "ctx"), "http other=1");
	assert_string_equal(field(j, "trace"), "t9");
	assert_string_equal(field(j, "level"), "info");
	json_decref(j);

	j = json_line(LOG_ERROR, NULL, "no context");
	assert_null(json_object_get(j, "ctx"));
	assert_string_equal(field(j, "level"), "error");
	json_decref(j);
}

static void test_json_escapes_every_byte(void **state)
{
	char msg[300], ctx[300];
	json_t *j;
	int b;

	(void)state;
	for (b = 1; b < 256; b++) {
		msg[b - 1] = (char)b;
		ctx[b - 1] = (char)(b == ' ' ? 'x' : b);
	}
	msg[255] = ctx[255] = '\0';
	j = json_line(LOG_INFO, ctx, msg);
	/* ASCII comes back as it was; the bytes past it are not UTF-8 alone. */
	assert_memory_equal(field(j, "msg"), msg, 127);
	assert_non_null(strstr(field(j, "msg"), "\xef\xbf\xbd"));
	json_decref(j);

	/* Valid UTF-8 is kept, a truncated sequence replaced. */
	j = json_line(LOG_INFO, "session=\xc3\xa9t\xc3",
		      "caf\xc3\xa9 \"q\" \\ \n\r\t\x1b[2J");
	assert_string_equal(field(j, "session"), "\xc3\xa9t\xef\xbf\xbd");
	assert_string_equal(field(j, "msg"), "caf\xc3\xa9 \"q\" \\ \n\r\t\x1b[2J");
	json_decref(j);
}

static void test_json_cut_stays_json(void **state)
{
	static char big[LOG_LINE_MAX];
	size_t cap;
	json_t *j;

	(void)state;
	memset(big, '"', sizeof(big) - 1);
	for (cap = 256; cap < 2048; cap += 37) {
		size_t n = log_format_line(line, cap, LOG_INFO, "trace=\"\"\"\"", big);

		assert_true(n <= cap);
		j = json_loadb(line, n, 0, NULL);
		assert_non_null(j);
		json_decref(j);
	}
	j = json_line(LOG_INFO, NULL, big);
	assert_int_equal(strlen(field(j, "msg")), sizeof(big) - 1);
	json_decref(j);
}

static void test_text_line(void **state)
{
	size_t n;

	(void)state;
	log_set_format(LOG_FORMAT_TEXT);
	n = log_format_line(line, sizeof(line), LOG_INFO, "conn=1", "a\nb\x1b");
	line[n] = '\0';
	assert_non_null(strstr(line, " INFO ptygate-gateway [conn=1] a?b?\n"));
	assert_null(strchr(line, '\x1b'));
	assert_int_equal(line[0], '2');
	log_set_format(LOG_FORMAT_JSON);
}

static void test_journal_prefixes(void **state)
{
	static const struct {
		enum log_level lvl;
		const char *prefix;
	} want[] = {
	    {LOG_DEBUG, "<7>"}, {LOG_INFO, "<6>"}, {LOG_WARN, "<4>"}, {LOG_ERROR, "<3>"}};
	size_t i;
	json_t *j;

	(void)state;
	log_set_journal(true);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		log_set_format(LOG_FORMAT_TEXT);
		log_format_line(line, sizeof(line), want[i].lvl, NULL, "m");
		assert_memory_equal(line, want[i].prefix, 3);
		assert_int_equal(line[3], '2');
		log_set_format(LOG_FORMAT_JSON);
		log_format_line(line, sizeof(line), want[i].lvl, NULL, "m");
		assert_memory_equal(line, want[i].prefix, 3);
		j = json_loads(line + 3, JSON_DISABLE_EOF_CHECK, NULL);
		assert_non_null(j);
		json_decref(j);
	}
	log_set_journal(false);
	log_format_line(line, sizeof(line), LOG_INFO, NULL, "m");
	assert_int_equal(line[0], '{');
}

static void test_journal_stream_match(void **state)
{
	char path[] = "/tmp/ptg-test-log-XXXXXX", env[64], other[64];
	struct stat st;
	int fd, fd2;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	fd2 = open("/dev/null", O_WRONLY);
	assert_true(fd2 >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	snprintf(other, sizeof(other), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino + 1);
	assert_true(log_journal_matches(env, fd));
	assert_false(log_journal_matches(env, fd2));
	assert_false(log_journal_matches(other, fd));
	assert_false(log_journal_matches(NULL, fd));
	assert_false(log_journal_matches("", fd));
	strcat(env, "x");
	assert_false(log_journal_matches(env, fd));
	close(fd);
	close(fd2);
}

static void test_format_parse(void **state)
{
	enum log_format f = LOG_FORMAT_TEXT;

	(void)state;
	assert_int_equal(log_format_parse("json", &f), 0);
	assert_int_equal(f, LOG_FORMAT_JSON);
	assert_int_equal(log_format_parse("text", &f), 0);
	assert_int_equal(f, LOG_FORMAT_TEXT);
	assert_int_equal(log_format_parse("JSON", &f), -22);
	assert_int_equal(log_format_parse("", &f), -22);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_json_fields),
	    cmocka_unit_test(test_json_escapes_every_byte),
	    cmocka_unit_test(test_json_cut_stays_json),
	    cmocka_unit_test(test_text_line),
	    cmocka_unit_test(test_journal_prefixes),
	    cmocka_unit_test(test_journal_stream_match),
	    cmocka_unit_test(test_format_parse),
	};

	return cmocka_run_group_tests(tests, setup_json, NULL);
}
