/* unit: shared */
/* workq: items run in the order submitted and tickets count them; a held
   worker takes nothing until a caller waits, so what is queued, taken
   back, counted and bounded is known without timing; a loop's queue is
   woken once per empty-to-busy change and popped oldest first; a
   hand-over (workq_submit_if_idle) readies and queues an idle item and
   leaves a queued or running one alone, a running one held by a gate the
   test opens. */
#include "../../shared/workq.c"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#define N_JOBS 5

struct job {
	int key;
	int sigterm_blocked;
	struct workq_item item;
};

/* What the worker did, read after a wait (the queue's mutex orders it). */
struct log {
	int keys[N_JOBS * 2];
	int n;
};

static void run_job(struct workq *q, struct workq_item *it, void *user)
{
	struct job *j = WORKQ_OWNER(it, struct job, item);
	struct log *lg = user;
	sigset_t now;

	pthread_sigmask(SIG_BLOCK, NULL, &now);
	j->sigterm_blocked = sigismember(&now, SIGTERM);
	lg->keys[lg->n++] = j->key;
	workq_done(q, it);
}

static void init_jobs(struct job *jobs, size_t size)
{
	for (int i = 0; i < N_JOBS; i++)
		jobs[i] = (struct job){.key = i, .item.size = size};
}

static void runs_in_order_and_counts_tickets(void **state)
{
	struct log lg = {0};
	struct workq *q = workq_new(run_job, &lg);
	struct job jobs[N_JOBS];
	int64_t t = 0;

	(void)state;
	init_jobs(jobs, 1);
	assert_int_equal(workq_start(q, "ptg-test"), 0);
	assert_int_equal(workq_start(q, NULL), 0); /* already running */
	for (int i = 0; i < N_JOBS; i++) {
		int64_t next = workq_submit(q, &jobs[i].item);

		assert_true(next > t);
		t = next;
	}
	workq_wait(q, t);
	assert_int_equal(lg.n, N_JOBS);
	for (int i = 0; i < N_JOBS; i++) {
		assert_int_equal(lg.keys[i], i);
		assert_int_equal(jobs[i].sigterm_blocked, 1);
		assert_false(workq_busy(q, &jobs[i].item));
	}
	assert_int_equal(workq_size(q), 0);
	assert_int_equal(workq_peak(q) >= 1, 1);
	workq_free(q);
}

static void held_worker_lets_items_be_taken_back(void **state)
{
	struct log lg = {0};
	struct workq *q = workq_new(run_job, &lg);
	struct job jobs[N_JOBS];
	int64_t last = 0;

	(void)state;
	init_jobs(jobs, 10);
	workq_hold(q);
	assert_int_equal(workq_start(q, NULL), 0);
	for (int i = 0; i < N_JOBS; i++)
		last = workq_submit(q, &jobs[i].item);
	assert_int_equal(workq_size(q), 10 * N_JOBS);
	assert_true(workq_busy(q, &jobs[1].item));
	assert_int_equal(workq_take_back(q, &jobs[1].item), WORKQ_QUEUED);
	assert_int_equal(workq_take_back(q, &jobs[1].item), WORKQ_IDLE);
	assert_false(workq_busy(q, &jobs[1].item));
	assert_int_equal(workq_size(q), 10 * (N_JOBS - 1));
	assert_int_equal(lg.n, 0);	   /* still held: nothing ran */
	workq_wait_idle(q, &jobs[2].item); /* lets the worker go */
	workq_wait(q, last);
	assert_int_equal(lg.n, N_JOBS - 1);
	assert_int_equal(lg.keys[0], 0);
	for (int i = 1; i < lg.n; i++)
		assert_int_equal(lg.keys[i], i + 1);
	assert_int_equal(workq_size(q), 0);
	assert_int_equal(workq_peak(q), 10 * N_JOBS);
	workq_free(q);
}

static void a_full_queue_makes_submit_wait(void **state)
{
	struct log lg = {0};
	struct workq *q = workq_new(run_job, &lg);
	struct job jobs[N_JOBS];
	int64_t last = 0;

	(void)state;
	init_jobs(jobs, 8);
	jobs[0].item.size = 30; /* over the bound: an empty queue takes it */
	workq_set_limit(q, 16);
	workq_hold(q);
	assert_int_equal(workq_start(q, NULL), 0);
	for (int i = 0; i < N_JOBS; i++)
		last = workq_submit(q, &jobs[i].item);
	workq_wait(q, last);
	assert_int_equal(lg.n, N_JOBS);
	for (int i = 0; i < N_JOBS; i++)
		assert_int_equal(lg.keys[i], i);
	assert_int_equal(workq_peak(q), 30);
	workq_set_limit(q, 16);
	assert_int_equal(workq_peak(q), 0);
	workq_free(q);
}

static void stop_leaves_queued_items(void **state)
{
	struct log lg = {0};
	struct workq *q = workq_new(run_job, &lg);
	struct job jobs[N_JOBS];

	(void)state;
	init_jobs(jobs, 1);
	workq_hold(q);
	assert_int_equal(workq_start(q, NULL), 0);
	workq_submit(q, &jobs[0].item);
	workq_submit(q, &jobs[1].item);
	workq_stop(q);
	workq_stop(q); /* no worker: no-op */
	assert_int_equal(lg.n, 0);
	assert_false(workq_empty(q));
	assert_ptr_equal(workq_pop(q), &jobs[0].item);
	assert_ptr_equal(workq_pop(q), &jobs[1].item);
	assert_null(workq_pop(q));
	workq_free(q);
	workq_free(NULL);
}

/* The eventfd's counter, read to zero: 0 when it was not written. */
static uint64_t drain(int fd)
{
	uint64_t n = 0;

	if (read(fd, &n, sizeof(n)) != sizeof(n))
		assert_int_equal(errno, EAGAIN);
	return n;
}

static void a_loop_queue_wakes_when_it_stops_being_empty(void **state)
{
	struct workq *q = workq_new(NULL, NULL);
	struct job jobs[N_JOBS];
	int fd;

	(void)state;
	assert_non_null(q);
	init_jobs(jobs, 0);
	fd = workq_wake_fd(q);
	assert_true(fd >= 0);
	assert_int_equal(drain(fd), 0);
	assert_true(workq_empty(q));
	workq_submit(q, &jobs[0].item);
	workq_submit(q, &jobs[1].item);
	assert_int_equal(drain(fd), 1);
	assert_ptr_equal(workq_pop(q), &jobs[0].item);
	assert_false(workq_empty(q));
	assert_ptr_equal(workq_pop(q), &jobs[1].item);
	assert_true(workq_empty(q));
	assert_null(workq_pop(q));
	workq_submit(q, &jobs[2].item);
	assert_int_equal(drain(fd), 1);
	assert_ptr_equal(WORKQ_OWNER(workq_pop(q), struct job, item), &jobs[2]);
	workq_free(q);
}

/* What a hand-over's fill saw, and the payload it writes: the job's key. */
struct fill {
	int calls;
	int next_key;
	struct workq_item *it;
	size_t size;
	enum workq_state state;
};

static void fill_job(struct workq_item *it, void *arg)
{
	struct fill *fl = arg;

	fl->calls++;
	fl->it = it;
	fl->size = it->size;
	fl->state = it->state;
	WORKQ_OWNER(it, struct job, item)->key = fl->next_key;
}

static void submit_if_idle_queues_only_an_idle_item(void **state)
{
	struct workq *q = workq_new(NULL, NULL);
	struct job jobs[N_JOBS];
	struct fill fl = {.next_key = 7};
	size_t before = 99;
	int64_t t, t2;
	int fd;

	(void)state;
	assert_non_null(q);
	init_jobs(jobs, 0);
	fd = workq_wake_fd(q);
	t = workq_submit_if_idle(q, &jobs[0].item, 10, fill_job, &fl, &before);
	assert_true(t > 0);
	assert_int_equal(before, 0);
	assert_int_equal(fl.calls, 1);
	assert_ptr_equal(fl.it, &jobs[0].item);
	assert_int_equal(fl.size, 10); /* sized before the fill */
	assert_int_equal(fl.state, WORKQ_IDLE);
	assert_int_equal(jobs[0].key, 7);
	assert_true(workq_busy(q, &jobs[0].item));
	assert_int_equal(workq_size(q), 10);
	assert_int_equal(drain(fd), 1);

	/* Queued: neither filled, resized nor queued again. */
	fl.next_key = 8;
	assert_int_equal(
	    workq_submit_if_idle(q, &jobs[0].item, 20, fill_job, &fl, &before), 0);
	assert_int_equal(before, 10);
	assert_int_equal(fl.calls, 1);
	assert_int_equal(jobs[0].key, 7);
	assert_int_equal(jobs[0].item.size, 10);
	assert_int_equal(workq_size(q), 10);

	/* Another item, behind it: no wake-up, a later ticket. */
	t2 = workq_submit_if_idle(q, &jobs[1].item, 3, fill_job, &fl, NULL);
	assert_true(t2 > t);
	assert_int_equal(jobs[1].key, 8);
	assert_int_equal(workq_size(q), 13);
	assert_int_equal(drain(fd), 0);

	/* Popped, it is idle and is handed over again. */
	assert_ptr_equal(workq_pop(q), &jobs[0].item);
	fl.next_key = 9;
	assert_true(workq_submit_if_idle(q, &jobs[0].item, 4, fill_job, &fl, &before) >
		    t2);
	assert_int_equal(before, 3);
	assert_int_equal(fl.calls, 3);
	assert_int_equal(jobs[0].key, 9);
	assert_int_equal(workq_size(q), 7);
	assert_int_equal(workq_peak(q), 13);
	assert_ptr_equal(workq_pop(q), &jobs[1].item);
	assert_ptr_equal(workq_pop(q), &jobs[0].item);
	assert_null(workq_pop(q));
	workq_free(q);
}

/* A worker's job that says it started, then waits until the test opens
   the gate: while it waits, its item is running, whatever the scheduler
   does. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool started, open;
	int keys_seen[N_JOBS];
	int n;
};

static void gated_job(struct workq *q, struct workq_item *it, void *user)
{
	struct gate *g = user;

	pthread_mutex_lock(&g->mu);
	g->keys_seen[g->n++] = WORKQ_OWNER(it, struct job, item)->key;
	g->started = true;
	pthread_cond_broadcast(&g->cond);
	while (!g->open)
		pthread_cond_wait(&g->cond, &g->mu);
	g->open = false;
	pthread_mutex_unlock(&g->mu);
	workq_done(q, it);
}

static void submit_if_idle_leaves_a_running_item(void **state)
{
	struct gate g = {.mu = PTHREAD_MUTEX_INITIALIZER,
			 .cond = PTHREAD_COND_INITIALIZER};
	struct workq *q = workq_new(gated_job, &g);
	struct job jobs[N_JOBS];
	struct fill fl = {.next_key = 5};
	size_t before = 0;
	int64_t t;

	(void)state;
	init_jobs(jobs, 0);
	assert_int_equal(workq_start(q, NULL), 0);
	t = workq_submit_if_idle(q, &jobs[0].item, 6, fill_job, &fl, NULL);
	assert_true(t > 0);
	pthread_mutex_lock(&g.mu);
	while (!g.started)
		pthread_cond_wait(&g.cond, &g.mu);
	pthread_mutex_unlock(&g.mu);

	/* Running: left alone, still counted. */
	fl.next_key = 6;
	assert_int_equal(
	    workq_submit_if_idle(q, &jobs[0].item, 9, fill_job, &fl, &before), 0);
	assert_int_equal(before, 6);
	assert_int_equal(fl.calls, 1);
	assert_int_equal(jobs[0].key, 5);
	assert_int_equal(jobs[0].item.size, 6);
	assert_true(workq_busy(q, &jobs[0].item));

	pthread_mutex_lock(&g.mu);
	g.open = true;
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.mu);
	workq_wait(q, t);
	assert_false(workq_busy(q, &jobs[0].item));
	assert_int_equal(workq_size(q), 0);

	/* Done, it is handed over again, and the worker reads what the fill
	   wrote. */
	pthread_mutex_lock(&g.mu);
	g.open = true; /* the next run goes through */
	pthread_mutex_unlock(&g.mu);
	t = workq_submit_if_idle(q, &jobs[0].item, 9, fill_job, &fl, &before);
	assert_true(t > 0);
	assert_int_equal(before, 0);
	workq_wait(q, t);
	assert_int_equal(fl.calls, 2);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.keys_seen[0], 5);
	assert_int_equal(g.keys_seen[1], 6);
	assert_int_equal(workq_peak(q), 9);
	workq_free(q);
}

static void submit_if_idle_waits_for_room(void **state)
{
	struct log lg = {0};
	struct workq *q = workq_new(run_job, &lg);
	struct job jobs[N_JOBS];
	struct fill fl = {.next_key = 1};
	size_t before = 0;
	int64_t t;

	(void)state;
	init_jobs(jobs, 10);
	workq_set_limit(q, 16);
	workq_hold(q);
	assert_int_equal(workq_start(q, NULL), 0);
	workq_submit(q, &jobs[0].item);
	/* No room beside jobs[0]: the wait lets the held worker go. */
	t = workq_submit_if_idle(q, &jobs[1].item, 10, fill_job, &fl, &before);
	assert_true(t > 0);
	assert_int_equal(before, 10); /* as found, before the wait */
	workq_wait(q, t);
	assert_int_equal(lg.n, 2);
	assert_int_equal(lg.keys[0], 0);
	assert_int_equal(lg.keys[1], 1);
	assert_int_equal(workq_peak(q), 10);
	workq_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(runs_in_order_and_counts_tickets),
	    cmocka_unit_test(held_worker_lets_items_be_taken_back),
	    cmocka_unit_test(a_full_queue_makes_submit_wait),
	    cmocka_unit_test(stop_leaves_queued_items),
	    cmocka_unit_test(a_loop_queue_wakes_when_it_stops_being_empty),
	    cmocka_unit_test(submit_if_idle_queues_only_an_idle_item),
	    cmocka_unit_test(submit_if_idle_leaves_a_running_item),
	    cmocka_unit_test(submit_if_idle_waits_for_room),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
