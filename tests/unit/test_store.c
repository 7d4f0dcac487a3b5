/* unit: sidecar */
/* test_store: a session record and its screen round-trip sealed (the
   sequence reservation, the screen's sequence and size included); no
   clear text on disk; a screen file of an earlier version (no header)
   still reads, without a sequence; a damaged record is skipped, and so is
   one with a loose number or escape. The state dir is never reached
   through a symbolic link (opened, chmod'ed, written, read, removed), a
   parent others may write without the sticky bit is refused, and a dir
   that is ours is made 0700. */
#include "../../sidecar/store.c"

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
#include "recstore.h"
#include "seal.h"

static const char *ID = "01234567-89ab-7cde-8f01-23456789abcd";

static void make_record(struct store_record *r, char **argv)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", ID);
	r->sequence = 41;
	r->reserved = 1065;
	r->output_bytes = 12345678901ull;
	r->input_bytes = 77;
	r->running = 1;
	r->cols = 100;
	r->rows = 20;
	r->created_ms = 1700000000000;
	snprintf(r->label, sizeof(r->label), "secret label");
	snprintf(r->owner, sizeof(r->owner), "alice smith");
	r->control_policy = 2;
	r->argv = argv;
}

static long file_has(const char *path, const char *needle)
{
	char buf[8192];
	FILE *f = fopen(path, "rb");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return memmem(buf, n, needle, strlen(needle)) != NULL;
}

static void test_sealed_round_trip(void **st)
{
	char dir[] = "/tmp/ptg-store-XXXXXX", path[300];
	char *argv[] = {"/bin/sh", "-c", "echo hi", NULL};
	static struct seal_keys keys;
	struct store_record r, *all;
	size_t n;

	(void)st;
	assert_non_null(mkdtemp(dir));
	keys.n = 1;
	memset(keys.k[0].key, 9, SEAL_KEY_BYTES);
	memset(keys.k[0].kid, 9, SEAL_KID_BYTES);
	recstore_seal_with(&keys);
	make_record(&r, argv);
	assert_int_equal(store_write(dir, &r), 0);
	assert_int_equal(store_write_screen(dir, ID, 40, 90, 25,
					    (const uint8_t *)"\033cscreen-text", 13),
			 0);
	snprintf(path, sizeof(path), "%s/%s.session", dir, ID);
	assert_false(file_has(path, "secret label"));
	assert_false(file_has(path, "/bin/sh"));
	snprintf(path, sizeof(path), "%s/%s.screen", dir, ID);
	assert_false(file_has(path, "screen-text"));

	assert_int_equal(store_read_all(dir, &all, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(all[0].sequence, 41);
	assert_int_equal(all[0].reserved, 1065);
	assert_int_equal(all[0].output_bytes, 12345678901ull);
	assert_int_equal(all[0].input_bytes, 77);
	assert_string_equal(all[0].label, "secret label");
	assert_string_equal(all[0].owner, "alice smith");
	assert_int_equal(all[0].control_policy, 2);
	assert_string_equal(all[0].argv[2], "echo hi");
	assert_int_equal(all[0].screen_seq, 40);
	assert_int_equal(all[0].screen_cols, 90);
	assert_int_equal(all[0].screen_rows, 25);
	assert_int_equal(all[0].screen_len, 13);
	assert_memory_equal(all[0].screen, "\033cscreen-text", 13);
	store_records_free(all, n);

	/* A flipped byte: the record fails its seal and is skipped. */
	snprintf(path, sizeof(path), "%s/%s.session", dir, ID);
	{
		FILE *f = fopen(path, "r+b");
		int c;

		fseek(f, 40, SEEK_SET);
		c = fgetc(f);
		fseek(f, 40, SEEK_SET);
		fputc(c ^ 0x10, f);
		fclose(f);
	}
	assert_int_equal(store_read_all(dir, &all, &n), 0);
	assert_int_equal(n, 0);
	store_records_free(all, n);
	store_remove(dir, ID);
	rmdir(dir);
}

static void test_plaintext_and_legacy_screen(void **st)
{
	char dir[] = "/tmp/ptg-store-XXXXXX", path[300];
	char *argv[] = {"/bin/sh", NULL};
	static struct seal_keys none;
	struct store_record r, *all;
	size_t n;
	FILE *f;

	(void)st;
	assert_non_null(mkdtemp(dir));
	recstore_seal_with(&none);
	make_record(&r, argv);
	assert_int_equal(store_write(dir, &r), 0);
	snprintf(path, sizeof(path), "%s/%s.screen", dir, ID);
	f = fopen(path, "wb"); /* an earlier version: the snapshot alone */
	fputs("\033cold-screen", f);
	fclose(f);
	assert_int_equal(store_read_all(dir, &all, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(all[0].screen_seq, 0);
	assert_int_equal(all[0].screen_cols, 0);
	assert_memory_equal(all[0].screen, "\033cold-screen", 12);
	store_records_free(all, n);
	store_remove(dir, ID);
	rmdir(dir);
}

/* Writes text as the record file of id (no seal: read as it is). */
static void put_raw(const char *dir, const char *id, const char *suffix, const char *text)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s%s", dir, id, suffix);
	f = fopen(path, "wb");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The numbers and escapes of a record are read in the grammar they are
   written in: a record with a loose one (a sign, a space, a value out
   of range, a bad escape) is skipped as damaged, not half-read. */
static void test_loose_fields_refused(void **st)
{
	static const char *const good =
	    "ptygate-session 1\nsequence 41\nrunning 1\nexit 1 -2\nreason 0\n"
	    "size 80 24\npolicy 0\ncreated -5\nexited 0\nreserved 7\n"
	    "label a%20b\narg /bin/sh\n";
	static const struct {
		const char *from, *to;
	} loose[] = {
	    {"sequence 41", "sequence +41"},
	    {"sequence 41", "sequence -41"},
	    {"sequence 41", "sequence  41"},
	    {"sequence 41", "sequence 41x"},
	    {"sequence 41", "sequence 18446744073709551616"},
	    {"size 80 24", "size 80  24"},
	    {"size 80 24", "size 80 24 1"},
	    {"size 80 24", "size 80 4294967297"},
	    {"size 80 24", "size 80"},
	    {"exit 1 -2", "exit 1 - 2"},
	    {"running 1", "running 4294967297"},
	    {"created -5", "created --5"},
	    {"label a%20b", "label a%2"},
	    {"label a%20b", "label a%-1b"},
	    {"label a%20b", "label a% 2b"},
	};
	char dir[] = "/tmp/ptg-store-XXXXXX", text[512];
	static struct seal_keys none;
	struct store_record *all;
	size_t n;

	(void)st;
	assert_non_null(mkdtemp(dir));
	recstore_seal_with(&none);
	put_raw(dir, ID, ".session", good);
	put_raw(dir, ID, ".screen", "ptygate-screen 1 9 80 24\n\033cscreen");
	assert_int_equal(store_read_all(dir, &all, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(all[0].exit_code, -2);
	assert_int_equal(all[0].created_ms, -5);
	assert_string_equal(all[0].label, "a b");
	assert_int_equal(all[0].screen_seq, 9);
	assert_int_equal(all[0].screen_rows, 24);
	store_records_free(all, n);
	for (size_t i = 0; i < sizeof(loose) / sizeof(loose[0]); i++) {
		const char *at = strstr(good, loose[i].from);

		snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - good), good,
			 loose[i].to, at + strlen(loose[i].from));
		put_raw(dir, ID, ".session", text);
		assert_int_equal(store_read_all(dir, &all, &n), 0);
		if (n != 0)
			fail_msg("a record with '%s' was read", loose[i].to);
		store_records_free(all, n);
	}
	/* A screen header with a loose number is not taken for one. */
	put_raw(dir, ID, ".session", good);
	put_raw(dir, ID, ".screen", "ptygate-screen 1 +9 80 24\n\033cscreen");
	assert_int_equal(store_read_all(dir, &all, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(all[0].screen_seq, 0);
	store_records_free(all, n);
	store_remove(dir, ID);
	rmdir(dir);
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode & 07777;
}

static void rm_rf(const char *dir)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* --state-dir a link to another directory: the sidecar runs as root, so
   following it would chmod and fill whatever the link names. */
static void test_symlinked_dir_refused(void **st)
{
	char base[] = "/tmp/ptg-store-XXXXXX", real[300], link[300], path[400];
	char *argv[] = {"/bin/sh", NULL};
	static struct seal_keys none;
	struct store_record r, *all;
	size_t n;

	(void)st;
	assert_non_null(mkdtemp(base));
	recstore_seal_with(&none);
	snprintf(real, sizeof(real), "%s/real", base);
	snprintf(link, sizeof(link), "%s/link", base);
	assert_int_equal(mkdir(real, 0755), 0);
	assert_int_equal(chmod(real, 0755), 0);
	assert_int_equal(symlink(real, link), 0);

	assert_true(store_open(link) < 0);
	assert_int_equal(mode_of(real), 0755); /* not chmod'ed through the link */
	make_record(&r, argv);
	assert_true(store_write(link, &r) < 0);
	assert_true(store_write_screen(link, ID, 1, 80, 24, (const uint8_t *)"x", 1) < 0);
	snprintf(path, sizeof(path), "%s/%s.session", real, ID);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/%s.screen", real, ID);
	assert_int_equal(access(path, F_OK), -1);

	/* A record in the target is neither read nor removed through it. */
	assert_int_equal(store_write(real, &r), 0);
	assert_true(store_read_all(link, &all, &n) < 0);
	assert_int_equal(n, 0);
	store_remove(link, ID);
	snprintf(path, sizeof(path), "%s/%s.session", real, ID);
	assert_int_equal(access(path, F_OK), 0);
	assert_true(store_dir_open(link) < 0);

	/* A link to a file or a dangling one: refused as well. */
	snprintf(path, sizeof(path), "%s/dangling", base);
	assert_int_equal(symlink("/nonexistent/ptg-state", path), 0);
	assert_true(store_open(path) < 0);
	assert_int_equal(access("/nonexistent/ptg-state", F_OK), -1);
	rm_rf(base);
}

/* Whoever may write in the parent could rename the checked dir and put
   a link in its place; the sticky bit (/tmp) keeps others from that. */
static void test_parent_writable_by_others(void **st)
{
	char base[] = "/tmp/ptg-store-XXXXXX", dir[300];

	(void)st;
	assert_non_null(mkdtemp(base));
	snprintf(dir, sizeof(dir), "%s/state/", base); /* a trailing slash too */
	assert_int_equal(chmod(base, 0777), 0);
	assert_int_equal(store_open(dir), -EPERM);
	assert_int_equal(chmod(base, 0775), 0);
	assert_int_equal(store_open(dir), -EPERM);
	assert_int_equal(chmod(base, 01777), 0);
	assert_int_equal(store_open(dir), 0);
	assert_int_equal(chmod(base, 0700), 0);
	/* An existing dir that is ours is made 0700. */
	snprintf(dir, sizeof(dir), "%s/state", base);
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(store_open(dir), 0);
	assert_int_equal(mode_of(dir), 0700);
	/* A parent of another user's: refused (it may swap the dir). */
	if (geteuid() == 0) {
		assert_int_equal(chown(base, 65534, 65534), 0);
		assert_int_equal(store_open(dir), -EPERM);
		assert_int_equal(chown(base, 0, 0), 0);
	}
	/* A relative dir has "." for its parent. */
	assert_int_equal(chdir(base), 0);
	assert_int_equal(store_open("rel"), 0);
	assert_int_equal(mode_of("rel"), 0700);
	assert_int_equal(chdir("/"), 0);
	rm_rf(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sealed_round_trip),
	    cmocka_unit_test(test_plaintext_and_legacy_screen),
	    cmocka_unit_test(test_loose_fields_refused),
	    cmocka_unit_test(test_symlinked_dir_refused),
	    cmocka_unit_test(test_parent_writable_by_others),
	};

	if (sodium_init() < 0)
		return 1;
	log_set_level(LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
