/* syncer: see syncer.h. A work-queue (workq.h) of batches, counted by
   their file data, bounded; its worker starts on the first batch and
   lives as long as the process. "Written through ticket T" is the
   queue's own counter of items done. */
#include "syncer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdio.h"
#include "workq.h"
#include "xalloc.h"

struct syncer_status {
	int refs;  /* under mu */
	int error; /* under mu */
};

struct batch {
	struct workq_item item; /* size: len */
	int fd;			/* -1 for a whole file (path) */
	char *path;
	uint8_t *data;
	size_t len;
	bool sync;
	struct syncer_status *st;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* the statuses */
static struct workq *queue;
static pthread_once_t queue_once = PTHREAD_ONCE_INIT;

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

/* Keeps the first error of st's batches. */
static void note_error(struct syncer_status *st, int rc)
{
	pthread_mutex_lock(&mu);
	if (rc < 0 && st && !st->error)
		st->error = rc;
	pthread_mutex_unlock(&mu);
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

/* On the worker: writes b's file, then (done: readers may look, the
   queue has room again) syncs it. */
static void run(struct workq *q, struct workq_item *it, void *user)
{
	struct batch *b = WORKQ_OWNER(it, struct batch, item);
	int rc = write_batch(b);

	(void)user;
	note_error(b->st, rc);
	workq_done(q, it);
	rc = b->sync && fdatasync(b->fd) < 0 ? -errno : 0;
	if (b->fd >= 0)
		close(b->fd);
	free(b->path);
	if (b->st) {
		note_error(b->st, rc);
		syncer_status_put(b->st);
	}
	free(b);
}

static void make_queue(void)
{
	queue = workq_new(run, NULL);
	workq_set_limit(queue, SYNCER_QUEUE_BYTES);
}

/* The queue, its worker started (even before the loop blocks SIGTERM for
   its signalfd, as when a restart writes segment indexes, the worker
   takes no signal). 0 or a negative errno. */
static int start(void)
{
	pthread_once(&queue_once, make_queue);
	return workq_start(queue, NULL);
}

/* Queues b, waiting while the queue is full. */
static int64_t enqueue(struct batch *b)
{
	if (b->st) {
		pthread_mutex_lock(&mu);
		b->st->refs++;
		pthread_mutex_unlock(&mu);
	}
	b->item.size = b->len;
	return workq_submit(queue, &b->item);
}

int64_t syncer_sync(int fd, struct syncer_status *st)
{
	struct batch *b;
	int rc, dup_fd = -1;

	rc = start();
	if (!rc && (dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
		rc = -errno;
	if (rc)
		return rc;
	b = xcalloc(1, sizeof(*b));
	b->fd = dup_fd;
	b->sync = true;
	b->st = st;
	return enqueue(b);
}

int64_t syncer_write_file(const char *path, uint8_t *data, size_t len)
{
	struct batch *b;
	int rc = start();

	if (rc)
		return rc;
	b = xcalloc(1, sizeof(*b));
	b->fd = -1;
	b->path = xstrdup(path);
	b->data = data;
	b->len = len;
	return enqueue(b);
}

void syncer_wait(int64_t ticket)
{
	pthread_once(&queue_once, make_queue);
	workq_wait(queue, ticket);
}
