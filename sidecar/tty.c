/* tty: forkpty with an error channel, so that a program that cannot be
   started fails the create request instead of exiting at once. */
#include "tty.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

struct child_error {
	int err;
	char what[16];
};

static void child_fail(int fd, const char *what)
{
	struct child_error ce = { .err = errno };
	snprintf(ce.what, sizeof(ce.what), "%s", what);
	if (write(fd, &ce, sizeof(ce)) < 0) {
		/* nothing more a dying child can do */
	}
	_exit(127);
}

/* The account a session's program runs as, looked up in the parent (no
   NSS lookups between fork and exec). */
struct run_as {
	uid_t uid;
	gid_t gid;
	gid_t groups[256];
	int n_groups;
	char home[1024], shell[256], name[64];
};

static int lookup_user(const char *name, struct run_as *ra, char *err, size_t errlen)
{
	const struct passwd *pw = getpwnam(name);

	if (!pw) {
		snprintf(err, errlen, "session user %s: no such user", name);
		return -ENOENT;
	}
	ra->uid = pw->pw_uid;
	ra->gid = pw->pw_gid;
	snprintf(ra->name, sizeof(ra->name), "%s", pw->pw_name);
	snprintf(ra->home, sizeof(ra->home), "%s", pw->pw_dir && pw->pw_dir[0] ? pw->pw_dir : "/");
	snprintf(ra->shell, sizeof(ra->shell), "%s",
		 pw->pw_shell && pw->pw_shell[0] ? pw->pw_shell : "/bin/sh");
	ra->n_groups = (int)(sizeof(ra->groups) / sizeof(ra->groups[0]));
	if (getgrouplist(ra->name, ra->gid, ra->groups, &ra->n_groups) < 0) {
		snprintf(err, errlen, "session user %s: more than %zu groups", name,
			 sizeof(ra->groups) / sizeof(ra->groups[0]));
		return -E2BIG;
	}
	return 0;
}

/* Gives the terminal to the user, then drops every privilege for good:
   groups first (they need root), the uid last, and a check that root
   cannot be regained. */
static void child_become(const struct run_as *ra, int errfd)
{
	if (fchown(STDIN_FILENO, ra->uid, (gid_t)-1) < 0)
		child_fail(errfd, "chown tty");
	if (setgroups((size_t)ra->n_groups, ra->groups) < 0)
		child_fail(errfd, "setgroups");
	if (setgid(ra->gid) < 0)
		child_fail(errfd, "setgid");
	if (setuid(ra->uid) < 0)
		child_fail(errfd, "setuid");
	if (setuid(0) == 0 || geteuid() != ra->uid) {
		errno = EPERM;
		child_fail(errfd, "setuid");
	}
	setenv("HOME", ra->home, 1);
	setenv("USER", ra->name, 1);
	setenv("LOGNAME", ra->name, 1);
	setenv("SHELL", ra->shell, 1);
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
static int read_child_verdict(int fd, const struct tty_spec *spec,
			      char *err, size_t errlen)
{
	struct child_error ce;
	ssize_t n;

	do
		n = read(fd, &ce, sizeof(ce));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(ce))
		return 0;
	snprintf(err, errlen, "%s %s: %s", ce.what,
		 strcmp(ce.what, "exec") != 0 ? (spec->cwd && strcmp(ce.what, "chdir") == 0
						  ? spec->cwd : "") : spec->argv[0],
		 strerror(ce.err));
	return -(ce.err ? ce.err : EIO);
}

int tty_spawn(const struct tty_spec *spec, int *master, pid_t *pid, char *err,
	      size_t errlen)
{
	struct winsize ws = { .ws_row = spec->rows, .ws_col = spec->cols };
	struct run_as ra;
	int pipefd[2], fd, rc;
	pid_t p;

	if (!spec->argv || !spec->argv[0]) {
		snprintf(err, errlen, "empty command");
		return -EINVAL;
	}
	if (spec->user && (rc = lookup_user(spec->user, &ra, err, errlen)) < 0)
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
	struct winsize ws = { .ws_row = rows, .ws_col = cols };

	return ioctl(master, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
}
