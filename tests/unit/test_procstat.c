/* unit: shared */
/* procstat: /proc/PID/stat lines (a command holding spaces and
   parentheses, short and malformed lines), /proc/stat's btime, and the
   live process read back against what this test knows of itself. */
#include "../../shared/procstat.c"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* Fields 3 to 24 after the command: utime 250, stime 50, starttime 1000
   ticks, vsize 123456789, rss 300 pages. */
#define TAIL                                                                             \
	"S 1 1 1 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 1000 123456789 300 "         \
	"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"

static void test_parse(void **state)
{
	struct procstat p = {0};

	assert_int_equal(procstat_parse("4242 (gw) " TAIL, 100, 4096, 1700000000, &p), 0);
	assert_int_equal(p.cpu_ms, 3000);
	assert_int_equal(p.rss_bytes, 300 * 4096);
	assert_int_equal(p.vsize_bytes, 123456789);
	assert_int_equal(p.start_time_ms, 1700000000LL * 1000 + 10000);
}

/* The command is the process's own choice: ") S 9 9" inside it must not
   move the fields. */
static void test_parse_hostile_command(void **state)
{
	struct procstat p = {0};

	assert_int_equal(procstat_parse("7 (a) S 9 9 (b) " TAIL, 100, 4096, 0, &p), 0);
	assert_int_equal(p.cpu_ms, 3000);
	assert_int_equal(p.rss_bytes, 300 * 4096);
}

static void test_parse_refusals(void **state)
{
	struct procstat p = {0};

	assert_int_equal(procstat_parse("", 100, 4096, 0, &p), -EINVAL);
	assert_int_equal(procstat_parse("1 (x)", 100, 4096, 0, &p), -EINVAL);
	assert_int_equal(procstat_parse("1 (x) S 1 1 1", 100, 4096, 0, &p), -EINVAL);
	assert_int_equal(procstat_parse("1 (x) " TAIL, 0, 4096, 0, &p), -EINVAL);
	/* a field that is no number */
	assert_int_equal(procstat_parse("1 (x) S 1 1 1 0 -1 4194560 100 0 0 0 2x5 50 0 0 "
					"20 0 1 0 1000 1 3",
					100, 4096, 0, &p),
			 -EINVAL);
}

static void test_btime(void **state)
{
	int64_t b = 0;

	assert_int_equal(procstat_parse_btime("cpu  1 2 3\nintr 5 6\nbtime 1764790000\n"
					      "processes 9\n",
					      &b),
			 0);
	assert_int_equal(b, 1764790000);
	assert_int_equal(procstat_parse_btime("btime 12", &b), 0);
	assert_int_equal(b, 12);
	assert_int_equal(procstat_parse_btime("cpu 1\nxbtime 5\n", &b), -EINVAL);
	assert_int_equal(procstat_parse_btime("btime x\n", &b), -EINVAL);
	assert_int_equal(procstat_parse_btime("", &b), -EINVAL);
}

/* The live read: figures within what this process can check itself. */
static void test_read_self(void **state)
{
	struct procstat p;
	struct rlimit rl;
	int64_t now_ms = (int64_t)time(NULL) * 1000;
	int fd = dup(0);

	assert_int_equal(procstat_read(&p), 0);
	assert_true(p.rss_bytes > 0);
	assert_true(p.vsize_bytes >= p.rss_bytes);
	assert_true(p.start_time_ms > 1000000000000LL &&
		    p.start_time_ms <= now_ms + 2000);
	assert_true(p.open_fds >= 4); /* stdin, stdout, stderr, the dup */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_int_equal(p.max_fds, rl.rlim_cur);
	if (fd >= 0) {
		uint64_t before = p.open_fds;

		close(fd);
		assert_int_equal(procstat_read(&p), 0);
		assert_int_equal(p.open_fds, before - 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_parse_hostile_command),
	    cmocka_unit_test(test_parse_refusals),
	    cmocka_unit_test(test_btime),
	    cmocka_unit_test(test_read_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
