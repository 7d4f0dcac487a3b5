/* server: the sidecar daemon: listens for gateway links (when --listen
   is given), adopts the links its dialers open (--dial), answers the
   hello, routes every link request to its session, reaps children and
   exited sessions, and shuts down on SIGTERM. */
#ifndef PTG_SERVER_H
#define PTG_SERVER_H

#include "config.h"

struct server;
struct linkconn;
struct ev_loop;

/* What the owner of an adopted link (a dialer) hears of its life; every
   hook is optional. */
struct server_link_hooks {
	/* The gateway said Hello (its credential was taken) and the HelloAck
	   is queued: the link is up. */
	void (*on_linked)(void *user, const char *gateway_id);
	/* The gateway refused the link's credential (LinkRefused) and the
	   link is being closed; reason is the gateway's, untrusted text. */
	void (*on_refused)(void *user, const char *reason);
	/* The link ended (reason says why); the linkconn is gone on return. */
	void (*on_close)(void *user, const char *reason);
};

/* Listens on cfg->listen when cfg->listen_given. Returns NULL after
   logging why it cannot. */
struct server *server_new(const struct sidecar_config *cfg);
void server_free(struct server *srv);
/* Runs until SIGTERM or SIGINT; returns 0 or a negative errno. */
int server_run(struct server *srv);
/* The loop the server runs on, for its dialers' ios and timers. */
struct ev_loop *server_loop(struct server *srv);
/* Takes fd (connected, non-blocking) as a gateway link, exactly as an
   accepted one from then on (hello, requests, frames, flow control, the
   stall bound), plus the LinkRefused a dialled link may get before its
   Hello; hooks (kept, not copied) tell user of its life. name goes in
   logs. Returns the link's connection, valid until hooks->on_close, or
   NULL (fd closed, logged) when it cannot be watched. Links a server
   adopts do not count against the accepted links' limit. */
struct linkconn *server_adopt_link(struct server *srv, int fd, const char *name,
				   const struct server_link_hooks *hooks, void *user);

#endif
