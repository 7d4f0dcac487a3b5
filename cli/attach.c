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
#include <termios.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "attach.h"
#include "cli.h"
#include "num.h"
#include "ptg_limits.h"
#include "ptyc.h"
#include "rawtty.h"
#include "timeutil.h"
#include "tlsio.h"
#include "utf8.h"
#include "wsclient.h"

#define ATTACH_CONNECT_MS	    10000
#define ATTACH_LEAVE_MS		    3000 /* wait for binding_goodbye after leaving */
#define ATTACH_CLOSE_MS		    1000 /* then for the close echo */
#define ATTACH_SETTLE_MS	    500 /* piped input ended: quiet screen before leaving */
#define ATTACH_SETTLE_MAX_MS	    5000 /* ... but leave this long after the end at most */
#define ATTACH_QUEUE_MAX	    (1024 * 1024) /* stop reading stdin above this */
#define ATTACH_DETACH_KEY	    0x1d	  /* Ctrl-] */
#define ATTACH_DEFAULT_COLS	    80
#define ATTACH_DEFAULT_ROWS	    24
#define ATTACH_RESIZE_MS	    100 /* a window being dragged: one resize when it rests */
#define ATTACH_BACKOFF_FIRST_MS	    500	  /* the first reconnect after a drop */
#define ATTACH_BACKOFF_MAX_MS	    30000 /* doubling up to this */
#define ATTACH_RECONNECT_CONNECT_MS 5000  /* one reconnect attempt's handshake */

static const char attach_usage[] =
    "Usage: ptygate attach --session ID [options]   (or: ptygate attach [options] ID)\n"
    "       ptygate attach --url ws[s]://HOST:PORT/agents/I/sessions/S/attach [options]\n"
    "\n"
    "Attach this terminal to a session over the gateway's WebSocket. Ctrl-]\n"
    "detaches: the session keeps running (unless its policy ends it with its\n"
    "last controller). When the connection drops, the client reconnects by\n"
    "itself with backoff (0.5 s doubling to 30 s) and replays what it missed\n"
    "(replay_from = the last sequence shown); keys typed while away are\n"
    "dropped, never sent late. When stdin is not a terminal, its bytes are\n"
    "sent until end of file, then the client leaves once the screen has been\n"
    "quiet for half a second (5 s at most); the screen still goes to stdout.\n"
    "Without a terminal the join asks for no size: a script never resizes the\n"
    "session.\n"
    "In a session whose control policy is approve, requests for control are\n"
    "shown as they come; a controller answers the oldest with Ctrl-] then y\n"
    "(approve) or n (deny); Ctrl-] twice detaches, any other key goes on.\n"
    "\n"
    "  --url URL            the attach URL, "
    "ws[s]://HOST:PORT/agents/I/sessions/S/attach\n"
    "                       (in place of --gateway, --instance and --session)\n"
    "  --gateway URL        gateway base URL, http(s):// or ws(s):// (env\n"
    "                       PTYGATE_GATEWAY, default " CLI_DEFAULT_GATEWAY ")\n"
    "  --instance ID        instance id (env PTYGATE_INSTANCE)\n"
    "  --session ID         the session to attach to (required)\n"
    "  --token-file FILE    read the bearer token (pty:observe or pty:control)\n"
    "                       from FILE; else the env PTYGATE_TOKEN\n"
    "  --token TOKEN        the token itself: visible to every user in ps, so\n"
    "                       prefer the two above\n"
    "  --observer           join as an observer (default: controller)\n"
    "  --replay-from N      replay the frames after sequence N before going live\n"
    "  --label LABEL        how other clients see this one (default: $USER@host)\n"
    "  --cols N, --rows N   the size to ask for (default: this terminal's; none\n"
    "                       when stdin is not a terminal: a script never\n"
    "                       resizes the session)\n"
    "  --ca-file FILE       wss://: trust the CAs in FILE (PEM), not the system's\n"
    "  --insecure           wss://: do not check the certificate (tests only)\n"
    "  -h, --help           show this help\n"
    "\n"
    "Exit status: the program's exit code when the session ends while\n"
    "attached; 0 after a detach or a normal close (1000); 1 on any other end\n"
    "(refused, token expired, reconnect given up); 2 for a usage error.\n";

struct attach {
	struct cli_target target;
	const char *session;
	struct ptyc_join join;
	char label[PTG_LABEL_MAX_BYTES + 1];
	bool fixed_size;	/* --cols/--rows given: do not follow the terminal */
	struct tlsio_opts tls;	/* --ca-file, --insecure */
	char url_gateway[1024]; /* --url split: its base, instance and session */
	char url_instance[PTG_ID_MAX + 1];
	char url_session[PTG_ID_MAX + 1];
	bool tty; /* stdin is a terminal: raw mode, resizes, detach key */
	bool raw; /* raw mode is on: notices end in "\r\n" */
	struct wsclient *ws;
	struct ptyc *pc;
	int sigfd;
	bool stdin_open;
	bool leaving;	  /* leave sent, or goodbye received: closing */
	bool detached;	  /* the user asked to leave */
	bool input_ended; /* piped stdin ended and we left for it */
	bool close_sent;  /* the leave timed out and we closed ourselves */
	bool quit;	  /* stop now */
	bool told_observer;
	bool deciding;	   /* Ctrl-] with a control request waiting: y, n or detach */
	bool left;	   /* this client sent pty.leave_session */
	unsigned attempt;  /* reconnect attempts since the last join */
	struct buf early;  /* keys typed before RoleAssigned, sent after it */
	int64_t deadline;  /* while leaving: the next step is due at */
	int64_t eof_ms;	   /* piped input ended (0: not yet) */
	int64_t output_ms; /* the last screen output arrived */
	unsigned sent_cols, sent_rows;
	int64_t resize_ms; /* a SIGWINCH is waiting to be sent then (0: none) */
};

static void notice(const char *line, void *user)
{
	struct attach *a = user;

	cli_print(stderr, a->raw ? "\r\n" : "\n", "ptygate: %s", line);
}

/* A notice while away from the session, on a terminal: written over the
   cursor's line (cursor saved and restored, no wrap) rather than below
   it, so it scrolls nothing into the terminal's scrollback; the resumed
   join's Keyframe repaints the line. Elsewhere, a notice. */
static void status(const char *line, struct attach *a)
{
	struct buf out = BUF_INIT;

	if (!a->raw || !isatty(STDOUT_FILENO)) {
		notice(line, a);
		return;
	}
	buf_append_str(&out, "\0337\r\033[?7l\033[K\033[7mptygate: ");
	cli_clean(line, strlen(line), &out);
	buf_append_str(&out, "\033[m\033[?7h\0338");
	if (write(STDOUT_FILENO, buf_head(&out), buf_size(&out)) < 0)
		a->quit = true;
	buf_free(&out);
}

static void screen(const uint8_t *p, size_t n, void *user)
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

static void text(const char *p, size_t n, void *user)
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
static void send_msg(struct attach *a, char *msg)
{
	wsclient_send_text(a->ws, msg, strlen(msg));
	free(msg);
}

static void leave(struct attach *a)
{
	if (a->leaving)
		return;
	send_msg(a, ptyc_msg_leave());
	a->left = true;
	a->leaving = true;
	a->deadline = time_mono_ms() + ATTACH_LEAVE_MS;
}

/* Whether input and resizes may go out: a controller, or not yet told
   otherwise after asking to be one. */
static bool controls(const struct attach *a)
{
	const char *role = ptyc_role(a->pc);

	return *role ? !strcmp(role, "controller") : !a->join.observer;
}

static void winsize(int fd, unsigned *cols, unsigned *rows)
{
	struct winsize w;

	if (ioctl(fd, TIOCGWINSZ, &w) < 0 || w.ws_col == 0 || w.ws_row == 0)
		return;
	*cols = w.ws_col > PTG_DIM_MAX ? PTG_DIM_MAX : w.ws_col;
	*rows = w.ws_row > PTG_DIM_MAX ? PTG_DIM_MAX : w.ws_row;
}

static void resize(struct attach *a)
{
	unsigned cols = a->sent_cols, rows = a->sent_rows;

	if (!a->tty || a->fixed_size || a->leaving || !controls(a))
		return;
	winsize(STDIN_FILENO, &cols, &rows);
	if (cols == a->sent_cols && rows == a->sent_rows)
		return;
	send_msg(a, ptyc_msg_resize(cols, rows));
	a->sent_cols = cols;
	a->sent_rows = rows;
}

static void on_signal(struct attach *a)
{
	struct signalfd_siginfo si;

	while (read(a->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGWINCH) {
			if (!a->resize_ms)
				a->resize_ms = time_mono_ms() + ATTACH_RESIZE_MS;
		} else if (a->detached) {
			a->quit = true; /* a second signal: stop waiting */
		} else {
			a->detached = true;
			leave(a);
		}
	}
}

/* Sends n bytes of input in chunks, unless this client only observes. */
static void input(struct attach *a, const uint8_t *p, size_t n)
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
	if (!controls(a)) {
		if (!a->told_observer)
			notice(a->tty ? "observer: input is ignored (Ctrl-] detaches)"
				      : "observer: input is ignored",
			       a);
		a->told_observer = true;
		return;
	}
	for (; n > 0; p += k, n -= k) {
		k = n < PTYC_INPUT_CHUNK ? n : PTYC_INPUT_CHUNK;
		send_msg(a, ptyc_msg_input(p, k));
	}
}

/* The key after Ctrl-] while a control request waits. */
static void decide(struct attach *a, uint8_t key)
{
	const char *asker = ptyc_control_pending(a->pc);

	a->deciding = false;
	if (key == ATTACH_DETACH_KEY) {
		a->detached = true;
		leave(a);
	} else if ((key == 'y' || key == 'n') && asker) {
		send_msg(a, ptyc_msg_decide(asker, key == 'y'));
	} else if (key == 'y' || key == 'n') {
		notice("no control request is waiting any more", a);
	} else {
		notice("control request left waiting", a);
	}
}

static void on_stdin(struct attach *a)
{
	static uint8_t in[PTYC_INPUT_CHUNK];
	const uint8_t *key;
	ssize_t n;

	n = read(STDIN_FILENO, in, sizeof(in));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		/* A script's last command still answers: leave once the screen
		   has been quiet a moment (settle), not at once. */
		a->stdin_open = false;
		a->eof_ms = time_mono_ms();
		return;
	}
	if (a->deciding) {
		decide(a, in[0]);
		if (a->detached || n == 1)
			return;
		memmove(in, in + 1, (size_t)--n);
	}
	key = a->tty ? memchr(in, ATTACH_DETACH_KEY, (size_t)n) : NULL;
	input(a, in, key ? (size_t)(key - in) : (size_t)n);
	if (!key)
		return;
	if (controls(a) && ptyc_control_pending(a->pc)) {
		a->deciding = true;
		notice("control request waiting: y approves, n denies, Ctrl-] detaches",
		       a);
		return; /* keys after the prefix in this read are dropped */
	}
	a->detached = true;
	leave(a);
}

/* After piped input ended: leave when output has been quiet for
   ATTACH_SETTLE_MS, or ATTACH_SETTLE_MAX_MS after the end at the latest. */
static void settle(struct attach *a)
{
	int64_t now = time_mono_ms();

	if (!a->eof_ms || a->leaving)
		return;
	if ((now - a->output_ms >= ATTACH_SETTLE_MS &&
	     now - a->eof_ms >= ATTACH_SETTLE_MS) ||
	    now - a->eof_ms >= ATTACH_SETTLE_MAX_MS) {
		a->input_ended = true;
		leave(a);
	}
}

/* Past the deadline while leaving: close ourselves, then give up. */
static void timeout(struct attach *a)
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

/* A debounced SIGWINCH whose time has come. */
static void resize_due(struct attach *a)
{
	if (a->resize_ms && time_mono_ms() >= a->resize_ms) {
		a->resize_ms = 0;
		resize(a);
	}
}

static int poll_timeout(const struct attach *a)
{
	int64_t left;

	if (a->resize_ms) {
		left = a->resize_ms - time_mono_ms();
		return left < 0 ? 0 : (int)left;
	}
	if (a->eof_ms && !a->leaving)
		return 100; /* settling: look again soon */
	if (!a->leaving)
		return -1;
	left = a->deadline - time_mono_ms();
	return left < 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

static void loop(struct attach *a)
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
		n = poll(p, 3, poll_timeout(a));
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && p[0].revents && wsclient_handle(a->ws, p[0].revents) < 0)
			break; /* the connection is gone; wsclient_close_code says 1006 */
		if (*ptyc_role(a->pc) && buf_size(&a->early)) {
			input(a, buf_head(&a->early), buf_size(&a->early));
			buf_free(&a->early);
		}
		if (n > 0 && p[1].revents)
			on_signal(a);
		if (n > 0 && p[2].fd >= 0 && p[2].revents)
			on_stdin(a);
		resize_due(a);
		settle(a);
		timeout(a);
	}
}

enum {
	ATTACH_OPT_SESSION = CLI_OPT_FIRST_FREE,
	ATTACH_OPT_OBSERVER,
	ATTACH_OPT_REPLAY,
	ATTACH_OPT_LABEL,
	ATTACH_OPT_COLS,
	ATTACH_OPT_ROWS,
	ATTACH_OPT_URL,
	ATTACH_OPT_CA_FILE,
	ATTACH_OPT_INSECURE,
};

const struct option attach_opts[] = {
    CLI_TARGET_LONGOPTS,
    {"session", required_argument, NULL, ATTACH_OPT_SESSION},
    {"observer", no_argument, NULL, ATTACH_OPT_OBSERVER},
    {"replay-from", required_argument, NULL, ATTACH_OPT_REPLAY},
    {"label", required_argument, NULL, ATTACH_OPT_LABEL},
    {"cols", required_argument, NULL, ATTACH_OPT_COLS},
    {"rows", required_argument, NULL, ATTACH_OPT_ROWS},
    {"url", required_argument, NULL, ATTACH_OPT_URL},
    {"ca-file", required_argument, NULL, ATTACH_OPT_CA_FILE},
    {"insecure", no_argument, NULL, ATTACH_OPT_INSECURE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Whether s is UTF-8 of at most PTG_LABEL_MAX_CHARS characters, the
   bound SPEC 5.1 sets on client_label (characters, not bytes). */
static bool label_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), chars = 0, len;

	for (size_t i = 0; i < n; i += len, chars++)
		if ((len = utf8_seq_len(p + i, n - i)) == 0)
			return false;
	return chars <= PTG_LABEL_MAX_CHARS;
}

/* Copies the path segment at *p (up to '/' or the end) into out: an id
   of 1..PTG_ID_MAX characters of [A-Za-z0-9._~:@-], which need no
   percent-decoding. */
static int url_id(const char **p, char *out)
{
	size_t n = strcspn(*p, "/");

	if (n == 0 || n > PTG_ID_MAX ||
	    strspn(*p, "abcdefghijklmnopqrstuvwxyz"
		       "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		       "0123456789._~:@-") < n)
		return -1;
	memcpy(out, *p, n);
	out[n] = '\0';
	*p += n;
	return 0;
}

/* --url ws://HOST:PORT[/prefix]/agents/I/sessions/S[/attach] */
static int parse_url(struct attach *a, const char *url)
{
	const char *ag = strstr(url, "/agents/"), *p;
	size_t base;

	if (!ag || (base = (size_t)(ag - url)) >= sizeof(a->url_gateway))
		goto bad;
	p = ag + strlen("/agents/");
	if (url_id(&p, a->url_instance) < 0 || strncmp(p, "/sessions/", 10) != 0)
		goto bad;
	p += 10;
	if (url_id(&p, a->url_session) < 0)
		goto bad;
	if (*p && strcmp(p, "/attach") != 0 && strcmp(p, "/attach/") != 0 &&
	    strcmp(p, "/"))
		goto bad;
	memcpy(a->url_gateway, url, base);
	a->url_gateway[base] = '\0';
	a->target.gateway_arg = a->url_gateway;
	a->target.instance = a->url_instance;
	a->session = a->url_session;
	return CLI_OK;
bad:
	return cli_usage_error("attach",
			       "bad --url '%s': expected "
			       "ws://HOST:PORT/agents/INSTANCE/sessions/SESSION/attach",
			       url);
}

static int option(struct attach *a, int c, const char *arg)
{
	uint64_t v;

	switch (c) {
	case ATTACH_OPT_URL:
		return parse_url(a, arg);
	case ATTACH_OPT_CA_FILE:
		a->tls.ca_file = arg;
		break;
	case ATTACH_OPT_INSECURE:
		a->tls.insecure = true;
		break;
	case ATTACH_OPT_SESSION:
		a->session = arg;
		break;
	case ATTACH_OPT_OBSERVER:
		a->join.observer = true;
		break;
	case ATTACH_OPT_REPLAY:
		if (num_parse_u64(arg, 0, INT64_MAX, &v) < 0)
			return cli_usage_error("attach", "bad --replay-from '%s'", arg);
		a->join.replay = true;
		a->join.replay_from = v;
		break;
	case ATTACH_OPT_LABEL:
		if (!label_ok(arg))
			return cli_usage_error("attach",
					       "--label must be UTF-8 of at "
					       "most %d characters",
					       PTG_LABEL_MAX_CHARS);
		snprintf(a->label, sizeof(a->label), "%s", arg);
		break;
	case ATTACH_OPT_COLS:
	case ATTACH_OPT_ROWS:
		if (num_parse_u64(arg, PTG_DIM_MIN, PTG_DIM_MAX, &v) < 0)
			return cli_usage_error("attach", "bad --%s '%s' (1..%d)",
					       c == ATTACH_OPT_COLS ? "cols" : "rows",
					       arg, PTG_DIM_MAX);
		*(c == ATTACH_OPT_COLS ? &a->join.cols : &a->join.rows) = (unsigned)v;
		a->fixed_size = true;
		break;
	}
	return CLI_OK;
}

/* "$USER@host", cut to the protocol's limit. */
static void default_label(char *out, size_t n)
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

/* The options, anywhere on the line; the one operand allowed is the
   session. CLI_OK, CLI_USAGE, or -1 after --help. */
static int options(struct attach *a, int argc, char **argv)
{
	struct cli_operands ops = {0};
	int c, rc = CLI_OK;

	cli_getopt_reset();
	while (rc == CLI_OK &&
	       (c = cli_getopt(argc, argv, "h", attach_opts, &ops)) != -1) {
		if (c == 'h') {
			fputs(attach_usage, stdout);
			rc = -1;
		} else if (c == '?' || c == ':') {
			rc = cli_getopt_error("attach", argv, c);
		} else if (!cli_target_option(&a->target, c, optarg)) {
			rc = option(a, c, optarg);
		}
	}
	if (rc == CLI_OK && ops.n > 0 && !a->session)
		a->session = ops.v[0];
	else if (rc == CLI_OK && ops.n > 0)
		rc = cli_usage_error("attach", "unexpected argument '%s'", ops.v[0]);
	if (rc == CLI_OK && ops.n > 1)
		rc = cli_usage_error("attach", "unexpected argument '%s'", ops.v[1]);
	cli_operands_free(&ops);
	return rc;
}

/* Options into a; CLI_OK, CLI_USAGE, or -1 after --help. */
static int parse(struct attach *a, int argc, char **argv)
{
	struct wsclient_addr addr;
	char err[256];
	int rc = options(a, argc, argv);

	if (rc != CLI_OK)
		return rc;
	if (a->url_session[0] &&
	    (a->session != a->url_session || a->target.instance != a->url_instance ||
	     a->target.gateway_arg != a->url_gateway))
		return cli_usage_error(
		    "attach", "--url names the gateway, instance and "
			      "session: give no --gateway, --instance or --session");
	if (!a->session || !*a->session)
		return cli_usage_error("attach", "--session is required");
	rc = cli_target_finish(&a->target, "attach");
	if (rc == CLI_OK &&
	    wsclient_split_url(a->target.gateway, &addr, err, sizeof(err)) < 0)
		return cli_usage_error("attach", "%s", err);
	return rc;
}

/* The size to join with: --cols/--rows, else the terminal's. Without a
   terminal on stdin there is no size of ours to give: the join carries
   none (0), so a script never resizes a shared session. */
static void join_size(struct attach *a)
{
	unsigned cols = ATTACH_DEFAULT_COLS, rows = ATTACH_DEFAULT_ROWS;

	if (isatty(STDIN_FILENO))
		winsize(STDIN_FILENO, &cols, &rows);
	else if (!a->fixed_size)
		cols = rows = 0;
	if (!a->join.cols)
		a->join.cols = cols;
	if (!a->join.rows)
		a->join.rows = rows;
	a->sent_cols = a->join.cols;
	a->sent_rows = a->join.rows;
}

/* Signals become readable events; SIGPIPE becomes EPIPE. */
static int signals(struct attach *a)
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
static int farewell(struct attach *a)
{
	uint16_t code = wsclient_close_code(a->ws);
	const char *reason = "";
	char line[160];

	int exit_code;

	ptyc_goodbye(a->pc, &reason);
	if (ptyc_closed(a->pc, &exit_code)) /* ptyc said "session ended: exit code N" */
		return exit_code < 0 ? CLI_FAIL
				     : exit_code & 0xff; /* ours, as with ssh */
	if (a->detached) {
		notice("detached; the session keeps running", a);
		return CLI_OK;
	}
	/* Our own leave is answered by goodbye "session_closed": it closes
	   this client's binding, not the session. */
	if (a->input_ended && a->left) {
		notice("input ended; detached, the session keeps running", a);
		return CLI_OK;
	}
	if (code == WSCLIENT_CLOSE_LOST)
		snprintf(line, sizeof(line), "connection lost (close %u)", code);
	else if (*reason)
		snprintf(line, sizeof(line), "disconnected: %s (close %u)", reason, code);
	else
		snprintf(line, sizeof(line), "connection closed (close %u)", code);
	notice(line, a);
	return code == 1000 ? CLI_OK : CLI_FAIL;
}

/* The attach URL path of SPEC 1, escaped. */
static char *url_path(const struct attach *a)
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
static int dial(struct attach *a)
{
	static const struct wsclient_callbacks wcb = {.on_text = text};
	static const struct ptyc_callbacks pcb = {screen, notice};
	char err[512], *path = url_path(a);

	a->pc = ptyc_new(&pcb, a);
	if (a->tls.insecure)
		notice("warning: --insecure: the gateway's certificate is not "
		       "checked; anyone on the path can read the session",
		       a);
	a->ws =
	    wsclient_connect_tls(a->target.gateway, path, a->target.token,
				 ATTACH_CONNECT_MS, &a->tls, &wcb, a, err, sizeof(err));
	free(path);
	if (!a->ws) {
		cli_error("%s", err);
		return CLI_FAIL;
	}
	send_msg(a, ptyc_msg_join(&a->join));
	return CLI_OK;
}

/* Whether the connection's end was a drop that a reconnect repairs: not
   a leave of ours, not the session's end, not a refusal to come back
   (expired or revoked token, session gone, protocol violations). */
static bool should_reconnect(struct attach *a)
{
	uint16_t code = wsclient_close_code(a->ws);
	const char *reason = "";

	if (a->quit || a->detached || a->left || ptyc_closed(a->pc, NULL))
		return false;
	if (ptyc_goodbye(a->pc, &reason) &&
	    (!strcmp(reason, "session_closed") || !strcmp(reason, "principal_revoked")))
		return false;
	return code != PTG_CLOSE_VIOLATIONS && code != PTG_CLOSE_REVOKED &&
	       code != PTG_CLOSE_FORBIDDEN && code != PTG_CLOSE_GONE;
}

/* Exponential, +-20% jitter so that clients of a restarted gateway do not
   all come back at the same instant. */
static int64_t backoff_ms(unsigned attempt)
{
	int64_t ms = ATTACH_BACKOFF_FIRST_MS << (attempt < 8 ? attempt : 8);
	uint32_t r;

	if (ms > ATTACH_BACKOFF_MAX_MS)
		ms = ATTACH_BACKOFF_MAX_MS;
	randombytes_buf(&r, sizeof(r));
	return ms * 8 / 10 + (int64_t)(r % (uint32_t)(ms * 4 / 10 + 1));
}

/* Waits until due while watching the signals and the keyboard: Ctrl-] or
   a signal gives up (detached). Keys typed meanwhile are read and
   dropped: input belongs to the connection it was typed on. */
static void wait_away(struct attach *a, int64_t due)
{
	static uint8_t in[4096];
	struct pollfd p[2];
	struct signalfd_siginfo si;
	int64_t left;
	ssize_t n;

	while (!a->detached && (left = due - time_mono_ms()) > 0) {
		p[0] = (struct pollfd){a->sigfd, POLLIN, 0};
		p[1] = (struct pollfd){a->stdin_open && a->tty ? STDIN_FILENO : -1,
				       POLLIN, 0};
		if (poll(p, 2, (int)left) <= 0)
			continue;
		while (p[0].revents &&
		       read(a->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			if (si.ssi_signo != SIGWINCH)
				a->detached = true;
		if (p[1].revents) {
			n = read(STDIN_FILENO, in, sizeof(in));
			if (n <= 0)
				a->stdin_open = false;
			else if (memchr(in, ATTACH_DETACH_KEY, (size_t)n))
				a->detached = true;
		}
	}
}

/* A refusal that will not change by trying again. */
static bool refusal_final(const char *err)
{
	return strstr(err, "HTTP 400") || strstr(err, "HTTP 401") ||
	       strstr(err, "HTTP 403") || strstr(err, "HTTP 404");
}

/* Reconnects after a drop, with backoff, until joined again (CLI_OK) or
   given up (detached, or refused for good: CLI_FAIL, reason printed). The
   join replays from the last sequence applied, with the role held. */
static int reconnect(struct attach *a)
{
	static const struct wsclient_callbacks wcb = {.on_text = text};
	static const struct ptyc_callbacks pcb = {screen, notice};
	uint64_t last = ptyc_last_sequence(a->pc);
	bool observer = !controls(a);
	char err[512], line[640], *path = url_path(a);
	struct wsclient *ws;
	int64_t wait;

	buf_free(&a->early); /* typed before the drop: never sent */
	for (err[0] = '\0'; !a->detached; a->attempt++) {
		wait = backoff_ms(a->attempt);
		snprintf(line, sizeof(line),
			 "connection lost; reconnecting in %.1f s (Ctrl-] gives up)%s%s",
			 (double)wait / 1000, err[0] ? ": " : "", err);
		status(line, a);
		wait_away(a, time_mono_ms() + wait);
		if (a->detached)
			break;
		ws = wsclient_connect_tls(a->target.gateway, path, a->target.token,
					  ATTACH_RECONNECT_CONNECT_MS, &a->tls, &wcb, a,
					  err, sizeof(err));
		if (!ws && refusal_final(err)) {
			cli_error("%s", err);
			free(path);
			return CLI_FAIL;
		}
		if (!ws)
			continue;
		wsclient_free(a->ws);
		ptyc_free(a->pc);
		a->ws = ws;
		a->pc = ptyc_new(&pcb, a);
		if (last > 0) /* the screen holds it all: repaint, never re-scroll */
			ptyc_resume(a->pc, last);
		a->join.observer = observer;
		if (a->tty && !a->fixed_size) /* the window may have changed meanwhile */
			winsize(STDIN_FILENO, &a->join.cols, &a->join.rows);
		a->sent_cols = a->join.cols;
		a->sent_rows = a->join.rows;
		a->join.replay = last > 0;
		a->join.replay_from = last;
		a->leaving = a->close_sent = false;
		/* Keys typed while away, still unread, are dropped, never sent
		   late; what is typed from now on belongs to this connection. */
		if (a->tty)
			tcflush(STDIN_FILENO, TCIFLUSH);
		a->attempt = 0;
		send_msg(a, ptyc_msg_join(&a->join));
		snprintf(line, sizeof(line), "reconnected; replaying after sequence %llu",
			 (unsigned long long)last);
		status(line, a);
		free(path);
		return CLI_OK;
	}
	free(path);
	return CLI_FAIL;
}

static int run(struct attach *a)
{
	int rc;

	join_size(a);
	if (!a->label[0])
		default_label(a->label, sizeof(a->label));
	a->join.label = a->label;
	a->tty = isatty(STDIN_FILENO);
	a->stdin_open = true;
	a->sigfd = -1;
	rc = dial(a);
	if (rc != CLI_OK)
		return rc;
	if (signals(a) < 0) {
		cli_error("cannot set up signal handling: %s", strerror(errno));
		return CLI_FAIL;
	}
	if (a->tty && rawtty_enter(STDIN_FILENO) == 0)
		a->raw = true;
	loop(a);
	while (should_reconnect(a) && reconnect(a) == CLI_OK)
		loop(a);
	if (a->raw && isatty(STDOUT_FILENO)) {
		rawtty_reset_modes(STDOUT_FILENO);
		screen((const uint8_t *)"\r\n", 2, a); /* farewell on its own line */
	}
	rawtty_restore();
	a->raw = false;
	return farewell(a);
}

int attach_main(int argc, char **argv)
{
	struct attach a = {0};
	int rc;

	rc = parse(&a, argc, argv);
	if (rc == CLI_OK)
		rc = run(&a);
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
