/* config_values: ptygate-sidecar's own parsers of the options its table
   (config_table.c) leaves to it (OPTTAB_CUSTOM): addresses, sizes,
   durations, the fsync policy, log settings. Errors are reported through
   the table the value is parsed by (src->table), so nothing here calls
   back into the table or config.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config_int.h"
#include "log.h"
#include "num.h"
#include "ptg_limits.h"

#define report(src, o, ...) opttab_report((src)->table, src, (o)->name, __VA_ARGS__)

static int parse_size(struct sidecar_config *c, const struct opttab_src *src,
		      const struct opttab_opt *o, const char *s)
{
	const char *x = strchr(s, 'x');
	uint64_t cols, rows;

	if (!x ||
	    num_parse_u64_n(s, (size_t)(x - s), PTG_DIM_MIN, PTG_DIM_MAX, &cols) < 0 ||
	    num_parse_u64(x + 1, PTG_DIM_MIN, PTG_DIM_MAX, &rows) < 0) {
		report(src, o,
		       "expected COLSxROWS within 1.." PTG_STR(PTG_DIM_MAX) ", got '%s'",
		       s);
		return -EINVAL;
	}
	c->default_cols = (unsigned)cols;
	c->default_rows = (unsigned)rows;
	return 0;
}

static int parse_fsync(struct sidecar_config *c, const struct opttab_src *src,
		       const struct opttab_opt *o, const char *arg)
{
	uint64_t ms;
	char num[32];
	size_t n;

	if (!strcmp(arg, "every-frame") || !strcmp(arg, "never")) {
		c->fsync = arg[0] == 'e' ? FSYNC_EVERY_FRAME : FSYNC_NEVER;
		return 0;
	}
	n = strlen(arg);
	if (!strncmp(arg, "interval:", 9) && n > 11 && n < 9 + sizeof(num) &&
	    !strcmp(arg + n - 2, "ms")) {
		memcpy(num, arg + 9, n - 11);
		num[n - 11] = 0;
		if (num_parse_u64(num, 1, 60000, &ms) == 0) {
			c->fsync = FSYNC_INTERVAL;
			c->fsync_interval_ms = (uint32_t)ms;
			return 0;
		}
	}
	report(src, o, "expected interval:MSms (1-60000), every-frame or never, got '%s'",
	       arg);
	return -EINVAL;
}

static int add_old_key(struct sidecar_config *c, const struct opttab_src *src,
		       const struct opttab_opt *o, const char *arg)
{
	size_t n = strlen(arg);

	if (c->n_state_old_key_files >= SEAL_MAX_KEYS - 1) {
		report(src, o, "at most %d", SEAL_MAX_KEYS - 1);
		return -EINVAL;
	}
	if (!n || n >= sizeof(c->state_old_key_files[0])) {
		report(src, o, "must be 1 to %zu bytes",
		       sizeof(c->state_old_key_files[0]) - 1);
		return -EINVAL;
	}
	memcpy(c->state_old_key_files[c->n_state_old_key_files++], arg, n + 1);
	return 0;
}

/* A duration of 100 ms to 1 h: "NNNms", or seconds with an optional s,
   m or h. */
static int parse_backoff_max(struct sidecar_config *c, const struct opttab_src *src,
			     const struct opttab_opt *o, const char *arg)
{
	size_t n = strlen(arg);
	uint64_t ms;
	int64_t s;

	if (n > 2 && !strcmp(arg + n - 2, "ms")) {
		if (num_parse_u64_n(arg, n - 2, 100, 3600000, &ms) == 0) {
			c->dial_backoff_max_ms = (int64_t)ms;
			return 0;
		}
	} else if (num_parse_duration_s(arg, 3600, &s) == 0 && s > 0) {
		c->dial_backoff_max_ms = s * 1000;
		return 0;
	}
	report(src, o,
	       "expected 100ms to 1h (NNNms, or seconds with s, m or h), got '%s'", arg);
	return -EINVAL;
}

static int add_dial(struct sidecar_config *c, const struct opttab_src *src,
		    const struct opttab_opt *o, const char *arg)
{
	char err[LOG_ERR_MAX];

	if (c->n_dial >= SIDECAR_MAX_DIALS) {
		report(src, o, "at most %d addresses", SIDECAR_MAX_DIALS);
		return -EINVAL;
	}
	if (addr_parse(arg, &c->dial[c->n_dial], err, sizeof(err)) < 0) {
		report(src, o, "%s", err);
		return -EINVAL;
	}
	c->n_dial++;
	return 0;
}

static int parse_listen(struct sidecar_config *c, const struct opttab_src *src,
			const struct opttab_opt *o, const char *arg)
{
	char err[LOG_ERR_MAX];

	if (addr_parse(arg, &c->listen, err, sizeof(err)) < 0) {
		report(src, o, "%s", err);
		return -EINVAL;
	}
	c->listen_given = 1;
	return 0;
}

/* A string option the table's OPTTAB_STR cannot hold: one more check. */
static int copy_str(const struct opttab_src *src, const struct opttab_opt *o,
		    const char *s, char *dst, size_t cap)
{
	if (!s[0] || strlen(s) >= cap) {
		report(src, o, "must be 1 to %zu bytes", cap - 1);
		return -EINVAL;
	}
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

static int parse_task_handler(struct sidecar_config *c, const struct opttab_src *src,
			      const struct opttab_opt *o, const char *arg)
{
	if (arg[0] != '/') {
		report(src, o, "an absolute path, got '%s'", arg);
		return -EINVAL;
	}
	return copy_str(src, o, arg, c->task_handler, sizeof(c->task_handler));
}

static int parse_log(struct sidecar_config *c, const struct opttab_src *src,
		     const struct opttab_opt *o, const char *arg)
{
	enum log_level lvl;
	enum log_format fmt;

	if (o->id == CONFIG__LOG_LEVEL) {
		if (log_level_parse(arg, &lvl) < 0) {
			report(src, o, "expected debug, info, warn or error, got '%s'",
			       arg);
			return -EINVAL;
		}
		c->log_level = lvl;
		return 0;
	}
	if (log_format_parse(arg, &fmt) < 0) {
		report(src, o, "expected text or json, got '%s'", arg);
		return -EINVAL;
	}
	c->log_format = fmt;
	return 0;
}

int config__custom(void *cfg, const struct opttab_src *src, const struct opttab_opt *o,
		   const char *arg)
{
	struct sidecar_config *c = cfg;

	switch (o->id) {
	case CONFIG__LISTEN:
		return parse_listen(c, src, o, arg);
	case CONFIG__DIAL:
		return add_dial(c, src, o, arg);
	case CONFIG__DIAL_BACKOFF:
		return parse_backoff_max(c, src, o, arg);
	case CONFIG__INSTANCE_ID:
		c->instance_id_given = 1;
		return copy_str(src, o, arg, c->instance_id, sizeof(c->instance_id));
	case CONFIG__DEFAULT_SIZE:
		return parse_size(c, src, o, arg);
	case CONFIG__TASK_HANDLER:
		return parse_task_handler(c, src, o, arg);
	case CONFIG__STATE_OLD_KEY:
		return add_old_key(c, src, o, arg);
	case CONFIG__FSYNC:
		return parse_fsync(c, src, o, arg);
	case CONFIG__LOG_LEVEL:
	case CONFIG__LOG_FORMAT:
		return parse_log(c, src, o, arg);
	}
	report(src, o, "not allowed here");
	return -EINVAL;
}
