/* log: "TS LEVEL ident [ctx] message" lines on stderr. Each line is
   built in memory and written with one write(2), so lines from several
   processes sharing stderr do not interleave. Control characters are
   replaced so that text from the network cannot forge log lines. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "timeutil.h"

#define LOG_LINE_MAX 4096

static enum log_level level = LOG_INFO;
static char ident_buf[64] = "ptygate";

static const char *const names[] = {
    [LOG_DEBUG] = "DEBUG",
    [LOG_INFO] = "INFO",
    [LOG_WARN] = "WARN",
    [LOG_ERROR] = "ERROR",
};

void log_set_level(enum log_level lvl)
{
	level = lvl;
}

int log_level_parse(const char *s, enum log_level *out)
{
	static const char *const lower[] = {"debug", "info", "warn", "error"};
	unsigned i;

	for (i = 0; i < sizeof(lower) / sizeof(lower[0]); i++) {
		if (strcmp(s, lower[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void log_set_ident(const char *ident)
{
	snprintf(ident_buf, sizeof(ident_buf), "%s", ident);
}

/* Replaces control characters (tab aside) in p[0..n) with '?'. */
static void sanitize(char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			p[i] = '?';
	}
}

void log_msg(enum log_level lvl, const char *ctx, const char *fmt, ...)
{
	char line[LOG_LINE_MAX];
	char ts[TS_STRLEN + 1];
	size_t n, head;
	va_list ap;
	int r;

	if (lvl < level || lvl > LOG_ERROR)
		return;
	time_format_ms(time_now_ms(), ts);
	r = ctx ? snprintf(line, sizeof(line), "%s %s %s [%s] ", ts, names[lvl],
			   ident_buf, ctx)
		: snprintf(line, sizeof(line), "%s %s %s ", ts, names[lvl], ident_buf);
	head = r < 0 ? 0 : (size_t)r < sizeof(line) - 1 ? (size_t)r : sizeof(line) - 1;
	va_start(ap, fmt);
	r = vsnprintf(line + head, sizeof(line) - head, fmt, ap);
	va_end(ap);
	n = head + (r < 0 ? 0 : (size_t)r);
	/* Keep one byte for the newline; long lines are cut. */
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	sanitize(line + strlen(ts), n - strlen(ts));
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, n);
}
