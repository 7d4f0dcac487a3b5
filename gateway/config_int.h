/* config_int: what the gateway's config files share (config_table.c: the
   option table; config.c: its own parsers, the checks of the whole and
   the instances file) and nothing outside them uses. */
#ifndef PTG_GATEWAY_CONFIG_INT_H
#define PTG_GATEWAY_CONFIG_INT_H

#include "config.h"
#include "opttab.h"

/* The options config.c parses itself (OPTTAB_CUSTOM). */
enum config__custom_id {
	CONFIG__LISTEN = 1,
	CONFIG__ADMIN_LISTEN,
	CONFIG__PUBLIC_URL,
	CONFIG__STATIC_DIR,
	CONFIG__INSTANCE,
	CONFIG__HS256,
	CONFIG__ED25519,
	CONFIG__TRUSTED_PROXY,
	CONFIG__ALLOWED_ORIGIN,
	CONFIG__LINK_LISTEN,
	CONFIG__LINK_KEY,
	CONFIG__REGISTRY,
	CONFIG__FLEET_LISTEN,
	CONFIG__LOG_LEVEL,
	CONFIG__LOG_FORMAT,
};

extern const struct opttab config__table;

int config__custom(void *cfg, const struct opttab_src *src, const struct opttab_opt *o,
		   const char *arg);
/* After the config file: the instances it gave, which a command-line
   --instance with the same id replaces. */
void config__file_done(void *cfg);

#endif
