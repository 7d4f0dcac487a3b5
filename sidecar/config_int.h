/* config_int: what the sidecar's config files share (config_table.c:
   the option table; config.c: its own parsers and the checks of the
   whole) and nothing outside them uses. */
#ifndef PTG_SIDECAR_CONFIG_INT_H
#define PTG_SIDECAR_CONFIG_INT_H

#include "config.h"
#include "opttab.h"

/* The options config.c parses itself (OPTTAB_CUSTOM). */
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
