/* fleetauth: gateway-to-gateway authentication with the fleet's shared
   secret (--fleet-secret-file). A gateway that forwards a request adds
   one header whose value is a timestamp and an HMAC (libsodium's
   crypto_auth, HMAC-SHA-512-256) over the timestamp, the method, the
   request target and the X-Forwarded-For it sends; the owner believes
   that X-Forwarded-For, and treats the request as forwarded (never
   forwarding it again), only when the value verifies within the allowed
   clock skew. A client cannot make the header without the secret. */
#ifndef PTG_FLEETAUTH_H
#define PTG_FLEETAUTH_H

#include <stddef.h>
#include <stdint.h>

#define FLEETAUTH_HEADER     "X-Ptygate-Fleet-Auth"
#define FLEETAUTH_SECRET_MIN 32	  /* bytes of secret, trailing newline excluded */
#define FLEETAUTH_SECRET_MAX 4096 /* a secret file larger than this is refused */
#define FLEETAUTH_SKEW_S     30	  /* clocks of the fleet's gateways may differ by */
#define FLEETAUTH_VALUE_MAX  96	  /* "v1 " + 20 digits + " " + 43 base64url + NUL */
#define FLEETAUTH_FIELD_MAX  8192 /* method, target or X-Forwarded-For signed */

struct fleetauth {
	unsigned char key[32];
};

/* Derives the key from secret[0, len); a trailing "\n" or "\r\n" is not
   part of the secret. Returns 0, or -EINVAL when fewer than
   FLEETAUTH_SECRET_MIN bytes remain. */
int fleetauth_init(struct fleetauth *fa, const void *secret, size_t len);
/* fleetauth_init from the file at path (a regular file, at most
   FLEETAUTH_SECRET_MAX bytes). Returns 0, or a negative errno with a
   one-line reason naming the file in err. */
int fleetauth_load(struct fleetauth *fa, const char *path, char *err, size_t errlen);
/* Wipes the key. */
void fleetauth_clear(struct fleetauth *fa);

/* The header value for a request (method, target, xff: NULL as "") sent
   at now_s (Unix seconds) into out[FLEETAUTH_VALUE_MAX]. Returns 0, or
   -E2BIG when a field is over FLEETAUTH_FIELD_MAX bytes. */
int fleetauth_sign(const struct fleetauth *fa, int64_t now_s, const char *method,
		   const char *target, const char *xff, char out[FLEETAUTH_VALUE_MAX]);
/* Checks value (the header as received) against the request at now_s.
   Returns 0 when it verifies; -EINVAL for a malformed value, -EACCES for
   a MAC that does not match, -ETIMEDOUT for a timestamp more than
   FLEETAUTH_SKEW_S away from now_s. The MAC is compared in constant
   time. */
int fleetauth_verify(const struct fleetauth *fa, int64_t now_s, const char *value,
		     const char *method, const char *target, const char *xff);
/* A static phrase for a fleetauth_verify result, for the log line. */
const char *fleetauth_strerror(int err);

#endif
