/* config_int: what the sidecar's config files share and nothing outside
   them uses. The calls go one way: config.c (parsing, the checks of the
   whole) uses config_table.c (the option table) and config_values.c (the
   table's own parsers); config_table.c points at config_values.c;
   config_values.c calls neither. */
#ifndef PTG_SIDECAR_CONFIG_INT_H
#define PTG_SIDECAR_CONFIG_INT_H

#include "config.h"
#include "log.h"
#include "opttab.h"

/* The options config_values.c parses (OPTTAB_CUSTOM). */
enum config__custom_id {
	CONFIG__LISTEN = 1,
	CONFIG__DIAL,
	CONFIG__DIAL_BACKOFF,
	CONFIG__INSTANCE_ID,
	CONFIG__DEFAULT_SIZE,
	CONFIG__TASK_HANDLER,
	CONFIG__STATE_OLD_KEY,
	CONFIG__FSYNC,
	CONFIG__LOG_LEVEL,
	CONFIG__LOG_FORMAT,
};

extern const struct opttab config__table;

int config__custom(void *cfg, const struct opttab_src *src, const struct opttab_opt *o,
		   const char *arg);

#endif
