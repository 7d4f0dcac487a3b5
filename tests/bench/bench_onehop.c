/* bench_onehop: the one-hop reference of the benchmark suite. A web
   terminal in one process, the way ttyd is built (Debian 12 does not
   package ttyd): forkpty per connection and a WebSocket server on one
   epoll loop (wslay), speaking ttyd's framing: binary messages whose first
   byte says what they are, '0' for input from the client and '0' for
   output from the server; no JSON, no base64, no sequence, no screen
   model, no second process. run.py times echo and throughput through it
   beside ptygate's two hops (gateway and sidecar) in the same run.

   Usage: bench_onehop COMMAND [ARG...]
   Listens on 127.0.0.1 on a free port and prints "PORT n"; runs COMMAND
   on a fresh 120x30 PTY for each connection. Ends on SIGTERM or when
   standard input closes. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wslay/wslay.h>

#include "bench_wslay.h"
#include "buf.h"
#include "wshandshake.h"

#define READ_CHUNK  (64 * 1024)	  /* one PTY read, one message */
#define QUEUE_LIMIT (1024 * 1024) /* PTY not read while this much is unsent */
#define HEAD_MAX    8192

struct conn;

/* What an epoll event is about: the client's socket or its PTY. */
struct watch {
	struct conn *c;
	bool pty;
};

struct conn {
	int fd, pty;
	pid_t pid;
	bool open, dead;
	struct conn *next_dead;
	struct buf head; /* the upgrade request, until it is whole */
	wslay_event_context_ptr ctx;
	struct watch sock_w, pty_w;
};

static int epfd;
static char **command;
static struct conn *dead; /* freed after the events of one epoll_wait */

static void die(const char *what)
{
	fprintf(stderr, "bench_onehop: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void watch_set(int fd, struct watch *w, uint32_t events, int op)
{
	struct epoll_event ev = {.events = events, .data.ptr = w};

	if (epoll_ctl(epfd, op, fd, &ev) < 0 && op != EPOLL_CTL_DEL)
		die("epoll_ctl");
}

/* Closes now; frees once the batch of events that may still name the
   connection is over. */
static void conn_close(struct conn *c)
{
	close(c->fd);
	if (c->pty >= 0) {
		close(c->pty);
		kill(c->pid, SIGHUP);
		waitpid(c->pid, NULL, 0);
	}
	c->dead = true;
	c->next_dead = dead;
	dead = c;
}

static void free_dead(void)
{
	while (dead) {
		struct conn *c = dead;

		dead = c->next_dead;
		if (c->ctx)
			wslay_event_context_free(c->ctx);
		buf_free(&c->head);
		free(c);
	}
}

/* The socket wants EPOLLOUT while wslay holds bytes; the PTY is read only
   while the client is not behind (ttyd pauses its PTY the same way). */
static void update_watches(struct conn *c)
{
	bool behind = wslay_event_get_queued_msg_length(c->ctx) > QUEUE_LIMIT;

	watch_set(c->fd, &c->sock_w,
		  EPOLLIN | (wslay_event_want_write(c->ctx) ? EPOLLOUT : 0),
		  EPOLL_CTL_MOD);
	if (c->pty >= 0)
		watch_set(c->pty, &c->pty_w, behind ? 0 : EPOLLIN, EPOLL_CTL_MOD);
}

/* ---- wslay callbacks ---- */

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *p, size_t len, int flags,
		       void *user)
{
	struct conn *c = user;
	ssize_t n = recv(c->fd, p, len, 0);

	if (n > 0)
		return n;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
	else
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *p, size_t len,
		       int flags, void *user)
{
	struct conn *c = user;

	return bench_wslay_send(ctx, c->fd, p, len);
}

/* Keystrokes are a few bytes: a PTY that does not take them at once gets
   a bounded wait, which a benchmark never reaches. */
static void write_pty(struct conn *c, const uint8_t *p, size_t n)
{
	for (int tries = 0; n && tries < 100; tries++) {
		ssize_t w = write(c->pty, p, n);
		struct pollfd pfd = {.fd = c->pty, .events = POLLOUT};

		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
			return;
		} else {
			poll(&pfd, 1, 10);
		}
	}
}

static void on_msg(wslay_event_context_ptr ctx,
		   const struct wslay_event_on_msg_recv_arg *arg, void *user)
{
	struct conn *c = user;

	if (wslay_is_ctrl_frame(arg->opcode) || !arg->msg_length || arg->msg[0] != '0')
		return;
	if (c->pty >= 0)
		write_pty(c, arg->msg + 1, arg->msg_length - 1);
}

/* ---- the upgrade ---- */

/* The value of header name in a request head, or NULL. */
static const char *header(const char *head, const char *name, char *out, size_t outlen)
{
	size_t k = strlen(name);

	for (const char *l = strstr(head, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
		const char *v = l + 2, *end;

		if (strncasecmp(v, name, k) || v[k] != ':')
			continue;
		v += k + 1;
		v += strspn(v, " \t");
		end = strstr(v, "\r\n");
		if (!end || (size_t)(end - v) >= outlen)
			return NULL;
		memcpy(out, v, (size_t)(end - v));
		out[end - v] = '\0';
		return out;
	}
	return NULL;
}

static int start_program(struct conn *c)
{
	struct winsize ws = {.ws_row = 30, .ws_col = 120};

	c->pid = forkpty(&c->pty, NULL, NULL, &ws);
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		execvp(command[0], command);
		_exit(127);
	}
	fcntl(c->pty, F_SETFL, fcntl(c->pty, F_GETFL) | O_NONBLOCK);
	c->pty_w = (struct watch){c, true};
	watch_set(c->pty, &c->pty_w, EPOLLIN, EPOLL_CTL_ADD);
	return 0;
}

/* Answers a whole request head: 101, the wslay server context, the
   program. Returns 0, or -1 to drop the connection. */
static int upgrade(struct conn *c, const char *head)
{
	static const struct wslay_event_callbacks cb = {
	    .recv_callback = on_recv,
	    .send_callback = on_send,
	    .on_msg_recv_callback = on_msg,
	};
	char key[128], proto[256], accept[WSHS_ACCEPT_LEN + 1], reply[512];
	int n;

	if (strncmp(head, "GET ", 4) ||
	    !header(head, "Sec-WebSocket-Key", key, sizeof(key)) ||
	    wshs_accept_key(key, accept) < 0)
		return -1;
	/* A client offering subprotocols gets its first one (ttyd answers "tty"). */
	if (header(head, "Sec-WebSocket-Protocol", proto, sizeof(proto)))
		proto[strcspn(proto, ", ")] = '\0';
	else
		proto[0] = '\0';
	n = snprintf(reply, sizeof(reply),
		     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
		     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s%s%s\r\n",
		     accept, proto[0] ? "Sec-WebSocket-Protocol: " : "", proto,
		     proto[0] ? "\r\n" : "");
	if (send(c->fd, reply, (size_t)n, MSG_NOSIGNAL) != n ||
	    wslay_event_context_server_init(&c->ctx, &cb, c) != 0)
		return -1;
	c->open = true;
	return start_program(c);
}

static int read_head(struct conn *c)
{
	uint8_t *p = buf_reserve(&c->head, 1024);
	ssize_t n = recv(c->fd, p, 1023, 0);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		return -1;
	p[n] = '\0';
	buf_commit(&c->head, (size_t)n);
	if (strstr((const char *)buf_head(&c->head), "\r\n\r\n"))
		return upgrade(c, (const char *)buf_head(&c->head));
	return buf_size(&c->head) > HEAD_MAX ? -1 : 0;
}

/* ---- the loop ---- */

static int pty_readable(struct conn *c)
{
	static uint8_t chunk[1 + READ_CHUNK];
	ssize_t n = read(c->pty, chunk + 1, READ_CHUNK);
	struct wslay_event_msg m = {.opcode = WSLAY_BINARY_FRAME, .msg = chunk};

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		return -1; /* the program ended: so does the connection */
	chunk[0] = '0';
	m.msg_length = (size_t)n + 1;
	return wslay_event_queue_msg(c->ctx, &m) == 0 ? 0 : -1;
}

static int sock_event(struct conn *c, uint32_t events)
{
	if (!c->open)
		return read_head(c);
	if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && wslay_event_recv(c->ctx) != 0)
		return -1;
	return wslay_event_get_close_received(c->ctx) ? -1 : 0;
}

static void on_event(struct watch *w, uint32_t events)
{
	struct conn *c = w->c;
	int rc;

	if (c->dead)
		return;
	rc = w->pty ? pty_readable(c) : sock_event(c, events);

	if (rc == 0 && c->open && wslay_event_want_write(c->ctx) &&
	    wslay_event_send(c->ctx) != 0)
		rc = -1;
	if (rc < 0) {
		conn_close(c);
		return;
	}
	if (c->open)
		update_watches(c);
}

static void on_accept(int ls)
{
	int one = 1, fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct conn *c;

	if (fd < 0)
		return;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c = calloc(1, sizeof(*c));
	if (!c)
		die("calloc");
	c->fd = fd;
	c->pty = -1;
	buf_init(&c->head);
	c->sock_w = (struct watch){c, false};
	watch_set(fd, &c->sock_w, EPOLLIN, EPOLL_CTL_ADD);
}

static int listen_loopback(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 64) < 0 || getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		die("listening on 127.0.0.1");
	printf("PORT %u\n", ntohs(sa.sin_port));
	fflush(stdout);
	return fd;
}

int main(int argc, char **argv)
{
	static struct watch listen_w, stdin_w;
	struct epoll_event evs[64];
	int ls;

	if (argc < 2 || !strcmp(argv[1], "--help")) {
		fprintf(stderr, "usage: bench_onehop COMMAND [ARG...]\n");
		return argc < 2 ? 2 : 0;
	}
	command = argv + 1;
	signal(SIGPIPE, SIG_IGN);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		die("epoll_create1");
	ls = listen_loopback();
	watch_set(ls, &listen_w, EPOLLIN, EPOLL_CTL_ADD);
	/* stdin a pipe from the driver: its end ends us (a file cannot be watched). */
	stdin_w.c = NULL;
	epoll_ctl(epfd, EPOLL_CTL_ADD, STDIN_FILENO,
		  &(struct epoll_event){.events = EPOLLIN, .data.ptr = &stdin_w});
	for (;;) {
		int n = epoll_wait(epfd, evs, 64, -1);

		if (n < 0 && errno != EINTR)
			die("epoll_wait");
		for (int i = 0; i < n; i++) {
			struct watch *w = evs[i].data.ptr;

			if (w == &stdin_w)
				return 0; /* the driver is gone (or closed our stdin) */
			if (w == &listen_w)
				on_accept(ls);
			else
				on_event(w, evs[i].events);
		}
		free_dead();
	}
}
