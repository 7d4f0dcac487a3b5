/* unit: gateway */
/* routes: the pure parts of the HTTP layer: path matching (percent
   decoding, dot segments, bad ids, static files), allowed methods,
   tokens in query strings, strict validation of the create body, the
   session and AgentCard JSON, URL bases, link code mapping. */
#include "../../gateway/http/routes_json.c"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "log.h"
#include "ptyws.h"
#include "routes.h"

static void match_ok(const char *target, int with_static, enum route_id id,
		     const char *inst, const char *sess)
{
	struct route_match m;
	const char *why = NULL;
	int rc = routes_match(target, with_static, &m, &why);

	if (rc != 0)
		fail_msg("%s: rc %d (%s)", target, rc, why);
	assert_int_equal(m.id, id);
	assert_string_equal(m.instance, inst);
	assert_string_equal(m.session, sess);
}

static int match_rc(const char *target, int with_static)
{
	struct route_match m;
	const char *why = NULL;
	int rc = routes_match(target, with_static, &m, &why);

	if (rc == -EINVAL)
		assert_non_null(why);
	return rc;
}

static void test_match(void **state)
{
	match_ok("/healthz", 0, ROUTE_HEALTHZ, "", "");
	match_ok("/readyz?x=1", 0, ROUTE_READYZ, "", "");
	match_ok("/metrics", 0, ROUTE_METRICS, "", "");
	match_ok("/agents/inst-42/.well-known/agent-card.json", 0, ROUTE_AGENT_CARD,
		 "inst-42", "");
	match_ok("/agents/inst-42/sessions", 0, ROUTE_SESSIONS, "inst-42", "");
	match_ok("/agents/inst-42/sessions/01HW8Q3M9C7K5P0XZ8N4F2RV1Q", 0, ROUTE_SESSION,
		 "inst-42", "01HW8Q3M9C7K5P0XZ8N4F2RV1Q");
	match_ok(
	    "/agents/inst-42/sessions/01966a3e-8f2c-7abc-8def-0123456789ab/attach?a=b", 0,
	    ROUTE_ATTACH, "inst-42", "01966a3e-8f2c-7abc-8def-0123456789ab");
	/* Percent-encoding is decoded per segment. */
	match_ok("/agents/%69nst/sessions/s%2D1/attach", 0, ROUTE_ATTACH, "inst", "s-1");
	match_ok("/%68ealthz", 0, ROUTE_HEALTHZ, "", "");
}

static void test_match_refused(void **state)
{
	/* Dot segments, raw or encoded, and encoded slashes: 400. */
	assert_int_equal(match_rc("/agents/../healthz", 0), -EINVAL);
	assert_int_equal(match_rc("/agents/./sessions", 0), -EINVAL);
	assert_int_equal(match_rc("/agents/%2e%2E/sessions", 0), -EINVAL);
	assert_int_equal(match_rc("/agents/a%2Fb/sessions", 0), -EINVAL);
	assert_int_equal(match_rc("/agents/a%5Cb/sessions", 0), -EINVAL);
	assert_int_equal(match_rc("/static/../../etc/passwd", 1), -EINVAL);
	/* Bad escapes and NUL. */
	assert_int_equal(match_rc("/agents/a%zz/sessions", 0), -EINVAL);
	assert_int_equal(match_rc("/agents/a%2/sessions", 0), -EINVAL);
	assert_int_equal(match_rc("/agents/a%/sessions", 0), -EINVAL);
	assert_int_equal(match_rc("/agents/a%00b/sessions", 0), -EINVAL);
	/* Ids: charset and length. */
	assert_int_equal(match_rc("/agents/a%20b/sessions", 0), -EINVAL);
	assert_int_equal(match_rc("/agents/i/sessions/s%3Fx", 0), -EINVAL);
	assert_int_equal(match_rc("/agents//sessions", 0), -EINVAL);
	{
		char t[400];
		snprintf(t, sizeof(t), "/agents/%0129d/sessions", 0);
		assert_int_equal(match_rc(t, 0), -EINVAL);
		snprintf(t, sizeof(t), "/agents/%0128d/sessions", 0);
		assert_int_equal(match_rc(t, 0), 0);
	}
	/* Not a path at all. */
	assert_int_equal(match_rc("*", 0), -EINVAL);
	assert_int_equal(match_rc("http://h/healthz", 0), -EINVAL);
	/* No such route: 404. */
	assert_int_equal(match_rc("/", 0), -ENOENT);
	assert_int_equal(match_rc("/healthz/", 0), -ENOENT);
	assert_int_equal(match_rc("/healthz/x", 0), -ENOENT);
	assert_int_equal(match_rc("/agents", 0), -ENOENT);
	assert_int_equal(match_rc("/agents/i", 0), -ENOENT);
	assert_int_equal(match_rc("/agents/i/tasks", 0), -ENOENT);
	assert_int_equal(match_rc("/agents/i/sessions/s/detach", 0), -ENOENT);
	assert_int_equal(match_rc("/agents/i/sessions/s/attach/x", 0), -ENOENT);
	assert_int_equal(match_rc("/agents/i/.well-known/other.json", 0), -ENOENT);
	assert_int_equal(match_rc("/agents/i/sessions/s/attach/", 1), -ENOENT);
	assert_int_equal(match_rc("/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q", 1), -EINVAL);
}

static void test_match_static(void **state)
{
	struct route_match m;
	const char *why;

	assert_int_equal(routes_match("/", 1, &m, &why), 0);
	assert_int_equal(m.id, ROUTE_STATIC);
	assert_string_equal(m.file, "index.html");
	assert_int_equal(routes_match("/js/app%2Ejs?v=3", 1, &m, &why), 0);
	assert_string_equal(m.file, "js/app.js");
	assert_int_equal(routes_match("/docs/", 1, &m, &why), 0);
	assert_string_equal(m.file, "docs/index.html");
	assert_int_equal(routes_match("/.git/config", 1, &m, &why), -ENOENT);
	assert_int_equal(routes_match("/a//b", 1, &m, &why), -ENOENT);
	assert_int_equal(routes_match("/a%01b", 1, &m, &why), -ENOENT);
	/* API paths never fall through to files. */
	assert_int_equal(routes_match("/agents/i/nothing", 1, &m, &why), -ENOENT);
	assert_int_equal(routes_match("/healthz", 1, &m, &why), 0);
	assert_int_equal(m.id, ROUTE_HEALTHZ);
}

static void test_methods(void **state)
{
	assert_string_equal(routes_allow(ROUTE_SESSIONS), "GET, POST");
	assert_string_equal(routes_allow(ROUTE_SESSION), "GET, DELETE");
	assert_string_equal(routes_allow(ROUTE_ATTACH), "GET");
	assert_true(routes_method_ok(ROUTE_SESSIONS, "POST"));
	assert_true(routes_method_ok(ROUTE_SESSIONS, "GET"));
	assert_false(routes_method_ok(ROUTE_SESSIONS, "DELETE"));
	assert_false(routes_method_ok(ROUTE_SESSIONS, "POS"));
	assert_false(routes_method_ok(ROUTE_SESSIONS, "OST"));
	assert_true(routes_method_ok(ROUTE_SESSION, "DELETE"));
	assert_false(routes_method_ok(ROUTE_SESSION, "PUT"));
	assert_false(routes_method_ok(ROUTE_ATTACH, "POST"));
	assert_false(routes_method_ok(ROUTE_HEALTHZ, "HEAD"));
	assert_false(routes_method_ok(ROUTE_HEALTHZ, "get"));
	/* The whole Allow list, or a run of it, is not one method (found by
	   fuzz_routes). */
	assert_false(routes_method_ok(ROUTE_SESSION, "GET, DELETE"));
	assert_false(routes_method_ok(ROUTE_SESSIONS, "GET, POST"));
	assert_false(routes_method_ok(ROUTE_SESSIONS, "T, POST"));
	assert_false(routes_method_ok(ROUTE_SESSIONS, ""));
}

/* Found by fuzz_routes: an empty method made strstr match at every
   offset without moving, so routes_method_ok never returned. The alarm
   turns that hang into a failure. */
static void test_method_empty(void **state)
{
	alarm(5);
	for (int id = ROUTE_HEALTHZ; id <= ROUTE_STATIC; id++)
		assert_false(routes_method_ok(id, ""));
	assert_false(routes_method_ok(ROUTE_SESSIONS, ", "));
	alarm(0);
}

static void test_query_token(void **state)
{
	static const char *const refused[] = {
	    "/x?token=abc",	  "/x?access_token=abc",
	    "/x?a=1&id_token=z",  "/x?jwt=1",
	    "/x?JWT=1",		  "/x?bearer=1",
	    "/x?Authorization=1", "/x?auth",
	    "/x?%74oken=1",	  "/x?my+token=1",
	    "/x?a=1;TOKEN=2",	  "/x?q=eyJhbGciOi.eyJzdWIi.c2ln",
	    "/x?q=Bearer%20abc",  "/x?tok%65n",
	};
	static const char *const allowed[] = {
	    "/x",	    "/x?",	  "/x?a=1&b=2", "/x?replay=5",
	    "/x?q=eyJonly", "/x?q=a.b.c", "/x#token=1", "/x?a=%zz",
	};

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (!routes_query_has_token(refused[i]))
			fail_msg("not refused: %s", refused[i]);
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (routes_query_has_token(allowed[i]))
			fail_msg("refused: %s", allowed[i]);
}

static int create(const char *body, struct route_create *rc, char *err)
{
	return routes_parse_create(body, strlen(body), rc, err, 256);
}

static void test_create_ok(void **state)
{
	struct route_create rc;
	char err[LOG_ERR_MAX];

	assert_int_equal(create("", &rc, err), 0);
	assert_int_equal(rc.msg.n_argv, 0);
	assert_int_equal(rc.msg.cols, 0);
	assert_string_equal(rc.msg.cwd, "");
	routes_create_clear(&rc);

	assert_int_equal(
	    create("{\"command\":[\"/bin/sh\",\"-c\",\"\"],\"cwd\":\"/tmp\","
		   "\"env\":{\"A\":\"1\",\"B\":\"\"},\"cols\":1,\"rows\":1024,"
		   "\"policy\":\"terminate_on_last_controller\","
		   "\"label\":\"l\\u00e9\"}",
		   &rc, err),
	    0);
	assert_int_equal(rc.msg.n_argv, 3);
	assert_string_equal(rc.msg.argv[0], "/bin/sh");
	assert_string_equal(rc.msg.argv[2], "");
	assert_string_equal(rc.msg.cwd, "/tmp");
	assert_int_equal(rc.msg.n_env, 2);
	assert_string_equal(rc.msg.env[0]->name, "A");
	assert_string_equal(rc.msg.env[0]->value, "1");
	assert_string_equal(rc.msg.env[1]->value, "");
	assert_int_equal(rc.msg.cols, 1);
	assert_int_equal(rc.msg.rows, 1024);
	assert_int_equal(rc.msg.policy, PTG__POLICY__POLICY_TERMINATE_ON_LAST_CONTROLLER);
	assert_string_equal(rc.msg.label, "l\xc3\xa9");
	/* It packs: every pointer the message holds is valid. */
	assert_true(ptg__create_session__get_packed_size(&rc.msg) > 20);
	routes_create_clear(&rc);

	assert_int_equal(create("{\"policy\":\"keep_running\",\"env\":{}}", &rc, err), 0);
	assert_int_equal(rc.msg.policy, PTG__POLICY__POLICY_KEEP_RUNNING);
	assert_int_equal(rc.msg.control_policy, PTG__CONTROL_POLICY__CONTROL_OPEN);
	routes_create_clear(&rc);

	assert_int_equal(create("{\"control_policy\":\"approve\"}", &rc, err), 0);
	assert_int_equal(rc.msg.control_policy, PTG__CONTROL_POLICY__CONTROL_APPROVE);
	routes_create_clear(&rc);
	assert_int_equal(create("{\"control_policy\":\"owner_only\"}", &rc, err), 0);
	assert_int_equal(rc.msg.control_policy, PTG__CONTROL_POLICY__CONTROL_OWNER_ONLY);
	routes_create_clear(&rc);
}

static void test_create_refused(void **state)
{
	static const char *const bad[][2] = {
	    {"[]", "body"},
	    {"nonsense", "body"},
	    {"{\"a\":1} x", "body"},
	    {"{\"cols\":80,\"cols\":81}", "body"},
	    {"{\"unknown\":1}", "unknown"},
	    {"{\"command\":\"/bin/sh\"}", "command"},
	    {"{\"command\":[]}", "command"},
	    {"{\"command\":[\"\"]}", "command[0]"},
	    {"{\"command\":[\"sh\",1]}", "command[1]"},
	    {"{\"command\":[\"a\\u0000b\"]}", "body"},
	    {"{\"cwd\":\"\"}", "cwd"},
	    {"{\"cwd\":7}", "cwd"},
	    {"{\"env\":[]}", "env"},
	    {"{\"env\":{\"A=B\":\"x\"}}", "env"},
	    {"{\"env\":{\"\":\"x\"}}", "env"},
	    {"{\"env\":{\"A\":1}}", "env.A"},
	    {"{\"cols\":0}", "cols"},
	    {"{\"cols\":1025}", "cols"},
	    {"{\"cols\":80.5}", "cols"},
	    {"{\"rows\":\"24\"}", "rows"},
	    {"{\"rows\":true}", "rows"},
	    {"{\"policy\":\"forever\"}", "policy"},
	    {"{\"policy\":null}", "policy"},
	    {"{\"control_policy\":\"owner\"}", "control_policy"},
	    {"{\"control_policy\":true}", "control_policy"},
	    {"{\"label\":5}", "label"},
	};
	struct route_create rc;
	char err[LOG_ERR_MAX];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (create(bad[i][0], &rc, err) != -EINVAL)
			fail_msg("accepted: %s", bad[i][0]);
		if (strncmp(err, bad[i][1], strlen(bad[i][1])) != 0)
			fail_msg("%s: message '%s' does not name '%s'", bad[i][0], err,
				 bad[i][1]);
		routes_create_clear(&rc);
	}
}

static void test_create_limits(void **state)
{
	struct route_create rc;
	char err[LOG_ERR_MAX], body[2048];
	char label[200];

	/* 128 characters (not bytes) of label pass, 129 do not. */
	memset(label, 0, sizeof(label));
	for (int i = 0; i < 64; i++)
		memcpy(label + i * 2, "\xc3\xa9", 2);
	snprintf(body, sizeof(body), "{\"label\":\"%s%s\"}", label, label);
	assert_int_equal(create(body, &rc, err), 0);
	routes_create_clear(&rc);
	snprintf(body, sizeof(body), "{\"label\":\"%s%sx\"}", label, label);
	assert_int_equal(create(body, &rc, err), -EINVAL);
	routes_create_clear(&rc);
}

static Ptg__SessionInfo *session_fixture(void)
{
	static Ptg__Member m1 = PTG__MEMBER__INIT, m2 = PTG__MEMBER__INIT;
	static Ptg__Member *ctl[1], *obs[1];
	static char *argv[] = {"/bin/bash", "-l", "bad\xff"};
	static Ptg__SessionInfo s = PTG__SESSION_INFO__INIT;

	m1.client_id = "c-1";
	m1.label = "alice";
	m2.client_id = "c-2";
	m2.label = "";
	ctl[0] = &m1;
	obs[0] = &m2;
	s.session_id = "01966a3e-8f2c-7abc-8def-0123456789ab";
	s.state = PTG__SESSION_STATE__SESSION_RUNNING;
	s.pid = 4242;
	s.cols = 120;
	s.rows = 30;
	s.current_sequence = 77;
	s.oldest_retained_sequence = 3;
	s.output_bytes = 123456;
	s.input_bytes = 42;
	s.controllers = ctl;
	s.n_controllers = 1;
	s.observers = obs;
	s.n_observers = 1;
	s.created_at_ms = 1778337000182; /* 2026-05-09T14:30:00.182Z */
	s.label = "build";
	s.argv = argv;
	s.n_argv = 3;
	return &s;
}

static void assert_json(json_t *v, const char *expected)
{
	char *s = json_dumps(v, JSON_COMPACT);

	if (strcmp(s, expected) != 0)
		fail_msg("got      %s\nexpected %s", s, expected);
	free(s);
	json_decref(v);
}

static void test_session_json(void **state)
{
	Ptg__SessionInfo *s = session_fixture();

	assert_json(routes_session_json(s),
		    "{\"session_id\":\"01966a3e-8f2c-7abc-8def-0123456789ab\","
		    "\"state\":\"running\",\"pid\":4242,\"cols\":120,\"rows\":30,"
		    "\"current_sequence\":77,\"oldest_retained_sequence\":3,"
		    "\"output_bytes\":123456,\"input_bytes\":42,"
		    "\"controllers\":[{\"client_id\":\"c-1\",\"label\":\"alice\"}],"
		    "\"observers\":[{\"client_id\":\"c-2\",\"label\":\"\"}],"
		    "\"exit_code\":null,\"created_at\":\"2026-05-09T14:30:00.182Z\","
		    "\"exited_at\":null,\"label\":\"build\",\"policy\":\"keep_running\","
		    "\"control_policy\":\"open\",\"owner\":\"\","
		    "\"command\":[\"/bin/bash\",\"-l\",\"bad\xef\xbf\xbd\"]}");
	s->state = PTG__SESSION_STATE__SESSION_EXITED;
	s->has_exit_code = 1;
	s->exit_code = 0;
	s->exited_at_ms = s->created_at_ms + 1000;
	s->policy = PTG__POLICY__POLICY_TERMINATE_ON_LAST_CONTROLLER;
	s->control_policy = PTG__CONTROL_POLICY__CONTROL_APPROVE;
	s->n_controllers = 0;
	json_t *v = routes_session_json(s);
	assert_string_equal(json_string_value(json_object_get(v, "state")), "exited");
	assert_true(json_is_integer(json_object_get(v, "exit_code")));
	assert_int_equal(json_integer_value(json_object_get(v, "exit_code")), 0);
	assert_string_equal(json_string_value(json_object_get(v, "exited_at")),
			    "2026-05-09T14:30:01.182Z");
	assert_string_equal(json_string_value(json_object_get(v, "policy")),
			    "terminate_on_last_controller");
	assert_string_equal(json_string_value(json_object_get(v, "control_policy")),
			    "approve");
	s->control_policy = PTG__CONTROL_POLICY__CONTROL_OWNER_ONLY;
	json_decref(v);
	v = routes_session_json(s);
	assert_string_equal(json_string_value(json_object_get(v, "control_policy")),
			    "owner_only");
	assert_int_equal(json_array_size(json_object_get(v, "controllers")), 0);
	json_decref(v);
	s->state = PTG__SESSION_STATE__SESSION_RUNNING;
	s->has_exit_code = 0;
	s->exited_at_ms = 0;
	s->policy = PTG__POLICY__POLICY_KEEP_RUNNING;
	s->n_controllers = 1;
}

static void test_created_json(void **state)
{
	assert_json(
	    routes_created_json(session_fixture(), "ws://h:1/agents/i/sessions/x/attach"),
	    "{\"session_id\":\"01966a3e-8f2c-7abc-8def-0123456789ab\","
	    "\"state\":\"running\",\"cols\":120,\"rows\":30,"
	    "\"created_at\":\"2026-05-09T14:30:00.182Z\","
	    "\"attach_url\":\"ws://h:1/agents/i/sessions/x/attach\"}");
}

static void test_bases(void **state)
{
	char h[256], w[256];

	routes_bases("", "127.0.0.1", 8080, h, w, sizeof(h));
	assert_string_equal(h, "http://127.0.0.1:8080");
	assert_string_equal(w, "ws://127.0.0.1:8080");
	routes_bases(NULL, "::1", 9, h, w, sizeof(h));
	assert_string_equal(h, "http://[::1]:9");
	assert_string_equal(w, "ws://[::1]:9");
	routes_bases("https://gw.example/p", "127.0.0.1", 1, h, w, sizeof(h));
	assert_string_equal(h, "https://gw.example/p");
	assert_string_equal(w, "wss://gw.example/p");
	routes_bases("http://gw:80", "x", 1, h, w, sizeof(h));
	assert_string_equal(w, "ws://gw:80");
	routes_bases("wss://gw", "x", 1, h, w, sizeof(h));
	assert_string_equal(h, "https://gw");
	assert_string_equal(w, "wss://gw");
	routes_bases("ws://gw", "x", 1, h, w, sizeof(h));
	assert_string_equal(h, "http://gw");
}

static void test_agent_card(void **state)
{
	Ptg__Limits lim = PTG__LIMITS__INIT;
	json_t *card = routes_agent_card("inst-42", "https://g", "wss://g", NULL);
	json_t *ext, *params, *iface;

	assert_non_null(card);
	assert_string_equal(json_string_value(json_object_get(card, "url")),
			    "https://g/agents/inst-42");
	assert_true(json_is_true(
	    json_object_get(json_object_get(card, "capabilities"), "streaming")));
	ext = json_array_get(
	    json_object_get(json_object_get(card, "capabilities"), "extensions"), 0);
	assert_string_equal(json_string_value(json_object_get(ext, "uri")),
			    PTYWS_EXT_PTY);
	params = json_object_get(ext, "params");
	assert_json(
	    json_incref(params),
	    "{\"max_controllers\":4,\"max_observers\":32,"
	    "\"keyframe_interval_seconds\":5,\"keyframe_interval_frames\":100,"
	    "\"replay_buffer_frames\":1000,\"replay_buffer_retention_seconds\":86400,"
	    "\"default_cols\":120,\"default_rows\":30}");
	iface = json_array_get(json_object_get(card, "additionalInterfaces"), 0);
	assert_string_equal(json_string_value(json_object_get(iface, "url")),
			    "wss://g/agents/inst-42/sessions/{session_id}/attach");
	assert_string_equal(json_string_value(json_object_get(iface, "transport")),
			    "https://agentic-sandbox.aiwg.io/bindings/pty-ws/v1");
	assert_string_equal(json_string_value(json_object_get(iface, "preference")),
			    "secondary");
	assert_int_equal(json_array_size(json_object_get(iface, "operations")), 6);
	assert_true(json_array_size(json_object_get(card, "skills")) >= 1);
	json_decref(card);

	/* The sidecar's limits win where set. */
	lim.max_controllers = 2;
	lim.replay_seconds = 60;
	lim.default_cols = 80;
	card = routes_agent_card("i", "http://g", "ws://g", &lim);
	params = json_object_get(
	    json_array_get(
		json_object_get(json_object_get(card, "capabilities"), "extensions"), 0),
	    "params");
	assert_int_equal(json_integer_value(json_object_get(params, "max_controllers")),
			 2);
	assert_int_equal(json_integer_value(json_object_get(params, "max_observers")),
			 32);
	assert_int_equal(json_integer_value(
			     json_object_get(params, "replay_buffer_retention_seconds")),
			 60);
	assert_int_equal(json_integer_value(json_object_get(params, "default_cols")), 80);
	assert_int_equal(json_integer_value(json_object_get(params, "default_rows")), 30);
	json_decref(card);
}

static void test_error_body_and_codes(void **state)
{
	struct buf b = BUF_INIT;
	const char *name;

	routes_error_body("NOT_FOUND", "no \"such\"\n\xff", &b);
	buf_append(&b, "", 1);
	assert_string_equal(
	    (char *)buf_head(&b),
	    "{\"code\":\"NOT_FOUND\",\"message\":\"no \\\"such\\\"\\n\xef\xbf\xbd\"}");
	buf_free(&b);
	assert_int_equal(routes_status_from_link(PTG__ERROR_CODE__INVALID_REQUEST, &name),
			 400);
	assert_string_equal(name, "INVALID_REQUEST");
	assert_int_equal(routes_status_from_link(PTG__ERROR_CODE__NOT_FOUND, &name), 404);
	assert_string_equal(name, "NOT_FOUND");
	assert_int_equal(routes_status_from_link(PTG__ERROR_CODE__RATE_LIMITED, &name),
			 429);
	assert_string_equal(name, "RATE_LIMITED");
	assert_int_equal(
	    routes_status_from_link(PTG__ERROR_CODE__PERMISSION_DENIED, &name), 403);
	assert_int_equal(routes_status_from_link(PTG__ERROR_CODE__INTERNAL, &name), 500);
	assert_string_equal(name, "INTERNAL");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_match),
	    cmocka_unit_test(test_match_refused),
	    cmocka_unit_test(test_match_static),
	    cmocka_unit_test(test_methods),
	    cmocka_unit_test(test_method_empty),
	    cmocka_unit_test(test_query_token),
	    cmocka_unit_test(test_create_ok),
	    cmocka_unit_test(test_create_refused),
	    cmocka_unit_test(test_create_limits),
	    cmocka_unit_test(test_session_json),
	    cmocka_unit_test(test_created_json),
	    cmocka_unit_test(test_bases),
	    cmocka_unit_test(test_agent_card),
	    cmocka_unit_test(test_error_body_and_codes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
