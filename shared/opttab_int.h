/* opttab_int: what the option table's files (opttab.c: parsing,
   opttab_doc.c: --help and manual pages) share and nothing else uses. */
#ifndef PTG_OPTTAB_INT_H
#define PTG_OPTTAB_INT_H

#include <stdbool.h>

#include "opttab.h"

/* Whether o is an option (not a section heading). */
static inline bool opttab__is_option(const struct opttab_opt *o)
{
	return o->type != OPTTAB_SECTION;
}

/* Whether o may be a config file key. */
static inline bool opttab__is_key(const struct opttab_opt *o)
{
	return o->type != OPTTAB_SECTION && o->type < OPTTAB_CONFIG &&
	       !(o->flags & OPTTAB_CLI_ONLY);
}

/* Whether o is a number with a range. */
static inline bool opttab__is_number(const struct opttab_opt *o)
{
	return o->type == OPTTAB_U32 || o->type == OPTTAB_U64;
}

#endif
