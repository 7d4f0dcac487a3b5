/* ptygate-sidecar: runs inside a sandbox VM and owns its terminal
   sessions. See server.c for the daemon, session.c for a session. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "export.h"
#include "log.h"
#include "server.h"

int main(int argc, char **argv)
{
	struct sidecar_config cfg;
	struct server *srv;
	int rc;

	/* A flood allocates and frees an Output frame's copy (the replay
	   ring) for every batch read: with glibc's default trim threshold
	   the heap's top goes back to the kernel and is faulted in, zeroed,
	   again and again. Keeping a few MiB of free heap avoids that. */
	mallopt(M_TRIM_THRESHOLD, 16 << 20);
	config_defaults(&cfg);
	rc = config_parse(&cfg, argc, argv);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	log_set_ident("ptygate-sidecar");
	log_set_level(cfg.log_level);
	if (cfg.export_session)
		return export_asciicast(&cfg, cfg.export_session, stdout);
	srv = server_new(&cfg);
	if (!srv)
		return 1;
	rc = server_run(srv);
	server_free(srv);
	return rc < 0 ? 1 : 0;
}
