/* envelope: parses one client text frame of pty-ws/v1 (docs/protocol.md,
   "Frames") into a struct, and validates the payloads of the client verbs
   ("Client ops"). No I/O. Every failure is an `Error INVALID_REQUEST` for
   the caller to send: the error carries the message (naming the field) and
   the id to echo, which is the client's id when it was usable, else a fresh
   UUIDv7 (the schema wants a UUIDv7 where there is nothing to echo). */
#ifndef PTG_ENVELOPE_H
#define PTG_ENVELOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "buf.h"
#include "link.pb-c.h"
#include "ptg_limits.h"
#include "ptyws.h"

#define ENVELOPE_MSG_MAX	    256
#define ENVELOPE_SERVICE_PARAMS_MAX 4096 /* compact encoded bytes */
#define ENVELOPE_EXTENSIONS_MAX	    16
/* service_parameters.trace_id: at most this many bytes of letters,
   digits and "-._:" (a W3C traceparent is 55, a UUID 36). It is written
   into every log line about the connection, so it may hold nothing a
   reader could take for the line's own text (spaces, quotes, "]",
   control characters). */
#define ENVELOPE_TRACE_ID_MAX 64

/* Every op a client may send; ENVELOPE_OP_UNKNOWN for anything else
   (the caller answers UNSUPPORTED_OPERATION). */
enum envelope_op {
	ENVELOPE_OP_UNKNOWN = 0,
	ENVELOPE_OP_PTY_JOIN,
	ENVELOPE_OP_PTY_INPUT,
	ENVELOPE_OP_PTY_RESIZE,
	ENVELOPE_OP_PTY_REQUEST_ROLE,
	ENVELOPE_OP_PTY_REQUEST_KEYFRAME,
	ENVELOPE_OP_PTY_LEAVE,
	ENVELOPE_OP_PING,
	ENVELOPE_OP_UPDATE_SERVICE_PARAMETERS,
	ENVELOPE_OP_SEND_MESSAGE,
	ENVELOPE_OP_SEND_STREAMING_MESSAGE,
	ENVELOPE_OP_GET_TASK,
	ENVELOPE_OP_LIST_TASKS,
	ENVELOPE_OP_CANCEL_TASK,
	ENVELOPE_OP_SUBSCRIBE_TO_TASK,
	ENVELOPE_OP_UNSUBSCRIBE,
	ENVELOPE_OP_PUSH_CONFIG,    /* the four push-notification config ops */
	ENVELOPE_OP_CONTROL_DECIDE, /* ptygate.decide_control */
};

/* Where a parse or validation failed: the id to echo in the Error and a
   message naming the offending field. */
struct envelope_error {
	char id[PTG_MSG_ID_MAX_BYTES + 1];
	char message[ENVELOPE_MSG_MAX];
};

struct envelope {
	json_t *root;	/* owned; the borrowed pointers live in it */
	const char *op; /* borrowed */
	enum envelope_op op_kind;
	char id[PTG_MSG_ID_MAX_BYTES + 1]; /* the client's id, verbatim */
	bool has_replay_from;		   /* false when absent or null */
	uint64_t replay_from;
	bool has_extensions;	    /* the frame carried an `extensions` array */
	bool pty_extension;	    /* ... which names PTYWS_EXT_PTY */
	bool control_extension;	    /* ... or PTYWS_EXT_CONTROL */
	json_t *service_parameters; /* one reference held, NULL when absent */
	json_t *payload;	    /* borrowed; NULL when the payload is null */
	/* The plain input op (envelope_plain.c) has no tree: root and
	   payload are NULL, and this is its payload.data (the envelope's own
	   copy, freed with it). NULL otherwise. */
	const char *plain_data;
	size_t plain_data_len;
};

struct envelope_join {
	Ptg__Role role;
	uint32_t cols; /* 0 with rows 0: not given */
	uint32_t rows;
	char label[PTG_LABEL_MAX_BYTES + 1]; /* "" when not given */
};

struct envelope_resize {
	uint32_t cols;
	uint32_t rows;
};

/* Parses text (len bytes, UTF-8 already checked). Returns 0 and sets
 *out (free with envelope_free), or -EINVAL and fills err. */
int envelope_parse(const char *text, size_t len, struct envelope **out,
		   struct envelope_error *err);
/* Frees env and drops its references; NULL is a no-op. */
void envelope_free(struct envelope *env);
/* True for the `pty.*` ops, which need the extension activated. */
bool envelope_op_is_pty(enum envelope_op kind);

/* Payload validators: each returns 0 and fills out, or -EINVAL and fills
   err (id echoing env). Unknown payload fields are refused as the
   extension's schema says (additionalProperties: false). */
int envelope_join(const struct envelope *env, struct envelope_join *out,
		  struct envelope_error *err);
/* Appends the decoded `data` to out (at most PTG_INPUT_MAX bytes);
   out is unchanged on failure. */
int envelope_input(const struct envelope *env, struct buf *out,
		   struct envelope_error *err);
int envelope_resize(const struct envelope *env, struct envelope_resize *out,
		    struct envelope_error *err);
int envelope_request_role(const struct envelope *env, Ptg__Role *out,
			  struct envelope_error *err);
/* ptygate.decide_control {client_id, approve}: client_id is copied. */
struct envelope_decide {
	char client_id[PTG_CLIENT_ID_MAX_CHARS + 1];
	bool approve;
};
int envelope_decide_control(const struct envelope *env, struct envelope_decide *out,
			    struct envelope_error *err);
/* request_keyframe and leave: payload {} (null accepted too). */
int envelope_no_fields(const struct envelope *env, struct envelope_error *err);
/* ping: *client_ts borrows the string from env (an RFC 3339 time). */
int envelope_ping(const struct envelope *env, const char **client_ts,
		  struct envelope_error *err);
/* UpdateServiceParameters: *params borrows the new object from env
   (json_incref it to keep it). Other payload fields are ignored. */
int envelope_service_update(const struct envelope *env, json_t **params,
			    struct envelope_error *err);

#endif
