/* unit: cli */
/* cli/manpage.c: ptygate(1) names every command main dispatches to and
   every option each command's parser takes (read from the getopt tables
   themselves), each with its value's name and a description, and the
   page's roff keeps dashes escaped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attach.h"
#include "completion.h"
#include "manpage.h"
#include "run.h"
#include "sessions.h"
#include "token.h"

/* The page as one string (caller frees). Not inlined: GCC 12 at -O3
   then takes the returned text for open_memstream's dangling local. */
__attribute__((noinline)) static char *page(void)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);

	assert_non_null(f);
	manpage_print(f);
	assert_int_equal(fclose(f), 0);
	return text;
}

/* "\-\-name" as roff writes an option's long name. */
static void roff_option(const char *name, char *out, size_t cap)
{
	size_t n = (size_t)snprintf(out, cap, "\\fB\\-\\-");

	for (; *name && n + 3 < cap; name++) {
		if (*name == '-')
			out[n++] = '\\';
		out[n++] = *name;
	}
	snprintf(out + n, cap - n, "\\fR");
}

/* The command of the page named name, or NULL. */
static const struct manpage_cmd *page_cmd(const char *name)
{
	for (const struct manpage_cmd *c = manpage_cmds; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

/* Every option of the parser's table opts is in the page, in name's
   section, with its documentation matching what the parser takes. */
static void check_parser(const char *text, const char *name, const struct option *opts)
{
	const struct manpage_cmd *c = page_cmd(name);
	char heading[128], want[128];
	const char *section, *next;

	assert_non_null(c);
	snprintf(heading, sizeof(heading), ".SS \"ptygate %s\"", name);
	section = strstr(text, heading);
	assert_non_null(section);
	next = strstr(section + 1, ".SS ");
	for (const struct option *o = opts; o->name; o++) {
		const struct cli_optdoc *d = c->docs;
		const char *at;

		while (d->name && strcmp(d->name, o->name))
			d++;
		assert_non_null(d->name);
		assert_int_equal(d->val, o->val);
		assert_int_equal(d->arg != NULL, o->has_arg == required_argument);
		assert_true(d->help && *d->help);
		roff_option(o->name, want, sizeof(want));
		at = strstr(section, want);
		if (!at || (next && at > next))
			fail_msg("ptygate %s --%s is not in its section", name, o->name);
	}
}

static void test_every_parser_option(void **state)
{
	char *text = page();

	(void)state;
	check_parser(text, "token keygen", token_keygen_opts);
	check_parser(text, "token mint", token_mint_opts);
	check_parser(text, "sessions", sessions_opts);
	check_parser(text, "attach", attach_opts);
	check_parser(text, "run", run_opts);
	free(text);
}

/* Every command main dispatches to has its section, and each of its
   options its entry (completion's table is main's; token's verbs keep
   their tables to themselves, checked above). */
static void test_every_command(void **state)
{
	char *text = page();
	char heading[128];

	(void)state;
	for (const struct cli_command *c = completion_commands; c->name; c++) {
		snprintf(heading, sizeof(heading), ".SS \"ptygate %s", c->name);
		assert_non_null(strstr(text, heading));
		if (c->opts)
			check_parser(text, c->name, c->opts);
	}
	free(text);
}

/* The offset of the first dash roff would take as a hyphen (one without
   a backslash before it), SIZE_MAX when there is none. */
static size_t bare_dash(const char *text)
{
	for (const char *p = strchr(text, '-'); p; p = strchr(p + 1, '-'))
		if (p == text || p[-1] != '\\')
			return (size_t)(p - text);
	return SIZE_MAX;
}

static void test_sections_and_escapes(void **state)
{
	static const char *const sections[] = {
	    ".TH \"PTYGATE\" \"1\"", ".SH SYNOPSIS",	".SH DESCRIPTION",
	    ".SH COMMANDS",	     ".SH ENVIRONMENT", ".SH FILES",
	    ".SH \"EXIT STATUS\"",   ".SH EXAMPLES",	".SH \"SEE ALSO\"",
	    "PTYGATE_TOKEN",	     "\\-\\-help\\-man"};
	char *text = page();

	(void)state;
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		assert_non_null(strstr(text, sections[i]));
	/* Every dash of the text is escaped: roff would hyphenate a bare one. */
	size_t bare = bare_dash(text);
	if (bare != SIZE_MAX)
		fail_msg("a bare dash at ...%.20s", text + (bare < 10 ? 0 : bare - 10));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_parser_option),
	    cmocka_unit_test(test_every_command),
	    cmocka_unit_test(test_sections_and_escapes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
