/* syncer: one background thread that fdatasyncs files for the event
   loop, so `--fsync interval` never blocks the loop on the disk. The loop
   hands over a duplicate of the file descriptor (the segment may be
   closed or deleted meanwhile; the duplicate keeps the file open until
   it is synced). */
#ifndef PTG_SYNCER_H
#define PTG_SYNCER_H

/* Queues a sync of fd's data. Returns 0, or a negative errno when it
   cannot be queued (the queue is full: the caller tries again at its
   next interval; a later sync covers every earlier write). */
int syncer_request(int fd);

#endif
