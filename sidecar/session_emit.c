/* session_emit: the bottom of a session's frames: every frame is
   numbered, stamped, packed once, retained (the memory ring and, through
   session_state.c, the frame log) and sent to one member or to every
   member's link here, and the frames made of the session's own data
   (Error, Closed, RoleAssigned, MembershipChanged) are built here. It
   calls only downward (session_state.c, the ring, the wire), so join.c,
   replay.c, approval.c and session.c all send through it. */
#include <stdbool.h>
#include <stdlib.h>

#include "session_int.h"
#include "timeutil.h"
#include "wire.h"
#include "xalloc.h"

static int is_retained(const Ptg__Frame *f)
{
	return f->kind_case != PTG__FRAME__KIND_ROLE_ASSIGNED;
}

/* 1 when a member on link is still replaying (replay.c). */
static int link_replaying(struct session *s, const void *link)
{
	for (struct member *m = members_first(s->members); m;
	     m = members_next(s->members, m))
		if (m->link == link && m->replaying)
			return 1;
	return 0;
}

static void broadcast(struct session *s, const uint8_t *p, size_t n)
{
	struct member *m, *o;

	if (!s->n_replaying) { /* the common case: one copy per link */
		for (unsigned i = 0; i < members_nlinks(s->members); i++)
			wire_send_frame(members_link(s->members, i), p, n, 0);
		return;
	}
	for (m = members_first(s->members); m; m = members_next(s->members, m)) {
		/* A replaying member gets this frame through its replay. Its
		   link's other members get their own copy: the gateway would
		   hand a link-wide one to every attachment on the link. */
		if (m->replaying)
			continue;
		if (link_replaying(s, m->link)) {
			wire_send_frame(m->link, p, n, m->attach_id);
			continue;
		}
		/* One copy per link: skip links an earlier member already had. */
		for (o = members_first(s->members); o != m;
		     o = members_next(s->members, o))
			if (o->link == m->link)
				break;
		if (o == m)
			wire_send_frame(m->link, p, n, 0);
	}
}

uint64_t session_emit(struct session *s, Ptg__Frame *f, const struct member *target)
{
	bool retained;

	f->session_id = s->id;
	session_state_reserve(s); /* on disk before the number goes out */
	f->sequence = ++s->seq;
	f->ts_ms = time_now_ms();
	f->target_attach_id = 0;
	if (f->kind_case == PTG__FRAME__KIND_KEYFRAME)
		f->keyframe->anchor_sequence = f->sequence;
	buf_reset(&s->pack);
	wire_pack_frame(f, &s->pack);
	if (target) {
		wire_send_frame(target->link, buf_head(&s->pack), buf_size(&s->pack),
				target->attach_id);
		return f->sequence;
	}
	retained = is_retained(f);
	if (retained)
		session_state_log(s, f, &s->pack);
	broadcast(s, buf_head(&s->pack), buf_size(&s->pack));
	/* Into the memory ring after the frame went out: the copy may fault
	   in a fresh page of the ring (some 10 us on a VM, one echo in forty
	   while someone types), which the frame need not wait for. Replays
	   read the ring on later turns, so none can miss it. */
	if (retained)
		ring_append(s->ring, f->sequence, f->ts_ms, buf_head(&s->pack),
			    buf_size(&s->pack));
	return f->sequence;
}

void session_emit_closed(struct session *s, const struct member *target)
{
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__ClosedFrame c = PTG__CLOSED_FRAME__INIT;

	c.has_exit_code = s->has_exit_code;
	c.exit_code = s->exit_code;
	c.reason = s->close_reason;
	c.detail = s->detail;
	f.kind_case = PTG__FRAME__KIND_CLOSED;
	f.closed = &c;
	session_emit(s, &f, target);
}

void session_emit_error(struct session *s, const struct member *target,
			Ptg__FrameErrorCode code, const char *msg)
{
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__ErrorFrame e = PTG__ERROR_FRAME__INIT;

	e.code = code;
	e.message = (char *)msg;
	f.kind_case = PTG__FRAME__KIND_ERROR;
	f.error = &e;
	session_emit(s, &f, target);
}

Ptg__Member **session_member_list(struct session *s, enum member_role role, size_t *n)
{
	Ptg__Member **out = xcalloc(members_count(s->members, role) + 1, sizeof(*out));
	struct member *m;

	*n = 0;
	for (m = members_first(s->members); m; m = members_next(s->members, m)) {
		if (m->role != role)
			continue;
		out[*n] = xmalloc(sizeof(**out));
		ptg__member__init(out[*n]);
		out[*n]->client_id = m->client_id;
		out[*n]->label = m->label;
		(*n)++;
	}
	return out;
}

void session_member_list_free(Ptg__Member **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

Ptg__Role session_wire_role(enum member_role r)
{
	return r == MEMBER_CONTROLLER ? PTG__ROLE__ROLE_CONTROLLER
				      : PTG__ROLE__ROLE_OBSERVER;
}

void session_emit_role(struct session *s, const struct member *m, bool downgraded,
		       const char *reason)
{
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__RoleAssignedFrame ra = PTG__ROLE_ASSIGNED_FRAME__INIT;

	ra.role = session_wire_role(m->role);
	ra.client_id = (char *)m->client_id;
	ra.downgraded = downgraded;
	ra.reason = (char *)(downgraded && reason ? reason : "");
	f.kind_case = PTG__FRAME__KIND_ROLE_ASSIGNED;
	f.role_assigned = &ra;
	session_emit(s, &f, m);
}

static void emit_membership_to(struct session *s, const struct member *target)
{
	Ptg__Frame f = PTG__FRAME__INIT;
	Ptg__MembershipChangedFrame mc = PTG__MEMBERSHIP_CHANGED_FRAME__INIT;

	mc.controllers = session_member_list(s, MEMBER_CONTROLLER, &mc.n_controllers);
	mc.observers = session_member_list(s, MEMBER_OBSERVER, &mc.n_observers);
	f.kind_case = PTG__FRAME__KIND_MEMBERSHIP;
	f.membership = &mc;
	session_emit(s, &f, target);
	session_member_list_free(mc.controllers, mc.n_controllers);
	session_member_list_free(mc.observers, mc.n_observers);
}

void session_emit_membership(struct session *s)
{
	emit_membership_to(s, NULL);
	s->membership_dirty = false;
	if (s->membership_timer)
		ev_timer_disarm(s->membership_timer);
}

static void on_membership_due(struct ev_timer *t, void *user)
{
	struct session *s = user;

	if (s->membership_dirty)
		session_emit_membership(s);
}

void session_emit_membership_joined(struct session *s, const struct member *joiner)
{
	int64_t now = time_mono_ms(), since = now - s->membership_window_ms;

	if (!s->membership_window_ms || since >= MEMBERSHIP_COALESCE_MS) {
		s->membership_window_ms = now;
		s->membership_in_window = 0;
		since = 0;
	}
	if (s->membership_in_window < MEMBERSHIP_BURST && !s->membership_dirty) {
		s->membership_in_window++;
		session_emit_membership(s);
		return;
	}
	if (!s->membership_timer)
		s->membership_timer = ev_timer_new(s->loop, -1, 0, on_membership_due, s);
	emit_membership_to(s, joiner);
	s->membership_dirty = true;
	if (!ev_timer_armed(s->membership_timer))
		ev_timer_arm(s->membership_timer, MEMBERSHIP_COALESCE_MS - since, 0);
}
