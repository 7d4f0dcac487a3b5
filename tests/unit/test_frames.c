/* unit: gateway */
/* frames: every server frame is built, read back with Jansson, checked
   field by field (exact text for binding_hello and the
   REPLAY_OUT_OF_RANGE Error), and validated against the published JSON
   Schemas by tests/unit/validate_frames.py. */
#include "../../gateway/frames.c"

#include <errno.h>
#include <libgen.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "b64.h"
#include "buf.h"
#include "timeutil.h"
#include "uuid.h"

#define UID	"01966a3e-8f2c-7abc-8def-0123456789ab"
#define T0_TEXT "2026-05-09T14:30:00.182Z"
#define T1_TEXT "2026-05-09T14:42:25.111Z"

static int64_t t0, t1;

/* Every frame built by the tests, one per line, for the schema check. */
static struct buf all_frames = BUF_INIT;

static int setup(void **state)
{
	assert_int_equal(time_parse_rfc3339(T0_TEXT, &t0), 0);
	assert_int_equal(time_parse_rfc3339(T1_TEXT, &t1), 0);
	return 0;
}

/* Parses the frame in b (must be one valid JSON object), records it for
   the schema check and resets b. */
static json_t *take(struct buf *b)
{
	json_error_t jerr;
	json_t *v =
	    json_loadb((char *)buf_head(b), buf_size(b), JSON_REJECT_DUPLICATES, &jerr);

	if (!v)
		fprintf(stderr, "bad JSON (%s): %.*s\n", jerr.text, (int)buf_size(b),
			(char *)buf_head(b));
	assert_non_null(v);
	assert_true(json_is_object(v));
	assert_null(memchr(buf_head(b), '\n', buf_size(b)));
	buf_append(&all_frames, buf_head(b), buf_size(b));
	buf_append(&all_frames, "\n", 1);
	buf_reset(b);
	return v;
}

static const char *str_at(json_t *v, const char *k)
{
	json_t *s = json_object_get(v, k);

	assert_true(json_is_string(s));
	return json_string_value(s);
}

static json_int_t int_at(json_t *v, const char *k)
{
	json_t *i = json_object_get(v, k);

	assert_true(json_is_integer(i));
	return json_integer_value(i);
}

static void assert_text(struct buf *b, const char *want)
{
	if (buf_size(b) != strlen(want) || memcmp(buf_head(b), want, strlen(want)))
		fprintf(stderr, "got  %.*s\nwant %s\n", (int)buf_size(b),
			(char *)buf_head(b), want);
	assert_int_equal(buf_size(b), strlen(want));
	assert_memory_equal(buf_head(b), want, strlen(want));
}

static void test_hello_exact(void **state)
{
	struct buf b = BUF_INIT;

	frames_binding_hello(UID, "01HW8Q3M9C7K5P0XZ8N4F2RV1Q", 437, t0, &b);
	assert_text(
	    &b, "{\"op\":\"binding_hello\",\"id\":\"" UID "\",\"ts\":\"" T0_TEXT "\","
		"\"sequence\":0,\"payload\":{"
		"\"binding_uri\":\"https://agentic-sandbox.aiwg.io/bindings/pty-ws/v1\","
		"\"binding_version\":\"1.0.0\","
		"\"supported_operations\":[\"SendMessage\",\"SendStreamingMessage\","
		"\"GetTask\",\"ListTasks\",\"CancelTask\",\"SubscribeToTask\"],"
		"\"activated_extensions\":[],"
		"\"session\":{\"session_id\":\"01HW8Q3M9C7K5P0XZ8N4F2RV1Q\","
		"\"current_sequence\":437},"
		"\"session_host\":{\"supported_backends\":[\"native\"],"
		"\"default_backend\":\"native\",\"supported_classes\":[\"direct\"],"
		"\"default_class\":\"direct\",\"observe_supported\":true,"
		"\"drive_supported\":true,\"reattach_supported\":true}}}");
	json_decref(take(&b));
	/* A NULL id gets a fresh UUIDv7. */
	frames_binding_hello(NULL, "s", 0, t0, &b);
	{
		json_t *v = take(&b);

		assert_true(uuid_is_valid(str_at(v, "id")));
		assert_int_equal(str_at(v, "id")[14], '7');
		json_decref(v);
	}
	buf_free(&b);
}

static const char replay_error[] =
    "{\"op\":\"Error\",\"id\":\"" UID "\",\"ts\":\"" T0_TEXT "\","
    "\"payload\":{\"code\":\"REPLAY_OUT_OF_RANGE\","
    "\"message\":\"replay_from=25 precedes oldest retained frame (sequence=50)\","
    "\"a2a_error\":null,\"retryable\":false}}";

static void test_error_replay_exact(void **state)
{
	struct buf b = BUF_INIT;

	frames_error(FRAMES_REPLAY_OUT_OF_RANGE, UID,
		     "replay_from=25 precedes oldest retained frame (sequence=50)", t0,
		     &b);
	assert_text(&b, replay_error);
	/* Not recorded for the schema check: see test_schema_a2a_error_null. */
	buf_free(&b);
}

static void test_error_table(void **state)
{
	static const struct {
		enum frames_code code;
		const char *name, *type, *num_key;
		int num;
		int retryable;
	} want[] = {
	    {FRAMES_TASK_NOT_FOUND, "TASK_NOT_FOUND", "TaskNotFound", "code", -32001, 0},
	    {FRAMES_TASK_NOT_CANCELABLE, "TASK_NOT_CANCELABLE", "TaskNotCancelable",
	     "code", -32002, 0},
	    {FRAMES_INVALID_REQUEST, "INVALID_REQUEST", "InvalidRequest", "code", -32600,
	     0},
	    {FRAMES_UNSUPPORTED_OPERATION, "UNSUPPORTED_OPERATION",
	     "UnsupportedOperation", "code", -32004, 0},
	    {FRAMES_UNAUTHENTICATED, "UNAUTHENTICATED", "Unauthenticated", "http_status",
	     401, 0},
	    {FRAMES_PERMISSION_DENIED, "PERMISSION_DENIED", "PermissionDenied",
	     "http_status", 403, 0},
	    {FRAMES_RATE_LIMITED, "RATE_LIMITED", "RateLimited", "http_status", 429, 1},
	    {FRAMES_INTERNAL, "INTERNAL", "Internal", "code", -32603, 1},
	};
	struct buf b = BUF_INIT;
	json_t *v, *p, *a;
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		frames_error(want[i].code, UID, "it \"failed\"\n", t0, &b);
		v = take(&b);
		assert_string_equal(str_at(v, "op"), "Error");
		assert_string_equal(str_at(v, "id"), UID);
		assert_null(json_object_get(v, "sequence"));
		p = json_object_get(v, "payload");
		assert_int_equal(json_object_size(p), 4);
		assert_string_equal(str_at(p, "code"), want[i].name);
		assert_string_equal(str_at(p, "message"), "it \"failed\"\n");
		assert_int_equal(json_is_true(json_object_get(p, "retryable")),
				 want[i].retryable);
		a = json_object_get(p, "a2a_error");
		assert_int_equal(json_object_size(a), 3);
		assert_string_equal(str_at(a, "type"), want[i].type);
		assert_string_equal(str_at(a, "message"), "it \"failed\"\n");
		assert_int_equal(int_at(a, want[i].num_key), want[i].num);
		assert_string_equal(frames_error_row(want[i].code)->code, want[i].name);
		json_decref(v);
	}
	assert_null(frames_error_row(FRAMES_REPLAY_OUT_OF_RANGE)->a2a_type);
	assert_false(frames_error_row(FRAMES_REPLAY_OUT_OF_RANGE)->retryable);
	buf_free(&b);
}

/* The client's id comes back verbatim, whatever it is. */
static void test_error_id_echo(void **state)
{
	struct buf b = BUF_INIT;
	json_t *v;

	frames_error(FRAMES_INVALID_REQUEST, "01hw8q3v3a0a8m7r9z3b4tc5y0 \"\\\t\x01", "m",
		     t0, &b);
	/* Not recorded: a non-UUID echo is what the protocol wants
	   (docs/protocol.md, "Frames"), not the schema. */
	v = json_loadb((char *)buf_head(&b), buf_size(&b), 0, NULL);
	assert_non_null(v);
	assert_string_equal(str_at(v, "id"), "01hw8q3v3a0a8m7r9z3b4tc5y0 \"\\\t\x01");
	json_decref(v);
	buf_free(&b);
}

static void test_code_from_link(void **state)
{
	assert_int_equal(frames_code_from_link(PTG__ERROR_CODE__INVALID_REQUEST),
			 FRAMES_INVALID_REQUEST);
	assert_int_equal(frames_code_from_link(PTG__ERROR_CODE__NOT_FOUND),
			 FRAMES_INVALID_REQUEST);
	assert_int_equal(frames_code_from_link(PTG__ERROR_CODE__PERMISSION_DENIED),
			 FRAMES_PERMISSION_DENIED);
	assert_int_equal(frames_code_from_link(PTG__ERROR_CODE__RATE_LIMITED),
			 FRAMES_RATE_LIMITED);
	assert_int_equal(frames_code_from_link(PTG__ERROR_CODE__TASK_NOT_FOUND),
			 FRAMES_TASK_NOT_FOUND);
	assert_int_equal(frames_code_from_link(PTG__ERROR_CODE__TASK_NOT_CANCELABLE),
			 FRAMES_TASK_NOT_CANCELABLE);
	assert_int_equal(frames_code_from_link(PTG__ERROR_CODE__UNSUPPORTED),
			 FRAMES_UNSUPPORTED_OPERATION);
	assert_int_equal(frames_code_from_link(PTG__ERROR_CODE__INTERNAL),
			 FRAMES_INTERNAL);
	assert_int_equal(frames_code_from_link(PTG__ERROR_CODE__OK), FRAMES_INTERNAL);
	assert_int_equal(frames_code_from_link((Ptg__ErrorCode)99), FRAMES_INTERNAL);
}

/* Builds f into a fresh buf and returns the parsed frame's payload
   (owned by *frame). */
static json_t *session_frame(Ptg__Frame *f, json_t **frame)
{
	struct buf b = BUF_INIT;

	assert_int_equal(frames_session_frame(f, NULL, t0, &b), 0);
	*frame = take(&b);
	buf_free(&b);
	assert_string_equal(str_at(*frame, "op"), "pty.session_frame");
	assert_true(uuid_is_valid(str_at(*frame, "id")));
	assert_int_equal(int_at(*frame, "sequence"), (json_int_t)f->sequence);
	return json_object_get(*frame, "payload");
}

static void test_output(void **state)
{
	static const char *want_stream[] = {"stdout", "stderr", "log"};
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__OutputFrame o = PTG__OUTPUT_FRAME__INIT;
	struct buf raw = BUF_INIT;
	size_t n = 64 * 1024 + 7, i;
	uint8_t *data = malloc(n);
	json_t *v, *p;
	const char *s;

	for (i = 0; i < n; i++)
		data[i] = (uint8_t)(i * 131 + (i >> 8));
	f.sequence = 401;
	f.ts_ms = t1; /* a replayed frame keeps its own time */
	f.kind_case = PTG__FRAME__KIND_OUTPUT;
	f.output = &o;
	for (i = 0; i < 3; i++) {
		o.stream = (Ptg__Stream)i;
		o.data.data = data;
		o.data.len = i == 2 ? 0 : n;
		p = session_frame(&f, &v);
		assert_string_equal(str_at(v, "ts"), T1_TEXT);
		assert_string_equal(str_at(p, "kind"), "Output");
		assert_string_equal(str_at(p, "stream"), want_stream[i]);
		s = str_at(p, "data");
		buf_reset(&raw);
		assert_int_equal(b64_decode(s, strlen(s), &raw), 0);
		assert_int_equal(buf_size(&raw), o.data.len);
		if (o.data.len)
			assert_memory_equal(buf_head(&raw), data, n);
		json_decref(v);
	}
	/* No ts on the frame: the builder's clock. */
	f.ts_ms = 0;
	p = session_frame(&f, &v);
	assert_string_equal(str_at(v, "ts"), T0_TEXT);
	json_decref(v);
	buf_free(&raw);
	free(data);
}

static void test_resize_role(void **state)
{
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__ResizeFrame r = PTG__RESIZE_FRAME__INIT;
	Ptg__RoleAssignedFrame ra = PTG__ROLE_ASSIGNED_FRAME__INIT;
	json_t *v, *p;

	f.sequence = 6;
	f.ts_ms = t0;
	f.kind_case = PTG__FRAME__KIND_RESIZE;
	f.resize = &r;
	r.cols = 140;
	r.rows = 40;
	p = session_frame(&f, &v);
	assert_int_equal(json_object_size(p), 3);
	assert_int_equal(int_at(p, "cols"), 140);
	assert_int_equal(int_at(p, "rows"), 40);
	json_decref(v);

	f.kind_case = PTG__FRAME__KIND_ROLE_ASSIGNED;
	f.role_assigned = &ra;
	ra.role = PTG__ROLE__ROLE_CONTROLLER;
	ra.client_id = "c-alice-7f3a";
	ra.reason = "ignored unless downgraded";
	p = session_frame(&f, &v);
	assert_int_equal(json_object_size(p), 3);
	assert_string_equal(str_at(p, "role"), "controller");
	assert_string_equal(str_at(p, "client_id"), "c-alice-7f3a");
	json_decref(v);

	ra.role = PTG__ROLE__ROLE_OBSERVER;
	ra.downgraded = true;
	ra.reason = "controllers full";
	p = session_frame(&f, &v);
	assert_string_equal(str_at(p, "role"), "observer");
	assert_true(json_is_true(json_object_get(p, "downgraded")));
	assert_string_equal(str_at(p, "reason"), "controllers full");
	json_decref(v);
}

static void test_membership(void **state)
{
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__MembershipChangedFrame m = PTG__MEMBERSHIP_CHANGED_FRAME__INIT;
	Ptg__Member a = PTG__MEMBER__INIT, b = PTG__MEMBER__INIT, c = PTG__MEMBER__INIT;
	Ptg__Member *ctl[] = {&a}, *obs[] = {&b, &c};
	char longlabel[300];
	json_t *v, *p, *o;

	memset(longlabel, 'L', 299);
	longlabel[299] = '\0';
	a.client_id = "c-alice-7f3a";
	a.label = "alice@laptop";
	b.client_id = "c-bob-9f1e";
	b.label = "bob\xff\xc3(x\xed\xa0\x80"; /* invalid UTF-8, a surrogate */
	c.client_id = "c-carol";
	c.label = longlabel;
	f.sequence = 440;
	f.kind_case = PTG__FRAME__KIND_MEMBERSHIP;
	f.membership = &m;
	p = session_frame(&f, &v);
	assert_int_equal(json_array_size(json_object_get(p, "controllers")), 0);
	assert_int_equal(json_array_size(json_object_get(p, "observers")), 0);
	json_decref(v);

	m.controllers = ctl;
	m.n_controllers = 1;
	m.observers = obs;
	m.n_observers = 2;
	p = session_frame(&f, &v);
	o = json_array_get(json_object_get(p, "controllers"), 0);
	assert_string_equal(str_at(o, "client_id"), "c-alice-7f3a");
	assert_string_equal(str_at(o, "label"), "alice@laptop");
	o = json_array_get(json_object_get(p, "observers"), 0);
	assert_string_equal(str_at(o, "label"),
			    "bob\xef\xbf\xbd\xef\xbf\xbd(x\xef\xbf\xbd\xef\xbf\xbd"
			    "\xef\xbf\xbd");
	o = json_array_get(json_object_get(p, "observers"), 1);
	assert_int_equal(strlen(str_at(o, "label")), 128);
	json_decref(v);
}

static void test_keyframe(void **state)
{
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__KeyframeFrame k = PTG__KEYFRAME_FRAME__INIT;
	uint8_t snap[] = "\x1b"
			 "c\x1b[1;1Hagent@inst-42:~$ ";
	json_t *v, *p;
	struct buf raw = BUF_INIT;
	const char *s;

	k.snapshot.data = snap;
	k.snapshot.len = sizeof(snap) - 1;
	k.cols = 120;
	k.rows = 30;
	k.anchor_sequence = 439;
	f.sequence = 439;
	f.kind_case = PTG__FRAME__KIND_KEYFRAME;
	f.keyframe = &k;
	p = session_frame(&f, &v);
	assert_string_equal(str_at(p, "kind"), "Keyframe");
	assert_string_equal(str_at(p, "snapshot_format"), "vt100-screen-state-v1");
	assert_int_equal(int_at(p, "snapshot_cols"), 120);
	assert_int_equal(int_at(p, "snapshot_rows"), 30);
	assert_int_equal(int_at(p, "anchor_sequence"), 439);
	s = str_at(p, "snapshot");
	assert_int_equal(b64_decode(s, strlen(s), &raw), 0);
	assert_int_equal(buf_size(&raw), sizeof(snap) - 1);
	assert_memory_equal(buf_head(&raw), snap, sizeof(snap) - 1);
	json_decref(v);
	buf_free(&raw);
}

static void test_closed(void **state)
{
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__ClosedFrame c = PTG__CLOSED_FRAME__INIT;
	static const char *reasons[] = {"normal", "killed", "timeout",
					"instance_terminated", "error"};
	char detail[3000];
	json_t *v, *p;
	int i;

	f.sequence = 900;
	f.kind_case = PTG__FRAME__KIND_CLOSED;
	f.closed = &c;
	for (i = 0; i < 5; i++) {
		c.reason = (Ptg__CloseReason)i;
		p = session_frame(&f, &v);
		assert_string_equal(str_at(p, "reason"), reasons[i]);
		assert_true(json_is_null(json_object_get(p, "exit_code")));
		assert_null(json_object_get(p, "detail"));
		json_decref(v);
	}
	c.has_exit_code = true;
	c.exit_code = -2;
	for (i = 0; i < 1000; i++)
		memcpy(detail + 2 * i, "\xc3\xa9", 2);
	memset(detail + 2000, 'z', 100);
	detail[2100] = '\0';
	c.detail = detail;
	p = session_frame(&f, &v);
	assert_int_equal(int_at(p, "exit_code"), -2);
	/* 1000 two-byte characters and 24 of the 'z': 1024 code points. */
	assert_int_equal(strlen(str_at(p, "detail")), 2024);
	json_decref(v);
}

static void test_frame_error(void **state)
{
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__ErrorFrame e = PTG__ERROR_FRAME__INIT;
	static const char *codes[] = {"PTY_WRITE_FAILED", "PTY_RESIZE_FAILED",
				      "PTY_OUTPUT_LAGGED", "KEYFRAME_UNAVAILABLE"};
	json_t *v, *p;
	int i;

	f.sequence = 77;
	f.kind_case = PTG__FRAME__KIND_ERROR;
	f.error = &e;
	e.message = "slow client\tdropped";
	for (i = 0; i < 4; i++) {
		e.code = (Ptg__FrameErrorCode)i;
		p = session_frame(&f, &v);
		assert_string_equal(str_at(p, "kind"), "Error");
		assert_string_equal(str_at(p, "code"), codes[i]);
		assert_string_equal(str_at(p, "message"), "slow client\tdropped");
		json_decref(v);
	}
}

static void expect_refused(Ptg__Frame *f)
{
	struct buf b = BUF_INIT;

	buf_append_str(&b, "kept");
	assert_int_equal(frames_session_frame(f, NULL, t0, &b), -EINVAL);
	assert_int_equal(buf_size(&b), 4);
	buf_free(&b);
}

static void test_frame_refused(void **state)
{
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__OutputFrame o = PTG__OUTPUT_FRAME__INIT;
	Ptg__RoleAssignedFrame ra = PTG__ROLE_ASSIGNED_FRAME__INIT;
	Ptg__ClosedFrame c = PTG__CLOSED_FRAME__INIT;
	Ptg__ErrorFrame e = PTG__ERROR_FRAME__INIT;

	expect_refused(&f);
	f.kind_case = PTG__FRAME__KIND_OUTPUT;
	expect_refused(&f); /* kind set, message missing */
	f.output = &o;
	o.stream = (Ptg__Stream)3;
	expect_refused(&f);
	f.kind_case = PTG__FRAME__KIND_ROLE_ASSIGNED;
	f.role_assigned = &ra;
	expect_refused(&f); /* ROLE_UNSPECIFIED */
	f.kind_case = PTG__FRAME__KIND_CLOSED;
	f.closed = &c;
	c.reason = (Ptg__CloseReason)5;
	expect_refused(&f);
	f.kind_case = PTG__FRAME__KIND_ERROR;
	f.error = &e;
	e.code = (Ptg__FrameErrorCode)-1;
	expect_refused(&f);
}

static void test_goodbye_pong(void **state)
{
	struct buf b = BUF_INIT;
	json_t *v, *p;

	frames_goodbye(NULL, FRAMES_BYE_SESSION_CLOSED, NULL, t0, &b);
	v = take(&b);
	assert_string_equal(str_at(json_object_get(v, "payload"), "reason"),
			    "session_closed");
	assert_int_equal(json_object_size(json_object_get(v, "payload")), 1);
	assert_null(json_object_get(v, "sequence"));
	json_decref(v);
	frames_goodbye(UID, FRAMES_BYE_PRINCIPAL_REVOKED, "token expired", t0, &b);
	v = take(&b);
	p = json_object_get(v, "payload");
	assert_string_equal(str_at(p, "reason"), "principal_revoked");
	assert_string_equal(str_at(p, "detail"), "token expired");
	json_decref(v);

	frames_pong(UID, "2026-05-09T14:29:59.000Z", t0, &b);
	v = take(&b);
	assert_string_equal(str_at(v, "op"), "pong");
	assert_string_equal(str_at(v, "id"), UID);
	p = json_object_get(v, "payload");
	assert_string_equal(str_at(p, "client_ts"), "2026-05-09T14:29:59.000Z");
	assert_string_equal(str_at(p, "server_ts"), T0_TEXT);
	json_decref(v);
	buf_free(&b);
}

static void test_control(void **state)
{
	Ptg__ControlPending one = PTG__CONTROL_PENDING__INIT, *list[] = {&one};
	Ptg__ControlNotice n = PTG__CONTROL_NOTICE__INIT;
	struct buf b = BUF_INIT;
	json_t *v, *p, *ev;

	frames_control_notice(&n, t0, &b); /* a joiner's copy: nothing waits */
	v = take(&b);
	p = json_object_get(v, "payload");
	assert_int_equal(json_array_size(json_object_get(p, "pending")), 0);
	assert_null(json_object_get(p, "event"));
	json_decref(v);
	one.client_id = "c-1";
	one.label = "b\xffob";
	one.expires_at_ms = t1;
	n.pending = list;
	n.n_pending = 1;
	n.event = PTG__CONTROL_EVENT_KIND__CONTROL_EVENT_DENIED;
	n.client_id = "c-1";
	n.label = "bob";
	n.by_client_id = "c-2";
	n.by_label = "alice";
	frames_control_notice(&n, t0, &b);
	v = take(&b);
	assert_string_equal(str_at(v, "op"), "ptygate.control_requests");
	assert_null(json_object_get(v, "sequence"));
	p = json_object_get(v, "payload");
	assert_string_equal(str_at(p, "policy"), "approve");
	assert_string_equal(
	    str_at(json_array_get(json_object_get(p, "pending"), 0), "label"),
	    "b\xef\xbf\xbdob");
	assert_string_equal(
	    str_at(json_array_get(json_object_get(p, "pending"), 0), "expires_at"),
	    T1_TEXT);
	ev = json_object_get(p, "event");
	assert_string_equal(str_at(ev, "kind"), "denied");
	assert_string_equal(str_at(json_object_get(ev, "by"), "label"), "alice");
	json_decref(v);

	frames_control_decided(UID, "c-1", true, t0, &b);
	v = take(&b);
	assert_string_equal(str_at(v, "op"), "ptygate.control_decided");
	assert_string_equal(str_at(v, "id"), UID);
	assert_true(
	    json_is_true(json_object_get(json_object_get(v, "payload"), "approve")));
	json_decref(v);
	buf_free(&b);
}

static void test_replies(void **state)
{
	struct buf b = BUF_INIT;
	json_t *v, *sp = json_pack("{s:s}", "trace_id", "t-1");
	json_t *task = json_pack("{s:{s:s}}", "task", "id", "task-1");

	frames_service_update_response(UID, sp, t0, &b);
	v = take(&b);
	assert_string_equal(str_at(v, "op"), "UpdateServiceParameters.Response");
	assert_true(json_equal(
	    json_object_get(json_object_get(v, "payload"), "service_parameters"), sp));
	json_decref(v);

	frames_reply("GetTask", false, UID, task, t0, &b);
	v = take(&b);
	assert_string_equal(str_at(v, "op"), "GetTask.Response");
	assert_true(json_equal(json_object_get(v, "payload"), task));
	assert_null(json_object_get(v, "sequence"));
	json_decref(v);
	frames_reply("SendStreamingMessage", true, UID, NULL, t0, &b);
	v = take(&b);
	assert_string_equal(str_at(v, "op"), "SendStreamingMessage.Accepted");
	assert_int_equal(json_object_size(json_object_get(v, "payload")), 0);
	json_decref(v);

	frames_task_status_update(NULL, task, sp, t0, &b);
	v = take(&b);
	assert_string_equal(str_at(v, "op"), "TaskStatusUpdate");
	assert_true(json_equal(json_object_get(v, "service_parameters"), sp));
	assert_true(json_equal(json_object_get(v, "payload"), task));
	json_decref(v);
	frames_task_status_update(UID, task, NULL, t0, &b);
	v = take(&b);
	assert_null(json_object_get(v, "service_parameters"));
	json_decref(v);

	json_decref(sp);
	json_decref(task);
	buf_free(&b);
}

/* Runs the validator on text; returns its exit status, or -1 to skip. */
static int run_validator(const char *text, size_t n)
{
	char here[4096], cmd[4200];
	FILE *p;
	int status;

	snprintf(here, sizeof(here), "%s", __FILE__);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/validate_frames.py",
		 dirname(here));
	if (access("/usr/bin/python3", X_OK))
		return -1;
	p = popen(cmd, "w");
	assert_non_null(p);
	assert_int_equal(fwrite(text, 1, n, p), n);
	status = pclose(p);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status) == 77 ? -1 : WEXITSTATUS(status);
}

/* Must run after the builders' tests: validates every frame they kept. */
static void test_schema(void **state)
{
	int rc;

	assert_true(buf_size(&all_frames) > 0);
	rc = run_validator((char *)buf_head(&all_frames), buf_size(&all_frames));
	if (rc < 0) {
		fprintf(stderr, "SKIP: /usr/bin/python3 with jsonschema is needed to "
				"validate frames against the JSON Schemas\n");
		skip();
	}
	assert_int_equal(rc, 0);
}

/* The protocol wants `a2a_error: null` for REPLAY_OUT_OF_RANGE
   (docs/protocol.md, "Errors and closing"), but the binding schema types
   a2a_error as an object. The protocol is followed;
   this test keeps the conflict visible: it fails once either side moves. */
static void test_schema_a2a_error_null(void **state)
{
	char text[sizeof(replay_error) + 1];
	int rc;

	snprintf(text, sizeof(text), "%s\n", replay_error);
	rc = run_validator(text, strlen(text));
	if (rc < 0)
		skip();
	assert_int_equal(rc, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hello_exact),
	    cmocka_unit_test(test_error_replay_exact),
	    cmocka_unit_test(test_error_table),
	    cmocka_unit_test(test_error_id_echo),
	    cmocka_unit_test(test_code_from_link),
	    cmocka_unit_test(test_output),
	    cmocka_unit_test(test_resize_role),
	    cmocka_unit_test(test_membership),
	    cmocka_unit_test(test_keyframe),
	    cmocka_unit_test(test_closed),
	    cmocka_unit_test(test_frame_error),
	    cmocka_unit_test(test_frame_refused),
	    cmocka_unit_test(test_goodbye_pong),
	    cmocka_unit_test(test_replies),
	    cmocka_unit_test(test_control),
	    cmocka_unit_test(test_schema),
	    cmocka_unit_test(test_schema_a2a_error_null),
	};
	int rc = cmocka_run_group_tests(tests, setup, NULL);

	buf_free(&all_frames);
	return rc;
}
