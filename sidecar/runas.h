/* runas: the account a session's programs run as (--session-user), for
   terminal programs and tasks alike, so a task never runs with more
   privilege than the session's own shell. Looked up in the parent (no
   NSS lookups between vfork and exec); taken on in the child. */
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

/* What a login as ra sets in the environment: HOME, USER, LOGNAME and
   SHELL, as NAME=VALUE strings listed (NULL-terminated) in list. The
   account itself is taken on in the child (spawn.c). */
struct runas_env {
	char home[sizeof(((struct run_as *)0)->home) + 8];
	char user[sizeof(((struct run_as *)0)->name) + 8];
	char logname[sizeof(((struct run_as *)0)->name) + 8];
	char shell[sizeof(((struct run_as *)0)->shell) + 8];
	char *list[5];
};
void runas_env(const struct run_as *ra, struct runas_env *v);

#endif
