/* runas: the account a session's programs run as (--session-user), for
   terminal programs and tasks alike, so a task never runs with more
   privilege than the session's own shell. Looked up in the parent (no
   NSS lookups between fork and exec); dropped in the child. */
#ifndef PTG_RUNAS_H
#define PTG_RUNAS_H

#include <stddef.h>
#include <sys/types.h>

struct run_as {
	uid_t uid;
	gid_t gid;
	gid_t groups[256];
	int n_groups;
	char home[1024], shell[256], name[64];
};

/* Fills ra from the passwd and group databases. Returns 0, or a negative
   errno with the reason in err. */
int runas_lookup(const char *name, struct run_as *ra, char *err, size_t errlen);

/* In a forked child: supplementary groups, gid, then uid dropped for
   good (root cannot be regained), and HOME, USER, LOGNAME and SHELL set
   in environ. Async-signal-safe but for setenv. Returns 0, or -1 with
   errno set and *what naming the call that failed. */
int runas_become(const struct run_as *ra, const char **what);

#endif
