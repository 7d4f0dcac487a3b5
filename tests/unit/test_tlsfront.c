/* unit: gateway */
/* tlsfront: a TLS client (GnuTLS, blocking, on a thread) through the
   front to a server the test plays on the loop at the pair's plain end.
   Bytes both ways arrive whole and in order, in default records and in
   512-byte ones (the client asks for them: the front's sends come back
   short); a server that writes more than the client reads is held back
   (the front holds at most a record, so what it took before the client
   read is bounded by the sockets' buffers); the server closing its end
   ends the client after the last byte, with close_notify; the client's
   close_notify shuts the server's end; a refused client and a client
   whose pair is cut during the handshake are closed. */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "ev.h"
#include "metrics.h"
#include "tls.h"
#include "tlsfront.h"

#define UPLOAD	 (4u << 20)
#define DOWNLOAD (8u << 20)
#define HELD_MAX (4u << 20) /* far above the sockets' buffers on loopback */
#define LIMIT_MS 60000	    /* a hang, not a measure */

enum job { UPLOAD_JOB, DOWNLOAD_JOB, SILENT_JOB };

struct fx {
	struct ev_loop *loop;
	struct tls_store tls;
	struct metrics metrics;
	struct tlsfront *front;
	struct ev_timer *limit;
	uint16_t port;
	char dir[64];
	/* the server, on the loop */
	bool refuse, cut;
	bool asked; /* the download's request byte came */
	int plain;
	struct ev_io *plain_io;
	size_t got, sent, sent_unread;
	bool server_eof, server_bad;
	/* the client, on its thread */
	pthread_t th;
	enum job job;
	unsigned record_max; /* 0: GnuTLS's default */
	int wake[2];	     /* the client thread tells the loop it is done */
	struct ev_io *wake_io;
	atomic_bool reading;
	size_t client_got;
	bool client_bad, client_eof, client_closed;
};

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 131 + (i >> 12));
}

/* ---- a self-signed certificate, made here ---- */

static void write_datum(const char *path, const gnutls_datum_t *d)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(d->data, 1, d->size, f), d->size);
	fclose(f);
}

static void make_cert(const char *dir)
{
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
	gnutls_datum_t d;
	char path[128];
	time_t now = time(NULL);

	assert_int_equal(gnutls_x509_privkey_init(&key), 0);
	assert_int_equal(gnutls_x509_privkey_generate(
			     key, GNUTLS_PK_ECDSA,
			     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
			 0);
	assert_int_equal(gnutls_x509_crt_init(&crt), 0);
	gnutls_x509_crt_set_version(crt, 3);
	gnutls_x509_crt_set_serial(crt, "\x01", 1);
	gnutls_x509_crt_set_activation_time(crt, now - 3600);
	gnutls_x509_crt_set_expiration_time(crt, now + 86400);
	gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "tlsfront", 8);
	gnutls_x509_crt_set_key(crt, key);
	assert_int_equal(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0), 0);
	assert_int_equal(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d), 0);
	snprintf(path, sizeof(path), "%s/cert.pem", dir);
	write_datum(path, &d);
	gnutls_free(d.data);
	assert_int_equal(gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &d), 0);
	snprintf(path, sizeof(path), "%s/key.pem", dir);
	write_datum(path, &d);
	gnutls_free(d.data);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
}

/* ---- the server, on the loop ---- */

static void server_close(struct fx *x)
{
	ev_io_free(x->plain_io);
	x->plain_io = NULL;
	close(x->plain);
	x->plain = -1;
}

static void server_read(struct fx *x)
{
	uint8_t b[65536];
	ssize_t n;

	while ((n = read(x->plain, b, sizeof(b))) > 0)
		for (ssize_t i = 0; i < n; i++, x->got++)
			x->server_bad |= b[i] != pattern(x->got);
	if (n == 0) {
		x->server_eof = true;
		server_close(x);
		ev_loop_stop(x->loop);
	}
}

/* The download starts on the client's request byte: MHD, behind the
   front, never writes before a request. */
static void server_asked(struct fx *x)
{
	char c;

	if (read(x->plain, &c, 1) != 1)
		return;
	x->asked = true;
	ev_io_set(x->plain_io, EV_WRITE);
}

/* Writes until the pair refuses; counts what went in before the client
   read a byte. The whole download written, it closes its end. */
static void server_write(struct fx *x)
{
	uint8_t b[65536];
	ssize_t n;

	while (x->sent < DOWNLOAD) {
		size_t k =
		    DOWNLOAD - x->sent < sizeof(b) ? DOWNLOAD - x->sent : sizeof(b);

		for (size_t i = 0; i < k; i++)
			b[i] = pattern(x->sent + i);
		n = write(x->plain, b, k);
		if (n <= 0)
			return;
		x->sent += (size_t)n;
		if (!atomic_load(&x->reading))
			x->sent_unread = x->sent;
	}
	server_close(x);
}

static void on_plain(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct fx *x = user;

	if (x->job == DOWNLOAD_JOB && !x->asked)
		server_asked(x);
	else if (x->job == DOWNLOAD_JOB)
		server_write(x);
	else
		server_read(x);
}

static int admit(void *user, int plain_fd, const struct sockaddr *sa, socklen_t len)
{
	struct fx *x = user;

	assert_int_equal(sa->sa_family, AF_INET);
	if (x->refuse) {
		close(plain_fd);
		return -1;
	}
	x->plain = plain_fd;
	if (x->cut) { /* as MHD at the head deadline: its end closed */
		server_close(x);
		return 0;
	}
	x->plain_io = ev_io_new(x->loop, plain_fd, EV_READ, on_plain, x);
	assert_non_null(x->plain_io);
	return 0;
}

/* ---- the client, on its thread ---- */

static int dial(uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct timeval tv = {.tv_sec = LIMIT_MS / 1000};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

static void client_upload(struct fx *x, gnutls_session_t s)
{
	uint8_t b[65536];

	for (size_t off = 0; off < UPLOAD;) {
		size_t k = UPLOAD - off < sizeof(b) ? UPLOAD - off : sizeof(b);
		ssize_t n;

		for (size_t i = 0; i < k; i++)
			b[i] = pattern(off + i);
		n = gnutls_record_send(s, b, k);
		if (n <= 0) {
			x->client_bad = true;
			return;
		}
		off += (size_t)n;
	}
	x->client_closed = gnutls_bye(s, GNUTLS_SHUT_WR) == 0;
}

/* Reads nothing for a while, so the server meets the front's
   backpressure; then the whole download, then close_notify. */
static void client_download(struct fx *x, gnutls_session_t s)
{
	uint8_t b[65536];
	ssize_t n;

	if (gnutls_record_send(s, "g", 1) != 1) {
		x->client_bad = true;
		return;
	}
	usleep(200 * 1000);
	atomic_store(&x->reading, true);
	while ((n = gnutls_record_recv(s, b, sizeof(b))) > 0)
		for (ssize_t i = 0; i < n; i++, x->client_got++)
			x->client_bad |= b[i] != pattern(x->client_got);
	x->client_eof = n == 0; /* close_notify: not a bare FIN */
}

static void client_tls(struct fx *x, int fd)
{
	gnutls_certificate_credentials_t cred;
	gnutls_session_t s;

	gnutls_certificate_allocate_credentials(&cred);
	gnutls_init(&s, GNUTLS_CLIENT);
	gnutls_set_default_priority(s);
	gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred);
	if (x->record_max)
		gnutls_record_set_max_recv_size(s, x->record_max);
	gnutls_transport_set_int(s, fd);
	if (gnutls_handshake(s) < 0)
		x->client_bad = true;
	else if (x->job == UPLOAD_JOB)
		client_upload(x, s);
	else
		client_download(x, s);
	gnutls_deinit(s);
	gnutls_certificate_free_credentials(cred);
}

static void *client_main(void *arg)
{
	struct fx *x = arg;
	int fd = dial(x->port);
	ssize_t n;
	char c;

	if (fd < 0) {
		x->client_bad = true;
	} else if (x->job == SILENT_JOB) {
		/* Sends nothing: the front must close it (a timeout is -1 with
		   EAGAIN). */
		n = recv(fd, &c, 1, 0);
		x->client_eof = n == 0 || (n < 0 && errno == ECONNRESET);
	} else {
		client_tls(x, fd);
	}
	if (fd >= 0)
		close(fd);
	(void)!write(x->wake[1], "", 1);
	return NULL;
}

/* ---- the fixture ---- */

static void on_wake(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct fx *x = user;
	char c;

	(void)!read(fd, &c, 1);
	ev_loop_stop(x->loop);
}

static void on_limit(struct ev_timer *t, void *user)
{
	struct fx *x = user;

	x->client_bad = true;
	ev_loop_stop(x->loop);
}

static int listener(uint16_t *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	char cert[128], key[128], err[256];
	int lfd;

	snprintf(x->dir, sizeof(x->dir), "/tmp/ptg-tlsfront-XXXXXX");
	assert_non_null(mkdtemp(x->dir));
	make_cert(x->dir);
	snprintf(cert, sizeof(cert), "%s/cert.pem", x->dir);
	snprintf(key, sizeof(key), "%s/key.pem", x->dir);
	assert_int_equal(tls_store_init(&x->tls, cert, key, NULL, err, sizeof(err)), 0);
	x->loop = ev_loop_new();
	x->plain = -1;
	assert_int_equal(pipe(x->wake), 0);
	x->wake_io = ev_io_new(x->loop, x->wake[0], EV_READ, on_wake, x);
	x->limit = ev_timer_new(x->loop, LIMIT_MS, 0, on_limit, x);
	lfd = listener(&x->port);
	x->front = tlsfront_new(&(struct tlsfront_host){.loop = x->loop,
							.tls = &x->tls,
							.metrics = &x->metrics,
							.what = "--listen",
							.admit = admit,
							.user = x},
				lfd);
	assert_non_null(x->front);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;
	char path[128];

	tlsfront_free(x->front);
	if (x->plain >= 0)
		server_close(x);
	ev_io_free(x->wake_io);
	ev_timer_free(x->limit);
	ev_loop_free(x->loop);
	close(x->wake[0]);
	close(x->wake[1]);
	tls_store_clear(&x->tls);
	snprintf(path, sizeof(path), "%s/cert.pem", x->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/key.pem", x->dir);
	unlink(path);
	rmdir(x->dir);
	free(x);
	return 0;
}

/* Runs the client's job until its thread is done, then the loop on
   until the server has its end too (or the limit). */
static void run(struct fx *x, enum job job)
{
	x->job = job;
	assert_int_equal(pthread_create(&x->th, NULL, client_main, x), 0);
	ev_loop_run(x->loop);
	pthread_join(x->th, NULL);
	while (x->job == UPLOAD_JOB && !x->server_eof && !x->client_bad)
		ev_loop_run(x->loop); /* the wake pipe is quiet now: the limit ends it */
}

/* ---- the tests ---- */

static void test_upload_arrives_whole_and_close_notify_shuts_the_pair(void **state)
{
	struct fx *x = *state;

	run(x, UPLOAD_JOB);
	assert_false(x->client_bad);
	assert_true(x->client_closed);
	assert_int_equal(x->got, UPLOAD);
	assert_false(x->server_bad);
	assert_true(x->server_eof);
}

static void check_download(struct fx *x)
{
	assert_false(x->client_bad);
	assert_int_equal(x->sent, DOWNLOAD);
	assert_int_equal(x->client_got, DOWNLOAD);
	assert_true(x->client_eof);
	assert_true(x->sent_unread < HELD_MAX);
}

static void test_download_is_held_back_then_arrives_whole(void **state)
{
	struct fx *x = *state;

	run(x, DOWNLOAD_JOB);
	check_download(x);
}

static void test_download_in_small_records(void **state)
{
	struct fx *x = *state;

	x->record_max = 512;
	run(x, DOWNLOAD_JOB);
	check_download(x);
}

static void test_a_refused_client_is_closed(void **state)
{
	struct fx *x = *state;

	x->refuse = true;
	run(x, SILENT_JOB);
	assert_false(x->client_bad);
	assert_true(x->client_eof);
}

static void test_the_pair_cut_in_the_handshake_closes_the_client(void **state)
{
	struct fx *x = *state;

	x->cut = true;
	run(x, SILENT_JOB);
	assert_false(x->client_bad);
	assert_true(x->client_eof);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
		test_upload_arrives_whole_and_close_notify_shuts_the_pair, setup,
		teardown),
	    cmocka_unit_test_setup_teardown(test_download_is_held_back_then_arrives_whole,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_download_in_small_records, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_refused_client_is_closed, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_the_pair_cut_in_the_handshake_closes_the_client, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
