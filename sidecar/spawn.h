/* spawn: starts a session's or a task's program without copying the
   sidecar's address space. fork() copied the page tables of every
   session's screen and replay ring (35 ms with 1 GiB resident, on the
   loop every session shares) and left all of that memory copy-on-write,
   so the loop's next write to each page faulted once more. vfork() lends
   the child the sidecar's memory until it execs, so the caller prepares
   everything (path, environment, descriptors, account) and the child
   makes only system calls. */
#ifndef PTG_SPAWN_H
#define PTG_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "runas.h"

struct spawn_plan {
	char *const *paths;	 /* the program: candidates tried in order */
	char *const *argv;	 /* NULL-terminated */
	char *const *envp;	 /* the complete environment */
	int fd[3];		 /* become 0, 1 and 2; every other fd is closed */
	bool ctty;		 /* fd[0] becomes the controlling terminal */
	const char *cwd[2];	 /* tried in order; NULL entries skipped */
	const struct run_as *ra; /* NULL: stay as we are */
};

/* Why a child could not exec: errno and the call that failed. */
struct spawn_error {
	int err;
	const char *what;
};

/* Starts p in a new session (its own process group). Returns the pid,
   or -1 with *e set when vfork failed. e->what is also set when the
   child failed before its exec: it has then exited with status 127 (not
   yet reaped) by the time this returns. */
pid_t spawn_start(const struct spawn_plan *p, struct spawn_error *e);

/* Where argv0 may be, for plan.paths: argv0 itself when it holds a '/',
   else each directory of path (a PATH value; NULL or "": /bin:/usr/bin)
   that has a file of that name, in order. The child tries them as execvp
   does, with its own account's permissions. One allocation (free() it);
   NULL when there is no candidate. */
char **spawn_candidates(const char *argv0, const char *path);

/* A copy of envp with each NAME=VALUE of set[] replacing or adding its
   NAME (later entries win). The array is one allocation (free() it); its
   strings stay the caller's. */
char **spawn_env(char *const *envp, char *const *set);

/* NAME's value in envp, or NULL. */
const char *spawn_getenv(char *const *envp, const char *name);

#endif
