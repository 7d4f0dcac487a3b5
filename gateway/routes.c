/* routes: the gateway's HTTP answers, kept free of MHD so the policy
   (what is refused, in which order, with which status) reads in one
   place and its pure parts are unit-tested. Paths are parsed from the
   raw request target here rather than trusting MHD's unescaping, so
   "%2e%2e" and "%2F" inside an id are seen for what they are. Requests
   that need the sidecar wait on upstream_request; the answer goes back
   through rq->done. */
#include "routes.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth_jwt.h"
#include "frames.h"
#include "gateway.h"
#include "log.h"
#include "metrics.h"
#include "ptg_limits.h"
#include "timeutil.h"
#include "upstream.h"
#include "xalloc.h"

#define ROUTES__SEGS_MAX    16
#define ROUTES__ARGV_MAX    256
#define ROUTES__ARG_MAX	    4096
#define ROUTES__ENV_MAX	    256
#define ROUTES__ENV_KEY_MAX 256
#define ROUTES__ENV_VAL_MAX 32768
#define ROUTES__CWD_MAX	    4096
#define ROUTES__STATIC_MAX  (64ull << 20)
#define ROUTES__JSON	    "application/json"
#define ROUTES__PROMETHEUS  "text/plain; version=0.0.4; charset=utf-8"

/* ---- paths ---- */

static int routes__unhex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decodes s[0, n) into out; plus_space turns '+' into ' ' (query
   strings). Refuses a bad escape, %00 and output longer than cap - 1. */
static int routes__decode(const char *s, size_t n, int plus_space, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			int hi = i + 2 < n ? routes__unhex((unsigned char)s[i + 1]) : -1;
			int lo = i + 2 < n ? routes__unhex((unsigned char)s[i + 2]) : -1;

			if (hi < 0 || lo < 0)
				return -EINVAL;
			c = hi * 16 + lo;
			i += 2;
		} else if (c == '+' && plus_space) {
			c = ' ';
		}
		if (c == 0 || o + 1 >= cap)
			return -EINVAL;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

static int routes__valid_id(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > ROUTES_ID_MAX || !strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._~:@-", s[i]))
			return 0;
	return 1;
}

/* Splits and decodes the path of target into segs. Returns the count or
   -EINVAL (*why set); an empty path segment is kept as "". */
static int routes__split(const char *target, char segs[][ROUTES_FILE_MAX + 1],
			 const char **why)
{
	size_t end = strcspn(target, "?#"), i = 1;
	int n = 0;

	if (target[0] != '/') {
		*why = "the request target must be a path";
		return -EINVAL;
	}
	while (i <= end) {
		size_t len = strcspn(target + i, "/?#");

		if (len > end - i)
			len = end - i;
		if (n == ROUTES__SEGS_MAX || routes__decode(target + i, len, 0, segs[n],
							    ROUTES_FILE_MAX + 1) < 0) {
			*why = n == ROUTES__SEGS_MAX ? "path too deep"
						     : "bad percent-encoding in path";
			return -EINVAL;
		}
		if (!strcmp(segs[n], ".") || !strcmp(segs[n], "..") ||
		    strchr(segs[n], '/') || strchr(segs[n], '\\')) {
			*why = "path segments '.', '..' and encoded slashes are refused";
			return -EINVAL;
		}
		n++;
		i += len + 1;
	}
	return n;
}

static int routes__match_agents(char segs[][ROUTES_FILE_MAX + 1], int n,
				struct route_match *m, const char **why)
{
	if (n < 3)
		return -ENOENT;
	if (!routes__valid_id(segs[1])) {
		*why = "invalid instance_id in path";
		return -EINVAL;
	}
	snprintf(m->instance, sizeof(m->instance), "%s", segs[1]);
	if (n == 4 && !strcmp(segs[2], ".well-known") &&
	    !strcmp(segs[3], "agent-card.json")) {
		m->id = ROUTE_AGENT_CARD;
		return 0;
	}
	if (strcmp(segs[2], "sessions") != 0 || n > 5)
		return -ENOENT;
	if (n == 3) {
		m->id = ROUTE_SESSIONS;
		return 0;
	}
	if (!routes__valid_id(segs[3])) {
		*why = "invalid session_id in path";
		return -EINVAL;
	}
	snprintf(m->session, sizeof(m->session), "%s", segs[3]);
	if (n == 4) {
		m->id = ROUTE_SESSION;
		return 0;
	}
	if (strcmp(segs[4], "attach") != 0)
		return -ENOENT;
	m->id = ROUTE_ATTACH;
	return 0;
}

/* A static file path: no empty or hidden segments except a final "/"
   meaning index.html. */
static int routes__match_static(char segs[][ROUTES_FILE_MAX + 1], int n,
				struct route_match *m)
{
	size_t o = 0;

	for (int i = 0; i < n; i++) {
		const char *s = segs[i][0] ? segs[i] : (i == n - 1 ? "index.html" : NULL);
		int w;

		if (!s || s[0] == '.')
			return -ENOENT;
		for (const char *p = s; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return -ENOENT;
		w = snprintf(m->file + o, sizeof(m->file) - o, "%s%s", i ? "/" : "", s);
		if (w < 0 || (size_t)w >= sizeof(m->file) - o)
			return -ENOENT;
		o += (size_t)w;
	}
	m->id = ROUTE_STATIC;
	return 0;
}

int routes_match(const char *target, int with_static, struct route_match *m,
		 const char **why)
{
	char segs[ROUTES__SEGS_MAX][ROUTES_FILE_MAX + 1] = { { 0 } }; /* "/" has no segment */
	static const struct {
		const char *name;
		enum route_id id;
	} ops[] = {{"healthz", ROUTE_HEALTHZ},
		   {"readyz", ROUTE_READYZ},
		   {"metrics", ROUTE_METRICS}};
	int n;

	memset(m, 0, sizeof(*m));
	*why = "no such path";
	n = routes__split(target, segs, why);
	if (n < 0)
		return n;
	for (size_t i = 0; n == 1 && i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(segs[0], ops[i].name)) {
			m->id = ops[i].id;
			return 0;
		}
	if (!strcmp(segs[0], "agents")) {
		int rc = routes__match_agents(segs, n, m, why);

		/* /agents/{i}/sessions/{s}/ is the web page of one session. */
		if (rc == -ENOENT && with_static && n == 5 && !segs[4][0] &&
		    !strcmp(segs[2], "sessions")) {
			m->id = ROUTE_STATIC;
			snprintf(m->file, sizeof(m->file), "index.html");
			return 0;
		}
		return rc;
	}
	if (with_static)
		return routes__match_static(segs, n, m);
	return -ENOENT;
}

const char *routes_allow(enum route_id id)
{
	switch (id) {
	case ROUTE_SESSIONS:
		return "GET, POST";
	case ROUTE_SESSION:
		return "GET, DELETE";
	default:
		return "GET";
	}
}

int routes_method_ok(enum route_id id, const char *method)
{
	const char *allow = routes_allow(id);
	size_t n = strlen(method);

	if (n == 0)
		return 0; /* strstr would find "" at every offset without moving */
	for (const char *p = allow; (p = strstr(p, method)) != NULL; p += n)
		if ((p == allow || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

/* ---- query strings ---- */

/* A value shaped like a compact JWS: "eyJ", base64url, exactly two dots. */
static int routes__looks_like_jwt(const char *v)
{
	int dots = 0;

	if (strncmp(v, "eyJ", 3) != 0)
		return 0;
	for (; *v; v++) {
		if (*v == '.')
			dots++;
		else if (!isalnum((unsigned char)*v) && *v != '-' && *v != '_')
			return 0;
	}
	return dots == 2;
}

static int routes__token_name(const char *name)
{
	static const char *const names[] = {"jwt", "bearer", "auth", "authorization"};
	char low[ROUTES_FILE_MAX + 1];
	size_t n = strlen(name);

	if (n >= sizeof(low))
		n = sizeof(low) - 1;
	for (size_t i = 0; i < n; i++)
		low[i] = (char)tolower((unsigned char)name[i]);
	low[n] = '\0';
	if (strstr(low, "token"))
		return 1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(low, names[i]))
			return 1;
	return 0;
}

/* One "name[=value]" parameter; an undecodable one counts by its raw
   text so an odd escape cannot hide a token. */
static int routes__token_param(const char *p, size_t len)
{
	char *buf = xmalloc(len + 1);
	size_t nlen = strcspn(p, "=");
	int hit;

	if (nlen > len)
		nlen = len;
	if (routes__decode(p, nlen, 1, buf, len + 1) < 0) {
		memcpy(buf, p, nlen);
		buf[nlen] = '\0';
	}
	hit = routes__token_name(buf);
	if (!hit && nlen < len) {
		if (routes__decode(p + nlen + 1, len - nlen - 1, 1, buf, len + 1) < 0) {
			memcpy(buf, p + nlen + 1, len - nlen - 1);
			buf[len - nlen - 1] = '\0';
		}
		hit = routes__looks_like_jwt(buf) || !strncasecmp(buf, "bearer ", 7);
	}
	free(buf);
	return hit;
}

int routes_query_has_token(const char *target)
{
	const char *q = strchr(target, '?');
	size_t end;

	if (!q)
		return 0;
	q++;
	end = strcspn(q, "#");
	for (size_t i = 0; i < end;) {
		size_t len = strcspn(q + i, "&;#");

		if (len > end - i)
			len = end - i;
		if (len && routes__token_param(q + i, len))
			return 1;
		i += len + 1;
	}
	return 0;
}

/* ---- the create body ---- */

static size_t routes__codepoints(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* A string of 1..max bytes (jansson already refuses \u0000). */
static const char *routes__string(json_t *v, size_t max)
{
	const char *s = json_string_value(v);

	return s && s[0] && json_string_length(v) <= max ? s : NULL;
}

static int routes__f_command(struct route_create *rc, json_t *v, char *err, size_t errlen)
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

static int routes__f_cwd(struct route_create *rc, json_t *v, char *err, size_t errlen)
{
	const char *s = routes__string(v, ROUTES__CWD_MAX);

	if (!s) {
		snprintf(err, errlen,
			 "cwd: expected a non-empty string of at most %d bytes",
			 ROUTES__CWD_MAX);
		return -EINVAL;
	}
	rc->msg.cwd = (char *)s;
	return 0;
}

static int routes__f_env(struct route_create *rc, json_t *v, char *err, size_t errlen)
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

static int routes__size(json_t *v, const char *name, uint32_t *out, char *err,
			size_t errlen)
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

static int routes__f_cols(struct route_create *rc, json_t *v, char *err, size_t errlen)
{
	return routes__size(v, "cols", &rc->msg.cols, err, errlen);
}

static int routes__f_rows(struct route_create *rc, json_t *v, char *err, size_t errlen)
{
	return routes__size(v, "rows", &rc->msg.rows, err, errlen);
}

static int routes__f_policy(struct route_create *rc, json_t *v, char *err, size_t errlen)
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

static int routes__f_label(struct route_create *rc, json_t *v, char *err, size_t errlen)
{
	const char *s = json_string_value(v);

	if (!s || routes__codepoints(s) > ROUTES_LABEL_MAX) {
		snprintf(err, errlen, "label: expected a string of at most %d characters",
			 ROUTES_LABEL_MAX);
		return -EINVAL;
	}
	rc->msg.label = (char *)s;
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(struct route_create *rc, json_t *v, char *err, size_t errlen);
} routes__create_fields[] = {
    {"command", routes__f_command}, {"cwd", routes__f_cwd},
    {"env", routes__f_env},	    {"cols", routes__f_cols},
    {"rows", routes__f_rows},	    {"policy", routes__f_policy},
    {"label", routes__f_label},
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
		size_t i,
		    n = sizeof(routes__create_fields) / sizeof(routes__create_fields[0]);

		for (i = 0; i < n && strcmp(routes__create_fields[i].name, key); i++)
			;
		if (i == n) {
			snprintf(err, errlen, "%.64s: unknown field", key);
			return -EINVAL;
		}
		if (routes__create_fields[i].fn(rc, v, err, errlen) < 0)
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

/* ---- JSON answers ---- */

/* A JSON string from peer text, invalid UTF-8 bytes replaced by U+FFFD. */
static json_t *routes__jstr(const char *s)
{
	json_t *v = json_string(s ? s : "");
	struct buf b = BUF_INIT;

	if (v)
		return v;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x80)
			buf_append(&b, p, 1);
		else
			buf_append_str(&b, "\xef\xbf\xbd");
	buf_append(&b, "", 1);
	v = json_string((const char *)buf_head(&b));
	buf_free(&b);
	return v;
}

static json_t *routes__ts(int64_t ms)
{
	char ts[TS_STRLEN + 1];

	if (ms <= 0)
		return json_null();
	time_format_ms(ms, ts);
	return json_string(ts);
}

static json_t *routes__members(Ptg__Member **m, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:o, s:o}", "client_id",
						   routes__jstr(m[i]->client_id), "label",
						   routes__jstr(m[i]->label)));
	return a;
}

static const char *routes__state(const Ptg__SessionInfo *s)
{
	return s->state == PTG__SESSION_STATE__SESSION_EXITED ? "exited" : "running";
}

json_t *routes_session_json(const Ptg__SessionInfo *s)
{
	json_t *o = json_object(), *cmd = json_array();

	json_object_set_new(o, "session_id", routes__jstr(s->session_id));
	json_object_set_new(o, "state", json_string(routes__state(s)));
	json_object_set_new(o, "pid", json_integer(s->pid));
	json_object_set_new(o, "cols", json_integer(s->cols));
	json_object_set_new(o, "rows", json_integer(s->rows));
	json_object_set_new(o, "current_sequence",
			    json_integer((json_int_t)s->current_sequence));
	json_object_set_new(o, "oldest_retained_sequence",
			    json_integer((json_int_t)s->oldest_retained_sequence));
	json_object_set_new(o, "controllers",
			    routes__members(s->controllers, s->n_controllers));
	json_object_set_new(o, "observers",
			    routes__members(s->observers, s->n_observers));
	json_object_set_new(o, "exit_code",
			    s->has_exit_code ? json_integer(s->exit_code) : json_null());
	json_object_set_new(o, "created_at", routes__ts(s->created_at_ms));
	json_object_set_new(o, "exited_at", routes__ts(s->exited_at_ms));
	json_object_set_new(o, "label", routes__jstr(s->label));
	json_object_set_new(
	    o, "policy",
	    json_string(s->policy == PTG__POLICY__POLICY_TERMINATE_ON_LAST_CONTROLLER
			    ? "terminate_on_last_controller"
			    : "keep_running"));
	for (size_t i = 0; i < s->n_argv; i++)
		json_array_append_new(cmd, routes__jstr(s->argv[i]));
	json_object_set_new(o, "command", cmd);
	return o;
}

json_t *routes_created_json(const Ptg__SessionInfo *s, const char *attach_url)
{
	return json_pack("{s:o, s:s, s:I, s:I, s:o, s:s}", "session_id",
			 routes__jstr(s->session_id), "state", routes__state(s), "cols",
			 (json_int_t)s->cols, "rows", (json_int_t)s->rows, "created_at",
			 routes__ts(s->created_at_ms), "attach_url", attach_url);
}

void routes_bases(const char *public_url, const char *host, uint16_t port,
		  char *http_base, char *ws_base, size_t cap)
{
	static const char *const map[][2] = {
	    {"https://", "wss://"},
	    {"http://", "ws://"},
	    {"wss://", "https://"},
	    {"ws://", "http://"},
	};
	const char *v6 = strchr(host, ':') ? "[" : "", *v6e = *v6 ? "]" : "";

	if (!public_url || !public_url[0]) {
		snprintf(http_base, cap, "http://%s%s%s:%u", v6, host, v6e, port);
		snprintf(ws_base, cap, "ws://%s%s%s:%u", v6, host, v6e, port);
		return;
	}
	for (size_t i = 0; i < 4; i++) {
		size_t n = strlen(map[i][0]);
		const char *rest = public_url + n;
		int http = i < 2;

		if (strncmp(public_url, map[i][0], n) != 0)
			continue;
		snprintf(http_base, cap, "%s%s", http ? map[i][0] : map[i][1], rest);
		snprintf(ws_base, cap, "%s%s", http ? map[i][1] : map[i][0], rest);
		return;
	}
	snprintf(http_base, cap, "%s", public_url);
	snprintf(ws_base, cap, "%s", public_url);
}

static json_t *routes__ext_params(const Ptg__Limits *l)
{
	static const Ptg__Limits def = {
	    .max_controllers = 4,
	    .max_observers = 32,
	    .replay_frames = 1000,
	    .replay_seconds = 86400,
	    .keyframe_seconds = 5,
	    .keyframe_frames = 100,
	    .default_cols = 120,
	    .default_rows = 30,
	};
#define ROUTES__LIM(f) ((json_int_t)(l && l->f ? l->f : def.f))
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "max_controllers",
			 ROUTES__LIM(max_controllers), "max_observers",
			 ROUTES__LIM(max_observers), "keyframe_interval_seconds",
			 ROUTES__LIM(keyframe_seconds), "keyframe_interval_frames",
			 ROUTES__LIM(keyframe_frames), "replay_buffer_frames",
			 ROUTES__LIM(replay_frames), "replay_buffer_retention_seconds",
			 ROUTES__LIM(replay_seconds), "default_cols",
			 ROUTES__LIM(default_cols), "default_rows",
			 ROUTES__LIM(default_rows));
#undef ROUTES__LIM
}

static json_t *routes__skills(void)
{
	return json_pack("[{s:s, s:s, s:s, s:[s,s], s:[s]}, {s:s, s:s, s:s, s:[s,s,s]}]",
			 "id", "shell-command", "name", "Run a shell command",
			 "description",
			 "Runs the message text as a /bin/sh -c command line in the "
			 "session's directory and environment; stdout and stderr "
			 "become artifacts, the exit status the final state.",
			 "tags", "shell", "command", "examples", "ls -la", "id",
			 "terminal", "name", "Interactive terminal", "description",
			 "Observe or drive the session's live terminal over the "
			 "pty-ws/v1 binding with the pty-extensions/v1 extension.",
			 "tags", "terminal", "pty", "websocket");
}

json_t *routes_agent_card(const char *instance, const char *http_base,
			  const char *ws_base, const Ptg__Limits *lim)
{
	char url[1024], attach[1024];

	snprintf(url, sizeof(url), "%s/agents/%s", http_base, instance);
	snprintf(attach, sizeof(attach), "%s/agents/%s/sessions/{session_id}/attach",
		 ws_base, instance);
	return json_pack(
	    "{s:s, s:s, s:s, s:s, s:s,"
	    " s:{s:b, s:b, s:b, s:[{s:s, s:s, s:b, s:o}]},"
	    " s:[{s:s, s:s, s:s, s:s, s:s, s:[s,s,s,s,s,s], s:s}],"
	    " s:[s], s:[s], s:o,"
	    " s:{s:{s:s, s:s, s:s}}, s:[{s:[]}]}",
	    "name", "ptygate sandbox", "description",
	    "Terminal sessions and shell commands of one sandbox instance.", "url", url,
	    "version", PTG_VERSION, "protocolVersion", "0.3.0", "capabilities",
	    "streaming", 1, "pushNotifications", 0, "stateTransitionHistory", 0,
	    "extensions", "uri", ROUTES_EXTENSION_URI, "description",
	    "Live PTY sessions: observe, control, replay, keyframes.", "required", 0,
	    "params", routes__ext_params(lim), "additionalInterfaces", "url", attach,
	    "transport", FRAMES_BINDING_URI, "binding_uri", FRAMES_BINDING_URI,
	    "binding_version", "1.0.0", "subprotocol", WSHS_PROTOCOL, "operations",
	    "SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask",
	    "SubscribeToTask", "preference", "secondary", "defaultInputModes",
	    "text/plain", "defaultOutputModes", "text/plain", "skills", routes__skills(),
	    "securitySchemes", "bearer", "type", "http", "scheme", "bearer",
	    "bearerFormat", "JWT", "security", "bearer");
}

void routes_error_body(const char *code, const char *message, struct buf *out)
{
	json_t *o =
	    json_pack("{s:s, s:o}", "code", code, "message", routes__jstr(message));
	char *s = json_dumps(o, JSON_COMPACT);

	buf_append_str(out, s);
	free(s);
	json_decref(o);
}

unsigned routes_status_from_link(Ptg__ErrorCode code, const char **name)
{
	switch (code) {
	case PTG__ERROR_CODE__INVALID_REQUEST:
	case PTG__ERROR_CODE__ERR_SESSION_EXITED:
		*name = "INVALID_REQUEST";
		return 400;
	case PTG__ERROR_CODE__NOT_FOUND:
	case PTG__ERROR_CODE__TASK_NOT_FOUND:
		*name = "NOT_FOUND";
		return 404;
	case PTG__ERROR_CODE__PERMISSION_DENIED:
		*name = "PERMISSION_DENIED";
		return 403;
	case PTG__ERROR_CODE__RATE_LIMITED:
		*name = "RATE_LIMITED";
		return 429;
	case PTG__ERROR_CODE__UNSUPPORTED:
		*name = "UNSUPPORTED_OPERATION";
		return 400;
	default:
		*name = "INTERNAL";
		return 500;
	}
}

/* ---- answering a request ---- */

void routes_req_init(struct route_req *rq)
{
	memset(rq, 0, sizeof(*rq));
	buf_init(&rq->out);
	rq->file_fd = -1;
	rq->content_type = ROUTES__JSON;
}

/* Takes v; the answer is its compact text. Returns 0. */
static int routes__json(struct route_req *rq, unsigned status, json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT);

	buf_reset(&rq->out);
	if (s)
		buf_append_str(&rq->out, s);
	free(s);
	json_decref(v);
	rq->status = status;
	rq->content_type = ROUTES__JSON;
	return 0;
}

static int routes__error(struct route_req *rq, unsigned status, const char *code,
			 const char *message)
{
	buf_reset(&rq->out);
	routes_error_body(code, message, &rq->out);
	rq->status = status;
	rq->content_type = ROUTES__JSON;
	rq->retry_after = status == 429 ? 1 : 0;
	return 0;
}

void routes_refuse(struct route_req *rq, unsigned status, const char *code,
		   const char *message)
{
	routes__error(rq, status, code, message);
}

static int routes__link_error(struct route_req *rq, const Ptg__Reply *r)
{
	const char *name;
	unsigned status;

	if (!r)
		return routes__error(rq, 503, "UNAVAILABLE",
				     "the instance's sidecar is unreachable");
	status = routes_status_from_link(r->code, &name);
	return routes__error(rq, status, name,
			     r->message && r->message[0] ? r->message : name);
}

static int routes__unauthenticated(struct route_req *rq, const char *message)
{
	routes__error(rq, 401, "UNAUTHENTICATED", message);
	rq->www_authenticate = 1;
	return -EACCES;
}

static int routes__verify(struct route_req *rq, const char *tok, size_t len,
			  struct jwt_claims *c)
{
	struct gateway *gw = rq->gw;
	int rc = jwt_verify(gw->keys, &gw->policy, tok, len, time_now_ms() / 1000, c);

	if (rc != JWT_OK) {
		gw->metrics.auth_failures++;
		return routes__unauthenticated(rq, jwt_strerror(rc));
	}
	return 0;
}

int routes_bearer(const char *h, const char **tok, size_t *len)
{
	size_t n;

	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return -ENOENT;
	h += 7;
	while (*h == ' ' || *h == '\t')
		h++;
	n = strcspn(h, " \t");
	if (!n || h[n + strspn(h + n, " \t")] != '\0')
		return -ENOENT;
	*tok = h;
	*len = n;
	return 0;
}

static int routes__auth_header(struct route_req *rq, struct jwt_claims *c)
{
	const char *tok;
	size_t len;

	if (routes_bearer(rq->authorization, &tok, &len) < 0)
		return routes__unauthenticated(
		    rq, "an Authorization: Bearer token is required");
	return routes__verify(rq, tok, len, c);
}

static struct upstream *routes__instance(struct route_req *rq)
{
	struct upstream *up = gateway_upstream(rq->gw, rq->m.instance);

	if (!up)
		routes__error(rq, 404, "NOT_FOUND", "unknown instance");
	return up;
}

static int routes__forbidden(struct route_req *rq, const char *message)
{
	routes__error(rq, 403, "PERMISSION_DENIED", message);
	return -EACCES;
}

/* The REST checks in SPEC order: 401, 404 instance, 403. need_scopes is
   any of the bits; session NULL asks for the whole instance. */
static struct upstream *routes__rest_gate(struct route_req *rq, unsigned need_scopes,
					  const char *session, struct jwt_claims *c)
{
	struct upstream *up;

	if (routes__auth_header(rq, c) < 0 || !(up = routes__instance(rq)))
		return NULL;
	if (!(c->scopes & need_scopes)) {
		routes__forbidden(
		    rq, need_scopes & SCOPE_OBSERVE
			    ? "the token lacks scope 'sessions' or 'pty:observe'"
			    : "the token lacks scope 'sessions'");
		return NULL;
	}
	if (jwt_claims_allow(c, rq->m.instance, session) < 0) {
		routes__forbidden(rq,
				  "the token is not valid for this instance or session");
		return NULL;
	}
	return up;
}

/* Counts an attach answered with anything but 101. */
static void routes__count(struct route_req *rq)
{
	if (rq->m.id == ROUTE_ATTACH && rq->status != 101)
		rq->gw->metrics.upgrades_refused++;
}

static void routes__reply_cb(const Ptg__Reply *r, void *user)
{
	struct route_req *rq = user;

	rq->pending_up = NULL;
	rq->on_reply(rq, r);
	rq->answered = 1;
	if (!rq->in_handle) {
		routes__count(rq);
		if (rq->done)
			rq->done(rq);
	}
}

/* Sends m (request id id) and waits. Returns 1 (waiting) or 0 when the
   answer is already in rq (link down, or an immediate reply). */
static int routes__ask(struct route_req *rq, struct upstream *up,
		       const Ptg__LinkMessage *m, uint64_t id,
		       void (*on_reply)(struct route_req *, const Ptg__Reply *))
{
	rq->on_reply = on_reply;
	rq->answered = 0;
	rq->pending_up = up;
	rq->pending_id = id;
	if (upstream_request(up, m, id, routes__reply_cb, rq) < 0) {
		rq->pending_up = NULL;
		on_reply(rq, NULL);
		return 0;
	}
	return rq->answered ? 0 : 1;
}

static int routes__unavailable(struct route_req *rq)
{
	return routes__link_error(rq, NULL);
}

/* ---- handlers ---- */

static void routes__gw_bases(struct gateway *gw, char *http_base, char *ws_base,
			     size_t cap)
{
	uint16_t port = gw->http ? http_port(gw->http) : gw->cfg->listen_port;
	const char *host = gw->cfg->listen_host;
	char tls_url[sizeof(gw->cfg->public_url) + 16];

	if (!gw->cfg->public_url[0] && gw->cfg->tls_cert[0]) {
		/* Under TLS the derived URLs are https:// and wss://. */
		snprintf(tls_url, sizeof(tls_url), "https://%s%s%s:%u",
			 strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
			 port);
		routes_bases(tls_url, host, port, http_base, ws_base, cap);
		return;
	}
	routes_bases(gw->cfg->public_url, host, port, http_base, ws_base, cap);
}

static int routes__healthz(struct route_req *rq)
{
	return routes__json(rq, 200, json_pack("{s:s}", "status", "ok"));
}

static int routes__readyz(struct route_req *rq)
{
	json_t *inst = json_object();
	int any = 0;

	for (size_t i = 0; i < rq->gw->n_ups; i++) {
		int up = upstream_up(rq->gw->ups[i]);

		any |= up;
		json_object_set_new(inst, upstream_instance(rq->gw->ups[i]),
				    json_string(upstream_state(rq->gw->ups[i])));
	}
	return routes__json(rq, any ? 200 : 503, json_pack("{s:o}", "instances", inst));
}

static int routes__metrics(struct route_req *rq)
{
	struct gateway *gw = rq->gw;
	struct metrics_link *links = xcalloc(gw->n_ups ? gw->n_ups : 1, sizeof(*links));

	for (size_t i = 0; i < gw->n_ups; i++) {
		links[i].instance = upstream_instance(gw->ups[i]);
		links[i].up = upstream_up(gw->ups[i]);
	}
	buf_reset(&rq->out);
	metrics_render(&gw->metrics, links, (unsigned)gw->n_ups, &rq->out);
	free(links);
	rq->status = 200;
	rq->content_type = ROUTES__PROMETHEUS;
	return 0;
}

static int routes__agent_card(struct route_req *rq)
{
	char http_base[600], ws_base[600];
	struct upstream *up = routes__instance(rq);
	const Ptg__Limits *lim = NULL;

	if (!up)
		return 0;
	lim = upstream_limits(up);
	routes__gw_bases(rq->gw, http_base, ws_base, sizeof(http_base));
	return routes__json(rq, 200,
			    routes_agent_card(rq->m.instance, http_base, ws_base, lim));
}

static void routes__on_list(struct route_req *rq, const Ptg__Reply *r)
{
	json_t *a = json_array();

	if (!r || r->code != PTG__ERROR_CODE__OK) {
		json_decref(a);
		routes__link_error(rq, r);
		return;
	}
	if (r->result_case == PTG__REPLY__RESULT_SESSIONS)
		for (size_t i = 0; i < r->sessions->n_sessions; i++)
			json_array_append_new(
			    a, routes_session_json(r->sessions->sessions[i]));
	routes__json(rq, 200, json_pack("{s:o}", "sessions", a));
}

static int routes__list(struct route_req *rq)
{
	struct jwt_claims c;
	struct upstream *up = routes__rest_gate(rq, SCOPE_SESSIONS, NULL, &c);
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__ListSessions ls = PTG__LIST_SESSIONS__INIT;

	if (!up)
		return 0;
	if (!upstream_up(up))
		return routes__unavailable(rq);
	ls.request_id = upstream_next_id(up);
	m.msg_case = PTG__LINK_MESSAGE__MSG_LIST_SESSIONS;
	m.list_sessions = &ls;
	return routes__ask(rq, up, &m, ls.request_id, routes__on_list);
}

static void routes__on_create(struct route_req *rq, const Ptg__Reply *r)
{
	char http_base[600], ws_base[600], url[1200];

	if (!r || r->code != PTG__ERROR_CODE__OK) {
		routes__link_error(rq, r);
		return;
	}
	if (r->result_case != PTG__REPLY__RESULT_SESSION) {
		routes__error(rq, 500, "INTERNAL", "the sidecar sent no session");
		return;
	}
	routes__gw_bases(rq->gw, http_base, ws_base, sizeof(http_base));
	snprintf(url, sizeof(url), "%s/agents/%s/sessions/%s/attach", ws_base,
		 rq->m.instance, r->session->session_id);
	routes__json(rq, 201, routes_created_json(r->session, url));
}

static int routes__create(struct route_req *rq)
{
	struct jwt_claims c;
	struct upstream *up = routes__rest_gate(rq, SCOPE_SESSIONS, NULL, &c);
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	struct route_create rc;
	char err[256];
	int ret;

	if (!up)
		return 0;
	if (routes_parse_create(rq->body, rq->body_len, &rc, err, sizeof(err)) < 0) {
		routes_create_clear(&rc);
		return routes__error(rq, 400, "INVALID_REQUEST", err);
	}
	if (!upstream_up(up)) {
		routes_create_clear(&rc);
		return routes__unavailable(rq);
	}
	rc.msg.request_id = upstream_next_id(up);
	m.msg_case = PTG__LINK_MESSAGE__MSG_CREATE_SESSION;
	m.create_session = &rc.msg;
	ret = routes__ask(rq, up, &m, rc.msg.request_id, routes__on_create);
	routes_create_clear(&rc);
	return ret;
}

static int routes__sessions(struct route_req *rq)
{
	return !strcmp(rq->method, "POST") ? routes__create(rq) : routes__list(rq);
}

static void routes__on_session(struct route_req *rq, const Ptg__Reply *r)
{
	if (!r || r->code != PTG__ERROR_CODE__OK) {
		routes__link_error(rq, r);
		return;
	}
	if (r->result_case == PTG__REPLY__RESULT_SESSION)
		routes__json(rq, 200, routes_session_json(r->session));
	else
		routes__json(rq, 200, json_pack("{s:s}", "session_id", rq->m.session));
}

static int routes__session(struct route_req *rq)
{
	int del = !strcmp(rq->method, "DELETE");
	unsigned need = del ? SCOPE_SESSIONS : SCOPE_SESSIONS | SCOPE_OBSERVE;
	struct jwt_claims c;
	struct upstream *up = routes__rest_gate(rq, need, rq->m.session, &c);
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__GetSession g = PTG__GET_SESSION__INIT;
	Ptg__KillSession k = PTG__KILL_SESSION__INIT;
	uint64_t id;

	if (!up)
		return 0;
	if (!upstream_up(up))
		return routes__unavailable(rq);
	id = upstream_next_id(up);
	if (del) {
		k.request_id = id;
		k.session_id = rq->m.session;
		m.msg_case = PTG__LINK_MESSAGE__MSG_KILL_SESSION;
		m.kill_session = &k;
	} else {
		g.request_id = id;
		g.session_id = rq->m.session;
		m.msg_case = PTG__LINK_MESSAGE__MSG_GET_SESSION;
		m.get_session = &g;
	}
	return routes__ask(rq, up, &m, id, routes__on_session);
}

/* ---- the attach upgrade (SPEC 1, 7) ---- */

static void routes__release_slot(struct route_req *rq)
{
	if (!rq->slot_held)
		return;
	gateway_slot_release(rq->gw, rq->attach.claims.sub, rq->attach.instance_id);
	rq->slot_held = 0;
}

static void routes__on_attach(struct route_req *rq, const Ptg__Reply *r)
{
	if (r && r->code == PTG__ERROR_CODE__OK &&
	    r->result_case == PTG__REPLY__RESULT_SESSION) {
		rq->attach.current_sequence = r->session->current_sequence;
		buf_reset(&rq->out);
		rq->status = 101;
		return;
	}
	routes__release_slot(rq);
	if (r && r->code == PTG__ERROR_CODE__NOT_FOUND)
		routes__error(rq, 404, "NOT_FOUND", "unknown session");
	else if (r && r->code == PTG__ERROR_CODE__OK)
		routes__error(rq, 500, "INTERNAL", "the sidecar sent no session");
	else
		routes__link_error(rq, r);
}

/* A browser page may open a terminal only from an allowed origin: the
   same one by default, so a page elsewhere holding a token cannot (and
   a future cookie-based login would not be CSRF-able). */
static int routes__attach_origin(struct route_req *rq)
{
	const struct gw_config *cfg = rq->gw->cfg;

	if (wshs_origin_allowed(rq->origin, rq->host, cfg->public_url, cfg->allowed_origins,
				cfg->n_allowed_origins))
		return 0;
	routes__error(rq, 403, "PERMISSION_DENIED",
		      cfg->n_allowed_origins
			  ? "this Origin is not in the gateway's --allowed-origin list"
			  : "a cross-origin page may not attach (same origin only; see "
			    "--allowed-origin)");
	return -EPERM;
}

/* The 400s, in order: a token in the query, a malformed upgrade, no
   pty-ws.v1 offered. */
int routes_attach_check(struct route_req *rq, struct wshs_offer *o)
{
	const char *why;

	if (routes_query_has_token(rq->target))
		why = "a token in the query string is refused: use the Authorization "
		      "header "
		      "or the bearer subprotocol";
	else if ((why = wshs_check_upgrade(rq->upgrade, rq->connection, rq->ws_version)))
		;
	else if (wshs_accept_key(rq->ws_key, rq->ws_accept) < 0)
		why = "missing or invalid Sec-WebSocket-Key";
	else if (wshs_parse_protocols(rq->ws_protocol, o) < 0)
		why = "malformed Sec-WebSocket-Protocol";
	else if (!o->v1)
		why = "the subprotocol " WSHS_PROTOCOL " was not offered";
	else
		return 0;
	routes__error(rq, 400, "INVALID_REQUEST", why);
	return -EINVAL;
}

/* The token from Authorization: Bearer, else from the bearer. offer. */
static int routes__attach_auth(struct route_req *rq, const struct wshs_offer *o,
			       struct jwt_claims *c)
{
	const char *tok;
	size_t len;

	if (routes_bearer(rq->authorization, &tok, &len) == 0)
		return routes__verify(rq, tok, len, c);
	if (o->token)
		return routes__verify(rq, o->token, o->token_len, c);
	return routes__unauthenticated(rq,
				       "a bearer token is required (Authorization header "
				       "or bearer.<token> subprotocol)");
}

/* 403, then 429, then 503; on success the slot is held. */
static int routes__attach_admit(struct route_req *rq, struct upstream *up)
{
	struct jwt_claims *c = &rq->attach.claims;
	const char *what = "connections";
	char msg[160];

	if (jwt_claims_allow(c, rq->m.instance, rq->m.session) < 0)
		return routes__forbidden(
		    rq, "the token is not valid for this instance or session");
	/* A tasks-only token may connect for the A2A ops (SPEC 6); its join
	   is refused by the sidecar, which checks the pty scopes. */
	if (!(c->scopes & (SCOPE_OBSERVE | SCOPE_CONTROL | SCOPE_TASKS)))
		return routes__forbidden(
		    rq, "the token lacks scope 'pty:observe', 'pty:control' or 'tasks'");
	snprintf(rq->attach.instance_id, sizeof(rq->attach.instance_id), "%s",
		 rq->m.instance);
	snprintf(rq->attach.session_id, sizeof(rq->attach.session_id), "%s",
		 rq->m.session);
	if (gateway_slot_acquire(rq->gw, c->sub, rq->m.instance, &what) < 0) {
		snprintf(msg, sizeof(msg), "connection limit reached (%s)",
			 what ? what : "limit");
		routes__error(rq, 429, "RATE_LIMITED", msg);
		return -EBUSY;
	}
	rq->slot_held = 1;
	if (!upstream_up(up)) {
		routes__release_slot(rq);
		routes__unavailable(rq);
		return -ENOTCONN;
	}
	return 0;
}

static int routes__attach(struct route_req *rq)
{
	struct wshs_offer o = {0};
	struct upstream *up;
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__GetSession g = PTG__GET_SESSION__INIT;
	int rc;

	/* The 400s, then the Origin (403), then the token (401/403). */
	rc = routes_attach_check(rq, &o);
	if (rc == 0)
		rc = routes__attach_origin(rq);
	if (rc == 0)
		rc = routes__attach_auth(rq, &o, &rq->attach.claims);
	wshs_offer_clear(&o);
	if (rc < 0 || !(up = routes__instance(rq)) || routes__attach_admit(rq, up) < 0)
		return 0;
	g.request_id = upstream_next_id(up);
	g.session_id = rq->m.session;
	m.msg_case = PTG__LINK_MESSAGE__MSG_GET_SESSION;
	m.get_session = &g;
	return routes__ask(rq, up, &m, g.request_id, routes__on_attach);
}

/* ---- static files ---- */

static const char *routes__mime(const char *file)
{
	static const char *const types[][2] = {
	    {".html", "text/html; charset=utf-8"},
	    {".js", "text/javascript; charset=utf-8"},
	    {".mjs", "text/javascript; charset=utf-8"},
	    {".css", "text/css; charset=utf-8"},
	    {".json", "application/json"},
	    {".map", "application/json"},
	    {".svg", "image/svg+xml"},
	    {".png", "image/png"},
	    {".ico", "image/x-icon"},
	    {".txt", "text/plain; charset=utf-8"},
	    {".wasm", "application/wasm"},
	    {".woff2", "font/woff2"},
	};
	const char *dot = strrchr(file, '.');

	for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcasecmp(dot, types[i][0]))
			return types[i][1];
	return "application/octet-stream";
}

static int routes__static(struct route_req *rq)
{
	int dfd = open(rq->gw->cfg->static_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd =
	    dfd < 0 ? -1 : openat(dfd, rq->m.file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;

	if (dfd >= 0)
		close(dfd);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > ROUTES__STATIC_MAX) {
		if (fd >= 0)
			close(fd);
		return routes__error(rq, 404, "NOT_FOUND", "no such path");
	}
	rq->file_fd = fd;
	rq->file_size = (uint64_t)st.st_size;
	rq->status = 200;
	rq->content_type = routes__mime(rq->m.file);
	rq->static_file = rq->m.file;
	return 0;
}

/* ---- dispatch ---- */

static int (*const routes__handlers[])(struct route_req *rq) = {
    [ROUTE_HEALTHZ] = routes__healthz,	 [ROUTE_READYZ] = routes__readyz,
    [ROUTE_METRICS] = routes__metrics,	 [ROUTE_AGENT_CARD] = routes__agent_card,
    [ROUTE_SESSIONS] = routes__sessions, [ROUTE_SESSION] = routes__session,
    [ROUTE_ATTACH] = routes__attach,	 [ROUTE_STATIC] = routes__static,
};

/* The operator routes and the AgentCard move to --admin-listen when set. */
static int routes__on_listener(const struct route_req *rq)
{
	enum route_id id = rq->m.id;
	int admin_route = id == ROUTE_HEALTHZ || id == ROUTE_READYZ ||
			  id == ROUTE_METRICS || id == ROUTE_AGENT_CARD;

	if (rq->role == HTTP_ADMIN)
		return admin_route;
	return !admin_route || !rq->gw->cfg->admin_host[0];
}

static int routes__dispatch(struct route_req *rq)
{
	int with_static = rq->role == HTTP_PUBLIC && rq->gw->cfg->static_dir[0];
	const char *why;
	int rc = routes_match(rq->target, with_static, &rq->m, &why);

	if (rc == -EINVAL)
		return routes__error(rq, 400, "INVALID_REQUEST", why);
	if (rc < 0 || !routes__on_listener(rq)) {
		rq->m.id = 0;
		return routes__error(rq, 404, "NOT_FOUND", "no such path");
	}
	if (!routes_method_ok(rq->m.id, rq->method)) {
		routes__error(rq, 405, "INVALID_REQUEST", "method not allowed");
		rq->allow = routes_allow(rq->m.id);
		return 0;
	}
	return routes__handlers[rq->m.id](rq);
}

int routes_handle(struct route_req *rq)
{
	int rc;

	rq->in_handle = 1;
	rc = routes__dispatch(rq);
	rq->in_handle = 0;
	if (rc == 0)
		routes__count(rq);
	return rc;
}

void routes_req_clear(struct route_req *rq)
{
	if (rq->pending_up) {
		upstream_cancel(rq->pending_up, rq->pending_id);
		rq->pending_up = NULL;
	}
	routes__release_slot(rq);
	if (rq->file_fd >= 0)
		close(rq->file_fd);
	rq->file_fd = -1;
	buf_free(&rq->out);
}
