/* bench_data: the terminal output the sidecar and screen benchmarks feed
   (PTG_BENCH_WORKLOAD), the same bytes on every run. */
#ifndef PTG_BENCH_DATA_H
#define PTG_BENCH_DATA_H

#include <stddef.h>
#include <stdio.h>

/* The workloads' names, for usage messages. */
#define BENCH_DATA_WORKLOADS "hex (the default), long, tui or random"

/* Writes `bytes` of the workload named w (NULL: hex) to f, as a program
   prints it (LF line ends, which a PTY turns into CR LF). Returns 0, or
   -1 for an unknown name (nothing written). */
int bench_data_write(FILE *f, const char *w, size_t bytes);

#endif
