/* deflate_budget: how hard the gateway compresses outgoing frames, by
   how much of the loop compressing has taken lately.

   Compressing is done once per frame for every client that agreed
   permessage-deflate, on the loop that also carries every keystroke.
   At level 6 that costs 5 to 35 ms per MiB of output (pmd.h;
   the most for TUI redraws and random bytes), so a session flooding
   tens of MB/s would have the loop compress for most of its time and
   every echo wait behind it. While compressing took more than
   DEFLATE_BUDGET_SHARE of the last window, frames are compressed at
   level 1 (1.3 to 2.6 times faster on costly text, up to a fifth more
   bytes); a human-paced stream stays at level 6.

   Pure logic on the caller's clock (microseconds). */
#ifndef PTG_DEFLATE_BUDGET_H
#define PTG_DEFLATE_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#define DEFLATE_BUDGET_WINDOW_US 100000 /* one window: 100 ms */
#define DEFLATE_BUDGET_SHARE_PCT 20	/* of a window, at most, at level 6 */
#define DEFLATE_LEVEL_BEST	 6
#define DEFLATE_LEVEL_FAST	 1

struct deflate_budget {
	int64_t window_start_us;
	int64_t spent_us; /* compressing, in the current window */
	bool fast;	  /* the previous window went over its share */
};

/* The level for a frame compressed now. */
int deflate_budget_level(struct deflate_budget *b, int64_t now_us);
/* Counts a compression that took spent_us of the loop's CPU time,
   ending at now_us (wall clock). */
void deflate_budget_spent(struct deflate_budget *b, int64_t now_us, int64_t spent_us);

#endif
