/* auth_jwt: verification and minting of the gateway's bearer tokens
   (docs/protocol.md, "Authentication"): compact JWS, alg EdDSA (Ed25519) or
   HS256 only, keys from a keyset (keys.h). A pure core: token bytes and a
   clock value in, claims or an error out; no I/O. */
#ifndef PTG_AUTH_JWT_H
#define PTG_AUTH_JWT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "buf.h"
#include "keys.h"
#include "ptg_limits.h"

#define JWT_MAX_TOKEN 8192 /* bytes; longer tokens are refused unread */
#define JWT_LEEWAY_S  30   /* clock leeway */
#define JWT_SUB_MAX   256
/* The audience of a sidecar's instance credential (auth/linkcred.h). A
   token whose aud is or contains it is a link credential and never a
   client token: auth_jwt_verify refuses it unless the policy asks for exactly
   this audience. */
#define JWT_LINK_AUDIENCE "ptygate-link"

enum scope_bits {
	SCOPE_OBSERVE = 1,    /* pty:observe, or implied by pty:control */
	SCOPE_CONTROL = 2,    /* pty:control */
	SCOPE_TASKS = 4,      /* tasks */
	SCOPE_SESSIONS = 8,   /* sessions: create, list, end over REST */
	SCOPE_TASKS_ALL = 16, /* tasks:all (implies tasks): every principal's tasks */
};

/* What a verified token grants. instance_id is "*" for any instance;
   session_id is "" for any session (absent or "*" in the token). */
struct jwt_claims {
	char sub[JWT_SUB_MAX + 1];
	char instance_id[PTG_ID_MAX + 1];
	char session_id[PTG_ID_MAX + 1];
	unsigned scopes;	    /* enum scope_bits */
	int64_t exp, nbf, iat;	    /* seconds; nbf and iat are 0 when absent */
	char kid[KEYS_KID_MAX + 1]; /* "" when the header had none */
	enum jwt_alg alg;
};

/* audience and issuer are checked when non-NULL. */
struct jwt_policy {
	const char *audience;
	const char *issuer;
	int64_t leeway_s;
};

/* clang-format off */
#define JWT_POLICY_DEFAULT { NULL, NULL, JWT_LEEWAY_S }
/* clang-format on */

enum jwt_err {
	JWT_OK = 0,
	JWT_MALFORMED = -1,
	JWT_BAD_ALG = -2,
	JWT_NO_KEY = -3,
	JWT_BAD_SIGNATURE = -4,
	JWT_EXPIRED = -5,
	JWT_NOT_YET_VALID = -6,
	JWT_BAD_CLAIMS = -7,
	JWT_WRONG_AUDIENCE = -8,
	JWT_WRONG_ISSUER = -9,
};

/* Verifies token[0, len) against the keys in ks at time now_s (seconds
   since the epoch) and fills *out. pol may be NULL (no aud/iss check,
   JWT_LEEWAY_S). A header kid selects exactly that key; without one,
   every key of the header's alg is tried. A token for JWT_LINK_AUDIENCE
   is JWT_WRONG_AUDIENCE unless pol->audience is that audience, whatever
   else its aud holds. Returns JWT_OK or a negative enum jwt_err; *out is
   zeroed on failure. */
int auth_jwt_verify(const struct keyset *ks, const struct jwt_policy *pol,
		    const char *token, size_t len, int64_t now_s, struct jwt_claims *out);
/* A short human message for err, fit for a 401 body. */
const char *auth_jwt_strerror(int err);
/* 0 if c grants instance_id and session_id, else -EACCES. session_id
   NULL asks for the whole instance (REST session listing, creation),
   which a token limited to one session does not grant. Scopes are the
   caller's to check. */
/* The three segments of a compact JWS, as pointers into the token. */
struct auth_jwt_parts {
	const char *hdr, *pay, *sig;
	size_t hdr_len, pay_len, sig_len;
	size_t signed_len; /* header "." payload */
};
/* Splits t[0, len) at exactly two dots: JWT_OK, or JWT_MALFORMED when
   there are not two or the header or payload is empty. */
int auth_jwt_split(const char *t, size_t len, struct auth_jwt_parts *p);
/* A base64url segment holding a JSON object (a new reference), or NULL. */
json_t *auth_jwt_segment(const char *s, size_t n);

int auth_jwt_claims_allow(const struct jwt_claims *c, const char *instance_id,
			  const char *session_id);

/* Mint a token whose payload is claims_json (a JSON object, re-encoded
   compactly) signed with an HS256 secret of any non-zero length, or with
   libsodium's 64-byte Ed25519 secret key. kid may be NULL. The token is
   appended to out and followed by a NUL not counted in its size. Return
   0 or -EINVAL (claims not a JSON object, bad kid, empty secret). */
int auth_jwt_mint_hs256(const uint8_t *secret, size_t len, const char *kid,
			const char *claims_json, struct buf *out);
int auth_jwt_mint_eddsa(const uint8_t sk[64], const char *kid, const char *claims_json,
			struct buf *out);

#endif
