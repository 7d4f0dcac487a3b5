/* linkclient: see linkclient.h. Blocking writes, poll-bounded reads. */
#include "linkclient.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "timeutil.h"

#define READ_CHUNK (64 * 1024)

int linkclient_connect(struct linkclient *c, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int err;

	c->fd = -1;
	buf_init(&c->in);
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		close(c->fd);
		c->fd = -1;
		return err;
	}
	return 0;
}

void linkclient_close(struct linkclient *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	buf_free(&c->in);
}

int linkclient_send_raw(struct linkclient *c, const void *p, size_t n)
{
	const uint8_t *b = p;
	ssize_t w;

	while (n) {
		w = send(c->fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno == ECONNRESET ? -EPIPE : -errno;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

int linkclient_send(struct linkclient *c, const Ptg__LinkMessage *m)
{
	struct buf out = BUF_INIT;
	int rc;

	link_encode(m, &out);
	rc = linkclient_send_raw(c, buf_head(&out), buf_size(&out));
	buf_free(&out);
	return rc;
}

/* Reads what is there after waiting up to timeout_ms. Returns bytes read,
   0 on timeout, -EPIPE at end of stream, or a negative errno. */
static ssize_t fill(struct linkclient *c, int timeout_ms)
{
	struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
	ssize_t n;
	int rc;

	rc = poll(&pfd, 1, timeout_ms < 0 ? 0 : timeout_ms);
	if (rc < 0)
		return errno == EINTR ? 0 : -errno;
	if (rc == 0)
		return 0;
	n = read(c->fd, buf_reserve(&c->in, READ_CHUNK), READ_CHUNK);
	if (n < 0 && errno == EINTR)
		return 0;
	if (n < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	if (n == 0)
		return -EPIPE;
	buf_commit(&c->in, (size_t)n);
	return n;
}

int linkclient_recv(struct linkclient *c, int timeout_ms, Ptg__LinkMessage **out)
{
	int64_t deadline = time_mono_ms() + timeout_ms;
	ssize_t n;
	int rc;

	*out = NULL;
	if (c->fd < 0)
		return -EBADF;
	for (;;) {
		rc = link_decode(&c->in, out);
		if (rc != 0)
			return rc;
		if (time_mono_ms() >= deadline)
			return 0;
		n = fill(c, (int)(deadline - time_mono_ms()));
		if (n < 0)
			return (int)n;
	}
}

int linkclient_wait_eof(struct linkclient *c, int timeout_ms)
{
	int64_t deadline = time_mono_ms() + timeout_ms;
	ssize_t n;

	while (time_mono_ms() < deadline) {
		n = fill(c, (int)(deadline - time_mono_ms()));
		if (n == -EPIPE)
			return 0;
		if (n < 0)
			return 0; /* any socket error also means the link is gone */
		buf_reset(&c->in);
	}
	return -ETIMEDOUT;
}
