/* unit: gateway */
/* etcdjson: replies as etcd 3.4's JSON gateway writes them (int64 as
   strings, base64 bytes, default fields left out) read into structs, every
   malformed field refused with a reason; the request bodies; the stream
   splitter whole, one byte at a time, with braces and quotes inside
   strings, over its cap and on junk. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "b64.h"
#include "etcdjson.h"
#include "log.h"

#define HEADER "\"header\":{\"cluster_id\":\"1\",\"member_id\":\"2\",\"revision\":\"42\"}"
/* "/p/instances/i1" and {"gateway":"gw-a","url":"http://a"} in base64 */
#define KEY_I1 "L3AvaW5zdGFuY2VzL2kx"
#define VAL_A  "eyJnYXRld2F5IjoiZ3ctYSIsInVybCI6Imh0dHA6Ly9hIn0="

static char why[LOG_ERR_MAX];

static int range(const char *body, struct etcdjson_range *r)
{
	return etcdjson_range_reply(body, strlen(body), r, why, sizeof(why));
}

static void test_range_reply(void **state)
{
	struct etcdjson_range r;
	const char *ok =
	    "{" HEADER ",\"kvs\":[{\"key\":\"" KEY_I1 "\",\"create_revision\":\"5\","
	    "\"mod_revision\":\"7\",\"version\":\"1\",\"value\":\"" VAL_A
	    "\",\"lease\":\"7587869\"}],\"more\":true,\"count\":\"3\"}";

	assert_int_equal(range(ok, &r), 0);
	assert_int_equal(r.revision, 42);
	assert_true(r.more);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.kvs[0].key, "/p/instances/i1");
	assert_string_equal(r.kvs[0].value,
			    "{\"gateway\":\"gw-a\",\"url\":\"http://a\"}");
	assert_int_equal(r.kvs[0].mod_revision, 7);
	assert_int_equal(r.kvs[0].create_revision, 5);
	assert_int_equal(r.kvs[0].lease, 7587869);
	etcdjson_range_free(&r);

	/* An empty prefix: no kvs, no more. */
	assert_int_equal(range("{" HEADER "}", &r), 0);
	assert_int_equal(r.n, 0);
	assert_false(r.more);
	etcdjson_range_free(&r);
}

static void test_range_refusals(void **state)
{
	static const char *const bad[] = {
	    "",
	    "[]",
	    "{\"kvs\":[]}", /* no header revision */
	    "{\"error\":\"etcdserver: no leader\",\"code\":14,\"message\":\"etcdserver: "
	    "no "
	    "leader\"}",
	    "{" HEADER ",\"kvs\":{}}",
	    "{\"header\":{\"revision\":\"42\"},\"header\":{}}", /* duplicate */
	};
	struct etcdjson_range r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		assert_int_equal(range(bad[i], &r), -EPROTO);
		assert_true(why[0] != '\0');
		assert_null(r.kvs);
	}
	assert_int_equal(range(bad[3], &r), -EPROTO);
	assert_non_null(strstr(why, "no leader"));
}

/* One bad kv is marked and counted; the good ones around it stand. */
static void test_range_bad_kvs_marked(void **state)
{
	static const char *const bad_kv[] = {
	    "{\"value\":\"" VAL_A "\"}",		 /* no key */
	    "{\"key\":\"not base64!\"}",		 /* bad key */
	    "{\"key\":\"AA==\"}",			 /* NUL in key */
	    "{\"key\":\"" KEY_I1 "\",\"lease\":\"1x\"}", /* bad number */
	    "{\"key\":\"" KEY_I1 "\",\"lease\":true}",	 /* not a number */
	    "{\"key\":\"" KEY_I1
	    "\",\"mod_revision\":\"99999999999999999999\"}", /* over */
	    "7",
	};
	struct etcdjson_range r;
	char body[512];

	for (size_t i = 0; i < sizeof(bad_kv) / sizeof(bad_kv[0]); i++) {
		snprintf(body, sizeof(body),
			 "{" HEADER ",\"kvs\":[{\"key\":\"" KEY_I1
			 "\"},%s,{\"key\":\"" KEY_I1 "\",\"lease\":\"9\"}]}",
			 bad_kv[i]);
		why[0] = '\0';
		assert_int_equal(range(body, &r), 0);
		assert_int_equal(r.n, 3);
		assert_int_equal(r.n_bad, 1);
		assert_true(why[0] != '\0');
		assert_false(r.kvs[0].bad);
		assert_true(r.kvs[1].bad);
		assert_string_equal(r.kvs[1].key, "");
		assert_false(r.kvs[2].bad);
		assert_int_equal(r.kvs[2].lease, 9);
		etcdjson_range_free(&r);
	}
}

static void test_value_over_cap_marked(void **state)
{
	size_t n = ETCDJSON_FIELD_MAX + 3; /* a multiple of 3: no padding */
	char *raw = malloc(n), *body;
	struct buf b = BUF_INIT;
	struct etcdjson_range r;

	memset(raw, 'x', n);
	b64_encode((const uint8_t *)raw, n, &b);
	buf_append(&b, "", 1);
	body = malloc(buf_size(&b) + 200);
	snprintf(body, buf_size(&b) + 200,
		 "{" HEADER ",\"kvs\":[{\"key\":\"%s\",\"value\":\"%s\"}]}", KEY_I1,
		 (const char *)buf_head(&b));
	assert_int_equal(range(body, &r), 0);
	assert_int_equal(r.n_bad, 1);
	assert_true(r.kvs[0].bad);
	etcdjson_range_free(&r);
	free(body);
	free(raw);
	buf_free(&b);
}

static void test_page_over_cap_refused(void **state)
{
	struct buf b = BUF_INIT;
	struct etcdjson_range r;

	buf_append_str(&b, "{" HEADER ",\"kvs\":[");
	for (int i = 0; i <= ETCDJSON_PAGE_MAX; i++)
		buf_appendf(&b, "%s{\"key\":\"" KEY_I1 "\"}", i ? "," : "");
	buf_append(&b, "]}", 3);
	assert_int_equal(range((const char *)buf_head(&b), &r), -EPROTO);
	buf_free(&b);
}

static void test_lease_replies(void **state)
{
	int64_t lease = 0, ttl = -1;
	const char *grant = "{" HEADER ",\"ID\":\"7587869\",\"TTL\":\"10\"}";
	const char *alive = "{\"result\":{" HEADER ",\"ID\":\"7587869\",\"TTL\":\"10\"}}";
	const char *gone = "{\"result\":{" HEADER ",\"ID\":\"7587869\"}}";

	assert_int_equal(
	    etcdjson_grant_reply(grant, strlen(grant), &lease, &ttl, why, 256), 0);
	assert_int_equal(lease, 7587869);
	assert_int_equal(ttl, 10);
	assert_int_equal(etcdjson_grant_reply("{}", 2, &lease, &ttl, why, 256), -EPROTO);
	assert_int_equal(etcdjson_keepalive_reply(alive, strlen(alive), &ttl, why, 256),
			 0);
	assert_int_equal(ttl, 10);
	/* etcd leaves out a TTL of 0: the lease is gone. */
	assert_int_equal(etcdjson_keepalive_reply(gone, strlen(gone), &ttl, why, 256), 0);
	assert_int_equal(ttl, 0);
	assert_int_equal(etcdjson_keepalive_reply(grant, strlen(grant), &ttl, why, 256),
			 -EPROTO);
}

static void test_claim_replies(void **state)
{
	struct etcdjson_kv cur;
	bool ok = false;
	const char *won =
	    "{" HEADER ",\"succeeded\":true,\"responses\":[{\"response_put\":{}}]}";
	const char *held =
	    "{" HEADER ",\"responses\":[{\"response_range\":{" HEADER
	    ",\"kvs\":[{\"key\":\"" KEY_I1 "\",\"mod_revision\":\"9\",\"value\":\"" VAL_A
	    "\",\"lease\":\"55\"}],\"count\":\"1\"}}]}";
	const char *absent =
	    "{" HEADER ",\"responses\":[{\"response_range\":{" HEADER "}}]}";

	assert_int_equal(etcdjson_claim_reply(won, strlen(won), &ok, &cur, why, 256), 0);
	assert_int_equal(ok, 1);
	assert_int_equal(etcdjson_claim_reply(held, strlen(held), &ok, &cur, why, 256),
			 0);
	assert_int_equal(ok, 0);
	assert_string_equal(cur.key, "/p/instances/i1");
	assert_int_equal(cur.lease, 55);
	assert_int_equal(cur.mod_revision, 9);
	assert_int_equal(
	    etcdjson_claim_reply(absent, strlen(absent), &ok, &cur, why, 256), 0);
	assert_int_equal(ok, 0);
	assert_string_equal(cur.key, "");
	/* A failed claim without its range, and a non-boolean succeeded. */
	assert_int_equal(etcdjson_claim_reply("{" HEADER "}", strlen("{" HEADER "}"), &ok,
					      &cur, why, 256),
			 -EPROTO);
	assert_int_equal(
	    etcdjson_claim_reply("{\"succeeded\":1}", 15, &ok, &cur, why, 256), -EPROTO);
	assert_int_equal(etcdjson_txn_reply(won, strlen(won), &ok, why, 256), 0);
	assert_int_equal(ok, 1);
}

static int watch(const char *body, struct etcdjson_watch *w)
{
	return etcdjson_watch_msg(body, strlen(body), w, why, sizeof(why));
}

static void test_watch_messages(void **state)
{
	struct etcdjson_watch w;
	const char *events =
	    "{\"result\":{" HEADER ",\"events\":[{\"kv\":{\"key\":\"" KEY_I1
	    "\",\"value\":\"" VAL_A "\",\"lease\":\"3\"}},{\"type\":\"DELETE\","
	    "\"kv\":{\"key\":\"" KEY_I1 "\",\"mod_revision\":\"42\"}}]}}";

	assert_int_equal(watch("{\"result\":{" HEADER ",\"created\":true}}", &w), 0);
	assert_true(w.created);
	assert_int_equal(w.n, 0);
	etcdjson_watch_free(&w);
	assert_int_equal(watch(events, &w), 0);
	assert_int_equal(w.revision, 42);
	assert_int_equal(w.n, 2);
	assert_false(w.events[0].deleted);
	assert_int_equal(w.events[0].kv.lease, 3);
	assert_true(w.events[1].deleted);
	assert_int_equal(w.events[1].kv.value_len, 0);
	etcdjson_watch_free(&w);
	assert_int_equal(watch("{\"result\":{" HEADER ",\"canceled\":true,"
			       "\"compact_revision\":\"17\"}}",
			       &w),
			 0);
	assert_true(w.canceled);
	assert_int_equal(w.compact_revision, 17);
	etcdjson_watch_free(&w);
	/* An event of an unknown type is marked, the message stands. */
	assert_int_equal(
	    watch("{\"result\":{\"events\":[{\"type\":\"PATCH\",\"kv\":{\"key\":\"" KEY_I1
		  "\"}}]}}",
		  &w),
	    0);
	assert_int_equal(w.n_bad, 1);
	assert_true(w.events[0].kv.bad);
	etcdjson_watch_free(&w);
	/* Refused: no result, a non-boolean flag, an error. */
	assert_int_equal(watch("{" HEADER "}", &w), -EPROTO);
	assert_int_equal(watch("{\"result\":{\"created\":\"yes\"}}", &w), -EPROTO);
	assert_int_equal(
	    watch("{\"error\":{\"grpc_code\":14,\"message\":\"unavailable\"}}", &w),
	    -EPROTO);
}

static void test_requests(void **state)
{
	struct buf b = BUF_INIT;
	json_t *j;
	char end[64];

	etcdjson_claim_req(&b, "/p/instances/i1", "v", 55, 0);
	buf_append(&b, "", 1);
	j = json_loads((const char *)buf_head(&b), 0, NULL);
	assert_non_null(j);
	assert_string_equal(
	    json_string_value(json_object_get(
		json_array_get(json_object_get(j, "compare"), 0), "target")),
	    "CREATE");
	assert_string_equal(json_string_value(json_object_get(
				json_array_get(json_object_get(j, "compare"), 0), "key")),
			    KEY_I1);
	assert_string_equal(
	    json_string_value(json_object_get(
		json_object_get(json_array_get(json_object_get(j, "success"), 0),
				"request_put"),
		"lease")),
	    "55");
	json_decref(j);
	buf_reset(&b);
	etcdjson_claim_req(&b, "/p/instances/i1", "v", 55, 9);
	buf_append(&b, "", 1);
	assert_non_null(strstr((const char *)buf_head(&b), "\"mod_revision\":\"9\""));
	buf_reset(&b);
	etcdjson_release_req(&b, "/p/instances/i1", 55);
	buf_append(&b, "", 1);
	assert_non_null(strstr((const char *)buf_head(&b), "\"target\":\"LEASE\""));
	buf_free(&b);

	etcdjson_prefix_end("/ptygate/", end);
	assert_string_equal(end, "/ptygate0");
	etcdjson_prefix_end("a\xff", end);
	assert_string_equal(end, "b");
}

struct got {
	char msgs[8][256];
	int n;
};

static int collect(const char *msg, size_t len, void *user)
{
	struct got *g = user;

	assert_true(g->n < 8 && len < 256);
	memcpy(g->msgs[g->n], msg, len);
	g->msgs[g->n++][len] = '\0';
	return 0;
}

static const char STREAM[] = "{\"result\":{\"a\":\"}{\\\"\"}}\n"
			     "{\"result\":{\"b\":[1,{\"c\":2}]}}\r\n  {\"x\":\"\\\\\"}";

static void check_stream(const struct got *g)
{
	assert_int_equal(g->n, 3);
	assert_string_equal(g->msgs[0], "{\"result\":{\"a\":\"}{\\\"\"}}");
	assert_string_equal(g->msgs[1], "{\"result\":{\"b\":[1,{\"c\":2}]}}");
	assert_string_equal(g->msgs[2], "{\"x\":\"\\\\\"}");
}

static void test_split_whole_and_bytewise(void **state)
{
	struct etcdjson_split s;
	struct got g = {0};

	etcdjson_split_init(&s, 1024);
	assert_int_equal(etcdjson_split_feed(&s, STREAM, strlen(STREAM), collect, &g), 0);
	check_stream(&g);
	etcdjson_split_free(&s);

	memset(&g, 0, sizeof(g));
	etcdjson_split_init(&s, 1024);
	for (size_t i = 0; i < strlen(STREAM); i++)
		assert_int_equal(etcdjson_split_feed(&s, STREAM + i, 1, collect, &g), 0);
	check_stream(&g);
	etcdjson_split_free(&s);
}

static int stop_cb(const char *msg, size_t len, void *user)
{
	return -ESTALE;
}

static void test_split_refusals(void **state)
{
	struct etcdjson_split s;
	struct got g = {0};

	etcdjson_split_init(&s, 16);
	assert_int_equal(
	    etcdjson_split_feed(&s, "{\"a\":\"0123456789abcdef\"}", 24, collect, &g),
	    -E2BIG);
	etcdjson_split_free(&s);
	etcdjson_split_init(&s, 16);
	assert_int_equal(etcdjson_split_feed(&s, "x{}", 3, collect, &g), -EPROTO);
	etcdjson_split_free(&s);
	/* An object closed by a bracket is no object. */
	etcdjson_split_init(&s, 16);
	assert_int_equal(etcdjson_split_feed(&s, "{]", 2, collect, &g), -EPROTO);
	etcdjson_split_free(&s);
	etcdjson_split_init(&s, 16);
	assert_int_equal(etcdjson_split_feed(&s, "{[}]", 4, collect, &g), -EPROTO);
	etcdjson_split_free(&s);
	etcdjson_split_init(&s, 16);
	assert_int_equal(etcdjson_split_feed(&s, "{}{}", 4, stop_cb, NULL), -ESTALE);
	etcdjson_split_free(&s);
	assert_int_equal(g.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_range_reply),
	    cmocka_unit_test(test_range_refusals),
	    cmocka_unit_test(test_range_bad_kvs_marked),
	    cmocka_unit_test(test_value_over_cap_marked),
	    cmocka_unit_test(test_page_over_cap_refused),
	    cmocka_unit_test(test_lease_replies),
	    cmocka_unit_test(test_claim_replies),
	    cmocka_unit_test(test_watch_messages),
	    cmocka_unit_test(test_requests),
	    cmocka_unit_test(test_split_whole_and_bytewise),
	    cmocka_unit_test(test_split_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
