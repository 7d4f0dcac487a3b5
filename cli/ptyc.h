/* ptyc: the pty-ws/v1 client protocol as `ptygate attach` speaks it,
   with no I/O. It builds the client's frames (docs/protocol.md, "2. Frames") and
   reads the
   server's: Keyframe snapshots and Output data go to the screen in
   sequence order (a frame at or below the last applied sequence, which a
   Keyframe sets to its anchor_sequence, is dropped: docs/protocol.md,
   "3. Sequences, replay and keyframes"), Error frames
   and role downgrades become one-line notices, and the role, the
   session's end and binding_goodbye are kept for the caller. */
#ifndef PTG_CLI_PTYC_H
#define PTG_CLI_PTYC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptg_limits.h"
#include "ptyws.h"

#define PTYC_INPUT_CHUNK (48 * 1024) /* raw bytes per pty.session_input */

/* What ptyc_handle reports, with the user pointer given to ptyc_new. */
struct ptyc_callbacks {
	/* Bytes for the terminal, in order. */
	void (*on_screen)(const uint8_t *p, size_t n, void *user);
	/* One line for the user, without a newline. */
	void (*on_notice)(const char *line, void *user);
};

/* The join request. */
struct ptyc_join {
	bool observer;
	unsigned cols, rows; /* 1..1024; 0: none sent, the session's size stays */
	const char *label;   /* at most PTG_LABEL_MAX_BYTES bytes, or NULL */
	bool replay;	     /* send replay_from */
	uint64_t replay_from;
};

struct ptyc;

/* A fresh client state; cb is copied. */
struct ptyc *ptyc_new(const struct ptyc_callbacks *cb, void *user);
/* NULL is a no-op. */
void ptyc_free(struct ptyc *p);
/* A fresh connection resuming with replay_from = last_seq: the terminal
   already shows every frame up to last_seq, so those are dropped, and
   the join's Keyframe repaints the visible screen without scrolling it
   into the terminal's scrollback (it would be there twice). After
   REPLAY_OUT_OF_RANGE the Keyframe is applied as on a fresh join. */
void ptyc_resume(struct ptyc *p, uint64_t last_seq);

/* Reads one server message. Returns 0, or -EPROTO for one that is not a
   JSON object with a string op, or whose known payload is malformed (a
   notice says so; the state is unchanged). */
int ptyc_handle(struct ptyc *p, const char *text, size_t n);

/* The role the server assigned: "controller", "observer", or "" before
   RoleAssigned. */
const char *ptyc_role(const struct ptyc *p);
/* Whether binding_goodbye came, and its reason ("" when it had none). */
bool ptyc_goodbye(const struct ptyc *p, const char **reason);
/* Whether the session's process ended (Closed), and its exit code. */
bool ptyc_closed(const struct ptyc *p, int *exit_code);
/* The highest sequence applied to the screen, 0 before any. */
uint64_t ptyc_last_sequence(const struct ptyc *p);

/* The client's frames as JSON text (the caller frees). join is the first
   frame: it activates the extension. input encodes n (at most
   PTYC_INPUT_CHUNK) raw bytes. */
char *ptyc_msg_join(const struct ptyc_join *j);
char *ptyc_msg_input(const uint8_t *data, size_t n);
char *ptyc_msg_resize(unsigned cols, unsigned rows);
char *ptyc_msg_leave(void);
/* The oldest control request waiting for a controller's answer (its
   client id), or NULL: only in sessions whose control policy is approve. */
const char *ptyc_control_pending(const struct ptyc *p);
/* ptygate.decide_control: approves or denies client_id's request. */
char *ptyc_msg_decide(const char *client_id, bool approve);

#endif
