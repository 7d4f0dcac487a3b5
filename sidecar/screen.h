/* screen: a session's terminal model (libvterm 0.1.4 plus the modes
   tracker) and its vt100-screen-state-v1 snapshot encoder
   (docs/protocol.md, "The Keyframe's snapshot"). Cores do no I/O: bytes in,
   a snapshot out. */
#ifndef PTG_SCREEN_H
#define PTG_SCREEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vterm.h>

#include "buf.h"
#include "modes.h"

struct screen;

/* A libvterm terminal of cols x rows (each at least 1) fed every output
   byte of a session. */
struct screen *screen_new(unsigned cols, unsigned rows);
/* Frees the model; NULL is a no-op. */
void screen_free(struct screen *s);
/* Feeds output bytes (any split, one byte at a time included). Answers the
   terminal would send to queries are discarded. */
void screen_feed(struct screen *s, const uint8_t *p, size_t n);
/* Same result as screen_feed, faster for floods: text that provably
   scrolls off before anything can tell the difference is left out.
   That is plain text (printable characters, UTF-8, CR, LF) followed,
   after a CR LF, by plain lines with at least 2*rows+1 line feeds; and
   within a run of ASCII, CR and LF, whatever precedes the last 2*rows+1
   line advances, wraps included (the cursor is followed from libvterm's
   state at the run's start: column, pending wrap, auto-wrap, newline
   mode; not in insert mode, and only with the whole screen as the
   scroll region); and in a stretch of full-screen repaints (printable
   ASCII, cursor addressing and SGR only, no glyph wrapping), whatever
   precedes the last cursor addressing after which every cell is written
   again, its SGRs since the last pen reset excepted; and whatever
   precedes the last RIS (ESC c) after which a fresh libvterm ends up the
   same (modes_find_reset), as random bytes hold one every 64 KiB or so. */
void screen_feed_tail(struct screen *s, const uint8_t *p, size_t n);
/* screen_feed_tail for a flood's batch: when what is left to feed after
   the batch's last skip is at most max_hold bytes, it is held back, not
   fed, and its length returned (0: all of p was fed); after a restart at
   a RIS (and no other skip), the last max_hold bytes are. The caller puts
   those bytes, in order, before the next ones it feeds: a later batch
   may then leave them out too, where screen_feed_tail would feed the
   last screen of every batch. Until they are fed the model is not the
   screen; screen_feed_tail (or screen_feed) of them makes it so. */
size_t screen_feed_tail_hold(struct screen *s, const uint8_t *p, size_t n,
			     size_t max_hold);
/* The caller's side of screen_feed_tail_hold: feeds p[0..n) behind what
   carry holds (held back by the last call), and leaves in carry what is
   held back this time, at most max_hold bytes; with max_hold 0 nothing,
   and the model is then up to date. Copies p only behind a carry. */
void screen_feed_carried(struct screen *s, struct buf *carry, const uint8_t *p, size_t n,
			 size_t max_hold);
/* Lets go of what screen_feed_tail keeps between batches (an idle
   session does not hold a flood's worth of it) and of the snapshot's row
   caches. Not while the model is being fed. */
void screen_trim(struct screen *s);
/* The first step of screen_feed_tail alone: restarts the model from the
   last RIS in p[0..n) it can. Returns how much of p the model now stands
   after (those bytes need no feeding, the rest does, later), or 0 when
   there is no such RIS (nothing changed). */
size_t screen_skip_to_reset(struct screen *s, const uint8_t *p, size_t n);
/* Resizes the model (the PTY is resized by the caller); sizes below 1 are
   raised to 1. */
void screen_resize(struct screen *s, unsigned cols, unsigned rows);
void screen_size(const struct screen *s, unsigned *cols, unsigned *rows);
/* Appends the vt100-screen-state-v1 snapshot of the current screen to out:
   written to a freshly reset terminal of the same size it reproduces the
   cells, cursor, active screen, modes and pen. */
void screen_snapshot(struct screen *s, struct buf *out);

/* Introspection, for tests and diagnostics. */

/* Bytes handed to libvterm so far (what screen_feed_tail saves shows). */
uint64_t screen_vterm_bytes(const struct screen *s);

/* The tracked modes (pending_wrap included). */
const struct modes_state *screen_modes(const struct screen *s);
/* The libvterm screen and state, read-only use only. */
const VTermScreen *screen_vterm_screen(const struct screen *s);
const VTermState *screen_vterm_state(const struct screen *s);
/* Termprops libvterm reports but cannot be asked for. */
bool screen_cursor_visible(const struct screen *s);
bool screen_cursor_blink(const struct screen *s);
int screen_cursor_shape(const struct screen *s);
bool screen_altscreen(const struct screen *s);
bool screen_reverse(const struct screen *s);

#endif
