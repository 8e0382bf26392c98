/*
 * The order in which defaulting (phase 2) visits the global functions.
 *
 * Defaulting is order dependent: a value that flows between functions (a
 * parameter passed on to a callee, say) is one domain, and the first
 * function defaulted decides it. TVM visited functions in hash-map order;
 * visiting them in definition order made the plan depend on how the text
 * happens to be arranged. The rule here depends on the program only:
 *
 *   callers before callees (a function nobody calls, such as @main, first),
 *   and by name where the calls do not decide (two functions neither of
 *   which reaches the other; in a cycle of calls, the smallest name first).
 *
 * So a value passed from a caller takes the caller's defaults, and the same
 * program gives the same plan whatever the order of its definitions.
 *
 * Requires: the index (index.c): its function ranges and global
 * references. Leaves: the order, an array of function indices.
 * Kahn's topological sort with a heap keyed by name rank: O((F + E) log F)
 * for F functions and E references.
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"

typedef struct octx {
  const dp__index *ix;
  uint32_t n;         /* functions */
  uint32_t *byname;   /* function indices sorted by name */
  uint32_t *rank;     /* function index -> position in byname */
  uint32_t *eoff;     /* callees of function i: callee[eoff[i] .. eoff[i + 1]) */
  uint32_t *callee;
  uint32_t *indeg;    /* callers not yet placed */
  uint8_t *placed;
  uint32_t *heap, nheap; /* ranks of functions ready to be placed */
} octx;

/* The call graph: for each reference @g in function i's body, an edge
   i -> g (self references left out). Two passes over the references:
   count, then fill. */
static int edges(octx *o) {
  const dp__index *f = o->ix;
  o->eoff = dp_calloc(o->n + 1, sizeof *o->eoff);
  o->callee = dp_malloc((f->ngref ? f->ngref : 1) * sizeof *o->callee);
  o->indeg = dp_calloc(o->n, sizeof *o->indeg);
  if (!o->eoff || !o->callee || !o->indeg) return -1;
  for (int pass = 0; pass < 2; pass++) {
    uint32_t fn = 0;
    for (uint32_t r = 0; r < f->ngref; r++) {
      uint32_t id = f->gref[r];
      while (fn + 1 < f->nfn && id >= f->fnid[fn + 1]) fn++;
      /* (g: an index of m->funcs, < nfn) */
      int g = dp_module_func_index(f->mod, ((const dp_global *)f->x[id])->name);
      if (g < 0 || (uint32_t)g == fn) continue;
      if (pass == 0) {
        o->eoff[fn + 1]++;
        o->indeg[g]++;
      } else {
        o->callee[o->eoff[fn]++] = g;
      }
    }
    if (pass == 0) /* prefix sums: eoff[i] is where i's callees start */
      for (uint32_t i = 0; i < o->n; i++) o->eoff[i + 1] += o->eoff[i];
    else /* filling moved each start to the next one's: move them back */
      for (uint32_t i = o->n; i-- > 0;) o->eoff[i + 1] = o->eoff[i];
  }
  o->eoff[0] = 0;
  return 0;
}

static void heap_push(octx *o, uint32_t r) {
  uint32_t i = o->nheap++;
  while (i && o->heap[(i - 1) / 2] > r) {
    o->heap[i] = o->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  o->heap[i] = r;
}

static uint32_t heap_pop(octx *o) {
  uint32_t top = o->heap[0], last = o->heap[--o->nheap], i = 0;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= o->nheap) break;
    if (c + 1 < o->nheap && o->heap[c + 1] < o->heap[c]) c++;
    if (o->heap[c] >= last) break;
    o->heap[i] = o->heap[c];
    i = c;
  }
  if (o->nheap) o->heap[i] = last;
  return top;
}

/* Kahn's algorithm, the smallest name first among the ready functions;
   when none is ready (a cycle), the smallest name not yet placed. */
static void sort(octx *o, uint32_t *out) {
  uint32_t nout = 0, next = 0;
  for (uint32_t r = 0; r < o->n; r++)
    if (o->indeg[o->byname[r]] == 0) heap_push(o, r);
  while (nout < o->n) {
    if (!o->nheap) {
      while (o->placed[o->byname[next]]) next++;
      heap_push(o, next);
    }
    uint32_t fn = o->byname[heap_pop(o)];
    if (o->placed[fn]) continue;
    o->placed[fn] = 1;
    out[nout++] = fn;
    for (uint32_t e = o->eoff[fn]; e < o->eoff[fn + 1]; e++) {
      uint32_t g = o->callee[e];
      if (--o->indeg[g] == 0 && !o->placed[g]) heap_push(o, o->rank[g]);
    }
  }
}

/* Function indices sorted by name, and each one's rank in that order. */
typedef struct named { const char *name; uint32_t fn; } named;

static int by_name(const void *a, const void *b) {
  return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

static int sort_names(octx *o) {
  const dp_module *m = o->ix->mod;
  named *v = dp_malloc(o->n * sizeof *v);
  o->byname = dp_malloc(o->n * sizeof *o->byname);
  o->rank = dp_malloc(o->n * sizeof *o->rank);
  if (!v || !o->byname || !o->rank) {
    free(v);
    return -1;
  }
  for (uint32_t i = 0; i < o->n; i++) v[i] = (named){m->funcs[i].global->name, i};
  qsort(v, o->n, sizeof *v, by_name);
  for (uint32_t r = 0; r < o->n; r++) {
    o->byname[r] = v[r].fn;
    o->rank[v[r].fn] = r;
  }
  free(v);
  return 0;
}

uint32_t *dp__plan_order(const dp__index *ix) {
  octx o = {.ix = ix, .n = ix->nfn};
  uint32_t *out = dp_malloc((o.n ? o.n : 1) * sizeof *out);
  o.placed = dp_calloc(o.n, 1);
  /* a function is pushed once: when it is ready, or to break a cycle */
  o.heap = dp_malloc((o.n ? o.n : 1) * sizeof *o.heap);
  if (!out || !o.placed || !o.heap || sort_names(&o) < 0 || edges(&o) < 0) {
    free(out);
    out = NULL;
  } else {
    sort(&o, out);
  }
  free(o.byname);
  free(o.rank);
  free(o.eoff);
  free(o.callee);
  free(o.indeg);
  free(o.placed);
  free(o.heap);
  return out;
}
