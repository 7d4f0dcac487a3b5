/* log: leveled lines to stderr, "TS LEVEL ident [ctx] message" or, with
   --log-format json, one JSON object a line. The context string is chosen
   by the caller; its "key=value" words (trace, principal, instance,
   session, conn, client, task, addr) become fields of their own in JSON, the
   rest its "ctx" field. Under systemd (JOURNAL_STREAM naming stderr) each
   line starts with its sd-daemon priority prefix, "<3>" to "<7>". */
#ifndef PTG_LOG_H
#define PTG_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };
enum log_format { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };

/* Longest line written (text), longest message kept (JSON, before escaping). */
#define LOG_LINE_MAX 4096
/* Room for one error a callee writes into its caller's buffer (the err,
   errlen or why, whylen pair of many functions): what the caller then
   logs, prints or answers with. Longer reasons are cut, never overrun. */
#define LOG_ERR_MAX 512

void log_set_level(enum log_level lvl);
/* Parses "debug", "info", "warn", "error"; returns 0 or -EINVAL. */
int log_level_parse(const char *s, enum log_level *out);
void log_set_format(enum log_format fmt);
/* Parses "text" or "json"; returns 0 or -EINVAL. */
int log_format_parse(const char *s, enum log_format *out);
/* Sets the program name printed on every line. */
void log_set_ident(const char *ident);
/* Turns the priority prefixes on when JOURNAL_STREAM names stderr. */
void log_detect_journal(void);
/* ctx may be NULL. Never pass input as fmt. */
void log_msg(enum log_level lvl, const char *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_debug(ctx, ...) log_msg(LOG_DEBUG, ctx, __VA_ARGS__)
#define log_info(ctx, ...)  log_msg(LOG_INFO, ctx, __VA_ARGS__)
#define log_warn(ctx, ...)  log_msg(LOG_WARN, ctx, __VA_ARGS__)
#define log_error(ctx, ...) log_msg(LOG_ERROR, ctx, __VA_ARGS__)

#endif
