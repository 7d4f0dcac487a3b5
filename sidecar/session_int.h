/* session_int: the session's fields and the calls between the files of
   the session module, which call one way only, each down to the ones
   below it:
     join.c (the join flows, leave, roles, keyframe requests)
       session.c (process, PTY, output, size, exit; the constructor)
	 approval.c (the approve control policy)
	 replay.c (a join's replay from disk; ends through a callback)
	   session_emit.c (numbering, retention and sending of frames)
	     session_state.c (durability under --state-dir)
   Not for any other module. */
#ifndef PTG_SESSION_INT_H
#define PTG_SESSION_INT_H

#include <stdbool.h>

#include "buf.h"
#include "control.h"
#include "feeder.h"
#include "framelog.h"
#include "gather.h"
#include "list.h"
#include "members.h"
#include "ring.h"
#include "screen.h"
#include "session.h"
#include "uuid.h"

/* Past MEMBERSHIP_BURST join broadcasts within MEMBERSHIP_COALESCE_MS,
   further joins share one MembershipChanged broadcast at the window's
   end. */
#define MEMBERSHIP_COALESCE_MS 50
#define MEMBERSHIP_BURST       16

struct session {
	char id[UUID_STRLEN + 1];
	char log_ctx[UUID_STRLEN + 9]; /* "session=ID": its log lines' context */
	const struct sidecar_config *cfg;
	struct ev_loop *loop;

	int master; /* -1 once closed */
	pid_t pid;
	struct ev_io *io;
	struct buf input; /* bytes waiting for the PTY */

	struct screen *screen;
	struct feeder *feeder;	/* output on its way to the screen */
	bool output_since_tick; /* output came since the last session_tick */
	bool output_held;	/* a member's link is backed up: the PTY is not read */
	struct ring *ring;
	struct members *members;
	uint64_t seq;		  /* last sequence issued */
	uint64_t pty_bytes;	  /* read from the PTY by this process */
	uint64_t input_bytes;	  /* written to the PTY by this process */
	uint64_t bytes_before[2]; /* output, input counted before a restart */
	unsigned cols, rows;

	Ptg__Policy policy;
	Ptg__ControlPolicy control_policy;
	char *owner;		/* the creator's principal ("" when unknown) */
	struct control control; /* pending control requests (approval.c) */
	struct ev_timer *control_timer;
	char *label;
	char **argv;
	int64_t created_ms;

	bool exited; /* Closed has been broadcast */
	bool reaped; /* the child's status is known */
	int wait_status;
	int has_exit_code, exit_code;
	Ptg__CloseReason close_reason;
	char detail[256];
	int64_t exited_ms;
	bool kill_requested;
	struct ev_timer *kill_timer;

	uint32_t frames_since_keyframe;
	struct ev_timer *keyframe_timer;
	struct ev_timer *kick_timer;   /* a deferred feeder_kick */
	struct gather gather;	       /* a stream's reads joined (gather.h) */
	struct ev_timer *gather_timer; /* its deadline */

	int64_t membership_window_ms;  /* start of the coalescing window (mono) */
	unsigned membership_in_window; /* join broadcasts in it */
	bool membership_dirty;	       /* joins since then wait for the timer */
	struct ev_timer *membership_timer;

	struct buf pack; /* scratch for packing frames */

	/* durability (session_state.c) */
	uint64_t seq_reserved;	   /* numbers up to here are reserved on disk */
	uint64_t screen_saved_seq; /* s->seq when the screen was last saved */
	int64_t screen_saved_ms;
	uint64_t logged_since_screen; /* frame log bytes since then */
	struct framelog *log;	      /* NULL without --state-dir */
	struct ev_timer *flush_timer;

	/* replays streaming from disk (replay.c) */
	LIST_HEAD(, replay) replays;
	unsigned n_replaying;
};

/* session_state.c: the session's durable state under --state-dir. */
/* Reserves the next block of sequence numbers on disk when the next
   number would pass the reserved ceiling. */
void session_state_reserve(struct session *s);
/* Writes the session record (no-op without a state dir). */
void session_state_persist(struct session *s);
/* A Keyframe's snapshot was made: saved as the session's last screen
   at most once a second, or sooner when it is for all (the cadence) and
   the frame log has grown by a quarter of its budget since the last. */
void session_state_keyframe_made(struct session *s, const struct buf *snap, bool for_all);
/* Periodic: saves the screen when it changed, applies log retention. */
void session_state_tick(struct session *s, int64_t now_ms);
/* A new session: opens its frame log, writes its record. */
void session_state_start(struct session *s);
/* Appends a retained broadcast frame (packed) to the frame log. */
void session_state_log(struct session *s, const Ptg__Frame *f, const struct buf *packed);
/* Closes the frame log (session_free). */
void session_state_free(struct session *s);
struct store_record;
/* A session rebuilt from record r (session_restore): opens its frame
   log, brings the screen up to the last frame on disk and sets the
   sequence above every number that may have been issued. Returns the
   last sequence on disk (0: none). */
uint64_t session_state_restore(struct session *s, const struct store_record *r);
/* The oldest sequence a replay can start after (disk or memory). */
uint64_t session_state_oldest(const struct session *s);
/* 0 when a replay from (exclusive) replay_from can be served, else -ERANGE. */
int session_state_check_replay(const struct session *s, uint64_t replay_from);
/* Sends the frames after `after` to one attachment from the memory ring
   (a replay that needs the disk streams through replay.c instead). */
void session_state_replay(struct session *s, struct linkconn *lc, uint64_t attach_id,
			  uint64_t after);

/* replay.c: a join's replay that needs the disk, streamed over loop
   turns. Returns 0 when the ring holds everything after `after` (the
   caller replays it at once), or 1 when a streaming replay started:
   m is held "replaying" (broadcasts skip it) until the history is sent,
   and done(s, m, cols, rows) then ends its join (not called when the
   replay is cancelled or freed). */
typedef void session_replay_done_fn(struct session *s, struct member *m, unsigned cols,
				    unsigned rows);
int session_replay_start(struct session *s, struct member *m, uint64_t after,
			 unsigned cols, unsigned rows, session_replay_done_fn *done);
/* Drops m's replay without sending more (m leaves). */
void session_replay_cancel(struct session *s, const struct member *m);
/* Drops the replays of every member on link (the link ended). */
void session_replay_cancel_link(struct session *s, const void *link);
/* Ends m's replay now: an Error PTY_OUTPUT_LAGGED naming why, then the
   rest of the join flow. */
void session_replay_stop(struct session *s, const struct member *m, const char *why);
/* session_free. */
void session_replay_free_all(struct session *s);
/* session_emit.c: every frame goes out through session_emit. */
/* Numbers f, stamps it, packs it once, retains it when it is a retained
   broadcast kind, and sends it to target (NULL: every member's link).
   Keyframes get anchor_sequence = their own sequence. Returns it. */
uint64_t session_emit(struct session *s, Ptg__Frame *f, const struct member *target);
/* An Error frame (a session frame's Error kind) to target, or broadcast. */
void session_emit_error(struct session *s, const struct member *target,
			Ptg__FrameErrorCode code, const char *msg);
/* The members of one role, in join order, as link messages pointing into
   the members (free with session_member_list_free). */
Ptg__Member **session_member_list(struct session *s, enum member_role role, size_t *n);
void session_member_list_free(Ptg__Member **v, size_t n);
/* Broadcasts the whole membership now. */
void session_emit_membership(struct session *s);
/* The membership step of a join flow (docs/protocol.md, "Joining a
   session"): a broadcast, unless MEMBERSHIP_BURST of them went out in the
   current window of MEMBERSHIP_COALESCE_MS; then the joiner gets the whole
   list addressed to it alone, in the same place of its flow, and everyone
   one broadcast with the final list when the window ends. So a burst of N
   joins costs at most MEMBERSHIP_BURST + 1 lists to every member per
   window, not N. */
void session_emit_membership_joined(struct session *s, const struct member *joiner);
/* Sends Closed to target (NULL: broadcast). */
void session_emit_closed(struct session *s, const struct member *target);
/* RoleAssigned to m: its role now, and why a request was refused. */
void session_emit_role(struct session *s, const struct member *m, bool downgraded,
		       const char *reason);
/* A member's role as the link names it. */
Ptg__Role session_wire_role(enum member_role r);

/* session.c: the process, the PTY, the screen and the size. */
/* A Keyframe of the current screen, to target or broadcast. */
uint64_t session_emit_keyframe(struct session *s, const struct member *target);
/* Applies a size to the PTY and the screen and broadcasts Resize;
   returns 0 or a negative errno from the PTY. */
int session_apply_size(struct session *s, unsigned cols, unsigned rows);

/* approval.c: the approve control policy. */
/* 1 when a controller request from a member who may control must wait
   for a controller's approval (approve, running, a controller there). */
bool session_control_gates(struct session *s, bool may_control);
/* owner_only: why principal may not control (it is not the session's
   owner), or NULL when it may as far as the policy goes. */
const char *session_control_owner_refusal(const struct session *s, const char *principal);
/* The downgrade reason of a request held for approval. */
const char *session_control_wait_reason(void);
/* An ask for control from observer m: 1 when held for approval (the
   RoleAssigned answer sent), 0 when it takes the open path. */
bool session_control_ask(struct session *s, struct member *m);
/* The end of m's join flow: its copy of the pending requests, and its
   own ask when it joined asking for control (m->asks_control). */
void session_control_joined(struct session *s, struct member *m);
/* m no longer asks (it asked for observer). */
void session_control_withdraw(struct session *s, struct member *m);
/* After members left or a controller stepped down: requests of members
   gone are withdrawn; with no controller left the oldest is granted. */
void session_control_prune(struct session *s);
/* session_free. */
void session_control_free(struct session *s);

#endif
