/* fdio: file I/O done whole: writing all of a buffer, reading all of a
   file (bounded), and making a directory with its parents. Blocking
   calls, for start-up, configuration and record files, never for sockets
   on the event loop. */
#ifndef PTG_FDIO_H
#define PTG_FDIO_H

#include <stddef.h>
#include <sys/types.h>

#include "buf.h"

/* Writes all n bytes of p to fd, retrying short writes and EINTR.
   Returns 0 or a negative errno. */
int fd_write_all(int fd, const void *p, size_t n);

/* Flags of fd_read_file. */
#define FDIO_REGULAR                                                                     \
	1		/* refuse anything but a regular file (a FIFO would              \
			   block, a device never end) */
#define FDIO_NOFOLLOW 2 /* refuse a symbolic link as the last component (ELOOP) */

/* Appends the whole file at path, at most max bytes, to out, retrying
   EINTR. Returns 0, or a negative errno with a one-line reason naming the
   file in err (err may be NULL): -EFBIG for a file over max bytes,
   -EINVAL for a file that FDIO_REGULAR refuses. On failure out holds what
   it held before (the bytes read are wiped: they may be a secret). */
int fd_read_file(const char *path, unsigned flags, size_t max, struct buf *out, char *err,
		 size_t errlen);
/* fd_read_file of path relative to the directory dirfd (openat), so a
   caller that holds a directory open reads through it. */
int fd_read_at(int dirfd, const char *path, unsigned flags, size_t max, struct buf *out,
	       char *err, size_t errlen);

/* Creates dir and every missing parent with mode (like mkdir -p; an
   existing directory is fine). Returns 0 or a negative errno. */
int fs_mkdir_p(const char *dir, mode_t mode);

#endif
