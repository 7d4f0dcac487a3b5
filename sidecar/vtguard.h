/* vtguard: the filter every byte goes through on its way to libvterm
   0.1.4 (see vtguard.c for the defects each rule keeps programs from
   reaching). Pure: bytes in, bytes out, state carried between writes. */
#ifndef PTG_VTGUARD_H
#define PTG_VTGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Where the parser libvterm runs over the output stands, as far as
   guard_csi needs to know (a sequence may span writes). */
enum { GUARD_GROUND, GUARD_ESC, GUARD_CSI, GUARD_STRING, GUARD_STRING_ESC };

struct csi_guard {
	uint8_t st;	 /* GUARD_GROUND ... GUARD_STRING_ESC */
	uint8_t seps;	 /* parameter separators seen, at most 255 */
	bool odd;	 /* a leader or intermediate byte: not DECSTBM */
	int arg[2];	 /* the first two parameters, -1 when missing */
	bool ascii_last; /* the last glyph libvterm drew was printable ASCII */
	bool esc_held;	 /* a string's ESC, held until the byte after it */
};

struct vtguard {
	struct csi_guard csi;
	unsigned rows;	 /* the screen's, for DECSTBM */
	uint8_t held[3]; /* a character a write ended inside, for the next */
	unsigned held_len;
	unsigned narrow_esc; /* 1 after ESC, 2 after ESC # */
	/* One column: a UTF-8 character held back until it is whole. */
	uint8_t u8[4];
	unsigned u8_len, u8_need;
	uint32_t u8_cp;
};

/* A fresh libvterm: nothing of an earlier one's is pending. */
void vtguard_reset(struct vtguard *v);
/* Moves the character the output ended inside (held back from libvterm)
   from v to aside, while the screen writes repairs of its own, which it
   must not precede (see screen_resize); vtguard_put_back returns it to v
   for the program's next write, where it goes on as it came. */
void vtguard_set_aside(struct vtguard *v, struct vtguard *aside);
void vtguard_put_back(struct vtguard *v, const struct vtguard *aside);
/* The characters libvterm may get for the n bytes at p on a screen cols
   wide (valid UTF-8 without those it mishandles; ASCII only on one
   column): p itself, or out's content (out must start empty); *n is set
   to the length. A character p ends inside is held for the next call.
   Everything a session prints goes through here first, so the modes
   tracker and the guard read what libvterm does. */
const uint8_t *vtguard_clean(struct vtguard *v, unsigned cols, const uint8_t *p,
			     size_t *n, struct buf *out);
/* The CSI guard over cleaned bytes about to reach libvterm, on a screen
   rows high: p itself, or out's content (out must start empty); *n is set
   to the length. A string's ESC may be held for the next call. */
const uint8_t *vtguard_filter(struct vtguard *v, unsigned rows, const uint8_t *p,
			      size_t *n, struct buf *out);

#endif
