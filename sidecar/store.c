/* store: see store.h. Records are "key value" lines; strings are
   percent-encoded so any byte survives a line-based format. Files are
   written to a temporary name and renamed, so a crash leaves the old or
   the new record, never half of one. */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "fdio.h"
#include "log.h"
#include "num.h"
#include "ptg_limits.h"
#include "recstore.h"
#include "xalloc.h"

#define STORE_MAGIC    "ptygate-session 1"
#define STORE_MAX_FILE (4u << 20)
#define STORE_MAX_ARGS 256

/* Opens the state dir without following a link as its last component:
   an fd (O_DIRECTORY, O_CLOEXEC) for openat and friends, or a negative
   errno. Every file of the store is reached through one. */
static int store_dir_open(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Splits dir (copied into path) into its parent and its last name;
   trailing slashes do not count. */
static int split_dir(const char *dir, char path[PATH_MAX], const char **parent,
		     const char **base)
{
	size_t n = strlen(dir);
	char *slash;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 0 || n >= PATH_MAX)
		return n ? -ENAMETOOLONG : -ENOENT;
	memcpy(path, dir, n);
	path[n] = '\0';
	slash = strrchr(path, '/');
	*parent = !slash ? "." : slash == path ? "/" : path;
	*base = slash ? slash + 1 : path;
	if (slash)
		*slash = '\0';
	return **base ? 0 : -EINVAL; /* "/" has no parent to check */
}

/* Whoever may write in the parent may swap the state dir for a link
   after we checked it: only root and we may, or others where the sticky
   bit keeps them from renaming our entry (/tmp). */
static int check_parent(int pfd, const char *parent)
{
	struct stat st;

	if (fstat(pfd, &st) < 0)
		return -errno;
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		log_error(NULL, "state dir: its parent %s belongs to uid %u: refused",
			  parent, (unsigned)st.st_uid);
		return -EPERM;
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
		log_error(NULL,
			  "state dir: its parent %s is writable by others (mode %03o) "
			  "without the sticky bit: refused",
			  parent, (unsigned)(st.st_mode & 0777));
		return -EPERM;
	}
	return 0;
}

/* Records hold screens (whatever a program printed): the directory is
   ours alone, even when it existed before with looser modes; a link or
   another user's directory is refused. Everything goes through fd. */
static int check_dir(int fd, const char *dir)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid()) {
		log_error(NULL, "state dir %s belongs to uid %u, not to us: refused", dir,
			  (unsigned)st.st_uid);
		return -EPERM;
	}
	if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0)
		return -errno;
	return faccessat(fd, ".", W_OK, AT_EACCESS) < 0 ? -errno : 0;
}

int store_open(const char *dir)
{
	char path[PATH_MAX];
	const char *parent, *base;
	int pfd, fd, rc = split_dir(dir, path, &parent, &base);

	if (rc == 0 && strcmp(parent, ".") && strcmp(parent, "/"))
		rc = fs_mkdir_p(parent, 0700);
	if (rc < 0)
		return rc;
	pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	rc = check_parent(pfd, parent);
	if (rc == 0 && mkdirat(pfd, base, 0700) < 0 && errno != EEXIST)
		rc = -errno;
	fd = rc ? -1 : openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (!rc && fd < 0) {
		rc = -errno;
		if (rc == -ELOOP || rc == -ENOTDIR)
			log_error(NULL,
				  "state dir %s is not a directory (a link?): refused",
				  dir);
	}
	close(pfd);
	if (fd >= 0) {
		rc = check_dir(fd, dir);
		close(fd);
	}
	return rc;
}

/* Replaces dir/name with p sealed, without fsync: a screen is a view,
   rewritten every second it changes. */
static int write_atomic(const char *dir, const char *name, const void *plain, size_t plen)
{
	char tmp[300];
	uint8_t *p;
	size_t n;
	int dfd = store_dir_open(dir), fd, rc;

	if (dfd < 0)
		return dfd;
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd =
	    openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	recstore_seal(plain, plen, &p, &n);
	rc = fd_write_all(fd, p, n);
	free(p);
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && renameat(dfd, tmp, dfd, name) < 0)
		rc = -errno;
	if (rc)
		unlinkat(dfd, tmp, 0);
	close(dfd);
	return rc;
}

static void put_str(struct buf *b, const char *key, const char *s)
{
	buf_appendf(b, "%s ", key);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c <= ' ' || c == '%' || c >= 0x7f)
			buf_appendf(b, "%%%02x", c);
		else
			buf_append(b, s, 1);
	}
	buf_append_str(b, "\n");
}

int store_write(const char *dir, const struct store_record *r)
{
	struct buf b = BUF_INIT;
	char name[64];
	int rc;

	buf_appendf(
	    &b,
	    STORE_MAGIC
	    "\nsequence %" PRIu64 "\nrunning %d\nexit %d %d\n"
	    "reason %d\nsize %u %u\npolicy %d\ncreated %" PRId64 "\nexited %" PRId64 "\n"
	    "reserved %" PRIu64 "\ncontrol %d\nbytes %" PRIu64 " %" PRIu64 "\n",
	    r->sequence, r->running, r->has_exit_code, r->exit_code, r->close_reason,
	    r->cols, r->rows, r->policy, r->created_ms, r->exited_ms, r->reserved,
	    r->control_policy, r->output_bytes, r->input_bytes);
	put_str(&b, "label", r->label);
	put_str(&b, "owner", r->owner);
	put_str(&b, "detail", r->detail);
	for (char **a = r->argv; a && *a; a++)
		put_str(&b, "arg", *a);
	snprintf(name, sizeof(name), "%s.session", r->id);
	rc = recstore_write(dir, name, buf_head(&b), buf_size(&b));
	buf_free(&b);
	return rc;
}

/* A screen file: this line, then the snapshot. An earlier version wrote
   the snapshot alone. */
#define SCREEN_MAGIC "ptygate-screen 1 "

int store_write_screen(const char *dir, const char *id, uint64_t seq, unsigned cols,
		       unsigned rows, const uint8_t *p, size_t n)
{
	struct buf b = BUF_INIT;
	char name[64];
	int rc;

	snprintf(name, sizeof(name), "%s.screen", id);
	buf_appendf(&b, SCREEN_MAGIC "%" PRIu64 " %u %u\n", seq, cols, rows);
	buf_append(&b, p, n);
	rc = write_atomic(dir, name, buf_head(&b), buf_size(&b));
	buf_free(&b);
	return rc;
}

/* Reads the n space-separated decimals at v[0, len) into out, each
   within [lo, hi], in the num grammar; nothing else may be there. */
static int get_nums(const char *v, size_t len, size_t n, int64_t lo, int64_t hi,
		    int64_t *out)
{
	const char *end = v + len;

	for (size_t i = 0; i < n; i++) {
		const char *sp = i + 1 < n ? memchr(v, ' ', (size_t)(end - v)) : end;

		if (!sp || num_parse_i64_n(v, (size_t)(sp - v), lo, hi, &out[i]) < 0)
			return -EINVAL;
		v = sp + 1;
	}
	return 0;
}

static int get_int(const char *v, int *out)
{
	int64_t x;

	if (get_nums(v, strlen(v), 1, INT_MIN, INT_MAX, &x) < 0)
		return -EINVAL;
	*out = (int)x;
	return 0;
}

static int get_size(const char *v, size_t len, unsigned *cols, unsigned *rows)
{
	int64_t d[2];

	if (get_nums(v, len, 2, PTG_DIM_MIN, PTG_DIM_MAX, d) < 0)
		return -EINVAL;
	*cols = (unsigned)d[0];
	*rows = (unsigned)d[1];
	return 0;
}

/* Splits a screen file into its sequence and snapshot. */
static void parse_screen(struct store_record *r)
{
	size_t m = strlen(SCREEN_MAGIC);
	uint8_t *nl, *sp;
	size_t skip;

	if (r->screen_len < m || memcmp(r->screen, SCREEN_MAGIC, m))
		return;
	nl = memchr(r->screen + m, '\n', r->screen_len - m);
	sp = nl ? memchr(r->screen + m, ' ', (size_t)(nl - r->screen) - m) : NULL;
	if (!sp ||
	    num_parse_u64_n((char *)r->screen + m, (size_t)(sp - r->screen) - m, 0,
			    UINT64_MAX, &r->screen_seq) < 0 ||
	    get_size((char *)sp + 1, (size_t)(nl - sp - 1), &r->screen_cols,
		     &r->screen_rows) < 0) {
		r->screen_seq = r->screen_cols = r->screen_rows = 0;
		return;
	}
	skip = (size_t)(nl + 1 - r->screen);
	memmove(r->screen, nl + 1, r->screen_len - skip);
	r->screen_len -= skip;
}

/* Decodes a percent-encoded value into dst (cap bytes with NUL).
   Returns 0, or -EINVAL for a bad escape or an overlong value. */
static int get_str(const char *v, char *dst, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	for (; *v && *v != '\n'; v++) {
		char c = *v;
		if (c == '%') {
			/* put_str writes two lower-case hex digits, nothing else */
			const char *hi = v[1] ? strchr(hex, v[1]) : NULL;
			const char *lo = hi && v[2] ? strchr(hex, v[2]) : NULL;

			if (!lo)
				return -EINVAL;
			c = (char)((hi - hex) << 4 | (lo - hex));
			v += 2;
		}
		if (n + 1 >= cap)
			return -EINVAL;
		dst[n++] = c;
	}
	dst[n] = 0;
	return 0;
}

/* "OUTPUT INPUT": the PTY's byte counts. */
static int get_bytes(const char *v, struct store_record *r)
{
	char out[24];
	size_t n = strcspn(v, " ");

	if (n == 0 || n >= sizeof(out))
		return -EINVAL;
	memcpy(out, v, n);
	out[n] = 0;
	if (v[n] != ' ' || num_parse_u64(out, 0, UINT64_MAX, &r->output_bytes) < 0)
		return -EINVAL;
	return num_parse_u64(v + n + 1, 0, UINT64_MAX, &r->input_bytes);
}

static int parse_line(struct store_record *r, const char *line, size_t *argc)
{
	char key[16], val[4200];
	const char *v = strchr(line, ' ');
	int64_t d[2];

	if (!v || (size_t)(v - line) >= sizeof(key))
		return -EINVAL;
	memcpy(key, line, (size_t)(v - line));
	key[v - line] = 0;
	v++;
	if (!strcmp(key, "sequence"))
		return num_parse_u64(v, 0, UINT64_MAX, &r->sequence);
	if (!strcmp(key, "reserved"))
		return num_parse_u64(v, 0, UINT64_MAX, &r->reserved);
	if (!strcmp(key, "bytes"))
		return get_bytes(v, r);
	if (!strcmp(key, "running"))
		return get_int(v, &r->running);
	if (!strcmp(key, "exit")) {
		if (get_nums(v, strlen(v), 2, INT_MIN, INT_MAX, d) < 0)
			return -EINVAL;
		r->has_exit_code = (int)d[0];
		r->exit_code = (int)d[1];
		return 0;
	}
	if (!strcmp(key, "reason"))
		return get_int(v, &r->close_reason);
	if (!strcmp(key, "size"))
		return get_size(v, strlen(v), &r->cols, &r->rows);
	if (!strcmp(key, "policy"))
		return get_int(v, &r->policy);
	if (!strcmp(key, "control"))
		return get_int(v, &r->control_policy);
	if (!strcmp(key, "created"))
		return num_parse_i64(v, INT64_MIN, INT64_MAX, &r->created_ms);
	if (!strcmp(key, "exited"))
		return num_parse_i64(v, INT64_MIN, INT64_MAX, &r->exited_ms);
	if (!strcmp(key, "label"))
		return get_str(v, r->label, sizeof(r->label));
	if (!strcmp(key, "owner"))
		return get_str(v, r->owner, sizeof(r->owner));
	if (!strcmp(key, "detail"))
		return get_str(v, r->detail, sizeof(r->detail));
	if (!strcmp(key, "arg")) {
		if (*argc >= STORE_MAX_ARGS || get_str(v, val, sizeof(val)) < 0)
			return -EINVAL;
		r->argv = xrealloc(r->argv, (*argc + 2) * sizeof(*r->argv));
		r->argv[(*argc)++] = xstrdup(val);
		r->argv[*argc] = NULL;
		return 0;
	}
	return 0; /* a later version's key: ignored */
}

/* Reads and unseals the whole file name of the directory dfd into out. */
static int read_file(int dfd, const char *name, struct buf *out)
{
	struct buf raw = BUF_INIT;
	uint8_t *plain;
	size_t plen;
	int rc = fd_read_at(dfd, name, FDIO_REGULAR | FDIO_NOFOLLOW, STORE_MAX_FILE, &raw,
			    NULL, 0);

	if (rc == 0)
		rc = recstore_unseal(buf_head(&raw), buf_size(&raw), &plain, &plen);
	buf_free(&raw);
	if (rc < 0)
		return rc;
	buf_append(out, plain, plen);
	free(plain);
	return 0;
}

static void free_record(struct store_record *r)
{
	for (char **a = r->argv; a && *a; a++)
		free(*a);
	free(r->argv);
	free(r->screen);
}

static int parse_record(int dfd, const char *id, struct store_record *r)
{
	char name[64];
	struct buf b = BUF_INIT, scr = BUF_INIT;
	size_t argc = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", id);
	snprintf(name, sizeof(name), "%s.session", id);
	rc = read_file(dfd, name, &b);
	buf_append(&b, "", 1);
	if (!rc &&
	    strncmp((char *)buf_head(&b), STORE_MAGIC "\n", strlen(STORE_MAGIC) + 1))
		rc = -EINVAL;
	for (char *l = (char *)buf_head(&b) + strlen(STORE_MAGIC) + 1; !rc && *l;) {
		char *end = strchr(l, '\n');
		if (!end)
			break;
		*end = 0;
		rc = parse_line(r, l, &argc);
		l = end + 1;
	}
	buf_free(&b);
	if (!rc && (!r->cols || !argc))
		rc = -EINVAL;
	snprintf(name, sizeof(name), "%s.screen", id);
	if (!rc && read_file(dfd, name, &scr) == 0 && buf_size(&scr))
		r->screen = buf_steal(&scr, &r->screen_len);
	if (r->screen)
		parse_screen(r);
	buf_free(&scr);
	if (rc)
		free_record(r);
	return rc;
}

int store_read_all(const char *dir, struct store_record **out, size_t *n)
{
	int dfd = store_dir_open(dir);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	struct dirent *e;
	char id[UUID_STRLEN + 1];

	*out = NULL;
	*n = 0;
	if (dfd < 0)
		return dfd;
	if (!d) {
		int rc = -errno;

		close(dfd);
		return rc;
	}
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len != UUID_STRLEN + 8 || strcmp(e->d_name + UUID_STRLEN, ".session"))
			continue;
		memcpy(id, e->d_name, UUID_STRLEN);
		id[UUID_STRLEN] = 0;
		if (!uuid_is_valid(id))
			continue;
		*out = xrealloc(*out, (*n + 1) * sizeof(**out));
		if (parse_record(dfd, id, &(*out)[*n]) < 0) {
			log_warn(NULL, "state dir: skipping unreadable record %s",
				 e->d_name);
			continue;
		}
		(*n)++;
	}
	closedir(d);
	return 0;
}

void store_remove(const char *dir, const char *id)
{
	char name[64];
	int dfd = store_dir_open(dir);

	if (dfd < 0)
		return;
	snprintf(name, sizeof(name), "%s.session", id);
	unlinkat(dfd, name, 0);
	snprintf(name, sizeof(name), "%s.screen", id);
	unlinkat(dfd, name, 0);
	close(dfd);
}

void store_records_free(struct store_record *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free_record(&v[i]);
	free(v);
}
