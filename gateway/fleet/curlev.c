/* curlev: see curlev.h. The multi's sockets each get one ev io (curl
   says what to watch through CURLMOPT_SOCKETFUNCTION), its one timeout
   an ev timer (CURLMOPT_TIMERFUNCTION); after every action the finished
   transfers are collected and their jobs told. */
#include "curlev.h"

#include <errno.h>
#include <stdlib.h>

#include "ev.h"
#include "xalloc.h"

struct curlev {
	struct ev_loop *loop;
	CURLM *multi;
	struct ev_timer *timer;
};

struct sock {
	struct curlev *cv;
	struct ev_io *io;
};

static void collect(struct curlev *cv)
{
	struct curlev_job *job;
	CURLMsg *m;
	int left = 0;

	while ((m = curl_multi_info_read(cv->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		job = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&job);
		if (job && job->done)
			job->done(job, m->data.result);
	}
}

static void on_io(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct curlev *cv = ((struct sock *)user)->cv;
	int flags = 0, running = 0;

	if (events & EV_READ)
		flags |= CURL_CSELECT_IN;
	if (events & EV_WRITE)
		flags |= CURL_CSELECT_OUT;
	/* user may be freed inside: only cv is used after. */
	curl_multi_socket_action(cv->multi, fd, flags, &running);
	collect(cv);
}

static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct curlev *cv = userp;
	struct sock *k = socketp;
	unsigned events = 0;

	if (what == CURL_POLL_REMOVE) {
		if (k) {
			curl_multi_assign(cv->multi, s, NULL);
			ev_io_free(k->io);
			free(k);
		}
		return 0;
	}
	if (what & CURL_POLL_IN)
		events |= EV_READ;
	if (what & CURL_POLL_OUT)
		events |= EV_WRITE;
	if (k) {
		ev_io_set(k->io, events);
		return 0;
	}
	k = xcalloc(1, sizeof(*k));
	k->cv = cv;
	k->io = ev_io_new(cv->loop, s, events, on_io, k);
	if (!k->io) {
		free(k);
		return -1;
	}
	curl_multi_assign(cv->multi, s, k);
	return 0;
}

static void on_timer(struct ev_timer *t, void *user)
{
	struct curlev *cv = user;
	int running = 0;

	curl_multi_socket_action(cv->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	collect(cv);
}

static int on_timer_change(CURLM *multi, long timeout_ms, void *userp)
{
	struct curlev *cv = userp;

	if (timeout_ms < 0)
		ev_timer_disarm(cv->timer);
	else
		ev_timer_arm(cv->timer, timeout_ms, 0);
	return 0;
}

struct curlev *curlev_new(struct ev_loop *loop)
{
	struct curlev *cv = xcalloc(1, sizeof(*cv));

	cv->loop = loop;
	cv->multi = curl_multi_init();
	if (!cv->multi) {
		free(cv);
		return NULL;
	}
	cv->timer = ev_timer_new(loop, -1, 0, on_timer, cv);
	curl_multi_setopt(cv->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(cv->multi, CURLMOPT_SOCKETDATA, cv);
	curl_multi_setopt(cv->multi, CURLMOPT_TIMERFUNCTION, on_timer_change);
	curl_multi_setopt(cv->multi, CURLMOPT_TIMERDATA, cv);
	return cv;
}

void curlev_free(struct curlev *cv)
{
	if (!cv)
		return;
	curl_multi_cleanup(cv->multi);
	ev_timer_free(cv->timer);
	free(cv);
}

int curlev_add(struct curlev *cv, struct curlev_job *job)
{
	curl_easy_setopt(job->easy, CURLOPT_PRIVATE, job);
	if (curl_multi_add_handle(cv->multi, job->easy) != CURLM_OK)
		return -EIO;
	job->added = true;
	return 0;
}

void curlev_remove(struct curlev *cv, struct curlev_job *job)
{
	if (!job->added)
		return;
	job->added = false;
	curl_multi_remove_handle(cv->multi, job->easy);
}

int curlev_errno(CURLcode res)
{
	switch (res) {
	case CURLE_OK:
		return 0;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
		return -ECONNREFUSED;
	default:
		return -EIO;
	}
}
