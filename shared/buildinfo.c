/* buildinfo: PTG_COMMIT is defined for this file alone (CMakeLists.txt),
   so a new commit recompiles one file, not the tree. */
#include "buildinfo.h"

#ifndef PTG_COMMIT
#define PTG_COMMIT "unknown"
#endif

const char *buildinfo_version(void)
{
	return PTG_VERSION;
}

const char *buildinfo_commit(void)
{
	return PTG_COMMIT;
}
