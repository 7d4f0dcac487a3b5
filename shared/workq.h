/* workq: a work-queue: a FIFO (an STAILQ) of items under one mutex, and
   one consumer, either a worker thread of the queue's own (workq_start:
   it runs the queue's function on each item, oldest first) or an event
   loop that pops the items itself (workq_pop), woken through an eventfd
   that becomes readable when an item lands in an empty queue.

   Items are intrusive (a struct workq_item inside the caller's struct)
   and each is in the queue at most once: idle, queued, or running (with
   the worker). Tickets are handed out in submission order and the one
   worker finishes items in that order, so "done through ticket T" is a
   single counter (workq_wait).

   Accounting: an item has a size in the caller's units (bytes); the
   queue counts the sizes of the items queued or running, keeps the peak,
   and under a limit makes workq_submit wait while the queue is full (an
   empty queue takes any item, so the wait ends).

   The worker takes no signal: the loop handles them all. */
#ifndef PTG_WORKQ_H
#define PTG_WORKQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "list.h"

enum workq_state { WORKQ_IDLE, WORKQ_QUEUED, WORKQ_RUNNING };

struct workq_item {
	STAILQ_ENTRY(workq_item) entry; /* under the queue's mutex */
	enum workq_state state;		/* under the queue's mutex */
	size_t size;			/* set before workq_submit */
	int64_t ticket;			/* given by workq_submit */
};

/* The struct of type holding the item it as its member field. */
#define WORKQ_OWNER(it, type, field) ((type *)((char *)(it)-offsetof(type, field)))

struct workq;

/* Runs on the worker, without the queue's mutex, for each item in
   order. It calls workq_done(q, it) exactly once, when the item's
   counted part is finished; from then on the item is the caller's again
   and the function may go on with it (or free it). */
typedef void (*workq_fn)(struct workq *q, struct workq_item *it, void *user);

/* A queue whose worker (started by workq_start) runs fn(q, item, user);
   fn NULL: a queue the loop empties with workq_pop, woken through
   workq_wake_fd. No limit. NULL (errno set) when the eventfd cannot be
   made. */
struct workq *workq_new(workq_fn fn, void *user);
/* Stops the worker (it finishes the item it runs) and frees the queue;
   items still queued are their owners' (a loop pops them first). NULL:
   no-op. */
void workq_free(struct workq *q);

/* Starts the worker thread (named name when not NULL) unless it runs
   already. 0, or a negative errno when it cannot be made. */
int workq_start(struct workq *q, const char *name);

/* Queues the idle item it (its size set), waiting first while the limit
   leaves no room for it. Returns its ticket (> 0). */
int64_t workq_submit(struct workq *q, struct workq_item *it);
/* Readies an idle item for the worker (the caller's thread, under the
   queue's mutex): it writes what the queue's function will read, and
   calls nothing of the queue's. */
typedef void (*workq_fill_fn)(struct workq_item *it, void *arg);
/* A hand-over in one hold of the mutex, for an item only the caller
   submits: when it is idle, gives it size, runs fill(it, arg) and queues
   it as workq_submit does (waiting first for room under a limit).
   Returns its ticket (> 0), or 0 when it is queued or running (then
   nothing is done). *size_before (unless NULL): the size queued or
   running as the call found it, before any wait. */
int64_t workq_submit_if_idle(struct workq *q, struct workq_item *it, size_t size,
			     workq_fill_fn fill, void *arg, size_t *size_before);
/* From the queue's function: it is done; its size is no longer counted,
   its ticket and every one before it are done. */
void workq_done(struct workq *q, struct workq_item *it);

/* Waits until the item of ticket, and every one before, is done. */
void workq_wait(struct workq *q, int64_t ticket);
/* Waits until it is idle. */
void workq_wait_idle(struct workq *q, struct workq_item *it);
/* Afterwards the worker does not have it: a queued item is taken off
   the queue (uncounted, idle), a running one waited for. Returns the
   state it was found in. */
enum workq_state workq_take_back(struct workq *q, struct workq_item *it);
/* Whether it is queued or running. */
bool workq_busy(struct workq *q, struct workq_item *it);

/* A loop's queue: the oldest item, taken off the queue (uncounted,
   idle), or NULL when the queue is empty. */
struct workq_item *workq_pop(struct workq *q);
/* Whether no item is queued. */
bool workq_empty(struct workq *q);
/* A loop's queue: the eventfd (non-blocking) written when an item is
   queued in an empty queue; the loop reads it to rearm it. */
int workq_wake_fd(const struct workq *q);

/* Bounds the size queued (0: no bound); the peak starts again from what
   is queued now. */
void workq_set_limit(struct workq *q, size_t limit);
/* The size queued or running. */
size_t workq_size(struct workq *q);
/* The largest size queued or running since workq_new or workq_set_limit. */
size_t workq_peak(struct workq *q);

/* Tests: the worker takes no item until a caller has to wait for one
   (workq_wait, workq_wait_idle, workq_take_back or a full workq_submit),
   as if it were slower than anything, whatever the scheduler does; the
   wait lets it go, or it would never end. */
void workq_hold(struct workq *q);

/* Starts fn(arg) on a thread that takes no signal (the loop handles them
   all), named name when not NULL. 0, or a negative errno. */
int workq_thread_start(pthread_t *t, const char *name, void *(*fn)(void *), void *arg);

#endif
