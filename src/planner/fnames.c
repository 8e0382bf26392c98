/*
 * The global functions of a module by name: sorted once, then found by
 * binary search. The module's own lookup scans every definition, so a pass
 * that looks up each global reference of a module with many definitions
 * would be quadratic. order.c also uses the sorted order (names break ties).
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"

typedef struct named { const char *name; uint32_t fn; } named;

static int by_name(const void *a, const void *b) {
  return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

int dp__fnames_init(dp_fnames *f, const dp_module *m) {
  *f = (dp_fnames){m, m->nfuncs, NULL, NULL};
  uint32_t n = m->nfuncs ? m->nfuncs : 1;
  named *v = dp_malloc(n * sizeof *v);
  f->byname = dp_malloc(n * sizeof *f->byname);
  f->rank = dp_malloc(n * sizeof *f->rank);
  if (!v || !f->byname || !f->rank) {
    free(v);
    dp__fnames_free(f);
    return -1;
  }
  for (uint32_t i = 0; i < f->n; i++) v[i] = (named){m->funcs[i].global->name, i};
  qsort(v, f->n, sizeof *v, by_name);
  for (uint32_t r = 0; r < f->n; r++) {
    f->byname[r] = v[r].fn;
    f->rank[v[r].fn] = r;
  }
  free(v);
  return 0;
}

uint32_t dp__fnames_find(const dp_fnames *f, const char *name) {
  uint32_t lo = 0, hi = f->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    int c = strcmp(f->m->funcs[f->byname[mid]].global->name, name);
    if (c == 0) return f->byname[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return DP_NONE_ID;
}

void dp__fnames_free(dp_fnames *f) {
  free(f->byname);
  free(f->rank);
  f->byname = f->rank = NULL;
}
