/* frames: builds every server frame of pty-ws/v1 (docs/protocol.md) as one
   compact JSON text appended to a struct buf. No I/O. One encode per
   frame: the caller wraps the bytes once and shares them with every
   connection. Text that came from users or peers (labels, details,
   messages) is made valid UTF-8 (bad bytes become U+FFFD) and cut to the
   schema's length limits. Key order is fixed: op, id, ts, sequence?,
   service_parameters?, payload.

   Ids: `id_echo` is the client's request id, echoed verbatim
   (docs/protocol.md, "Frames"); `id` may be NULL for a fresh UUIDv7.
   now_ms is the wall clock in ms (time_now_ms()), a parameter so the
   builders stay deterministic. */
#ifndef PTG_FRAMES_H
#define PTG_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "buf.h"
#include "link.pb-c.h"
#include "ptyws.h"

/* Pending requests a notice lists at most (the sidecar's cap is lower). */
#define FRAMES_CONTROL_PENDING_MAX 32

/* The Error codes of the binding (docs/protocol.md, "Errors and closing"),
   in the table's order. */
enum frames_code {
	FRAMES_TASK_NOT_FOUND,
	FRAMES_TASK_NOT_CANCELABLE,
	FRAMES_INVALID_REQUEST,
	FRAMES_UNSUPPORTED_OPERATION,
	FRAMES_UNAUTHENTICATED,
	FRAMES_PERMISSION_DENIED,
	FRAMES_RATE_LIMITED,
	FRAMES_INTERNAL,
	FRAMES_REPLAY_OUT_OF_RANGE,
	FRAMES_CODE_COUNT
};

/* One row of the Error table (docs/protocol.md, "Errors and closing").
   a2a_type NULL: `a2a_error` is null. Exactly one of jsonrpc_code
   (non-zero) and http_status (non-zero) is set when a2a_type is. retryable:
   true only for RATE_LIMITED (try later) and INTERNAL (a fault, not the
   request); every other code fails the same way when repeated. */
struct frames_error_row {
	const char *code;
	const char *a2a_type;
	int jsonrpc_code;
	int http_status;
	bool retryable;
};

enum frames_goodbye_reason {
	FRAMES_BYE_SERVER_SHUTDOWN,
	FRAMES_BYE_SESSION_CLOSED,
	FRAMES_BYE_PRINCIPAL_REVOKED,
	FRAMES_BYE_RATE_LIMITED,
	FRAMES_BYE_OTHER,
};

/* Maps a link Reply error code to the binding's; OK and unknown values
   give INTERNAL, NOT_FOUND and ERR_SESSION_EXITED give INVALID_REQUEST. */
enum frames_code frames_code_from_link(Ptg__ErrorCode code);

/* binding_hello (docs/protocol.md, "The server's first frame"), sequence 0. */
void frames_binding_hello(const char *id, const char *session_id,
			  uint64_t current_sequence, int64_t now_ms, struct buf *out);
/* pty.session_frame from a link Frame: sequence and ts (its ts_ms; now_ms
   if 0) are the frame's. Returns 0, or -EINVAL (out unchanged) when the
   frame has no kind or an enum value the binding cannot express. */
int frames_session_frame(const Ptg__Frame *f, const char *id, int64_t now_ms,
			 struct buf *out);
/* Error {code, message, a2a_error, retryable}; no sequence. */
void frames_error(enum frames_code code, const char *id_echo, const char *message,
		  int64_t now_ms, struct buf *out);
/* binding_goodbye {reason, detail?}; detail may be NULL or "". */
void frames_goodbye(const char *id, enum frames_goodbye_reason reason, const char *detail,
		    int64_t now_ms, struct buf *out);
/* pong {client_ts, server_ts} answering a ping. */
void frames_pong(const char *id_echo, const char *client_ts, int64_t now_ms,
		 struct buf *out);
/* UpdateServiceParameters.Response {service_parameters} (borrowed). */
void frames_service_update_response(const char *id_echo, json_t *params, int64_t now_ms,
				    struct buf *out);
/* "<op>.Response" (accepted false) or "<op>.Accepted" (true) with payload
   (borrowed; NULL gives {}). op is one of the server's own names. */
void frames_reply(const char *op, bool accepted, const char *id_echo, json_t *payload,
		  int64_t now_ms, struct buf *out);
/* TaskStatusUpdate (docs/protocol.md, "Tasks") started by the server: a
   fresh id unless given, the connection's service_parameters (borrowed, may
   be NULL). */
void frames_task_status_update(const char *id, json_t *payload,
			       json_t *service_parameters, int64_t now_ms,
			       struct buf *out);
/* ptygate.control_requests {policy, pending: [{client_id, label,
   expires_at}], event?: {kind, client_id, label, by?: {client_id,
   label}}}: the pending control requests of an approve session and the
   change that made them; no sequence. */
void frames_control_notice(const Ptg__ControlNotice *n, int64_t now_ms, struct buf *out);
/* ptygate.control_decided {client_id, approve} echoing the decision's id. */
void frames_control_decided(const char *id_echo, const char *client_id, bool approve,
			    int64_t now_ms, struct buf *out);

#endif
