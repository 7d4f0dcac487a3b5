/* config: ptygate-sidecar's settings parsed from its table
   (config_table.c, whose own parsers are in config_values.c), and the
   checks of the settings as a whole: modes, state keys, the session
   user. */
#include "config.h"

#include <errno.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_int.h"
#include "ptg_limits.h"

void config_defaults(struct sidecar_config *c)
{
	memset(c, 0, sizeof(*c));
	/* The table's defaults pass its own parsers: a refusal is a bug. */
	if (opttab_defaults(&config__table, c) < 0)
		abort();
	c->input_buffer_bytes = 1u << 20;
	c->link_buffer_bytes = 256ull << 20;
	c->task_max_subscribers = 64;
	if (gethostname(c->instance_id, sizeof(c->instance_id) - 1) < 0)
		snprintf(c->instance_id, sizeof(c->instance_id), "local");
}

/* Without a key, state is refused rather than written in clear, unless
   the operator said --state-plaintext. */
static int load_state_keys(struct sidecar_config *c)
{
	bool exporting = c->export_session[0] != '\0';
	char err[LOG_ERR_MAX];

	if (!c->state_dir[0] && !exporting)
		return 0;
	if (sodium_init() < 0) {
		fprintf(stderr, "ptygate-sidecar: libsodium failed to start\n");
		return -EINVAL;
	}
	if (!c->state_key_file[0] && !c->state_plaintext) {
		fprintf(stderr, "ptygate-sidecar: --state-dir needs --state-key-file "
				"(state is sealed at rest) or --state-plaintext\n");
		return -EINVAL;
	}
	if (c->state_key_file[0] && c->state_plaintext) {
		fprintf(stderr, "ptygate-sidecar: --state-key-file and --state-plaintext "
				"exclude each other\n");
		return -EINVAL;
	}
	if (c->state_key_file[0] && seal_load_key(&c->state_keys, c->state_key_file,
						  !exporting, err, sizeof(err)) < 0)
		goto bad;
	for (size_t i = 0; i < c->n_state_old_key_files; i++)
		if (seal_load_key(&c->state_keys, c->state_old_key_files[i], false, err,
				  sizeof(err)) < 0)
			goto bad;
	return 0;
bad:
	fprintf(stderr, "ptygate-sidecar: state key: %s\n", err);
	return -EINVAL;
}

/* 1 for a tcp address on this machine's loopback, where any local
   user may bind the port. */
static int is_loopback_dial(const struct addr *a)
{
	return !strcmp(a->host, "localhost") || !strncmp(a->host, "127.", 4) ||
	       !strcmp(a->host, "::1");
}

/* --session-user keeps session code away from the link: the user must
   exist and differ from the sidecar's, the sidecar must be able to switch
   to it, and the link must be one that user cannot dial (a tcp port on
   loopback is open to every local user). */
static int check_session_user(const struct sidecar_config *c)
{
	const struct passwd *pw;

	if (!c->session_user[0])
		return 0;
	pw = getpwnam(c->session_user);
	if (!pw) {
		fprintf(stderr, "ptygate-sidecar: --session-user: no user '%s'\n",
			c->session_user);
		return -EINVAL;
	}
	if (geteuid() != 0) {
		fprintf(stderr,
			"ptygate-sidecar: --session-user: the sidecar must run as "
			"root to switch to '%s'\n",
			c->session_user);
		return -EINVAL;
	}
	if (pw->pw_uid == 0 || pw->pw_uid == geteuid()) {
		fprintf(stderr,
			"ptygate-sidecar: --session-user: '%s' is the sidecar's own "
			"user (uid %u); choose an unprivileged one\n",
			c->session_user, (unsigned)pw->pw_uid);
		return -EINVAL;
	}
	if (c->listen_given && c->listen.kind == ADDR_TCP) {
		fprintf(stderr,
			"ptygate-sidecar: --session-user: a tcp link can be dialled "
			"by any local user; use unix: or vsock:\n");
		return -EINVAL;
	}
	for (unsigned i = 0; i < c->n_dial; i++) {
		if (c->dial[i].kind == ADDR_TCP && is_loopback_dial(&c->dial[i])) {
			fprintf(
			    stderr,
			    "ptygate-sidecar: --session-user: a session could listen "
			    "on the loopback port of --dial %s:%u while the gateway is "
			    "down and take the credential; use unix: or vsock:\n",
			    c->dial[i].host, c->dial[i].port);
			return -EINVAL;
		}
	}
	return 0;
}

/* --dial presents the instance credential, so it needs one; --listen is
   needed only without --dial. */
static int check_modes(const struct sidecar_config *c)
{
	if (c->n_dial && !c->instance_token_file[0]) {
		fprintf(stderr, "ptygate-sidecar: --dial needs --instance-token-file "
				"(the credential presented to the gateway)\n");
		return -EINVAL;
	}
	if (!c->listen_given && !c->n_dial && !c->export_session[0]) {
		fprintf(stderr, "ptygate-sidecar: --listen ADDR or --dial ADDR is "
				"required\n");
		return -EINVAL;
	}
	return 0;
}

int config_parse(struct sidecar_config *c, int argc, char **argv)
{
	int rc = opttab_parse(&config__table, c, argc, argv);

	if (rc > 0)
		return rc;
	if (rc < 0)
		goto bad;
	if (c->export_session[0] && !c->state_dir[0]) {
		fprintf(stderr,
			"ptygate-sidecar: --export-asciicast needs --state-dir\n");
		goto bad;
	}
	if (load_state_keys(c) < 0)
		return -EINVAL;
	if (check_modes(c) < 0)
		goto bad;
	return check_session_user(c) < 0 ? -EINVAL : 0;
bad:
	fputs("Try 'ptygate-sidecar --help'.\n", stderr);
	return -EINVAL;
}
