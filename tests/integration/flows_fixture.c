/* flows_fixture: the sidecar process, peers and expectations of the
   integration tests (see flows_fixture.h; requests: flows_requests.c). */
#include "flows_fixture.h"

#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "screen.h"
#include "timeutil.h"
#include "xalloc.h"

static const char *sidecar_bin;
int64_t test_deadline;
rlim_t child_nofile;

int flows_run(const char *name, const struct CMUnitTest *tests, size_t n, int argc,
	      char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH-TO-ptygate-sidecar\n", argv[0]);
		return 2;
	}
	sidecar_bin = argv[1];
	signal(SIGPIPE, SIG_IGN);
	return _cmocka_run_group_tests(name, tests, n, NULL, NULL);
}

/* ---- peers: one link each, with a log of every message received ---- */

int remaining_ms(int want)
{
	int64_t left = test_deadline - time_mono_ms();

	if (left < 0)
		left = 0;
	return want < left ? want : (int)left;
}

void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static const char *msg_name(const Ptg__LinkMessage *m)
{
	const ProtobufCFieldDescriptor *f;

	f = protobuf_c_message_descriptor_get_field(&ptg__link_message__descriptor,
						    (unsigned)m->msg_case);
	return f ? f->name : "?";
}

const char *kind_name(const Ptg__Frame *f)
{
	const ProtobufCFieldDescriptor *d;

	d = protobuf_c_message_descriptor_get_field(&ptg__frame__descriptor,
						    (unsigned)f->kind_case);
	return d ? d->name : "?";
}

void describe(const char *what, const Ptg__LinkMessage *m)
{
	if (m->msg_case == PTG__LINK_MESSAGE__MSG_FRAME)
		print_message("%s: frame %s seq=%llu target=%llu\n", what,
			      kind_name(m->frame), (unsigned long long)m->frame->sequence,
			      (unsigned long long)m->frame->target_attach_id);
	else if (m->msg_case == PTG__LINK_MESSAGE__MSG_REPLY)
		print_message("%s: reply rid=%llu code=%d '%s'\n", what,
			      (unsigned long long)m->reply->request_id, m->reply->code,
			      m->reply->message);
	else
		print_message("%s: %s\n", what, msg_name(m));
}

static void log_append(struct peer *p, Ptg__LinkMessage *m)
{
	if (p->n_log == p->cap_log) {
		p->cap_log = p->cap_log ? p->cap_log * 2 : 64;
		p->log = xrealloc(p->log, p->cap_log * sizeof(*p->log));
	}
	p->log[p->n_log++] = m;
}

/* Broadcast frames of one session reach a link in sequence order. */
static void check_broadcast_order(struct peer *p, const Ptg__Frame *f)
{
	struct seq_key *k = NULL;

	assert_true(f->sequence > 0);
	if (f->target_attach_id)
		return;
	for (int i = 0; i < MAX_SEQ_KEYS && !k; i++)
		if (!p->seqs[i].session[0] ||
		    strcmp(p->seqs[i].session, f->session_id) == 0)
			k = &p->seqs[i];
	if (!k)
		fail_msg("more than %d sessions on one link", MAX_SEQ_KEYS);
	snprintf(k->session, sizeof(k->session), "%s", f->session_id);
	if (f->sequence <= k->last)
		fail_msg("broadcast %s seq %llu after seq %llu", kind_name(f),
			 (unsigned long long)f->sequence, (unsigned long long)k->last);
	k->last = f->sequence;
}

/* The next message within timeout_ms, or NULL on timeout. Fails when the
   link ends. The message stays in the peer's log. */
Ptg__LinkMessage *peer_recv(struct peer *p, int timeout_ms)
{
	Ptg__LinkMessage *m;
	int rc = linkclient_recv(&p->lc, remaining_ms(timeout_ms), &m);

	if (rc == 0)
		return NULL;
	if (rc < 0)
		fail_msg("link receive failed: %s", strerror(-rc));
	log_append(p, m);
	if (m->msg_case == PTG__LINK_MESSAGE__MSG_FRAME) {
		check_broadcast_order(p, m->frame);
		if (m->frame->kind_case == PTG__FRAME__KIND_OUTPUT)
			buf_append(&p->text, m->frame->output->data.data,
				   m->frame->output->data.len);
	}
	return m;
}

Ptg__LinkMessage *peer_must_recv(struct peer *p, int timeout_ms, const char *what)
{
	Ptg__LinkMessage *m = peer_recv(p, timeout_ms);

	if (!m)
		fail_msg("timed out waiting for %s", what);
	return m;
}

void peer_send(struct peer *p, const Ptg__LinkMessage *m)
{
	int rc = linkclient_send(&p->lc, m);

	if (rc < 0)
		fail_msg("link send failed: %s", strerror(-rc));
}

struct peer *peer_connect(struct fixture *fx)
{
	struct peer *p;
	int rc;

	assert_true(fx->n_peers < MAX_PEERS);
	p = &fx->peers[fx->n_peers++];
	rc = linkclient_connect(&p->lc, fx->sock);
	if (rc < 0)
		fail_msg("connect %s: %s", fx->sock, strerror(-rc));
	p->open = 1;
	buf_init(&p->text);
	return p;
}

void send_hello(struct peer *p, Ptg__ProtocolVersion v)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Hello h = PTG__HELLO__INIT;

	h.protocol_version = v;
	h.gateway_id = "integration-test";
	m.msg_case = PTG__LINK_MESSAGE__MSG_HELLO;
	m.hello = &h;
	peer_send(p, &m);
}

/* A linked peer: connected, Hello sent, HelloAck checked. */
struct peer *peer_open(struct fixture *fx)
{
	struct peer *p = peer_connect(fx);
	Ptg__LinkMessage *m;

	send_hello(p, PTG__PROTOCOL_VERSION__PROTOCOL_VERSION_1);
	m = peer_must_recv(p, STEP_MS, "HelloAck");
	assert_int_equal(m->msg_case, PTG__LINK_MESSAGE__MSG_HELLO_ACK);
	assert_int_equal(m->hello_ack->protocol_version,
			 PTG__PROTOCOL_VERSION__PROTOCOL_VERSION_1);
	assert_non_null(m->hello_ack->limits);
	return p;
}

/* Drops the link as a crashed gateway would. */
void peer_drop(struct peer *p)
{
	linkclient_close(&p->lc);
	p->open = 0;
}

void peer_free(struct peer *p)
{
	if (p->open)
		peer_drop(p);
	for (size_t i = 0; i < p->n_log; i++)
		link_message_free(p->log[i]);
	free(p->log);
	buf_free(&p->text);
	memset(p, 0, sizeof(*p));
}

/* ---- the sidecar process ---- */

/* Removes the fixture's socket and directory; 0, or -errno when the
   directory stays. */
static int remove_fixture_dir(struct fixture *fx)
{
	if (fx->sock[0])
		unlink(fx->sock);
	if (fx->dir[0] && rmdir(fx->dir) != 0 && errno != ENOENT)
		return -errno;
	return 0;
}

void sidecar_start(struct fixture *fx, const char *const *extra)
{
	char listen[160];
	const char *argv[40];
	int n = 0, rc;
	struct linkclient probe;

	/* A restart gets a fresh directory; the last one's goes. */
	if ((rc = remove_fixture_dir(fx)) != 0)
		fail_msg("%s: %s", fx->dir, strerror(-rc));
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/ptg-it-XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(fx->sock, sizeof(fx->sock), "%s/s.sock", fx->dir);
	snprintf(listen, sizeof(listen), "unix:%s", fx->sock);
	argv[n++] = sidecar_bin;
	argv[n++] = "--listen";
	argv[n++] = listen;
	argv[n++] = "--log-level";
	argv[n++] = getenv("PTG_IT_LOG") ? getenv("PTG_IT_LOG") : "warn";
	for (int i = 0; extra && extra[i] && n < 38; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	fx->pid = fork();
	assert_true(fx->pid >= 0);
	if (fx->pid == 0) {
		/* Never outlive the test, even when a timeout kills it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (child_nofile) {
			struct rlimit rl = {child_nofile, child_nofile};

			setrlimit(RLIMIT_NOFILE, &rl);
		}
		execv(sidecar_bin, (char **)argv);
		_exit(127);
	}
	/* Bounded wait for the socket to accept (30 s: an ASan build on a
	   loaded machine starts slowly). */
	for (int i = 0; i < 3000; i++) {
		if (linkclient_connect(&probe, fx->sock) == 0) {
			linkclient_close(&probe);
			return;
		}
		if (waitpid(fx->pid, NULL, WNOHANG) == fx->pid) {
			fx->pid = 0;
			fail_msg("sidecar exited at start");
		}
		sleep_ms(10);
	}
	fail_msg("sidecar did not listen on %s within 30 s", fx->sock);
}

/* SIGTERM, wait up to 30 s (the shutdown saves every session), then
   SIGKILL. Returns the wait status. */
int sidecar_stop(struct fixture *fx)
{
	int status = 0;

	if (fx->pid <= 0)
		return 0;
	kill(fx->pid, SIGTERM);
	for (int i = 0; i < 3000; i++) {
		if (waitpid(fx->pid, &status, WNOHANG) == fx->pid) {
			fx->pid = 0;
			return status;
		}
		sleep_ms(10);
	}
	fprintf(stderr, "sidecar %d ignored SIGTERM for 30 s; SIGKILL\n", (int)fx->pid);
	kill(fx->pid, SIGKILL);
	waitpid(fx->pid, &status, 0);
	fx->pid = 0;
	return status;
}

int setup(void **state)
{
	struct fixture *fx = xcalloc(1, sizeof(*fx));

	test_deadline = time_mono_ms() + TEST_BUDGET_MS;
	*state = fx;
	return 0;
}

int teardown(void **state)
{
	struct fixture *fx = *state;
	int status = 0, ok = 1, rc;

	if (fx->pid > 0 && waitpid(fx->pid, &status, WNOHANG) == fx->pid) {
		fprintf(stderr, "sidecar died during the test (status 0x%x)\n", status);
		fx->pid = 0;
		ok = 0;
	} else if (fx->pid > 0) {
		status = sidecar_stop(fx);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr,
				"sidecar did not exit cleanly after SIGTERM "
				"(status 0x%x)\n",
				status);
			ok = 0;
		}
	}
	for (int i = 0; i < fx->n_peers; i++)
		peer_free(&fx->peers[i]);
	if ((rc = remove_fixture_dir(fx)) != 0) {
		fprintf(stderr, "%s is left behind: %s\n", fx->dir, strerror(-rc));
		ok = 0;
	}
	free(fx);
	return ok ? 0 : -1;
}

/* ---- expectations ---- */

int is_noise(const Ptg__Frame *f)
{
	return f->kind_case == PTG__FRAME__KIND_OUTPUT ||
	       (f->kind_case == PTG__FRAME__KIND_KEYFRAME && !f->target_attach_id);
}

/* The next frame of kind addressed to target (0: broadcast), skipping
   Output and cadence Keyframes; anything else fails. */
Ptg__Frame *expect_frame(struct peer *p, Ptg__Frame__KindCase kind, uint64_t target,
			 int timeout_ms)
{
	int64_t until = time_mono_ms() + timeout_ms;
	Ptg__LinkMessage *m;

	for (;;) {
		m = peer_recv(p, (int)(until - time_mono_ms()));
		if (!m)
			fail_msg("timed out waiting for frame kind %d target %llu", kind,
				 (unsigned long long)target);
		if (m->msg_case == PTG__LINK_MESSAGE__MSG_FRAME &&
		    m->frame->kind_case == kind && m->frame->target_attach_id == target)
			return m->frame;
		if (m->msg_case == PTG__LINK_MESSAGE__MSG_FRAME && is_noise(m->frame))
			continue;
		describe("unexpected", m);
		fail_msg("expected frame kind %d target %llu", kind,
			 (unsigned long long)target);
	}
}

/* The very next message, which must be a frame of kind to target. */
Ptg__Frame *next_frame(struct peer *p, Ptg__Frame__KindCase kind, uint64_t target)
{
	Ptg__LinkMessage *m = peer_must_recv(p, STEP_MS, "the next frame");

	if (m->msg_case != PTG__LINK_MESSAGE__MSG_FRAME || m->frame->kind_case != kind ||
	    m->frame->target_attach_id != target) {
		describe("unexpected", m);
		fail_msg("expected frame kind %d target %llu next", kind,
			 (unsigned long long)target);
	}
	return m->frame;
}

/* The MembershipChanged step of a join flow: a broadcast, or, when joins
   come closer together than the sidecar's coalescing interval, the same
   whole list addressed to the joiner (the broadcast follows later). */
Ptg__Frame *next_membership(struct peer *p, uint64_t joiner)
{
	Ptg__LinkMessage *m = peer_must_recv(p, STEP_MS, "the join's MembershipChanged");

	if (m->msg_case != PTG__LINK_MESSAGE__MSG_FRAME ||
	    m->frame->kind_case != PTG__FRAME__KIND_MEMBERSHIP ||
	    (m->frame->target_attach_id && m->frame->target_attach_id != joiner)) {
		describe("unexpected", m);
		fail_msg("expected the MembershipChanged of joiner %llu next",
			 (unsigned long long)joiner);
	}
	return m->frame;
}

/* The Reply to request_id (0 for attach-scoped errors), skipping noise. */
Ptg__Reply *expect_reply(struct peer *p, uint64_t request_id, int timeout_ms)
{
	int64_t until = time_mono_ms() + timeout_ms;
	Ptg__LinkMessage *m;

	for (;;) {
		m = peer_recv(p, (int)(until - time_mono_ms()));
		if (!m)
			fail_msg("timed out waiting for the reply to %llu",
				 (unsigned long long)request_id);
		if (m->msg_case == PTG__LINK_MESSAGE__MSG_REPLY &&
		    m->reply->request_id == request_id)
			return m->reply;
		if (m->msg_case == PTG__LINK_MESSAGE__MSG_FRAME && is_noise(m->frame))
			continue;
		describe("unexpected", m);
		fail_msg("expected the reply to request %llu",
			 (unsigned long long)request_id);
	}
}

void expect_error(struct peer *p, uint64_t request_id, Ptg__ErrorCode code,
		  uint64_t attach_id, const char *op)
{
	Ptg__Reply *r = expect_reply(p, request_id, STEP_MS);

	if (r->code != code)
		fail_msg("reply code %d '%s', expected %d", r->code, r->message, code);
	assert_int_equal(r->attach_id, attach_id);
	if (op)
		assert_string_equal(r->client_op_id, op);
	assert_true(r->message[0] != '\0');
}

/* Nothing but noise arrives for ms. */
void expect_quiet(struct peer *p, int ms)
{
	int64_t until = time_mono_ms() + ms;
	Ptg__LinkMessage *m;

	while (time_mono_ms() < until) {
		m = peer_recv(p, (int)(until - time_mono_ms()));
		if (!m)
			return;
		if (m->msg_case == PTG__LINK_MESSAGE__MSG_FRAME && is_noise(m->frame))
			continue;
		describe("unexpected", m);
		fail_msg("expected no message");
	}
}

/* Where needle occurs in the Output received from offset from, or NULL. */
const uint8_t *text_find(const struct peer *p, size_t from, const char *needle)
{
	if (!p->text.data || p->text.len <= from)
		return NULL;
	return memmem(p->text.data + from, p->text.len - from, needle, strlen(needle));
}

/* Reads until the Output received since the last match contains needle. */
void wait_output(struct peer *p, const char *needle, int timeout_ms)
{
	int64_t until = time_mono_ms() + timeout_ms;
	const uint8_t *hit;

	for (;;) {
		hit = text_find(p, p->text_mark, needle);
		if (hit) {
			p->text_mark = (size_t)(hit - p->text.data) + strlen(needle);
			return;
		}
		if (!peer_recv(p, (int)(until - time_mono_ms()))) {
			print_message("output so far: '%.*s'\n",
				      (int)(p->text.len - p->text_mark),
				      (const char *)p->text.data + p->text_mark);
			fail_msg("output '%s' did not appear within %d ms", needle,
				 timeout_ms);
		}
	}
}

/* ---- screen ---- */

/* 1 when the snapshot, written to a fresh terminal of its size, shows
   needle on one of its rows. */
int snapshot_shows(const Ptg__KeyframeFrame *kf, const char *needle)
{
	struct screen *scr = screen_new(kf->cols, kf->rows);
	size_t cap = (size_t)kf->rows * ((size_t)kf->cols * 4 + 1) + 1, len = 0;
	char *text = xcalloc(cap, 1);
	int found;

	screen_feed(scr, kf->snapshot.data, kf->snapshot.len);
	for (unsigned row = 0; row < kf->rows; row++) {
		VTermRect r = {.start_row = (int)row,
			       .end_row = (int)row + 1,
			       .start_col = 0,
			       .end_col = (int)kf->cols};

		len += vterm_screen_get_text(screen_vterm_screen(scr), text + len,
					     cap - len - 1, r);
		text[len++] = '\n';
	}
	found = strstr(text, needle) != NULL;
	if (!found)
		print_message("snapshot screen:\n%s\n", text);
	free(text);
	screen_free(scr);
	return found;
}

static int remove_entry(const char *path, const struct stat *sb, int flag,
			struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

void remove_tree(const char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	/* A test leaves nothing behind in /tmp. */
	if (access(dir, F_OK) == 0)
		fail_msg("%s is still there after removing it", dir);
}

/* The sidecar refuses flag=value at start: exit status 2, and stderr
   names the flag. */
void expect_refused(const char *flag, const char *value)
{
	const char *argv[] = {sidecar_bin, "--listen", "unix:/tmp/ptg-it-never.sock",
			      flag,	   value,      NULL};
	char err[1024];
	int fds[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], 2);
		execv(sidecar_bin, (char **)argv);
		_exit(127);
	}
	close(fds[1]);
	while (got < (ssize_t)sizeof(err) - 1 &&
	       (n = read(fds[0], err + got, sizeof(err) - 1 - (size_t)got)) > 0)
		got += n;
	err[got] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 2)
		fail_msg("%s %s: status 0x%x, expected exit 2", flag, value, status);
	if (!strstr(err, flag))
		fail_msg("%s %s: the error does not name the flag: '%s'", flag, value,
			 err);
}
