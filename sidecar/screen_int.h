/* screen_int: what the files of the screen module share and nothing
   else sees: screen.c (the model), screen_tail.c (feeding a batch that
   leaves out what scrolls off) and screen_snapshot.c (its encoder). */
#ifndef PTG_SCREEN_INT_H
#define PTG_SCREEN_INT_H

#include <stdint.h>

#include "buf.h"
#include "screen.h"
#include "vtguard.h"

/* Sixteen bytes at a time where the compiler has vectors (SSE2 on
   x86-64, NEON on arm64), for the scans that run over every byte of a
   flood: as signed bytes, so 0x80 and up is negative; a comparison's
   lanes are all ones or zeros, read as two words. */
typedef signed char screen__vbytes __attribute__((vector_size(16)));
typedef uint64_t screen__vwords __attribute__((vector_size(16)));

/* A copy of the normal screen taken when the alternate one is entered. */
struct saved_screen {
	VTermScreenCell *cells; /* rows * cols */
	unsigned cols, rows;
	VTermPos cursor;
	VTermScreenCell pen; /* chars unused: attrs and colours only */
};

/* The last snapshot, kept while the screen stands still: joins to a quiet
   screen copy it instead of encoding the screen again. */
struct snapshot_cache {
	struct buf bytes;
	uint64_t changes; /* screen__changes when it was made */
	bool valid;
};

/* One row of the live screen as the last snapshot encoded it, good until
   libvterm damages the row. While someone types, a key changes a row or
   two, and reading every cell again (vterm_screen_get_cell) was most of
   each cadence Keyframe: some 60 us for a 120x30 screen, in the window
   where the next key arrives. A row's bytes start with an absolute move
   unless the encoder already stands on the row, so they depend only on
   the pen it enters with and, on that one row, the column. A quiet
   session lets them go (screen_trim): they hold as much as a snapshot. */
struct row_cache {
	struct buf bytes;
	VTermScreenCell pen_in, pen_out; /* the encoder's pen before, after */
	int col_in;			 /* the column when it stood on the row */
	int row_out, col_out;		 /* its cursor after */
	bool valid;
};

struct row_caches {
	struct row_cache *v; /* rows of them, or NULL */
	unsigned rows, cols;
	bool unreverse;	  /* DECSCNM's flip they were encoded under */
	uint64_t encoded; /* rows read from libvterm, for tests */
};

/* screen_feed_tail's scratch: the tokens of a redraw walk (screen_tail.c).
   A stream of repaints walks a hundred thousand tokens a megabyte; kept
   between batches, their array is not mapped afresh (and faulted in page
   by page) for each, which cost more than the walk itself. */
struct redraw_tok;
struct redraw_toks {
	struct redraw_tok *v;
	size_t count, cap;
};

/* A session's terminal model; screen.c alone changes libvterm's setup
   and the callbacks' fields, screen_tail.c reads the geometry and the
   modes to decide what to leave out. */
struct screen {
	VTerm *vt;
	VTermScreen *vs;
	VTermState *state;
	struct modes *modes;
	unsigned cols, rows;
	bool cursor_visible, cursor_blink, altscreen, reverse;
	int cursor_shape;
	bool in_run;	 /* libvterm is being fed a text run */
	bool glyph_seen; /* glyph holds the last cell a run damaged */
	VTermRect glyph;
	struct saved_screen normal; /* cells == NULL when not on the alt screen */
	struct buf *probe;	    /* where screen_probe collects answers */
	uint64_t vterm_bytes;	    /* fed to libvterm, for screen_vterm_bytes */
	struct vtguard guard;	    /* between the output and libvterm */
	/* Bumped by every call that may change what a snapshot shows: the
	   cached snapshot is good while it stands still. */
	uint64_t changes;
	struct snapshot_cache cache;
	struct row_caches row_caches; /* damage marks rows stale */
	struct redraw_toks toks;      /* whoever feeds the model owns it */
};

/* The normal screen under the alternate one, NULL when the normal screen
   is the one shown. */
const struct saved_screen *screen__normal(const struct screen *s);
/* The pen (attributes and colours) libvterm writes with now. */
void screen__pen(const struct screen *s, VTermScreenCell *pen);
/* The screen's snapshot cache, and the count of the calls that may have
   changed it (screen_feed, _feed_tail, _skip_to_reset, _resize, _probe). */
struct snapshot_cache *screen__cache(struct screen *s);
uint64_t screen__changes(const struct screen *s);
/* The live screen's row caches. screen.c marks rows stale as libvterm
   reports damage (screen__rows_stale) and lets them all go on a new
   libvterm, a resize and a quiet tick (screen_trim). */
struct row_caches *screen__row_caches(struct screen *s);
void screen__row_caches_free(struct row_caches *rc);

/* Inline: libvterm reports damage cell by cell while it is fed. */
static inline void screen__rows_stale(struct row_caches *rc, int from, int to)
{
	if (!rc->v)
		return;
	for (int r = from < 0 ? 0 : from; r < to && r < (int)rc->rows; r++)
		rc->v[r].valid = false;
}
/* The snapshot encoded from every cell, neither cache read nor filled:
   what the tests compare the cached one with. */
void screen__snapshot_uncached(struct screen *s, struct buf *out);
/* An erased cell with the default pen. */
void screen__blank_cell(VTermScreenCell *c);

#endif
