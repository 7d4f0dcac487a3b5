/* log: "TS LEVEL ident [ctx] message" lines, or JSON objects, on stderr.
   Each line is built in memory and written with one write(2), so lines
   from several processes sharing stderr do not interleave. Control
   characters are replaced (text) or escaped (JSON) so that text from the
   network cannot forge log lines; in JSON a byte that is not part of
   valid UTF-8 becomes U+FFFD, so every line parses. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "timeutil.h"
#include "utf8.h"

static enum log_level level = LOG_INFO;
static enum log_format format = LOG_FORMAT_TEXT;
static bool journal;
static char ident_buf[64] = "ptygate";

static const char *const names[] = {
    [LOG_DEBUG] = "DEBUG",
    [LOG_INFO] = "INFO",
    [LOG_WARN] = "WARN",
    [LOG_ERROR] = "ERROR",
};
static const char *const lower[] = {"debug", "info", "warn", "error"};
/* sd-daemon(3) priorities: LOG_DEBUG 7, LOG_INFO 6, LOG_WARNING 4, LOG_ERR 3. */
static const char priority[] = {
    [LOG_DEBUG] = '7', [LOG_INFO] = '6', [LOG_WARN] = '4', [LOG_ERROR] = '3'};
/* The context words that become JSON fields of their own. */
static const char *const field_keys[] = {"trace", "principal", "instance", "session",
					 "conn",  "client",    "task",	   "addr"};

void log_set_level(enum log_level lvl)
{
	level = lvl;
}

int log_level_parse(const char *s, enum log_level *out)
{
	unsigned i;

	for (i = 0; i < sizeof(lower) / sizeof(lower[0]); i++) {
		if (strcmp(s, lower[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void log_set_format(enum log_format fmt)
{
	format = fmt;
}

int log_format_parse(const char *s, enum log_format *out)
{
	if (strcmp(s, "text") == 0)
		*out = LOG_FORMAT_TEXT;
	else if (strcmp(s, "json") == 0)
		*out = LOG_FORMAT_JSON;
	else
		return -EINVAL;
	return 0;
}

void log_set_ident(const char *ident)
{
	snprintf(ident_buf, sizeof(ident_buf), "%s", ident);
}

/* True when journal_stream (JOURNAL_STREAM's "DEVICE:INODE") names the
   file open on fd, as systemd documents for a service's stderr. */
static bool log_journal_matches(const char *journal_stream, int fd)
{
	unsigned long long dev, ino;
	struct stat st;
	int used = 0;

	if (!journal_stream ||
	    sscanf(journal_stream, "%llu:%llu%n", &dev, &ino, &used) != 2 ||
	    journal_stream[used] != '\0' || fstat(fd, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

void log_detect_journal(void)
{
	journal = log_journal_matches(getenv("JOURNAL_STREAM"), STDERR_FILENO);
}

/* A bounded line under construction: what does not fit is left out, and
   room for the closing bytes is kept by the callers' caps. */
struct out {
	char *p;
	size_t n, cap;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (n > o->cap - o->n)
		n = o->cap - o->n;
	memcpy(o->p + o->n, s, n);
	o->n += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* Appends s[0..n) as the inside of a JSON string; a sequence is written
   whole or not at all. */
static void put_json(struct out *o, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	char esc[8];
	size_t i = 0, len;

	while (i < n && o->n < o->cap) {
		if (u[i] == '"' || u[i] == '\\') {
			esc[0] = '\\';
			esc[1] = (char)u[i];
			len = 2;
			i++;
		} else if (u[i] < 0x20 || u[i] == 0x7f) {
			len = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", u[i]);
			i++;
		} else if ((len = utf8_seq_len(u + i, n - i)) == 0) {
			len = (size_t)snprintf(esc, sizeof(esc), "\\ufffd");
			i++;
		} else {
			if (len > o->cap - o->n)
				return;
			put(o, s + i, len);
			i += len;
			continue;
		}
		if (len > o->cap - o->n)
			return;
		put(o, esc, len);
	}
}

/* A field is written with its closing quote or not at all. */
static void put_field(struct out *o, const char *key, const char *val, size_t n)
{
	if (o->cap - o->n < strlen(key) + 6)
		return;
	puts_(o, ",\"");
	puts_(o, key);
	puts_(o, "\":\"");
	o->cap--;
	put_json(o, val, n);
	o->cap++;
	puts_(o, "\"");
}

static const char *field_key(const char *word, size_t n, size_t *key_len)
{
	const char *eq = memchr(word, '=', n);
	unsigned i;

	if (!eq)
		return NULL;
	for (i = 0; i < sizeof(field_keys) / sizeof(field_keys[0]); i++) {
		if (strlen(field_keys[i]) == (size_t)(eq - word) &&
		    memcmp(field_keys[i], word, (size_t)(eq - word)) == 0) {
			*key_len = (size_t)(eq - word);
			return field_keys[i];
		}
	}
	return NULL;
}

/* The context's key=value words as fields; the other words, in order,
   as "ctx". */
static void put_ctx(struct out *o, const char *ctx)
{
	char rest[LOG_LINE_MAX];
	struct out r = {rest, 0, sizeof(rest)};
	const char *w = ctx, *end, *key;
	size_t key_len;

	while (*w) {
		while (*w == ' ')
			w++;
		if (!*w)
			break;
		end = strchr(w, ' ');
		if (!end)
			end = w + strlen(w);
		key = field_key(w, (size_t)(end - w), &key_len);
		if (key) {
			put_field(o, key, w + key_len + 1,
				  (size_t)(end - w) - key_len - 1);
		} else {
			if (r.n)
				put(&r, " ", 1);
			put(&r, w, (size_t)(end - w));
		}
		w = end;
	}
	if (r.n)
		put_field(o, "ctx", rest, r.n);
}

static size_t format_json(struct out *o, const char *ts, enum log_level lvl,
			  const char *ctx, const char *msg)
{
	puts_(o, "{\"ts\":\"");
	puts_(o, ts);
	puts_(o, "\",\"level\":\"");
	puts_(o, lower[lvl]);
	puts_(o, "\"");
	put_field(o, "ident", ident_buf, strlen(ident_buf));
	if (ctx)
		put_ctx(o, ctx);
	put_field(o, "msg", msg, strlen(msg));
	/* Room for the closing bytes was kept out of o->cap. */
	o->cap += 2;
	puts_(o, "}\n");
	return o->n;
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

static size_t format_text(struct out *o, const char *ts, enum log_level lvl,
			  const char *ctx, const char *msg)
{
	size_t body;

	puts_(o, ts);
	puts_(o, " ");
	puts_(o, names[lvl]);
	puts_(o, " ");
	puts_(o, ident_buf);
	puts_(o, " ");
	body = o->n;
	if (ctx) {
		puts_(o, "[");
		puts_(o, ctx);
		puts_(o, "] ");
	}
	puts_(o, msg);
	sanitize(o->p + body, o->n - body);
	o->cap += 2;
	puts_(o, "\n");
	return o->n;
}

/* Formats one line into out (cap bytes, at least 256), newline included;
   returns its length. What log_msg writes. */
static size_t log_format_line(char *line, size_t cap, enum log_level lvl, const char *ctx,
			      const char *msg)
{
	char ts[TS_STRLEN + 1];
	struct out o = {line, 0, cap - 2};

	if (lvl > LOG_ERROR)
		lvl = LOG_ERROR;
	if (journal) {
		char prefix[4] = {'<', priority[lvl], '>', '\0'};

		puts_(&o, prefix);
	}
	time_format_ms(time_now_ms(), ts);
	if (format == LOG_FORMAT_JSON)
		return format_json(&o, ts, lvl, ctx, msg);
	return format_text(&o, ts, lvl, ctx, msg);
}

void log_msg(enum log_level lvl, const char *ctx, const char *fmt, ...)
{
	/* JSON may take six bytes for one of the message's bytes. */
	char line[LOG_LINE_MAX * 6 + 512];
	char msg[LOG_LINE_MAX];
	va_list ap;
	size_t n;

	if (lvl < level || lvl > LOG_ERROR)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n = log_format_line(line, format == LOG_FORMAT_JSON ? sizeof(line) : LOG_LINE_MAX,
			    lvl, ctx, msg);
	(void)!write(STDERR_FILENO, line, n);
}
