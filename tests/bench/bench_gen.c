/* bench_gen: terminal output generators for the benchmarks.

     bench_gen tui BYTES COLS ROWS   full-screen redraws until BYTES are out:
				     every row addressed with CUP, a 256-colour
				     SGR change every 8 cells, text that moves
				     each frame (a TUI's redraw loop)
     bench_gen colour COLS ROWS      paints the screen once with a new
				     256-colour foreground on every cell
     bench_gen fgbg COLS ROWS        the same with a new foreground and a new
				     background on every cell
     bench_gen lines N DELAY_US      N short lines, DELAY_US apart (one
				     Output frame each)
     bench_gen buildlog BYTES        a build's log until BYTES are out: a
				     progress line per object, now and then a
				     compiler warning with its source line and
				     caret; one write per line, as a build
				     tool's line-buffered output is
     bench_gen paced FILE RATE SECONDS
				     FILE (its first 4 MiB, over and over) at
				     RATE bytes a second in 4 KiB writes, for
				     SECONDS: a busy program's steady output,
				     not a flood */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void tui(unsigned long long bytes, unsigned cols, unsigned rows)
{
	static char out[1 << 16];
	unsigned long long done = 0;
	unsigned frame = 0;
	size_t n = 0;

	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	while (done < bytes) {
		n = (size_t)snprintf(out, sizeof(out), "\033[H");
		for (unsigned r = 0; r < rows && n + 64 < sizeof(out); r++) {
			n += (size_t)snprintf(out + n, sizeof(out) - n, "\033[%u;1H",
					      r + 1);
			for (unsigned c = 0; c < cols && n + 32 < sizeof(out); c++) {
				if (c % 8 == 0)
					n += (size_t)snprintf(out + n, sizeof(out) - n,
							      "\033[38;5;%u;48;5;%um",
							      (r + c + frame) % 256,
							      (r * 3 + frame) % 256);
				out[n++] = (char)('!' + (r + c + frame) % 94);
			}
		}
		n += (size_t)snprintf(out + n, sizeof(out) - n, "\033[0m");
		fwrite(out, 1, n, stdout);
		done += n;
		frame++;
	}
	printf("\033[0m\033[%u;1H", rows);
	fflush(stdout);
}

/* Every cell's foreground differs from the one before it (and, with bg,
   its background too), cycling through the 256 colours. */
static void colour(unsigned cols, unsigned rows, int bg)
{
	printf("\033[H\033[2J");
	for (unsigned r = 0; r < rows; r++) {
		printf("\033[%u;1H", r + 1);
		for (unsigned c = 0; c < cols; c++) {
			unsigned i = r * cols + c;

			if (bg)
				printf("\033[38;5;%u;48;5;%um", i % 256,
				       (i * 7 + 3) % 256);
			else
				printf("\033[38;5;%um", i % 256);
			putchar('A' + (int)(i % 26));
		}
	}
	printf("\033[0m\033[1;1H");
	fflush(stdout);
}

static void lines(unsigned n, unsigned delay_us)
{
	for (unsigned i = 0; i < n; i++) {
		printf("line %u of %u\n", i + 1, n);
		fflush(stdout);
		usleep(delay_us);
	}
}

/* A fixed pseudo-random sequence: every run writes the same log. */
static unsigned next_rand(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return (*state >> 16) & 0x7fff;
}

static void buildlog(unsigned long long bytes)
{
	static const char *dirs[] = {"gateway", "sidecar", "shared",
				     "cli",	"auth",	   "wsproto"};
	static const char *words[] = {"conn",  "session", "frame",   "link",
				      "route", "config",  "replay",  "ring",
				      "token", "store",	  "metrics", "task"};
	unsigned long long done = 0;
	unsigned st = 7, total = 4000;

	setvbuf(stdout, NULL, _IOLBF, 1 << 12);
	for (unsigned i = 1; done < bytes; i++) {
		const char *d = dirs[next_rand(&st) % 6], *w = words[next_rand(&st) % 12];
		unsigned k = next_rand(&st) % 40;
		int n = printf(
		    "[%3u%%] Building C object %s/CMakeFiles/ptg_%s.dir/%s_%u.c.o\n",
		    i * 100 / total % 101, d, d, w, k);

		if (next_rand(&st) % 9 == 0) {
			unsigned line = next_rand(&st) % 900 + 1,
				 col = next_rand(&st) % 60 + 1;

			n += printf("%s/%s_%u.c:%u:%u: warning: unused variable 'n_%s' "
				    "[-Wunused-variable]\n",
				    d, w, k, line, col, w);
			n += printf("  %4u |         size_t n_%s = %s_count(%s);\n", line,
				    w, w, d);
			n += printf("       |                %*s^~~~~~~\n",
				    (int)(col % 20), "");
		}
		done += (unsigned long long)(n > 0 ? n : 0);
	}
	fflush(stdout);
}

/* Adds ns to t. */
static void advance(struct timespec *t, long long ns)
{
	ns += t->tv_nsec;
	t->tv_sec += (time_t)(ns / 1000000000);
	t->tv_nsec = (long)(ns % 1000000000);
}

static int paced(const char *path, unsigned long long rate, unsigned seconds)
{
	static char data[4 << 20];
	const size_t chunk = 4096;
	FILE *f = fopen(path, "rb");
	size_t len = f ? fread(data, 1, sizeof(data), f) : 0, at = 0;
	struct timespec next;
	long long gap_ns, writes;

	if (f)
		fclose(f);
	if (len < chunk || rate == 0) {
		fprintf(stderr, "bench_gen paced: %s: need %zu bytes and a rate\n", path,
			chunk);
		return 2;
	}
	gap_ns = (long long)(1e9 * (double)chunk / (double)rate);
	writes = (long long)((double)rate * seconds / (double)chunk);
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (writes-- > 0) {
		if (at + chunk > len)
			at = 0;
		if (write(STDOUT_FILENO, data + at, chunk) != (ssize_t)chunk)
			return 1;
		at += chunk;
		advance(&next, gap_ns);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "tui"))
		tui(strtoull(argv[2], NULL, 10), (unsigned)atoi(argv[3]),
		    (unsigned)atoi(argv[4]));
	else if (argc == 4 && !strcmp(argv[1], "colour"))
		colour((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]), 0);
	else if (argc == 4 && !strcmp(argv[1], "fgbg"))
		colour((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]), 1);
	else if (argc == 4 && !strcmp(argv[1], "lines"))
		lines((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]));
	else if (argc == 3 && !strcmp(argv[1], "buildlog"))
		buildlog(strtoull(argv[2], NULL, 10));
	else if (argc == 5 && !strcmp(argv[1], "paced"))
		return paced(argv[2], strtoull(argv[3], NULL, 10),
			     (unsigned)atoi(argv[4]));
	else {
		fprintf(stderr,
			"usage: bench_gen tui BYTES COLS ROWS | colour COLS ROWS | "
			"fgbg COLS ROWS | "
			"lines N DELAY_US | buildlog BYTES | paced FILE RATE SECONDS\n");
		return 2;
	}
	return 0;
}
