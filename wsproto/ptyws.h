/* ptyws: the vocabulary of the pty-ws/v1 binding (docs/protocol.md), one
   place for every name that crosses the WebSocket: the envelope's ops,
   the session frames' kinds, roles, error codes, close and goodbye
   reasons, control events, the binding's URIs and formats. The gateway
   (envelope.c, frames.c) and the CLI (ptyc.c) spell the protocol only
   through these. They are string literals, so a frame builder can paste
   them into a constant JSON fragment at compile time. */
#ifndef PTG_PTYWS_H
#define PTG_PTYWS_H

#define PTYWS_BINDING_URI     "https://agentic-sandbox.aiwg.io/bindings/pty-ws/v1"
#define PTYWS_BINDING_VERSION "1.0.0"
#define PTYWS_SNAPSHOT_FORMAT "vt100-screen-state-v1"

/* Extensions a client activates in its join (docs/protocol.md, 2 and
   "Control approval"). */
#define PTYWS_EXT_PTY	  "https://agentic-sandbox.aiwg.io/extensions/pty-extensions/v1"
#define PTYWS_EXT_CONTROL "urn:ptygate:extensions:control-approval:v1"

/* Client ops (docs/protocol.md, "Client ops"). */
#define PTYWS_OP_JOIN		  "pty.join_session"
#define PTYWS_OP_INPUT		  "pty.session_input"
#define PTYWS_OP_RESIZE		  "pty.session_resize"
#define PTYWS_OP_REQUEST_ROLE	  "pty.request_role"
#define PTYWS_OP_REQUEST_KEYFRAME "pty.request_keyframe"
#define PTYWS_OP_LEAVE		  "pty.leave_session"
#define PTYWS_OP_PING		  "ping"
#define PTYWS_OP_UPDATE_PARAMS	  "UpdateServiceParameters"
#define PTYWS_OP_DECIDE_CONTROL	  "ptygate.decide_control"
/* The A2A verbs the binding carries. */
#define PTYWS_OP_SEND_MESSAGE	    "SendMessage"
#define PTYWS_OP_SEND_STREAMING	    "SendStreamingMessage"
#define PTYWS_OP_GET_TASK	    "GetTask"
#define PTYWS_OP_LIST_TASKS	    "ListTasks"
#define PTYWS_OP_CANCEL_TASK	    "CancelTask"
#define PTYWS_OP_SUBSCRIBE_TO_TASK  "SubscribeToTask"
#define PTYWS_OP_UNSUBSCRIBE	    "Unsubscribe"
#define PTYWS_OP_SET_PUSH_CONFIG    "SetTaskPushNotificationConfig"
#define PTYWS_OP_GET_PUSH_CONFIG    "GetTaskPushNotificationConfig"
#define PTYWS_OP_LIST_PUSH_CONFIG   "ListTaskPushNotificationConfig"
#define PTYWS_OP_DELETE_PUSH_CONFIG "DeleteTaskPushNotificationConfig"
/* An answer to op X is op X + one of these. */
#define PTYWS_SUFFIX_RESPONSE ".Response"
#define PTYWS_SUFFIX_ACCEPTED ".Accepted"

/* Server ops. */
#define PTYWS_OP_HELLO		  "binding_hello"
#define PTYWS_OP_GOODBYE	  "binding_goodbye"
#define PTYWS_OP_SESSION_FRAME	  "pty.session_frame"
#define PTYWS_OP_ERROR		  "Error"
#define PTYWS_OP_PONG		  "pong"
#define PTYWS_OP_TASK_STATUS	  "TaskStatusUpdate"
#define PTYWS_OP_CONTROL_REQUESTS "ptygate.control_requests"
#define PTYWS_OP_CONTROL_DECIDED  "ptygate.control_decided"

/* The kinds of a pty.session_frame's payload (docs/protocol.md,
   "Session frames"). */
#define PTYWS_KIND_OUTPUT	 "Output"
#define PTYWS_KIND_RESIZE	 "Resize"
#define PTYWS_KIND_ROLE_ASSIGNED "RoleAssigned"
#define PTYWS_KIND_MEMBERSHIP	 "MembershipChanged"
#define PTYWS_KIND_KEYFRAME	 "Keyframe"
#define PTYWS_KIND_CLOSED	 "Closed"
#define PTYWS_KIND_ERROR	 "Error"

#define PTYWS_ROLE_CONTROLLER "controller"
#define PTYWS_ROLE_OBSERVER   "observer"

/* Output streams, in the order of the link's OutputStream enum. */
#define PTYWS_STREAM_STDOUT "stdout"
#define PTYWS_STREAM_STDERR "stderr"
#define PTYWS_STREAM_LOG    "log"

/* Error codes of the Error op (docs/protocol.md, 5). */
#define PTYWS_ERR_TASK_NOT_FOUND	"TASK_NOT_FOUND"
#define PTYWS_ERR_TASK_NOT_CANCELABLE	"TASK_NOT_CANCELABLE"
#define PTYWS_ERR_INVALID_REQUEST	"INVALID_REQUEST"
#define PTYWS_ERR_UNSUPPORTED_OPERATION "UNSUPPORTED_OPERATION"
#define PTYWS_ERR_UNAUTHENTICATED	"UNAUTHENTICATED"
#define PTYWS_ERR_PERMISSION_DENIED	"PERMISSION_DENIED"
#define PTYWS_ERR_RATE_LIMITED		"RATE_LIMITED"
#define PTYWS_ERR_INTERNAL		"INTERNAL"
#define PTYWS_ERR_REPLAY_OUT_OF_RANGE	"REPLAY_OUT_OF_RANGE"
/* ... and their A2A error types. */
#define PTYWS_A2A_TASK_NOT_FOUND	"TaskNotFound"
#define PTYWS_A2A_TASK_NOT_CANCELABLE	"TaskNotCancelable"
#define PTYWS_A2A_INVALID_REQUEST	"InvalidRequest"
#define PTYWS_A2A_UNSUPPORTED_OPERATION "UnsupportedOperation"
#define PTYWS_A2A_UNAUTHENTICATED	"Unauthenticated"
#define PTYWS_A2A_PERMISSION_DENIED	"PermissionDenied"
#define PTYWS_A2A_RATE_LIMITED		"RateLimited"
#define PTYWS_A2A_INTERNAL		"Internal"

/* Codes of a session frame of kind Error, in the link's order. */
#define PTYWS_FRAME_ERR_WRITE_FAILED	     "PTY_WRITE_FAILED"
#define PTYWS_FRAME_ERR_RESIZE_FAILED	     "PTY_RESIZE_FAILED"
#define PTYWS_FRAME_ERR_OUTPUT_LAGGED	     "PTY_OUTPUT_LAGGED"
#define PTYWS_FRAME_ERR_KEYFRAME_UNAVAILABLE "KEYFRAME_UNAVAILABLE"

/* Reasons of a Closed frame, in the link's order. */
#define PTYWS_CLOSED_NORMAL		 "normal"
#define PTYWS_CLOSED_KILLED		 "killed"
#define PTYWS_CLOSED_TIMEOUT		 "timeout"
#define PTYWS_CLOSED_INSTANCE_TERMINATED "instance_terminated"
#define PTYWS_CLOSED_ERROR		 "error"

/* Reasons of a binding_goodbye. */
#define PTYWS_BYE_SERVER_SHUTDOWN   "server_shutdown"
#define PTYWS_BYE_SESSION_CLOSED    "session_closed"
#define PTYWS_BYE_PRINCIPAL_REVOKED "principal_revoked"
#define PTYWS_BYE_RATE_LIMITED	    "rate_limited"
#define PTYWS_BYE_OTHER		    "other"

/* Events of a ptygate.control_requests notice, in the link's order
   after its unset 0. */
#define PTYWS_CONTROL_REQUESTED "requested"
#define PTYWS_CONTROL_APPROVED	"approved"
#define PTYWS_CONTROL_DENIED	"denied"
#define PTYWS_CONTROL_EXPIRED	"expired"
#define PTYWS_CONTROL_WITHDRAWN "withdrawn"
/* The only control policy the notice names. */
#define PTYWS_CONTROL_POLICY_APPROVE "approve"

#endif
