/* unit: cli */
/* cli/wsclient.c: gateway URLs, the upgrade request, the check of the
   server's answer (fed whole and one byte at a time), and one real
   connection to a scripted loopback server in a child process that checks
   the client's frames are masked. */
#include "../../cli/wsclient.c"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <wslay/wslay.h>

#include "log.h"
#include "wshandshake.h"
#include "xalloc.h"

/* RFC 6455 section 1.3's example key and answer. */
#define KEY    "dGhlIHNhbXBsZSBub25jZQ=="
#define ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

static const char ok_101[] = "HTTP/1.1 101 Switching Protocols\r\n"
			     "upgrade: WebSocket\r\n"
			     "Connection: keep-alive, Upgrade\r\n"
			     "Sec-WebSocket-Accept: " ACCEPT "\r\n"
			     "Sec-WebSocket-Protocol:  pty-ws.v1 \r\n"
			     "\r\n";

static int check(const char *p, size_t n, bool eof, size_t *head, char *err)
{
	return wsclient_check_response(p, n, eof, ACCEPT, head, err, 256);
}

static void test_split_url(void **state)
{
	struct wsclient_addr a;
	char err[LOG_ERR_MAX];

	assert_int_equal(
	    wsclient_split_url("http://127.0.0.1:8080", &a, err, sizeof(err)), 0);
	assert_string_equal(a.host, "127.0.0.1");
	assert_string_equal(a.port, "8080");
	assert_string_equal(a.authority, "127.0.0.1:8080");
	assert_string_equal(a.prefix, "");
	assert_int_equal(wsclient_split_url("ws://[::1]:9/gw/v1//", &a, err, sizeof(err)),
			 0);
	assert_string_equal(a.host, "::1");
	assert_string_equal(a.port, "9");
	assert_string_equal(a.authority, "[::1]:9");
	assert_string_equal(a.prefix, "/gw/v1");
	assert_int_equal(wsclient_split_url("HTTP://gw.example", &a, err, sizeof(err)),
			 0);
	assert_string_equal(a.port, "80");
	assert_string_equal(a.authority, "gw.example");

	assert_false(a.tls);
	assert_int_equal(wsclient_split_url("wss://gw", &a, err, sizeof(err)), 0);
	assert_true(a.tls);
	assert_string_equal(a.port, "443");
	assert_int_equal(wsclient_split_url("HTTPS://gw:8443/p", &a, err, sizeof(err)),
			 0);
	assert_true(a.tls);
	assert_string_equal(a.port, "8443");
	assert_string_equal(a.prefix, "/p");
	assert_int_equal(wsclient_split_url("ftp://gw", &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(wsclient_split_url("http://u:p@gw", &a, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(wsclient_split_url("http://gw:80x", &a, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(wsclient_split_url("http://gw:", &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(wsclient_split_url("http://", &a, err, sizeof(err)), -EINVAL);
	assert_int_equal(wsclient_split_url("http://gw/?t=1", &a, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(wsclient_split_url("http://[::1", &a, err, sizeof(err)),
			 -EINVAL);
	/* The port is a port: 1..65535 (these once went on to getaddrinfo). */
	assert_int_equal(wsclient_split_url("http://gw:0", &a, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(wsclient_split_url("http://gw:65536/p", &a, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(wsclient_split_url("http://[::1]:99999", &a, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(wsclient_split_url("http://::1:80", &a, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(wsclient_split_url("http://gw:65535", &a, err, sizeof(err)), 0);
	assert_string_equal(a.port, "65535");
}

static void test_request(void **state)
{
	struct wsclient_addr a;
	struct buf b = BUF_INIT;
	char err[LOG_ERR_MAX];
	const char *s;

	assert_int_equal(wsclient_split_url("http://gw:81/pre", &a, err, sizeof(err)), 0);
	wsclient_request(&a, "/agents/i/sessions/s/attach", KEY, "h.p.s", &b);
	*buf_reserve(&b, 1) = '\0';
	s = (const char *)b.data;
	assert_true(!strncmp(s, "GET /pre/agents/i/sessions/s/attach HTTP/1.1\r\n", 46));
	assert_non_null(strstr(s, "\r\nHost: gw:81\r\n"));
	assert_non_null(strstr(s, "\r\nUpgrade: websocket\r\n"));
	assert_non_null(strstr(s, "\r\nConnection: Upgrade\r\n"));
	assert_non_null(strstr(s, "\r\nSec-WebSocket-Key: " KEY "\r\n"));
	assert_non_null(strstr(s, "\r\nSec-WebSocket-Version: 13\r\n"));
	assert_non_null(strstr(s, "\r\nSec-WebSocket-Protocol: pty-ws.v1\r\n"));
	assert_non_null(strstr(s, "\r\nAuthorization: Bearer h.p.s\r\n"));
	assert_int_equal(strcmp(s + strlen(s) - 4, "\r\n\r\n"), 0);
	assert_null(strstr(s, "?"));
	buf_reset(&b);
	wsclient_request(&a, "/x", KEY, NULL, &b);
	*buf_reserve(&b, 1) = '\0';
	assert_null(strstr((const char *)b.data, "Authorization"));
	buf_free(&b);
}

static void test_upgrade_ok_byte_at_a_time(void **state)
{
	char in[sizeof(ok_101) + 4], err[LOG_ERR_MAX];
	size_t n = strlen(ok_101), i, head = 0;

	/* Two bytes of WebSocket data arrive with the answer. */
	memcpy(in, ok_101, n);
	in[n] = (char)0x81;
	in[n + 1] = 0x00;
	for (i = 0; i < n; i++)
		assert_int_equal(check(in, i, false, &head, err), 0);
	assert_int_equal(check(in, n, false, &head, err), 1);
	assert_int_equal(head, n);
	assert_int_equal(check(in, n + 2, false, &head, err), 1);
	assert_int_equal(head, n);
}

/* ok_101 with one header line replaced. */
static int check_variant(const char *from, const char *to, char *err)
{
	char text[512], *at;
	size_t head;

	snprintf(text, sizeof(text), "%s", ok_101);
	at = strstr(text, from);
	assert_non_null(at);
	memmove(at + strlen(to), at + strlen(from), strlen(at + strlen(from)) + 1);
	memcpy(at, to, strlen(to));
	return check(text, strlen(text), false, &head, err);
}

static void test_upgrade_bad(void **state)
{
	char err[LOG_ERR_MAX];
	size_t head;

	assert_int_equal(check_variant(ACCEPT, "s3pPLMBiTxaQ9kYGzzhZRbK+xOA=", err),
			 -EPROTO);
	assert_non_null(strstr(err, "Sec-WebSocket-Accept"));
	assert_int_equal(check_variant(" pty-ws.v1 ", "pty-ws.v2", err), -EPROTO);
	assert_non_null(strstr(err, "subprotocol"));
	assert_int_equal(check_variant("Sec-WebSocket-Protocol", "X-Protocol", err),
			 -EPROTO);
	assert_int_equal(check_variant("WebSocket", "h2c", err), -EPROTO);
	assert_int_equal(check_variant("keep-alive, Upgrade", "keep-alive", err),
			 -EPROTO);
	assert_int_equal(check("SSH-2.0-OpenSSH\r\n\r\n", 19, false, &head, err),
			 -EPROTO);
	assert_int_equal(check("HTTP/1.1 101", 12, true, &head, err), -EPROTO);
	assert_non_null(strstr(err, "closed"));
	/* The status is three digits (sscanf's "%3d" took " 10" and "-10"). */
	assert_int_equal(check("HTTP/1.1 -10 x\r\n\r\n", 18, true, &head, err), -EPROTO);
	assert_non_null(strstr(err, "not HTTP"));
	assert_int_equal(check("HTTP/1.1  10 x\r\n\r\n", 18, true, &head, err), -EPROTO);
	assert_non_null(strstr(err, "not HTTP"));
}

static void test_header_too_large(void **state)
{
	size_t n = WSCLIENT_HEAD_MAX + 2, head;
	char *big = xmalloc(n), err[LOG_ERR_MAX];

	memset(big, 'a', n);
	memcpy(big, "HTTP/1.1 101 OK\r\nX: ", 20);
	assert_int_equal(check(big, WSCLIENT_HEAD_MAX, false, &head, err), 0);
	assert_int_equal(check(big, n, false, &head, err), -EPROTO);
	free(big);
}

static void test_refusal_with_length_byte_at_a_time(void **state)
{
	static const char r[] =
	    "HTTP/1.1 401 Unauthorized\r\n"
	    "WWW-Authenticate: Bearer\r\n"
	    "Content-Type: application/json\r\n"
	    "Content-Length: 52\r\n"
	    "\r\n"
	    "{\"code\":\"UNAUTHENTICATED\",\"message\":\"token expired\"}";
	size_t n = strlen(r), i, head;
	char err[LOG_ERR_MAX];

	for (i = 0; i < n; i++)
		assert_int_equal(check(r, i, false, &head, err), 0);
	assert_int_equal(check(r, n, false, &head, err), -ECONNREFUSED);
	assert_string_equal(err,
			    "the gateway refused the attach: HTTP 401 UNAUTHENTICATED: "
			    "token expired");
	/* Cut short by the end of the connection: the status alone. */
	assert_int_equal(check(r, n - 3, true, &head, err), -ECONNREFUSED);
	assert_string_equal(err, "the gateway refused the attach: HTTP 401");
}

static void test_refusal_variants(void **state)
{
	static const char limited[] =
	    "HTTP/1.1 429 Too Many Requests\r\n"
	    "Retry-After: 5\r\n"
	    "Content-Length: 45\r\n\r\n"
	    "{\"code\":\"RATE_LIMITED\",\"message\":\"slow down\"}";
	static const char chunked[] =
	    "HTTP/1.1 403 Forbidden\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"
	    "2b\r\n{\"code\":\"PERMISSION_DENIED\",\"message\":\"no\"}\r\n"
	    "0\r\n\r\n";
	static const char bare[] = "HTTP/1.0 503 Service Unavailable\r\n\r\n";
	char err[LOG_ERR_MAX];
	size_t head;

	assert_int_equal(check(limited, strlen(limited), false, &head, err),
			 -ECONNREFUSED);
	assert_string_equal(err, "the gateway refused the attach: HTTP 429 RATE_LIMITED: "
				 "slow down (retry after 5 s)");
	/* A chunked body is read to the end of the connection. */
	assert_int_equal(check(chunked, strlen(chunked), false, &head, err), 0);
	assert_int_equal(check(chunked, strlen(chunked), true, &head, err),
			 -ECONNREFUSED);
	assert_string_equal(err,
			    "the gateway refused the attach: HTTP 403 PERMISSION_DENIED: "
			    "no");
	assert_int_equal(check(bare, strlen(bare), false, &head, err), 0);
	assert_int_equal(check(bare, strlen(bare), true, &head, err), -ECONNREFUSED);
	assert_string_equal(err, "the gateway refused the attach: HTTP 503");
}

/* The child's side: a scripted server on fd. Exit status 0 when the
   client's frames were as expected. */
static int server_read(int fd, uint8_t *p, size_t n)
{
	size_t got = 0;
	ssize_t k;

	while (got < n) {
		k = read(fd, p + got, n - got);
		if (k <= 0)
			return -1;
		got += (size_t)k;
	}
	return 0;
}

/* Reads one masked client frame with a payload of at most
   SERVER_FRAME_MAX bytes into payload (room for that much). */
#define SERVER_FRAME_MAX (256 * 1024)

static int server_frame(int fd, uint8_t *op, char *payload, size_t *n)
{
	uint8_t h[2], ext[8], mask[4];
	size_t i, ext_len;

	if (server_read(fd, h, 2) < 0 || !(h[0] & 0x80) || !(h[1] & 0x80))
		return -1; /* unfinished or unmasked */
	*n = h[1] & 0x7f;
	ext_len = *n == 127 ? 8 : *n == 126 ? 2 : 0;
	if (ext_len) {
		if (server_read(fd, ext, ext_len) < 0)
			return -1;
		*n = 0;
		for (i = 0; i < ext_len; i++)
			*n = *n << 8 | ext[i];
	}
	if (*n > SERVER_FRAME_MAX || server_read(fd, mask, 4) < 0)
		return -1;
	*op = h[0] & 0x0f;
	if (server_read(fd, (uint8_t *)payload, *n) < 0)
		return -1;
	for (i = 0; i < *n; i++)
		payload[i] ^= (char)mask[i % 4];
	return 0;
}

/* The burst test's frame i: 1 to 125 bytes, or 200,000 for one in a
   hundred (wslay masks and sends it 4 KiB at a time, many of them into
   a full socket), each telling i apart. */
#define BURST_MAX 200000

static size_t burst_payload(int i, char *p)
{
	size_t n = i % 100 == 99 ? BURST_MAX : 1 + (size_t)i % 125;

	for (size_t k = 0; k < n; k++)
		p[k] = (char)('a' + (i + (int)k) % 26);
	return n;
}

/* Reads the burst's frames with pauses through a small receive buffer
   (not the smallest: TCP would wait on its persist timer), so the
   client's sends meet a full socket and go out in pieces. */
static int server_burst(int fd, int burst)
{
	static char pl[SERVER_FRAME_MAX], want[BURST_MAX];
	uint8_t op;
	size_t n;
	int rcvbuf = 8192;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	for (int i = 0; i < burst; i++) {
		if (server_frame(fd, &op, pl, &n) < 0 || op != 1 ||
		    n != burst_payload(i, want) || memcmp(pl, want, n))
			return 16;
		if (i % 16 == 0)
			usleep(1000);
	}
	return 0;
}

static int server_script(int lfd, bool deflate, int burst)
{
	char req[4096] = "", key[64], acc[WSHS_ACCEPT_LEN + 1], ans[512];
	static char pl[SERVER_FRAME_MAX];
	const char *k;
	size_t got = 0, n;
	uint8_t op;
	int fd = accept(lfd, NULL, NULL);

	while (!strstr(req, "\r\n\r\n") && got < sizeof(req) - 1 &&
	       read(fd, req + got, 1) == 1)
		got++;
	k = strstr(req, "Sec-WebSocket-Key: ");
	if (!k || !strstr(req, "Authorization: Bearer tok.en\r\n") ||
	    sscanf(k + 19, "%63[^\r]", key) != 1 || wshs_accept_key(key, acc) < 0)
		return 10;
	if (!strstr(req, "Sec-WebSocket-Extensions: " WSCLIENT_DEFLATE_OFFER "\r\n"))
		return 15;
	/* The answer and a first text frame in one write: "hi", or with
	   deflate agreed RFC 7692 7.2.3.1's compressed "Hello". */
	n = (size_t)snprintf(
	    ans, sizeof(ans),
	    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
	    "Sec-WebSocket-Protocol: pty-ws.v1\r\n%s\r\n",
	    acc,
	    deflate ? "Sec-WebSocket-Extensions: permessage-deflate; "
		      "server_no_context_takeover; client_no_context_takeover\r\n"
		    : "");
	if (deflate) {
		memcpy(ans + n, "\xc1\x07\xf2\x48\xcd\xc9\xc9\x07\x00", 9);
		n += 9;
	} else {
		memcpy(ans + n, "\x81\x02hi", 4);
		n += 4;
	}
	if (write(fd, ans, n) != (ssize_t)n)
		return 11;
	if (server_frame(fd, &op, pl, &n) < 0 || op != 1 || n != 9 ||
	    memcmp(pl, "ping-text", 9))
		return 12;
	if (server_burst(fd, burst))
		return 16;
	if (write(fd, "\x88\x04\x03\xe8ok", 6) != 6) /* close 1000 "ok" */
		return 13;
	if (server_frame(fd, &op, pl, &n) < 0 || op != 8 || n < 2 ||
	    ((uint8_t)pl[0] << 8 | (uint8_t)pl[1]) != 1000)
		return 14; /* the client's close echo */
	close(fd);
	return 0;
}

struct seen {
	char text[64];
	uint16_t code;
	char reason[16];
};

static void seen_text(const char *p, size_t n, void *user)
{
	struct seen *s = user;

	snprintf(s->text, sizeof(s->text), "%.*s", (int)n, p);
}

static void seen_close(uint16_t code, const char *reason, size_t n, void *user)
{
	struct seen *s = user;

	s->code = code;
	snprintf(s->reason, sizeof(s->reason), "%.*s", (int)n, reason);
}

/* Nagle off: with it each keystroke's frame waited for the gateway's
   delayed ACK, and `ptygate attach` echoed every key 43 ms late. */
static void expect_nodelay(int fd)
{
	int on = 0;
	socklen_t len = sizeof(on);

	assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, &len), 0);
	assert_int_equal(on, 1);
}

/* Queues the burst behind a send buffer as small as the kernel allows. */
static void send_burst(struct wsclient *c, int burst)
{
	static char p[BURST_MAX];
	int small = 1;

	assert_int_equal(
	    setsockopt(wsclient_fd(c), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	for (int i = 0; i < burst; i++)
		assert_int_equal(wsclient_send_text(c, p, burst_payload(i, p)), 0);
}

static void roundtrip(bool deflate, int burst)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(0x7f000001)};
	socklen_t sl = sizeof(sa);
	const struct wsclient_callbacks cb = {seen_text, seen_close};
	struct seen s = {0};
	struct wsclient *c;
	char url[64], err[LOG_ERR_MAX];
	int lfd = socket(AF_INET, SOCK_STREAM, 0), status;
	struct pollfd p;
	pid_t pid;

	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	pid = fork();
	if (pid == 0)
		_exit(server_script(lfd, deflate, burst));
	close(lfd);
	snprintf(url, sizeof(url), "ws://127.0.0.1:%u", ntohs(sa.sin_port));
	c = wsclient_connect(url, "/agents/i/sessions/s/attach", "tok.en", 5000, &cb, &s,
			     err, sizeof(err));
	assert_non_null(c);
	expect_nodelay(wsclient_fd(c));
	assert_string_equal(s.text, deflate ? "Hello" : "hi"); /* came with the answer */
	assert_int_equal(wsclient_send_text(c, "ping-text", 9), 0);
	send_burst(c, burst);
	while (!wsclient_done(c)) {
		p = (struct pollfd){wsclient_fd(c), wsclient_events(c), 0};
		assert_int_equal(poll(&p, 1, 5000), 1);
		assert_int_equal(wsclient_handle(c, p.revents), 0);
	}
	assert_int_equal(s.code, 1000);
	assert_string_equal(s.reason, "ok");
	assert_int_equal(wsclient_close_code(c), 1000);
	assert_int_equal(wsclient_send_text(c, "late", 4), -ESHUTDOWN);
	wsclient_free(c);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	wsclient_free(NULL);
}

static void test_connect_masked_roundtrip(void **state)
{
	roundtrip(false, 0);
}

/* permessage-deflate agreed: a compressed server message inflates. */
static void test_connect_deflate(void **state)
{
	roundtrip(true, 0);
}

/* A frame's header waits for its payload so one send carries both (a
   keystroke's frame is one system call); 2,000 frames queued behind the
   smallest send buffer, to a reader that pauses, so that most sends meet
   a full socket and are retried with the header held, still arrive
   whole and in order. */
static void test_burst_through_full_socket(void **state)
{
	roundtrip(false, 2000);
}

static void expect_agreed(const char *ext, int rc, bool on)
{
	char head[512], err[LOG_ERR_MAX] = "";
	bool deflate = !on;
	int n = snprintf(
	    head, sizeof(head),
	    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n%s%s%s\r\n",
	    ext ? "Sec-WebSocket-Extensions: " : "", ext ? ext : "", ext ? "\r\n" : "");

	assert_int_equal(
	    wsclient_agreed_deflate(head, (size_t)n, &deflate, err, sizeof(err)), rc);
	assert_int_equal(deflate, on);
	if (rc < 0)
		assert_non_null(strstr(err, "Sec-WebSocket-Extensions"));
}

/* RFC 7692 5: what answers our offer, and what fails the connection. */
static void test_agreed_deflate(void **state)
{
	expect_agreed(NULL, 0, false);
	expect_agreed("permessage-deflate; server_no_context_takeover", 0, true);
	expect_agreed("permessage-deflate; server_no_context_takeover; "
		      "client_no_context_takeover",
		      0, true);
	expect_agreed(
	    "PerMessage-Deflate;Server_No_Context_Takeover; server_max_window_bits=10", 0,
	    true);
	expect_agreed("permessage-deflate", -EPROTO, false);
	expect_agreed("x-webkit-deflate-frame", -EPROTO, false);
	expect_agreed("permessage-deflate; server_no_context_takeover; "
		      "client_max_window_bits=15",
		      -EPROTO, false);
	expect_agreed("permessage-deflate; server_no_context_takeover; "
		      "server_no_context_takeover",
		      -EPROTO, false);
	expect_agreed("permessage-deflate; server_no_context_takeover; "
		      "server_max_window_bits=16",
		      -EPROTO, false);
	expect_agreed(
	    "permessage-deflate; server_no_context_takeover; server_max_window_bits",
	    -EPROTO, false);
	expect_agreed("permessage-deflate; server_no_context_takeover=1", -EPROTO, false);
	expect_agreed(
	    "permessage-deflate; server_no_context_takeover, permessage-deflate", -EPROTO,
	    false);
}

static void test_connect_refused(void **state)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(0x7f000001)};
	socklen_t sl = sizeof(sa);
	const struct wsclient_callbacks cb = {seen_text, seen_close};
	char url[64], err[LOG_ERR_MAX];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	/* A port nobody listens on: bound, then closed. */
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", ntohs(sa.sin_port));
	assert_null(wsclient_connect(url, "/", "t", 2000, &cb, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "cannot connect"));
	snprintf(url, sizeof(url), "wss://127.0.0.1:%u", ntohs(sa.sin_port));
	assert_null(wsclient_connect(url, "/", "t", 2000, &cb, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "cannot connect"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_split_url),
	    cmocka_unit_test(test_request),
	    cmocka_unit_test(test_upgrade_ok_byte_at_a_time),
	    cmocka_unit_test(test_upgrade_bad),
	    cmocka_unit_test(test_header_too_large),
	    cmocka_unit_test(test_refusal_with_length_byte_at_a_time),
	    cmocka_unit_test(test_refusal_variants),
	    cmocka_unit_test(test_connect_masked_roundtrip),
	    cmocka_unit_test(test_connect_refused),
	    cmocka_unit_test(test_connect_deflate),
	    cmocka_unit_test(test_burst_through_full_socket),
	    cmocka_unit_test(test_agreed_deflate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
