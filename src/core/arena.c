/*
 * Node arenas (see arena.h): chunks of CHUNK bytes, aligned on CHUNK, each
 * counting its live nodes (+1 while the arena fills it).
 *
 * Chunks are cut from blocks of memory (groups of 1, 2, 4, ... doubling up
 * to GROUP chunks), a group going with the last of its chunks. One aligned
 * allocation per chunk left a gap of up to CHUNK before each (what the
 * alignment skips), whose first page the allocator writes: some 8% more
 * resident memory than the nodes (the parser's let module: 220 MB instead
 * of 195 at 1,000,000 calls). A large group's block is mapped on its own:
 * what its alignment skips, and its chunks not yet cut, are never touched.
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
#define GROUP 128u /* 8 MiB. A group of whole huge pages (32 chunks and
                        more) is mapped on huge page boundaries where there
                        are huge pages (dp__map_huge): no small pages
                        (larger groups would leave more chunks not yet cut
                        in the last one). A smaller group's block, or one
                        where there are none, asks CHUNK more than its
                        chunks, for the alignment (never touched). */

typedef struct dp__group {
  void *mem;     /* the block the chunks are cut from */
  char *base;    /* its first chunk: mem aligned on CHUNK */
  size_t mapped; /* its size when mapped on its own (dp__map_huge), else 0 */
  uint32_t live; /* chunks not freed, + 1 while the arena cuts chunks from it */
  uint32_t next; /* chunks cut */
  uint32_t size; /* chunks it has room for */
  struct dp__group *given; /* the next block given to the arena (dp__arena_adopt) */
} dp__group;

typedef struct dp__chunk {
  uint32_t live;    /* nodes not freed, + 1 while the arena fills it */
  uint32_t used;    /* bytes given out, the header included */
  dp__group *group;
} dp__chunk;

#define HEAD ((sizeof(dp__chunk) + 15) & ~(size_t)15)

static void drop_group(dp__group *g) {
  if (--g->live == 0) {
    if (g->mapped) dp__unmap_huge(g->mem, g->mapped);
    else free(g->mem);
    free(g);
  }
}

static void drop(dp__chunk *c) {
  if (--c->live == 0) drop_group(c->group);
}

/* A new chunk of the arena's group (a new group when it has none left:
   of 1, 2, 4, ... GROUP chunks, so that a small module holds little). */
static dp__chunk *new_chunk(dp__arena *a) {
  dp__group *g = a->group;
  if ((!g || g->next == g->size) && a->given) { /* a block given to it, pages resident */
    dp__group *ng = a->given;
    a->given = ng->given;
    if (g) drop_group(g);
    a->group = g = ng;
  }
  if (!g || g->next == g->size) {
    uint32_t size = a->groups < 7 ? 1u << a->groups : GROUP;
    dp__group *ng = dp_malloc(sizeof *ng);
    int oom = 0;
    size_t mapped = ng && size * CHUNK >= ((size_t)2 << 20) ? size * CHUNK : 0; /* (whole huge pages) */
    void *mem = mapped ? dp__map_huge(mapped, &oom) : NULL;
    if (!mem) mapped = 0;
    if (!mem && ng && !oom) { /* (as many chunks as its huge pages hold, dp_huge_size) */
      size_t n = dp_huge_size(size * CHUNK + CHUNK - 1);
      size = (uint32_t)((n - (CHUNK - 1)) / CHUNK);
      mem = dp_malloc(n);
    }
    if (!mem) {
      free(ng);
      return NULL;
    }
    char *base = (char *)(((uintptr_t)mem + CHUNK - 1) & ~(uintptr_t)(CHUNK - 1));
    *ng = (dp__group){mem, base, mapped, 1, 0, size, NULL};
    a->groups++;
    if (g) drop_group(g);
    a->group = g = ng;
  }
  dp__chunk *c = (dp__chunk *)(g->base + g->next++ * CHUNK);
  g->live++;
  dp__prefault(c, CHUNK); /* (it is all written) */
  *c = (dp__chunk){1, (uint32_t)HEAD, g};
  return c;
}

void dp__prefault(void *p, size_t n) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  uintptr_t page = dp__page_size();
  uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), b = ((uintptr_t)p + n) & ~(page - 1);
  if (n >= 16 * page && b > a) (void)madvise((void *)a, b - a, MADV_POPULATE_WRITE); /* (a hint) */
#else
  (void)p;
  (void)n;
#endif
}

void dp__release_tail(void *p, size_t used, size_t n) {
#if defined(__linux__) && defined(MADV_DONTNEED) && !DP__SANITIZED
  /* (a block of one huge page keeps it whole: giving back part of it
     splits it, and the whole array then lies on small pages, a TLB miss
     apiece: PlanDevices on 1,000,000 chain calls, whose byte arrays are of
     1 MB, took 0.115 s warm so against 0.104 s) */
  size_t h = dp__huge_page_size();
  if (h && dp_huge_size(n) <= h) return;
  uintptr_t page = dp__page_size();
  uintptr_t a = ((uintptr_t)p + used + page - 1) & ~(page - 1);
  uintptr_t b = ((uintptr_t)p + dp_huge_size(n)) & ~(page - 1);
  if (p && b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED);
#else
  (void)p;
  (void)used;
  (void)n;
#endif
}

size_t dp__tail_small(const void *p, size_t used, size_t n) {
#if defined(__linux__) && defined(MADV_DONTNEED) && !DP__SANITIZED
  size_t h = dp__huge_page_size();
  if (!p || !h || dp_huge_size(n) <= h) return 0; /* (kept whole, above) */
  uintptr_t end = (uintptr_t)p + used, start = end & ~(uintptr_t)(h - 1);
  return start > (uintptr_t)p ? (size_t)(end - start) : 0;
#else
  (void)p;
  (void)used;
  (void)n;
  return 0;
#endif
}

void *dp__arena_alloc(dp__arena *a, size_t size, int *in_arena) {
  size = (size + 7) & ~(size_t)7;
  *in_arena = 0;
  if (!a || size > CHUNK - HEAD) return dp_malloc(size);
  dp__chunk *c = a->cur;
  if (!c || c->used + size > CHUNK) {
    if (!(c = new_chunk(a))) return NULL;
    if (a->cur) drop(a->cur);
    a->cur = c;
  }
  void *p = (char *)c + c->used;
  c->used += (uint32_t)size;
  c->live++;
  *in_arena = 1;
  return p;
}

int dp__arena_adopt(dp__arena *a, void *mem, size_t n) {
  uintptr_t base = ((uintptr_t)mem + CHUNK - 1) & ~(uintptr_t)(CHUNK - 1);
  size_t skip = base - (uintptr_t)mem, size = n > skip ? (n - skip) / CHUNK : 0;
  dp__group *g = size ? dp_malloc(sizeof *g) : NULL;
  if (!g) {
    free(mem);
    return size ? -1 : 0;
  }
  *g = (dp__group){mem, (char *)base, 0, 1, 0, size > UINT32_MAX ? UINT32_MAX : (uint32_t)size, a->given};
  a->given = g;
  return 0;
}

void dp__arena_done(dp__arena *a) {
  if (a->cur) drop(a->cur);
  if (a->group) drop_group(a->group);
  while (a->given) {
    dp__group *g = a->given;
    a->given = g->given;
    drop_group(g);
  }
  *a = DP__ARENA_INIT;
}

void dp__arena_node_free(void *e) {
  drop((dp__chunk *)((uintptr_t)e & ~(uintptr_t)(CHUNK - 1)));
}
