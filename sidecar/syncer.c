/* syncer: see syncer.h. A bounded ring of descriptors under a mutex; the
   thread starts on the first request and lives as long as the process. */
#include "syncer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#define QUEUE_CAP 1024

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static int queue[QUEUE_CAP];
static unsigned head, count;
static int started;

static void *run(void *arg)
{
	int fd;

	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (!count)
			pthread_cond_wait(&work, &mu);
		fd = queue[head];
		head = (head + 1) % QUEUE_CAP;
		count--;
		pthread_mutex_unlock(&mu);
		fdatasync(fd);
		close(fd);
		pthread_mutex_lock(&mu);
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

int syncer_request(int fd)
{
	int dup_fd, rc;

	pthread_mutex_lock(&mu);
	rc = start_locked();
	if (!rc && count == QUEUE_CAP)
		rc = -EAGAIN;
	if (!rc && (dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
		rc = -errno;
	if (!rc) {
		queue[(head + count) % QUEUE_CAP] = dup_fd;
		count++;
		pthread_cond_signal(&work);
	}
	pthread_mutex_unlock(&mu);
	return rc;
}
