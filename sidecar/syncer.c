/* syncer: see syncer.h. A FIFO of batches under one mutex; the thread
   starts on the first batch and lives as long as the process. Tickets
   are handed out in queue order and the thread finishes them in that
   order, so "written through ticket T" is one counter. */
#include "syncer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdio.h"
#include "xalloc.h"

struct syncer_status {
	int refs;  /* under mu */
	int error; /* under mu */
};

struct batch {
	int fd; /* -1 for a whole file (path) */
	char *path;
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

/* A whole small file: temp, write, rename. */
static int write_file(const char *path, const uint8_t *data, size_t len)
{
	size_t n = strlen(path) + 5;
	char *tmp = xmalloc(n);
	int fd, rc;

	snprintf(tmp, n, "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	rc = fd < 0 ? -errno : fd_write_all(fd, data, len);
	if (fd >= 0)
		close(fd);
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	free(tmp);
	return rc;
}

/* Writes one batch's file, outside the lock (a sync has none). Returns 0
   or a negative errno. */
static int write_batch(struct batch *b)
{
	int rc = b->path ? write_file(b->path, b->data, b->len) : 0;

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
		if (rc < 0 && b->st && !b->st->error)
			b->st->error = rc;
		pthread_cond_broadcast(&progress);
		pthread_mutex_unlock(&mu);
		rc = b->sync && fdatasync(b->fd) < 0 ? -errno : 0;
		if (b->fd >= 0)
			close(b->fd);
		free(b->path);
		pthread_mutex_lock(&mu);
		if (b->st) {
			if (rc < 0 && !b->st->error)
				b->st->error = rc;
			put_locked(b->st);
		}
		free(b);
	}
	return NULL;
}

static int start_locked(void)
{
	pthread_t t;
	pthread_attr_t a;
	sigset_t all, old;
	int rc;

	if (started)
		return 0;
	/* The thread takes no signal, whenever it starts (even before the
	   loop blocks SIGTERM for its signalfd, as when a restart writes
	   segment indexes): the loop handles them all. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &a, run, NULL);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	started = 1;
	return 0;
}

/* Appends b to the queue, waiting while it is full (an empty queue
   always takes a batch, however large, so this ends). Under mu. */
static int64_t enqueue_locked(struct batch *b)
{
	while (queued && queued + b->len > limit)
		pthread_cond_wait(&progress, &mu);
	b->ticket = ++issued;
	if (b->st)
		b->st->refs++;
	if (tail)
		tail->next = b;
	else
		head = b;
	tail = b;
	queued += b->len;
	if (queued > peak)
		peak = queued;
	pthread_cond_signal(&work);
	return b->ticket;
}

int64_t syncer_sync(int fd, struct syncer_status *st)
{
	struct batch *b;
	int rc, dup_fd = -1;
	int64_t ticket;

	pthread_mutex_lock(&mu);
	rc = start_locked();
	if (!rc && (dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
		rc = -errno;
	if (rc) {
		pthread_mutex_unlock(&mu);
		return rc;
	}
	b = xcalloc(1, sizeof(*b));
	b->fd = dup_fd;
	b->sync = 1;
	b->st = st;
	ticket = enqueue_locked(b);
	pthread_mutex_unlock(&mu);
	return ticket;
}

int64_t syncer_write_file(const char *path, uint8_t *data, size_t len)
{
	struct batch *b;
	int64_t ticket;
	int rc;

	pthread_mutex_lock(&mu);
	rc = start_locked();
	if (rc) {
		pthread_mutex_unlock(&mu);
		return rc;
	}
	b = xcalloc(1, sizeof(*b));
	b->fd = -1;
	b->path = xstrdup(path);
	b->data = data;
	b->len = len;
	ticket = enqueue_locked(b);
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

/* A counter the writer thread updates, read under its lock. */
static size_t read_locked(const size_t *counter)
{
	size_t n;

	pthread_mutex_lock(&mu);
	n = *counter;
	pthread_mutex_unlock(&mu);
	return n;
}

size_t syncer_queued_bytes(void)
{
	return read_locked(&queued);
}

size_t syncer_queued_peak(void)
{
	return read_locked(&peak);
}

void syncer_set_limit(size_t bytes)
{
	pthread_mutex_lock(&mu);
	limit = bytes ? bytes : SYNCER_QUEUE_BYTES;
	peak = queued;
	pthread_mutex_unlock(&mu);
}
