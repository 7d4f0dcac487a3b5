/* task_proc: starting a task's process without a terminal
   (docs/protocol.md, "Tasks"): `/bin/sh -c COMMAND` (or the operator's
   handler, the message as JSON on its stdin), stdin otherwise /dev/null,
   stdout and stderr on non-blocking pipes, in its own process group, in the
   working directory and environment of the session's program when it is
   alive, as the session's user. */
#ifndef PTG_TASK_PROC_H
#define PTG_TASK_PROC_H

#include <stddef.h>
#include <sys/types.h>

struct task_proc_spec {
	const char *command; /* for /bin/sh -c */
	const char *handler; /* NULL or "": /bin/sh -c command */
	const char *input;   /* the handler's stdin (JSON) */
	size_t input_len;
	pid_t session_pid; /* 0: the session's program is gone */
	const char *user;  /* NULL: ours; else run as this user, as
			      the session's program does */
};

/* Starts the process. Returns its pid (also its process group) and sets
   out[0] (stdout) and out[1] (stderr), both O_NONBLOCK | O_CLOEXEC; or a
   negative errno with err set. A failed exec shows as exit code 127 and
   a message on stderr, like a shell's. */
pid_t task_proc_start(const struct task_proc_spec *sp, int out[2], char *err,
		      size_t errlen);

#endif
