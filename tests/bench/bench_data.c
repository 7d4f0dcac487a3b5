/* bench_data: see bench_data.h. */
#include "bench_data.h"

#include <stdint.h>
#include <string.h>

/* long: one line of 'a' with no newline (the screen
   model wraps and scrolls every 120 characters). */
static void make_long(FILE *f, size_t bytes)
{
	static char a[65536];

	memset(a, 'a', sizeof(a));
	for (size_t done = 0; done < bytes; done += sizeof(a))
		fwrite(a, 1, bytes - done < sizeof(a) ? bytes - done : sizeof(a), f);
}

/* tui: full-screen 120x30 redraws with cursor
   addressing and a 256-colour change every 6 cells, as a TUI repaints. */
static void make_tui(FILE *f, size_t bytes)
{
	size_t done = 0;
	unsigned frame = 0;

	while (done < bytes) {
		done += (size_t)fprintf(f, "\033[H");
		for (unsigned r = 1; r <= 30 && done < bytes; r++) {
			done += (size_t)fprintf(f, "\033[%u;1H", r);
			for (unsigned c = 0; c < 120; c += 6)
				done += (size_t)fprintf(
				    f, "\033[38;5;%u;48;5;%um%06u", (frame + r + c) % 256,
				    (frame * 7 + c) % 256,
				    (frame * 1000 + r * 120 + c) % 1000000);
			done += (size_t)fprintf(f, "\033[0m");
		}
		frame++;
	}
}

/* random: xorshift bytes, the same on every run. */
static void make_random(FILE *f, size_t bytes)
{
	static uint64_t blk[8192];
	uint64_t x = 88172645463325252ull;

	for (size_t done = 0; done < bytes; done += sizeof(blk)) {
		for (size_t i = 0; i < 8192; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			blk[i] = x;
		}
		fwrite(blk, 1, bytes - done < sizeof(blk) ? bytes - done : sizeof(blk),
		       f);
	}
}

/* hex (the default): rows of a hex dump, 16 bytes each, a line feed
   after each. */
static void make_hex(FILE *f, size_t bytes)
{
	unsigned long row = 0;
	size_t done = 0;

	while (done < bytes) {
		int n = fprintf(f,
				"%08lx  %02lx %02lx %02lx %02lx %02lx %02lx %02lx %02lx  "
				"%02lx %02lx %02lx %02lx %02lx %02lx %02lx %02lx\n",
				row * 16, row & 0xff, (row >> 3) & 0xff, 7ul, 0x41ul,
				row % 251, 3ul, 9ul, 0x7eul, 1ul, 2ul, 3ul, 4ul, row % 13,
				6ul, 7ul, 8ul);
		done += (size_t)n;
		row++;
	}
}

int bench_data_write(FILE *f, const char *w, size_t bytes)
{
	if (!w || strcmp(w, "hex") == 0)
		make_hex(f, bytes);
	else if (strcmp(w, "long") == 0)
		make_long(f, bytes);
	else if (strcmp(w, "tui") == 0)
		make_tui(f, bytes);
	else if (strcmp(w, "random") == 0)
		make_random(f, bytes);
	else
		return -1;
	return 0;
}
