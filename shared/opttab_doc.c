/* opttab_doc: a daemon's --help and manual pages (roff), made from its
   option table (see opttab.h). */
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "conffile.h"
#include "opttab_int.h"

#define DOC_WIDTH    79	  /* --help lines end before this column */
#define DOC_TEXT_MAX 1024 /* an option's help with its range and default */
#define DOC_NAME_MAX 128  /* a program's name, escaped */

/* The text said of o: its help, whether it repeats or is re-read, its
   range and its default. */
static void describe(const struct opttab *t, const struct opttab_opt *o, char *out,
		     size_t cap)
{
	size_t n = (size_t)snprintf(out, cap, "%s", o->help ? o->help : "");

	if ((o->flags & OPTTAB_REPEAT) && n < cap)
		n += (size_t)snprintf(out + n, cap - n, "; repeatable");
	if ((o->flags & OPTTAB_RELOAD) && t->reload_text && n < cap)
		n += (size_t)snprintf(out + n, cap - n, "; %s", t->reload_text);
	if (opttab__is_number(o) && n < cap)
		n += (size_t)snprintf(out + n, cap - n, ", %" PRIu64 "-%" PRIu64, o->lo,
				      o->hi);
	if (o->def && (o->flags & OPTTAB_DEF_DOC) && n < cap)
		snprintf(out + n, cap - n, " (default: %s)", o->def);
	else if (o->def && n < cap)
		snprintf(out + n, cap - n, " (%s)", o->def);
}

/* Prints text's words from column col, wrapping before DOC_WIDTH to
   column indent; ends the line. */
static void wrap(FILE *out, const char *text, size_t col, size_t indent)
{
	const char *p = text;
	int first = 1;

	while (*p) {
		size_t len;

		p += strspn(p, " ");
		len = strcspn(p, " ");
		if (!len)
			break;
		if (!first && col + 1 + len >= DOC_WIDTH) {
			fprintf(out, "\n%*s", (int)indent, "");
			col = indent;
		} else if (!first) {
			fputc(' ', out);
			col++;
		}
		fprintf(out, "%.*s", (int)len, p);
		col += len;
		p += len;
		first = 0;
	}
	fputc('\n', out);
}

/* Paragraphs of text, split by blank lines, each wrapped. */
static void paragraphs(FILE *out, const char *text)
{
	char para[DOC_TEXT_MAX];

	while (text && *text) {
		const char *end = strstr(text, "\n\n");
		size_t len = end ? (size_t)(end - text) : strlen(text);

		snprintf(para, sizeof(para), "%.*s", (int)len, text);
		for (char *q = para; *q; q++)
			if (*q == '\n')
				*q = ' ';
		wrap(out, para, 0, 0);
		text = end ? end + 2 : NULL;
		if (text)
			fputc('\n', out);
	}
}

void opttab_print_help(const struct opttab *t, FILE *out)
{
	char text[DOC_TEXT_MAX];

	fprintf(out, "Usage: %s\n\n", t->usage);
	paragraphs(out, t->intro);
	for (size_t i = 0; i < t->n_opts; i++) {
		const struct opttab_opt *o = &t->opts[i];
		int col;

		if (!opttab__is_option(o)) {
			fprintf(out, "\n%s:\n", o->help);
			continue;
		}
		col = fprintf(out, "  --%s%s%s", o->name, o->arg ? " " : "",
			      o->arg ? o->arg : "");
		describe(t, o, text, sizeof(text));
		if (col + 2 > (int)t->help_col) {
			fprintf(out, "\n%*s", (int)t->help_col, "");
		} else {
			fprintf(out, "%*s", (int)t->help_col - col, "");
		}
		wrap(out, text, t->help_col, t->help_col);
	}
	if (t->outro) {
		fputc('\n', out);
		paragraphs(out, t->outro);
	}
}

/* ---- manual pages ---- */

/* len bytes of text with roff's special characters escaped: backslashes,
   dashes, and a dot or quote at a line's start, which roff would read as
   a request. */
static void roff_n(FILE *out, const char *text, size_t len)
{
	bool bol = true;

	for (const char *p = text; p < text + len; p++) {
		if (bol && (*p == '.' || *p == '\''))
			fputs("\\&", out);
		if (*p == '\\')
			fputs("\\e", out);
		else if (*p == '-')
			fputs("\\-", out);
		else
			fputc(*p, out);
		bol = *p == '\n';
	}
}

void opttab_roff(FILE *out, const char *text)
{
	roff_n(out, text, strlen(text));
}

void opttab_roff_paragraphs(FILE *out, const char *text)
{
	while (text && *text) {
		const char *end = strstr(text, "\n\n");
		size_t len = end ? (size_t)(end - text) : strlen(text);

		fputs(".PP\n", out);
		roff_n(out, text, len);
		fputc('\n', out);
		text = end ? end + 2 : NULL;
	}
}

void opttab_roff_option_head(FILE *out, char short_name, const char *name,
			     const char *arg)
{
	fputs(".TP\n", out);
	if (short_name)
		fprintf(out, "\\fB\\-%c\\fR, ", short_name);
	fputs("\\fB\\-\\-", out);
	opttab_roff(out, name);
	fputs("\\fR", out);
	if (arg) {
		fputs(" \\fI", out);
		opttab_roff(out, arg);
		fputs("\\fR", out);
	}
	fputc('\n', out);
}

static void man_header(const struct opttab *t, FILE *out, const char *suffix, int section)
{
	char upper[128];
	size_t n = (size_t)snprintf(upper, sizeof(upper), "%s%s", t->prog, suffix);

	for (size_t i = 0; i < n && i < sizeof(upper); i++)
		if (upper[i] >= 'a' && upper[i] <= 'z')
			upper[i] = (char)(upper[i] - 'a' + 'A');
	fprintf(out, ".\\\" Made by %s --help-man%s from its option table.\n", t->prog,
		section == 5 ? "-conf" : "");
	fprintf(out, ".TH \"%s\" \"%d\" \"\" \"ptygate %s\" \"ptygate\"\n", upper,
		section, PTG_VERSION);
}

/* One entry of OPTIONS (section 8) or of KEYS (section 5). */
static void man_entry(const struct opttab *t, const struct opttab_opt *o, FILE *out,
		      bool as_key)
{
	char text[DOC_TEXT_MAX];

	if (!opttab__is_option(o)) {
		fputs(".SS \"", out);
		opttab_roff(out, o->help);
		fputs("\"\n", out);
		return;
	}
	if (as_key && !opttab__is_key(o))
		return;
	if (as_key) {
		fputs(".TP\n", out);
		fputs("\\fB", out);
		opttab_roff(out, o->name);
		fputs("\\fR = ", out);
		fputs("\\fI", out);
		opttab_roff(out, o->type == OPTTAB_SWITCH ? "true|false" : o->arg);
		fputs("\\fR\n", out);
	} else {
		opttab_roff_option_head(out, '\0', o->name, o->arg);
	}
	describe(t, o, text, sizeof(text));
	opttab_roff(out, text);
	fputs(".\n", out);
}

/* The usage lines, each without its indent. */
static void synopsis(const struct opttab *t, FILE *out)
{
	char line[DOC_TEXT_MAX];

	for (const char *p = t->usage; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		opttab_roff(out, line + strspn(line, " "));
		fputc('\n', out);
		p = nl ? nl + 1 : NULL;
	}
}

/* The program's name with its dashes escaped, for roff text. */
static const char *roff_prog(const struct opttab *t, char *buf, size_t cap)
{
	size_t n = 0;

	for (const char *p = t->prog; *p && n + 3 < cap; p++) {
		if (*p == '-')
			buf[n++] = '\\';
		buf[n++] = *p;
	}
	buf[n] = '\0';
	return buf;
}

/* "\fBNAME\fR(SECTION)" for SEE ALSO. */
static void man_ref(FILE *out, const char *name, const char *suffix, int section)
{
	fputs("\\fB", out);
	opttab_roff(out, name);
	fprintf(out, "%s\\fR(%d)", suffix, section);
}

void opttab_print_man(const struct opttab *t, FILE *out)
{
	char prog[DOC_NAME_MAX];

	man_header(t, out, "", 8);
	fputs(".SH NAME\n", out);
	opttab_roff(out, t->prog);
	fputs(" \\- ", out);
	opttab_roff(out, t->summary);
	fputs("\n.SH SYNOPSIS\n.nf\n", out);
	synopsis(t, out);
	fputs(".fi\n.SH DESCRIPTION\n", out);
	opttab_roff_paragraphs(out, t->intro);
	fputs(".SH OPTIONS\n", out);
	for (size_t i = 0; i < t->n_opts; i++)
		man_entry(t, &t->opts[i], out, false);
	fputs(".SH \"CONFIGURATION FILE\"\n.PP\n", out);
	fprintf(out,
		"Every option but \\fB\\-\\-config\\fR and the ones that print and "
		"exit can be given in the file named by \\fB\\-\\-config\\fR, as "
		"\\fIkey\\fR = \\fIvalue\\fR lines with the option's name as the key: "
		"see \\fB%s.conf\\fR(5).\n",
		roff_prog(t, prog, sizeof(prog)));
	if (t->outro) {
		fputs(".SH \"EXIT STATUS\"\n", out);
		opttab_roff_paragraphs(out, t->outro);
	}
	if (t->man_text)
		fputs(t->man_text, out);
	fputs(".SH \"SEE ALSO\"\n", out);
	man_ref(out, t->prog, ".conf", 5);
	fputs(", ", out);
	man_ref(out, "ptygate", "", 1);
	fputc('\n', out);
}

void opttab_print_man_conf(const struct opttab *t, FILE *out)
{
	char prog[DOC_NAME_MAX];

	man_header(t, out, ".conf", 5);
	roff_prog(t, prog, sizeof(prog));
	fprintf(out, ".SH NAME\n%s.conf \\- the configuration file of %s\n", prog, prog);
	fputs(".SH SYNOPSIS\n", out);
	opttab_roff(out, t->conf_path);
	fprintf(out,
		"\n.SH DESCRIPTION\n.PP\n"
		"\\fB%s \\-\\-config\\fR \\fIFILE\\fR reads its settings from "
		"\\fIFILE\\fR before its command line. Each line is "
		"\\fIkey\\fR = \\fIvalue\\fR, where the key is a long option's name "
		"without the dashes and the value what the option takes; a value may be "
		"put in double quotes. Blank lines and lines starting with # are "
		"ignored. A switch takes \\fBtrue\\fR or \\fBfalse\\fR.\n.PP\n"
		"An option given on the command line wins over the file's key; a "
		"repeatable key may be given on several lines, and its command-line "
		"values are added to the file's. An unknown key, a bad value, a line "
		"over %d bytes or a control character (tabs aside) stops the daemon "
		"with the file's name and line.\n.SH KEYS\n",
		roff_prog(t, prog, sizeof(prog)), CONFFILE_LINE_MAX - 2);
	for (size_t i = 0; i < t->n_opts; i++)
		man_entry(t, &t->opts[i], out, true);
	fputs(".SH \"SEE ALSO\"\n", out);
	man_ref(out, t->prog, "", 8);
	fputc('\n', out);
}
