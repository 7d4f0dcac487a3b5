/* unit: gateway */
/* metrics: the exposition text line by line: every family has its HELP
   and TYPE lines right before its samples, values land in the right
   family, and instance label values are escaped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "metrics.h"
#include "routes.h"
#include "sidestats.h"

static char *render(const struct metrics *m, const struct metrics_link *l, unsigned n)
{
	struct buf b = BUF_INIT;
	size_t len;

	metrics_render(m, l, n, &b);
	return (char *)buf_steal(&b, &len);
}

/* 1 when text holds line as a whole line. */
static int has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; (p = strstr(p, line)) != NULL; p += n)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return 1;
	return 0;
}

static void test_values(void **state)
{
	struct metrics m = {0};
	struct metrics_link links[] = {{"inst-1", 1, 0, 0, 0, NULL},
				       {"inst-2", 0, 1, 0, 0, NULL}};
	char *t;

	m.conns_controller = 2;
	m.conns_observer = 5;
	m.conns_pending = 1;
	m.queue_bytes = 4096;
	m.queue_bytes_max = 3000;
	m.frames_out = 11;
	m.bytes_out = 12345678901ull;
	m.frames_in = 13;
	m.replays = 14;
	m.replays_out_of_range = 15;
	m.lag_events = 16;
	m.auth_failures = 17;
	m.upgrades_refused = 18;
	m.link_reconnects = 19;
	m.heartbeat_timeouts = 20;
	m.http_requests = 21;
	m.conns_setup_failed = 22;
	m.backpressure_events = 23;
	m.queue_stall_closes = 24;
	m.ops_throttled = 25;
	m.link_instance_mismatches = 26;
	m.link_violations = 27;
	m.link_queue_overflows = 28;
	m.fanout_writes_cut = 29;
	m.conns_refused_address = 30;
	m.conns_refused_full = 31;
	m.conns_dropped = 32;
	m.heads_evicted = 33;
	m.close_dropped_bytes = 34;
	t = render(&m, links, 2);
	static const char *const lines[] = {
	    "ptygate_connections{role=\"controller\"} 2",
	    "ptygate_connections{role=\"observer\"} 5",
	    "ptygate_connections{role=\"pending\"} 1",
	    "ptygate_fanout_queue_bytes 4096",
	    "ptygate_fanout_queue_bytes_max 3000",
	    "ptygate_frames_out_total 11",
	    "ptygate_bytes_out_total 12345678901",
	    "ptygate_frames_in_total 13",
	    "ptygate_replays_total 14",
	    "ptygate_replays_out_of_range_total 15",
	    "ptygate_lag_events_total 16",
	    "ptygate_auth_failures_total 17",
	    "ptygate_upgrades_refused_total 18",
	    "ptygate_link_reconnects_total 19",
	    "ptygate_heartbeat_timeouts_total 20",
	    "ptygate_http_requests_total 21",
	    "ptygate_conn_setup_failures_total 22",
	    "ptygate_backpressure_events_total 23",
	    "ptygate_queue_stall_closes_total 24",
	    "ptygate_ops_throttled_total 25",
	    "ptygate_link_instance_mismatches_total 26",
	    "ptygate_link_violations_total 27",
	    "ptygate_link_queue_overflows_total 28",
	    "ptygate_fanout_writes_cut_total 29",
	    "ptygate_conn_refusals_address_total 30",
	    "ptygate_conn_refusals_full_total 31",
	    "ptygate_conn_drops_total 32",
	    "ptygate_head_evictions_total 33",
	    "ptygate_close_dropped_bytes_total 34",
	    "ptygate_link_up{instance=\"inst-1\"} 1",
	    "ptygate_link_up{instance=\"inst-2\"} 0",
	    "# TYPE ptygate_connections gauge",
	    "# TYPE ptygate_fanout_queue_bytes gauge",
	    "# TYPE ptygate_frames_out_total counter",
	    "# TYPE ptygate_link_up gauge",
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		if (!has_line(t, lines[i]))
			fail_msg("missing line: %s\n%s", lines[i], t);
	assert_int_equal(t[strlen(t) - 1], '\n');
	free(t);
}

/* Every sample's family has # HELP then # TYPE before its first sample,
   and no family is announced twice. */
static void test_structure(void **state)
{
	struct metrics m = {0};
	struct metrics_link link = {"x", 1, 0, 0, 0, NULL};
	char *t = render(&m, &link, 1), *save = NULL, *line;
	char announced[64][80] = {{0}}, last_help[80] = "";
	int n_ann = 0, samples = 0;

	for (line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[80];

		if (!strncmp(line, "# HELP ", 7)) {
			sscanf(line + 7, "%79s", last_help);
			for (int i = 0; i < n_ann; i++)
				assert_string_not_equal(announced[i], last_help);
			continue;
		}
		if (!strncmp(line, "# TYPE ", 7)) {
			char type[16];
			assert_int_equal(sscanf(line + 7, "%79s %15s", name, type), 2);
			assert_string_equal(name, last_help);
			assert_true(!strcmp(type, "counter") || !strcmp(type, "gauge"));
			if (!strcmp(type, "counter"))
				assert_non_null(strstr(name, "_total"));
			assert_true(n_ann < 64);
			snprintf(announced[n_ann++], sizeof(announced[0]), "%s", name);
			continue;
		}
		assert_int_equal(sscanf(line, "%79[^{ ]", name), 1);
		assert_true(n_ann > 0);
		assert_string_equal(name, announced[n_ann - 1]);
		assert_int_equal(strncmp(name, "ptygate_", 8), 0);
		samples++;
	}
	/* connections, the families, the refusals by reason, the HTTP
	   refusals by status, the instances by kind, linked, and per instance link_up,
	   sessions and clients */
	assert_int_equal(samples, 3 + 40 + (LINK_REFUSAL_N - 1) + 3 + 2 + 1 + 3);
	free(t);
}

static void test_instance_gauges(void **state)
{
	struct metrics m = {0};
	struct metrics_link links[] = {
	    {"a", 1, 0, 2, 5, NULL}, {"b", 0, 1, 0, 0, NULL}, {"c", 1, 1, 1, 1, NULL}};
	char *t = render(&m, links, 3);

	assert_true(has_line(t, "ptygate_instances_linked 2"));
	assert_true(has_line(t, "ptygate_instances{kind=\"configured\"} 1"));
	assert_true(has_line(t, "ptygate_instances{kind=\"registered\"} 2"));
	assert_true(has_line(t, "ptygate_instance_sessions{instance=\"a\"} 2"));
	assert_true(has_line(t, "ptygate_instance_clients{instance=\"a\"} 5"));
	assert_true(has_line(t, "ptygate_instance_sessions{instance=\"b\"} 0"));
	assert_true(has_line(t, "ptygate_instance_clients{instance=\"c\"} 1"));
	free(t);
}

static char *render_latency(const struct metrics *m)
{
	struct buf b = BUF_INIT;
	size_t len;

	metrics_render_latency(m, &b);
	return (char *)buf_steal(&b, &len);
}

/* Buckets are cumulative, le in seconds, +Inf equals the count, the sum
   is exact, and a bound is inclusive. */
static void test_histogram(void **state)
{
	static struct metrics m; /* large: the histograms */
	char *t;

	memset(&m, 0, sizeof(m));
	metrics_observe(&m.http_latency[ROUTE_SESSIONS], 300);	/* 0.3 ms */
	metrics_observe(&m.http_latency[ROUTE_SESSIONS], 1000); /* on the 1 ms bound */
	metrics_observe(&m.http_latency[ROUTE_SESSIONS], 7000);
	metrics_observe(&m.http_latency[ROUTE_SESSIONS], 60000000); /* past the last */
	metrics_observe(&m.http_latency[0], -5);		    /* a clock step: 0 */
	metrics_observe(&m.attach_latency, 40000);
	t = render_latency(&m);
	assert_non_null(
	    strstr(t, "# TYPE ptygate_http_request_duration_seconds histogram\n"));
	assert_non_null(strstr(t, "# TYPE ptygate_attach_duration_seconds histogram\n"));
	assert_true(has_line(t, "ptygate_http_request_duration_seconds_bucket{route="
				"\"sessions\",le=\"0.001000\"} 2"));
	assert_true(has_line(t, "ptygate_http_request_duration_seconds_bucket{route="
				"\"sessions\",le=\"0.005000\"} 2"));
	assert_true(has_line(t, "ptygate_http_request_duration_seconds_bucket{route="
				"\"sessions\",le=\"0.010000\"} 3"));
	assert_true(has_line(t, "ptygate_http_request_duration_seconds_bucket{route="
				"\"sessions\",le=\"30.000000\"} 3"));
	assert_true(has_line(t, "ptygate_http_request_duration_seconds_bucket{route="
				"\"sessions\",le=\"+Inf\"} 4"));
	assert_true(has_line(
	    t,
	    "ptygate_http_request_duration_seconds_sum{route=\"sessions\"} 60.008300"));
	assert_true(has_line(
	    t, "ptygate_http_request_duration_seconds_count{route=\"sessions\"} 4"));
	assert_true(has_line(t, "ptygate_http_request_duration_seconds_bucket{route="
				"\"other\",le=\"0.001000\"} 1"));
	assert_true(has_line(
	    t, "ptygate_http_request_duration_seconds_sum{route=\"other\"} 0.000000"));
	assert_true(has_line(
	    t, "ptygate_http_request_duration_seconds_count{route=\"static\"} 0"));
	assert_true(
	    has_line(t, "ptygate_attach_duration_seconds_bucket{le=\"0.025000\"} 0"));
	assert_true(
	    has_line(t, "ptygate_attach_duration_seconds_bucket{le=\"0.050000\"} 1"));
	assert_true(has_line(t, "ptygate_attach_duration_seconds_sum 0.040000"));
	assert_true(has_line(t, "ptygate_attach_duration_seconds_count 1"));
	free(t);
}

/* Observed once: the first moment clears the start, later ones add none. */
static void test_observe_since(void **state)
{
	struct metrics_hist h;

	memset(&h, 0, sizeof(h));
	int64_t since = 0;

	metrics_observe_since(&h, &since);
	assert_int_equal(h.count, 0);
	since = 1; /* long ago on the monotonic clock */
	metrics_observe_since(&h, &since);
	metrics_observe_since(&h, &since);
	assert_int_equal(h.count, 1);
	assert_int_equal(since, 0);
	assert_true(h.sum_us > 0);
}

static void test_process(void **state)
{
	struct procstat p = {.cpu_ms = 1234,
			     .rss_bytes = 5 << 20,
			     .vsize_bytes = 77 << 20,
			     .start_time_ms = 1764790000250,
			     .open_fds = 9,
			     .max_fds = 1024};
	struct buf b = BUF_INIT;
	size_t len;
	char *t;

	metrics_render_process(&p, &b);
	t = (char *)buf_steal(&b, &len);
	assert_true(has_line(t, "# TYPE process_cpu_seconds_total counter"));
	assert_true(has_line(t, "process_cpu_seconds_total 1.234000"));
	assert_true(has_line(t, "process_resident_memory_bytes 5242880"));
	assert_true(has_line(t, "process_virtual_memory_bytes 80740352"));
	assert_true(has_line(t, "process_open_fds 9"));
	assert_true(has_line(t, "process_max_fds 1024"));
	assert_true(has_line(t, "process_start_time_seconds 1764790000.250000"));
	assert_non_null(
	    strstr(t, "ptygate_build_info{version=\"" PTG_VERSION "\",commit=\""));
	free(t);
	metrics_render_process(NULL, &b);
	t = (char *)buf_steal(&b, &len);
	assert_non_null(strstr(t, "ptygate_build_info{"));
	assert_null(strstr(t, "process_"));
	free(t);
}

static void test_http_refusals(void **state)
{
	struct metrics m = {0};
	char *t;

	for (unsigned status = 100; status < 600; status++)
		metrics_count_refusal(&m, status);
	metrics_count_refusal(&m, 403);
	t = render(&m, NULL, 0);
	assert_true(has_line(t, "ptygate_http_refusals_total{status=\"401\"} 1"));
	assert_true(has_line(t, "ptygate_http_refusals_total{status=\"403\"} 2"));
	assert_true(has_line(t, "ptygate_http_refusals_total{status=\"429\"} 1"));
	free(t);
}

static char *render_sidecars(const struct metrics_link *l, unsigned n)
{
	struct buf b = BUF_INIT;
	size_t len;

	metrics_render_sidecars(l, n, &b);
	return (char *)buf_steal(&b, &len);
}

/* A current report under its instance, escaped; an instance without one
   shows only sidecar_up 0. */
static void test_sidecar_families(void **state)
{
	struct sidestats s;
	struct metrics_link links[] = {{"vm\"1", 1, 0, 0, 0, &s},
				       {"vm-2", 1, 0, 0, 0, NULL}};
	char *t;

	memset(&s, 0, sizeof(s));
	s.have = 1;
	snprintf(s.last.version, sizeof(s.last.version), "9.9.9");
	snprintf(s.last.commit, sizeof(s.last.commit), "abc\\def");
	s.last.uptime_ms = 61005;
	s.last.sessions_running = 3;
	s.last.sessions_exited = 1;
	s.last.attachments = 4;
	s.last.pty_bytes = 12345678901ull;
	s.last.pty_input_bytes = 4242;
	s.last.state_dir = 1;
	s.last.framelog_bytes = 777;
	s.last.rss_bytes = 2 << 20;
	s.last.cpu_ms = 1500;
	s.last.open_fds = 11;
	s.last.at_ms = 1764790000123;
	t = render_sidecars(links, 2);
	assert_true(has_line(t, "ptygate_sidecar_up{instance=\"vm\\\"1\"} 1"));
	assert_true(has_line(t, "ptygate_sidecar_up{instance=\"vm-2\"} 0"));
	assert_true(has_line(
	    t, "ptygate_sidecar_build_info{instance=\"vm\\\"1\",version=\"9.9.9\","
	       "commit=\"abc\\\\def\"} 1"));
	assert_true(has_line(
	    t, "ptygate_sidecar_sessions{instance=\"vm\\\"1\",state=\"running\"} 3"));
	assert_true(has_line(
	    t, "ptygate_sidecar_sessions{instance=\"vm\\\"1\",state=\"exited\"} 1"));
	assert_true(
	    has_line(t, "ptygate_sidecar_uptime_seconds{instance=\"vm\\\"1\"} 61.005"));
	assert_true(has_line(t, "ptygate_sidecar_attachments{instance=\"vm\\\"1\"} 4"));
	assert_true(has_line(
	    t, "ptygate_sidecar_pty_bytes_total{instance=\"vm\\\"1\"} 12345678901"));
	assert_true(has_line(
	    t, "ptygate_sidecar_pty_input_bytes_total{instance=\"vm\\\"1\"} 4242"));
	assert_true(has_line(t, "ptygate_sidecar_state_dir{instance=\"vm\\\"1\"} 1"));
	assert_true(
	    has_line(t, "ptygate_sidecar_framelog_bytes{instance=\"vm\\\"1\"} 777"));
	assert_true(has_line(
	    t, "ptygate_sidecar_resident_memory_bytes{instance=\"vm\\\"1\"} 2097152"));
	assert_true(
	    has_line(t, "ptygate_sidecar_cpu_seconds_total{instance=\"vm\\\"1\"} 1.500"));
	assert_true(has_line(t, "ptygate_sidecar_open_fds{instance=\"vm\\\"1\"} 11"));
	assert_true(has_line(
	    t, "ptygate_sidecar_last_report_timestamp_seconds{instance=\"vm\\\"1\"} "
	       "1764790000.123"));
	assert_null(strstr(t, "_sessions{instance=\"vm-2\""));
	assert_null(strstr(t, "_pty_bytes_total{instance=\"vm-2\""));
	assert_non_null(strstr(t, "# TYPE ptygate_sidecar_pty_bytes_total counter\n"));
	free(t);
	s.have = 0; /* the last question went unanswered */
	t = render_sidecars(links, 1);
	assert_true(has_line(t, "ptygate_sidecar_up{instance=\"vm\\\"1\"} 0"));
	assert_null(strstr(t, "ptygate_sidecar_build_info{"));
	free(t);
}

/* What a sidecar may send: a version or commit up to 64 bytes. */
static void test_sidecar_caps(void **state)
{
	Ptg__SidecarStats st = PTG__SIDECAR_STATS__INIT;
	char long_text[SIDESTATS_TEXT_MAX + 2];

	memset(long_text, 'v', sizeof(long_text) - 1);
	long_text[SIDESTATS_TEXT_MAX] = '\0';
	st.version = long_text;
	assert_null(sidestats_over_caps(&st));
	long_text[SIDESTATS_TEXT_MAX] = 'v';
	long_text[SIDESTATS_TEXT_MAX + 1] = '\0';
	assert_non_null(sidestats_over_caps(&st));
	st.version = "1";
	st.commit = long_text;
	assert_non_null(sidestats_over_caps(&st));
}

static void test_label_escaping(void **state)
{
	struct metrics m = {0};
	struct metrics_link links[] = {{"a\"b\\c\nd", 1, 0, 0, 0, NULL},
				       {"", 0, 0, 0, 0, NULL}};
	char *t = render(&m, links, 2);

	assert_true(has_line(t, "ptygate_link_up{instance=\"a\\\"b\\\\c\\nd\"} 1"));
	assert_true(has_line(t, "ptygate_link_up{instance=\"\"} 0"));
	free(t);
	t = render(&m, NULL, 0);
	assert_null(strstr(t, "ptygate_link_up{"));
	assert_non_null(strstr(t, "# TYPE ptygate_link_up gauge\n"));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_values),
	    cmocka_unit_test(test_structure),
	    cmocka_unit_test(test_label_escaping),
	    cmocka_unit_test(test_instance_gauges),
	    cmocka_unit_test(test_histogram),
	    cmocka_unit_test(test_observe_since),
	    cmocka_unit_test(test_process),
	    cmocka_unit_test(test_http_refusals),
	    cmocka_unit_test(test_sidecar_families),
	    cmocka_unit_test(test_sidecar_caps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
