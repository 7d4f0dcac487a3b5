/* log: leveled lines to stderr, "TS LEVEL [ctx] message", with a context
   string (session id, connection id, trace id) chosen by the caller. */
#ifndef PTG_LOG_H
#define PTG_LOG_H

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_set_level(enum log_level lvl);
/* Parses "debug", "info", "warn", "error"; returns 0 or -EINVAL. */
int log_level_parse(const char *s, enum log_level *out);
/* Sets the program name printed on every line. */
void log_set_ident(const char *ident);
/* ctx may be NULL. Never pass input as fmt. */
void log_msg(enum log_level lvl, const char *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_debug(ctx, ...) log_msg(LOG_DEBUG, ctx, __VA_ARGS__)
#define log_info(ctx, ...)  log_msg(LOG_INFO, ctx, __VA_ARGS__)
#define log_warn(ctx, ...)  log_msg(LOG_WARN, ctx, __VA_ARGS__)
#define log_error(ctx, ...) log_msg(LOG_ERROR, ctx, __VA_ARGS__)

#endif
