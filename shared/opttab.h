/* opttab: a daemon's options as one table, from which its command line
   (getopt_long), its config file's keys ("key = value", the same names
   as the long options), its --help and its manual pages are all made.

   Each entry names a field of the daemon's settings struct (offset and
   size) and how a value is parsed into it: a bounded number, a string,
   a switch, or the daemon's own parser (OPTTAB_CUSTOM). A default is
   written as it would be given and applied through the same parser, so
   the text --help shows is the value the daemon starts with.

   Parsing order: the config file (--config FILE) first, then the command
   line, so a single-valued option given on the command line wins;
   repeatable ones accumulate. */
#ifndef PTG_OPTTAB_H
#define PTG_OPTTAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum opttab_type {
	OPTTAB_SECTION, /* a heading of --help and the manual; help is its title */
	OPTTAB_SWITCH,	/* no value: sets an int field to 1 ("true"/"false" in a file) */
	OPTTAB_U32,	/* a decimal number within [lo, hi] into a uint32_t */
	OPTTAB_U64,	/* the same into a uint64_t */
	OPTTAB_STR,	/* 1 to size-1 bytes into a char[size] */
	OPTTAB_CUSTOM,	/* parsed by struct opttab's custom function */
	OPTTAB_CONFIG,	/* --config FILE: read before the command line */
	OPTTAB_HELP,	/* --help: prints the help text */
	OPTTAB_VERSION, /* --version */
	OPTTAB_MAN,	/* prints the daemon's manual page (roff) */
	OPTTAB_MAN_CONF /* prints its config file's manual page (roff) */
};

#define OPTTAB_REPEAT	1u /* may be given again, each adding one */
#define OPTTAB_RELOAD	2u /* re-read while running (struct opttab's reload_text) */
#define OPTTAB_DEF_DOC	4u /* def describes the default; it is not applied */
#define OPTTAB_CLI_ONLY 8u /* a command-line option only, never a file key */

struct opttab_opt {
	const char *name; /* the long option without "--", and the file key */
	const char *arg;  /* the value's name in the help ("N", "FILE"); NULL: none */
	enum opttab_type type;
	unsigned flags;
	uint64_t lo, hi;  /* OPTTAB_U32, OPTTAB_U64: the range taken */
	size_t off, size; /* the field in the settings struct */
	const char *def;  /* the default as given on the command line; NULL: none */
	const char *help; /* one paragraph, wrapped when printed */
	int id;		  /* for the custom parser */
};

/* An entry for a numeric field of settings struct type T. */
#define OPTTAB_NUM(T, nm, ar, ty, l, h, field, df, hl)                                   \
	{                                                                                \
		.name = nm, .arg = ar, .type = ty, .lo = l, .hi = h,                     \
		.off = offsetof(T, field), .size = sizeof(((T *)0)->field), .def = df,   \
		.help = hl                                                               \
	}
/* An entry for a char[] field of T. */
#define OPTTAB_STRING(T, nm, ar, field, df, hl)                                          \
	{                                                                                \
		.name = nm, .arg = ar, .type = OPTTAB_STR, .off = offsetof(T, field),    \
		.size = sizeof(((T *)0)->field), .def = df, .help = hl                   \
	}
/* An entry for an int switch of T. */
#define OPTTAB_FLAG(T, nm, field, hl)                                                    \
	{                                                                                \
		.name = nm, .type = OPTTAB_SWITCH, .off = offsetof(T, field),            \
		.size = sizeof(((T *)0)->field), .help = hl                              \
	}

struct opttab;

/* Where a value came from: file NULL is the command line. table is the
   table parsing it, so a daemon's own parser reports through it
   (opttab_report(src->table, ...)) without naming the table itself. */
struct opttab_src {
	const char *file;
	unsigned line;
	const struct opttab *table;
};

struct opttab {
	const char *prog;	 /* "ptygate-gateway" */
	const char *summary;	 /* the manual's NAME line, after "prog \-" */
	const char *usage;	 /* the synopsis lines, "Usage: " added to the first */
	const char *intro;	 /* the description; paragraphs split by "\n\n" */
	const char *outro;	 /* after the options in --help (exit status) */
	const char *man_text;	 /* more manual sections, roff, after OPTIONS */
	const char *reload_text; /* said of OPTTAB_RELOAD entries: "re-read on SIGHUP" */
	const char *conf_path;	 /* the config file's usual path, for its manual */
	const struct opttab_opt *opts;
	size_t n_opts;
	unsigned help_col; /* the column of the help text in --help */
	/* Parses arg into cfg for an OPTTAB_CUSTOM entry (arg NULL for a
	   switch on the command line); reports through
	   opttab_report(src->table, ...). */
	int (*custom)(void *cfg, const struct opttab_src *src, const struct opttab_opt *o,
		      const char *arg);
	/* Called after the config file (if any) and before the command line. */
	void (*file_done)(void *cfg);
};

/* Applies every default that is not only described. Returns 0, or
   -EINVAL when one is refused (a table error). */
int opttab_defaults(const struct opttab *t, void *cfg);
/* Parses argv and the --config file into cfg. Returns 0 to run, 1 after
   --help, --version or a manual page was printed, -EINVAL after the
   reason went to stderr. */
int opttab_parse(const struct opttab *t, void *cfg, int argc, char **argv);
/* Prints "PROG: --NAME: " (or "PROG: FILE:LINE: NAME: "), then the message. */
void opttab_report(const struct opttab *t, const struct opttab_src *src, const char *name,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The help text, the manual page (section 8) and the config file's
   manual page (section 5). */
void opttab_print_help(const struct opttab *t, FILE *out);
void opttab_print_man(const struct opttab *t, FILE *out);
void opttab_print_man_conf(const struct opttab *t, FILE *out);
/* Text for a manual page: escaped for roff (backslashes, dashes, and a
   leading dot or quote, which roff would read as a request); and split
   into paragraphs at blank lines, each a .PP. What the CLI's page shares. */
void opttab_roff(FILE *out, const char *text);
void opttab_roff_paragraphs(FILE *out, const char *text);
/* The head of an option's entry (.TP, then "-S, --NAME ARG" in bold and
   italic on one line): short_name '\0' for none, arg NULL for none. The
   entry's text follows it. */
void opttab_roff_option_head(FILE *out, char short_name, const char *name,
			     const char *arg);

#endif
