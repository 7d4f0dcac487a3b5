/* task_proc: see task_proc.h. Everything the child needs (argv, envp,
   directory, stdin) is prepared before fork, so the child only makes
   async-signal-safe calls. */
#include "task_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "buf.h"
#include "fdio.h"
#include "runas.h"
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

static void child_write(const char *s)
{
	if (write(2, s, strlen(s)) < 0) {
		/* nothing more to do */
	}
}

static void __attribute__((noreturn))
child(const char *cwd, int in, const int out[2], const int errp[2], char *const argv[],
      char **envp, const struct run_as *ra)
{
	const char *what;
	sigset_t none;

	/* Its own session, so its own process group and no controlling
	   terminal; if the parent made it a group leader first, setsid
	   fails and the group is already its own. */
	if (setsid() < 0)
		setpgid(0, 0);
	/* The sidecar blocks signals for its signalfd: undo that. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	if (dup2(in, 0) < 0 || dup2(out[1], 1) < 0 || dup2(errp[1], 2) < 0)
		_exit(127);
	/* A task gets its three streams and nothing else of the sidecar's. */
	close_range(3, ~0u, 0);
	/* Never more privilege than the session's own program: the working
	   directory and environment come from that program, so they are
	   the user's to choose. */
	if (ra && runas_become(ra, &what) < 0) {
		child_write("ptygate: cannot switch to the session's user\n");
		_exit(127);
	}
	if (cwd && chdir(cwd) < 0) {
		child_write("ptygate: cannot enter the session's working directory\n");
		_exit(127);
	}
	execve(argv[0], argv, envp ? envp : environ);
	child_write("ptygate: cannot execute ");
	child_write(argv[0]);
	child_write("\n");
	_exit(127);
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

pid_t task_proc_start(const struct task_proc_spec *sp, int out[2], char *err,
		      size_t errlen)
{
	char *sh_argv[] = {"/bin/sh", "-c", (char *)sp->command, NULL};
	char *h_argv[] = {(char *)sp->handler, NULL};
	int use_handler = sp->handler && sp->handler[0];
	char cwd_buf[4096], *cwd = NULL, *block = NULL;
	char **envp = sp->session_pid > 0 ? session_env(sp->session_pid, &block) : NULL;
	int o[2] = {-1, -1}, e[2] = {-1, -1}, in = -1, rc = 0;
	struct run_as ra;
	pid_t pid = -1;

	if (sp->user && (rc = runas_lookup(sp->user, &ra, err, errlen)) < 0) {
		free(envp);
		free(block);
		return rc;
	}

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
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto done;
	}
	if (pid == 0)
		child(cwd, in, o, e, use_handler ? h_argv : sh_argv, envp,
		      sp->user ? &ra : NULL);
	setpgid(pid, pid); /* also here: no race with a kill of the group */
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
