/* routes_create: the body of POST /agents/{i}/sessions, parsed and
   strictly validated into a CreateSession for the sidecar: a table of
   the known fields, each with its own check, so an unknown field, a
   wrong type or an out-of-range value is refused with a message naming
   the field (docs/protocol.md, "Around the WebSocket"). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptg_limits.h"
#include "routes.h"
#include "xalloc.h"

#define ROUTES__ARGV_MAX    256
#define ROUTES__ARG_MAX	    4096
#define ROUTES__ENV_MAX	    256
#define ROUTES__ENV_KEY_MAX 256
#define ROUTES__ENV_VAL_MAX 32768
#define ROUTES__CWD_MAX	    4096

static size_t codepoints(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* A string of 1..max bytes (jansson already refuses \u0000). */
static const char *string_field(json_t *v, size_t max)
{
	const char *s = json_string_value(v);

	return s && s[0] && json_string_length(v) <= max ? s : NULL;
}

static int f_command(struct route_create *rc, json_t *v, char *err, size_t errlen)
{
	size_t n = json_array_size(v);

	if (!json_is_array(v) || n < 1 || n > ROUTES__ARGV_MAX) {
		snprintf(err, errlen, "command: expected an array of 1 to %d strings",
			 ROUTES__ARGV_MAX);
		return -EINVAL;
	}
	rc->argv = xcalloc(n, sizeof(*rc->argv));
	for (size_t i = 0; i < n; i++) {
		const char *s = json_string_value(json_array_get(v, i));

		if (!s || json_string_length(json_array_get(v, i)) > ROUTES__ARG_MAX ||
		    (i == 0 && !s[0])) {
			snprintf(err, errlen,
				 "command[%zu]: expected a string of at most %d bytes%s",
				 i, ROUTES__ARG_MAX, i ? "" : ", not empty");
			return -EINVAL;
		}
		rc->argv[i] = (char *)s;
	}
	rc->msg.argv = rc->argv;
	rc->msg.n_argv = n;
	return 0;
}

static int f_cwd(struct route_create *rc, json_t *v, char *err, size_t errlen)
{
	const char *s = string_field(v, ROUTES__CWD_MAX);

	if (!s) {
		snprintf(err, errlen,
			 "cwd: expected a non-empty string of at most %d bytes",
			 ROUTES__CWD_MAX);
		return -EINVAL;
	}
	rc->msg.cwd = (char *)s;
	return 0;
}

static int f_env(struct route_create *rc, json_t *v, char *err, size_t errlen)
{
	size_t n = json_object_size(v), i = 0;
	const char *key;
	json_t *val;

	if (!json_is_object(v) || n > ROUTES__ENV_MAX) {
		snprintf(err, errlen, "env: expected an object of at most %d strings",
			 ROUTES__ENV_MAX);
		return -EINVAL;
	}
	rc->env = xcalloc(n ? n : 1, sizeof(*rc->env));
	rc->envp = xcalloc(n ? n : 1, sizeof(*rc->envp));
	json_object_foreach(v, key, val)
	{
		const char *s = json_string_value(val);

		if (!key[0] || strlen(key) > ROUTES__ENV_KEY_MAX || strchr(key, '=')) {
			snprintf(err, errlen, "env: bad variable name '%.64s'", key);
			return -EINVAL;
		}
		if (!s || json_string_length(val) > ROUTES__ENV_VAL_MAX) {
			snprintf(err, errlen,
				 "env.%.64s: expected a string of at most %d bytes", key,
				 ROUTES__ENV_VAL_MAX);
			return -EINVAL;
		}
		ptg__env_var__init(&rc->env[i]);
		rc->env[i].name = (char *)key;
		rc->env[i].value = (char *)s;
		rc->envp[i] = &rc->env[i];
		i++;
	}
	rc->msg.env = rc->envp;
	rc->msg.n_env = n;
	return 0;
}

static int size(json_t *v, const char *name, uint32_t *out, char *err, size_t errlen)
{
	json_int_t x = json_integer_value(v);

	if (!json_is_integer(v) || x < PTG_DIM_MIN || x > PTG_DIM_MAX) {
		snprintf(err, errlen,
			 "%s: expected an integer from 1 to " PTG_STR(PTG_DIM_MAX), name);
		return -EINVAL;
	}
	*out = (uint32_t)x;
	return 0;
}

static int f_cols(struct route_create *rc, json_t *v, char *err, size_t errlen)
{
	return size(v, "cols", &rc->msg.cols, err, errlen);
}

static int f_rows(struct route_create *rc, json_t *v, char *err, size_t errlen)
{
	return size(v, "rows", &rc->msg.rows, err, errlen);
}

static int f_policy(struct route_create *rc, json_t *v, char *err, size_t errlen)
{
	const char *s = json_string_value(v);

	if (s && !strcmp(s, "keep_running")) {
		rc->msg.policy = PTG__POLICY__POLICY_KEEP_RUNNING;
	} else if (s && !strcmp(s, "terminate_on_last_controller")) {
		rc->msg.policy = PTG__POLICY__POLICY_TERMINATE_ON_LAST_CONTROLLER;
	} else {
		snprintf(err, errlen,
			 "policy: expected \"keep_running\" or "
			 "\"terminate_on_last_controller\"");
		return -EINVAL;
	}
	return 0;
}

static int f_control_policy(struct route_create *rc, json_t *v, char *err, size_t errlen)
{
	const char *s = json_string_value(v);

	if (s && !strcmp(s, "open")) {
		rc->msg.control_policy = PTG__CONTROL_POLICY__CONTROL_OPEN;
	} else if (s && !strcmp(s, "approve")) {
		rc->msg.control_policy = PTG__CONTROL_POLICY__CONTROL_APPROVE;
	} else if (s && !strcmp(s, "owner_only")) {
		rc->msg.control_policy = PTG__CONTROL_POLICY__CONTROL_OWNER_ONLY;
	} else {
		snprintf(
		    err, errlen,
		    "control_policy: expected \"open\", \"approve\" or \"owner_only\"");
		return -EINVAL;
	}
	return 0;
}

static int f_label(struct route_create *rc, json_t *v, char *err, size_t errlen)
{
	const char *s = json_string_value(v);

	if (!s || codepoints(s) > PTG_LABEL_MAX_CHARS) {
		snprintf(err, errlen, "label: expected a string of at most %d characters",
			 PTG_LABEL_MAX_CHARS);
		return -EINVAL;
	}
	rc->msg.label = (char *)s;
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(struct route_create *rc, json_t *v, char *err, size_t errlen);
} create_fields[] = {
    {"command", f_command}, {"cwd", f_cwd},
    {"env", f_env},	    {"cols", f_cols},
    {"rows", f_rows},	    {"policy", f_policy},
    {"label", f_label},	    {"control_policy", f_control_policy},
};

int routes_parse_create(const char *body, size_t len, struct route_create *rc, char *err,
			size_t errlen)
{
	json_error_t jerr;
	const char *key;
	json_t *v;

	memset(rc, 0, sizeof(*rc));
	ptg__create_session__init(&rc->msg);
	if (len == 0)
		return 0;
	rc->doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(rc->doc)) {
		snprintf(err, errlen, "body: %s",
			 rc->doc ? "expected a JSON object" : jerr.text);
		return -EINVAL;
	}
	json_object_foreach(rc->doc, key, v)
	{
		size_t i, n = sizeof(create_fields) / sizeof(create_fields[0]);

		for (i = 0; i < n && strcmp(create_fields[i].name, key); i++)
			;
		if (i == n) {
			snprintf(err, errlen, "%.64s: unknown field", key);
			return -EINVAL;
		}
		if (create_fields[i].fn(rc, v, err, errlen) < 0)
			return -EINVAL;
	}
	return 0;
}

void routes_create_clear(struct route_create *rc)
{
	free(rc->argv);
	free(rc->env);
	free(rc->envp);
	json_decref(rc->doc);
	memset(rc, 0, sizeof(*rc));
}
