/* addr: parsing, formatting, listening on and dialling the link's
   transport addresses. Sockets come back non-blocking and close-on-exec.
   A tcp listener is held to loopback unless the caller opts out, since
   the link carries no authentication of its own. */
#include "addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#include "log.h"
#include "num.h"

#ifndef VMADDR_CID_LOCAL
#define VMADDR_CID_LOCAL 1
#endif

#define ADDR_BACKLOG 128

static void __attribute__((format(printf, 3, 4)))
set_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int parse_unix(const char *path, struct addr *a, char *err, size_t errlen)
{
	size_t n = strlen(path);

	if (n == 0) {
		set_error(err, errlen, "unix address needs a path");
		return -EINVAL;
	}
	if (n >= sizeof(((struct sockaddr_un *)0)->sun_path) || n >= sizeof(a->path)) {
		set_error(err, errlen, "unix socket path too long (%zu bytes)", n);
		return -EINVAL;
	}
	memcpy(a->path, path, n + 1);
	return 0;
}

/* Whether s[0, n) may be a host: visible ASCII without the bytes that
   would make the text ambiguous once written back ('[' and ']' of the
   brackets, '@' of a URL's user part). */
static int host_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= ' ' || c >= 0x7f || c == '[' || c == ']' || c == '@')
			return 0;
	}
	return n > 0;
}

/* Splits s[0, n) into the host (brackets removed) and the port's text
   after its colon (NULL when there is no port). */
static int split_hostport(const char *s, size_t n, const char **host, size_t *hlen,
			  const char **port, const char **why)
{
	const char *colon;

	*port = NULL;
	if (n && s[0] == '[') {
		const char *close = memchr(s, ']', n);

		*host = s + 1;
		*hlen = close ? (size_t)(close - *host) : 0;
		if (!close || !memchr(*host, ':', *hlen) ||
		    (close + 1 < s + n && close[1] != ':')) {
			*why = "expected [IPV6]:PORT";
			return -EINVAL;
		}
		if (close + 1 < s + n)
			*port = close + 2;
		return 0;
	}
	*host = s;
	colon = memchr(s, ':', n);
	*hlen = colon ? (size_t)(colon - s) : n;
	if (colon && memchr(colon + 1, ':', (size_t)(s + n - colon - 1))) {
		*why = "expected HOST:PORT (IPv6 in brackets)";
		return -EINVAL;
	}
	if (colon)
		*port = colon + 1;
	return 0;
}

int addr_parse_hostport(const char *s, size_t n, unsigned flags, char *host, size_t cap,
			uint16_t *port, char *err, size_t errlen)
{
	const char *h, *p, *why = NULL;
	size_t hlen;
	uint64_t v = *port;

	if (split_hostport(s, n, &h, &hlen, &p, &why) < 0)
		goto out_bad;
	if (!host_ok(h, hlen) || hlen >= cap) {
		why = "bad host";
		goto out_bad;
	}
	if (!p && !(flags & ADDR_PORT_OPTIONAL)) {
		why = "expected HOST:PORT";
		goto out_bad;
	}
	if (p && num_parse_u64_n(p, (size_t)(s + n - p), flags & ADDR_PORT_ZERO ? 0 : 1,
				 65535, &v) < 0) {
		why = flags & ADDR_PORT_ZERO ? "port must be 0..65535"
					     : "port must be 1..65535";
		goto out_bad;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	*port = (uint16_t)v;
	return 0;
out_bad:
	set_error(err, errlen, "%s", why);
	return -EINVAL;
}

static int parse_tcp(const char *s, struct addr *a, char *err, size_t errlen)
{
	char why[LOG_ERR_MAX];

	if (addr_parse_hostport(s, strlen(s), 0, a->host, sizeof(a->host), &a->port, why,
				sizeof(why)) < 0) {
		set_error(err, errlen, "tcp address: %s", why);
		return -EINVAL;
	}
	return 0;
}

static const struct {
	const char *name;
	uint32_t cid;
} cids[] = {
    {"ANY", VMADDR_CID_ANY},
    {"HOST", VMADDR_CID_HOST},
    {"LOCAL", VMADDR_CID_LOCAL},
};

static int parse_cid(const char *s, size_t n, uint32_t *cid)
{
	char tmp[16];
	uint64_t v;
	size_t i;

	if (n == 0 || n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	for (i = 0; i < sizeof(cids) / sizeof(cids[0]); i++) {
		if (strcmp(tmp, cids[i].name) == 0) {
			*cid = cids[i].cid;
			return 0;
		}
	}
	if (num_parse_u64(tmp, 0, UINT32_MAX, &v) < 0)
		return -EINVAL;
	*cid = (uint32_t)v;
	return 0;
}

static int parse_vsock(const char *s, struct addr *a, char *err, size_t errlen)
{
	const char *colon = strchr(s, ':');
	uint64_t port;

	if (!colon || parse_cid(s, (size_t)(colon - s), &a->cid) < 0) {
		set_error(
		    err, errlen,
		    "vsock address: expected CID:PORT, CID a number or ANY, HOST, LOCAL");
		return -EINVAL;
	}
	if (num_parse_u64(colon + 1, 0, UINT32_MAX, &port) < 0) {
		set_error(err, errlen, "vsock address: port must be a number");
		return -EINVAL;
	}
	a->vport = (uint32_t)port;
	return 0;
}

int addr_parse(const char *s, struct addr *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	if (strncmp(s, "unix:", 5) == 0) {
		a->kind = ADDR_UNIX;
		return parse_unix(s + 5, a, err, errlen);
	}
	if (strncmp(s, "tcp:", 4) == 0) {
		a->kind = ADDR_TCP;
		return parse_tcp(s + 4, a, err, errlen);
	}
	if (strncmp(s, "vsock:", 6) == 0) {
		a->kind = ADDR_VSOCK;
		return parse_vsock(s + 6, a, err, errlen);
	}
	set_error(err, errlen, "address must start with unix:, tcp: or vsock:");
	return -EINVAL;
}

void addr_format(const struct addr *a, char *out, size_t outlen)
{
	size_t i;

	switch (a->kind) {
	case ADDR_UNIX:
		snprintf(out, outlen, "unix:%s", a->path);
		return;
	case ADDR_TCP:
		snprintf(out, outlen, strchr(a->host, ':') ? "tcp:[%s]:%u" : "tcp:%s:%u",
			 a->host, (unsigned)a->port);
		return;
	case ADDR_VSOCK:
		for (i = 0; i < sizeof(cids) / sizeof(cids[0]); i++) {
			if (cids[i].cid == a->cid) {
				snprintf(out, outlen, "vsock:%s:%u", cids[i].name,
					 (unsigned)a->vport);
				return;
			}
		}
		snprintf(out, outlen, "vsock:%u:%u", (unsigned)a->cid,
			 (unsigned)a->vport);
		return;
	}
	snprintf(out, outlen, "?");
}

/* ---- sockets ---- */

static int new_socket(int family)
{
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	return fd < 0 ? -errno : fd;
}

static void unix_sa(const struct addr *a, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, a->path, strlen(a->path) + 1);
}

static void vsock_sa(const struct addr *a, struct sockaddr_vm *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->svm_family = AF_VSOCK;
	sa->svm_cid = a->cid;
	sa->svm_port = a->vport;
}

/* Removes path if it is a socket nobody listens on any more. */
static int unlink_stale(const char *path, char *err, size_t errlen)
{
	struct addr probe = {.kind = ADDR_UNIX};
	struct sockaddr_un sa;
	struct stat st;
	int fd, r;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		set_error(err, errlen, "%s exists and is not a socket", path);
		return -EEXIST;
	}
	snprintf(probe.path, sizeof(probe.path), "%s", path);
	unix_sa(&probe, &sa);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	if (r == 0) {
		set_error(err, errlen, "%s is in use by a live listener", path);
		return -EADDRINUSE;
	}
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* Binds fd to sa and listens; closes fd on failure. */
static int bind_listen(int fd, const struct sockaddr *sa, socklen_t len, const char *what,
		       char *err, size_t errlen)
{
	if (bind(fd, sa, len) < 0 || listen(fd, ADDR_BACKLOG) < 0) {
		int e = errno;

		set_error(err, errlen, "listen on %s: %s", what, strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

static int listen_unix(const struct addr *a, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	mode_t old;
	int fd, r;

	r = unlink_stale(a->path, err, errlen);
	if (r < 0) {
		if (r != -EEXIST && r != -EADDRINUSE)
			set_error(err, errlen, "%s: %s", a->path, strerror(-r));
		return r;
	}
	fd = new_socket(AF_UNIX);
	if (fd < 0) {
		set_error(err, errlen, "socket: %s", strerror(-fd));
		return fd;
	}
	unix_sa(a, &sa);
	/* The link is not authenticated: only the owner may connect. The
	   umask makes the socket file 0600 from the moment it exists. */
	old = umask(0177);
	fd = bind_listen(fd, (struct sockaddr *)&sa, sizeof(sa), a->path, err, errlen);
	umask(old);
	return fd;
}

static int is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *in6 =
		    &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(in6) ||
		       (IN6_IS_ADDR_V4MAPPED(in6) && in6->s6_addr[12] == 127);
	}
	return 0;
}

static int resolve(const struct addr *a, bool passive, struct addrinfo **res, char *err,
		   size_t errlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)};
	char port[8];
	int r;

	snprintf(port, sizeof(port), "%u", (unsigned)a->port);
	r = getaddrinfo(a->host, port, &hints, res);
	if (r != 0) {
		set_error(err, errlen, "resolve %s: %s", a->host, gai_strerror(r));
		return r == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
	}
	return 0;
}

/* Every address the name gives must be loopback, or none is used. */
static int check_loopback(const struct addr *a, const struct addrinfo *res, char *err,
			  size_t errlen)
{
	for (; res; res = res->ai_next) {
		if (!is_loopback(res->ai_addr)) {
			set_error(
			    err, errlen,
			    "refusing to listen on non-loopback address %s: the link is "
			    "unauthenticated (allow public listening to override)",
			    a->host);
			return -EPERM;
		}
	}
	return 0;
}

static int listen_tcp(const struct addr *a, int flags, char *err, size_t errlen)
{
	struct addrinfo *res, *ai;
	int fd, one = 1;

	fd = resolve(a, true, &res, err, errlen);
	if (fd < 0)
		return fd;
	if (!(flags & ADDR_ALLOW_PUBLIC) &&
	    (fd = check_loopback(a, res, err, errlen)) < 0)
		goto out_free;
	fd = -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = new_socket(ai->ai_family);
		if (fd < 0) {
			set_error(err, errlen, "socket: %s", strerror(-fd));
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		fd = bind_listen(fd, ai->ai_addr, ai->ai_addrlen, a->host, err, errlen);
		if (fd >= 0)
			break;
	}
out_free:
	freeaddrinfo(res);
	return fd;
}

static int listen_vsock(const struct addr *a, char *err, size_t errlen)
{
	struct sockaddr_vm sa;
	int fd = new_socket(AF_VSOCK);

	if (fd < 0) {
		set_error(err, errlen, "vsock socket: %s", strerror(-fd));
		return fd;
	}
	vsock_sa(a, &sa);
	return bind_listen(fd, (struct sockaddr *)&sa, sizeof(sa), "vsock", err, errlen);
}

int addr_listen(const struct addr *a, int flags, char *err, size_t errlen)
{
	switch (a->kind) {
	case ADDR_UNIX:
		return listen_unix(a, err, errlen);
	case ADDR_TCP:
		return listen_tcp(a, flags, err, errlen);
	case ADDR_VSOCK:
		return listen_vsock(a, err, errlen);
	}
	set_error(err, errlen, "unknown address kind");
	return -EINVAL;
}

/* Starts connecting fd to sa; closes fd unless under way or done. */
static int start_connect(int fd, const struct sockaddr *sa, socklen_t len,
			 const char *what, char *err, size_t errlen)
{
	if (connect(fd, sa, len) < 0 && errno != EINPROGRESS) {
		int e = errno;

		set_error(err, errlen, "connect to %s: %s", what, strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

static int connect_tcp(const struct addr *a, char *err, size_t errlen)
{
	struct addrinfo *res, *ai;
	int fd;

	fd = resolve(a, false, &res, err, errlen);
	if (fd < 0)
		return fd;
	fd = -EADDRNOTAVAIL;
	/* Only a synchronous failure moves on to the next address. */
	for (ai = res; ai; ai = ai->ai_next) {
		fd = new_socket(ai->ai_family);
		if (fd < 0) {
			set_error(err, errlen, "socket: %s", strerror(-fd));
			continue;
		}
		fd = start_connect(fd, ai->ai_addr, ai->ai_addrlen, a->host, err, errlen);
		if (fd >= 0)
			break;
	}
	freeaddrinfo(res);
	return fd;
}

int addr_connect(const struct addr *a, char *err, size_t errlen)
{
	struct sockaddr_un un;
	struct sockaddr_vm vm;
	int fd;

	if (a->kind == ADDR_TCP)
		return connect_tcp(a, err, errlen);
	fd = new_socket(a->kind == ADDR_UNIX ? AF_UNIX : AF_VSOCK);
	if (fd < 0) {
		set_error(err, errlen, "socket: %s", strerror(-fd));
		return fd;
	}
	if (a->kind == ADDR_UNIX) {
		unix_sa(a, &un);
		return start_connect(fd, (struct sockaddr *)&un, sizeof(un), a->path, err,
				     errlen);
	}
	vsock_sa(a, &vm);
	return start_connect(fd, (struct sockaddr *)&vm, sizeof(vm), "vsock", err,
			     errlen);
}

void addr_tcp_nodelay(int fd)
{
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
}

void addr_tcp_whole_writes(int fd, int notsent_lowat)
{
	addr_tcp_nodelay(fd);
	setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &notsent_lowat,
		   sizeof(notsent_lowat));
}
