/* ptygate-sidecar: runs inside a sandbox VM and owns its terminal
   sessions. See server.c for the daemon, session.c for a session. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "credential.h"
#include "dialer.h"
#include "export.h"
#include "log.h"
#include "server.h"
#include "timeutil.h"

/* With --instance-token-file, the token says which instance this is.
   Returns the credential (NULL without the option), or NULL with *failed
   set after saying why. */
static struct credential *load_credential(struct sidecar_config *cfg, int *failed)
{
	const char *file = cfg->instance_token_file;
	struct credential *cred;
	char err[2 * LOG_ERR_MAX]; /* a path, then what is wrong with its token */

	*failed = 0;
	if (!file[0])
		return NULL;
	cred = credential_load(file, time_now_ms() / 1000, err, sizeof(err));
	if (cred &&
	    credential_settle_instance(cred, cfg->instance_id, sizeof(cfg->instance_id),
				       cfg->instance_id_given, err, sizeof(err)) < 0) {
		credential_free(cred);
		cred = NULL;
	}
	if (!cred) {
		fprintf(stderr, "ptygate-sidecar: --instance-token-file: %s\n", err);
		*failed = 1;
	}
	return cred;
}

int main(int argc, char **argv)
{
	struct sidecar_config cfg;
	struct credential *cred;
	struct dialer_group *dialers = NULL;
	struct server *srv;
	int rc, failed;

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
	log_set_format(cfg.log_format);
	log_detect_journal();
	if (cfg.export_session[0])
		return export_asciicast(&cfg, cfg.export_session, stdout);
	cred = load_credential(&cfg, &failed);
	if (failed)
		return 1;
	srv = server_new(&cfg);
	if (!srv) {
		credential_free(cred);
		return 1;
	}
	/* The group also watches the credential file, dialling or not. */
	if (cred)
		dialers = dialer_group_new(srv, &cfg, cred, NULL);
	rc = server_run(srv);
	/* Before server_free: the dialled links are the server's to close,
	   like the accepted ones. */
	dialer_group_free(dialers);
	server_free(srv);
	credential_free(cred);
	return rc < 0 ? 1 : 0;
}
