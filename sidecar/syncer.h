/* syncer: one background thread that fdatasyncs frame log segments and
   writes small whole files (segment indexes), so neither `--fsync
   interval` nor those files block the event loop on the disk. The frame
   records themselves are written by the loop (framelog.h), before their
   frames reach any link; the thread is given a duplicate of a segment's
   descriptor to sync (the segment may be closed or deleted meanwhile) and
   finishes its work in the order given.

   The queue is bounded in bytes (SYNCER_QUEUE_BYTES) of file data. A
   batch that would pass the bound makes the caller wait until the thread
   has written enough. Memory stays bounded. */
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

/* Queues an fdatasync of fd's file (and of a directory's, for a new
   segment's name). Returns the ticket (> 0), to wait for with
   syncer_wait, or a negative errno when the thread cannot start or fd
   cannot be duplicated (the caller syncs itself). */
int64_t syncer_sync(int fd, struct syncer_status *st);
/* Queues a small file to be written whole by the thread: data (malloc'd,
   the thread frees it) into path + ".tmp", then renamed to path, not
   synced (what the frame log's segment indexes need: one lost in a crash
   only costs a full check). Returns a ticket, or a negative errno with
   data still the caller's. */
int64_t syncer_write_file(const char *path, uint8_t *data, size_t len);
/* Waits until the batch of ticket (and every one before it) is taken
   and its file written; its sync may still be running. */
void syncer_wait(int64_t ticket);

#endif
