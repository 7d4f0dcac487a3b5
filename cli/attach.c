/* attach: `ptygate attach`, the interactive client. One poll loop over
   the WebSocket, stdin and a signalfd (SIGWINCH for resizes; SIGINT,
   SIGTERM, SIGHUP to leave politely, twice to quit at once). The
   protocol decisions are ptyc's, the framing wsclient's, the terminal
   mode rawtty's; this file moves bytes between them. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <jansson.h>

#include "attach.h"
#include "cli.h"
#include "ptyc.h"
#include "rawtty.h"
#include "timeutil.h"
#include "wsclient.h"

#define ATTACH_CONNECT_MS   10000
#define ATTACH_LEAVE_MS	    3000	  /* wait for binding_goodbye after leaving */
#define ATTACH_CLOSE_MS	    1000	  /* then for the close echo */
#define ATTACH_SETTLE_MS    500	  /* piped input ended: quiet screen before leaving */
#define ATTACH_SETTLE_MAX_MS 5000	  /* ... but leave this long after the end at most */
#define ATTACH_QUEUE_MAX    (1024 * 1024) /* stop reading stdin above this */
#define ATTACH_DETACH_KEY   0x1d	  /* Ctrl-] */
#define ATTACH_DEFAULT_COLS 80
#define ATTACH_DEFAULT_ROWS 24

static const char attach_usage[] =
    "Usage: ptygate attach --session ID [options]\n"
    "\n"
    "Attach this terminal to a session over the gateway's WebSocket. Ctrl-]\n"
    "detaches (the session keeps running unless its policy says otherwise).\n"
    "When stdin is not a terminal, its bytes are sent until end of file, then\n"
    "the client leaves once the screen has been quiet for half a second (5 s at\n"
    "most); the screen still goes to stdout.\n"
    "\n"
    "  --gateway URL        gateway base URL, http:// or ws:// (env\n"
    "                       PTYGATE_GATEWAY, default " CLI_DEFAULT_GATEWAY ")\n"
    "  --instance ID        instance id (env PTYGATE_INSTANCE)\n"
    "  --session ID         the session to attach to (required)\n"
    "  --token TOKEN        bearer token with pty:observe or pty:control (env\n"
    "                       PTYGATE_TOKEN)\n"
    "  --token-file FILE    read the token from FILE\n"
    "  --observer           join as an observer (default: controller)\n"
    "  --replay-from N      replay the frames after sequence N before going live\n"
    "  --label LABEL        how other clients see this one (default: $USER@host)\n"
    "  --cols N, --rows N   the size to ask for (default: this terminal's, or 80x24)\n"
    "  -h, --help           show this help\n"
    "\n"
    "Exit status: 0 when the gateway closed the connection normally (1000),\n"
    "1 on any other end, 2 for a usage error.\n";

struct attach {
	struct cli_target target;
	const char *session;
	struct ptyc_join join;
	char label[PTYC_LABEL_MAX + 1];
	bool fixed_size; /* --cols/--rows given: do not follow the terminal */
	bool tty;	 /* stdin is a terminal: raw mode, resizes, detach key */
	bool raw;	 /* raw mode is on: notices end in "\r\n" */
	struct wsclient *ws;
	struct ptyc *pc;
	int sigfd;
	bool stdin_open;
	bool leaving;	 /* leave sent, or goodbye received: closing */
	bool detached;	 /* the user asked to leave */
	bool close_sent; /* the leave timed out and we closed ourselves */
	bool quit;	 /* stop now */
	bool told_observer;
	struct buf early; /* keys typed before RoleAssigned, sent after it */
	int64_t deadline; /* while leaving: the next step is due at */
	int64_t eof_ms;	  /* piped input ended (0: not yet) */
	int64_t output_ms; /* the last screen output arrived */
	unsigned sent_cols, sent_rows;
};

static void attach__notice(const char *line, void *user)
{
	struct attach *a = user;

	fprintf(stderr, "ptygate: %s%s", line, a->raw ? "\r\n" : "\n");
}

static void attach__screen(const uint8_t *p, size_t n, void *user)
{
	struct attach *a = user;
	ssize_t w;

	while (n > 0) {
		w = write(STDOUT_FILENO, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			a->quit = true; /* stdout is gone: nobody sees the session */
			return;
		}
		p += w;
		n -= (size_t)w;
	}
	a->output_ms = time_mono_ms();
}

static void attach__text(const char *p, size_t n, void *user)
{
	struct attach *a = user;

	ptyc_handle(a->pc, p, n);
	if (ptyc_goodbye(a->pc, NULL) && !a->leaving) {
		/* The server closes next; bound the wait in case it does not. */
		a->leaving = true;
		a->deadline = time_mono_ms() + ATTACH_LEAVE_MS;
	}
}

/* Sends a client frame (freeing msg). A failure shows up as the
   connection's end in the loop. */
static void attach__send(struct attach *a, char *msg)
{
	wsclient_send_text(a->ws, msg, strlen(msg));
	free(msg);
}

static void attach__leave(struct attach *a)
{
	if (a->leaving)
		return;
	attach__send(a, ptyc_msg_leave());
	a->leaving = true;
	a->deadline = time_mono_ms() + ATTACH_LEAVE_MS;
}

/* Whether input and resizes may go out: a controller, or not yet told
   otherwise after asking to be one. */
static bool attach__controls(const struct attach *a)
{
	const char *role = ptyc_role(a->pc);

	return *role ? !strcmp(role, "controller") : !a->join.observer;
}

static void attach__winsize(int fd, unsigned *cols, unsigned *rows)
{
	struct winsize w;

	if (ioctl(fd, TIOCGWINSZ, &w) < 0 || w.ws_col == 0 || w.ws_row == 0)
		return;
	*cols = w.ws_col > 1024 ? 1024 : w.ws_col;
	*rows = w.ws_row > 1024 ? 1024 : w.ws_row;
}

static void attach__resize(struct attach *a)
{
	unsigned cols = a->sent_cols, rows = a->sent_rows;

	if (!a->tty || a->fixed_size || a->leaving || !attach__controls(a))
		return;
	attach__winsize(STDIN_FILENO, &cols, &rows);
	if (cols == a->sent_cols && rows == a->sent_rows)
		return;
	attach__send(a, ptyc_msg_resize(cols, rows));
	a->sent_cols = cols;
	a->sent_rows = rows;
}

static void attach__signal(struct attach *a)
{
	struct signalfd_siginfo si;

	while (read(a->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGWINCH) {
			attach__resize(a);
		} else if (a->detached) {
			a->quit = true; /* a second signal: stop waiting */
		} else {
			a->detached = true;
			attach__leave(a);
		}
	}
}

/* Sends n bytes of input in chunks, unless this client only observes. */
static void attach__input(struct attach *a, const uint8_t *p, size_t n)
{
	size_t k;

	if (n == 0)
		return;
	if (!*ptyc_role(a->pc)) {
		/* Typed ahead of the join's answer: held, within a bound. */
		if (buf_size(&a->early) + n > PTYC_INPUT_CHUNK)
			n = PTYC_INPUT_CHUNK - buf_size(&a->early);
		buf_append(&a->early, p, n);
		return;
	}
	if (!attach__controls(a)) {
		if (!a->told_observer)
			attach__notice(
			    a->tty ? "observer: input is ignored (Ctrl-] detaches)"
				   : "observer: input is ignored",
			    a);
		a->told_observer = true;
		return;
	}
	for (; n > 0; p += k, n -= k) {
		k = n < PTYC_INPUT_CHUNK ? n : PTYC_INPUT_CHUNK;
		attach__send(a, ptyc_msg_input(p, k));
	}
}

static void attach__stdin(struct attach *a)
{
	static uint8_t in[PTYC_INPUT_CHUNK];
	const uint8_t *key;
	ssize_t n;

	n = read(STDIN_FILENO, in, sizeof(in));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		/* A script's last command still answers: leave once the screen
		   has been quiet a moment (attach__settle), not at once. */
		a->stdin_open = false;
		a->eof_ms = time_mono_ms();
		return;
	}
	key = a->tty ? memchr(in, ATTACH_DETACH_KEY, (size_t)n) : NULL;
	attach__input(a, in, key ? (size_t)(key - in) : (size_t)n);
	if (key) {
		a->detached = true;
		attach__leave(a);
	}
}

/* After piped input ended: leave when output has been quiet for
   ATTACH_SETTLE_MS, or ATTACH_SETTLE_MAX_MS after the end at the latest. */
static void attach__settle(struct attach *a)
{
	int64_t now = time_mono_ms();

	if (!a->eof_ms || a->leaving)
		return;
	if ((now - a->output_ms >= ATTACH_SETTLE_MS && now - a->eof_ms >= ATTACH_SETTLE_MS) ||
	    now - a->eof_ms >= ATTACH_SETTLE_MAX_MS)
		attach__leave(a);
}

/* Past the deadline while leaving: close ourselves, then give up. */
static void attach__timeout(struct attach *a)
{
	if (!a->leaving || time_mono_ms() < a->deadline)
		return;
	if (a->close_sent) {
		a->quit = true;
		return;
	}
	wsclient_close(a->ws, 1000, NULL);
	a->close_sent = true;
	a->deadline = time_mono_ms() + ATTACH_CLOSE_MS;
}

static int attach__poll_timeout(const struct attach *a)
{
	int64_t left;

	if (a->eof_ms && !a->leaving)
		return 100; /* settling: look again soon */
	if (!a->leaving)
		return -1;
	left = a->deadline - time_mono_ms();
	return left < 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

static void attach__loop(struct attach *a)
{
	struct pollfd p[3];
	int n;

	while (!a->quit && !wsclient_done(a->ws)) {
		p[0] = (struct pollfd){wsclient_fd(a->ws), wsclient_events(a->ws), 0};
		p[1] = (struct pollfd){a->sigfd, POLLIN, 0};
		p[2] = (struct pollfd){STDIN_FILENO, POLLIN, 0};
		/* A script's input waits for RoleAssigned: its end of file must
		   not leave before the join is through. A terminal is read at
		   once, so Ctrl-] works even while the gateway is slow. */
		if (!a->stdin_open || a->leaving || (!a->tty && !*ptyc_role(a->pc)) ||
		    wsclient_queued(a->ws) > ATTACH_QUEUE_MAX)
			p[2].fd = -1;
		n = poll(p, 3, attach__poll_timeout(a));
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && p[0].revents && wsclient_handle(a->ws, p[0].revents) < 0)
			break; /* the connection is gone; wsclient_close_code says 1006 */
		if (*ptyc_role(a->pc) && buf_size(&a->early)) {
			attach__input(a, buf_head(&a->early), buf_size(&a->early));
			buf_free(&a->early);
		}
		if (n > 0 && p[1].revents)
			attach__signal(a);
		if (n > 0 && p[2].fd >= 0 && p[2].revents)
			attach__stdin(a);
		attach__settle(a);
		attach__timeout(a);
	}
}

enum {
	ATTACH_OPT_SESSION = CLI_OPT_FIRST_FREE,
	ATTACH_OPT_OBSERVER,
	ATTACH_OPT_REPLAY,
	ATTACH_OPT_LABEL,
	ATTACH_OPT_COLS,
	ATTACH_OPT_ROWS,
};

static const struct option attach_opts[] = {
    CLI_TARGET_LONGOPTS,
    {"session", required_argument, NULL, ATTACH_OPT_SESSION},
    {"observer", no_argument, NULL, ATTACH_OPT_OBSERVER},
    {"replay-from", required_argument, NULL, ATTACH_OPT_REPLAY},
    {"label", required_argument, NULL, ATTACH_OPT_LABEL},
    {"cols", required_argument, NULL, ATTACH_OPT_COLS},
    {"rows", required_argument, NULL, ATTACH_OPT_ROWS},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static bool attach__utf8_ok(const char *s)
{
	json_t *j = json_string(s); /* NULL for bytes that are not UTF-8 */

	json_decref(j);
	return j != NULL;
}

static int attach__option(struct attach *a, int c, const char *arg)
{
	long long v;

	switch (c) {
	case ATTACH_OPT_SESSION:
		a->session = arg;
		break;
	case ATTACH_OPT_OBSERVER:
		a->join.observer = true;
		break;
	case ATTACH_OPT_REPLAY:
		if (cli_parse_int(arg, 0, LLONG_MAX, &v) < 0)
			return cli_usage_error("attach", "bad --replay-from '%s'", arg);
		a->join.replay = true;
		a->join.replay_from = (uint64_t)v;
		break;
	case ATTACH_OPT_LABEL:
		if (strlen(arg) > PTYC_LABEL_MAX || !attach__utf8_ok(arg))
			return cli_usage_error("attach",
					       "--label must be UTF-8 of at "
					       "most %d bytes",
					       PTYC_LABEL_MAX);
		snprintf(a->label, sizeof(a->label), "%s", arg);
		break;
	case ATTACH_OPT_COLS:
	case ATTACH_OPT_ROWS:
		if (cli_parse_int(arg, 1, 1024, &v) < 0)
			return cli_usage_error("attach", "bad --%s '%s' (1..1024)",
					       c == ATTACH_OPT_COLS ? "cols" : "rows",
					       arg);
		*(c == ATTACH_OPT_COLS ? &a->join.cols : &a->join.rows) = (unsigned)v;
		a->fixed_size = true;
		break;
	}
	return CLI_OK;
}

/* "$USER@host", cut to the protocol's limit. */
static void attach__default_label(char *out, size_t n)
{
	const struct passwd *pw;
	const char *user = getenv("USER");
	char host[256] = "localhost";

	if (!user || !*user)
		user = (pw = getpwuid(getuid())) ? pw->pw_name : "user";
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	size_t k;

	if (snprintf(out, n, "%s@%s", user, host) >= (int)n) {
		/* Cut at a character boundary: the label must stay UTF-8. */
		k = strlen(out);
		while (k > 0 && ((unsigned char)out[k - 1] & 0xc0) == 0x80)
			k--;
		if (k > 0 && (unsigned char)out[k - 1] >= 0xc0)
			k--;
		out[k] = '\0';
	}
}

/* Options into a; CLI_OK, CLI_USAGE, or -1 after --help. */
static int attach__parse(struct attach *a, int argc, char **argv)
{
	struct wsclient_addr addr;
	char err[256];
	int c, rc;

	cli_getopt_reset();
	while ((c = getopt_long(argc, argv, "+:h", attach_opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(attach_usage, stdout);
			return -1;
		}
		if (c == '?' || c == ':')
			return cli_getopt_error("attach", argv, c);
		if (!cli_target_option(&a->target, c, optarg)) {
			rc = attach__option(a, c, optarg);
			if (rc != CLI_OK)
				return rc;
		}
	}
	if (optind < argc)
		return cli_usage_error("attach", "unexpected argument '%s'",
				       argv[optind]);
	if (!a->session || !*a->session)
		return cli_usage_error("attach", "--session is required");
	rc = cli_target_finish(&a->target, "attach");
	if (rc == CLI_OK &&
	    wsclient_split_url(a->target.gateway, &addr, err, sizeof(err)) < 0)
		return cli_usage_error("attach", "%s", err);
	return rc;
}

/* The size to join with: --cols/--rows, else the terminal's, else 80x24. */
static void attach__join_size(struct attach *a)
{
	unsigned cols = ATTACH_DEFAULT_COLS, rows = ATTACH_DEFAULT_ROWS;

	if (isatty(STDIN_FILENO))
		attach__winsize(STDIN_FILENO, &cols, &rows);
	else if (isatty(STDOUT_FILENO))
		attach__winsize(STDOUT_FILENO, &cols, &rows);
	if (!a->join.cols)
		a->join.cols = cols;
	if (!a->join.rows)
		a->join.rows = rows;
	a->sent_cols = a->join.cols;
	a->sent_rows = a->join.rows;
}

/* Signals become readable events; SIGPIPE becomes EPIPE. */
static int attach__signals(struct attach *a)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGWINCH);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	a->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return a->sigfd < 0 ? -errno : 0;
}

/* The last line: how the connection ended. Returns the exit code. */
static int attach__farewell(struct attach *a)
{
	uint16_t code = wsclient_close_code(a->ws);
	const char *reason = "";
	char line[160];

	ptyc_goodbye(a->pc, &reason);
	if (code == WSCLIENT_CLOSE_LOST)
		snprintf(line, sizeof(line), "connection lost (close %u)", code);
	else if (a->detached)
		snprintf(line, sizeof(line), "detached (close %u)", code);
	else if (*reason)
		snprintf(line, sizeof(line), "disconnected: %s (close %u)", reason, code);
	else
		snprintf(line, sizeof(line), "connection closed (close %u)", code);
	attach__notice(line, a);
	return code == 1000 ? CLI_OK : CLI_FAIL;
}

/* The attach URL path of SPEC 1, escaped. */
static char *attach__path(const struct attach *a)
{
	struct buf b = BUF_INIT;
	size_t n;

	buf_append_str(&b, "/agents/");
	cli_path_escape(a->target.instance, &b);
	buf_append_str(&b, "/sessions/");
	cli_path_escape(a->session, &b);
	buf_append_str(&b, "/attach");
	return (char *)buf_steal(&b, &n);
}

/* Connects and joins; CLI_OK or CLI_FAIL with the reason printed. */
static int attach__open(struct attach *a)
{
	static const struct wsclient_callbacks wcb = {.on_text = attach__text};
	static const struct ptyc_callbacks pcb = {attach__screen, attach__notice};
	char err[512], *path = attach__path(a);

	a->pc = ptyc_new(&pcb, a);
	a->ws = wsclient_connect(a->target.gateway, path, a->target.token,
				 ATTACH_CONNECT_MS, &wcb, a, err, sizeof(err));
	free(path);
	if (!a->ws) {
		cli_error("%s", err);
		return CLI_FAIL;
	}
	attach__send(a, ptyc_msg_join(&a->join));
	return CLI_OK;
}

static int attach__run(struct attach *a)
{
	int rc;

	attach__join_size(a);
	if (!a->label[0])
		attach__default_label(a->label, sizeof(a->label));
	a->join.label = a->label;
	a->tty = isatty(STDIN_FILENO);
	a->stdin_open = true;
	a->sigfd = -1;
	rc = attach__open(a);
	if (rc != CLI_OK)
		return rc;
	if (attach__signals(a) < 0) {
		cli_error("cannot set up signal handling: %s", strerror(errno));
		return CLI_FAIL;
	}
	if (a->tty && rawtty_enter(STDIN_FILENO) == 0)
		a->raw = true;
	attach__loop(a);
	if (a->raw && isatty(STDOUT_FILENO)) {
		rawtty_reset_modes(STDOUT_FILENO);
		attach__screen((const uint8_t *)"\r\n", 2,
			       a); /* farewell on its own line */
	}
	rawtty_restore();
	a->raw = false;
	return attach__farewell(a);
}

int attach_main(int argc, char **argv)
{
	struct attach a = {0};
	int rc;

	rc = attach__parse(&a, argc, argv);
	if (rc == CLI_OK)
		rc = attach__run(&a);
	else if (rc < 0)
		rc = CLI_OK;
	if (a.sigfd > 0)
		close(a.sigfd);
	wsclient_free(a.ws);
	ptyc_free(a.pc);
	buf_free(&a.early);
	cli_target_clear(&a.target);
	return rc;
}
