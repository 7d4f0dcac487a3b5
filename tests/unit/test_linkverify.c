/* unit: gateway */
/* gateway/linkverify.c: link openings are checked on a worker thread at a
   lower CPU priority than the loop's; while checks are under way the loop
   sleeps (no turn without an event); results come back at most per_turn
   a turn, and a client's ready input is served in the first turn whatever
   the number of results waiting; a held worker checks nothing. Turns are
   counted by a hook added before the module's, so no assertion depends on
   the machine's speed; waits for the worker are bounded guards only. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ev.h"
#include "linkverify.h"

#define PER_TURN 8
#define GUARD_MS 60000 /* a hang guard, never a measure */

struct fixture {
	struct ev_loop *loop;
	struct linkverify *v;
	pthread_t loop_thread;
	/* the check's record, written on the worker */
	atomic_int checked, off_loop, nice_seen;
	/* a gate the check waits at while closed */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int gate_closed;
	/* the loop's side */
	size_t turn, delivered, want, in_turn, most_in_turn;
	size_t input_turn; /* the turn a ready pipe was served in, 0 before */
	int last_rc;
};

static struct fixture fx;

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

static int check(void *ctx, const uint8_t *in, size_t len, struct linkcred *out)
{
	struct fixture *f = ctx;

	pthread_mutex_lock(&f->mu);
	while (f->gate_closed)
		pthread_cond_wait(&f->cv, &f->mu);
	pthread_mutex_unlock(&f->mu);
	if (!pthread_equal(pthread_self(), f->loop_thread))
		atomic_store(&f->off_loop, 1);
	atomic_store(&f->nice_seen, getpriority(PRIO_PROCESS, (id_t)gettid()));
	memset(out, 0, sizeof(*out));
	snprintf(out->instance_id, sizeof(out->instance_id), "%.*s", (int)len,
		 (const char *)in);
	atomic_fetch_add(&f->checked, 1);
	return 1;
}

static void done(void *user, void *tag, int rc, const struct linkcred *c)
{
	struct fixture *f = user;

	(void)tag;
	(void)c;
	f->last_rc = rc;
	f->delivered++;
	f->in_turn++;
	if (f->in_turn > f->most_in_turn)
		f->most_in_turn = f->in_turn;
	if (f->delivered == f->want)
		ev_loop_stop(f->loop);
}

/* Added before the module's hook: each turn starts here. */
static void count_turn(void *user)
{
	struct fixture *f = user;

	f->turn++;
	f->in_turn = 0;
}

static void set_gate(int closed)
{
	pthread_mutex_lock(&fx.mu);
	fx.gate_closed = closed;
	pthread_cond_broadcast(&fx.cv);
	pthread_mutex_unlock(&fx.mu);
}

static int setup(void **state)
{
	(void)state;
	memset(&fx, 0, sizeof(fx));
	pthread_mutex_init(&fx.mu, NULL);
	pthread_cond_init(&fx.cv, NULL);
	fx.loop_thread = pthread_self();
	fx.loop = ev_loop_new();
	ev_hook_add(fx.loop, count_turn, &fx);
	fx.v = linkverify_new(fx.loop, check, &fx, done, &fx, PER_TURN);
	return fx.loop && fx.v ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	set_gate(0);
	linkverify_free(fx.v);
	ev_loop_free(fx.loop);
	pthread_cond_destroy(&fx.cv);
	pthread_mutex_destroy(&fx.mu);
	return 0;
}

static void on_guard(struct ev_timer *t, void *user)
{
	(void)t;
	ev_loop_stop(user);
}

/* Runs the loop until want results are in, the guard failing the test. */
static void run_until_delivered(size_t want)
{
	struct ev_timer *guard = ev_timer_new(fx.loop, GUARD_MS, 0, on_guard, fx.loop);

	fx.want = want;
	if (fx.delivered < want)
		ev_loop_run(fx.loop);
	ev_timer_free(guard);
	assert_int_equal(fx.delivered, want);
}

static void submit(size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char id[32];
		int len = snprintf(id, sizeof(id), "i-%zu", i);

		linkverify_submit(fx.v, &fx, (const uint8_t *)id, (size_t)len);
	}
}

static void wait_checked(int n)
{
	for (int ms = 0; atomic_load(&fx.checked) < n && ms < GUARD_MS; ms++)
		sleep_ms(1);
	assert_int_equal(atomic_load(&fx.checked), n);
}

static void test_checked_off_the_loop_at_a_lower_priority(void **state)
{
	int base, want;

	(void)state;
	errno = 0;
	base = getpriority(PRIO_PROCESS, 0);
	want = base + LINKVERIFY_NICE > 19 ? 19 : base + LINKVERIFY_NICE;
	submit(1);
	run_until_delivered(1);
	assert_int_equal(fx.last_rc, 1);
	assert_true(atomic_load(&fx.off_loop));
	assert_int_equal(atomic_load(&fx.nice_seen), want);
	/* the loop's own thread kept its priority */
	assert_int_equal(getpriority(PRIO_PROCESS, (id_t)gettid()), base);
}

static void on_stop(struct ev_timer *t, void *user)
{
	(void)t;
	ev_loop_stop(user);
}

/* While every check waits at the gate, the loop has nothing to do and
   sleeps: the turns it makes are the few its own timer causes, however
   many checks are under way (a loop that polled without blocking while
   openings waited made thousands in the same time). */
static void test_loop_sleeps_while_checks_run(void **state)
{
	struct ev_timer *stop;
	size_t turns;

	(void)state;
	set_gate(1);
	submit(200);
	stop = ev_timer_new(fx.loop, 200, 0, on_stop, fx.loop);
	fx.turn = 0;
	ev_loop_run(fx.loop);
	turns = fx.turn;
	ev_timer_free(stop);
	assert_int_equal(fx.delivered, 0);
	/* about 2 (the timer's turn, then the one that stops); a loop that
	   polled without blocking would make thousands */
	assert_in_range(turns, 1, 10);
	set_gate(0);
	run_until_delivered(200);
}

static void on_input(struct ev_io *io, int fd, unsigned events, void *user)
{
	char c;
	ssize_t n = read(fd, &c, 1);

	(void)io;
	(void)events;
	(void)user;
	if (n == 1 && !fx.input_turn)
		fx.input_turn = fx.turn;
}

/* All results ready before the loop runs: at most PER_TURN are handed
   over a turn, and a client's input ready at the same time is served in
   the first turn, whatever their number. */
static void results_bounded_with(size_t n)
{
	int p[2];
	struct ev_io *io;
	char c = 'x';

	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], &c, 1), 1);
	io = ev_io_new(fx.loop, p[0], EV_READ, on_input, NULL);
	submit(n);
	wait_checked((int)n);
	fx.turn = 0;
	run_until_delivered(n);
	assert_int_equal(fx.input_turn, 1);
	assert_in_range(fx.most_in_turn, 1, PER_TURN);
	assert_true(fx.turn >= (n + PER_TURN - 1) / PER_TURN);
	ev_io_free(io);
	close(p[0]);
	close(p[1]);
}

static void test_results_bounded_per_turn_100(void **state)
{
	(void)state;
	results_bounded_with(100);
}

static void test_results_bounded_per_turn_1000(void **state)
{
	(void)state;
	results_bounded_with(1000);
}

/* A held worker starts no check (its context may be replaced); release
   lets it go on. */
static void test_hold_stops_checks(void **state)
{
	(void)state;
	linkverify_hold(fx.v);
	submit(3);
	sleep_ms(50);
	assert_int_equal(atomic_load(&fx.checked), 0);
	linkverify_release(fx.v);
	run_until_delivered(3);
}

/* Checks queued behind a closed gate, and results the loop never took,
   are dropped by linkverify_free (the teardown opens the gate first;
   LeakSanitizer sees anything left). */
static void test_free_with_work_left(void **state)
{
	(void)state;
	set_gate(1);
	submit(50);
	linkverify_submit(fx.v, &fx, (const uint8_t *)"x", 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_checked_off_the_loop_at_a_lower_priority,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_loop_sleeps_while_checks_run, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_results_bounded_per_turn_100, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_results_bounded_per_turn_1000, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_hold_stops_checks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_free_with_work_left, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
