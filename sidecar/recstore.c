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
	return unseal_file(seal_keys, p, n, out, outlen);
}

int recstore_open(const char *dir)
{
	int rc = fs_mkdir_p(dir, 0700);

	if (rc < 0)
		return rc;
	return access(dir, W_OK | X_OK) < 0 ? -errno : 0;
}

static int valid_name(const char *name)
{
	return name[0] && name[0] != '.' && !strchr(name, '/') && strlen(name) < 256;
}

static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int recstore_write(const char *dir, const char *name, const void *plain, size_t plen)
{
	char tmp[PATH_CAP], final[PATH_CAP];
	uint8_t *p;
	size_t n;
	int fd, rc;

	if (!valid_name(name))
		return -EINVAL;
	recstore_seal(plain, plen, &p, &n);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	snprintf(final, sizeof(final), "%s/%s", dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(p);
		return -errno;
	}
	rc = fd_write_all(fd, p, n);
	free(p);
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, final) < 0)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return rc;
	}
	return sync_dir(dir);
}

int recstore_remove(const char *dir, const char *name)
{
	char path[PATH_CAP];

	if (!valid_name(name))
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
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
	DIR *d = opendir(dir);
	char **names;
	size_t n, len;
	int seen = 0;

	if (!d)
		return -errno;
	names = list_names(d, suffix, &n);
	for (size_t i = 0; i < n; i++) {
		struct buf data = BUF_INIT;
		char path[PATH_CAP];
		uint8_t *plain = NULL;
		int rc;

		/* The seal adds a header and a tag; the limit is on the record. */
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		rc = fd_read_file(path, FDIO_REGULAR | FDIO_NOFOLLOW,
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
