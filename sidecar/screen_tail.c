/* screen_tail: screen_feed_tail, the feeding of a batch of output that
   leaves out what cannot reach the final screen: whole lines and long
   plain runs that provably scroll off, screens a later full repaint
   covers, and what precedes a RIS (screen_skip_to_reset, in screen.c).
   It finds what to leave out and feeds the rest through screen_feed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "screen.h"
#include "screen_int.h"
#include "xalloc.h"

/* What a byte is to screen_feed_tail: plain bytes only print or move to
   the line start or below, and change nothing else in the terminal. C0
   controls (but CR and LF) and DEL are not plain; 0x80..0x9F is a C1
   control when it follows 0xC2 in UTF-8, and plain as any other
   continuation byte. A table, as this runs over every byte of a flood. */
enum { BYTE_PLAIN, BYTE_CONTROL, BYTE_MAYBE_C1 };
static const uint8_t byte_kind[256] = {
    [0x00 ... 0x09] = BYTE_CONTROL, /* LF (0x0a) is plain */
    [0x0b ... 0x0c] = BYTE_CONTROL, /* CR (0x0d) is plain */
    [0x0e ... 0x1f] = BYTE_CONTROL,  [0x7f] = BYTE_CONTROL,
    [0x80 ... 0x9f] = BYTE_MAYBE_C1,
};

/* Whether p[i] is plain, looking at p[i-1] for the C1 case. */
static bool plain_at(const uint8_t *p, size_t i)
{
	uint8_t k = byte_kind[p[i]];

	return k == BYTE_PLAIN || (k == BYTE_MAYBE_C1 && !(i > 0 && p[i - 1] == 0xc2));
}

/* ---- plain runs: bytes 0x20..0x7E, CR and LF ----

   Inside such a run the terminal only prints one-column glyphs, returns
   and feeds lines, so the cursor can be followed here exactly, without
   libvterm, from a state read off libvterm at the run's start. */

static bool simple_byte(uint8_t b)
{
	return (b >= 0x20 && b < 0x7f) || b == '\r' || b == '\n';
}

/* The scans below run over every byte of a flood, so they test eight
   bytes at a time: whether all of them are printable ASCII (0x20..0x7E).
   A byte below 0x20 sets its top bit when 0x20 is subtracted, 0x7F and up
   when 1 is added, 0x80 and up has it already; a borrow or carry only
   crosses into the next byte from a byte that is flagged itself. */
#define SWAR_ONES  0x0101010101010101ULL
#define SWAR_HIGHS 0x8080808080808080ULL

static uint64_t load8(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static bool printable8(uint64_t x)
{
	return !(((x - SWAR_ONES * 0x20) | (x + SWAR_ONES) | x) & SWAR_HIGHS);
}

/* Sixteen at a time (screen__vbytes): as signed bytes, printable ASCII
   is above 0x1F and below 0x7F, and 0x80 and up is negative. */

static screen__vbytes printable16_mask(const uint8_t *p)
{
	screen__vbytes v;

	memcpy(&v, p, sizeof(v));
	return (v > 0x1f) & (v < 0x7f);
}

static bool all_set(screen__vbytes m)
{
	screen__vwords w = (screen__vwords)m;

	return (w[0] & w[1]) == UINT64_MAX;
}

/* How many of the sixteen bytes at p are printable ASCII before the
   first that is not: the first clear byte of the mask, found in its two
   words (byte 0 is the low end of a word on a little-endian machine). */
static size_t printable16_len(const uint8_t *p)
{
	screen__vwords w = (screen__vwords)printable16_mask(p);

	for (unsigned i = 0; i < 2; i++) {
		uint64_t clear = ~w[i];

		if (!clear)
			continue;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		return 8 * i + (size_t)__builtin_ctzll(clear) / 8;
#else
		return 8 * i + (size_t)__builtin_clzll(clear) / 8;
#endif
	}
	return 16;
}

/* How many bytes from p on are printable ASCII, up to n. A repaint's
   spans are a few cells each, so the first sixteen bytes answer most
   calls; a long run goes on sixty-four at a time. */
static size_t printable_span(const uint8_t *p, size_t n)
{
	size_t k = 0, m;

	while (k + 16 <= n) {
		m = printable16_len(p + k);
		if (m < 16)
			return k + m;
		k += 16;
		while (k + 64 <= n &&
		       all_set(printable16_mask(p + k) & printable16_mask(p + k + 16) &
			       printable16_mask(p + k + 32) &
			       printable16_mask(p + k + 48)))
			k += 64;
	}
	while (k + 8 <= n && printable8(load8(p + k)))
		k += 8;
	while (k < n && p[k] >= 0x20 && p[k] < 0x7f)
		k++;
	return k;
}

/* How many bytes from p on are simple (printable ASCII, CR, LF). */
static size_t simple_span(const uint8_t *p, size_t n)
{
	size_t k = 0;

	for (;;) {
		k += printable_span(p + k, n - k);
		if (k < n && (p[k] == '\r' || p[k] == '\n'))
			k++;
		else
			return k;
	}
}

/* The cursor inside a plain run, as libvterm moves it. `known` is false
   after a line feed met a pending wrap (whether LF cancels it is left
   open): until the next CR no wrap is counted, so advances stay a lower
   bound and no skip point is taken. */
struct run_cursor {
	unsigned col;
	bool pending, known;
	uint64_t advances; /* line feeds and wraps: each moves down or scrolls */
};

struct run_rules {
	unsigned cols;
	bool autowrap, newline;
};

static void run_step(struct run_cursor *c, const struct run_rules *r, uint8_t b)
{
	if (b == '\r') {
		c->col = 0;
		c->pending = false;
		c->known = true;
	} else if (b == '\n') {
		c->advances++;
		if (r->newline) {
			c->col = 0;
			c->pending = false;
			c->known = true;
		} else if (c->pending) {
			c->known = false;
		}
	} else if (c->known) {
		if (c->pending) {
			c->advances++;
			c->col = 0;
			c->pending = false;
		}
		if (c->col + 1 < r->cols)
			c->col++;
		else
			c->pending = r->autowrap;
	}
}

/* run_step over m printable bytes at once (no CR or LF among them). */
static void run_print(struct run_cursor *c, const struct run_rules *r, size_t m)
{
	uint64_t t, w;

	if (!m || !c->known)
		return;
	if (c->pending && r->autowrap) {
		c->advances++;
		c->col = 0;
		c->pending = false;
	}
	if (!r->autowrap) {
		c->col = c->col + m < r->cols ? c->col + (unsigned)m : r->cols - 1;
		c->pending = false;
		return;
	}
	/* From column col, the k-th glyph lands at col + k - 1 counted on an
	   endless line; each full width before the last glyph is a wrap. */
	t = c->col + m;
	w = (t - 1) / r->cols;
	c->advances += w;
	t -= w * r->cols;
	c->pending = t == r->cols;
	c->col = c->pending ? r->cols - 1 : (unsigned)t;
}

/* Printable bytes from p on, up to n, in a run of simple bytes. */
static size_t printable_len(const uint8_t *p, size_t n)
{
	return printable_span(p, n);
}

/* Within the run p[0..n) entered with cursor c0, the latest offset X
   after which at least `need` line advances follow, with the cursor's
   column known and no wrap pending at X; 0 when there is none. */
static size_t run_skip_point(const uint8_t *p, size_t n, const struct run_cursor *c0,
			     const struct run_rules *r, unsigned need,
			     struct run_cursor *at)
{
	struct run_cursor c = *c0, next;
	uint64_t total;
	size_t x = 0, i, k;

	for (i = 0; i < n; i += k) {
		k = printable_len(p + i, n - i);
		run_print(&c, r, k);
		if (!k)
			run_step(&c, r, p[i]), k = 1;
	}
	total = c.advances;
	if (total < need)
		return 0;
	/* Whole stretches while the rest still holds `need` advances, then
	   byte by byte through the stretch where it stops doing so. */
	c = *c0;
	for (i = 0; i < n; i += k) {
		k = printable_len(p + i, n - i);
		next = c;
		if (k)
			run_print(&next, r, k);
		else
			run_step(&next, r, p[i]), k = 1;
		if (total - next.advances < need)
			break;
		c = next;
		if (c.known && !c.pending) {
			x = i + k;
			*at = c;
		}
	}
	if (i < n && k > 1 && c.known && r->autowrap && r->cols > 1 &&
	    total - need > c.advances) {
		/* A stretch of glyphs: its wraps fall every `cols` glyphs from
		   the first; X is just after the last one the budget allows
		   (the glyph lands on column 0, the cursor on column 1). */
		uint64_t budget = total - need - c.advances;
		uint64_t first = c.pending ? 0 : r->cols - c.col;

		at->col = 1;
		at->pending = false;
		at->known = true;
		at->advances = c.advances + budget;
		return i + first + (budget - 1) * r->cols + 1;
	}
	for (; i < n && total - c.advances >= need; i++) {
		run_step(&c, r, p[i]);
		if (total - c.advances >= need && c.known && !c.pending) {
			x = i + 1;
			*at = c;
		}
	}
	return x;
}

static bool scroll_region_is_screen(const struct screen *s)
{
	const struct modes_state *st = modes_state(s->modes);

	return st->top == 0 && (st->bottom == -1 || st->bottom == (int)s->rows) &&
	       !st->lr_margins;
}

/* The two ways to stand in for what is left out of a plain stretch.
   Both need the scroll region to be the whole screen.
   - From the bottom row: when the real cursor is on the bottom row after
     the part left out, the model's is put there too (a CUP); then
     rows + 1 advances scroll every row either could have written off
     the screen.
   - From anywhere: the model's cursor stays on its row; 2 * rows + 1
     advances bring both cursors to the bottom row and then scroll every
     row off.
   Every advance left in costs libvterm a scroll of the whole screen, so
   the first is tried first. Blank lines scroll in with the pen's
   background, which plain text does not change. */
static unsigned need_from_bottom(const struct screen *s)
{
	return s->rows + 1;
}

static unsigned need_from_anywhere(const struct screen *s)
{
	return 2 * s->rows + 1;
}

/* Puts the model's cursor on the bottom row, at column col (0-based). */
static void feed_to_bottom(struct screen *s, unsigned col)
{
	char cup[32];

	snprintf(cup, sizeof(cup), "\033[%u;%uH", s->rows, col + 1);
	screen_feed(s, (const uint8_t *)cup, strlen(cup));
}

/* Within the run p[0..n) that the cursor enters on row row0 (c0, r),
   where to leave out up to: *x (0: nowhere), with the cursor there in
   *at and whether the real one is then on the bottom row. */
static bool run_skip(const struct screen *s, const uint8_t *p, size_t n, unsigned row0,
		     const struct run_cursor *c0, const struct run_rules *r, size_t *x,
		     struct run_cursor *at)
{
	*x = run_skip_point(p, n, c0, r, need_from_bottom(s), at);
	/* Advances are a lower bound of the cursor's moves down. */
	if (*x && row0 + at->advances >= s->rows - 1)
		return true;
	*x = run_skip_point(p, n, c0, r, need_from_anywhere(s), at);
	return false;
}

/* Feeds the run p[0..n) (simple bytes only), leaving out what provably
   scrolls off. When the stand-in for what is left out puts the model's
   cursor where the real one is (the bottom row) and at most max_hold
   bytes of the run follow, those are held back (screen_feed_tail_hold).
   Returns how many; 0 when the run was fed. */
static size_t feed_run(struct screen *s, const uint8_t *p, size_t n, size_t max_hold)
{
	const struct modes_state *ms = modes_state(s->modes);
	struct run_cursor c0 = {.known = true}, at;
	struct run_rules r;
	char move[32];
	VTermPos pos;
	size_t i = 0, x;
	bool bottom;

	/* Finish a sequence whose last bytes look plain ("ESC [ 3 1 m"), and
	   feed one byte more: printed ASCII also ends a split UTF-8
	   character, so libvterm's decoder is clean. */
	while (i < n && i < 256 && !modes_idle(s->modes))
		screen_feed(s, p + i++, 1);
	if (i < n)
		screen_feed(s, p + i++, 1);
	if (!modes_idle(s->modes) || !scroll_region_is_screen(s) || ms->insert ||
	    n - i < (size_t)need_from_bottom(s)) {
		screen_feed(s, p + i, n - i);
		return 0;
	}
	vterm_state_get_cursorpos(s->state, &pos);
	c0.col = (unsigned)pos.col;
	c0.pending = ms->pending_wrap;
	r = (struct run_rules){
	    .cols = s->cols, .autowrap = ms->autowrap, .newline = ms->newline};
	bottom = run_skip(s, p + i, n - i, (unsigned)pos.row, &c0, &r, &x, &at);
	if (!x) {
		screen_feed(s, p + i, n - i);
		return 0;
	}
	/* p[i, i+x) is left out; what is fed instead puts the cursor on the
	   same column with no wrap pending (and on the bottom row when the
	   real one is), which is all the rest of the run depends on. */
	if (bottom) {
		feed_to_bottom(s, at.col);
		if (n - i - x <= max_hold)
			return n - i - x;
	} else {
		if (at.col)
			snprintf(move, sizeof(move), "\r\033[%uC", at.col);
		else
			snprintf(move, sizeof(move), "\r");
		screen_feed(s, (const uint8_t *)move, strlen(move));
	}
	screen_feed(s, p + i + x, n - i - x);
	return 0;
}

/* The latest point X such that p[X-2..X) is CR LF and the plain text
   from X on holds at least `need` line feeds before anything else (a
   sequence after them may change the scroll region or the screen, and
   must find both models alike); 0 when there is none. Unlike a simple
   run this may hold UTF-8 text. */
static size_t skip_point(const uint8_t *p, size_t n, unsigned need)
{
	unsigned lfs = 0;
	const uint8_t *q = p, *end = p + n;

	/* A long line holds no line feed: memchr says so faster than the
	   byte-by-byte walk below. */
	while (lfs < need && (q = memchr(q, '\n', (size_t)(end - q))))
		q++, lfs++;
	if (lfs < need)
		return 0;
	lfs = 0;

	for (size_t i = n; i-- > 1;) {
		if (!plain_at(p, i)) {
			lfs = 0;
			continue;
		}
		if (p[i] != '\n')
			continue;
		if (lfs >= need && p[i - 1] == '\r')
			return i + 1;
		lfs++;
	}
	return 0;
}

/* Where the plain text that ends at x starts; *high gets one past the
   last byte of 0x80 or up in it (the start when there is none). */
static size_t plain_start(const uint8_t *p, size_t x, size_t *high)
{
	size_t start = x;

	*high = 0;
	for (;;) {
		while (start >= 8 && printable8(load8(p + start - 8)))
			start -= 8;
		if (start == 0 || !plain_at(p, start - 1))
			break;
		if (!*high && p[start - 1] >= 0x80)
			*high = start;
		start--;
	}
	if (!*high)
		*high = start;
	return start;
}

/* libvterm 0.1.4 decodes each write of text with one of two UTF-8
   decoders, picked by its first byte (ASCII: the GL set's; else its own),
   and both keep a half-read character from one write to the next: text
   with bytes of 0x80 and up changes what later lines print even when it
   scrolls off. So of the plain text that ends with CR LF at x, only whole
   ASCII lines after the last such byte (high is one past it) are left
   out. */
static size_t ascii_lines_start(const uint8_t *p, size_t high, size_t x)
{
	size_t j = high;

	while (j < x && (j == 0 || p[j - 1] != '\n'))
		j++;
	return j;
}

/* Whether p[0..n) holds at least `least` line feeds. */
static bool holds_lfs(const uint8_t *p, size_t n, unsigned least)
{
	const uint8_t *q = p, *end = p + n;
	unsigned lfs = 0;

	while (lfs < least && (q = memchr(q, '\n', (size_t)(end - q))))
		q++, lfs++;
	return lfs >= least;
}

/* What the model is where feeding stopped (screen_feed_tail_hold holds
   back what follows only after a skip, and not when the row is not
   known: a later batch's stand-ins start from the model's cursor). */
enum tail_at {
	AT_FED,		     /* everything before was fed: the model is exact */
	AT_SKIP,	     /* a stand-in for what was left out: exact but for cells the
				rest writes again or scrolls away */
	AT_SKIP_ROW_UNKNOWN, /* the same, the cursor perhaps on another row */
};

/* The plain lines p[i..x) are left out (p[x-2..x) is CR LF, and the
   plain text from x on holds need_from_bottom line feeds). When they
   bring the real cursor to the bottom row, the model's goes there; else
   X moves back to where need_from_anywhere line feeds follow, and a CR
   stands in for what is left out: then, until those line feeds are fed,
   the model's cursor may be on another row than the real one. Returns
   where feeding stopped, and in *at what the model is there. */
static size_t stand_in_for_lines(struct screen *s, const uint8_t *p, size_t n, size_t i,
				 size_t x, enum tail_at *at)
{
	size_t back;

	*at = AT_FED;
	if (x <= i)
		return x;
	/* From column 0 of the row the model and the terminal share at i. */
	if (holds_lfs(p + i, x - i, s->rows - 1)) {
		feed_to_bottom(s, 0);
		*at = AT_SKIP;
		return x;
	}
	back = skip_point(p, n, need_from_anywhere(s));
	if (back > i) {
		screen_feed(s, (const uint8_t *)"\r", 1);
		*at = AT_SKIP_ROW_UNKNOWN;
		return back;
	}
	screen_feed(s, p + i, x - i);
	return x;
}

/* Feeds p[0..n) up to a point X (see skip_point) after which plain lines
   scroll every row away, and a stand-in for what lies before it. Returns
   where feeding stopped, or 0 when nothing was fed, and in *at what the
   model is there. */
static size_t feed_to_line_skip(struct screen *s, const uint8_t *p, size_t n,
				enum tail_at *at)
{
	size_t x = skip_point(p, n, need_from_bottom(s)), start, i, k, high;

	*at = AT_FED;
	if (!x)
		return 0;
	start = plain_start(p, x, &high);
	if (high > start)
		start = ascii_lines_start(p, high, x);
	screen_feed(s, p, start);
	/* Finish a sequence whose last bytes look plain ("ESC [ 3 1 m"). */
	for (i = start; i < x && i - start < 256 && !modes_idle(s->modes); i++)
		screen_feed(s, p + i, 1);
	if (!modes_idle(s->modes) || !scroll_region_is_screen(s)) {
		screen_feed(s, p + i, x - i);
		return x;
	}
	/* The first glyph left out would end a character half read by the
	   decoder of ASCII writes: it is fed, up to it. */
	for (k = i; k < x && (p[k] == '\r' || p[k] == '\n'); k++)
		;
	if (k < x) {
		screen_feed(s, p + i, k + 1 - i);
		i = k + 1;
	}
	/* Every row p[i..x) could have written scrolls off in the plain text
	   after x: it starts at column 0 after CR LF and holds the line feeds
	   before any sequence can change the scroll region. */
	return stand_in_for_lines(s, p, n, i, x, at);
}

/* ---- skipping redrawn screens (screen_feed_tail) ----

   A full-screen program repaints with cursor addressing, colours and
   text. Within a stretch made of nothing else (the "redraw language":
   printable ASCII, CUP/HVP with at most two parameters, SGR with digits
   and semicolons only), the cells are all a repaint changes beyond the
   cursor, the pending wrap and the pen, as long as no glyph wraps: no
   line feed, no scroll, no mode, charset or line attribute changes. So
   when the tail of such a stretch, from a CUP on, writes every cell of
   the screen, what comes before that CUP is left out, except its SGRs
   from the last one that starts with a reset (parameter 0 or none),
   which rebuild the pen exactly; the CUP then puts the cursor where it
   would be, with no wrap pending. */

enum redraw_kind { RD_NONE, RD_GLYPHS, RD_CUP, RD_SGR };

struct redraw_tok {
	uint32_t off, len; /* from the stretch's first CUP */
	uint16_t row, col; /* cursor before the token (glyphs), after it (CUP) */
	uint8_t kind;
	bool reset; /* an SGR whose first parameter resets the pen */
};

/* Parameters longer than this are not in the redraw language: libvterm
   keeps them in a long, the simulation in an unsigned. */
#define REDRAW_DIGITS_MAX 5
#define REDRAW_CSI_MAX	  64
/* Stretches shorter than this are fed as they are. */
#define REDRAW_MIN (16 * 1024)

/* A CSI's kind in the redraw language, from its final byte, how many
   parameters it has and whether the first is 0 (or missing). */
static enum redraw_kind redraw_csi_kind(uint8_t final, unsigned params, bool first_zero,
					bool *reset)
{
	if ((final == 'H' || final == 'f') && params <= 2)
		return RD_CUP;
	if (final == 'm') {
		*reset = first_zero;
		return RD_SGR;
	}
	return RD_NONE;
}

/* Ends a CSI parameter of `digits` digits and value v (meaningless past
   REDRAW_DIGITS_MAX digits): the first two are kept. False when it is
   too long for the redraw language. */
static bool redraw_param(unsigned arg[2], unsigned *params, unsigned v, size_t digits)
{
	if (digits > REDRAW_DIGITS_MAX)
		return false;
	if (*params < 2)
		arg[*params] = v;
	(*params)++;
	return true;
}

/* The CSI at p (ESC [ read, arg zeroed), a byte at a time: any length up
   to REDRAW_CSI_MAX and the end of p[0..n). */
static enum redraw_kind redraw_csi_bytes(const uint8_t *p, size_t n, size_t *len,
					 unsigned arg[2], bool *reset)
{
	size_t lim = n < REDRAW_CSI_MAX ? n : REDRAW_CSI_MAX, i, from = 2;
	unsigned params = 0, v = 0;

	for (i = 2; i < lim; i++) {
		unsigned d = (unsigned)p[i] - '0';

		if (d < 10) {
			v = v * 10 + d;
			continue;
		}
		if (p[i] != ';')
			break;
		if (!redraw_param(arg, &params, v, i - from))
			return RD_NONE;
		v = 0;
		from = i + 1;
	}
	if (i >= lim || !redraw_param(arg, &params, v, i - from))
		return RD_NONE;
	*len = i + 1;
	return redraw_csi_kind(p[i], params, arg[0] == 0, reset);
}

#if defined(__SSE2__)
/* The value of the k decimal digits at p. */
static unsigned redraw_digits(const uint8_t *p, unsigned k)
{
	unsigned v = 0;

	for (unsigned i = 0; i < k; i++)
		v = v * 10 + (unsigned)(p[i] - '0');
	return v;
}

/* The 32 bytes at p as bit masks (bit i for byte i): digits, `;`s and
   `0`s. */
static void redraw_classify32(const uint8_t *p, uint32_t *digits, uint32_t *semis,
			      uint32_t *zeros)
{
	*digits = *semis = *zeros = 0;
	for (unsigned h = 0; h < 2; h++) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * h));
		__m128i dig = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
					    _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));

		*digits |= (uint32_t)_mm_movemask_epi8(dig) << (16 * h);
		*semis |=
		    (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(';')))
		    << (16 * h);
		*zeros |=
		    (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('0')))
		    << (16 * h);
	}
}

/* The CSI at p (ESC [ read, arg zeroed, p[0..35) readable) when its
   parameters end within the 32 bytes after ESC [: their digits, `;`s
   and zeros as bit masks, so a repaint's SGRs cost no branch per byte
   (the byte loop mispredicted at most of their digit-to-`;` turns).
   False for a longer CSI, which the byte loop takes. */
static bool redraw_csi32(const uint8_t *p, size_t *len, unsigned arg[2], bool *reset,
			 enum redraw_kind *kind)
{
	uint32_t d, s, z, in, zfirst;
	unsigned used, first, params;
	uint8_t final;

	redraw_classify32(p + 2, &d, &s, &z);
	if ((d | s) == UINT32_MAX)
		return false;
	used = (unsigned)__builtin_ctz(~(d | s)); /* parameter bytes */
	in = (1u << used) - 1;
	d &= in;
	s &= in;
	*len = used + 3;
	/* Six digits in a row: a parameter too long. */
	_Static_assert(REDRAW_DIGITS_MAX == 5, "six digits: five shifts");
	if (d & d >> 1 & d >> 2 & d >> 3 & d >> 4 & d >> 5) {
		*kind = RD_NONE;
		return true;
	}
	/* Only whether there are two at most matters (a CUP's row and
	   column), so 3 stands for any more. A popcount here was a libgcc
	   call per CSI, 3% of the sidecar's CPU on a TUI loop: the baseline
	   x86-64 has no POPCNT instruction. */
	params = s == 0 ? 1 : (s & (s - 1)) == 0 ? 2 : 3;
	first = (unsigned)__builtin_ctz(s | (1u << used)); /* digits of the first */
	final = p[2 + used];
	if (final != 'm' && params <= 2) {
		arg[0] = redraw_digits(p + 2, first);
		if (params == 2)
			arg[1] = redraw_digits(p + 3 + first, used - first - 1);
	}
	/* The first parameter is 0 when all its digits are zeros. */
	zfirst = (1u << first) - 1;
	*kind = redraw_csi_kind(final, params, (z & zfirst) == zfirst, reset);
	return true;
}
#endif

/* The redraw-language token at p[0..n): its kind and length; a CUP's
   parameters (0 when missing) and whether an SGR resets the pen. RD_NONE
   for anything else, or a token that n cuts. */
static enum redraw_kind redraw_lex(const uint8_t *p, size_t n, size_t *len,
				   unsigned arg[2], bool *reset)
{
	if (p[0] >= 0x20 && p[0] < 0x7f) {
		*len = printable_span(p, n);
		return RD_GLYPHS;
	}
	if (p[0] != 0x1b || n < 3 || p[1] != '[')
		return RD_NONE;
	arg[0] = arg[1] = 0;
#if defined(__SSE2__)
	{
		enum redraw_kind kind;

		if (n >= 2 + 32 + 1 && redraw_csi32(p, len, arg, reset, &kind))
			return kind;
	}
#endif
	return redraw_csi_bytes(p, n, len, arg, reset);
}

/* The length of what is not in the redraw language at p (n > 0): a whole
   CSI sequence, ESC and the next byte, or one byte; only where the next
   stretch may start matters. */
static size_t redraw_other_len(const uint8_t *p, size_t n)
{
	size_t i;

	if (p[0] != 0x1b || n < 2)
		return 1;
	if (p[1] != '[')
		return 2;
	for (i = 2; i < n && i < REDRAW_CSI_MAX; i++)
		if (p[i] >= 0x40 && p[i] <= 0x7e)
			return i + 1;
	return i;
}

/* Whether the terminal's state lets a redraw be followed without
   libvterm: nothing half parsed, absolute addressing, no insert mode, no
   side margins, no double-width or double-height line. */
static bool redraw_state_ok(struct screen *s)
{
	const struct modes_state *m = modes_state(s->modes);

	if (!modes_idle(s->modes) || m->origin || m->insert || m->lr_margins ||
	    s->guard.u8_len)
		return false;
	for (unsigned r = 0; r < s->rows; r++) {
		const VTermLineInfo *li = vterm_state_get_lineinfo(s->state, (int)r);

		if (li && (li->doublewidth || li->doubleheight))
			return false;
	}
	return true;
}

static unsigned clamp_arg(unsigned v, unsigned max)
{
	v = v ? v : 1;
	return (v < max ? v : max) - 1;
}

static void toks_push(struct redraw_toks *ts, const struct redraw_tok *t)
{
	if (ts->count == ts->cap) {
		ts->cap = ts->cap ? 2 * ts->cap : 4096;
		ts->v = xrealloc(ts->v, ts->cap * sizeof(*ts->v));
	}
	ts->v[ts->count++] = *t;
}

/* Follows the cursor through p[0..n), which starts with a CUP, recording
   the tokens in toks; stops at anything outside the redraw language and
   before a glyph that would wrap with auto-wrap on. Auto-wrap is assumed
   on, as the state at p is not known yet: with it off, the glyphs that
   stop the walk would overwrite the last column instead, and no cell
   before them lands elsewhere. Returns where it stopped (> 0). */
static size_t redraw_walk(const struct screen *s, const uint8_t *p, size_t n,
			  struct redraw_toks *toks)
{
	unsigned row = 0, col = 0, arg[2];
	bool pending = false;
	size_t i, len;

	for (i = 0; i < n && i < UINT32_MAX - REDRAW_CSI_MAX; i += len) {
		struct redraw_tok t = {.off = (uint32_t)i};
		bool reset = false;

		t.kind = (uint8_t)redraw_lex(p + i, n - i, &len, arg, &reset);
		if (t.kind == RD_NONE)
			break;
		t.len = (uint32_t)len;
		if (t.kind == RD_CUP) {
			row = clamp_arg(arg[0], s->rows);
			col = clamp_arg(arg[1], s->cols);
			pending = false;
		} else if (t.kind == RD_SGR) {
			t.reset = reset;
		}
		/* Glyphs: where they start; a CUP: where it goes. */
		t.row = (uint16_t)row;
		t.col = (uint16_t)col;
		if (t.kind == RD_GLYPHS) {
			if (pending || col + len > s->cols)
				break;
			if (col + len < s->cols) {
				col += (unsigned)len;
			} else {
				col = s->cols - 1;
				pending = true;
			}
		}
		toks_push(toks, &t);
	}
	return i;
}

/* The index of the glyph token after which (inclusive) every cell is
   written again, counting back from the last token; -1 when some cell
   is not. */
static long redraw_cover(const struct screen *s, const struct redraw_tok *t, size_t count)
{
	size_t cells = (size_t)s->rows * s->cols, covered = 0;
	uint8_t *seen = xcalloc(cells, 1);
	long found = -1;

	for (size_t k = count; k-- > 0 && found < 0;) {
		if (t[k].kind != RD_GLYPHS)
			continue;
		unsigned last = t[k].col + t[k].len - 1 < s->cols
				    ? t[k].col + t[k].len - 1
				    : s->cols - 1;
		uint8_t *row = seen + (size_t)t[k].row * s->cols;

		for (unsigned c = t[k].col; c <= last; c++)
			if (!row[c]) {
				row[c] = 1;
				if (++covered == cells)
					found = (long)k;
			}
	}
	free(seen);
	return found;
}

/* The walked stretch at p (tokens t[0..count)), all that is before it
   fed. Feeds what of it rebuilds the pen and returns how much of it is
   left out: up to the last CUP before which nothing reaches the final
   screen (0: nothing is). */
static size_t redraw_skip(struct screen *s, const uint8_t *p, const struct redraw_tok *t,
			  size_t count)
{
	struct buf pen = BUF_INIT;
	long k = count ? redraw_cover(s, t, count) : -1, r;
	size_t x = 0;

	while (k > 0 && t[k].kind != RD_CUP)
		k--;
	if (k > 0 && t[k].off >= REDRAW_MIN / 4) {
		for (r = k; r > 0 && !(t[r].kind == RD_SGR && t[r].reset); r--)
			;
		for (; r < k; r++)
			if (t[r].kind == RD_SGR)
				buf_append(&pen, p + t[r].off, t[r].len);
		screen_feed(s, buf_head(&pen), buf_size(&pen));
		x = t[k].off;
	}
	buf_free(&pen);
	return x;
}

/* Feeds p[start..n) up to the end of the last redraw it could leave out,
   leaving out what it can; returns where feeding stopped. */
static size_t feed_redraws(struct screen *s, const uint8_t *p, size_t start, size_t n,
			   enum tail_at *at)
{
	struct redraw_toks *toks = &s->toks;
	size_t i = start, a, e, len, glyph, skipped;
	unsigned arg[2];
	bool reset;

	while (i < n) {
		enum redraw_kind kind = RD_NONE;

		/* A stretch: from its first glyphs on, fed as they are (a single
		   shift or a split UTF-8 character before it acts on them), up to
		   the first CUP after them, where the walk starts. */
		for (a = i, glyph = SIZE_MAX; i < n; i += len) {
			kind = redraw_lex(p + i, n - i, &len, arg, &reset);
			if (kind == RD_NONE || (kind == RD_CUP && glyph != SIZE_MAX))
				break;
			if (kind == RD_GLYPHS && glyph == SIZE_MAX)
				glyph = i;
		}
		if (kind != RD_CUP || glyph == SIZE_MAX) {
			i = i < n ? i + redraw_other_len(p + i, n - i) : n;
			continue;
		}
		toks->count = 0;
		e = i + redraw_walk(s, p + i, n - i, toks);
		if (e - a >= REDRAW_MIN && e - i >= (size_t)s->rows * s->cols) {
			screen_feed(s, p + start, i - start);
			start = i;
			*at = AT_FED;
			skipped = redraw_state_ok(s)
				      ? redraw_skip(s, p + i, toks->v, toks->count)
				      : 0;
			if (skipped) {
				start += skipped;
				*at = AT_SKIP;
			}
		}
		i = e; /* a token the walk stopped at starts the next stretch */
	}
	return start;
}

/* ---- restarting from a hard reset (screen_feed_tail) ----

   Random bytes hold a RIS (ESC c) every 64 KiB or so, and libvterm spends
   most of its time on them scrolling and erasing. What precedes a RIS
   reaches the final screen only through what RIS leaves alone, which
   modes_find_reset rules out; then a fresh libvterm fed RIS ends up as
   the one fed everything would. */

/* screen_feed_tail, holding back the unfed end of p[0..n) instead of
   feeding it when it is at most max_hold bytes and follows a skip: a
   later batch can then leave it out too. Returns the bytes held. */
static size_t feed_tail(struct screen *s, const uint8_t *p, size_t n, size_t max_hold)
{
	unsigned need = 2 * s->rows + 1;
	size_t start, a, e, x, held, suffix = 0;
	enum tail_at at;

	s->changes++;
	/* A hard reset first: nothing before it needs feeding. */
	x = screen_skip_to_reset(s, p, n);
	p += x;
	n -= x;

	/* Whole lines, UTF-8 included, that scroll off first; then long
	   ASCII runs, wrapped or not, within what is left. */
	start = feed_to_line_skip(s, p, n, &at);
	/* Screens that a later full repaint covers. */
	start = feed_redraws(s, p, start, n, &at);
	/* What follows a skip (a restart, a stand-in) is what a later batch
	   may leave out too. */
	if (n - start <= max_hold && (at == AT_SKIP || (x && at == AT_FED)))
		return n - start;
	/* After a restart nothing else was fed, so the model will be exact
	   wherever feeding stops: the last max_hold bytes wait for the next
	   batch, whose later RIS may leave them out (random bytes). */
	if (x && !start && max_hold) {
		suffix = max_hold;
		n -= max_hold;
		max_hold = 0;
	}

	/* Long plain runs go through feed_run; everything else, as is. A run
	   shorter than `need` columns' worth could not scroll the screen. */
	for (a = start; a < n; a = e) {
		while (a < n && !simple_byte(p[a]))
			a++;
		e = a + simple_span(p + a, n - a);
		if (e - a < (size_t)need * 2 || e - a < 4096)
			continue;
		/* libvterm judges a broken UTF-8 character differently when its
		   lead byte ends one write: the first ASCII byte stays with it. */
		if (a > 0 && p[a - 1] >= 0x80)
			a++;
		screen_feed(s, p + start, a - start);
		/* What follows the run is held with the run's end, or not at all. */
		held =
		    feed_run(s, p + a, e - a, n - e <= max_hold ? max_hold - (n - e) : 0);
		if (held)
			return held + (n - e);
		start = e;
	}
	screen_feed(s, p + start, n - start);
	return suffix;
}

void screen_feed_tail(struct screen *s, const uint8_t *p, size_t n)
{
	feed_tail(s, p, n, 0);
}

size_t screen_feed_tail_hold(struct screen *s, const uint8_t *p, size_t n,
			     size_t max_hold)
{
	return feed_tail(s, p, n, max_hold);
}

void screen_feed_carried(struct screen *s, struct buf *carry, const uint8_t *p, size_t n,
			 size_t max_hold)
{
	size_t held;

	if (!buf_size(carry)) {
		held = feed_tail(s, p, n, max_hold);
		buf_append(carry, p + n - held, held);
		return;
	}
	buf_append(carry, p, n);
	held = feed_tail(s, buf_head(carry), buf_size(carry), max_hold);
	buf_consume(carry, buf_size(carry) - held);
}
