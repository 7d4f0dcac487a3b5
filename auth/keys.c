/* keys: the JWT key set, key files and Ed25519 PEM. Secrets are wiped
   with sodium_memzero wherever they pass through a buffer. */
#include "keys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "b64.h"
#include "fdio.h"
#include "xalloc.h"

#define KEYS__FILE_MAX 65536 /* no key file we read is anywhere near this */

/* The fixed DER around an Ed25519 key (RFC 8410): SPKI before the public
   key, PKCS#8 v1 before the seed. */
static const uint8_t spki_prefix[12] = {
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
};
static const uint8_t pkcs8_prefix[16] = {
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06,
    0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
};

struct keyset {
	struct keyset_key keys[KEYS_MAX];
	size_t n;
};

static void set_error(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Wipes and frees a buffer that may have held a secret. */
static void wipe_buf(struct buf *b)
{
	if (b->data)
		sodium_memzero(b->data, b->cap);
	buf_free(b);
}

static int space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

struct keyset *keys_new(void)
{
	/* Idempotent; verification and minting only need it once. */
	if (sodium_init() < 0)
		return NULL;
	return xcalloc(1, sizeof(struct keyset));
}

void keys_free(struct keyset *ks)
{
	size_t i;

	if (!ks)
		return;
	for (i = 0; i < ks->n; i++) {
		sodium_memzero(ks->keys[i].material, ks->keys[i].len);
		free(ks->keys[i].material);
	}
	sodium_memzero(ks, sizeof(*ks));
	free(ks);
}

/* A kid is what we can put in a log line and a header unescaped. */
static int kid_ok(const char *kid, size_t n)
{
	size_t i;

	if (n < 1 || n > KEYS_KID_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char c = kid[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

static int add(struct keyset *ks, enum jwt_alg alg, const char *kid,
	       const uint8_t *material, size_t len)
{
	struct keyset_key *k;
	size_t i;

	if (kid && !kid_ok(kid, strlen(kid)))
		return -EINVAL;
	for (i = 0; kid && i < ks->n; i++)
		if (!strcmp(ks->keys[i].kid, kid))
			return -EEXIST;
	if (ks->n == KEYS_MAX)
		return -ENOSPC;
	k = &ks->keys[ks->n++];
	k->alg = alg;
	snprintf(k->kid, sizeof(k->kid), "%s", kid ? kid : "");
	k->material = xmalloc(len);
	memcpy(k->material, material, len);
	k->len = len;
	return 0;
}

int keys_add_hs256(struct keyset *ks, const char *kid, const uint8_t *secret, size_t len)
{
	if (len < 1 || len > KEYS_HS256_MAX)
		return -EINVAL;
	return add(ks, JWT_HS256, kid, secret, len);
}

int keys_add_ed25519_pub(struct keyset *ks, const char *kid, const uint8_t pk[32])
{
	/* Refuses small-order and non-canonical points, which no honest
	   key generator produces. */
	if (!crypto_core_ed25519_is_valid_point(pk))
		return -EINVAL;
	return add(ks, JWT_EDDSA, kid, pk, 32);
}

size_t keys_count(const struct keyset *ks)
{
	return ks->n;
}

const struct keyset_key *keys_get(const struct keyset *ks, size_t i)
{
	return i < ks->n ? &ks->keys[i] : NULL;
}

/* Splits "[KID=]FILE" into kid (NUL-terminated, "" if none) and path. */
static const char *split_spec(const char *spec, char kid[KEYS_KID_MAX + 1])
{
	const char *eq = strchr(spec, '=');

	kid[0] = '\0';
	if (!eq || !kid_ok(spec, (size_t)(eq - spec)))
		return spec;
	memcpy(kid, spec, (size_t)(eq - spec));
	kid[eq - spec] = '\0';
	return eq + 1;
}

int keys_read_hs256_secret(const char *path, struct buf *out, char *err, size_t errlen)
{
	struct buf raw = BUF_INIT;
	size_t n;
	int rc;

	rc = fd_read_file(path, FDIO_REGULAR, KEYS__FILE_MAX, &raw, err, errlen);
	if (rc < 0)
		goto out_wipe;
	n = buf_size(&raw);
	while (n > 0 && (buf_head(&raw)[n - 1] == '\n' || buf_head(&raw)[n - 1] == '\r'))
		n--;
	if (n < KEYS_HS256_MIN_FILE || n > KEYS_HS256_MAX) {
		set_error(err, errlen,
			  "%s: an HS256 secret must be %d..%d bytes, not %zu", path,
			  KEYS_HS256_MIN_FILE, KEYS_HS256_MAX, n);
		rc = -EINVAL;
		goto out_wipe;
	}
	buf_append(out, buf_head(&raw), n);
out_wipe:
	wipe_buf(&raw);
	return rc;
}

/* Reports an add failure in words. */
static int add_failed(int rc, const char *path, const char *kid, char *err, size_t errlen)
{
	if (rc == -EEXIST)
		set_error(err, errlen, "%s: kid \"%s\" is used twice", path, kid);
	else if (rc == -ENOSPC)
		set_error(err, errlen, "%s: more than %d keys", path, KEYS_MAX);
	else
		set_error(err, errlen, "%s: invalid key", path);
	return rc;
}

int keys_load_hs256_file(struct keyset *ks, const char *spec, char *err, size_t errlen)
{
	char kid[KEYS_KID_MAX + 1];
	const char *path = split_spec(spec, kid);
	struct buf secret = BUF_INIT;
	int rc;

	rc = keys_read_hs256_secret(path, &secret, err, errlen);
	if (rc == 0) {
		rc = keys_add_hs256(ks, kid[0] ? kid : NULL, buf_head(&secret),
				    buf_size(&secret));
		if (rc < 0)
			add_failed(rc, path, kid, err, errlen);
	}
	wipe_buf(&secret);
	return rc;
}

int keys_load_ed25519_file(struct keyset *ks, const char *spec, char *err, size_t errlen)
{
	char kid[KEYS_KID_MAX + 1];
	const char *path = split_spec(spec, kid);
	struct buf text = BUF_INIT;
	uint8_t pk[32];
	int rc;

	rc = fd_read_file(path, FDIO_REGULAR, KEYS__FILE_MAX, &text, err, errlen);
	if (rc < 0)
		goto out_free;
	rc = keys_parse_public((const char *)buf_head(&text), buf_size(&text), pk);
	if (rc < 0) {
		set_error(err, errlen,
			  "%s: not an Ed25519 public key (PEM \"PUBLIC KEY\" or base64 "
			  "of 32 bytes)",
			  path);
		goto out_free;
	}
	rc = keys_add_ed25519_pub(ks, kid[0] ? kid : NULL, pk);
	if (rc < 0)
		add_failed(rc, path, kid, err, errlen);
out_free:
	buf_free(&text);
	return rc;
}

/* Appends a PEM block: the base64 of der in 64-column lines. */
static void pem(const char *label, const uint8_t *der, size_t n, struct buf *out)
{
	struct buf b64 = BUF_INIT;
	size_t i, line;

	b64_encode(der, n, &b64);
	buf_appendf(out, "-----BEGIN %s-----\n", label);
	for (i = 0; i < buf_size(&b64); i += line) {
		line = buf_size(&b64) - i < 64 ? buf_size(&b64) - i : 64;
		buf_append(out, buf_head(&b64) + i, line);
		buf_append(out, "\n", 1);
	}
	buf_appendf(out, "-----END %s-----\n", label);
	wipe_buf(&b64);
}

/* Appends the PKCS#8 PEM of the key whose 32-byte seed is seed. */
static void keys_pem_private(const uint8_t seed[32], struct buf *out)
{
	uint8_t der[sizeof(pkcs8_prefix) + 32];

	memcpy(der, pkcs8_prefix, sizeof(pkcs8_prefix));
	memcpy(der + sizeof(pkcs8_prefix), seed, 32);
	pem("PRIVATE KEY", der, sizeof(der), out);
	sodium_memzero(der, sizeof(der));
}

void keys_pem_public(const uint8_t pk[32], struct buf *out)
{
	uint8_t der[sizeof(spki_prefix) + 32];

	memcpy(der, spki_prefix, sizeof(spki_prefix));
	memcpy(der + sizeof(spki_prefix), pk, 32);
	pem("PUBLIC KEY", der, sizeof(der), out);
}

/* Finds s (length sn) in text[0, n); returns its offset or -1. */
static ssize_t find(const char *text, size_t n, const char *s)
{
	size_t sn = strlen(s), i;

	for (i = 0; i + sn <= n; i++)
		if (!memcmp(text + i, s, sn))
			return (ssize_t)i;
	return -1;
}

/* Decodes the first PEM block labelled label into der (appended). Text
   around the block is ignored, as openssl does; inside, only base64 and
   line breaks. */
static int pem_decode(const char *text, size_t n, const char *label, struct buf *der)
{
	char begin[64], end[64];
	struct buf b64 = BUF_INIT;
	ssize_t b, e;
	size_t i;
	int rc;

	snprintf(begin, sizeof(begin), "-----BEGIN %s-----", label);
	snprintf(end, sizeof(end), "-----END %s-----", label);
	b = find(text, n, begin);
	if (b < 0)
		return -EINVAL;
	b += (ssize_t)strlen(begin);
	e = find(text + b, n - (size_t)b, end);
	if (e < 0)
		return -EINVAL;
	for (i = (size_t)b; i < (size_t)b + (size_t)e; i++)
		if (!space(text[i]))
			buf_append(&b64, &text[i], 1);
	rc = b64_decode((const char *)buf_head(&b64), buf_size(&b64), der);
	wipe_buf(&b64);
	return rc;
}

int keys_parse_private(const char *text, size_t n, uint8_t sk[64])
{
	struct buf der = BUF_INIT;
	uint8_t pk[32];
	int rc = -EINVAL;

	if (pem_decode(text, n, "PRIVATE KEY", &der) < 0)
		goto out_wipe;
	if (buf_size(&der) != sizeof(pkcs8_prefix) + 32 ||
	    memcmp(buf_head(&der), pkcs8_prefix, sizeof(pkcs8_prefix)))
		goto out_wipe;
	if (sodium_init() < 0 ||
	    crypto_sign_seed_keypair(pk, sk, buf_head(&der) + sizeof(pkcs8_prefix)))
		goto out_wipe;
	rc = 0;
out_wipe:
	wipe_buf(&der);
	return rc;
}

/* The base64 of 32 raw bytes, whitespace around it allowed. */
static int parse_raw_b64(const char *text, size_t n, uint8_t pk[32])
{
	struct buf raw = BUF_INIT;
	int rc = -EINVAL;

	while (n > 0 && space(text[n - 1]))
		n--;
	while (n > 0 && space(text[0])) {
		text++;
		n--;
	}
	if (memchr(text, '\0', n) == NULL && b64_decode(text, n, &raw) == 0 &&
	    buf_size(&raw) == 32) {
		memcpy(pk, buf_head(&raw), 32);
		rc = 0;
	}
	buf_free(&raw);
	return rc;
}

int keys_parse_public(const char *text, size_t n, uint8_t pk[32])
{
	struct buf der = BUF_INIT;
	int rc = -EINVAL;

	if (find(text, n, "-----BEGIN") < 0)
		return parse_raw_b64(text, n, pk);
	if (pem_decode(text, n, "PUBLIC KEY", &der) == 0 &&
	    buf_size(&der) == sizeof(spki_prefix) + 32 &&
	    !memcmp(buf_head(&der), spki_prefix, sizeof(spki_prefix))) {
		memcpy(pk, buf_head(&der) + sizeof(spki_prefix), 32);
		rc = 0;
	}
	buf_free(&der);
	return rc;
}

int keys_load_private_file(const char *path, uint8_t sk[64], char *err, size_t errlen)
{
	struct buf text = BUF_INIT;
	int rc;

	rc = fd_read_file(path, FDIO_REGULAR, KEYS__FILE_MAX, &text, err, errlen);
	if (rc == 0) {
		rc = keys_parse_private((const char *)buf_head(&text), buf_size(&text),
					sk);
		if (rc < 0)
			set_error(err, errlen,
				  "%s: not an Ed25519 private key (PEM \"PRIVATE KEY\", "
				  "PKCS#8)",
				  path);
	}
	wipe_buf(&text);
	return rc;
}

/* Creates path (must not exist) with mode and writes data to it. */
static int write_new(const char *path, mode_t mode, const struct buf *data, char *err,
		     size_t errlen)
{
	int fd, rc;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, mode);
	if (fd < 0) {
		rc = -errno;
		set_error(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	rc = fd_write_all(fd, buf_head(data), buf_size(data));
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc < 0) {
		set_error(err, errlen, "%s: %s", path, strerror(-rc));
		unlink(path);
	}
	return rc;
}

int keys_generate_files(const char *sk_path, const char *pk_path, char *err,
			size_t errlen)
{
	uint8_t pk[32], sk[64];
	struct buf priv = BUF_INIT, pub = BUF_INIT;
	int rc;

	if (sodium_init() < 0) {
		set_error(err, errlen, "libsodium failed to initialise");
		return -EIO;
	}
	crypto_sign_keypair(pk, sk);
	keys_pem_private(sk, &priv); /* the first 32 bytes are the seed */
	keys_pem_public(pk, &pub);
	rc = write_new(sk_path, 0600, &priv, err, errlen);
	if (rc == 0) {
		rc = write_new(pk_path, 0644, &pub, err, errlen);
		if (rc < 0)
			unlink(sk_path);
	}
	sodium_memzero(sk, sizeof(sk));
	wipe_buf(&priv);
	buf_free(&pub);
	return rc;
}
