/* unit: gateway */
/* gateway/linkverify.c: the worker thread runs its own loop at a lower
   CPU priority than the main loop's; while nothing is posted the main
   loop sleeps (no turn without an event); posted items come back in order
   at most per_turn a turn, and a client's ready input is served in the
   first turn whatever the number of items waiting; items never handed
   over are dropped at free. Turns are counted by a hook added before the
   module's, so no assertion depends on the machine's speed; waits for the
   worker are bounded guards only. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ev.h"
#include "linkverify.h"

#define PER_TURN 8
#define GUARD_MS 60000 /* a hang guard, never a measure */

struct fixture {
	struct ev_loop *loop;
	struct linkverify *v;
	pthread_t loop_thread;
	/* the worker's record */
	atomic_int posted, off_loop, nice_seen, dropped;
	int kick;	       /* an eventfd watched on the worker's loop */
	struct ev_io *kick_io; /* on the worker's loop */
	atomic_int to_post;    /* items the next kick posts */
	/* the loop's side */
	size_t turn, delivered, want, in_turn, most_in_turn;
	size_t input_turn; /* the turn a ready pipe was served in, 0 before */
	int in_order;
};

static struct fixture fx;

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* On the worker: posts to_post items, numbered from posted. */
static void on_kick(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct fixture *f = user;
	uint64_t n;
	ssize_t r = read(fd, &n, sizeof(n));

	(void)io;
	(void)events;
	(void)r;
	if (!pthread_equal(pthread_self(), f->loop_thread))
		atomic_store(&f->off_loop, 1);
	atomic_store(&f->nice_seen, getpriority(PRIO_PROCESS, (id_t)gettid()));
	for (int i = atomic_exchange(&f->to_post, 0); i > 0; i--) {
		int *item = malloc(sizeof(*item));

		*item = atomic_load(&f->posted);
		linkverify_post(f->v, item);
		atomic_fetch_add(&f->posted, 1);
	}
}

static void done(void *user, void *item)
{
	struct fixture *f = user;
	int *p = item;

	if ((size_t)*p != f->delivered)
		f->in_order = 0;
	free(p);
	f->delivered++;
	f->in_turn++;
	if (f->in_turn > f->most_in_turn)
		f->most_in_turn = f->in_turn;
	if (f->delivered == f->want)
		ev_loop_stop(f->loop);
}

static void drop(void *user, void *item)
{
	struct fixture *f = user;

	atomic_fetch_add(&f->dropped, 1);
	free(item);
}

/* Added before the module's hook: each turn starts here. */
static void count_turn(void *user)
{
	struct fixture *f = user;

	f->turn++;
	f->in_turn = 0;
}

static int setup(void **state)
{
	(void)state;
	memset(&fx, 0, sizeof(fx));
	fx.in_order = 1;
	fx.loop_thread = pthread_self();
	fx.loop = ev_loop_new();
	ev_hook_add(fx.loop, count_turn, &fx);
	fx.v = linkverify_new(fx.loop, done, drop, &fx, PER_TURN);
	if (!fx.loop || !fx.v)
		return -1;
	fx.kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	fx.kick_io = ev_io_new(linkverify_loop(fx.v), fx.kick, EV_READ, on_kick, &fx);
	return fx.kick_io && linkverify_start(fx.v) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	linkverify_stop(fx.v);
	ev_io_free(fx.kick_io);
	linkverify_free(fx.v);
	close(fx.kick);
	ev_loop_free(fx.loop);
	return 0;
}

static void on_guard(struct ev_timer *t, void *user)
{
	(void)t;
	ev_loop_stop(user);
}

/* Runs the loop until want items are in, the guard failing the test. */
static void run_until_delivered(size_t want)
{
	struct ev_timer *guard = ev_timer_new(fx.loop, GUARD_MS, 0, on_guard, fx.loop);

	fx.want = want;
	if (fx.delivered < want)
		ev_loop_run(fx.loop);
	ev_timer_free(guard);
	assert_int_equal(fx.delivered, want);
	assert_true(fx.in_order);
}

/* The worker posts n items (on its own loop, woken by the kick). */
static void post(int n)
{
	uint64_t one = 1;

	atomic_fetch_add(&fx.to_post, n);
	assert_int_equal(write(fx.kick, &one, sizeof(one)), sizeof(one));
}

static void wait_posted(int n)
{
	for (int ms = 0; atomic_load(&fx.posted) < n && ms < GUARD_MS; ms++)
		sleep_ms(1);
	assert_int_equal(atomic_load(&fx.posted), n);
}

static void test_worker_loop_off_the_loop_at_a_lower_priority(void **state)
{
	int base, want;

	(void)state;
	errno = 0;
	base = getpriority(PRIO_PROCESS, 0);
	want = base + LINKVERIFY_NICE > 19 ? 19 : base + LINKVERIFY_NICE;
	post(1);
	run_until_delivered(1);
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

/* While the worker posts nothing, the loop has nothing to do and
   sleeps: the turns it makes are the few its own timer causes (a loop
   that polled without blocking would make thousands in the same time). */
static void test_loop_sleeps_while_nothing_posted(void **state)
{
	struct ev_timer *stop;
	size_t turns;

	(void)state;
	stop = ev_timer_new(fx.loop, 200, 0, on_stop, fx.loop);
	fx.turn = 0;
	ev_loop_run(fx.loop);
	turns = fx.turn;
	ev_timer_free(stop);
	assert_int_equal(fx.delivered, 0);
	/* about 2 (the timer's turn, then the one that stops) */
	assert_in_range(turns, 1, 10);
	post(200);
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

/* All items posted before the loop runs: at most PER_TURN are handed
   over a turn, and a client's input ready at the same time is served in
   the first turn, whatever their number. */
static void items_bounded_with(size_t n)
{
	int p[2];
	struct ev_io *io;
	char c = 'x';

	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], &c, 1), 1);
	io = ev_io_new(fx.loop, p[0], EV_READ, on_input, NULL);
	post((int)n);
	wait_posted((int)n);
	fx.turn = 0;
	run_until_delivered(n);
	assert_int_equal(fx.input_turn, 1);
	assert_in_range(fx.most_in_turn, 1, PER_TURN);
	assert_true(fx.turn >= (n + PER_TURN - 1) / PER_TURN);
	assert_int_equal(linkverify_turn_max(fx.v), fx.most_in_turn);
	ev_io_free(io);
	close(p[0]);
	close(p[1]);
}

static void test_items_bounded_per_turn_100(void **state)
{
	(void)state;
	items_bounded_with(100);
}

static void test_items_bounded_per_turn_1000(void **state)
{
	(void)state;
	items_bounded_with(1000);
}

/* Items the loop never took are dropped by linkverify_free, each once
   (LeakSanitizer sees anything left). */
static void test_free_drops_items_left(void **state)
{
	(void)state;
	post(50);
	wait_posted(50);
	linkverify_stop(fx.v);
	ev_io_free(fx.kick_io);
	linkverify_free(fx.v);
	fx.v = NULL;
	fx.kick_io = NULL;
	assert_int_equal(atomic_load(&fx.dropped), 50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
		test_worker_loop_off_the_loop_at_a_lower_priority, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_loop_sleeps_while_nothing_posted, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_items_bounded_per_turn_100, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_items_bounded_per_turn_1000, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_free_drops_items_left, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
