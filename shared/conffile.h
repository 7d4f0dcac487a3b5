/* conffile: the line reading every config-like file shares (a daemon's
   config file, the gateway's instances file): lines of bounded length,
   no control bytes but tabs (a CRLF ending allowed), blanks trimmed. */
#ifndef PTG_CONFFILE_H
#define PTG_CONFFILE_H

#include <stddef.h>

#define CONFFILE_LINE_MAX 8192

/* What a line is given to: the line without its '\n', NUL-terminated (it
   may be changed), and its number. On failure it says why in why, or
   leaves why empty when it reported the failure itself. */
typedef int (*conffile_line_fn)(char *line, unsigned lineno, void *ctx, char *why,
				size_t whylen);

/* Calls fn on each line of text[0, len) until one fails; a line too long
   or holding a control byte is refused before fn sees it. Returns 0 or
   -EINVAL with *lineno the line that failed. */
int conffile_lines(const char *text, size_t len, conffile_line_fn fn, void *ctx,
		   unsigned *lineno, char *why, size_t whylen);
/* Strips spaces and tabs (and a line's CR or LF) at both ends, in place. */
char *conffile_trim(char *s);

#endif
