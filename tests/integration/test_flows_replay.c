/* test_flows_replay: a replay older than memory streams from the frame log
   (docs/protocol.md, "Joining a session"): exact (every logged frame after
   replay_from, once, in order, then the Keyframe), while the same link's
   other attachment gets its live frames and another session's echo keeps
   answering. A real ptygate-sidecar driven over its link (flows_fixture.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "flows_fixture.h"
#include "framelog.h"
#include "timeutil.h"

/* Bytes of history written before the replay: far more than the memory
   tail (1 MiB here), so nearly all of it comes from the disk. */
#define HISTORY_BYTES 48000000
#define MAX_ECHO_MS   500

struct seen {
	uint64_t *seq;
	int64_t *ts;
	size_t n, cap;
};

static void seen_add(struct seen *v, uint64_t seq, int64_t ts)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 4096;
		v->seq = realloc(v->seq, v->cap * sizeof(*v->seq));
		v->ts = realloc(v->ts, v->cap * sizeof(*v->ts));
		assert_non_null(v->seq);
		assert_non_null(v->ts);
	}
	v->seq[v->n] = seq;
	v->ts[v->n++] = ts;
}

static void wait_file(const char *path, int timeout_ms)
{
	int64_t until = time_mono_ms() + remaining_ms(timeout_ms);
	struct stat st;

	while (stat(path, &st) < 0) {
		if (time_mono_ms() > until)
			fail_msg("%s did not appear within %d ms", path, timeout_ms);
		sleep_ms(50);
	}
}

/* The replaying link: attach 1 replays, attach 2 joined fresh. */
struct watch {
	struct seen replayed; /* attach 1's frames after its RoleAssigned */
	int role_seen, done;
	Ptg__Frame__KindCase last_kind;
	unsigned live_to_2; /* attach 2's Outputs while 1 replayed */
};

/* While attach 1 replays, every frame on its link is addressed to one
   attachment: a link-wide one would reach it too. Its replay ends with
   its Keyframe; the join's MembershipChanged then goes link-wide again,
   which is where the watch ends. */
static void on_message(struct watch *w, const Ptg__LinkMessage *m)
{
	const Ptg__Frame *f;

	if (m->msg_case != PTG__LINK_MESSAGE__MSG_FRAME || w->done)
		return;
	f = m->frame;
	if (f->target_attach_id == 0) {
		assert_int_equal(f->kind_case, PTG__FRAME__KIND_MEMBERSHIP);
		assert_true(w->replayed.n > 0);
		w->done = 1;
		return;
	}
	if (f->target_attach_id == 2 && f->kind_case == PTG__FRAME__KIND_OUTPUT)
		w->live_to_2++;
	if (f->target_attach_id != 1)
		return;
	if (!w->role_seen) {
		assert_int_equal(f->kind_case, PTG__FRAME__KIND_ROLE_ASSIGNED);
		w->role_seen = 1;
		return;
	}
	if (w->replayed.n && f->sequence <= w->replayed.seq[w->replayed.n - 1])
		fail_msg("replayed seq %llu after %llu", (unsigned long long)f->sequence,
			 (unsigned long long)w->replayed.seq[w->replayed.n - 1]);
	seen_add(&w->replayed, f->sequence, f->ts_ms);
	w->last_kind = f->kind_case;
}

/* Reads the replaying link for up to ms; the fresh join's own flow
   (RoleAssigned, membership, Keyframe to attach 2) passes through. */
static void drain(struct peer *p, struct watch *w, int ms)
{
	int64_t until = time_mono_ms() + ms;
	Ptg__LinkMessage *m;
	int rc;

	while (!w->done && time_mono_ms() < until) {
		rc = linkclient_recv(&p->lc, remaining_ms(5), &m);
		if (rc < 0)
			fail_msg("link receive failed: %s", strerror(-rc));
		if (rc == 0)
			continue;
		on_message(w, m);
		ptg__link_message__free_unpacked(m, NULL);
	}
}

/* The frames attach 1 got must be exactly the log's records after
   replay_from, up to its Keyframe (the one frame after them). */
static void check_against_log(const char *statedir, const char *sid, uint64_t from,
			      const struct seen *got)
{
	struct framelog_reader *rd = framelog_reader_open(statedir, sid, NULL, from);
	struct framelog_rec rec;
	size_t i = 0;
	int rc;

	assert_true(got->n >= 2);
	while ((rc = framelog_reader_next(rd, &rec)) == 1 && i + 1 < got->n) {
		if (rec.seq != got->seq[i] || rec.ts_ms != got->ts[i])
			fail_msg("frame %zu: got seq %llu ts %lld, the log has seq %llu "
				 "ts %lld",
				 i, (unsigned long long)got->seq[i],
				 (long long)got->ts[i], (unsigned long long)rec.seq,
				 (long long)rec.ts_ms);
		i++;
	}
	assert_int_equal(i, got->n - 1);
	/* The last frame is the Keyframe, after every logged frame before it. */
	assert_true(rc == 0 || rec.seq > got->seq[got->n - 1]);
	framelog_reader_free(rd);
}

static void test_disk_replay_streams_exactly(void **state)
{
	struct fixture *fx = *state;
	char statedir[] = "/tmp/ptg-it-replay-XXXXXX", done[96], cmd[256], echo[32];
	const char *extra[] = {
	    "--state-dir", statedir,	     "--state-plaintext", "--replay-memory-bytes",
	    "1048576",	   "--replay-bytes", "134217728",	  NULL};
	struct attach_req a = {.attach_id = 1,
			       .role = PTG__ROLE__ROLE_OBSERVER,
			       .label = "back",
			       .scopes = SC_OBSERVE,
			       .has_replay = 1};
	struct attach_req fresh = {.attach_id = 2,
				   .role = PTG__ROLE__ROLE_OBSERVER,
				   .label = "live",
				   .scopes = SC_OBSERVE};
	struct peer *p1, *p2, *p3;
	struct joined j, jb;
	struct watch w = {0};
	char sa[FLOWS_SID_MAX], sb[FLOWS_SID_MAX];
	int64_t t0, rtt, worst = 0;
	unsigned pings = 0;
	Ptg__AttachResult *ar;

	assert_non_null(mkdtemp(statedir));
	snprintf(done, sizeof(done), "%s/history-written", statedir);
	p1 = start_shell_controller(fx, extra, sa, &j);
	snprintf(cmd, sizeof(cmd),
		 "stty -echo; head -c %d /dev/zero | tr '\\0' x; "
		 ": > %s; while :; do echo tick; sleep 0.01; done\n",
		 HISTORY_BYTES, done);
	send_input(p1, sa, 1, cmd, NULL);
	detach_ok(p1, sa, 1);
	wait_file(done, 60000);

	p2 = peer_open(fx);
	create_sh(p2, 80, 24, sb);
	join_simple(p2, sb, 1, PTG__ROLE__ROLE_CONTROLLER, "echo", &jb);

	p3 = peer_open(fx);
	a.session = sa;
	a.replay_from = j.kf_seq;
	ar = attach_ok(p3, &a);
	assert_string_equal(ar->replay_error, "");
	fresh.session = sa;
	send_attach(p3, &fresh);

	/* Another session answers while the history streams. */
	while (!w.done) {
		drain(p3, &w, 20);
		if (w.done)
			break;
		snprintf(cmd, sizeof(cmd), "echo e-$((%u+1))\n", pings);
		snprintf(echo, sizeof(echo), "e-%u\r\n", pings + 1);
		t0 = time_mono_ms();
		send_input(p2, sb, 1, cmd, NULL);
		wait_output(p2, echo, MAX_ECHO_MS);
		rtt = time_mono_ms() - t0;
		worst = rtt > worst ? rtt : worst;
		pings++;
	}
	print_message("replayed %zu frames; %u echoes answered meanwhile, the slowest in "
		      "%lld ms; %u live Outputs reached the other attachment meanwhile\n",
		      w.replayed.n, pings, (long long)worst, w.live_to_2);
	assert_int_equal(w.last_kind, PTG__FRAME__KIND_KEYFRAME);
	assert_true(w.live_to_2 >= 1);
	assert_true(worst < MAX_ECHO_MS);
	assert_int_equal(sidecar_stop(fx), 0);
	check_against_log(statedir, sa, j.kf_seq, &w.replayed);
	free(w.replayed.seq);
	free(w.replayed.ts);
	remove_tree(statedir);
}

/* A history on disk, no attachment left: the session's id into sid, the
   sequence to replay from into *from. */
static struct peer *history_on_disk(struct fixture *fx, const char *const *extra,
				    const char *statedir, int bytes,
				    char sid[FLOWS_SID_MAX], uint64_t *from)
{
	char done[96], cmd[256];
	struct peer *p;
	struct joined j;

	snprintf(done, sizeof(done), "%s/history-written", statedir);
	p = start_shell_controller(fx, extra, sid, &j);
	snprintf(cmd, sizeof(cmd),
		 "stty -echo; head -c %d /dev/zero | tr '\\0' x; : > %s\n", bytes, done);
	send_input(p, sid, 1, cmd, NULL);
	detach_ok(p, sid, 1);
	wait_file(done, 60000);
	*from = j.kf_seq;
	return p;
}

/* While the history streams: a role request is refused (its RoleAssigned
   would overtake the history), and a link that fell behind ends the
   replay the one defined way: Error PTY_OUTPUT_LAGGED, then the Keyframe,
   then MembershipChanged; nothing of the history after that. */
static void test_requests_during_a_disk_replay(void **state)
{
	struct fixture *fx = *state;
	char statedir[] = "/tmp/ptg-it-replay-XXXXXX";
	const char *extra[] = {"--state-dir",		statedir,  "--state-plaintext",
			       "--replay-memory-bytes", "1048576", NULL};
	struct attach_req a = {.attach_id = 1,
			       .role = PTG__ROLE__ROLE_OBSERVER,
			       .label = "back",
			       .scopes = SC_OBSERVE,
			       .has_replay = 1};
	Ptg__Frame *err, *kf, *f;
	Ptg__Reply *r;
	struct peer *p;
	uint64_t from, last = 0;
	int refused = 0;
	char sid[FLOWS_SID_MAX];

	assert_non_null(mkdtemp(statedir));
	history_on_disk(fx, extra, statedir, 16000000, sid, &from);
	p = peer_open(fx);
	a.session = sid;
	a.replay_from = from;
	assert_string_equal(attach_ok(p, &a)->replay_error, "");
	send_request_role(p, sid, 1, PTG__ROLE__ROLE_CONTROLLER);
	send_lag_recovery(p, sid, 1, 4096);
	/* RoleAssigned, the history sent so far (the role request's refusal
	   among it), then the stop. */
	for (;;) {
		Ptg__LinkMessage *msg = peer_must_recv(p, STEP_MS, "the replay's end");

		if (msg->msg_case == PTG__LINK_MESSAGE__MSG_REPLY) {
			r = msg->reply;
			assert_int_equal(r->code, PTG__ERROR_CODE__RATE_LIMITED);
			assert_non_null(strstr(r->message, "replay is in progress"));
			refused = 1;
			continue;
		}
		f = msg->frame;
		assert_non_null(f);
		assert_int_equal(f->target_attach_id, 1);
		if (f->kind_case == PTG__FRAME__KIND_ERROR)
			break;
		if (f->kind_case == PTG__FRAME__KIND_ROLE_ASSIGNED)
			continue; /* first, numbered before the history it precedes */
		assert_true(f->sequence > last);
		last = f->sequence;
	}
	err = f;
	assert_int_equal(err->error->code,
			 PTG__FRAME_ERROR_CODE__FRAME_ERROR_PTY_OUTPUT_LAGGED);
	assert_non_null(strstr(err->error->message, "fell behind"));
	assert_true(refused);
	kf = next_frame(p, PTG__FRAME__KIND_KEYFRAME, 1);
	assert_true(kf->sequence > err->sequence);
	next_membership(p, 1);
	assert_true(last < kf->sequence);
	expect_quiet(p, 200);
	assert_int_equal(sidecar_stop(fx), 0);
	remove_tree(statedir);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_disk_replay_streams_exactly, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_requests_during_a_disk_replay, setup,
					    teardown),
	};

	return flows_run("integration.flows_replay", tests,
			 sizeof(tests) / sizeof(tests[0]), argc, argv);
}
