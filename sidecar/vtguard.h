/* vtguard: the filter every byte goes through on its way to libvterm
   0.1.4, and the CSI guard's rules the modes tracker applies (see
   vtguard.c for the defects each rule keeps programs from reaching).
   Pure: bytes in, bytes out, state carried between writes. */
#ifndef PTG_VTGUARD_H
#define PTG_VTGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct vtguard {
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
/* The CSI guard's rules, applied by the modes tracker (modes.c) as it
   parses what libvterm will get. */
#define VTGUARD_MAX_SEPS 15
/* Whether libvterm may get a CSI parameter byte (digit or separator)
   with seps separators before it and this one. */
static inline bool vtguard_param_ok(unsigned seps)
{
	return seps <= VTGUARD_MAX_SEPS; /* libvterm 0.1.4 holds 16 parameters */
}
enum vtguard_final { VTGUARD_KEEP, VTGUARD_IGNORE, VTGUARD_RESET_MARGINS };
/* What libvterm gets for the final byte of a CSI without leader or
   intermediate bytes: the byte, an ignored final, or that and a margin
   reset. margins_invalid: the region a DECSTBM sets is empty or
   inverted; glyph_ascii: the last glyph printed was printable ASCII. */
enum vtguard_final vtguard_final(uint8_t final, bool margins_invalid, bool glyph_ascii);
enum vtguard_held { VTGUARD_HELD_DROP, VTGUARD_HELD_PASS, VTGUARD_HELD_RELEASE };
/* A string's ESC is held back from libvterm: what becomes of the byte c
   after it. Dropped, passed before the ESC, or after it. */
enum vtguard_held vtguard_held_esc(uint8_t c);

#endif
