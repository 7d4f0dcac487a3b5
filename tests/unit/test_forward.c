/* unit: gateway */
/* forward: requests sent to a real HTTP server (libmicrohttpd in its own
   thread, as the owner) over loopback from the event loop: method,
   target, body and end-to-end headers arrive as they were, hop-by-hop
   ones do not, X-Forwarded-For carries the client and the fleet header
   verifies for it; the owner's status, headers and body come back, its
   hop-by-hop headers dropped; an owner down is -ECONNREFUSED, a silent
   one -ETIMEDOUT within the timeout, an answer over the cap -E2BIG. */
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
#include <microhttpd.h>

#include "buf.h"
#include "ev.h"
#include "fleetauth.h"
#include "forward.h"
#include "timeutil.h"

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

static enum MHD_Result owner(void *cls, struct MHD_Connection *c, const char *url,
			     const char *method, const char *version, const char *data,
			     size_t *data_size, void **req_cls)
{
	struct seen *s = cls;
	struct MHD_Response *r;
	const char *v;
	static const char big[2000];
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
	if (strcmp(url, "/big") == 0)
		r = MHD_create_response_from_buffer(sizeof(big), (void *)big,
						    MHD_RESPMEM_PERSISTENT);
	else
		r = MHD_create_response_from_buffer(7, "{\"a\":1}",
						    MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "X-Owner", "yes");
	MHD_add_response_header(r, "Trailer", "X-Nothing");
	ok = MHD_queue_response(c, strcmp(url, "/big") == 0 ? 200 : 418, r);
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
	/* the answer */
	int done, rc;
	long status;
	char x_owner[16], content_type[64], body[64];
	int trailer_seen;
	size_t body_len;
};

static void guard_cb(struct ev_timer *t, void *user)
{
	fail_msg("the forwarded request did not end");
}

static void fwd_new(struct fx *x, long timeout_ms, size_t body_max)
{
	struct fleetauth k;
	struct forward_opts o = {.auth = &k,
				 .connect_timeout_ms = timeout_ms,
				 .timeout_ms = timeout_ms,
				 .body_max = body_max};
	char err[128];

	assert_int_equal(fleetauth_init(&k, SECRET, strlen(SECRET)), 0);
	x->loop = ev_loop_new();
	x->guard = ev_timer_new(x->loop, 60000, 0, guard_cb, x);
	x->f = forward_new(x->loop, &o, err, sizeof(err));
	assert_non_null(x->f);
}

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	const union MHD_DaemonInfo *di;

	pthread_mutex_init(&x->seen.mu, NULL);
	assert_int_equal(fleetauth_init(&owner_key, SECRET, strlen(SECRET)), 0);
	x->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0,
				  NULL, NULL, owner, &x->seen, MHD_OPTION_END);
	assert_non_null(x->mhd);
	di = MHD_get_daemon_info(x->mhd, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(x->url, sizeof(x->url), "http://127.0.0.1:%u/", di->port);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	forward_free(x->f);
	ev_timer_free(x->guard);
	ev_loop_free(x->loop);
	MHD_stop_daemon(x->mhd);
	pthread_mutex_destroy(&x->seen.mu);
	free(x);
	return 0;
}

static void on_answer(void *user, const struct forward_answer *a)
{
	struct fx *x = user;

	x->done = 1;
	x->rc = a->rc;
	x->status = a->status;
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
	x->body_len = a->body_len;
	snprintf(x->body, sizeof(x->body), "%.*s",
		 (int)(a->body_len < 63 ? a->body_len : 63), (const char *)a->body);
	if (a->rc < 0)
		assert_non_null(a->err);
	ev_loop_stop(x->loop);
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

	assert_non_null(forward_http(x->f, &rq, on_answer, x));
	assert_int_equal(x->done, 0); /* never from inside forward_http */
	ev_loop_run(x->loop);
	assert_int_equal(x->done, 1);
}

static void test_request_and_answer(void **state)
{
	struct fx *x = *state;
	struct forward_stats st;
	struct buf text;

	fwd_new(x, 10000, 0);
	run(x, x->url, "POST", "/agents/a/sessions?x=1", "hello");
	assert_int_equal(x->rc, 0);
	assert_int_equal(x->status, 418);
	assert_string_equal(x->body, "{\"a\":1}");
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

	fwd_new(x, 10000, 0);
	/* MHD hands its handler the path without the query: sign a target
	   that has none so the owner here checks exactly what was sent. */
	run(x, x->url, "DELETE", "/agents/a/sessions/s1", NULL);
	assert_int_equal(x->rc, 0);
	pthread_mutex_lock(&x->seen.mu);
	assert_string_equal(x->seen.method, "DELETE");
	assert_int_equal(x->seen.verified, 1);
	pthread_mutex_unlock(&x->seen.mu);
}

static void test_answer_over_cap(void **state)
{
	struct fx *x = *state;

	fwd_new(x, 10000, 1000);
	run(x, x->url, "GET", "/big", NULL);
	assert_int_equal(x->rc, -E2BIG);
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
	fwd_new(x, 10000, 0);
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
	fwd_new(x, 300, 0);
	run(x, url, "GET", "/agents/a/sessions", NULL);
	assert_int_equal(x->rc, -ETIMEDOUT);
	forward_get_stats(x->f, &st);
	assert_int_equal(st.failed, 1);
	close(fd);
}

static void on_never(void *user, const struct forward_answer *a)
{
	fail_msg("a cancelled call answered");
}

static void test_cancel_and_bad_target(void **state)
{
	struct fx *x = *state;
	struct forward_request rq = {
	    .owner_url = x->url, .method = "GET", .target = "/agents/a/sessions"};
	struct forward_call *c;

	fwd_new(x, 10000, 0);
	c = forward_http(x->f, &rq, on_never, x);
	assert_non_null(c);
	forward_cancel(c);
	rq.target = "no-slash";
	assert_null(forward_http(x->f, &rq, on_never, x));
	/* A call left in flight is dropped by forward_free (teardown). */
	rq.target = "/agents/a/sessions";
	assert_non_null(forward_http(x->f, &rq, on_never, x));
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
	    cmocka_unit_test_setup_teardown(test_request_and_answer, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_signature_verifies, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_answer_over_cap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_owner_down, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_owner_silent, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cancel_and_bad_target, setup, teardown),
	    cmocka_unit_test(test_hop_headers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
