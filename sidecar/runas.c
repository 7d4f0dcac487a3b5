/* runas: see runas.h. */
#include "runas.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int runas_lookup(const char *name, struct run_as *ra, char *err, size_t errlen)
{
	const struct passwd *pw = getpwnam(name);

	if (!pw) {
		snprintf(err, errlen, "session user %s: no such user", name);
		return -ENOENT;
	}
	ra->uid = pw->pw_uid;
	ra->gid = pw->pw_gid;
	snprintf(ra->name, sizeof(ra->name), "%s", pw->pw_name);
	snprintf(ra->home, sizeof(ra->home), "%s",
		 pw->pw_dir && pw->pw_dir[0] ? pw->pw_dir : "/");
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

void runas_env(const struct run_as *ra, struct runas_env *v)
{
	snprintf(v->home, sizeof(v->home), "HOME=%s", ra->home);
	snprintf(v->user, sizeof(v->user), "USER=%s", ra->name);
	snprintf(v->logname, sizeof(v->logname), "LOGNAME=%s", ra->name);
	snprintf(v->shell, sizeof(v->shell), "SHELL=%s", ra->shell);
	v->list[0] = v->home;
	v->list[1] = v->user;
	v->list[2] = v->logname;
	v->list[3] = v->shell;
	v->list[4] = NULL;
}
