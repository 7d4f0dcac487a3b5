/* opttab: parsing a daemon's command line and config file from its
   option table (see opttab.h; --help and the manual pages are in
   opttab_doc.c). */
#include "opttab.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "conffile.h"
#include "fdio.h"
#include "num.h"
#include "opttab_int.h"
#include "xalloc.h"

/* A config file: every key a few times over, with comments. */
#define OPTTAB_FILE_MAX (1u << 20)
#define OPTTAB_ERR_MAX	512

void opttab_report(const struct opttab *t, const struct opttab_src *src, const char *name,
		   const char *fmt, ...)
{
	va_list ap;

	if (src && src->file)
		fprintf(stderr, "%s: %s:%u: %s: ", t->prog, src->file, src->line, name);
	else
		fprintf(stderr, "%s: --%s: ", t->prog, name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* The entry named name, or NULL. */
static const struct opttab_opt *find(const struct opttab *t, const char *name)
{
	for (size_t i = 0; i < t->n_opts; i++)
		if (opttab__is_option(&t->opts[i]) && !strcmp(t->opts[i].name, name))
			return &t->opts[i];
	return NULL;
}

static int apply_number(const struct opttab *t, void *cfg, const struct opttab_src *src,
			const struct opttab_opt *o, const char *arg)
{
	uint8_t *field = (uint8_t *)cfg + o->off;
	uint64_t v;

	if (num_parse_u64(arg, o->lo, o->hi, &v) < 0) {
		opttab_report(t, src, o->name,
			      "expected a number from %" PRIu64 " to %" PRIu64
			      ", got '%s'",
			      o->lo, o->hi, arg);
		return -EINVAL;
	}
	if (o->type == OPTTAB_U64) {
		memcpy(field, &v, sizeof(v));
	} else {
		uint32_t v32 = (uint32_t)v;
		memcpy(field, &v32, sizeof(v32));
	}
	return 0;
}

static int apply_string(const struct opttab *t, void *cfg, const struct opttab_src *src,
			const struct opttab_opt *o, const char *arg)
{
	size_t n = strlen(arg);

	if (!n || n >= o->size) {
		opttab_report(t, src, o->name, "must be 1 to %zu bytes", o->size - 1);
		return -EINVAL;
	}
	memcpy((char *)cfg + o->off, arg, n + 1);
	return 0;
}

/* On the command line a switch has no value; in a config file it is
   "true" or "false". */
static int apply_switch(const struct opttab *t, void *cfg, const struct opttab_src *src,
			const struct opttab_opt *o, const char *arg)
{
	int v;

	if (!arg || !strcmp(arg, "true")) {
		v = 1;
	} else if (!strcmp(arg, "false")) {
		v = 0;
	} else {
		opttab_report(t, src, o->name, "expected true or false, got '%s'", arg);
		return -EINVAL;
	}
	memcpy((char *)cfg + o->off, &v, sizeof(v));
	return 0;
}

/* Parses one value for o, as the command line would. */
static int apply(const struct opttab *t, void *cfg, const struct opttab_src *src,
		 const struct opttab_opt *o, const char *arg)
{
	switch (o->type) {
	case OPTTAB_U32:
	case OPTTAB_U64:
		return apply_number(t, cfg, src, o, arg);
	case OPTTAB_STR:
		return apply_string(t, cfg, src, o, arg);
	case OPTTAB_SWITCH:
		return apply_switch(t, cfg, src, o, arg);
	case OPTTAB_CUSTOM:
		return t->custom(cfg, src, o, arg);
	default:
		opttab_report(t, src, o->name, "not allowed here");
		return -EINVAL;
	}
}

int opttab_defaults(const struct opttab *t, void *cfg)
{
	const struct opttab_src src = {"(default)", 0, t};

	for (size_t i = 0; i < t->n_opts; i++) {
		const struct opttab_opt *o = &t->opts[i];

		if (opttab__is_key(o) && o->def && !(o->flags & OPTTAB_DEF_DOC) &&
		    apply(t, cfg, &src, o, o->def) < 0)
			return -EINVAL;
	}
	return 0;
}

/* ---- the config file ---- */

struct file_ctx {
	const struct opttab *t;
	void *cfg;
	struct opttab_src *src;
};

/* One "key = value" line; a value may be quoted. */
static int file_line(char *line, unsigned lineno, void *ctx, char *why, size_t whylen)
{
	struct file_ctx *f = ctx;
	const struct opttab_opt *o;
	char *eq, *key, *val;
	size_t n;

	f->src->line = lineno;
	line = conffile_trim(line);
	if (!line[0] || line[0] == '#')
		return 0;
	eq = strchr(line, '=');
	if (!eq) {
		snprintf(why, whylen, "expected 'key = value'");
		return -EINVAL;
	}
	*eq = '\0';
	key = conffile_trim(line);
	val = conffile_trim(eq + 1);
	n = strlen(val);
	if (n >= 2 && val[0] == '"' && val[n - 1] == '"') {
		val[n - 1] = '\0';
		val++;
	}
	o = find(f->t, key);
	if (!o || !opttab__is_key(o)) {
		snprintf(why, whylen, "unknown key '%.128s'", key);
		return -EINVAL;
	}
	return apply(f->t, f->cfg, f->src, o, val); /* it says why itself */
}

static int load_file(const struct opttab *t, void *cfg, const char *path)
{
	struct opttab_src src = {path, 0, t};
	struct file_ctx ctx = {t, cfg, &src};
	struct buf text = BUF_INIT;
	char err[OPTTAB_ERR_MAX];
	unsigned lineno;
	int rc;

	rc = fd_read_file(path, FDIO_REGULAR, OPTTAB_FILE_MAX, &text, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "%s: --config: %s\n", t->prog, err);
		return -EINVAL;
	}
	rc = conffile_lines((const char *)buf_head(&text), buf_size(&text), file_line,
			    &ctx, &lineno, err, sizeof(err));
	if (rc < 0 && err[0])
		fprintf(stderr, "%s: %s:%u: %s\n", t->prog, path, lineno, err);
	buf_free(&text);
	return rc;
}

/* ---- the command line ---- */

/* getopt_long's table: option i of t answers i + 256. */
static struct option *long_options(const struct opttab *t)
{
	struct option *lo = xcalloc(t->n_opts + 1, sizeof(*lo));
	size_t n = 0;

	for (size_t i = 0; i < t->n_opts; i++) {
		const struct opttab_opt *o = &t->opts[i];

		if (!opttab__is_option(o))
			continue;
		lo[n++] =
		    (struct option){o->name, o->arg ? required_argument : no_argument,
				    NULL, (int)i + 256};
	}
	return lo;
}

struct given {
	const struct opttab_opt *opt;
	const char *arg;
};

/* Prints what an action option asks for. Returns 1. */
static int act(const struct opttab *t, const struct opttab_opt *o)
{
	if (o->type == OPTTAB_HELP)
		opttab_print_help(t, stdout);
	else if (o->type == OPTTAB_VERSION)
		printf("%s %s\n", t->prog, PTG_VERSION);
	else if (o->type == OPTTAB_MAN)
		opttab_print_man(t, stdout);
	else
		opttab_print_man_conf(t, stdout);
	return 1;
}

/* Collects the options (getopt checks them), acting at once on --help,
   --version and the manual pages. Returns 0, 1 (acted) or -EINVAL. */
static int collect(const struct opttab *t, int argc, char **argv, struct given *given,
		   size_t *n, const char **config_file)
{
	struct option *lo = long_options(t);
	int opt, rc = 0;

	optind = 0; /* GNU: a full re-initialisation, so parsing can repeat */
	opterr = 1;
	while (rc == 0 && (opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		const struct opttab_opt *o;

		if (opt < 256) {
			rc = -EINVAL;
			break;
		}
		o = &t->opts[opt - 256];
		if (o->type == OPTTAB_CONFIG)
			*config_file = optarg;
		else if (o->type > OPTTAB_CONFIG)
			rc = act(t, o);
		else
			given[(*n)++] = (struct given){o, optarg};
	}
	if (rc == 0 && optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", t->prog, argv[optind]);
		rc = -EINVAL;
	}
	free(lo);
	return rc;
}

int opttab_parse(const struct opttab *t, void *cfg, int argc, char **argv)
{
	struct given *given = xcalloc((size_t)argc + 1, sizeof(*given));
	const struct opttab_src cli = {NULL, 0, t};
	const char *config_file = NULL;
	size_t n = 0;
	int rc;

	rc = collect(t, argc, argv, given, &n, &config_file);
	if (rc == 0 && config_file)
		rc = load_file(t, cfg, config_file);
	if (rc == 0 && t->file_done)
		t->file_done(cfg);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = apply(t, cfg, &cli, given[i].opt, given[i].arg);
	free(given);
	return rc;
}
