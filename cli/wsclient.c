/* wsclient: a WebSocket client connection. The opening handshake is done
   here by hand, blocking with a deadline (the CLI has nothing else to do
   meanwhile); after it the socket is non-blocking and wslay's client
   context does the framing, reading and writing the socket itself through
   its callbacks. Bytes that arrived with the handshake answer are served
   to wslay first. */
#include "wsclient.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>
#include <wslay/wslay.h>
#include <zlib.h>

#include "addr.h"
#include "b64.h"
#include "num.h"
#include "timeutil.h"
#include "tlsio.h"
#include "wshandshake.h"
#include "xalloc.h"

/* Unsent bytes the kernel holds for the gateway (TCP_NOTSENT_LOWAT);
   the rest of an upload waits in wslay's queue. */
#define WSCLIENT_KERNEL_QUEUE (128 * 1024)

struct wsclient {
	int fd;
	struct tlsio *tls; /* wss://, or NULL */
	wslay_event_context_ptr ctx;
	struct wsclient_callbacks cb;
	void *user;
	struct buf pending; /* bytes that came with the handshake answer */
	bool eof;	    /* the peer closed its side of the socket */
	bool failed;	    /* a socket error: nothing more to do */
	bool deflate;	    /* permessage-deflate agreed */
	z_stream *inflate;  /* made at the first compressed message */
	/* ws:// only (tlsio joins its own): a frame's header, held until its
	   payload so that one send carries both. */
	uint8_t head[16];
	size_t head_len;
	bool drained;		/* the last recv was short: the socket was empty */
	uint8_t mask_pool[256]; /* masking keys not yet used: the last mask_left */
	size_t mask_left;
};

static int split_authority(const char *auth, size_t n, struct wsclient_addr *a, char *err,
			   size_t errlen)
{
	uint16_t port = a->tls ? 443 : 80;

	if (n == 0 || n >= sizeof(a->authority) ||
	    addr_parse_hostport(auth, n, ADDR_PORT_OPTIONAL, a->host, sizeof(a->host),
				&port, NULL, 0) < 0) {
		snprintf(err, errlen, "bad host in gateway URL '%.*s'", (int)n, auth);
		return -EINVAL;
	}
	snprintf(a->port, sizeof(a->port), "%u", (unsigned)port);
	memcpy(a->authority, auth, n);
	a->authority[n] = '\0';
	return 0;
}

int wsclient_split_url(const char *url, struct wsclient_addr *a, char *err, size_t errlen)
{
	const char *rest, *slash;
	size_t n;

	memset(a, 0, sizeof(*a));
	if (!strncasecmp(url, "https://", 8))
		rest = url + 8, a->tls = true;
	else if (!strncasecmp(url, "wss://", 6))
		rest = url + 6, a->tls = true;
	else if (!strncasecmp(url, "http://", 7))
		rest = url + 7;
	else if (!strncasecmp(url, "ws://", 5))
		rest = url + 5;
	else {
		snprintf(err, errlen, "gateway URL '%s' is not http(s):// or ws(s)://",
			 url);
		return -EINVAL;
	}
	if (strpbrk(rest, "?# \t\r\n")) {
		snprintf(err, errlen,
			 "gateway URL '%s' may not hold a query, a fragment "
			 "or spaces",
			 url);
		return -EINVAL;
	}
	slash = strchr(rest, '/');
	n = slash ? (size_t)(slash - rest) : strlen(rest);
	if (split_authority(rest, n, a, err, errlen) < 0)
		return -EINVAL;
	if (slash) {
		size_t plen = strlen(slash);

		while (plen && slash[plen - 1] == '/')
			plen--;
		if (plen >= sizeof(a->prefix)) {
			snprintf(err, errlen, "gateway URL path is too long");
			return -EINVAL;
		}
		memcpy(a->prefix, slash, plen);
		a->prefix[plen] = '\0';
	}
	return 0;
}

void wsclient_request_ext(const struct wsclient_addr *a, const char *path,
			  const char *key, const char *token, const char *extensions,
			  struct buf *out)
{
	buf_appendf(out,
		    "GET %s%s HTTP/1.1\r\n"
		    "Host: %s\r\n"
		    "Upgrade: websocket\r\n"
		    "Connection: Upgrade\r\n"
		    "Sec-WebSocket-Key: %s\r\n"
		    "Sec-WebSocket-Version: 13\r\n"
		    "Sec-WebSocket-Protocol: " WSHS_PROTOCOL "\r\n"
		    "User-Agent: ptygate/" PTG_VERSION "\r\n",
		    a->prefix, path, a->authority, key);
	if (extensions)
		buf_appendf(out, "Sec-WebSocket-Extensions: %s\r\n", extensions);
	if (token)
		buf_appendf(out, "Authorization: Bearer %s\r\n", token);
	buf_append_str(out, "\r\n");
}

void wsclient_request(const struct wsclient_addr *a, const char *path, const char *key,
		      const char *token, struct buf *out)
{
	wsclient_request_ext(a, path, key, token, NULL, out);
}

/* The value of header name in head (NUL-terminated, lines after the
   status line), trimmed, into out. Returns whether it was there. */
static bool header(const char *head, const char *name, char *out, size_t outlen)
{
	size_t nlen = strlen(name), vlen;
	const char *line = strstr(head, "\r\n"), *v, *end;

	for (; line; line = strstr(line, "\r\n")) {
		line += 2;
		if (strncasecmp(line, name, nlen) || line[nlen] != ':')
			continue;
		v = line + nlen + 1;
		end = strstr(v, "\r\n");
		if (!end)
			end = v + strlen(v);
		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		vlen = (size_t)(end - v) < outlen - 1 ? (size_t)(end - v) : outlen - 1;
		memcpy(out, v, vlen);
		out[vlen] = '\0';
		return true;
	}
	return false;
}

/* Whether the comma-separated list has token tok (case-insensitive). */
static bool has_token(const char *list, const char *tok)
{
	size_t n = strlen(tok), len;
	const char *s = list;

	while (*s) {
		s += strspn(s, " \t,");
		len = strcspn(s, " \t,");
		if (len == n && !strncasecmp(s, tok, n))
			return true;
		s += len;
	}
	return false;
}

/* One parameter of a permessage-deflate answer, trimmed; bit is set in
 *seen. Returns false for one RFC 7692 does not allow here. */
static bool answer_param(char *p, unsigned *seen)
{
	static const char *const names[] = {"server_no_context_takeover",
					    "client_no_context_takeover",
					    "server_max_window_bits"};
	char *eq = strchr(p, '='), *v = NULL;
	unsigned i;
	uint64_t bits;

	if (eq) {
		*eq = '\0';
		v = eq + 1;
		v += strspn(v, " \t");
		v[strcspn(v, " \t")] = '\0';
	}
	p += strspn(p, " \t");
	p[strcspn(p, " \t")] = '\0';
	for (i = 0; i < 3 && strcasecmp(p, names[i]); i++)
		;
	if (i == 3 || (*seen & (1u << i)) || (i < 2) != (v == NULL))
		return false;
	*seen |= 1u << i;
	return i < 2 || (v[0] != '0' && num_parse_u64(v, 8, 15, &bits) == 0);
}

/* Reads the Sec-WebSocket-Extensions of a 101 header (head, n bytes) to
   WSCLIENT_DEFLATE_OFFER: none leaves *deflate false; permessage-deflate
   with server_no_context_takeover and nothing but the parameters RFC 7692
   defines for an answer to that offer (client_no_context_takeover,
   server_max_window_bits=8..15) sets it. Returns 0, or -EPROTO with a
   reason in err for anything else (RFC 7692 5: the client fails the
   connection). */
static int wsclient_agreed_deflate(const char *head, size_t n, bool *deflate, char *err,
				   size_t errlen)
{
	char *copy = xstrndup(head, n), v[512], *save = NULL, *part;
	unsigned seen = 0;
	bool ok;

	*deflate = false;
	ok = !header(copy, "Sec-WebSocket-Extensions", v, sizeof(v));
	if (!ok && strlen(v) < sizeof(v) - 1 && !strchr(v, ',') && !strchr(v, '"')) {
		part = strtok_r(v, ";", &save);
		part += strspn(part, " \t");
		part[strcspn(part, " \t")] = '\0';
		ok = !strcasecmp(part, "permessage-deflate");
		while (ok && (part = strtok_r(NULL, ";", &save)))
			ok = answer_param(part, &seen);
		ok = ok && (seen & 1u); /* offered, so it must be answered */
		*deflate = ok;
	}
	free(copy);
	if (!ok)
		snprintf(err, errlen,
			 "the gateway answered with an extension not offered "
			 "(Sec-WebSocket-Extensions)");
	return ok ? 0 : -EPROTO;
}

/* The 101's headers against RFC 6455 4.1 and the binding's opening
   (docs/protocol.md, "1. Opening a connection"). */
static int check_upgrade(const char *head, const char *accept, char *err, size_t errlen)
{
	char v[256];

	if (!header(head, "Upgrade", v, sizeof(v)) || !has_token(v, "websocket") ||
	    !header(head, "Connection", v, sizeof(v)) || !has_token(v, "upgrade")) {
		snprintf(err, errlen,
			 "the gateway's 101 answer lacks Upgrade: websocket "
			 "or Connection: upgrade");
		return -EPROTO;
	}
	if (!header(head, "Sec-WebSocket-Accept", v, sizeof(v)) || strcmp(v, accept)) {
		snprintf(err, errlen,
			 "the gateway's Sec-WebSocket-Accept does not match "
			 "the key sent");
		return -EPROTO;
	}
	if (!header(head, "Sec-WebSocket-Protocol", v, sizeof(v)) ||
	    strcmp(v, WSHS_PROTOCOL)) {
		snprintf(err, errlen,
			 "the gateway did not accept subprotocol " WSHS_PROTOCOL);
		return -EPROTO;
	}
	return 0;
}

/* The refusal as one line: status, and the body's {code, message} when
   it is JSON (a chunked body is searched for its outermost braces). */
static int refusal(int status, const char *head, const char *body, size_t n, char *err,
		   size_t errlen)
{
	const char *lb = memchr(body, '{', n), *rb = NULL, *code, *msg;
	char retry[40] = "", ra[12];
	json_t *o = NULL;
	size_t i;

	for (i = n; lb && i > (size_t)(lb - body); i--)
		if (body[i - 1] == '}') {
			rb = body + i;
			break;
		}
	if (lb && rb)
		o = json_loadb(lb, (size_t)(rb - lb), 0, NULL);
	code = json_string_value(json_object_get(o, "code"));
	msg = json_string_value(json_object_get(o, "message"));
	if (status == 429 && header(head, "Retry-After", ra, sizeof(ra)))
		snprintf(retry, sizeof(retry), " (retry after %s s)", ra);
	snprintf(err, errlen, "the gateway refused the attach: HTTP %d%s%s%s%s%s", status,
		 code ? " " : "", code ? code : "", msg ? ": " : "", msg ? msg : "",
		 retry);
	json_decref(o);
	return -ECONNREFUSED;
}

/* For a refusal, whether its body is complete (or as much as we read). */
static bool body_complete(const char *head, size_t have, bool eof)
{
	char v[32];
	uint64_t len;

	if (eof || have >= WSCLIENT_BODY_MAX)
		return true;
	if (header(head, "Transfer-Encoding", v, sizeof(v)))
		return false; /* chunked: wait for the end of the connection */
	if (!header(head, "Content-Length", v, sizeof(v)))
		return false;
	/* No usable length: nothing to wait for. */
	return num_parse_u64(v, 0, UINT64_MAX, &len) < 0 || len <= have;
}

int wsclient_check_response(const char *p, size_t n, bool eof, const char *accept,
			    size_t *head_len, char *err, size_t errlen)
{
	const char *end = n >= 4 ? memmem(p, n, "\r\n\r\n", 4) : NULL;
	char *head;
	uint64_t status;
	int rc;

	if (!end) {
		if (n > WSCLIENT_HEAD_MAX || eof) {
			snprintf(err, errlen,
				 eof ? "the gateway closed the connection "
				       "during the handshake"
				     : "the gateway's answer header is too large");
			return -EPROTO;
		}
		return 0;
	}
	*head_len = (size_t)(end - p) + 4;
	if (*head_len > WSCLIENT_HEAD_MAX) {
		snprintf(err, errlen, "the gateway's answer header is too large");
		return -EPROTO;
	}
	head = xstrndup(p, *head_len - 2); /* keeps the last header's CRLF */
	if (strncmp(head, "HTTP/1.", 7) || strlen(head) < 12 || head[8] != ' ' ||
	    num_parse_u64_n(head + 9, 3, 100, 599, &status) < 0) {
		snprintf(err, errlen, "the gateway's answer is not HTTP");
		rc = -EPROTO;
	} else if (status == 101) {
		rc = check_upgrade(head, accept, err, errlen);
		rc = rc < 0 ? rc : 1;
	} else if (!body_complete(head, n - *head_len, eof)) {
		rc = 0;
	} else {
		rc =
		    refusal((int)status, head, p + *head_len, n - *head_len, err, errlen);
	}
	free(head);
	return rc;
}

/* Waits for events on fd until the deadline (monotonic ms). Returns 0 or
   -ETIMEDOUT. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = events};
	int64_t left;
	int n;

	for (;;) {
		left = deadline - time_mono_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* A non-blocking TCP connection to a, within the deadline. Returns the fd
   or a negative errno with the reason in err. */
static int dial(const struct wsclient_addr *a, int64_t deadline, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res, *ai;
	int fd = -1, rc, soerr = ECONNREFUSED;
	socklen_t sl = sizeof(soerr);

	rc = getaddrinfo(a->host, a->port, &hints, &res);
	if (rc != 0) {
		snprintf(err, errlen, "cannot resolve %s: %s", a->host, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		soerr = errno;
		if (soerr == EINPROGRESS) {
			if (wait_fd(fd, POLLOUT, deadline) < 0)
				soerr = ETIMEDOUT;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
				soerr = errno;
			if (soerr == 0)
				break;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, errlen, "cannot connect to %s: %s", a->authority,
			 strerror(soerr));
		return -soerr;
	}
	/* Nagle held each keystroke's frame (wslay writes its header and
	   payload apart) until the gateway's delayed ACK: 43 ms an echo. */
	addr_tcp_whole_writes(fd, WSCLIENT_KERNEL_QUEUE);
	return fd;
}

/* recv and send on the socket, or through its TLS session. */
static ssize_t io_recv(int fd, struct tlsio *t, void *p, size_t n)
{
	ssize_t r;

	do
		r = t ? tlsio_recv(t, p, n) : recv(fd, p, n, 0);
	while (r < 0 && errno == EINTR);
	return r;
}

/* more (TLS only): the caller sends the rest of this message next
   (wslay writes a frame's header and payload apart), so tlsio holds these
   bytes and one record carries both. Over a plain socket the header is
   held before it gets here (plain_send). */
static ssize_t io_send(int fd, struct tlsio *t, const void *p, size_t n, bool more)
{
	ssize_t r;

	do
		r = t ? tlsio_send_more(t, p, n, more) : send(fd, p, n, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	return r;
}

/* What a call that would block waits for: TLS may need the other way. */
static short want(const struct tlsio *t, short plain)
{
	return t ? tlsio_events(t) : plain;
}

/* Writes all of b to the non-blocking fd within the deadline. */
static int send_all(int fd, struct tlsio *t, const struct buf *b, int64_t deadline)
{
	size_t off = 0;
	ssize_t n;
	int rc;

	while (off < buf_size(b)) {
		n = io_send(fd, t, buf_head(b) + off, buf_size(b) - off, false);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN)
			return -errno;
		rc = wait_fd(fd, want(t, POLLOUT), deadline);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Reads the answer into in until wsclient_check_response decides. */
static int read_answer(int fd, struct tlsio *t, const char *accept, struct buf *in,
		       size_t *head_len, int64_t deadline, char *err, size_t errlen)
{
	bool eof = false;
	ssize_t n;
	int rc;

	for (;;) {
		rc = wsclient_check_response((const char *)buf_head(in), buf_size(in),
					     eof, accept, head_len, err, errlen);
		if (rc != 0)
			return rc;
		n = io_recv(fd, t, buf_reserve(in, 4096), 4096);
		if (n > 0) {
			buf_commit(in, (size_t)n);
		} else if (n == 0) {
			eof = true;
		} else if (errno == EAGAIN) {
			if (wait_fd(fd, want(t, POLLIN), deadline) < 0) {
				snprintf(err, errlen,
					 "no answer from the gateway in time");
				return -ETIMEDOUT;
			}
		} else {
			snprintf(err, errlen, "reading the gateway's answer: %s",
				 strerror(errno));
			return -EIO;
		}
	}
}

/* The handshake on a connected fd; leaves the data after the answer's
   header in *rest. */
static int handshake(int fd, struct tlsio *t, const struct wsclient_addr *a,
		     const char *path, const char *token, int64_t deadline,
		     struct buf *rest, bool *deflate, char *err, size_t errlen)
{
	uint8_t nonce[16];
	char accept[WSHS_ACCEPT_LEN + 1];
	struct buf key = BUF_INIT, req = BUF_INIT;
	size_t head_len = 0;
	int rc;

	randombytes_buf(nonce, sizeof(nonce));
	b64_encode(nonce, sizeof(nonce), &key);
	*buf_reserve(&key, 1) = '\0';
	wshs_accept_key((const char *)key.data, accept);
	wsclient_request_ext(a, path, (const char *)key.data, token,
			     WSCLIENT_DEFLATE_OFFER, &req);
	rc = send_all(fd, t, &req, deadline);
	if (rc < 0)
		snprintf(err, errlen, "sending the upgrade request: %s", strerror(-rc));
	else
		rc = read_answer(fd, t, accept, rest, &head_len, deadline, err, errlen);
	if (rc == 1) {
		rc = wsclient_agreed_deflate((const char *)buf_head(rest), head_len,
					     deflate, err, errlen);
		buf_consume(rest, head_len);
	}
	sodium_memzero(req.data, req.cap); /* it holds the token */
	buf_free(&req);
	buf_free(&key);
	return rc;
}

static ssize_t recv_cb(wslay_event_context_ptr ctx, uint8_t *p, size_t len, int flags,
		       void *user)
{
	struct wsclient *c = user;
	ssize_t n;

	if (buf_size(&c->pending)) {
		n = (ssize_t)(len < buf_size(&c->pending) ? len : buf_size(&c->pending));
		memcpy(p, buf_head(&c->pending), (size_t)n);
		buf_consume(&c->pending, (size_t)n);
		return n;
	}
	/* A short read of a plain socket emptied it: no recv only to meet
	   EAGAIN (one a keystroke's echo); the caller's poll reports more.
	   A TLS read returns one record whatever else waits, so it does not
	   tell. */
	if (c->drained) {
		c->drained = false;
		errno = EAGAIN;
		n = -1;
	} else {
		n = io_recv(c->fd, c->tls, p, len);
		c->drained = !c->tls && n > 0 && (size_t)n < len;
	}
	if (n > 0)
		return n;
	if (n < 0 && errno == EAGAIN) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (n == 0)
		c->eof = true;
	else
		c->failed = true;
	wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

/* The held header and p in one sendmsg. Returns the bytes of p sent; a
   send that took only part of the header keeps the rest for the retry
   of the same payload (wslay retries a send that would block). */
static ssize_t send_joined(struct wsclient *c, const void *p, size_t len)
{
	struct iovec iov[2] = {{c->head, c->head_len}, {(void *)p, len}};
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
	ssize_t w;

	do
		w = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -1;
	if ((size_t)w < c->head_len || ((size_t)w == c->head_len && len)) {
		memmove(c->head, c->head + w, c->head_len - (size_t)w);
		c->head_len -= (size_t)w;
		errno = EAGAIN;
		return -1;
	}
	w -= (ssize_t)c->head_len;
	c->head_len = 0;
	return w;
}

/* ws://: wslay writes a frame's header (more set) and then its payload;
   the header waits for the payload so one system call sends both. */
static ssize_t plain_send(struct wsclient *c, const void *p, size_t len, bool more)
{
	if (more && !c->head_len && len <= sizeof(c->head)) {
		memcpy(c->head, p, len);
		c->head_len = len;
		return (ssize_t)len;
	}
	if (c->head_len)
		return send_joined(c, p, len);
	return io_send(c->fd, NULL, p, len, false);
}

static ssize_t send_cb(wslay_event_context_ptr ctx, const uint8_t *p, size_t len,
		       int flags, void *user)
{
	struct wsclient *c = user;
	bool more = (flags & WSLAY_MSG_MORE) != 0;
	ssize_t n;

	n = c->tls ? io_send(c->fd, c->tls, p, len, more) : plain_send(c, p, len, more);
	if (n >= 0)
		return n;
	if (errno == EAGAIN) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
	} else {
		c->failed = true;
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	}
	return -1;
}

/* Client frames are masked (RFC 6455 5.3) with unpredictable keys: the
   system's random bytes, drawn a pool at a time rather than with a
   getrandom(2) per frame (one a keystroke). */
static int genmask_cb(wslay_event_context_ptr ctx, uint8_t *p, size_t len, void *user)
{
	struct wsclient *c = user;

	if (len > sizeof(c->mask_pool)) {
		randombytes_buf(p, len);
		return 0;
	}
	if (c->mask_left < len) {
		randombytes_buf(c->mask_pool, sizeof(c->mask_pool));
		c->mask_left = sizeof(c->mask_pool);
	}
	memcpy(p, c->mask_pool + sizeof(c->mask_pool) - c->mask_left, len);
	c->mask_left -= len;
	return 0;
}

/* Inflates a compressed server message into out, at most
   WSCLIENT_MESSAGE_MAX bytes: 0, -EMSGSIZE past it, -EINVAL for data
   that does not inflate. */
static int inflate_msg(struct wsclient *c, const uint8_t *p, size_t n, struct buf *out)
{
	static const uint8_t tail[4] = {0x00, 0x00, 0xff, 0xff};
	z_stream *z = c->inflate;
	int r = Z_OK;

	if (!z) {
		z = c->inflate = xcalloc(1, sizeof(*z));
		if (inflateInit2(z, -15) != Z_OK)
			abort(); /* only on out of memory: the xalloc policy */
	}
	inflateReset(z);
	for (int part = 0; part < 2 && r != Z_STREAM_END; part++) {
		z->next_in = (Bytef *)(part ? tail : p);
		z->avail_in = part ? sizeof(tail) : (uInt)n;
		do {
			if (buf_size(out) > WSCLIENT_MESSAGE_MAX)
				return -EMSGSIZE;
			z->next_out = buf_reserve(out, 65536);
			z->avail_out = 65536;
			r = inflate(z, Z_SYNC_FLUSH);
			if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR)
				return -EINVAL;
			buf_commit(out, 65536 - z->avail_out);
		} while (z->avail_out == 0 && r != Z_STREAM_END);
	}
	return buf_size(out) > WSCLIENT_MESSAGE_MAX ? -EMSGSIZE : 0;
}

/* A compressed text message, inflated and handed on; a bad one closes. */
static void on_deflated(struct wsclient *c, const struct wslay_event_on_msg_recv_arg *arg)
{
	struct buf out = BUF_INIT;
	int r = inflate_msg(c, arg->msg, arg->msg_length, &out);

	if (r < 0) {
		wslay_event_shutdown_read(c->ctx);
		wslay_event_queue_close(c->ctx, r == -EMSGSIZE ? 1009 : 1007, NULL, 0);
	} else if (arg->opcode == WSLAY_TEXT_FRAME && c->cb.on_text) {
		c->cb.on_text((const char *)buf_head(&out), buf_size(&out), c->user);
	}
	buf_free(&out);
}

static void msg_cb(wslay_event_context_ptr ctx,
		   const struct wslay_event_on_msg_recv_arg *arg, void *user)
{
	struct wsclient *c = user;
	const char *reason = "";
	size_t n = 0;

	if (arg->rsv & WSLAY_RSV1_BIT) {
		on_deflated(c, arg);
		return;
	}
	if (arg->opcode == WSLAY_TEXT_FRAME && c->cb.on_text) {
		c->cb.on_text((const char *)arg->msg, arg->msg_length, c->user);
	} else if (arg->opcode == WSLAY_CONNECTION_CLOSE && c->cb.on_close) {
		if (arg->msg_length > 2) {
			reason = (const char *)arg->msg + 2;
			n = arg->msg_length - 2;
		}
		c->cb.on_close(arg->status_code ? arg->status_code
						: WSLAY_CODE_NO_STATUS_RCVD,
			       reason, n, c->user);
	}
	/* Pings are answered by wslay; binary messages are not in the protocol. */
}

/* Sends what wslay has queued, as far as the socket takes it. */
static int flush(struct wsclient *c)
{
	if (c->failed || !wslay_event_want_write(c->ctx))
		return 0;
	if (wslay_event_send(c->ctx) != 0) {
		c->failed = true;
		return -EIO;
	}
	return 0;
}

static struct wsclient *new (int fd, struct tlsio *t, const struct wsclient_callbacks *cb,
			     void *user, struct buf *rest, bool deflate)
{
	static const struct wslay_event_callbacks wcb = {
	    .recv_callback = recv_cb,
	    .send_callback = send_cb,
	    .genmask_callback = genmask_cb,
	    .on_msg_recv_callback = msg_cb,
	};
	struct wsclient *c = xcalloc(1, sizeof(*c));

	c->fd = fd;
	c->tls = t;
	c->cb = *cb;
	c->user = user;
	c->pending = *rest;
	buf_init(rest);
	if (wslay_event_context_client_init(&c->ctx, &wcb, c) != 0)
		abort(); /* only WSLAY_ERR_NOMEM: allocation failure aborts */
	wslay_event_config_set_max_recv_msg_length(c->ctx, WSCLIENT_MESSAGE_MAX);
	c->deflate = deflate;
	if (deflate)
		wslay_event_config_set_allowed_rsv_bits(c->ctx, WSLAY_RSV1_BIT);
	return c;
}

struct wsclient *wsclient_connect(const char *url, const char *path, const char *token,
				  int timeout_ms, const struct wsclient_callbacks *cb,
				  void *user, char *err, size_t errlen)
{
	return wsclient_connect_tls(url, path, token, timeout_ms, NULL, cb, user, err,
				    errlen);
}

struct wsclient *wsclient_connect_tls(const char *url, const char *path,
				      const char *token, int timeout_ms,
				      const struct tlsio_opts *tls,
				      const struct wsclient_callbacks *cb, void *user,
				      char *err, size_t errlen)
{
	int64_t deadline = time_mono_ms() + timeout_ms;
	struct wsclient_addr a;
	struct buf rest = BUF_INIT;
	struct wsclient *c;
	struct tlsio *t = NULL;
	bool deflate = false;
	int fd;

	if (wsclient_split_url(url, &a, err, errlen) < 0 || sodium_init() < 0)
		return NULL;
	fd = dial(&a, deadline, err, errlen);
	if (fd < 0)
		return NULL;
	if ((a.tls && !(t = tlsio_connect(fd, a.host, tls, deadline, err, errlen))) ||
	    handshake(fd, t, &a, path, token, deadline, &rest, &deflate, err, errlen) <
		0) {
		buf_free(&rest);
		tlsio_free(t);
		close(fd);
		return NULL;
	}
	c = new (fd, t, cb, user, &rest, deflate);
	if (buf_size(&c->pending))
		wsclient_handle(c, POLLIN);
	return c;
}

void wsclient_free(struct wsclient *c)
{
	if (!c)
		return;
	wslay_event_context_free(c->ctx);
	tlsio_free(c->tls);
	close(c->fd);
	buf_free(&c->pending);
	if (c->inflate) {
		inflateEnd(c->inflate);
		free(c->inflate);
	}
	free(c);
}

int wsclient_fd(const struct wsclient *c)
{
	return c->fd;
}

short wsclient_events(const struct wsclient *c)
{
	short ev = 0;

	if (c->failed)
		return 0;
	if (wslay_event_want_read(c->ctx))
		ev |= POLLIN;
	if (wslay_event_want_write(c->ctx))
		ev |= POLLOUT;
	return ev;
}

int wsclient_handle(struct wsclient *c, short revents)
{
	if (c->failed)
		return c->eof ? -ECONNRESET : -EIO;
	if ((revents & (POLLIN | POLLHUP | POLLERR)) && wslay_event_want_read(c->ctx) &&
	    wslay_event_recv(c->ctx) != 0) {
		c->failed = true;
		return c->eof ? -ECONNRESET : -EIO;
	}
	return flush(c);
}

int wsclient_send_text(struct wsclient *c, const char *p, size_t n)
{
	struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)p, n};

	if (c->failed || wslay_event_queue_msg(c->ctx, &m) != 0)
		return -ESHUTDOWN;
	return flush(c);
}

int wsclient_close(struct wsclient *c, uint16_t code, const char *reason)
{
	size_t n = reason ? strlen(reason) : 0;

	if (c->failed || wslay_event_queue_close(c->ctx, code, (const uint8_t *)reason,
						 n > 123 ? 123 : n) != 0)
		return -ESHUTDOWN;
	return flush(c);
}

size_t wsclient_queued(const struct wsclient *c)
{
	return wslay_event_get_queued_msg_length(c->ctx);
}

bool wsclient_done(const struct wsclient *c)
{
	return c->failed ||
	       (!wslay_event_want_read(c->ctx) && !wslay_event_want_write(c->ctx));
}

uint16_t wsclient_close_code(const struct wsclient *c)
{
	if (!wslay_event_get_close_received(c->ctx))
		return WSCLIENT_CLOSE_LOST;
	return wslay_event_get_status_code_received(c->ctx);
}
