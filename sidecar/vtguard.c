/* vtguard: what stands between a session's output and libvterm 0.1.4,
   whose parser and screen are not safe against hostile output: a CSI
   guard that mirrors its parser (parameters, scroll regions, REP), a
   UTF-8 sanitizer (valid UTF-8 only, without the characters it
   mishandles) and, on a one-column screen, an ASCII-only filter. Each
   rule names the libvterm defect it keeps a program from reaching
   (tests/unit/test_screen_hostile.c has a case for each). */
#include <string.h>

#include "utf8.h"
#include "vtguard.h"

#define GUARD_MAX_SEPS 15 /* libvterm 0.1.4 holds 16 CSI parameters */

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

static void guard_start_csi(struct csi_guard *g)
{
	g->st = GUARD_CSI;
	g->seps = 0;
	g->odd = false;
	g->arg[0] = g->arg[1] = -1;
}

/* DECSTBM's margins as libvterm 0.1.4 would set them are an empty or
   inverted region (it then scrolls with negative counts): the same test
   as the modes tracker's set_margins, which resets such a region. */
static bool margins_invalid(const struct csi_guard *g, int rows)
{
	int a = (g->arg[0] < 1 ? 1 : g->arg[0]) - 1;
	int b = g->seps >= 1 ? g->arg[1] : -1;

	if (a > rows)
		a = rows;
	if (a == 0 && b == rows)
		b = -1;
	else if (b > rows)
		b = rows;
	return (b == -1 ? rows : b) <= a;
}

enum guard_action { GUARD_KEEP, GUARD_DROP, GUARD_RESET_MARGINS, GUARD_IGNORE };

/* One byte of a CSI sequence other than a C0 control: whether libvterm
   gets it as it is, not at all, or an ignored final byte and a margin
   reset in its place. */
static enum guard_action guard_csi_byte(struct vtguard *v, uint8_t c)
{
	struct csi_guard *g = &v->csi;

	if (c >= '0' && c <= '9') {
		if (g->seps > GUARD_MAX_SEPS)
			return GUARD_DROP;
		if (g->seps < 2 && !g->odd) {
			int *a = &g->arg[g->seps];

			*a = (*a < 0 ? 0 : *a) * 10 + (c - '0');
			if (*a > 100000)
				*a = 100000;
		}
	} else if (c == ';' || c == ':') {
		if (g->seps < 255)
			g->seps++;
		if (g->seps > GUARD_MAX_SEPS)
			return GUARD_DROP;
	} else if ((c >= 0x3c && c <= 0x3f) || (c >= 0x20 && c <= 0x2f)) {
		g->odd = true;
	} else if (c >= 0x40 && c <= 0x7e) {
		g->st = GUARD_GROUND;
		if (c == 'r' && !g->odd && margins_invalid(g, (int)v->rows))
			return GUARD_RESET_MARGINS;
		/* REP repeats the last glyph at its width: with none since a
		   reset, or one of width 0, libvterm loops forever; one two
		   columns wide, in the last column, it writes past the row. It
		   is kept after printable ASCII only (what curses repeats). */
		if (c == 'b' && !g->odd && !g->ascii_last)
			return GUARD_IGNORE;
		if (c == 'p' && g->odd)
			g->ascii_last = false; /* DECSTR, a soft reset */
	} else if (c >= 0x80) {
		g->st = GUARD_GROUND; /* DEL is ignored */
	}
	return GUARD_KEEP;
}

/* C0 controls act in every state of libvterm's parser (NUL and DEL are
   dropped): CAN and SUB abort a sequence, ESC starts one (or, in a
   string, maybe its ST), BEL ends a string. False if c is none. */
static bool guard_control(struct csi_guard *g, uint8_t c)
{
	if (c == 0x00 || c == 0x7f)
		return true;
	if (c >= 0x20)
		return false;
	if (c == 0x18 || c == 0x1a)
		g->st = GUARD_GROUND;
	else if (c == 0x1b)
		g->st = g->st == GUARD_STRING ? GUARD_STRING_ESC : GUARD_ESC;
	else if (c == 0x07 && g->st == GUARD_STRING)
		g->st = GUARD_GROUND;
	return true;
}

/* The byte after ESC (and its intermediates), as libvterm 0.1.4's parser
   takes it (and the modes tracker): '[' starts a CSI, 'P' and ']' a DCS
   or OSC string, even after intermediate bytes; bytes from 0x80 are
   ignored. */
static void guard_esc_byte(struct csi_guard *g, uint8_t c)
{
	if (c == 'c')
		g->ascii_last = false; /* RIS */
	if (c == '[')
		guard_start_csi(g);
	else if (c == 'P' || c == ']')
		g->st = GUARD_STRING;
	else if (c >= 0x30 && c < 0x7f)
		g->st = GUARD_GROUND;
}

/* One byte outside text: where libvterm's parser goes with it, and what
   the guard does to it. */
static enum guard_action guard_seq_byte(struct vtguard *v, uint8_t c)
{
	struct csi_guard *g = &v->csi;

	if (guard_control(g, c))
		return GUARD_KEEP;
	switch (g->st) {
	case GUARD_CSI:
		return guard_csi_byte(v, c);
	case GUARD_STRING_ESC:
		if (c == '\\') {
			g->st = GUARD_GROUND; /* ST */
			break;
		}
		g->st = GUARD_ESC; /* the string is abandoned */
		guard_esc_byte(g, c);
		break;
	case GUARD_ESC:
		guard_esc_byte(g, c);
		break;
	default:
		break; /* a string's content */
	}
	return GUARD_KEEP;
}

/* Text between escape sequences: its last glyph, if it has one (C0
   controls draw nothing and leave libvterm's last glyph as it was). */
static void note_last_glyph(struct csi_guard *g, const uint8_t *p, size_t n)
{
	while (n && (p[n - 1] < 0x20 || p[n - 1] == 0x7f))
		n--;
	if (n)
		g->ascii_last = p[n - 1] < 0x80;
}

/* In a string, libvterm 0.1.4 takes ESC \\ for ST even with a control,
   NUL or DEL between the two, and then copies the string from one byte
   before the start of its write: strncpy reads past the end of the
   output, up to its string buffer's size. So a string's ESC is held back
   until the byte after it: controls pass before it (as they act in the
   string), BEL, NUL and DEL, which do nothing there, are dropped, and
   any other byte goes after it. Returns whether c is taken here. */
static bool held_esc_byte(struct csi_guard *g, uint8_t c, bool *release)
{
	*release = false;
	if (g->st == GUARD_STRING && c == 0x1b) {
		g->st = GUARD_STRING_ESC;
		g->esc_held = true;
		return true;
	}
	if (!g->esc_held)
		return false;
	if (c == 0x07 || c == 0x00 || c == 0x7f)
		return true;
	if (c < 0x20 && c != 0x1b && c != 0x18 && c != 0x1a)
		return false;
	g->esc_held = false;
	*release = true;
	return false;
}

/* What a sequence byte p[i] becomes in out, from p[*from] on: a held ESC
   first when it is released, the guard's change if it makes one.
   Returns whether anything differs from p. */
static bool guard_byte(struct vtguard *v, const uint8_t *p, size_t i, size_t *from,
		       struct buf *out)
{
	bool release, taken = held_esc_byte(&v->csi, p[i], &release);
	enum guard_action a = taken ? GUARD_DROP : guard_seq_byte(v, p[i]);

	if (release && out) {
		buf_append(out, p + *from, i - *from);
		buf_append(out, "\033", 1);
		*from = i;
	}
	if (a == GUARD_KEEP)
		return release;
	if (out) {
		buf_append(out, p + *from, i - *from);
		if (a == GUARD_RESET_MARGINS)
			buf_append(out, "}\033[r", 4);
		else if (a == GUARD_IGNORE)
			buf_append(out, "}", 1);
	}
	*from = i + 1;
	return true;
}

/* One pass of the guard over p: with out NULL it only says whether a
   byte needs a change; with out it writes what libvterm gets. */
static bool guard_pass(struct vtguard *v, const uint8_t *p, size_t n, struct buf *out)
{
	struct csi_guard *g = &v->csi;
	size_t i = 0, from = 0;
	bool changed = false;

	while (i < n) {
		if (g->st == GUARD_GROUND) {
			const uint8_t *e = memchr(p + i, 0x1b, n - i);

			note_last_glyph(g, p + i, e ? (size_t)(e - (p + i)) : n - i);
			if (!e)
				break;
			i = (size_t)(e - p) + 1;
			g->st = GUARD_ESC;
			continue;
		}
		changed |= guard_byte(v, p, i, &from, out);
		i++;
	}
	if (out)
		buf_append(out, p + from, n - from);
	return changed;
}

/* Keeps CSI sequences inside what libvterm 0.1.4 handles: at most 16
   parameters (more overflowed its array) and no DECSTBM region it would
   leave empty or inverted. Returns true with what libvterm gets in out, or
   false when p needs no change (out untouched). */
static bool guard_csi(struct vtguard *v, const uint8_t *p, size_t n, struct buf *out)
{
	struct csi_guard before = v->csi;

	if (!guard_pass(v, p, n, NULL))
		return false;
	v->csi = before;
	guard_pass(v, p, n, out);
	return true;
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
	v->csi.st = GUARD_GROUND;
	v->csi.ascii_last = false;
	v->csi.esc_held = false;
}

/* The UTF-8 sanitizer's part of vtguard_filter: p as is, or its
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

/* The guard reads the cleaned bytes, exactly what libvterm does: a
   character the sanitizer drops inside a CSI sequence (a C1 control as
   UTF-8) would otherwise end the sequence for the guard and not for
   libvterm, whose parameters then overflowed. */
const uint8_t *vtguard_filter(struct vtguard *v, unsigned rows, const uint8_t *p,
			      size_t *n, struct buf *out)
{
	v->rows = rows;
	if (v->csi.st == GUARD_GROUND && !memchr(p, 0x1b, *n)) {
		note_last_glyph(&v->csi, p, *n);
		return p;
	}
	if (!guard_csi(v, p, *n, out))
		return p;
	*n = buf_size(out);
	return buf_head(out);
}
