/* screen_snapshot: the vt100-screen-state-v1 encoder (docs/protocol.md,
   "The Keyframe's snapshot"): the screen model of screen.c written as the
   bytes that make a freshly reset terminal B show the same thing, each
   cell's pen as the shortest change from the pen B already has. */
#include <stdio.h>
#include <string.h>

#include "screen.h"
#include "screen_int.h"
#include "xalloc.h"

/* The right half of a wide character, as libvterm 0.1.4 reports it. */
#define WIDE_TAIL ((uint32_t)-1)

/* What the encoder has made of terminal B so far. */
struct enc {
	struct buf *out;
	VTermScreenCell pen; /* B's current pen */
	int row, col;	     /* B's cursor, row -1 when unknown */
};

/* Default colours are equal whatever RGB value the palette gives them. */
static bool color_eq(const VTermColor *a, const VTermColor *b)
{
	if ((a->type & VTERM_COLOR_DEFAULT_MASK) != (b->type & VTERM_COLOR_DEFAULT_MASK))
		return false;
	if (a->type & VTERM_COLOR_DEFAULT_MASK)
		return true;
	if (a->type != b->type)
		return false;
	if (VTERM_COLOR_IS_INDEXED(a))
		return a->indexed.idx == b->indexed.idx;
	return a->rgb.red == b->rgb.red && a->rgb.green == b->rgb.green &&
	       a->rgb.blue == b->rgb.blue;
}

static bool attrs_eq(const VTermScreenCell *a, const VTermScreenCell *b)
{
	const VTermScreenCellAttrs *x = &a->attrs, *y = &b->attrs;

	return x->bold == y->bold && x->underline == y->underline &&
	       x->italic == y->italic && x->blink == y->blink &&
	       x->reverse == y->reverse && x->strike == y->strike && x->font == y->font &&
	       color_eq(&a->fg, &b->fg) && color_eq(&a->bg, &b->bg);
}

static bool attrs_default(const VTermScreenCell *c)
{
	const VTermScreenCellAttrs *x = &c->attrs;

	return !x->bold && !x->underline && !x->italic && !x->blink && !x->reverse &&
	       !x->strike && !x->font && VTERM_COLOR_IS_DEFAULT_FG(&c->fg) &&
	       VTERM_COLOR_IS_DEFAULT_BG(&c->bg);
}

/* SGR parameters being put together, each with a leading ';', in b[0,
   SGR_MAX). The longest (every attribute, two RGB colours) is about 60
   bytes. */
#define SGR_MAX 128
struct sgr {
	char *b;
	size_t n;
};

static void sgr_put(struct sgr *g, const char *s, size_t k)
{
	memcpy(g->b + g->n, s, k);
	g->n += k;
}

/* A literal's length is known at compile time. */
#define sgr_str(g, lit) sgr_put((g), (lit), sizeof(lit) - 1)

/* ";n", by hand: this runs for every pen change of a snapshot, and
   parameters are below 1000 (colours up to 255, codes up to 107). */
static void sgr_num(struct sgr *g, unsigned n)
{
	char *p = g->b + g->n;

	*p++ = ';';
	if (n >= 1000)
		n = 999; /* not reached: no SGR parameter is this large */
	if (n >= 100) {
		*p++ = (char)('0' + n / 100);
		n %= 100;
		*p++ = (char)('0' + n / 10);
	} else if (n >= 10) {
		*p++ = (char)('0' + n / 10);
	}
	*p++ = (char)('0' + n % 10);
	g->n = (size_t)(p - g->b);
}

/* base is 30 for foreground, 40 for background. */
static void sgr_color(struct sgr *g, const VTermColor *c, unsigned base)
{
	if (VTERM_COLOR_IS_DEFAULT_FG(c) || VTERM_COLOR_IS_DEFAULT_BG(c)) {
		sgr_num(g, base + 9);
		return;
	}
	if (VTERM_COLOR_IS_INDEXED(c)) {
		unsigned i = c->indexed.idx;

		if (i < 16) {
			sgr_num(g, i < 8 ? base + i : base + 60 + i - 8);
			return;
		}
		sgr_num(g, base + 8);
		sgr_num(g, 5);
		sgr_num(g, i);
		return;
	}
	sgr_num(g, base + 8);
	sgr_num(g, 2);
	sgr_num(g, c->rgb.red);
	sgr_num(g, c->rgb.green);
	sgr_num(g, c->rgb.blue);
}

static const struct {
	const char *s;
	size_t n;
} UNDERLINE_ON[] = {{"", 0}, {";4", 2}, {";21", 3}, {";4:3", 4}};

/* p's pen from a clean slate: "0" and what p has on (";0..." in g, or
   ";" alone for the reset alone). */
static void sgr_full(struct sgr *g, const VTermScreenCell *p)
{
	const VTermScreenCellAttrs *a = &p->attrs;

	sgr_str(g, ";0");
	if (a->bold)
		sgr_str(g, ";1");
	if (a->italic)
		sgr_str(g, ";3");
	sgr_put(g, UNDERLINE_ON[a->underline & 3].s, UNDERLINE_ON[a->underline & 3].n);
	if (a->blink)
		sgr_str(g, ";5");
	if (a->reverse)
		sgr_str(g, ";7");
	if (a->strike)
		sgr_str(g, ";9");
	if (a->font)
		sgr_num(g, 10 + (unsigned)a->font);
	if (!VTERM_COLOR_IS_DEFAULT_FG(&p->fg))
		sgr_color(g, &p->fg, 30);
	if (!VTERM_COLOR_IS_DEFAULT_BG(&p->bg))
		sgr_color(g, &p->bg, 40);
	/* A reset alone is "ESC [ m": an empty parameter is 0. */
	if (g->n == 2)
		g->n = 1;
}

/* p's pen from the pen `from`: only what differs, each attribute turned
   off by its own code (22 bold, 23 italic, 24 underline, 25 blink, 27
   reverse, 29 strike, 10 font, 39/49 default colours). */
static void sgr_delta(struct sgr *g, const VTermScreenCell *from,
		      const VTermScreenCell *p)
{
	const VTermScreenCellAttrs *a = &p->attrs, *f = &from->attrs;

	if (a->bold != f->bold)
		sgr_num(g, a->bold ? 1 : 22);
	if (a->italic != f->italic)
		sgr_num(g, a->italic ? 3 : 23);
	if (a->underline != f->underline && a->underline)
		sgr_put(g, UNDERLINE_ON[a->underline & 3].s,
			UNDERLINE_ON[a->underline & 3].n);
	else if (a->underline != f->underline)
		sgr_str(g, ";24");
	if (a->blink != f->blink)
		sgr_num(g, a->blink ? 5 : 25);
	if (a->reverse != f->reverse)
		sgr_num(g, a->reverse ? 7 : 27);
	if (a->strike != f->strike)
		sgr_num(g, a->strike ? 9 : 29);
	if (a->font != f->font)
		sgr_num(g, 10 + (unsigned)a->font);
	if (!color_eq(&from->fg, &p->fg))
		sgr_color(g, &p->fg, 30);
	if (!color_eq(&from->bg, &p->bg))
		sgr_color(g, &p->bg, 40);
}

static bool switches_off(const VTermScreenCell *from, const VTermScreenCell *p)
{
	const VTermScreenCellAttrs *a = &p->attrs, *f = &from->attrs;

	return (f->bold && !a->bold) || (f->italic && !a->italic) ||
	       (f->underline && !a->underline) || (f->blink && !a->blink) ||
	       (f->reverse && !a->reverse) || (f->strike && !a->strike) ||
	       (f->font && !a->font) ||
	       (!VTERM_COLOR_IS_DEFAULT_FG(&from->fg) &&
		VTERM_COLOR_IS_DEFAULT_FG(&p->fg)) ||
	       (!VTERM_COLOR_IS_DEFAULT_BG(&from->bg) &&
		VTERM_COLOR_IS_DEFAULT_BG(&p->bg));
}

/* Sets B's pen to p's attributes and colours: the shorter of the change
   from B's current pen and a reset with p's pen, so a screen with a new
   colour in every cell costs one colour per cell. */
static void set_pen(struct enc *e, const VTermScreenCell *p)
{
	char room[SGR_MAX]; /* not zeroed: this runs for every cell */
	struct sgr full = {room, 0}, delta;
	char *d;

	if (attrs_eq(&e->pen, p))
		return;
	/* The delta is put together in place, one byte into the output: its
	   leading ';' becomes the '[' after ESC, so the common case copies
	   nothing. */
	d = (char *)buf_reserve(e->out, SGR_MAX + 2);
	delta = (struct sgr){d + 1, 0};
	sgr_delta(&delta, &e->pen, p);
	/* With nothing switched off, the delta is a part of the reset's
	   parameters and never longer. */
	if (switches_off(&e->pen, p)) {
		sgr_full(&full, p);
		if (full.n < delta.n) {
			memcpy(delta.b, full.b, full.n);
			delta.n = full.n;
		}
	}
	d[0] = '\033';
	d[1] = '[';
	d[delta.n + 1] = 'm';
	buf_commit(e->out, delta.n + 2);
	e->pen = *p;
}

static void put_utf8(struct buf *out, uint32_t cp)
{
	uint8_t *d = buf_reserve(out, 4);
	size_t n;

	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp < 0x20)
		cp = 0xfffd;
	if (cp < 0x80) {
		d[0] = (uint8_t)cp;
		n = 1;
	} else if (cp < 0x800) {
		d[0] = (uint8_t)(0xc0 | cp >> 6);
		d[1] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		d[0] = (uint8_t)(0xe0 | cp >> 12);
		d[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		d[2] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		d[0] = (uint8_t)(0xf0 | cp >> 18);
		d[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
		d[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		d[3] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 4;
	}
	buf_commit(out, n);
}

/* Writes n's digits at p; returns the end. */
static char *put_digits(char *p, unsigned n)
{
	char t[10];
	int k = 0;

	do
		t[k++] = (char)('0' + n % 10);
	while (n /= 10);
	while (k)
		*p++ = t[--k];
	return p;
}

/* "ESC [ a ; b final" with the defaults left out: a when it is 1, b
   (and its ';') when it is 0 or 1 (for CUP, CUF and ECH, 1 is the
   default). By hand, not printf: a screen of short runs moves and erases
   often. */
static void put_csi(struct buf *out, unsigned a, unsigned b, char final)
{
	char *d = (char *)buf_reserve(out, 32), *p = d;

	*p++ = '\033';
	*p++ = '[';
	if (a != 1)
		p = put_digits(p, a);
	if (b > 1) {
		*p++ = ';';
		p = put_digits(p, b);
	}
	*p++ = final;
	buf_commit(out, (size_t)(p - d));
}

/* Moves B's cursor (absolute, origin mode off) as cheaply as it can. */
static void move_to(struct enc *e, int row, int col)
{
	if (e->row == row && e->col == col)
		return;
	if (e->row == row && col > e->col)
		put_csi(e->out, (unsigned)(col - e->col), 0, 'C');
	else
		put_csi(e->out, (unsigned)row + 1, (unsigned)col + 1, 'H');
	e->row = row;
	e->col = col;
}

/* Writes one cell's characters; B's cursor advances past them. */
static void put_cell(struct enc *e, const VTermScreenCell *c, int cols)
{
	for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && c->chars[i]; i++)
		put_utf8(e->out, c->chars[i]);
	e->col += c->width > 0 ? c->width : 1;
	if (e->col >= cols)
		e->row = -1; /* pending wrap: the next move must be absolute */
}

/* A source of cells: the live screen or a saved copy. */
struct grid {
	const VTermScreen *vs;
	const struct saved_screen *saved;
	int cols, rows;
	bool unreverse; /* libvterm shows DECSCNM by flipping every cell */
};

static void grid_cell(const struct grid *g, int row, int col, VTermScreenCell *c)
{
	if (g->saved)
		*c = g->saved->cells[row * g->cols + col];
	else
		vterm_screen_get_cell(g->vs, (VTermPos){.row = row, .col = col}, c);
	if (g->unreverse)
		c->attrs.reverse = !c->attrs.reverse;
}

/* Writes a row: glyphs as text, blank cells with attributes by ECH (which
   gives them B's pen without moving), default blank cells not at all. */
static void write_row(struct enc *e, const struct grid *g, int row)
{
	VTermScreenCell c, next;
	int col = 0;

	while (col < g->cols) {
		grid_cell(g, row, col, &c);
		if (c.chars[0] == WIDE_TAIL || (!c.chars[0] && attrs_default(&c))) {
			col++;
			continue;
		}
		move_to(e, row, col);
		set_pen(e, &c);
		if (c.chars[0]) {
			put_cell(e, &c, g->cols);
			col += c.width > 0 ? c.width : 1;
			continue;
		}
		int n = 1;
		while (col + n < g->cols) {
			grid_cell(g, row, col + n, &next);
			if (next.chars[0] || !attrs_eq(&next, &c))
				break;
			n++;
		}
		put_csi(e->out, (unsigned)n, 0, 'X');
		col += n;
	}
}

static void write_grid(struct enc *e, const struct grid *g)
{
	for (int row = 0; row < g->rows; row++)
		write_row(e, g, row);
}

/* The caches for g's shape, every row stale when the shape is new. */
static struct row_cache *row_caches_for(struct row_caches *rc, const struct grid *g)
{
	if (rc->v && rc->rows == (unsigned)g->rows && rc->cols == (unsigned)g->cols &&
	    rc->unreverse == g->unreverse)
		return rc->v;
	screen__row_caches_free(rc);
	rc->v = xcalloc((size_t)g->rows, sizeof(*rc->v));
	rc->rows = (unsigned)g->rows;
	rc->cols = (unsigned)g->cols;
	rc->unreverse = g->unreverse;
	return rc->v;
}

/* Where the encoder stands, as far as the row's bytes depend on it. */
static int col_on_row(const struct enc *e, int row)
{
	return e->row == row ? e->col : -1;
}

/* A row that wrote nothing left the encoder as it was, so its (empty)
   bytes hold whatever it entered with. */
static bool row_reusable(const struct row_cache *c, const struct enc *e, int row)
{
	return c->valid && (!buf_size(&c->bytes) || (attrs_eq(&c->pen_in, &e->pen) &&
						     c->col_in == col_on_row(e, row)));
}

static void write_row_cached(struct enc *e, const struct grid *g, int row,
			     struct row_caches *rc, struct row_cache *c)
{
	size_t start = buf_size(e->out);

	if (row_reusable(c, e, row)) {
		buf_append(e->out, buf_head(&c->bytes), buf_size(&c->bytes));
		if (buf_size(&c->bytes)) {
			e->pen = c->pen_out;
			e->row = c->row_out;
			e->col = c->col_out;
		}
		return;
	}
	c->pen_in = e->pen;
	c->col_in = col_on_row(e, row);
	write_row(e, g, row);
	rc->encoded++;
	buf_reset(&c->bytes);
	buf_append(&c->bytes, buf_head(e->out) + start, buf_size(e->out) - start);
	c->pen_out = e->pen;
	c->row_out = e->row;
	c->col_out = e->col;
	c->valid = true;
}

/* The live screen's grid, each row from its cache while libvterm has not
   damaged it (rc NULL: from every cell). */
static void write_live_grid(struct enc *e, const struct grid *g, struct row_caches *rc)
{
	struct row_cache *v;

	if (!rc) {
		write_grid(e, g);
		return;
	}
	v = row_caches_for(rc, g);
	for (int row = 0; row < g->rows; row++)
		write_row_cached(e, g, row, rc, &v[row]);
}

/* The normal screen under the alternate one, then the switch. */
static void write_normal_under_alt(const struct screen *s, struct enc *e)
{
	const struct saved_screen *n = screen__normal(s);

	if (n) {
		struct grid g = {.saved = n, .cols = (int)n->cols, .rows = (int)n->rows};

		write_grid(e, &g);
		move_to(e, n->cursor.row, n->cursor.col);
		set_pen(e, &n->pen);
	}
	buf_appendf(e->out, "\033[?%uh", screen_modes(s)->alt_variant);
	e->row = -1; /* ?1049h may have moved it (xterm homes on 1047) */
	/* Entering erased the alternate screen with the saved pen; start its
	   cells from a default one. */
	if (!attrs_default(&e->pen)) {
		buf_append_str(e->out, "\033[m\033[2J");
		screen__blank_cell(&e->pen);
	}
}

/* Scroll region, margins and origin mode: all of them home B's cursor. */
static void write_region(const struct screen *s, struct enc *e)
{
	const struct modes_state *m = screen_modes(s);
	unsigned cols, rows;

	screen_size(s, &cols, &rows);

	if (m->top != 0 || m->bottom != -1)
		buf_appendf(e->out, "\033[%d;%dr", m->top + 1,
			    m->bottom == -1 ? (int)rows : m->bottom);
	if (m->lr_margins) {
		buf_append_str(e->out, "\033[?69h");
		if (m->left != 0 || m->right != -1)
			buf_appendf(e->out, "\033[%d;%ds", m->left + 1,
				    m->right == -1 ? (int)cols : m->right);
	}
	if (m->origin)
		buf_append_str(e->out, "\033[?6h");
	e->row = -1;
}

/* Puts B's cursor in place; a pending wrap is restored by writing the
   glyph under the cursor again, which leaves it pending exactly so. */
static void write_cursor(const struct screen *s, struct enc *e)
{
	const struct modes_state *m = screen_modes(s);
	unsigned cols, rows;
	VTermScreenCell c;
	VTermPos pos;
	int row, col;

	screen_size(s, &cols, &rows);
	vterm_state_get_cursorpos(screen_vterm_state(s), &pos);
	row = pos.row;
	col = pos.col;
	if (m->origin) {
		row -= m->top;
		if (m->lr_margins)
			col -= m->left;
	}
	put_csi(e->out, (unsigned)row + 1, (unsigned)col + 1, 'H');
	if (!m->pending_wrap)
		return;
	vterm_screen_get_cell(screen_vterm_screen(s), pos, &c);
	if (screen_reverse(s))
		c.attrs.reverse = !c.attrs.reverse;
	if (!c.chars[0] || c.chars[0] == WIDE_TAIL || pos.col + c.width != (int)cols)
		return;
	set_pen(e, &c);
	put_cell(e, &c, (int)cols);
}

static void mode_if(struct buf *out, bool on, const char *seq)
{
	if (on)
		buf_append_str(out, seq);
}

/* Modes that do not move the cursor, so they can follow it. */
static void write_modes(const struct screen *s, struct enc *e)
{
	static const int shape_code[] = {1, 1, 3, 5}; /* blinking forms */
	const struct modes_state *m = screen_modes(s);
	struct buf *out = e->out;
	int shape = screen_cursor_shape(s);
	bool blink = screen_cursor_blink(s);

	mode_if(out, !m->autowrap, "\033[?7l");
	mode_if(out, m->insert, "\033[4h");
	mode_if(out, m->newline, "\033[20h");
	mode_if(out, m->cursor_keys, "\033[?1h");
	mode_if(out, m->keypad, "\033=");
	mode_if(out, m->bracketed_paste, "\033[?2004h");
	mode_if(out, m->focus_events, "\033[?1004h");
	if (m->mouse)
		buf_appendf(out, "\033[?%uh", m->mouse);
	if (m->mouse_enc)
		buf_appendf(out, "\033[?%uh", m->mouse_enc);
	mode_if(out, screen_reverse(s), "\033[?5h");
	if (shape != VTERM_PROP_CURSORSHAPE_BLOCK || !blink) {
		if (shape < 1 || shape > 3)
			shape = 1;
		buf_appendf(out, "\033[%d q", shape_code[shape] + !blink);
	}
	for (int i = 0; i < 4; i++)
		if (m->g[i] != 'B')
			buf_appendf(out, "\033%c%c", "()*+"[i], m -> g[i]);
	if (m->gl)
		buf_append_str(out, m->gl == 1 ? "\016" : m->gl == 2 ? "\033n" : "\033o");
}

static void encode(const struct screen *s, struct buf *out, struct row_caches *rc)
{
	struct enc e = {.out = out, .row = 0, .col = 0};
	unsigned cols, rows;
	VTermScreenCell pen;

	screen_size(s, &cols, &rows);
	struct grid live = {.vs = screen_vterm_screen(s),
			    .cols = (int)cols,
			    .rows = (int)rows,
			    .unreverse = screen_reverse(s)};

	/* Leave a libvterm-like client's alternate screen (RIS does not),
	   then reset: B's cursor is home with a default pen. */
	buf_append_str(out, "\033[?1049l\033c");
	screen__blank_cell(&e.pen);
	if (screen_altscreen(s))
		write_normal_under_alt(s, &e);
	write_live_grid(&e, &live, rc);
	set_pen(&e, &(VTermScreenCell){.fg.type = VTERM_COLOR_DEFAULT_FG,
				       .bg.type = VTERM_COLOR_DEFAULT_BG});
	write_region(s, &e);
	write_cursor(s, &e);
	write_modes(s, &e);
	screen__pen(s, &pen);
	set_pen(&e, &pen);
	mode_if(out, !screen_cursor_visible(s), "\033[?25l");
}

void screen_snapshot(struct screen *s, struct buf *out)
{
	struct snapshot_cache *c = screen__cache(s);
	size_t start = buf_size(out);

	if (c->valid && c->changes == screen__changes(s)) {
		buf_append(out, buf_head(&c->bytes), buf_size(&c->bytes));
		return;
	}
	encode(s, out, screen__row_caches(s));
	buf_reset(&c->bytes);
	buf_append(&c->bytes, buf_head(out) + start, buf_size(out) - start);
	c->changes = screen__changes(s);
	c->valid = true;
}

void screen__snapshot_uncached(struct screen *s, struct buf *out)
{
	encode(s, out, NULL);
}
