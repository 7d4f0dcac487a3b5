/* unit: shared */
/* workq: items run in the order submitted and tickets count them; a held
   worker takes nothing until a caller waits, so what is queued, taken
   back, counted and bounded is known without timing; a loop's queue is
   woken once per empty-to-busy change and popped oldest first. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "workq.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(runs_in_order_and_counts_tickets),
	    cmocka_unit_test(held_worker_lets_items_be_taken_back),
	    cmocka_unit_test(a_full_queue_makes_submit_wait),
	    cmocka_unit_test(stop_leaves_queued_items),
	    cmocka_unit_test(a_loop_queue_wakes_when_it_stops_being_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
