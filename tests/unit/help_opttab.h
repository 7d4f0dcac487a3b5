/* help_opttab: what the daemons' config tests check of an option table
   (shared/opttab.h): every option is in --help and the manual page, every
   file key in the config file's manual page, and each number's range is
   the table's: LO and HI taken and stored, LO-1 and HI+1 refused with an
   error that states the table's range. */
#ifndef PTG_TEST_HELP_OPTTAB_H
#define PTG_TEST_HELP_OPTTAB_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opttab.h"

/* Parses the daemon's required options and opt=value into cfg (after its
   defaults); returns the parser's result (0: taken). */
typedef int (*help_opttab_try_fn)(void *cfg, const char *opt, const char *value);

/* What fn(t, f) wrote, malloc'd. */
static inline char *help_opttab_print(const struct opttab *t,
				      void (*fn)(const struct opttab *, FILE *))
{
	FILE *f = tmpfile();
	char *text;
	long n;

	if (!f)
		return NULL;
	fn(t, f);
	n = ftell(f);
	text = calloc(1, (size_t)n + 1);
	rewind(f);
	if (fread(text, 1, (size_t)n, f) != (size_t)n)
		text[0] = '\0';
	fclose(f);
	return text;
}

/* s with roff's escaped dashes, as the manual pages print names. */
static inline void help_opttab_roff(const char *s, char *out, size_t cap)
{
	size_t n = 0;

	for (; *s && n + 3 < cap; s++) {
		if (*s == '-')
			out[n++] = '\\';
		out[n++] = *s;
	}
	out[n] = '\0';
}

/* Every option of t in --help and the manual page, every file key in the
   config file's page, and nothing else there. Returns the options seen. */
static inline int help_opttab_check_documented(const struct opttab *t)
{
	char *help = help_opttab_print(t, opttab_print_help);
	char *man = help_opttab_print(t, opttab_print_man);
	char *conf = help_opttab_print(t, opttab_print_man_conf);
	char want[256], esc[200];
	int seen = 0;

	for (size_t i = 0; i < t->n_opts; i++) {
		const struct opttab_opt *o = &t->opts[i];
		int key = o->type != OPTTAB_SECTION && o->type < OPTTAB_CONFIG &&
			  !(o->flags & OPTTAB_CLI_ONLY);

		if (o->type == OPTTAB_SECTION)
			continue;
		snprintf(want, sizeof(want), "\n  --%s%s%s", o->name, o->arg ? " " : "",
			 o->arg ? o->arg : "");
		if (!strstr(help, want))
			fail_msg("--help lacks '%s'", want + 1);
		help_opttab_roff(o->name, esc, sizeof(esc));
		snprintf(want, sizeof(want), "\n\\fB\\-\\-%s\\fR", esc);
		if (!strstr(man, want))
			fail_msg("the manual page lacks --%s", o->name);
		snprintf(want, sizeof(want), "\n\\fB%s\\fR = ", esc);
		if (key != (strstr(conf, want) != NULL))
			fail_msg("the config file's page %s key %s",
				 key ? "lacks" : "has", o->name);
		seen++;
	}
	free(help);
	free(man);
	free(conf);
	return seen;
}

/* try(cfg, opt, v) with stderr captured into err (cleared first). */
static inline int help_opttab_try(help_opttab_try_fn try, void *cfg, const char *opt,
				  uint64_t v, char *err, size_t cap)
{
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO), rc;
	char s[24], *opt_dash = NULL;
	size_t n;

	snprintf(s, sizeof(s), "%" PRIu64, v);
	if (asprintf(&opt_dash, "--%s", opt) < 0)
		return -1;
	fflush(stderr);
	dup2(fileno(f), STDERR_FILENO);
	rc = try(cfg, opt_dash, s);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = (size_t)ftell(f);
	rewind(f);
	n = fread(err, 1, n < cap - 1 ? n : cap - 1, f);
	err[n] = '\0';
	fclose(f);
	free(opt_dash);
	return rc;
}

/* The value a numeric entry's field holds in cfg. */
static inline uint64_t help_opttab_field(const void *cfg, const struct opttab_opt *o)
{
	uint64_t v = 0;
	uint32_t v32;

	if (o->type == OPTTAB_U64) {
		memcpy(&v, (const char *)cfg + o->off, sizeof(v));
	} else {
		memcpy(&v32, (const char *)cfg + o->off, sizeof(v32));
		v = v32;
	}
	return v;
}

/* Each numeric entry's range as the parser holds it. Returns the number
   of entries checked. */
static inline int help_opttab_check_ranges(const struct opttab *t, help_opttab_try_fn try,
					   void *cfg)
{
	char err[1024], want[128];
	int checked = 0;

	for (size_t i = 0; i < t->n_opts; i++) {
		const struct opttab_opt *o = &t->opts[i];
		const uint64_t ends[2] = {o->lo, o->hi};

		if (o->type != OPTTAB_U32 && o->type != OPTTAB_U64)
			continue;
		for (int e = 0; e < 2; e++) {
			if (help_opttab_try(try, cfg, o->name, ends[e], err, sizeof(err)))
				fail_msg("--%s %" PRIu64 " refused: %s", o->name, ends[e],
					 err);
			if (help_opttab_field(cfg, o) != ends[e])
				fail_msg("--%s %" PRIu64 " not stored", o->name, ends[e]);
		}
		snprintf(want, sizeof(want),
			 "--%s: expected a number from %" PRIu64 " to %" PRIu64, o->name,
			 o->lo, o->hi);
		if (!help_opttab_try(try, cfg, o->name, o->hi + 1, err, sizeof(err)) ||
		    !strstr(err, want))
			fail_msg("--%s %" PRIu64 ": want '%s', got '%s'", o->name,
				 o->hi + 1, want, err);
		if (o->lo > 0 &&
		    (!help_opttab_try(try, cfg, o->name, o->lo - 1, err, sizeof(err)) ||
		     !strstr(err, want)))
			fail_msg("--%s %" PRIu64 ": want '%s', got '%s'", o->name,
				 o->lo - 1, want, err);
		checked++;
	}
	return checked;
}

#endif
