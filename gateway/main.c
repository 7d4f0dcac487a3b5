/* ptygate-gateway: serves sandbox terminal sessions to WebSocket clients.
   See gateway.c for the daemon, config.c for its options. */
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "gateway.h"
#include "log.h"
#include "xalloc.h"

int main(int argc, char **argv)
{
	/* The config holds the instance table: too big for the stack. */
	struct gw_config *cfg = xcalloc(1, sizeof(*cfg));
	struct gateway *gw;
	int rc;

	log_set_ident("ptygate-gateway");
	gw_config_defaults(cfg);
	rc = gw_config_parse(cfg, argc, argv);
	if (rc != 0) {
		free(cfg);
		return rc > 0 ? 0 : 2;
	}
	log_set_level(cfg->log_level);
	log_set_format(cfg->log_format);
	log_detect_journal();
	gw = gateway_new(cfg);
	if (!gw) {
		free(cfg);
		return 1;
	}
	rc = gateway_run(gw);
	gateway_free(gw);
	free(cfg);
	return rc < 0 ? 1 : 0;
}
