/* feeder: feeds a session's screen model (libvterm) on one background
   thread shared by every session, so the loop that reads the PTY and
   forwards its output does not wait for the model during a flood.

   The loop appends output as it forwards it. The bytes wait in the
   feeder until a batch is worth handing over (feeder_append) or the PTY
   runs dry (feeder_kick); the thread then feeds the batch with
   screen_feed_tail while the loop carries on. A session has at most one
   batch with the thread: what comes meanwhile waits and goes over next,
   in one larger batch, so the thread falls behind by batches, never by
   an unbounded queue (past FEEDER_PENDING_MAX the loop waits for it).

   The thread holds back the end of a flood's batch that follows its last
   skip (screen_feed_tail_hold, at most FEEDER_HOLD_MAX) and feeds it in
   front of the next batch, which usually leaves it out: a flood costs
   libvterm about one screen in all, not the last screen of every batch.
   Until a sync, or a kick that finds output stopped, feeds it, the model
   is behind by those bytes.

   Ownership of the screen: the thread touches it only while a batch of
   its feeder is with the thread. feeder_sync takes it back and feeds the
   rest on the loop (what was held back, then the rest); from then on,
   until the next feeder_append or feeder_kick, the loop may read,
   snapshot or resize the screen. */
#ifndef PTG_FEEDER_H
#define PTG_FEEDER_H

#include <stddef.h>
#include <stdint.h>

#include "screen.h"

/* A batch this large goes to the thread without waiting for the PTY to
   run dry; small enough that a Keyframe's wait for the model stays short,
   large enough that screen_feed_tail can skip most of a flood. */
#define FEEDER_HANDOFF (256u << 10)
/* The most output of a batch the thread holds back for the next one
   (screen_feed_tail_hold): the part after a flood batch's last skip,
   which the next batch usually leaves out; a Keyframe's sync feeds it. */
#define FEEDER_HOLD_MAX (128u << 10)
/* A batch smaller than this waits for the next Keyframe, resize or quiet
   tick (a lone keystroke's echo costs the thread no wake-up). */
#define FEEDER_KICK_MIN (4u << 10)
/* Kicks of one feeder: a burst of FEEDER_KICK_BURST, then one every
   FEEDER_KICK_GAP_MS. During a flood the PTY runs dry every few reads; a
   hand-over at each woke the thread, which fed a screen's worth of tail
   (a scroll per row) over a thousand times a second, on the core the
   program writing the flood needs. A screen drawn in a few pieces still
   reaches the model at once, ahead of the next join. */
#define FEEDER_KICK_BURST  4
#define FEEDER_KICK_GAP_MS 5
/* Output that resumes within this long of a kick that found it stopped
   had only paused: a flood's program, sharing the cores, pauses for a
   few ms at a time. From then on output has stopped only after this long
   without any, and only then is the end of a batch the thread held back
   fed; feeding it at each pause cost libvterm a screen each time. A
   screen drawn at once is still fed as soon as it stops, so a join after
   it finds the model up to date. */
#define FEEDER_QUIET_MS 20
/* Output waiting beside a batch still with the thread: past this the loop
   waits for the thread (the model then sets the pace, as it did when the
   loop fed it). */
#define FEEDER_PENDING_MAX (4u << 20)
/* The same for every session together (many sessions flooding at once
   share the one thread): past this, output waiting for the model, with
   the thread or beside it, makes the loop wait for the session's batch. */
#define FEEDER_TOTAL_MAX (16u << 20)

struct feeder;

struct feeder_stats {
	uint64_t thread_bytes; /* output the thread fed */
	uint64_t loop_bytes;   /* output feeder_sync fed on the loop */
	uint64_t waits;	       /* times the loop waited for the thread */
	size_t pending_peak;   /* the most output waiting beside a batch */
};

/* A feeder for scr, which the caller keeps and frees after feeder_free. */
struct feeder *feeder_new(struct screen *scr);
/* Takes the screen back from the thread (waiting if it is feeding it)
   and frees the feeder; output not yet fed is dropped. NULL: no-op. */
void feeder_free(struct feeder *f);
/* Queues output for the screen (any split); hands a batch to the thread
   once FEEDER_HANDOFF bytes wait and it has none of this feeder's. */
void feeder_append(struct feeder *f, const uint8_t *p, size_t n);
/* The PTY ran dry (now_ms: a monotonic clock): hands what waits to the
   thread when that is at least FEEDER_KICK_MIN bytes. With less, output
   has stopped (after a pause, FEEDER_QUIET_MS without output), and what
   the thread held back is handed back to it to feed (with what waits).
   Returns 0, or the ms after which to kick again: this kick had to wait
   (the burst is spent, FEEDER_KICK_BURST, or the thread still has this
   feeder's previous batch), it handed a batch over, of which the thread
   may hold back the end until a kick finds output stopped, or the
   thread holds such an end and output, which paused before, has not yet
   been quiet for FEEDER_QUIET_MS. */
int64_t feeder_kick(struct feeder *f, int64_t now_ms);
/* Brings the screen up to every byte appended: waits for the thread's
   batch, or takes it back if the thread has not started it, and feeds
   the rest here. */
void feeder_sync(struct feeder *f);
/* Bytes appended since the last feeder_sync (the screen may not show
   them yet). */
size_t feeder_unsynced(const struct feeder *f);
/* Returns the storage of a drained feeder above a small reserve (an idle
   session does not keep a flood's worth of it). Call after feeder_sync. */
void feeder_trim(struct feeder *f);

#endif
