/* sessions: the session REST API (docs/protocol.md, "7. Around the
   WebSocket"). Each verb builds one request
   (POST/GET /agents/{instance}/sessions, GET/DELETE .../sessions/{id}),
   prints the answer for people (a table, or "key: value" lines) or, with
   --output json, as the gateway's JSON, and turns a non-2xx answer's
   {code, message} into one line on stderr and exit code 1. */
#include "sessions.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "auth_jwt.h"
#include "cli.h"
#include "httpc.h"
#include "num.h"
#include "ptg_limits.h"
#include "timeutil.h"

/* list asks for the gateway's largest page and follows next_page_token;
   a gateway that pages forever is cut off (100000 sessions are 200 pages). */
#define SESSIONS_PAGE_SIZE 500
#define SESSIONS_PAGES_MAX 1000
#define SESSIONS_SHORTOPTS "hqo:"
/* kill: how long the state is asked again until it reads "exited" (the
   sidecar's default grace before SIGKILL is 3 s), and how often. */
#define SESSIONS_KILL_WAIT_MS 5000
#define SESSIONS_KILL_POLL_MS 100
#define B64URL_CHARS	      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

static const char sessions_usage[] =
    "Usage: ptygate sessions create [options] [-- COMMAND [ARG...]]\n"
    "       ptygate sessions list [options]\n"
    "       ptygate sessions get [options] SESSION_ID\n"
    "       ptygate sessions kill [options] SESSION_ID\n"
    "       ptygate sessions export [options] [-o FILE] SESSION_ID\n"
    "\n"
    "Create, list, show and end the PTY sessions of an instance through the\n"
    "gateway's REST API. The answer is printed for people: a table for list,\n"
    "\"key: value\" lines for create and get; --output json prints the gateway's\n"
    "JSON document as it is, for scripts. list fetches every page of the\n"
    "gateway's paged list and prints them as one {\"sessions\": [...]}.\n"
    "export writes the session's recording (asciicast v2, live or exited) to\n"
    "FILE, or stdout, as it arrives (any size; FILE.part until it is whole);\n"
    "it needs the 'sessions' or 'pty:observe' scope.\n"
    "\n"
    "Common options:\n"
    "  --gateway URL       gateway base URL (env PTYGATE_GATEWAY,\n"
    "                      default " CLI_DEFAULT_GATEWAY ")\n"
    "  --instance ID       instance id (env PTYGATE_INSTANCE)\n"
    "  --token TOKEN       bearer token with the 'sessions' scope (env PTYGATE_TOKEN)\n"
    "  --token-file FILE   read the token from FILE\n"
    "  --session ID        the session, for get and kill (or as the argument)\n"
    "  -o, --output FORMAT text (default) or json; export: the FILE to write\n"
    "  -q, --quiet         create: print only the session id; kill: print nothing\n"
    "  -h, --help          show this help\n"
    "\n"
    "Options of create:\n"
    "  --cols N, --rows N  initial terminal size, " PTG_STR(PTG_DIM_MIN) ".." PTG_STR(
	PTG_DIM_MAX) "\n"
		     "  --cwd DIR           working directory of the command\n"
		     "  --env KEY=VALUE     environment variable; repeatable\n"
		     "  --policy POLICY     keep_running (default) or "
		     "terminate_on_last_controller\n"
		     "  --control-policy P  open (default: control on request), approve\n"
		     "                      (a controller approves each request) or\n"
		     "                      owner_only (only the creator's principal)\n"
		     "  --label LABEL       a label for the session\n"
		     "  -- COMMAND ARG...   the program to run (default: the "
		     "sidecar's)\n";

enum sessions_verb { SESS_CREATE, SESS_LIST, SESS_GET, SESS_KILL, SESS_EXPORT };

/* Everything the command line said. */
struct sessions_args {
	enum sessions_verb verb;
	struct cli_target target;
	const char *session;
	json_t *body; /* create's request body; the other verbs leave it empty */
	bool quiet;
	bool json;		/* --output json */
	const char *state_note; /* kill: the state, when not yet "exited" */
	const char *out_file;	/* export: -o FILE, NULL for stdout */
};

enum {
	SESS_OPT_SESSION = CLI_OPT_FIRST_FREE,
	SESS_OPT_COLS,
	SESS_OPT_ROWS,
	SESS_OPT_CWD,
	SESS_OPT_ENV,
	SESS_OPT_POLICY,
	SESS_OPT_LABEL,
	SESS_OPT_CONTROL,
};

const char *const sessions_verbs[] = {"create", "list", "get", "kill", "export", NULL};

/* Every option of `ptygate sessions`, once (see CLI_GETOPT in cli.h). */
#define SESSIONS_OPTS(X)                                                                 \
	CLI_TARGET_OPTS(X)                                                               \
	X("session", required_argument, SESS_OPT_SESSION, "ID",                          \
	  "the session, for get, kill and export (or give it as the operand)")           \
	X("cols", required_argument, SESS_OPT_COLS, "N",                                 \
	  "create: the terminal's width, " PTG_STR(PTG_DIM_MIN) " to " PTG_STR(          \
	      PTG_DIM_MAX) " (default: the sidecar's)")                                  \
	X("rows", required_argument, SESS_OPT_ROWS, "N",                                 \
	  "create: the terminal's height, " PTG_STR(PTG_DIM_MIN) " to " PTG_STR(         \
	      PTG_DIM_MAX) " (default: the sidecar's)")                                  \
	X("cwd", required_argument, SESS_OPT_CWD, "DIR",                                 \
	  "create: the working directory of the command")                                \
	X("env", required_argument, SESS_OPT_ENV, "KEY=VALUE",                           \
	  "create: an environment variable of the command; repeatable")                  \
	X("policy", required_argument, SESS_OPT_POLICY, "POLICY",                        \
	  "create: keep_running (the default) or terminate_on_last_controller (the "     \
	  "program is hung up when its last controller leaves)")                         \
	X("label", required_argument, SESS_OPT_LABEL, "LABEL",                           \
	  "create: a label for the session")                                             \
	X("control-policy", required_argument, SESS_OPT_CONTROL, "P",                    \
	  "create: open (the default: control on request), approve (a controller "       \
	  "approves each request) or owner_only (only the creator's principal "          \
	  "controls)")                                                                   \
	X("quiet", no_argument, 'q', NULL,                                               \
	  "create: print only the session id; kill: print nothing")                      \
	X("output", required_argument, 'o', "FORMAT",                                    \
	  "text (the default: a table for list, key: value lines for create and get) "   \
	  "or json (the gateway's JSON document as it is); export: the FILE to write "   \
	  "the recording to (FILE.part until it is whole)")                              \
	X("help", no_argument, 'h', NULL, "show the help")

const struct option sessions_opts[] = {SESSIONS_OPTS(CLI_GETOPT) CLI_GETOPT_END};
const struct cli_optdoc sessions_optdocs[] = {SESSIONS_OPTS(CLI_OPTDOC) CLI_OPTDOC_END};

static const char *opt_name(int c)
{
	const struct option *o;

	for (o = sessions_opts; o->name; o++)
		if (o->val == c)
			return o->name;
	return "?";
}

/* One of create's body options into a->body. Returns CLI_OK or CLI_USAGE. */
static int body_option(struct sessions_args *a, int c, const char *arg, const char *cmd)
{
	json_t *env;
	const char *eq;
	uint64_t v;

	if (a->verb != SESS_CREATE)
		return cli_usage_error(cmd, "--%s is only for 'sessions create'",
				       opt_name(c));
	switch (c) {
	case SESS_OPT_COLS:
	case SESS_OPT_ROWS:
		if (num_parse_u64(arg, PTG_DIM_MIN, PTG_DIM_MAX, &v) < 0)
			return cli_usage_error(cmd, "bad --%s '%s' (1..%d)",
					       c == SESS_OPT_COLS ? "cols" : "rows", arg,
					       PTG_DIM_MAX);
		json_object_set_new(a->body, c == SESS_OPT_COLS ? "cols" : "rows",
				    json_integer((json_int_t)v));
		return CLI_OK;
	case SESS_OPT_POLICY:
		if (strcmp(arg, "keep_running") &&
		    strcmp(arg, "terminate_on_last_controller"))
			return cli_usage_error(cmd,
					       "bad --policy '%s' (keep_running or "
					       "terminate_on_last_controller)",
					       arg);
		json_object_set_new(a->body, "policy", json_string(arg));
		return CLI_OK;
	case SESS_OPT_CONTROL:
		if (strcmp(arg, "open") && strcmp(arg, "approve") &&
		    strcmp(arg, "owner_only"))
			return cli_usage_error(
			    cmd,
			    "bad --control-policy '%s' (open, approve or owner_only)",
			    arg);
		json_object_set_new(a->body, "control_policy", json_string(arg));
		return CLI_OK;
	case SESS_OPT_ENV:
		eq = strchr(arg, '=');
		if (!eq || eq == arg)
			return cli_usage_error(cmd, "bad --env '%s' (KEY=VALUE)", arg);
		env = json_object_get(a->body, "env");
		if (!env)
			json_object_set_new(a->body, "env", env = json_object());
		json_object_setn_new(env, arg, (size_t)(eq - arg), json_string(eq + 1));
		return CLI_OK;
	}
	json_object_set_new(a->body, c == SESS_OPT_CWD ? "cwd" : "label",
			    json_string(arg));
	return CLI_OK;
}

/* The operands: the session id of get and kill, create's command after
   "--". Returns CLI_OK or CLI_USAGE. */
static int rest(struct sessions_args *a, const struct cli_operands *ops, const char *cmd)
{
	json_t *command;
	int i = 0;

	if (a->verb == SESS_CREATE) {
		if (ops->n == 0)
			return CLI_OK;
		if (ops->dashdash != 0)
			return cli_usage_error(cmd, "put the command after '--'");
		command = json_array();
		for (i = 0; i < ops->n; i++)
			json_array_append_new(command, json_string(ops->v[i]));
		json_object_set_new(a->body, "command", command);
		return CLI_OK;
	}
	if (i < ops->n && !a->session && a->verb != SESS_LIST)
		a->session = ops->v[i++];
	if (i < ops->n)
		return cli_usage_error(cmd, "unexpected argument '%s'", ops->v[i]);
	if (a->verb != SESS_LIST && (!a->session || !*a->session))
		return cli_usage_error(cmd, "which session? give SESSION_ID");
	return CLI_OK;
}

/* Parses the options after the verb. Returns CLI_OK, CLI_USAGE, or -1
   after printing --help. */
static int parse(struct sessions_args *a, int argc, char **argv, const char *cmd)
{
	struct cli_operands ops = {0};
	int c, rc;

	cli_getopt_reset();
	while ((c = cli_getopt(argc, argv, SESSIONS_SHORTOPTS, sessions_opts, &ops)) !=
	       -1) {
		if (c == 'h') {
			fputs(sessions_usage, stdout);
			cli_operands_free(&ops);
			return -1;
		}
		if (c == '?' || c == ':') {
			cli_operands_free(&ops);
			return cli_getopt_error(cmd, argv, c);
		}
		if (c == 'q')
			a->quiet = true;
		else if (c == 'o' && a->verb == SESS_EXPORT)
			a->out_file = optarg;
		else if (c == 'o' && (!strcmp(optarg, "json") || !strcmp(optarg, "text")))
			a->json = !strcmp(optarg, "json");
		else if (c == 'o') {
			cli_operands_free(&ops);
			return cli_usage_error(cmd, "bad --output '%s' (text or json)",
					       optarg);
		} else if (c == SESS_OPT_SESSION)
			a->session = optarg;
		else if (!cli_target_option(&a->target, c, optarg)) {
			rc = body_option(a, c, optarg, cmd);
			if (rc != CLI_OK) {
				cli_operands_free(&ops);
				return rc;
			}
		}
	}
	rc = rest(a, &ops, cmd);
	cli_operands_free(&ops);
	if (rc != CLI_OK)
		return rc;
	return cli_target_finish(&a->target, cmd);
}

/* Reports a non-2xx answer as one line: its {code, message} if it has
   them, else the status and the start of the body. */
static void report(const struct httpc_response *r)
{
	json_t *o =
	    json_loadb((const char *)buf_head(&r->body), buf_size(&r->body), 0, NULL);
	const char *code = json_string_value(json_object_get(o, "code"));
	const char *msg = json_string_value(json_object_get(o, "message"));
	int n = (int)strcspn((const char *)buf_head(&r->body), "\r\n");

	if (code || msg)
		cli_error("%ld %s: %s", r->status, code ? code : "ERROR", msg ? msg : "");
	else if (n > 0)
		cli_error("HTTP %ld from the gateway: %.*s", r->status, n > 200 ? 200 : n,
			  (const char *)buf_head(&r->body));
	else
		cli_error("HTTP %ld from the gateway", r->status);
	json_decref(o);
}

/* A JSON value as short text: strings bare, arrays as their length. */
static void value(const json_t *v, char *out, size_t n)
{
	char *d;

	if (json_is_string(v))
		snprintf(out, n, "%s", json_string_value(v));
	else if (json_is_array(v))
		snprintf(out, n, "%zu", json_array_size(v));
	else if (!v || json_is_null(v))
		snprintf(out, n, "-");
	else {
		d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		snprintf(out, n, "%s", d ? d : "?");
		free(d);
	}
}

/* list: one row per session. */
static void table(const json_t *o)
{
	static const char *const cols[] = {"session_id", "state",     "controllers",
					   "observers",	 "exit_code", "created_at"};
	const json_t *s;
	char v[6][160], size[32];
	size_t i, k;

	cli_print(stdout, "\n", "%-36s  %-7s  %-9s  %4s  %4s  %4s  %s", "SESSION",
		  "STATE", "SIZE", "CTL", "OBS", "EXIT", "CREATED");
	json_array_foreach(json_object_get(o, "sessions"), i, s)
	{
		for (k = 0; k < 6; k++)
			value(json_object_get(s, cols[k]), v[k], sizeof(v[k]));
		snprintf(size, sizeof(size), "%lldx%lld",
			 (long long)json_integer_value(json_object_get(s, "cols")),
			 (long long)json_integer_value(json_object_get(s, "rows")));
		cli_print(stdout, "\n", "%-36s  %-7s  %-9s  %4s  %4s  %4s  %s", v[0],
			  v[1], size, v[2], v[3], v[4], v[5]);
	}
}

/* The command array as a shell would read it back: each argument
   quoted when it needs it. Cleaned when printed, like every field. */
static void command_text(const json_t *argv, struct buf *out)
{
	const json_t *w;
	size_t i;

	json_array_foreach(argv, i, w)
	{
		if (i)
			buf_append_str(out, " ");
		cli_shell_quote(json_is_string(w) ? json_string_value(w) : "?", out);
	}
}

/* create, get: "key: value" lines in the document's order; state_note
   (NULL: none) replaces the state's value. */
static void fields(const json_t *o, const char *state_note)
{
	struct buf cmd = BUF_INIT;
	const char *key;
	const json_t *v;
	char text[1024];

	json_object_foreach((json_t *)o, key, v)
	{
		if (!strcmp(key, "command") && json_is_array(v)) {
			command_text(v, &cmd);
			cli_print(stdout, "\n", "%s: %.*s", key, (int)buf_size(&cmd),
				  (const char *)buf_head(&cmd));
			buf_reset(&cmd);
			continue;
		}
		value(v, text, sizeof(text));
		if (!strcmp(key, "state") && state_note)
			snprintf(text, sizeof(text), "%s", state_note);
		cli_print(stdout, "\n", "%s: %s", key, text);
	}
	buf_free(&cmd);
}

/* Prints a 2xx answer's document o (NULL: not JSON, raw is printed):
   for people, as JSON (--output json), or the session id alone for
   `create --quiet`. Returns the exit code. */
static int print_doc(const struct sessions_args *a, const json_t *o,
		     const struct buf *raw)
{
	const char *id;
	int rc = CLI_OK;

	if (a->quiet && a->verb == SESS_CREATE) {
		id = json_string_value(json_object_get(o, "session_id"));
		if (id)
			cli_print(stdout, "\n", "%s", id);
		else {
			cli_error("the gateway's answer has no session_id");
			rc = CLI_FAIL;
		}
	} else if (o && a->json) {
		char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
					       JSON_ENSURE_ASCII);

		cli_print_json(stdout, text ? text : "null");
		fputc('\n', stdout);
		free(text);
	} else if (o && a->verb == SESS_LIST) {
		table(o);
	} else if (o) {
		fields(o, a->state_note);
	} else {
		cli_print(stdout, "\n", "%.*s", (int)buf_size(raw),
			  (const char *)buf_head(raw));
	}
	if (fflush(stdout) != 0)
		rc = CLI_FAIL;
	return rc;
}

static int print(const struct sessions_args *a, const struct httpc_response *r)
{
	json_t *o;
	int rc;

	if (buf_size(&r->body) == 0 || (a->quiet && a->verb == SESS_KILL))
		return CLI_OK;
	o = json_loadb((const char *)buf_head(&r->body), buf_size(&r->body), 0, NULL);
	rc = print_doc(a, o, &r->body);
	json_decref(o);
	return rc;
}

/* Builds the URL of the verb's route. */
static void list_url(const struct sessions_args *a, struct buf *url)
{
	buf_append_str(url, a->target.gateway);
	buf_append_str(url, "/agents/");
	cli_path_escape(a->target.instance, url);
	buf_append_str(url, "/sessions");
	if (a->session) {
		buf_append_str(url, "/");
		cli_path_escape(a->session, url);
	}
	*buf_reserve(url, 1) = '\0';
}

/* One page of the list after token (NULL: the first) into all; its
   next_page_token (owned) in *next, NULL on the last page. */
static int list_page(const struct sessions_args *a, const struct buf *base,
		     const char *token, json_t *all, char **next)
{
	struct httpc_response r;
	struct buf url = BUF_INIT;
	char err[CLI_ERR_LEN];
	json_t *o = NULL;
	const char *t;
	int rc = CLI_FAIL;

	*next = NULL;
	buf_append(&url, buf_head(base), buf_size(base));
	buf_append_str(&url, "?page_size=" PTG_STR(SESSIONS_PAGE_SIZE));
	if (token) {
		buf_append_str(&url, "&page_token=");
		buf_append_str(&url, token);
	}
	*buf_reserve(&url, 1) = '\0';
	if (httpc_request("GET", (const char *)url.data, a->target.token, NULL, &r, err,
			  sizeof(err)) < 0) {
		cli_error("%s", err);
		buf_free(&url);
		return CLI_FAIL;
	}
	if (r.status < 200 || r.status > 299)
		report(&r);
	else if (!(o = json_loadb((const char *)buf_head(&r.body), buf_size(&r.body), 0,
				  NULL)) ||
		 !json_is_array(json_object_get(o, "sessions")))
		cli_error("the gateway's list answer has no sessions array");
	else
		rc = CLI_OK;
	if (rc == CLI_OK) {
		json_array_extend(all, json_object_get(o, "sessions"));
		t = json_string_value(json_object_get(o, "next_page_token"));
		if (t && t[0] && strspn(t, B64URL_CHARS) == strlen(t))
			*next = strdup(t);
		else if (t && t[0]) {
			cli_error("the gateway's next_page_token is not base64url");
			rc = CLI_FAIL;
		}
	}
	json_decref(o);
	httpc_response_free(&r);
	buf_free(&url);
	return rc;
}

/* list: every page, following next_page_token, printed as one list. */
static int list_all(const struct sessions_args *a, const struct buf *base)
{
	json_t *all = json_array(), *doc;
	char *token = NULL, *next;
	int rc = CLI_OK;

	for (unsigned pages = 0; rc == CLI_OK; pages++) {
		if (pages == SESSIONS_PAGES_MAX) {
			cli_error("the gateway sent more than %u pages",
				  SESSIONS_PAGES_MAX);
			rc = CLI_FAIL;
			break;
		}
		rc = list_page(a, base, token, all, &next);
		free(token);
		token = next;
		if (!token)
			break;
	}
	free(token);
	doc = json_pack("{s:o}", "sessions", all);
	if (rc == CLI_OK)
		rc = print_doc(a, doc, NULL);
	json_decref(doc);
	return rc;
}

/* GETs the session after a kill until it reads "exited" or the bound
   passes. Returns the last document read (owned), or NULL when a GET
   failed (not allowed to this token, say). */
static json_t *kill_wait(const struct sessions_args *a, const char *url)
{
	int64_t until = time_mono_ms() + SESSIONS_KILL_WAIT_MS;
	struct httpc_response r;
	char err[CLI_ERR_LEN];
	json_t *o = NULL;

	for (;;) {
		json_decref(o);
		o = NULL;
		if (httpc_request("GET", url, a->target.token, NULL, &r, err,
				  sizeof(err)) < 0)
			return NULL;
		if (r.status >= 200 && r.status <= 299)
			o = json_loadb((const char *)buf_head(&r.body), buf_size(&r.body),
				       0, NULL);
		httpc_response_free(&r);
		if (!o)
			return NULL;
		if (!strcmp(json_string_value(json_object_get(o, "state")) ?: "",
			    "exited") ||
		    time_mono_ms() >= until)
			return o;
		poll(NULL, 0, SESSIONS_KILL_POLL_MS);
	}
}

/* kill: the DELETE answers with the session as it was when the hang-up
   went out (still "running"), so the state printed is read again: the
   session once exited, else "kill requested". */
static int kill_report(struct sessions_args *a, const char *url,
		       const struct httpc_response *del)
{
	json_t *o, *now;
	const char *state;
	int rc;

	if (a->quiet)
		return CLI_OK;
	o = json_loadb((const char *)buf_head(&del->body), buf_size(&del->body), 0, NULL);
	state = json_string_value(json_object_get(o, "state"));
	if (o && state && strcmp(state, "exited") && (now = kill_wait(a, url))) {
		json_decref(o);
		o = now;
		state = json_string_value(json_object_get(o, "state"));
	}
	if (o && state && strcmp(state, "exited"))
		a->state_note = "kill requested (not exited yet)";
	rc = print_doc(a, o, &del->body);
	json_decref(o);
	return rc;
}

/* export: the sink of the streamed recording. */
static int write_out(const void *p, size_t n, void *user)
{
	return fwrite(p, 1, n, user) == n ? 0 : -1;
}

/* export: the recording written as it arrives, into -o FILE (FILE.part
   first, renamed over FILE once whole, removed on failure) or onto
   stdout; no size limit. */
static int export_recording(const struct sessions_args *a, const char *url)
{
	bool to_stdout = !a->out_file || !strcmp(a->out_file, "-");
	struct httpc_response r;
	char tmp[4096], err[CLI_ERR_LEN];
	FILE *f = stdout;
	int rc = CLI_FAIL, ok;

	if (!to_stdout) {
		snprintf(tmp, sizeof(tmp), "%s.part", a->out_file);
		f = fopen(tmp, "w");
		if (!f) {
			cli_error("cannot write %s: %s", tmp, strerror(errno));
			return CLI_FAIL;
		}
	}
	ok = httpc_stream(url, a->target.token, write_out, f, &r, err, sizeof(err)) == 0;
	if (!ok)
		cli_error("%s", err);
	else if (r.status < 200 || r.status > 299)
		report(&r);
	else
		rc = CLI_OK;
	httpc_response_free(&r);
	ok = to_stdout ? fflush(stdout) == 0 : fclose(f) == 0;
	if (rc == CLI_OK && !ok)
		cli_error("cannot write %s: %s", to_stdout ? "the recording" : tmp,
			  strerror(errno));
	if (rc == CLI_OK && ok && !to_stdout && rename(tmp, a->out_file) < 0)
		cli_error("cannot write %s: %s", a->out_file, strerror(errno));
	else if (rc == CLI_OK && ok)
		return CLI_OK;
	if (!to_stdout)
		unlink(tmp);
	return CLI_FAIL;
}

static int run(struct sessions_args *a)
{
	static const char *const methods[] = {"POST", "GET", "GET", "DELETE", "GET"};
	struct httpc_response r;
	struct buf url = BUF_INIT;
	char err[CLI_ERR_LEN], *body = NULL;
	int rc;

	if (strncmp(a->target.gateway, "http://", 7) &&
	    strncmp(a->target.gateway, "https://", 8))
		return cli_usage_error("sessions", "--gateway must be an http:// or "
						   "https:// URL");
	list_url(a, &url);
	if (a->verb == SESS_LIST) {
		rc = list_all(a, &url);
		buf_free(&url);
		return rc;
	}
	if (a->verb == SESS_CREATE)
		body = json_dumps(a->body, JSON_COMPACT);
	if (a->verb == SESS_EXPORT) {
		buf_append_str(&url, "/recording");
		*buf_reserve(&url, 1) = '\0';
		rc = export_recording(a, (const char *)url.data);
		buf_free(&url);
		return rc;
	}
	if (httpc_request(methods[a->verb], (const char *)url.data, a->target.token, body,
			  &r, err, sizeof(err)) < 0) {
		cli_error("%s", err);
		rc = CLI_FAIL;
	} else if (r.status < 200 || r.status > 299) {
		report(&r);
		rc = CLI_FAIL;
	} else if (a->verb == SESS_KILL) {
		rc = kill_report(a, (const char *)url.data, &r);
	} else {
		rc = print(a, &r);
	}
	httpc_response_free(&r);
	free(body);
	buf_free(&url);
	return rc;
}

int sessions_main(int argc, char **argv)
{
	const char *const *verbs = sessions_verbs;
	struct sessions_args a = {0};
	char cmd[32];
	size_t i;
	int rc;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(sessions_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_USAGE : CLI_OK;
	}
	for (i = 0; verbs[i]; i++)
		if (!strcmp(argv[1], verbs[i]))
			break;
	if (!verbs[i])
		return cli_usage_error("sessions",
				       "unknown command '%s' (create, list, "
				       "get, kill, export)",
				       argv[1]);
	a.verb = (enum sessions_verb)i;
	a.body = json_object();
	snprintf(cmd, sizeof(cmd), "sessions %s", verbs[i]);
	rc = parse(&a, argc - 1, argv + 1, cmd);
	if (rc == CLI_OK)
		rc = run(&a);
	else if (rc < 0)
		rc = CLI_OK;
	json_decref(a.body);
	cli_target_clear(&a.target);
	return rc;
}
