/* unit: gateway */
/* peers: address parsing in both families, CIDR matching, the client
   behind trusted proxies from X-Forwarded-For (last untrusted hop, spoofed
   left parts ignored), and the per-address count table. */
#include "../../gateway/http/peers.c"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* ---- what the test reads of peers.c, which it includes ---- */

/* The count of a's address (its /64 for IPv6). */
static unsigned peer_table_count(const struct peer_table *t, const struct peer_addr *a)
{
	struct peer_addr k = key_of(a);

	return count_of(t, &k);
}

/* Addresses with a count, for tests. */
static size_t peer_table_size(const struct peer_table *t)
{
	return t->size;
}

static struct peer_addr addr(const char *s)
{
	struct peer_addr a;

	assert_int_equal(peer_addr_parse(s, strlen(s), &a), 0);
	return a;
}

static void assert_addr(const struct peer_addr *a, const char *want)
{
	char text[64];

	peer_addr_str(a, text, sizeof(text));
	assert_string_equal(text, want);
}

static void test_parses_both_families(void **state)
{
	struct peer_addr a;
	static const char *const bad[] = {"",	  "1.2.3", "1.2.3.4:80", "::g",
					  "[::1", "host",  "1.2.3.4 ",	 " 1.2.3.4"};

	a = addr("192.0.2.7");
	assert_addr(&a, "192.0.2.7");
	a = addr("[2001:db8::1]");
	assert_addr(&a, "2001:db8::1");
	a = addr("::ffff:192.0.2.7"); /* mapped: the same key as the IPv4 form */
	assert_addr(&a, "192.0.2.7");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(peer_addr_parse(bad[i], strlen(bad[i]), &a), -22);
}

static void test_cidrs(void **state)
{
	struct peer_cidr c;
	struct peer_addr a;
	static const char *const bad[] = {"10.0.0.0/33",
					  "10.0.0.0/",
					  "10.0.0.0/x",
					  "::/129",
					  "[::1]/128",
					  "10.0.0.0/8/8",
					  "10.0.0.0/-1",
					  "",
					  "10.0.0.0/+8",
					  "10.0.0.0/ 8",
					  "10.0.0.0/8 ",
					  "10.0.0.0/0032",
					  "::/99999999999999999999"};

	assert_int_equal(peer_cidr_parse("10.0.0.0/8", &c), 0);
	a = addr("10.200.3.4");
	assert_true(peer_cidr_contains(&c, &a));
	a = addr("11.0.0.1");
	assert_false(peer_cidr_contains(&c, &a));
	assert_int_equal(peer_cidr_parse("192.0.2.9", &c), 0); /* a single host */
	a = addr("192.0.2.9");
	assert_true(peer_cidr_contains(&c, &a));
	a = addr("192.0.2.8");
	assert_false(peer_cidr_contains(&c, &a));
	assert_int_equal(peer_cidr_parse("10.1.2.3/8", &c), 0); /* host bits dropped */
	a = addr("10.9.9.9");
	assert_true(peer_cidr_contains(&c, &a));
	assert_int_equal(peer_cidr_parse("2001:db8::/32", &c), 0);
	a = addr("2001:db8:ffff::1");
	assert_true(peer_cidr_contains(&c, &a));
	a = addr("2001:db9::1");
	assert_false(peer_cidr_contains(&c, &a));
	assert_int_equal(peer_cidr_parse("0.0.0.0/0", &c), 0); /* every IPv4, no IPv6 */
	a = addr("203.0.113.1");
	assert_true(peer_cidr_contains(&c, &a));
	a = addr("2001:db8::1");
	assert_false(peer_cidr_contains(&c, &a));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(peer_cidr_parse(bad[i], &c), -22);
}

static void client_of(const char *peer, const char *xff, const char *want)
{
	struct peer_cidr trusted[2];
	struct peer_addr p = addr(peer), out;

	assert_int_equal(peer_cidr_parse("127.0.0.1", &trusted[0]), 0);
	assert_int_equal(peer_cidr_parse("10.0.0.0/8", &trusted[1]), 0);
	peer_client(trusted, 2, &p, xff, &out);
	assert_addr(&out, want);
}

static void test_client_behind_trusted_proxies(void **state)
{
	/* An untrusted peer's header is ignored: it could say anything. */
	client_of("198.51.100.1", "203.0.113.5", "198.51.100.1");
	client_of("127.0.0.1", NULL, "127.0.0.1");
	client_of("127.0.0.1", "203.0.113.5", "203.0.113.5");
	/* The last untrusted hop: what the client wrote to the left is not it. */
	client_of("127.0.0.1", "1.1.1.1, 203.0.113.5, 10.0.0.2", "203.0.113.5");
	client_of("127.0.0.1", "1.1.1.1,203.0.113.5,10.0.0.2", "203.0.113.5");
	/* Every hop trusted: the leftmost. */
	client_of("127.0.0.1", "10.0.0.3, 10.0.0.2", "10.0.0.3");
	/* A hop that is not an address stops the walk at what was known. */
	client_of("127.0.0.1", "203.0.113.5, garbage", "127.0.0.1");
	client_of("127.0.0.1", "garbage, 10.0.0.2", "10.0.0.2");
	client_of("127.0.0.1", "", "127.0.0.1");
	client_of("127.0.0.1", "[2001:db8::5]", "2001:db8::5");
}

static void test_count_table(void **state)
{
	struct peer_table *t = peer_table_new();
	struct peer_addr a = addr("192.0.2.1"), b = addr("2001:db8::1");

	for (int i = 0; i < 3; i++)
		assert_int_equal(peer_table_take(t, &a, 3), 0);
	assert_int_equal(peer_table_take(t, &a, 3), -16);
	assert_int_equal(peer_table_take(t, &b, 3), 0);
	assert_int_equal(peer_table_count(t, &a), 3);
	assert_int_equal(peer_table_size(t), 2);
	peer_table_give(t, &a);
	assert_int_equal(peer_table_take(t, &a, 3), 0);
	for (int i = 0; i < 3; i++)
		peer_table_give(t, &a);
	peer_table_give(t, &a); /* one too many: ignored */
	peer_table_give(t, &b);
	assert_int_equal(peer_table_size(t), 0);
	/* An IPv6 /64 counts as one client: its host picks addresses freely. */
	b = addr("2001:db8:0:1::1");
	assert_int_equal(peer_table_take(t, &b, 2), 0);
	b = addr("2001:db8:0:1:ffff:1:2:3");
	assert_int_equal(peer_table_take(t, &b, 2), 0);
	assert_int_equal(peer_table_take(t, &b, 2), -16);
	b = addr("2001:db8:0:2::1");
	assert_int_equal(peer_table_take(t, &b, 2), 0);
	assert_int_equal(peer_table_size(t), 2);
	b = addr("2001:db8:0:1::1");
	peer_table_give(t, &b);
	peer_table_give(t, &b);
	b = addr("2001:db8:0:2::1");
	peer_table_give(t, &b);
	assert_int_equal(peer_table_size(t), 0);
	assert_int_equal(peer_table_count(t, &a), 0);
	peer_table_free(t);
}

/* An IPv6 /56 is one site: spread over its /64s it still holds at most
   PEERS_SITE_FACTOR times the per-address limit; another /56 is not
   touched by it. */
static void test_ipv6_site_cap(void **state)
{
	struct peer_table *t = peer_table_new();
	struct peer_addr a, other = addr("2001:db8:0:100::1");
	char text[64];
	unsigned limit = 2;

	for (unsigned net = 0; net < PEERS_SITE_FACTOR; net++) {
		snprintf(text, sizeof(text), "2001:db8:0:%x::1", net);
		a = addr(text);
		for (unsigned i = 0; i < limit; i++)
			assert_int_equal(peer_table_take(t, &a, limit), 0);
		assert_true(peer_table_full(t, &a, limit));
	}
	/* A fresh /64 in the same /56 (2001:db8:0:0-ff::/56). */
	a = addr("2001:db8:0:ff::1");
	assert_int_equal(peer_table_count(t, &a), 0);
	assert_true(peer_table_full(t, &a, limit));
	assert_int_equal(peer_table_take(t, &a, limit), -EBUSY);
	assert_false(peer_table_full(t, &other, limit));
	assert_int_equal(peer_table_take(t, &other, limit), 0);
	/* One connection of the site going makes room for one more. */
	a = addr("2001:db8:0:1::1");
	peer_table_give(t, &a);
	a = addr("2001:db8:0:ff::1");
	assert_int_equal(peer_table_take(t, &a, limit), 0);
	assert_int_equal(peer_table_take(t, &a, limit), -EBUSY);
	/* IPv4 has no site: only the address counts. */
	a = addr("192.0.2.7");
	assert_int_equal(peer_table_take(t, &a, 1), 0);
	assert_true(peer_table_full(t, &a, 1));
	assert_int_equal(peer_table_size(t), PEERS_SITE_FACTOR + 3);
	peer_table_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parses_both_families),
	    cmocka_unit_test(test_cidrs),
	    cmocka_unit_test(test_client_behind_trusted_proxies),
	    cmocka_unit_test(test_count_table),
	    cmocka_unit_test(test_ipv6_site_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
