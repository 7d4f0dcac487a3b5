/* unit: shared */
/* fdio: whole-file reads (bounded, EINTR-safe, with a reason naming the
   file, and nothing left in the buffer on failure), whole writes, and
   mkdir -p. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fdio.h"
#include "log.h"

struct dir {
	char path[64];
};

static int setup(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));

	snprintf(d->path, sizeof(d->path), "/tmp/ptg-fdio-XXXXXX");
	if (!mkdtemp(d->path))
		return -1;
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct dir *d = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
	if (system(cmd) != 0)
		return -1;
	free(d);
	return 0;
}

static void put_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(fd_write_all(fd, text, strlen(text)), 0);
	assert_int_equal(close(fd), 0);
}

/* One read each: from a regular file, a pipe (no size to trust: the cap
   is applied to what is read) or a symbolic link, of text under a cap.
   Bytes already in the buffer stay in front; a failure leaves exactly
   them and names the file. */
enum source { REGULAR, PIPE, SYMLINK };

static const struct read_case {
	const char *what;
	enum source from;
	const char *text;
	size_t max;
	unsigned flags;
	int rc;
	const char *why; /* in err on failure */
} read_cases[] = {
    {"file of max bytes", REGULAR, "hello world", 11, FDIO_REGULAR, 0, NULL},
    {"empty file", REGULAR, "", 0, FDIO_REGULAR, 0, NULL},
    {"file over max", REGULAR, "0123456789", 9, 0, -EFBIG, "larger than 9 bytes"},
    {"file of max exactly", REGULAR, "0123456789", 10, 0, 0, NULL},
    {"pipe of max bytes", PIPE, "abcdef", 6, 0, 0, NULL},
    {"pipe over max", PIPE, "abcdefg", 6, 0, -EFBIG, "larger than 6 bytes"},
    {"link followed", SYMLINK, "target", 100, FDIO_REGULAR, 0, NULL},
    {"link refused", SYMLINK, "target", 100, FDIO_NOFOLLOW, -ELOOP, "symbolic links"},
};

/* Makes the source of c under dir; returns the path to read. A pipe's
   read end is left in *pipe_fd to close after. */
static void make_source(const struct read_case *c, const char *dir, char *path,
			size_t cap, int *pipe_fd)
{
	char target[128];
	int p[2];

	*pipe_fd = -1;
	if (c->from == PIPE) {
		assert_int_equal(pipe(p), 0);
		assert_int_equal(fd_write_all(p[1], c->text, strlen(c->text)), 0);
		close(p[1]);
		*pipe_fd = p[0];
		snprintf(path, cap, "/proc/self/fd/%d", p[0]);
		return;
	}
	snprintf(path, cap, "%s/f", dir);
	unlink(path);
	if (c->from == REGULAR) {
		put_file(path, c->text);
		return;
	}
	snprintf(target, sizeof(target), "%s/target", dir);
	put_file(target, c->text);
	assert_int_equal(symlink(target, path), 0);
}

static void test_read_cases(void **state)
{
	struct dir *d = *state;

	for (size_t i = 0; i < sizeof(read_cases) / sizeof(read_cases[0]); i++) {
		const struct read_case *c = &read_cases[i];
		size_t n = c->rc == 0 ? strlen(c->text) : 0;
		struct buf b = BUF_INIT;
		char path[128], err[LOG_ERR_MAX] = "";
		int pipe_fd, rc;

		print_message("%s\n", c->what);
		make_source(c, d->path, path, sizeof(path), &pipe_fd);
		buf_append_str(&b, "keep");
		rc = fd_read_file(path, c->flags, c->max, &b, err, sizeof(err));
		if (pipe_fd >= 0)
			close(pipe_fd);
		assert_int_equal(rc, c->rc);
		assert_int_equal(buf_size(&b), 4 + n);
		assert_memory_equal(buf_head(&b), "keep", 4);
		assert_memory_equal(buf_head(&b) + 4, c->text, n);
		if (c->why) {
			assert_non_null(strstr(err, path));
			assert_non_null(strstr(err, c->why));
		}
		buf_free(&b);
	}
}

/* A regular file is read into the room its size asks for, with a byte to
   spare for a NUL: no larger buffer is grown past it, which would leave a
   copy of a secret behind in freed memory. */
static void test_regular_file_in_one_allocation(void **state)
{
	struct dir *d = *state;
	struct buf b = BUF_INIT;
	char path[128], text[101];
	uint8_t *data;

	snprintf(path, sizeof(path), "%s/key", d->path);
	memset(text, 'k', 100);
	text[100] = '\0';
	put_file(path, text);
	assert_int_equal(fd_read_file(path, FDIO_REGULAR, 65536, &b, NULL, 0), 0);
	assert_int_equal(buf_size(&b), 100);
	assert_true(b.cap - b.len >= 1);
	assert_true(b.cap <= 2 * 101);
	data = b.data;
	assert_ptr_equal(buf_steal(&b, NULL), data);
	free(data);
}

/* A buffer partly consumed and full, whose content a read moves to the
   start of its storage: a failed read leaves exactly that content. */
static void test_failure_keeps_moved_content(void **state)
{
	struct buf b = BUF_INIT;
	char path[64], fill[65];
	int p[2];

	(void)state;
	memset(fill, 'x', 60);
	memcpy(fill + 60, "keep", 5);
	buf_append_str(&b, fill);
	assert_int_equal(b.cap, 64);
	buf_consume(&b, 60);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(fd_write_all(p[1], "0123456789", 10), 0);
	close(p[1]);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[0]);
	assert_int_equal(fd_read_file(path, 0, 9, &b, NULL, 0), -EFBIG);
	close(p[0]);
	assert_int_equal(buf_size(&b), 4);
	assert_memory_equal(buf_head(&b), "keep", 4);
	buf_free(&b);
}

static void test_missing_file_names_itself(void **state)
{
	struct dir *d = *state;
	struct buf b = BUF_INIT;
	char path[128], err[LOG_ERR_MAX] = "";

	snprintf(path, sizeof(path), "%s/none", d->path);
	assert_int_equal(fd_read_file(path, 0, 100, &b, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, strerror(ENOENT)));
	assert_int_equal(buf_size(&b), 0);
	assert_int_equal(fd_read_file(d->path, FDIO_REGULAR, 100, &b, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "not a regular file"));
}

/* A FIFO with no writer: refused at once under FDIO_REGULAR, where a
   plain open for reading would wait for a writer for ever. */
static void test_regular_refuses_fifo_without_blocking(void **state)
{
	struct dir *d = *state;
	struct buf b = BUF_INIT;
	char path[128], err[LOG_ERR_MAX] = "";

	snprintf(path, sizeof(path), "%s/fifo", d->path);
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(5); /* a hang fails the test instead of stalling it */
	assert_int_equal(fd_read_file(path, FDIO_REGULAR, 100, &b, err, sizeof(err)),
			 -EINVAL);
	alarm(0);
	assert_non_null(strstr(err, "not a regular file"));
}

static volatile sig_atomic_t ticks;
static int tick_pipe[2]; /* a byte per tick, for the writer to count */

static void on_tick(int sig)
{
	int saved = errno;

	(void)sig;
	ticks++;
	if (write(tick_pipe[1], "t", 1) < 0) {
		/* full: the writer has what it waits for */
	}
	errno = saved;
}

/* The FIFO's writer: opens it, then writes only after three more of the
   reader's signals (EINTRs of its read), so the read is interrupted
   however the machine schedules the two processes. 60 s: a reader that
   never gets a signal fails the test, it does not hang it. */
static void write_after_three_ticks(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), seen = 0;
	struct pollfd p = {.fd = tick_pipe[0], .events = POLLIN};
	char t;

	close(tick_pipe[1]);
	/* Ticks before the open came while the reader waited in its open. */
	while (read(tick_pipe[0], &t, 1) == 1)
		;
	while (seen < 3 && poll(&p, 1, 60000) == 1 && read(tick_pipe[0], &t, 1) == 1)
		seen++;
	_exit(fd >= 0 && seen == 3 && fd_write_all(fd, "late", 4) == 0 ? 0 : 1);
}

/* Signals arrive (without SA_RESTART) while the read waits on a FIFO
   whose writer is slow: every EINTR is retried and the whole content
   comes back. */
static void test_read_survives_eintr(void **state)
{
	struct dir *d = *state;
	struct sigaction sa = {.sa_handler = on_tick}, old;
	struct itimerval tick = {{0, 10000}, {0, 10000}}, off = {{0, 0}, {0, 0}};
	struct buf b = BUF_INIT;
	char path[128], err[LOG_ERR_MAX] = "";
	pid_t pid;
	int status, rc;

	snprintf(path, sizeof(path), "%s/slow", d->path);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(pipe2(tick_pipe, O_CLOEXEC | O_NONBLOCK), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		write_after_three_ticks(path);
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	ticks = 0;
	assert_int_equal(setitimer(ITIMER_REAL, &tick, NULL), 0);
	rc = fd_read_file(path, 0, 100, &b, err, sizeof(err));
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	/* Open until the last tick: a tick into a pipe without a reader
	   would raise SIGPIPE. */
	close(tick_pipe[0]);
	close(tick_pipe[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(rc, 0);
	assert_true(ticks > 2);
	assert_int_equal(buf_size(&b), 4);
	assert_memory_equal(buf_head(&b), "late", 4);
	buf_free(&b);
}

static void test_mkdir_p(void **state)
{
	struct dir *d = *state;
	char path[192], file[192];
	struct stat st;

	snprintf(path, sizeof(path), "%s/a/b/c", d->path);
	assert_int_equal(fs_mkdir_p(path, 0700), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	/* Again: it exists, which is fine. A trailing '/' too. */
	assert_int_equal(fs_mkdir_p(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/a/b/c/", d->path);
	assert_int_equal(fs_mkdir_p(path, 0700), 0);
	/* A file where a directory should be is not one. */
	snprintf(file, sizeof(file), "%s/a/f", d->path);
	put_file(file, "x");
	assert_int_equal(fs_mkdir_p(file, 0700), -ENOTDIR);
	snprintf(path, sizeof(path), "%s/a/f/sub", d->path);
	assert_int_equal(fs_mkdir_p(path, 0700), -ENOTDIR);
	assert_int_equal(fs_mkdir_p("", 0700), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_read_cases, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_regular_file_in_one_allocation, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_missing_file_names_itself, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_regular_refuses_fifo_without_blocking,
					    setup, teardown),
	    cmocka_unit_test(test_failure_keeps_moved_content),
	    cmocka_unit_test_setup_teardown(test_read_survives_eintr, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mkdir_p, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
