/* modes: the escape-sequence tracker beside libvterm (see modes.h). The
   parser mirrors libvterm 0.1.4's: C0 controls act inside sequences, CAN
   and SUB abort them, ESC starts over, OSC and DCS strings end at BEL or
   ESC \, and in UTF-8 mode bytes 0x80-0x9f are text, not C1 controls.
   It applies the CSI guard's rules (vtguard.h) as it goes. */
#include "modes.h"

#include <stdlib.h>
#include <string.h>

#include "vtguard.h"
#include "xalloc.h"

#define MODES_MAX_ARGS	  16
#define MODES_ARG_MISSING (-1)
#define MODES_ARG_LIMIT	  65535

enum parse_state { ST_GROUND, ST_ESC, ST_CSI, ST_STRING, ST_STRING_ESC };

/* Sequences modes_find_reset watches: RIS, the DECSC that fills the
   saved cursor RIS leaves alone, and anything that may read it back or
   switch screens (DECRC, SCORC; every private mode change, as ?1048l and
   ?1049l restore it and RIS leaves the alternate screen on). */
enum seq_op { OP_NONE, OP_RIS, OP_SAVE, OP_READ, OP_PRIVATE, OP_SHIFT };

struct modes {
	struct modes_state st;
	unsigned cols, rows;
	enum parse_state ps;
	bool in_text;
	uint8_t op;	  /* what the sequence just parsed did (modes_find_reset) */
	bool csi_bad;	  /* a byte made the sequence invalid: drop it at the final */
	bool csi_in_args; /* past the leader bytes */
	uint8_t nleader, ninter;
	char leader, inter;
	int nargs;
	int args[MODES_MAX_ARGS];
	/* The CSI guard's view (its rules are vtguard's). */
	uint8_t nseps;	  /* parameter separators in the CSI, at most 255 */
	bool glyph_ascii; /* the last glyph printed was printable ASCII */
	bool esc_held;	  /* a string's ESC, held back from libvterm */
	int guard;	  /* enum modes_guard for the last byte, or -1 */
};

#define GUARD_NONE (-1)

static void reset_hard(struct modes *m)
{
	struct modes_state *s = &m->st;

	memset(s, 0, sizeof(*s));
	s->autowrap = true;
	s->alt_variant = 1049;
	s->bottom = -1;
	s->right = -1;
	memcpy(s->g, "BBBB", 4);
}

struct modes *modes_new(unsigned cols, unsigned rows)
{
	struct modes *m = xcalloc(1, sizeof(*m));

	m->cols = cols;
	m->rows = rows;
	reset_hard(m);
	return m;
}

void modes_free(struct modes *m)
{
	free(m);
}

struct modes_state *modes_state(struct modes *m)
{
	return &m->st;
}

enum modes_guard modes_guard(const struct modes *m)
{
	return (enum modes_guard)m->guard;
}

bool modes_idle(const struct modes *m)
{
	return m->ps == ST_GROUND;
}

void modes_resize(struct modes *m, unsigned cols, unsigned rows)
{
	m->cols = cols;
	m->rows = rows;
	if (m->st.bottom > (int)rows)
		m->st.bottom = (int)rows;
	if (m->st.right > (int)cols)
		m->st.right = (int)cols;
}

static int arg(const struct modes *m, int i, int dflt)
{
	if (i >= m->nargs || m->args[i] == MODES_ARG_MISSING)
		return dflt;
	return m->args[i];
}

/* DECSTBM and DECSLRM share libvterm's clamping rules; false when the
   region they set is empty or inverted. */
static bool margins_of(const struct modes *m, int limit, int *lo, int *hi)
{
	int a = arg(m, 0, 1) - 1;
	int b = arg(m, 1, -1);

	if (a < 0)
		a = 0;
	if (a > limit)
		a = limit;
	if (a == 0 && b == limit)
		b = -1;
	else if (b > limit)
		b = limit;
	*lo = a;
	*hi = b;
	return (b == -1 ? limit : b) > a;
}

/* An empty or inverted region is a reset (as the guard makes it). */
static void set_margins(const struct modes *m, int limit, int *lo, int *hi)
{
	if (!margins_of(m, limit, lo, hi)) {
		*lo = 0;
		*hi = -1;
	}
}

/* Modes that only change how the client encodes input: every parameter. */
static void set_input_mode(struct modes_state *s, int n, bool on)
{
	switch (n) {
	case 1:
		s->cursor_keys = on;
		break;
	case 9:
	case 1000:
	case 1002:
	case 1003:
		s->mouse = on ? (unsigned)n : 0;
		break;
	case 1004:
		s->focus_events = on;
		break;
	case 1005:
	case 1006:
	case 1015:
		s->mouse_enc = on ? (unsigned)n : 0;
		break;
	case 2004:
		s->bracketed_paste = on;
		break;
	}
}

/* Returns true when the sequence switches to the alternate screen. */
static bool dec_mode(struct modes *m, bool on)
{
	struct modes_state *s = &m->st;
	int first = arg(m, 0, 0);

	for (int i = 0; i < m->nargs; i++)
		if (m->args[i] != MODES_ARG_MISSING)
			set_input_mode(s, m->args[i], on);
	/* libvterm 0.1.4 applies only the first parameter of these. */
	switch (first) {
	case 6:
		s->origin = on;
		break;
	case 7:
		s->autowrap = on;
		break;
	case 69:
		s->lr_margins = on;
		break;
	case 1047:
	case 1049:
		if (on)
			s->alt_variant = (unsigned)first;
		return on;
	}
	return false;
}

static void csi_plain(struct modes *m, char final)
{
	struct modes_state *s = &m->st;

	switch (final) {
	case 'h':
	case 'l':
		if (arg(m, 0, 0) == 4)
			s->insert = final == 'h';
		else if (arg(m, 0, 0) == 20)
			s->newline = final == 'h';
		break;
	case 'r':
		set_margins(m, (int)m->rows, &s->top, &s->bottom);
		break;
	case 's':
		set_margins(m, (int)m->cols, &s->left, &s->right);
		break;
	default:
		/* libvterm cancels a pending wrap on every explicit cursor
		   motion, even one that does not move the cursor. */
		if (strchr("ABCDEFGH`adefjk", final))
			s->pending_wrap = false;
		break;
	}
}

/* Returns true when the sequence switches to the alternate screen. */
static bool csi_dispatch(struct modes *m, char final)
{
	if (final == 'u')
		m->op = OP_READ;
	else if (m->leader && (final == 'h' || final == 'l'))
		m->op = OP_PRIVATE;
	if (m->csi_bad || m->nleader > 1 || m->ninter > 1)
		return false;
	if (!m->leader && !m->inter) {
		csi_plain(m, final);
	} else if (m->leader == '?' && !m->inter && (final == 'h' || final == 'l')) {
		return dec_mode(m, final == 'h');
	} else if (!m->leader && m->inter == '!' && final == 'p') {
		/* DECSTR: libvterm 0.1.4 ignores it; a client resets these. */
		m->st.cursor_keys = false;
		m->st.keypad = false;
	}
	return false;
}

static void esc_dispatch(struct modes *m, uint8_t c)
{
	struct modes_state *s = &m->st;

	if (m->ninter == 1 && m->inter >= '(' && m->inter <= '+') {
		if (c == '0' || c == 'A' || c == 'B')
			s->g[m->inter - '('] = (char)c;
		return;
	}
	if (m->ninter)
		return;
	m->op = c == 'c' ? OP_RIS : c == '7' ? OP_SAVE : c == '8' ? OP_READ : OP_NONE;
	switch (c) {
	case '=':
		s->keypad = true;
		break;
	case '>':
		s->keypad = false;
		break;
	case 'c':
		reset_hard(m);
		break;
	case 'n':
		s->gl = 2;
		break;
	case 'o':
		s->gl = 3;
		break;
	}
}

static void csi_start(struct modes *m)
{
	m->ps = ST_CSI;
	m->csi_bad = false;
	m->csi_in_args = false;
	m->nleader = 0;
	m->ninter = 0;
	m->leader = 0;
	m->inter = 0;
	m->nargs = 1;
	m->args[0] = MODES_ARG_MISSING;
	m->nseps = 0;
}

static void csi_digit(struct modes *m, uint8_t c)
{
	int *a = &m->args[m->nargs - 1];

	if (*a == MODES_ARG_MISSING)
		*a = 0;
	*a = *a * 10 + (c - '0');
	if (*a > MODES_ARG_LIMIT)
		*a = MODES_ARG_LIMIT;
}

/* The guard's rules on a CSI's final byte (vtguard_final). */
static void csi_guard_final(struct modes *m, uint8_t c)
{
	int lo, hi;
	bool invalid;

	if (m->nleader || m->ninter) {
		if (c == 'p')
			m->glyph_ascii = false; /* DECSTR, a soft reset */
		return;
	}
	if (c != 'r' && c != 'b')
		return;
	invalid = c == 'r' && !margins_of(m, (int)m->rows, &lo, &hi);
	switch (vtguard_final(c, invalid, m->glyph_ascii)) {
	case VTGUARD_IGNORE:
		m->guard = MODES_GUARD_IGNORE;
		break;
	case VTGUARD_RESET_MARGINS:
		m->guard = MODES_GUARD_RESET_MARGINS;
		break;
	default:
		break;
	}
}

/* Returns true when the byte ends a sequence that enters the alt screen. */
static bool csi_byte(struct modes *m, uint8_t c)
{
	if (c >= 0x3c && c <= 0x3f && !m->csi_in_args) {
		if (m->nleader++ == 0)
			m->leader = (char)c;
		return false;
	}
	m->csi_in_args = true;
	if (c >= '0' && c <= '9' && !m->ninter) {
		if (!vtguard_param_ok(m->nseps))
			m->guard = MODES_GUARD_DROP; /* for libvterm and here */
		else
			csi_digit(m, c);
	} else if ((c == ';' || c == ':') && !m->ninter) {
		if (m->nseps < 255)
			m->nseps++;
		if (!vtguard_param_ok(m->nseps))
			m->guard = MODES_GUARD_DROP;
		else if (m->nargs < MODES_MAX_ARGS)
			m->args[m->nargs++] = MODES_ARG_MISSING;
	} else if (c >= 0x20 && c <= 0x2f) {
		if (m->ninter++ == 0)
			m->inter = (char)c;
	} else if (c >= 0x40 && c <= 0x7e) {
		m->ps = ST_GROUND;
		csi_guard_final(m, c);
		return csi_dispatch(m, (char)c);
	} else {
		m->csi_bad = true;
		m->ps = ST_GROUND;
	}
	return false;
}

static void esc_byte(struct modes *m, uint8_t c)
{
	if (c == 'c')
		m->glyph_ascii = false; /* RIS (or not: the guard errs safe) */
	if (c == 'P' || c == ']') {
		m->ps = ST_STRING;
	} else if (c == '[') {
		csi_start(m);
	} else if (c >= 0x20 && c <= 0x2f) {
		if (m->ninter++ == 0)
			m->inter = (char)c;
	} else if (!m->ninter && c >= 0x40 && c < 0x60) {
		m->ps = ST_GROUND; /* a 7-bit C1 control: nothing tracked */
		if (c == 'N' || c == 'O')
			m->op = OP_SHIFT; /* SS2, SS3: a decoder modes_find_reset does not
					     follow */
	} else if (c >= 0x30 && c < 0x7f) {
		esc_dispatch(m, c);
		m->ps = ST_GROUND;
	}
}

/* C0 controls act in every state. Returns false if c is not one. */
static bool control_byte(struct modes *m, uint8_t c)
{
	if (c == 0x00 || c == 0x7f)
		return true;
	if (c >= 0x20)
		return false;
	if (c == 0x18 || c == 0x1a) {
		m->ps = ST_GROUND;
	} else if (c == 0x1b) {
		if (m->ps == ST_STRING) {
			m->esc_held = true; /* see vtguard_held_esc */
			m->guard = MODES_GUARD_DROP;
		}
		m->ps = m->ps == ST_STRING ? ST_STRING_ESC : ST_ESC;
		m->ninter = 0;
		m->inter = 0;
	} else if (c == 0x07 && m->ps == ST_STRING) {
		m->ps = ST_GROUND;
	} else if (c == 0x0e) {
		m->st.gl = 1;
	} else if (c == 0x0f) {
		m->st.gl = 0;
	}
	return true;
}

/* A byte after a string's ESC held back from libvterm. Returns true when
   libvterm never gets it. */
static bool after_held_esc(struct modes *m, uint8_t c)
{
	switch (vtguard_held_esc(c)) {
	case VTGUARD_HELD_DROP:
		m->guard = MODES_GUARD_DROP;
		return true;
	case VTGUARD_HELD_RELEASE:
		m->esc_held = false;
		m->guard = MODES_GUARD_ESC_FIRST;
		return false;
	default:
		return false;
	}
}

/* Parses one byte; returns true if it completes an alt-screen switch.
   m->guard says what libvterm gets for it, if not the byte. */
static bool parse_byte(struct modes *m, uint8_t c)
{
	m->guard = GUARD_NONE;
	if (m->esc_held && after_held_esc(m, c))
		return false;
	if (control_byte(m, c))
		return false;
	switch (m->ps) {
	case ST_GROUND:
		break;
	case ST_STRING:
		break;
	case ST_STRING_ESC:
		if (c == '\\') {
			m->ps = ST_GROUND;
			break;
		}
		m->ps = ST_ESC;
		esc_byte(m, c);
		break;
	case ST_ESC:
		esc_byte(m, c);
		break;
	case ST_CSI:
		return csi_byte(m, c);
	}
	return false;
}

static bool is_text(const struct modes *m, uint8_t c)
{
	return m->ps == ST_GROUND && c >= 0x20 && c != 0x7f;
}

size_t modes_feed(struct modes *m, const uint8_t *p, size_t n, enum modes_event *ev,
		  size_t *at)
{
	*ev = MODES_EV_NONE;
	*at = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = p[i];
		bool text;

		if (m->in_text && c >= 0x20 && c != 0x7f) {
			/* More of a run (the ground state): only its last glyph
			   matters (REP). */
			size_t j = i + 1;

			while (j < n && p[j] >= 0x20 && p[j] != 0x7f)
				j++;
			m->glyph_ascii = p[j - 1] < 0x80;
			i = j - 1;
			continue;
		}
		text = is_text(m, c);
		if ((c == 0x00 || c == 0x7f) && !m->esc_held)
			continue; /* libvterm drops these without ending a run */
		if (text)
			m->glyph_ascii = c < 0x80;
		if (text != m->in_text) {
			/* The byte after a run is in the ground state: no guard. */
			m->in_text = text;
			*ev = text ? MODES_EV_TEXT_START : MODES_EV_TEXT_END;
			*at = i;
			if (!text)
				parse_byte(m, c);
			return i + 1;
		}
		if (text)
			continue;
		if (parse_byte(m, c))
			*ev = MODES_EV_ALT_ENTER;
		else if (m->guard != GUARD_NONE)
			*ev = MODES_EV_GUARD;
		else
			continue;
		*at = i;
		return i + 1;
	}
	return n;
}

/* ---- finding a hard reset (modes_find_reset) ----

   RIS resets libvterm 0.1.4 but for three things: the DECSC saved cursor,
   the cell a combining character would join, and the UTF-8 decoder of
   text writes that start with a byte of 0x80 or more (writes that start
   with ASCII go to the decoder of the GL set, which RIS does reset). So
   a RIS is a point to restart from when that decoder's state there is
   known (a fresh libvterm is given the same half-read character), the
   first character printed after it is not a combining one (nothing
   joins an earlier glyph),
   and a DECSC comes after it before anything that may read the saved
   cursor. Conditions after a RIS settle later, so a few candidates wait
   at once. */

#define RESET_WAITING 4
/* A text write longer than this is cut in two by screen.c. */
#define RESET_RUN_MAX (32 * 1024)

/* libvterm 0.1.4's UTF-8 decoder for writes that start at 0x80 or up. */
struct u8_dec {
	bool known;
	uint8_t remaining, len;
	uint8_t held[6]; /* the lead byte and continuation bytes so far */
};

static void u8_step(struct u8_dec *d, uint8_t c)
{
	static const uint8_t lead_more[8] = {1, 1, 1, 1, 2, 2, 3, 4}; /* by c >> 3 & 7 */

	if (c < 0x80) {
		d->remaining = 0; /* an ASCII byte abandons a half-read character */
	} else if (c < 0xc0) {
		if (d->remaining) {
			d->held[d->len++] = c;
			d->remaining--;
		}
	} else if (c < 0xfe) {
		d->remaining = c < 0xf8 ? lead_more[(c >> 3) & 7] : c < 0xfc ? 4 : 5;
		d->held[0] = c;
		d->len = 1;
	}
	/* 0xFE and 0xFF print U+FFFD and leave the state alone. */
	if (!d->remaining)
		d->len = 0;
}

struct reset_cand {
	size_t at; /* just after the RIS */
	struct modes m;
	struct u8_dec dec;   /* the decoder as the RIS found it */
	struct u8_dec first; /* the same, until a first character is printed */
	bool need_save, need_text;
};

struct reset_scan {
	struct reset_cand wait[RESET_WAITING];
	size_t nwait, found;
	struct reset_cand best;
};

/* What the first character a text write w[0..n) prints after a RIS
   does to the cell a combining character would join: 1 nothing (it is
   not combining), -1 it may join one, 0 nothing printed yet. d is the
   decoder of writes that start at 0x80 or up, as the RIS left it; the
   others start afresh, so a write that starts with ASCII prints ASCII. */
static int first_char(struct u8_dec *d, const uint8_t *w, size_t n)
{
	uint32_t cp;

	if (w[0] < 0x80)
		return 1;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = w[i];

		/* Anything but a continuation byte of a character under way
		   prints U+FFFD or ASCII first, or starts a character. */
		if (!(c >= 0x80 && c < 0xc0 && d->remaining)) {
			if (c < 0xc0 || c >= 0xfe || d->remaining)
				return 1;
			u8_step(d, c);
			continue;
		}
		if (d->remaining > 1) {
			u8_step(d, c);
			continue;
		}
		/* The character is complete (its lead byte's bits depend on its
		   length): below U+0300 nothing combines, but C1 controls
		   may print nothing. */
		cp = d->held[0] & (0x7fu >> (d->len + 1));
		for (size_t k = 1; k < d->len; k++)
			cp = (cp << 6) | (d->held[k] & 0x3f);
		cp = (cp << 6) | (c & 0x3f);
		return cp < 0x300 && !(cp >= 0x80 && cp < 0xa0) ? 1 : -1;
	}
	return 0;
}

/* Drops waiting candidates that fail, promotes those that are settled:
   after the text write w[0..n), or the sequence op. */
static void settle(struct reset_scan *r, const uint8_t *w, size_t n, uint8_t op)
{
	size_t keep = 0;

	for (size_t k = 0; k < r->nwait; k++) {
		struct reset_cand *c = &r->wait[k];
		bool ok = true;

		if (n && c->need_text) {
			int f = first_char(&c->first, w, n);

			ok = f >= 0;
			c->need_text = f == 0;
		}
		if (op == OP_SAVE)
			c->need_save = false;
		else if (op == OP_READ && c->need_save)
			ok = false;
		else if (op == OP_SHIFT && c->need_text)
			ok = false;
		if (ok && !c->need_save && !c->need_text) {
			r->found = c->at;
			r->best = *c;
		} else if (ok) {
			r->wait[keep++] = *c;
		}
	}
	r->nwait = keep;
}

static void add_cand(struct reset_scan *r, const struct modes *m, const struct u8_dec *d,
		     size_t at)
{
	if (r->nwait == RESET_WAITING) {
		memmove(r->wait, r->wait + 1, sizeof(r->wait[0]) * (RESET_WAITING - 1));
		r->nwait--;
	}
	r->wait[r->nwait++] = (struct reset_cand){.at = at,
						  .m = *m,
						  .dec = *d,
						  .first = *d,
						  .need_save = true,
						  .need_text = true};
}

/* How many bytes from p on are text to libvterm's parser in the ground
   state (not C0, DEL or NUL), up to n. Eight at a time: a byte below 0x20
   sets its top bit when 0x20 is subtracted unless it was set, DEL is
   0x7F; see screen.c's printable8 for the borrow argument. */
static size_t text_span(const uint8_t *p, size_t n)
{
	const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
	size_t k = 0;

	for (; k + 8 <= n; k += 8) {
		uint64_t x, del;

		memcpy(&x, p + k, 8);
		del = x ^ (ones * 0x7f);
		/* low: a byte below 0x20 (top bit clear); del: a byte of 0x7F. */
		if ((((x - ones * 0x20) & ~x) | ((del - ones) & ~del)) & highs)
			break;
	}
	while (k < n && p[k] >= 0x20 && p[k] != 0x7f)
		k++;
	return k;
}

/* A text write p[0..n) (n > 0) through the decoder: it goes there only
   when it starts at 0x80 or up, and its state after it is decided by its
   last ASCII or lead byte and what follows that. */
static void u8_write(struct u8_dec *d, const uint8_t *p, size_t n)
{
	size_t a = n;

	if (p[0] < 0x80)
		return;
	if (n > RESET_RUN_MAX) {
		d->known = false;
		return;
	}
	d->known = true;
	while (a > 0 && !(p[a - 1] < 0x80 || (p[a - 1] >= 0xc0 && p[a - 1] < 0xfe)))
		a--;
	if (a > 0)
		a--; /* the anchor itself: from here on the state does not look back */
	for (; a < n; a++)
		u8_step(d, p[a]);
}

size_t modes_find_reset(struct modes *m, const uint8_t *p, size_t n, bool alt,
			uint8_t *held, size_t *held_len)
{
	struct reset_scan *r = xcalloc(1, sizeof(*r));
	struct modes t = *m;
	struct u8_dec dec = {0};
	size_t found, i = 0, k;

	while (i < n) {
		uint8_t c = p[i];

		if (c == 0x00 || c == 0x7f) {
			i++;
			continue;
		}
		if (is_text(&t, c)) {
			/* A write of text: NUL and DEL split it for libvterm too. */
			k = text_span(p + i, n - i);
			t.in_text = true;
			u8_write(&dec, p + i, k);
			if (r->nwait)
				settle(r, p + i, k, OP_NONE);
			i += k;
			continue;
		}
		i++;
		t.in_text = false;
		t.op = OP_NONE;
		parse_byte(&t, c);
		if (t.op == OP_NONE)
			continue;
		if (t.op == OP_SHIFT)
			dec.known = false;
		if (t.op == OP_PRIVATE) {
			alt = true;	/* it may have switched screens */
			t.op = OP_READ; /* and restored the saved cursor */
		}
		if (r->nwait)
			settle(r, NULL, 0, t.op);
		if (t.op == OP_RIS && !alt && dec.known)
			add_cand(r, &t, &dec, i);
	}
	found = r->found;
	if (found) {
		*m = r->best.m;
		memcpy(held, r->best.dec.held, r->best.dec.len);
		*held_len = r->best.dec.len;
	}
	free(r);
	return found;
}
