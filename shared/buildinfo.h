/* buildinfo: what this build is, for --version and the build_info
   metrics: the project's version and the commit it was configured from. */
#ifndef PTG_BUILDINFO_H
#define PTG_BUILDINFO_H

/* The version of the CMake project (static string). */
const char *buildinfo_version(void);
/* The source's commit as git named it when the build was configured,
   or "unknown" outside a git checkout (static string). */
const char *buildinfo_commit(void);

#endif
