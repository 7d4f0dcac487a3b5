/* task_proc: see task_proc.h. Everything the child needs (argv, envp,
   directory, stdin) is prepared here; spawn.c starts it. */
#include "task_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "buf.h"
#include "fdio.h"
#include "runas.h"
#include "spawn.h"
#include "xalloc.h"

#define ENVIRON_MAX (256u * 1024)

extern char **environ;

/* The session program's environment from /proc (NUL-separated), as an
   envp in one allocation; NULL when it cannot be read or is larger than
   ENVIRON_MAX (the sidecar's own is used then: a cut one would end in a
   broken variable). */
static char **session_env(pid_t pid, char **block)
{
	struct buf b = BUF_INIT;
	char path[64];
	size_t len, n = 0;
	char **envp;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if (fd_read_file(path, 0, ENVIRON_MAX, &b, NULL, 0) < 0) {
		buf_free(&b);
		return NULL;
	}
	*block = (char *)buf_steal(&b, &len);
	for (size_t i = 0; i < len; i++)
		n += (*block)[i] == 0;
	envp = xcalloc(n + 2, sizeof(*envp));
	n = 0;
	for (size_t i = 0; i < len; i += strlen(*block + i) + 1)
		if ((*block)[i])
			envp[n++] = *block + i;
	return envp;
}

/* The handler's stdin: a memfd holding the input, read from the start. */
static int input_fd(const char *p, size_t n)
{
	int fd = memfd_create("ptygate-task-input", MFD_CLOEXEC);
	size_t off = 0;
	ssize_t w;

	if (fd < 0)
		return -1;
	while (off < n && (w = write(fd, p + off, n - off)) > 0)
		off += (size_t)w;
	if (off < n || lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The session program's working directory into buf, or NULL when it
   cannot be read (the program is gone, or not ours to look at). */
static char *session_cwd(pid_t pid, char *buf, size_t cap)
{
	char link[64];
	ssize_t k;

	snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
	k = readlink(link, buf, cap - 1);
	if (k <= 0)
		return NULL;
	buf[k] = 0;
	return buf;
}

/* The task's environment: the session program's when it can be read
   (already the account's), else ours with the account's login variables
   (in *login, which must outlive the result). */
static char **task_env(const struct task_proc_spec *sp, const struct run_as *ra,
		       struct runas_env *login, char **block)
{
	char **envp = sp->session_pid > 0 ? session_env(sp->session_pid, block) : NULL;

	if (envp || !ra)
		return envp;
	runas_env(ra, login);
	return spawn_env(environ, login->list);
}

/* The task starts: its own session and group, the input as stdin, the
   two pipes as stdout and stderr, the account and directory of the
   session's program. A child that could not exec has exited with 127;
   why goes to the task's stderr, as a shell's message would. */
static pid_t start_child(const char *path, char *const argv[], char **envp,
			 const char *cwd, int in, int out, int errw,
			 const struct run_as *ra)
{
	char *paths[] = {(char *)path, NULL};
	struct spawn_plan plan = {.paths = paths,
				  .argv = argv,
				  .envp = envp,
				  .fd = {in, out, errw},
				  .cwd = {cwd, NULL},
				  .ra = ra};
	struct spawn_error e;
	pid_t pid = spawn_start(&plan, &e);
	bool exec;
	char msg[256];

	if (pid < 0 || !e.what)
		return pid;
	exec = !strcmp(e.what, "exec");
	snprintf(msg, sizeof(msg), "ptygate: cannot start the task (%s%s%s): %s\n",
		 e.what, exec ? " " : "", exec ? path : "", strerror(e.err));
	if (write(errw, msg, strlen(msg)) < 0) {
		/* the task's stderr is gone: nothing more to tell */
	}
	return pid;
}

pid_t task_proc_start(const struct task_proc_spec *sp, int out[2], char *err,
		      size_t errlen)
{
	char *sh_argv[] = {"/bin/sh", "-c", (char *)sp->command, NULL};
	char *h_argv[] = {(char *)sp->handler, NULL};
	bool use_handler = sp->handler && sp->handler[0];
	char cwd_buf[4096], *cwd = NULL, *block = NULL, **envp = NULL;
	int o[2] = {-1, -1}, e[2] = {-1, -1}, in = -1, rc = 0;
	struct runas_env login;
	struct run_as ra;
	pid_t pid = -1;

	if (sp->user && (rc = runas_lookup(sp->user, &ra, err, errlen)) < 0)
		return rc;
	envp = task_env(sp, sp->user ? &ra : NULL, &login, &block);
	if (sp->session_pid > 0)
		cwd = session_cwd(sp->session_pid, cwd_buf, sizeof(cwd_buf));
	if (!cwd && sp->user)
		cwd = ra.home;
	in = use_handler ? input_fd(sp->input, sp->input_len)
			 : open("/dev/null", O_RDONLY | O_CLOEXEC);
	/* Only our read ends are non-blocking: the command writes as usual. */
	if (in < 0 || pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0 ||
	    fcntl(o[0], F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(e[0], F_SETFL, O_NONBLOCK) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot set up the task's input and output: %s",
			 strerror(errno));
		goto done;
	}
	pid = start_child(use_handler ? h_argv[0] : sh_argv[0],
			  use_handler ? h_argv : sh_argv, envp ? envp : environ, cwd, in,
			  o[1], e[1], sp->user ? &ra : NULL);
	if (pid == -1) {
		rc = -errno;
		snprintf(err, errlen, "vfork: %s", strerror(errno));
		goto done;
	}
	out[0] = o[0];
	out[1] = e[0];
	o[0] = e[0] = -1;
done:
	for (int i = 0; i < 2; i++) {
		if (o[i] >= 0)
			close(o[i]);
		if (e[i] >= 0)
			close(e[i]);
	}
	if (in >= 0)
		close(in);
	free(envp);
	free(block);
	return rc ? rc : pid;
}
