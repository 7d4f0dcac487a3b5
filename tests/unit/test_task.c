/* unit: sidecar */
/* test_task: the inbound message (v1.0 and the older lower-case forms,
   every refusal), the canonical task JSON, the output cap, output deltas
   that never split a UTF-8 character, exit statuses, the record round
   trip (NUL bytes in the output, the owner, records from before owners),
   and who sees a task. */
#include "../../sidecar/task.c"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "log.h"

#define SID "01a00000-0000-7000-8000-000000000001"

static int parse(const char *json, struct task_send *out)
{
	char err[LOG_ERR_MAX];
	int rc = task_parse_send(json, SID, 64, out, err, sizeof(err));

	if (rc)
		assert_true(err[0] != 0);
	return rc;
}

static struct task *make(const char *command)
{
	struct task_send s;
	char json[512];

	snprintf(json, sizeof(json),
		 "{\"message\":{\"messageId\":\"m1\",\"role\":\"ROLE_USER\","
		 "\"parts\":[{\"text\":\"%s\"}]}}",
		 command);
	assert_int_equal(parse(json, &s), 0);
	return task_new(SID, "alice", &s, "", "trace-1", 1000);
}

static void test_parse_forms(void **state)
{
	struct task_send s;

	assert_int_equal(parse("{\"message\":{\"messageId\":\"a\",\"role\":\"ROLE_USER\","
			       "\"parts\":[{\"text\":\"echo \"},{\"text\":\"hi\"}]}}",
			       &s),
			 0);
	assert_string_equal(s.command, "echo hi");
	assert_string_equal(s.message_id, "a");
	assert_string_equal(json_string_value(json_object_get(s.message, "role")),
			    "ROLE_USER");
	task_send_release(&s);
	assert_int_equal(
	    parse("{\"message\":{\"messageId\":\"b\",\"role\":\"user\",\"kind\":"
		  "\"message\",\"contextId\":\"" SID "\",\"parts\":[{\"kind\":\"text\","
		  "\"text\":\"ls\"}]},\"configuration\":{}}",
		  &s),
	    0);
	assert_string_equal(s.command, "ls");
	task_send_release(&s);
}

static void test_parse_refusals(void **state)
{
	static const char *const bad[] = {
	    "[]",
	    "{}",
	    "{\"message\":1}",
	    "{\"other\":1,\"message\":{}}",
	    "{\"message\":{\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"x\"}]}}",
	    "{\"message\":{\"messageId\":\"\",\"role\":\"ROLE_USER\",\"parts\":[{"
	    "\"text\":\"x\"}]}}",
	    "{\"message\":{\"messageId\":\"a\",\"role\":\"ROLE_AGENT\",\"parts\":[{"
	    "\"text\":\"x\"}]}}",
	    "{\"message\":{\"messageId\":\"a\",\"role\":\"ROLE_USER\",\"parts\":[]}}",
	    "{\"message\":{\"messageId\":\"a\",\"role\":\"ROLE_USER\",\"parts\":[{"
	    "\"data\":{}}]}}",
	    "{\"message\":{\"messageId\":\"a\",\"role\":\"ROLE_USER\",\"parts\":[{"
	    "\"kind\":\"file\",\"text\":\"x\"}]}}",
	    "{\"message\":{\"messageId\":\"a\",\"role\":\"ROLE_USER\",\"parts\":[{"
	    "\"text\":\"\"}]}}",
	    "{\"message\":{\"messageId\":\"a\",\"role\":\"ROLE_USER\",\"parts\":[{"
	    "\"text\":\"a\\u0000b\"}]}}",
	    "{\"message\":{\"messageId\":\"a\",\"role\":\"ROLE_USER\",\"taskId\":\"t\","
	    "\"parts\":[{\"text\":\"x\"}]}}",
	    "{\"message\":{\"messageId\":\"a\",\"role\":\"ROLE_USER\",\"bogus\":1,"
	    "\"parts\":[{\"text\":\"x\"}]}}",
	    "{\"message\":{\"messageId\":\"a\",\"role\":\"ROLE_USER\",\"parts\":[{"
	    "\"text\":"
	    "\"0123456789012345678901234567890123456789012345678901234567890123456789\"}]"
	    "}}",
	    "{\"message\":{\"messageId\":\"a\",\"messageId\":\"b\",\"role\":\"ROLE_"
	    "USER\",\"parts\":[{\"text\":\"x\"}]}}",
	};
	struct task_send s;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], &s), 1);
		assert_null(s.message);
		assert_null(s.command);
	}
	/* Another session's contextId: PERMISSION_DENIED's code (3). */
	assert_int_equal(parse("{\"message\":{\"messageId\":\"a\",\"role\":\"ROLE_USER\","
			       "\"contextId\":\"other\",\"parts\":[{\"text\":\"x\"}]}}",
			       &s),
			 3);
}

static void test_canonical_json(void **state)
{
	struct task *t = make("echo hi");
	json_t *j = task_json(t, -1), *st, *hist;

	assert_string_equal(json_string_value(json_object_get(j, "contextId")), SID);
	st = json_object_get(j, "status");
	assert_string_equal(json_string_value(json_object_get(st, "state")),
			    "TASK_STATE_SUBMITTED");
	assert_string_equal(json_string_value(json_object_get(st, "timestamp")),
			    "1970-01-01T00:00:01.000Z");
	assert_int_equal(json_array_size(json_object_get(j, "artifacts")), 0);
	hist = json_object_get(j, "history");
	assert_int_equal(json_array_size(hist), 1);
	assert_string_equal(
	    json_string_value(json_object_get(json_array_get(hist, 0), "taskId")), t->id);
	json_decref(j);

	task_set_state(t, TASK_WORKING, NULL, 2000);
	task_set_exit(t, 3 << 8, 3000);
	assert_int_equal(t->state, TASK_FAILED);
	j = task_json(t, -1);
	assert_int_equal(json_integer_value(json_object_get(
			     json_object_get(j, "metadata"), "exit_code")),
			 3);
	st = json_object_get(j, "status");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(st, "message"), "role")),
	    "ROLE_AGENT");
	assert_int_equal(json_array_size(json_object_get(j, "history")), 2);
	json_decref(j);
	j = task_json(t, 0);
	assert_int_equal(json_array_size(json_object_get(j, "history")), 0);
	json_decref(j);
	task_free(t);
}

static void test_exit_and_cancel(void **state)
{
	struct task *t = make("sleep 1");

	task_set_state(t, TASK_WORKING, NULL, 1);
	task_set_exit(t, 0, 2);
	assert_int_equal(t->state, TASK_COMPLETED);
	task_free(t);

	t = make("sleep 1");
	task_set_state(t, TASK_WORKING, NULL, 1);
	task_set_exit(t, SIGTERM, 2); /* a wait status: killed by SIGTERM */
	assert_int_equal(t->state, TASK_FAILED);
	assert_int_equal(t->signal, SIGTERM);
	assert_false(t->has_exit_code);
	assert_non_null(strstr(t->status_text, "SIGTERM"));
	task_free(t);

	/* Canceled first: the kill's status is kept, the state stays. */
	t = make("sleep 1");
	task_set_state(t, TASK_CANCELED, "canceled", 1);
	task_set_exit(t, SIGKILL, 2);
	assert_int_equal(t->state, TASK_CANCELED);
	assert_string_equal(t->status_text, "canceled");
	assert_int_equal(t->signal, SIGKILL);
	task_free(t);
}

static void test_output_cap(void **state)
{
	struct task *t = make("x");

	task_append_output(t, TASK_STDOUT, "aaaaaa", 6, 10);
	task_append_output(t, TASK_STDERR, "bbbbbb", 6, 10);
	task_append_output(t, TASK_STDOUT, "cc", 2, 10);
	assert_int_equal(t->out[0].len, 6);
	assert_int_equal(t->out[1].len, 4);
	assert_int_equal(t->out[0].total, 8);
	assert_int_equal(t->out[1].total, 6);
	assert_true(t->out[0].truncated);
	assert_true(t->out[1].truncated);
	task_free(t);
}

static void test_delta_keeps_characters_whole(void **state)
{
	struct task *t = make("x");
	json_t *d;

	/* "é" is C3 A9: the first byte alone waits for the second. */
	task_append_output(t, TASK_STDOUT, "ab\xC3", 3, 100);
	d = task_output_delta(t);
	assert_string_equal(
	    json_string_value(json_object_get(
		json_array_get(
		    json_object_get(json_array_get(json_object_get(d, "artifacts"), 0),
				    "parts"),
		    0),
		"text")),
	    "ab");
	json_decref(d);
	task_append_output(t, TASK_STDOUT, "\xA9", 1, 100);
	d = task_output_delta(t);
	assert_string_equal(
	    json_string_value(json_object_get(
		json_array_get(
		    json_object_get(json_array_get(json_object_get(d, "artifacts"), 0),
				    "parts"),
		    0),
		"text")),
	    "\xC3\xA9");
	json_decref(d);
	assert_null(task_output_delta(t));
	task_free(t);
}

static void test_invalid_utf8_replaced(void **state)
{
	json_t *s = task_json_text("a\xFF"
				   "b\xC0\x80",
				   5);

	assert_string_equal(json_string_value(s), "a\xEF\xBF\xBD"
						  "b\xEF\xBF\xBD\xEF\xBF\xBD");
	json_decref(s);
}

static void test_record_round_trip(void **state)
{
	struct task *t = make("echo hi"), *back;
	char *rec;
	json_t *a, *b;

	task_set_state(t, TASK_WORKING, NULL, 2000);
	task_append_output(t, TASK_STDOUT, "hi\n", 3, 100);
	task_set_exit(t, 0, 3000);
	rec = task_record(t);
	back = task_from_record(rec, strlen(rec));
	assert_non_null(back);
	a = task_json(t, -1);
	b = task_json(back, -1);
	assert_true(json_equal(a, b));
	assert_string_equal(back->trace_id, "trace-1");
	assert_string_equal(back->message_id, "m1");
	json_decref(a);
	json_decref(b);
	task_free(back);
	assert_null(task_from_record("{\"id\":\"x\"}", 10));
	assert_null(task_from_record("not json", 8));
	free(rec);
	task_free(t);
}

/* The text of the artifact of stream name in a task's JSON, and its length. */
static const char *artifact_text(json_t *task, const char *name, size_t *len)
{
	size_t i;
	json_t *a;

	json_array_foreach(json_object_get(task, "artifacts"), i, a)
	{
		json_t *text;
		if (strcmp(json_string_value(json_object_get(a, "artifactId")), name))
			continue;
		text = json_object_get(json_array_get(json_object_get(a, "parts"), 0),
				       "text");
		*len = json_string_length(text);
		return json_string_value(text);
	}
	return NULL;
}

/* A NUL byte in the output is kept (as \u0000 in the
   JSON) through the task's JSON and its record; before, the record did
   not load, and the task was lost at the next start. */
static void test_nul_output_round_trips(void **state)
{
	static const char out[] = "a\0b\0\n";
	struct task *t = make("printf nul"), *back;
	char *rec, *text;
	json_t *j, *again;
	const char *got;
	size_t len;

	task_set_state(t, TASK_WORKING, NULL, 2000);
	task_append_output(t, TASK_STDOUT, out, sizeof(out) - 1, 100);
	task_set_exit(t, 0, 3000);
	j = task_json(t, -1);
	text = json_dumps(j, JSON_COMPACT);
	assert_non_null(strstr(text, "a\\u0000b\\u0000\\n"));
	again = json_loads(text, JSON_ALLOW_NUL, NULL);
	assert_non_null(again);
	got = artifact_text(again, "stdout", &len);
	assert_int_equal(len, sizeof(out) - 1);
	assert_memory_equal(got, out, len);
	rec = task_record(t);
	back = task_from_record(rec, strlen(rec));
	assert_non_null(back);
	assert_int_equal(back->out[TASK_STDOUT].len, sizeof(out) - 1);
	assert_memory_equal(back->out[TASK_STDOUT].data, out, sizeof(out) - 1);
	assert_string_equal(back->owner, "alice");
	free(rec);
	free(text);
	json_decref(j);
	json_decref(again);
	task_free(back);
	task_free(t);
}

/* A task is its sender's; tasks:all sees every one. */
static void test_owner_and_visibility(void **state)
{
	struct task *t = make("true");

	assert_string_equal(t->owner, "alice");
	assert_true(task_visible(t, "alice", 0));
	assert_false(task_visible(t, "bob", 0));
	assert_false(task_visible(t, "alic", 0));
	assert_false(task_visible(t, "", 0));
	assert_true(task_visible(t, "bob", 1));
	task_free(t);
}

/* A version 1 record (before owners) loads as nobody's: only tasks:all
   sees it. A version 2 record without an owner is refused. */
static void test_record_without_owner(void **state)
{
	struct task *t = make("echo old"), *back;
	json_t *r;
	char *rec, *v1;

	rec = task_record(t);
	r = json_loads(rec, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(r, "version")), 2);
	json_object_del(r, "owner");
	v1 = json_dumps(r, JSON_COMPACT);
	assert_null(task_from_record(v1, strlen(v1))); /* v2 needs an owner */
	free(v1);
	json_object_set_new(r, "version", json_integer(1));
	v1 = json_dumps(r, JSON_COMPACT);
	back = task_from_record(v1, strlen(v1));
	assert_non_null(back);
	assert_string_equal(back->owner, "");
	assert_false(task_visible(back, "alice", 0));
	assert_false(task_visible(back, "", 0));
	assert_true(task_visible(back, "alice", 1));
	free(v1);
	free(rec);
	json_decref(r);
	task_free(back);
	task_free(t);
}

static void test_state_names(void **state)
{
	enum task_state s;

	assert_int_equal(task_state_parse("TASK_STATE_CANCELED", &s), 0);
	assert_int_equal(s, TASK_CANCELED);
	assert_int_equal(task_state_parse("working", &s), 0);
	assert_int_equal(s, TASK_WORKING);
	assert_int_equal(task_state_parse("WORKING", &s), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_forms),
	    cmocka_unit_test(test_parse_refusals),
	    cmocka_unit_test(test_canonical_json),
	    cmocka_unit_test(test_exit_and_cancel),
	    cmocka_unit_test(test_output_cap),
	    cmocka_unit_test(test_delta_keeps_characters_whole),
	    cmocka_unit_test(test_invalid_utf8_replaced),
	    cmocka_unit_test(test_record_round_trip),
	    cmocka_unit_test(test_nul_output_round_trips),
	    cmocka_unit_test(test_owner_and_visibility),
	    cmocka_unit_test(test_record_without_owner),
	    cmocka_unit_test(test_state_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
