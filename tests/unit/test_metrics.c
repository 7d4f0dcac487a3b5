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
	struct metrics_link links[] = {{"inst-1", 1, 0}, {"inst-2", 0, 1}};
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
	struct metrics_link link = {"x", 1, 0};
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
	/* connections, the families, the refusals by reason, the instances by
	   kind, link_up */
	assert_int_equal(samples, 3 + 38 + (LINK_REFUSAL_N - 1) + 2 + 1);
	free(t);
}

static void test_label_escaping(void **state)
{
	struct metrics m = {0};
	struct metrics_link links[] = {{"a\"b\\c\nd", 1, 0}, {"", 0, 0}};
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
