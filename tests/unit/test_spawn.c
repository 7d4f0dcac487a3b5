/* unit: sidecar */
/* test_spawn: starting a session's program leaves the sidecar's memory
   as it was (no copy-on-write after a fork: every later write to a page
   faulted once), the program gets its terminal as controlling terminal,
   its environment and nothing else of ours, and a program that cannot
   start fails the request with the reason. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "fdio.h"
#include "log.h"
#include "spawn.h"
#include "tty.h"

/* Keeps the compiler from dropping writes to memory nothing reads. */
static void touch(char *mem, int c, size_t size)
{
	memset(mem, c, size);
	__asm__ volatile("" : : "r"(mem) : "memory");
}

static long minor_faults(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

/* Everything the program writes, until its side of the PTY closes. */
static void read_all(int master, struct buf *out)
{
	struct timespec t0, t;
	char b[4096];

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = {.fd = master, .events = POLLIN};
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &t);
		assert_true(t.tv_sec - t0.tv_sec < 10);
		poll(&p, 1, 100);
		n = read(master, b, sizeof(b));
		if (n > 0)
			buf_append(out, b, (size_t)n);
		else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return;
	}
}

static int run(char *const argv[], char *const env[], const char *cwd, struct buf *out,
	       int *status, char *err, size_t errlen)
{
	struct tty_spec spec = {
	    .argv = argv, .cwd = cwd, .env_extra = env, .cols = 80, .rows = 24};
	int master, rc;
	pid_t pid;

	rc = tty_spawn(&spec, &master, &pid, err, errlen);
	if (rc < 0)
		return rc;
	read_all(master, out);
	close(master);
	assert_int_equal(waitpid(pid, status, 0), pid);
	return 0;
}

/* The bug: forkpty() made every page of the sidecar copy-on-write, so
   after each new session the loop's next write to each page of every
   ring and screen faulted (16,384 faults for 64 MiB, and a fork that
   copied the page tables took 35 ms with 1 GiB resident). */
static void test_spawning_leaves_our_memory_writable(void **state)
{
	const size_t size = 32u << 20;
	char *mem = malloc(size), err[LOG_ERR_MAX];
	char *argv[] = {"true", NULL};
	struct buf out = BUF_INIT;
	long before;
	int status;

	(void)state;
	touch(mem, 1, size);
	assert_int_equal(run(argv, NULL, NULL, &out, &status, err, sizeof(err)), 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	before = minor_faults();
	touch(mem, 2, size);
	/* 8,192 pages: after a fork each would fault once. */
	assert_true(minor_faults() - before < 256);
	free(mem);
	buf_free(&out);
}

static void test_the_program_gets_its_terminal_and_environment(void **state)
{
	static char foo[] = "PTG_SPAWN_TEST=yes", term[] = "TERM=vt220";
	char *env[] = {foo, term, NULL};
	char *argv[] = {
	    "sh", "-c",
	    "tty; echo \"$PTG_SPAWN_TEST $TERM\"; "
	    "test -t 0 && echo ctty-ok </dev/tty; ls /proc/self/fd | wc -l; pwd",
	    NULL};
	struct buf out = BUF_INIT;
	char err[LOG_ERR_MAX];
	int status;

	(void)state;
	assert_int_equal(run(argv, env, "/tmp", &out, &status, err, sizeof(err)), 0);
	buf_append(&out, "", 1);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_non_null(strstr((char *)buf_head(&out), "/dev/pts/"));
	assert_non_null(strstr((char *)buf_head(&out), "yes vt220"));
	assert_non_null(strstr((char *)buf_head(&out), "ctty-ok"));
	/* 0, 1, 2 and the directory ls reads: nothing of ours. */
	assert_non_null(strstr((char *)buf_head(&out), "\r\n4\r\n"));
	assert_non_null(strstr((char *)buf_head(&out), "\r\n/tmp\r\n"));
	buf_free(&out);
}

/* A task takes the program's environment from /proc/PID/environ, which
   the kernel fills a moment after vfork returns: read at once, it was
   empty most times, and a task started right after the session ran
   without the session's variables. */
#define SPAWN_ROUNDS 400

static void test_the_environment_reads_as_soon_as_spawned(void **state)
{
	static char var[] = "PTG_SPAWN_ENV=from-the-session";
	char *env[] = {var, NULL};
	char *argv[] = {"sleep", "30", NULL};
	struct tty_spec spec = {.argv = argv, .env_extra = env, .cols = 80, .rows = 24};
	char err[LOG_ERR_MAX], path[64];
	struct buf b = BUF_INIT;
	int master, status;
	pid_t pid;

	(void)state;
	/* Each round the read comes right after the spawn; without the wait
	   a few rounds in a hundred found it empty, so some round of these
	   does, all but surely. */
	for (int i = 0; i < SPAWN_ROUNDS; i++) {
		assert_int_equal(tty_spawn(&spec, &master, &pid, err, sizeof(err)), 0);
		snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
		buf_reset(&b);
		assert_int_equal(fd_read_file(path, 0, 1 << 20, &b, NULL, 0), 0);
		buf_append(&b, "", 1);
		assert_true(memmem(buf_head(&b), buf_size(&b), var, sizeof(var)) != NULL);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		close(master);
	}
	buf_free(&b);
}

static void test_a_program_that_cannot_start_fails_the_request(void **state)
{
	char *missing[] = {"ptg-no-such-program", NULL};
	char path[] = "/tmp/ptg-spawn-XXXXXX";
	char *denied[] = {path, NULL};
	char *sh[] = {"sh", "-c", "true", NULL};
	struct buf out = BUF_INIT;
	char err[LOG_ERR_MAX];
	int status;

	(void)state;
	close(mkstemp(path)); /* mode 0600: not executable */
	assert_int_equal(run(missing, NULL, NULL, &out, &status, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "exec ptg-no-such-program"));
	assert_int_equal(run(denied, NULL, NULL, &out, &status, err, sizeof(err)),
			 -EACCES);
	assert_non_null(strstr(err, "exec /tmp/ptg-spawn-"));
	unlink(path);
	assert_int_equal(
	    run(sh, NULL, "/ptg-no-such-dir", &out, &status, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "chdir /ptg-no-such-dir"));
	/* Each failed child was reaped. */
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	buf_free(&out);
}

static void test_environment_and_path_lookup(void **state)
{
	static char a[] = "A=1", b[] = "B=2", a2[] = "A=3", c[] = "C=4";
	char *base[] = {a, b, NULL}, *set[] = {a2, c, NULL};
	char **env = spawn_env(base, set), **paths;

	(void)state;
	assert_string_equal(spawn_getenv(env, "A"), "3");
	assert_string_equal(spawn_getenv(env, "B"), "2");
	assert_string_equal(spawn_getenv(env, "C"), "4");
	assert_null(spawn_getenv(env, "D"));
	assert_null(env[3]);
	free(env);
	paths = spawn_candidates("sh", "/ptg-nothing:/bin::/ptg-nothing");
	assert_string_equal(paths[0], "/bin/sh");
	assert_null(paths[1]);
	free(paths);
	paths = spawn_candidates("./x", "/bin");
	assert_string_equal(paths[0], "./x");
	assert_null(paths[1]);
	free(paths);
	assert_null(spawn_candidates("ptg-no-such-program", "/bin:/usr/bin"));
	assert_null(spawn_candidates("", "/bin"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_spawning_leaves_our_memory_writable),
	    cmocka_unit_test(test_the_program_gets_its_terminal_and_environment),
	    cmocka_unit_test(test_the_environment_reads_as_soon_as_spawned),
	    cmocka_unit_test(test_a_program_that_cannot_start_fails_the_request),
	    cmocka_unit_test(test_environment_and_path_lookup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
