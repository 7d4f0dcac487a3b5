/* config: ptygate-gateway's settings parsed from its table
   (config_table.c, whose own parsers are in config_values.c), the
   instances file, and the checks of the settings as a whole. Every value
   is checked and bounded, so the daemon starts only with a configuration
   it can honour, and every error names the option (or the file and line)
   it came from.

   Precedence: the config file is applied first, then the command line,
   so a scalar option given on the command line wins. Repeatable keys
   accumulate; an --instance on the command line replaces the file's
   entry with the same id, and --instance entries (from either) win over
   the instances file's. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conffile.h"
#include "config_int.h"
#include "fdio.h"
#include "id.h"
#include "log.h"
#include "ptg_limits.h"
#include "xalloc.h"

#define CONFIG__PROG "ptygate-gateway"
/* An instances file: GW_MAX_INSTANCES lines of up to CONFFILE_LINE_MAX bytes. */
#define CONFIG__INSTANCES_FILE_MAX ((size_t)GW_MAX_INSTANCES * CONFFILE_LINE_MAX)

void gw_config_defaults(struct gw_config *c)
{
	memset(c, 0, sizeof(*c));
	/* The table's defaults pass its own parsers: a refusal is a bug. */
	if (opttab_defaults(&config__table, c) < 0)
		abort();
	if (gethostname(c->gateway_id, sizeof(c->gateway_id) - 1) < 0 ||
	    !c->gateway_id[0])
		snprintf(c->gateway_id, sizeof(c->gateway_id), "gateway");
}

/* One "ID ADDR" line of an instances file into *out. */
static int instances_line(char *line, struct gw_instance_cfg *out, char *why,
			  size_t whylen)
{
	char *id, *addr, *rest, *save = NULL;
	char err[LOG_ERR_MAX];

	id = strtok_r(line, " \t", &save);
	addr = strtok_r(NULL, " \t", &save);
	rest = strtok_r(NULL, " \t", &save);
	if (!id || !addr || (rest && rest[0] != '#')) {
		snprintf(why, whylen, "expected 'ID ADDR'");
		return -EINVAL;
	}
	if (!id_valid(id)) {
		snprintf(why, whylen, "bad instance id '%.128s'", id);
		return -EINVAL;
	}
	if (addr_parse(addr, &out->addr, err, sizeof(err)) < 0) {
		snprintf(why, whylen, "%s", err);
		return -EINVAL;
	}
	snprintf(out->id, sizeof(out->id), "%s", id);
	return 0;
}

/* One line of an instances file: blank, a comment, or an entry appended
   to out[*n) unless its id is already there. */
static int instances_entry(char *line, struct gw_instance_cfg *out, size_t max, size_t *n,
			   char *why, size_t whylen)
{
	char *p = conffile_trim(line);
	int rc;

	if (!p[0] || p[0] == '#')
		return 0;
	if (*n >= max) {
		snprintf(why, whylen, "more than %zu instances", max);
		return -EINVAL;
	}
	rc = instances_line(p, &out[*n], why, whylen);
	for (size_t i = 0; i < *n && rc == 0; i++)
		if (!strcmp(out[i].id, out[*n].id)) {
			snprintf(why, whylen, "instance '%s' given twice", out[i].id);
			rc = -EINVAL;
		}
	*n += rc == 0;
	return rc;
}

struct instances_ctx {
	struct gw_instance_cfg *out;
	size_t max, *n;
};

static int instances_each(char *line, unsigned lineno, void *ctx, char *why,
			  size_t whylen)
{
	struct instances_ctx *in = ctx;

	return instances_entry(line, in->out, in->max, in->n, why, whylen);
}

int gw_config_parse_instances(const char *text, size_t len, const char *name,
			      struct gw_instance_cfg *out, size_t max, size_t *n,
			      char *err, size_t errlen)
{
	struct instances_ctx ctx = {out, max, n};
	char why[LOG_ERR_MAX];
	unsigned lineno;
	int rc;

	*n = 0;
	rc = conffile_lines(text, len, instances_each, &ctx, &lineno, why, sizeof(why));
	if (rc < 0) {
		/* A long path cuts the reason short; the file and line stay. */
		if (snprintf(err, errlen, "%s:%u: %s", name, lineno, why) < 0)
			err[0] = '\0';
		*n = 0;
	}
	return rc;
}

int gw_config_read_instances(const char *path, struct gw_instance_cfg *out, size_t max,
			     size_t *n, char *err, size_t errlen)
{
	struct buf text = BUF_INIT;
	int rc;

	*n = 0;
	/* FDIO_REGULAR: a FIFO would stall the reload (SIGHUP) for ever. */
	if (fd_read_file(path, FDIO_REGULAR, CONFIG__INSTANCES_FILE_MAX, &text, err,
			 errlen) < 0)
		return -EINVAL;
	rc = gw_config_parse_instances((const char *)buf_head(&text), buf_size(&text),
				       path, out, max, n, err, errlen);
	buf_free(&text);
	return rc;
}

/* Adds the instances file's entries whose id no --instance gave. */
static int merge_instances_file(struct gw_config *c)
{
	struct gw_instance_cfg *tmp = xcalloc(GW_MAX_INSTANCES, sizeof(*tmp));
	char err[LOG_ERR_MAX];
	size_t n, have = c->n_instances;
	int rc;

	rc = gw_config_read_instances(c->instances_file, tmp, GW_MAX_INSTANCES, &n, err,
				      sizeof(err));
	if (rc < 0)
		fprintf(stderr, CONFIG__PROG ": --instances-file: %s\n", err);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (config__instance_find(c, tmp[i].id, 0, have))
			continue;
		if (c->n_instances >= GW_MAX_INSTANCES) {
			fprintf(stderr, CONFIG__PROG ": more than %d instances\n",
				GW_MAX_INSTANCES);
			rc = -EINVAL;
			break;
		}
		c->instances[c->n_instances++] = tmp[i];
	}
	free(tmp);
	return rc;
}

static int check(struct gw_config *c)
{
	c->n_flag_instances = c->n_instances;
	if (c->instances_file[0] && merge_instances_file(c) < 0)
		return -EINVAL;
	if (!c->n_keys) {
		fprintf(stderr,
			CONFIG__PROG ": no token verification key: give "
				     "--hs256-secret-file or --ed25519-public-key\n");
		return -EINVAL;
	}
	if (!c->n_instances && !c->n_link_listen) {
		fprintf(stderr,
			CONFIG__PROG ": no instance: give --instance ID=ADDR, "
				     "--instances-file FILE or --link-listen ADDR\n");
		return -EINVAL;
	}
	if (!c->n_link_listen != !c->n_link_keys) {
		fprintf(stderr,
			CONFIG__PROG ": --link-listen and --link-key go together\n");
		return -EINVAL;
	}
	if (!c->registry_user[0] != !c->registry_password_file[0]) {
		fprintf(stderr, CONFIG__PROG ": --registry-user and "
					     "--registry-password-file go together\n");
		return -EINVAL;
	}
	if (!c->fleet_cert[0] != !c->fleet_key[0]) {
		fprintf(stderr,
			CONFIG__PROG ": --fleet-cert and --fleet-key go together\n");
		return -EINVAL;
	}
	if (c->fleet_listen_host[0] &&
	    (!c->fleet_secret_file[0] || !c->fleet_cacert[0] || !c->fleet_cert[0])) {
		fprintf(stderr,
			CONFIG__PROG ": --fleet-listen needs --fleet-secret-file, "
				     "--fleet-cacert, --fleet-cert and --fleet-key\n");
		return -EINVAL;
	}
	if (!c->tls_cert[0] != !c->tls_key[0]) {
		fprintf(stderr, CONFIG__PROG ": --tls-cert and --tls-key go together\n");
		return -EINVAL;
	}
	if (c->admin_host[0] && c->admin_port && c->admin_port == c->listen_port &&
	    !strcmp(c->admin_host, c->listen_host)) {
		fprintf(stderr,
			CONFIG__PROG ": --admin-listen: same address as --listen\n");
		return -EINVAL;
	}
	return 0;
}

int gw_config_parse(struct gw_config *c, int argc, char **argv)
{
	int rc = opttab_parse(&config__table, c, argc, argv);

	if (rc == 0)
		rc = check(c);
	if (rc < 0) {
		fputs("Try '" CONFIG__PROG " --help'.\n", stderr);
		return -EINVAL;
	}
	return rc;
}
