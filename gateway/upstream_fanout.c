/* upstream_fanout: the attachments of one link (bindings, grouped per
   session) and the encode-once fan-out of its frames to them (see
   upstream.h). It calls nothing of upstream.c: the link hands it frames,
   control notices, task updates and its end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "log.h"
#include "timeutil.h"
#include "upstream_int.h"
#include "ws.h"
#include "xalloc.h"

/* Recipients of one frame kept on the stack; more are allocated. */
#define RECIPIENTS_ON_STACK 32

/* The bindings are kept sorted by attach id, so a frame's delivery to
   each of n recipients is a binary search, not a scan (n observers on
   one session cost O(n log n) per frame, not O(n^2)). */
static size_t binding_pos(const struct upstream *u, uint64_t attach_id)
{
	size_t lo = 0, hi = u->n_binds;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->binds[mid].attach_id < attach_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct upstream__binding *upstream__find_binding(struct upstream *u, uint64_t attach_id)
{
	size_t i = binding_pos(u, attach_id);

	return i < u->n_binds && u->binds[i].attach_id == attach_id ? &u->binds[i] : NULL;
}

/* The groups are kept sorted by session id: a frame finds its session's
   in O(log sessions) comparisons. */
static size_t group_pos(const struct upstream *u, const char *session_id)
{
	size_t lo = 0, hi = u->n_groups;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(u->groups[mid]->session_id, session_id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct upstream__group *find_group(const struct upstream *u,
					  const char *session_id)
{
	size_t i = group_pos(u, session_id);

	return i < u->n_groups && strcmp(u->groups[i]->session_id, session_id) == 0
		   ? u->groups[i]
		   : NULL;
}

static struct upstream__group *group_join(struct upstream *u, const char *session_id,
					  uint64_t id)
{
	size_t i = group_pos(u, session_id);
	struct upstream__group *g;

	if (i < u->n_groups && strcmp(u->groups[i]->session_id, session_id) == 0) {
		g = u->groups[i];
	} else {
		if (u->n_groups == u->cap_groups) {
			u->cap_groups = u->cap_groups ? u->cap_groups * 2 : 8;
			u->groups =
			    xrealloc(u->groups, u->cap_groups * sizeof(*u->groups));
		}
		memmove(&u->groups[i + 1], &u->groups[i],
			(u->n_groups - i) * sizeof(*u->groups));
		u->n_groups++;
		g = u->groups[i] = xcalloc(1, sizeof(*g));
		snprintf(g->session_id, sizeof(g->session_id), "%s", session_id);
	}
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 4;
		g->ids = xrealloc(g->ids, g->cap * sizeof(*g->ids));
	}
	g->ids[g->n++] = id;
	return g;
}

/* Takes id out of g, and g out of the upstream once it is empty. */
static void group_leave(struct upstream *u, struct upstream__group *g, uint64_t id)
{
	size_t i;

	for (i = 0; i < g->n && g->ids[i] != id; i++)
		;
	if (i < g->n) {
		memmove(&g->ids[i], &g->ids[i + 1], (g->n - i - 1) * sizeof(*g->ids));
		g->n--;
	}
	if (g->n)
		return;
	i = group_pos(u, g->session_id);
	memmove(&u->groups[i], &u->groups[i + 1],
		(u->n_groups - i - 1) * sizeof(*u->groups));
	u->n_groups--;
	free(g->ids);
	free(g);
}

void upstream_bind(struct upstream *u, uint64_t attach_id, const char *session_id,
		   const struct upstream_sink *sink, void *user)
{
	size_t i = binding_pos(u, attach_id);
	struct upstream__binding *b;

	if (i < u->n_binds && u->binds[i].attach_id == attach_id) {
		b = &u->binds[i]; /* bound again: the newest sink wins */
		group_leave(u, b->group, attach_id);
	} else {
		if (u->n_binds == u->cap_binds) {
			u->cap_binds = u->cap_binds ? u->cap_binds * 2 : 16;
			u->binds = xrealloc(u->binds, u->cap_binds * sizeof(*u->binds));
		}
		memmove(&u->binds[i + 1], &u->binds[i],
			(u->n_binds - i) * sizeof(*u->binds));
		u->n_binds++;
		b = &u->binds[i];
	}
	b->attach_id = attach_id;
	b->group = group_join(u, session_id, attach_id);
	b->sink = sink;
	b->user = user;
}

void upstream_unbind(struct upstream *u, uint64_t attach_id)
{
	size_t i = binding_pos(u, attach_id);

	if (i == u->n_binds || u->binds[i].attach_id != attach_id)
		return;
	group_leave(u, u->binds[i].group, attach_id);
	memmove(&u->binds[i], &u->binds[i + 1], (u->n_binds - i - 1) * sizeof(*u->binds));
	u->n_binds--;
}

/* ---- frames from the sidecar ---- */

/* Encodes f once as the JSON text frame every recipient shares. */
static struct wsframe *encode_frame(struct upstream *u, const Ptg__Frame *f)
{
	buf_reset(&u->json);
	if (frames_session_frame(f, NULL, time_now_ms(), &u->json) < 0) {
		log_warn(u->name, "dropping a frame the binding cannot express");
		return NULL;
	}
	return wsframe_text((const char *)buf_head(&u->json), buf_size(&u->json));
}

/* A session nobody watches costs no JSON and no clock read: the frame
   is encoded at its first recipient. Delivery may unbind (a Closed ends
   connections): the recipients are a copy of the session's attach ids,
   each looked up again at its delivery, once (with a thousand observers
   a second lookup each was 5% of the gateway's CPU). */
void upstream__route_frame(struct upstream *u, const Ptg__Frame *f)
{
	uint64_t few[RECIPIENTS_ON_STACK], *to = few;
	size_t k = 0;
	struct wsframe *wf = NULL;
	struct upstream__binding *b;
	struct upstream__group *g;
	int64_t now_ms = 0;

	if (f->target_attach_id) {
		few[k++] = f->target_attach_id;
	} else if ((g = find_group(u, f->session_id))) {
		if (g->n > RECIPIENTS_ON_STACK)
			to = xmalloc(g->n * sizeof(*to));
		for (k = 0; k < g->n; k++)
			to[k] = g->ids[k];
	}
	for (size_t i = 0; i < k; i++) {
		if (!(b = upstream__find_binding(u, to[i])) || !b->sink->frame)
			continue;
		if (!wf) { /* the first recipient: encode, and read the clock */
			if (!(wf = encode_frame(u, f)))
				break;
			now_ms = time_mono_ms();
		}
		b->sink->frame(f, wf, now_ms, b->user);
	}
	wsframe_unref(wf);
	if (to != few)
		free(to);
}

/* Rare (a person asked, or someone decided): each recipient encodes its
   own copy, and delivery never unbinds. */
void upstream__route_control(struct upstream *u, const Ptg__ControlNotice *n)
{
	struct upstream__binding *b;
	struct upstream__group *g;

	if (n->target_attach_id) {
		if ((b = upstream__find_binding(u, n->target_attach_id)) &&
		    b->sink->control && strcmp(b->group->session_id, n->session_id) == 0)
			b->sink->control(n, b->user);
		return;
	}
	if (!(g = find_group(u, n->session_id)))
		return;
	for (size_t i = 0; i < g->n; i++)
		if ((b = upstream__find_binding(u, g->ids[i])) && b->sink->control)
			b->sink->control(n, b->user);
}

void upstream__route_task_update(struct upstream *u, const Ptg__TaskUpdate *tu)
{
	struct upstream__binding *b = upstream__find_binding(u, tu->attach_id);

	if (b && b->sink->task_update &&
	    strcmp(b->group->session_id, tu->session_id) == 0)
		b->sink->task_update(tu, b->user);
}

/* Every attachment on the link is gone with it; the clients reconnect
   with replay_from once the link is back. */
void upstream__drop_bindings(struct upstream *u)
{
	while (u->n_binds) {
		struct upstream__binding b = u->binds[--u->n_binds];

		group_leave(u, b.group, b.attach_id);
		b.sink->link_lost(b.user);
	}
}

void upstream__fanout_free(struct upstream *u)
{
	free(u->binds);
	free(u->groups); /* empty: upstream__drop_bindings emptied every group */
	buf_free(&u->json);
}

uint64_t upstream_attach_id(struct upstream *u)
{
	return u->next_attach++;
}

void upstream_counts(const struct upstream *u, unsigned *sessions, unsigned *clients)
{
	*sessions = (unsigned)u->n_groups;
	*clients = (unsigned)u->n_binds;
}
