/* config_int: what the gateway's config files share and nothing outside
   them uses. The calls go one way: config.c (parsing, the checks of the
   whole, the instances file) uses config_table.c (the option table) and
   config_values.c (the table's own parsers); config_table.c points at
   config_values.c; config_values.c calls neither. */
#ifndef PTG_GATEWAY_CONFIG_INT_H
#define PTG_GATEWAY_CONFIG_INT_H

#include "config.h"
#include "opttab.h"

/* The options config_values.c parses (OPTTAB_CUSTOM). */
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
/* The instance with this id among c->instances[from, to), or NULL. */
struct gw_instance_cfg *config__instance_find(struct gw_config *c, const char *id,
					      size_t from, size_t to);

#endif
