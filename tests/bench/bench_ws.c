/* bench_ws: see bench_ws.h */
#include "bench_ws.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>
#include <zlib.h>

#include "b64.h"
#include "bench_wslay.h"
#include "timeutil.h"
#include "wsclient.h"
#include "wshandshake.h"

#define EXTENSION_URI "https://agentic-sandbox.aiwg.io/extensions/pty-extensions/v1"
/* What a browser offers that compresses every message on its own. */
#define DEFLATE_OFFER                                                                    \
	"permessage-deflate; client_no_context_takeover; server_no_context_takeover"

static int epfd = -1;
static struct wsclient_addr addr;
static char gw_host[64], gw_port[8];
static const char *bearer;
static bool onehop;	    /* the one-hop reference's framing, bench_onehop.c */
static struct buf scratch;  /* decoded data of the frame being handled */
static bool offer_deflate;  /* PTG_BENCH_DEFLATE=1 */
static z_stream inflater;   /* one for the process: reset per message */
static struct buf inflated; /* the inflated message being handled */

double bws_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

void bws_setup(const char *host, const char *port, const char *token)
{
	struct rlimit rl;
	char url[128], err[160];

	snprintf(gw_host, sizeof(gw_host), "%s", host);
	snprintf(gw_port, sizeof(gw_port), "%s", port);
	snprintf(url, sizeof(url), "http://%s:%s", host, port);
	if (wsclient_split_url(url, &addr, err, sizeof(err)) < 0 || sodium_init() < 0) {
		fprintf(stderr, "bench: %s\n", err);
		exit(2);
	}
	bearer = token;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	buf_init(&scratch);
	buf_init(&inflated);
	offer_deflate =
	    getenv("PTG_BENCH_DEFLATE") && !strcmp(getenv("PTG_BENCH_DEFLATE"), "1");
	if (offer_deflate && inflateInit2(&inflater, -15) != Z_OK) {
		fprintf(stderr, "bench: inflateInit2 failed\n");
		exit(2);
	}
}

void bws_set_onehop(void)
{
	onehop = true;
}

static void fail(struct bws *c, const char *why)
{
	if (c->st == BWS_DEAD)
		return;
	if (!c->err[0])
		snprintf(c->err, sizeof(c->err), "%s", why);
	c->st = BWS_DEAD;
	if (c->fd >= 0)
		epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
}

static void want(struct bws *c, bool out)
{
	struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = c};

	epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

int bws_open(struct bws *c, const char *path, int src)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)atoi(gw_port))};
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
	int one = 1, fd;

	c->st = BWS_CONNECTING;
	c->want = -1;
	snprintf(c->path, sizeof(c->path), "%s", path);
	buf_init(&c->in);
	inet_pton(AF_INET, gw_host, &sa.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fail(c, "socket");
		return -errno;
	}
	c->fd = fd;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (src >= 0) {
		struct sockaddr_in me = {.sin_family = AF_INET};

		/* The port is chosen at connect time, per source address. */
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
		me.sin_addr.s_addr = htonl(0x7f000002u + (uint32_t)src);
		if (bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0) {
			fail(c, "bind");
			return -errno;
		}
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		snprintf(c->err, sizeof(c->err), "connect: %s", strerror(errno));
		fail(c, "connect");
		return -errno;
	}
	epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
	return 0;
}

void bws_close(struct bws *c)
{
	if (c->fd >= 0) {
		if (c->st != BWS_DEAD)
			epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	}
	c->fd = -1;
	c->st = BWS_DEAD;
	if (c->ctx)
		wslay_event_context_free(c->ctx);
	c->ctx = NULL;
	buf_free(&c->in);
}

/* ---- the upgrade ---- */

static void send_upgrade(struct bws *c)
{
	uint8_t nonce[16];
	struct buf key = BUF_INIT, req = BUF_INIT;
	int soerr = 0;
	socklen_t len = sizeof(soerr);
	size_t off = 0;

	getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
	if (soerr) {
		snprintf(c->err, sizeof(c->err), "connect: %s", strerror(soerr));
		fail(c, "connect");
		return;
	}
	randombytes_buf(nonce, sizeof(nonce));
	b64_encode(nonce, sizeof(nonce), &key);
	*buf_reserve(&key, 1) = '\0';
	wshs_accept_key((const char *)key.data, c->accept);
	wsclient_request_ext(&addr, c->path, (const char *)key.data, bearer,
			     offer_deflate ? DEFLATE_OFFER : NULL, &req);
	c->t_upgrade = bws_now();
	while (off < buf_size(&req)) { /* a few hundred bytes: the socket takes them */
		ssize_t n =
		    send(c->fd, buf_head(&req) + off, buf_size(&req) - off, MSG_NOSIGNAL);
		if (n <= 0) {
			fail(c, "sending the upgrade");
			break;
		}
		off += (size_t)n;
	}
	buf_free(&req);
	buf_free(&key);
	if (c->st == BWS_CONNECTING) {
		c->st = BWS_HANDSHAKE;
		want(c, false);
	}
}

static void on_msg(wslay_event_context_ptr ctx,
		   const struct wslay_event_on_msg_recv_arg *arg, void *user);

static ssize_t recv_cb(wslay_event_context_ptr ctx, uint8_t *p, size_t len, int flags,
		       void *user)
{
	struct bws *c = user;
	ssize_t n = 0;

	if (!buf_size(&c->in) && !c->budget) {
		/* Fairness: wslay reads until the socket is empty, which a busy
		   stream never is; the other connections get their turn first. */
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (!buf_size(&c->in)) {
		/* wslay asks for 4 KiB at a time: read big chunks so the client's
		   syscalls do not take the CPU the daemons need. */
		buf_reset(&c->in);
		n = recv(c->fd, buf_reserve(&c->in, 64 * 1024), 64 * 1024, 0);
		if (n > 0) {
			buf_commit(&c->in, (size_t)n);
			c->budget = (size_t)n < c->budget ? c->budget - (size_t)n : 0;
		}
	}
	if (buf_size(&c->in)) {
		n = (ssize_t)(len < buf_size(&c->in) ? len : buf_size(&c->in));
		memcpy(p, buf_head(&c->in), (size_t)n);
		buf_consume(&c->in, (size_t)n);
		return n;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static ssize_t send_cb(wslay_event_context_ptr ctx, const uint8_t *p, size_t len,
		       int flags, void *user)
{
	struct bws *c = user;

	return bench_wslay_send(ctx, c->fd, p, len);
}

static int genmask_cb(wslay_event_context_ptr ctx, uint8_t *p, size_t len, void *user)
{
	randombytes_buf(p, len);
	return 0;
}

static void flush(struct bws *c)
{
	if (c->st != BWS_OPEN)
		return;
	if (wslay_event_want_write(c->ctx) && wslay_event_send(c->ctx) != 0) {
		fail(c, "send");
		return;
	}
	want(c, wslay_event_want_write(c->ctx));
}

/* Whether the 101's head (n bytes) agreed permessage-deflate: a
   Sec-WebSocket-Extensions header naming it (the gateway answers only
   what was offered; the CLI's wsclient.c checks the parameters). */
static bool agreed_deflate(const char *head, size_t n)
{
	static const char name[] = "\r\nSec-WebSocket-Extensions:";
	const char *end = head + n;

	for (const char *p = head; p < end; p++) {
		const char *eol;

		if ((size_t)(end - p) < sizeof(name) - 1 ||
		    strncasecmp(p, name, sizeof(name) - 1))
			continue;
		p += sizeof(name) - 1;
		eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		return memmem(p, eol ? (size_t)(eol - p) : (size_t)(end - p),
			      "permessage-deflate", 18) != NULL;
	}
	return false;
}

static void read_handshake(struct bws *c)
{
	static const struct wslay_event_callbacks cb = {
	    .recv_callback = recv_cb,
	    .send_callback = send_cb,
	    .genmask_callback = genmask_cb,
	    .on_msg_recv_callback = on_msg,
	};
	size_t head_len = 0;
	uint8_t *p = buf_reserve(&c->in, 4096);
	ssize_t n = recv(c->fd, p, 4096, 0);
	int rc;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0)
		buf_commit(&c->in, (size_t)n);
	rc =
	    wsclient_check_response((const char *)buf_head(&c->in), buf_size(&c->in),
				    n <= 0, c->accept, &head_len, c->err, sizeof(c->err));
	if (rc == 0 && n > 0)
		return;
	if (rc != 1) {
		fail(c, "upgrade refused");
		return;
	}
	c->t_101 = bws_now();
	c->deflate =
	    offer_deflate && agreed_deflate((const char *)buf_head(&c->in), head_len);
	buf_consume(&c->in, head_len);
	if (wslay_event_context_client_init(&c->ctx, &cb, c) != 0)
		abort();
	wslay_event_config_set_max_recv_msg_length(c->ctx, 64u << 20);
	if (c->deflate)
		wslay_event_config_set_allowed_rsv_bits(c->ctx, WSLAY_RSV1_BIT);
	c->st = BWS_OPEN;
	if (buf_size(&c->in) && wslay_event_recv(c->ctx) != 0)
		fail(c, "recv");
}

/* ---- server frames ---- */

/* The string value of "key":"..." within p[0, n), or "" (fast path). */
static void scan_str(const char *p, size_t n, const char *key, char *out, size_t outlen)
{
	const char *k = memmem(p, n, key, strlen(key));
	size_t i = 0;

	out[0] = '\0';
	if (!k)
		return;
	k += strlen(key);
	while (k < p + n && *k != '"' && i + 1 < outlen)
		out[i++] = *k++;
	out[i] = '\0';
}

static void scan(const char *p, size_t n, struct bws_frame *f)
{
	size_t head = n < 256 ? n : 256; /* op, id, ts, sequence, then payload */
	const char *s = memmem(p, head, "\"sequence\":", 11);

	scan_str(p, head, "\"op\":\"", f->op, sizeof(f->op));
	scan_str(p, n < 320 ? n : 320, "\"kind\":\"", f->kind, sizeof(f->kind));
	if (s) {
		f->has_seq = true;
		f->seq = strtoull(s + 11, NULL, 10);
	}
}

/* The base64 string value of "key":"..." within p[0, n), decoded into
   scratch; NULL when absent or not valid base64. Base64 holds no JSON
   escapes, so the closing quote ends it. Returns where the value ends. */
static const char *b64_field(const char *p, size_t n, const char *key,
			     struct bws_frame *f)
{
	const char *d = memmem(p, n, key, strlen(key)), *end;

	if (!d)
		return NULL;
	d += strlen(key);
	end = memchr(d, '"', (size_t)(p + n - d));
	buf_reset(&scratch);
	if (!end || b64_decode(d, (size_t)(end - d), &scratch) != 0)
		return NULL;
	f->data = buf_head(&scratch);
	f->data_len = buf_size(&scratch);
	return end;
}

/* Output is the hot path of the throughput runs: its header is scanned,
   its data decoded in place, so the client's CPU stays small beside the
   daemons'. Other frames go through jansson. */
static void output_data(struct bws *c, const char *p, size_t n, struct bws_frame *f)
{
	if (!c->decode || !memmem(p, n, "\"data\":\"", 8))
		return;
	if (!b64_field(p, n, "\"data\":\"", f))
		fprintf(stderr,
			"bench: conn %d: an Output frame without valid base64 data\n",
			c->idx);
}

/* A Keyframe is scanned the same way: jansson took ~2.5 ms to parse the
   300 KiB of a 200x60 colour screen's, more than the daemons' work the
   join -> Keyframe time is there to measure. */
static void keyframe_data(struct bws *c, const char *p, size_t n, struct bws_frame *f)
{
	const char *end = b64_field(p, n, "\"snapshot\":\"", f);
	const char *k;

	if (!end) {
		fprintf(stderr, "bench: conn %d: a Keyframe without valid base64\n",
			c->idx);
		return;
	}
	k = memmem(end, (size_t)(p + n - end), "\"snapshot_cols\":", 16);
	if (k)
		f->cols = (unsigned)strtoul(k + 16, NULL, 10);
	k = memmem(end, (size_t)(p + n - end), "\"snapshot_rows\":", 16);
	if (k)
		f->rows = (unsigned)strtoul(k + 16, NULL, 10);
}

static json_t *parse(struct bws *c, const char *p, size_t n, struct bws_frame *f)
{
	json_t *root = json_loadb(p, n, 0, NULL), *payload, *seq;
	const char *s;

	if (!root)
		return NULL;
	payload = json_object_get(root, "payload");
	snprintf(f->op, sizeof(f->op), "%s",
		 json_string_value(json_object_get(root, "op")) ?: "");
	s = json_string_value(json_object_get(payload, "kind"));
	snprintf(f->kind, sizeof(f->kind), "%s", s ?: "");
	seq = json_object_get(root, "sequence");
	if (json_is_integer(seq)) {
		f->has_seq = true;
		f->seq = (uint64_t)json_integer_value(seq);
	}
	f->current_sequence = (uint64_t)json_integer_value(
	    json_object_get(json_object_get(payload, "session"), "current_sequence"));
	return root;
}

/* What every connection records, whatever the mode. */
static void account(struct bws *c, const struct bws_frame *f, const char *text, size_t n)
{
	double t = bws_now();

	if (f->has_seq && strcmp(f->op, "binding_hello")) {
		if (f->seq <= c->last_seq)
			c->seq_errors++;
		c->last_seq = f->seq;
	}
	if (!strcmp(f->op, "binding_hello") && !c->got_hello) {
		c->got_hello = true;
		c->t_hello = t;
		c->hello_seq = f->current_sequence;
	} else if (!strcmp(f->kind, "Keyframe") && !c->got_keyframe &&
		   (!f->has_seq || f->seq > c->hello_seq)) {
		c->got_keyframe = true;
		c->t_keyframe = t;
		c->keyframe_bytes = f->data_len;
		c->keyframe_wire_bytes = f->wire_len;
		c->keyframe_cells = f->cols * f->rows;
	} else if (!strcmp(f->kind, "Closed")) {
		c->got_closed = true;
		c->t_closed = t;
	} else if (!strcmp(f->kind, "Output")) {
		c->out_bytes += f->data_len;
	}
	if (!strcmp(f->op, "Error") || !strcmp(f->kind, "Error")) {
		c->errors++;
		if (!c->got_keyframe && !strcmp(f->op, "Error"))
			c->join_failed = true;
		if (memmem(text, n, "PTY_OUTPUT_LAGGED", 17))
			c->lagged++;
		else if (c->errors <= 3)
			fprintf(stderr, "bench: conn %d: %.*s\n", c->idx,
				(int)(n < 300 ? n : 300), text);
	}
}

/* Inflates a compressed message (RFC 7692 7.2.2: the raw deflate data
   and 00 00 ff ff) into `inflated`; false when it does not inflate. */
static bool inflate_msg(const uint8_t *p, size_t n)
{
	static const uint8_t tail[4] = {0x00, 0x00, 0xff, 0xff};
	int r = Z_OK;

	buf_reset(&inflated);
	inflateReset(&inflater);
	for (int part = 0; part < 2 && r != Z_STREAM_END; part++) {
		inflater.next_in = (Bytef *)(part ? tail : p);
		inflater.avail_in = part ? (uInt)sizeof(tail) : (uInt)n;
		do {
			inflater.next_out = buf_reserve(&inflated, 65536);
			inflater.avail_out = 65536;
			r = inflate(&inflater, Z_SYNC_FLUSH);
			if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR)
				return false;
			buf_commit(&inflated, 65536 - inflater.avail_out);
		} while (inflater.avail_out == 0 && r != Z_STREAM_END);
	}
	return true;
}

/* The bytes an Output frame's base64 data stands for, without decoding
   it (the fast path's out_bytes). */
static size_t output_len(const char *p, size_t n)
{
	const char *d = memmem(p, n, "\"data\":\"", 8), *end;
	size_t len;

	if (!d)
		return 0;
	d += 8;
	end = memchr(d, '"', (size_t)(p + n - d));
	if (!end)
		return 0;
	len = (size_t)(end - d) / 4 * 3;
	if (end - d >= 2 && end[-1] == '=')
		len -= end[-2] == '=' ? 2 : 1;
	return len;
}

/* The one-hop reference's output: a binary message, '0' then the bytes. */
static void onehop_msg(struct bws *c, const struct wslay_event_on_msg_recv_arg *arg)
{
	struct bws_frame f = {.wire_len = arg->msg_length, .text = ""};

	if (arg->opcode != WSLAY_BINARY_FRAME || !arg->msg_length || arg->msg[0] != '0')
		return;
	snprintf(f.kind, sizeof(f.kind), "Output");
	f.data = arg->msg + 1;
	f.data_len = arg->msg_length - 1;
	c->out_bytes += f.data_len;
	if (c->on_frame)
		c->on_frame(c, &f);
}

static void on_msg(wslay_event_context_ptr ctx,
		   const struct wslay_event_on_msg_recv_arg *arg, void *user)
{
	struct bws *c = user;
	const char *p = (const char *)arg->msg;
	size_t n = arg->msg_length;
	struct bws_frame f;
	json_t *root = NULL;

	c->frames++;
	c->wire_bytes += n; /* as it came, compressed or not */
	if ((arg->rsv & WSLAY_RSV1_BIT) && arg->opcode != WSLAY_CONNECTION_CLOSE) {
		if (!inflate_msg(arg->msg, n)) {
			fail(c, "a compressed message that does not inflate");
			return;
		}
		c->deflated++;
		p = (const char *)buf_head(&inflated);
		n = buf_size(&inflated);
	}
	f = (struct bws_frame){.wire_len = n, .text = p};
	if (arg->opcode == WSLAY_CONNECTION_CLOSE) {
		snprintf(c->err, sizeof(c->err), "close %u from the server (%s)",
			 arg->status_code,
			 c->got_closed ? "after Closed" : "before Closed");
		return;
	}
	if (onehop) {
		onehop_msg(c, arg);
		return;
	}
	if (arg->opcode != WSLAY_TEXT_FRAME)
		return;
	scan(p, n, &f);
	if (!c->fast && !strcmp(f.kind, "Output"))
		output_data(c, p, n, &f);
	else if (!c->fast && !strcmp(f.kind, "Keyframe"))
		keyframe_data(c, p, n, &f);
	else if (!c->fast)
		root = parse(c, p, n, &f);
	else if (!strcmp(f.kind, "Output"))
		c->out_bytes += output_len(p, n);
	account(c, &f, p, n);
	if (c->on_frame)
		c->on_frame(c, &f);
	json_decref(root);
}

/* ---- the loop ---- */

static void event(struct bws *c, uint32_t events)
{
	if (c->st == BWS_CONNECTING && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
		send_upgrade(c);
	else if (c->st == BWS_HANDSHAKE && (events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
		read_handshake(c);
	else if (c->st == BWS_OPEN) {
		errno = 0;
		c->budget = 256 * 1024;
		if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) &&
		    wslay_event_recv(c->ctx) != 0) {
			fail(c, errno ? strerror(errno) : "closed");
			return;
		}
		if (c->st == BWS_OPEN && wslay_event_get_close_received(c->ctx) &&
		    !wslay_event_want_write(c->ctx)) {
			fail(c, "closed by the server");
			return;
		}
		flush(c);
	}
}

bool bws_run(bool (*done)(void *arg), void *arg, double timeout_s)
{
	struct epoll_event evs[256];
	double deadline = bws_now() + timeout_s;

	while (!done(arg)) {
		double left = deadline - bws_now();
		int n;

		if (left <= 0)
			return false;
		n = epoll_wait(epfd, evs, 256, left > 0.05 ? 50 : (int)(left * 1000) + 1);
		for (int i = 0; i < n; i++)
			event(evs[i].data.ptr, evs[i].events);
	}
	return true;
}

/* ---- client frames ---- */

void bws_send(struct bws *c, const char *op, const char *extra, const char *payload)
{
	static unsigned long next_id;
	char ts[TS_STRLEN + 1];
	struct buf b = BUF_INIT;
	struct wslay_event_msg m;

	if (c->st != BWS_OPEN)
		return;
	time_format_ms(time_now_ms(), ts);
	buf_appendf(&b, "{\"op\":\"%s\",\"id\":\"b%lu\",\"ts\":\"%s\"%s,\"payload\":%s}",
		    op, ++next_id, ts, extra ? extra : "", payload);
	m.opcode = WSLAY_TEXT_FRAME;
	m.msg = buf_head(&b);
	m.msg_length = buf_size(&b);
	if (wslay_event_queue_msg(c->ctx, &m) != 0)
		fail(c, "queue");
	buf_free(&b);
	flush(c);
}

void bws_join(struct bws *c, const char *role, int64_t replay_from)
{
	char extra[160], payload[96];
	int k = snprintf(extra, sizeof(extra), ",\"extensions\":[\"" EXTENSION_URI "\"]");

	if (replay_from >= 0)
		snprintf(extra + k, sizeof(extra) - (size_t)k,
			 ",\"replay_from\":%" PRId64, replay_from);
	snprintf(payload, sizeof(payload),
		 "{\"role\":\"%s\",\"client_label\":\"bench-%d\"}", role, c->idx);
	c->t_join = bws_now();
	bws_send(c, "pty.join_session", extra, payload);
}

static void onehop_input(struct bws *c, const void *p, size_t n)
{
	struct buf b = BUF_INIT;
	struct wslay_event_msg m = {.opcode = WSLAY_BINARY_FRAME};

	buf_append(&b, "0", 1);
	buf_append(&b, p, n);
	m.msg = buf_head(&b);
	m.msg_length = buf_size(&b);
	if (c->st == BWS_OPEN && wslay_event_queue_msg(c->ctx, &m) != 0)
		fail(c, "queue");
	buf_free(&b);
	flush(c);
}

void bws_input(struct bws *c, const void *p, size_t n)
{
	struct buf b = BUF_INIT;

	if (onehop) {
		onehop_input(c, p, n);
		return;
	}
	buf_append_str(&b, "{\"data\":\"");
	b64_encode(p, n, &b);
	buf_append(&b, "\"}", 3); /* with the NUL */
	bws_send(c, "pty.session_input", NULL, (const char *)buf_head(&b));
	buf_free(&b);
}

bool bws_scan_marker(struct bws *c, const uint8_t *p, size_t n, const char *marker)
{
	size_t m = strlen(marker), keep = m - 1;
	uint8_t win[96];
	size_t w = 0;

	if (c->marker || !n)
		return c->marker;
	/* The marker may straddle frames: look at the tail, then the data. */
	memcpy(win, c->tail, c->tail_len);
	w = c->tail_len;
	memcpy(win + w, p, n < keep ? n : keep);
	w += n < keep ? n : keep;
	if (memmem(win, w, marker, m) || memmem(p, n, marker, m))
		c->marker = true;
	if (n >= keep) {
		memcpy(c->tail, p + n - keep, keep);
		c->tail_len = keep;
	} else {
		size_t drop = c->tail_len + n > keep ? c->tail_len + n - keep : 0;
		memmove(c->tail, c->tail + drop, c->tail_len - drop);
		memcpy(c->tail + c->tail_len - drop, p, n);
		c->tail_len = c->tail_len - drop + n;
	}
	return c->marker;
}
