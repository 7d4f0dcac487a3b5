/* conffile: line reading for config-like files (see conffile.h). */
#include "conffile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

char *conffile_trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' ||
		     s[n - 1] == '\n'))
		s[--n] = '\0';
	return s;
}

/* Whether line[0, n) holds a control byte other than a tab (a final CR
   of a CRLF ending aside): one inside a token would stay in it. */
static int has_control(const char *line, size_t n)
{
	if (n && line[n - 1] == '\r')
		n--;
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)line[i] < 0x20 && line[i] != '\t') || line[i] == 0x7f)
			return 1;
	return 0;
}

int conffile_lines(const char *text, size_t len, conffile_line_fn fn, void *ctx,
		   unsigned *lineno, char *why, size_t whylen)
{
	char line[CONFFILE_LINE_MAX];
	size_t off = 0;
	int rc = 0;

	*lineno = 0;
	while (rc == 0 && off < len) {
		const char *nl = memchr(text + off, '\n', len - off);
		size_t end = nl ? (size_t)(nl - text) : len;

		++*lineno;
		why[0] = '\0';
		if (end - off >= sizeof(line) - 1) {
			snprintf(why, whylen, "line too long");
			rc = -EINVAL;
		} else if (has_control(text + off, end - off)) {
			snprintf(why, whylen, "control character in line");
			rc = -EINVAL;
		} else {
			memcpy(line, text + off, end - off);
			line[end - off] = '\0';
			rc = fn(line, *lineno, ctx, why, whylen);
		}
		off = end + 1;
	}
	return rc;
}
