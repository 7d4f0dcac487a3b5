/* task: one A2A task of the sidecar as data: its owner (the
   principal that sent it), the user's message and the command it carries, the state
   machine SUBMITTED -> WORKING -> COMPLETED | FAILED | CANCELED, the captured output with
   its byte cap, the exit status, and every JSON form of it: the A2A v1.0 canonical task,
   status and deltas sent out, the inbound message parsed (the older lower-case forms
   accepted), and the record kept on disk. No I/O and no processes: tasks.c runs them. */
#ifndef PTG_TASK_H
#define PTG_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "ptg_limits.h"
#include "uuid.h"

enum task_state {
	TASK_SUBMITTED,
	TASK_WORKING,
	TASK_COMPLETED,
	TASK_FAILED,
	TASK_CANCELED,
	TASK_REJECTED,
};

enum task_stream_id { TASK_STDOUT, TASK_STDERR };

/* A task's owner is the sending token's sub (JWT_SUB_MAX bytes). */
#define TASK_OWNER_MAX 256

/* Captured bytes of one stream. kept <= the task's cap; total counts
   what the process wrote, kept or not. */
struct task_stream {
	char *data;
	size_t len, cap;
	uint64_t total;
	bool truncated;
	size_t announced; /* bytes already sent in output deltas */
};

struct task {
	char id[UUID_STRLEN + 1];
	char session_id[PTG_ID_MAX + 1];
	/* The principal that sent it; "" for a record written before tasks
	   had owners, which only a principal with tasks:all sees. */
	char owner[TASK_OWNER_MAX + 1];
	char message_id[PTG_TASK_ID_MAX + 1];
	char idem_key[PTG_TASK_ID_MAX + 1]; /* "" when none */
	char trace_id[PTG_TASK_ID_MAX + 1]; /* "" when none */
	char log_ctx[320];		    /* "session=S task=T trace=..." */
	enum task_state state;
	int64_t created_ms, updated_ms; /* updated: the last status change */
	json_t *message;		/* the user's message, canonical */
	char *command;			/* its text parts joined */
	char *status_text;		/* the status message; NULL: none */
	struct task_stream out[2];
	bool has_exit_code;
	int exit_code;
	int signal; /* 0: not ended by a signal */
	void *run;  /* tasks.c: process, pipes, subscribers */
};

/* What task_parse_send found in a SendMessage payload. */
struct task_send {
	json_t *message; /* canonical; owned */
	char *command;	 /* owned */
	char message_id[PTG_TASK_ID_MAX + 1];
};

/* Parses a SendMessage payload {message, configuration?, metadata?}.
   Returns 0 and fills out, or a Ptg__ErrorCode (INVALID_REQUEST, or
   PERMISSION_DENIED for another session's contextId) with err set.
   max_command bounds the joined text in bytes. */
int task_parse_send(const char *params_json, const char *session_id, size_t max_command,
		    struct task_send *out, char *err, size_t errlen);
void task_send_release(struct task_send *s);

/* A new SUBMITTED task of owner taking over s's message and command. */
struct task *task_new(const char *session_id, const char *owner, struct task_send *s,
		      const char *idem_key, const char *trace_id, int64_t now_ms);
void task_free(struct task *t);

/* 1 if principal may see and act on t: its own task, or any with
   all_principals (scope tasks:all). A task without an owner is nobody's. */
bool task_visible(const struct task *t, const char *principal, int all_principals);

bool task_is_terminal(const struct task *t);
const char *task_state_name(enum task_state s);
/* Parses "TASK_STATE_WORKING" or the older "working"; 0 or -EINVAL. */
int task_state_parse(const char *s, enum task_state *out);

/* Moves to state with a status message (text may be NULL). */
void task_set_state(struct task *t, enum task_state state, const char *text,
		    int64_t now_ms);
/* Keeps what fits under cap bytes for both streams together; the rest is
   counted and the stream marked truncated. */
void task_append_output(struct task *t, enum task_stream_id s, const char *p, size_t n,
			size_t cap);
/* Records how the process ended (a wait status) and moves to COMPLETED
   (exit 0) or FAILED, unless the task is already terminal (canceled). */
void task_set_exit(struct task *t, int wait_status, int64_t now_ms);

/* The canonical A2A task; history_length < 0: all of it. New reference. */
json_t *task_json(const struct task *t, long history_length);
/* Delta of a status change: {"status": {...}}. */
json_t *task_status_delta(const struct task *t);
/* Delta of output not yet announced ({"artifacts": [...], "append": true}),
   or NULL when there is none; marks it announced. An incomplete UTF-8
   sequence at the end waits for the next call. */
json_t *task_output_delta(struct task *t);

/* The record kept on disk (malloc'd JSON text), and back. NULL when the
   record does not parse. Output holding NUL bytes round-trips (\u0000);
   a version 1 record (no owner) loads with owner "". */
char *task_record(const struct task *t);
struct task *task_from_record(const char *data, size_t n);

#endif
