/* recstore: see recstore.h. */
#include "recstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "log.h"
#include "seal.h"
#include "xalloc.h"

#define PATH_CAP 4400

static const struct seal_keys *seal_keys;

void recstore_seal_with(const struct seal_keys *keys)
{
	seal_keys = keys;
}

void recstore_seal(const void *p, size_t n, uint8_t **out, size_t *outlen)
{
	if (!seal_keys) {
		*out = xmalloc(n + 1);
		if (n)
			memcpy(*out, p, n);
		*outlen = n;
		return;
	}
	seal_file(seal_keys, p, n, out, outlen);
}

int recstore_unseal(const uint8_t *p, size_t n, uint8_t **out, size_t *outlen)
{
	if (!seal_keys || (!seal_keys->n && (!n || (p[0] != 'P' && p[0] != 'S')))) {
		*out = xmalloc(n + 1);
		if (n)
			memcpy(*out, p, n);
		(*out)[n] = 0;
		*outlen = n;
		return 0;
	}
	return seal_unseal_file(seal_keys, p, n, out, outlen);
}

/* The directory, never through a link as its last component. */
static int open_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int recstore_open(const char *dir)
{
	struct stat st;
	int rc = fs_mkdir_p(dir, 0700), fd;

	if (rc < 0)
		return rc;
	fd = open_dir(dir);
	if (fd < 0)
		return fd;
	/* Records are ours alone, whatever mode the directory had. */
	if (fstat(fd, &st) < 0)
		rc = -errno;
	else if (st.st_uid != geteuid())
		rc = -EPERM;
	else if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0)
		rc = -errno;
	else if (faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static int valid_name(const char *name)
{
	return name[0] && name[0] != '.' && !strchr(name, '/') && strlen(name) < 256;
}

/* Writes the sealed record to a temporary name in dfd, then renames it
   over name and syncs the directory. */
static int replace(int dfd, const char *name, const uint8_t *p, size_t n)
{
	char tmp[PATH_CAP];
	int fd, rc;

	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd =
	    openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	rc = fd_write_all(fd, p, n);
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && renameat(dfd, tmp, dfd, name) < 0)
		rc = -errno;
	if (rc) {
		unlinkat(dfd, tmp, 0);
		return rc;
	}
	return fsync(dfd) < 0 ? -errno : 0;
}

int recstore_write(const char *dir, const char *name, const void *plain, size_t plen)
{
	uint8_t *p;
	size_t n;
	int dfd, rc;

	if (!valid_name(name))
		return -EINVAL;
	dfd = open_dir(dir);
	if (dfd < 0)
		return dfd;
	recstore_seal(plain, plen, &p, &n);
	rc = replace(dfd, name, p, n);
	free(p);
	close(dfd);
	return rc;
}

int recstore_remove(const char *dir, const char *name)
{
	int dfd, rc = 0;

	if (!valid_name(name))
		return -EINVAL;
	dfd = open_dir(dir);
	if (dfd < 0)
		return dfd;
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		rc = -errno;
	close(dfd);
	return rc;
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && strcmp(s + n - k, suffix) == 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir ending with suffix, sorted; temporary files of an
   interrupted write are removed on the way. */
static char **list_names(DIR *d, const char *suffix, size_t *count)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;

	while ((e = readdir(d))) {
		if (e->d_name[0] == '.') {
			if (has_suffix(e->d_name, ".tmp"))
				unlinkat(dirfd(d), e->d_name, 0);
			continue;
		}
		if (!has_suffix(e->d_name, suffix))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = xrealloc(names, cap * sizeof(*names));
		}
		names[n++] = xstrdup(e->d_name);
	}
	if (n)
		qsort(names, n, sizeof(*names), by_name);
	*count = n;
	return names;
}

int recstore_read_all(const char *dir, const char *suffix, size_t max_bytes,
		      recstore_each_fn each, void *user)
{
	int dfd = open_dir(dir);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	char **names;
	size_t n, len;
	int seen = 0;

	if (dfd < 0)
		return dfd;
	if (!d) {
		seen = -errno;
		close(dfd);
		return seen;
	}
	names = list_names(d, suffix, &n);
	for (size_t i = 0; i < n; i++) {
		struct buf data = BUF_INIT;
		uint8_t *plain = NULL;
		int rc;

		/* The seal adds a header and a tag; the limit is on the record. */
		rc = fd_read_at(dfd, names[i], FDIO_REGULAR | FDIO_NOFOLLOW,
				max_bytes + (seal_keys ? 64 : 0), &data, NULL, 0);
		if (rc == 0)
			rc = recstore_unseal(buf_head(&data), buf_size(&data), &plain,
					     &len);

		if (rc == 0 && len > max_bytes)
			rc = -EFBIG;

		if (rc < 0) {
			log_warn(NULL, "%s/%s: skipped: %s", dir, names[i],
				 rc == -ENOKEY	  ? "sealed with a key not given"
				 : rc == -EBADMSG ? "damaged (fails its seal)"
						  : strerror(-rc));
		} else {
			each(names[i], (const char *)plain, len, user);
			seen++;
		}
		free(plain);
		buf_free(&data);
		free(names[i]);
	}
	free(names);
	closedir(d);
	return seen;
}
