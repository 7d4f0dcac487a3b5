/* store: session records in the sidecar's --state-dir, so that after a
   sidecar restart every session is still listed with its sequence, its last
   screen and how it ended, and a session whose program was lost in the
   restart says so (docs/protocol.md, "After a sidecar restart"). One text
   file per session (<id>.session, replaced atomically) and its last
   Keyframe snapshot (<id>.screen). */
#ifndef PTG_STORE_H
#define PTG_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "ptg_limits.h"
#include "uuid.h"

/* A principal (a token's sub) is at most this many bytes. */
#define STORE_OWNER_MAX 256

struct store_record {
	char id[UUID_STRLEN + 1];
	uint64_t sequence;
	/* Sequence numbers up to here may have been issued: written before
	   any number in the block goes out, so a restart continues above it
	   even after a SIGKILL: a number is never reused. 0 in old records. */
	uint64_t reserved;
	int running; /* the program was alive when last written */
	int has_exit_code, exit_code;
	int close_reason; /* Ptg__CloseReason */
	unsigned cols, rows;
	int policy;	    /* Ptg__Policy */
	int control_policy; /* Ptg__ControlPolicy (0, open, in old records) */
	int64_t created_ms, exited_ms;
	char label[PTG_LABEL_MAX_BYTES + 1];
	char owner[STORE_OWNER_MAX + 1]; /* the creator's principal */
	char detail[256];
	char **argv;	 /* NULL-terminated; owned */
	uint8_t *screen; /* the last snapshot; owned, NULL if none */
	size_t screen_len;
	uint64_t output_bytes, input_bytes; /* its PTY's counts (0 in old records) */
	uint64_t screen_seq;		   /* the sequence it was saved at (0: unknown) */
	unsigned screen_cols, screen_rows; /* its size (0: unknown) */
};

/* Creates dir (and its parents) if needed and makes it 0700, through the
   directory's fd. Refused: dir a symbolic link (-ELOOP or -ENOTDIR), a
   dir owned by another user (-EPERM), a parent that another user owns
   or that others may write without the sticky bit (-EPERM: they could
   swap dir for a link later); the reason is logged. Returns 0 or a
   negative errno. */
int store_open(const char *dir);
/* Writes r's record (not its screen) atomically and durably (fsync of
   the file and the directory: a sequence reservation must survive a power
   loss). 0 or a negative errno. */
int store_write(const char *dir, const struct store_record *r);
/* Writes a session's last snapshot, taken at sequence seq, atomically.
   0 or a negative errno. */
int store_write_screen(const char *dir, const char *id, uint64_t seq, unsigned cols,
		       unsigned rows, const uint8_t *p, size_t n);
/* Reads every record in dir with its screen; a file that does not parse
   is logged and skipped. Returns 0 and a malloc'd array, or a negative
   errno when dir cannot be read. */
int store_read_all(const char *dir, struct store_record **out, size_t *n);
/* Deletes a session's files (it was reaped). */
void store_remove(const char *dir, const char *id);
/* Frees what store_read_all returned. */
void store_records_free(struct store_record *v, size_t n);

#endif
