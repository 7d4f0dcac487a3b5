/* seal: see seal.h. A stream header is: mode byte ('S' sealed, 'P'
   plaintext), the key id, the secretstream header (zeros in plaintext). */
#include "seal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "xalloc.h"

#define SUM_BYTES    16	 /* the plaintext checksum */
#define KEY_FILE_MAX 255 /* one line of hex, room for a comment after it */
#define SS_ABYTES    crypto_secretstream_xchacha20poly1305_ABYTES

static void key_id(const uint8_t key[SEAL_KEY_BYTES], uint8_t kid[SEAL_KID_BYTES])
{
	uint8_t h[16];

	crypto_generichash(h, sizeof(h), key, SEAL_KEY_BYTES, NULL, 0);
	memcpy(kid, h, SEAL_KID_BYTES);
}

static int write_new_key(const char *path, char *err, size_t errlen)
{
	uint8_t key[SEAL_KEY_BYTES];
	char hex[2 * SEAL_KEY_BYTES + 2];
	int fd, rc;

	randombytes_buf(key, sizeof(key));
	sodium_bin2hex(hex, sizeof(hex), key, sizeof(key));
	sodium_memzero(key, sizeof(key));
	strcat(hex, "\n");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		return -errno;
	}
	rc = fd_write_all(fd, hex, strlen(hex));
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	sodium_memzero(hex, sizeof(hex));
	if (rc)
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-rc));
	return rc;
}

/* Reads the key file's one line of hex into key; err says why not. */
static int read_key(const char *path, uint8_t key[SEAL_KEY_BYTES], char *err,
		    size_t errlen)
{
	struct buf text = BUF_INIT;
	struct stat st;
	size_t len;
	int rc;

	if (stat(path, &st) == 0 && (st.st_mode & 077)) {
		snprintf(err, errlen,
			 "%s is readable by others (mode %03o); chmod 600 it", path,
			 (unsigned)(st.st_mode & 0777));
		return -EPERM;
	}
	rc = fd_read_file(path, FDIO_REGULAR, KEY_FILE_MAX, &text, err, errlen);
	if (rc < 0)
		return rc;
	*buf_reserve(&text, 1) = '\0'; /* ends the text for strcspn, not counted */
	len = strcspn((const char *)buf_head(&text), "\r\n");
	if (len != 2 * SEAL_KEY_BYTES ||
	    sodium_hex2bin(key, SEAL_KEY_BYTES, (const char *)buf_head(&text), len, NULL,
			   NULL, NULL) < 0) {
		snprintf(err, errlen, "%s: expected %d hex digits on one line", path,
			 2 * SEAL_KEY_BYTES);
		rc = -EINVAL;
	}
	sodium_memzero(text.data, text.cap);
	buf_free(&text);
	return rc;
}

int seal_load_key(struct seal_keys *keys, const char *path, bool create, char *err,
		  size_t errlen)
{
	int rc;

	if (keys->n >= SEAL_MAX_KEYS) {
		snprintf(err, errlen, "at most %d keys", SEAL_MAX_KEYS);
		return -E2BIG;
	}
	if (create && access(path, F_OK) < 0 && errno == ENOENT &&
	    (rc = write_new_key(path, err, errlen)) < 0)
		return rc;
	rc = read_key(path, keys->k[keys->n].key, err, errlen);
	if (rc < 0)
		return rc;
	key_id(keys->k[keys->n].key, keys->k[keys->n].kid);
	keys->n++;
	return 0;
}

void seal_push_init(struct seal_stream *s, const struct seal_keys *keys,
		    uint8_t hdr[SEAL_HEADER_BYTES])
{
	memset(hdr, 0, SEAL_HEADER_BYTES);
	s->sealed = keys && keys->n > 0;
	hdr[0] = s->sealed ? 'S' : 'P';
	if (!s->sealed)
		return;
	memcpy(hdr + 1, keys->k[0].kid, SEAL_KID_BYTES);
	crypto_secretstream_xchacha20poly1305_init_push(&s->st, hdr + 1 + SEAL_KID_BYTES,
							keys->k[0].key);
}

size_t seal_sealed_len(const struct seal_stream *s, size_t n)
{
	return n + (s->sealed ? SS_ABYTES : SUM_BYTES);
}

void seal_push(struct seal_stream *s, const uint8_t *m, size_t n, uint8_t *out)
{
	if (s->sealed) {
		crypto_secretstream_xchacha20poly1305_push(&s->st, out, NULL, m, n, NULL,
							   0, 0);
		return;
	}
	crypto_generichash(out, SUM_BYTES, m, n, NULL, 0);
	memmove(out + SUM_BYTES, m, n);
}

int seal_pull_init(struct seal_stream *s, const struct seal_keys *keys,
		   const uint8_t hdr[SEAL_HEADER_BYTES])
{
	if (hdr[0] == 'P') {
		s->sealed = false;
		return 0;
	}
	if (hdr[0] != 'S')
		return -EBADMSG;
	s->sealed = true;
	for (size_t i = 0; keys && i < keys->n; i++) {
		if (memcmp(keys->k[i].kid, hdr + 1, SEAL_KID_BYTES))
			continue;
		return crypto_secretstream_xchacha20poly1305_init_pull(
			   &s->st, hdr + 1 + SEAL_KID_BYTES, keys->k[i].key)
			   ? -EBADMSG
			   : 0;
	}
	return -ENOKEY;
}

int seal_pull(struct seal_stream *s, const uint8_t *c, size_t n, uint8_t *out,
	      size_t *mlen)
{
	uint8_t sum[SUM_BYTES];
	unsigned long long ml;
	unsigned char tag;

	if (s->sealed) {
		if (n < SS_ABYTES || crypto_secretstream_xchacha20poly1305_pull(
					 &s->st, out, &ml, &tag, c, n, NULL, 0) < 0)
			return -EBADMSG;
		*mlen = (size_t)ml;
		return 0;
	}
	if (n < SUM_BYTES)
		return -EBADMSG;
	crypto_generichash(sum, SUM_BYTES, c + SUM_BYTES, n - SUM_BYTES, NULL, 0);
	if (sodium_memcmp(sum, c, SUM_BYTES))
		return -EBADMSG;
	memmove(out, c + SUM_BYTES, n - SUM_BYTES);
	*mlen = n - SUM_BYTES;
	return 0;
}

void seal_file(const struct seal_keys *keys, const uint8_t *m, size_t n, uint8_t **out,
	       size_t *outlen)
{
	struct seal_stream s;
	uint8_t *p;

	p = xmalloc(SEAL_HEADER_BYTES + n + SUM_BYTES + SS_ABYTES);
	seal_push_init(&s, keys, p);
	seal_push(&s, m, n, p + SEAL_HEADER_BYTES);
	*out = p;
	*outlen = SEAL_HEADER_BYTES + seal_sealed_len(&s, n);
}

int seal_unseal_file(const struct seal_keys *keys, const uint8_t *c, size_t n,
		     uint8_t **out, size_t *outlen)
{
	struct seal_stream s;
	uint8_t *p;
	int rc;

	if (n < SEAL_HEADER_BYTES)
		return -EBADMSG;
	rc = seal_pull_init(&s, keys, c);
	if (rc < 0)
		return rc;
	p = xmalloc(n + 1);
	rc = seal_pull(&s, c + SEAL_HEADER_BYTES, n - SEAL_HEADER_BYTES, p, outlen);
	if (rc < 0) {
		free(p);
		return rc;
	}
	p[*outlen] = 0;
	*out = p;
	return 0;
}
