/* tasks: the sidecar's A2A tasks (docs/protocol.md, "Tasks"), the source of
   truth for every gateway: runs each message's command (task_proc),
   captures its output on the event loop, keeps the tasks of every session,
   answers the TaskRequests of the link protocol with A2A canonical JSON,
   sends TaskUpdates to subscribers (all in one order, so two subscribers
   see the same states in the same order), and keeps every task durable
   under --state-dir/tasks (recstore): after a restart, finished tasks keep
   their results and those that were running are FAILED, lost. */
#ifndef PTG_TASKS_H
#define PTG_TASKS_H

#include <stdbool.h>
#include <sys/types.h>

#include "config.h"
#include "ev.h"
#include "link.pb-c.h"
#include "linkconn.h"

struct tasks;
struct session;

/* Loads the stored tasks. NULL after logging why the state dir cannot
   be used. */
struct tasks *tasks_new(const struct sidecar_config *cfg, struct ev_loop *loop);
/* Kills running tasks' process groups; their records stay as they are,
   so the next start reports them lost. */
void tasks_free(struct tasks *ts);
/* Answers one TaskRequest from lc. s is the session it names, NULL if
   there is none (then only tasks already stored can be read). */
void tasks_request(struct tasks *ts, struct linkconn *lc, const Ptg__TaskRequest *r,
		   struct session *s);
/* A child exited: 1 if it was a task's (now handled), else 0. */
bool tasks_child_exited(struct tasks *ts, pid_t pid, int status);
/* The link is gone: its subscriptions end. */
void tasks_drop_link(struct tasks *ts, struct linkconn *lc);

#endif
