/*
 * C checks of the library's allocation (src/core/alloc.c) and of the node
 * arenas' blocks (src/core/arena.c) where the system has transparent huge
 * pages: a large block asks for them over its whole mapping (a hint on
 * part of it would split the mapping, and realloc could no longer grow it
 * in place), which an arena's full groups get too, and a block of a
 * megabyte and more lies on whole huge pages. Where there are none, only
 * that the allocations work.
 */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include "devplan/devplan.h"
#include "../../src/core/internal.h"
#include "../../src/core/arena.h"

#define CHECK(cond) do { if (cond) (*passed)++; else { (*failed)++; \
  printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

void dp_test_alloc(int *passed, int *failed);

/* 1 when transparent huge pages can be asked for (not "[never]"). */
static int thp_available(void) {
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  char line[128] = "";
  if (!f) return 0;
  int ok = fgets(line, sizeof line, f) != NULL && !strstr(line, "[never]");
  fclose(f);
  return ok && dp__huge_page_size() > 0;
}

/* 1 when every mapping of /proc/self/smaps that [p, p + n) lies in is
   marked for huge pages ("hg" among its VmFlags): a hint on part of a
   block leaves its ends in mappings without the mark. (A block in the heap
   may lie in two marked mappings; one glibc maps on its own lies in one.) */
static int huge_mappings(const void *p, size_t n) {
  FILE *f = fopen("/proc/self/smaps", "r");
  char line[512];
  int in = 0, seen = 0, all = 1;
  if (!f) return 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long long lo, hi;
    if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      in = (uintptr_t)p < hi && (uintptr_t)p + n > lo;
      seen += in;
    } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
      all &= strstr(line, " hg") != NULL;
      in = 0;
    }
  }
  fclose(f);
  return seen && all;
}

static char *format(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = dp_vformat(fmt, ap);
  va_end(ap);
  return s;
}

void dp_test_alloc(int *passed, int *failed) {
  int thp = thp_available();
  size_t n = (size_t)16 << 20;
  char *p = dp_malloc(n);
  CHECK(p != NULL);
  if (!p) return;
  memset(p, 1, n);
  if (thp) CHECK(huge_mappings(p, n));
  char *q = dp_realloc(p, 4 * n); /* grown: still marked all over */
  CHECK(q != NULL);
  if (!q) {
    free(p);
    return;
  }
  CHECK(q[n - 1] == 1);
  if (thp) CHECK(huge_mappings(q, 4 * n));
  free(q);

  /* an arena's groups: 1, 2, 4, ... 64 chunks, then 128 (8 MiB), large
     enough for the huge pages' hint */
  dp__arena a = DP__ARENA_INIT;
  enum { NODES = 127 + 1 };
  static char *nodes[NODES];
  size_t chunk = (size_t)64 * 1024, big = chunk / 2 + 8; /* one a chunk */
  int made = 0;
  for (; made < NODES; made++) {
    int in_arena = 0;
    char *node = dp__arena_alloc(&a, big, &in_arena);
    if (node && !in_arena) free(node);
    if (!node || !in_arena) break;
    nodes[made] = node;
  }
  CHECK(made == NODES);
  if (thp && made == NODES) CHECK(huge_mappings(nodes[NODES - 1], big));
  dp__arena_done(&a);
  for (int i = 0; i < made; i++) dp__arena_node_free(nodes[i]);

  /* a block mapped on huge page boundaries (an arena's large groups; not
     in the sanitizer build, which keeps its own allocator's blocks) */
  size_t h = dp__huge_page_size();
  if (thp && h && !DP__SANITIZED) {
    int oom = -1;
    char *m = dp__map_huge(4 * h, &oom);
    CHECK(m != NULL && oom == 0);
    if (m) {
      CHECK(((uintptr_t)m & (h - 1)) == 0);
      memset(m, 2, 4 * h);
      CHECK(huge_mappings(m, 4 * h));
      CHECK(m[4 * h - 1] == 2);
      dp__unmap_huge(m, 4 * h);
    }
    CHECK(dp__map_huge(h + 4096, &oom) == NULL && oom == 0); /* (not whole huge pages) */
  }

  /* a block of a megabyte and more is asked for as whole huge pages (less
     glibc's header): glibc maps it on its own where its threshold is a
     megabyte (as devplan's main sets it), and Linux puts such a mapping on
     a huge page boundary, so all of it lies on marked huge pages */
  CHECK(dp_huge_size(1000) == 1000);
  CHECK(dp_huge_size(((size_t)1 << 20) - 1) == ((size_t)1 << 20) - 1);
  if (h) {
    size_t s = dp_huge_size((size_t)1200 * 1024);
    CHECK(s >= (size_t)1200 * 1024 && (s + 64) % h == 0 && s < h);
    CHECK(dp_huge_size(s) == s);              /* (asked again: the same) */
    CHECK(dp_huge_size(3 * h) == 4 * h - 64); /* (room for the header) */
  }
#if defined(__GLIBC__) && defined(__linux__) && !DP__SANITIZED
  if (thp && h) {
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    /* (more than the heap has free, which glibc would use first) */
    size_t m = (size_t)1200 * 1024 + mallinfo2().fordblks;
    char *b = dp_malloc(m);
    CHECK(b != NULL);
    if (b) {
      CHECK((uintptr_t)b % h < 64); /* (a huge page's start, after glibc's header) */
      CHECK(huge_mappings(b, m));
      memset(b, 3, m);
      char *g = dp_realloc(b, m + 3 * h); /* grown: still on whole huge pages */
      CHECK(g != NULL);
      if (g) {
        CHECK(g[m - 1] == 3 && huge_mappings(g, m + 3 * h));
        CHECK((uintptr_t)g % h < 64);
        free(g);
      } else {
        free(b);
      }
    }
  }
#endif

  /* dp_grow8: eight times at a step, at least to what is needed */
  uint32_t *g8 = NULL, cap8 = 0;
  CHECK(dp_grow8((void **)&g8, &cap8, 1, sizeof *g8) == 0 && cap8 == 16);
  CHECK(dp_grow8((void **)&g8, &cap8, 17, sizeof *g8) == 0 && cap8 == 128);
  CHECK(dp_grow8((void **)&g8, &cap8, 5000, sizeof *g8) == 0 && cap8 >= 5000);
  CHECK(dp_grow8((void **)&g8, &cap8, 10, sizeof *g8) == 0 && cap8 >= 5000); /* (never shrinks) */
  free(g8);

  /* dp_vformat: the whole text, however long */
  char *fs = format("%s-%d", "cuda", 7);
  CHECK(fs && strcmp(fs, "cuda-7") == 0);
  free(fs);
  fs = format("%0300d", 5);
  CHECK(fs && strlen(fs) == 300 && fs[299] == '5');
  free(fs);

  /* huge pages on request: what the system's mode says, asked twice */
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  char line[128] = "";
  if (f && !fgets(line, sizeof line, f)) line[0] = 0;
  if (f) fclose(f);
  int on = dp_huge_pages_on_request();
  CHECK(on == (strstr(line, "[madvise]") != NULL));
  CHECK(dp_huge_pages_on_request() == on);
}
