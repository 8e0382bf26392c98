/*
 * C checks of which conflicts are independent (src/planner/independent.c)
 * against brute force: random links and conflicts over a few thousand
 * domains; a conflict is independent unless an earlier independent one has
 * its two sides in the two classes it joins now (found by scanning them
 * all over a plain union-find). Exercises the hash's growth and deletions
 * and the moves of conflicts between classes as they merge.
 */
#include <stdio.h>
#include <stdlib.h>
#include "../../src/planner/planner.h"

#define CHECK(cond) do { if (cond) (*passed)++; else { (*failed)++; \
  printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

void dp_test_independent(int *passed, int *failed);

enum { MAXN = 3000, MAXREP = 2000 };

typedef struct brute { uint32_t parent[MAXN], a[MAXREP], b[MAXREP], nrep; } brute;

static uint32_t root(const brute *s, uint32_t x) {
  while (s->parent[x] != x) x = s->parent[x];
  return x;
}

/* Do the classes of x and y hold the two sides of an earlier conflict? */
static int met_before(const brute *s, uint32_t x, uint32_t y) {
  uint32_t rx = root(s, x), ry = root(s, y);
  for (uint32_t k = 0; k < s->nrep; k++) {
    uint32_t p = root(s, s->a[k]), q = root(s, s->b[k]);
    if ((p == rx && q == ry) || (p == ry && q == rx)) return 1;
  }
  return 0;
}

static uint32_t next_random(uint64_t *st) {
  *st = *st * 6364136223846793005u + 1442695040888963407u;
  return (uint32_t)(*st >> 33);
}

void dp_test_independent(int *passed, int *failed) {
  static brute s;
  uint64_t st = 42;
  long wrong = 0, independent = 0, total = 0;
  for (int round = 0; round < 200; round++) {
    uint32_t n = 2 + next_random(&st) % (round % 2 ? 60 : MAXN);
    int steps = (int)(next_random(&st) % (round % 2 ? 200 : 1900));
    for (uint32_t i = 0; i < n; i++) s.parent[i] = i;
    s.nrep = 0;
    dp__indep *t = dp__indep_new();
    if (!t) {
      CHECK(t != NULL);
      return;
    }
    for (int k = 0; k < steps && s.nrep < MAXREP; k++) {
      uint32_t a = next_random(&st) % n, b = next_random(&st) % n;
      uint32_t ra = root(&s, a), rb = root(&s, b);
      if (ra == rb) continue;
      if (next_random(&st) % 3) {
        /* a link; never of the two sides of a conflict (the domains cannot join them) */
        if (met_before(&s, a, b)) continue;
        s.parent[ra] = rb;
        wrong += dp__indep_link(t, a, b) != 0;
      } else {
        int want = !met_before(&s, a, b);
        wrong += dp__indep_conflict(t, a, b) != want;
        total++;
        if (want) {
          s.a[s.nrep] = a;
          s.b[s.nrep++] = b;
          independent++;
        }
      }
    }
    dp__indep_free(t);
  }
  CHECK(wrong == 0);
  CHECK(independent > 1000 && total > independent); /* both kinds met, many times */
}
