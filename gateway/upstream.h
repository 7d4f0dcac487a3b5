/* upstream: the gateway's link to one instance's sidecar. Dials with
   backoff, says hello, matches replies to requests, and hands frames to
   the attachments of each session. The fan-out lives in
   upstream_fanout.c: the recipients of a frame are found first, then the
   frame is encoded once (JSON, then one WebSocket frame) and that struct
   wsframe is shared by reference with every recipient, whose output
   queue (outq.c) holds the reference (deliver in conn/conn_ops.c). An
   upstream does not know what an attachment is: it delivers to the sink
   it was given with the binding (a table of callbacks and a user
   pointer, as libvterm does it). */
#ifndef PTG_UPSTREAM_H
#define PTG_UPSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "addr.h"
#include "link.pb-c.h"

struct ev_loop;
struct gw_config;
struct keyset;
struct metrics;
struct upstream;
struct wsframe;

/* r is NULL when the link dropped or the request timed out. The reply
   and everything in it are valid only during the call. A reply is
   checked before it is handed on (the protocol's limits, the size of
   the JSON it may become, the memory answers hold): one refused arrives
   as a reply with no result, the same ids, and one of these codes, which
   the sidecar never sends (routes_status_from_link: 502 and 503). */
#define UPSTREAM_CODE_BAD_REPLY 1000 /* over the limits, or its answer over the cap */
#define UPSTREAM_CODE_SHED	1001 /* answers in flight hold their budget */
typedef void (*upstream_reply_fn)(const Ptg__Reply *r, void *user);

/* What a link needs from the gateway, and all it sees of it: given at
   upstream_new, it outlives every link. */
struct upstream_host {
	struct ev_loop *loop;
	const struct gw_config *cfg;
	struct metrics *metrics;
	struct keyset *const *link_keys; /* --link-key's keys, replaced on SIGHUP */
	void *owner;			 /* the first argument of registered_gone */
	/* A registered instance was down for --link-grace: the owner
	   removes the instance and frees u. */
	void (*registered_gone)(void *owner, struct upstream *u);
};

/* Never fails (allocation aborts, timers cost no descriptor); the link
   is dialled at once and again with backoff. */
struct upstream *upstream_new(const struct upstream_host *host, const char *instance_id,
			      const struct addr *a);
/* A registered instance's upstream: it has no address and
   never dials; its links dial in (linklisten.c) and are handed over by
   upstream_adopt. Down for --link-grace, it asks the gateway to remove
   it (host->registered_gone). Never fails. */
struct upstream *upstream_new_registered(const struct upstream_host *host,
					 const char *instance_id);
/* 1 for an upstream made by upstream_new_registered. */
bool upstream_registered(const struct upstream *u);
/* Takes fd (connected, non-blocking), a link whose credential for this
   instance was verified and lapses at exp_s (seconds since the epoch),
   and says hello on it: from then on it is a link like any other, plus
   renewal (a LinkCredential on it, verified again: same instance, new
   exp) and a watchdog closing it at exp_s + --link-renew-grace. A live
   link is replaced (closed and logged; its clients told as for a lost
   link), but past the flapping bound new ones are refused instead:
   -EBUSY, fd untouched. Returns 0 with fd taken. */
int upstream_adopt(struct upstream *u, int fd, const char *peer, int64_t exp_s);
/* Fails pending requests (callbacks with NULL) and drops the link. */
void upstream_free(struct upstream *u);
const char *upstream_instance(const struct upstream *u);
/* Points the link at another address (instances file reload). */
void upstream_set_addr(struct upstream *u, const struct addr *a);
/* The sidecar's limits from its HelloAck; NULL before the first one. */
const Ptg__Limits *upstream_limits(const struct upstream *u);
/* 1 when the link is connected and the hello is answered. */
bool upstream_up(const struct upstream *u);
/* 1 when the sidecar said it knows control policies (HelloAck). */
bool upstream_control_approval(const struct upstream *u);
/* What the sidecar last reported of itself (sidestats.h). */
struct sidestats;
const struct sidestats *upstream_stats(const struct upstream *u);
/* Sessions with attachments through this gateway, and those attachments. */
void upstream_counts(const struct upstream *u, unsigned *sessions, unsigned *clients);
/* "up", "down", or "refused: WHY" when the sidecar's hello was refused
   (it reported another instance id), for /readyz. */
const char *upstream_state(const struct upstream *u);

/* A fresh request id for a message the caller is about to send. */
uint64_t upstream_next_id(struct upstream *u);
/* Sends m (whose request_id field the caller set to id) and calls cb once
   with the reply, or with NULL. Returns 0, or -ENOTCONN (cb not called). */
int upstream_request(struct upstream *u, const Ptg__LinkMessage *m, uint64_t id,
		     upstream_reply_fn cb, void *user);
/* The requester is gone: cb will not be called for id. */
void upstream_cancel(struct upstream *u, uint64_t id);
/* Sends m without expecting a reply. Returns 0 or -ENOTCONN. */
int upstream_send(struct upstream *u, const Ptg__LinkMessage *m);

/* Where the frames and replies of one attachment go. Every callback may
   unbind any attachment, its own included. */
struct upstream_sink {
	/* A frame for the attachment; wf is its encoded WebSocket frame,
	   shared by every recipient (take a reference to keep it). now_ms
	   is the monotonic clock (time_mono_ms), read once for all of them:
	   with a thousand recipients a read each was a thousand a frame. */
	void (*frame)(const Ptg__Frame *f, struct wsframe *wf, int64_t now_ms,
		      void *user);
	/* A reply with the attachment's id that no request was waiting for. */
	void (*reply)(const Ptg__Reply *r, void *user);
	/* The link dropped: the binding is already gone. */
	void (*link_lost)(void *user);
	/* A task update for the subscriber with the binding's id
	   (docs/protocol.md, "Tasks"). A sink that sets this and no frame
	   callback receives no frames. */
	void (*task_update)(const Ptg__TaskUpdate *tu, void *user);
	/* The pending control requests of the attachment's session. */
	void (*control)(const Ptg__ControlNotice *n, void *user);
};

/* Attachments: frames for (session, attach id) go to sink with user. */
uint64_t upstream_attach_id(struct upstream *u);
void upstream_bind(struct upstream *u, uint64_t attach_id, const char *session_id,
		   const struct upstream_sink *sink, void *user);
void upstream_unbind(struct upstream *u, uint64_t attach_id);

#endif
