/* unit: shared */
/* ev: io readiness, timers, signals, hooks, and frees from inside
   callbacks (including of an io whose event is later in the same batch). */
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
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

/* Every test runs its loop under a guard so a hang fails, not blocks. */
static struct ev_loop *loop_with_guard(struct ev_timer **guard)
{
	struct ev_loop *loop = ev_loop_new();

	assert_non_null(loop);
	*guard = ev_timer_new(loop, 5000, 0, guard_cb, NULL);
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
	assert_true(c2.count >= 2 && c2.count <= 12);
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
	    cmocka_unit_test(test_signals),
	    cmocka_unit_test(test_hooks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
