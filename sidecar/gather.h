/* gather: a streaming program's PTY reads joined into fewer, larger
   Output frames.

   A frame is compressed on its own for every client that agreed
   permessage-deflate (its bytes are shared by all of them, so no
   compression context carries from one frame to the next), and its
   envelope, sequence number, ring entry and log record cost the same
   whatever it carries: a program writing a few MB/s in many small writes
   (ls -lR, a build, a TUI) would otherwise go out as 2-4 KiB frames that
   compress poorly and cost the most per byte.

   The first output after a pause always goes at once, and so does the
   output of the GATHER_AFTER_INPUT_US after the program got input, up to
   GATHER_ANSWER_MAX bytes (a keystroke's echo, a command's answer, a
   TUI's redraw for the key may come in several reads, behind what the
   program was writing anyway). Past that much it is a flood that the
   input started (`ls -lR` and Enter), and its reads are a stream.
   Only a read that follows the previous one closely (GATHER_STREAM_US)
   is held, until GATHER_MIN bytes are held or GATHER_WAIT_US passed
   since the first of them; the caller's timer flushes at that deadline.

   Pure logic on a caller's clock (microseconds), so tests drive it
   without sleeping. Emitting goes through the callback given at init; a
   flush from inside it finds nothing held. */
#ifndef PTG_GATHER_H
#define PTG_GATHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Held output goes once this much is held... */
#define GATHER_MIN (32u << 10)
/* ...or this long after the first held read, whichever comes first. */
#define GATHER_WAIT_US 5000
/* A read this soon after the previous one continues a stream. */
#define GATHER_STREAM_US 2000
/* After input, reads go at once for this long... */
#define GATHER_AFTER_INPUT_US 20000
/* ...until this much went: a full redraw of a 120x30 screen in colour
   fits; 64 KiB let the first 20 ms of a fast `ls -lR` go out in frames
   of a few hundred bytes, 1-2 KiB on average. */
#define GATHER_ANSWER_MAX (16u << 10)
/* No emitted span is longer (one Output frame's most). */
#define GATHER_MAX (64u << 10)

typedef void gather_emit_fn(void *user, const uint8_t *p, size_t n);

struct gather {
	struct buf held;       /* read, not yet emitted */
	int64_t last_read_us;  /* 0: no stream (never read) */
	int64_t held_since_us; /* when the first held byte was read */
	int64_t input_us;      /* when the program last got input (0: never) */
	size_t answered;       /* bytes that went at once since that input */
	gather_emit_fn *emit;
	void *user;
};

void gather_init(struct gather *g, gather_emit_fn *emit, void *user);
/* Drops what is held (the session is going away) and frees storage. */
void gather_free(struct gather *g);

/* A read of n bytes (at most GATHER_MAX) at now_us: emits what goes now
   and holds the rest. Returns 0 when nothing is held, else the delay in
   microseconds after which gather_flush is due. */
int64_t gather_take(struct gather *g, const uint8_t *p, size_t n, int64_t now_us);
/* Emits what is held, if anything. */
void gather_flush(struct gather *g);
/* The program was given input at now_us: what it writes for a while is
   an answer, not the continuation of a stream, and goes at once. */
void gather_input(struct gather *g, int64_t now_us);
/* Frees the storage of an empty gather (a quiet session keeps none). */
void gather_trim(struct gather *g);

#endif
