/* session: one terminal session of the sidecar: its process on a PTY, the
   screen model, the sequence counter and replay ring, its members, and the
   join flows (docs/protocol.md, "Joining a session"). The server (server.c)
   routes link requests here; a session writes its frames and join replies
   straight to the links of its members. */
#ifndef PTG_SESSION_H
#define PTG_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "ev.h"
#include "link.pb-c.h"
#include "linkconn.h"

/* Flow control toward the gateways. A gateway never makes the link wait for
   a slow client (it drops what such a client has not received:
   docs/protocol.md, "A slow connection"), so a link's queue grows only
   while the gateway as a whole reads slower than the PTYs produce. Past
   this many queued bytes on a link of one of its members, a session stops
   reading its PTY until the link is under half of it: its program waits, as
   on any terminal, instead of every client's output (and a controller's
   echo) waiting behind seconds of queued output. A link that stays over it
   without the gateway reading a byte for SESSION_LINK_STALL_MS is dropped
   (server.c), so a gateway that stops reading holds the PTY no longer than
   that. 64 KiB is one PTY read: with the socket's own buffer (some 200 KiB)
   the gateway never finds the link dry, and no more than that waits ahead
   of an echo. */
#define SESSION_LINK_HIGH_WATER (64 * 1024)
#define SESSION_LINK_STALL_MS	10000

struct session;

struct session_params {
	char *const *argv; /* NULL or empty: the login shell */
	const char *cwd;
	char *const *env_extra; /* NAME=VALUE */
	unsigned cols, rows;	/* 0: the configured default */
	Ptg__Policy policy;
	Ptg__ControlPolicy control_policy;
	const char *owner; /* the creator's principal, or NULL */
	const char *label;
};

/* Starts the program. Returns NULL and writes the reason to err when it
   cannot be started. */
struct session *session_new(const struct sidecar_config *cfg, struct ev_loop *loop,
			    const struct session_params *p, char *err, size_t errlen);
struct store_record;
/* Rebuilds a session from its state-dir record after a sidecar restart:
   its sequence goes on, its history before it is gone (replays from
   earlier are out of range), its screen is the last one saved. If its
   program was running, it was lost: a `log` line and `Closed
   {instance_terminated}` say so. */
struct session *session_restore(const struct sidecar_config *cfg, struct ev_loop *loop,
				const struct store_record *r);
/* Frees everything; the process, if still alive, is sent SIGKILL. */
void session_free(struct session *s);

const char *session_id(const struct session *s);
/* "session=ID", the context its log lines carry. */
const char *session_log_ctx(const struct session *s);
pid_t session_pid(const struct session *s);
bool session_exited(const struct session *s);
/* Writes the session's record and current screen to the state dir (the
   sidecar is stopping). */
void session_checkpoint(struct session *s);
/* Deletes the session's state-dir record (it is being reaped). */
void session_forget(struct session *s);
/* 1 when the session has exited long enough ago and has no members. */
bool session_reapable(const struct session *s, int64_t now_ms);
/* One page of the session's recording (asciicast v2) for an
   ExportSession: data into out (c->data points into it), at most
   EXPORT_PAGE_MAX bytes past one frame's events, the cursor for the next
   page in c (whose carry.data must hold 4 bytes). From the frame log
   with --state-dir, else the ring. The export ends at q's
   until_sequence, or without one at the last frame now (c's
   until_sequence: the end to ask the later pages for). */
#define EXPORT_PAGE_MAX (1u << 20)
void session_export_page(struct session *s, const Ptg__ExportSession *q, struct buf *out,
			 Ptg__ExportChunk *c);
/* When an exited session with no member may make room for a new one
   (the sidecar at --max-sessions): its exit time in ms, else -1. */
int64_t session_evictable_since(const struct session *s);
/* Fills out with the session's state; strings and arrays point into s
   or into storage released by session_info_release. */
void session_info(struct session *s, Ptg__SessionInfo *out);
/* What the sidecar's stats count of a session. */
struct session_counts {
	unsigned members;     /* its attachments, every link */
	uint64_t pty_bytes;   /* read from its PTY by this process */
	uint64_t input_bytes; /* written to its PTY by this process */
	uint64_t log_bytes;   /* its frame log on disk (0 without --state-dir) */
};
void session_counts(const struct session *s, struct session_counts *out);
void session_info_release(Ptg__SessionInfo *out);

/* The child exited with wait status; output still in the PTY is drained
   first, then Closed is broadcast. */
void session_child_exited(struct session *s, int status);
/* Hangs up the process group, then SIGKILL after the grace period. The
   close reason becomes `killed` (detail says why). */
void session_kill(struct session *s, const char *detail);

/* Runs the join flow for a; answers with the Reply, then the frames. */
void session_attach(struct session *s, struct linkconn *lc, const Ptg__Attach *a);
/* Removes the attachment and broadcasts the membership. Returns 0 or
   -ENOENT. reply_request_id, when non-zero, is answered after the final
   MembershipChanged. */
int session_detach(struct session *s, struct linkconn *lc, uint64_t attach_id,
		   uint64_t reply_request_id, const char *client_op_id);
void session_input(struct session *s, struct linkconn *lc, const Ptg__Input *in);
void session_resize(struct session *s, struct linkconn *lc, const Ptg__Resize *rz);
void session_request_role(struct session *s, struct linkconn *lc,
			  const Ptg__RequestRole *rr);
void session_request_keyframe(struct session *s, struct linkconn *lc,
			      const Ptg__RequestKeyframe *rk);
/* A controller's answer to a pending control request (approval.c). */
void session_decide_control(struct session *s, struct linkconn *lc,
			    const Ptg__DecideControl *dc);
/* The link is gone: its attachments leave (one membership broadcast). */
void session_drop_link(struct session *s, struct linkconn *lc);
/* The sidecar's --state-max-bytes: deletes the oldest segments of all
   sessions' frame logs until the total fits (session_state.c). */
void session_state_budget(struct session **v, size_t n, uint64_t max_bytes);
/* Periodic upkeep: ring eviction by age. */
void session_tick(struct session *s, int64_t now_ms);

#endif
