/* fuzz_screen: libFuzzer harness for the screen model (screen.c over
   libvterm), which every byte a session's program prints goes through.
   The first bytes pick the screen's size (small sizes, where libvterm's
   edge cases are), how the rest is cut into writes, whether it goes
   through screen_feed or screen_feed_tail, and a resize half-way. Oracles
   beyond the sanitizers: libvterm's cursor stays on the screen after every
   write (a cursor off it is how libvterm 0.1.4 came to write outside its
   tables), and a snapshot can always be taken and fed to a fresh screen.
   The libvterm defects it found are cases in
   tests/unit/test_screen_hostile.c. */
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "fuzz_oracle.h"
#include "screen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct plan {
	unsigned cols, rows, cols2, rows2;
	size_t step;
	int tail;
};

static struct plan plan_of(const uint8_t *d)
{
	struct plan p = {
	    .cols = 1u + d[0] % 12u,
	    .rows = 1u + d[1] % 6u,
	    .cols2 = 1u + d[2] % 12u,
	    .rows2 = 1u + d[3] % 6u,
	    .step = 1u + d[4] % 64u,
	    .tail = d[5] & 1,
	};
	return p;
}

static void cursor_on_screen(struct screen *s)
{
	unsigned cols, rows;
	VTermPos pos;

	screen_size(s, &cols, &rows);
	vterm_state_get_cursorpos(screen_vterm_state(s), &pos);
	fuzz__assert(pos.col >= 0 && pos.col < (int)cols);
	fuzz__assert(pos.row >= 0 && pos.row < (int)rows);
}

static void feed(struct screen *s, const struct plan *p, const uint8_t *d, size_t n)
{
	for (size_t i = 0; i < n; i += p->step) {
		size_t k = n - i < p->step ? n - i : p->step;

		if (p->tail)
			screen_feed_tail(s, d + i, k);
		else
			screen_feed(s, d + i, k);
		cursor_on_screen(s);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf snap = BUF_INIT;
	struct screen *s, *again;
	struct plan p;
	size_t half;

	if (size < 6)
		return 0;
	p = plan_of(data);
	data += 6;
	size -= 6;
	half = size / 2;
	s = screen_new(p.cols, p.rows);
	feed(s, &p, data, half);
	screen_resize(s, p.cols2, p.rows2);
	cursor_on_screen(s);
	feed(s, &p, data + half, size - half);
	screen_snapshot(s, &snap);
	again = screen_new(p.cols2, p.rows2);
	screen_feed(again, buf_head(&snap), buf_size(&snap));
	cursor_on_screen(again);
	screen_free(again);
	screen_free(s);
	buf_free(&snap);
	return 0;
}
