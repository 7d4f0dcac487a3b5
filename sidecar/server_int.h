/* server_int: what the files of the server module share and nothing
   else sees: server.c (links, signals, upkeep) and server_ops.c (the
   session registry and the request handlers), which server.c calls and
   which never calls it. */
#ifndef PTG_SERVER_INT_H
#define PTG_SERVER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "link.pb-c.h"
#include "linkconn.h"
#include "list.h"
#include "server.h"
#include "session.h"
#include "stats.h"
#include "tasks.h"

/* One link to a gateway, accepted or dialled. */
struct link {
	struct server *srv;
	struct linkconn *lc;
	bool said_hello;
	const struct server_link_hooks *hooks; /* an adopted (dialled) link's; NULL */
	void *hooks_user;
	uint64_t stall_written; /* linkconn_written when the stall began */
	int64_t stall_since_ms; /* backed up and no progress since; 0: not */
	LIST_ENTRY(link) entry; /* in srv->links */
};

/* The sidecar daemon. */
struct server {
	const struct sidecar_config *cfg;
	struct ev_loop *loop;
	int listen_fd;
	struct ev_io *listen_io;
	struct ev_timer *tick;
	uid_t session_uid;	   /* --session-user's uid */
	bool accept_paused;	   /* out of descriptors: listener off until the tick */
	struct session **sessions; /* sorted by session id */
	size_t n_sessions;
	LIST_HEAD(, link) links;
	unsigned n_links;    /* every link */
	unsigned n_accepted; /* of them, the ones accepted (MAX_LINKS) */
	unsigned link_seq;
	struct tasks *tasks;
	struct stats_gone gone; /* PTY bytes of sessions reaped */
};

typedef void (*handler_fn)(struct link *l, const Ptg__LinkMessage *m);

/* The handler of a LinkMessage's case, NULL for none (LinkRefused is the
   link's own, in server.c). */
handler_fn server__handler(unsigned msg_case);
/* Orders sessions by id, for qsort. */
int server__by_id(const void *a, const void *b);
/* Removes the sessions session_reapable says are done with. */
void server__reap_sessions(struct server *srv, int64_t now_ms);

#endif
