/* linkcred: the instance credential a sidecar presents when it dials its
   gateway (LinkCredential in proto/link.proto): an Ed25519 JWT
   signed by the fleet's provisioning key, with aud exactly
   LINKCRED_AUDIENCE, instance_id (a valid id, never "*"), sub, exp and
   iat, and a kid in its header (optional; without one every key is
   tried). The gateway verifies it (linkcred_verify, through auth_jwt_verify);
   the sidecar, which holds no key, peeks at it before it starts
   (linkcred_peek). A pure core: token bytes and a clock in, claims or a
   refusal out. */
#ifndef PTG_LINKCRED_H
#define PTG_LINKCRED_H

#include <stddef.h>
#include <stdint.h>

#include "auth_jwt.h"
#include "keys.h"
#include "ptg_limits.h"

#define LINKCRED_AUDIENCE JWT_LINK_AUDIENCE

/* What a link credential says, once accepted. */
struct linkcred {
	char instance_id[PTG_ID_MAX + 1];
	char sub[JWT_SUB_MAX + 1];
	char kid[KEYS_KID_MAX + 1]; /* "" when the header had none */
	int64_t exp, iat;	    /* seconds since the epoch */
};

/* Why a credential was refused. Each has a short name (linkcred_reason)
   fit for a log line and a metric label; -err indexes an array of
   LINKCRED_N_REASONS counters. */
enum linkcred_err {
	LINKCRED_OK = 0,
	LINKCRED_MALFORMED = -1,      /* "malformed": not a compact JWS, too long */
	LINKCRED_BAD_ALG = -2,	      /* "bad_alg": not EdDSA */
	LINKCRED_UNKNOWN_KID = -3,    /* "unknown_kid": no link key for its kid */
	LINKCRED_BAD_SIGNATURE = -4,  /* "bad_signature" */
	LINKCRED_EXPIRED = -5,	      /* "expired" */
	LINKCRED_NOT_YET_VALID = -6,  /* "not_yet_valid": nbf, or iat ahead */
	LINKCRED_WRONG_AUDIENCE = -7, /* "wrong_audience": aud not exactly the link's */
	LINKCRED_NO_INSTANCE = -8,    /* "no_instance": instance_id absent or not an id */
	LINKCRED_BAD_CLAIMS = -9,     /* "bad_claims": sub, exp or iat absent or bad */
};
#define LINKCRED_N_REASONS 10 /* LINKCRED_OK included */

/* Verifies token[0, len) as a link credential against the provisioning
   keys in ks at now_s (seconds since the epoch; JWT_LEEWAY_S of clock
   leeway, as for client tokens): EdDSA only, signature first, then the
   claims. Fills *out on LINKCRED_OK and zeroes it otherwise, but for
   LINKCRED_EXPIRED its exp (when it lapsed). The instance id it gives is
   the only one to trust. */
int linkcred_verify(const struct keyset *ks, const char *token, size_t len, int64_t now_s,
		    struct linkcred *out);

/* Reads the claims of token[0, len) WITHOUT checking its signature (the
   sidecar holds no key): the same shape, alg and claim checks as
   linkcred_verify, expired meaning now_s >= exp (no leeway: a token about
   to lapse is no use to start with); nbf is left to the gateway. *out as
   linkcred_verify fills it. Never
   trust what it gives for anything but a sidecar's own start-up checks. */
int linkcred_peek(const char *token, size_t len, int64_t now_s, struct linkcred *out);

/* The short name of err ("bad_signature", "expired", ...; "ok" for
   LINKCRED_OK). Static, never NULL. */
const char *linkcred_reason(int err);
/* A short human sentence for err, for an operator's error message. */
const char *linkcred_strerror(int err);

#endif
