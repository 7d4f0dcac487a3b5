/* unit: gateway */
/* relay: a WebSocket attach relayed to an owner played by a thread on a
   loopback socket: the upgrade request it receives (Upgrade and
   Connection set, the client's headers kept, X-Forwarded-For and a fleet
   header that verifies), a 101 answered with the owner's headers, bytes
   both ways as they are (what the client sent first and the owner's
   first bytes included), the end when the owner closes; a refusal comes
   back whole; an owner down or silent is an error in bounded time; a
   client that does not read holds the owner back (the relay buffers at
   most its cap); the answer head parser on good, partial and bad heads. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "ev.h"
#include "fleetauth.h"
#include "forward.h"
#include "relay.h"
#include "timeutil.h"

#define SECRET	  "fleet-secret-fleet-secret-fleet-secret"
#define FLOOD	  (32u * 1024 * 1024)
#define FLOOD_CAP (16u * 1024 * 1024) /* far above what buffers can hold */

enum mode { ECHO, REFUSE, FLOOD_OUT };

struct owner {
	pthread_t th;
	int lfd;
	uint16_t port;
	enum mode mode;
	char head[4096];
	int verified;
	volatile size_t written;
};

static ssize_t read_head(int fd, char *out, size_t cap)
{
	size_t n = 0;

	while (n + 1 < cap) {
		ssize_t k = read(fd, out + n, 1);

		if (k <= 0)
			return -1;
		n += k;
		out[n] = '\0';
		if (n >= 4 && memcmp(out + n - 4, "\r\n\r\n", 4) == 0)
			return n;
	}
	return -1;
}

static const char *hval(const char *head, const char *name, char *out, size_t cap)
{
	const char *p = strcasestr(head, name);

	if (!p)
		return NULL;
	p += strlen(name) + 2;
	snprintf(out, cap, "%.*s", (int)strcspn(p, "\r"), p);
	return out;
}

static void *owner_main(void *arg)
{
	struct owner *o = arg;
	struct fleetauth k;
	char xff[64] = "", sig[128] = "", tgt[256] = "", buf[65536];
	int fd = accept(o->lfd, NULL, NULL);
	ssize_t n;

	if (fd < 0 || read_head(fd, o->head, sizeof(o->head)) < 0)
		goto out;
	fleetauth_init(&k, SECRET, strlen(SECRET));
	hval(o->head, "X-Forwarded-For", xff, sizeof(xff));
	hval(o->head, FLEETAUTH_HEADER, sig, sizeof(sig));
	sscanf(o->head, "GET %255s ", tgt);
	o->verified =
	    fleetauth_verify(&k, time_now_ms() / 1000, sig, "GET", tgt, xff) == 0;
	if (o->mode == REFUSE) {
		const char *a =
		    "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"
		    "Content-Length: 17\r\nConnection: close\r\n\r\n"
		    "{\"code\":\"DENIED\"}trailing junk";
		write(fd, a, strlen(a));
		goto out;
	}
	n = snprintf(buf, sizeof(buf),
		     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
		     "Connection: Upgrade\r\nSec-WebSocket-Accept: abc=\r\n"
		     "Sec-WebSocket-Protocol: pty-ws.v1\r\n\r\nhello-from-owner;");
	write(fd, buf, n);
	if (o->mode == FLOOD_OUT) {
		int sz = 65536;

		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		memset(buf, 'f', sizeof(buf));
		while (o->written < FLOOD) {
			n = write(fd, buf, sizeof(buf));
			if (n <= 0)
				break;
			o->written += n;
		}
		goto out;
	}
	/* Echo until the client's "bye", then close. */
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		write(fd, buf, n);
		if (memmem(buf, n, "bye", 3))
			break;
	}
out:
	if (fd >= 0)
		close(fd);
	return NULL;
}

static void owner_start(struct owner *o, enum mode mode, int listen_ok)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);

	memset(o, 0, sizeof(*o));
	o->mode = mode;
	o->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(o->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(o->lfd, (struct sockaddr *)&a, &len), 0);
	o->port = ntohs(a.sin_port);
	if (!listen_ok) { /* nothing listens there */
		close(o->lfd);
		o->lfd = -1;
		return;
	}
	assert_int_equal(listen(o->lfd, 4), 0);
	if (mode != (enum mode) - 1)
		assert_int_equal(pthread_create(&o->th, NULL, owner_main, o), 0);
}

struct fx {
	struct ev_loop *loop;
	struct ev_timer *guard;
	struct forward *f;
	struct relay *r;
	int answered, ended;
	struct relay_answer a;
	char accept[64], conn_hdr[64], body[64];
	int cfd, tfd; /* the relay's client end, the test's */
};

static void guard_cb(struct ev_timer *t, void *user)
{
	fail_msg("the relay test did not end");
}

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	struct fleetauth k;
	struct forward_opts o = {
	    .auth = &k, .connect_timeout_ms = 5000, .timeout_ms = 5000};
	char err[128];
	int sv[2];

	assert_int_equal(fleetauth_init(&k, SECRET, strlen(SECRET)), 0);
	x->loop = ev_loop_new();
	x->guard = ev_timer_new(x->loop, 60000, 0, guard_cb, x);
	x->f = forward_new(x->loop, &o, err, sizeof(err));
	assert_non_null(x->f);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	x->cfd = sv[0];
	x->tfd = sv[1];
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	relay_free(x->r);
	forward_free(x->f);
	ev_timer_free(x->guard);
	ev_loop_free(x->loop);
	close(x->cfd);
	close(x->tfd);
	free(x);
	return 0;
}

static void on_answer(void *user, const struct relay_answer *a)
{
	struct fx *x = user;

	x->answered = 1;
	x->a = *a;
	x->a.headers = NULL;
	for (size_t i = 0; i < a->n_headers; i++) {
		if (strcasecmp(a->headers[i].name, "Sec-WebSocket-Accept") == 0)
			snprintf(x->accept, sizeof(x->accept), "%s", a->headers[i].value);
		if (strcasecmp(a->headers[i].name, "Connection") == 0)
			snprintf(x->conn_hdr, sizeof(x->conn_hdr), "%s",
				 a->headers[i].value);
	}
	snprintf(x->body, sizeof(x->body), "%.*s", (int)a->body_len,
		 (const char *)a->body);
	x->a.body = NULL;
	ev_loop_stop(x->loop);
}

static void on_end(void *user, struct relay *r)
{
	struct fx *x = user;

	x->ended = 1;
	ev_loop_stop(x->loop);
}

static void open_to(struct fx *x, uint16_t port, long timeout_ms)
{
	static const struct forward_header hs[] = {
	    {"Host", "gw.example:8080"},
	    {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
	    {"Sec-WebSocket-Version", "13"},
	    {"Sec-WebSocket-Protocol", "pty-ws.v1"},
	    {"Connection", "keep-alive, Upgrade"},
	    {"Upgrade", "websocket"},
	};
	char url[64];
	struct forward_request rq = {.owner_url = url,
				     .method = "GET",
				     .target = "/agents/a/sessions/s/attach",
				     .headers = hs,
				     .n_headers = 6,
				     .client = "198.51.100.4"};

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", port);
	x->r = relay_open(x->f, &rq, timeout_ms, on_answer, x);
	assert_non_null(x->r);
	assert_int_equal(x->answered, 0);
	ev_loop_run(x->loop);
	assert_int_equal(x->answered, 1);
}

/* The test's end of the client socket, read on the loop until it holds
   want bytes (or sees the end). */
struct sink {
	struct fx *x;
	struct buf got;
	size_t want;
	int eof;
};

static void on_sink(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct sink *k = user;
	ssize_t n = read(fd, buf_reserve(&k->got, 65536), 65536);

	if (n > 0)
		buf_commit(&k->got, n);
	else if (n == 0)
		k->eof = 1;
	if (k->eof || buf_size(&k->got) >= k->want)
		ev_loop_stop(k->x->loop);
}

static void read_client(struct fx *x, struct sink *k, size_t want)
{
	struct ev_io *io = ev_io_new(x->loop, x->tfd, EV_READ, on_sink, k);

	k->x = x;
	k->want = want;
	/* The relay's end also stops the loop: run again until the bytes are
	   read (the guard fails a test that waits forever). */
	while (buf_size(&k->got) < want && !k->eof)
		ev_loop_run(x->loop);
	ev_io_free(io);
}

static void test_upgrade_and_echo(void **state)
{
	struct fx *x = *state;
	struct owner o;
	struct sink k = {0};
	struct forward_stats st;
	const char *want = "hello-from-owner;prefirst-bye";

	owner_start(&o, ECHO, 1);
	open_to(x, o.port, 10000);
	assert_int_equal(x->a.rc, 0);
	assert_int_equal(x->a.status, 101);
	assert_string_equal(x->accept, "abc=");
	assert_string_equal(x->conn_hdr, ""); /* hop-by-hop: not for the client */
	/* What the owner received. */
	assert_non_null(strstr(o.head, "GET /agents/a/sessions/s/attach HTTP/1.1\r\n"));
	assert_non_null(strstr(o.head, "Host: gw.example:8080\r\n"));
	assert_non_null(strstr(o.head, "Upgrade: websocket\r\nConnection: Upgrade\r\n"));
	assert_non_null(
	    strstr(o.head, "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"));
	assert_non_null(strstr(o.head, "X-Forwarded-For: 198.51.100.4\r\n"));
	assert_null(strstr(o.head, "keep-alive"));
	assert_int_equal(o.verified, 1);

	relay_start(x->r, x->cfd, "pre", 3, 0, on_end, x);
	assert_int_equal(write(x->tfd, "first-bye", 9), 9);
	buf_init(&k.got);
	read_client(x, &k, strlen(want));
	assert_int_equal(buf_size(&k.got), strlen(want));
	assert_memory_equal(buf_head(&k.got), want, strlen(want));
	/* The owner closes after "bye": the relay ends. */
	if (!x->ended)
		ev_loop_run(x->loop);
	assert_int_equal(x->ended, 1);
	forward_get_stats(x->f, &st);
	assert_int_equal(st.relays, 1);
	assert_int_equal(st.relays_active, 1); /* until relay_free */
	assert_int_equal(st.relay_bytes_in, 12);
	relay_free(x->r);
	x->r = NULL;
	forward_get_stats(x->f, &st);
	assert_int_equal(st.relays_active, 0);
	buf_free(&k.got);
	pthread_join(o.th, NULL);
	close(o.lfd);
}

static void on_end_free(void *user, struct relay *r)
{
	struct fx *x = user;

	x->ended++;
	relay_free(r);
	x->r = NULL;
}

static void test_close_all_at_shutdown(void **state)
{
	struct fx *x = *state;
	struct owner o;
	struct forward_stats st;

	owner_start(&o, ECHO, 1);
	open_to(x, o.port, 10000);
	assert_int_equal(x->a.status, 101);
	relay_start(x->r, x->cfd, NULL, 0, 0, on_end_free, x);
	relay_close_all(x->f);
	assert_int_equal(x->ended, 1);
	assert_null(x->r);
	forward_get_stats(x->f, &st);
	assert_int_equal(st.relays_active, 0);
	/* The owner sees its connection end. */
	pthread_join(o.th, NULL);
	close(o.lfd);
}

static void test_refusal_comes_back(void **state)
{
	struct fx *x = *state;
	struct owner o;

	owner_start(&o, REFUSE, 1);
	open_to(x, o.port, 10000);
	assert_int_equal(x->a.rc, 0);
	assert_int_equal(x->a.status, 403);
	assert_string_equal(x->body, "{\"code\":\"DENIED\"}");
	pthread_join(o.th, NULL);
	close(o.lfd);
}

static void test_owner_down(void **state)
{
	struct fx *x = *state;
	struct owner o;
	struct forward_stats st;

	owner_start(&o, ECHO, 0);
	open_to(x, o.port, 10000);
	assert_int_equal(x->a.rc, -ECONNREFUSED);
	forward_get_stats(x->f, &st);
	assert_int_equal(st.relays_failed, 1);
}

static void test_owner_silent(void **state)
{
	struct fx *x = *state;
	struct owner o;
	int64_t t0 = time_mono_ms();

	owner_start(&o, (enum mode) - 1, 1); /* listens, never accepts */
	open_to(x, o.port, 300);
	assert_int_equal(x->a.rc, -ETIMEDOUT);
	assert_true(time_mono_ms() - t0 < 30000);
	close(o.lfd);
}

static void on_settle(struct ev_timer *t, void *user)
{
	ev_loop_stop(user);
}

static void test_backpressure(void **state)
{
	struct fx *x = *state;
	struct owner o;
	struct sink k = {0};
	struct forward_stats st;
	struct ev_timer *settle;
	uint64_t last = UINT64_MAX;
	int64_t until = time_mono_ms() + 30000;

	owner_start(&o, FLOOD_OUT, 1);
	open_to(x, o.port, 10000);
	assert_int_equal(x->a.status, 101);
	relay_start(x->r, x->cfd, NULL, 0, 0, on_end, x);
	/* The client reads nothing: run until the relay moves no more. */
	settle = ev_timer_new(x->loop, -1, 0, on_settle, x->loop);
	for (;;) {
		ev_timer_arm(settle, 300, 0);
		ev_loop_run(x->loop);
		forward_get_stats(x->f, &st);
		if (st.relay_bytes_out == last || time_mono_ms() > until)
			break;
		last = st.relay_bytes_out;
	}
	ev_timer_free(settle);
	assert_true(st.relay_bytes_out < FLOOD_CAP);
	assert_true(o.written < FLOOD);
	assert_int_equal(x->ended, 0);
	/* Now the client reads: every byte arrives, in order, and the relay
	   ends with the owner. */
	buf_init(&k.got);
	read_client(x, &k, strlen("hello-from-owner;") + FLOOD);
	assert_int_equal(buf_size(&k.got), strlen("hello-from-owner;") + FLOOD);
	for (size_t i = strlen("hello-from-owner;"); i < buf_size(&k.got); i++)
		if (buf_head(&k.got)[i] != 'f')
			fail_msg("byte %zu changed", i);
	buf_free(&k.got);
	if (!x->ended)
		ev_loop_run(x->loop);
	assert_int_equal(x->ended, 1);
	pthread_join(o.th, NULL);
	close(o.lfd);
}

static void test_parse_head(void **state)
{
	struct buf pairs;
	unsigned status = 0;
	size_t n = 0;
	const char *ok = "HTTP/1.1 101 Switching Protocols\r\nA: 1\r\nB:two \r\n\r\nrest";
	long len;

	buf_init(&pairs);
	len = relay_parse_head(ok, strlen(ok), &status, &pairs, &n);
	assert_int_equal(len, strlen(ok) - 4);
	assert_int_equal(status, 101);
	assert_int_equal(n, 2);
	assert_memory_equal(buf_head(&pairs),
			    "A\0"
			    "1\0B\0two\0",
			    10);
	/* Every prefix is incomplete, never an error. */
	for (size_t i = 0; i < strlen(ok) - 4; i++)
		assert_int_equal(relay_parse_head(ok, i, &status, &pairs, &n), 0);
	assert_int_equal(
	    relay_parse_head("HTTP/1.1 404\r\n\r\n", 16, &status, &pairs, &n), 16);
	assert_int_equal(status, 404);
	static const char *bad[] = {
	    "HTTP/2 200 OK\r\n\r\n",
	    "HTTP/1.1 20 OK\r\n\r\n",
	    "HTTP/1.1 2000 OK\r\n\r\n",
	    "HTTP/1.1 099 x\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n",
	    "HTTP/1.1 200 OK\r\n folded: x\r\n\r\n",
	    "HTTP/1.1 200 OK\r\n: empty\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nA: b\001c\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(
		    relay_parse_head(bad[i], strlen(bad[i]), &status, &pairs, &n),
		    -EPROTO);
	/* A head that never ends is cut at its cap. */
	char *big = malloc(RELAY_HEAD_MAX + 1);
	memset(big, 'a', RELAY_HEAD_MAX + 1);
	assert_int_equal(relay_parse_head(big, RELAY_HEAD_MAX + 1, &status, &pairs, &n),
			 -E2BIG);
	free(big);
	buf_free(&pairs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_upgrade_and_echo, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refusal_comes_back, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_close_all_at_shutdown, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_owner_down, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_owner_silent, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_backpressure, setup, teardown),
	    cmocka_unit_test(test_parse_head),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
