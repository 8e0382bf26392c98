/*
 * HEFT, Heterogeneous Earliest Finish Time (Topcuoglu, Hariri and Wu, IEEE
 * TPDS 2002), on a task graph of a module to place (DAG mode, schedule.h):
 *
 *   1. each call's upward rank: its mean cost over the devices that can run
 *      it, plus the largest over its readers of the mean time to copy its
 *      result (bytes times the mean of 1/bandwidth over ordered pairs of
 *      devices) plus the reader's rank;
 *   2. calls in decreasing rank (the ready one of highest rank first, so
 *      the order is topological even where ranks tie), each on the device
 *      where it finishes first: it starts in the earliest gap of that device
 *      that follows the arrival of everything it reads (a value made
 *      elsewhere arrives its bytes / bandwidth after it is made).
 *
 * HEFT's own model has no link contention and a copy per reader; the plan
 * it gives is then planned and scheduled under the full model like any
 * other. The gap search looks at 4096 gaps at most, then goes after the
 * last task of the device, so it stays near linear on a million calls.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"
#include "devplan/schedule.h"

#define NONE DP_SCHED_NONE
#define GAP_SEARCH 4096

/* A device's busy intervals, sorted by start (and so by finish). */
typedef struct line { double *s, *f; uint32_t n, cap; } line;

typedef struct hctx {
  const dp_sched_graph *g;
  const double *cost, *bw;
  uint32_t K, nd;
  double *rank, *finish;
  uint32_t *place;
  uint32_t *slot;            /* per node: a join's row in arr */
  double *arr;               /* per join, per device: when its values are all there */
  line *lines;               /* per device (by its physical device) */
  uint32_t *heap, nheap;
  int oom;
} hctx;

/* When the value of node p (placed or a join) is on device d. */
static double arrival(const hctx *h, uint32_t p, uint32_t d) {
  const dp_sched_graph *g = h->g;
  if (g->kind[p] == DP_TASK_JOIN) return h->arr[(size_t)h->slot[p] * h->K + d];
  uint32_t at = h->place[p];
  if (at == d) return h->finish[p];
  return h->finish[p] + g->bytes[p] / h->bw[(size_t)at * h->nd + d];
}

static double ready_on(const hctx *h, uint32_t v, uint32_t d) {
  const dp_sched_graph *g = h->g;
  double t = 0;
  for (uint32_t k = g->poff[v]; k < g->poff[v + 1]; k++) {
    double a = arrival(h, g->pred[k], d);
    if (a > t) t = a;
  }
  return t;
}

/* The earliest start >= ready of a task of length w on line l, and where
   its interval goes. */
static double earliest(const line *l, double ready, double w, uint32_t *at) {
  uint32_t lo = 0, hi = l->n;
  while (lo < hi) { /* the first interval finishing after ready */
    uint32_t mid = lo + (hi - lo) / 2;
    if (l->f[mid] > ready) hi = mid;
    else lo = mid + 1;
  }
  double t = ready;
  for (uint32_t i = lo, seen = 0; i < l->n; i++, seen++) {
    if (seen == GAP_SEARCH) {
      *at = l->n;
      return l->f[l->n - 1] > t ? l->f[l->n - 1] : t;
    }
    if (t + w <= l->s[i]) {
      *at = i;
      return t;
    }
    if (l->f[i] > t) t = l->f[i];
  }
  *at = l->n;
  return t;
}

static int insert(line *l, uint32_t at, double s, double f) {
  if (l->n + 1 > l->cap) {
    void **const arrs[] = {(void **)&l->s, (void **)&l->f};
    const size_t sizes[] = {sizeof *l->s, sizeof *l->f};
    if (dp_grow_arrays(&l->cap, l->n + 1, 2, arrs, sizes) < 0) return -1;
  }
  memmove(l->s + at + 1, l->s + at, (size_t)(l->n - at) * sizeof *l->s);
  memmove(l->f + at + 1, l->f + at, (size_t)(l->n - at) * sizeof *l->f);
  l->s[at] = s;
  l->f[at] = f;
  l->n++;
  return 0;
}

/* ---- ranks ---- */

static int ranks(hctx *h) {
  const dp_sched_graph *g = h->g;
  uint32_t K = h->K;
  double cbar = 0;
  uint32_t pairs = 0;
  for (uint32_t a = 0; a < K; a++)
    for (uint32_t b = 0; b < K; b++)
      if (a != b) {
        cbar += 1 / h->bw[(size_t)a * h->nd + b];
        pairs++;
      }
  if (pairs) cbar /= pairs;
  uint32_t *order = dp_malloc(((size_t)g->n + 1) * sizeof *order);
  if (!order) return -2;
  int rc = dp_sched_order(g, order);
  for (uint32_t i = g->n; rc == 0 && i-- > 0;) {
    uint32_t v = order[i];
    double w = 0, best = 0, comm = 0;
    if (g->kind[v] == DP_TASK_CALL) {
      uint32_t m = 0;
      for (uint32_t d = 0; d < K; d++)
        if (isfinite(h->cost[(size_t)v * K + d])) {
          w += h->cost[(size_t)v * K + d];
          m++;
        }
      w = m ? w / m : 0;
      comm = g->bytes[v] * cbar;
    }
    for (uint32_t k = g->soff[v]; k < g->soff[v + 1]; k++)
      if (comm + h->rank[g->succ[k]] > best) best = comm + h->rank[g->succ[k]];
    h->rank[v] = w + best;
  }
  free(order);
  return rc;
}

/* ---- the ready queue: highest rank first, then the lower number ---- */

static int before(const hctx *h, uint32_t a, uint32_t b) {
  if (h->rank[a] != h->rank[b]) return h->rank[a] > h->rank[b];
  return a < b;
}

static void push(hctx *h, uint32_t x) {
  uint32_t i = h->nheap++;
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (!before(h, x, h->heap[p])) break;
    h->heap[i] = h->heap[p];
    i = p;
  }
  h->heap[i] = x;
}

static uint32_t pop(hctx *h) {
  uint32_t top = h->heap[0], x = h->heap[--h->nheap], i = 0;
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, m = i, best = x;
    if (l < h->nheap && before(h, h->heap[l], best)) m = l, best = h->heap[l];
    if (r < h->nheap && before(h, h->heap[r], best)) m = r;
    if (m == i) break;
    h->heap[i] = h->heap[m];
    i = m;
  }
  if (h->nheap) h->heap[i] = x;
  return top;
}

/* ---- placing ---- */

static void place_join(hctx *h, uint32_t v) {
  double *row = h->arr + (size_t)h->slot[v] * h->K;
  for (uint32_t d = 0; d < h->K; d++) row[d] = ready_on(h, v, d);
}

static int place_call(hctx *h, uint32_t v) {
  const dp_sched_graph *g = h->g;
  uint32_t K = h->K, best = NONE, at = 0;
  double best_f = INFINITY, best_s = 0;
  for (uint32_t d = 0; d < K; d++) {
    double w = h->cost[(size_t)v * K + d];
    if (!isfinite(w)) continue;
    uint32_t pos;
    double s = earliest(&h->lines[g->phys[d]], ready_on(h, v, d), w, &pos);
    if (s + w < best_f || (best != NONE && s + w == best_f && w < h->cost[(size_t)v * K + best])) {
      best = d;
      best_f = s + w;
      best_s = s;
      at = pos;
    }
  }
  if (best == NONE) return 0; /* (the cost matrix has a device for every call) */
  h->place[v] = best;
  h->finish[v] = best_f;
  return insert(&h->lines[g->phys[best]], at, best_s, best_f);
}

int dp_sched_heft(const dp_sched_graph *g, const double *cost, const double *bw,
                  uint32_t *placement, dp_err **err) {
  size_t n = (size_t)g->n + 1;
  hctx h = {.g = g, .cost = cost, .bw = bw, .K = g->nchoice, .nd = g->ndevs, .place = placement};
  uint32_t nj = 0;
  for (uint32_t v = 0; v < g->n; v++) nj += g->kind[v] == DP_TASK_JOIN;
  h.rank = dp_calloc(n, sizeof *h.rank);
  h.finish = dp_calloc(n, sizeof *h.finish);
  h.slot = dp_malloc(n * sizeof *h.slot);
  h.arr = dp_calloc(((size_t)nj + 1) * h.K, sizeof *h.arr);
  h.lines = dp_calloc((size_t)g->ndevs + 1, sizeof *h.lines);
  h.heap = dp_malloc(n * sizeof *h.heap);
  uint32_t *left = dp_malloc(n * sizeof *left);
  int rc = -1;
  if (!h.rank || !h.finish || !h.slot || !h.arr || !h.lines || !h.heap || !left) goto oom;
  int rk = ranks(&h);
  if (rk == -2) goto oom;
  if (rk < 0) {
    dp_err_set(err, dp_err_new(DP_ERR_GENERIC, DP_NOSPAN, "HEFT: the task graph has a cycle "
                               "(a bug of devplan: please report the module)"));
    goto done;
  }
  nj = 0;
  for (uint32_t v = 0; v < g->n; v++) {
    placement[v] = NONE;
    h.slot[v] = g->kind[v] == DP_TASK_JOIN ? nj++ : NONE;
    left[v] = g->poff[v + 1] - g->poff[v];
    if (!left[v]) push(&h, v);
  }
  while (h.nheap) {
    uint32_t v = pop(&h);
    if (g->kind[v] == DP_TASK_JOIN) place_join(&h, v);
    else if (place_call(&h, v) < 0) goto oom;
    for (uint32_t k = g->soff[v]; k < g->soff[v + 1]; k++)
      if (--left[g->succ[k]] == 0) push(&h, g->succ[k]);
  }
  rc = 0;
  goto done;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
done:
  if (h.lines)
    for (uint32_t d = 0; d < g->ndevs; d++) {
      free(h.lines[d].s);
      free(h.lines[d].f);
    }
  free(h.lines);
  free(h.rank);
  free(h.finish);
  free(h.slot);
  free(h.arr);
  free(h.heap);
  free(left);
  return rc;
}
