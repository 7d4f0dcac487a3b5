/* uuid: UUIDv7 per RFC 9562. rand_a (12 bits) holds a counter seeded at
   random each millisecond (method 1 of section 6.2), so ids made in the
   same millisecond still sort in creation order; when the counter runs
   out the timestamp is advanced by one millisecond. */
#include "uuid.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "timeutil.h"

static int64_t last_ms = -1;
static uint32_t seq_counter;

static void fill_random(uint8_t *d, size_t n)
{
	while (n > 0) {
		ssize_t r = getrandom(d, n, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			/* A daemon without a kernel RNG cannot make ids safely. */
			perror("getrandom");
			abort();
		}
		d += r;
		n -= (size_t)r;
	}
}

/* Random bytes from a pool refilled 256 bytes at a time: the gateway
   makes an id for every frame it sends, and a getrandom call each was
   a syscall per keystroke's echo. Each byte is used once (the daemons'
   forked children exec at once, so no pool copied by a fork is drawn
   from twice). */
static void pool_random(void *p, size_t n)
{
	static uint8_t pool[256];
	static size_t left;
	uint8_t *d = p;

	while (n > 0) {
		size_t k;

		if (!left) {
			fill_random(pool, sizeof(pool));
			left = sizeof(pool);
		}
		k = n < left ? n : left;
		memcpy(d, pool + sizeof(pool) - left, k);
		explicit_bzero(pool + sizeof(pool) - left, k);
		left -= k;
		d += k;
		n -= k;
	}
}

/* Picks this id's (ms, counter); counter seeds leave half the space so a
   burst in one ms rarely needs to borrow the next one. */
static void next(uint16_t seed, int64_t *ms, uint32_t *counter)
{
	int64_t now = time_now_ms();

	if (now > last_ms) {
		last_ms = now;
		seq_counter = seed & 0x7ff;
	} else if (++seq_counter > 0xfff) {
		last_ms++;
		seq_counter = seed & 0x7ff;
	}
	*ms = last_ms;
	*counter = seq_counter;
}

void uuid_v7_new(char out[UUID_STRLEN + 1])
{
	uint8_t b[16];
	uint8_t r[10];
	int64_t ms;
	uint32_t counter;
	int i;

	pool_random(r, sizeof(r));
	next((uint16_t)(r[8] << 8 | r[9]), &ms, &counter);
	for (i = 0; i < 6; i++)
		b[i] = (uint8_t)((uint64_t)ms >> (40 - 8 * i));
	b[6] = (uint8_t)(0x70 | (counter >> 8 & 0x0f));
	b[7] = (uint8_t)(counter & 0xff);
	b[8] = (uint8_t)(0x80 | (r[0] & 0x3f));
	for (i = 9; i < 16; i++)
		b[i] = r[i - 8];
	/* 8-4-4-4-12 hex digits, by hand: an id per frame the gateway sends. */
	for (i = 0; i < 16; i++) {
		*out++ = "0123456789abcdef"[b[i] >> 4];
		*out++ = "0123456789abcdef"[b[i] & 0xf];
		if (i == 3 || i == 5 || i == 7 || i == 9)
			*out++ = '-';
	}
	*out = '\0';
}

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool uuid_is_valid(const char *s)
{
	int i;

	for (i = 0; i < UUID_STRLEN; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return 0;
		} else if (!is_hex(s[i])) {
			return 0;
		}
	}
	return s[UUID_STRLEN] == '\0';
}
