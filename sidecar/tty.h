/* tty: starting a program on a new pseudo-terminal and sizing it. */
#ifndef PTG_TTY_H
#define PTG_TTY_H

#include <stddef.h>
#include <sys/types.h>

struct tty_spec {
	char *const *argv;	/* NULL-terminated; argv[0] looked up in PATH */
	const char *cwd;	/* NULL or "": inherit */
	char *const *env_extra; /* NULL-terminated NAME=VALUE, set on top of ours */
	unsigned cols, rows;
	const char *user; /* NULL: ours; else the program runs as this
			     user (we must be root), with its HOME, USER,
			     LOGNAME and SHELL, in its HOME unless cwd */
};

/* Starts spec->argv (spawn.c: vfork, no copy of our memory) in its own
   session with the new PTY as its controlling terminal. On success sets *master
   (non-blocking, close-on-exec) and *pid and returns 0; on failure returns a negative
   errno and writes the reason to err. A failing exec in the child (no
   such program, bad cwd) is reported here, not as a child exit. Returns
   once the program's environment reads in /proc/PID/environ (where a
   task takes it from). */
int tty_spawn(const struct tty_spec *spec, int *master, pid_t *pid, char *err,
	      size_t errlen);

/* Sets the terminal size (TIOCSWINSZ; the foreground process group gets
   SIGWINCH). Returns 0 or a negative errno. */
int tty_set_size(int master, unsigned cols, unsigned rows);

#endif
