/*
 * Node arenas (see arena.h): chunks of CHUNK bytes, aligned on CHUNK, each
 * counting its live nodes (+1 while the arena fills it).
 */
#include <stdlib.h>
#include <stdint.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif
#include "internal.h"
#include "arena.h"

#define CHUNK ((size_t)64 * 1024)

typedef struct dp__chunk {
  uint32_t live; /* nodes not freed, + 1 while the arena fills it */
  uint32_t used; /* bytes given out, the header included */
} dp__chunk;

#define HEAD ((sizeof(dp__chunk) + 15) & ~(size_t)15)

static void drop(dp__chunk *c) {
  if (--c->live == 0) free(c);
}

void dp__prefault(void *p, size_t n) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  static uintptr_t page;
  if (!page) {
    long ps = sysconf(_SC_PAGESIZE);
    page = ps > 0 ? (uintptr_t)ps : 4096;
  }
  uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), b = ((uintptr_t)p + n) & ~(page - 1);
  if (n >= 16 * page && b > a) (void)madvise((void *)a, b - a, MADV_POPULATE_WRITE); /* (a hint) */
#else
  (void)p;
  (void)n;
#endif
}

void *dp__arena_alloc(dp__arena *a, size_t size, int *in_arena) {
  size = (size + 7) & ~(size_t)7;
  *in_arena = 0;
  if (!a || size > CHUNK - HEAD) return dp_malloc(size);
  dp__chunk *c = a->cur;
  if (!c || c->used + size > CHUNK) {
    c = dp__malloc_aligned(CHUNK, CHUNK);
    if (!c) return NULL;
    dp__prefault(c, CHUNK); /* (it is all written) */
    *c = (dp__chunk){1, (uint32_t)HEAD};
    if (a->cur) drop(a->cur);
    a->cur = c;
  }
  void *p = (char *)c + c->used;
  c->used += (uint32_t)size;
  c->live++;
  *in_arena = 1;
  return p;
}

void dp__arena_done(dp__arena *a) {
  if (a->cur) drop(a->cur);
  a->cur = NULL;
}

void dp__arena_node_free(void *e) {
  drop((dp__chunk *)((uintptr_t)e & ~(uintptr_t)(CHUNK - 1)));
}
