/* test_flows_limits: the daemon at its limits: every numeric flag at its
   bounds, and running out of file descriptors. A real ptygate-sidecar
   driven over its link (flows_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "flows_fixture.h"
#include "timeutil.h"

/* ---- every numeric flag at its bounds ---- */

struct flag_bounds {
	const char *flag;
	const char *lo, *hi;	   /* accepted */
	const char *below, *above; /* refused (NULL: nothing below) */
};

static const struct flag_bounds FLAG_BOUNDS[] = {
    {"--replay-frames", "0", "10000000", NULL, "10000001"},
    {"--replay-seconds", "0", "2592000", NULL, "2592001"},
    {"--replay-bytes", "1024", "68719476736", "1023", "68719476737"},
    {"--max-controllers", "0", "1024", NULL, "1025"},
    {"--max-observers", "0", "4096", NULL, "4097"},
    {"--keyframe-seconds", "1", "86400", "0", "86401"},
    {"--keyframe-frames", "1", "1000000", "0", "1000001"},
    {"--keyframe-max-bytes", "1024", "12582912", "1023", "12582913"},
    {"--max-sessions", "1", "100000", "0", "100001"},
    {"--kill-grace-ms", "0", "600000", NULL, "600001"},
    {"--exited-keep-seconds", "0", "2592000", NULL, "2592001"},
    {"--default-size", "1x1", "1024x1024", "0x1", "1025x1"},
};

/* Starts the sidecar with flag=value, joins a session whose program keeps
   printing, and sees output arrive after the join (--keyframe-frames 1
   once crashed on the first one), then stops it cleanly. */
static void run_at_bound(struct fixture *fx, const char *flag, const char *value)
{
	static const char *const ticker[] = {
	    "/bin/sh", "-c", "while :; do echo tick-$((40+2)); sleep 0.05; done", NULL};
	const char *extra[] = {flag, value, NULL};
	struct create_req cr = {ticker, NULL, 0, 0, PTG__POLICY__POLICY_KEEP_RUNNING};
	int observer = strcmp(flag, "--max-controllers") == 0 && strcmp(value, "0") == 0;
	struct attach_req a = {
	    .attach_id = 1,
	    .label = "bound",
	    .scopes = SC_OBSERVE | SC_CONTROL,
	    .role = observer ? PTG__ROLE__ROLE_OBSERVER : PTG__ROLE__ROLE_CONTROLLER,
	};
	struct peer *p;
	char sid[FLOWS_SID_MAX];
	int status;

	print_message("%s %s\n", flag, value);
	test_deadline = time_mono_ms() + TEST_BUDGET_MS;
	p = start_session(fx, extra, &cr, sid);
	a.session = sid;
	attach_ok(p, &a);
	p->text_mark = p->text.len; /* output after the join only */
	wait_output(p, "tick-42", STEP_MS);
	wait_output(p, "tick-42", STEP_MS);
	if (waitpid(fx->pid, &status, WNOHANG) == fx->pid) {
		fx->pid = 0;
		fail_msg("%s %s: the sidecar died (status 0x%x)", flag, value, status);
	}
	status = sidecar_stop(fx);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("%s %s: the sidecar did not stop cleanly (status 0x%x)", flag,
			 value, status);
	for (int i = 0; i < fx->n_peers; i++)
		peer_free(&fx->peers[i]);
	fx->n_peers = 0;
	unlink(fx->sock);
	rmdir(fx->dir);
}

static void test_flag_bounds(void **state)
{
	struct fixture *fx = *state;

	for (size_t i = 0; i < sizeof(FLAG_BOUNDS) / sizeof(FLAG_BOUNDS[0]); i++) {
		const struct flag_bounds *b = &FLAG_BOUNDS[i];

		if (b->below)
			expect_refused(b->flag, b->below);
		expect_refused(b->flag, b->above);
		run_at_bound(fx, b->flag, b->lo);
		run_at_bound(fx, b->flag, b->hi);
	}
}

/* ---- out of file descriptors ---- */

/* CPU seconds (user + system) the process has used, from /proc. */
static double cpu_seconds(pid_t pid)
{
	char path[64];
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%*d (%*[^)]) %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
		   &ut, &st) != 2)
		ut = st = 0;
	fclose(f);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* A sidecar with few descriptors: creates beyond them fail with a reason,
   the sidecar stays up and responsive, a link it cannot accept yet does
   not make it spin (it once woke on the listener forever), and once a
   descriptor is free the waiting gateway is accepted. */
static void test_fd_exhaustion(void **state)
{
	static const char *const idle[] = {"/bin/sleep", "600", NULL};
	struct fixture *fx = *state;
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT, *r;
	Ptg__CreateSession c = PTG__CREATE_SESSION__INIT;
	char first[FLOWS_SID_MAX] = "";
	int created = 0, refused = 0;
	double cpu0, cpu1;
	struct peer *p, *q;

	child_nofile = 20;
	sidecar_start(fx, NULL);
	child_nofile = 0;
	p = peer_open(fx);
	for (int i = 0; i < 40 && !refused; i++) {
		c.request_id = ++p->next_rid;
		c.argv = (char **)idle;
		c.n_argv = 2;
		m.msg_case = PTG__LINK_MESSAGE__MSG_CREATE_SESSION;
		m.create_session = &c;
		peer_send(p, &m);
		Ptg__Reply *rep = expect_reply(p, c.request_id, STEP_MS);

		if (rep->code == PTG__ERROR_CODE__OK) {
			if (!created++)
				snprintf(first, sizeof(first), "%s",
					 rep->session->session_id);
			continue;
		}
		print_message("create %d refused: %s\n", i + 1, rep->message);
		assert_true(rep->message[0] != '\0');
		refused = 1;
	}
	assert_true(created >= 2);
	assert_true(refused);

	/* More gateways dial in until one cannot be accepted: the sidecar
	   must not spin on it, and the first link still gets answers. */
	for (q = NULL; !q;) {
		if (fx->n_peers >= MAX_PEERS)
			fail_msg("every link was accepted");
		q = peer_connect(fx);
		send_hello(q, PTG__PROTOCOL_VERSION__PROTOCOL_VERSION_1);
		/* An accepted link's hello is answered at once; 5 s is for a
		   loaded machine (the last link, never answered, costs it). */
		if (peer_recv(q, 5000))
			q = NULL;
	}
	cpu0 = cpu_seconds(fx->pid);
	sleep_ms(1500);
	cpu1 = cpu_seconds(fx->pid);
	print_message("sidecar CPU over 1.5 s with a link it cannot accept: %.2f s\n",
		      cpu1 - cpu0);
	assert_true(cpu1 - cpu0 < 0.15); /* it spun at 0.45 s before */
	assert_int_equal(get_session(p, first)->state,
			 PTG__SESSION_STATE__SESSION_RUNNING);

	/* A session ends, its PTY closes: the waiting link gets its hello. */
	kill_session(p, first);
	r = peer_must_recv(q, STEP_MS, "HelloAck once a descriptor is free");
	assert_int_equal(r->msg_case, PTG__LINK_MESSAGE__MSG_HELLO_ACK);
	assert_int_equal(get_session(q, first)->state,
			 PTG__SESSION_STATE__SESSION_EXITED);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    FLOWS_TEST(test_flag_bounds),
	    FLOWS_TEST(test_fd_exhaustion),
	};

	return FLOWS_RUN("integration.flows_limits", tests);
}
