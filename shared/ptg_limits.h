/* ptg_limits: the protocol's own numbers (docs/protocol.md and the
   frame schemas' maxLength), named once for the gateway, the sidecar and the
   CLI alike, so a bound or a close code cannot drift between the places
   that check or send it. Modules use these names as they are: no alias
   under a module's prefix, no restated number. */
#ifndef PTG_LIMITS_H
#define PTG_LIMITS_H

/* A terminal's columns and rows (create, join, resize). */
#define PTG_DIM_MIN 1
#define PTG_DIM_MAX 1024
#define PTG_DIM_OK(cols, rows)                                                           \
	((cols) >= PTG_DIM_MIN && (cols) <= PTG_DIM_MAX && (rows) >= PTG_DIM_MIN &&      \
	 (rows) <= PTG_DIM_MAX)

/* The text form of a number macro, for messages that state a bound:
   "1 to " PTG_STR(PTG_DIM_MAX) is "1 to 1024". */
#define PTG_STR_(x) #x
#define PTG_STR(x)  PTG_STR_(x)

/* Ids, in bytes, without the NUL: an instance id and a session id (in
   REST paths, tokens and on the link), and what a task is named by (a
   task id, messageId, idempotency_key). */
#define PTG_ID_MAX	128
#define PTG_TASK_ID_MAX 128

/* Client-chosen texts, in characters (code points): an envelope id,
   client_label and ClientRef.label, a session's label,
   ClientRef.client_id. The schemas' maxLength. */
#define PTG_MSG_ID_MAX_CHARS	128
#define PTG_LABEL_MAX_CHARS	128
#define PTG_CLIENT_ID_MAX_CHARS 128
/* Server texts (characters): RoleAssigned.reason, and Closed.detail and
   Error.message. */
#define PTG_REASON_MAX_CHARS 256
#define PTG_DETAIL_MAX_CHARS 1024

/* The bytes so many characters may take in UTF-8 (up to 4 each): what a
   daemon that stores or checks bytes must leave room for, so that it
   never refuses or cuts what the character bound allows. */
#define PTG_UTF8_MAX_BYTES(chars) ((chars)*4)
#define PTG_LABEL_MAX_BYTES	  PTG_UTF8_MAX_BYTES(PTG_LABEL_MAX_CHARS)
#define PTG_MSG_ID_MAX_BYTES	  PTG_UTF8_MAX_BYTES(PTG_MSG_ID_MAX_CHARS)

/* A session's command (the REST create): arguments, the bytes of one, and
   of all of them with their NULs. A create asking for more is refused, so
   no session a sidecar reports may have more. */
#define PTG_ARGV_MAX	   256
#define PTG_ARG_MAX_BYTES  4096
#define PTG_ARGV_MAX_BYTES (16 * 1024)
/* Sessions in one page of a session list (the REST list is paged). */
#define PTG_LIST_PAGE_MAX 500

/* pty.session_input: decoded bytes of one message. */
#define PTG_INPUT_MAX (64u * 1024)

/* The pty-ws/v1 close codes (docs/protocol.md, "Errors and closing"),
   after binding_goodbye where the protocol says so. */
#define PTG_CLOSE_VIOLATIONS 4400 /* too many protocol violations */
#define PTG_CLOSE_REVOKED    4401 /* the token expired during the connection */
#define PTG_CLOSE_FORBIDDEN  4403 /* not allowed */
#define PTG_CLOSE_GONE	     4404 /* the session (or its instance) is gone */
#define PTG_CLOSE_LIMITED    4429 /* session full, or a client over its queue */

#endif
