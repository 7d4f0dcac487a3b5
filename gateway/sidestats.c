/* sidestats: one GetStats in flight at most per link; its answer is
   copied into plain fields, so nothing of the sidecar's message is kept. */
#include "sidestats.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ptg_limits.h"
#include "timeutil.h"

void sidestats_init(struct sidestats *s, const struct sidestats_link *link, void *owner)
{
	memset(s, 0, sizeof(*s));
	s->link = link;
	s->owner = owner;
}

void sidestats_linked(struct sidestats *s, bool supported)
{
	s->supported = supported;
	s->next_ms = 0;
}

const char *sidestats_over_caps(const Ptg__SidecarStats *st)
{
	if ((st->version &&
	     strnlen(st->version, SIDESTATS_TEXT_MAX + 1) > SIDESTATS_TEXT_MAX) ||
	    (st->commit &&
	     strnlen(st->commit, SIDESTATS_TEXT_MAX + 1) > SIDESTATS_TEXT_MAX))
		return "a version or commit over " PTG_STR(SIDESTATS_TEXT_MAX) " bytes";
	return NULL;
}

static void keep(struct sidestats_figures *f, const Ptg__SidecarStats *st)
{
	snprintf(f->version, sizeof(f->version), "%s", st->version ? st->version : "");
	snprintf(f->commit, sizeof(f->commit), "%s", st->commit ? st->commit : "");
	f->uptime_ms = st->uptime_ms;
	f->sessions_running = st->sessions_running;
	f->sessions_exited = st->sessions_exited;
	f->attachments = st->attachments;
	f->open_fds = st->open_fds;
	f->pty_bytes = st->pty_bytes;
	f->pty_input_bytes = st->pty_input_bytes;
	f->framelog_bytes = st->framelog_bytes;
	f->rss_bytes = st->rss_bytes;
	f->cpu_ms = st->cpu_ms;
	f->state_dir = st->state_dir;
	f->at_ms = time_now_ms();
}

static void on_reply(const Ptg__Reply *r, void *user)
{
	struct sidestats *s = user;

	s->pending = 0;
	s->have = r && r->code == PTG__ERROR_CODE__OK &&
		  r->result_case == PTG__REPLY__RESULT_STATS;
	if (s->have)
		keep(&s->last, r->stats);
}

void sidestats_poll(struct sidestats *s, int64_t now_ms)
{
	Ptg__LinkMessage m = PTG__LINK_MESSAGE__INIT;
	Ptg__GetStats q = PTG__GET_STATS__INIT;

	if (!s->link->up(s->owner) || !s->supported) {
		s->have = false;
		return;
	}
	if (s->pending || now_ms < s->next_ms)
		return;
	q.request_id = s->link->next_id(s->owner);
	m.msg_case = PTG__LINK_MESSAGE__MSG_GET_STATS;
	m.get_stats = &q;
	if (s->link->request(s->owner, &m, q.request_id, on_reply, s) == 0)
		s->pending = q.request_id;
	s->next_ms = now_ms + SIDESTATS_POLL_MS;
}
