/* screen: libvterm 0.1.4 fed every output byte that can reach the final
   screen and the modes tracker beside it; the vt100-screen-state-v1
   encoder that reads them is screen_snapshot.c, and screen_feed_tail's
   search for the text it may leave out is screen_tail.c.

   Three things libvterm 0.1.4 cannot tell us are rebuilt here:
   - the pending wrap: feeding libvterm text runs alone (the tracker marks
     where they start and end) and watching its damage, a run that left the
     cursor on the start of its last glyph, and that glyph on the last
     column, left a pending wrap; any cursor motion outside a run (and the
     explicit motions the tracker sees) cancels it;
   - the normal screen under the alternate one: libvterm cannot read an
     inactive buffer, so it is copied just before the byte that switches;
   - termprops (cursor visibility, shape, blink, reverse video), which
     libvterm reports through callbacks only.
   Not reproducible with libvterm 0.1.4: faint (SGR 2) and conceal (SGR 8),
   which it drops; the DECSC saved cursor (except the one ?1049h saved);
   double-width/height lines; G2/G3 single shifts. */
#include "screen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "screen_int.h"
#include "vtguard.h"
#include "xalloc.h"

/* libvterm callbacks */

static int on_damage(VTermRect rect, void *user)
{
	struct screen *s = user;

	screen__rows_stale(&s->row_caches, rect.start_row, rect.end_row);
	if (s->in_run && rect.end_row == rect.start_row + 1) {
		s->glyph = rect;
		s->glyph_seen = true;
	}
	return 1;
}

static int on_movecursor(VTermPos pos, VTermPos oldpos, int visible, void *user)
{
	struct screen *s = user;

	/* Text runs decide the pending wrap when they end. */
	if (!s->in_run)
		modes_state(s->modes)->pending_wrap = false;
	return 1;
}

static void saved_free(struct saved_screen *n)
{
	free(n->cells);
	n->cells = NULL;
}

static int on_settermprop(VTermProp prop, VTermValue *val, void *user)
{
	struct screen *s = user;

	switch (prop) {
	case VTERM_PROP_CURSORVISIBLE:
		s->cursor_visible = val->boolean;
		break;
	case VTERM_PROP_CURSORBLINK:
		s->cursor_blink = val->boolean;
		break;
	case VTERM_PROP_CURSORSHAPE:
		s->cursor_shape = val->number;
		break;
	case VTERM_PROP_REVERSE:
		s->reverse = val->boolean;
		break;
	case VTERM_PROP_ALTSCREEN:
		s->altscreen = val->boolean;
		if (!s->altscreen)
			saved_free(&s->normal);
		break;
	default:
		break;
	}
	return 1;
}

static const VTermScreenCallbacks screen_cbs = {
    .damage = on_damage,
    .movecursor = on_movecursor,
    .settermprop = on_settermprop,
};

static void on_output(const char *p, size_t n, void *user)
{
	struct screen *s = user;

	if (s->probe)
		buf_append(s->probe, p, n);
}

/* lifecycle */

/* A freshly reset libvterm of the screen's size; its callbacks set the
   termprops. */
static void vt_open(struct screen *s)
{
	s->vt = vterm_new((int)s->rows, (int)s->cols);
	if (!s->vt)
		abort();
	vterm_set_utf8(s->vt, 1);
	vtguard_reset(&s->guard);
	screen__row_caches_free(&s->row_caches);
	vterm_output_set_callback(s->vt, on_output, s);
	s->vs = vterm_obtain_screen(s->vt);
	s->state = vterm_obtain_state(s->vt);
	vterm_screen_enable_altscreen(s->vs, 1);
	/* Per-cell damage, delivered at once, is what reveals each glyph. */
	vterm_screen_set_damage_merge(s->vs, VTERM_DAMAGE_CELL);
	vterm_screen_set_callbacks(s->vs, &screen_cbs, s);
	vterm_screen_reset(s->vs, 1);
}

struct screen *screen_new(unsigned cols, unsigned rows)
{
	struct screen *s = xcalloc(1, sizeof(*s));

	s->cols = cols ? cols : 1;
	s->rows = rows ? rows : 1;
	s->modes = modes_new(s->cols, s->rows);
	vt_open(s);
	return s;
}

void screen_free(struct screen *s)
{
	if (!s)
		return;
	saved_free(&s->normal);
	modes_free(s->modes);
	vterm_free(s->vt);
	buf_free(&s->cache.bytes);
	screen__row_caches_free(&s->row_caches);
	free(s->toks.v);
	free(s);
}

void screen_trim(struct screen *s)
{
	free(s->toks.v);
	s->toks = (struct redraw_toks){0};
	screen__row_caches_free(&s->row_caches);
}

void screen_size(const struct screen *s, unsigned *cols, unsigned *rows)
{
	*cols = s->cols;
	*rows = s->rows;
}

/* feeding */

void screen__pen(const struct screen *s, VTermScreenCell *pen)
{
	VTermValue v;

	memset(pen, 0, sizeof(*pen));
	vterm_state_get_penattr(s->state, VTERM_ATTR_BOLD, &v);
	pen->attrs.bold = !!v.boolean;
	vterm_state_get_penattr(s->state, VTERM_ATTR_UNDERLINE, &v);
	pen->attrs.underline = (unsigned)v.number & 3;
	vterm_state_get_penattr(s->state, VTERM_ATTR_ITALIC, &v);
	pen->attrs.italic = !!v.boolean;
	vterm_state_get_penattr(s->state, VTERM_ATTR_BLINK, &v);
	pen->attrs.blink = !!v.boolean;
	vterm_state_get_penattr(s->state, VTERM_ATTR_REVERSE, &v);
	pen->attrs.reverse = !!v.boolean;
	vterm_state_get_penattr(s->state, VTERM_ATTR_STRIKE, &v);
	pen->attrs.strike = !!v.boolean;
	vterm_state_get_penattr(s->state, VTERM_ATTR_FONT, &v);
	pen->attrs.font = (unsigned)v.number & 15;
	vterm_state_get_penattr(s->state, VTERM_ATTR_FOREGROUND, &v);
	pen->fg = v.color;
	vterm_state_get_penattr(s->state, VTERM_ATTR_BACKGROUND, &v);
	pen->bg = v.color;
}

/* Copies the normal screen before libvterm switches away from it. */
static void save_normal(struct screen *s)
{
	struct saved_screen *n = &s->normal;
	VTermPos pos;

	if (s->altscreen)
		return;
	saved_free(n);
	n->cols = s->cols;
	n->rows = s->rows;
	n->cells = xmalloc(sizeof(*n->cells) * n->cols * n->rows);
	for (pos.row = 0; pos.row < (int)n->rows; pos.row++)
		for (pos.col = 0; pos.col < (int)n->cols; pos.col++) {
			VTermScreenCell *c = &n->cells[pos.row * n->cols + pos.col];

			vterm_screen_get_cell(s->vs, pos, c);
			/* Stored as written: DECSCNM is reapplied on output. */
			if (s->reverse)
				c->attrs.reverse = !c->attrs.reverse;
		}
	vterm_state_get_cursorpos(s->state, &n->cursor);
	screen__pen(s, &n->pen);
}

/* A text run has ended: did it leave the cursor pending a wrap? */
static void end_run(struct screen *s)
{
	struct modes_state *ms = modes_state(s->modes);
	VTermPos c;

	s->in_run = false;
	if (!s->glyph_seen)
		return; /* nothing printed (a split UTF-8 sequence): unchanged */
	vterm_state_get_cursorpos(s->state, &c);
	ms->pending_wrap = ms->autowrap && s->glyph.end_col == (int)s->cols &&
			   s->glyph.start_row == c.row && s->glyph.start_col == c.col;
}

/* libvterm 0.1.4 decodes a write's text into a stack array of 4 bytes per
   byte: a megabyte of text would take 4 MiB of stack. Writes are cut
   after an ASCII byte, where no UTF-8 character is split (libvterm judges
   a broken one by where writes end). */
#define VT_WRITE_MAX (64 * 1024)

/* Hands libvterm bytes in writes it accepts whole. */
static void vt_write(struct screen *s, const uint8_t *p, size_t n)
{
	while (n > VT_WRITE_MAX) {
		size_t k = VT_WRITE_MAX;

		while (k > VT_WRITE_MAX - 16 && p[k - 1] >= 0x80)
			k--;
		vterm_input_write(s->vt, (const char *)p, k);
		p += k;
		n -= k;
	}
	if (n)
		vterm_input_write(s->vt, (const char *)p, n);
}

/* Everything reaches libvterm here: cleaned by vtguard_clean, through
   the modes tracker, which applies the CSI guard's rules (vtguard.h). */
static void vt_put(struct screen *s, const uint8_t *p, size_t n)
{
	s->vterm_bytes += n;
	vt_write(s, p, n);
}

/* A slice of cleaned output; a string's held ESC, released, goes in the
   same write as the byte after it: libvterm 0.1.4 took an ST (ESC \\)
   split across two writes after a control in the string for a string
   that began before its write, and read past the output. */
static void put_slice(struct screen *s, const uint8_t *p, size_t n, bool *esc_first)
{
	struct buf b = BUF_INIT;

	if (!*esc_first || !n) {
		vt_put(s, p, n);
		return;
	}
	buf_append(&b, "\033", 1);
	buf_append(&b, p, n);
	vt_put(s, buf_head(&b), buf_size(&b));
	buf_free(&b);
	*esc_first = false;
}

/* What libvterm gets for the byte of a MODES_EV_GUARD event, put first;
   returns how many bytes from it on have been dealt with (0 or 1). */
static size_t guard_byte(struct screen *s, bool *esc_first)
{
	switch (modes_guard(s->modes)) {
	case MODES_GUARD_IGNORE:
		vt_put(s, (const uint8_t *)"}", 1);
		return 1;
	case MODES_GUARD_RESET_MARGINS:
		vt_put(s, (const uint8_t *)"}\033[r", 4);
		return 1;
	case MODES_GUARD_ESC_FIRST:
		*esc_first = true; /* with the byte, in the next slice */
		return 0;
	default:
		return 1; /* dropped */
	}
}

uint64_t screen_vterm_bytes(const struct screen *s)
{
	return s->vterm_bytes;
}

/* Cleaned bytes p[0..n) through the modes tracker to libvterm, cut where
   the tracker reports a text run's ends, a switch of screens, or a byte
   the CSI guard changes. */
static void feed_clean(struct screen *s, const uint8_t *p, size_t n)
{
	size_t done = 0, start = 0;
	bool esc_first = false;

	s->changes++;
	while (done < n) {
		enum modes_event ev;
		size_t at;
		size_t k = modes_feed(s->modes, p + done, n - done, &ev, &at);

		if (ev != MODES_EV_NONE) {
			put_slice(s, p + start, done + at - start, &esc_first);
			start = done + at;
			if (ev == MODES_EV_GUARD) {
				start += guard_byte(s, &esc_first);
			} else if (ev == MODES_EV_TEXT_START) {
				s->in_run = true;
				s->glyph_seen = false;
			} else if (ev == MODES_EV_TEXT_END) {
				end_run(s);
			} else {
				save_normal(s);
			}
		}
		done += k;
	}
	put_slice(s, p + start, n - start, &esc_first);
	/* A run cut by the end of the chunk is judged now, and again later
	   if it goes on. */
	if (s->in_run) {
		end_run(s);
		s->in_run = true;
	}
}

/* To libvterm alone, cleaned (the tracker has read these bytes). */
static void put_clean(struct screen *s, const uint8_t *p, size_t n)
{
	struct buf clean = BUF_INIT;

	p = vtguard_clean(&s->guard, s->cols, p, &n, &clean);
	vt_put(s, p, n);
	buf_free(&clean);
}

/* The tracker reads the cleaned bytes: a character vtguard_clean drops
   inside a sequence (a C1 control as UTF-8) would otherwise end the
   sequence for the tracker and not for libvterm, and hide a mode or a
   switch of screens from it. */
void screen_feed(struct screen *s, const uint8_t *p, size_t n)
{
	struct buf clean = BUF_INIT;

	p = vtguard_clean(&s->guard, s->cols, p, &n, &clean);
	feed_clean(s, p, n);
	buf_free(&clean);
}

void screen__blank_cell(VTermScreenCell *c)
{
	memset(c, 0, sizeof(*c));
	c->width = 1;
	c->fg.type = VTERM_COLOR_DEFAULT_FG;
	c->bg.type = VTERM_COLOR_DEFAULT_BG;
}

/* Keeps the saved normal screen's top-left corner across a resize. */
static void resize_saved(struct saved_screen *n, unsigned cols, unsigned rows)
{
	VTermScreenCell *cells = xcalloc((size_t)cols * rows, sizeof(*cells));

	for (unsigned r = 0; r < rows; r++)
		for (unsigned c = 0; c < cols; c++)
			if (r < n->rows && c < n->cols)
				cells[r * cols + c] = n->cells[r * n->cols + c];
			else
				screen__blank_cell(&cells[r * cols + c]);
	for (unsigned r = 0; r < rows && cols < n->cols; r++)
		if (cells[r * cols + cols - 1].width == 2)
			screen__blank_cell(&cells[r * cols + cols - 1]);
	free(n->cells);
	n->cells = cells;
	n->cols = cols;
	n->rows = rows;
	if (n->cursor.row >= (int)rows)
		n->cursor.row = (int)rows - 1;
	if (n->cursor.col >= (int)cols)
		n->cursor.col = (int)cols - 1;
}

/* libvterm 0.1.4 scrolls the lines below the cursor off the top when the
   rows shrink and leaves its cursor above the screen (row -1 and less),
   where the next output is written before its buffers. The cursor is put
   back on the screen, through the parser like any output; CAN first ends
   a sequence the program may be in the middle of (which it loses). */
static void cursor_onto_screen(struct screen *s)
{
	VTermPos pos;
	char cup[48];
	int n;

	vterm_state_get_cursorpos(s->state, &pos);
	if (pos.row >= 0 && pos.row < (int)s->rows && pos.col >= 0 &&
	    pos.col < (int)s->cols)
		return;
	pos.row = pos.row < 0 ? 0 : pos.row >= (int)s->rows ? (int)s->rows - 1 : pos.row;
	pos.col = pos.col < 0 ? 0 : pos.col >= (int)s->cols ? (int)s->cols - 1 : pos.col;
	n = snprintf(cup, sizeof(cup), "\x18\033[%d;%dH", pos.row + 1, pos.col + 1);
	screen_feed(s, (const uint8_t *)cup, (size_t)n);
}

/* On one column a double-width line is zero columns wide to libvterm,
   whose cursor then goes to column -1 on a back tab: such lines (new ones
   are refused in vtguard_clean) become single width (ESC # 5) when the
   screen narrows to one column. Through the parser, CAN first, as above.
   The cursor after_shrink saved (DECSC) is saved again: on such a line
   libvterm had put it in column -1, where DECRC would put it back. */
static void single_width_lines(struct screen *s)
{
	struct buf seq = BUF_INIT;
	VTermPos pos;

	for (int row = 0; row < (int)s->rows; row++) {
		const VTermLineInfo *li = vterm_state_get_lineinfo(s->state, row);

		if (li->doublewidth || li->doubleheight)
			buf_appendf(&seq, "\033[%d;1H\033#5", row + 1);
	}
	if (buf_size(&seq)) {
		vterm_state_get_cursorpos(s->state, &pos);
		screen_feed(s, (const uint8_t *)"\x18", 1);
		buf_appendf(&seq, "\033[%d;%dH\0337", pos.row + 1, pos.col + 1);
		screen_feed(s, buf_head(&seq), buf_size(&seq));
	}
	buf_free(&seq);
}

/* libvterm 0.1.4 keeps a saved cursor (DECSC, mode 1049) and the margins
   (DECSTBM, DECSLRM) as they were when the screen shrinks: restoring the
   cursor puts it outside the screen, and margins past the last row make
   it scroll with negative counts, both writing outside its buffers. After
   a shrink the margins are reset, as xterm does, and the saved cursor is
   the current one (programs redraw after a resize anyway). Through the
   parser, CAN first (see cursor_onto_screen). */
static void after_shrink(struct screen *s)
{
	const struct modes_state *m = modes_state(s->modes);
	struct buf seq = BUF_INIT;
	VTermPos pos;

	vterm_state_get_cursorpos(s->state, &pos);
	buf_append_str(&seq, "\x18\033[r");
	if (m->lr_margins)
		buf_append_str(&seq, "\033[s");
	buf_appendf(&seq, "\033[%d;%dH\0337", pos.row + 1, pos.col + 1);
	screen_feed(s, buf_head(&seq), buf_size(&seq));
	buf_free(&seq);
}

/* The repairs after a resize, which a character the output ended inside
   (held back from libvterm) must not precede: given first, a broken one,
   it was drawn with the margins of the old size (a U+FFFD that wrapped
   scrolled a region below a one-row screen, with negative counts). It is
   set aside and goes on with the program's next write. */
static void repair_after_resize(struct screen *s, unsigned old_cols, unsigned old_rows)
{
	struct vtguard aside;

	vtguard_set_aside(&s->guard, &aside);
	cursor_onto_screen(s);
	if (s->cols < old_cols || s->rows < old_rows)
		after_shrink(s);
	if (s->cols == 1)
		single_width_lines(s);
	vtguard_put_back(&s->guard, &aside);
}

void screen_resize(struct screen *s, unsigned cols, unsigned rows)
{
	unsigned old_cols, old_rows;

	cols = cols ? cols : 1;
	rows = rows ? rows : 1;
	if (cols == s->cols && rows == s->rows)
		return;
	s->changes++;
	screen__row_caches_free(&s->row_caches);
	old_cols = s->cols;
	old_rows = s->rows;
	s->cols = cols;
	s->rows = rows;
	/* The cursor motion a resize makes cancels a pending wrap, even in
	   the middle of a run cut by a chunk boundary. */
	bool in_run = s->in_run;
	s->in_run = false;
	vterm_set_size(s->vt, (int)rows, (int)cols);
	s->in_run = in_run;
	s->glyph_seen = false;
	modes_resize(s->modes, cols, rows);
	if (s->normal.cells)
		resize_saved(&s->normal, cols, rows);
	repair_after_resize(s, old_cols, old_rows);
}

/* introspection */

const struct modes_state *screen_modes(const struct screen *s)
{
	return modes_state(s->modes);
}

const VTermScreen *screen_vterm_screen(const struct screen *s)
{
	return s->vs;
}

const VTermState *screen_vterm_state(const struct screen *s)
{
	return s->state;
}

bool screen_cursor_visible(const struct screen *s)
{
	return s->cursor_visible;
}

bool screen_cursor_blink(const struct screen *s)
{
	return s->cursor_blink;
}

int screen_cursor_shape(const struct screen *s)
{
	return s->cursor_shape;
}

bool screen_altscreen(const struct screen *s)
{
	return s->altscreen;
}

bool screen_reverse(const struct screen *s)
{
	return s->reverse;
}

const struct saved_screen *screen__normal(const struct screen *s)
{
	return s->normal.cells ? &s->normal : NULL;
}

struct snapshot_cache *screen__cache(struct screen *s)
{
	return &s->cache;
}

struct row_caches *screen__row_caches(struct screen *s)
{
	return &s->row_caches;
}

void screen__row_caches_free(struct row_caches *rc)
{
	for (unsigned i = 0; rc->v && i < rc->rows; i++)
		buf_free(&rc->v[i].bytes);
	free(rc->v);
	*rc = (struct row_caches){.encoded = rc->encoded};
}

uint64_t screen__changes(const struct screen *s)
{
	return s->changes;
}

/* Whether the escape parser passes over b: C0 controls but ESC, CAN and
   SUB, DEL, and 0x80 and up. */
static bool esc_passes(uint8_t b)
{
	return b >= 0x7f || (b < 0x20 && b != 0x1b && b != 0x18 && b != 0x1a);
}

/* Whether an ESC at q (q < end) starts a RIS: then bytes the escape
   parser passes over, then 'c'. */
static bool ris_at(const uint8_t *q, const uint8_t *end)
{
	for (q++; q < end && esc_passes(*q);)
		q++;
	return q < end && *q == 'c';
}

/* Whether an ESC in [q, stop) starts a RIS (which may end past stop,
   before end). */
static bool ris_within(const uint8_t *q, const uint8_t *stop, const uint8_t *end)
{
	while ((q = memchr(q, 0x1b, (size_t)(stop - q)))) {
		if (ris_at(q, end))
			return true;
		q++;
	}
	return false;
}

/* Bytes looked at together: two vectors. */
#define ESC_BLOCK 32

static bool any_lane(screen__vbytes m)
{
	screen__vwords w = (screen__vwords)m;

	return (w[0] | w[1]) != 0;
}

/* Looks at the ESC_BLOCK bytes at p (one more readable): whether one is
   an ESC (*esc), and whether one is an ESC whose next byte may lead to a
   RIS: 'c', or a byte the escape parser may pass over (as signed bytes:
   below 0x20, which takes in 0x80 and up, or DEL). */
static bool block_may_lead(const uint8_t *p, bool *esc)
{
	screen__vbytes escs = {0}, leads = {0};

	for (unsigned k = 0; k < ESC_BLOCK; k += sizeof(screen__vbytes)) {
		screen__vbytes v, w, e;

		memcpy(&v, p + k, sizeof(v));
		memcpy(&w, p + k + 1, sizeof(w));
		e = v == 0x1b;
		escs |= e;
		leads |= e & ((w < 0x20) | (w == 0x7f) | (w == 'c'));
	}
	*esc = any_lane(escs);
	return any_lane(leads);
}

/* Whether p[0..n) may hold a RIS. A quick look, so output without one
   costs no parse. memchr finds the next ESC; as a repaint has one every
   few bytes, nearly always before '[', blocks are then looked at whole
   while they hold one, instead of a memchr call per sequence, and their
   ESCs one by one only when one may lead to a 'c'. */
static bool may_hold_reset(const uint8_t *p, size_t n)
{
	const uint8_t *q = p, *end = p + n;
	bool esc;

	while ((q = memchr(q, 0x1b, (size_t)(end - q)))) {
		for (esc = true; esc && end - q > ESC_BLOCK; q += ESC_BLOCK)
			if (block_may_lead(q, &esc) && ris_within(q, q + ESC_BLOCK, end))
				return true;
		if (end - q <= ESC_BLOCK)
			return ris_within(q, end, end);
	}
	return false;
}

/* The one-column screen, whose UTF-8 is held back here, is left alone. */
size_t screen_skip_to_reset(struct screen *s, const uint8_t *p, size_t n)
{
	uint8_t held[6];
	size_t x, held_len = 0;

	s->changes++;
	if (s->cols == 1 || n < 4096 || !may_hold_reset(p, n))
		return 0;
	x = modes_find_reset(s->modes, p, n, s->altscreen, held, &held_len);
	if (!x)
		return 0;
	/* The tracker stands just after the RIS; libvterm starts afresh. */
	vterm_free(s->vt);
	saved_free(&s->normal);
	s->cursor_visible = s->cursor_blink = s->altscreen = s->reverse = false;
	s->cursor_shape = 0;
	s->in_run = s->glyph_seen = false;
	vt_open(s);
	if (held_len)
		put_clean(s, held, held_len);
	put_clean(s, (const uint8_t *)"\033c", 2);
	modes_state(s->modes)->pending_wrap = false;
	return x;
}
