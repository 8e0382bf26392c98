/*
 * Hot pages for bench/perf.lua --hot-pages MB: maps MB MiB, writes one
 * byte a page and exits. The kernel then holds that much memory freed a
 * moment ago, so the step run next in another process finds its fresh
 * pages there, not among those the virtual machine's balloon has handed
 * back to the host (a host fault each, 1-2 ms a MiB: docs/benchmarks.md,
 * fresh pages). Every size of a step then starts alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv) {
  long mb = argc == 2 ? strtol(argv[1], NULL, 10) : -1;
  if (mb <= 0) {
    fprintf(stderr, "usage: hotpages MB\n");
    return 2;
  }
  size_t n = (size_t)mb << 20;
  volatile char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("hotpages: mmap");
    return 1;
  }
#if defined(MADV_HUGEPAGE)
  /* (in huge pages, as the library maps its large blocks: on this machine
     only memory freed as huge pages makes the next huge page faults hot) */
  (void)madvise((void *)p, n, MADV_HUGEPAGE);
#endif
  for (size_t i = 0; i < n; i += 4096) p[i] = 1;
  return 0;
}
