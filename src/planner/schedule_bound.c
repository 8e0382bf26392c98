/*
 * The simple placements and the lower bound of the latency baselines
 * (schedule.h), on a task graph of a module to place (DAG mode) and its
 * cost matrix:
 *
 *   single device   every call not fixed by an annotation on one device
 *                   (one it cannot run goes to its cheapest);
 *   cheapest        every call on the device where it costs least (what a
 *                   serial runtime placing each operator on its faster
 *                   device does);
 *   lower bound     no plan's makespan is shorter than the longest chain of
 *                   per-call minima (copies free), nor than the sum of the
 *                   per-call minima shared by the K devices (1/K of it: the
 *                   issue's "half" for two devices). K counts the physical
 *                   devices of the configuration.
 */
#include <math.h>
#include <stdlib.h>
#include "planner.h"
#include "devplan/schedule.h"

#define NONE DP_SCHED_NONE

static uint32_t cheapest(const dp_sched_graph *g, const double *cost, uint32_t v) {
  uint32_t K = g->nchoice, best = NONE;
  for (uint32_t d = 0; d < K; d++)
    if (isfinite(cost[(size_t)v * K + d]) &&
        (best == NONE || cost[(size_t)v * K + d] < cost[(size_t)v * K + best]))
      best = d;
  return best;
}

void dp_sched_single(const dp_sched_graph *g, const double *cost, uint32_t d, uint32_t *placement) {
  uint32_t K = g->nchoice;
  for (uint32_t v = 0; v < g->n; v++) {
    placement[v] = NONE;
    if (g->kind[v] != DP_TASK_CALL) continue;
    placement[v] = d < K && isfinite(cost[(size_t)v * K + d]) ? d : cheapest(g, cost, v);
  }
}

void dp_sched_cheapest(const dp_sched_graph *g, const double *cost, uint32_t *placement) {
  for (uint32_t v = 0; v < g->n; v++)
    placement[v] = g->kind[v] == DP_TASK_CALL ? cheapest(g, cost, v) : NONE;
}

int dp_sched_lower_bound(const dp_sched_graph *g, const double *cost, dp_sched_bound *out,
                         dp_err **err) {
  *out = (dp_sched_bound){0};
  uint32_t *order = dp_malloc(((size_t)g->n + 1) * sizeof *order);
  double *len = dp_calloc((size_t)g->n + 1, sizeof *len);
  int rc = order && len ? dp_sched_order(g, order) : -2;
  if (rc == 0) {
    for (uint32_t i = 0; i < g->n; i++) { /* longest chain ending at each node */
      uint32_t v = order[i], d = g->kind[v] == DP_TASK_CALL ? cheapest(g, cost, v) : NONE;
      double m = d == NONE ? 0 : cost[(size_t)v * g->nchoice + d], before = 0;
      for (uint32_t k = g->poff[v]; k < g->poff[v + 1]; k++)
        if (len[g->pred[k]] > before) before = len[g->pred[k]];
      len[v] = before + m;
      out->work += m;
      if (len[v] > out->critical_path) out->critical_path = len[v];
    }
    for (uint32_t d = 0; d < g->nchoice; d++) out->devices += g->phys[d] == d;
    double share = out->devices ? out->work / out->devices : out->work;
    out->bound = out->critical_path > share ? out->critical_path : share;
  }
  free(order);
  free(len);
  if (rc == -2) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  else if (rc < 0)
    dp_err_set(err, dp_err_new(DP_ERR_GENERIC, DP_NOSPAN, "lower bound: the task graph has a "
                               "cycle (a bug of devplan: please report the module)"));
  return rc < 0 ? -1 : 0;
}
