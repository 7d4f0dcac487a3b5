/* server: the sidecar daemon: listens for gateway links, answers the
   hello, routes every link request to its session, reaps children and
   exited sessions, and shuts down on SIGTERM. */
#ifndef PTG_SERVER_H
#define PTG_SERVER_H

#include "config.h"

struct server;

/* Listens on cfg->listen. Returns NULL after logging why it cannot. */
struct server *server_new(const struct sidecar_config *cfg);
void server_free(struct server *srv);
/* Runs until SIGTERM or SIGINT; returns 0 or a negative errno. */
int server_run(struct server *srv);

#endif
