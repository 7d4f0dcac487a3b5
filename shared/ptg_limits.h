/* ptg_limits: the protocol's own numbers (SPEC 1, 5, 7), named once for
   the gateway, the sidecar and the CLI alike, so a bound or a close code
   cannot drift between the places that check or send it. */
#ifndef PTG_LIMITS_H
#define PTG_LIMITS_H

/* A terminal's columns and rows (create, join, resize; SPEC 5.1). */
#define PTG_DIM_MIN 1
#define PTG_DIM_MAX 1024
#define PTG_DIM_OK(cols, rows)                                               \
	((cols) >= PTG_DIM_MIN && (cols) <= PTG_DIM_MAX && (rows) >= PTG_DIM_MIN && \
	 (rows) <= PTG_DIM_MAX)

/* The pty-ws/v1 close codes of SPEC 7 (after binding_goodbye where SPEC
   says so). */
#define PTG_CLOSE_VIOLATIONS 4400 /* too many protocol violations */
#define PTG_CLOSE_REVOKED    4401 /* the token expired during the connection */
#define PTG_CLOSE_FORBIDDEN  4403 /* not allowed */
#define PTG_CLOSE_GONE       4404 /* the session (or its instance) is gone */
#define PTG_CLOSE_LIMITED    4429 /* session full, or a client over its queue */

#endif
