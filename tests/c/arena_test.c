/*
 * C checks of node arenas' given blocks (src/core/arena.c,
 * dp__arena_adopt): a block given to an arena is where its next nodes go,
 * before any new memory; the block lives as long as one of its nodes does
 * (freed with the last); one too small for a chunk, or never cut, is freed
 * (ASan's leak check sees the rest). And dp__release_tail: a block's pages
 * past what it uses go back (read as zero after), what it uses stays.
 */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/devplan.h"
#include "../../src/core/arena.h"
#include "../../src/core/internal.h"

#define CHECK(cond) do { if (cond) (*passed)++; else { (*failed)++; \
  printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

void dp_test_arena(int *passed, int *failed);

static int inside(const void *p, const char *b, size_t n) {
  return (const char *)p >= b && (const char *)p < b + n;
}

void dp_test_arena(int *passed, int *failed) {
  dp_ctx *ctx = dp_ctx_new();
  CHECK(ctx != NULL && dp_register_builtin_ops(ctx, NULL) == 0);
  if (!ctx) return;
  dp_var *x = dp_var_new("x", NULL, NULL, DP_NOSPAN);
  dp_op *neg = dp_op_get(ctx, "negative");
  CHECK(x != NULL && neg != NULL);
  if (!x || !neg) {
    dp_release(x);
    dp_release(ctx);
    return;
  }
  /* a given block (4 chunks and some): the arena's nodes are made in it */
  size_t n = (size_t)5 * 64 * 1024;
  char *block = malloc(n);
  dp__arena a = DP__ARENA_INIT;
  CHECK(block != NULL && dp__arena_adopt(&a, block, n) == 0);
  dp_expr *arg = &x->e;
  enum { CALLS = 3000 }; /* (64 bytes each: about 3 chunks of the 4 the block holds) */
  dp_call **calls = calloc(CALLS, sizeof *calls);
  int in = 0;
  for (int i = 0; calls && i < CALLS; i++) {
    calls[i] = dp__call_new_in(&a, &neg->e, 1, &arg, NULL, DP_NOSPAN);
    in += calls[i] && inside(calls[i], block, n);
  }
  CHECK(calls != NULL && in == CALLS);
  dp__arena_done(&a);
  /* the block outlives the arena while a node is held, and goes with the
     last (a use after free or a leak here is ASan's) */
  for (int i = 0; calls && i < CALLS - 1; i++) dp_release(calls[i]);
  CHECK(calls && calls[CALLS - 1]->nargs == 1 && calls[CALLS - 1]->args[0] == arg);
  if (calls) dp_release(calls[CALLS - 1]);
  free(calls);
  /* a block too small for a chunk is freed at once; one never cut with the arena */
  dp__arena b = DP__ARENA_INIT;
  CHECK(dp__arena_adopt(&b, malloc(4096), 4096) == 0 && b.given == NULL);
  CHECK(dp__arena_adopt(&b, malloc(n), n) == 0 && b.given != NULL);
  dp__arena_done(&b);
  CHECK(b.given == NULL);
  dp_release(x);
  dp_release(ctx);
  /* a block of 3 MiB that uses 1: the rest of its pages go back (on Linux,
     outside the sanitizer build, where it does nothing) */
  size_t big = (size_t)3 << 20, used = (size_t)1 << 20;
  unsigned char *blk = dp_malloc(big);
  CHECK(blk != NULL);
  if (!blk) return;
  memset(blk, 0xAB, big);
  dp__release_tail(blk, used, big);
  CHECK(blk[0] == 0xAB && blk[used - 1] == 0xAB);
#if defined(__linux__) && !DP__SANITIZED
  CHECK(blk[used + 8192] == 0 && blk[big - 1] == 0);
#endif
  free(blk);
  /* a block of one huge page keeps it whole, tail and all (where huge
     pages come on request: elsewhere the tail goes back as above) */
  size_t one = (size_t)3 << 19; /* (1.5 MiB: dp_huge_size makes it one huge page) */
  blk = dp_malloc(one);
  CHECK(blk != NULL);
  if (!blk) return;
  memset(blk, 0xCD, one);
  dp__release_tail(blk, used, one);
  CHECK(blk[0] == 0xCD && blk[used - 1] == 0xCD);
  if (dp__huge_page_size() && dp_huge_size(one) <= dp__huge_page_size()) CHECK(blk[used + 8192] == 0xCD);
  /* none of it is left on small pages; nor of a block not on huge pages */
  CHECK(dp__tail_small(blk, used, one) == 0);
  CHECK(dp__tail_small(blk, 100, 4096) == 0);
  free(blk);
  /* a block of 3 MiB using 2.5: what its last huge page holds stays on
     small pages once the rest goes back (where huge pages come on
     request and the sanitizer is not in: else nothing is split) */
  size_t h = dp__huge_page_size(), most = (size_t)5 << 19;
  blk = dp_malloc(big);
  CHECK(blk != NULL);
  if (!blk) return;
#if defined(__linux__) && !DP__SANITIZED
  if (h && dp_huge_size(big) > h) {
    uintptr_t end = (uintptr_t)blk + most, start = end & ~(uintptr_t)(h - 1);
    CHECK(start > (uintptr_t)blk && dp__tail_small(blk, most, big) == end - start);
    CHECK(dp__tail_small(blk, most, big) > 0 && dp__tail_small(blk, most, big) < h);
  } else {
    CHECK(dp__tail_small(blk, most, big) == 0);
  }
#else
  CHECK(dp__tail_small(blk, most, big) == 0);
  (void)h;
#endif
  free(blk);
}
