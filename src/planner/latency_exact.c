/*
 * The latency placement's exact search: branch and bound over every
 * decision (calls and parameters, in topological order), each leaf
 * scored by the inner model (latency_model.c). A partial placement is cut
 * off when a lower bound on every completion's score is no better than the
 * best found: the longest path (calls placed at their cost, the others at
 * their cheapest, copies between two placed ends where they differ), the
 * busiest device (the calls placed on it), the work shared by the
 * physical devices, plus the weights of the soft annotations already
 * broken. Each holds for any schedule of any completion (a device runs one
 * task at a time; a call waits for what it reads and for the copy of it),
 * so what is cut off cannot be better, and a completed search is optimal
 * under the inner model. With memory budgets the bound says nothing about
 * memory: only placements whose best is within the budgets cut.
 *
 * The recursion is as deep as the decisions (at most 64), never the IR.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"

#define NONE LAT_NONE

typedef struct bb {
  dp__lat *l;
  uint32_t *place, *best;
  dp__score *score;
  uint8_t *set;             /* per node: placed (decisions placed so far, fixed nodes) */
  double *fin;              /* per node: the bound's finish */
  uint64_t nodes, limit;
  int stopped, err;
} bb;

static int is_param(const dp_sched_graph *g, uint32_t v) {
  return g->nparams && v >= g->param0 && v - g->param0 < g->nparams;
}

static uint32_t dev_of(const bb *b, uint32_t v) {
  return b->l->fixed[v] != NONE ? b->l->fixed[v] : b->place[v];
}

static double bound(bb *b) {
  const dp__lat *l = b->l;
  const dp_sched_graph *g = &l->g;
  double load[64] = {0}, work = 0, cp = 0;
  for (uint32_t i = 0; i < l->n; i++) {
    uint32_t v = l->topo[i];
    if (is_param(g, v)) {
      b->fin[v] = 0;
      continue;
    }
    double st = 0;
    int task = g->kind[v] == DP_TASK_CALL;
    uint32_t dv = task && b->set[v] ? dev_of(b, v) : NONE;
    for (uint32_t k = g->poff[v]; k < g->poff[v + 1]; k++) {
      uint32_t p = g->pred[k];
      double a = b->fin[p];
      if (dv != NONE && b->set[p] && (g->kind[p] == DP_TASK_CALL || is_param(g, p))) {
        uint32_t dp_ = dev_of(b, p);
        if (dp_ != dv) a += g->bytes[p] / l->bw[(size_t)dp_ * g->ndevs + dv];
      }
      if (a > st) st = a;
    }
    double w = 0;
    if (task) {
      w = dv != NONE ? l->cost[(size_t)v * l->K + dv] : l->minc[v];
      if (dv != NONE) load[g->phys[dv]] += w;
      work += w;
    }
    b->fin[v] = st + w;
    if (b->fin[v] > cp) cp = b->fin[v];
  }
  double lb = cp, share = l->nphys ? work / l->nphys : work;
  if (share > lb) lb = share;
  for (uint32_t d = 0; d < l->K; d++)
    if (load[d] > lb) lb = load[d];
  if (l->objective == DP_LATENCY_BYTES) lb = 0; /* (bytes: the copies among placed ends) */
  double soft = 0, bytes = 0;
  for (uint32_t k = 0; k < g->nsoft; k++) {
    uint32_t v = g->soft_node[k];
    if (b->set[v] && dev_of(b, v) != l->soft_choice[k]) soft += g->soft_weight[k];
  }
  if (l->objective == DP_LATENCY_BYTES) /* every copy between two placed ends stays */
    for (uint32_t v = 0; v < l->n; v++) {
      if (!b->set[v] || (g->kind[v] != DP_TASK_CALL && !is_param(g, v))) continue;
      uint64_t seen = 0;
      for (uint32_t k = g->soff[v]; k < g->soff[v + 1]; k++) {
        uint32_t s = g->succ[k];
        if (g->kind[s] != DP_TASK_CALL || !b->set[s]) continue;
        uint32_t d = dev_of(b, s);
        if (d != dev_of(b, v) && !(seen >> d & 1)) {
          seen |= (uint64_t)1 << d;
          bytes += g->bytes[v];
        }
      }
    }
  return lb + bytes + soft * l->soft_scale;
}

static void search(bb *b, uint32_t i) {
  dp__lat *l = b->l;
  if (b->err || b->stopped) return;
  if (++b->nodes > b->limit) {
    b->stopped = 1;
    return;
  }
  if (i == l->nall) { /* (and @main's result on each device, where it is a decision) */
    for (uint32_t r = 0; r < (l->rdec ? l->K : 1); r++) {
      if (l->rdec) b->place[l->n] = r;
      dp__score s;
      if (dp__lat_eval(l, b->place, &s, NULL, NULL) < 0) {
        b->err = 1;
        return;
      }
      if (dp__score_better(&s, b->score)) {
        *b->score = s;
        memcpy(b->best, b->place, ((size_t)l->n + 1) * sizeof *b->best);
      }
    }
    return;
  }
  uint32_t v = l->all[i], first = b->best[v];
  for (uint32_t t = 0; t <= l->K; t++) { /* the best's device first, then the others */
    uint32_t d = t == 0 ? first : t - 1;
    if ((t > 0 && d == first) || d >= l->K || !(l->allowed[v] >> d & 1)) continue;
    b->place[v] = d;
    b->set[v] = 1;
    double lb = bound(b);
    int cut = b->score->excess <= 0 && lb >= b->score->primary * (1 - 1e-12);
    if (!cut) search(b, i + 1);
    b->set[v] = 0;
    if (b->err || b->stopped) return;
  }
}

int dp__lat_exact(dp__lat *l, uint32_t *place, dp__score *score, uint64_t node_limit) {
  size_t n = (size_t)l->n + 1;
  bb b = {.l = l, .score = score, .limit = node_limit};
  b.place = dp_malloc(n * sizeof *b.place);
  b.best = dp_malloc(n * sizeof *b.best);
  b.set = dp_calloc(n, 1);
  b.fin = dp_calloc(n, sizeof *b.fin);
  int rc = -1;
  if (!b.place || !b.best || !b.set || !b.fin) {
    l->oom = 1;
    if (!l->err) l->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    goto done;
  }
  memcpy(b.place, place, n * sizeof *b.place);
  memcpy(b.best, place, n * sizeof *b.best);
  for (uint32_t v = 0; v < l->n; v++) b.set[v] = l->fixed[v] != NONE;
  search(&b, 0);
  if (b.err) goto done;
  memcpy(place, b.best, n * sizeof *place);
  rc = b.stopped ? 0 : 1;
done:
  free(b.place);
  free(b.best);
  free(b.set);
  free(b.fin);
  return rc;
}
