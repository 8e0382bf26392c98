/*
 * C checks of the library's allocation (src/core/alloc.c) and of the node
 * arenas' blocks (src/core/arena.c) where the system has transparent huge
 * pages: a large block asks for them over its whole mapping (the mapping
 * stays one, so that realloc can grow it in place), and an arena's full
 * groups start on a huge page. Where there are none, only that the
 * allocations work.
 */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

/* 1 when one mapping of /proc/self/smaps holds all of [p, p + n) and is
   marked for huge pages ("hg" among its VmFlags). */
static int one_huge_mapping(const void *p, size_t n) {
  FILE *f = fopen("/proc/self/smaps", "r");
  char line[512];
  int in = 0, found = 0;
  if (!f) return 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long long lo, hi;
    if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      in = (uintptr_t)p >= lo && (uintptr_t)p + n <= hi;
    } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
      found = strstr(line, " hg") != NULL;
      break;
    }
  }
  fclose(f);
  return found;
}

void dp_test_alloc(int *passed, int *failed) {
  int thp = thp_available();
  size_t n = (size_t)16 << 20;
  char *p = dp_malloc(n);
  CHECK(p != NULL);
  if (!p) return;
  memset(p, 1, n);
  if (thp) CHECK(one_huge_mapping(p, n));
  char *q = dp_realloc(p, 4 * n); /* grown: still one mapping, still marked */
  CHECK(q != NULL);
  if (!q) {
    free(p);
    return;
  }
  CHECK(q[n - 1] == 1);
  if (thp) CHECK(one_huge_mapping(q, 4 * n));
  free(q);

  /* an arena's groups: 1, 2, 4, ... 32 chunks, then 64 (4 MiB), which
     start on a huge page */
  dp__arena a = DP__ARENA_INIT;
  enum { NODES = 63 + 64 + 1 };
  static char *nodes[NODES];
  size_t chunk = (size_t)64 * 1024, big = chunk / 2 + 8; /* one a chunk */
  int aligned = 0, made = 0;
  for (; made < NODES; made++) {
    int in_arena = 0;
    char *node = dp__arena_alloc(&a, big, &in_arena);
    if (node && !in_arena) free(node);
    if (!node || !in_arena) break;
    nodes[made] = node;
    uintptr_t h = dp__huge_page_size();
    if (made == 63 && h) aligned = ((uintptr_t)nodes[made] & ~(uintptr_t)(chunk - 1)) % h == 0;
  }
  CHECK(made == NODES);
  if (thp) CHECK(aligned);
  dp__arena_done(&a);
  for (int i = 0; i < made; i++) dp__arena_node_free(nodes[i]);
}
