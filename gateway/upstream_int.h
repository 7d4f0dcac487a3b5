/* upstream_int: what the upstream's files share and nothing else sees:
   the link's fields (upstream.c: dialling, hello, requests and replies,
   a registered instance's links; upstream_fanout.c: the attachments and
   the encode-once fan-out of frames to them). upstream.c calls into
   upstream_fanout.c, never the other way. */
#ifndef PTG_UPSTREAM_INT_H
#define PTG_UPSTREAM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "list.h"
#include "ptg_limits.h"
#include "sidestats.h"
#include "upstream.h"

struct ev_io;
struct ev_timer;
struct linkconn;

/* Two sidecars presenting one instance id (a VM cloned with its
   credential, a restarted VM whose old link has not timed out yet) each
   replace the other's link as they re-dial: past FLAP_MAX replacements
   in FLAP_WINDOW_MS, new links for the instance are refused ("flapping")
   for a backoff that doubles from FLAP_BACKOFF_MIN_MS up to
   FLAP_BACKOFF_MAX_MS, so the live link is left alone meanwhile. */
#define FLAP_MAX	    5
#define FLAP_WINDOW_MS	    10000
#define FLAP_BACKOFF_MIN_MS 1000
#define FLAP_BACKOFF_MAX_MS 60000

struct upstream__pending {
	uint64_t id;
	upstream_reply_fn cb;
	void *user;
	int64_t deadline;
	LIST_ENTRY(upstream__pending) entry;
};

/* The attachments of one session: a frame for a session reaches its
   own attachments without looking at any other session's. */
struct upstream__group {
	char session_id[PTG_ID_MAX + 1];
	uint64_t *ids; /* attach ids, in binding order */
	size_t n, cap;
};

struct upstream__binding {
	uint64_t attach_id;
	struct upstream__group *group;
	const struct upstream_sink *sink;
	void *user;
};

struct upstream {
	const struct upstream_host *host;
	char id[PTG_ID_MAX + 1];
	char name[300];
	struct addr addr;
	int connect_fd;
	struct ev_io *connect_io;
	struct linkconn *lc;
	bool up;
	bool ever_up;
	struct ev_timer *retry;
	int64_t backoff_ms;
	struct ev_timer *sweep;
	uint64_t next_request;
	uint64_t next_attach;
	LIST_HEAD(, upstream__pending) pending;
	struct upstream__binding *binds; /* sorted by attach id */
	size_t n_binds, cap_binds;
	struct upstream__group **groups; /* sorted by session id */
	size_t n_groups, cap_groups;
	struct buf json; /* the fan-out's encoder output, reused */
	Ptg__Limits limits;
	bool has_limits;
	bool control_approval; /* its HelloAck offers control policies */
	char refused[200];     /* why the last hello was refused, or "" */
	/* a registered instance: its links dial in */
	bool registered;
	int64_t exp_s;		 /* the linked credential's exp */
	struct ev_timer *lapse;	 /* exp + --link-renew-grace: the link closes */
	struct ev_timer *grace;	 /* down --link-grace: the instance leaves */
	int64_t flaps[FLAP_MAX]; /* monotonic times of the last replacements */
	size_t n_flaps;		 /* replacements recorded, at most FLAP_MAX */
	int64_t flap_until;	 /* new links refused until then */
	int64_t flap_backoff_ms;
	struct sidestats stats; /* what the sidecar reports of itself */
};

/* upstream_fanout.c */
/* The binding of attach_id, or NULL. */
struct upstream__binding *upstream__find_binding(struct upstream *u, uint64_t attach_id);
/* Hands f to the attachments it is for: to its target attachment, or to
   every attachment of its session; encoded once, and only if one takes it. */
void upstream__route_frame(struct upstream *u, const Ptg__Frame *f);
/* Hands n to the attachments of its session that take control notices,
   or to its target attachment. */
void upstream__route_control(struct upstream *u, const Ptg__ControlNotice *n);
/* Hands tu to the task subscriber with its attach id, in its session. */
void upstream__route_task_update(struct upstream *u, const Ptg__TaskUpdate *tu);
/* The link is gone: every binding goes, each sink told (link_lost). */
void upstream__drop_bindings(struct upstream *u);
/* Frees what the bindings hold; none is left (upstream__drop_bindings). */
void upstream__fanout_free(struct upstream *u);

#endif
