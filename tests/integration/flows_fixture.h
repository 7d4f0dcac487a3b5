/* flows_fixture: what every integration test of the sidecar shares: a real
   ptygate-sidecar (path in argv[1]) started per test on a private unix
   socket in a fresh temp directory, peers that speak the link protocol to
   it through linkclient and log every message they receive, the
   expectations (frames, replies, output, quiet), the requests of the link
   protocol, and the join flows (docs/protocol.md, "Joining a session"). The
   teardown always stops the sidecar (SIGTERM, then SIGKILL by pid) and
   checks it exited cleanly. Sessions run /bin/sh on a real PTY, so outputs
   are matched by substring with bounded waits; every wait is also capped by
   a per-test deadline (TEST_BUDGET_MS).

   Each test file includes the cmocka headers, then this one, and runs
   its tests with setup and teardown through flows_run. */
#ifndef PTG_FLOWS_FIXTURE_H
#define PTG_FLOWS_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "buf.h"
#include "link.h"
#include "linkclient.h"

/* Deadlines for a failure, far beyond what a loaded machine delays. */
#define TEST_BUDGET_MS 120000 /* every wait of one test, all together */
#define STEP_MS	       20000  /* default bound of one expected message */
#define MAX_PEERS      10
#define MAX_SEQ_KEYS   4
/* Room for a session id the sidecar hands out (a UUIDv7) and its NUL. */
#define FLOWS_SID_MAX 64

extern int64_t test_deadline; /* time_mono_ms() when the test's waits end */
extern rlim_t child_nofile;   /* the next sidecar's RLIMIT_NOFILE (0: inherit) */

/* A test file's main: takes the sidecar's path from argv[1], ignores
   SIGPIPE and runs the group of n tests named name (each with setup and
   teardown). Returns the exit status: cmocka's, or 2 for a usage error. */
struct CMUnitTest;
int flows_run(const char *name, const struct CMUnitTest *tests, size_t n, int argc,
	      char **argv);
/* One test of a flows file, with the fixture's setup and teardown. */
#define FLOWS_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
/* The end of a flows file's main(argc, argv): runs its tests array. */
#define FLOWS_RUN(name, tests)                                                           \
	flows_run(name, tests, sizeof(tests) / sizeof((tests)[0]), argc, argv)

/* ---- peers: one link each, with a log of every message received ---- */

struct seq_key {
	char session[FLOWS_SID_MAX];
	uint64_t last;
};

struct peer {
	struct linkclient lc;
	int open;
	Ptg__LinkMessage **log; /* every message received, owned, freed at teardown */
	size_t n_log, cap_log;
	struct buf text;		   /* Output bytes received, for wait_output */
	size_t text_mark;		   /* wait_output searches from here */
	struct seq_key seqs[MAX_SEQ_KEYS]; /* last broadcast sequence per session */
	uint64_t next_rid;
};

struct fixture {
	pid_t pid;
	char dir[64];
	char sock[128];
	struct peer peers[MAX_PEERS];
	int n_peers;
};

/* want, or less when the test's deadline comes sooner. */
int remaining_ms(int want);
void sleep_ms(int ms);
/* The name of a frame's kind, for messages. */
const char *kind_name(const Ptg__Frame *f);
/* Prints a one-line description of m after what. */
void describe(const char *what, const Ptg__LinkMessage *m);
/* The next message within timeout_ms, or NULL on timeout. Fails when the
   link ends. The message stays in the peer's log. Broadcast frames of
   one session must arrive in sequence order. */
Ptg__LinkMessage *peer_recv(struct peer *p, int timeout_ms);
/* peer_recv that fails on timeout, naming what was awaited. */
Ptg__LinkMessage *peer_must_recv(struct peer *p, int timeout_ms, const char *what);
void peer_send(struct peer *p, const Ptg__LinkMessage *m);
/* A connected peer that has sent nothing yet. */
struct peer *peer_connect(struct fixture *fx);
void send_hello(struct peer *p, Ptg__ProtocolVersion v);
/* A linked peer: connected, Hello sent, HelloAck checked. */
struct peer *peer_open(struct fixture *fx);
/* Drops the link as a crashed gateway would. */
void peer_drop(struct peer *p);
void peer_free(struct peer *p);

/* ---- the sidecar process ---- */

/* Starts the sidecar with extra arguments (NULL-terminated, or NULL) and
   waits (bounded) until its socket accepts. */
void sidecar_start(struct fixture *fx, const char *const *extra);
/* SIGTERM, wait up to 5 s, then SIGKILL. Returns the wait status. */
int sidecar_stop(struct fixture *fx);
/* The sidecar refuses flag=value at start: exit status 2, and stderr
   names the flag. */
void expect_refused(const char *flag, const char *value);
/* cmocka setup and teardown: a fresh fixture and deadline; the sidecar
   stopped (its unclean exit fails the test), peers freed, files removed. */
int setup(void **state);
int teardown(void **state);
/* Removes a directory and everything under it (a state directory holds
   a directory per session's frame log and tasks/). */
void remove_tree(const char *dir);

/* ---- expectations ---- */

/* 1 for Output and broadcast (cadence) Keyframes: the frames the
   expectations below skip. */
int is_noise(const Ptg__Frame *f);
/* The next frame of kind addressed to target (0: broadcast), skipping
   Output and cadence Keyframes; anything else fails. */
Ptg__Frame *expect_frame(struct peer *p, Ptg__Frame__KindCase kind, uint64_t target,
			 int timeout_ms);
/* The very next message, which must be a frame of kind to target. */
Ptg__Frame *next_frame(struct peer *p, Ptg__Frame__KindCase kind, uint64_t target);
/* The MembershipChanged step of a join flow: a broadcast, or, when joins
   come closer together than the sidecar's coalescing interval, the same
   whole list addressed to the joiner (the broadcast follows later). */
Ptg__Frame *next_membership(struct peer *p, uint64_t joiner);
/* The Reply to request_id (0 for attach-scoped errors), skipping noise. */
Ptg__Reply *expect_reply(struct peer *p, uint64_t request_id, int timeout_ms);
/* The Reply to request_id carries code, attach_id, op (unless NULL) and
   a message. */
void expect_error(struct peer *p, uint64_t request_id, Ptg__ErrorCode code,
		  uint64_t attach_id, const char *op);
/* Nothing but noise arrives for ms. */
void expect_quiet(struct peer *p, int ms);
/* Where needle occurs in the Output received from offset from, or NULL. */
const uint8_t *text_find(const struct peer *p, size_t from, const char *needle);
/* Reads until the Output received since the last match contains needle. */
void wait_output(struct peer *p, const char *needle, int timeout_ms);
/* 1 when the snapshot, written to a fresh terminal of its size, shows
   needle on one of its rows. */
int snapshot_shows(const Ptg__KeyframeFrame *kf, const char *needle);

/* ---- requests ---- */

extern const char *const SH[];	   /* /bin/sh */
extern const char *const SH_ENV[]; /* its prompts "$ " and "> ", no ENV file */

struct create_req {
	const char *const *argv;
	const char *const *env; /* NAME=VALUE */
	unsigned cols, rows;
	Ptg__Policy policy;
};

/* Creates the session (it must succeed) and writes its id. */
void create_session(struct peer *p, const struct create_req *cr, char id[FLOWS_SID_MAX]);
/* The same with a control policy (create_session's is open). */
void create_session_controlled(struct peer *p, const struct create_req *cr,
			       Ptg__ControlPolicy control, char id[FLOWS_SID_MAX]);
/* create_session of SH with SH_ENV, cols x rows, keep_running. */
void create_sh(struct peer *p, unsigned cols, unsigned rows, char id[FLOWS_SID_MAX]);

enum { SC_OBSERVE = 1, SC_CONTROL = 2 };

struct attach_req {
	const char *session;
	uint64_t attach_id;
	Ptg__Role role;
	unsigned cols, rows;
	const char *label;
	int scopes; /* SC_OBSERVE | SC_CONTROL */
	int has_replay;
	uint64_t replay_from;
	const char *op; /* client_op_id */
};

struct joined {
	char client_id[32];
	Ptg__Role role;
	uint64_t role_seq;
	Ptg__RoleAssignedFrame *ra;
	Ptg__MembershipChangedFrame *mc;
	Ptg__KeyframeFrame *kf;
	uint64_t kf_seq;
};

/* Sends the Attach; returns its request id. */
uint64_t send_attach(struct peer *p, const struct attach_req *a);
/* Sends the attach and checks its successful Reply. */
Ptg__AttachResult *attach_ok(struct peer *p, const struct attach_req *a);
/* The fresh-join flow: Reply, then RoleAssigned (joiner), MembershipChanged
   (all) and Keyframe (joiner) back to back. */
void join(struct peer *p, const struct attach_req *a, struct joined *j);
/* The sidecar with extra (or NULL), one linked peer, and a session made
   by cr (NULL: an 80x24 /bin/sh) with its id into sid. Returns the peer. */
struct peer *start_session(struct fixture *fx, const char *const *extra,
			   const struct create_req *cr, char sid[FLOWS_SID_MAX]);
/* The usual start: start_session of an 80x24 /bin/sh, joined by attach
   id 1 as controller "ctl" into *j. Returns the peer. */
struct peer *start_shell_controller(struct fixture *fx, const char *const *extra,
				    char sid[FLOWS_SID_MAX], struct joined *j);
/* join with the scopes the role needs. */
void join_simple(struct peer *p, const char *sid, uint64_t aid, Ptg__Role role,
		 const char *label, struct joined *j);
/* The out-of-range flow: Reply with replay_error, then Keyframe,
   RoleAssigned, MembershipChanged. Returns the replay_error. */
const char *join_out_of_range(struct peer *p, const struct attach_req *a);
/* The client ops (op NULL: no client_op_id). */
void send_input(struct peer *p, const char *sid, uint64_t aid, const char *data,
		const char *op);
void send_resize(struct peer *p, const char *sid, uint64_t aid, unsigned cols,
		 unsigned rows, const char *op);
void send_request_role(struct peer *p, const char *sid, uint64_t aid, Ptg__Role role);
void send_request_keyframe(struct peer *p, const char *sid, uint64_t aid, const char *op);
/* What the gateway sends for a connection that fell behind, dropping
   dropped bytes of its output: a Keyframe request with lag_recovery. */
void send_lag_recovery(struct peer *p, const char *sid, uint64_t aid, uint64_t dropped);
/* Sends the Detach; returns its request id. */
uint64_t send_detach(struct peer *p, const char *sid, uint64_t aid);
/* Detach: the final MembershipChanged reaches the leaver's link, then
   the Reply. Returns the last membership before the Reply (earlier ones
   may still be queued from other joins). */
Ptg__MembershipChangedFrame *detach_ok(struct peer *p, const char *sid, uint64_t aid);
/* Sends GetSession; returns its request id. */
uint64_t send_get(struct peer *p, const char *sid);
/* The session's info (the GetSession must succeed). */
Ptg__SessionInfo *get_session(struct peer *p, const char *sid);
/* KillSession, which must succeed. */
void kill_session(struct peer *p, const char *sid);

#endif
