/* tasks: see tasks.h. One array of tasks in creation order; a task's
   process state (pid, pipes, subscribers) hangs off task->run while it
   has any. This file keeps them: the records under --state-dir/tasks,
   subscribers and their updates, the processes' output and their end;
   the requests that reach them are tasks_ops.c. Every JSON payload is
   built by task.c. */
#include "tasks.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "ptg_limits.h"
#include "recstore.h"
#include "session.h"
#include "task.h"
#include "task_proc.h"
#include "tasks_int.h"
#include "timeutil.h"
#include "wire.h"
#include "xalloc.h"

#define OUTPUT_FLUSH_MS 150 /* output updates are coalesced */
#define READ_CHUNK	(64 * 1024)
#define RECORD_MAX	(16u << 20)

/* ---- storage ---- */

void tasks__save(struct tasks *ts, const struct task *t)
{
	char name[UUID_STRLEN + 8];
	char *rec;
	int rc;

	if (!ts->dir[0])
		return;
	rec = task_record(t);
	snprintf(name, sizeof(name), "%s.task", t->id);
	rc = recstore_write(ts->dir, name, rec, strlen(rec));
	if (rc < 0)
		log_warn(t->log_ctx, "cannot store the task: %s", strerror(-rc));
	free(rec);
}

static void forget(struct tasks *ts, const struct task *t)
{
	char name[UUID_STRLEN + 8];

	if (!ts->dir[0])
		return;
	snprintf(name, sizeof(name), "%s.task", t->id);
	recstore_remove(ts->dir, name);
}

void tasks__add(struct tasks *ts, struct task *t)
{
	if (ts->n == ts->cap) {
		ts->cap = ts->cap ? ts->cap * 2 : 64;
		ts->v = xrealloc(ts->v, ts->cap * sizeof(*ts->v));
	}
	ts->v[ts->n++] = t;
}

/* Recovery shows the honest boundary: a process that was running is
   gone, and nothing says how it ended (docs/protocol.md, "Tasks"). */
static void on_record(const char *name, const char *data, size_t n, void *user)
{
	struct tasks *ts = user;
	struct task *t = task_from_record(data, n);

	if (!t) {
		log_warn(NULL, "%s/%s: not a task record; skipped", ts->dir, name);
		return;
	}
	if (!task_is_terminal(t)) {
		task_set_state(
		    t, TASK_FAILED,
		    "the task's process was lost in a sidecar "
		    "restart; how it ended is unknown, and its output after the "
		    "last save is gone",
		    time_now_ms());
		log_warn(t->log_ctx,
			 "was running when the sidecar stopped: now FAILED (lost)");
		tasks__save(ts, t);
	}
	tasks__add(ts, t);
}

static int by_created(const void *a, const void *b)
{
	const struct task *x = *(struct task *const *)a, *y = *(struct task *const *)b;

	if (x->created_ms != y->created_ms)
		return x->created_ms < y->created_ms ? -1 : 1;
	return strcmp(x->id, y->id);
}

static int load(struct tasks *ts)
{
	int rc;

	if (!ts->cfg->state_dir[0])
		return 0;
	snprintf(ts->dir, sizeof(ts->dir), "%s/tasks", ts->cfg->state_dir);
	rc = recstore_open(ts->dir);
	if (rc == 0)
		rc = recstore_read_all(ts->dir, ".task", RECORD_MAX, on_record, ts);
	if (rc < 0) {
		log_error(NULL, "task store %s: %s", ts->dir, strerror(-rc));
		return rc;
	}
	if (ts->n)
		qsort(ts->v, ts->n, sizeof(*ts->v), by_created);
	log_info(NULL, "task store %s: %zu tasks restored", ts->dir, ts->n);
	return 0;
}

/* ---- subscribers and updates ---- */

struct run *tasks__run_of(struct task *t)
{
	return t->run;
}

static struct run *ensure_run(struct tasks *ts, struct task *t)
{
	if (!t->run) {
		struct run *r = xcalloc(1, sizeof(*r));
		r->ts = ts;
		r->t = t;
		r->fd[0] = r->fd[1] = -1;
		t->run = r;
	}
	return t->run;
}

static void send_update(struct task *t, const struct sub *s, const char *task_json,
			const char *delta_json)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__TaskUpdate u = PTG__TASK_UPDATE__INIT;

	u.session_id = t->session_id;
	u.attach_id = s->attach_id;
	u.task_json = (char *)task_json;
	u.delta_json = (char *)delta_json;
	m.msg_case = PTG__LINK_MESSAGE__MSG_TASK_UPDATE;
	m.task_update = &u;
	linkconn_send(s->lc, &m);
}

static void free_run_if_idle(struct task *t)
{
	struct run *r = t->run;

	if (!r || r->pid || r->io[0] || r->io[1] || r->n_subs)
		return;
	free(r->subs);
	free(r);
	t->run = NULL;
}

/* Sends the full task with delta (consumed) to every subscriber; after a
   terminal state there are none left. */
void tasks__notify(struct task *t, json_t *delta)
{
	struct run *r = tasks__run_of(t);
	char *task_text, *delta_text;
	json_t *full;

	if (!r || !r->n_subs) {
		json_decref(delta);
		return;
	}
	full = task_json(t, -1);
	task_text = full ? json_dumps(full, JSON_COMPACT) : NULL;
	delta_text = json_dumps(delta, JSON_COMPACT);
	if (!task_text || !delta_text)
		log_warn(t->log_ctx, "cannot be written as JSON: an update is skipped");
	for (size_t i = 0; task_text && delta_text && i < r->n_subs; i++)
		send_update(t, &r->subs[i], task_text, delta_text);
	free(task_text);
	free(delta_text);
	json_decref(full);
	json_decref(delta);
	if (task_is_terminal(t)) {
		r->n_subs = 0;
		free_run_if_idle(t);
	}
}

int tasks__subscribe(struct tasks *ts, struct task *t, struct linkconn *lc,
		     uint64_t attach_id)
{
	struct run *r = ensure_run(ts, t);

	for (size_t i = 0; i < r->n_subs; i++)
		if (r->subs[i].lc == lc && r->subs[i].attach_id == attach_id)
			return 0;
	if (r->n_subs >= ts->cfg->task_max_subscribers)
		return -EAGAIN;
	if (r->n_subs == r->cap_subs) {
		r->cap_subs = r->cap_subs ? r->cap_subs * 2 : 4;
		r->subs = xrealloc(r->subs, r->cap_subs * sizeof(*r->subs));
	}
	r->subs[r->n_subs++] = (struct sub){lc, attach_id};
	return 0;
}

/* Removes the subscriptions matching lc and (attach_id, or any when 0). */
void tasks__unsubscribe(struct task *t, struct linkconn *lc, uint64_t attach_id)
{
	struct run *r = tasks__run_of(t);

	if (!r)
		return;
	for (size_t i = 0; i < r->n_subs;) {
		if (r->subs[i].lc == lc &&
		    (!attach_id || r->subs[i].attach_id == attach_id))
			r->subs[i] = r->subs[--r->n_subs];
		else
			i++;
	}
	free_run_if_idle(t);
}

/* The full task to one subscriber (SubscribeToTask, a repeated send). */
void tasks__send_snapshot(struct task *t, struct linkconn *lc, uint64_t attach_id)
{
	struct sub s = {lc, attach_id};
	json_t *full = task_json(t, -1);
	char *text = full ? json_dumps(full, JSON_COMPACT) : NULL;

	if (text)
		send_update(t, &s, text, "{\"snapshot\":true}");
	else
		log_warn(t->log_ctx, "cannot be written as JSON: no snapshot sent");
	free(text);
	json_decref(full);
}

/* ---- output and ending ---- */

void tasks__close_pipe(struct run *r, int i)
{
	if (r->io[i]) {
		ev_io_free(r->io[i]);
		r->io[i] = NULL;
	}
	if (r->fd[i] >= 0) {
		close(r->fd[i]);
		r->fd[i] = -1;
	}
}

/* Reads what is there; 1 when the pipe reached EOF or failed. */
bool tasks__drain(struct run *r, int i, int max_reads)
{
	static char chunk[READ_CHUNK];
	ssize_t n;

	for (int k = 0; k < max_reads; k++) {
		n = read(r->fd[i], chunk, sizeof(chunk));
		if (n > 0) {
			task_append_output(r->t, (enum task_stream_id)i, chunk, (size_t)n,
					   r->ts->cfg->task_output_bytes);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		return 1;
	}
	return 0;
}

static void on_output(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct run *r = user;
	int i = r->fd[0] == fd ? 0 : 1;

	if (tasks__drain(r, i, READS_PER_WAKE))
		tasks__close_pipe(r, i);
	if (r->n_subs && !ev_timer_armed(r->ts->flush))
		ev_timer_arm(r->ts->flush, OUTPUT_FLUSH_MS, 0);
}

/* Output not yet announced goes out as one delta. With no subscriber it
   is only marked announced: a later subscriber's snapshot holds it, and
   every subscriber's deltas then continue from the same point. */
void tasks__flush_output(struct task *t)
{
	json_t *delta;

	if (!t->run || task_is_terminal(t))
		return;
	delta = task_output_delta(t);
	if (delta)
		tasks__notify(t, delta);
}

static void on_flush(struct ev_timer *tm, void *user)
{
	struct tasks *ts = user;

	for (size_t i = 0; i < ts->n; i++)
		tasks__flush_output(ts->v[i]);
}

/* Drops the oldest finished tasks beyond --task-keep. */
static void evict(struct tasks *ts)
{
	size_t finished = 0;

	for (size_t i = 0; i < ts->n; i++)
		finished += task_is_terminal(ts->v[i]) && !ts->v[i]->run;
	for (size_t i = 0; i < ts->n && finished > ts->cfg->task_keep;) {
		struct task *t = ts->v[i];
		if (!task_is_terminal(t) || t->run) {
			i++;
			continue;
		}
		log_info(t->log_ctx, "dropped: more than %u finished tasks are kept",
			 ts->cfg->task_keep);
		forget(ts, t);
		task_free(t);
		memmove(&ts->v[i], &ts->v[i + 1], (ts->n - i - 1) * sizeof(*ts->v));
		ts->n--;
		finished--;
	}
}

void tasks__finish(struct tasks *ts, struct task *t)
{
	log_info(t->log_ctx, "%s: %s", task_state_name(t->state),
		 t->status_text ? t->status_text : "");
	tasks__save(ts, t);
	tasks__notify(t, task_status_delta(t));
	free_run_if_idle(t);
	evict(ts);
}

bool tasks_child_exited(struct tasks *ts, pid_t pid, int status)
{
	for (size_t i = 0; i < ts->n; i++) {
		struct task *t = ts->v[i];
		struct run *r = t->run;
		bool was_terminal;
		if (!r || r->pid != pid)
			continue;
		r->pid = 0;
		/* Whatever it wrote before exiting is in the pipes already. */
		for (int k = 0; k < 2; k++) {
			if (r->fd[k] >= 0)
				tasks__drain(r, k, 1 << 20);
			tasks__close_pipe(r, k);
		}
		was_terminal = task_is_terminal(t);
		tasks__flush_output(t);
		task_set_exit(t, status, time_now_ms());
		if (was_terminal) {
			tasks__save(ts, t); /* canceled: keep how the kill ended it */
			free_run_if_idle(t);
			evict(ts);
		} else {
			tasks__finish(ts, t);
		}
		return 1;
	}
	return 0;
}

void tasks__start(struct tasks *ts, struct task *t, pid_t session_pid)
{
	struct run *r = ensure_run(ts, t);
	char err[LOG_ERR_MAX], *input = NULL;
	struct task_proc_spec sp = {
	    .command = t->command,
	    .handler = ts->cfg->task_handler,
	    .session_pid = session_pid,
	    .user = ts->cfg->session_user[0] ? ts->cfg->session_user : NULL,
	};
	int fds[2];
	pid_t pid;

	if (ts->cfg->task_handler[0]) {
		json_t *in = json_pack("{s:O, s:s, s:s}", "message", t->message, "taskId",
				       t->id, "contextId", t->session_id);
		input = json_dumps(in, JSON_COMPACT);
		json_decref(in);
		sp.input = input;
		sp.input_len = strlen(input);
	}
	pid = task_proc_start(&sp, fds, err, sizeof(err));
	free(input);
	if (pid < 0) {
		log_warn(t->log_ctx, "cannot start: %s", err);
		task_set_state(t, TASK_FAILED, err, time_now_ms());
		return;
	}
	r->pid = pid;
	for (int i = 0; i < 2; i++) {
		r->fd[i] = fds[i];
		r->io[i] = ev_io_new(ts->loop, fds[i], EV_READ, on_output, r);
	}
	task_set_state(t, TASK_WORKING, NULL, time_now_ms());
	log_info(t->log_ctx, "started pid %d: %.200s", (int)pid, t->command);
}

void tasks_drop_link(struct tasks *ts, struct linkconn *lc)
{
	for (size_t i = 0; i < ts->n; i++)
		tasks__unsubscribe(ts->v[i], lc, 0);
}

struct tasks *tasks_new(const struct sidecar_config *cfg, struct ev_loop *loop)
{
	struct tasks *ts = xcalloc(1, sizeof(*ts));

	ts->cfg = cfg;
	ts->loop = loop;
	if (load(ts) < 0) {
		for (size_t i = 0; i < ts->n; i++)
			task_free(ts->v[i]);
		free(ts->v);
		free(ts);
		return NULL;
	}
	ts->flush = ev_timer_new(loop, 0, 0, on_flush, ts);
	return ts;
}

void tasks_free(struct tasks *ts)
{
	if (!ts)
		return;
	for (size_t i = 0; i < ts->n; i++) {
		struct task *t = ts->v[i];
		struct run *r = t->run;
		if (r) {
			if (r->pid)
				kill(-r->pid, SIGKILL);
			tasks__close_pipe(r, 0);
			tasks__close_pipe(r, 1);
			free(r->subs);
			free(r);
		}
		task_free(t);
	}
	free(ts->v);
	ev_timer_free(ts->flush);
	free(ts);
}
