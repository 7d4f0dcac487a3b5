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
/* What libvterm may get for the n bytes at p on a cols x rows screen:
   p itself, or out's content (out must start empty); *n is set to the
   length. A character p ends inside is held for the next call. */
const uint8_t *vtguard_filter(struct vtguard *v, unsigned cols, unsigned rows,
			      const uint8_t *p, size_t *n, struct buf *out);
/* One column: p as that screen's model takes it (ASCII only, no
   double-width lines), appended to out; vtguard_filter follows. */
void vtguard_narrow(struct vtguard *v, const uint8_t *p, size_t n, struct buf *out);

#endif
