/* test_flows_join: joining and replay (docs/protocol.md, "Joining a
   session"): the controller lifecycle, reconnect with replay, replay out of
   range, an observer joining mid-session, a burst of joins, and a replay of
   1,000 frames. A real ptygate-sidecar driven over its link
   (flows_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flows_fixture.h"
#include "timeutil.h"

/* ---- controller attach lifecycle ---- */

static void test_controller_lifecycle(void **state)
{
	static const char *const quiet_env[] = {"PS1=", "PS2=", "ENV=", NULL};
	struct create_req cr = {SH, quiet_env, 120, 30, PTG__POLICY__POLICY_KEEP_RUNNING};
	struct fixture *fx = *state;
	Ptg__MembershipChangedFrame *mc;
	struct peer *p;
	struct joined j;
	Ptg__Frame *f;
	char sid[FLOWS_SID_MAX];

	p = start_session(fx, NULL, &cr, sid);
	join_simple(p, sid, 7, PTG__ROLE__ROLE_CONTROLLER, "alice@laptop", &j);
	/* A fresh session whose program is silent: the join is 1, 2, 3. */
	assert_int_equal(j.role_seq, 1);
	assert_int_equal(j.role, PTG__ROLE__ROLE_CONTROLLER);
	assert_int_equal(j.ra->role, PTG__ROLE__ROLE_CONTROLLER);
	assert_false(j.ra->downgraded);
	assert_int_equal(j.mc->n_controllers, 1);
	assert_int_equal(j.mc->n_observers, 0);
	assert_string_equal(j.mc->controllers[0]->client_id, j.client_id);
	assert_string_equal(j.mc->controllers[0]->label, "alice@laptop");
	assert_int_equal(j.kf_seq, 3);
	assert_int_equal(j.kf->cols, 120);
	assert_int_equal(j.kf->rows, 30);
	assert_true(j.kf->snapshot.len > 0);

	send_input(p, sid, 7, "stty size\n", NULL);
	wait_output(p, "30 120", STEP_MS);
	/* The echo shows GOT-W""INCH; only the trap prints GOT-WINCH. */
	send_input(p, sid, 7, "trap 'echo GOT-W\"\"INCH' WINCH; echo trap-$((1))set\n",
		   NULL);
	wait_output(p, "trap-1set", STEP_MS);
	send_resize(p, sid, 7, 140, 40, "op-rz");
	f = expect_frame(p, PTG__FRAME__KIND_RESIZE, 0, STEP_MS);
	assert_int_equal(f->resize->cols, 140);
	assert_int_equal(f->resize->rows, 40);
	send_input(p, sid, 7, "stty size\n", NULL);
	wait_output(p, "40 140", STEP_MS);
	p->text_mark = 0;
	wait_output(p, "GOT-WINCH", STEP_MS);

	expect_quiet(p, 200);
	mc = detach_ok(p, sid, 7);
	assert_int_equal(mc->n_controllers, 0);
	assert_int_equal(mc->n_observers, 0);
	/* After leaving, input for that attachment is refused. */
	send_input(p, sid, 7, "echo late\n", "op-late");
	expect_error(p, 0, PTG__ERROR_CODE__NOT_FOUND, 7, "op-late");
}

/* ---- reconnect with replay ---- */

/* The frame as a broadcast: its packed bytes with target 0. */
static void pack_untargeted(Ptg__Frame *f, struct buf *out)
{
	uint64_t target = f->target_attach_id;

	f->target_attach_id = 0;
	ptg__frame__pack(f, buf_reserve(out, ptg__frame__get_packed_size(f)));
	buf_commit(out, ptg__frame__get_packed_size(f));
	f->target_attach_id = target;
}

static void assert_same_frame(Ptg__Frame *a, Ptg__Frame *b)
{
	struct buf pa = BUF_INIT, pb = BUF_INIT;

	assert_int_equal(a->sequence, b->sequence);
	assert_int_equal(a->ts_ms, b->ts_ms);
	assert_int_equal(a->kind_case, b->kind_case);
	pack_untargeted(a, &pa);
	pack_untargeted(b, &pb);
	assert_int_equal(buf_size(&pa), buf_size(&pb));
	assert_memory_equal(buf_head(&pa), buf_head(&pb), buf_size(&pa));
	buf_free(&pa);
	buf_free(&pb);
}

struct replay {
	Ptg__Frame *frames[256];
	size_t n;
	uint64_t role_seq, kf_seq, mc_seq;
	Ptg__MembershipChangedFrame *mc;
};

/* A join with replay_from in range: Reply, RoleAssigned, the replayed
   frames (targeted, original numbers), Keyframe, MembershipChanged. */
static void rejoin(struct peer *p, const struct attach_req *a, struct replay *rp)
{
	Ptg__AttachResult *ar = attach_ok(p, a);
	Ptg__LinkMessage *m;
	Ptg__Frame *f;

	assert_string_equal(ar->replay_error, "");
	rp->n = 0;
	rp->role_seq =
	    next_frame(p, PTG__FRAME__KIND_ROLE_ASSIGNED, a->attach_id)->sequence;
	for (;;) {
		m = peer_must_recv(p, STEP_MS, "replay");
		assert_int_equal(m->msg_case, PTG__LINK_MESSAGE__MSG_FRAME);
		f = m->frame;
		assert_int_equal(f->target_attach_id, a->attach_id);
		if (f->kind_case == PTG__FRAME__KIND_KEYFRAME &&
		    f->sequence > rp->role_seq)
			break;
		assert_true(f->sequence > a->replay_from && f->sequence < rp->role_seq);
		assert_true(rp->n == 0 || f->sequence > rp->frames[rp->n - 1]->sequence);
		assert_true(rp->n < 256);
		rp->frames[rp->n++] = f;
	}
	rp->kf_seq = f->sequence;
	assert_int_equal(rp->kf_seq, rp->role_seq + 1);
	assert_int_equal(f->keyframe->anchor_sequence, rp->kf_seq);
	f = next_membership(p, a->attach_id);
	rp->mc_seq = f->sequence;
	rp->mc = f->membership;
	assert_int_equal(rp->mc_seq, rp->kf_seq + 1);
}

/* Reads the witness until it has the broadcast numbered seq. */
static void witness_until(struct peer *w, uint64_t seq)
{
	for (;;) {
		for (size_t i = 0; i < w->n_log; i++)
			if (w->log[i]->msg_case == PTG__LINK_MESSAGE__MSG_FRAME &&
			    w->log[i]->frame->sequence == seq &&
			    !w->log[i]->frame->target_attach_id)
				return;
		peer_must_recv(w, STEP_MS, "the witness's copy");
	}
}

/* The replay equals what the witness got as broadcasts in (from, upto). */
static void check_replay(struct peer *w, const struct replay *rp, uint64_t from,
			 uint64_t upto)
{
	size_t k = 0;

	for (size_t i = 0; i < w->n_log; i++) {
		Ptg__Frame *f = w->log[i]->frame;

		if (w->log[i]->msg_case != PTG__LINK_MESSAGE__MSG_FRAME ||
		    f->target_attach_id || f->sequence <= from || f->sequence >= upto)
			continue;
		if (k >= rp->n)
			fail_msg("broadcast %llu (%s) missing from the replay",
				 (unsigned long long)f->sequence, kind_name(f));
		assert_same_frame(f, rp->frames[k++]);
	}
	assert_int_equal(k, rp->n);
}

static uint64_t last_seq(const struct peer *p)
{
	uint64_t n = 0;

	for (size_t i = 0; i < p->n_log; i++)
		if (p->log[i]->msg_case == PTG__LINK_MESSAGE__MSG_FRAME &&
		    p->log[i]->frame->sequence > n)
			n = p->log[i]->frame->sequence;
	return n;
}

static void replay_prepare(struct fixture *fx, char sid[FLOWS_SID_MAX], struct peer **pa,
			   struct peer **pb, struct peer **pc)
{
	struct joined j;
	Ptg__Frame *f;

	*pa = peer_open(fx);
	create_sh(*pa, 80, 24, sid);
	join_simple(*pa, sid, 1, PTG__ROLE__ROLE_CONTROLLER, "alice@laptop", &j);
	send_input(*pa, sid, 1, "printf 'one-%s\\n' x\n", NULL);
	wait_output(*pa, "one-x", STEP_MS);
	*pb = peer_open(fx);
	join_simple(*pb, sid, 2, PTG__ROLE__ROLE_OBSERVER, "bob@review", &j);
	f = expect_frame(*pa, PTG__FRAME__KIND_MEMBERSHIP, 0, STEP_MS);
	assert_int_equal(f->membership->n_observers, 1);
	send_input(*pa, sid, 1, "printf 'two-%s\\n' x\n", NULL);
	wait_output(*pa, "two-x", STEP_MS);
	wait_output(*pb, "two-x", STEP_MS);
	/* A's network drops; B sees A leave. */
	peer_drop(*pa);
	f = expect_frame(*pb, PTG__FRAME__KIND_MEMBERSHIP, 0, STEP_MS);
	assert_int_equal(f->membership->n_controllers, 0);
	assert_int_equal(f->membership->n_observers, 1);
	assert_string_equal(f->membership->observers[0]->label, "bob@review");
	/* More output while A is away, from a controller on a third link. */
	*pc = peer_open(fx);
	join_simple(*pc, sid, 3, PTG__ROLE__ROLE_CONTROLLER, "carol", &j);
	send_input(*pc, sid, 3, "for i in 1 2 3 4 5; do printf 'burst-%s\\n' $i; done\n",
		   NULL);
	wait_output(*pc, "burst-5", STEP_MS);
	wait_output(*pb, "burst-5", STEP_MS);
}

static void test_reconnect_replay(void **state)
{
	struct fixture *fx = *state;
	struct peer *a, *b, *c, *a2, *d, *e;
	struct attach_req req = {.attach_id = 11,
				 .role = PTG__ROLE__ROLE_CONTROLLER,
				 .label = "alice@laptop",
				 .scopes = SC_OBSERVE | SC_CONTROL,
				 .has_replay = 1};
	static struct replay r1, r2, r3;
	char sid[FLOWS_SID_MAX];
	uint64_t n, cur;

	sidecar_start(fx, NULL);
	replay_prepare(fx, sid, &a, &b, &c);
	n = last_seq(a);
	req.session = sid;
	req.replay_from = n;
	a2 = peer_open(fx);
	rejoin(a2, &req, &r1);
	assert_true(r1.n >= 3); /* A's leave, carol's join, the bursts */
	assert_int_equal(r1.mc->n_controllers, 2);
	assert_int_equal(r1.mc->n_observers, 1);
	witness_until(b, r1.mc_seq);
	check_replay(b, &r1, n, r1.role_seq);

	/* A second client replaying from the same cursor gets the same frames
	   (plus the first one's join broadcast, which came later). */
	d = peer_open(fx);
	req.attach_id = 12;
	req.role = PTG__ROLE__ROLE_OBSERVER;
	rejoin(d, &req, &r2);
	witness_until(b, r2.mc_seq);
	check_replay(b, &r2, n, r2.role_seq);
	assert_true(r2.n > r1.n);
	for (size_t i = 0; i < r1.n; i++)
		assert_same_frame(r1.frames[i], r2.frames[i]);

	/* replay_from = current_sequence replays nothing, still a Keyframe. */
	expect_quiet(b, 300);
	cur = get_session(b, sid)->current_sequence;
	e = peer_open(fx);
	req.attach_id = 13;
	req.replay_from = cur;
	rejoin(e, &req, &r3);
	assert_int_equal(r3.n, 0);
	assert_int_equal(r3.role_seq, cur + 1);
}

/* ---- replay out of range ---- */

static void test_replay_out_of_range(void **state)
{
	static const char *const args[] = {"--replay-frames", "3", "--replay-seconds",
					   "0", NULL};
	struct fixture *fx = *state;
	struct attach_req req = {.attach_id = 21,
				 .role = PTG__ROLE__ROLE_OBSERVER,
				 .scopes = SC_OBSERVE,
				 .has_replay = 1,
				 .replay_from = 1};
	static struct replay rp;
	Ptg__SessionInfo *info;
	struct peer *p, *q;
	struct joined j;
	char sid[FLOWS_SID_MAX], want[96];
	const char *err;

	p = start_shell_controller(fx, args, sid, &j);
	send_input(p, sid, 1,
		   "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo x$i; sleep 0.05; done\n",
		   NULL);
	wait_output(p, "x12", STEP_MS);
	expect_quiet(p, 300);
	info = get_session(p, sid);
	assert_true(info->current_sequence > 10);
	assert_true(info->oldest_retained_sequence > 2);

	q = peer_open(fx);
	req.session = sid;
	err = join_out_of_range(q, &req);
	snprintf(want, sizeof(want), "sequence=%llu",
		 (unsigned long long)info->oldest_retained_sequence);
	if (!strstr(err, "replay_from=1 ") || !strstr(err, want))
		fail_msg("replay_error '%s' should name 1 and %s", err, want);

	/* Ahead of the current sequence. */
	expect_frame(p, PTG__FRAME__KIND_MEMBERSHIP, 0, STEP_MS);
	info = get_session(p, sid);
	req.attach_id = 22;
	req.replay_from = info->current_sequence + 5;
	err = join_out_of_range(q, &req);
	snprintf(want, sizeof(want), "replay_from=%llu",
		 (unsigned long long)req.replay_from);
	if (!strstr(err, want))
		fail_msg("replay_error '%s' should name %s", err, want);

	/* The boundary: oldest - 1 is in range and replays the 3 retained. */
	expect_frame(p, PTG__FRAME__KIND_MEMBERSHIP, 0, STEP_MS);
	info = get_session(p, sid);
	req.attach_id = 23;
	req.replay_from = info->oldest_retained_sequence - 1;
	rejoin(q, &req, &rp);
	assert_int_equal(rp.n, 3);
	assert_int_equal(rp.frames[2]->sequence, info->current_sequence);
	/* And oldest - 2 is not. */
	expect_frame(p, PTG__FRAME__KIND_MEMBERSHIP, 0, STEP_MS);
	info = get_session(p, sid);
	req.attach_id = 24;
	req.replay_from = info->oldest_retained_sequence - 2;
	join_out_of_range(q, &req);
}

/* ---- observer joining mid-session ---- */

static void test_observer_mid_session(void **state)
{
	struct fixture *fx = *state;
	struct peer *p, *o;
	struct joined j;
	char sid[FLOWS_SID_MAX];

	p = start_shell_controller(fx, NULL, sid, &j);
	send_input(p, sid, 1, "printf 'hello-%s\\n' screen\n", NULL);
	wait_output(p, "hello-screen", STEP_MS);
	expect_quiet(p, 200);

	o = peer_open(fx);
	join_simple(o, sid, 5, PTG__ROLE__ROLE_OBSERVER, "watcher", &j);
	assert_int_equal(j.role, PTG__ROLE__ROLE_OBSERVER);
	assert_false(j.ra->downgraded);
	assert_int_equal(j.mc->n_controllers, 1);
	assert_int_equal(j.mc->n_observers, 1);
	assert_string_equal(j.mc->observers[0]->label, "watcher");
	assert_int_equal(j.kf->cols, 80);
	assert_int_equal(j.kf->rows, 24);
	assert_true(snapshot_shows(j.kf, "hello-screen"));
	/* The controller sees the observer arrive. */
	assert_int_equal(expect_frame(p, PTG__FRAME__KIND_MEMBERSHIP, 0, STEP_MS)
			     ->membership->n_observers,
			 1);

	send_input(o, sid, 5, "echo nope\n", "op-in-1");
	expect_error(o, 0, PTG__ERROR_CODE__PERMISSION_DENIED, 5, "op-in-1");
	send_resize(o, sid, 5, 100, 30, "op-rz-1");
	expect_error(o, 0, PTG__ERROR_CODE__PERMISSION_DENIED, 5, "op-rz-1");
	/* Neither reached the PTY. */
	expect_quiet(p, 300);
	assert_int_equal(get_session(p, sid)->cols, 80);
}

/* ---- a burst of joins: membership cost bounded ---- */

/* N observers join one session at once over one link. Every join flow
   stays exact (RoleAssigned, then the whole membership, to all or to the
   joiner, then its Keyframe), and the broadcasts are coalesced: today's
   one broadcast per join made N joins cost O(N^2) entries on the link
   and O(N^3) at the clients. PTG_IT_JOINS sets N (300) to measure. */
/* What the burst's frames cost and whether each join flow kept its order
   (stage: 0 before a RoleAssigned, 1 before the joiner's membership, 2
   before its Keyframe). */
struct burst_tally {
	uint64_t bytes, entries, fanout, broadcasts, members;
	unsigned keyframes, last_role, stage, n_obs;
};

static void burst_membership(struct burst_tally *b, const Ptg__Frame *f)
{
	size_t k = f->membership->n_controllers + f->membership->n_observers;

	b->entries += k;
	if (!f->target_attach_id) {
		b->broadcasts++;
		b->fanout += k * b->members;
		b->n_obs = (unsigned)f->membership->n_observers;
	} else {
		assert_int_equal(f->target_attach_id, b->last_role);
	}
	if (b->stage == 1) {
		/* The joiner's step: the list includes it. */
		assert_int_equal(k, b->members);
		b->stage = 2;
	}
}

static void burst_count(struct burst_tally *b, const Ptg__LinkMessage *m)
{
	const Ptg__Frame *f;

	b->bytes += ptg__link_message__get_packed_size(m) + 4;
	if (m->msg_case != PTG__LINK_MESSAGE__MSG_FRAME)
		return;
	f = m->frame;
	if (f->kind_case == PTG__FRAME__KIND_ROLE_ASSIGNED) {
		assert_int_equal(b->stage, 0);
		b->last_role = (unsigned)f->target_attach_id;
		b->members++;
		b->stage = 1;
	} else if (f->kind_case == PTG__FRAME__KIND_MEMBERSHIP) {
		burst_membership(b, f);
	} else if (f->kind_case == PTG__FRAME__KIND_KEYFRAME && f->target_attach_id) {
		assert_int_equal(b->stage, 2);
		assert_int_equal(f->target_attach_id, b->last_role);
		b->keyframes++;
		b->stage = 0;
	}
}

static void test_join_burst(void **state)
{
	static const char *const args[] = {"--max-observers", "4096", NULL};
	static const char *const idle[] = {"/bin/sleep", "600", NULL};
	struct fixture *fx = *state;
	struct create_req cr = {idle, NULL, 80, 24, PTG__POLICY__POLICY_KEEP_RUNNING};
	unsigned n =
	    getenv("PTG_IT_JOINS") ? (unsigned)atoi(getenv("PTG_IT_JOINS")) : 300;
	struct burst_tally b = {0};
	struct attach_req a = {
	    .role = PTG__ROLE__ROLE_OBSERVER, .label = "burst", .scopes = SC_OBSERVE};
	int64_t t0, elapsed;
	struct peer *p;
	char sid[FLOWS_SID_MAX];

	p = start_session(fx, args, &cr, sid);
	a.session = sid;
	t0 = time_mono_ms();
	for (unsigned i = 1; i <= n; i++) {
		a.attach_id = i;
		send_attach(p, &a);
	}
	/* Until every joiner has its Keyframe and a broadcast shows all n. */
	while (b.keyframes < n || b.n_obs < n)
		burst_count(&b, peer_must_recv(p, STEP_MS, "the burst's frames"));
	elapsed = time_mono_ms() - t0;
	print_message("%u joins: %lld ms, %llu bytes, %llu MembershipChanged broadcasts, "
		      "%llu member entries on the link, %llu delivered to members\n",
		      n, (long long)elapsed, (unsigned long long)b.bytes,
		      (unsigned long long)b.broadcasts, (unsigned long long)b.entries,
		      (unsigned long long)b.fanout);
	/* One broadcast per join before; now a few per 50 ms window. */
	if (b.broadcasts > n / 2)
		fail_msg("%llu broadcasts for %u joins", (unsigned long long)b.broadcasts,
			 n);
}

/* ---- replay of 1,000 frames ---- */

/* A client back after 1,000 frames gets them and its Keyframe quickly
   (target: under 50 ms in a release build; the bound here is loose for
   sanitizers and a loaded machine, the time is printed). */
static void test_replay_thousand(void **state)
{
	static const char *const py[] = {"python3", "-u", "-c",
					 "import sys, time\n"
					 "sys.stdin.readline()\n"
					 "for i in range(1400):\n"
					 "    print('line %d of the replay test, padded "
					 "to look like real output' % i)\n"
					 "    time.sleep(0.0004)\n"
					 "sys.stdout.write('replay-' + 'done\\n')\n"
					 "time.sleep(600)\n",
					 NULL};
	struct fixture *fx = *state;
	struct create_req cr = {py, NULL, 80, 24, PTG__POLICY__POLICY_KEEP_RUNNING};
	struct attach_req a = {.attach_id = 7,
			       .role = PTG__ROLE__ROLE_OBSERVER,
			       .label = "back",
			       .scopes = SC_OBSERVE,
			       .has_replay = 1};
	Ptg__SessionInfo *info;
	unsigned replayed = 0, live = 0;
	Ptg__LinkMessage *m;
	struct peer *p, *q;
	struct joined j;
	int64_t t0, took;
	char sid[FLOWS_SID_MAX];

	p = start_session(fx, NULL, &cr, sid);
	join_simple(p, sid, 1, PTG__ROLE__ROLE_CONTROLLER, "ctl", &j);
	send_input(p, sid, 1, "go\n", NULL);
	wait_output(p, "replay-done", 60000);
	info = get_session(p, sid);
	if (info->current_sequence < 1010)
		skip(); /* the output came in too few frames to measure */
	q = peer_open(fx);
	a.session = sid;
	a.replay_from = info->current_sequence - 1000;
	t0 = time_mono_ms();
	send_attach(q, &a);
	for (;;) {
		m = peer_must_recv(q, STEP_MS, "the replay");
		/* The fresh Keyframe; replayed cadence ones are older. */
		if (m->msg_case == PTG__LINK_MESSAGE__MSG_FRAME &&
		    m->frame->kind_case == PTG__FRAME__KIND_KEYFRAME &&
		    m->frame->sequence > info->current_sequence)
			break;
		/* q's link carries only this attachment. Frames up to the
		   sequence GetSession saw are the 1,000 asked for; a later one
		   (output still draining when GetSession ran) is newer and
		   must come after all of them. */
		if (m->msg_case != PTG__LINK_MESSAGE__MSG_FRAME ||
		    m->frame->kind_case == PTG__FRAME__KIND_ROLE_ASSIGNED)
			continue;
		if (m->frame->sequence <= info->current_sequence) {
			assert_int_equal(live, 0);
			assert_int_equal(m->frame->sequence,
					 a.replay_from + 1 + replayed);
			replayed++;
		} else {
			live++;
		}
	}
	took = time_mono_ms() - t0;
	print_message("replay of %u frames and the Keyframe: %lld ms (%u newer)\n",
		      replayed, (long long)took, live);
	assert_int_equal(replayed, 1000);
	assert_true(took < 1000);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    FLOWS_TEST(test_controller_lifecycle), FLOWS_TEST(test_reconnect_replay),
	    FLOWS_TEST(test_replay_out_of_range),  FLOWS_TEST(test_observer_mid_session),
	    FLOWS_TEST(test_join_burst),	   FLOWS_TEST(test_replay_thousand),
	};

	return FLOWS_RUN("integration.flows_join", tests);
}
