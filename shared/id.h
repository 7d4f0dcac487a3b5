/* id: the one check of an instance or session id as the gateway takes it
   in a config file, an instances file and a REST or attach path:
   1 to PTG_ID_MAX bytes of URL-unreserved characters plus ':' and '@',
   never "." or ".." (a path segment those would change). */
#ifndef PTG_ID_H
#define PTG_ID_H

#include <stdbool.h>

/* Whether s is a valid instance or session id. */
bool id_valid(const char *s);

#endif
