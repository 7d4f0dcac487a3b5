/* spawn: see spawn.h. The child runs on the parent's memory and stack
   until execve, with the parent's thread suspended and the other threads
   (the screen model's, the syncer's) still running: it writes nothing but
   its own registers, the kernel's state and *e, and calls no function
   that takes a lock or allocates. */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "buf.h"
#include "xalloc.h"

static void __attribute__((noreturn))
child_fail(volatile struct spawn_error *e, const char *what)
{
	e->err = errno;
	e->what = what;
	_exit(127);
}

/* The account's groups, gid and uid, for good. Raw system calls: glibc's
   setuid() and friends change every thread of the process, and in a
   vfork child those are the sidecar's own threads. */
static void child_become(const struct run_as *ra, volatile struct spawn_error *e)
{
	if (syscall(SYS_setgroups, (size_t)ra->n_groups, ra->groups) < 0)
		child_fail(e, "setgroups");
	if (syscall(SYS_setresgid, ra->gid, ra->gid, ra->gid) < 0)
		child_fail(e, "setgid");
	if (syscall(SYS_setresuid, ra->uid, ra->uid, ra->uid) < 0)
		child_fail(e, "setuid");
	if (syscall(SYS_setuid, 0) == 0 || (uid_t)syscall(SYS_geteuid) != ra->uid) {
		errno = EPERM;
		child_fail(e, "setuid");
	}
}

static void child_streams(const struct spawn_plan *p, volatile struct spawn_error *e)
{
	for (int i = 0; i < 3; i++) {
		/* dup2 onto itself keeps close-on-exec: clear it instead. */
		if (p->fd[i] == i ? fcntl(i, F_SETFD, 0) < 0 : dup2(p->fd[i], i) < 0)
			child_fail(e, "dup2");
	}
	/* The program gets its three streams and nothing else of ours. */
	close_range(3, ~0u, 0);
}

static void child_cwd(const struct spawn_plan *p, volatile struct spawn_error *e)
{
	int tried = 0;

	for (int i = 0; i < 2; i++) {
		if (!p->cwd[i])
			continue;
		if (chdir(p->cwd[i]) == 0)
			return;
		tried = 1;
	}
	if (tried)
		child_fail(e, "chdir");
}

/* Each candidate in turn, as execvp walks PATH: a candidate that is
   missing or not ours to run is skipped, any other failure ends it; with
   none left, EACCES if one was refused, else the last error. */
static void __attribute__((noreturn))
child_exec(const struct spawn_plan *p, volatile struct spawn_error *e)
{
	int refused = 0;

	for (char *const *c = p->paths; *c; c++) {
		execve(*c, p->argv, p->envp);
		if (errno == EACCES)
			refused = 1;
		else if (errno != ENOENT && errno != ENOTDIR)
			break;
	}
	if (refused && (errno == ENOENT || errno == ENOTDIR || errno == EACCES))
		errno = EACCES;
	child_fail(e, "exec");
}

static void __attribute__((noreturn))
child(const struct spawn_plan *p, volatile struct spawn_error *e)
{
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;

	/* Its own session and process group; TIOCSCTTY then makes the
	   terminal its controlling one. */
	if (setsid() < 0)
		child_fail(e, "setsid");
	if (p->ctty && ioctl(p->fd[0], TIOCSCTTY, 0) < 0)
		child_fail(e, "TIOCSCTTY");
	child_streams(p, e);
	/* Nothing of the sidecar's signal handling: default dispositions,
	   and (last, all signals being blocked until then) an empty mask. */
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &dfl, NULL);
	if (p->ra)
		child_become(p->ra, e);
	child_cwd(p, e);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	child_exec(p, e);
}

pid_t spawn_start(const struct spawn_plan *p, struct spawn_error *e)
{
	volatile struct spawn_error *ve = e;
	sigset_t all, old;
	pid_t pid;

	ve->err = 0;
	ve->what = NULL;
	/* No handler may run in the child before it resets them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = vfork();
	if (pid == 0)
		child(p, ve);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		ve->err = errno;
		ve->what = "vfork";
	}
	return pid;
}

/* Appends each dir/argv0 of path that exists, NUL-terminated, to b. */
static size_t search_path(const char *argv0, const char *path, struct buf *b)
{
	const char *dir = path && path[0] ? path : "/bin:/usr/bin";
	size_t n = 0;

	for (;;) {
		const char *end = strchrnul(dir, ':');
		int k = (int)(end - dir);
		char cand[PATH_MAX];

		/* An empty PATH entry is the current directory, as for execvp. */
		if ((size_t)snprintf(cand, sizeof(cand), "%.*s%s%s", k, dir, k ? "/" : "",
				     argv0) < sizeof(cand) &&
		    access(cand, F_OK) == 0) {
			buf_append(b, cand, strlen(cand) + 1);
			n++;
		}
		if (!*end)
			return n;
		dir = end + 1;
	}
}

char **spawn_candidates(const char *argv0, const char *path)
{
	struct buf b = BUF_INIT;
	size_t n, len;
	char **out, *str;

	if (!argv0[0])
		return NULL;
	if (strchr(argv0, '/')) {
		buf_append(&b, argv0, strlen(argv0) + 1);
		n = 1;
	} else if (!(n = search_path(argv0, path, &b))) {
		buf_free(&b);
		return NULL;
	}
	/* The pointers, then the strings they point into. */
	len = buf_size(&b);
	out = xmalloc((n + 1) * sizeof(*out) + len);
	str = (char *)(out + n + 1);
	memcpy(str, buf_head(&b), len);
	for (size_t i = 0; i < n; i++) {
		out[i] = str;
		str += strlen(str) + 1;
	}
	out[n] = NULL;
	buf_free(&b);
	return out;
}

static size_t name_len(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq ? (size_t)(eq - kv) : strlen(kv);
}

char **spawn_env(char *const *envp, char *const *set)
{
	size_t n = 0, extra = 0, k;
	char **out;

	while (envp && envp[n])
		n++;
	while (set && set[extra])
		extra++;
	out = xcalloc(n + extra + 1, sizeof(*out));
	memcpy(out, envp, n * sizeof(*out));
	for (size_t i = 0; i < extra; i++) {
		size_t len = name_len(set[i]);

		for (k = 0; k < n; k++)
			if (name_len(out[k]) == len && !strncmp(out[k], set[i], len))
				break;
		out[k] = set[i];
		if (k == n)
			n++;
	}
	return out;
}

const char *spawn_getenv(char *const *envp, const char *name)
{
	size_t len = strlen(name);

	for (; envp && *envp; envp++)
		if (name_len(*envp) == len && !strncmp(*envp, name, len))
			return (*envp)[len] ? *envp + len + 1 : "";
	return NULL;
}
