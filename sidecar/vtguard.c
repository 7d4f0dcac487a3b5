/* vtguard: what stands between a session's output and libvterm 0.1.4,
   whose parser and screen are not safe against hostile output: a UTF-8
   sanitizer (valid UTF-8 only, without the characters it mishandles)
   or, on a one-column screen, an ASCII-only filter, which every byte goes
   through first; then the CSI guard's rules (parameters, scroll regions,
   REP, a string's ESC), which the modes tracker applies as it parses
   (modes.c). Each rule names the libvterm defect it keeps a program from
   reaching (tests/unit/test_screen_hostile.c has a case for each). */
#include "vtguard.h"

#include <string.h>

#include "utf8.h"

/* What libvterm 0.1.4 is handed is valid UTF-8 only, without the
   characters it mishandles; anything else could let a program crash the
   sidecar with its output:
   - a UTF-8 character's first bytes stay pending in libvterm across
     controls and escape sequences, so later bytes complete them into
     characters the program never sent: a broken or stray sequence is
     U+FFFD here, and a character a write ends inside is held for the next;
   - U+0080..U+009F (C2 80..9F), C1 controls, are drawn with width -1: in
     the last column that moves the cursor to column -1, and a tab stop set
     there is written before libvterm's table. Dropped: they print nothing
     on a terminal;
   - U+302A..U+302F and U+3099..U+309A (E3 80 AA..AF, E3 82 99..9A)
     combine, yet libvterm counts each two columns wide: a character
     carrying a few is wider than the screen and libvterm writes past its
     row. Dropped: terminals draw them zero columns wide. */
static bool mishandled(const uint8_t *p, size_t k)
{
	if (k == 2)
		return p[0] == 0xc2 && p[1] <= 0x9f;
	if (k != 3 || p[0] != 0xe3)
		return false;
	return (p[1] == 0x80 && p[2] >= 0xaa && p[2] <= 0xaf) ||
	       (p[1] == 0x82 && (p[2] == 0x99 || p[2] == 0x9a));
}

/* p's n bytes could begin a character: a lead byte and continuations. */
static bool char_start(const uint8_t *p, size_t n)
{
	size_t need = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;

	if (p[0] > 0xf4 || n >= need)
		return false;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return false;
	return true;
}

/* The next byte at or after i that is not ASCII (n if none), eight bytes
   at a time, as most output is ASCII. */
static size_t next_high(const uint8_t *p, size_t i, size_t n)
{
	uint64_t x;

	while (i + 8 <= n) {
		memcpy(&x, p + i, 8);
		if (x & 0x8080808080808080u)
			break;
		i += 8;
	}
	while (i < n && p[i] < 0x80)
		i++;
	return i;
}

/* Copies p to out as libvterm may see it (above); holds back a character
   the write ends inside. */
static void sanitize(struct vtguard *v, const uint8_t *p, size_t n, struct buf *out)
{
	size_t from = 0, i = next_high(p, 0, n);

	while (i < n) {
		size_t k = utf8_seq_len(p + i, n - i);

		if (!k && char_start(p + i, n - i)) {
			v->held_len = (unsigned)(n - i);
			memcpy(v->held, p + i, v->held_len);
			n = i;
			break;
		}
		if (!k || mishandled(p + i, k)) {
			buf_append(out, p + from, i - from);
			if (!k)
				buf_append(out, "\xef\xbf\xbd", 3);
			k = k ? k : 1;
			from = i + k;
		}
		i = next_high(p, i + k, n);
	}
	buf_append(out, p + from, n - from);
}

/* Whether a write ended in ESC or ESC #, so that a one-column screen
   still sees a double-width line asked for across a write or a resize. */
static void note_esc_tail(struct vtguard *v, const uint8_t *p, size_t n)
{
	if (!n)
		return;
	if (p[n - 1] == 0x1b)
		v->narrow_esc = 1;
	else if (p[n - 1] == '#' && (n >= 2 ? p[n - 2] == 0x1b : v->narrow_esc == 1))
		v->narrow_esc = 2;
	else
		v->narrow_esc = 0;
}

/* The CSI guard's rules. The modes tracker applies them as it parses
   (it reads each sequence once, exactly as libvterm will get it). */

/* - DECSTBM: margins libvterm 0.1.4 would set to an empty or inverted
     region (it then scrolls with negative counts) are a reset instead,
     as the tracker's own margins are.
   - REP repeats the last glyph at its width: with none since a reset, or
     one of width 0, libvterm loops forever; one two columns wide, in the
     last column, it writes past the row. It is kept after printable ASCII
     only (what curses repeats). */
enum vtguard_final vtguard_final(uint8_t final, bool margins_invalid, bool glyph_ascii)
{
	if (final == 'r' && margins_invalid)
		return VTGUARD_RESET_MARGINS;
	if (final == 'b' && !glyph_ascii)
		return VTGUARD_IGNORE;
	return VTGUARD_KEEP;
}

/* In a string, libvterm 0.1.4 takes ESC \\ for ST even with a control,
   NUL or DEL between the two, and then copies the string from one byte
   before the start of its write: strncpy reads past the end of the
   output, up to its string buffer's size. So a string's ESC is held back
   until the byte after it: controls pass before it (as they act in the
   string), BEL, NUL and DEL, which do nothing there, are dropped, and any
   other byte goes after it. */
enum vtguard_held vtguard_held_esc(uint8_t c)
{
	if (c == 0x07 || c == 0x00 || c == 0x7f)
		return VTGUARD_HELD_DROP;
	if (c < 0x20 && c != 0x1b && c != 0x18 && c != 0x1a)
		return VTGUARD_HELD_PASS;
	return VTGUARD_HELD_RELEASE;
}

/* One column: libvterm 0.1.4 writes past the row when it places a wide
   character where none fits, and it keeps a UTF-8 character's first bytes
   pending across escape sequences (from before a resize to one column,
   say), so any continuation byte it is handed could complete one. On a
   one-column screen the model therefore gets ASCII only: each non-ASCII
   character, whole, broken or stray, is one '?' (a screen one column wide
   is a curiosity; a crash is not). */
static void narrow_emit(struct vtguard *v, struct buf *out)
{
	buf_append(out, "?", 1);
	v->u8_len = 0;
	v->u8_need = 0;
}

/* One column: a double-width or double-height line (ESC # 3, 4, 6) is
   zero columns wide to libvterm, whose cursor then goes to column -1 on
   a back tab; the line stays single width (ESC # 5) instead. b was just
   appended to out. */
static void no_double_width(struct vtguard *v, struct buf *out, uint8_t b)
{
	if (v->narrow_esc == 2 && (b == '3' || b == '4' || b == '6'))
		out->data[out->len - 1] = '5';
	/* C0 controls inside a sequence act and leave it going on. */
	if ((b < 0x20 && b != 0x1b && b != 0x18 && b != 0x1a) || b == 0x7f)
		return;
	if (b == 0x1b)
		v->narrow_esc = 1;
	else if (v->narrow_esc == 1 && b == '#')
		v->narrow_esc = 2;
	else
		v->narrow_esc = 0;
}

static void narrow(struct vtguard *v, const uint8_t *p, size_t n, struct buf *out)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t b = p[i];

		if (v->u8_need && (b & 0xc0) == 0x80) {
			v->u8[v->u8_len++] = b;
			v->u8_cp = (v->u8_cp << 6) | (b & 0x3f);
			if (--v->u8_need == 0)
				narrow_emit(v, out);
			continue;
		}
		if (v->u8_need)
			narrow_emit(v, out); /* a broken sequence */
		if ((b & 0xc0) == 0x80 || b >= 0xf8) {
			narrow_emit(v, out); /* stray, or starts nothing */
			continue;
		}
		if (b >= 0xc0 && b < 0xf8) {
			v->u8_need = b >= 0xf0 ? 3 : b >= 0xe0 ? 2 : 1;
			v->u8_cp = b & (0x3f >> v->u8_need);
			v->u8[0] = b;
			v->u8_len = 1;
			continue;
		}
		buf_append(out, &b, 1);
		no_double_width(v, out, b);
	}
}

void vtguard_reset(struct vtguard *v)
{
	v->held_len = 0;
}

/* The UTF-8 sanitizer's part of vtguard_clean: p as is, or its
   sanitized copy in out. */
static const uint8_t *sanitized(struct vtguard *v, const uint8_t *p, size_t *n,
				struct buf *out)
{
	struct buf in = BUF_INIT;

	if (!v->held_len && next_high(p, 0, *n) == *n)
		return p;
	if (v->held_len) {
		buf_append(&in, v->held, v->held_len);
		buf_append(&in, p, *n);
		v->held_len = 0;
		p = buf_head(&in);
		*n = buf_size(&in);
	}
	sanitize(v, p, *n, out);
	buf_free(&in);
	*n = buf_size(out);
	return buf_head(out);
}

void vtguard_set_aside(struct vtguard *v, struct vtguard *aside)
{
	*aside = *v;
	v->held_len = 0;
	v->u8_len = v->u8_need = 0;
}

void vtguard_put_back(struct vtguard *v, const struct vtguard *aside)
{
	memcpy(v->held, aside->held, sizeof(v->held));
	v->held_len = aside->held_len;
	memcpy(v->u8, aside->u8, sizeof(v->u8));
	v->u8_len = aside->u8_len;
	v->u8_need = aside->u8_need;
	v->u8_cp = aside->u8_cp;
}

const uint8_t *vtguard_clean(struct vtguard *v, unsigned cols, const uint8_t *p,
			     size_t *n, struct buf *out)
{
	/* A character held across a resize to or from one column goes on
	   as it came, in the other filter. */
	if (cols == 1) {
		if (v->held_len)
			narrow(v, v->held, v->held_len, out);
		v->held_len = 0;
		narrow(v, p, *n, out);
		*n = buf_size(out);
		return buf_head(out);
	}
	if (v->u8_len) {
		memcpy(v->held, v->u8, v->u8_len);
		v->held_len = v->u8_len;
		v->u8_len = v->u8_need = 0;
	}
	note_esc_tail(v, p, *n);
	return sanitized(v, p, n, out);
}
