/* sidestats: what a sidecar reports of itself over its link (GetStats,
   SidecarStats), polled every SIDESTATS_POLL_MS while the link is up and
   the sidecar's HelloAck said it answers; kept per instance for
   /metrics. An older sidecar is never asked. It sees nothing of the link
   that owns it but struct sidestats_link: the link drives it (linked,
   poll) and it asks through those callbacks, never the other way. */
#ifndef PTG_SIDESTATS_H
#define PTG_SIDESTATS_H

#include <stdbool.h>
#include <stdint.h>

#include "link.pb-c.h"

#define SIDESTATS_POLL_MS  5000
#define SIDESTATS_TEXT_MAX 64 /* a version or commit, in bytes */

/* What sidestats needs of the link it reports on, given at
   sidestats_init; owner is the first argument of each. */
struct sidestats_link {
	/* 1 when the link is connected and its hello answered. */
	int (*up)(void *owner);
	/* A fresh request id for the question about to be sent. */
	uint64_t (*next_id)(void *owner);
	/* Sends m (its request_id set to id) and calls reply once with the
	   answer, or with NULL (timeout, link down); 0, or < 0 when the
	   question could not be sent (reply not called). */
	int (*request)(void *owner, const Ptg__LinkMessage *m, uint64_t id,
		       void (*reply)(const Ptg__Reply *r, void *user), void *user);
};

/* The figures of the last answer (see SidecarStats in proto/link.proto). */
struct sidestats_figures {
	char version[SIDESTATS_TEXT_MAX + 1];
	char commit[SIDESTATS_TEXT_MAX + 1];
	uint64_t uptime_ms;
	uint32_t sessions_running, sessions_exited, attachments, open_fds;
	uint64_t pty_bytes, pty_input_bytes, framelog_bytes, rss_bytes, cpu_ms;
	bool state_dir;
	int64_t at_ms; /* wall clock when the answer came */
};

struct sidestats {
	const struct sidestats_link *link;
	void *owner;	  /* the link's, for its callbacks */
	bool supported;	  /* the link's HelloAck set reports_stats */
	uint64_t pending; /* the GetStats awaiting its reply, or 0 */
	int64_t next_ms;  /* when to ask next (monotonic) */
	bool have;	  /* last holds the answer to the latest question */
	struct sidestats_figures last;
};

/* Empty, asking through link with owner (which outlive s). */
void sidestats_init(struct sidestats *s, const struct sidestats_link *link, void *owner);
/* The link's hello was answered; supported is its reports_stats. The
   first question goes at the next poll. */
void sidestats_linked(struct sidestats *s, bool supported);
/* From the link's periodic timer: asks the sidecar when due. A question
   unanswered (timeout, link down) clears have. */
void sidestats_poll(struct sidestats *s, int64_t now_ms);
/* Why a SidecarStats breaks the protocol's limits, or NULL. */
const char *sidestats_over_caps(const Ptg__SidecarStats *st);

#endif
