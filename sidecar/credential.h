/* credential: the sidecar's instance credential (--instance-token-file):
   a link credential (auth/linkcred.h) the platform writes into the VM and
   renews by rewriting the file. Loaded and checked at start (unreadable,
   expired, not for the link audience or naming no instance: refused);
   then the caller polls it from a timer (CREDENTIAL_POLL_MS): one stat()
   a poll, the file re-read only when its identity, size or times changed,
   a good new token taken, a bad one logged and the current one kept. The
   sidecar holds no key, so these checks read the claims without the
   signature; the gateway verifies it. */
#ifndef PTG_SIDECAR_CREDENTIAL_H
#define PTG_SIDECAR_CREDENTIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth_jwt.h"

#define CREDENTIAL_POLL_MS  1000	  /* how often a caller should check the file */
#define CREDENTIAL_FILE_MAX JWT_MAX_TOKEN /* bytes; a larger file is refused unread */

struct credential;

/* Reads and checks the token in path at now_s (seconds since the epoch).
   Surrounding whitespace is ignored (a file written by an editor or
   cloud-init ends in a newline). Returns the credential, or NULL with a
   one-line reason naming the file in err. */
struct credential *credential_load(const char *path, int64_t now_s, char *err,
				   size_t errlen);
/* Wipes the token and frees c. NULL is a no-op. */
void credential_free(struct credential *c);

/* The current token, NUL-terminated; *len (when not NULL) its length.
   Valid until the next credential_check_changed that returns 1. */
const char *credential_token(const struct credential *c, size_t *len);

/* Settles the sidecar's instance id (cap bytes at instance_id) with the
   token's: copies the token's in, unless given (--instance-id was on the
   command line) and instance_id differs, which is a mistake to stop on
   rather than guess about: -EINVAL with the reason in err. */
int credential_settle_instance(const struct credential *c, char *instance_id, size_t cap,
			       bool given, char *err, size_t errlen);

/* Looks at the file at now_s. Returns 1 when a changed file held a good
   token that differs from the current one (now current: send it),
   0 when nothing changed (or the same token was rewritten), and a
   negative errno when a change was refused: unreadable, too large,
   expired, not a link credential, or naming another instance (logged
   once per change; the current token stays). Also warns once when the
   current token is in the last fifth of its lifetime and once when it
   has expired. */
int credential_check_changed(struct credential *c, int64_t now_s);

#endif
