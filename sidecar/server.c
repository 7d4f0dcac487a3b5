/* server: see server.h. The links (accepted and dialled), their
   messages handed to the handlers of server_ops.c, signals and upkeep;
   the session registry and the request handlers are server_ops.c. */
#include "server.h"

#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#include "ev.h"
#include "link.h"
#include "linkconn.h"
#include "log.h"
#include "ptg_limits.h"
#include "recstore.h"
#include "server_int.h"
#include "session.h"
#include "stats.h"
#include "store.h"
#include "tasks.h"
#include "timeutil.h"
#include "wire.h"
#include "xalloc.h"

#define MAX_LINKS 64

/* A gateway's refusal of a dialled link's credential: only before its
   Hello, and only on a link that presented one. */
static void on_refused(struct link *l, const Ptg__LinkMessage *m)
{
	if (!l->hooks) {
		linkconn_close(l->lc, "unexpected LinkRefused on an accepted link");
		return;
	}
	if (l->hooks->on_refused)
		l->hooks->on_refused(l->hooks_user, m->link_refused->reason);
	linkconn_close(l->lc, "credential refused");
}

/* ---- links ---- */

static void on_link_message(struct linkconn *lc, const Ptg__LinkMessage *m, void *user)
{
	struct link *l = user;
	unsigned c = (unsigned)m->msg_case;
	handler_fn handler = server__handler(c);

	if (c == PTG__LINK_MESSAGE__MSG_LINK_REFUSED && !l->said_hello) {
		on_refused(l, m);
		return;
	}
	if (!handler) {
		log_warn(linkconn_name(lc), "unexpected message %u from gateway", c);
		linkconn_close(lc, "unexpected message");
		return;
	}
	if (!l->said_hello && c != PTG__LINK_MESSAGE__MSG_HELLO) {
		linkconn_close(lc, "request before hello");
		return;
	}
	handler(l, m);
}

static void on_link_close(struct linkconn *lc, const char *reason, void *user)
{
	struct link *l = user;
	struct server *srv = l->srv;

	if (!l->hooks)
		log_info(linkconn_name(lc), "link closed: %s", reason);
	for (size_t i = 0; i < srv->n_sessions; i++)
		session_drop_link(srv->sessions[i], lc);
	tasks_drop_link(srv->tasks, lc);
	LIST_REMOVE(l, entry);
	srv->n_links--;
	if (!l->hooks)
		srv->n_accepted--;
	else if (l->hooks->on_close)
		l->hooks->on_close(l->hooks_user, reason);
	free(l);
}

static const struct linkconn_ops link_ops = {
    .on_message = on_link_message,
    .on_close = on_link_close,
};

/* With --session-user, session code must not reach the link. The unix
   socket is 0600 and owned by us, so this is a second wall: a peer
   running as the session user is refused, and on vsock only the host
   (where the gateway runs) may dial in, not this VM itself. */
static int peer_allowed(const struct server *srv, int cfd)
{
	struct sockaddr_vm vm;
	socklen_t len;
	struct ucred cred;

	if (!srv->cfg->session_user[0])
		return 1;
	if (srv->cfg->listen.kind == ADDR_UNIX) {
		len = sizeof(cred);
		return getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
		       cred.uid != srv->session_uid;
	}
	if (srv->cfg->listen.kind == ADDR_VSOCK) {
		len = sizeof(vm);
		return getpeername(cfd, (struct sockaddr *)&vm, &len) == 0 &&
		       vm.svm_cid == VMADDR_CID_HOST;
	}
	return 0;
}

/* Makes fd a link of srv: what an accepted and a dialled link share. */
static struct link *adopt(struct server *srv, int fd, const char *name,
			  const struct server_link_hooks *hooks, void *user)
{
	struct link *l = xcalloc(1, sizeof(*l));

	l->srv = srv;
	l->hooks = hooks;
	l->hooks_user = user;
	l->lc = linkconn_new(srv->loop, fd, name, &link_ops, l);
	if (!l->lc) {
		/* linkconn_new closed fd; the peer dials again. */
		log_warn(name, "dropping a link: cannot watch it: %s", strerror(errno));
		free(l);
		return NULL;
	}
	/* Input, joins and resizes: read before any session's PTY batch. */
	linkconn_set_urgent(l->lc, true);
	LIST_INSERT_HEAD(&srv->links, l, entry);
	srv->n_links++;
	if (!hooks)
		srv->n_accepted++;
	return l;
}

struct linkconn *server_adopt_link(struct server *srv, int fd, const char *name,
				   const struct server_link_hooks *hooks, void *user)
{
	static const struct server_link_hooks none;
	struct link *l = adopt(srv, fd, name, hooks ? hooks : &none, user);

	return l ? l->lc : NULL;
}

struct ev_loop *server_loop(struct server *srv)
{
	return srv->loop;
}

static void on_accept(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct server *srv = user;
	char name[32];
	int cfd;

	while ((cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		if (!peer_allowed(srv, cfd)) {
			log_warn(NULL,
				 "refusing a link from the session user or this VM");
			close(cfd);
			continue;
		}
		if (srv->n_accepted >= MAX_LINKS) {
			log_warn(NULL, "refusing a link: %d links already", MAX_LINKS);
			close(cfd);
			continue;
		}
		snprintf(name, sizeof(name), "link-%u", ++srv->link_seq);
		if (adopt(srv, cfd, name, NULL, NULL))
			log_info(name, "accepted");
	}
	if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
		/* Out of descriptors: the pending connection stays queued and
		   the listener would wake the loop at once, forever. Stop
		   watching it until the next tick. */
		log_warn(NULL, "accept: %s; not accepting links for a second",
			 strerror(errno));
		ev_io_set(srv->listen_io, 0);
		srv->accept_paused = true;
	} else if (errno != EAGAIN && errno != EINTR) {
		log_warn(NULL, "accept: %s", strerror(errno));
	}
}

/* A gateway that stops reading would make the sidecar buffer without
   bound, or hold the PTYs its sessions stopped reading for it
   (SESSION_LINK_HIGH_WATER); past the configured limit, or backed up
   with no byte taken for SESSION_LINK_STALL_MS, its link is dropped and
   its clients reconnect with replay_from. */
static void check_link_stall(struct link *l, int64_t now)
{
	uint64_t written = linkconn_written(l->lc);

	if (linkconn_pending(l->lc) <= SESSION_LINK_HIGH_WATER ||
	    written != l->stall_written) {
		l->stall_since_ms = 0;
		l->stall_written = written;
		return;
	}
	if (!l->stall_since_ms)
		l->stall_since_ms = now;
	else if (now - l->stall_since_ms >= SESSION_LINK_STALL_MS)
		linkconn_close(l->lc, "gateway is not reading (link stalled)");
}

static void check_link_backlog(void *user)
{
	struct server *srv = user;
	int64_t now = time_mono_ms();
	struct link *l;

	LIST_FOREACH(l, &srv->links, entry) {
		if (linkconn_pending(l->lc) > srv->cfg->link_buffer_bytes)
			linkconn_close(l->lc,
				       "gateway is not reading (link buffer full)");
		else
			check_link_stall(l, now);
	}
}

/* ---- signals and upkeep ---- */

static void on_sigchld(int signo, void *user)
{
	struct server *srv = user;
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (tasks_child_exited(srv->tasks, pid, status))
			continue;
		for (size_t i = 0; i < srv->n_sessions; i++) {
			if (session_pid(srv->sessions[i]) == pid) {
				session_child_exited(srv->sessions[i], status);
				break;
			}
		}
	}
}

static void on_stop(int signo, void *user)
{
	struct server *srv = user;

	log_info(NULL, "%s: shutting down", strsignal(signo));
	ev_loop_stop(srv->loop);
}

static void on_tick(struct ev_timer *t, void *user)
{
	struct server *srv = user;
	int64_t now = time_now_ms();

	for (size_t i = 0; i < srv->n_sessions; i++)
		session_tick(srv->sessions[i], now);
	session_state_budget(srv->sessions, srv->n_sessions, srv->cfg->state_max_bytes);
	server__reap_sessions(srv, now);
	if (srv->accept_paused && srv->listen_io) {
		srv->accept_paused = false;
		ev_io_set(srv->listen_io, EV_READ);
	}
}

static int restore_sessions(struct server *srv)
{
	const char *dir = srv->cfg->state_dir;
	struct store_record *recs;
	size_t n;
	int rc;

	if (!dir[0])
		return 0;
	recstore_seal_with(&srv->cfg->state_keys); /* records, screens, tasks */
	rc = store_open(dir);
	if (rc == 0)
		rc = store_read_all(dir, &recs, &n);
	if (rc < 0) {
		log_error(NULL, "state dir %s: %s", dir, strerror(-rc));
		return rc;
	}
	srv->sessions = xcalloc(n + 1, sizeof(*srv->sessions));
	for (size_t i = 0; i < n; i++)
		srv->sessions[srv->n_sessions++] =
		    session_restore(srv->cfg, srv->loop, &recs[i]);
	store_records_free(recs, n);
	qsort(srv->sessions, srv->n_sessions, sizeof(*srv->sessions), server__by_id);
	return 0;
}

static int open_listener(struct server *srv)
{
	const struct sidecar_config *cfg = srv->cfg;
	char err[LOG_ERR_MAX], where[ADDR_TEXT_MAX];

	addr_format(&cfg->listen, where, sizeof(where));
	srv->listen_fd = addr_listen(
	    &cfg->listen, cfg->allow_public ? ADDR_ALLOW_PUBLIC : 0, err, sizeof(err));
	if (srv->listen_fd < 0) {
		log_error(NULL, "cannot listen on %s: %s", where, err);
		return srv->listen_fd;
	}
	return 0;
}

struct server *server_new(const struct sidecar_config *cfg)
{
	struct server *srv = xcalloc(1, sizeof(*srv));
	char where[ADDR_TEXT_MAX];

	srv->cfg = cfg;
	srv->loop = ev_loop_new();
	if (!srv->loop) {
		log_error(NULL, "cannot create the event loop: %s", strerror(errno));
		free(srv);
		return NULL;
	}
	if (cfg->session_user[0]) {
		const struct passwd *pw = getpwnam(cfg->session_user);

		/* config_parse checked it exists; uid 0 is never a session user. */
		srv->session_uid = pw ? pw->pw_uid : 0;
	}
	srv->listen_fd = -1;
	if (restore_sessions(srv) < 0 || !(srv->tasks = tasks_new(cfg, srv->loop))) {
		ev_loop_free(srv->loop);
		free(srv);
		return NULL;
	}
	srv->tick = ev_timer_new(srv->loop, 1000, 1000, on_tick, srv);
	/* The signals before the socket: once it exists, a SIGTERM (a
	   service manager's stop) is an orderly one, never the default
	   action's kill. */
	if (ev_signal_add(srv->loop, SIGCHLD, on_sigchld, srv) < 0 ||
	    ev_signal_add(srv->loop, SIGTERM, on_stop, srv) < 0 ||
	    ev_signal_add(srv->loop, SIGINT, on_stop, srv) < 0 ||
	    ev_signal_add(srv->loop, SIGPIPE, NULL, NULL) < 0) {
		log_error(NULL, "cannot take the signals: %s", strerror(errno));
		server_free(srv);
		return NULL;
	}
	/* Listening last: a gateway that can connect finds the state
	   directory tightened and the sessions restored. */
	if (cfg->listen_given && open_listener(srv) < 0) {
		server_free(srv);
		return NULL;
	}
	if (srv->listen_fd >= 0 &&
	    !(srv->listen_io =
		  ev_io_new(srv->loop, srv->listen_fd, EV_READ, on_accept, srv))) {
		log_error(NULL, "cannot watch the listener: %s", strerror(errno));
		server_free(srv);
		return NULL;
	}
	ev_hook_add(srv->loop, check_link_backlog, srv);
	if (srv->listen_fd >= 0) {
		addr_format(&cfg->listen, where, sizeof(where));
		log_info(NULL, "listening on %s (instance %s)", where, cfg->instance_id);
	} else {
		log_info(NULL, "not listening: dialling only (instance %s)",
			 cfg->instance_id);
	}
	return srv;
}

int server_run(struct server *srv)
{
	return ev_loop_run(srv->loop);
}

void server_free(struct server *srv)
{
	if (!srv)
		return;
	/* Hang up every program before the final SIGKILL in session_free. */
	for (size_t i = 0; i < srv->n_sessions; i++)
		if (!session_exited(srv->sessions[i]))
			kill(-session_pid(srv->sessions[i]), SIGHUP);
	/* The state dir keeps their records: the next start shows them, the
	   ones whose program dies with us as lost. */
	while (srv->n_sessions) {
		struct session *s = srv->sessions[--srv->n_sessions];
		session_checkpoint(s);
		session_free(s);
	}
	free(srv->sessions);
	while (!LIST_EMPTY(&srv->links)) {
		struct link *l = LIST_FIRST(&srv->links);

		LIST_REMOVE(l, entry);
		linkconn_free(l->lc);
		free(l);
	}
	tasks_free(srv->tasks);
	ev_io_free(srv->listen_io);
	ev_timer_free(srv->tick);
	if (srv->listen_fd >= 0) {
		close(srv->listen_fd);
		if (srv->cfg->listen.kind == ADDR_UNIX)
			unlink(srv->cfg->listen.path);
	}
	ev_loop_free(srv->loop);
	free(srv);
}
