/* fdio: see fdio.h. */
#include "fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FDIO__CHUNK 65536

int fd_write_all(int fd, const void *p, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, (const uint8_t *)p + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		off += (size_t)w;
	}
	return 0;
}

/* Says why path was not read; returns rc. */
static int fail(int rc, bool not_regular, const char *path, size_t max, char *err,
		size_t errlen)
{
	if (!err || !errlen)
		return rc;
	if (not_regular)
		snprintf(err, errlen, "%s: not a regular file", path);
	else if (rc == -EFBIG)
		snprintf(err, errlen, "%s: larger than %zu bytes", path, max);
	else
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	return rc;
}

/* Reads fd to its end into out, one byte past max at the most (so a
   larger file is told from one of max bytes exactly). */
static int read_to_end(int fd, size_t max, struct buf *out)
{
	size_t got = 0;

	for (;;) {
		size_t want = max - got + 1 < FDIO__CHUNK ? max - got + 1 : FDIO__CHUNK;
		size_t room = out->cap - out->len;
		ssize_t r;

		/* Space already there first: the read that finds the end of a
		   file of the size fstat gave must not grow the buffer. */
		if (room && room < want)
			want = room;
		r = read(fd, buf_reserve(out, want), want);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
		buf_commit(out, (size_t)r);
		got += (size_t)r;
		if (got > max)
			return -EFBIG;
	}
}

int fd_read_file(const char *path, unsigned flags, size_t max, struct buf *out, char *err,
		 size_t errlen)
{
	return fd_read_at(AT_FDCWD, path, flags, max, out, err, errlen);
}

int fd_read_at(int dirfd, const char *path, unsigned flags, size_t max, struct buf *out,
	       char *err, size_t errlen)
{
	/* O_NONBLOCK: opening a FIFO for FDIO_REGULAR to refuse must not wait
	   for a writer; it changes nothing for a regular file. */
	int oflags = O_RDONLY | O_CLOEXEC | O_NOCTTY |
		     (flags & FDIO_REGULAR ? O_NONBLOCK : 0) |
		     (flags & FDIO_NOFOLLOW ? O_NOFOLLOW : 0);
	size_t before = buf_size(out); /* buf_reserve may move the content */
	struct stat st;
	int fd, rc;
	bool not_regular = false;

	if (max >= SIZE_MAX - 1)
		max = SIZE_MAX - 2;
	do
		fd = openat(dirfd, path, oflags);
	while (fd < 0 && errno == EINTR); /* a FIFO's open waits for a writer */
	if (fd < 0)
		return fail(-errno, false, path, max, err, errlen);
	if (fstat(fd, &st) < 0) {
		rc = -errno;
	} else if ((flags & FDIO_REGULAR) && !S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		not_regular = true;
	} else if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max) {
		rc = -EFBIG;
	} else {
		/* One allocation for a regular file that keeps its size, so a
		   secret is not left behind in buffers that grew. */
		if (S_ISREG(st.st_mode))
			buf_reserve(out, (size_t)st.st_size + 1);
		rc = read_to_end(fd, max, out);
	}
	close(fd);
	if (rc < 0) {
		size_t keep = out->off + before;

		if (out->len > keep)
			explicit_bzero(out->data + keep, out->len - keep);
		out->len = keep;
		return fail(rc, not_regular, path, max, err, errlen);
	}
	return 0;
}

int fs_mkdir_p(const char *dir, mode_t mode)
{
	char path[PATH_MAX];
	size_t n = strlen(dir);
	struct stat st;

	if (n == 0)
		return -ENOENT;
	if (n >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, n + 1);
	/* Each parent in turn, then dir itself. */
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return -errno;
	/* EEXIST is also what a file of that name gives. */
	if (stat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}
