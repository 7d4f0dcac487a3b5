/* task_ops: the gateway side of the A2A task operations (SPEC 6). A
   client's task frame becomes one TaskRequest to the session's sidecar
   (the source of truth for tasks); the sidecar's Reply becomes the op's
   `.Response` or `.Accepted`, and its TaskUpdates become TaskStatusUpdate
   frames carrying the connection's service_parameters. Task ops need no
   join and no extension, only the `tasks` scope. */
#ifndef PTG_TASK_OPS_H
#define PTG_TASK_OPS_H

#include "link.pb-c.h"

struct conn;
struct envelope;
struct gateway;
struct upstream;
struct task_conn;

/* SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask,
   SubscribeToTask, Unsubscribe from a client. */
void task_ops_handle(struct conn *c, const struct envelope *env);
/* A TaskUpdate from u's sidecar: to the connection subscribed as its
   attach_id, if it is still there. */
void task_ops_on_update(struct gateway *gw, struct upstream *u, const Ptg__TaskUpdate *tu);
/* u's link dropped or u is being freed: its connections' subscriptions
   are gone; one that only used tasks is told and closed, as a joined one
   is, and none touches u again. Pending requests are failed by u. */
void task_ops_link_lost(struct gateway *gw, struct upstream *u);
/* The connection is being freed: its requests are forgotten and its
   subscriptions ended at the sidecar. */
void task_ops_conn_gone(struct conn *c);

#endif
