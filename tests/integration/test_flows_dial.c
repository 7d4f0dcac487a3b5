/* test_flows_dial: dial-out (--dial). The test is the gateway:
   it listens on a unix socket (or tcp on loopback) of its own and a real
   ptygate-sidecar dials it. The link opens with the LinkCredential of
   the token file, then it is today's link (hello, a session, input and
   output); a link the gateway drops is dialled again, the sessions still
   there; a LinkRefused is logged with its reason and retried; a
   rewritten token file sends the new token on the live link, and on a
   link that was opening right after its HelloAck; two gateways are both
   kept linked; one not there yet is tried until it is; a connect that
   hangs, a gateway that never says Hello and one that stops reading are
   given up on and dialled again, and so is every bad opening; a sidecar may dial without
   listening, and SIGTERM closes its dialled link. The sidecar's log goes
   to a file the test reads. Every wait is bounded far beyond what it
   should take; nothing asserts how soon within the bound. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "auth_jwt.h"
#include "flows_fixture.h"
#include "timeutil.h"

#define INSTANCE "dial-test"

/* The test's side: gateways listening, the token file, the log file. */
struct gw {
	char dir[64];
	char sock[2][128];
	char addr[2][160]; /* what --dial is given: unix:SOCK, or tcp: */
	int lfd[2];
	char token_path[128];
	char log_path[128];
	char token[2048]; /* what the token file holds now */
	uint8_t sk[64];
};

static struct gw G;
static const char *sidecar_path; /* argv[1] */

/* A link credential for INSTANCE, valid for an hour; iat tells tokens
   apart. */
static void mint(long long iat, char *out, size_t cap)
{
	struct buf b;
	char claims[256];

	snprintf(claims, sizeof(claims),
		 "{\"sub\":\"vm-provisioner\",\"instance_id\":\"" INSTANCE "\","
		 "\"aud\":\"ptygate-link\",\"iat\":%lld,\"exp\":%lld}",
		 iat, iat + 3600);
	buf_init(&b);
	assert_int_equal(auth_jwt_mint_eddsa(G.sk, "k1", claims, &b), 0);
	assert_true(b.len < cap);
	memcpy(out, b.data, b.len);
	out[b.len] = '\0';
	buf_free(&b);
}

/* Writes a new token as a platform renews it: a file renamed over. */
static void write_token(long long iat)
{
	char tmp[160];
	FILE *f;

	mint(iat, G.token, sizeof(G.token));
	snprintf(tmp, sizeof(tmp), "%s.tmp", G.token_path);
	f = fopen(tmp, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", G.token);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(tmp, 0600), 0);
	assert_int_equal(rename(tmp, G.token_path), 0);
}

static int listen_unix(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_true(strlen(path) < sizeof(sa.sun_path));
	strcpy(sa.sun_path, path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 8), 0);
	return fd;
}

/* Gateway i on 127.0.0.1 (a free port, backlog as given) instead of its
   unix socket. */
static void listen_tcp(int i, int backlog)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, backlog), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(G.lfd[i]);
	unlink(G.sock[i]);
	G.lfd[i] = fd;
	snprintf(G.addr[i], sizeof(G.addr[i]), "tcp:127.0.0.1:%u", ntohs(sa.sin_port));
}

static int gw_setup(void **state)
{
	uint8_t seed[32], pk[32];

	if (setup(state) < 0 || sodium_init() < 0)
		return -1;
	memset(&G, 0, sizeof(G));
	snprintf(G.dir, sizeof(G.dir), "/tmp/ptg-dial-XXXXXX");
	if (!mkdtemp(G.dir))
		return -1;
	for (int i = 0; i < 2; i++) {
		snprintf(G.sock[i], sizeof(G.sock[i]), "%s/gw%d.sock", G.dir, i);
		snprintf(G.addr[i], sizeof(G.addr[i]), "unix:%s", G.sock[i]);
		G.lfd[i] = listen_unix(G.sock[i]);
	}
	snprintf(G.token_path, sizeof(G.token_path), "%s/instance.token", G.dir);
	snprintf(G.log_path, sizeof(G.log_path), "%s/sidecar.log", G.dir);
	memset(seed, 7, sizeof(seed));
	crypto_sign_seed_keypair(pk, G.sk, seed);
	write_token(time_now_ms() / 1000);
	return 0;
}

static int gw_teardown(void **state)
{
	int rc = teardown(state);

	for (int i = 0; i < 2; i++) {
		close(G.lfd[i]);
		unlink(G.sock[i]);
	}
	unlink(G.token_path);
	if (getenv("PTG_IT_SHOW_LOG")) {
		char cmd[200];

		snprintf(cmd, sizeof(cmd), "cat %s >&2", G.log_path);
		(void)!system(cmd);
	}
	unlink(G.log_path);
	rmdir(G.dir);
	return rc;
}

/* The sidecar with its listen socket (the fixture's) and --dial to
   gateway 0 (and 1 when two), its log into G.log_path. */
static void start_dialling(struct fixture *fx, int two)
{
	const char *extra[] = {"--log-level",
			       "info",
			       "--instance-token-file",
			       G.token_path,
			       "--dial",
			       G.addr[0],
			       "--dial-backoff-max",
			       "500ms",
			       two ? "--dial" : NULL,
			       G.addr[1],
			       NULL};
	int saved = dup(2), logfd;

	logfd = open(G.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	assert_true(saved >= 0 && logfd >= 0);
	dup2(logfd, 2); /* the child inherits it as its stderr */
	sidecar_start(fx, extra);
	dup2(saved, 2);
	close(saved);
	close(logfd);
}

/* Waits (bounded) for the sidecar to dial gateway i; the link as a peer
   of fx that has received nothing yet. */
static struct peer *gw_accept(struct fixture *fx, int i)
{
	struct pollfd pfd = {.fd = G.lfd[i], .events = POLLIN};
	struct peer *p;
	int fd;

	if (poll(&pfd, 1, remaining_ms(STEP_MS)) != 1)
		fail_msg("the sidecar did not dial gateway %d", i);
	fd = accept4(G.lfd[i], NULL, NULL, SOCK_CLOEXEC);
	assert_true(fd >= 0);
	assert_true(fx->n_peers < MAX_PEERS);
	p = &fx->peers[fx->n_peers++];
	p->lc.fd = fd;
	buf_init(&p->lc.in);
	buf_init(&p->text);
	p->open = 1;
	return p;
}

/* The next message must be a LinkCredential carrying token. */
static void expect_credential(struct peer *p, const char *token)
{
	Ptg__LinkMessage *m = peer_must_recv(p, STEP_MS, "LinkCredential");

	assert_int_equal(m->msg_case, PTG__LINK_MESSAGE__MSG_LINK_CREDENTIAL);
	assert_string_equal(m->link_credential->token, token);
}

/* Accepts the sidecar's dial of gateway i, checks its credential, and
   says Hello: the dialled link is up. */
static struct peer *gw_link(struct fixture *fx, int i)
{
	struct peer *p = gw_accept(fx, i);
	Ptg__LinkMessage *m;

	expect_credential(p, G.token);
	send_hello(p, PTG__PROTOCOL_VERSION__PROTOCOL_VERSION_1);
	m = peer_must_recv(p, STEP_MS, "HelloAck");
	assert_int_equal(m->msg_case, PTG__LINK_MESSAGE__MSG_HELLO_ACK);
	assert_string_equal(m->hello_ack->instance_id, INSTANCE);
	assert_non_null(m->hello_ack->limits);
	return p;
}

static int log_has(const char *needle)
{
	char *text = NULL;
	size_t cap = 0;
	FILE *f = fopen(G.log_path, "r");
	ssize_t n;
	int found;

	if (!f)
		return 0;
	/* Before the sidecar's first line the file is empty: getdelim then
	   returns -1 and leaves its buffer without a terminator. */
	n = getdelim(&text, &cap, '\0', f);
	fclose(f);
	found = n > 0 && memmem(text, (size_t)n, needle, strlen(needle)) != NULL;
	free(text);
	return found;
}

/* The sidecar's log gets a line holding a then b, within bound_ms. */
static void expect_log_within(int bound_ms, const char *a, const char *b)
{
	char needle[512];

	snprintf(needle, sizeof(needle), "%s%s", a, b);
	for (int waited = 0; !log_has(needle); waited += 20) {
		if (remaining_ms(bound_ms) <= 0 || waited > bound_ms)
			fail_msg("the sidecar's log has no '%s'", needle);
		sleep_ms(20);
	}
}

static void expect_log(const char *a, const char *b)
{
	expect_log_within(STEP_MS, a, b);
}

/* The sidecar closes the link p (bounded). */
static void expect_closed(struct peer *p)
{
	assert_int_equal(linkclient_wait_eof(&p->lc, remaining_ms(STEP_MS)), 0);
	peer_drop(p);
}

/* ---- tests ---- */

static void test_dialled_link_is_a_link(void **state)
{
	struct fixture *fx = *state;
	struct peer *p, *q;
	struct joined j;
	char sid[FLOWS_SID_MAX];

	start_dialling(fx, 0);
	p = gw_link(fx, 0);
	create_sh(p, 80, 24, sid);
	join_simple(p, sid, 1, PTG__ROLE__ROLE_CONTROLLER, "ctl", &j);
	send_input(p, sid, 1, "echo dial-$((6*7))\n", NULL);
	wait_output(p, "dial-42", STEP_MS);

	/* The gateway goes away: the sidecar dials again, the session is
	   still there, and the new link attaches to it with its history. */
	peer_drop(p);
	q = gw_link(fx, 0);
	assert_int_equal(get_session(q, sid)->state, PTG__SESSION_STATE__SESSION_RUNNING);
	join_simple(q, sid, 2, PTG__ROLE__ROLE_CONTROLLER, "ctl2", &j);
	send_input(q, sid, 2, "echo again-$((6*7))\n", NULL);
	wait_output(q, "again-42", STEP_MS);
	expect_log("dialling ", G.addr[0]);
	expect_log("linked to ", G.addr[0]);
	expect_log("link to ", G.addr[0]);
	expect_log(" lost (", "");
	expect_log("next attempt to ", G.addr[0]);
}

static void test_refused_then_retried(void **state)
{
	struct fixture *fx = *state;
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__LinkRefused r = PTG__LINK_REFUSED__INIT;
	struct peer *p;

	start_dialling(fx, 0);
	for (int round = 0; round < 2; round++) {
		p = gw_accept(fx, 0);
		expect_credential(p, G.token);
		r.reason = "credential expired\n(test)";
		m.msg_case = PTG__LINK_MESSAGE__MSG_LINK_REFUSED;
		m.link_refused = &r;
		peer_send(p, &m);
		/* The sidecar closes a refused link itself. */
		assert_int_equal(linkclient_wait_eof(&p->lc, remaining_ms(STEP_MS)), 0);
		peer_drop(p);
	}
	/* The gateway's reason, made fit for one line. */
	expect_log("refused by ", G.addr[0]);
	expect_log(" (credential expired?(test))", "");
	/* Retried, and taken this time. */
	gw_link(fx, 0);
}

static void test_renewed_credential_on_live_link(void **state)
{
	struct fixture *fx = *state;
	char first[sizeof(G.token)];
	struct peer *p;

	start_dialling(fx, 0);
	p = gw_link(fx, 0);
	memcpy(first, G.token, sizeof(first));
	write_token(time_now_ms() / 1000 + 1);
	assert_string_not_equal(first, G.token);
	/* The link is idle (no session): the next message is the renewal. */
	expect_credential(p, G.token);
	expect_log("renewed credential sent to ", "unix:");
	/* The link is still the gateway's to use. */
	expect_error(p, send_get(p, "nope"), PTG__ERROR_CODE__NOT_FOUND, 0, NULL);
}

/* The token renewed while a link is still opening (credential sent, no
   Hello yet): once the gateway says Hello, that link gets the new token
   too, or the gateway would close it when the old one expires. */
static void test_renewed_while_opening(void **state)
{
	struct fixture *fx = *state;
	char first[sizeof(G.token)];
	Ptg__LinkMessage *m;
	struct peer *p;

	start_dialling(fx, 0);
	p = gw_accept(fx, 0);
	expect_credential(p, G.token);
	memcpy(first, G.token, sizeof(first));
	write_token(time_now_ms() / 1000 + 1);
	expect_log("instance token ", "");
	expect_log(" renewed: expires at ", "");
	send_hello(p, PTG__PROTOCOL_VERSION__PROTOCOL_VERSION_1);
	m = peer_must_recv(p, STEP_MS, "HelloAck");
	assert_int_equal(m->msg_case, PTG__LINK_MESSAGE__MSG_HELLO_ACK);
	expect_credential(p, G.token);
	assert_string_not_equal(first, G.token);
}

static void test_two_gateways(void **state)
{
	struct fixture *fx = *state;
	struct peer *a, *b;
	char sid[FLOWS_SID_MAX];

	start_dialling(fx, 1);
	a = gw_link(fx, 0);
	b = gw_link(fx, 1);
	create_sh(a, 80, 24, sid);
	/* One sidecar, two gateways: the session is the same on both. */
	assert_string_equal(get_session(b, sid)->session_id, sid);
	kill_session(b, sid);
}

/* tcp on loopback: the connect really is asynchronous. */
static void test_tcp_dial(void **state)
{
	struct fixture *fx = *state;
	struct peer *p;
	char sid[FLOWS_SID_MAX];

	listen_tcp(0, 8);
	start_dialling(fx, 0);
	p = gw_link(fx, 0);
	create_sh(p, 80, 24, sid);
	peer_drop(p);
	p = gw_link(fx, 0);
	assert_string_equal(get_session(p, sid)->session_id, sid);
	expect_log("link to ", G.addr[0]);
}

/* A gateway whose accept queue is full drops the SYN: the connect hangs
   until the dialler's bound (DIALER_CONNECT_MS, 10 s), which fails it
   and tries again. */
static void test_connect_timeout(void **state)
{
	struct fixture *fx = *state;
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int filler, fd;

	listen_tcp(0, 0);
	/* One connection the test never accepts fills a backlog of 0. */
	assert_int_equal(getsockname(G.lfd[0], (struct sockaddr *)&sa, &len), 0);
	filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(filler, (struct sockaddr *)&sa, sizeof(sa)), 0);
	start_dialling(fx, 0);
	expect_log_within(45000, "cannot reach ", G.addr[0]);
	expect_log(" (connect timed out)", "");
	/* Room again: the filler out of the queue, the next dial goes in. */
	fd = accept4(G.lfd[0], NULL, NULL, SOCK_CLOEXEC);
	assert_true(fd >= 0);
	close(fd);
	close(filler);
	gw_link(fx, 0);
}

/* A gateway that takes the connection and never says Hello: the link is
   dropped at DIALER_HELLO_MS (30 s) and dialled again. */
static void test_no_hello_in_time(void **state)
{
	struct fixture *fx = *state;
	struct peer *p;

	start_dialling(fx, 0);
	p = gw_accept(fx, 0);
	expect_credential(p, G.token);
	expect_log_within(55000, "lost (no Hello from the gateway in time)", "");
	expect_closed(p);
	gw_link(fx, 0);
}

/* A gateway that stops reading while a session floods its link: the
   stall bound of every link (SESSION_LINK_STALL_MS) drops the dialled
   one too, and it is dialled again with the session still there. */
static void test_stalled_link_redialled(void **state)
{
	struct fixture *fx = *state;
	struct peer *p;
	struct joined j;
	char sid[FLOWS_SID_MAX];

	start_dialling(fx, 0);
	p = gw_link(fx, 0);
	create_sh(p, 80, 24, sid);
	join_simple(p, sid, 1, PTG__ROLE__ROLE_CONTROLLER, "ctl", &j);
	send_input(p, sid, 1, "yes stall-flood-line\n", NULL);
	/* Not one more read of p. */
	expect_log_within(55000, "lost (gateway is not reading", "");
	peer_drop(p);
	p = gw_link(fx, 0);
	assert_string_equal(get_session(p, sid)->session_id, sid);
	kill_session(p, sid);
}

/* What a broken or hostile gateway sends is met by closing the link,
   and the sidecar dials again: bytes that are no message, a request
   before Hello, a LinkRefused after it. */
static void test_bad_openings_redialled(void **state)
{
	struct fixture *fx = *state;
	static const uint8_t oversized[] = {0xff, 0xff, 0xff, 0xff};
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__LinkRefused r = PTG__LINK_REFUSED__INIT;
	struct peer *p;

	start_dialling(fx, 0);
	p = gw_accept(fx, 0);
	expect_credential(p, G.token);
	assert_int_equal(linkclient_send_raw(&p->lc, oversized, sizeof(oversized)), 0);
	expect_closed(p);

	p = gw_accept(fx, 0);
	expect_credential(p, G.token);
	send_get(p, "before-hello");
	expect_closed(p);
	expect_log("lost (request before hello)", "");

	p = gw_link(fx, 0);
	r.reason = "too late";
	m.msg_case = PTG__LINK_MESSAGE__MSG_LINK_REFUSED;
	m.link_refused = &r;
	peer_send(p, &m);
	expect_closed(p);
	expect_log("lost (unexpected message)", "");
	gw_link(fx, 0);
}

/* No gateway listening yet: the sidecar says it cannot reach it and
   keeps trying until one is there. */
static void test_gateway_down_at_start(void **state)
{
	struct fixture *fx = *state;

	close(G.lfd[0]);
	unlink(G.sock[0]);
	start_dialling(fx, 0);
	expect_log("cannot reach ", G.addr[0]);
	expect_log("next attempt to ", G.addr[0]);
	G.lfd[0] = listen_unix(G.sock[0]);
	gw_link(fx, 0);
}

/* A sidecar without --listen: it dials, and SIGTERM closes the link. */
static void test_dial_only_and_shutdown(void **state)
{
	struct fixture *fx = *state;
	char dial[160];
	const char *argv[] = {
	    NULL,	  "--log-level", "warn", "--instance-token-file",
	    G.token_path, "--dial",	 dial,	 NULL};
	struct peer *p;
	char sid[FLOWS_SID_MAX];
	int status;

	snprintf(dial, sizeof(dial), "unix:%s", G.sock[0]);
	argv[0] = sidecar_path;
	fx->pid = fork();
	assert_true(fx->pid >= 0);
	if (fx->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(argv[0], (char **)argv);
		_exit(127);
	}
	p = gw_link(fx, 0);
	create_sh(p, 80, 24, sid);
	status = sidecar_stop(fx);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(linkclient_wait_eof(&p->lc, remaining_ms(STEP_MS)), 0);
}

static void test_options_refused(void **state)
{
	(void)state;
	/* --dial without a credential, a bad address, bounds of the cap. */
	expect_refused("--dial", "unix:/tmp/ptg-it-never-gw.sock");
	expect_refused("--dial", "carrier-pigeon:1");
	expect_refused("--dial-backoff-max", "99ms");
	expect_refused("--dial-backoff-max", "2h");
	expect_refused("--dial-backoff-max", "0");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_dialled_link_is_a_link, gw_setup,
					    gw_teardown),
	    cmocka_unit_test_setup_teardown(test_refused_then_retried, gw_setup,
					    gw_teardown),
	    cmocka_unit_test_setup_teardown(test_renewed_credential_on_live_link,
					    gw_setup, gw_teardown),
	    cmocka_unit_test_setup_teardown(test_renewed_while_opening, gw_setup,
					    gw_teardown),
	    cmocka_unit_test_setup_teardown(test_two_gateways, gw_setup, gw_teardown),
	    cmocka_unit_test_setup_teardown(test_gateway_down_at_start, gw_setup,
					    gw_teardown),
	    cmocka_unit_test_setup_teardown(test_tcp_dial, gw_setup, gw_teardown),
	    cmocka_unit_test_setup_teardown(test_connect_timeout, gw_setup, gw_teardown),
	    cmocka_unit_test_setup_teardown(test_bad_openings_redialled, gw_setup,
					    gw_teardown),
	    cmocka_unit_test_setup_teardown(test_no_hello_in_time, gw_setup, gw_teardown),
	    cmocka_unit_test_setup_teardown(test_stalled_link_redialled, gw_setup,
					    gw_teardown),
	    cmocka_unit_test_setup_teardown(test_dial_only_and_shutdown, gw_setup,
					    gw_teardown),
	    cmocka_unit_test_setup_teardown(test_options_refused, gw_setup, gw_teardown),
	};

	sidecar_path = argc > 1 ? argv[1] : NULL;
	return FLOWS_RUN("flows_dial", tests);
}
