/* screen_int: what the files of the screen module share and nothing
   else sees: screen.c (the model) and screen_snapshot.c (its encoder). */
#ifndef PTG_SCREEN_INT_H
#define PTG_SCREEN_INT_H

#include "buf.h"
#include "screen.h"

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

/* The normal screen under the alternate one, NULL when the normal screen
   is the one shown. */
const struct saved_screen *screen__normal(const struct screen *s);
/* The pen (attributes and colours) libvterm writes with now. */
void screen__pen(const struct screen *s, VTermScreenCell *pen);
/* The screen's snapshot cache, and the count of the calls that may have
   changed it (screen_feed, _feed_tail, _skip_to_reset, _resize, _probe). */
struct snapshot_cache *screen__cache(struct screen *s);
uint64_t screen__changes(const struct screen *s);
/* An erased cell with the default pen. */
void screen__blank_cell(VTermScreenCell *c);

#endif
