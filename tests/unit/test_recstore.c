/* unit: sidecar */
/* test_recstore: atomic replace, read back in name order, leftovers of an
   interrupted write removed, oversized and foreign files skipped, bad
   names refused, remove; a directory reached through a symbolic link is
   refused by every call. */
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

#include "recstore.h"

struct seen {
	char names[8][64];
	char data[8][64];
	int n;
};

static void each(const char *name, const char *data, size_t n, void *user)
{
	struct seen *s = user;

	snprintf(s->names[s->n], 64, "%s", name);
	snprintf(s->data[s->n], 64, "%.*s", (int)n, data);
	s->n++;
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_write_read_remove(void **state)
{
	char tmpl[] = "/tmp/ptg-recstore-XXXXXX", dir[256], path[300];
	struct seen s = {0};

	assert_non_null(mkdtemp(tmpl));
	snprintf(dir, sizeof(dir), "%s/a/b", tmpl);
	assert_int_equal(recstore_open(dir), 0);
	assert_int_equal(recstore_write(dir, "2.task", "two", 3), 0);
	assert_int_equal(recstore_write(dir, "1.task", "one", 3), 0);
	assert_int_equal(recstore_write(dir, "1.task", "uno", 3), 0); /* replaced */
	put(dir, ".3.task.tmp", "torn"); /* an interrupted write */
	put(dir, "other.txt", "not ours");
	put(dir, "big.task", "0123456789abcdef");
	assert_int_equal(recstore_read_all(dir, ".task", 8, each, &s), 2);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.names[0], "1.task");
	assert_string_equal(s.data[0], "uno");
	assert_string_equal(s.names[1], "2.task");
	assert_string_equal(s.data[1], "two");
	snprintf(path, sizeof(path), "%s/.3.task.tmp", dir);
	assert_int_equal(access(path, F_OK), -1);

	assert_int_equal(recstore_write(dir, "../escape", "x", 1), -EINVAL);
	assert_int_equal(recstore_write(dir, ".hidden", "x", 1), -EINVAL);
	assert_int_equal(recstore_remove(dir, "1.task"), 0);
	assert_int_equal(recstore_remove(dir, "1.task"), 0); /* already gone */
	memset(&s, 0, sizeof(s));
	assert_int_equal(recstore_read_all(dir, ".task", 1024, each, &s), 2);
	assert_string_equal(s.names[0], "2.task");
	assert_string_equal(s.names[1], "big.task");
	assert_true(recstore_read_all("/nonexistent/ptg", ".task", 8, each, &s) < 0);
	snprintf(path, sizeof(path), "rm -rf '%s'", tmpl);
	assert_int_equal(system(path), 0);
}

/* The tasks dir of a state dir replaced by a link: nothing is made,
   written, read or removed where it points. */
static void test_symlinked_dir_refused(void **state)
{
	char tmpl[] = "/tmp/ptg-recstore-XXXXXX", real[256], link[256], path[300];
	struct seen s = {0};
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	snprintf(real, sizeof(real), "%s/real", tmpl);
	snprintf(link, sizeof(link), "%s/link", tmpl);
	assert_int_equal(mkdir(real, 0755), 0);
	assert_int_equal(chmod(real, 0755), 0);
	assert_int_equal(symlink(real, link), 0);
	assert_true(recstore_open(link) < 0);
	assert_int_equal(stat(real, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_true(recstore_write(link, "1.task", "one", 3) < 0);
	snprintf(path, sizeof(path), "%s/1.task", real);
	assert_int_equal(access(path, F_OK), -1);
	put(real, "2.task", "two");
	assert_true(recstore_read_all(link, ".task", 8, each, &s) < 0);
	assert_int_equal(s.n, 0);
	assert_true(recstore_remove(link, "2.task") < 0);
	snprintf(path, sizeof(path), "%s/2.task", real);
	assert_int_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "rm -rf '%s'", tmpl);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_write_read_remove),
	    cmocka_unit_test(test_symlinked_dir_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
