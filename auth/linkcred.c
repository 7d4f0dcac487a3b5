/* linkcred: link credentials, verified (gateway) or peeked at (sidecar).
   Verification is auth_jwt_verify's, with the link audience as its policy, so
   the JWS checks live in one place; before it the header must say EdDSA
   (a link key is never an HS256 secret), after it the claims a link needs
   and a client token lacks are read here. Whatever auth_jwt_verify says about
   the claims, the signature was good by then, so the payload is read
   again to give one reason, in one order, on both sides. */
#include "linkcred.h"

#include <string.h>

#include <jansson.h>

#include "b64.h"
#include "buf.h"
#include "id.h"

#define LINKCRED__SIG_LEN    64			/* an Ed25519 signature */
#define LINKCRED__TIME_BOUND 1000000000000000LL /* as auth_jwt.c accepts */

/* Exactly two dots, no segment empty (a link token is always signed). */
static int split(const char *t, size_t len, struct auth_jwt_parts *s)
{
	if (!t || len == 0 || len > JWT_MAX_TOKEN || auth_jwt_split(t, len, s) != JWT_OK)
		return LINKCRED_MALFORMED;
	return s->sig_len ? LINKCRED_OK : LINKCRED_MALFORMED;
}

/* A JSON string of 1..max bytes without NUL or control characters. */
static const char *text(const json_t *v, size_t max)
{
	const char *s = json_string_value(v);
	size_t i, n;

	if (!s || (n = strlen(s)) != json_string_length(v) || n == 0 || n > max)
		return NULL;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return NULL;
	return s;
}

/* alg must be EdDSA; kid, when present, is copied. */
static int header(const struct auth_jwt_parts *s, char kid[KEYS_KID_MAX + 1])
{
	json_t *h = auth_jwt_segment(s->hdr, s->hdr_len);
	const json_t *k;
	const char *alg, *ks;
	int rc = LINKCRED_OK;

	if (!h)
		return LINKCRED_MALFORMED;
	alg = text(json_object_get(h, "alg"), 16);
	k = json_object_get(h, "kid");
	ks = k ? text(k, KEYS_KID_MAX) : "";
	if (!alg || !ks || json_object_get(h, "crit"))
		rc = LINKCRED_MALFORMED;
	else if (strcmp(alg, "EdDSA"))
		rc = LINKCRED_BAD_ALG;
	else
		memcpy(kid, ks, strlen(ks) + 1);
	json_decref(h);
	return rc;
}

/* A NumericDate, integer or real, truncated; 1 if absent or bad. */
static int date(const json_t *o, const char *name, int64_t *t)
{
	const json_t *v = json_object_get(o, name);
	double d;

	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i > LINKCRED__TIME_BOUND || i < -LINKCRED__TIME_BOUND)
			return 1;
		*t = (int64_t)i;
		return 0;
	}
	if (!json_is_real(v))
		return 1;
	d = json_real_value(v);
	if (!(d <= (double)LINKCRED__TIME_BOUND && d >= -(double)LINKCRED__TIME_BOUND))
		return 1;
	*t = (int64_t)d;
	return 0;
}

/* aud is exactly the link audience: one string, not a list that might
   also name a client audience. */
static int audience(const json_t *o)
{
	const char *aud = text(json_object_get(o, "aud"), 64);

	return aud && !strcmp(aud, LINKCRED_AUDIENCE) ? LINKCRED_OK
						      : LINKCRED_WRONG_AUDIENCE;
}

/* The claims a link credential needs, in the order their reasons are
   told: audience, instance, the rest, then time. Expired is now at or
   past exp + exp_leeway; iat ahead of the clock by more than the JWT
   leeway is not yet valid (a clock behind the issuer's still starts). */
static int claims(const json_t *o, int64_t now, int64_t exp_leeway, struct linkcred *c)
{
	const char *inst, *sub;

	if (audience(o) < 0)
		return LINKCRED_WRONG_AUDIENCE;
	inst = text(json_object_get(o, "instance_id"), PTG_ID_MAX);
	if (!inst || !strcmp(inst, "*") || !id_valid(inst))
		return LINKCRED_NO_INSTANCE;
	sub = text(json_object_get(o, "sub"), JWT_SUB_MAX);
	if (!sub || date(o, "exp", &c->exp) || date(o, "iat", &c->iat))
		return LINKCRED_BAD_CLAIMS;
	if (now >= c->exp + exp_leeway)
		return LINKCRED_EXPIRED;
	if (c->iat > now + JWT_LEEWAY_S)
		return LINKCRED_NOT_YET_VALID;
	memcpy(c->instance_id, inst, strlen(inst) + 1);
	memcpy(c->sub, sub, strlen(sub) + 1);
	return LINKCRED_OK;
}

/* The payload's link claims; LINKCRED_MALFORMED if it is not an object. */
static int payload(const struct auth_jwt_parts *s, int64_t now, int64_t exp_leeway,
		   struct linkcred *c)
{
	json_t *o = auth_jwt_segment(s->pay, s->pay_len);
	int rc = o ? claims(o, now, exp_leeway, c) : LINKCRED_MALFORMED;

	json_decref(o);
	return rc;
}

/* Zeroes a refused credential but the exp of an expired one, which
   tells an operator how long ago. */
static void clear(struct linkcred *c, int rc)
{
	int64_t exp = c->exp;

	memset(c, 0, sizeof(*c));
	if (rc == LINKCRED_EXPIRED)
		c->exp = exp;
}

/* auth_jwt_verify's errors before the claims. */
static int from_jwt(int rc)
{
	switch (rc) {
	case JWT_BAD_ALG:
		return LINKCRED_BAD_ALG;
	case JWT_NO_KEY:
		return LINKCRED_UNKNOWN_KID;
	case JWT_BAD_SIGNATURE:
		return LINKCRED_BAD_SIGNATURE;
	case JWT_EXPIRED:
		return LINKCRED_EXPIRED;
	case JWT_NOT_YET_VALID:
		return LINKCRED_NOT_YET_VALID;
	case JWT_WRONG_AUDIENCE:
		return LINKCRED_WRONG_AUDIENCE;
	case JWT_BAD_CLAIMS:
		return LINKCRED_BAD_CLAIMS;
	default:
		return LINKCRED_MALFORMED;
	}
}

/* Whether auth_jwt_verify got past the signature to the claims. */
static int signature_was_good(int rc)
{
	return rc == JWT_OK || rc == JWT_EXPIRED || rc == JWT_NOT_YET_VALID ||
	       rc == JWT_WRONG_AUDIENCE || rc == JWT_BAD_CLAIMS;
}

int linkcred_verify(const struct keyset *ks, const char *token, size_t len, int64_t now_s,
		    struct linkcred *out)
{
	const struct jwt_policy pol = {LINKCRED_AUDIENCE, NULL, JWT_LEEWAY_S};
	struct jwt_claims jc;
	struct auth_jwt_parts s;
	int rc, jrc;

	memset(out, 0, sizeof(*out));
	rc = split(token, len, &s);
	if (rc == LINKCRED_OK)
		rc = header(&s, out->kid);
	if (rc != LINKCRED_OK)
		goto out_refused;
	jrc = auth_jwt_verify(ks, &pol, token, len, now_s, &jc);
	if (!signature_was_good(jrc)) {
		rc = from_jwt(jrc);
		goto out_refused;
	}
	rc = payload(&s, now_s, JWT_LEEWAY_S, out);
	if (rc == LINKCRED_OK && (jrc != JWT_OK || jc.alg != JWT_EDDSA))
		rc = jrc != JWT_OK ? from_jwt(jrc) : LINKCRED_BAD_ALG;
	if (rc == LINKCRED_OK)
		return LINKCRED_OK;
out_refused:
	clear(out, rc);
	return rc;
}

int linkcred_peek(const char *token, size_t len, int64_t now_s, struct linkcred *out)
{
	struct buf sig = BUF_INIT;
	struct auth_jwt_parts s;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = split(token, len, &s);
	if (rc == LINKCRED_OK)
		rc = header(&s, out->kid);
	if (rc == LINKCRED_OK && (b64url_decode(s.sig, s.sig_len, &sig) < 0 ||
				  buf_size(&sig) != LINKCRED__SIG_LEN))
		rc = LINKCRED_MALFORMED;
	buf_free(&sig);
	if (rc == LINKCRED_OK)
		rc = payload(&s, now_s, 0, out);
	if (rc != LINKCRED_OK)
		clear(out, rc);
	return rc;
}

static const char *const reasons[LINKCRED_N_REASONS][2] = {
    {"ok", "credential valid"},
    {"malformed", "not a well-formed token"},
    {"bad_alg", "not signed with EdDSA (Ed25519)"},
    {"unknown_kid", "no link key for the token's kid"},
    {"bad_signature", "bad signature"},
    {"expired", "token expired"},
    {"not_yet_valid", "token not yet valid"},
    {"wrong_audience",
     "not for the link audience (aud must be \"" LINKCRED_AUDIENCE "\")"},
    {"no_instance", "no valid instance_id (\"*\" is not one)"},
    {"bad_claims", "sub, exp or iat missing or invalid"},
};

const char *linkcred_reason(int err)
{
	return err <= 0 && err > -LINKCRED_N_REASONS ? reasons[-err][0] : "malformed";
}

const char *linkcred_strerror(int err)
{
	return err <= 0 && err > -LINKCRED_N_REASONS ? reasons[-err][1]
						     : reasons[-LINKCRED_MALFORMED][1];
}
