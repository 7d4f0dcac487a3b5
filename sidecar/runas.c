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

int runas_become(const struct run_as *ra, const char **what)
{
	/* Groups first (they need root), the uid last. */
	if (setgroups((size_t)ra->n_groups, ra->groups) < 0) {
		*what = "setgroups";
		return -1;
	}
	if (setgid(ra->gid) < 0) {
		*what = "setgid";
		return -1;
	}
	if (setuid(ra->uid) < 0) {
		*what = "setuid";
		return -1;
	}
	if (setuid(0) == 0 || geteuid() != ra->uid) {
		errno = EPERM;
		*what = "setuid";
		return -1;
	}
	setenv("HOME", ra->home, 1);
	setenv("USER", ra->name, 1);
	setenv("LOGNAME", ra->name, 1);
	setenv("SHELL", ra->shell, 1);
	return 0;
}
