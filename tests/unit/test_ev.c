/* unit: shared */
/* ev: io readiness, timers, signals, hooks, and frees from inside
   callbacks (including of an io whose event is later in the same batch);
   timers in deadline order, never early, cancelled, re-armed and freed
   from callbacks, unable to starve I/O, and costing no fd. */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ev.h"
#include "timeutil.h"

struct ctx {
	struct ev_loop *loop;
	int count;
	int count2;
	unsigned events;
	int fd;
};

static void guard_cb(struct ev_timer *t, void *user)
{
	fail_msg("test timed out in the loop");
}

/* Every test runs its loop under a guard so a hang fails, not blocks;
   far beyond what any test needs on a loaded machine. */
static struct ev_loop *loop_with_guard(struct ev_timer **guard)
{
	struct ev_loop *loop = ev_loop_new();

	assert_non_null(loop);
	*guard = ev_timer_new(loop, 60000, 0, guard_cb, NULL);
	assert_non_null(*guard);
	return loop;
}

static void pipe_read_cb(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct ctx *c = user;
	char ch;

	c->events = events;
	assert_int_equal(read(fd, &ch, 1), 1);
	c->count += ch;
	if (c->count >= 'a' + 'b')
		ev_loop_stop(c->loop);
}

static void test_io_pipe(void **state)
{
	struct ev_timer *guard;
	struct ctx c = {0};
	struct ev_io *io;
	int p[2];

	c.loop = loop_with_guard(&guard);
	assert_int_equal(pipe(p), 0);
	io = ev_io_new(c.loop, p[0], EV_READ, pipe_read_cb, &c);
	assert_non_null(io);
	assert_int_equal(ev_io_events(io), EV_READ);
	assert_int_equal(write(p[1], "ab", 2), 2);
	assert_int_equal(ev_loop_run(c.loop), 0);
	assert_int_equal(c.count, 'a' + 'b');
	assert_int_equal(c.events, EV_READ);
	ev_io_free(io);
	ev_timer_free(guard);
	ev_loop_free(c.loop);
	close(p[0]);
	close(p[1]);
}

static void write_cb(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct ctx *c = user;

	c->events = events;
	c->count++;
	ev_loop_stop(c->loop);
}

static void test_io_write_and_hangup(void **state)
{
	struct ev_timer *guard;
	struct ctx c = {0};
	struct ev_io *io;
	int p[2];

	c.loop = loop_with_guard(&guard);
	assert_int_equal(pipe(p), 0);
	io = ev_io_new(c.loop, p[1], EV_WRITE, write_cb, &c);
	assert_int_equal(ev_loop_run(c.loop), 0);
	assert_int_equal(c.events, EV_WRITE);
	ev_io_free(io);
	/* A hang-up reaches the reader as EV_READ. */
	io = ev_io_new(c.loop, p[0], EV_READ, write_cb, &c);
	close(p[1]);
	assert_int_equal(ev_loop_run(c.loop), 0);
	assert_true(c.events & EV_READ);
	assert_int_equal(c.count, 2);
	ev_io_free(io);
	ev_timer_free(guard);
	ev_loop_free(c.loop);
	close(p[0]);
}

static void stop_timer_cb(struct ev_timer *t, void *user)
{
	ev_loop_stop(user);
}

static void count_timer_cb(struct ev_timer *t, void *user)
{
	((struct ctx *)user)->count++;
}

static void test_io_disabled_not_dispatched(void **state)
{
	struct ev_timer *guard, *stop;
	struct ctx c = {0};
	struct ev_io *io;
	int p[2];

	c.loop = loop_with_guard(&guard);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	io = ev_io_new(c.loop, p[0], 0, write_cb, &c);
	assert_non_null(io);
	stop = ev_timer_new(c.loop, 30, 0, stop_timer_cb, c.loop);
	assert_int_equal(ev_loop_run(c.loop), 0);
	assert_int_equal(c.count, 0);
	ev_io_set(io, EV_READ);
	assert_int_equal(ev_loop_run(c.loop), 0);
	assert_int_equal(c.count, 1);
	ev_io_set(io, 0);
	assert_int_equal(ev_io_events(io), 0);
	ev_timer_arm(stop, 30, 0);
	assert_int_equal(ev_loop_run(c.loop), 0);
	assert_int_equal(c.count, 1);
	ev_io_free(io);
	ev_timer_free(stop);
	ev_timer_free(guard);
	ev_loop_free(c.loop);
	close(p[0]);
	close(p[1]);
}

static void test_io_bad_fd(void **state)
{
	struct ev_loop *loop = ev_loop_new();

	assert_null(ev_io_new(loop, 12345, EV_READ, write_cb, NULL));
	ev_loop_free(loop);
}

static void test_timers(void **state)
{
	struct ev_timer *guard, *once, *rep, *stop, *never;
	struct ctx c1 = {0}, c2 = {0}, c3 = {0};
	int64_t t0 = time_mono_ms();

	c1.loop = loop_with_guard(&guard);
	once = ev_timer_new(c1.loop, 10, 0, count_timer_cb, &c1);
	rep = ev_timer_new(c1.loop, 10, 10, count_timer_cb, &c2);
	never = ev_timer_new(c1.loop, -1, 0, count_timer_cb, &c3);
	stop = ev_timer_new(c1.loop, 120, 0, stop_timer_cb, c1.loop);
	assert_true(ev_timer_armed(once));
	assert_false(ev_timer_armed(never));
	assert_int_equal(ev_loop_run(c1.loop), 0);
	assert_true(time_mono_ms() - t0 >= 120);
	assert_int_equal(c1.count, 1);
	assert_false(ev_timer_armed(once));
	assert_true(ev_timer_armed(rep));
	/* At most once per 10 ms period up to the stop; at least once. A
	   loaded machine may run the loop once in those 120 ms, and missed
	   periods collapse into one call (test_timer_repeat counts calls). */
	assert_true(c2.count >= 1 && c2.count <= 12);
	assert_int_equal(c3.count, 0);
	/* A disarmed timer stays silent; re-armed with 0 it fires at once. */
	ev_timer_disarm(rep);
	assert_false(ev_timer_armed(rep));
	c2.count = 0;
	ev_timer_arm(once, 0, 0);
	ev_timer_arm(stop, 40, 0);
	assert_int_equal(ev_loop_run(c1.loop), 0);
	assert_int_equal(c1.count, 2);
	assert_int_equal(c2.count, 0);
	ev_timer_free(once);
	ev_timer_free(rep);
	ev_timer_free(never);
	ev_timer_free(stop);
	ev_timer_free(guard);
	ev_loop_free(c1.loop);
}

static void self_free_timer_cb(struct ev_timer *t, void *user)
{
	struct ctx *c = user;

	c->count++;
	ev_timer_free(t);
	/* A second free in the same callback is harmless. */
	ev_timer_free(t);
	ev_loop_stop(c->loop);
}

static void self_free_io_cb(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct ctx *c = user;

	c->count2++;
	ev_io_free(io);
}

static void test_free_inside_callbacks(void **state)
{
	struct ev_timer *guard;
	struct ctx c = {0};
	int p[2];

	c.loop = loop_with_guard(&guard);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_non_null(ev_io_new(c.loop, p[0], EV_READ, self_free_io_cb, &c));
	assert_non_null(ev_timer_new(c.loop, 0, 5, self_free_timer_cb, &c));
	assert_int_equal(ev_loop_run(c.loop), 0);
	assert_int_equal(c.count, 1);
	assert_int_equal(c.count2, 1);
	ev_timer_free(guard);
	ev_loop_free(c.loop);
	close(p[0]);
	close(p[1]);
}

/* Each frees the other: whichever runs first, the second event of the
   same batch must not be dispatched (ASan would see it if it were). */
struct pair {
	struct ev_loop *loop;
	struct ev_io *io[2];
	int rfd[2];
	int count;
};

static void free_other_cb(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct pair *p = user;

	p->count++;
	ev_io_free(p->io[fd == p->rfd[0] ? 1 : 0]);
	ev_io_free(io);
}

static void test_free_other_in_same_batch(void **state)
{
	struct ev_timer *guard, *stop;
	struct pair pr = {0};
	int p[2], q[2];

	pr.loop = loop_with_guard(&guard);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(pipe(q), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(write(q[1], "x", 1), 1);
	pr.rfd[0] = p[0];
	pr.rfd[1] = q[0];
	pr.io[0] = ev_io_new(pr.loop, p[0], EV_READ, free_other_cb, &pr);
	pr.io[1] = ev_io_new(pr.loop, q[0], EV_READ, free_other_cb, &pr);
	stop = ev_timer_new(pr.loop, 30, 0, stop_timer_cb, pr.loop);
	assert_int_equal(ev_loop_run(pr.loop), 0);
	assert_int_equal(pr.count, 1);
	ev_timer_free(stop);
	ev_timer_free(guard);
	ev_loop_free(pr.loop);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

/* Which fds' callbacks ran, in order. */
struct order_log {
	struct ev_loop *loop;
	int fds[8];
	int n, want;
};

static void log_order_cb(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct order_log *lg = user;
	char c;

	(void)events;
	assert_int_equal(read(fd, &c, 1), 1);
	lg->fds[lg->n++] = fd;
	if (lg->n == lg->want)
		ev_loop_stop(lg->loop);
	ev_io_free(io);
}

/* Ready in the same turn, an urgent io runs before the others whatever
   epoll's order (the sidecar reads a keystroke's link and a typing
   session's PTY before a flood's batch); each still runs once. */
static void test_urgent_io_runs_first(void **state)
{
	struct ev_timer *guard;
	struct order_log lg = {0};
	int p[4][2];

	lg.loop = loop_with_guard(&guard);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pipe(p[i]), 0);
		assert_int_equal(write(p[i][1], "x", 1), 1);
	}
	lg.want = 4;
	for (int i = 0; i < 4; i++) {
		struct ev_io *io =
		    ev_io_new(lg.loop, p[i][0], EV_READ, log_order_cb, &lg);

		/* The last two registered are the urgent ones. */
		ev_io_set_urgent(io, i >= 2);
	}
	assert_int_equal(ev_loop_run(lg.loop), 0);
	assert_int_equal(lg.n, 4);
	assert_true(lg.fds[0] == p[2][0] || lg.fds[0] == p[3][0]);
	assert_true(lg.fds[1] == p[2][0] || lg.fds[1] == p[3][0]);
	assert_true(lg.fds[2] == p[0][0] || lg.fds[2] == p[1][0]);
	assert_true(lg.fds[3] == p[0][0] || lg.fds[3] == p[1][0]);
	ev_timer_free(guard);
	ev_loop_free(lg.loop);
	for (int i = 0; i < 4; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
}

/* ---- timers on the loop's heap ---- */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Counts turns: the loop runs its hooks once before every wait. */
static void turn_hook(void *user)
{
	(*(int *)user)++;
}

struct ordered {
	struct ev_loop *loop;
	struct ev_timer *t;
	int64_t after_ms;
	int64_t armed_from;  /* ns just before arming */
	int64_t armed_until; /* ns just after arming */
	int id;
	int *fired; /* shared: the ids in firing order */
	int *nfired;
	int total;
};

static void ordered_cb(struct ev_timer *t, void *user)
{
	struct ordered *o = user;

	/* Never early: the delay has passed since the arming began. */
	assert_true(now_ns() >= o->armed_from + o->after_ms * 1000000);
	o->fired[(*o->nfired)++] = o->id;
	if (*o->nfired == o->total)
		ev_loop_stop(o->loop);
}

/* Fired k before j: k's deadline was not certainly later than j's, and
   among equal delays the one armed first fired first. */
static void assert_fired_in_order(const struct ordered *os, const int *fired, int n)
{
	int i;

	for (i = 1; i < n; i++) {
		const struct ordered *k = &os[fired[i - 1]], *j = &os[fired[i]];

		assert_false(k->armed_from + k->after_ms * 1000000 >
			     j->armed_until + j->after_ms * 1000000);
		if (k->after_ms == j->after_ms)
			assert_true(k->id < j->id);
	}
}

static void test_timer_order_random(void **state)
{
	enum { N = 2000 };
	static struct ordered os[N];
	static int fired[N];
	struct ev_timer *guard;
	struct ev_loop *loop = loop_with_guard(&guard);
	int nfired = 0, i;

	srand(42);
	for (i = 0; i < N; i++) {
		os[i] = (struct ordered){
		    .loop = loop, .id = i, .fired = fired, .nfired = &nfired, .total = N};
		os[i].after_ms = rand() % 300; /* ~7 timers per ms: many ties */
		os[i].armed_from = now_ns();
		os[i].t = ev_timer_new(loop, os[i].after_ms, 0, ordered_cb, &os[i]);
		os[i].armed_until = now_ns();
	}
	/* Disarming and re-arming moves a timer to the back of its ties. */
	for (i = 0; i < N; i += 7) {
		ev_timer_disarm(os[i].t);
		assert_false(ev_timer_armed(os[i].t));
	}
	for (i = 0; i < N; i += 7) {
		os[i].armed_from = now_ns();
		ev_timer_arm(os[i].t, os[i].after_ms, 0);
		os[i].armed_until = now_ns();
	}
	assert_int_equal(ev_loop_run(loop), 0);
	assert_int_equal(nfired, N);
	/* Re-armed ones are checked on their own, armed after the rest. */
	{
		static int first[N], again[N];
		int nf = 0, na = 0;

		for (i = 0; i < N; i++) {
			if (fired[i] % 7 == 0)
				again[na++] = fired[i];
			else
				first[nf++] = fired[i];
		}
		assert_fired_in_order(os, first, nf);
		assert_fired_in_order(os, again, na);
	}
	for (i = 0; i < N; i++) {
		assert_false(ev_timer_armed(os[i].t));
		ev_timer_free(os[i].t);
	}
	ev_timer_free(guard);
	ev_loop_free(loop);
}

/* A scripted turn: every timer below is due on the first turn (the test
   sleeps before running the loop), and "first" fires first. */
struct script {
	struct ev_loop *loop;
	struct ev_timer *first, *cancelled, *moved, *freed, *again, *stop;
	int turns;
	int n_first, n_cancelled, n_moved, n_freed, n_again;
	int turn_again_armed, turn_again_fired;
	int64_t moved_at;
};

static void script_first_cb(struct ev_timer *t, void *user)
{
	struct script *s = user;

	s->n_first++;
	if (s->n_first > 1)
		return;
	ev_timer_disarm(s->cancelled); /* due later in this turn: dropped */
	ev_timer_arm(s->moved, 60, 0); /* due now, moved into the future */
	s->moved_at = now_ns();
	ev_timer_free(s->freed);      /* due later in this turn: never runs */
	ev_timer_arm(s->again, 0, 0); /* due again, but not in this turn */
	s->turn_again_armed = s->turns;
	ev_timer_arm(t, 0, 0); /* its own re-arm: next turn */
	assert_true(ev_timer_armed(t));
}

static void script_count_cb(struct ev_timer *t, void *user)
{
	struct script *s = user;

	if (t == s->cancelled)
		s->n_cancelled++;
	else if (t == s->freed)
		s->n_freed++;
	else if (t == s->again) {
		s->n_again++;
		s->turn_again_fired = s->turns;
	}
}

static void script_moved_cb(struct ev_timer *t, void *user)
{
	struct script *s = user;

	s->n_moved++;
	assert_true(now_ns() - s->moved_at >= 60 * 1000000);
	ev_loop_stop(s->loop);
}

static void test_timer_cancel_rearm_free_in_callbacks(void **state)
{
	struct ev_timer *guard;
	struct script s = {0};

	s.loop = loop_with_guard(&guard);
	ev_hook_add(s.loop, turn_hook, &s.turns);
	s.first = ev_timer_new(s.loop, 1, 0, script_first_cb, &s);
	s.cancelled = ev_timer_new(s.loop, 2, 0, script_count_cb, &s);
	s.moved = ev_timer_new(s.loop, 2, 0, script_moved_cb, &s);
	s.freed = ev_timer_new(s.loop, 2, 0, script_count_cb, &s);
	s.again = ev_timer_new(s.loop, 2, 0, script_count_cb, &s);
	usleep(10 * 1000);
	assert_int_equal(ev_loop_run(s.loop), 0);
	assert_int_equal(s.n_first, 2);
	assert_int_equal(s.n_cancelled, 0);
	assert_false(ev_timer_armed(s.cancelled));
	assert_int_equal(s.n_freed, 0);
	assert_int_equal(s.n_moved, 1);
	assert_int_equal(s.n_again, 1);
	assert_true(s.turn_again_fired > s.turn_again_armed);
	ev_hook_remove(s.loop, turn_hook, &s.turns);
	ev_timer_free(s.first);
	ev_timer_free(s.cancelled);
	ev_timer_free(s.moved);
	ev_timer_free(s.again);
	ev_timer_free(guard);
	ev_loop_free(s.loop);
}

struct selffree {
	struct ev_loop *loop;
	struct ev_timer *a, *b;
	int n_a, n_b;
};

/* a frees itself, and b (due in the same turn) still fires once. */
static void selffree_a_cb(struct ev_timer *t, void *user)
{
	struct selffree *f = user;

	f->n_a++;
	ev_timer_arm(t, 0, 0);
	ev_timer_free(t);
	ev_timer_arm(t, 0, 0); /* after free: ignored, no use-after-free */
}

static void selffree_b_cb(struct ev_timer *t, void *user)
{
	struct selffree *f = user;

	f->n_b++;
	ev_timer_free(t);
	ev_loop_stop(f->loop);
}

static void test_timer_free_in_own_callback(void **state)
{
	struct ev_timer *guard, *stop;
	struct selffree f = {0};

	f.loop = loop_with_guard(&guard);
	f.a = ev_timer_new(f.loop, 1, 1, selffree_a_cb, &f);
	f.b = ev_timer_new(f.loop, 1, 0, selffree_b_cb, &f);
	usleep(5 * 1000);
	assert_int_equal(ev_loop_run(f.loop), 0);
	/* Nothing fires after both freed themselves. */
	stop = ev_timer_new(f.loop, 30, 0, stop_timer_cb, f.loop);
	assert_int_equal(ev_loop_run(f.loop), 0);
	assert_int_equal(f.n_a, 1);
	assert_int_equal(f.n_b, 1);
	ev_timer_free(stop);
	ev_timer_free(guard);
	ev_loop_free(f.loop);
}

struct repeat {
	struct ev_loop *loop;
	int n;
	int64_t t0;
};

static void repeat_cb(struct ev_timer *t, void *user)
{
	struct repeat *r = user;

	/* Still armed inside its callback: the next period is pending. */
	assert_true(ev_timer_armed(t));
	/* The k-th call (k < 5) is due at 5 + 20 * k ms. */
	if (r->n < 5)
		assert_true(now_ns() - r->t0 >= (5 + 20 * r->n) * INT64_C(1000000));
	if (++r->n == 5)
		ev_timer_arm(t, 10, 40); /* new period from its own callback */
	if (r->n == 7) {
		ev_timer_disarm(t);
		ev_loop_stop(r->loop);
	}
}

static void test_timer_repeat(void **state)
{
	struct ev_timer *guard, *t, *stop;
	struct repeat r = {0};

	r.loop = loop_with_guard(&guard);
	r.t0 = now_ns();
	t = ev_timer_new(r.loop, 5, 20, repeat_cb, &r);
	assert_int_equal(ev_loop_run(r.loop), 0);
	/* 5 + 4 * 20 ms to the 5th call, then 10 + 40 ms. */
	assert_true(now_ns() - r.t0 >= (85 + 50) * INT64_C(1000000));
	assert_int_equal(r.n, 7);
	assert_false(ev_timer_armed(t));
	/* Disarmed from its own callback: it stays silent. */
	stop = ev_timer_new(r.loop, 60, 0, stop_timer_cb, r.loop);
	assert_int_equal(ev_loop_run(r.loop), 0);
	assert_int_equal(r.n, 7);
	ev_timer_free(stop);
	ev_timer_free(t);
	ev_timer_free(guard);
	ev_loop_free(r.loop);
}

struct starve {
	struct ev_loop *loop;
	int turns;
	int n_zero;
	int max_per_turn;
	int last_turn, in_turn;
	int wfd;
	int read;
};

/* Re-arms itself at 0 ms forever: it may fire once per turn, no more. */
static void zero_cb(struct ev_timer *t, void *user)
{
	struct starve *s = user;

	s->n_zero++;
	s->in_turn = s->last_turn == s->turns ? s->in_turn + 1 : 1;
	s->last_turn = s->turns;
	if (s->in_turn > s->max_per_turn)
		s->max_per_turn = s->in_turn;
	ev_timer_arm(t, 0, 0);
}

static void starve_write_cb(struct ev_timer *t, void *user)
{
	struct starve *s = user;

	assert_int_equal(write(s->wfd, "x", 1), 1);
}

static void starve_read_cb(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct starve *s = user;
	char ch;

	assert_int_equal(read(fd, &ch, 1), 1);
	s->read = 1;
	ev_loop_stop(s->loop);
}

static void test_zero_ms_timer_does_not_starve_io(void **state)
{
	struct ev_timer *guard, *zero, *writer;
	struct starve s = {0};
	struct ev_io *io;
	int p[2];

	s.loop = loop_with_guard(&guard);
	assert_int_equal(pipe(p), 0);
	s.wfd = p[1];
	ev_hook_add(s.loop, turn_hook, &s.turns);
	io = ev_io_new(s.loop, p[0], EV_READ, starve_read_cb, &s);
	zero = ev_timer_new(s.loop, 0, 0, zero_cb, &s);
	writer = ev_timer_new(s.loop, 20, 0, starve_write_cb, &s);
	assert_int_equal(ev_loop_run(s.loop), 0);
	assert_int_equal(s.read, 1);
	assert_true(s.n_zero > 1);
	assert_int_equal(s.max_per_turn, 1);
	/* Same with a 1 ms period that is always overdue. */
	ev_timer_arm(zero, 0, 1);
	ev_timer_arm(writer, 20, 0);
	s.read = 0;
	assert_int_equal(ev_loop_run(s.loop), 0);
	assert_int_equal(s.read, 1);
	ev_hook_remove(s.loop, turn_hook, &s.turns);
	ev_io_free(io);
	ev_timer_free(zero);
	ev_timer_free(writer);
	ev_timer_free(guard);
	ev_loop_free(s.loop);
	close(p[0]);
	close(p[1]);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the DIR's own fd */
}

static void test_timers_cost_no_fd(void **state)
{
	enum { N = 10000 };
	static struct ev_timer *ts[N];
	struct ev_timer *guard, *stop;
	struct ctx c = {0};
	struct ev_loop *loop;
	int before, i;

	loop = loop_with_guard(&guard);
	before = count_fds();
	for (i = 0; i < N; i++) {
		/* A tenth due during the run, the rest far in the future. */
		ts[i] = ev_timer_new(loop, i % 10 ? 60000 + i : i % 20, 0, count_timer_cb,
				     &c);
		assert_non_null(ts[i]);
	}
	assert_int_equal(count_fds(), before);
	stop = ev_timer_new(loop, 40, 0, stop_timer_cb, loop);
	assert_int_equal(ev_loop_run(loop), 0);
	assert_int_equal(c.count, N / 10);
	assert_int_equal(count_fds(), before);
	for (i = 0; i < N; i++)
		ev_timer_free(ts[i]);
	ev_timer_free(stop);
	ev_timer_free(guard);
	ev_loop_free(loop);
}

struct when {
	struct ev_loop *loop;
	int64_t at;
};

static void when_cb(struct ev_timer *t, void *user)
{
	struct when *w = user;

	w->at = now_ns();
	ev_loop_stop(w->loop);
}

static void test_timer_timing(void **state)
{
	struct ev_timer *guard, *t, *huge;
	struct when w = {0};
	struct ctx c = {0};
	int64_t t0, ms;

	w.loop = loop_with_guard(&guard);
	/* Far beyond any clock: armed, never due, no overflow (UBSan). */
	huge = ev_timer_new(w.loop, INT64_MAX, INT64_MAX, count_timer_cb, &c);
	assert_true(ev_timer_armed(huge));
	t0 = now_ns();
	t = ev_timer_new(w.loop, 50, 0, when_cb, &w);
	assert_int_equal(ev_loop_run(w.loop), 0);
	ms = (w.at - t0) / 1000000;
	assert_true(w.at - t0 >= 50 * INT64_C(1000000));
	/* Not a second-granular wait (which would take 1000 ms); any bound
	   nearer 50 ms is one a loaded machine breaks. */
	assert_true(ms < 1000);
	assert_int_equal(c.count, 0);
	ev_timer_free(huge);
	ev_timer_free(t);
	ev_timer_free(guard);
	ev_loop_free(w.loop);
}

static void signal_cb(int signo, void *user)
{
	struct ctx *c = user;

	c->count++;
	c->fd = signo;
	ev_loop_stop(c->loop);
}

static void raise_timer_cb(struct ev_timer *t, void *user)
{
	kill(getpid(), SIGUSR2);
}

static void test_signals(void **state)
{
	struct ev_timer *guard, *t;
	struct ctx c = {0};

	c.loop = loop_with_guard(&guard);
	assert_int_equal(ev_signal_add(c.loop, SIGUSR1, signal_cb, &c), 0);
	assert_int_equal(ev_signal_add(c.loop, SIGUSR2, signal_cb, &c), 0);
	assert_true(ev_signal_add(c.loop, SIGUSR1, signal_cb, &c) < 0);
	assert_true(ev_signal_add(c.loop, 0, signal_cb, &c) < 0);
	/* Raised before the loop runs: held pending until it does. */
	raise(SIGUSR1);
	assert_int_equal(ev_loop_run(c.loop), 0);
	assert_int_equal(c.count, 1);
	assert_int_equal(c.fd, SIGUSR1);
	t = ev_timer_new(c.loop, 5, 0, raise_timer_cb, &c);
	assert_int_equal(ev_loop_run(c.loop), 0);
	assert_int_equal(c.count, 2);
	assert_int_equal(c.fd, SIGUSR2);
	ev_timer_free(t);
	ev_timer_free(guard);
	ev_loop_free(c.loop);
}

/* A signal the loop is told to ignore (no callback) is ignored, not
   blocked: raised while the loop lives or after it is freed, it kills
   nothing. Blocked, a SIGPIPE from a write after the loop had stopped
   (the gateway's last goodbyes) stayed pending until ev_loop_free
   unblocked it, and killed the gateway at its exit. */
static void test_an_ignored_signal_never_kills(void **state)
{
	struct ev_loop *loop = ev_loop_new();

	assert_int_equal(ev_signal_add(loop, SIGPIPE, NULL, NULL), 0);
	raise(SIGPIPE);
	ev_loop_free(loop);
	raise(SIGPIPE);
	signal(SIGPIPE, SIG_DFL);
}

static void hook_cb(void *user)
{
	struct ctx *c = user;

	if (++c->count == 3)
		ev_loop_stop(c->loop);
}

static void self_removing_hook(void *user)
{
	struct ctx *c = user;

	c->count2++;
	ev_hook_remove(c->loop, self_removing_hook, c);
}

static void test_hooks(void **state)
{
	struct ev_timer *guard, *tick;
	struct ctx c = {0}, other = {0};

	c.loop = loop_with_guard(&guard);
	tick = ev_timer_new(c.loop, 1, 1, count_timer_cb, &other);
	ev_hook_add(c.loop, self_removing_hook, &c);
	ev_hook_add(c.loop, hook_cb, &c);
	assert_int_equal(ev_loop_run(c.loop), 0);
	assert_int_equal(c.count, 3);
	/* The hook after a self-removed one still ran every time. */
	assert_int_equal(c.count2, 1);
	assert_true(other.count >= 1);
	ev_hook_remove(c.loop, hook_cb, &c);
	ev_timer_free(tick);
	ev_timer_free(guard);
	ev_loop_free(c.loop);
}

/* A hook with work left calls ev_loop_again: the next wait does not
   block, so twenty such turns pass before the only timer (10 s) fires.
   A blocking wait would sleep until it, and the next until the guard. */
struct again {
	struct ev_loop *loop;
	int turns;
};

static void again_hook(void *user)
{
	struct again *a = user;

	if (++a->turns < 20)
		ev_loop_again(a->loop);
	else
		ev_loop_stop(a->loop);
}

static void test_loop_again(void **state)
{
	struct ev_timer *guard;
	struct again a = {.loop = loop_with_guard(&guard)};
	struct ctx fired = {0};
	struct ev_timer *late = ev_timer_new(a.loop, 10000, 0, count_timer_cb, &fired);

	ev_hook_add(a.loop, again_hook, &a);
	assert_int_equal(ev_loop_run(a.loop), 0);
	assert_int_equal(a.turns, 20);
	assert_int_equal(fired.count, 0);
	ev_hook_remove(a.loop, again_hook, &a);
	ev_timer_free(late);
	ev_timer_free(guard);
	ev_loop_free(a.loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_io_pipe),
	    cmocka_unit_test(test_io_write_and_hangup),
	    cmocka_unit_test(test_io_disabled_not_dispatched),
	    cmocka_unit_test(test_io_bad_fd),
	    cmocka_unit_test(test_timers),
	    cmocka_unit_test(test_free_inside_callbacks),
	    cmocka_unit_test(test_free_other_in_same_batch),
	    cmocka_unit_test(test_urgent_io_runs_first),
	    cmocka_unit_test(test_timer_order_random),
	    cmocka_unit_test(test_timer_cancel_rearm_free_in_callbacks),
	    cmocka_unit_test(test_timer_free_in_own_callback),
	    cmocka_unit_test(test_timer_repeat),
	    cmocka_unit_test(test_zero_ms_timer_does_not_starve_io),
	    cmocka_unit_test(test_timers_cost_no_fd),
	    cmocka_unit_test(test_timer_timing),
	    cmocka_unit_test(test_signals),
	    cmocka_unit_test(test_an_ignored_signal_never_kills),
	    cmocka_unit_test(test_hooks),
	    cmocka_unit_test(test_loop_again),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
