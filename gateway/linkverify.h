/* linkverify: the thread where links that dial in are accepted, read
   and verified, off the gateway's event loop. A flood of connecting
   sidecars costs an accept, a few reads, a timer and an Ed25519 check
   per link; on the loop they took turns from the clients it serves.
   Here one worker thread, at a lower CPU priority (nice LINKVERIFY_NICE
   above the process's), runs an event loop of its own (linkverify_loop)
   where its owner watches the listeners and the links awaiting their
   credential; what it posts (a verified link) comes back to the main
   loop through an eventfd and is handed over at most per_turn a loop
   turn, and for at most about a millisecond (each is a registration,
   which is loop work). The main loop sleeps while nothing is posted. */
#ifndef PTG_LINKVERIFY_H
#define PTG_LINKVERIFY_H

#include <stddef.h>

#include "ev.h"

/* How much nicer the worker is than the process (capped at 19). */
#define LINKVERIFY_NICE 10

struct linkverify;

/* A posted item, on the main loop, in the order posted: the callee owns
   it from then on. */
typedef void (*linkverify_done_fn)(void *user, void *item);
/* An item never handed over (linkverify_free): the callee frees it. */
typedef void (*linkverify_drop_fn)(void *user, void *item);

/* Makes the worker's loop; the thread starts with linkverify_start. NULL
   (errno set) when an eventfd or the loop cannot be made. */
struct linkverify *linkverify_new(struct ev_loop *loop, linkverify_done_fn done,
				  linkverify_drop_fn drop, void *user, size_t per_turn);
/* The worker's own loop: watchers are added to it before linkverify_start,
   or on the worker thread; they are freed by their owner between
   linkverify_stop and linkverify_free. */
struct ev_loop *linkverify_loop(struct linkverify *v);
/* Starts the worker thread, every signal blocked in it. -1 (errno set)
   when it cannot be made. */
int linkverify_start(struct linkverify *v);
/* Stops and joins the worker thread (a no-op when it is not running).
   NULL is a no-op. */
void linkverify_stop(struct linkverify *v);
/* Stops the worker, drops every item not handed over (drop), frees the
   worker's loop. NULL is a no-op. */
void linkverify_free(struct linkverify *v);

/* On the worker: queues item for the main loop, waking it. */
void linkverify_post(struct linkverify *v, void *item);

/* Most items handed over in one loop turn so far. */
size_t linkverify_turn_max(const struct linkverify *v);
/* On the worker, after each costly step (an Ed25519 check): lets any
   thread the step kept waiting run first. A nicer thread alone does not
   give way: the kernel's fair scheduler let it finish its slice, 3 ms of
   checks, while the loop had woken with a client's keystroke. */
void linkverify_give_way(void);

#endif
