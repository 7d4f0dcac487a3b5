/* linkverify: see linkverify.h. Two FIFOs under one mutex: the jobs the
   worker takes, and the results it leaves for the loop. An eventfd wakes
   the loop when a result is added to an empty list; a before-poll hook
   hands results over, a few a turn, asking for another turn without
   sleeping only while results remain (not while checks are under way). */
#include "linkverify.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "xalloc.h"

/* A turn hands over results for at most this long (each one is a
   registration: an upstream, its hello). */
#define TURN_US 1000

struct job {
	struct job *next;
	void *tag;
	int rc;
	struct linkcred cred;
	size_t len;
	uint8_t in[];
};

struct linkverify {
	struct ev_loop *loop;
	linkverify_check_fn check;
	void *ctx;
	linkverify_done_fn done;
	void *user;
	size_t per_turn, turn_max;
	int efd;
	struct ev_io *wake;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work, idle;
	struct job *jobs, *jobs_tail;	/* under mu */
	struct job *results, *res_tail; /* under mu */
	int stop, holds, checking;	/* under mu */
};

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void push(struct job **head, struct job **tail, struct job *j)
{
	j->next = NULL;
	if (*tail)
		(*tail)->next = j;
	else
		*head = j;
	*tail = j;
}

static struct job *pop(struct job **head, struct job **tail)
{
	struct job *j = *head;

	if (j) {
		*head = j->next;
		if (!*head)
			*tail = NULL;
	}
	return j;
}

/* The worker gives way to the loop and to everything else at the
   process's priority: openings are unauthenticated work. */
static void lower_priority(void)
{
	int nice_now;

	errno = 0;
	nice_now = getpriority(PRIO_PROCESS, 0);
	if (errno == 0) {
		int want =
		    nice_now + LINKVERIFY_NICE > 19 ? 19 : nice_now + LINKVERIFY_NICE;
		(void)setpriority(PRIO_PROCESS, (id_t)gettid(), want);
	}
}

static void *run(void *arg)
{
	struct linkverify *v = arg;
	struct job *j;
	uint64_t one = 1;
	int was_empty;
	ssize_t n;

	lower_priority();
	pthread_mutex_lock(&v->mu);
	for (;;) {
		while (!v->stop && (!v->jobs || v->holds))
			pthread_cond_wait(&v->work, &v->mu);
		if (v->stop)
			break;
		j = pop(&v->jobs, &v->jobs_tail);
		v->checking = 1;
		pthread_mutex_unlock(&v->mu);
		j->rc = v->check(v->ctx, j->in, j->len, &j->cred);
		pthread_mutex_lock(&v->mu);
		v->checking = 0;
		pthread_cond_broadcast(&v->idle);
		was_empty = !v->results;
		push(&v->results, &v->res_tail, j);
		if (was_empty) {
			n = write(v->efd, &one, sizeof(one));
			(void)n; /* a counter at its maximum is still readable */
		}
	}
	pthread_mutex_unlock(&v->mu);
	return NULL;
}

/* The eventfd only wakes the loop; the hook does the handing over. */
static void on_wake(struct ev_io *io, int fd, unsigned events, void *user)
{
	uint64_t n;
	ssize_t r = read(fd, &n, sizeof(n));

	(void)r;
}

/* Before each poll: results, oldest first, up to the turn's bound; with
   some left, the next poll does not block. */
static void deliver(void *user)
{
	struct linkverify *v = user;
	int64_t t0 = mono_us();
	size_t done = 0;
	int more;

	for (;;) {
		struct job *j;

		pthread_mutex_lock(&v->mu);
		j = done < v->per_turn ? pop(&v->results, &v->res_tail) : NULL;
		more = v->results != NULL;
		pthread_mutex_unlock(&v->mu);
		if (!j)
			break;
		v->done(v->user, j->tag, j->rc, &j->cred);
		free(j);
		done++;
		if (mono_us() - t0 >= TURN_US)
			break;
	}
	if (done > v->turn_max)
		v->turn_max = done;
	if (more)
		ev_loop_again(v->loop);
}

/* Every signal blocked: the loop's signalfd takes them all. */
static int start_thread(struct linkverify *v)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&v->thread, NULL, run, v);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	pthread_setname_np(v->thread, "ptg-linkverify");
	return 0;
}

struct linkverify *linkverify_new(struct ev_loop *loop, linkverify_check_fn check,
				  void *ctx, linkverify_done_fn done, void *user,
				  size_t per_turn)
{
	struct linkverify *v = xcalloc(1, sizeof(*v));

	v->loop = loop;
	v->check = check;
	v->ctx = ctx;
	v->done = done;
	v->user = user;
	v->per_turn = per_turn ? per_turn : 1;
	pthread_mutex_init(&v->mu, NULL);
	pthread_cond_init(&v->work, NULL);
	pthread_cond_init(&v->idle, NULL);
	v->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (v->efd >= 0)
		v->wake = ev_io_new(loop, v->efd, EV_READ, on_wake, v);
	if (!v->wake || start_thread(v) < 0) {
		int e = errno;

		ev_io_free(v->wake);
		if (v->efd >= 0)
			close(v->efd);
		pthread_cond_destroy(&v->idle);
		pthread_cond_destroy(&v->work);
		pthread_mutex_destroy(&v->mu);
		free(v);
		errno = e;
		return NULL;
	}
	ev_hook_add(loop, deliver, v);
	return v;
}

static void free_list(struct job *j)
{
	while (j) {
		struct job *next = j->next;
		free(j);
		j = next;
	}
}

void linkverify_free(struct linkverify *v)
{
	if (!v)
		return;
	pthread_mutex_lock(&v->mu);
	v->stop = 1;
	pthread_cond_broadcast(&v->work);
	pthread_mutex_unlock(&v->mu);
	pthread_join(v->thread, NULL);
	ev_hook_remove(v->loop, deliver, v);
	ev_io_free(v->wake);
	close(v->efd);
	free_list(v->jobs);
	free_list(v->results);
	pthread_cond_destroy(&v->idle);
	pthread_cond_destroy(&v->work);
	pthread_mutex_destroy(&v->mu);
	free(v);
}

void linkverify_submit(struct linkverify *v, void *tag, const uint8_t *in, size_t len)
{
	struct job *j = xmalloc(sizeof(*j) + len);

	memset(j, 0, sizeof(*j));
	j->tag = tag;
	j->len = len;
	memcpy(j->in, in, len);
	pthread_mutex_lock(&v->mu);
	if (!v->jobs) /* the worker takes every job queued before it waits */
		pthread_cond_signal(&v->work);
	push(&v->jobs, &v->jobs_tail, j);
	pthread_mutex_unlock(&v->mu);
}

void linkverify_hold(struct linkverify *v)
{
	pthread_mutex_lock(&v->mu);
	v->holds++;
	while (v->checking)
		pthread_cond_wait(&v->idle, &v->mu);
	pthread_mutex_unlock(&v->mu);
}

void linkverify_release(struct linkverify *v)
{
	pthread_mutex_lock(&v->mu);
	v->holds--;
	pthread_cond_signal(&v->work);
	pthread_mutex_unlock(&v->mu);
}

size_t linkverify_turn_max(const struct linkverify *v)
{
	return v->turn_max;
}
