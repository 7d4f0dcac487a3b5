/* syncer: one background thread that writes frame log segments and
   fdatasyncs them, so neither a write nor `--fsync interval` blocks the
   event loop on the disk. The loop hands over whole batches of sealed
   records (a block it no longer owns) with a duplicate of the segment's
   descriptor (the segment may be closed or deleted meanwhile); the thread
   writes them in the order given, then syncs when asked.

   The queue is bounded in bytes (SYNCER_QUEUE_BYTES). A batch that would
   pass the bound makes the caller wait until the thread has written
   enough: the loop then goes at the disk's pace, as it did when it wrote
   itself. Memory stays bounded and no frame is ever dropped. */
#ifndef PTG_SYNCER_H
#define PTG_SYNCER_H

#include <stddef.h>
#include <stdint.h>

#define SYNCER_QUEUE_BYTES (32u << 20)

/* What one writer (a frame log) shares with the thread: the first error
   of its writes and syncs (0 when none). Counted references: the writer
   holds one, every queued batch another. */
struct syncer_status;
struct syncer_status *syncer_status_new(void);
void syncer_status_put(struct syncer_status *st);
/* The first negative errno of a write or sync of st's batches, or 0. */
int syncer_status_error(const struct syncer_status *st);

/* Queues data[0..len) (malloc'd; the thread frees it; len may be 0) to be
   written to fd's file, then synced when sync is set. Returns the batch's
   ticket (> 0), to wait for with syncer_wait, or a negative errno when
   the thread cannot start or fd cannot be duplicated (data stays the
   caller's, which writes it itself). Blocks while the queue is full (see
   above). */
int64_t syncer_write(int fd, uint8_t *data, size_t len, int sync,
		     struct syncer_status *st);
/* Queues a small file to be written whole by the thread: data (malloc'd,
   the thread frees it) into path + ".tmp", then renamed to path, not
   synced (what the frame log's segment indexes need: one lost in a crash
   only costs a full check). Returns a ticket, or a negative errno with
   data still the caller's. */
int64_t syncer_write_file(const char *path, uint8_t *data, size_t len);
/* Waits until the batch of ticket (and every one before it) is written;
   its sync may still be running. */
void syncer_wait(int64_t ticket);
/* Bytes queued and not yet written (tests, measurements). */
size_t syncer_queued_bytes(void);
/* The largest value syncer_queued_bytes has had (tests). */
size_t syncer_queued_peak(void);
/* Lowers the bound (tests: a tiny queue fills at once). 0: the default. */
void syncer_set_limit(size_t bytes);

#endif
