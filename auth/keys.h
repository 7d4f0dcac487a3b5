/* keys: the gateway's JWT verification keys (a set of HS256 secrets and
   Ed25519 public keys, each with an optional kid for rotation), loading
   them from files, and the Ed25519 PEM forms the token CLI writes and
   reads (PKCS#8 private, SubjectPublicKeyInfo public; the forms
   `openssl genpkey -algorithm ed25519` and `openssl pkey -pubout` use).

   Files:
   - HS256 secret file: the raw bytes of the file; trailing CR and LF
     bytes are stripped (a secret written by `echo` or an editor ends in
     one) and the rest must be 32..4096 bytes.
   - Ed25519 public key file: PEM "PUBLIC KEY" (SPKI), or the standard
     base64 of the 32 raw bytes alone (surrounding whitespace allowed).
   - Ed25519 private key file: PEM "PRIVATE KEY" (PKCS#8 v1, 48 bytes).
   A spec is "[KID=]FILE": the text before the first '=' is a kid when it
   is 1..64 characters of [A-Za-z0-9._-]; write "./a=b" for a file whose
   name starts that way. */
#ifndef PTG_KEYS_H
#define PTG_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

enum jwt_alg { JWT_EDDSA = 1, JWT_HS256 = 2 };

#define KEYS_KID_MAX	    64	 /* bytes of a kid, without the NUL */
#define KEYS_HS256_MIN_FILE 32	 /* a secret from a file is at least this long */
#define KEYS_HS256_MAX	    4096 /* any secret is at most this long */
#define KEYS_MAX	    64	 /* keys in one set */

/* One key as the verifier sees it. material is the secret (HS256) or
   the 32-byte public key (EdDSA); kid is "" when the key has none. */
struct keyset_key {
	enum jwt_alg alg;
	char kid[KEYS_KID_MAX + 1];
	uint8_t *material;
	size_t len;
};

struct keyset;

/* An empty key set. */
struct keyset *keys_new(void);
/* Wipes every secret and frees the set. NULL is a no-op. */
void keys_free(struct keyset *ks);
/* Copies secret (1..KEYS_HS256_MAX bytes) in as an HS256 key; kid may be
   NULL. Returns 0, -EINVAL (bad length or kid), -EEXIST (kid already in
   the set) or -ENOSPC (set full). */
int keys_add_hs256(struct keyset *ks, const char *kid, const uint8_t *secret, size_t len);
/* Same for an Ed25519 public key; also -EINVAL for a point that is not a
   valid public key. */
int keys_add_ed25519_pub(struct keyset *ks, const char *kid, const uint8_t pk[32]);
/* Number of keys, and the i-th (i < count); the set keeps ownership. */
size_t keys_count(const struct keyset *ks);
const struct keyset_key *keys_get(const struct keyset *ks, size_t i);

/* Load "[KID=]FILE" into the set (formats above). Return 0 or a negative
   errno with a one-line reason naming the file in err. */
int keys_load_hs256_file(struct keyset *ks, const char *spec, char *err, size_t errlen);
int keys_load_ed25519_file(struct keyset *ks, const char *spec, char *err, size_t errlen);

/* Reads an HS256 secret file (format above) into out (appended), as the
   verifier and the minting CLI must see the same bytes. Returns 0 or a
   negative errno with a reason in err. The caller wipes out. */
int keys_read_hs256_secret(const char *path, struct buf *out, char *err, size_t errlen);

/* Appends the SubjectPublicKeyInfo PEM of pk. */
void keys_pem_public(const uint8_t pk[32], struct buf *out);
/* Parses a PKCS#8 Ed25519 PEM into libsodium's 64-byte secret key.
   Returns 0 or -EINVAL. */
int keys_parse_private(const char *text, size_t n, uint8_t sk[64]);
/* Parses an SPKI Ed25519 PEM or the base64 of 32 raw bytes. Returns 0 or
   -EINVAL. */
int keys_parse_public(const char *text, size_t n, uint8_t pk[32]);
/* Reads a private key file into sk. Returns 0 or a negative errno with a
   reason in err. */
int keys_load_private_file(const char *path, uint8_t sk[64], char *err, size_t errlen);
/* Generates a key pair and writes the private PEM to sk_path (mode 0600)
   and the public PEM to pk_path (0644); neither may exist yet. Returns 0
   or a negative errno with a reason in err (nothing is left behind). */
int keys_generate_files(const char *sk_path, const char *pk_path, char *err,
			size_t errlen);

#endif
