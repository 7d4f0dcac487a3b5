/* tty: forkpty with an error channel, so that a program that cannot be
   started fails the create request instead of exiting at once. */
#include "tty.h"

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runas.h"

struct child_error {
	int err;
	char what[16];
};

static void child_fail(int fd, const char *what)
{
	struct child_error ce = {.err = errno};
	snprintf(ce.what, sizeof(ce.what), "%s", what);
	if (write(fd, &ce, sizeof(ce)) < 0) {
		/* nothing more a dying child can do */
	}
	_exit(127);
}

/* Gives the terminal to the user, then drops every privilege for good. */
static void child_become(const struct run_as *ra, int errfd)
{
	const char *what;

	if (fchown(STDIN_FILENO, ra->uid, (gid_t)-1) < 0)
		child_fail(errfd, "chown tty");
	if (runas_become(ra, &what) < 0)
		child_fail(errfd, what);
}

static void child_exec(const struct tty_spec *spec, const struct run_as *ra, int errfd)
{
	sigset_t all;

	/* The sidecar blocks signals for its signalfd; the program must not
	   inherit that mask or default-ignored dispositions. */
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	/* Whatever the sidecar inherited from its own launcher stays with it:
	   a program gets its terminal and nothing else (the error pipe is
	   close-on-exec). */
	if (errfd > 3)
		close_range(3, (unsigned)errfd - 1, 0);
	close_range((unsigned)errfd + 1, ~0u, 0);
	if (ra)
		child_become(ra, errfd);
	if (spec->cwd && spec->cwd[0] && chdir(spec->cwd) < 0)
		child_fail(errfd, "chdir");
	if (ra && !(spec->cwd && spec->cwd[0]) && chdir(ra->home) < 0 && chdir("/") < 0)
		child_fail(errfd, "chdir");
	for (char *const *e = spec->env_extra; e && *e; e++)
		putenv(*e);
	if (!getenv("TERM"))
		setenv("TERM", "xterm-256color", 1);
	execvp(spec->argv[0], spec->argv);
	child_fail(errfd, "exec");
}

/* Waits for the child's verdict: EOF on the close-on-exec pipe means the
   exec succeeded. */
static int read_child_verdict(int fd, const struct tty_spec *spec, char *err,
			      size_t errlen)
{
	struct child_error ce;
	ssize_t n;

	do
		n = read(fd, &ce, sizeof(ce));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(ce))
		return 0;
	snprintf(err, errlen, "%s %s: %s", ce.what,
		 strcmp(ce.what, "exec") != 0
		     ? (spec->cwd && strcmp(ce.what, "chdir") == 0 ? spec->cwd : "")
		     : spec->argv[0],
		 strerror(ce.err));
	return -(ce.err ? ce.err : EIO);
}

int tty_spawn(const struct tty_spec *spec, int *master, pid_t *pid, char *err,
	      size_t errlen)
{
	struct winsize ws = {.ws_row = spec->rows, .ws_col = spec->cols};
	struct run_as ra;
	int pipefd[2], fd, rc;
	pid_t p;

	if (!spec->argv || !spec->argv[0]) {
		snprintf(err, errlen, "empty command");
		return -EINVAL;
	}
	if (spec->user && (rc = runas_lookup(spec->user, &ra, err, errlen)) < 0)
		return rc;
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -errno;
	}
	p = forkpty(&fd, NULL, NULL, &ws);
	if (p < 0) {
		rc = -errno;
		snprintf(err, errlen, "forkpty: %s", strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		return rc;
	}
	if (p == 0) {
		close(pipefd[0]);
		child_exec(spec, spec->user ? &ra : NULL, pipefd[1]);
	}
	close(pipefd[1]);
	rc = read_child_verdict(pipefd[0], spec, err, errlen);
	close(pipefd[0]);
	if (rc < 0) {
		close(fd);
		/* The child has written its verdict and is exiting. */
		while (waitpid(p, NULL, 0) < 0 && errno == EINTR)
			;
		return rc;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	*master = fd;
	*pid = p;
	return 0;
}

int tty_set_size(int master, unsigned cols, unsigned rows)
{
	struct winsize ws = {.ws_row = rows, .ws_col = cols};

	return ioctl(master, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
}
