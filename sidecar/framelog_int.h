/* framelog_int: what the files of the framelog module share and nothing
   else sees: framelog.c (opening, writing, retention) and
   framelog_read.c (file names and reading), which framelog.c calls and
   which never calls it. */
#ifndef PTG_FRAMELOG_INT_H
#define PTG_FRAMELOG_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "buf.h"
#include "framelog.h"
#include "seal.h"
#include "syncer.h"

#define PATH_CAP 4400
#define REC_HEAD 17 /* u64 sequence, i64 ts, u8 kind */
#define READ_BUF (256 * 1024)

struct seg {
	uint64_t first_seq, last_seq;
	int64_t first_ts, last_ts;
	uint64_t bytes;
	uint32_t frames;
};

struct framelog {
	char dir[PATH_CAP];
	char id[64]; /* "session=ID": its log lines' context */
	struct framelog_opts o;
	struct seg *segs; /* oldest first */
	size_t nsegs;
	int fd; /* the open (last) segment, -1 when none */
	struct seal_stream push;
	struct buf pending; /* what one append writes: a header, a record */
	struct buf scratch;
	uint64_t last_seq;
	uint64_t disk_bytes;
	uint64_t forgotten_through;
	bool failed;		   /* a write failed: warned once */
	struct syncer_status *wst; /* errors of the writer thread's batches */
	int64_t last_ticket;	   /* the last batch handed to it (0: none) */
};

/* One segment file being read. */
struct segfile {
	FILE *f;
	struct seal_stream st;
	uint8_t *body, *plain;
	size_t cap;
	uint64_t good_off; /* end of the last good record */
	uint64_t prev_seq;
	uint64_t limit; /* bytes of the file that are whole records */
};

/* n little-endian bytes of v into p; and back. */
void framelog__put_le(uint8_t *p, uint64_t v, size_t n);
uint64_t framelog__get_le(const uint8_t *p, size_t n);
/* The paths of a segment, of its index, and of a session's log dir. */
void framelog__seg_path(char *out, size_t cap, const char *dir, uint64_t first);
void framelog__idx_path(char *out, size_t cap, const char *dir, uint64_t first);
void framelog__log_dir(char *out, size_t cap, const char *state_dir, const char *id);
/* The first sequences of the files named <16 hex><suffix> in dir, sorted;
   of the segments. */
uint64_t *framelog__list_files(const char *dir, const char *suffix, size_t *n);
uint64_t *framelog__list_segments(const char *dir, size_t *n);
/* Opens the segment at path; segfile_close after, even on failure. */
int framelog__segfile_open(struct segfile *sf, const char *path,
			   const struct seal_keys *keys);
void framelog__segfile_close(struct segfile *sf);
/* 1 and the record, 0 at a clean end, -EBADMSG for a torn or damaged
   record (the file's good part ends at good_off). */
int framelog__segfile_next(struct segfile *sf, struct framelog_rec *out);

#endif
