/* unit: gateway */
/* envelope: parsing of client frames and validation of the pty verbs'
   payloads; every refusal is checked for the field its message names and
   for the id it echoes. */
#include "../../gateway/envelope.c"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "b64.h"
#include "buf.h"
#include "uuid.h"

#define CID "01hw8q3q5y0a8m7r9z3b4tc5xt"

/* The join of docs/protocol.md, "Client ops", with a replay_from. */
static const char example_join[] =
    "{\"op\":\"pty.join_session\",\"id\":\"" CID "\","
    "\"ts\":\"2026-05-09T14:30:00.150Z\","
    "\"extensions\":[\"" PTYWS_EXT_PTY "\"],"
    "\"service_parameters\":{\"trace_id\":\"00-1234-01\"},"
    "\"replay_from\":400,"
    "\"payload\":{\"role\":\"controller\",\"cols\":120,\"rows\":30,"
    "\"client_label\":\"alice@laptop\"}}";

static struct envelope *parse_ok(const char *text)
{
	struct envelope *env = NULL;
	struct envelope_error err;
	int rc = envelope_parse(text, strlen(text), &env, &err);

	if (rc)
		fprintf(stderr, "unexpected error: %s\n  for %s\n", err.message, text);
	assert_int_equal(rc, 0);
	assert_non_null(env);
	return env;
}

/* Parses text expecting a refusal whose message contains want. */
static void parse_err(const char *text, const char *want, struct envelope_error *err)
{
	struct envelope *env = (struct envelope *)1;
	int rc = envelope_parse(text, strlen(text), &env, err);

	assert_int_equal(rc, -EINVAL);
	assert_null(env);
	if (!strstr(err->message, want))
		fprintf(stderr, "message '%s' lacks '%s'\n", err->message, want);
	assert_non_null(strstr(err->message, want));
}

/* The refusal echoes the client's id. */
static void parse_err_echo(const char *text, const char *want)
{
	struct envelope_error err;

	parse_err(text, want, &err);
	assert_string_equal(err.id, CID);
}

/* The refusal carries a fresh UUIDv7 instead of an echo. */
static void parse_err_fresh(const char *text, const char *want)
{
	struct envelope_error err;

	parse_err(text, want, &err);
	assert_true(uuid_is_valid(err.id));
	assert_int_equal(err.id[14], '7');
}

static void test_example_join(void **state)
{
	struct envelope *env = parse_ok(example_join);
	struct envelope_join j;
	struct envelope_error err;

	assert_string_equal(env->op, "pty.join_session");
	assert_int_equal(env->op_kind, ENVELOPE_OP_PTY_JOIN);
	assert_string_equal(env->id, CID);
	assert_true(env->has_replay_from);
	assert_int_equal(env->replay_from, 400);
	assert_true(env->has_extensions);
	assert_true(env->pty_extension);
	assert_non_null(env->service_parameters);
	assert_string_equal(
	    json_string_value(json_object_get(env->service_parameters, "trace_id")),
	    "00-1234-01");
	assert_int_equal(envelope_join(env, &j, &err), 0);
	assert_int_equal(j.role, PTG__ROLE__ROLE_CONTROLLER);
	assert_int_equal(j.cols, 120);
	assert_int_equal(j.rows, 30);
	assert_string_equal(j.label, "alice@laptop");
	envelope_free(env);
	envelope_free(NULL);
}

/* The service parameters outlive the envelope through their reference. */
static void test_service_params_ref(void **state)
{
	struct envelope *env = parse_ok(example_join);
	json_t *sp = json_incref(env->service_parameters);

	envelope_free(env);
	assert_string_equal(json_string_value(json_object_get(sp, "trace_id")),
			    "00-1234-01");
	json_decref(sp);
}

static void test_malformed(void **state)
{
	parse_err_fresh("", "malformed JSON");
	parse_err_fresh("{", "malformed JSON");
	parse_err_fresh("{\"op\":\"ping\",}", "malformed JSON");
	parse_err_fresh("{\"id\":\"a\"} x", "malformed JSON");
	parse_err_fresh("{\"id\":\"a\\u0000b\"}", "malformed JSON");
	parse_err_fresh("[1,2]", "frame must be a JSON object");
	parse_err_fresh("\"x\"", "malformed JSON");
	/* Two readers must never see two different frames. */
	parse_err_fresh("{\"id\":\"a\",\"id\":\"b\",\"op\":\"ping\",\"payload\":{}}",
			"malformed JSON");
}

/* Every proper prefix of a valid frame is refused cleanly. */
static void test_prefixes(void **state)
{
	size_t n = strlen(example_join), i;
	struct envelope *env;
	struct envelope_error err;

	for (i = 0; i < n; i++) {
		env = (struct envelope *)1;
		assert_int_equal(envelope_parse(example_join, i, &env, &err), -EINVAL);
		assert_null(env);
		assert_true(uuid_is_valid(err.id));
	}
}

static void test_id(void **state)
{
	char text[1024], id[600];
	struct envelope *env;
	struct envelope_error err;
	int i;

	parse_err_fresh("{\"op\":\"ping\",\"payload\":{}}", "missing field 'id'");
	parse_err_fresh("{\"op\":\"ping\",\"id\":7,\"payload\":{}}", "field 'id'");
	parse_err_fresh("{\"op\":\"ping\",\"id\":\"\",\"payload\":{}}",
			"field 'id' must be a string of 1 to 128");
	/* 128 two-byte characters are fine, 129 are not. */
	for (i = 0; i < 128; i++)
		memcpy(id + 2 * i, "\xc3\xa9", 2);
	id[256] = '\0';
	snprintf(text, sizeof(text), "{\"op\":\"x\",\"id\":\"%s\",\"payload\":null}", id);
	env = parse_ok(text);
	assert_string_equal(env->id, id);
	envelope_free(env);
	strcpy(id + 256, "e");
	snprintf(text, sizeof(text), "{\"op\":\"x\",\"id\":\"%s\",\"payload\":null}", id);
	parse_err(text, "field 'id'", &err);
	assert_true(uuid_is_valid(err.id));
	/* Any id string is echoed verbatim, quotes and escapes included. */
	env = parse_ok("{\"op\":\"x\",\"id\":\"a\\\"b\\n\",\"payload\":null}");
	assert_string_equal(env->id, "a\"b\n");
	envelope_free(env);
}

static void test_sequence_refused(void **state)
{
	parse_err_echo("{\"op\":\"ping\",\"id\":\"" CID "\",\"sequence\":3,"
		       "\"payload\":{}}",
		       "field 'sequence' must not be set by a client");
	parse_err_echo("{\"op\":\"ping\",\"id\":\"" CID "\",\"sequence\":null,"
		       "\"payload\":{}}",
		       "'sequence'");
}

static void test_fields(void **state)
{
	parse_err_echo("{\"id\":\"" CID "\",\"payload\":{}}", "missing field 'op'");
	parse_err_echo("{\"op\":1,\"id\":\"" CID "\",\"payload\":{}}",
		       "field 'op' must be a string");
	parse_err_echo("{\"op\":\"ping\",\"id\":\"" CID "\",\"ts\":5,\"payload\":{}}",
		       "field 'ts' must be a string");
	parse_err_echo("{\"op\":\"ping\",\"id\":\"" CID "\",\"extra\":5,\"payload\":{}}",
		       "unknown field 'extra'");
	parse_err_echo("{\"op\":\"ping\",\"id\":\"" CID "\"}", "missing field 'payload'");
	parse_err_echo("{\"op\":\"ping\",\"id\":\"" CID "\",\"payload\":[]}",
		       "field 'payload' must be an object or null");
	parse_err_echo("{\"op\":\"ping\",\"id\":\"" CID "\",\"payload\":\"x\"}",
		       "field 'payload' must be an object or null");
}

static void test_ts_ignored(void **state)
{
	struct envelope *env =
	    parse_ok("{\"op\":\"ping\",\"id\":\"a\",\"ts\":\"not a time\","
		     "\"payload\":null}");

	assert_null(env->payload);
	assert_false(env->has_replay_from);
	assert_false(env->has_extensions);
	assert_null(env->service_parameters);
	envelope_free(env);
	env = parse_ok("{\"op\":\"ping\",\"id\":\"a\",\"payload\":{}}");
	assert_non_null(env->payload);
	envelope_free(env);
}

static void check_replay_from(const char *value, int ok, int has, uint64_t want)
{
	char text[256];
	struct envelope *env;

	snprintf(text, sizeof(text),
		 "{\"op\":\"pty.join_session\",\"id\":\"" CID "\","
		 "\"replay_from\":%s,\"payload\":{\"role\":\"observer\"}}",
		 value);
	if (!ok) {
		parse_err_echo(text, "field 'replay_from' must be a non-negative "
				     "integer or null");
		return;
	}
	env = parse_ok(text);
	assert_int_equal(env->has_replay_from, has);
	assert_int_equal(env->replay_from, want);
	envelope_free(env);
}

static void test_replay_from(void **state)
{
	check_replay_from("0", 1, 1, 0);
	check_replay_from("437", 1, 1, 437);
	check_replay_from("9223372036854775807", 1, 1, 9223372036854775807ull);
	check_replay_from("null", 1, 0, 0);
	check_replay_from("-1", 0, 0, 0);
	check_replay_from("1.5", 0, 0, 0);
	check_replay_from("4.0", 0, 0, 0);
	check_replay_from("\"5\"", 0, 0, 0);
	check_replay_from("true", 0, 0, 0);
	check_replay_from("{}", 0, 0, 0);
}

static void check_extensions(const char *value, int pty)
{
	char text[512];
	struct envelope *env;

	snprintf(text, sizeof(text),
		 "{\"op\":\"ping\",\"id\":\"a\",\"extensions\":%s,\"payload\":{}}",
		 value);
	env = parse_ok(text);
	assert_true(env->has_extensions);
	assert_int_equal(env->pty_extension, pty);
	assert_int_equal(env->control_extension,
			 strstr(value, PTYWS_EXT_CONTROL) != NULL);
	envelope_free(env);
}

static void test_extensions(void **state)
{
	char text[1024];
	int i, n;

	check_extensions("[]", 0);
	check_extensions("[\"" PTYWS_EXT_PTY "\"]", 1);
	check_extensions("[\"" PTYWS_EXT_CONTROL "\"]", 0);
	check_extensions("[\"https://example.com/x\",\"" PTYWS_EXT_PTY "\"]", 1);
	check_extensions("[\"" PTYWS_EXT_PTY "/\"]", 0);
	check_extensions("[\"https://agentic-sandbox.aiwg.io/extensions/"
			 "pty-extensions/v2\"]",
			 0);
	parse_err_echo("{\"op\":\"ping\",\"id\":\"" CID "\",\"extensions\":\"x\","
		       "\"payload\":{}}",
		       "field 'extensions' must be an array of strings");
	parse_err_echo("{\"op\":\"ping\",\"id\":\"" CID "\",\"extensions\":[1],"
		       "\"payload\":{}}",
		       "field 'extensions' must be an array of strings");
	parse_err_echo("{\"op\":\"ping\",\"id\":\"" CID "\",\"extensions\":[\"a\",\"a\"],"
		       "\"payload\":{}}",
		       "field 'extensions' repeats an entry");
	n = snprintf(text, sizeof(text),
		     "{\"op\":\"ping\",\"id\":\"" CID "\","
		     "\"extensions\":[\"u0\"");
	for (i = 1; i <= ENVELOPE_EXTENSIONS_MAX; i++)
		n += snprintf(text + n, sizeof(text) - n, ",\"u%d\"", i);
	snprintf(text + n, sizeof(text) - n, "],\"payload\":{}}");
	parse_err_echo(text, "field 'extensions' has more than 16 entries");
}

static void test_service_parameters(void **state)
{
	char *text;
	size_t i, len;
	struct envelope *env;
	const char *head = "{\"op\":\"ping\",\"id\":\"" CID "\","
			   "\"service_parameters\":{\"x\":\"";
	const char *tail = "\"},\"payload\":{}}";
	/* {"x":"…"} is 8 bytes plus the value. */
	size_t fill = ENVELOPE_SERVICE_PARAMS_MAX - 8;

	parse_err_echo("{\"op\":\"ping\",\"id\":\"" CID "\",\"service_parameters\":[],"
		       "\"payload\":{}}",
		       "field 'service_parameters' must be an object");
	parse_err_echo("{\"op\":\"ping\",\"id\":\"" CID "\","
		       "\"service_parameters\":{\"trace_id\":5},\"payload\":{}}",
		       "field 'service_parameters.trace_id' must be a string");
	parse_err_echo("{\"op\":\"ping\",\"id\":\"" CID "\","
		       "\"service_parameters\":{\"tenant_id\":null},\"payload\":{}}",
		       "field 'service_parameters.tenant_id' must be a string");
	len = strlen(head) + fill + 1 + strlen(tail) + 1;
	text = malloc(len);
	for (i = 0; i < 2; i++) {
		memcpy(text, head, strlen(head));
		memset(text + strlen(head), 'v', fill + i);
		strcpy(text + strlen(head) + fill + i, tail);
		if (i == 0) {
			env = parse_ok(text);
			envelope_free(env);
		} else {
			parse_err_echo(text, "field 'service_parameters' exceeds 4096 "
					     "bytes encoded");
		}
	}
	free(text);
}

/* A trace id is written into log lines: one that could forge a line's
   text (a newline, quotes, a "]" closing the context) is refused. */
static void test_trace_id_alphabet(void **state)
{
	static const char *const bad[] = {
	    "t\\nTS INFO audit: attach granted",
	    "t] principal=admin",
	    "a b",
	    "\\\"quoted\\\"",
	    "t\\u001b[2Kx",
	    "caf\\u00e9",
	    "0123456789012345678901234567890123456789012345678901234567890123X",
	};
	static const char *const good[] = {
	    "00-1234567890abcdef1234567890abcdef-aabbccddeeff0011-01",
	    "trace-0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
	    "0123456789012345678901234567890123456789012345678901234567890123",
	    "a.b_c:d",
	    "",
	};
	const char *msg = "field 'service_parameters.trace_id' must be at most 64 "
			  "characters of A-Z a-z 0-9 - . _ :";
	char text[512];
	struct envelope *env;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text),
			 "{\"op\":\"ping\",\"id\":\"" CID "\","
			 "\"service_parameters\":{\"trace_id\":\"%s\"},\"payload\":{}}",
			 bad[i]);
		parse_err_echo(text, msg);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text),
			 "{\"op\":\"ping\",\"id\":\"" CID "\","
			 "\"service_parameters\":{\"trace_id\":\"%s\"},\"payload\":{}}",
			 good[i]);
		env = parse_ok(text);
		envelope_free(env);
	}
}

static void test_op_lookup(void **state)
{
	assert_int_equal(envelope_op_lookup("pty.session_input"), ENVELOPE_OP_PTY_INPUT);
	assert_int_equal(envelope_op_lookup("pty.leave_session"), ENVELOPE_OP_PTY_LEAVE);
	assert_int_equal(envelope_op_lookup("ping"), ENVELOPE_OP_PING);
	assert_int_equal(envelope_op_lookup("UpdateServiceParameters"),
			 ENVELOPE_OP_UPDATE_SERVICE_PARAMETERS);
	assert_int_equal(envelope_op_lookup("SubscribeToTask"),
			 ENVELOPE_OP_SUBSCRIBE_TO_TASK);
	assert_int_equal(envelope_op_lookup("DeleteTaskPushNotificationConfig"),
			 ENVELOPE_OP_PUSH_CONFIG);
	assert_int_equal(envelope_op_lookup("pty.session_frame"), ENVELOPE_OP_UNKNOWN);
	assert_int_equal(envelope_op_lookup("GetTask.Response"), ENVELOPE_OP_UNKNOWN);
	assert_int_equal(envelope_op_lookup("PING"), ENVELOPE_OP_UNKNOWN);
	assert_true(envelope_op_is_pty(ENVELOPE_OP_PTY_JOIN));
	assert_true(envelope_op_is_pty(ENVELOPE_OP_PTY_LEAVE));
	assert_false(envelope_op_is_pty(ENVELOPE_OP_PING));
	assert_false(envelope_op_is_pty(ENVELOPE_OP_UNKNOWN));
	assert_false(envelope_op_is_pty(ENVELOPE_OP_SEND_MESSAGE));
}

/* Parses an envelope of op with the given payload text. */
static struct envelope *with_payload(const char *op, const char *payload)
{
	char text[4096];

	snprintf(text, sizeof(text), "{\"op\":\"%s\",\"id\":\"" CID "\",\"payload\":%s}",
		 op, payload);
	return parse_ok(text);
}

/* Runs a validator expecting a refusal naming want, echoing the id. */
#define EXPECT_REFUSAL(call, want)                                                       \
	do {                                                                             \
		struct envelope_error err_;                                              \
		assert_int_equal((call), -EINVAL);                                       \
		if (!strstr(err_.message, (want)))                                       \
			fprintf(stderr, "message '%s'\n", err_.message);                 \
		assert_non_null(strstr(err_.message, (want)));                           \
		assert_string_equal(err_.id, CID);                                       \
	} while (0)

static int join(const char *payload, struct envelope_join *j, struct envelope_error *err)
{
	struct envelope *env = with_payload("pty.join_session", payload);
	int rc = envelope_join(env, j, err);

	envelope_free(env);
	return rc;
}

static void test_join_bounds(void **state)
{
	struct envelope_join j;
	struct envelope_error err;

	assert_int_equal(join("{\"role\":\"observer\"}", &j, &err), 0);
	assert_int_equal(j.role, PTG__ROLE__ROLE_OBSERVER);
	assert_int_equal(j.cols, 0);
	assert_string_equal(j.label, "");
	assert_int_equal(
	    join("{\"role\":\"observer\",\"cols\":1,\"rows\":1024}", &j, &err), 0);
	assert_int_equal(j.cols, 1);
	assert_int_equal(j.rows, 1024);
	assert_int_equal(
	    join("{\"role\":\"controller\",\"cols\":1024,\"rows\":1}", &j, &err), 0);
	EXPECT_REFUSAL(join("{\"role\":\"observer\",\"cols\":0,\"rows\":5}", &j, &err_),
		       "field 'payload.cols' must be an integer from 1 to 1024");
	EXPECT_REFUSAL(
	    join("{\"role\":\"observer\",\"cols\":1025,\"rows\":5}", &j, &err_),
	    "field 'payload.cols' must be an integer from 1 to 1024");
	EXPECT_REFUSAL(
	    join("{\"role\":\"observer\",\"cols\":5,\"rows\":1025}", &j, &err_),
	    "field 'payload.rows' must be an integer from 1 to 1024");
	EXPECT_REFUSAL(
	    join("{\"role\":\"observer\",\"cols\":\"80\",\"rows\":5}", &j, &err_),
	    "field 'payload.cols'");
	EXPECT_REFUSAL(
	    join("{\"role\":\"observer\",\"cols\":80.0,\"rows\":5}", &j, &err_),
	    "field 'payload.cols'");
	EXPECT_REFUSAL(join("{\"role\":\"observer\",\"cols\":80}", &j, &err_),
		       "must be given together");
	EXPECT_REFUSAL(join("{\"role\":\"observer\",\"rows\":80}", &j, &err_),
		       "must be given together");
}

static void test_join_fields(void **state)
{
	struct envelope_join j;
	struct envelope *env;

	EXPECT_REFUSAL(join("{}", &j, &err_), "missing field 'payload.role'");
	EXPECT_REFUSAL(join("{\"role\":\"admin\"}", &j, &err_),
		       "field 'payload.role' must be \"controller\" or \"observer\"");
	EXPECT_REFUSAL(join("{\"role\":1}", &j, &err_), "field 'payload.role'");
	EXPECT_REFUSAL(join("{\"role\":\"observer\",\"x\":1}", &j, &err_),
		       "unknown field 'payload.x'");
	EXPECT_REFUSAL(join("{\"role\":\"observer\",\"client_label\":7}", &j, &err_),
		       "field 'payload.client_label' must be a string of at most 128");
	env = with_payload("pty.join_session", "null");
	EXPECT_REFUSAL(envelope_join(env, &j, &err_),
		       "field 'payload' must be an object");
	envelope_free(env);
}

/* Labels count characters (code points), not bytes. */
static void test_join_label(void **state)
{
	char payload[1024], label[600];
	struct envelope_join j;
	struct envelope_error err;
	int i;

	for (i = 0; i < 128; i++)
		memcpy(label + 3 * i, "\xe2\x82\xac", 3); /* U+20AC */
	label[384] = '\0';
	snprintf(payload, sizeof(payload),
		 "{\"role\":\"observer\",\"client_label\":\"%s\"}", label);
	assert_int_equal(join(payload, &j, &err), 0);
	assert_string_equal(j.label, label);
	strcpy(label + 384, "x");
	snprintf(payload, sizeof(payload),
		 "{\"role\":\"observer\",\"client_label\":\"%s\"}", label);
	EXPECT_REFUSAL(join(payload, &j, &err_),
		       "field 'payload.client_label' must be a string of at most 128 "
		       "characters");
}

/* Builds a pty.session_input envelope whose data encodes n bytes. */
static struct envelope *input_of(size_t n)
{
	uint8_t *raw = calloc(1, n + 1);
	struct buf text = BUF_INIT;
	struct envelope *env;
	size_t i;

	for (i = 0; i < n; i++)
		raw[i] = (uint8_t)(i * 7 + 3);
	buf_append_str(&text, "{\"op\":\"pty.session_input\",\"id\":\"" CID "\","
			      "\"payload\":{\"data\":\"");
	b64_encode(raw, n, &text);
	buf_append_str(&text, "\"}}");
	env = NULL;
	{
		struct envelope_error err;

		assert_int_equal(
		    envelope_parse((char *)buf_head(&text), buf_size(&text), &env, &err),
		    0);
	}
	buf_free(&text);
	free(raw);
	return env;
}

/* envelope_parse's answer to text against envelope_parse_tree's: both
   refuse with one message, or both accept with one id, op and input.
   Returns whether the plain path took it. */
static int same_answer_as_tree(const char *text, size_t len)
{
	struct envelope_error e1, e2;
	struct envelope *a = NULL, *b = NULL;
	struct buf da = BUF_INIT, db = BUF_INIT;
	int ra = envelope_parse(text, len, &a, &e1);
	int rb = envelope_parse_tree(text, len, &b, &e2);
	int plain = a && !a->root;

	assert_int_equal(ra, rb);
	if (ra) {
		assert_string_equal(e1.message, e2.message);
		return 0;
	}
	assert_string_equal(a->id, b->id);
	assert_int_equal(a->op_kind, b->op_kind);
	if (a->op_kind == ENVELOPE_OP_PTY_INPUT) {
		ra = envelope_input(a, &da, &e1);
		rb = envelope_input(b, &db, &e2);
		assert_int_equal(ra, rb);
		assert_int_equal(buf_size(&da), buf_size(&db));
		if (buf_size(&da))
			assert_memory_equal(buf_head(&da), buf_head(&db), buf_size(&da));
		if (ra)
			assert_string_equal(e1.message, e2.message);
	}
	if (plain)
		assert_true(!b->has_replay_from && !b->has_extensions &&
			    !b->service_parameters);
	envelope_free(a);
	envelope_free(b);
	buf_free(&da);
	buf_free(&db);
	return plain;
}

static void test_input_size(void **state)
{
	struct buf data = BUF_INIT;
	struct envelope_error err;
	struct envelope *env;
	size_t i;

	env = input_of(PTG_INPUT_MAX);
	assert_int_equal(envelope_input(env, &data, &err), 0);
	assert_int_equal(buf_size(&data), PTG_INPUT_MAX);
	for (i = 0; i < PTG_INPUT_MAX; i++)
		assert_int_equal(buf_head(&data)[i], (uint8_t)(i * 7 + 3));
	envelope_free(env);
	buf_reset(&data);

	env = input_of(PTG_INPUT_MAX + 1);
	EXPECT_REFUSAL(envelope_input(env, &data, &err_), "oversized input");
	assert_int_equal(buf_size(&data), 0);
	envelope_free(env);

	env = input_of(0);
	assert_int_equal(envelope_input(env, &data, &err), 0);
	assert_int_equal(buf_size(&data), 0);
	envelope_free(env);
	buf_free(&data);
}

static void check_bad_input(const char *payload, const char *want)
{
	struct buf data = BUF_INIT;
	struct envelope *env = with_payload("pty.session_input", payload);

	buf_append_str(&data, "keep");
	EXPECT_REFUSAL(envelope_input(env, &data, &err_), want);
	assert_int_equal(buf_size(&data), 4);
	envelope_free(env);
	buf_free(&data);
}

static void test_input_bad(void **state)
{
	struct buf data = BUF_INIT;
	struct envelope_error err;
	struct envelope *env =
	    with_payload("pty.session_input", "{\"data\":\"bHMgLWxhCg==\"}");

	assert_int_equal(envelope_input(env, &data, &err), 0);
	assert_int_equal(buf_size(&data), 7);
	assert_memory_equal(buf_head(&data), "ls -la\n", 7);
	envelope_free(env);
	buf_free(&data);

	check_bad_input("{\"data\":\"bHMgLWxhCg=\"}", "not valid base64");
	check_bad_input("{\"data\":\"bHMg LWxhCg==\"}", "not valid base64");
	check_bad_input("{\"data\":\"bHMgLWxhCg==\\n\"}", "not valid base64");
	check_bad_input("{\"data\":\"bHMgLWxh_g==\"}", "not valid base64");
	check_bad_input("{\"data\":\"bHMgLWxhCh==\"}", "not valid base64");
	check_bad_input("{\"data\":\"=\"}", "not valid base64");
	check_bad_input("{\"data\":5}", "field 'payload.data' must be a base64 string");
	check_bad_input("{}", "missing field 'payload.data'");
	check_bad_input("{\"data\":\"\",\"more\":1}", "unknown field 'payload.more'");
	check_bad_input("null", "field 'payload' must be an object");
}

/* The input ops the clients send (the CLI's, the web page's, the load
   client's, and with JSON's whitespace) are taken without a tree, and
   mean what the tree says they mean. */
static void test_plain_input_taken(void **state)
{
	static const char *const frames[] = {
	    "{\"op\":\"pty.session_input\",\"id\":\"" CID "\","
	    "\"ts\":\"2026-12-07T15:20:00.123Z\",\"payload\":{\"data\":\"bHMgLWxhCg==\"}"
	    "}",
	    "{\"payload\":{\"data\":\"bHMgLWxhCg==\"},\"op\":\"pty.session_input\","
	    "\"id\":\"" CID "\"}",
	    " {\n\t\"id\" : \"" CID "\" ,\r\n \"op\":\"pty.session_input\","
	    "\"payload\" : { \"data\" : \"bHMgLWxhCg==\" } } \n",
	};
	struct envelope_error err;
	struct envelope *plain, *tree;
	struct buf a = BUF_INIT, b = BUF_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(frames) / sizeof(frames[0]); i++) {
		plain = parse_ok(frames[i]);
		assert_null(plain->root); /* no tree was built */
		assert_int_equal(plain->op_kind, ENVELOPE_OP_PTY_INPUT);
		assert_string_equal(plain->id, CID);
		assert_int_equal(envelope_input(plain, &a, &err), 0);
		assert_int_equal(buf_size(&a), 7);
		assert_memory_equal(buf_head(&a), "ls -la\n", 7);
		assert_int_equal(
		    envelope_parse_tree(frames[i], strlen(frames[i]), &tree, &err), 0);
		assert_int_equal(envelope_input(tree, &b, &err), 0);
		assert_int_equal(buf_size(&b), 7);
		assert_memory_equal(buf_head(&b), "ls -la\n", 7);
		envelope_free(plain);
		envelope_free(tree);
		buf_reset(&a);
		buf_reset(&b);
	}
	buf_free(&a);
	buf_free(&b);
}

/* Anything past the plain shape goes to Jansson, which answers as it
   always did: the same acceptance, the same refusal message. */
static void test_plain_input_leaves_the_rest(void **state)
{
	static const char *const frames[] = {
	    "{\"op\":\"pty.session_input\",\"id\":\"k\\u0031\",\"payload\":{\"data\":"
	    "\"Zw==\"}}",
	    "{\"op\":\"pty.session_input\",\"id\":\"k\xc3\xa9\",\"payload\":{\"data\":"
	    "\"Zw==\"}}",
	    "{\"op\":\"pty.session_input\",\"id\":\"k1\",\"extensions\":[\"" PTYWS_EXT_PTY
	    "\"],"
	    "\"payload\":{\"data\":\"Zw==\"}}",
	    "{\"op\":\"pty.session_input\",\"id\":\"k1\",\"replay_from\":3,"
	    "\"payload\":{\"data\":\"Zw==\"}}",
	    "{\"op\":\"pty.session_input\",\"id\":\"k1\",\"service_parameters\":{},"
	    "\"payload\":{\"data\":\"Zw==\"}}",
	    "{\"op\":\"pty.session_input\",\"id\":\"k1\",\"sequence\":1,"
	    "\"payload\":{\"data\":\"Zw==\"}}",
	    "{\"op\":\"pty.session_input\",\"id\":\"k1\",\"payload\":{\"data\":\"Zw==\","
	    "\"x\":1}}",
	    "{\"op\":\"pty.session_input\",\"id\":\"k1\",\"id\":\"k2\",\"payload\":{"
	    "\"data\":\"Zw==\"}}",
	    "{\"op\":\"pty.session_input\",\"id\":\"k1\",\"payload\":{\"data\":\"Zw==\"},"
	    "\"payload\":{\"data\":\"aA==\"}}",
	    "{\"op\":\"pty.session_input\",\"id\":\"k1\",\"payload\":{\"data\":\"Zw==\"}}"
	    "x",
	    "{\"op\":\"pty.session_input\",\"id\":\"k1\",\"payload\":{\"data\":\"Zw==\"},"
	    "}",
	    "{\"op\":\"pty.session_resize\",\"id\":\"k1\",\"payload\":{\"data\":\"Zw==\"}"
	    "}",
	    "{\"op\":\"pty.session_input\",\"id\":7,\"payload\":{\"data\":\"Zw==\"}}",
	    "{\"op\":\"pty.session_input\",\"id\":\"\",\"payload\":{\"data\":\"Zw==\"}}",
	    "{\"op\":\"pty.session_input\",\"id\":\"k1\",\"payload\":null}",
	    "{\"op\":\"pty.session_input\",\"id\":\"k1\",\"payload\":{\"data\":\"Zw==}}",
	    "{\"op\":\"pty.session_input\",\"id\":\"k\t1\",\"payload\":{\"data\":\"Zw=="
	    "\"}}",
	    "{\"op\":\"pty.session_input\",\"id\":\"k1\"}",
	    "{\"op\":\"pty.session_input\",\"payload\":{\"data\":\"Zw==\"}}",
	    "{\"id\":\"k1\",\"payload\":{\"data\":\"Zw==\"}}",
	    "{\"op\":\"pty.session_input\",\"id\":\"k1\",\"payload\":{\"data\":5}}",
	    "{\"op\":\"pty.session_input\",\"id\":\"k1\",\"ts\":5,\"payload\":{\"data\":"
	    "\"Zw==\"}}",
	    "{}",
	    "",
	};
	static char long_id[300];
	struct envelope *none;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(frames) / sizeof(frames[0]); i++) {
		assert_false(envelope_plain_input(frames[i], strlen(frames[i]), &none));
		assert_null(none);
		same_answer_as_tree(frames[i], strlen(frames[i]));
	}
	snprintf(
	    long_id, sizeof(long_id),
	    "{\"op\":\"pty.session_input\",\"id\":\"%0*d\",\"payload\":{\"data\":\"\"}}",
	    PTG_MSG_ID_MAX_CHARS + 1, 0);
	assert_false(envelope_plain_input(long_id, strlen(long_id), &none));
	same_answer_as_tree(long_id, strlen(long_id));
}

/* Every frame one byte away from the clients' (a byte replaced by one of
   JSON's or a byte no plain string holds, or the frame cut short): when
   the plain path takes it, the tree takes it with the same meaning;
   otherwise the answer is the tree's. */
static void test_plain_input_near_misses(void **state)
{
	static const char base[] = "{\"op\":\"pty.session_input\",\"id\":\"" CID "\","
				   "\"ts\":\"2026-12-07T15:20:00.123Z\",\"payload\":{"
				   "\"data\":\"bHMgLWxhCg==\"}}";
	static const char swaps[] = {'"', '\\', ' ',  '{',    '}',    ',',  ':',
				     '[', 'x',	'\0', '\x7f', '\x80', '\n', '='};
	char text[sizeof(base)];
	size_t i, j, taken = 0;

	(void)state;
	for (i = 0; i < sizeof(base) - 1; i++) {
		for (j = 0; j < sizeof(swaps); j++) {
			memcpy(text, base, sizeof(base));
			text[i] = swaps[j];
			taken += same_answer_as_tree(text, sizeof(base) - 1);
		}
		taken += same_answer_as_tree(base, i);
	}
	assert_true(taken > 0);
}

static void test_resize(void **state)
{
	struct envelope_resize r;
	struct envelope *env =
	    with_payload("pty.session_resize", "{\"cols\":140,\"rows\":40}");

	{
		struct envelope_error err;

		assert_int_equal(envelope_resize(env, &r, &err), 0);
	}
	assert_int_equal(r.cols, 140);
	assert_int_equal(r.rows, 40);
	envelope_free(env);
	env = with_payload("pty.session_resize", "{\"cols\":140}");
	EXPECT_REFUSAL(envelope_resize(env, &r, &err_), "missing field 'payload.rows'");
	envelope_free(env);
	env = with_payload("pty.session_resize", "{\"rows\":40}");
	EXPECT_REFUSAL(envelope_resize(env, &r, &err_), "missing field 'payload.cols'");
	envelope_free(env);
	env = with_payload("pty.session_resize", "{\"cols\":0,\"rows\":40}");
	EXPECT_REFUSAL(envelope_resize(env, &r, &err_), "field 'payload.cols' must be");
	envelope_free(env);
	env = with_payload("pty.session_resize", "{\"cols\":1,\"rows\":1025}");
	EXPECT_REFUSAL(envelope_resize(env, &r, &err_), "field 'payload.rows' must be");
	envelope_free(env);
	env = with_payload("pty.session_resize", "{\"cols\":1,\"rows\":2,\"z\":0}");
	EXPECT_REFUSAL(envelope_resize(env, &r, &err_), "unknown field 'payload.z'");
	envelope_free(env);
}

static void test_request_role(void **state)
{
	Ptg__Role role = PTG__ROLE__ROLE_UNSPECIFIED;
	struct envelope_error err;
	struct envelope *env =
	    with_payload("pty.request_role", "{\"role\":\"controller\"}");

	assert_int_equal(envelope_request_role(env, &role, &err), 0);
	assert_int_equal(role, PTG__ROLE__ROLE_CONTROLLER);
	envelope_free(env);
	env = with_payload("pty.request_role", "{\"role\":\"Controller\"}");
	EXPECT_REFUSAL(envelope_request_role(env, &role, &err_), "field 'payload.role'");
	envelope_free(env);
	env = with_payload("pty.request_role", "{\"role\":\"observer\",\"why\":\"x\"}");
	EXPECT_REFUSAL(envelope_request_role(env, &role, &err_),
		       "unknown field 'payload.why'");
	envelope_free(env);
}

static void test_decide_control(void **state)
{
	struct envelope_decide d;
	struct envelope_error err;
	struct envelope *env = with_payload("ptygate.decide_control",
					    "{\"client_id\":\"c-0a\",\"approve\":false}");

	assert_int_equal(env->op_kind, ENVELOPE_OP_CONTROL_DECIDE);
	assert_false(envelope_op_is_pty(env->op_kind));
	assert_int_equal(envelope_decide_control(env, &d, &err), 0);
	assert_string_equal(d.client_id, "c-0a");
	assert_false(d.approve);
	envelope_free(env);
	env = with_payload("ptygate.decide_control",
			   "{\"client_id\":\"c-0a\",\"approve\":1}");
	EXPECT_REFUSAL(envelope_decide_control(env, &d, &err_),
		       "field 'payload.approve'");
	envelope_free(env);
	env = with_payload("ptygate.decide_control",
			   "{\"client_id\":\"\",\"approve\":true}");
	EXPECT_REFUSAL(envelope_decide_control(env, &d, &err_),
		       "field 'payload.client_id'");
	envelope_free(env);
	env = with_payload("ptygate.decide_control", "{\"approve\":true,\"x\":1}");
	EXPECT_REFUSAL(envelope_decide_control(env, &d, &err_),
		       "unknown field 'payload.x'");
	envelope_free(env);
}

static void test_no_fields(void **state)
{
	struct envelope_error err;
	struct envelope *env = with_payload("pty.request_keyframe", "{}");

	assert_int_equal(envelope_no_fields(env, &err), 0);
	envelope_free(env);
	env = with_payload("pty.leave_session", "null");
	assert_int_equal(envelope_no_fields(env, &err), 0);
	envelope_free(env);
	env = with_payload("pty.leave_session", "{\"now\":true}");
	EXPECT_REFUSAL(envelope_no_fields(env, &err_), "unknown field 'payload.now'");
	envelope_free(env);
}

static void test_ping(void **state)
{
	const char *ts = NULL;
	struct envelope_error err;
	struct envelope *env =
	    with_payload("ping", "{\"client_ts\":"
				 "\"2026-05-09T14:30:00.182Z\",\"x\":1}");

	assert_int_equal(envelope_ping(env, &ts, &err), 0);
	assert_string_equal(ts, "2026-05-09T14:30:00.182Z");
	envelope_free(env);
	env = with_payload("ping", "{\"client_ts\":\"yesterday\"}");
	EXPECT_REFUSAL(envelope_ping(env, &ts, &err_),
		       "field 'payload.client_ts' must be an RFC 3339 timestamp");
	envelope_free(env);
	env = with_payload("ping", "{\"client_ts\":12}");
	EXPECT_REFUSAL(envelope_ping(env, &ts, &err_), "field 'payload.client_ts'");
	envelope_free(env);
	env = with_payload("ping", "{}");
	EXPECT_REFUSAL(envelope_ping(env, &ts, &err_),
		       "missing field 'payload.client_ts'");
	envelope_free(env);
}

static void test_service_update(void **state)
{
	json_t *sp = NULL;
	struct envelope_error err;
	struct envelope *env = with_payload(
	    "UpdateServiceParameters", "{\"service_parameters\":{\"trace_id\":\"t2\"}}");

	assert_int_equal(envelope_service_update(env, &sp, &err), 0);
	assert_string_equal(json_string_value(json_object_get(sp, "trace_id")), "t2");
	envelope_free(env);
	env = with_payload("UpdateServiceParameters", "{}");
	EXPECT_REFUSAL(envelope_service_update(env, &sp, &err_),
		       "missing field 'payload.service_parameters'");
	envelope_free(env);
	env = with_payload("UpdateServiceParameters", "{\"service_parameters\":3}");
	EXPECT_REFUSAL(envelope_service_update(env, &sp, &err_),
		       "field 'payload.service_parameters' must be an object");
	envelope_free(env);
	env = with_payload("UpdateServiceParameters",
			   "{\"service_parameters\":{\"idempotency_key\":[]}}");
	EXPECT_REFUSAL(envelope_service_update(env, &sp, &err_),
		       "field 'payload.service_parameters.idempotency_key' must be a "
		       "string");
	envelope_free(env);
}

/* Client text quoted in a message is cut at a character boundary. */
static void test_message_utf8(void **state)
{
	char text[512], key[200];
	struct envelope_error err;
	size_t i;

	for (i = 0; i < 63; i++)
		key[i] = 'k';
	strcpy(key + 63, "\xc3\xa9tail");
	snprintf(text, sizeof(text),
		 "{\"op\":\"ping\",\"id\":\"" CID "\",\"%s\":1,"
		 "\"payload\":{}}",
		 key);
	parse_err(text, "unknown field 'kkk", &err);
	assert_null(strstr(err.message, "\xc3"));
	assert_non_null(strstr(err.message, "kkk'"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_example_join),
	    cmocka_unit_test(test_service_params_ref),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_prefixes),
	    cmocka_unit_test(test_id),
	    cmocka_unit_test(test_sequence_refused),
	    cmocka_unit_test(test_fields),
	    cmocka_unit_test(test_ts_ignored),
	    cmocka_unit_test(test_replay_from),
	    cmocka_unit_test(test_extensions),
	    cmocka_unit_test(test_service_parameters),
	    cmocka_unit_test(test_trace_id_alphabet),
	    cmocka_unit_test(test_op_lookup),
	    cmocka_unit_test(test_decide_control),
	    cmocka_unit_test(test_join_bounds),
	    cmocka_unit_test(test_join_fields),
	    cmocka_unit_test(test_join_label),
	    cmocka_unit_test(test_input_size),
	    cmocka_unit_test(test_input_bad),
	    cmocka_unit_test(test_plain_input_taken),
	    cmocka_unit_test(test_plain_input_leaves_the_rest),
	    cmocka_unit_test(test_plain_input_near_misses),
	    cmocka_unit_test(test_resize),
	    cmocka_unit_test(test_request_role),
	    cmocka_unit_test(test_no_fields),
	    cmocka_unit_test(test_ping),
	    cmocka_unit_test(test_service_update),
	    cmocka_unit_test(test_message_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
