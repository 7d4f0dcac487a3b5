/* fdio: whole writes to a blocking file descriptor. */
#ifndef PTG_FDIO_H
#define PTG_FDIO_H

#include <stddef.h>

/* Writes all n bytes of p to fd, retrying short writes and EINTR.
   Returns 0 or a negative errno. */
int fd_write_all(int fd, const void *p, size_t n);

#endif
