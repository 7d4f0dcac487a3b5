/* help_screen: what the screen model's tests share: a fixed xorshift32
   stream (a test file defines HELP_SCREEN_SEED before including this, so
   each keeps its own stream and a failure reproduces on every machine)
   and the comparison of two screens by their snapshots. */
#ifndef PTG_TEST_HELP_SCREEN_H
#define PTG_TEST_HELP_SCREEN_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "buf.h"
#include "screen.h"

#ifndef HELP_SCREEN_SEED
#define HELP_SCREEN_SEED 1u
#endif

static uint32_t rng = HELP_SCREEN_SEED;

static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* Fails unless two snapshots are the same bytes; frees both. */
static inline void assert_same_snapshots(struct buf *sa, struct buf *sb)
{
	assert_int_equal(buf_size(sa), buf_size(sb));
	assert_memory_equal(buf_head(sa), buf_head(sb), buf_size(sa));
	buf_free(sa);
	buf_free(sb);
}

/* Fails unless a and b give the same snapshot: cells, cursor, pen and
   modes, byte for byte. */
static inline void assert_same_screen(struct screen *a, struct screen *b)
{
	struct buf sa = BUF_INIT, sb = BUF_INIT;

	screen_snapshot(a, &sa);
	screen_snapshot(b, &sb);
	assert_same_snapshots(&sa, &sb);
}

#endif
