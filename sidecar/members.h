/* members: membership and roles of one session (docs/protocol.md, "Roles").
   Admits joiners up to max_controllers controllers and max_observers
   observers, downgrades controller requests it cannot grant, issues client
   ids, and keeps the members in join order for MembershipChanged. No I/O
   beyond getrandom. */
#ifndef PTG_MEMBERS_H
#define PTG_MEMBERS_H

#include <stdbool.h>
#include <stdint.h>

#include "list.h"
#include "ptg_limits.h"

/* Values match the link protocol's Role. */
enum member_role { MEMBER_CONTROLLER = 1, MEMBER_OBSERVER = 2 };

/* Callers read the fields; entry is private to members.c. */
struct member {
	void *link;	    /* owner key: the link ... */
	uint64_t attach_id; /* ... and the gateway's attachment on it */
	char client_id[24]; /* "c-" + 16 lower-case hex, unique in the session */
	char label[PTG_LABEL_MAX_BYTES + 1];
	enum member_role role;
	bool may_control;		  /* the token had pty:control at join */
	int64_t last_keyframe_request_ms; /* session's rate limit; 0: never */
	bool replaying;	   /* its join's replay is still streaming (replay.c) */
	bool asks_control; /* joined as controller under approve: ask at the flow's end */
	bool not_owner;	   /* owner_only: another principal than the session's owner */
	TAILQ_ENTRY(member) entry;
};

struct members;

/* An empty membership with the given capacities. Free with members_free. */
struct members *members_new(unsigned max_controllers, unsigned max_observers);
/* Frees the membership and every member; NULL is a no-op. */
void members_free(struct members *m);
/* Admits (link, attach_id), which must not already be a member. A
   controller request beyond capacity or without may_control is admitted as
   observer with *downgraded = 1 and *reason a human string that lives as
   long as m; otherwise *downgraded = 0, *reason = NULL. Any role other than
   MEMBER_CONTROLLER is taken as observer. The label is copied, cut to
   PTG_LABEL_MAX_BYTES bytes without splitting a UTF-8 sequence (NULL: "").
   Returns the member (owned by m), or NULL when no slot is left for the
   resulting role (the caller answers RATE_LIMITED). */
struct member *members_join(struct members *m, void *link, uint64_t attach_id,
			    enum member_role requested, bool may_control,
			    const char *label, bool *downgraded, const char **reason);
/* The member with this owner key, or NULL. */
struct member *members_find(struct members *m, void *link, uint64_t attach_id);
/* Removes and frees mb, which must belong to m. */
void members_leave(struct members *m, struct member *mb);
/* Switches mb to want, checked against capacity and the member's recorded
   may_control. Returns 1 if the role changed, 0 if not. When refused the
   role stays, *downgraded = 1 and *reason says why (lives as long as m);
   otherwise *downgraded = 0 and *reason = NULL. */
bool members_request_role(struct members *m, struct member *mb, enum member_role want,
			  bool *downgraded, const char **reason);
/* How many members hold role r. */
unsigned members_count(const struct members *m, enum member_role r);
/* The earliest joined member, or NULL when empty. */
struct member *members_first(struct members *m);
/* The member joined after mb, or NULL. */
struct member *members_next(struct members *m, struct member *mb);
/* The distinct links the members are on: members_link(m, 0 ..
   members_nlinks(m) - 1), in no particular order, valid until the next
   join or leave. */
unsigned members_nlinks(const struct members *m);
void *members_link(const struct members *m, unsigned i);
/* Removes and frees every member owned by link (the link dropped);
   returns how many. */
unsigned members_drop_link(struct members *m, void *link);

#endif
