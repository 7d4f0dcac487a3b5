/* unit: sidecar */
/* test_ring: retention rules alone and combined, the byte budget, replay
   range checks and foreach_after at every boundary, growth with wrap-around,
   and a randomized comparison against a plain-array reference model. */
#include "../../sidecar/ring.c"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- what the test reads of ring.c, which it includes ---- */

/* Number of retained entries. */
static size_t ring_count(const struct ring *r)
{
	return r->count;
}

/* Bytes charged for retained entries: sum of len + RING_ENTRY_OVERHEAD. */
static size_t ring_bytes(const struct ring *r)
{
	return r->bytes;
}

#define OVH	RING_ENTRY_OVERHEAD
#define NOLIMIT SIZE_MAX

/* ---- helpers ---- */

struct seen {
	uint64_t seq[4096];
	size_t n;
	size_t stop_at; /* return stop_rc when n reaches this (0: never) */
	int stop_rc;
};

static int collect(const struct ring_entry *e, void *user)
{
	struct seen *s = user;

	assert_true(s->n < 4096);
	s->seq[s->n++] = e->sequence;
	if (s->stop_at && s->n == s->stop_at)
		return s->stop_rc;
	return 0;
}

static struct ring *mk(uint32_t frames, int64_t age, size_t bytes)
{
	struct ring_limits lim = {
	    .max_frames = frames, .max_age_ms = age, .max_bytes = bytes};

	return ring_new(&lim);
}

static void put(struct ring *r, uint64_t seq, int64_t ts, size_t len)
{
	uint8_t buf[512];

	assert_true(len <= sizeof(buf));
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seq * 31 + i);
	assert_int_equal(ring_append(r, seq, ts, buf, len), 0);
}

/* Asserts the retained sequences are exactly want[0..n). */
static void expect_seqs(const struct ring *r, const uint64_t *want, size_t n)
{
	struct seen s = {0};

	assert_int_equal(ring_foreach_after(r, 0, collect, &s), 0);
	assert_int_equal(s.n, n);
	assert_int_equal(ring_count(r), n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(s.seq[i], want[i]);
}

#define EXPECT(r, ...)                                                                   \
	do {                                                                             \
		const uint64_t w_[] = {__VA_ARGS__};                                     \
		expect_seqs(r, w_, sizeof(w_) / sizeof(w_[0]));                          \
	} while (0)

/* ---- lifecycle and input checks ---- */

static void test_new_empty(void **state)
{
	struct ring *r = mk(10, 1000, NOLIMIT);
	struct seen s = {0};

	assert_int_equal(ring_count(r), 0);
	assert_int_equal(ring_bytes(r), 0);
	assert_int_equal(ring_oldest_retained(r), 1);
	assert_int_equal(ring_foreach_after(r, 0, collect, &s), 0);
	assert_int_equal(s.n, 0);
	ring_free(r);
	ring_free(NULL);
}

static void test_append_rejects_non_increasing(void **state)
{
	struct ring *r = mk(2, 0, NOLIMIT);
	uint8_t b = 1;

	assert_int_equal(ring_append(r, 0, 0, &b, 1), -EINVAL);
	put(r, 5, 0, 1);
	assert_int_equal(ring_append(r, 5, 0, &b, 1), -EINVAL);
	assert_int_equal(ring_append(r, 4, 0, &b, 1), -EINVAL);
	put(r, 6, 0, 1);
	put(r, 7, 0, 1); /* evicts 5 */
	assert_int_equal(ring_oldest_retained(r), 6);
	assert_int_equal(ring_append(r, 5, 0, &b, 1), -EINVAL);
	assert_int_equal(ring_append(r, 7, 0, &b, 1), -EINVAL);
	EXPECT(r, 6, 7);
	assert_int_equal(ring_bytes(r), 2 * (1 + OVH));
	ring_free(r);
}

static int check_blob(const struct ring_entry *e, void *user)
{
	int *n = user;

	assert_int_equal(e->len, e->sequence * 10);
	assert_int_equal(e->ts_ms, (int64_t)e->sequence * 7 - 3);
	for (size_t i = 0; i < e->len; i++)
		assert_int_equal(e->data[i], (uint8_t)(e->sequence * 31 + i));
	(*n)++;
	return 0;
}

static void test_blobs_copied(void **state)
{
	struct ring *r = mk(100, 0, NOLIMIT);
	uint8_t buf[64];
	int n = 0;

	for (uint64_t seq = 0; seq <= 5; seq++) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (uint8_t)(seq * 31 + i);
		if (seq)
			assert_int_equal(
			    ring_append(r, seq, (int64_t)seq * 7 - 3, buf, seq * 10), 0);
		memset(buf, 0xee, sizeof(buf)); /* the ring must hold its own copy */
	}
	assert_int_equal(ring_foreach_after(r, 0, check_blob, &n), 0);
	assert_int_equal(n, 5);
	assert_int_equal(ring_bytes(r), (10 + 20 + 30 + 40 + 50) + 5 * OVH);
	ring_free(r);
}

static void test_zero_length_frame(void **state)
{
	struct ring *r = mk(2, 0, NOLIMIT);

	assert_int_equal(ring_append(r, 1, 0, NULL, 0), 0);
	assert_int_equal(ring_bytes(r), OVH);
	EXPECT(r, 1);
	ring_free(r);
}

/* ---- retention rules ---- */

static void test_count_only(void **state)
{
	struct ring *r = mk(3, 0, NOLIMIT);

	put(r, 1, 0, 4);
	put(r, 2, 0, 4);
	put(r, 3, 0, 4);
	EXPECT(r, 1, 2, 3);
	assert_int_equal(ring_oldest_retained(r), 1);
	put(r, 4, 0, 4);
	put(r, 5, 0, 4);
	EXPECT(r, 3, 4, 5);
	assert_int_equal(ring_oldest_retained(r), 3);
	assert_int_equal(ring_bytes(r), 3 * (4 + OVH));
	/* age 0 retains nothing, but the count rule does not depend on time */
	ring_expire(r, INT64_MAX);
	EXPECT(r, 3, 4, 5);
	ring_free(r);
}

static void test_age_only(void **state)
{
	struct ring *r = mk(0, 1000, NOLIMIT);

	put(r, 1, 0, 1);
	put(r, 2, 500, 1);
	put(r, 3, 999, 1); /* seq 1 is 999 ms old: younger than 1000 */
	EXPECT(r, 1, 2, 3);
	put(r, 4, 1000, 1); /* seq 1 is now exactly 1000 ms old: gone */
	EXPECT(r, 2, 3, 4);
	assert_int_equal(ring_oldest_retained(r), 2);
	ring_expire(r, 1499);
	EXPECT(r, 2, 3, 4);
	ring_expire(r, 1500);
	EXPECT(r, 3, 4);
	ring_expire(r, 1998);
	EXPECT(r, 3, 4);
	ring_expire(r, 1999);
	EXPECT(r, 4);
	/* everything old: the newest frame still stays */
	ring_expire(r, 1000000);
	EXPECT(r, 4);
	assert_int_equal(ring_oldest_retained(r), 4);
	ring_free(r);
}

static void test_age_rule_follows_append_timestamp(void **state)
{
	struct ring *r = mk(0, 100, NOLIMIT);

	put(r, 1, 0, 1);
	put(r, 2, 50, 1);
	put(r, 3, 1000, 1); /* both older ones are > 100 ms older than this one */
	EXPECT(r, 3);
	assert_int_equal(ring_oldest_retained(r), 3);
	ring_free(r);
}

static void test_count_wins_over_age(void **state)
{
	struct ring *r = mk(3, 1000, NOLIMIT);

	for (uint64_t s = 1; s <= 5; s++)
		put(r, s, 0, 1);
	/* all are young: age keeps more than max_frames */
	EXPECT(r, 1, 2, 3, 4, 5);
	ring_expire(r, 999);
	EXPECT(r, 1, 2, 3, 4, 5);
	/* all are old: the count rule still keeps the last three */
	ring_expire(r, 1000);
	EXPECT(r, 3, 4, 5);
	ring_expire(r, INT64_MAX);
	EXPECT(r, 3, 4, 5);
	assert_int_equal(ring_oldest_retained(r), 3);
	ring_free(r);
}

static void test_age_wins_over_count(void **state)
{
	struct ring *r = mk(2, 1000, NOLIMIT);

	put(r, 1, 0, 1);
	put(r, 2, 100, 1);
	put(r, 3, 200, 1);
	put(r, 4, 300, 1);
	put(r, 5, 1050, 1); /* seq 1 (age 1050) old and beyond the count: gone */
	EXPECT(r, 2, 3, 4, 5);
	ring_expire(r, 1150); /* seq 2 is 1050 old */
	EXPECT(r, 3, 4, 5);
	ring_expire(r, 1300); /* 3 and 4 old; 4 is within the last two */
	EXPECT(r, 4, 5);
	ring_free(r);
}

static void test_byte_budget_overrides(void **state)
{
	/* room for three 10-byte frames, although count and age keep all */
	struct ring *r = mk(100, 100000, 3 * (10 + OVH));

	for (uint64_t s = 1; s <= 3; s++)
		put(r, s, 0, 10);
	EXPECT(r, 1, 2, 3);
	assert_int_equal(ring_bytes(r), 3 * (10 + OVH));
	put(r, 4, 0, 10);
	EXPECT(r, 2, 3, 4);
	put(r, 5, 0, 30); /* needs the room of 3 and 4 too: 20 bytes more */
	EXPECT(r, 4, 5);
	assert_true(ring_bytes(r) <= 3 * (10 + OVH));
	assert_int_equal(ring_bytes(r), (10 + OVH) + (30 + OVH));
	assert_int_equal(ring_oldest_retained(r), 4);
	ring_free(r);
}

static void test_byte_budget_exact_fit(void **state)
{
	struct ring *r = mk(100, 0, 2 * OVH + 15);

	put(r, 1, 0, 5);
	put(r, 2, 0, 10); /* exactly at budget: kept */
	EXPECT(r, 1, 2);
	put(r, 3, 0, 0);
	EXPECT(r, 2, 3);
	ring_free(r);
}

static void test_keep_newest_always(void **state)
{
	struct ring *r = mk(100, 100000, 10);

	put(r, 1, 0, 100); /* larger than the whole budget */
	EXPECT(r, 1);
	assert_int_equal(ring_bytes(r), 100 + OVH);
	put(r, 2, 0, 100);
	EXPECT(r, 2);
	assert_int_equal(ring_oldest_retained(r), 2);
	ring_free(r);

	r = mk(0, 0, NOLIMIT); /* no rule retains anything */
	put(r, 1, 0, 1);
	EXPECT(r, 1);
	put(r, 2, 0, 1);
	EXPECT(r, 2);
	ring_expire(r, 1 << 30);
	EXPECT(r, 2);
	ring_free(r);

	r = mk(0, 0, 0); /* a zero budget too */
	put(r, 1, 0, 0);
	put(r, 2, 0, 0);
	EXPECT(r, 2);
	ring_free(r);
}

static void test_negative_age_retains_nothing(void **state)
{
	struct ring *r = mk(0, -5, NOLIMIT);

	put(r, 1, 100, 1);
	put(r, 2, 100, 1);
	EXPECT(r, 2);
	ring_free(r);
}

static void test_future_timestamps_are_young(void **state)
{
	struct ring *r = mk(0, 1000, NOLIMIT);

	put(r, 1, INT64_MAX - 5, 1);
	put(r, 2, INT64_MAX, 1);
	ring_expire(r, INT64_MIN); /* a wildly earlier clock: no overflow, kept */
	EXPECT(r, 1, 2);
	ring_expire(r, INT64_MAX);
	EXPECT(r, 1, 2);
	ring_free(r);

	r = mk(0, 1000, NOLIMIT);
	put(r, 1, INT64_MIN, 1);
	put(r, 2, INT64_MIN + 1, 1);
	ring_expire(r, INT64_MAX); /* now - ts overflows: very old */
	EXPECT(r, 2);
	ring_free(r);
}

/* ---- gaps and evicted_through ---- */

static void test_gaps(void **state)
{
	struct ring *r = mk(2, 0, NOLIMIT);
	struct seen s = {0};

	put(r, 1, 0, 1);
	put(r, 2, 0, 1);
	put(r, 5, 0, 1); /* 3, 4 went to one connection only */
	EXPECT(r, 2, 5);
	assert_int_equal(ring_oldest_retained(r), 2);
	put(r, 9, 0, 1);
	put(r, 10, 0, 1);
	EXPECT(r, 9, 10);
	/* evicted_through is 5: 6..8 were never retained, so 5 is in range */
	assert_int_equal(ring_oldest_retained(r), 6);
	assert_int_equal(ring_check_range(5, ring_oldest_retained(r), 10), 0);
	assert_int_equal(ring_check_range(4, ring_oldest_retained(r), 10), -ERANGE);
	assert_int_equal(ring_check_range(7, ring_oldest_retained(r), 10), 0);

	ring_foreach_after(r, 5, collect, &s);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.seq[0], 9);
	s.n = 0;
	ring_foreach_after(r, 8, collect, &s);
	assert_int_equal(s.n, 2);
	s.n = 0;
	ring_foreach_after(r, 9, collect, &s);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.seq[0], 10);
	ring_free(r);
}

static void test_evicted_through_by_every_rule(void **state)
{
	struct ring *r = mk(0, 10, 3 * (1 + OVH));

	put(r, 3, 0, 1);
	put(r, 7, 5, 1);
	assert_int_equal(ring_oldest_retained(r), 1);
	put(r, 8, 20, 1); /* age evicts 3 and 7 */
	assert_int_equal(ring_oldest_retained(r), 8);
	put(r, 11, 20, 1);
	put(r, 12, 20, 1);
	put(r, 20, 20, 1); /* bytes evict 8 */
	assert_int_equal(ring_oldest_retained(r), 9);
	EXPECT(r, 11, 12, 20);
	ring_free(r);
}

/* ---- replay range ---- */

static void test_range_nothing_evicted(void **state)
{
	struct ring *r = mk(10, 0, NOLIMIT);

	/* an empty ring of a new session */
	assert_int_equal(ring_check_range(0, ring_oldest_retained(r), 0), 0);
	assert_int_equal(ring_check_range(1, ring_oldest_retained(r), 0), -ERANGE);
	for (uint64_t s = 1; s <= 5; s++)
		put(r, s, 0, 1);
	for (uint64_t n = 0; n <= 5; n++)
		assert_int_equal(ring_check_range(n, ring_oldest_retained(r), 5), 0);
	assert_int_equal(ring_check_range(6, ring_oldest_retained(r), 5), -ERANGE);
	assert_int_equal(ring_check_range(UINT64_MAX, ring_oldest_retained(r), 5),
			 -ERANGE);
	/* the session counter is ahead of the last retained frame */
	assert_int_equal(ring_check_range(7, ring_oldest_retained(r), 7), 0);
	assert_int_equal(ring_check_range(8, ring_oldest_retained(r), 7), -ERANGE);
	ring_free(r);
}

static void test_range_after_eviction(void **state)
{
	struct ring *r = mk(3, 0, NOLIMIT);
	uint64_t o;

	for (uint64_t s = 1; s <= 10; s++)
		put(r, s, 0, 1);
	o = ring_oldest_retained(r);
	assert_int_equal(o, 8);
	assert_int_equal(ring_check_range(o - 2, ring_oldest_retained(r), 10), -ERANGE);
	assert_int_equal(ring_check_range(o - 1, ring_oldest_retained(r), 10), 0);
	assert_int_equal(ring_check_range(o, ring_oldest_retained(r), 10), 0);
	assert_int_equal(ring_check_range(10, ring_oldest_retained(r), 10), 0);
	assert_int_equal(ring_check_range(11, ring_oldest_retained(r), 10), -ERANGE);
	assert_int_equal(ring_check_range(0, ring_oldest_retained(r), 10), -ERANGE);
	assert_int_equal(ring_check_range(12, ring_oldest_retained(r), 12), 0);
	/* current_sequence lagging behind the ring is the caller's bug, but
	   the rule still holds literally */
	assert_int_equal(ring_check_range(9, ring_oldest_retained(r), 8), -ERANGE);
	ring_free(r);
}

/* ---- foreach_after ---- */

static void expect_after(const struct ring *r, uint64_t after, uint64_t first, size_t n)
{
	struct seen s = {0};

	assert_int_equal(ring_foreach_after(r, after, collect, &s), 0);
	assert_int_equal(s.n, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(s.seq[i], first + i);
}

static void test_foreach_boundaries(void **state)
{
	struct ring *r = mk(5, 0, NOLIMIT);

	for (uint64_t s = 1; s <= 9; s++)
		put(r, s, 0, 1);
	/* retained 5..9 */
	expect_after(r, 0, 5, 5);
	expect_after(r, 3, 5, 5);
	expect_after(r, 4, 5, 5);
	expect_after(r, 5, 6, 4);
	expect_after(r, 7, 8, 2);
	expect_after(r, 8, 9, 1);
	expect_after(r, 9, 0, 0);
	expect_after(r, 10, 0, 0);
	expect_after(r, UINT64_MAX, 0, 0);
	ring_free(r);
}

static void test_foreach_stops_early(void **state)
{
	struct ring *r = mk(10, 0, NOLIMIT);
	struct seen s = {.stop_at = 3, .stop_rc = -42};

	for (uint64_t s2 = 1; s2 <= 6; s2++)
		put(r, s2, 0, 1);
	assert_int_equal(ring_foreach_after(r, 1, collect, &s), -42);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.seq[2], 4);
	s = (struct seen){.stop_at = 1, .stop_rc = 9};
	assert_int_equal(ring_foreach_after(r, 5, collect, &s), 9);
	assert_int_equal(s.n, 1);
	ring_free(r);
}

/* ---- growth and wrap-around ---- */

static void test_growth_with_wrap(void **state)
{
	struct ring *r = mk(5, 1000, NOLIMIT);

	for (uint64_t s = 1; s <= 10; s++)
		put(r, s, 0, 3);
	/* all old now: the head moves to the middle of the array */
	put(r, 11, 5000, 3);
	EXPECT(r, 7, 8, 9, 10, 11);
	/* once 7..10 (old) have left by count, young frames pile up past the
	   initial capacity while the head sits mid-array */
	for (uint64_t s = 12; s <= 300; s++)
		put(r, s, 5000, 3);
	assert_int_equal(ring_count(r), 290);
	assert_int_equal(ring_oldest_retained(r), 11);
	assert_int_equal(ring_bytes(r), 290 * (3 + OVH));
	for (uint64_t a = 0; a <= 301; a++) {
		uint64_t first = a < 11 ? 11 : a + 1;

		expect_after(r, a, first, first > 300 ? 0 : 300 - first + 1);
	}
	/* shrinking back keeps order */
	ring_expire(r, 6000);
	EXPECT(r, 296, 297, 298, 299, 300);
	for (uint64_t s = 301; s <= 340; s++)
		put(r, s, 7000, 3);
	expect_after(r, 0, 301, 40);
	ring_free(r);
}

static void test_many_count_limited(void **state)
{
	struct ring *r = mk(100, 0, NOLIMIT);
	struct seen s = {0};

	for (uint64_t q = 1; q <= 100000; q++)
		put(r, q * 2, (int64_t)q, 0);
	assert_int_equal(ring_count(r), 100);
	assert_int_equal(ring_oldest_retained(r), 2 * 99900 + 1);
	assert_int_equal(ring_foreach_after(r, 2 * 99950, collect, &s), 0);
	assert_int_equal(s.n, 50);
	for (size_t i = 0; i < 50; i++)
		assert_int_equal(s.seq[i], 2 * (99951 + i));
	s.n = 0;
	assert_int_equal(ring_foreach_after(r, 2 * 99950 - 1, collect, &s), 0);
	assert_int_equal(s.n, 51);
	ring_free(r);
}

/* ---- randomized against a reference model ---- */

/* The reference keeps a plain array and applies the definition directly:
   drop the oldest while more than one remains and it is kept by neither
   the count nor the age rule, or the total is over budget. */
struct ref_entry {
	uint64_t seq;
	int64_t ts;
	size_t len;
};

struct ref {
	struct ring_limits lim;
	struct ref_entry e[8192];
	size_t n;
	uint64_t evicted_through;
};

static size_t ref_bytes(const struct ref *m)
{
	size_t b = 0;

	for (size_t i = 0; i < m->n; i++)
		b += m->e[i].len + OVH;
	return b;
}

static int ref_front_kept(const struct ref *m, int64_t now)
{
	__int128 age = (__int128)now - m->e[0].ts;

	if (ref_bytes(m) > m->lim.max_bytes)
		return 0;
	if (m->n <= m->lim.max_frames)
		return 1;
	return m->lim.max_age_ms > 0 && age < m->lim.max_age_ms;
}

static void ref_evict(struct ref *m, int64_t now)
{
	while (m->n > 1 && !ref_front_kept(m, now)) {
		m->evicted_through = m->e[0].seq;
		memmove(&m->e[0], &m->e[1], (m->n - 1) * sizeof(m->e[0]));
		m->n--;
	}
}

struct cmp_ctx {
	const struct ref *m;
	size_t i;
};

static int cmp_entry(const struct ring_entry *e, void *user)
{
	struct cmp_ctx *c = user;
	const struct ref_entry *w;

	assert_true(c->i < c->m->n);
	w = &c->m->e[c->i++];
	assert_int_equal(e->sequence, w->seq);
	assert_int_equal(e->ts_ms, w->ts);
	assert_int_equal(e->len, w->len);
	for (size_t k = 0; k < e->len; k++)
		assert_int_equal(e->data[k], (uint8_t)(e->sequence * 31 + k));
	return 0;
}

static void ref_compare(const struct ring *r, const struct ref *m, uint64_t cur)
{
	uint64_t after, probe[6];
	struct cmp_ctx c = {m, 0};

	assert_int_equal(ring_count(r), m->n);
	assert_int_equal(ring_bytes(r), ref_bytes(m));
	assert_int_equal(ring_oldest_retained(r), m->evicted_through + 1);
	/* a random cut, and the cuts around the oldest retained */
	after = cur ? (uint64_t)rand() % (cur + 2) : 0;
	while (c.i < m->n && m->e[c.i].seq <= after)
		c.i++;
	assert_int_equal(ring_foreach_after(r, after, cmp_entry, &c), 0);
	assert_int_equal(c.i, m->n);
	probe[0] = m->evicted_through ? m->evicted_through - 1 : 0;
	probe[1] = m->evicted_through;
	probe[2] = m->evicted_through + 1;
	probe[3] = cur;
	probe[4] = cur + 1;
	probe[5] = after;
	for (int k = 0; k < 6; k++) {
		uint64_t n = probe[k];
		int want = (n + 1 >= m->evicted_through + 1 && n <= cur) ? 0 : -ERANGE;

		assert_int_equal(ring_check_range(n, ring_oldest_retained(r), cur), want);
	}
}

static void random_trial(unsigned seed)
{
	static struct ref m;
	struct ring *r;
	uint64_t seq = 0;
	int64_t ts = 1000;

	srand(seed);
	memset(&m, 0, sizeof(m));
	m.lim.max_frames = (uint32_t)(rand() % 60);
	m.lim.max_age_ms = rand() % 4 ? rand() % 400 : 0;
	m.lim.max_bytes = rand() % 4 ? (size_t)(rand() % 8000) : NOLIMIT;
	r = ring_new(&m.lim);
	for (int op = 0; op < 3000; op++) {
		if (rand() % 10 == 0) {
			int64_t now = ts + rand() % 300 - 50;

			ring_expire(r, now);
			ref_evict(&m, now);
		} else {
			size_t len = (size_t)(rand() % 4 ? rand() % 40 : rand() % 400);

			seq += 1 + (uint64_t)(rand() % 3 == 0 ? rand() % 4 : 0);
			ts += rand() % 8 == 0 ? -(rand() % 20) : rand() % 10;
			put(r, seq, ts, len);
			assert_true(m.n < 8192);
			m.e[m.n++] = (struct ref_entry){seq, ts, len};
			ref_evict(&m, ts);
		}
		ref_compare(r, &m, seq + (uint64_t)(rand() % 3));
	}
	ring_free(r);
}

static void test_randomized_against_reference(void **state)
{
	for (unsigned seed = 1; seed <= 60; seed++)
		random_trial(seed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_new_empty),
	    cmocka_unit_test(test_append_rejects_non_increasing),
	    cmocka_unit_test(test_blobs_copied),
	    cmocka_unit_test(test_zero_length_frame),
	    cmocka_unit_test(test_count_only),
	    cmocka_unit_test(test_age_only),
	    cmocka_unit_test(test_age_rule_follows_append_timestamp),
	    cmocka_unit_test(test_count_wins_over_age),
	    cmocka_unit_test(test_age_wins_over_count),
	    cmocka_unit_test(test_byte_budget_overrides),
	    cmocka_unit_test(test_byte_budget_exact_fit),
	    cmocka_unit_test(test_keep_newest_always),
	    cmocka_unit_test(test_negative_age_retains_nothing),
	    cmocka_unit_test(test_future_timestamps_are_young),
	    cmocka_unit_test(test_gaps),
	    cmocka_unit_test(test_evicted_through_by_every_rule),
	    cmocka_unit_test(test_range_nothing_evicted),
	    cmocka_unit_test(test_range_after_eviction),
	    cmocka_unit_test(test_foreach_boundaries),
	    cmocka_unit_test(test_foreach_stops_early),
	    cmocka_unit_test(test_growth_with_wrap),
	    cmocka_unit_test(test_many_count_limited),
	    cmocka_unit_test(test_randomized_against_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
