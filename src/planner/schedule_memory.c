/*
 * The memory a schedule holds on each device (schedule.h, issue 24's
 * budgets): a value occupies its bytes on its device (a call's: where it
 * runs; a copy's: its destination; a parameter of @main, with
 * DP_GRAPH_PARAMS: the device it is on) from the start of the task that
 * makes it (a parameter: 0) until the finish of its last reader, looking
 * through joins (tuples read whole, calls of functions, branches), or until
 * the makespan when it is part of @main's result. A value nobody reads
 * occupies its device while it is made. Intervals are half-open [begin,
 * end): a value freed at t and one made at t do not meet. The peak of a
 * device (a physical device: memory scopes of one device share it) is the
 * largest sum of the bytes it holds at one time; one sort of the values'
 * begins and ends, O(v log v).
 */
#include <math.h>
#include <stdlib.h>
#include "planner.h"
#include "devplan/schedule.h"

#define NONE DP_SCHED_NONE

/* The device a node's value occupies (an index of g->devs, physical), or NONE. */
static uint32_t value_device(const dp_sched_graph *g, uint32_t v) {
  if (g->kind[v] == DP_TASK_CALL || g->kind[v] == DP_TASK_COPY)
    return g->dev[v] == NONE ? NONE : g->phys[g->dev[v]];
  if (g->nparams && v >= g->param0 && v - g->param0 < g->nparams && g->dev[v] != NONE)
    return g->phys[g->dev[v]];
  return NONE;
}

static int is_param(const dp_sched_graph *g, uint32_t v) {
  return g->nparams && v >= g->param0 && v - g->param0 < g->nparams;
}

typedef struct event { double t, delta; uint32_t dev; } event;

static int cmp_event(const void *a, const void *b) {
  const event *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  if (x->delta != y->delta) return x->delta < y->delta ? -1 : 1; /* frees first */
  return x->dev < y->dev ? -1 : x->dev > y->dev;
}

void dp_sched_memory_free(dp_sched_memory *m) {
  free(m->peak);
  free(m->at);
  free(m->begin);
  free(m->end);
  *m = (dp_sched_memory){0};
}

/* Per node: when the last reader of its value finishes (through joins),
   the makespan where it reaches @main's result, -INFINITY without one. */
static int readers_end(const dp_sched_graph *g, const dp_schedule *s, double *last) {
  uint32_t *order = dp_malloc(((size_t)g->n + 1) * sizeof *order);
  uint8_t *reach = dp_calloc((size_t)g->n + 1, 1);
  int rc = order && reach ? dp_sched_order(g, order) : -2;
  for (uint32_t i = g->n; rc == 0 && i-- > 0;) {
    uint32_t v = order[i];
    double e = -INFINITY;
    reach[v] = v == g->result;
    for (uint32_t k = g->soff[v]; k < g->soff[v + 1]; k++) {
      uint32_t r = g->succ[k];
      if (g->kind[r] == DP_TASK_JOIN && !is_param(g, r)) {
        if (reach[r]) reach[v] = 1;
        if (last[r] > e) e = last[r];
      } else if (s->finish[r] > e) {
        e = s->finish[r];
      }
    }
    last[v] = reach[v] ? s->makespan : e;
  }
  free(order);
  free(reach);
  return rc;
}

int dp_sched_memory_profile(const dp_sched_graph *g, const dp_schedule *s, dp_sched_memory *out,
                            dp_err **err) {
  *out = (dp_sched_memory){.ndevs = g->ndevs};
  size_t n = (size_t)g->n + 1, nd = (size_t)g->ndevs + 1;
  out->peak = dp_calloc(nd, sizeof *out->peak);
  out->at = dp_calloc(nd, sizeof *out->at);
  out->begin = dp_malloc(n * sizeof *out->begin);
  out->end = dp_malloc(n * sizeof *out->end);
  double *cur = dp_calloc(nd, sizeof *cur);
  event *ev = dp_malloc(2 * n * sizeof *ev);
  int rc = -2;
  if (!out->peak || !out->at || !out->begin || !out->end || !cur || !ev) goto done;
  rc = readers_end(g, s, out->end);
  if (rc < 0) goto done;
  uint32_t ne = 0;
  for (uint32_t v = 0; v < g->n; v++) {
    uint32_t d = value_device(g, v);
    double b = is_param(g, v) ? 0 : s->start[v], f = is_param(g, v) ? 0 : s->finish[v];
    double e = out->end[v] > f ? out->end[v] : f;
    out->begin[v] = b;
    out->end[v] = d == NONE ? -1 : e;
    if (d == NONE || !(e > b) || !(g->bytes[v] > 0)) continue;
    ev[ne++] = (event){b, g->bytes[v], d};
    ev[ne++] = (event){e, -g->bytes[v], d};
  }
  qsort(ev, ne, sizeof *ev, cmp_event);
  for (uint32_t i = 0; i < ne; i++) {
    uint32_t d = ev[i].dev;
    cur[d] += ev[i].delta;
    if (cur[d] > out->peak[d] * (1 + 1e-12)) {
      out->peak[d] = cur[d];
      out->at[d] = ev[i].t;
    }
  }
  rc = 0;
done:
  free(cur);
  free(ev);
  if (rc < 0) {
    dp_sched_memory_free(out);
    dp_err_set(err, rc == -2 ? dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory")
                             : dp_err_new(DP_ERR_GENERIC, DP_NOSPAN, "memory: the task graph has a "
                                          "cycle (a bug of devplan: please report the module)"));
    return -1;
  }
  return 0;
}

int dp_sched_memory_live(const dp_sched_graph *g, const dp_sched_memory *m, uint32_t d, double t,
                         uint32_t **nodes, uint32_t *count, dp_err **err) {
  uint32_t k = 0, cap = 0, *out = NULL;
  for (uint32_t v = 0; v < g->n; v++) {
    if (m->end[v] < 0 || value_device(g, v) != d || !(m->begin[v] <= t && t < m->end[v]) ||
        !(g->bytes[v] > 0))
      continue;
    if (dp_grow((void **)&out, &cap, k + 1, sizeof *out) < 0) {
      free(out);
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return -1;
    }
    out[k++] = v;
  }
  *nodes = out;
  *count = k;
  return 0;
}
