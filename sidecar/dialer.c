/* dialer: see dialer.h. A dialer is in one state at a time, each with its
   one timer's meaning: WAITING (the backoff), CONNECTING (the connect
   bound), OPENING (credential sent, the Hello bound) and UP (no timer).
   Once connected, the link belongs to the server; its hooks bring the
   dialer the Hello, a refusal and the end. */
#include "dialer.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

#include "config.h"
#include "credential.h"
#include "ev.h"
#include "linkconn.h"
#include "log.h"
#include "server.h"
#include "timeutil.h"
#include "xalloc.h"

#define PEER_TEXT_MAX 200 /* bytes of a gateway's text kept for a log line */

enum state { WAITING, CONNECTING, OPENING, UP };

struct dialer {
	struct dialer_group *g;
	struct addr addr;
	char where[ADDR_TEXT_MAX]; /* the address as text, for logs */
	char name[32];		   /* log context and link name: dial-N */
	enum state state;
	int fd;		  /* CONNECTING: the socket; -1 otherwise */
	struct ev_io *io; /* CONNECTING: waits for the connect */
	struct ev_timer *timer;
	struct linkconn *lc; /* OPENING, UP: the server's link */
	bool refused;	     /* the link ending was refused (already logged) */
	unsigned sent_token; /* the group's token_gen this link presented */
	struct dialer_backoff backoff;
};

struct dialer_group {
	struct server *srv;
	struct ev_loop *loop;
	struct credential *cred;
	struct dialer_env env;
	struct ev_timer *poll; /* the credential file's */
	unsigned token_gen;    /* counts the token's renewals */
	struct dialer *dialers;
	unsigned n;
};

/* ---- backoff ---- */

/* A schedule starting at base_ms, capped at cap_ms (>= base_ms), reset by
   a link up reset_ms. env is kept, not copied. */
static void dialer_backoff_init(struct dialer_backoff *b, const struct dialer_env *env,
				int64_t base_ms, int64_t cap_ms, int64_t reset_ms)
{
	b->env = env;
	b->base_ms = base_ms;
	b->cap_ms = cap_ms < base_ms ? base_ms : cap_ms;
	b->reset_ms = reset_ms;
	b->ceiling_ms = base_ms;
	b->up_since = -1;
}

/* The link came up (the gateway took the credential). */
static void dialer_backoff_up(struct dialer_backoff *b)
{
	b->up_since = b->env->now_ms(b->env->user);
}

/* The delay before the next attempt, after a failure or a lost link: a
   random draw from [0, ceiling], then the ceiling doubles up to the cap;
   first back to the base when the link that just ended was up reset_ms. */
static int64_t dialer_backoff_next(struct dialer_backoff *b)
{
	int64_t delay;

	if (b->up_since >= 0 && b->env->now_ms(b->env->user) - b->up_since >= b->reset_ms)
		b->ceiling_ms = b->base_ms;
	b->up_since = -1;
	/* Full jitter: sidecars that lost one gateway together do not dial
	   it again together. The modulo's bias is under 0.1% for any cap
	   up to an hour. */
	delay = (int64_t)(b->env->random(b->env->user) % (uint64_t)(b->ceiling_ms + 1));
	b->ceiling_ms = b->ceiling_ms > b->cap_ms / 2 ? b->cap_ms : b->ceiling_ms * 2;
	return delay;
}

/* ---- the real environment ---- */

static int64_t real_now_ms(void *user)
{
	(void)user;
	return time_mono_ms();
}

static uint32_t real_random(void *user)
{
	(void)user;
	return randombytes_random();
}

static const struct dialer_env real_env = {real_now_ms, real_random, NULL};

/* ---- one dialer ---- */

/* Untrusted text from the gateway made fit for one log line. */
static void printable(const char *in, char out[PEER_TEXT_MAX + 1])
{
	size_t i;

	for (i = 0; in && in[i] && i < PEER_TEXT_MAX; i++)
		out[i] = in[i] >= 0x20 && in[i] < 0x7f ? in[i] : '?';
	out[i] = '\0';
}

static void send_credential(struct dialer *d)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__LinkCredential c = PTG__LINK_CREDENTIAL__INIT;

	c.token = (char *)credential_token(d->g->cred, NULL);
	m.msg_case = PTG__LINK_MESSAGE__MSG_LINK_CREDENTIAL;
	m.link_credential = &c;
	linkconn_send(d->lc, &m);
	d->sent_token = d->g->token_gen;
}

/* A link that is up presents the current token: renewed now, or while
   the link was still opening with the old one. */
static void send_renewed(struct dialer *d)
{
	send_credential(d);
	log_info(d->name, "renewed credential sent to %s", d->where);
}

static void schedule(struct dialer *d)
{
	int64_t delay = dialer_backoff_next(&d->backoff);

	d->state = WAITING;
	log_info(d->name, "next attempt to %s in %lld ms", d->where, (long long)delay);
	ev_timer_arm(d->timer, delay, 0);
}

/* Ends a connect in progress, if any. */
static void drop_connect(struct dialer *d)
{
	ev_io_free(d->io);
	d->io = NULL;
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

static void connect_failed(struct dialer *d, const char *why)
{
	drop_connect(d);
	log_warn(d->name, "cannot reach %s (%s)", d->where, why);
	schedule(d);
}

static void on_linked(void *user, const char *gateway_id)
{
	struct dialer *d = user;
	char gw[PEER_TEXT_MAX + 1];

	printable(gateway_id, gw);
	d->state = UP;
	ev_timer_disarm(d->timer);
	dialer_backoff_up(&d->backoff);
	log_info(d->name, "linked to %s (gateway '%.64s')", d->where, gw);
	if (d->sent_token != d->g->token_gen)
		send_renewed(d);
}

static void on_refused(void *user, const char *reason)
{
	struct dialer *d = user;
	char why[PEER_TEXT_MAX + 1];

	printable(reason, why);
	d->refused = true;
	log_warn(d->name, "refused by %s (%s)", d->where,
		 why[0] ? why : "no reason given");
}

static void on_link_close(void *user, const char *reason)
{
	struct dialer *d = user;

	d->lc = NULL;
	if (!d->refused)
		log_warn(d->name, "link to %s lost (%s)", d->where, reason);
	d->refused = false;
	schedule(d);
}

static const struct server_link_hooks hooks = {
    .on_linked = on_linked,
    .on_refused = on_refused,
    .on_close = on_link_close,
};

/* Connected: the credential first, then the link is the server's. */
static void hand_over(struct dialer *d)
{
	int fd = d->fd;

	ev_io_free(d->io);
	d->io = NULL;
	d->fd = -1;
	d->lc = server_adopt_link(d->g->srv, fd, d->name, &hooks, d);
	if (!d->lc) {
		schedule(d); /* server_adopt_link closed fd and said why */
		return;
	}
	d->state = OPENING;
	send_credential(d);
	log_info(d->name, "connected to %s, credential sent", d->where);
	ev_timer_arm(d->timer, DIALER_HELLO_MS, 0);
}

static void on_connect(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct dialer *d = user;
	int err = 0;
	socklen_t len = sizeof(err);

	(void)io;
	(void)events;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err == EINPROGRESS || err == EALREADY)
		return;
	if (err) {
		connect_failed(d, strerror(err));
		return;
	}
	hand_over(d);
}

static void start(struct dialer *d)
{
	char err[LOG_ERR_MAX];

	d->state = CONNECTING;
	log_info(d->name, "dialling %s", d->where);
	d->fd = addr_connect(&d->addr, err, sizeof(err));
	if (d->fd < 0) {
		d->fd = -1;
		connect_failed(d, err);
		return;
	}
	d->io = ev_io_new(d->g->loop, d->fd, EV_WRITE, on_connect, d);
	if (!d->io) {
		connect_failed(d, strerror(errno));
		return;
	}
	ev_timer_arm(d->timer, DIALER_CONNECT_MS, 0);
}

static void on_timer(struct ev_timer *t, void *user)
{
	struct dialer *d = user;

	(void)t;
	switch (d->state) {
	case WAITING:
		start(d);
		break;
	case CONNECTING:
		connect_failed(d, "connect timed out");
		break;
	case OPENING:
		/* on_link_close follows, from the loop's hook. */
		linkconn_close(d->lc, "no Hello from the gateway in time");
		break;
	case UP:
		break;
	}
}

/* ---- the group ---- */

static void on_poll(struct ev_timer *t, void *user)
{
	struct dialer_group *g = user;

	(void)t;
	if (credential_check_changed(g->cred, time_now_ms() / 1000) != 1)
		return;
	g->token_gen++;
	/* A link still opening gets it at its Hello (on_linked): a second
	   credential before the gateway answered the first is not the
	   opening the gateway expects. */
	for (unsigned i = 0; i < g->n; i++)
		if (g->dialers[i].state == UP)
			send_renewed(&g->dialers[i]);
}

struct dialer_group *dialer_group_new(struct server *srv,
				      const struct sidecar_config *cfg,
				      struct credential *cred,
				      const struct dialer_env *env)
{
	struct dialer_group *g = xcalloc(1, sizeof(*g));

	g->srv = srv;
	g->loop = server_loop(srv);
	g->cred = cred;
	g->env = env ? *env : real_env;
	g->n = cfg->n_dial;
	g->dialers = xcalloc(g->n ? g->n : 1, sizeof(*g->dialers));
	for (unsigned i = 0; i < g->n; i++) {
		struct dialer *d = &g->dialers[i];

		d->g = g;
		d->addr = cfg->dial[i];
		d->fd = -1;
		addr_format(&d->addr, d->where, sizeof(d->where));
		snprintf(d->name, sizeof(d->name), "dial-%u", i + 1);
		dialer_backoff_init(&d->backoff, &g->env, DIALER_BACKOFF_BASE_MS,
				    cfg->dial_backoff_max_ms, DIALER_BACKOFF_RESET_MS);
		d->state = WAITING;
		d->timer = ev_timer_new(g->loop, 0, 0, on_timer, d);
	}
	if (cred)
		g->poll = ev_timer_new(g->loop, CREDENTIAL_POLL_MS, CREDENTIAL_POLL_MS,
				       on_poll, g);
	return g;
}

void dialer_group_free(struct dialer_group *g)
{
	if (!g)
		return;
	for (unsigned i = 0; i < g->n; i++) {
		drop_connect(&g->dialers[i]);
		ev_timer_free(g->dialers[i].timer);
	}
	ev_timer_free(g->poll);
	free(g->dialers);
	free(g);
}
