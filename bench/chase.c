/*
 * The machine's memory latency by working set, for reading cache-miss
 * figures (bench/misses.sh): a random pointer chase through blocks of 64
 * KiB to 256 MiB, one 64-byte line a step, printing the nanoseconds a
 * step. Where the latency jumps is the cache that stops holding the
 * block: the size to give bench/misses.sh (LL_MIB) and the reason a step
 * table's 10k -> 100k ratio can exceed 10 (docs/benchmarks.md, the
 * memory hierarchy). A virtual machine may report cache sizes that are
 * not its share of the host's (or none): this measures what it gets.
 * Usage: cc -O2 -o bin/chase bench/chase.c && taskset -c 0 bin/chase [MAX_MIB [STEPS]]
 * (the largest block, default 256 MiB; the steps a block, default 20,000,000)
 */
#define _POSIX_C_SOURCE 199309L /* (clock_gettime) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LINE 64

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) { /* xorshift64: the same chase every run */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Nanoseconds a step of a random cycle through n lines (-1: no memory). */
static double chase(size_t n, long steps) {
  size_t *a = malloc(n * LINE), *perm = malloc(n * sizeof *perm);
  if (!a || !perm) {
    free(a);
    free(perm);
    return -1;
  }
  const size_t w = LINE / sizeof *a; /* words a line */
  for (size_t i = 0; i < n; i++) perm[i] = i;
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = next() % (i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (size_t i = 0; i < n; i++) a[perm[i] * w] = perm[(i + 1) % n] * w;
  volatile size_t sink;
  size_t p = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long i = 0; i < steps; i++) p = a[p];
  clock_gettime(CLOCK_MONOTONIC, &t1);
  sink = p;
  (void)sink;
  free(a);
  free(perm);
  return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)steps;
}

int main(int argc, char **argv) {
  long max_mib = argc > 1 ? strtol(argv[1], NULL, 10) : 256, steps = argc > 2 ? strtol(argv[2], NULL, 10) : 20000000L;
  if (argc > 3 || max_mib < 1 || max_mib > 65536 || steps < 1) {
    fprintf(stderr, "usage: chase [MAX_MIB (1-65536, default 256) [STEPS (default 20000000)]]\n");
    return 2;
  }
  printf("%10s %10s\n", "block", "ns a read");
  for (size_t kib = 64; kib <= (size_t)max_mib * 1024; kib *= 2) {
    double ns = chase(kib * 1024 / LINE, steps);
    if (ns < 0) {
      fprintf(stderr, "chase: out of memory at %zu KiB\n", kib);
      return 1;
    }
    if (kib < 1024) printf("%6zu KiB %10.1f\n", kib, ns);
    else printf("%6zu MiB %10.1f\n", kib / 1024, ns);
  }
  return 0;
}
