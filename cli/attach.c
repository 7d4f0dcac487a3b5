/* attach: `ptygate attach`, the interactive client. One poll loop over
   the WebSocket, stdin and a signalfd (SIGWINCH for resizes; SIGINT,
   SIGTERM, SIGHUP to leave politely, twice to quit at once). The
   protocol decisions are ptyc's, the framing wsclient's, the terminal
   mode rawtty's; this file moves bytes between them. Its command line
   is attach_args.c's. */
#include "attach.h"

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

#include "attach_int.h"
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

/* The attach URL path (docs/protocol.md, "1. Opening a connection"),
   escaped. */
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
	char err[CLI_ERR_LEN], *path = url_path(a);

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
	char err[CLI_ERR_LEN], line[640], *path = url_path(a);
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
		attach__default_label(a->label, sizeof(a->label));
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

	rc = attach__parse(&a, argc, argv);
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
