/* framelog: a session's append-only frame log under --state-dir, the
   durable copy of its replay history. Segment files
   <state>/<id>.frames/<first sequence, 16 hex>.seg, each one seal stream
   (seal.h): a header, then records [u32 LE length][sealed body], the
   body being [u64 sequence][i64 ts_ms][u8 kind][the packed frame exactly
   as the ring holds it]. Each append is written to the file before it
   returns, so before its frame reaches any link (a crash of the process
   loses nothing a client saw); the writer thread (syncer.h) fdatasyncs
   by policy, which decides only what a power loss may take. A closed segment gets an
   index <first>.idx (range, count, timestamps, length; sealed alike) that opening reads
   instead of its records; the newest segment, and any whose index is missing, garbled or
   disagrees with its length, is verified record by record: a torn or
   corrupt tail is cut off and reported. Damage in an indexed segment is
   found by the reader, which stops there: nothing damaged is ever
   served. Retention deletes whole segments, oldest first. */
#ifndef PTG_FRAMELOG_H
#define PTG_FRAMELOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "seal.h"

/* A record body larger than this is corrupt (a Keyframe is at most
   12 MiB, --keyframe-max-bytes). */
#define FRAMELOG_MAX_RECORD (16u << 20)

enum framelog_fsync { FSYNC_INTERVAL, FSYNC_EVERY_FRAME, FSYNC_NEVER };

struct framelog_opts {
	const struct seal_keys *keys;
	enum framelog_fsync fsync;
	uint64_t segment_bytes; /* a segment is closed past this size */
	/* The replay ring's retention, applied per segment: a segment goes once all
	   its frames are outside the newest max_frames and older than
	   max_age_ms, or while the log is over max_bytes. */
	uint32_t max_frames;
	int64_t max_age_ms;
	uint64_t max_bytes;
};

struct framelog;

/* Opens (creating) the log of session id under state_dir, verifying what
   is there and cutting damage (reported with log_warn). Never fails for
   bad content; returns NULL only when the directory cannot be made. */
struct framelog *framelog_open(const char *state_dir, const char *id,
			       const struct framelog_opts *o);
/* Flushes, syncs (unless --fsync never) and frees; NULL is a no-op. */
void framelog_close(struct framelog *l);
/* Deletes the log of session id (the session was reaped). */
void framelog_remove(const char *state_dir, const char *id);

/* Writes one frame to the file (the page cache) before returning; with
   FSYNC_EVERY_FRAME also syncs it. Returns 0 or a negative errno (logged
   once). */
int framelog_append(struct framelog *l, uint64_t seq, int64_t ts_ms, uint8_t kind,
		    const void *frame, size_t len);
/* Waits for a sync the writer thread still has for this log; syncs too
   when sync is set (and the policy is not never). Returns 0 or a negative
   errno. */
int framelog_flush(struct framelog *l, bool sync);
/* With FSYNC_INTERVAL, has the writer thread sync what was written.
   Returns 0 or a negative errno. */
int framelog_flush_async(struct framelog *l);
/* Applies retention at now_ms; returns bytes deleted. */
uint64_t framelog_expire(struct framelog *l, int64_t now_ms);
/* Deletes the oldest closed segment (the sidecar's disk budget). Returns
   the bytes freed, 0 when only the open segment is left. */
uint64_t framelog_drop_oldest(struct framelog *l);
/* The first-frame timestamp of the oldest segment (INT64_MAX if none). */
int64_t framelog_oldest_ts(const struct framelog *l);

/* The oldest sequence still on disk (0 when empty), the highest one
   queued (0 when empty), and the bytes on disk. */
uint64_t framelog_first_seq(const struct framelog *l);
uint64_t framelog_last_seq(const struct framelog *l);
uint64_t framelog_disk_bytes(const struct framelog *l);
/* The oldest sequence a replay may start at: everything from here on
   that was logged is on disk (frames never logged, like targeted ones,
   are not history). 0 when the log holds nothing. */
uint64_t framelog_oldest_retained(const struct framelog *l);

struct framelog_rec {
	uint64_t seq;
	int64_t ts_ms;
	uint8_t kind;
	const uint8_t *frame; /* valid until the next call */
	size_t len;
};

struct framelog_reader;
/* A reader of the records with sequence > after, oldest first; what is
   queued is written first (waiting for the writer thread) so the reader
   sees it; records appended later are for a later reader. */
struct framelog_reader *framelog_reader_new(struct framelog *l, uint64_t after);
/* Reads directly from a state dir (export, tests): no writer involved. */
struct framelog_reader *framelog_reader_open(const char *state_dir, const char *id,
					     const struct seal_keys *keys,
					     uint64_t after);
/* 1 and the next record, 0 at the end, or a negative errno (a record
   that fails its check: the reader stops there). */
int framelog_reader_next(struct framelog_reader *r, struct framelog_rec *out);
void framelog_reader_free(struct framelog_reader *r);

#endif
