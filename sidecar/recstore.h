/* recstore: durable record files in a directory of the sidecar's
   --state-dir, the storage layer tasks use (and the frame log and
   session records may share): one file per record, replaced atomically
   (temporary file, fsync, rename, fsync of the directory) so a crash
   leaves the old record or the new one, never a torn one; read back all
   at start. Synchronous: a record is small and written on state changes
   only, not per output byte. */
#ifndef PTG_RECSTORE_H
#define PTG_RECSTORE_H

#include <stddef.h>
#include <stdint.h>

struct seal_keys;

/* From now on every record is sealed at rest with keys (seal.h; n == 0:
   plaintext with a checksum). Set once at start; keys must outlive every
   call. Without it records are written as given (unit tests). */
void recstore_seal_with(const struct seal_keys *keys);
/* What recstore_write puts on disk for p (malloc'd). */
void recstore_seal(const void *p, size_t n, uint8_t **out, size_t *outlen);
/* Opens what recstore_seal made: 0 and a malloc'd, NUL-terminated copy,
   or -EBADMSG (damaged) / -ENOKEY (sealed with a key not given). Under
   --state-plaintext a file of an earlier version (no seal header) is
   taken as it is. */
int recstore_unseal(const uint8_t *p, size_t n, uint8_t **out, size_t *outlen);

/* Creates dir and its parents (0700) and makes dir 0700; dir a symbolic
   link (-ELOOP) or another user's (-EPERM) is refused. Every call opens
   dir without following a link and works through its fd. Returns 0 or a
   negative errno. */
int recstore_open(const char *dir);
/* Replaces dir/name with n bytes at p, durably. name is a plain file
   name (no '/', not starting with '.'). Returns 0 or a negative errno. */
int recstore_write(const char *dir, const char *name, const void *p, size_t n);
/* Deletes dir/name; a missing file is not an error. */
int recstore_remove(const char *dir, const char *name);

/* Called for each record; data is NUL-terminated and valid only during
   the call. */
typedef void (*recstore_each_fn)(const char *name, const char *data, size_t n,
				 void *user);
/* Calls each for every file in dir whose name ends with suffix, in name
   order. A file larger than max_bytes or unreadable is logged and
   skipped; leftover temporary files are deleted. Returns the number of
   records seen, or a negative errno when dir cannot be read. */
int recstore_read_all(const char *dir, const char *suffix, size_t max_bytes,
		      recstore_each_fn each, void *user);

#endif
