/* auth_jwt: JWT (RFC 7519) verification and minting for the gateway.
   The order of checks is the defence: size cap, exact shape, header and
   alg, signature length, key choice by (kid, alg), signature, and only
   then the payload is decoded and its claims read. A key is only ever
   used with its own alg, which closes the HS256-with-a-public-key
   confusion. */
#include "auth_jwt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "b64.h"

#define JWT__TIME_BOUND 1000000000000000LL /* |NumericDate| accepted, ~31M years */
#define JWT__LEEWAY_MAX 86400
#define JWT__SIG_EDDSA	crypto_sign_BYTES
#define JWT__SIG_HS256	crypto_auth_hmacsha256_BYTES

int auth_jwt_split(const char *t, size_t len, struct auth_jwt_parts *p)
{
	const char *d1 = memchr(t, '.', len), *d2;

	if (!d1)
		return JWT_MALFORMED;
	d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - t));
	if (!d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - t)))
		return JWT_MALFORMED;
	p->hdr = t;
	p->hdr_len = (size_t)(d1 - t);
	p->pay = d1 + 1;
	p->pay_len = (size_t)(d2 - p->pay);
	p->sig = d2 + 1;
	p->sig_len = len - (size_t)(p->sig - t);
	p->signed_len = (size_t)(d2 - t);
	return p->hdr_len && p->pay_len ? JWT_OK : JWT_MALFORMED;
}

json_t *auth_jwt_segment(const char *s, size_t n)
{
	struct buf raw = BUF_INIT;
	json_t *j = NULL;

	if (b64url_decode(s, n, &raw) == 0 && buf_size(&raw) > 0)
		j = json_loadb((const char *)buf_head(&raw), buf_size(&raw),
			       JSON_REJECT_DUPLICATES, NULL);
	buf_free(&raw);
	if (j && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

/* A JSON string without NUL bytes, or NULL. */
static const char *cstr(const json_t *v)
{
	const char *s = json_string_value(v);

	return s && strlen(s) == json_string_length(v) ? s : NULL;
}

/* Reads alg and kid from the header. We implement no header extension,
   so any "crit" is refused (RFC 7515 4.1.11). Keys are never taken from
   jku/jwk/x5u/x5c; those are ignored. */
static int header(const json_t *h, enum jwt_alg *alg, char kid[KEYS_KID_MAX + 1])
{
	const json_t *typ = json_object_get(h, "typ"), *k = json_object_get(h, "kid");
	const char *a = cstr(json_object_get(h, "alg")), *ks;

	if (!a || json_object_get(h, "crit") || (typ && !json_is_string(typ)))
		return JWT_MALFORMED;
	if (!strcmp(a, "EdDSA"))
		*alg = JWT_EDDSA;
	else if (!strcmp(a, "HS256"))
		*alg = JWT_HS256;
	else
		return JWT_BAD_ALG;
	kid[0] = '\0';
	if (!k)
		return JWT_OK;
	ks = cstr(k);
	if (!ks || !*ks || strlen(ks) > KEYS_KID_MAX)
		return JWT_MALFORMED;
	memcpy(kid, ks, strlen(ks) + 1);
	return JWT_OK;
}

/* Checks one key's signature over msg; 1 if it verifies. */
static int sig_ok(const struct keyset_key *k, const uint8_t *msg, size_t n,
		  const uint8_t *sig)
{
	crypto_auth_hmacsha256_state st;
	uint8_t mac[JWT__SIG_HS256];
	int ok;

	if (k->alg == JWT_EDDSA)
		return crypto_sign_verify_detached(sig, msg, n, k->material) == 0;
	/* libsodium hashes keys longer than the block size, as RFC 2104 says. */
	crypto_auth_hmacsha256_init(&st, k->material, k->len);
	crypto_auth_hmacsha256_update(&st, msg, n);
	crypto_auth_hmacsha256_final(&st, mac);
	ok = sodium_memcmp(mac, sig, sizeof(mac)) == 0;
	sodium_memzero(&st, sizeof(st));
	sodium_memzero(mac, sizeof(mac));
	return ok;
}

/* With a kid, only that key and only if its alg matches; without, every
   key of alg. */
static int check_keys(const struct keyset *ks, enum jwt_alg alg, const char *kid,
		      const uint8_t *msg, size_t n, const uint8_t *sig)
{
	size_t i, tried = 0;

	for (i = 0; ks && i < keys_count(ks); i++) {
		const struct keyset_key *k = keys_get(ks, i);

		if (*kid && strcmp(k->kid, kid))
			continue;
		if (k->alg != alg)
			continue;
		tried++;
		if (sig_ok(k, msg, n, sig))
			return JWT_OK;
	}
	return tried ? JWT_BAD_SIGNATURE : JWT_NO_KEY;
}

/* Copies a string claim of 1..max bytes without control characters (it
   reaches logs and the audit trail). Returns 0, 1 if absent, or
   JWT_BAD_CLAIMS. */
static int str_claim(const json_t *o, const char *name, char *dst, size_t max)
{
	const json_t *v = json_object_get(o, name);
	const char *s;
	size_t i, n;

	if (!v)
		return 1;
	s = cstr(v);
	if (!s || !(n = strlen(s)) || n > max)
		return JWT_BAD_CLAIMS;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return JWT_BAD_CLAIMS;
	memcpy(dst, s, n + 1);
	return 0;
}

/* Reads a NumericDate, rounded towards the stricter side (exp down, nbf
   up). Returns 0, 1 if absent, or JWT_BAD_CLAIMS. */
static int time_claim(const json_t *o, const char *name, int round_up, int64_t *t)
{
	const json_t *v = json_object_get(o, name);
	double d;

	if (!v)
		return 1;
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i > JWT__TIME_BOUND || i < -JWT__TIME_BOUND)
			return JWT_BAD_CLAIMS;
		*t = (int64_t)i;
		return 0;
	}
	if (!json_is_real(v))
		return JWT_BAD_CLAIMS;
	d = json_real_value(v);
	if (!(d <= (double)JWT__TIME_BOUND && d >= -(double)JWT__TIME_BOUND))
		return JWT_BAD_CLAIMS;
	/* Truncation then a step, not floor()/ceil(): no libm for one line. */
	*t = (int64_t)d;
	if (round_up && (double)*t < d)
		(*t)++;
	else if (!round_up && (double)*t > d)
		(*t)--;
	return 0;
}

/* Space-separated scopes; unknown ones are ignored. */
static int scopes(const json_t *o, unsigned *bits)
{
	static const struct {
		const char *name;
		unsigned bits;
	} map[] = {
	    {"pty:observe", SCOPE_OBSERVE},
	    {"pty:control", SCOPE_CONTROL | SCOPE_OBSERVE},
	    {"tasks", SCOPE_TASKS},
	    {"tasks:all", SCOPE_TASKS | SCOPE_TASKS_ALL},
	    {"sessions", SCOPE_SESSIONS},
	};
	const json_t *v = json_object_get(o, "scope");
	const char *s, *end;
	size_t i, n;

	*bits = 0;
	if (!v)
		return 0;
	if (!(s = cstr(v)))
		return JWT_BAD_CLAIMS;
	for (; *s; s = end) {
		while (*s == ' ')
			s++;
		end = s + strcspn(s, " ");
		n = (size_t)(end - s);
		for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
			if (n == strlen(map[i].name) && !memcmp(s, map[i].name, n))
				*bits |= map[i].bits;
	}
	return 0;
}

/* Whether one aud value names want (NULL: none). */
static int names(const json_t *e, const char *want)
{
	return want && cstr(e) && !strcmp(cstr(e), want);
}

/* aud is a string or an array of strings; want NULL accepts any but the
   link audience: a sidecar's credential must never pass as a client
   token, whichever gateway policy (or none) a caller verifies with. */
static int audience(const json_t *o, const char *want)
{
	const json_t *v = json_object_get(o, "aud"), *e;
	const char *link = JWT_LINK_AUDIENCE;
	int found = 0, is_link = 0;
	size_t i;

	if (!v)
		return want ? JWT_WRONG_AUDIENCE : JWT_OK;
	if (json_is_string(v)) {
		found = names(v, want);
		is_link = names(v, link);
	} else if (!json_is_array(v)) {
		return JWT_BAD_CLAIMS;
	}
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e))
			return JWT_BAD_CLAIMS;
		found |= names(e, want);
		is_link |= names(e, link);
	}
	if (is_link && !(want && !strcmp(want, link)))
		return JWT_WRONG_AUDIENCE;
	return !want || found ? JWT_OK : JWT_WRONG_AUDIENCE;
}

static int issuer(const json_t *o, const char *want)
{
	const json_t *v = json_object_get(o, "iss");

	if (v && !json_is_string(v))
		return JWT_BAD_CLAIMS;
	if (!want)
		return JWT_OK;
	return v && cstr(v) && !strcmp(cstr(v), want) ? JWT_OK : JWT_WRONG_ISSUER;
}

/* The required and typed claims, before any time or audience check. */
static int identity(const json_t *o, struct jwt_claims *c)
{
	int rc;

	if (str_claim(o, "sub", c->sub, JWT_SUB_MAX) != 0 ||
	    str_claim(o, "instance_id", c->instance_id, PTG_ID_MAX) != 0)
		return JWT_BAD_CLAIMS;
	rc = str_claim(o, "session_id", c->session_id, PTG_ID_MAX);
	if (rc < 0)
		return rc;
	if (!strcmp(c->session_id, "*"))
		c->session_id[0] = '\0';
	if (time_claim(o, "exp", 0, &c->exp) != 0 ||
	    time_claim(o, "nbf", 1, &c->nbf) < 0 || time_claim(o, "iat", 0, &c->iat) < 0)
		return JWT_BAD_CLAIMS;
	return scopes(o, &c->scopes);
}

static int check_claims(const json_t *o, const struct jwt_policy *pol, int64_t now,
			struct jwt_claims *c)
{
	int64_t leeway = pol->leeway_s;
	int rc;

	if (leeway < 0)
		leeway = 0;
	if (leeway > JWT__LEEWAY_MAX)
		leeway = JWT__LEEWAY_MAX;
	rc = identity(o, c);
	if (rc < 0)
		return rc;
	if (now >= c->exp + leeway)
		return JWT_EXPIRED;
	if (json_object_get(o, "nbf") && now < c->nbf - leeway)
		return JWT_NOT_YET_VALID;
	rc = issuer(o, pol->issuer);
	if (rc < 0)
		return rc;
	return audience(o, pol->audience);
}

/* Everything after the split: header, signature, key, payload. */
static int verify_parts(const struct keyset *ks, const struct jwt_policy *pol,
			const struct auth_jwt_parts *p, int64_t now,
			struct jwt_claims *out)
{
	struct buf sig = BUF_INIT;
	json_t *hdr, *pay = NULL;
	int rc;

	hdr = auth_jwt_segment(p->hdr, p->hdr_len);
	if (!hdr)
		return JWT_MALFORMED;
	rc = header(hdr, &out->alg, out->kid);
	json_decref(hdr);
	if (rc < 0)
		return rc;
	if (b64url_decode(p->sig, p->sig_len, &sig) < 0 ||
	    buf_size(&sig) != (out->alg == JWT_EDDSA ? JWT__SIG_EDDSA : JWT__SIG_HS256)) {
		rc = JWT_MALFORMED;
		goto out_free;
	}
	rc = check_keys(ks, out->alg, out->kid, (const uint8_t *)p->hdr, p->signed_len,
			buf_head(&sig));
	if (rc < 0)
		goto out_free;
	pay = auth_jwt_segment(p->pay, p->pay_len);
	rc = pay ? check_claims(pay, pol, now, out) : JWT_MALFORMED;
	json_decref(pay);
out_free:
	buf_free(&sig);
	return rc;
}

int auth_jwt_verify(const struct keyset *ks, const struct jwt_policy *pol,
		    const char *token, size_t len, int64_t now_s, struct jwt_claims *out)
{
	static const struct jwt_policy defaults = JWT_POLICY_DEFAULT;
	struct auth_jwt_parts p;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!token || len == 0 || len > JWT_MAX_TOKEN)
		return JWT_MALFORMED;
	rc = auth_jwt_split(token, len, &p);
	if (rc == JWT_OK)
		rc = verify_parts(ks, pol ? pol : &defaults, &p, now_s, out);
	if (rc != JWT_OK)
		memset(out, 0, sizeof(*out));
	return rc;
}

const char *auth_jwt_strerror(int err)
{
	switch (err) {
	case JWT_OK:
		return "token valid";
	case JWT_MALFORMED:
		return "malformed token";
	case JWT_BAD_ALG:
		return "token algorithm not accepted";
	case JWT_NO_KEY:
		return "no key for this token";
	case JWT_BAD_SIGNATURE:
		return "bad token signature";
	case JWT_EXPIRED:
		return "token expired";
	case JWT_NOT_YET_VALID:
		return "token not yet valid";
	case JWT_BAD_CLAIMS:
		return "token claims missing or invalid";
	case JWT_WRONG_AUDIENCE:
		return "token audience not accepted";
	case JWT_WRONG_ISSUER:
		return "token issuer not accepted";
	default:
		return "invalid token";
	}
}

int auth_jwt_claims_allow(const struct jwt_claims *c, const char *instance_id,
			  const char *session_id)
{
	if (!instance_id || !c->instance_id[0])
		return -EACCES;
	if (strcmp(c->instance_id, "*") && strcmp(c->instance_id, instance_id))
		return -EACCES;
	if (!c->session_id[0])
		return 0;
	return session_id && !strcmp(c->session_id, session_id) ? 0 : -EACCES;
}

/* Appends base64url(header) "." base64url(claims) to input. */
static int signing_input(const char *alg, const char *kid, const char *claims_json,
			 struct buf *input)
{
	json_t *hdr, *claims;
	char *h, *c;
	int rc = -EINVAL;

	if (!claims_json)
		return -EINVAL;
	claims = json_loads(claims_json, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(claims) || (kid && (!*kid || strlen(kid) > KEYS_KID_MAX)))
		goto out_claims;
	hdr = json_pack("{s:s, s:s}", "alg", alg, "typ", "JWT");
	if (kid)
		json_object_set_new(hdr, "kid", json_string(kid));
	h = json_dumps(hdr, JSON_COMPACT);
	c = json_dumps(claims, JSON_COMPACT);
	if (h && c) {
		b64url_encode((const uint8_t *)h, strlen(h), input);
		buf_append(input, ".", 1);
		b64url_encode((const uint8_t *)c, strlen(c), input);
		rc = 0;
	}
	free(h);
	free(c);
	json_decref(hdr);
out_claims:
	json_decref(claims);
	return rc;
}

/* Appends input "." base64url(sig) and a NUL outside the size. */
static void finish(const struct buf *input, const uint8_t *sig, size_t n, struct buf *out)
{
	buf_append(out, buf_head(input), buf_size(input));
	buf_append(out, ".", 1);
	b64url_encode(sig, n, out);
	*buf_reserve(out, 1) = '\0';
}

int auth_jwt_mint_hs256(const uint8_t *secret, size_t len, const char *kid,
			const char *claims_json, struct buf *out)
{
	crypto_auth_hmacsha256_state st;
	uint8_t mac[JWT__SIG_HS256];
	struct buf input = BUF_INIT;
	int rc;

	if (!secret || !len || sodium_init() < 0)
		return -EINVAL;
	rc = signing_input("HS256", kid, claims_json, &input);
	if (rc == 0) {
		crypto_auth_hmacsha256_init(&st, secret, len);
		crypto_auth_hmacsha256_update(&st, buf_head(&input), buf_size(&input));
		crypto_auth_hmacsha256_final(&st, mac);
		finish(&input, mac, sizeof(mac), out);
		sodium_memzero(&st, sizeof(st));
	}
	buf_free(&input);
	return rc;
}

int auth_jwt_mint_eddsa(const uint8_t sk[64], const char *kid, const char *claims_json,
			struct buf *out)
{
	uint8_t sig[JWT__SIG_EDDSA];
	struct buf input = BUF_INIT;
	int rc;

	if (sodium_init() < 0)
		return -EINVAL;
	rc = signing_input("EdDSA", kid, claims_json, &input);
	if (rc == 0) {
		crypto_sign_detached(sig, NULL, buf_head(&input), buf_size(&input), sk);
		finish(&input, sig, sizeof(sig), out);
	}
	buf_free(&input);
	return rc;
}
