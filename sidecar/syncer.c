/* syncer: see syncer.h. A FIFO of batches under one mutex; the thread
   starts on the first batch and lives as long as the process. Tickets
   are handed out in queue order and the thread finishes them in that
   order, so "written through ticket T" is one counter. */
#include "syncer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "fdio.h"
#include "xalloc.h"

struct syncer_status {
	int refs;  /* under mu */
	int error; /* under mu */
};

struct batch {
	int fd;
	uint8_t *data;
	size_t len;
	int sync;
	int64_t ticket;
	struct syncer_status *st;
	struct batch *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t progress = PTHREAD_COND_INITIALIZER;
static struct batch *head, *tail;
static size_t queued, peak, limit = SYNCER_QUEUE_BYTES;
static int64_t issued, written;
static int started;

struct syncer_status *syncer_status_new(void)
{
	struct syncer_status *st = xcalloc(1, sizeof(*st));

	st->refs = 1;
	return st;
}

static void put_locked(struct syncer_status *st)
{
	if (--st->refs == 0)
		free(st);
}

void syncer_status_put(struct syncer_status *st)
{
	if (!st)
		return;
	pthread_mutex_lock(&mu);
	put_locked(st);
	pthread_mutex_unlock(&mu);
}

int syncer_status_error(const struct syncer_status *st)
{
	int e;

	pthread_mutex_lock(&mu);
	e = st->error;
	pthread_mutex_unlock(&mu);
	return e;
}

/* Writes one batch, outside the lock. Returns 0 or a negative errno. */
static int write_batch(struct batch *b)
{
	int rc = b->len ? fd_write_all(b->fd, b->data, b->len) : 0;

	free(b->data);
	b->data = NULL;
	return rc;
}

static void *run(void *arg)
{
	struct batch *b;
	int rc;

	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (!head)
			pthread_cond_wait(&work, &mu);
		b = head;
		pthread_mutex_unlock(&mu);
		rc = write_batch(b);
		pthread_mutex_lock(&mu);
		/* Written: readers may look; the queue has room again. */
		head = b->next;
		if (!head)
			tail = NULL;
		queued -= b->len;
		written = b->ticket;
		if (rc < 0 && !b->st->error)
			b->st->error = rc;
		pthread_cond_broadcast(&progress);
		pthread_mutex_unlock(&mu);
		rc = b->sync && fdatasync(b->fd) < 0 ? -errno : 0;
		close(b->fd);
		pthread_mutex_lock(&mu);
		if (rc < 0 && !b->st->error)
			b->st->error = rc;
		put_locked(b->st);
		free(b);
	}
	return NULL;
}

static int start_locked(void)
{
	pthread_t t;
	pthread_attr_t a;
	int rc;

	if (started)
		return 0;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &a, run, NULL);
	pthread_attr_destroy(&a);
	if (rc)
		return -rc;
	started = 1;
	return 0;
}

int64_t syncer_write(int fd, uint8_t *data, size_t len, int sync, struct syncer_status *st)
{
	struct batch *b;
	int rc, dup_fd;
	int64_t ticket;

	pthread_mutex_lock(&mu);
	rc = start_locked();
	if (!rc && (dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
		rc = -errno;
	if (rc) {
		pthread_mutex_unlock(&mu);
		return rc;
	}
	/* Full: wait for the thread (an empty queue always takes a batch,
	   however large, so this ends). */
	while (queued && queued + len > limit)
		pthread_cond_wait(&progress, &mu);
	b = xcalloc(1, sizeof(*b));
	b->fd = dup_fd;
	b->data = data;
	b->len = len;
	b->sync = sync;
	b->ticket = ticket = ++issued;
	b->st = st;
	st->refs++;
	if (tail)
		tail->next = b;
	else
		head = b;
	tail = b;
	queued += len;
	if (queued > peak)
		peak = queued;
	pthread_cond_signal(&work);
	pthread_mutex_unlock(&mu);
	return ticket;
}

void syncer_wait(int64_t ticket)
{
	pthread_mutex_lock(&mu);
	while (written < ticket)
		pthread_cond_wait(&progress, &mu);
	pthread_mutex_unlock(&mu);
}

size_t syncer_queued_bytes(void)
{
	size_t n;

	pthread_mutex_lock(&mu);
	n = queued;
	pthread_mutex_unlock(&mu);
	return n;
}

size_t syncer_queued_peak(void)
{
	size_t n;

	pthread_mutex_lock(&mu);
	n = peak;
	pthread_mutex_unlock(&mu);
	return n;
}

void syncer_set_limit(size_t bytes)
{
	pthread_mutex_lock(&mu);
	limit = bytes ? bytes : SYNCER_QUEUE_BYTES;
	peak = queued;
	pthread_mutex_unlock(&mu);
}
