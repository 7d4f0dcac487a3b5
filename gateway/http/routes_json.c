/* routes_json: the JSON documents the gateway answers with: the session
   object and the create answer (docs/protocol.md, "Around the WebSocket"),
   the AgentCard, the error body, the HTTP status of a sidecar reply code,
   and the public URL bases the AgentCard and attach_url are built from.
   Pure functions of their inputs (but routes__bases, which reads the
   gateway's settings). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "frames.h"
#include "ptyws.h"
#include "routes_int.h"
#include "timeutil.h"
#include "upstream.h"

/* A JSON string from peer text, invalid UTF-8 bytes replaced by U+FFFD. */
static json_t *jstr(const char *s)
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

static json_t *iso_ts(int64_t ms)
{
	char ts[TS_STRLEN + 1];

	if (ms <= 0)
		return json_null();
	time_format_ms(ms, ts);
	return json_string(ts);
}

static json_t *members(Ptg__Member **m, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:o, s:o}", "client_id",
						   jstr(m[i]->client_id), "label",
						   jstr(m[i]->label)));
	return a;
}

static const char *state(const Ptg__SessionInfo *s)
{
	return s->state == PTG__SESSION_STATE__SESSION_EXITED ? "exited" : "running";
}

static const char *control_policy(const Ptg__SessionInfo *s)
{
	switch (s->control_policy) {
	case PTG__CONTROL_POLICY__CONTROL_APPROVE:
		return "approve";
	case PTG__CONTROL_POLICY__CONTROL_OWNER_ONLY:
		return "owner_only";
	default:
		return "open";
	}
}

json_t *routes_session_json(const Ptg__SessionInfo *s)
{
	json_t *o = json_object(), *cmd = json_array();

	json_object_set_new(o, "session_id", jstr(s->session_id));
	json_object_set_new(o, "state", json_string(state(s)));
	json_object_set_new(o, "pid", json_integer(s->pid));
	json_object_set_new(o, "cols", json_integer(s->cols));
	json_object_set_new(o, "rows", json_integer(s->rows));
	json_object_set_new(o, "current_sequence",
			    json_integer((json_int_t)s->current_sequence));
	json_object_set_new(o, "oldest_retained_sequence",
			    json_integer((json_int_t)s->oldest_retained_sequence));
	/* The PTY's byte counts, ptygate's own fields of the session object. */
	json_object_set_new(o, "output_bytes", json_integer((json_int_t)s->output_bytes));
	json_object_set_new(o, "input_bytes", json_integer((json_int_t)s->input_bytes));
	json_object_set_new(o, "controllers", members(s->controllers, s->n_controllers));
	json_object_set_new(o, "observers", members(s->observers, s->n_observers));
	json_object_set_new(o, "exit_code",
			    s->has_exit_code ? json_integer(s->exit_code) : json_null());
	json_object_set_new(o, "created_at", iso_ts(s->created_at_ms));
	json_object_set_new(o, "exited_at", iso_ts(s->exited_at_ms));
	json_object_set_new(o, "label", jstr(s->label));
	json_object_set_new(
	    o, "policy",
	    json_string(s->policy == PTG__POLICY__POLICY_TERMINATE_ON_LAST_CONTROLLER
			    ? "terminate_on_last_controller"
			    : "keep_running"));
	json_object_set_new(o, "control_policy", json_string(control_policy(s)));
	json_object_set_new(o, "owner", jstr(s->owner));
	for (size_t i = 0; i < s->n_argv; i++)
		json_array_append_new(cmd, jstr(s->argv[i]));
	json_object_set_new(o, "command", cmd);
	return o;
}

json_t *routes_created_json(const Ptg__SessionInfo *s, const char *attach_url)
{
	return json_pack("{s:o, s:s, s:I, s:I, s:o, s:s}", "session_id",
			 jstr(s->session_id), "state", state(s), "cols",
			 (json_int_t)s->cols, "rows", (json_int_t)s->rows, "created_at",
			 iso_ts(s->created_at_ms), "attach_url", attach_url);
}

/* The bases of the gateway's public URLs: public_url as configured
   (http/https mapped to ws/wss for ws_base and back for http_base), else
   http://HOST:PORT and ws://HOST:PORT (IPv6 hosts bracketed). */
static void routes_bases(const char *public_url, const char *host, uint16_t port,
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

static json_t *ext_params(const Ptg__Limits *l)
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

static json_t *skills(void)
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
	char url[ROUTES_URL_MAX], attach[ROUTES_URL_MAX];

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
	    "extensions", "uri", PTYWS_EXT_PTY, "description",
	    "Live PTY sessions: observe, control, replay, keyframes.", "required", 0,
	    "params", ext_params(lim), "additionalInterfaces", "url", attach, "transport",
	    PTYWS_BINDING_URI, "binding_uri", PTYWS_BINDING_URI, "binding_version",
	    PTYWS_BINDING_VERSION, "subprotocol", WSHS_PROTOCOL, "operations",
	    PTYWS_OP_SEND_MESSAGE, PTYWS_OP_SEND_STREAMING, PTYWS_OP_GET_TASK,
	    PTYWS_OP_LIST_TASKS, PTYWS_OP_CANCEL_TASK, PTYWS_OP_SUBSCRIBE_TO_TASK,
	    "preference", "secondary", "defaultInputModes", "text/plain",
	    "defaultOutputModes", "text/plain", "skills", skills(), "securitySchemes",
	    "bearer", "type", "http", "scheme", "bearer", "bearerFormat", "JWT",
	    "security", "bearer");
}

void routes_error_body(const char *code, const char *message, struct buf *out)
{
	json_t *o = json_pack("{s:s, s:o}", "code", code, "message", jstr(message));
	char *s = json_dumps(o, JSON_COMPACT);

	buf_append_str(out, s);
	free(s);
	json_decref(o);
}

unsigned routes_status_from_link(Ptg__ErrorCode code, const char **name)
{
	/* The gateway's own codes for a reply it refused (upstream.h). */
	if ((int)code == UPSTREAM_CODE_BAD_REPLY) {
		*name = "BAD_GATEWAY";
		return 502;
	}
	if ((int)code == UPSTREAM_CODE_SHED) {
		*name = "UNAVAILABLE";
		return 503;
	}
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
void routes__bases(const struct routes_host *rh, char *http_base, char *ws_base,
		   size_t cap)
{
	const struct gw_config *cfg = rh->cfg;
	uint16_t port = rh->public_port;
	const char *host = cfg->listen_host;
	char tls_url[sizeof(cfg->public_url) + 16];

	if (!cfg->public_url[0] && cfg->tls_cert[0]) {
		/* Under TLS the derived URLs are https:// and wss://. */
		snprintf(tls_url, sizeof(tls_url), "https://%s%s%s:%u",
			 strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
			 port);
		routes_bases(tls_url, host, port, http_base, ws_base, cap);
		return;
	}
	routes_bases(cfg->public_url, host, port, http_base, ws_base, cap);
}
