/* linkcaps: see linkcaps.h. */
#include "linkcaps.h"

#include <string.h>

#include "id.h"
#include "ptg_limits.h"

/* The largest Output a sidecar may send in one frame (its PTY reads are
   64 KiB): more is a hostile or broken peer, and the link is dropped. */
#define OUTPUT_MAX (1u << 20)
/* Members of a MembershipChanged when the hello gave no limits. */
#define MEMBERS_DEFAULT 1024

static size_t max_controllers(const Ptg__Limits *lim)
{
	return lim && lim->max_controllers ? lim->max_controllers : MEMBERS_DEFAULT;
}

static size_t max_observers(const Ptg__Limits *lim)
{
	return lim && lim->max_observers ? lim->max_observers : MEMBERS_DEFAULT;
}

static int too_long(const char *s, size_t max_bytes)
{
	return s && strnlen(s, max_bytes + 1) > max_bytes;
}

/* Members as the protocol bounds them (docs/protocol.md, "Roles");
   why not, or NULL. */
static const char *members_over_caps(Ptg__Member **m, size_t n, size_t max)
{
	if (n > max)
		return "more members than its hello's limits allow";
	for (size_t i = 0; i < n; i++)
		if (too_long(m[i]->client_id,
			     PTG_UTF8_MAX_BYTES(PTG_CLIENT_ID_MAX_CHARS)) ||
		    too_long(m[i]->label, PTG_LABEL_MAX_BYTES))
			return "a member's client_id or label over its limit";
	return NULL;
}

static const char *argv_over_caps(char **argv, size_t n)
{
	size_t total = 0;

	if (n > PTG_ARGV_MAX)
		return "more than " PTG_STR(PTG_ARGV_MAX) " argv entries";
	for (size_t i = 0; i < n; i++) {
		size_t len = strnlen(argv[i], PTG_ARG_MAX_BYTES + 1);

		if (len > PTG_ARG_MAX_BYTES)
			return "an argv entry over " PTG_STR(PTG_ARG_MAX_BYTES) " bytes";
		total += len + 1;
	}
	return total > PTG_ARGV_MAX_BYTES
		   ? "argv over " PTG_STR(PTG_ARGV_MAX_BYTES) " bytes"
		   : NULL;
}

static const char *session_over_caps(const Ptg__Limits *lim, const Ptg__SessionInfo *s)
{
	const char *why;

	if (!id_valid(s->session_id))
		return "a session id that is not one";
	if (!PTG_DIM_OK(s->cols, s->rows))
		return "a session size out of range";
	if (too_long(s->label, PTG_LABEL_MAX_BYTES))
		return "a session label over its limit";
	if ((why = argv_over_caps(s->argv, s->n_argv)))
		return why;
	if ((why = members_over_caps(s->controllers, s->n_controllers,
				     max_controllers(lim))))
		return why;
	return members_over_caps(s->observers, s->n_observers, max_observers(lim));
}

const char *linkcaps_reply_over(const Ptg__Limits *lim, const Ptg__Reply *r)
{
	const char *why = NULL;

	if (too_long(r->message, PTG_UTF8_MAX_BYTES(PTG_DETAIL_MAX_CHARS)) ||
	    too_long(r->client_op_id, PTG_MSG_ID_MAX_BYTES))
		return "a message or op id over its limit";
	switch (r->result_case) {
	case PTG__REPLY__RESULT_SESSION:
		return session_over_caps(lim, r->session);
	case PTG__REPLY__RESULT_SESSIONS:
		if (r->sessions->n_sessions > PTG_LIST_PAGE_MAX)
			return "more than " PTG_STR(
			    PTG_LIST_PAGE_MAX) " sessions in a page";
		if (too_long(r->sessions->next_after, PTG_ID_MAX))
			return "a page token over its limit";
		for (size_t i = 0; !why && i < r->sessions->n_sessions; i++)
			why = session_over_caps(lim, r->sessions->sessions[i]);
		return why;
	case PTG__REPLY__RESULT_ATTACH:
		return too_long(r->attach->client_id,
				PTG_UTF8_MAX_BYTES(PTG_CLIENT_ID_MAX_CHARS)) ||
			       too_long(r->attach->replay_error,
					PTG_UTF8_MAX_BYTES(PTG_DETAIL_MAX_CHARS))
			   ? "an attach result over its limits"
			   : NULL;
	case PTG__REPLY__RESULT_EXPORT_CHUNK: /* a page of a recording */
		return r->export_chunk->data.len > (8u << 20) ||
			       r->export_chunk->carry.len > 3
			   ? "a recording's page over 8 MiB"
			   : NULL;
	default:
		return NULL;
	}
}

/* JSON text of s at most (jansson's escapes: a control byte is six
   bytes, \u0001; a byte of invalid UTF-8 becomes U+FFFD, three). */
static size_t json_str_bound(const char *s)
{
	size_t n = 2;

	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
		n += *p < 0x20 ? 6 : *p == '"' || *p == '\\' ? 2 : *p >= 0x80 ? 3 : 1;
	return n;
}

/* Field names, numbers and timestamps of one session object, and of
   one member (routes_session_json's shape), with room to spare. */
#define SESSION_JSON_FIXED 640
#define MEMBER_JSON_FIXED  32

static size_t members_json_bound(Ptg__Member **m, size_t n)
{
	size_t total = 0;

	for (size_t i = 0; i < n; i++)
		total += MEMBER_JSON_FIXED + json_str_bound(m[i]->client_id) +
			 json_str_bound(m[i]->label);
	return total;
}

static size_t session_json_bound(const Ptg__SessionInfo *s)
{
	size_t total = SESSION_JSON_FIXED + json_str_bound(s->session_id) +
		       json_str_bound(s->label) + json_str_bound(s->owner) +
		       members_json_bound(s->controllers, s->n_controllers) +
		       members_json_bound(s->observers, s->n_observers);

	for (size_t i = 0; i < s->n_argv; i++)
		total += 1 + json_str_bound(s->argv[i]);
	return total;
}

size_t linkcaps_answer_bound(const Ptg__Reply *r)
{
	size_t total = SESSION_JSON_FIXED + json_str_bound(r->message);

	if (r->result_case == PTG__REPLY__RESULT_SESSION)
		total += session_json_bound(r->session);
	if (r->result_case == PTG__REPLY__RESULT_SESSIONS)
		for (size_t i = 0; i < r->sessions->n_sessions; i++)
			total += 1 + session_json_bound(r->sessions->sessions[i]);
	return total;
}

const char *linkcaps_frame_over(const Ptg__Limits *lim, const Ptg__Frame *f)
{
	const Ptg__MembershipChangedFrame *mc = f->membership;
	const char *why;

	switch (f->kind_case) {
	case PTG__FRAME__KIND_OUTPUT:
		return f->output->data.len > OUTPUT_MAX ? "an oversized Output" : NULL;
	case PTG__FRAME__KIND_MEMBERSHIP:
		why = members_over_caps(mc->controllers, mc->n_controllers,
					max_controllers(lim));
		return why ? why
			   : members_over_caps(mc->observers, mc->n_observers,
					       max_observers(lim));
	default:
		return NULL;
	}
}
