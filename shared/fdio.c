/* fdio: see fdio.h. */
#include "fdio.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

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
