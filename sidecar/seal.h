/* seal: how every byte of durable state is protected at rest. A segment
   of the frame log is one libsodium crypto_secretstream_xchacha20poly1305
   stream: each record is one message, so a record that was torn, flipped
   or moved fails its tag and is never served. Without a key (the
   operator chose --state-plaintext) a record carries a BLAKE2b checksum
   instead, which catches torn and flipped records but not tampering. */
#ifndef PTG_SEAL_H
#define PTG_SEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#define SEAL_KEY_BYTES crypto_secretstream_xchacha20poly1305_KEYBYTES
#define SEAL_KID_BYTES 8
/* What a stream writes before its first record. */
#define SEAL_HEADER_BYTES                                                                \
	(1 + SEAL_KID_BYTES + crypto_secretstream_xchacha20poly1305_HEADERBYTES)
#define SEAL_MAX_KEYS 8

/* The keys of a sidecar: keys[0] seals new streams, every one opens old
   ones (rotation). n == 0: plaintext with checksums. */
struct seal_keys {
	size_t n;
	struct {
		uint8_t kid[SEAL_KID_BYTES]; /* the first bytes of the key's hash */
		uint8_t key[SEAL_KEY_BYTES];
	} k[SEAL_MAX_KEYS];
};

struct seal_stream {
	bool sealed;
	crypto_secretstream_xchacha20poly1305_state st;
};

/* Loads a key file (32 random bytes, hex, one line), creating it 0600
   when absent and create is set. Appends it to keys. Returns 0, or a
   negative errno with the reason in err. */
int seal_load_key(struct seal_keys *keys, const char *path, bool create, char *err,
		  size_t errlen);
/* Starts a stream for writing with keys[0] (or plaintext); writes its
   header to hdr. */
void seal_push_init(struct seal_stream *s, const struct seal_keys *keys,
		    uint8_t hdr[SEAL_HEADER_BYTES]);
/* Bytes a record of n plaintext bytes takes sealed. */
size_t seal_sealed_len(const struct seal_stream *s, size_t n);
/* Seals m (n bytes) into out (seal_sealed_len bytes). */
void seal_push(struct seal_stream *s, const uint8_t *m, size_t n, uint8_t *out);
/* Opens a stream for reading from its header. Returns 0, -ENOKEY when
   its key is not among keys, -EBADMSG for a bad header. */
int seal_pull_init(struct seal_stream *s, const struct seal_keys *keys,
		   const uint8_t hdr[SEAL_HEADER_BYTES]);
/* Opens a sealed record c (n bytes) into out (n bytes room); *mlen gets
   the plaintext length. Returns 0 or -EBADMSG. */
int seal_pull(struct seal_stream *s, const uint8_t *c, size_t n, uint8_t *out,
	      size_t *mlen);

/* Whole small files (records, screens): one stream, one message. */
/* Returns a malloc'd sealed copy of m in *out. */
void seal_file(const struct seal_keys *keys, const uint8_t *m, size_t n, uint8_t **out,
	       size_t *outlen);
/* Opens what seal_file wrote. Returns 0 and a malloc'd plaintext, or
   -EBADMSG / -ENOKEY. */
int seal_unseal_file(const struct seal_keys *keys, const uint8_t *c, size_t n,
		     uint8_t **out, size_t *outlen);

#endif
