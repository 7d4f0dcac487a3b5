/* run: `ptygate run`. One poll loop over the WebSocket and a signalfd:
   SendStreamingMessage, then every TaskStatusUpdate replaces our copy of
   the task (docs/protocol.md, "7. Around the WebSocket"), and what its artifacts hold
   beyond what was printed is printed. A deadline (--timeout) bounds the whole wait, so a
   task or a stream that never ends cannot hang the caller. */
#include "run.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "num.h"
#include "timeutil.h"
#include "uuid.h"
#include "wsclient.h"

#define RUN_CONNECT_MS	  10000
#define RUN_CLOSE_MS	  2000 /* after the end: the close handshake */
#define RUN_EXIT_CANCELED 130  /* as a shell reports a Ctrl-C */
#define RUN_EXIT_TIMEOUT  124  /* as timeout(1) reports its deadline */
#define RUN_TIMEOUT_S	  3600 /* the default --timeout */

#define RUN_SHORTOPTS "hq"

enum { RUN_OPT_SESSION = CLI_OPT_FIRST_FREE, RUN_OPT_TIMEOUT };

static const char run_usage[] =
    "Usage: ptygate run --session ID [options] -- COMMAND [ARG...]\n"
    "\n"
    "Runs COMMAND in the session as an A2A task (no terminal; the session's\n"
    "working directory and environment), prints its output as it comes (the\n"
    "task's stdout on stdout, its stderr and status lines on stderr), and exits\n"
    "with its exit code (128+N when signal N ended it, 130 when canceled, 1 when\n"
    "it failed without one). One COMMAND word is shell text ('echo a; echo b');\n"
    "several are quoted and run as given. Ctrl-C cancels the task (twice: quit\n"
    "at once). The gateway keeps no state: `ptygate run` again with the same\n"
    "words starts a new task. When the task has not ended by --timeout, it is\n"
    "canceled and ptygate exits with 124.\n"
    "\n"
    "  --gateway URL        gateway base URL (env PTYGATE_GATEWAY, default\n"
    "                       " CLI_DEFAULT_GATEWAY ")\n"
    "  --instance ID        instance id (env PTYGATE_INSTANCE)\n"
    "  --session ID         the session to run in (required)\n"
    "  --timeout DURATION   give up after DURATION (N, Ns, Nm, Nh or Nd; 0: never;\n"
    "                       default 1h): cancel the task, exit 124\n"
    "  --token TOKEN        bearer token with scope tasks (env PTYGATE_TOKEN)\n"
    "  --token-file FILE    read the token from FILE\n"
    "  -q, --quiet          no status lines: stderr holds the task's stderr and\n"
    "                       errors only (a task that failed or was canceled)\n"
    "  -h, --help           show this help\n"
    "\n"
    "Options come before COMMAND: the first word that is not an option (or\n"
    "everything after '--') starts the command, whose own options follow it.\n"
    "Without -q each change of the task's state is one line on stderr,\n"
    "\"ptygate: task ID TASK_STATE_WORKING\", with the state as A2A names it.\n";

/* Every option of `ptygate run`, once (see CLI_GETOPT in cli.h). */
#define RUN_OPTS(X)                                                                      \
	CLI_TARGET_OPTS(X)                                                               \
	X("quiet", no_argument, 'q', NULL,                                               \
	  "no status lines: stderr holds the task's stderr and errors only (a task "     \
	  "that failed or was canceled still says so)")                                  \
	X("session", required_argument, RUN_OPT_SESSION, "ID",                           \
	  "the session to run in (required)")                                            \
	X("timeout", required_argument, RUN_OPT_TIMEOUT, "DURATION",                     \
	  "give up after DURATION (N, Ns, Nm, Nh or Nd; 0: never; default 1h): cancel "  \
	  "the task and exit 124")                                                       \
	X("help", no_argument, 'h', NULL, "show the help")

const struct option run_opts[] = {RUN_OPTS(CLI_GETOPT) CLI_GETOPT_END};
const struct cli_optdoc run_optdocs[] = {RUN_OPTS(CLI_OPTDOC) CLI_OPTDOC_END};

struct run {
	struct cli_target target;
	const char *session;
	const char *timeout_text; /* as given, for the message */
	int64_t timeout_s;	  /* 0: no deadline */
	char *command;
	struct wsclient *ws;
	int sigfd;
	char task_id[UUID_STRLEN + 1];
	char request_id[UUID_STRLEN + 1];
	char state[64];
	size_t printed[2];  /* bytes of stdout and stderr written so far */
	bool cancel_wanted; /* Ctrl-C before the task id was known */
	bool cancel_sent;
	bool done;
	bool quit;
	bool quiet; /* -q: state lines only for an end that is not success */
	int exit_code;
};

static bool safe_word(const char *w)
{
	if (!*w)
		return false;
	for (; *w; w++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789-_./=:,+@%",
			    *w))
			return false;
	return true;
}

/* The command line for /bin/sh -c from the words after "--": one word is
   taken as shell text; several are each quoted, so they run as given. */
static void run_command_text(char *const *words, int n, struct buf *out)
{
	if (n == 1) {
		buf_append_str(out, words[0]);
		return;
	}
	for (int i = 0; i < n; i++) {
		if (i)
			buf_append_str(out, " ");
		if (safe_word(words[i])) {
			buf_append_str(out, words[i]);
			continue;
		}
		buf_append_str(out, "'");
		for (const char *p = words[i]; *p; p++) {
			if (*p == '\'')
				buf_append_str(out, "'\\''");
			else
				buf_append(out, p, 1);
		}
		buf_append_str(out, "'");
	}
}

static void write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void send_msg(struct run *r, const char *op, json_t *payload, const char *id)
{
	char fresh[UUID_STRLEN + 1], ts[TS_STRLEN + 1], *text;
	json_t *frame;

	if (!id) {
		uuid_v7_new(fresh);
		id = fresh;
	}
	time_format_ms(time_now_ms(), ts);
	frame = json_pack("{s:s, s:s, s:s, s:o}", "op", op, "id", id, "ts", ts, "payload",
			  payload);
	text = json_dumps(frame, JSON_COMPACT);
	wsclient_send_text(r->ws, text, strlen(text));
	free(text);
	json_decref(frame);
}

static void cancel(struct run *r)
{
	if (!r->task_id[0]) {
		r->cancel_wanted = true;
		return;
	}
	if (r->cancel_sent || r->done)
		return;
	r->cancel_sent = true;
	if (!r->quiet)
		cli_print(stderr, "\n", "ptygate: canceling task %s", r->task_id);
	send_msg(r, "CancelTask", json_pack("{s:s}", "task_id", r->task_id), NULL);
}

/* Prints what the artifact of stream holds beyond what was printed. */
static void artifact(struct run *r, json_t *art)
{
	const char *name = json_string_value(json_object_get(art, "artifactId"));
	int s = name && !strcmp(name, "stdout")	  ? 0
		: name && !strcmp(name, "stderr") ? 1
						  : -1;
	size_t off = 0, i;
	json_t *part;

	if (s < 0)
		return;
	json_array_foreach(json_object_get(art, "parts"), i, part)
	{
		json_t *text = json_object_get(part, "text");
		size_t n = json_string_length(text);
		if (!json_is_string(text))
			continue;
		if (off + n > r->printed[s]) {
			size_t skip = r->printed[s] > off ? r->printed[s] - off : 0;
			write_all(s ? STDERR_FILENO : STDOUT_FILENO,
				  json_string_value(text) + skip, n - skip);
			r->printed[s] = off + n;
		}
		off += n;
	}
}

/* The exit code a finished task (its A2A Task object, in its final state)
   stands for: the command's own code, 128 + a signal's number, or the
   CLI's codes for a canceled or failed task. Scripts depend on this
   mapping. */
static int run_exit_code(json_t *task, const char *state)
{
	json_t *md = json_object_get(task, "metadata");
	json_t *code = json_object_get(md, "exit_code");
	json_t *sig = json_object_get(md, "signal_number");

	if (!strcmp(state, "TASK_STATE_CANCELED"))
		return RUN_EXIT_CANCELED;
	if (json_is_integer(code))
		return (int)json_integer_value(code);
	if (json_is_integer(sig))
		return 128 + (int)json_integer_value(sig);
	return strcmp(state, "TASK_STATE_COMPLETED") ? CLI_FAIL : CLI_OK;
}

/* The states -q keeps off stderr: the way to an end, and a good end. */
static bool state_is_quiet(const char *state)
{
	return !strcmp(state, "TASK_STATE_SUBMITTED") ||
	       !strcmp(state, "TASK_STATE_WORKING") ||
	       !strcmp(state, "TASK_STATE_COMPLETED");
}

static void update(struct run *r, json_t *payload)
{
	json_t *task = json_object_get(payload, "task");
	json_t *status = json_object_get(task, "status");
	const char *state = json_string_value(json_object_get(status, "state"));
	json_t *msg = json_object_get(
	    json_object_get(json_object_get(status, "message"), "parts"), 0);
	size_t i;
	json_t *art;

	if (!state ||
	    strcmp(json_string_value(json_object_get(task, "id")) ?: "", r->task_id))
		return;
	json_array_foreach(json_object_get(task, "artifacts"), i, art) artifact(r, art);
	if (strcmp(state, r->state)) {
		snprintf(r->state, sizeof(r->state), "%s", state);
		if (!r->quiet || !state_is_quiet(state))
			cli_print(
			    stderr, "\n", "ptygate: task %s %s%s%s", r->task_id, state,
			    json_is_string(json_object_get(msg, "text")) ? ": " : "",
			    json_string_value(json_object_get(msg, "text")) ?: "");
	}
	if (strcmp(state, "TASK_STATE_SUBMITTED") &&
	    strcmp(state, "TASK_STATE_WORKING")) {
		r->done = true;
		r->exit_code = run_exit_code(task, state);
	}
}

static void on_text(const char *p, size_t n, void *user)
{
	struct run *r = user;
	/* Output is passed byte for byte: a NUL in it arrives as \u0000. */
	json_t *f = json_loadb(p, n, JSON_ALLOW_NUL, NULL);
	const char *op = json_string_value(json_object_get(f, "op"));
	json_t *payload = json_object_get(f, "payload");
	const char *id = json_string_value(json_object_get(f, "id"));

	if (!op || r->done) {
		json_decref(f);
		return;
	}
	if (!strcmp(op, "SendStreamingMessage.Accepted")) {
		snprintf(r->task_id, sizeof(r->task_id), "%s",
			 json_string_value(json_object_get(payload, "task_id")) ?: "");
		if (r->cancel_wanted)
			cancel(r);
	} else if (!strcmp(op, "TaskStatusUpdate")) {
		update(r, payload);
	} else if (!strcmp(op, "Error")) {
		const char *code = json_string_value(json_object_get(payload, "code"));
		cli_error("%s: %s", code ?: "Error",
			  json_string_value(json_object_get(payload, "message")) ?: "");
		/* A cancel that lost the race with the end: the end comes next. */
		if (!(code && !strcmp(code, "TASK_NOT_CANCELABLE")) ||
		    (id && !strcmp(id, r->request_id))) {
			r->done = true;
			r->exit_code = CLI_FAIL;
		}
	} else if (!strcmp(op, "binding_goodbye")) {
		cli_error("the gateway said goodbye before the task ended");
		r->done = true;
		r->exit_code = CLI_FAIL;
	}
	json_decref(f);
}

static int signals(struct run *r)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	r->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return r->sigfd < 0 ? -errno : 0;
}

static void on_signal(struct run *r)
{
	struct signalfd_siginfo si;

	while (read(r->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (r->cancel_sent || r->cancel_wanted) {
			r->quit = true; /* a second Ctrl-C: stop waiting */
			r->exit_code = RUN_EXIT_CANCELED;
		}
		cancel(r);
	}
}

/* How long the wait loop may poll at now (monotonic ms): until close_by
   once the close handshake started, else until the deadline (0: none,
   then -1, no bound), at most a minute. */
static int run_wait_ms(int64_t now, int64_t deadline, int64_t close_by)
{
	int64_t until = close_by ? close_by : deadline;

	if (!until)
		return -1;
	return until <= now ? 0 : until - now > 60000 ? 60000 : (int)(until - now);
}

/* The deadline passed: the task is canceled (when it has an id) and the
   close handshake follows, as after the end. */
static void give_up(struct run *r)
{
	cli_error("the task did not end within %s (--timeout)%s", r->timeout_text,
		  r->task_id[0] ? ": canceling it" : "");
	if (r->task_id[0] && !r->cancel_sent)
		send_msg(r, "CancelTask", json_pack("{s:s}", "task_id", r->task_id),
			 NULL);
	r->done = true;
	r->exit_code = RUN_EXIT_TIMEOUT;
}

static void loop(struct run *r)
{
	int64_t close_by = 0;
	int64_t deadline = r->timeout_s ? time_mono_ms() + r->timeout_s * 1000 : 0;

	while (!r->quit && !wsclient_done(r->ws)) {
		struct pollfd p[2] = {
		    {wsclient_fd(r->ws), wsclient_events(r->ws), 0},
		    {r->sigfd, POLLIN, 0},
		};
		int64_t now = time_mono_ms();
		if (!r->done && deadline && now >= deadline)
			give_up(r);
		if (r->done && !close_by) {
			wsclient_close(r->ws, 1000, NULL);
			close_by = now + RUN_CLOSE_MS;
		}
		if (close_by && now > close_by)
			break;
		if (poll(p, 2, run_wait_ms(now, deadline, close_by)) < 0 &&
		    errno != EINTR)
			break;
		if (p[1].revents)
			on_signal(r);
		if (p[0].revents && wsclient_handle(r->ws, p[0].revents) < 0)
			break;
	}
	if (!r->done && !r->quit) {
		cli_error("the connection ended before the task did");
		r->exit_code = CLI_FAIL;
	}
}

static int parse(struct run *r, int argc, char **argv)
{
	struct buf cmd = BUF_INIT;
	size_t n;
	int c, rc;

	cli_getopt_reset();
	while ((c = getopt_long(argc, argv, "+:" RUN_SHORTOPTS, run_opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(run_usage, stdout);
			return -1;
		}
		if (c == 'q') {
			r->quiet = true;
			continue;
		}
		if (c == '?' || c == ':')
			return cli_getopt_error("run", argv, c);
		if (c == RUN_OPT_SESSION) {
			r->session = optarg;
		} else if (c == RUN_OPT_TIMEOUT) {
			if (num_parse_duration_s(optarg, CLI_DURATION_MAX,
						 &r->timeout_s) < 0)
				return cli_usage_error(
				    "run",
				    "--timeout: a duration like 90, 30s, 5m, 2h or 1d");
			r->timeout_text = optarg;
		} else if (!cli_target_option(&r->target, c, optarg))
			return cli_usage_error("run", "unexpected option");
	}
	if (!r->session || !*r->session)
		return cli_usage_error("run", "--session is required");
	if (optind >= argc)
		return cli_usage_error("run", "no command: ptygate run ... -- COMMAND");
	run_command_text(argv + optind, argc - optind, &cmd);
	buf_append(&cmd, "", 1);
	r->command = (char *)buf_steal(&cmd, &n);
	rc = cli_target_finish(&r->target, "run");
	return rc;
}

static char *url_path(const struct run *r)
{
	struct buf b = BUF_INIT;
	size_t n;

	buf_append_str(&b, "/agents/");
	cli_path_escape(r->target.instance, &b);
	buf_append_str(&b, "/sessions/");
	cli_path_escape(r->session, &b);
	buf_append_str(&b, "/attach");
	buf_append(&b, "", 1);
	return (char *)buf_steal(&b, &n);
}

static int run(struct run *r)
{
	static const struct wsclient_callbacks wcb = {.on_text = on_text};
	char err[CLI_ERR_LEN], mid[UUID_STRLEN + 1], *path = url_path(r);

	r->sigfd = -1;
	r->ws = wsclient_connect(r->target.gateway, path, r->target.token, RUN_CONNECT_MS,
				 &wcb, r, err, sizeof(err));
	free(path);
	if (!r->ws) {
		cli_error("%s", err);
		return CLI_FAIL;
	}
	if (signals(r) < 0) {
		cli_error("cannot set up signal handling: %s", strerror(errno));
		return CLI_FAIL;
	}
	uuid_v7_new(mid);
	uuid_v7_new(r->request_id);
	send_msg(r, "SendStreamingMessage",
		 json_pack("{s:{s:s, s:s, s:[{s:s}]}}", "message", "messageId", mid,
			   "role", "ROLE_USER", "parts", "text", r->command),
		 r->request_id);
	loop(r);
	return r->exit_code;
}

int run_main(int argc, char **argv)
{
	struct run r = {.timeout_s = RUN_TIMEOUT_S, .timeout_text = "1h"};
	int rc = parse(&r, argc, argv);

	if (rc == CLI_OK)
		rc = run(&r);
	else if (rc < 0)
		rc = CLI_OK;
	if (r.sigfd >= 0 && r.ws)
		close(r.sigfd);
	wsclient_free(r.ws);
	free(r.command);
	cli_target_clear(&r.target);
	return rc;
}
