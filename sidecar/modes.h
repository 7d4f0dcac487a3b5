/* modes: a small escape-sequence tracker fed the same bytes as libvterm.
   libvterm 0.1.4 has no getters for the modes below, so this parser keeps
   them itself. Modes that change how libvterm lays out text (origin,
   auto-wrap, insert, newline, margins) follow libvterm 0.1.4 exactly, quirks
   included (SM/RM apply their first parameter only, DECSTR is ignored), so
   tracker and model never disagree. Modes that only change how a client
   encodes input (cursor keys, keypad, bracketed paste, focus, mouse) follow
   xterm: every parameter counts, RIS and DECSTR reset what xterm resets.
   The parser also reports where text runs start and end, where an
   alternate-screen switch is about to happen and which bytes the CSI
   guard's rules change (vtguard.h: it reads what libvterm will get, so
   one parser reads each sequence once), so the screen can act at exactly
   those bytes. No allocation after modes_new. */
#ifndef PTG_MODES_H
#define PTG_MODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The tracked state, read by the snapshot encoder. */
struct modes_state {
	bool cursor_keys;     /* DECCKM, ?1 */
	bool keypad;	      /* DECKPAM (ESC =) / DECKPNM (ESC >) */
	bool origin;	      /* DECOM, ?6 */
	bool autowrap;	      /* DECAWM, ?7 */
	bool insert;	      /* IRM, 4 */
	bool newline;	      /* LNM, 20 */
	bool lr_margins;      /* DECLRMM, ?69 */
	bool bracketed_paste; /* ?2004 */
	bool focus_events;    /* ?1004 */
	unsigned mouse;	      /* 0, 9, 1000, 1002 or 1003 */
	unsigned mouse_enc;   /* 0, 1005, 1006 or 1015 */
	unsigned alt_variant; /* 1047 or 1049: how the alternate screen was entered */
	int top, bottom;      /* DECSTBM rows [top, bottom), bottom -1 = last row */
	int left, right;      /* DECSLRM cols [left, right), right -1 = last col */
	char g[4];	   /* G0..G3 designations: 'B' ASCII, '0' DEC graphics, 'A' UK */
	uint8_t gl;	   /* which G set is shifted into GL (SI/SO/LS2/LS3) */
	bool pending_wrap; /* cursor in the last column after writing it */
};

/* What modes_feed stopped at. */
enum modes_event {
	MODES_EV_NONE,
	MODES_EV_TEXT_START, /* the byte at *at begins a text run */
	MODES_EV_TEXT_END,   /* the byte at *at is the first after a text run */
	MODES_EV_ALT_ENTER,  /* the byte at *at is the final byte of ?1047h/?1049h */
	MODES_EV_GUARD,	     /* libvterm gets the byte at *at as modes_guard says */
};

/* What libvterm gets for the byte of a MODES_EV_GUARD event, as the CSI
   guard's rules decide (vtguard.h); the tracker parses the output once
   for both, as libvterm will read it. */
enum modes_guard {
	MODES_GUARD_DROP,	   /* nothing (the tracker skips it too) */
	MODES_GUARD_IGNORE,	   /* a final byte libvterm ignores ('}') */
	MODES_GUARD_RESET_MARGINS, /* that, then CSI r */
	MODES_GUARD_ESC_FIRST,	   /* a string's held ESC, then the byte */
};

struct modes;

/* A tracker in the state of a freshly reset terminal of cols x rows. */
struct modes *modes_new(unsigned cols, unsigned rows);
void modes_free(struct modes *m);
/* Parses up to n bytes of p, stopping just after the first event. Returns
   the number of bytes consumed; *ev and *at (an index into p, < return
   value) say what happened where, *ev is MODES_EV_NONE if nothing did. */
size_t modes_feed(struct modes *m, const uint8_t *p, size_t n, enum modes_event *ev,
		  size_t *at);
/* What the byte of the last MODES_EV_GUARD event becomes. */
enum modes_guard modes_guard(const struct modes *m);
/* True when no escape, control or string sequence is half parsed. */
bool modes_idle(const struct modes *m);
/* The terminal was resized: clamps the margins as libvterm does. */
void modes_resize(struct modes *m, unsigned cols, unsigned rows);
/* Finds in p[0..n), which follows what m has parsed, the last RIS after
   which a freshly made libvterm, given the half-read UTF-8 character
   held[0..*held_len) (at most 6 bytes) as one write and then RIS and the
   bytes after it, ends up exactly as one fed everything in the same
   writes (see modes.c for the conditions); alt says whether the
   alternate screen may be active before p. Returns the index just after
   that RIS and leaves m in its state there, or returns 0 and leaves m
   alone. */
size_t modes_find_reset(struct modes *m, const uint8_t *p, size_t n, bool alt,
			uint8_t *held, size_t *held_len);
/* The tracked state; screen.c also sets pending_wrap through it, as only
   libvterm's callbacks tell when the cursor moves. */
struct modes_state *modes_state(struct modes *m);

#endif
