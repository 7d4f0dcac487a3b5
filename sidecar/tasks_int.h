/* tasks_int: what the files of the tasks module share and nothing else
   sees: tasks.c (the tasks kept: records, subscribers, processes) and
   tasks_ops.c (the requests), which calls into tasks.c, never the other
   way. */
#ifndef PTG_TASKS_INT_H
#define PTG_TASKS_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "ev.h"
#include "linkconn.h"
#include "task.h"
#include "tasks.h"

#define READS_PER_WAKE 16 /* fairness between busy tasks */

/* One subscription: a link's attachment that receives TaskUpdates. */
struct sub {
	struct linkconn *lc;
	uint64_t attach_id;
};

/* A task's process state while it has any: pid, pipes, subscribers. */
struct run {
	struct tasks *ts;
	struct task *t;
	pid_t pid; /* 0: reaped (or never started) */
	int fd[2];
	struct ev_io *io[2];
	struct sub *subs;
	size_t n_subs, cap_subs;
};

/* The tasks, in creation order. */
struct tasks {
	const struct sidecar_config *cfg;
	struct ev_loop *loop;
	char dir[4200]; /* "" when not persisting */
	struct task **v;
	size_t n, cap;
	struct ev_timer *flush;
};

/* Stores the task's record (a no-op when not persisting). */
void tasks__save(struct tasks *ts, const struct task *t);
/* Adds a new task to the array. */
void tasks__add(struct tasks *ts, struct task *t);
/* The task's process state, NULL when it has none. */
struct run *tasks__run_of(struct task *t);
/* Sends the full task with delta (consumed) to every subscriber; after a
   terminal state there are none left. */
void tasks__notify(struct task *t, json_t *delta);
/* Subscribes (lc, attach_id); -EAGAIN past --task-max-subscribers. */
int tasks__subscribe(struct tasks *ts, struct task *t, struct linkconn *lc,
		     uint64_t attach_id);
/* Removes the subscriptions matching lc and (attach_id, or any when 0). */
void tasks__unsubscribe(struct task *t, struct linkconn *lc, uint64_t attach_id);
/* The full task to one subscriber (SubscribeToTask, a repeated send). */
void tasks__send_snapshot(struct task *t, struct linkconn *lc, uint64_t attach_id);
/* Stops watching and closes the process's pipe i. */
void tasks__close_pipe(struct run *r, int i);
/* Reads what is there; 1 when the pipe reached EOF or failed. */
bool tasks__drain(struct run *r, int i, int max_reads);
/* Output not yet announced goes out as one delta. */
void tasks__flush_output(struct task *t);
/* The task reached a terminal state: logged, stored, announced, and the
   oldest finished tasks beyond --task-keep dropped. */
void tasks__finish(struct tasks *ts, struct task *t);
/* Starts the task's process (the handler or its command); a failure
   leaves the task FAILED. */
void tasks__start(struct tasks *ts, struct task *t, pid_t session_pid);

#endif
