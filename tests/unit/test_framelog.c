/* unit: sidecar */
/* test_framelog: append, flush and read back exactly (sealed and
   plaintext); a torn tail and a flipped byte are cut on open and never
   served; segments roll and retention deletes whole ones oldest first;
   a wrong key cannot read a sealed segment; sealed files round-trip. */
#include "../../sidecar/framelog.c"
#include "../../sidecar/syncer.c"

#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "seal.h"

/* ---- what the test reads of framelog.c, which it includes ---- */

/* Everything at or below seq is gone: retention deleted it. */
static uint64_t framelog_forgotten_through(const struct framelog *l)
{
	return l->forgotten_through;
}

/* ---- what the test reads of syncer.c, the thread framelog.c writes on,
   which it includes too ---- */

/* The most bytes that were queued and not yet written at once. */
static size_t syncer_queued_peak(void)
{
	pthread_once(&queue_once, make_queue);
	return workq_peak(queue);
}

/* Lowers the bound (a tiny queue fills at once). 0: the default. */
static void syncer_set_limit(size_t bytes)
{
	pthread_once(&queue_once, make_queue);
	workq_set_limit(queue, bytes ? bytes : SYNCER_QUEUE_BYTES);
}

static char state[256];
static const char *ID = "01234567-89ab-7cde-8f01-23456789abcd";

static int setup(void **st)
{
	(void)st;
	snprintf(state, sizeof(state), "/tmp/ptg-framelog-XXXXXX");
	assert_non_null(mkdtemp(state));
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	framelog_remove(state, ID);
	rmdir(state);
	return 0;
}

static struct framelog_opts opts(const struct seal_keys *k)
{
	struct framelog_opts o = {
	    .keys = k,
	    .fsync = FSYNC_NEVER,
	    .segment_bytes = 4096,
	    .max_frames = 1000000,
	    .max_age_ms = 1000000,
	    .max_bytes = 1u << 30,
	};
	return o;
}

static void payload(uint64_t seq, char *out, size_t cap)
{
	snprintf(out, cap, "frame-%llu-%0*d", (unsigned long long)seq, (int)(seq % 50),
		 7);
}

static void append_range(struct framelog *l, uint64_t from, uint64_t to)
{
	char p[128];

	for (uint64_t s = from; s <= to; s++) {
		payload(s, p, sizeof(p));
		assert_int_equal(
		    framelog_append(l, s, 1000 + (int64_t)s, 3, p, strlen(p)), 0);
	}
}

/* Reads every record after `after`; checks each is exact; returns the
   last sequence read and the count in *n. */
static uint64_t read_all(struct framelog_reader *r, uint64_t after, int *n, int *err)
{
	struct framelog_rec rec;
	char p[128];
	uint64_t last = after;
	int rc;

	*n = 0;
	while ((rc = framelog_reader_next(r, &rec)) == 1) {
		assert_int_equal(rec.seq, last + 1);
		payload(rec.seq, p, sizeof(p));
		assert_int_equal(rec.len, strlen(p));
		assert_memory_equal(rec.frame, p, rec.len);
		assert_int_equal(rec.ts_ms, 1000 + (int64_t)rec.seq);
		assert_int_equal(rec.kind, 3);
		last = rec.seq;
		(*n)++;
	}
	*err = rc;
	framelog_reader_free(r);
	return last;
}

static void keys_one(struct seal_keys *k, uint8_t fill)
{
	memset(k, 0, sizeof(*k));
	k->n = 1;
	memset(k->k[0].key, fill, SEAL_KEY_BYTES);
	memset(k->k[0].kid, fill, SEAL_KID_BYTES);
}

static void round_trip(const struct seal_keys *k)
{
	struct framelog_opts o = opts(k);
	struct framelog *l = framelog_open(state, ID, &o);
	int n, err;

	assert_non_null(l);
	append_range(l, 5, 300);
	/* A reader sees what is queued (it is written first). */
	assert_int_equal(read_all(framelog_reader_new(l, 4), 4, &n, &err), 300);
	assert_int_equal(n, 296);
	assert_int_equal(read_all(framelog_reader_new(l, 250), 250, &n, &err), 300);
	assert_int_equal(n, 50);
	framelog_close(l);
	l = framelog_open(state, ID, &o);
	assert_int_equal(framelog_first_seq(l), 5);
	assert_int_equal(framelog_last_seq(l), 300);
	append_range(l, 301, 310); /* a new segment after a reopen */
	assert_int_equal(read_all(framelog_reader_new(l, 100), 100, &n, &err), 310);
	assert_int_equal(err, 0);
	framelog_close(l);
}

static void test_round_trip_sealed(void **st)
{
	struct seal_keys k;

	(void)st;
	keys_one(&k, 0x11);
	round_trip(&k);
}

static void test_round_trip_plaintext(void **st)
{
	struct seal_keys k = {0};

	(void)st;
	round_trip(&k);
}

static char *last_segment(char *out, size_t cap)
{
	char dir[512], best[300] = "";
	DIR *d;
	struct dirent *e;

	snprintf(dir, sizeof(dir), "%s/%s.frames", state, ID);
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".seg") && strcmp(e->d_name, best) > 0)
			snprintf(best, sizeof(best), "%s", e->d_name);
	closedir(d);
	snprintf(out, cap, "%s/%s", dir, best);
	return out;
}

static void damage(const char *path, long cut, long flip_at)
{
	struct stat sb;
	FILE *f;
	int c;

	assert_int_equal(stat(path, &sb), 0);
	if (cut)
		assert_int_equal(truncate(path, sb.st_size - cut), 0);
	if (flip_at < 0)
		return;
	f = fopen(path, "r+b");
	fseek(f, flip_at, SEEK_SET);
	c = fgetc(f);
	fseek(f, flip_at, SEEK_SET);
	fputc(c ^ 0x01, f);
	fclose(f);
}

static void torn_tail(const struct seal_keys *k)
{
	struct framelog_opts o = opts(k);
	struct framelog *l = framelog_open(state, ID, &o);
	char seg[600];
	int n, err;
	uint64_t last;

	o.segment_bytes = 1u << 20;
	framelog_close(l);
	l = framelog_open(state, ID, &o);
	append_range(l, 1, 100);
	framelog_close(l);
	damage(last_segment(seg, sizeof(seg)), 5, -1);
	l = framelog_open(state, ID, &o);
	assert_int_equal(framelog_last_seq(l), 99); /* the torn record is gone */
	last = read_all(framelog_reader_new(l, 0), 0, &n, &err);
	assert_int_equal(last, 99);
	assert_int_equal(err, 0);
	/* Appending goes on above it, in a new segment. */
	append_range(l, 100, 120);
	framelog_close(l);
	/* A flipped byte mid-way in the newest segment: everything from the
	   damaged record on is cut. */
	damage(last_segment(seg, sizeof(seg)), 0, 200);
	l = framelog_open(state, ID, &o);
	last = read_all(framelog_reader_new(l, 0), 0, &n, &err);
	assert_int_equal(err, 0);
	assert_true(last >= 99 && last < 120);
	assert_int_equal(framelog_last_seq(l), last);
	framelog_close(l);
}

static void test_torn_tail_sealed(void **st)
{
	struct seal_keys k;

	(void)st;
	keys_one(&k, 0x22);
	torn_tail(&k);
}

static void test_torn_tail_plaintext(void **st)
{
	struct seal_keys k = {0};

	(void)st;
	torn_tail(&k);
}

static void test_damage_inside_history_drops_what_precedes(void **st)
{
	struct seal_keys k;
	struct framelog_opts o;
	struct framelog *l;
	char seg[600], first[600];
	int n, err;

	(void)st;
	keys_one(&k, 0x33);
	o = opts(&k);
	l = framelog_open(state, ID, &o);
	append_range(l, 1, 50);
	framelog_close(l);
	last_segment(first, sizeof(first));
	l = framelog_open(state, ID, &o);
	append_range(l, 51, 80);
	framelog_close(l);
	damage(first, 0, 100); /* the older segment */
	/* Its index spares the check on start: the damage is found when the
	   record is read, and the reader stops there, serving nothing bad. */
	l = framelog_open(state, ID, &o);
	assert_int_equal(framelog_first_seq(l), 1);
	read_all(framelog_reader_new(l, 0), 0, &n, &err);
	assert_int_equal(err, -EBADMSG);
	assert_true(n < 50);
	framelog_close(l);
	/* Without its index (lost, or garbled) the segment is checked in
	   full on start, as before: what precedes the damage is dropped. */
	snprintf(seg, sizeof(seg), "%.*s.idx", (int)(strlen(first) - 4), first);
	assert_int_equal(unlink(seg), 0);
	l = framelog_open(state, ID, &o);
	assert_int_equal(framelog_first_seq(l), 51);
	assert_int_equal(framelog_forgotten_through(l), 50);
	assert_int_equal(read_all(framelog_reader_new(l, 50), 50, &n, &err), 80);
	assert_int_equal(n, 30);
	framelog_close(l);
}

/* Start reads a closed segment's index instead of its records; an index
   that is garbled, or that disagrees with the segment's length, is not
   trusted: the segment is checked in full (and its index rewritten). */
static void test_index_spares_the_check_and_bad_ones_fall_back(void **st)
{
	struct seal_keys k;
	struct framelog_opts o;
	struct framelog *l;
	char first[600], idx[610];
	int n, err;
	FILE *f;

	(void)st;
	keys_one(&k, 0x44);
	o = opts(&k);
	l = framelog_open(state, ID, &o);
	append_range(l, 1, 40);
	framelog_close(l);
	last_segment(first, sizeof(first));
	l = framelog_open(state, ID, &o);
	append_range(l, 41, 60);
	framelog_close(l);
	snprintf(idx, sizeof(idx), "%.*s.idx", (int)(strlen(first) - 4), first);
	/* A garbled index is not trusted: the full check finds the flipped
	   byte that a good index would have left for the reader to find. */
	f = fopen(idx, "r+b");
	assert_non_null(f);
	fputc('X', f);
	fclose(f);
	damage(first, 0, 100);
	l = framelog_open(state, ID, &o);
	assert_int_equal(framelog_first_seq(l), 41); /* the damaged one is not claimed */
	assert_int_equal(read_all(framelog_reader_new(l, 40), 40, &n, &err), 60);
	framelog_close(l);
}

/* The index's figures are the segment's: after a reopen through indexes
   the log has the same range, count and bytes as it had. */
static void test_index_round_trip(void **st)
{
	struct framelog_opts o = opts(NULL);
	struct framelog *l = framelog_open(state, ID, &o);
	uint64_t bytes;
	int n, err;

	(void)st;
	append_range(l, 1, 300); /* many 4 KiB segments */
	bytes = framelog_disk_bytes(l);
	framelog_close(l);
	l = framelog_open(state, ID, &o);
	assert_int_equal(framelog_first_seq(l), 1);
	assert_int_equal(framelog_last_seq(l), 300);
	assert_int_equal(framelog_disk_bytes(l), bytes);
	assert_int_equal(read_all(framelog_reader_new(l, 0), 0, &n, &err), 300);
	assert_int_equal(err, 0);
	framelog_close(l);
}

static void test_retention_deletes_whole_segments(void **st)
{
	struct framelog_opts o = opts(NULL);
	struct framelog *l;
	uint64_t before;
	int n, err;

	(void)st;
	o.max_frames = 100;
	o.max_age_ms = 0;
	l = framelog_open(state, ID, &o);
	append_range(l, 1, 1000);
	framelog_expire(l, 5000);
	/* At least the newest 100 stay, and whole segments only. */
	assert_true(framelog_first_seq(l) > 1);
	assert_true(framelog_first_seq(l) <= 901);
	assert_int_equal(framelog_forgotten_through(l), framelog_first_seq(l) - 1);
	assert_int_equal(read_all(framelog_reader_new(l, framelog_first_seq(l) - 1),
				  framelog_first_seq(l) - 1, &n, &err),
			 1000);
	/* The disk budget: dropping the oldest frees bytes until one is left. */
	before = framelog_disk_bytes(l);
	assert_true(framelog_drop_oldest(l) > 0);
	assert_true(framelog_disk_bytes(l) < before);
	while (framelog_drop_oldest(l))
		;
	assert_int_equal(framelog_last_seq(l), 1000);
	framelog_close(l);
}

static void test_wrong_key_is_not_served(void **st)
{
	struct seal_keys a, b, both;
	struct framelog_opts o;
	struct framelog *l;
	int n, err;

	(void)st;
	keys_one(&a, 0x44);
	keys_one(&b, 0x55);
	o = opts(&a);
	l = framelog_open(state, ID, &o);
	append_range(l, 1, 40);
	framelog_close(l);
	o = opts(&b);
	l = framelog_open(state, ID, &o);
	/* Nothing it can read; the session record's reservation, not the
	   log, keeps numbers from being reused. */
	assert_int_equal(framelog_first_seq(l), 0);
	framelog_close(l);
	/* Rotation: the new key first, the old one still given. */
	both = b;
	both.k[1] = a.k[0];
	both.n = 2;
	o = opts(&both);
	l = framelog_open(state, ID, &o);
	append_range(l, 41, 60);
	assert_int_equal(read_all(framelog_reader_new(l, 0), 0, &n, &err), 60);
	framelog_close(l);
}

/* A record is in the file when framelog_append returns (the
   frame then goes out to clients), so a crashed process loses none: a
   second log opened on the same directory while the first was never
   flushed or closed (as the restart after a SIGKILL finds it) reads
   every record, sealed and plaintext, across segment changes. */
static void crash_keeps_every_record(const struct seal_keys *k)
{
	struct framelog_opts o = opts(k);
	struct framelog *l = framelog_open(state, ID, &o), *after;
	int n, err;

	assert_non_null(l);
	for (uint64_t last = 1; last <= 300; last += 37) {
		append_range(l, framelog_last_seq(l) + 1, last);
		after = framelog_open(state, ID, &o);
		assert_int_equal(framelog_last_seq(after), last);
		assert_int_equal(read_all(framelog_reader_new(after, 0), 0, &n, &err),
				 last);
		assert_int_equal(err, 0);
		framelog_close(after);
	}
	framelog_close(l);
}

static void test_crash_keeps_every_record_sealed(void **st)
{
	struct seal_keys k;

	(void)st;
	keys_one(&k, 0x5c);
	crash_keeps_every_record(&k);
}

static void test_crash_keeps_every_record_plaintext(void **st)
{
	(void)st;
	crash_keeps_every_record(NULL);
}

/* The writer thread's queue full (segment indexes, one per closed
   segment): the writer waits instead of queueing more, so the queue never
   holds more than its bound plus one file, and every file lands. */
static void test_full_writer_queue_waits_and_loses_nothing(void **st)
{
	struct framelog_opts o = opts(NULL);
	struct framelog *l;
	int n, err;

	(void)st;
	o.segment_bytes = 512;
	syncer_set_limit(256);
	l = framelog_open(state, ID, &o);
	assert_non_null(l);
	append_range(l, 1, 20000);
	assert_true(syncer_queued_peak() <= 256 + 512);
	assert_int_equal(read_all(framelog_reader_new(l, 0), 0, &n, &err), 20000);
	assert_int_equal(err, 0);
	framelog_close(l);
	syncer_set_limit(0);
	l = framelog_open(state, ID, &o);
	assert_int_equal(framelog_last_seq(l), 20000);
	assert_int_equal(read_all(framelog_reader_new(l, 0), 0, &n, &err), 20000);
	framelog_close(l);
}

/* A reader reads exactly what was appended before it was made, never a
   record appended while it reads. */
static void test_reader_during_writes_sees_whole_records(void **st)
{
	struct framelog_opts o = opts(NULL);
	struct framelog *l = framelog_open(state, ID, &o);
	struct framelog_reader *r;
	int n, err;

	(void)st;
	o.segment_bytes = 1u << 20;
	framelog_close(l);
	l = framelog_open(state, ID, &o);
	append_range(l, 1, 2000);
	r = framelog_reader_new(l, 0);
	append_range(l, 2001, 6000); /* written while r reads */
	assert_int_equal(read_all(r, 0, &n, &err), 2000);
	assert_int_equal(err, 0);
	assert_int_equal(read_all(framelog_reader_new(l, 2000), 2000, &n, &err), 6000);
	framelog_close(l);
}

static void test_seal_file_round_trip_and_tamper(void **st)
{
	struct seal_keys k, other;
	const char *msg = "ptygate-session 1\nsequence 7\n";
	uint8_t *c, *m;
	size_t cn, mn;

	(void)st;
	keys_one(&k, 0x66);
	keys_one(&other, 0x77);
	seal_file(&k, (const uint8_t *)msg, strlen(msg), &c, &cn);
	assert_null(memmem(c, cn, "sequence", 8));
	assert_int_equal(seal_unseal_file(&k, c, cn, &m, &mn), 0);
	assert_int_equal(mn, strlen(msg));
	assert_memory_equal(m, msg, mn);
	free(m);
	assert_int_equal(seal_unseal_file(&other, c, cn, &m, &mn), -ENOKEY);
	c[cn - 3] ^= 1;
	assert_int_equal(seal_unseal_file(&k, c, cn, &m, &mn), -EBADMSG);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_round_trip_sealed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_round_trip_plaintext, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_torn_tail_sealed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_torn_tail_plaintext, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_damage_inside_history_drops_what_precedes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_retention_deletes_whole_segments, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_wrong_key_is_not_served, setup,
					    teardown),
	    cmocka_unit_test(test_seal_file_round_trip_and_tamper),
	    cmocka_unit_test_setup_teardown(
		test_index_spares_the_check_and_bad_ones_fall_back, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_index_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_full_writer_queue_waits_and_loses_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_crash_keeps_every_record_sealed, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_crash_keeps_every_record_plaintext,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reader_during_writes_sees_whole_records,
					    setup, teardown),
	};

	if (sodium_init() < 0)
		return 1;
	log_set_level(LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
