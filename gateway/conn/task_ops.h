/* task_ops: the gateway side of the A2A task operations (docs/protocol.md,
   "Tasks"). A client's task frame becomes one TaskRequest to the session's
   sidecar (the source of truth for tasks); the sidecar's Reply becomes the
   op's `.Response` or `.Accepted`, and its TaskUpdates become
   TaskStatusUpdate frames carrying the connection's service_parameters.
   Task ops need no join and no extension, only the `tasks` scope; a
   principal sees its own tasks, and with `tasks:all` every principal's of
   the session. */
#ifndef PTG_TASK_OPS_H
#define PTG_TASK_OPS_H

struct conn;
struct envelope;
struct task_conn;

/* SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask,
   SubscribeToTask, Unsubscribe from a client. */
void task_ops_handle(struct conn *c, const struct envelope *env);
/* The connection is being freed, or lets go of its instance's link: its
   requests are forgotten and its subscriptions ended at the sidecar. */
void task_ops_conn_gone(struct conn *c);

#endif
