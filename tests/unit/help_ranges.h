/* help_ranges: a daemon's --help states each numeric option's range and
   default as "LO-HI" and "(DEFAULT)"; this checks every such entry
   against the option's parser (LO, HI and DEFAULT taken, LO-1 and HI+1
   refused), so the text cannot drift from the bounds in the code. */
#ifndef PTG_TEST_HELP_RANGES_H
#define PTG_TEST_HELP_RANGES_H

#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Parses argv-style options with opt=value added; returns the parser's
   result (0: taken). */
typedef int (*help_try_fn)(const char *opt, const char *value);

/* What show_help (which prints --help to stdout) wrote, malloc'd. */
static inline char *help_capture(void (*show_help)(void))
{
	FILE *f = tmpfile();
	int saved = dup(STDOUT_FILENO);
	char *text;
	long n;

	if (!f || saved < 0)
		return NULL;
	fflush(stdout);
	dup2(fileno(f), STDOUT_FILENO);
	show_help();
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	n = ftell(f);
	text = calloc(1, (size_t)n + 1);
	rewind(f);
	if (fread(text, 1, (size_t)n, f) != (size_t)n)
		text[0] = '\0';
	fclose(f);
	return text;
}

/* Tries opt with v, the parser's refusal messages kept off stderr (where
   cmocka reports a failure). */
static inline int help_try_number(help_try_fn try, const char *opt, uint64_t v)
{
	int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY | O_CLOEXEC),
	    rc;
	char s[24];

	snprintf(s, sizeof(s), "%" PRIu64, v);
	fflush(stderr);
	dup2(null, STDERR_FILENO);
	rc = try(opt, s);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(null);
	return rc;
}

/* Whether the parser refuses v for opt. */
static inline int help_refused(help_try_fn try, const char *opt, uint64_t v)
{
	return help_try_number(try, opt, v) != 0;
}

/* Checks the range and default in one entry ("--opt ..." and its
   continuation lines, [p, end)). Returns how many numbers it stated. */
static inline int help_check_entry(const char *opt, const char *p, const char *end,
				   help_try_fn try)
{
	uint64_t lo, hi, def;
	int found = 0, used;

	for (const char *q = p; q < end; q++) {
		if (!isdigit((unsigned char)*q) || (q > p && q[-1] != ' '))
			continue;
		if (sscanf(q, "%" SCNu64 "-%" SCNu64 "%n", &lo, &hi, &used) == 2 &&
		    (q[used] == ' ' || q[used] == ';' || q[used] == '\n')) {
			if (help_refused(try, opt, lo) || help_refused(try, opt, hi) ||
			    !help_refused(try, opt, hi + 1) ||
			    (lo > 0 && !help_refused(try, opt, lo - 1))) {
				fail_msg("%s: the range %" PRIu64 "-%" PRIu64
					 " in --help is not the parser's",
					 opt, lo, hi);
			}
			found++;
			break;
		}
	}
	for (const char *q = p; q < end; q++) {
		if (*q == '(' && sscanf(q, "(%" SCNu64 ")%n", &def, &used) == 1 &&
		    q[used - 1] == ')') {
			if (help_refused(try, opt, def))
				fail_msg("%s: the default %" PRIu64
					 " in --help is refused",
					 opt, def);
			found++;
		}
	}
	return found;
}

/* Checks every option entry of text; returns how many numbers it checked. */
static inline int help_check_ranges(const char *text, help_try_fn try)
{
	int checked = 0;

	for (const char *line = text; line && *line;) {
		const char *next = strchr(line, '\n'), *end;
		char opt[64];

		/* An entry is "  --opt" and the lines indented deeper after it
		   (which may name other options in their text). */
		if (!strncmp(line, "  --", 4) &&
		    sscanf(line + 2, "%63[a-z0-9-]", opt) == 1) {
			for (end = next; end && strspn(end + 1, " ") > 2;)
				end = strchr(end + 1, '\n');
			checked += help_check_entry(opt, line,
						    end ? end : line + strlen(line), try);
		}
		line = next ? next + 1 : NULL;
	}
	return checked;
}

#endif
