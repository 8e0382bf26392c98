/*
 * The latency placement (include/devplan/latency.h): the plan whose
 * modelled schedule finishes first, in four steps.
 *
 *   1. The problem (setup): the module's task graph with @main's parameters
 *      (DAG mode), each call's cost on each device, the decisions (calls
 *      and parameters no annotation fixes), chains and the parameters only
 *      one call reads (they move with it), the soft annotations, the
 *      memory budgets.
 *   2. Starting placements: HEFT, serial per-call choice, each single
 *      device, the minimum cut of compute plus copy time (or bytes), the
 *      soft annotations kept; each scored by the inner model
 *      (latency_model.c).
 *   3. The search (latency_search.c): local search from the two best
 *      starts, then iterated local search; below `exact` decisions branch
 *      and bound (latency_exact.c) from the best found.
 *   4. The answer: the search's placement and, below `full` calls, every
 *      baseline as it is (HEFT, cheapest, each single device) and the plans
 *      of TVM's rules and of min_bytes, each planned (a placement written as
 *      annotations, dp_sched_annotate_lean, planned by TVM's rules), ShareCopies,
 *      and scored by its own schedule: memory over the budgets first, then
 *      the objective, then the makespan, then the bytes. The best plan is
 *      the answer; dp.planner.schedule of it gives its makespan.
 *
 * plan.c sends placement = "latency" here, and min_bytes when the module
 * has soft annotations or the configuration memory budgets (objective
 * bytes). Planning a placement is plan.c's composition of the phases,
 * handed in as a function (dp__plan_fn): this file sits below plan.c in
 * the planner's layers and never calls it by name.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"

#define NONE LAT_NONE
#define EXACT_DEFAULT 16
#define FULL_DEFAULT 50000
#define BB_NODES 400000
#define WORK_BASE 3e6     /* node-evaluations of the search, plus ... */
#define WORK_PER_NODE 8   /* ... per node of the graph, ... */
#define LARGE 300000      /* ... above this many nodes 3 evaluations, and the starts are
                             the baselines alone (bench/latency.lua, 1,000,000 calls:
                             within 10x PlanDevices' time, docs/latency.md) */

static int is_param(const dp_sched_graph *g, uint32_t v) {
  return g->nparams && v >= g->param0 && v - g->param0 < g->nparams;
}

static dp_err *oom_err(void) { return dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"); }

/* ---- the problem ---- */

/* The device to choose of vd: the configuration's of the same type and id. */
static uint32_t choice_index(const dp__lat *l, const dp_vdev *vd) {
  for (uint32_t d = 0; d < l->K; d++) {
    const dp_vdev *c = l->g.devs[d];
    if (c->device_type == vd->device_type &&
        (c->virtual_device_id == vd->virtual_device_id || vd->virtual_device_id < 0))
      return d;
  }
  return NONE;
}

static void lat_free(dp__lat *l) {
  dp__lat_model_free(l);
  dp_sched_graph_free(&l->g);
  free(l->cost);
  free(l->bw);
  free(l->minc);
  free(l->fixed);
  free(l->allowed);
  free(l->dec);
  free(l->topo);
  free(l->chain);
  free(l->chain_next);
  free(l->xoff);
  free(l->xpar);
  free(l->soft_choice);
  free(l->tied);
  free(l->all);
  free(l->heads);
  free(l->tstart);
  free(l->tfinish);
  dp_err_free(l->err);
}

/* Chains: a decision call whose value only the next reads, that reading
   nothing else but parameters; and the free parameters only one call
   reads. */
static int chains(dp__lat *l) {
  const dp_sched_graph *g = &l->g;
  uint32_t n = l->n;
  uint32_t *prev = dp_malloc(((size_t)n + 1) * sizeof *prev);
  l->chain = dp_malloc(((size_t)n + 1) * sizeof *l->chain);
  l->chain_next = dp_malloc(((size_t)n + 1) * sizeof *l->chain_next);
  l->xoff = dp_calloc((size_t)n + 2, sizeof *l->xoff);
  l->tied = dp_malloc(((size_t)n + 1) * sizeof *l->tied);
  if (!prev || !l->chain || !l->chain_next || !l->xoff || !l->tied) {
    free(prev);
    return -1;
  }
  for (uint32_t v = 0; v < n; v++) prev[v] = l->chain[v] = l->chain_next[v] = l->tied[v] = NONE;
  uint32_t npar = 0;
  for (uint32_t v = 0; v < n; v++) {
    int free_ = l->fixed[v] == NONE && l->allowed[v];
    if (!free_ || g->soff[v] == g->soff[v + 1]) continue;
    uint32_t s = g->succ[g->soff[v]], one = 1;
    for (uint32_t k = g->soff[v]; k < g->soff[v + 1]; k++) one &= g->succ[k] == s;
    if (!one || g->kind[s] != DP_TASK_CALL) continue;
    if (is_param(g, v)) { /* moves with its only reader */
      if (l->fixed[s] == NONE && l->allowed[s]) {
        l->xoff[s + 1]++;
        npar++;
      }
      continue;
    }
    if (g->kind[v] != DP_TASK_CALL || l->fixed[s] != NONE || !l->allowed[s]) continue;
    int only = 1;
    for (uint32_t k = g->poff[s]; k < g->poff[s + 1]; k++)
      only &= g->pred[k] == v || is_param(g, g->pred[k]);
    if (only) {
      l->chain_next[v] = s;
      prev[s] = v;
    }
  }
  for (uint32_t i = 0; i < n; i++) {
    uint32_t v = l->topo[i];
    if (l->fixed[v] != NONE || !l->allowed[v]) continue;
    l->chain[v] = prev[v] != NONE ? l->chain[prev[v]] : v;
  }
  free(prev);
  for (uint32_t v = 0; v < n; v++) l->xoff[v + 1] += l->xoff[v];
  l->xpar = dp_malloc(((size_t)npar + 1) * sizeof *l->xpar);
  uint32_t *at = dp_malloc(((size_t)n + 1) * sizeof *at);
  if (!l->xpar || !at) {
    free(at);
    return -1;
  }
  memcpy(at, l->xoff, (size_t)n * sizeof *at);
  for (uint32_t i = 0; i < g->nparams; i++) {
    uint32_t p = g->param0 + i;
    if (l->fixed[p] != NONE || !l->allowed[p] || g->soff[p] == g->soff[p + 1]) continue;
    uint32_t s = g->succ[g->soff[p]], one = 1;
    for (uint32_t k = g->soff[p]; k < g->soff[p + 1]; k++) one &= g->succ[k] == s;
    if (one && g->kind[s] == DP_TASK_CALL && l->fixed[s] == NONE && l->allowed[s]) {
      l->xpar[at[s]++] = p;
      l->tied[p] = s;
    }
  }
  free(at);
  l->heads = dp_malloc(((size_t)n + 1) * sizeof *l->heads);
  l->tstart = dp_malloc(((size_t)n + 1) * sizeof *l->tstart);
  l->tfinish = dp_malloc(((size_t)n + 1) * sizeof *l->tfinish);
  if (!l->heads || !l->tstart || !l->tfinish) return -1;
  l->nheads = 0;
  for (uint32_t v = 0; v < n; v++)
    if (l->chain[v] == v && l->chain_next[v] != NONE) l->heads[l->nheads++] = v;
  /* the decisions: tied parameters go with their call (the exact search
     has them all) */
  l->all = dp_malloc(((size_t)l->ndec + 1) * sizeof *l->all);
  if (!l->all) return -1;
  memcpy(l->all, l->dec, (size_t)l->ndec * sizeof *l->all);
  l->nall = l->ndec;
  uint32_t k = 0;
  for (uint32_t i = 0; i < l->ndec; i++)
    if (l->tied[l->dec[i]] == NONE) l->dec[k++] = l->dec[i];
  l->ndec = k;
  return 0;
}

static int setup(dp__lat *l, dp_module *m, const dp_config *cfg, const dp_latency_opts *o, dp_err **err) {
  dp_sched_graph *g = &l->g;
  l->cfg = cfg;
  l->objective = o->objective;
  l->soft_scale = 1;
  if (dp_sched_graph_build(g, m, cfg, DP_GRAPH_DAG | DP_GRAPH_PARAMS, err) < 0) return -1;
  uint32_t n = l->n = g->n, K = l->K = g->nchoice;
  if (K > 64) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "latency placement: more than 64 devices"));
    return -1;
  }
  size_t nn = (size_t)n + 1;
  l->cost = dp_malloc((nn * K + 1) * sizeof *l->cost);
  l->bw = dp_malloc(((size_t)g->ndevs * g->ndevs + 1) * sizeof *l->bw);
  l->minc = dp_calloc(nn, sizeof *l->minc);
  l->fixed = dp_malloc(nn * sizeof *l->fixed);
  l->allowed = dp_calloc(nn, sizeof *l->allowed);
  l->dec = dp_malloc(nn * sizeof *l->dec);
  l->topo = dp_malloc(nn * sizeof *l->topo);
  l->soft_choice = dp_malloc(((size_t)g->nsoft + 1) * sizeof *l->soft_choice);
  if (!l->cost || !l->bw || !l->minc || !l->fixed || !l->allowed || !l->dec || !l->topo || !l->soft_choice) {
    dp_err_set(err, oom_err());
    return -1;
  }
  if (dp_sched_cost_matrix(g, o->costs, l->cost, err) < 0 || dp_sched_bandwidths(g, o->costs, l->bw, err) < 0)
    return -1;
  int rc = dp_sched_order(g, l->topo);
  if (rc < 0) {
    dp_err_set(err, rc == -2 ? oom_err() : dp_err_new(DP_ERR_GENERIC, DP_NOSPAN, "latency placement: "
                                                     "the task graph has a cycle (a bug of devplan)"));
    return -1;
  }
  for (uint32_t v = 0; v < n; v++) {
    l->fixed[v] = NONE;
    if (g->kind[v] == DP_TASK_CALL) {
      uint64_t ok = 0;
      double best = INFINITY;
      for (uint32_t d = 0; d < K; d++) {
        double c = l->cost[(size_t)v * K + d];
        if (!isfinite(c)) continue;
        ok |= (uint64_t)1 << d;
        if (c < best) best = c;
      }
      l->minc[v] = best;
      if (g->dev[v] != NONE) { /* (the matrix has its fixed device alone) */
        for (uint32_t d = 0; d < K; d++)
          if (ok >> d & 1) l->fixed[v] = d;
      } else {
        l->allowed[v] = ok;
      }
    } else if (is_param(g, v)) {
      if (g->dev[v] != NONE) {
        l->fixed[v] = choice_index(l, g->devs[g->dev[v]]);
        if (l->fixed[v] == NONE) l->fixed[v] = 0; /* (not a device to choose: the default's) */
      } else if (g->soff[v] != g->soff[v + 1]) {
        l->allowed[v] = K == 64 ? UINT64_MAX : ((uint64_t)1 << K) - 1;
      }
    }
  }
  /* @main's result device: a decision where its result is made of several
     values (a join) and @main names no device; with a device, that one */
  if (g->result != NONE && g->kind[g->result] == DP_TASK_JOIN && !is_param(g, g->result)) {
    const dp_func *mainf = NULL;
    for (uint32_t i = 0; i < m->nfuncs; i++)
      if (strcmp(m->funcs[i].global->name, "main") == 0) mainf = m->funcs[i].fn;
    const dp_type *rt = mainf && mainf->body->type ? mainf->body->type : NULL;
    int tensors = rt && (rt->h.kind == DP_TY_TENSOR || rt->h.kind == DP_TY_TUPLE);
    if (tensors && !(mainf->vdev && mainf->vdev->device_type != 0)) l->rdec = 1;
  }
  l->ndec = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t v = l->topo[i];
    if (l->fixed[v] == NONE && l->allowed[v]) l->dec[l->ndec++] = v;
  }
  for (uint32_t k = 0; k < g->nsoft; k++) l->soft_choice[k] = choice_index(l, g->devs[g->soft_dev[k]]);
  l->nphys = 0;
  for (uint32_t d = 0; d < K; d++) {
    l->nphys += g->phys[d] == d;
    double b = dp_config_memory(cfg, g->devs[d]->device_type);
    l->budget[d] = b > 0 ? b : INFINITY;
    if (b > 0 && g->phys[d] == d) l->budgets = 1;
  }
  if (chains(l) < 0) {
    dp_err_set(err, oom_err());
    return -1;
  }
  return 0;
}

/* ---- planning and scoring a plan ---- */

/* The device each call and parameter of the problem has in a plan (the
   calls of both graphs are met in the same order: the plan only adds
   annotations and copies): 0, or -1 when the two do not line up. */
static int map_plan(const dp__lat *l, const dp_sched_graph *pg, uint32_t *where) {
  const dp_sched_graph *g = &l->g;
  uint32_t w = 0;
  for (uint32_t v = 0; v < g->n; v++) {
    where[v] = NONE;
    if (g->kind[v] != DP_TASK_CALL) continue;
    while (w < pg->n && pg->kind[w] != DP_TASK_CALL) w++;
    if (w == pg->n) return -1;
    const dp_call *a = (const dp_call *)g->expr[v], *b = (const dp_call *)pg->expr[w];
    if ((a->fn->h.kind == DP_OP || b->fn->h.kind == DP_OP) && a->fn != b->fn) return -1;
    where[v] = choice_index(l, pg->devs[pg->dev[w]]);
    w++;
  }
  while (w < pg->n && pg->kind[w] != DP_TASK_CALL) w++;
  if (w != pg->n || pg->nparams != g->nparams) return -1;
  for (uint32_t i = 0; i < g->nparams; i++) {
    uint32_t d = pg->dev[pg->param0 + i];
    where[g->param0 + i] = d == NONE ? NONE : choice_index(l, pg->devs[d]);
  }
  return 0;
}

typedef struct scored {
  dp_module *planned;      /* after ShareCopies */
  dp_module *from;         /* the module it was planned from */
  int by;                  /* DP_PLACE_TVM or DP_PLACE_MIN_BYTES */
  dp__score s;
  uint32_t soft_broken;
} scored;

static void scored_clear(scored *x) {
  dp_release(x->planned);
  dp_release(x->from);
  *x = (scored){0};
}

/* The score of a planned module by its own schedule (the plan given,
   taken). intended: the placement it was written from (soft annotations'
   fallback when the plan does not line up), or NULL. */
static int score_plan(dp__lat *l, const dp_latency_opts *o, dp_module *planned, const uint32_t *intended,
                      scored *out, dp_err **err) {
  dp_sched_graph pg;
  dp_schedule s = {0};
  double *dur = NULL;
  uint32_t *where = NULL;
  int rc = -1;
  dp_module *shared = dp_plan_share_copies(planned, err);
  dp_release(planned);
  if (!shared) return -1;
  if (dp_sched_graph_build(&pg, shared, l->cfg, DP_GRAPH_PLANNED | DP_GRAPH_PARAMS, err) < 0) {
    dp_release(shared);
    return -1;
  }
  dur = dp_malloc(((size_t)pg.n + 1) * sizeof *dur);
  where = dp_malloc(((size_t)l->n + 1) * sizeof *where);
  if (!dur || !where) {
    dp_err_set(err, oom_err());
    goto done;
  }
  if (dp_sched_durations(&pg, o->costs, dur, err) < 0 || dp_sched_list(&pg, dur, 0, &s, err) < 0) goto done;
  double bytes = 0;
  for (uint32_t v = 0; v < pg.n; v++)
    if (pg.kind[v] == DP_TASK_COPY) bytes += pg.bytes[v];
  uint32_t broken = 0;
  double soft = 0;
  if (l->g.nsoft) {
    if (map_plan(l, &pg, where) == 0) dp__lat_soft(l, where, &broken, &soft);
    else if (intended) dp__lat_soft(l, intended, &broken, &soft);
  }
  out->s = (dp__score){0, 0, s.makespan, bytes, soft, 0};
  out->s.primary = (l->objective == DP_LATENCY_BYTES ? bytes : s.makespan) + soft * l->soft_scale;
  out->soft_broken = broken;
  if (l->budgets) {
    dp_sched_memory mem;
    if (dp_sched_memory_profile(&pg, &s, &mem, err) < 0) goto done;
    for (uint32_t d = 0; d < pg.ndevs; d++) { /* (the plan's devices: each by its type's budget) */
      double b = dp_config_memory(l->cfg, pg.devs[d]->device_type);
      if (pg.phys[d] == d && b > 0 && mem.peak[d] > b) out->s.excess += mem.peak[d] - b;
    }
    dp_sched_memory_free(&mem);
  }
  out->planned = dp_retain(shared);
  rc = 0;
done:
  dp_schedule_free(&s);
  dp_sched_graph_free(&pg);
  dp_release(shared);
  free(dur);
  free(where);
  return rc;
}

static int typed(const dp_module *m) {
  for (uint32_t i = 0; i < m->nfuncs; i++)
    if (!m->funcs[i].fn->body->type) return 0;
  return 1;
}

/* The plan of a placement: written as annotations (the lean form: none
   where TVM's rules put a value there anyway, the same plan as every use
   annotated, spec/latency_lean_spec.lua), planned by TVM's rules. NULL +
   error (a conflict: TVM's rules could not plan it). */
static dp_module *plan_placement(dp__lat *l, dp__plan_fn plan, const uint32_t *place, dp_module **from,
                                 dp_err **err) {
  uint32_t *pl = dp_malloc(((size_t)l->n + 1) * sizeof *pl);
  if (!pl) {
    dp_err_set(err, oom_err());
    return NULL;
  }
  for (uint32_t v = 0; v < l->n; v++)
    pl[v] = l->fixed[v] == NONE && l->allowed[v] ? place[v] : NONE;
  pl[l->n] = l->rdec ? place[l->n] : NONE;
  dp_module *annotated = dp_sched_annotate_lean(&l->g, pl, err);
  free(pl);
  /* (typed: cost tables read the calls' shapes, and the plan keeps the
     types; dp_sched_annotate_lean keeps those of a typed module) */
  if (annotated && !typed(annotated) && dp_infer_module(annotated, err) < 0) {
    dp_release(annotated);
    return NULL;
  }
  if (!annotated) return NULL;
  dp_module *planned = plan(annotated, l->cfg, NULL, NULL, err);
  if (planned) *from = annotated;
  else dp_release(annotated);
  return planned;
}

/* ---- the candidates ---- */

typedef struct cand {
  const char *name;
  uint32_t device;          /* single: which */
  uint32_t *place;          /* NULL: a plan made apart (tvm, min_bytes) */
  int pure;                 /* a baseline as it is (its parameters left to TVM's rules) */
  double model;             /* the inner model's makespan (-1: not scored) */
} cand;

typedef struct driver {
  dp__lat l;
  dp__plan_fn plan;         /* plan.c's composition */
  const dp_latency_opts *o;
  dp_module *m;
  cand c[DP_LATENCY_MAXCAND];
  uint32_t nc;
  uint32_t calls;
} driver;

static uint32_t *new_place(driver *d) {
  uint32_t *p = dp_malloc(((size_t)d->l.n + 1) * sizeof *p);
  if (p) {
    for (uint32_t v = 0; v < d->l.n; v++) p[v] = d->l.fixed[v];
    p[d->l.n] = NONE; /* (@main's result: TVM's rules decide) */
  }
  return p;
}

static int add_cand(driver *d, const char *name, uint32_t device, uint32_t *place, int pure) {
  if (d->nc == DP_LATENCY_MAXCAND) {
    free(place);
    return 0;
  }
  d->c[d->nc++] = (cand){name, device, place, pure, -1};
  return 0;
}

/* A baseline's placement (from the DAG graph's placement: a device per
   call) over the problem's nodes. */
static uint32_t *from_baseline(driver *d, const uint32_t *bp) {
  uint32_t *p = new_place(d);
  if (!p) return NULL;
  for (uint32_t v = 0; v < d->l.n; v++)
    if (d->l.fixed[v] == NONE && d->l.allowed[v] && d->l.g.kind[v] == DP_TASK_CALL) p[v] = bp[v];
  return p;
}

static uint32_t *copy_place(driver *d, const uint32_t *src) {
  uint32_t *p = dp_malloc(((size_t)d->l.n + 1) * sizeof *p);
  if (p) memcpy(p, src, ((size_t)d->l.n + 1) * sizeof *p);
  return p;
}

/* The baselines as they are, each also as a start with its parameters
   placed (pure = 0). */
static int baselines(driver *d, dp_err **err) {
  dp__lat *l = &d->l;
  uint32_t *bp = dp_malloc(((size_t)l->n + 1) * sizeof *bp);
  if (!bp) goto oom;
  if (dp_sched_heft(&l->g, l->cost, l->bw, bp, err) < 0) {
    free(bp);
    return -1;
  }
  uint32_t *p = from_baseline(d, bp);
  if (!p) goto oom;
  add_cand(d, "heft", 0, p, 1);
  dp_sched_cheapest(&l->g, l->cost, bp);
  if (!(p = from_baseline(d, bp))) goto oom;
  add_cand(d, "cheapest", 0, p, 1);
  for (uint32_t k = 0; k < l->K; k++) {
    if (l->g.phys[k] != k) continue;
    dp_sched_single(&l->g, l->cost, k, bp);
    if (!(p = from_baseline(d, bp))) goto oom;
    add_cand(d, "single", k, p, 1);
  }
  free(bp);
  return 0;
oom:
  free(bp);
  dp_err_set(err, oom_err());
  return -1;
}

/* CPOP (Topcuoglu et al., as HEFT): the calls of the critical path of
   per-call minima each on its cheapest device, the others by HEFT. NULL
   (l->err on an error). */
static uint32_t *cpop(driver *d, int split) {
  dp__lat *l = &d->l;
  const dp_sched_graph *g = &l->g;
  uint32_t n = l->n, K = l->K;
  double *down = dp_malloc(((size_t)n + 1) * sizeof *down), *up = dp_malloc(((size_t)n + 1) * sizeof *up);
  double *cost = dp_malloc(((size_t)n * K + 1) * sizeof *cost);
  uint32_t *bp = dp_malloc(((size_t)n + 1) * sizeof *bp), *out = NULL;
  if (!down || !up || !cost || !bp) {
    l->err = l->err ? l->err : oom_err();
    goto done;
  }
  double cp = 0;
  for (uint32_t i = 0; i < n; i++) { /* the longest path to each node, and from it */
    uint32_t v = l->topo[i];
    double b = 0;
    for (uint32_t k = g->poff[v]; k < g->poff[v + 1]; k++)
      if (down[g->pred[k]] > b) b = down[g->pred[k]];
    down[v] = b + (g->kind[v] == DP_TASK_CALL ? l->minc[v] : 0);
    if (down[v] > cp) cp = down[v];
  }
  for (uint32_t i = n; i-- > 0;) {
    uint32_t v = l->topo[i];
    double a = 0;
    for (uint32_t k = g->soff[v]; k < g->soff[v + 1]; k++)
      if (up[g->succ[k]] > a) a = up[g->succ[k]];
    up[v] = a + (g->kind[v] == DP_TASK_CALL ? l->minc[v] : 0);
  }
  memcpy(cost, l->cost, (size_t)n * K * sizeof *cost);
  for (uint32_t v = 0; v < n; v++) {
    if (g->kind[v] != DP_TASK_CALL || l->fixed[v] != NONE) continue;
    double len = down[v] + up[v] - l->minc[v];
    if (len < cp * (1 - 1e-9)) continue;
    for (uint32_t k = 0; k < K; k++)
      if (cost[(size_t)v * K + k] > l->minc[v]) cost[(size_t)v * K + k] = INFINITY;
  }
  dp_err *e = NULL;
  if (dp_sched_heft(g, cost, l->bw, bp, &e) < 0) {
    l->err = l->err ? l->err : e;
    goto done;
  }
  out = from_baseline(d, bp);
  if (!out) {
    l->err = l->err ? l->err : oom_err();
    goto done;
  }
  if (split) { /* the others on the device the path uses least */
    double load[64] = {0};
    for (uint32_t v = 0; v < n; v++) {
      if (g->kind[v] != DP_TASK_CALL || l->fixed[v] != NONE) continue;
      if (down[v] + up[v] - l->minc[v] >= cp * (1 - 1e-9)) load[out[v]] += l->minc[v];
    }
    for (uint32_t v = 0; v < n; v++) {
      if (g->kind[v] != DP_TASK_CALL || l->fixed[v] != NONE || !l->allowed[v]) continue;
      if (down[v] + up[v] - l->minc[v] >= cp * (1 - 1e-9)) continue;
      uint32_t best = out[v];
      for (uint32_t k = 0; k < K; k++)
        if ((l->allowed[v] >> k & 1) && load[k] < load[best]) best = k;
      out[v] = best;
    }
  }
done:
  free(down);
  free(up);
  free(cost);
  free(bp);
  return out;
}

/* The starts of the search: the baselines with their parameters placed,
   the minimum cut, and (with soft annotations) the cheapest placement
   that keeps them. Each scored by the inner model; the best two first. */
typedef struct start { uint32_t *place; dp__score s; const char *name; } start;

static int starts(driver *d, start *st, uint32_t *nst, dp_err **err) {
  dp__lat *l = &d->l;
  uint32_t n = 0;
  for (uint32_t i = 0; i < d->nc; i++) {
    if (!d->c[i].pure) continue;
    if (!(st[n].place = copy_place(d, d->c[i].place))) goto oom;
    st[n++].name = d->c[i].name;
  }
  uint32_t *mc = l->n > LARGE ? NULL : new_place(d);
  if (!mc && l->n <= LARGE) goto oom;
  int r = mc ? dp__lat_mincut(l, mc) : 1;
  if (r < 0) {
    free(mc);
    goto fail;
  }
  if (r == 0) {
    st[n].place = mc;
    st[n++].name = "mincut";
  } else {
    free(mc);
  }
  for (int split = 0; split < 2 && l->n <= LARGE; split++) {
    uint32_t *cp = cpop(d, split);
    if (!cp && l->err) goto fail;
    if (cp) {
      st[n].place = cp;
      st[n++].name = split ? "cpsplit" : "cpop";
    }
  }
  if (l->g.nsoft) { /* the cheapest, with the soft annotations kept */
    uint32_t *sp = copy_place(d, st[1].place);
    if (!sp) goto oom;
    for (uint32_t k = 0; k < l->g.nsoft; k++) {
      uint32_t v = l->g.soft_node[k], want = l->soft_choice[k];
      if (want != NONE && l->fixed[v] == NONE && (l->allowed[v] >> want & 1)) sp[v] = want;
    }
    st[n].place = sp;
    st[n++].name = "soft";
  }
  for (uint32_t i = 0; i < n; i++) {
    dp__lat_params(l, st[i].place);
    if (l->rdec) dp__lat_result(l, st[i].place);
    uint32_t twin = NONE; /* (a start seen already: its score) */
    for (uint32_t j = 0; j < i && twin == NONE; j++)
      if (memcmp(st[j].place, st[i].place, ((size_t)l->n + 1) * sizeof *st[i].place) == 0) twin = j;
    if (twin != NONE) st[i].s = st[twin].s;
    else if (dp__lat_eval(l, st[i].place, &st[i].s, NULL, NULL) < 0) goto fail;
    for (uint32_t k = 0; k < d->nc; k++)
      if (d->c[k].pure && d->c[k].name == st[i].name && d->c[k].model < 0) {
        d->c[k].model = st[i].s.makespan;
        break;
      }
  }
  for (uint32_t i = 1; i < n; i++) /* best first (stable) */
    for (uint32_t j = i; j > 0 && dp__score_better(&st[j].s, &st[j - 1].s); j--) {
      start t = st[j];
      st[j] = st[j - 1];
      st[j - 1] = t;
    }
  *nst = n;
  return 0;
oom:
  l->err = l->err ? l->err : oom_err();
fail:
  *nst = n;
  dp_err_set(err, l->err);
  l->err = NULL;
  return -1;
}

static int search(driver *d, uint32_t **best, dp__score *bs, int *exact, dp_err **err) {
  dp__lat *l = &d->l;
  start st[DP_LATENCY_MAXCAND];
  uint32_t nst = 0;
  *best = NULL;
  if (starts(d, st, &nst, err) < 0) goto fail;
  double effort = d->o->effort > 0 ? d->o->effort : 1;
  double work = l->n > LARGE ? 3.0 * 1.5 * l->n : WORK_BASE + WORK_PER_NODE * (double)l->n;
  l->work_budget = l->work + (uint64_t)(effort * work);
  /* the best start, then the second, improved; then perturbed */
  for (uint32_t i = 0; i < nst && i < 2; i++) {
    if (i > 0 && l->work >= l->work_budget) break;
    if (dp__lat_improve(l, st[i].place, &st[i].s) < 0) goto fail;
  }
  uint32_t b = nst > 1 && dp__score_better(&st[1].s, &st[0].s) ? 1 : 0;
  if (dp__lat_perturb(l, st[b].place, &st[b].s) < 0) goto fail;
  uint32_t lim = d->o->exact ? d->o->exact : EXACT_DEFAULT;
  *exact = 0;
  if (l->nall <= lim && l->nall <= 64) {
    int r = dp__lat_exact(l, st[b].place, &st[b].s, BB_NODES);
    if (r < 0) goto fail;
    *exact = r;
  }
  *best = st[b].place;
  *bs = st[b].s;
  st[b].place = NULL;
  for (uint32_t i = 0; i < nst; i++) free(st[i].place);
  return 0;
fail:
  for (uint32_t i = 0; i < nst; i++) free(st[i].place);
  if (l->err) {
    dp_err_set(err, l->err);
    l->err = NULL;
  }
  return -1;
}

/* ---- the answer ---- */

static char *bytes_text(double b) {
  char buf[64];
  static const char *unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, u++;
  if (u == 0) snprintf(buf, sizeof buf, "%.0f bytes", b);
  else snprintf(buf, sizeof buf, "%.3g %s", b, unit[u]);
  return dp_strdup(buf);
}

/* The error when even the best plan is over a budget: the device most
   over, its peak and when, and what is live then. */
static dp_err *budget_error(dp__lat *l, const dp_latency_opts *o, dp_module *planned) {
  dp_sched_graph pg;
  dp_schedule s = {0};
  dp_sched_memory mem = {0};
  dp_err *e = NULL;
  double *dur = NULL;
  if (dp_sched_graph_build(&pg, planned, l->cfg, DP_GRAPH_PLANNED | DP_GRAPH_PARAMS, &e) < 0) return e;
  dur = dp_malloc(((size_t)pg.n + 1) * sizeof *dur);
  if (!dur) e = oom_err();
  if (!e && dp_sched_durations(&pg, o->costs, dur, &e) == 0 && dp_sched_list(&pg, dur, 0, &s, &e) == 0 &&
      dp_sched_memory_profile(&pg, &s, &mem, &e) == 0) {
    uint32_t worst = NONE;
    double over = 0, budget = 0;
    for (uint32_t d = 0; d < pg.ndevs; d++) {
      double b = dp_config_memory(l->cfg, pg.devs[d]->device_type);
      if (pg.phys[d] == d && b > 0 && mem.peak[d] - b > over) over = mem.peak[d] - b, worst = d, budget = b;
    }
    uint32_t *live = NULL, nlive = 0;
    if (worst != NONE && dp_sched_memory_live(&pg, &mem, worst, mem.at[worst], &live, &nlive, &e) == 0) {
      char *dv = dp__vdev_short(pg.devs[worst]), *pk = bytes_text(mem.peak[worst]), *bd = bytes_text(budget);
      size_t cap = 512 + 160 * (size_t)(nlive < 8 ? nlive : 8), len = 0;
      char *msg = dp_malloc(cap);
      int ok = msg && dv && pk && bd;
      if (ok) {
        len += (size_t)snprintf(msg + len, cap - len, "memory budget: no placement found keeps %s within "
                                "its budget of %s: the best plan found holds %s there at %.6g s, %u value%s "
                                "live:", dv, bd, pk, mem.at[worst], nlive, nlive == 1 ? "" : "s");
        for (uint32_t i = 0; i < nlive && i < 8 && len < cap; i++) {
          uint32_t v = live[i];
          char *what = dp__describe(planned->ctx, pg.expr[v]), *sz = bytes_text(pg.bytes[v]);
          const char *kind = pg.kind[v] == DP_TASK_COPY ? "a copy of " : "";
          ok = what && sz; /* (out of memory: that error, not a message with a hole) */
          if (ok)
            len += (size_t)snprintf(msg + len, cap - len, "%s %s%s (%s)", i ? "," : "", kind, what, sz);
          free(what);
          free(sz);
          if (!ok) break;
        }
        if (ok && nlive > 8 && len < cap) snprintf(msg + len, cap - len, ", and %u more", nlive - 8);
      }
      e = ok ? dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "%s", msg) : oom_err();
      free(msg);
      free(dv);
      free(pk);
      free(bd);
      free(live);
    }
    if (!e) e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "memory budget: no placement found fits the budgets");
  }
  free(dur);
  dp_sched_memory_free(&mem);
  dp_schedule_free(&s);
  dp_sched_graph_free(&pg);
  return e;
}

static int same_place(const dp__lat *l, const uint32_t *a, const uint32_t *b) {
  for (uint32_t i = 0; i < l->ndec; i++)
    if (a[l->dec[i]] != b[l->dec[i]]) return 0;
  return !l->rdec || a[l->n] == b[l->n];
}

/* The plans TVM's rules and min_bytes make of the module itself (its soft
   annotations read as hard ones; no budgets), as candidates. */
static dp_module *plan_apart(driver *d, int placement, dp_module **from, dp_err **err) {
  uint32_t found;
  dp_module *hard = dp__soft_rewrite(d->m, 1, &found, err);
  if (hard && found && !typed(hard) && dp_infer_module(hard, err) < 0) {
    dp_release(hard);
    return NULL;
  }
  if (!hard) return NULL;
  dp_config *plain = d->l.cfg->nmemory ? dp_config_with_memory(d->l.cfg, NULL, 0, err)
                                       : dp_retain((dp_config *)d->l.cfg);
  dp_module *out = NULL;
  if (plain) {
    dp_plan_opts po = {.placement = placement};
    out = d->plan(hard, plain, &po, NULL, err);
  }
  dp_release(plain);
  if (out) *from = hard;
  else dp_release(hard);
  return out;
}

static int answer(driver *d, uint32_t *best, dp__score *bs, dp_latency_result *out, dp_err **err) {
  dp__lat *l = &d->l;
  const dp_latency_opts *o = d->o;
  uint32_t full = o->full ? o->full : FULL_DEFAULT;
  int all = d->calls <= full;
  scored win = {0};
  uint32_t winner = NONE;
  /* the search's placement first: it wins ties */
  cand list[DP_LATENCY_MAXCAND + 4];
  uint32_t nl = 0;
  list[nl++] = (cand){out->exact ? "exact" : "search", 0, best, 0, bs->makespan};
  for (uint32_t i = 0; all && i < d->nc; i++) list[nl++] = d->c[i];
  if (all) {
    list[nl++] = (cand){"tvm", 0, NULL, 0, -1};
    list[nl++] = (cand){"min_bytes", 0, NULL, 0, -1};
  } else { /* the rest by the inner model, as fallbacks */
    for (uint32_t i = 0; i < d->nc; i++) list[nl++] = d->c[i];
  }
  dp_err *first = NULL;
  for (uint32_t i = 0; i < nl; i++) {
    cand *c = &list[i];
    if (!all && winner != NONE) break;
    if (c->place && i > 0 && c->pure == 0 && same_place(l, c->place, best)) continue;
    dp_err *e = NULL;
    dp_module *from = NULL, *planned;
    int by = DP_PLACE_TVM;
    if (c->place) planned = plan_placement(l, d->plan, c->place, &from, &e);
    else {
      by = strcmp(c->name, "tvm") == 0 ? DP_PLACE_TVM : DP_PLACE_MIN_BYTES;
      planned = plan_apart(d, by, &from, &e);
    }
    scored sc = {0};
    if (planned && score_plan(l, o, planned, c->place, &sc, &e) == 0) {
      sc.from = from;
      sc.by = by;
      from = NULL;
      if (out->ncand < DP_LATENCY_MAXCAND)
        out->cand[out->ncand++] = (dp_latency_candidate){c->name, c->device, sc.s.makespan, sc.s.bytes,
                                                         sc.s.soft, sc.s.excess, sc.s.primary, c->model};
      if (winner == NONE || dp__score_better(&sc.s, &win.s)) {
        scored_clear(&win);
        win = sc;
        winner = out->ncand - 1;
      } else {
        scored_clear(&sc);
      }
    } else {
      dp_release(from);
      if (e && e->code == DP_ERR_MEMORY) {
        dp_err_free(first);
        dp_err_set(err, e);
        scored_clear(&win);
        return -1;
      }
      if (!first) first = e;
      else dp_err_free(e);
    }
  }
  if (winner == NONE) {
    dp_err_set(err, first ? first : dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "latency placement: no candidate "
                                              "plan could be planned"));
    return -1;
  }
  dp_err_free(first);
  if (win.s.excess > 0) {
    dp_err_set(err, budget_error(l, o, win.planned));
    scored_clear(&win);
    return -1;
  }
  out->winner = winner;
  out->planned = win.planned;
  out->from = win.from;
  out->from_placement = win.by;
  out->makespan = win.s.makespan;
  out->bytes = win.s.bytes;
  out->soft_broken = win.soft_broken;
  out->soft_weight = win.s.soft;
  return 0;
}

/* Conflicts among the module's own annotations (soft ones left out): an
   error as PlanDevices words it with the options given, placing by bytes
   (as a placement by cost, copies go where TVM's rules would unify). */
static int own_conflicts(driver *d, dp_err **err) {
  uint32_t found;
  dp_module *free_ = dp__soft_rewrite(d->m, 0, &found, err);
  if (!free_) return -1;
  dp_plan_opts po = d->o->plan ? *d->o->plan : (dp_plan_opts){0};
  po.placement = DP_PLACE_MIN_BYTES;
  po.hooks = NULL;
  po.costs = NULL;
  dp_config *plain = d->l.cfg->nmemory ? dp_config_with_memory(d->l.cfg, NULL, 0, err)
                                       : dp_retain((dp_config *)d->l.cfg);
  dp_module *p = plain ? d->plan(free_, plain, &po, d->o->all, err) : NULL;
  dp_release(plain);
  dp_release(free_);
  if (!p) return -1;
  dp_release(p);
  return 0;
}

int dp__latency(dp_module *m, const dp_config *cfg, const dp_latency_opts *o, dp__plan_fn plan,
                dp_latency_result *out, dp_err **err) {
  static const dp_latency_opts dflt = {0};
  if (!o) o = &dflt;
  *out = (dp_latency_result){0};
  driver d = {.o = o, .m = m, .plan = plan};
  uint32_t *best = NULL;
  int rc = -1;
  if (setup(&d.l, m, cfg, o, err) < 0) goto done;
  for (uint32_t v = 0; v < d.l.n; v++) d.calls += d.l.g.kind[v] == DP_TASK_CALL;
  out->calls = d.calls;
  out->decisions = d.l.nall;
  out->nsoft = d.l.g.nsoft;
  if (d.calls <= (o->full ? o->full : FULL_DEFAULT) && own_conflicts(&d, err) < 0) goto done;
  dp_sched_bound b;
  if (dp_sched_lower_bound(&d.l.g, d.l.cost, &b, err) < 0) goto done;
  out->bound = b.bound;
  if (baselines(&d, err) < 0) goto done;
  dp__score bs;
  int exact = 0;
  if (search(&d, &best, &bs, &exact, err) < 0) goto done;
  out->exact = exact;
  out->evaluations = d.l.evals;
  if (answer(&d, best, &bs, out, err) < 0) {
    if (d.calls > (o->full ? o->full : FULL_DEFAULT)) { /* (say which annotations conflict, if any) */
      dp_err *e = NULL;
      if (own_conflicts(&d, &e) < 0) {
        dp_err_free(err ? *err : NULL);
        if (err) *err = e;
      }
    }
    goto done;
  }
  rc = 0;
done:
  for (uint32_t i = 0; i < d.nc; i++) free(d.c[i].place);
  free(best);
  lat_free(&d.l);
  if (rc < 0) dp_latency_result_clear(out);
  return rc;
}

void dp_latency_result_clear(dp_latency_result *r) {
  dp_release(r->planned);
  dp_release(r->from);
  *r = (dp_latency_result){0};
}

/* ---- PlanDevices' options (plan.c) ---- */

int dp__placed_by_search(dp_module *m, const dp_config *cfg, const dp_plan_opts *o, dp_err **err) {
  if (!o || o->placement == DP_PLACE_TVM) return 0;
  if (o->placement == DP_PLACE_LATENCY || cfg->nmemory) return 1;
  uint32_t found = 0;
  if (o->placement == DP_PLACE_MIN_BYTES && dp__soft_count(m, &found, err) < 0) return -1;
  return found > 0;
}

/* min_bytes' hooks as a cost model: the capability says where a call
   cannot run, compute_cost what it costs (without: the default model). */
typedef struct adapter { dp_sched_costs c; const dp_place_hooks *h; } adapter;

static int adapt_call(void *ud, dp_expr *call, dp_vdev *vd, double *s, dp_err **err) {
  const dp_place_hooks *h = ((adapter *)ud)->h;
  int ok = 1;
  if (h->can_run && h->can_run(h->ud, call, vd, &ok, err) < 0) return -1;
  if (!ok) return 1;
  if (h->compute) return h->compute(h->ud, call, vd, s, err) < 0 ? -1 : 0;
  *s = dp_cost_model_seconds(NULL, call, vd->device_type);
  return 0;
}

static int adapt_bw(void *ud, dp_vdev *src, dp_vdev *dst, double *bps, dp_err **err) {
  const dp_place_hooks *h = ((adapter *)ud)->h;
  return h->bandwidth(h->ud, src, dst, bps, err);
}

int dp__latency_of_plan(dp_module *m, const dp_config *cfg, const dp_plan_opts *o, dp_conflicts *all,
                        dp__plan_fn plan, dp_latency_result *r, dp_err **err) {
  adapter a = {{0}, o->hooks};
  dp_latency_opts lo = {.costs = o->costs, .plan = o, .all = all,
                        .objective = o->placement == DP_PLACE_LATENCY ? DP_LATENCY_TIME : DP_LATENCY_BYTES};
  if (!lo.costs && o->hooks && (o->hooks->can_run || o->hooks->compute || o->hooks->bandwidth)) {
    a.c.ud = &a;
    a.c.call = adapt_call;
    a.c.bandwidth = o->hooks->bandwidth ? adapt_bw : NULL;
    lo.costs = &a.c;
  }
  return dp__latency(m, cfg, &lo, plan, r, err);
}
