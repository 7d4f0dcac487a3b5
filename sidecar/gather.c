/* gather: see gather.h. */
#include "gather.h"

#include "buf.h"

void gather_init(struct gather *g, gather_emit_fn *emit, void *user)
{
	buf_init(&g->held);
	g->last_read_us = 0;
	g->held_since_us = 0;
	g->input_us = 0;
	g->answered = 0;
	g->emit = emit;
	g->user = user;
}

void gather_free(struct gather *g)
{
	buf_free(&g->held);
}

/* Whether bytes of a stream are held. */
static bool gather_holding(const struct gather *g)
{
	return buf_size(&g->held) > 0;
}

/* The held bytes leave the gather before the callback runs, so an emit
   that flushes again (or reads the gather) finds it empty. */
void gather_flush(struct gather *g)
{
	struct buf out = g->held;

	if (!buf_size(&out))
		return;
	buf_init(&g->held);
	g->emit(g->user, buf_head(&out), buf_size(&out));
	buf_reset(&out);
	if (g->held.data)
		buf_free(&out);
	else
		g->held = out;
}

void gather_input(struct gather *g, int64_t now_us)
{
	g->input_us = now_us ? now_us : 1;
	g->answered = 0;
}

void gather_trim(struct gather *g)
{
	if (!buf_size(&g->held))
		buf_free(&g->held);
}

/* Whether a read at now_us belongs to the program's answer to its last
   input. */
static bool answers_input(const struct gather *g, int64_t now_us)
{
	return g->input_us && now_us - g->input_us < GATHER_AFTER_INPUT_US &&
	       g->answered < GATHER_ANSWER_MAX;
}

static bool continues_stream(const struct gather *g, int64_t now_us)
{
	return g->last_read_us && now_us - g->last_read_us < GATHER_STREAM_US;
}

int64_t gather_take(struct gather *g, const uint8_t *p, size_t n, int64_t now_us)
{
	bool answer = answers_input(g, now_us);
	bool stream = !answer && continues_stream(g, now_us);
	int64_t left;

	if (answer)
		g->answered += n;

	g->last_read_us = now_us ? now_us : 1;
	if (buf_size(&g->held) + n > GATHER_MAX)
		gather_flush(g);
	if (!stream || (!gather_holding(g) && n >= GATHER_MIN)) {
		if (gather_holding(g)) {
			buf_append(&g->held, p, n);
			gather_flush(g);
		} else {
			g->emit(g->user, p, n);
		}
		return 0;
	}
	if (!gather_holding(g))
		g->held_since_us = now_us;
	buf_append(&g->held, p, n);
	left = g->held_since_us + GATHER_WAIT_US - now_us;
	if (buf_size(&g->held) >= GATHER_MIN || left <= 0) {
		gather_flush(g);
		return 0;
	}
	return left;
}
