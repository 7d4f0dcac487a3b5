/* linkverify: link openings checked off the event loop. A sidecar's
   credential costs an Ed25519 check; a thousand sidecars connecting at
   once made the loop spend their checks at its own priority, taking the
   CPU from the clients it serves. Here one worker thread, at a lower CPU
   priority (nice LINKVERIFY_NICE above the process's), checks the queued
   openings in order, and the loop sleeps meanwhile; the results come
   back through an eventfd and are handed over at most per_turn a loop
   turn (each becomes a registration, which is loop work). */
#ifndef PTG_LINKVERIFY_H
#define PTG_LINKVERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "ev.h"
#include "linkcred.h"

/* How much nicer the worker is than the process (capped at 19). */
#define LINKVERIFY_NICE 10

struct linkverify;

/* The check, on the worker thread: in[0, len) is an opening, *out filled
   when it returns 1. ctx is the caller's, read under linkverify_hold. */
typedef int (*linkverify_check_fn)(void *ctx, const uint8_t *in, size_t len,
				   struct linkcred *out);
/* A result, on the loop: rc and *c as check returned them for tag. */
typedef void (*linkverify_done_fn)(void *user, void *tag, int rc,
				   const struct linkcred *c);

/* Starts the worker. NULL (errno set) when the eventfd or the thread
   cannot be made. */
struct linkverify *linkverify_new(struct ev_loop *loop, linkverify_check_fn check,
				  void *ctx, linkverify_done_fn done, void *user,
				  size_t per_turn);
/* Stops and joins the worker; queued openings and undelivered results are
   dropped without a done call. NULL is a no-op. */
void linkverify_free(struct linkverify *v);

/* Queues a copy of in[0, len) for the check under tag, which the caller
   keeps valid until its done call (or linkverify_free). */
void linkverify_submit(struct linkverify *v, void *tag, const uint8_t *in, size_t len);

/* Between hold and release no check runs, so the check's context (the
   link keys) may be replaced. A check under way is waited for. */
void linkverify_hold(struct linkverify *v);
void linkverify_release(struct linkverify *v);

/* Most results handed over in one loop turn so far. */
size_t linkverify_turn_max(const struct linkverify *v);

#endif
