/* deflate_budget: see deflate_budget.h. */
#include "deflate_budget.h"

/* Starts a new window at now_us when the current one is over: the
   next level is decided by the window just ended, and a window that
   ended long ago (the loop compressed nothing since) says nothing. */
static void roll(struct deflate_budget *b, int64_t now_us)
{
	int64_t age = now_us - b->window_start_us;

	if (b->window_start_us && age < DEFLATE_BUDGET_WINDOW_US)
		return;
	b->fast = b->window_start_us && age < 2 * DEFLATE_BUDGET_WINDOW_US &&
		  b->spent_us * 100 > DEFLATE_BUDGET_WINDOW_US * DEFLATE_BUDGET_SHARE_PCT;
	b->window_start_us = now_us ? now_us : 1;
	b->spent_us = 0;
}

int deflate_budget_level(struct deflate_budget *b, int64_t now_us)
{
	roll(b, now_us);
	return b->fast ? DEFLATE_LEVEL_FAST : DEFLATE_LEVEL_BEST;
}

void deflate_budget_spent(struct deflate_budget *b, int64_t now_us, int64_t spent_us)
{
	roll(b, now_us);
	if (spent_us > 0)
		b->spent_us += spent_us;
}
