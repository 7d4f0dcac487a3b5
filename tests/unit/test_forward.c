/* unit: gateway */
/* forward: requests sent to a real HTTP server (libmicrohttpd in its own
   thread, as the owner) over loopback from the event loop: method,
   target, body and end-to-end headers arrive as they were, hop-by-hop
   ones do not, X-Forwarded-For carries the client and the fleet header
   verifies for it; the owner's status and headers come back, its
   hop-by-hop headers dropped, then its body streamed: a body far past
   the window arrives whole while the call never holds more than the
   window (the owner paused while nobody reads), an owner breaking off
   mid-body is a read error, not an end; an owner down is -ECONNREFUSED,
   a silent one -ETIMEDOUT within the timeout (before its head, or in
   the middle of its body), a head over the caps -E2BIG. */
#include "../../gateway/fleet/forward.c"

#include <errno.h>
#include <netinet/in.h>
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
#include <curl/curl.h>
#include <microhttpd.h>

#include "buf.h"
#include "ev.h"
#include "fleetauth.h"
#include "timeutil.h"

/* ---- what the test reads of forward.c, which it includes ---- */

/* Body bytes the call holds now (at most FORWARD_WINDOW and one chunk). */
static size_t forward_buffered(const struct forward_call *c)
{
	return buf_size(&c->window);
}

#define SECRET "fleet-secret-fleet-secret-fleet-secret"

/* What the owner saw of the last request (written by its thread, read
   after the answer came back). */
struct seen {
	pthread_mutex_t mu;
	char method[16], url[256], xff[64], custom[64], connection[64], body[64];
	int verified;
	int keep_alive_seen;
};

static struct fleetauth owner_key;

#define HUGE_BYTES   (8u << 20)
#define BROKEN_AFTER (100u * 1024)

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 7 % 251);
}

/* /huge: HUGE_BYTES of pattern; /broken*: BROKEN_AFTER of them, then the
   owner breaks off. */
static ssize_t owner_body(void *cls, uint64_t pos, char *out, size_t max)
{
	uint64_t end = cls ? BROKEN_AFTER : HUGE_BYTES;

	if (pos >= end)
		return cls ? MHD_CONTENT_READER_END_WITH_ERROR
			   : MHD_CONTENT_READER_END_OF_STREAM;
	if (max > end - pos)
		max = end - pos;
	for (size_t i = 0; i < max; i++)
		out[i] = (char)pattern(pos + i);
	return (ssize_t)max;
}

static struct MHD_Response *owner_answer(const char *url)
{
	static const char big[2000];
	static int broken = 1;

	if (strcmp(url, "/huge") == 0)
		return MHD_create_response_from_callback(HUGE_BYTES, 32 * 1024,
							 owner_body, NULL, NULL);
	if (strcmp(url, "/broken") == 0)
		return MHD_create_response_from_callback(HUGE_BYTES, 32 * 1024,
							 owner_body, &broken, NULL);
	if (strcmp(url, "/broken-chunked") == 0)
		return MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024,
							 owner_body, &broken, NULL);
	if (strcmp(url, "/big") == 0)
		return MHD_create_response_from_buffer(sizeof(big), (void *)big,
						       MHD_RESPMEM_PERSISTENT);
	return MHD_create_response_from_buffer(7, "{\"a\":1}", MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result owner(void *cls, struct MHD_Connection *c, const char *url,
			     const char *method, const char *version, const char *data,
			     size_t *data_size, void **req_cls)
{
	struct seen *s = cls;
	struct MHD_Response *r;
	const char *v;
	enum MHD_Result ok;

	if (!*req_cls) {
		*req_cls = s;
		return MHD_YES;
	}
	pthread_mutex_lock(&s->mu);
	if (*data_size) {
		snprintf(s->body, sizeof(s->body), "%.*s", (int)*data_size, data);
		*data_size = 0;
		pthread_mutex_unlock(&s->mu);
		return MHD_YES;
	}
	snprintf(s->method, sizeof(s->method), "%s", method);
	snprintf(s->url, sizeof(s->url), "%s", url);
	v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Forwarded-For");
	snprintf(s->xff, sizeof(s->xff), "%s", v ? v : "");
	v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Custom");
	snprintf(s->custom, sizeof(s->custom), "%s", v ? v : "");
	s->keep_alive_seen =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Keep-Alive") != NULL;
	v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, FLEETAUTH_HEADER);
	s->verified = fleetauth_verify(&owner_key, time_now_ms() / 1000, v, method, url,
				       s->xff) == 0;
	pthread_mutex_unlock(&s->mu);
	r = owner_answer(url);
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "X-Owner", "yes");
	MHD_add_response_header(r, "Trailer", "X-Nothing");
	if (strcmp(url, "/many-headers") == 0)
		for (int i = 0; i < FORWARD_HEADERS_MAX + 1; i++) {
			char name[32];

			snprintf(name, sizeof(name), "X-H%d", i);
			MHD_add_response_header(r, name, "v");
		}
	ok = MHD_queue_response(c, strncmp(url, "/agents", 7) == 0 ? 418 : 200, r);
	MHD_destroy_response(r);
	return ok;
}

struct fx {
	struct seen seen;
	struct MHD_Daemon *mhd;
	char url[64];
	struct ev_loop *loop;
	struct ev_timer *guard;
	struct forward *f;
	struct forward_call *call;
	/* the answer */
	int done, rc;
	long status;
	int64_t length;
	char x_owner[16], content_type[64];
	int trailer_seen;
	/* its body */
	struct buf body;
	int hold, draining, full_ticks;
	long end_rc;
	struct ev_timer *reader;
	size_t most_held;
};

static void guard_cb(struct ev_timer *t, void *user)
{
	fail_msg("the forwarded request did not end");
}

static void fwd_new(struct fx *x, long timeout_ms)
{
	struct fleetauth k;
	struct forward_opts o = {
	    .auth = &k, .connect_timeout_ms = timeout_ms, .timeout_ms = timeout_ms};
	char err[128];

	assert_int_equal(fleetauth_init(&k, SECRET, strlen(SECRET)), 0);
	x->loop = ev_loop_new();
	x->guard = ev_timer_new(x->loop, 60000, 0, guard_cb, x);
	x->f = forward_new(x->loop, &o, err, sizeof(err));
	assert_non_null(x->f);
}

static int setup_fx(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	const union MHD_DaemonInfo *di;

	pthread_mutex_init(&x->seen.mu, NULL);
	buf_init(&x->body);
	assert_int_equal(fleetauth_init(&owner_key, SECRET, strlen(SECRET)), 0);
	x->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0,
				  NULL, NULL, owner, &x->seen, MHD_OPTION_END);
	assert_non_null(x->mhd);
	di = MHD_get_daemon_info(x->mhd, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(x->url, sizeof(x->url), "http://127.0.0.1:%u/", di->port);
	*state = x;
	return 0;
}

static int teardown_fx(void **state)
{
	struct fx *x = *state;

	forward_cancel(x->call);
	forward_free(x->f);
	ev_timer_free(x->guard);
	ev_timer_free(x->reader);
	buf_free(&x->body);
	ev_loop_free(x->loop);
	MHD_stop_daemon(x->mhd);
	pthread_mutex_destroy(&x->seen.mu);
	free(x);
	return 0;
}

/* Reads what the call has, up to cap bytes: 1 once the body ended. */
static int drain(struct fx *x, size_t cap)
{
	uint8_t chunk[16384];
	long n = 1;

	if (forward_buffered(x->call) > x->most_held)
		x->most_held = forward_buffered(x->call);
	x->draining = 1;
	while (cap && (n = forward_read(x->call, chunk,
					cap < sizeof(chunk) ? cap : sizeof(chunk))) > 0) {
		buf_append(&x->body, chunk, (size_t)n);
		cap -= (size_t)n;
	}
	x->draining = 0;
	if (n > 0 || n == -EAGAIN)
		return 0;
	x->end_rc = n;
	x->done = 1;
	ev_loop_stop(x->loop);
	return 1;
}

static void on_body_ready(void *user)
{
	struct fx *x = user;

	if (forward_buffered(x->call) > x->most_held)
		x->most_held = forward_buffered(x->call);
	if (!x->hold && !x->draining)
		drain(x, SIZE_MAX);
}

static void on_answer(void *user, const struct forward_answer *a)
{
	struct fx *x = user;

	x->rc = a->rc;
	x->status = a->status;
	x->length = a->length;
	for (size_t i = 0; i < a->n_headers; i++) {
		if (strcasecmp(a->headers[i].name, "X-Owner") == 0)
			snprintf(x->x_owner, sizeof(x->x_owner), "%s",
				 a->headers[i].value);
		if (strcasecmp(a->headers[i].name, "Content-Type") == 0)
			snprintf(x->content_type, sizeof(x->content_type), "%s",
				 a->headers[i].value);
		if (strcasecmp(a->headers[i].name, "Trailer") == 0)
			x->trailer_seen = 1;
	}
	if (a->rc < 0) {
		assert_non_null(a->err);
		x->call = NULL; /* freed on return */
		x->done = 1;
		ev_loop_stop(x->loop);
	}
}

static void run(struct fx *x, const char *url, const char *method, const char *target,
		const char *body)
{
	static const struct forward_header hs[] = {
	    {"X-Custom", "kept"},
	    {"Keep-Alive", "timeout=5"},
	    {"X-Forwarded-For", "6.6.6.6"},
	    {FLEETAUTH_HEADER, "v1 forged"},
	};
	struct forward_request rq = {.owner_url = url,
				     .method = method,
				     .target = target,
				     .headers = hs,
				     .n_headers = 4,
				     .client = "192.0.2.7",
				     .body = body,
				     .body_len = body ? strlen(body) : 0};

	x->call = forward_http(x->f, &rq, on_answer, on_body_ready, x);
	assert_non_null(x->call);
	assert_int_equal(x->done, 0); /* never from inside forward_http */
	ev_loop_run(x->loop);
	assert_int_equal(x->done, 1);
}

static void test_request_and_answer(void **state)
{
	struct fx *x = *state;
	struct forward_stats st;
	struct buf text;

	fwd_new(x, 10000);
	run(x, x->url, "POST", "/agents/a/sessions?x=1", "hello");
	assert_int_equal(x->rc, 0);
	assert_int_equal(x->status, 418);
	assert_int_equal(x->end_rc, 0);
	assert_int_equal(x->length, 7);
	assert_int_equal(buf_size(&x->body), 7);
	assert_memory_equal(buf_head(&x->body), "{\"a\":1}", 7);
	assert_string_equal(x->x_owner, "yes");
	assert_string_equal(x->content_type, "application/json");
	assert_int_equal(x->trailer_seen, 0);
	pthread_mutex_lock(&x->seen.mu);
	assert_string_equal(x->seen.method, "POST");
	assert_string_equal(x->seen.url, "/agents/a/sessions");
	assert_string_equal(x->seen.body, "hello");
	assert_string_equal(x->seen.custom, "kept");
	assert_int_equal(x->seen.keep_alive_seen, 0);
	/* The client's own X-Forwarded-For and fleet header are replaced. */
	assert_string_equal(x->seen.xff, "192.0.2.7");
	pthread_mutex_unlock(&x->seen.mu);
	forward_get_stats(x->f, &st);
	assert_int_equal(st.requests, 1);
	assert_int_equal(st.in_flight, 0);
	assert_int_equal(st.failed, 0);
	buf_init(&text);
	forward_metrics(x->f, &text);
	buf_append(&text, "", 1);
	assert_non_null(strstr((const char *)buf_head(&text),
			       "\nptygate_forwarded_requests_total 1\n"));
	assert_non_null(strstr((const char *)buf_head(&text),
			       "# TYPE ptygate_relayed_connections gauge\n"));
	buf_reset(&text);
	forward_metrics(NULL, &text);
	buf_append(&text, "", 1);
	assert_non_null(strstr((const char *)buf_head(&text),
			       "\nptygate_forwarded_requests_total 0\n"));
	buf_free(&text);
}

static void test_signature_verifies(void **state)
{
	struct fx *x = *state;

	fwd_new(x, 10000);
	/* MHD hands its handler the path without the query: sign a target
	   that has none so the owner here checks exactly what was sent. */
	run(x, x->url, "DELETE", "/agents/a/sessions/s1", NULL);
	assert_int_equal(x->rc, 0);
	pthread_mutex_lock(&x->seen.mu);
	assert_string_equal(x->seen.method, "DELETE");
	assert_int_equal(x->seen.verified, 1);
	pthread_mutex_unlock(&x->seen.mu);
}

static void test_head_over_cap(void **state)
{
	struct fx *x = *state;

	fwd_new(x, 10000);
	run(x, x->url, "GET", "/many-headers", NULL);
	assert_int_equal(x->rc, -E2BIG);
}

/* Nobody reads until the window is full; then a check that it stays
   so, then a slow reader takes the rest. */
static void on_reader(struct ev_timer *t, void *user)
{
	struct fx *x = user;
	size_t held = x->call ? forward_buffered(x->call) : 0;

	assert_true(held <= FORWARD_WINDOW + CURL_MAX_WRITE_SIZE);
	if (x->hold && held + CURL_MAX_WRITE_SIZE < FORWARD_WINDOW)
		return; /* the owner is still filling it */
	if (x->hold && ++x->full_ticks < 20)
		return; /* full: it stays full while nobody reads */
	x->hold = 0;
	drain(x, 64 * 1024);
}

static void test_big_body_streams_through_the_window(void **state)
{
	struct fx *x = *state;
	const uint8_t *p;

	fwd_new(x, 10000);
	x->hold = 1;
	x->reader = ev_timer_new(x->loop, 1, 1, on_reader, x);
	run(x, x->url, "GET", "/huge", NULL);
	assert_int_equal(x->rc, 0);
	assert_int_equal(x->status, 200);
	assert_int_equal(x->length, HUGE_BYTES);
	assert_int_equal(x->end_rc, 0);
	assert_int_equal(x->full_ticks, 20); /* the window filled before any read */
	assert_int_equal(buf_size(&x->body), HUGE_BYTES);
	assert_true(x->most_held <= FORWARD_WINDOW + CURL_MAX_WRITE_SIZE);
	p = buf_head(&x->body);
	for (uint64_t i = 0; i < HUGE_BYTES; i++)
		if (p[i] != pattern(i))
			fail_msg("byte %llu differs", (unsigned long long)i);
}

static void broken_body(struct fx *x, const char *target)
{
	fwd_new(x, 10000);
	run(x, x->url, "GET", target, NULL);
	assert_int_equal(x->rc, 0);
	assert_int_equal(x->status, 200);
	assert_true(x->end_rc < 0);
	assert_int_equal(buf_size(&x->body), BROKEN_AFTER);
}

static void test_owner_breaks_off_mid_body(void **state)
{
	struct fx *x = *state;

	broken_body(x, "/broken");
	assert_int_equal(x->length, HUGE_BYTES);
}

static void test_owner_breaks_off_mid_chunked_body(void **state)
{
	struct fx *x = *state;

	broken_body(x, "/broken-chunked");
	assert_int_equal(x->length, -1);
}

static void test_owner_down(void **state)
{
	struct fx *x = *state;
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char url[64];
	int64_t t0;

	/* A port just bound and closed: nothing listens there. */
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", ntohs(a.sin_port));
	fwd_new(x, 10000);
	t0 = time_mono_ms();
	run(x, url, "GET", "/agents/a/sessions", NULL);
	assert_int_equal(x->rc, -ECONNREFUSED);
	assert_true(time_mono_ms() - t0 < 10000);
}

static void test_owner_silent(void **state)
{
	struct fx *x = *state;
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct forward_stats st;
	char url[64];

	/* Listening but never answering: the connect succeeds (the backlog),
	   the answer never comes. */
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", ntohs(a.sin_port));
	fwd_new(x, 300);
	run(x, url, "GET", "/agents/a/sessions", NULL);
	assert_int_equal(x->rc, -ETIMEDOUT);
	forward_get_stats(x->f, &st);
	assert_int_equal(st.failed, 1);
	close(fd);
}

/* An owner on the test's own loop: a head promising 1000 bytes, 10 of
   them, then silence on a connection kept open. */
struct stall {
	struct ev_io *io;
	int conn;
};

static void on_stall_accept(struct ev_io *io, int fd, unsigned events, void *user)
{
	static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
				     "0123456789";
	struct stall *st = user;

	st->conn = accept(fd, NULL, NULL);
	assert_true(st->conn >= 0);
	assert_int_equal(write(st->conn, answer, sizeof(answer) - 1), sizeof(answer) - 1);
	ev_io_set(io, 0);
}

static void test_owner_silent_mid_body(void **state)
{
	struct fx *x = *state;
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct stall st = {.conn = -1};
	char url[64];

	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", ntohs(a.sin_port));
	fwd_new(x, 300);
	st.io = ev_io_new(x->loop, fd, EV_READ, on_stall_accept, &st);
	run(x, url, "GET", "/agents/a/recording", NULL);
	assert_int_equal(x->rc, 0);
	assert_int_equal(x->length, 1000);
	assert_int_equal(buf_size(&x->body), 10);
	assert_int_equal(x->end_rc, -ETIMEDOUT);
	ev_io_free(st.io);
	close(st.conn);
	close(fd);
}

static void on_never(void *user, const struct forward_answer *a)
{
	fail_msg("a cancelled call answered");
}

static void on_no_body(void *user)
{
	fail_msg("a cancelled call read");
}

static void test_cancel_and_bad_target(void **state)
{
	struct fx *x = *state;
	struct forward_request rq = {
	    .owner_url = x->url, .method = "GET", .target = "/agents/a/sessions"};
	struct forward_call *c;

	fwd_new(x, 10000);
	c = forward_http(x->f, &rq, on_never, on_no_body, x);
	assert_non_null(c);
	forward_cancel(c);
	rq.target = "no-slash";
	assert_null(forward_http(x->f, &rq, on_never, on_no_body, x));
	/* A call left in flight is dropped by forward_free (teardown_fx). */
	rq.target = "/agents/a/sessions";
	assert_non_null(forward_http(x->f, &rq, on_never, on_no_body, x));
}

static void test_hop_headers(void **state)
{
	assert_true(forward_hop_header("connection"));
	assert_true(forward_hop_header("Transfer-Encoding"));
	assert_true(forward_hop_header("x-forwarded-for"));
	assert_true(forward_hop_header(FLEETAUTH_HEADER));
	assert_false(forward_hop_header("Authorization"));
	assert_false(forward_hop_header("Content-Type"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_request_and_answer, setup_fx,
					    teardown_fx),
	    cmocka_unit_test_setup_teardown(test_signature_verifies, setup_fx,
					    teardown_fx),
	    cmocka_unit_test_setup_teardown(test_head_over_cap, setup_fx, teardown_fx),
	    cmocka_unit_test_setup_teardown(test_big_body_streams_through_the_window,
					    setup_fx, teardown_fx),
	    cmocka_unit_test_setup_teardown(test_owner_breaks_off_mid_body, setup_fx,
					    teardown_fx),
	    cmocka_unit_test_setup_teardown(test_owner_breaks_off_mid_chunked_body,
					    setup_fx, teardown_fx),
	    cmocka_unit_test_setup_teardown(test_owner_down, setup_fx, teardown_fx),
	    cmocka_unit_test_setup_teardown(test_owner_silent, setup_fx, teardown_fx),
	    cmocka_unit_test_setup_teardown(test_owner_silent_mid_body, setup_fx,
					    teardown_fx),
	    cmocka_unit_test_setup_teardown(test_cancel_and_bad_target, setup_fx,
					    teardown_fx),
	    cmocka_unit_test(test_hop_headers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
