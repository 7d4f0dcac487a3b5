/* unit: gateway */
/* gateway/linklisten.c: the gateway's loop never accepts a link that
   dials in and never reads its opening; the accepts, the reads, the
   checks and the refusals run on the link worker, and the loop only
   registers the verified links. Asserted by thread identity: accept4 and
   read are wrapped here (the wrappers make the system calls themselves)
   and record which thread called them on which descriptor, and
   the host's admit is this test's, recording the thread it runs on. The
   refusals (garbage, a timeout, a key replaced as SIGHUP does) are
   counted, each once. Waits are bounded guards only, never measures. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "addr.h"
#include "auth_jwt.h"
#include "config.h"
#include "ev.h"
#include "link.h"
#include "linkcred.h"
#include "linklisten.h"
#include "log.h"
#include "metrics.h"

#define GUARD_MS 60000 /* a hang guard, never a measure */
#define N_LINKS	 64
#define MAX_FD	 4096

static pthread_t loop_thread;
/* descriptors accept4 returned, until the test's admit takes them */
static atomic_char link_fd[MAX_FD];
static atomic_int accepts_on_loop, accepts_off_loop;
static atomic_int reads_on_loop, reads_off_loop;
static atomic_int yields_on_loop, yields_off_loop;

static int on_loop(void)
{
	return pthread_equal(pthread_self(), loop_thread);
}

int accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	int r = (int)syscall(SYS_accept4, fd, sa, len, flags);

	if (r >= 0 && r < MAX_FD) {
		atomic_store(&link_fd[r], 1);
		atomic_fetch_add(on_loop() ? &accepts_on_loop : &accepts_off_loop, 1);
	}
	return r;
}

ssize_t read(int fd, void *b, size_t n)
{
	if (fd >= 0 && fd < MAX_FD && atomic_load(&link_fd[fd]))
		atomic_fetch_add(on_loop() ? &reads_on_loop : &reads_off_loop, 1);
	return syscall(SYS_read, fd, b, n);
}

/* The worker gives way after each check (linkverify_give_way). */
int sched_yield(void)
{
	atomic_fetch_add(on_loop() ? &yields_on_loop : &yields_off_loop, 1);
	return (int)syscall(SYS_sched_yield);
}

static struct gw_config cfg;
/* What linklisten is given of a gateway (struct linklisten_host). */
static struct {
	struct ev_loop *loop;
	struct keyset *link_keys;
	struct metrics metrics;
} gw;
static struct linklisten_host host;
static struct linklisten *ll;
static char sock_path[108];
static uint8_t sk1[64], pk1[32], sk2[64], pk2[32];
static int registered, registered_off_loop, want;
static char last_instance[128];

/* The test's: the link is taken (closed) and counted. */
static int admit(void *owner, const struct linkcred *cred, int fd, const char *peer,
		 int *refusal)
{
	(void)owner;
	(void)peer;
	(void)refusal;
	if (!on_loop())
		registered_off_loop++;
	if (fd >= 0 && fd < MAX_FD)
		atomic_store(&link_fd[fd], 0);
	close(fd);
	snprintf(last_instance, sizeof(last_instance), "%.*s",
		 (int)sizeof(last_instance) - 1, cred->instance_id);
	if (++registered == want)
		ev_loop_stop(gw.loop);
	return 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

static struct keyset *keys_with(const char *kid, const uint8_t *pk)
{
	struct keyset *ks = keys_new();

	assert_int_equal(keys_add_ed25519_pub(ks, kid, pk), 0);
	return ks;
}

static int setup(void **state)
{
	char err[LOG_ERR_MAX];
	uint8_t seed[32];

	(void)state;
	if (sodium_init() < 0)
		return -1;
	memset(seed, 1, sizeof(seed));
	crypto_sign_seed_keypair(pk1, sk1, seed);
	memset(seed, 2, sizeof(seed));
	crypto_sign_seed_keypair(pk2, sk2, seed);
	loop_thread = pthread_self();
	memset(&gw, 0, sizeof(gw));
	gw_config_defaults(&cfg);
	cfg.link_auth_timeout_s = 1;
	snprintf(sock_path, sizeof(sock_path), "/tmp/ptg-test-linklisten-%d.sock",
		 (int)getpid());
	unlink(sock_path);
	{
		char a[128];

		snprintf(a, sizeof(a), "unix:%s", sock_path);
		assert_int_equal(addr_parse(a, &cfg.link_listen[0], err, sizeof(err)), 0);
	}
	cfg.n_link_listen = 1;
	gw.loop = ev_loop_new();
	gw.link_keys = keys_with("k1", pk1);
	host = (struct linklisten_host){
	    .loop = gw.loop,
	    .cfg = &cfg,
	    .metrics = &gw.metrics,
	    .link_keys = &gw.link_keys,
	    .admit = admit,
	};
	ll = linklisten_new(&host, err, sizeof(err));
	if (!ll)
		fprintf(stderr, "linklisten_new: %s\n", err);
	registered = registered_off_loop = 0;
	atomic_store(&accepts_on_loop, 0);
	atomic_store(&accepts_off_loop, 0);
	atomic_store(&reads_on_loop, 0);
	atomic_store(&reads_off_loop, 0);
	atomic_store(&yields_on_loop, 0);
	atomic_store(&yields_off_loop, 0);
	return ll ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	linklisten_free(ll);
	keys_free(gw.link_keys);
	ev_loop_free(gw.loop);
	unlink(sock_path);
	return 0;
}

/* A framed LinkCredential for instance id, signed by sk as kid. */
static void opening(struct buf *out, const uint8_t *sk, const char *kid, const char *id)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__LinkCredential c = PTG__LINK_CREDENTIAL__INIT;
	struct buf tok = BUF_INIT;
	char claims[256];
	long long now = (long long)time(NULL);

	snprintf(claims, sizeof(claims),
		 "{\"aud\":\"" LINKCRED_AUDIENCE
		 "\",\"sub\":\"%s\",\"instance_id\":\"%s\","
		 "\"iat\":%lld,\"exp\":%lld}",
		 id, id, now, now + 3600);
	assert_int_equal(auth_jwt_mint_eddsa(sk, kid, claims, &tok), 0);
	buf_append(&tok, "", 1);
	c.token = (char *)buf_head(&tok);
	m.msg_case = PTG__LINK_MESSAGE__MSG_LINK_CREDENTIAL;
	m.link_credential = &c;
	link_encode(&m, out);
	buf_free(&tok);
}

static int dial(const void *bytes, size_t len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (len)
		assert_int_equal(send(fd, bytes, len, MSG_NOSIGNAL), (ssize_t)len);
	return fd;
}

static void on_guard(struct ev_timer *t, void *user)
{
	(void)t;
	ev_loop_stop(user);
}

/* Runs the gateway's loop until n links are registered (the guard
   failing the test). */
static void run_until_registered(int n)
{
	struct ev_timer *guard = ev_timer_new(gw.loop, GUARD_MS, 0, on_guard, gw.loop);

	want = n;
	if (registered < n)
		ev_loop_run(gw.loop);
	ev_timer_free(guard);
	assert_int_equal(registered, n);
}

static uint64_t refusals(int reason)
{
	return __atomic_load_n(&gw.metrics.link_refusals[reason], __ATOMIC_RELAXED);
}

/* Refusals happen on the worker, the loop not running: waited for. */
static void wait_refusals(int reason, uint64_t n)
{
	for (int ms = 0; refusals(reason) < n && ms < GUARD_MS; ms++)
		sleep_ms(1);
	assert_int_equal(refusals(reason), n);
}

/* The peer's side of a refusal: a LinkRefused, then the close. */
static void expect_refused(int fd)
{
	char b[512];
	ssize_t n, total = 0;

	while ((n = recv(fd, b, sizeof(b), 0)) > 0)
		total += n;
	assert_true(total > 0);
	close(fd);
}

static void test_loop_never_accepts_nor_reads_an_opening(void **state)
{
	int fds[N_LINKS];

	(void)state;
	for (int i = 0; i < N_LINKS; i++) {
		struct buf o = BUF_INIT;
		char id[32];

		snprintf(id, sizeof(id), "inst-%d", i);
		opening(&o, sk1, "k1", id);
		fds[i] = dial(buf_head(&o), buf_size(&o));
		buf_free(&o);
	}
	run_until_registered(N_LINKS);
	assert_int_equal(registered_off_loop, 0);
	assert_int_equal(atomic_load(&accepts_on_loop), 0);
	assert_int_equal(atomic_load(&reads_on_loop), 0);
	assert_true(atomic_load(&accepts_off_loop) >= N_LINKS);
	assert_true(atomic_load(&reads_off_loop) >= N_LINKS);
	/* each check let a waiting loop run first */
	assert_true(atomic_load(&yields_off_loop) >= N_LINKS);
	assert_int_equal(atomic_load(&yields_on_loop), 0);
	assert_in_range(gw.metrics.link_openings_turn_max, 1, 8);
	for (int i = 0; i < N_LINKS; i++)
		close(fds[i]);
}

/* Garbage and silence are refused on the worker, with the loop not
   running at all, each counted once; nothing is left pending. */
static void test_refusals_without_the_loop(void **state)
{
	static const char junk[] = "\xff\xff\xff\xffjunk";
	int bad, silent;

	(void)state;
	bad = dial(junk, sizeof(junk) - 1);
	silent = dial(NULL, 0);
	wait_refusals(LINK_REFUSAL_GARBAGE, 1);
	wait_refusals(LINK_REFUSAL_TIMEOUT, 1); /* --link-auth-timeout 1 */
	expect_refused(bad);
	expect_refused(silent);
	assert_int_equal(__atomic_load_n(&gw.metrics.links_pending, __ATOMIC_RELAXED), 0);
	assert_int_equal(registered, 0);
}

/* The link keys replaced as SIGHUP does: the worker checks the next
   credentials with the new set. */
static void test_keys_changed(void **state)
{
	struct buf o = BUF_INIT;
	int fd;

	(void)state;
	keys_free(gw.link_keys);
	gw.link_keys = keys_with("k2", pk2);
	linklisten_keys_changed(ll);
	opening(&o, sk1, "k1", "old-key");
	fd = dial(buf_head(&o), buf_size(&o));
	wait_refusals(-LINKCRED_UNKNOWN_KID, 1);
	expect_refused(fd);
	buf_reset(&o);
	opening(&o, sk2, "k2", "new-key");
	fd = dial(buf_head(&o), buf_size(&o));
	run_until_registered(1);
	assert_string_equal(last_instance, "new-key");
	buf_free(&o);
	close(fd);
}

/* The peer sees its link closed: an end of file, or a reset when its
   opening was never read. */
static void expect_closed(int fd)
{
	char b[64];
	ssize_t n;

	while ((n = recv(fd, b, sizeof(b), 0)) > 0)
		;
	assert_true(n == 0 || errno == ECONNRESET);
	close(fd);
}

/* Verified links the loop never took, and links still pending, are
   closed at free (LeakSanitizer sees anything left). */
static void test_free_with_links_waiting(void **state)
{
	struct buf o = BUF_INIT;
	int fd, silent;

	(void)state;
	opening(&o, sk1, "k1", "never-registered");
	fd = dial(buf_head(&o), buf_size(&o));
	silent = dial(NULL, 0);
	for (int ms = 0; atomic_load(&reads_off_loop) < 1 && ms < GUARD_MS; ms++)
		sleep_ms(1);
	linklisten_free(ll);
	ll = NULL;
	assert_int_equal(registered, 0);
	expect_closed(fd);
	expect_closed(silent);
	buf_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_loop_never_accepts_nor_reads_an_opening,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refusals_without_the_loop, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_keys_changed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_free_with_links_waiting, setup,
					    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
