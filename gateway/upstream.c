/* upstream: see upstream.h. The link's life (dialling, hello, a
   registered instance's links and their renewal) and its requests and
   replies; the attachments and the fan-out of frames to them are
   upstream_fanout.c's, what the sidecar reports of itself sidestats.c's
   (driven from here, asking through stats_link). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "linkcaps.h"
#include "linkconn.h"
#include "linkcred.h"
#include "log.h"
#include "metrics.h"
#include "timeutil.h"
#include "upstream_int.h"
#include "xalloc.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
/* What one loop turn may spend reading and handing out one link's
   messages (linkconn_set_turn_budget): a sidecar flooding frames (a
   member bomb, Output far faster than its clients read) costs another
   instance's clients at most this, plus the one message that ran over,
   before their own turn (a flood of small frames took 231 to 255 ms a
   turn without it, 16 to 22 ms with it). */
#define LINK_TURN_BUDGET_US 5000
/* The largest JSON answer one reply may become (its text; the encoder's
   tree and the HTTP copy come on top). An honest one is far smaller: a
   page of a session list stops past 256 KiB with argv cut to 256 bytes,
   one session is at most 16 KiB of argv (96 KiB if every byte were a
   control byte) and its members. A hostile list of 16 MB could be 100 MB
   of JSON and 548 MiB of the gateway's memory. */
#define REPLY_ANSWER_MAX (8u << 20)
/* What all replies and their answers may hold at once (struct metrics
   reply_bytes): a reply that would pass it is answered 503. */
#define REPLY_BYTES_MAX (64u << 20)

static void dial(struct upstream *u);

/* ---- pending requests ---- */

static struct upstream__pending *take_pending(struct upstream *u, uint64_t id)
{
	struct upstream__pending *p;

	LIST_FOREACH(p, &u->pending, entry) {
		if (p->id == id) {
			LIST_REMOVE(p, entry);
			return p;
		}
	}
	return NULL;
}

static void fail_all_pending(struct upstream *u)
{
	struct upstream__pending *p;

	while ((p = LIST_FIRST(&u->pending))) {
		LIST_REMOVE(p, entry);
		p->cb(NULL, p->user);
		free(p);
	}
}

/* Looked up afresh after each callback, which may queue or cancel
   requests. */
static struct upstream__pending *first_expired(struct upstream *u, int64_t now)
{
	struct upstream__pending *p;

	LIST_FOREACH(p, &u->pending, entry) {
		if (p->deadline <= now)
			return p;
	}
	return NULL;
}

static void on_sweep(struct ev_timer *t, void *user)
{
	struct upstream *u = user;
	int64_t now = time_mono_ms();
	struct upstream__pending *p;

	while ((p = first_expired(u, now))) {
		LIST_REMOVE(p, entry);
		log_warn(u->name, "request %llu timed out", (unsigned long long)p->id);
		p->cb(NULL, p->user);
		free(p);
	}
	sidestats_poll(&u->stats, now);
}

/* In place of a refused reply, what its requester gets: the same ids,
   no result, code a gateway-only one (upstream.h), and why. */
static Ptg__Reply refusal(const Ptg__Reply *r, int code, const char *why)
{
	Ptg__Reply out = PTG__REPLY__INIT;

	out.request_id = r->request_id;
	out.attach_id = r->attach_id;
	out.client_op_id = r->client_op_id;
	out.code = (Ptg__ErrorCode)code;
	out.message = (char *)why;
	return out;
}

/* A reply is checked before anything of it is encoded: the protocol's
   limits (a sidecar is an untrusted peer), the cap on its answer, and
   the memory all answers hold. *held is what it reserves meanwhile. */
static Ptg__Reply screen_reply(struct upstream *u, const Ptg__Reply *r, size_t *held,
			       char *why, size_t cap)
{
	struct metrics *mt = u->host->metrics;
	const char *over = linkcaps_reply_over(upstream_limits(u), r);
	size_t bound;

	if (!over && r->result_case == PTG__REPLY__RESULT_STATS)
		over = sidestats_over_caps(r->stats);

	*held = 0;
	if (over) {
		snprintf(why, cap, "the sidecar's reply broke the protocol's limits: %s",
			 over);
		log_error(u->name, "reply refused: %s", over);
		mt->link_replies_refused++;
		return refusal(r, UPSTREAM_CODE_BAD_REPLY, why);
	}
	bound = linkcaps_answer_bound(r);
	if (bound > REPLY_ANSWER_MAX) {
		snprintf(
		    why, cap,
		    "the sidecar's reply would make an answer over %u MiB (up to %zu "
		    "bytes)",
		    REPLY_ANSWER_MAX >> 20, bound);
		log_error(u->name, "reply refused: its answer may take %zu bytes", bound);
		mt->link_replies_too_large++;
		return refusal(r, UPSTREAM_CODE_BAD_REPLY, why);
	}
	if ((r->result_case == PTG__REPLY__RESULT_SESSION ||
	     r->result_case == PTG__REPLY__RESULT_SESSIONS) &&
	    mt->reply_bytes + bound > REPLY_BYTES_MAX) {
		snprintf(why, cap, "the gateway holds too many answers; retry");
		log_warn(u->name, "reply shed: %" PRIu64 " bytes of answers held",
			 mt->reply_bytes);
		mt->link_replies_shed++;
		return refusal(r, UPSTREAM_CODE_SHED, why);
	}
	*held = bound;
	mt->reply_bytes += bound;
	return *r;
}

static void route_reply(struct upstream *u, const Ptg__Reply *r)
{
	struct upstream__pending *p =
	    r->request_id ? take_pending(u, r->request_id) : NULL;
	struct upstream__binding *b = NULL;
	char why[LOG_ERR_MAX];
	size_t held;
	Ptg__Reply checked;

	if (!p)
		b = r->attach_id ? upstream__find_binding(u, r->attach_id) : NULL;
	if (!p && !(b && b->sink->reply))
		return;
	checked = screen_reply(u, r, &held, why, sizeof(why));
	if (p) {
		p->cb(&checked, p->user);
		free(p);
	} else {
		b->sink->reply(&checked, b->user);
	}
	u->host->metrics->reply_bytes -= held;
}

/* The sidecar must be the instance this address was configured for: a
   reused vsock CID or socket path would otherwise hand one tenant's
   sessions (and tokens) to another. A mismatch refuses the link. */
static int check_instance(struct upstream *u, const Ptg__HelloAck *a)
{
	if (strcmp(a->instance_id, u->id) == 0) {
		u->refused[0] = '\0';
		return 0;
	}
	snprintf(u->refused, sizeof(u->refused),
		 "refused: the sidecar reports instance '%.64s'", a->instance_id);
	log_error(u->name,
		  "link refused: the sidecar reports instance '%.128s', not '%s'",
		  a->instance_id, u->id);
	u->host->metrics->link_instance_mismatches++;
	linkconn_close(u->lc, "instance id mismatch");
	return -1;
}

static void on_hello_ack(struct upstream *u, const Ptg__HelloAck *a)
{
	if (check_instance(u, a) < 0)
		return;
	u->up = true;
	u->backoff_ms = BACKOFF_MIN_MS;
	if (u->ever_up)
		u->host->metrics->link_reconnects++;
	u->ever_up = true;
	if (a->limits) {
		u->limits = *a->limits;
		u->has_limits = true;
	}
	sidestats_linked(&u->stats, a->reports_stats);
	u->control_approval = a->control_approval;
	log_info(u->name, "link up (sidecar instance '%.128s')", a->instance_id);
}

/* The watchdog of a registered link: armed at exp + --link-renew-grace. */
static void arm_lapse(struct upstream *u)
{
	int64_t at_ms = (u->exp_s + (int64_t)u->host->cfg->link_renew_grace_s) * 1000;
	int64_t left = at_ms - time_now_ms();

	ev_timer_arm(u->lapse, left > 0 ? left : 0, 0);
}

static void close_refused(struct upstream *u, int reason, const char *why)
{
	log_warn(u->name, "closing the link: %s (%s)", why,
		 metrics_link_refusal_name(reason));
	/* the link worker adds to these counters too */
	__atomic_fetch_add(&u->host->metrics->link_refusals[reason], 1, __ATOMIC_RELAXED);
	linkconn_close(u->lc, metrics_link_refusal_name(reason));
}

static void on_lapse(struct ev_timer *t, void *user)
{
	struct upstream *u = user;

	if (u->lc)
		close_refused(u, LINK_REFUSAL_LAPSED,
			      "its credential expired and was not renewed");
}

/* A LinkCredential on a live link renews it: verified as the first one
   was, for the same instance only; anything else closes the link. */
static void on_renewal(struct upstream *u, const Ptg__LinkCredential *lc)
{
	struct linkcred c;
	const char *tok = lc->token ? lc->token : "";
	int rc;

	if (!u->registered) {
		log_warn(u->name, "ignoring a credential on a link this gateway dialled");
		return;
	}
	rc = linkcred_verify(*u->host->link_keys, tok, strlen(tok), time_now_ms() / 1000,
			     &c);
	if (rc < 0) {
		close_refused(u, -rc, linkcred_strerror(rc));
		return;
	}
	if (strcmp(c.instance_id, u->id) != 0) {
		close_refused(u, LINK_REFUSAL_INSTANCE_CHANGED,
			      "a renewed credential names another instance");
		return;
	}
	u->exp_s = c.exp;
	arm_lapse(u);
	u->host->metrics->link_renewals++;
	log_info(u->name, "credential renewed (kid '%s', expires in %lld s)", c.kid,
		 (long long)(c.exp - time_now_ms() / 1000));
}

static void on_link_message(struct linkconn *lc, const Ptg__LinkMessage *m, void *user)
{
	struct upstream *u = user;
	const char *why;

	if (m->msg_case == PTG__LINK_MESSAGE__MSG_LINK_CREDENTIAL) {
		on_renewal(u, m->link_credential);
		return;
	}
	if (!u->up && m->msg_case != PTG__LINK_MESSAGE__MSG_HELLO_ACK)
		return; /* nothing counts before the hello is answered and checked */
	if (m->msg_case == PTG__LINK_MESSAGE__MSG_FRAME &&
	    (why = linkcaps_frame_over(upstream_limits(u), m->frame))) {
		log_error(u->name, "dropping the link: the sidecar sent %s", why);
		u->host->metrics->link_violations++;
		linkconn_close(lc, why);
		return;
	}
	switch (m->msg_case) {
	case PTG__LINK_MESSAGE__MSG_HELLO_ACK:
		on_hello_ack(u, m->hello_ack);
		break;
	case PTG__LINK_MESSAGE__MSG_REPLY:
		route_reply(u, m->reply);
		break;
	case PTG__LINK_MESSAGE__MSG_FRAME:
		upstream__route_frame(u, m->frame);
		break;
	case PTG__LINK_MESSAGE__MSG_TASK_UPDATE:
		upstream__route_task_update(u, m->task_update);
		break;
	case PTG__LINK_MESSAGE__MSG_CONTROL_NOTICE:
		upstream__route_control(u, m->control_notice);
		break;
	default:
		log_warn(u->name, "ignoring link message %d", (int)m->msg_case);
	}
}

/* ---- connection lifecycle ---- */

static void schedule_dial(struct upstream *u)
{
	ev_timer_arm(u->retry, u->backoff_ms, 0);
	u->backoff_ms =
	    u->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : u->backoff_ms * 2;
}

static void on_link_close(struct linkconn *lc, const char *reason, void *user)
{
	struct upstream *u = user;

	u->lc = NULL;
	u->up = false;
	fail_all_pending(u);
	upstream__drop_bindings(u);
	if (!u->registered) {
		log_warn(u->name, "link down: %s", reason);
		schedule_dial(u);
		return;
	}
	ev_timer_disarm(u->lapse);
	log_warn(u->name,
		 "link down: %s; the instance leaves in %u s unless it dials again",
		 reason, u->host->cfg->link_grace_s);
	ev_timer_arm(u->grace, (int64_t)u->host->cfg->link_grace_s * 1000, 0);
}

/* Turns cut at LINK_TURN_BUDGET_US, and the longest, for /metrics. The
   metric keeps the turn's CPU time where linkconn reads it (a turn of
   64 KiB or more): the budget cuts turns by the wall clock, which
   preemption on a loaded machine stretches. A smaller turn reports its
   wall-clock time, microseconds unless the machine preempted it. */
static void on_link_turn(struct linkconn *lc, int64_t spent_us, int64_t cpu_us, bool cut,
			 void *user)
{
	struct upstream *u = user;
	uint64_t ms = (uint64_t)cpu_us / 1000;

	u->host->metrics->link_turns_cut += cut ? 1 : 0;
	if (ms > u->host->metrics->link_turn_max_ms)
		u->host->metrics->link_turn_max_ms = ms;
}

static const struct linkconn_ops link_ops = {
    .on_message = on_link_message,
    .on_close = on_link_close,
    .on_turn = on_link_turn,
};

static void send_hello(struct upstream *u)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__Hello h = PTG__HELLO__INIT;

	h.protocol_version = PTG__PROTOCOL_VERSION__PROTOCOL_VERSION_1;
	h.gateway_id =
	    (char *)u->host->cfg->gateway_id; /* protobuf-c fields are not const */
	m.msg_case = PTG__LINK_MESSAGE__MSG_HELLO;
	m.hello = &h;
	linkconn_send(u->lc, &m);
}

static void on_connected(struct ev_io *io, int fd, unsigned events, void *user)
{
	struct upstream *u = user;
	int err = 0;
	socklen_t len = sizeof(err);

	ev_io_free(u->connect_io);
	u->connect_io = NULL;
	u->connect_fd = -1;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
		log_debug(u->name, "connect: %s", strerror(err ? err : errno));
		close(fd);
		schedule_dial(u);
		return;
	}
	u->lc = linkconn_new(u->host->loop, fd, u->name, &link_ops, u);
	if (!u->lc) {
		schedule_dial(u);
		return;
	}
	linkconn_set_turn_budget(u->lc, LINK_TURN_BUDGET_US);
	send_hello(u);
}

static void dial(struct upstream *u)
{
	char err[LOG_ERR_MAX];
	int fd = addr_connect(&u->addr, err, sizeof(err));

	if (fd < 0) {
		log_debug(u->name, "connect: %s", err);
		schedule_dial(u);
		return;
	}
	u->connect_io = ev_io_new(u->host->loop, fd, EV_WRITE, on_connected, u);
	if (!u->connect_io) {
		log_warn(u->name, "connect: cannot watch the socket: %s",
			 strerror(errno));
		close(fd);
		schedule_dial(u);
		return;
	}
	u->connect_fd = fd;
}

static void on_retry(struct ev_timer *t, void *user)
{
	dial(user);
}

/* What sidestats asks of the link: owner is the upstream. */
static int stats_up(void *owner)
{
	return upstream_up(owner);
}

static uint64_t stats_next_id(void *owner)
{
	return upstream_next_id(owner);
}

static int stats_request(void *owner, const Ptg__LinkMessage *m, uint64_t id,
			 upstream_reply_fn reply, void *user)
{
	return upstream_request(owner, m, id, reply, user);
}

static const struct sidestats_link stats_link = {
    .up = stats_up,
    .next_id = stats_next_id,
    .request = stats_request,
};

struct upstream *upstream_new(const struct upstream_host *host, const char *instance_id,
			      const struct addr *a)
{
	struct upstream *u = xcalloc(1, sizeof(*u));

	u->host = host;
	snprintf(u->id, sizeof(u->id), "%s", instance_id);
	snprintf(u->name, sizeof(u->name), "link %s", instance_id);
	u->addr = *a;
	u->connect_fd = -1;
	u->backoff_ms = BACKOFF_MIN_MS;
	u->next_request = 1;
	u->next_attach = 1;
	buf_init(&u->json);
	sidestats_init(&u->stats, &stats_link, u);
	u->retry = ev_timer_new(host->loop, -1, 0, on_retry, u);
	u->sweep = ev_timer_new(host->loop, 1000, 1000, on_sweep, u);
	dial(u);
	return u;
}

/* Down for --link-grace: the gateway removes the instance (and frees u). */
static void on_grace(struct ev_timer *t, void *user)
{
	struct upstream *u = user;

	u->host->registered_gone(u->host->owner, u);
}

struct upstream *upstream_new_registered(const struct upstream_host *host,
					 const char *instance_id)
{
	struct upstream *u = xcalloc(1, sizeof(*u));

	u->host = host;
	u->registered = true;
	snprintf(u->id, sizeof(u->id), "%s", instance_id);
	snprintf(u->name, sizeof(u->name), "link %s", instance_id);
	u->connect_fd = -1;
	u->next_request = 1;
	u->next_attach = 1;
	u->flap_backoff_ms = FLAP_BACKOFF_MIN_MS;
	buf_init(&u->json);
	sidestats_init(&u->stats, &stats_link, u);
	u->retry = ev_timer_new(host->loop, -1, 0, on_retry, u);
	u->sweep = ev_timer_new(host->loop, 1000, 1000, on_sweep, u);
	u->lapse = ev_timer_new(host->loop, -1, 0, on_lapse, u);
	u->grace = ev_timer_new(host->loop, -1, 0, on_grace, u);
	return u;
}

bool upstream_registered(const struct upstream *u)
{
	return u->registered;
}

/* Records a replacement at now; 1 when it is one too many (the instance
   flaps: refused until a backoff passes, which doubles each time). */
static int flapping(struct upstream *u, int64_t now)
{
	size_t kept = 0;

	if (now < u->flap_until)
		return 1;
	for (size_t i = 0; i < u->n_flaps; i++)
		if (now - u->flaps[i] < FLAP_WINDOW_MS)
			u->flaps[kept++] = u->flaps[i];
	u->n_flaps = kept;
	if (kept == 0)
		u->flap_backoff_ms = FLAP_BACKOFF_MIN_MS;
	if (kept == FLAP_MAX) {
		u->flap_until = now + u->flap_backoff_ms;
		u->flap_backoff_ms = u->flap_backoff_ms * 2 > FLAP_BACKOFF_MAX_MS
					 ? FLAP_BACKOFF_MAX_MS
					 : u->flap_backoff_ms * 2;
		return 1;
	}
	u->flaps[u->n_flaps++] = now;
	return 0;
}

/* The live link gives way to a newer one: its requests fail and its
   clients are told, as for any lost link (they come back with
   replay_from on the new one). */
static void retire_link(struct upstream *u, const char *peer)
{
	log_warn(u->name, "link replaced by a new one from %s", peer);
	u->host->metrics->link_replacements++;
	linkconn_free(u->lc);
	u->lc = NULL;
	u->up = false;
	fail_all_pending(u);
	upstream__drop_bindings(u);
}

int upstream_adopt(struct upstream *u, int fd, const char *peer, int64_t exp_s)
{
	if (u->lc && flapping(u, time_mono_ms()))
		return -EBUSY;
	if (u->lc)
		retire_link(u, peer);
	ev_timer_disarm(u->grace);
	snprintf(u->name, sizeof(u->name), "link %s from %.100s", u->id, peer);
	u->exp_s = exp_s;
	u->lc = linkconn_new(u->host->loop, fd, u->name, &link_ops, u);
	if (!u->lc) {
		ev_timer_arm(u->grace, (int64_t)u->host->cfg->link_grace_s * 1000, 0);
		return 0; /* fd closed; down as if the link had dropped at once */
	}
	linkconn_set_turn_budget(u->lc, LINK_TURN_BUDGET_US);
	arm_lapse(u);
	send_hello(u);
	return 0;
}

static void hang_up(struct upstream *u)
{
	if (u->connect_io) {
		ev_io_free(u->connect_io);
		close(u->connect_fd);
		u->connect_io = NULL;
		u->connect_fd = -1;
	}
	linkconn_free(u->lc);
	u->lc = NULL;
	u->up = false;
}

void upstream_free(struct upstream *u)
{
	if (!u)
		return;
	hang_up(u);
	fail_all_pending(u);
	upstream__drop_bindings(u);
	ev_timer_free(u->retry);
	ev_timer_free(u->sweep);
	ev_timer_free(u->lapse);
	ev_timer_free(u->grace);
	upstream__fanout_free(u);
	free(u);
}

void upstream_set_addr(struct upstream *u, const struct addr *a)
{
	if (memcmp(&u->addr, a, sizeof(*a)) == 0)
		return;
	log_info(u->name, "address changed; reconnecting");
	u->addr = *a;
	hang_up(u);
	fail_all_pending(u);
	upstream__drop_bindings(u);
	u->backoff_ms = BACKOFF_MIN_MS;
	dial(u);
}

const char *upstream_instance(const struct upstream *u)
{
	return u->id;
}
bool upstream_up(const struct upstream *u)
{
	return u->up;
}

bool upstream_control_approval(const struct upstream *u)
{
	return u->up && u->control_approval;
}

const struct sidestats *upstream_stats(const struct upstream *u)
{
	return &u->stats;
}

const char *upstream_state(const struct upstream *u)
{
	return u->up ? "up" : u->refused[0] ? u->refused : "down";
}
const Ptg__Limits *upstream_limits(const struct upstream *u)
{
	return u->has_limits ? &u->limits : NULL;
}
uint64_t upstream_next_id(struct upstream *u)
{
	return u->next_request++;
}

/* Queues m toward the sidecar. A sidecar that does not read is not
   given more than --link-queue-bytes: the link is dropped (its clients
   are told, as for any lost link) and dialled again. */
static void send_capped(struct upstream *u, const Ptg__LinkMessage *m)
{
	linkconn_send(u->lc, m);
	if (linkconn_pending(u->lc) <= u->host->cfg->link_queue_bytes)
		return;
	log_error(u->name,
		  "dropping the link: %zu bytes queued, the sidecar is not reading",
		  linkconn_pending(u->lc));
	u->host->metrics->link_queue_overflows++;
	linkconn_close(u->lc, "the sidecar is not reading");
}

int upstream_send(struct upstream *u, const Ptg__LinkMessage *m)
{
	if (!u->up)
		return -ENOTCONN;
	send_capped(u, m);
	return 0;
}

int upstream_request(struct upstream *u, const Ptg__LinkMessage *m, uint64_t id,
		     upstream_reply_fn cb, void *user)
{
	struct upstream__pending *p;

	if (!u->up)
		return -ENOTCONN;
	p = xcalloc(1, sizeof(*p));
	p->id = id;
	p->cb = cb;
	p->user = user;
	p->deadline = time_mono_ms() + u->host->cfg->request_timeout_ms;
	LIST_INSERT_HEAD(&u->pending, p, entry);
	send_capped(u, m);
	return 0;
}

void upstream_cancel(struct upstream *u, uint64_t id)
{
	free(take_pending(u, id));
}
