/* tty: a program on a new PTY (spawn.c starts it), so that a program that
   cannot be started fails the create request instead of exiting at once. */
#include "tty.h"

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runas.h"
#include "spawn.h"

extern char **environ;

/* How long tty_spawn waits for the new image's environment: far more
   than an exec takes on a loaded machine, a guard only. */
#define EXEC_WAIT_TRIES	  5000
#define EXEC_WAIT_STEP_NS 200000L

/* The program's environment: ours, TERM if we have none, the account's
   login variables (kept in *login, which must outlive the result), then
   the request's own, which win. */
static char **program_env(const struct tty_spec *spec, const struct run_as *ra,
			  struct runas_env *login)
{
	static char term[] = "TERM=xterm-256color";
	char *defaults[6], **base, **envp;
	int n = 0;

	if (!spawn_getenv(environ, "TERM"))
		defaults[n++] = term;
	if (ra) {
		runas_env(ra, login);
		for (char **v = login->list; *v; v++)
			defaults[n++] = *v;
	}
	defaults[n] = NULL;
	base = spawn_env(environ, defaults);
	envp = spawn_env(base, spec->env_extra);
	free(base);
	return envp;
}

/* The plan for the child; cwd: the request's, else the account's home
   (or /), else the sidecar's. */
static void plan_for(struct spawn_plan *p, const struct tty_spec *spec, char **paths,
		     char **envp, int slave, const struct run_as *ra)
{
	memset(p, 0, sizeof(*p));
	p->paths = paths;
	p->argv = spec->argv;
	p->envp = envp;
	p->fd[0] = p->fd[1] = p->fd[2] = slave;
	p->ctty = true;
	p->ra = ra;
	if (spec->cwd && spec->cwd[0]) {
		p->cwd[0] = spec->cwd;
	} else if (ra) {
		p->cwd[0] = ra->home;
		p->cwd[1] = "/";
	}
}

static int spawn_error_text(const struct spawn_error *e, const struct tty_spec *spec,
			    char *err, size_t errlen)
{
	const char *subject = !strcmp(e->what, "exec")	  ? spec->argv[0]
			      : !strcmp(e->what, "chdir") ? (spec->cwd ? spec->cwd : "")
							  : "";

	snprintf(err, errlen, "%s %s: %s", e->what, subject, strerror(e->err));
	return -(e->err ? e->err : EIO);
}

/* Opens the PTY pair at the requested size, the master close-on-exec
   (other sessions' programs must not inherit it). */
static int open_pty(const struct tty_spec *spec, int *master, int *slave, char *err,
		    size_t errlen)
{
	struct winsize ws = {.ws_row = spec->rows, .ws_col = spec->cols};

	if (openpty(master, slave, NULL, NULL, &ws) < 0) {
		snprintf(err, errlen, "openpty: %s", strerror(errno));
		return -errno;
	}
	fcntl(*master, F_SETFD, FD_CLOEXEC);
	fcntl(*slave, F_SETFD, FD_CLOEXEC);
	return 0;
}

/* vfork returns once the child's execve has replaced its memory, but the
   kernel sets the new image's environment a moment later: until then
   /proc/PID/environ reads empty, and a task started at once (which takes
   the program's environment from there) would run without it. Waits until
   it reads something; a program that exited already (a zombie reads
   empty), one we may not read, or the guard ends the wait. */
static void wait_exec_done(pid_t pid)
{
	const struct timespec step = {0, EXEC_WAIT_STEP_NS};
	char path[64], c;
	siginfo_t si;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	for (int i = 0; i < EXEC_WAIT_TRIES; i++) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return;
		n = read(fd, &c, 1);
		close(fd);
		if (n != 0)
			return;
		si.si_pid = 0;
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 ||
		    si.si_pid)
			return;
		nanosleep(&step, NULL);
	}
}

int tty_spawn(const struct tty_spec *spec, int *master, pid_t *pid, char *err,
	      size_t errlen)
{
	const struct run_as *rap = NULL;
	struct spawn_error e;
	struct spawn_plan plan;
	struct runas_env login;
	struct run_as ra;
	char **envp, **paths;
	int m, slave, rc;
	pid_t p;

	if (!spec->argv || !spec->argv[0]) {
		snprintf(err, errlen, "empty command");
		return -EINVAL;
	}
	if (spec->user && (rc = runas_lookup(spec->user, &ra, err, errlen)) < 0)
		return rc;
	if (spec->user)
		rap = &ra;
	envp = program_env(spec, rap, &login);
	paths = spawn_candidates(spec->argv[0], spawn_getenv(envp, "PATH"));
	if (!paths) {
		snprintf(err, errlen, "exec %s: %s", spec->argv[0], strerror(ENOENT));
		free(envp);
		return -ENOENT;
	}
	if ((rc = open_pty(spec, &m, &slave, err, errlen)) < 0) {
		free(paths);
		free(envp);
		return rc;
	}
	/* The terminal is the user's. */
	if (rap && fchown(slave, rap->uid, (gid_t)-1) < 0) {
		rc = -errno;
		snprintf(err, errlen, "chown tty: %s", strerror(errno));
		goto fail;
	}
	plan_for(&plan, spec, paths, envp, slave, rap);
	p = spawn_start(&plan, &e);
	if (p < 0 || e.what) {
		rc = spawn_error_text(&e, spec, err, errlen);
		while (p > 0 && waitpid(p, NULL, 0) < 0 && errno == EINTR)
			;
		goto fail;
	}
	close(slave);
	free(paths);
	free(envp);
	wait_exec_done(p);
	fcntl(m, F_SETFL, fcntl(m, F_GETFL) | O_NONBLOCK);
	*master = m;
	*pid = p;
	return 0;
fail:
	close(slave);
	close(m);
	free(paths);
	free(envp);
	return rc;
}

int tty_set_size(int master, unsigned cols, unsigned rows)
{
	struct winsize ws = {.ws_row = rows, .ws_col = cols};

	return ioctl(master, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
}
