/* control: the pending control requests of one session under the
   `approve` control policy, as data: who asked (client id, label and the
   member's owner key), when each request lapses, a cap on how many wait.
   Pure: every time is the caller's (an injected clock in the tests); the
   session's side (frames, notices, the expiry timer) is in approval.c. */
#ifndef PTG_CONTROL_H
#define PTG_CONTROL_H

#include <stdbool.h>
#include <stdint.h>

#include "ptg_limits.h"

/* At most this many requests wait in one session: a full session answers
   the next asker at once, so a crowd of observers cannot flood the
   controller's prompt. */
#define CONTROL_PENDING_MAX 8

struct control_request {
	void *link; /* the member's owner key, as in struct member */
	uint64_t attach_id;
	char client_id[24];
	char label[PTG_LABEL_MAX_BYTES + 1];
	int64_t expires_ms; /* monotonic */
	int64_t expires_wall_ms;
};

/* Oldest first. Zero-initialised it is empty. */
struct control {
	unsigned n;
	struct control_request v[CONTROL_PENDING_MAX];
};

/* Adds a request from client_id lapsing timeout_ms after now_ms (wall is
   the same moment on the wall clock). Returns 0 when added, 1 when
   client_id already waits (nothing changes: its first deadline holds),
   -ENOSPC when CONTROL_PENDING_MAX wait. */
int control_add(struct control *c, void *link, uint64_t attach_id, const char *client_id,
		const char *label, int64_t now_ms, int64_t wall_ms, uint32_t timeout_ms);
/* The index of client_id's request, or -1. */
int control_find(const struct control *c, const char *client_id);
/* Removes request i (0 <= i < n) into *out (NULL: dropped), keeping the
   others in order. */
void control_remove(struct control *c, unsigned i, struct control_request *out);
/* Takes the oldest request that has lapsed at now_ms into *out: 1, or 0
   when none has. */
bool control_take_expired(struct control *c, int64_t now_ms, struct control_request *out);
/* The earliest deadline, or -1 when nothing waits. */
int64_t control_next_deadline(const struct control *c);

#endif
