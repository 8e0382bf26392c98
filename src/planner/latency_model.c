/*
 * The latency placement's inner model: the score of a placement without
 * planning it. From the module's task graph (DAG mode: calls and joins,
 * @main's parameters as sources) and a device per call and parameter it
 * builds the graph a plan of that placement would have, and schedules it
 * with the same list scheduler (dp_sched_list) and memory profile
 * (dp_sched_memory_profile) that score a plan:
 *
 * - a value (a call's result, a parameter) is needed on every device that
 *   runs a call reading it, directly or through joins (a tuple read whole,
 *   a call of an inlined function): one copy per value and destination
 *   device, as ShareCopies leaves a plan, on the link of that pair;
 * - a join needed on device b is read there as the join of its parts on b
 *   (one node per device it is needed on); the original join, of the parts
 *   where they are made, stays for @main's result (where it is made, no
 *   copy) and for memory;
 * - durations: a call's cost on its device, a copy's bytes over the pair's
 *   bandwidth; priorities and resources as dp_sched_list gives them.
 *
 * A plan differs where PlanDevices copies a tuple whole rather than its
 * fields, or a projection rather than the tuple: the answer is always
 * rescored by planning it (latency.c). One evaluation is linear in the
 * graph plus the list schedule's O((n + edges) log n); the arrays are
 * kept from one evaluation to the next.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"

#define NONE LAT_NONE

struct dp__xg {
  dp_sched_graph x;           /* the arrays are this file's (devs and phys: the problem's) */
  uint32_t capn, cape;
  double *dur;
  uint64_t *need;             /* per original node: the devices its value is needed on */
  uint32_t *jbase;            /* per original join: its first per-device node (NONE) */
  uint32_t *cbase;            /* per producer: its first copy (NONE) */
  uint32_t *from;             /* per node of x: the original node it stands for */
  uint64_t *key;              /* per node of x: its place in a plan's order (ties of rank) */
  uint32_t *fill;             /* scratch: per node of x */
};

static int popc(uint64_t m) { return __builtin_popcountll(m); }
static uint32_t rank_in(uint64_t mask, uint32_t b) {
  return (uint32_t)popc(mask & (((uint64_t)1 << b) - 1));
}

static int is_param(const dp_sched_graph *g, uint32_t v) {
  return g->nparams && v >= g->param0 && v - g->param0 < g->nparams;
}

static int is_producer(const dp_sched_graph *g, uint32_t v) {
  return g->kind[v] == DP_TASK_CALL || is_param(g, v);
}

static uint32_t dev_of(const dp__lat *l, const uint32_t *place, uint32_t v) {
  return l->fixed[v] != NONE ? l->fixed[v] : place[v];
}

int dp__score_better(const dp__score *a, const dp__score *b) {
  const double eps = 1e-9;
  double s;
  s = fmax(1, fmax(a->excess, b->excess));
  if (fabs(a->excess - b->excess) > eps * s) return a->excess < b->excess;
  s = fmax(fabs(a->primary), fabs(b->primary));
  if (fabs(a->primary - b->primary) > eps * s) return a->primary < b->primary;
  s = fmax(a->makespan, b->makespan);
  if (fabs(a->makespan - b->makespan) > eps * s) return a->makespan < b->makespan;
  s = fmax(a->flow, b->flow);
  if (fabs(a->flow - b->flow) > eps * s) return a->flow < b->flow;
  s = fmax(a->bytes, b->bytes);
  if (fabs(a->bytes - b->bytes) > eps * s) return a->bytes < b->bytes;
  return 0;
}

void dp__lat_soft(const dp__lat *l, const uint32_t *place, uint32_t *broken, double *weight) {
  const dp_sched_graph *g = &l->g;
  uint32_t n = 0;
  double w = 0;
  for (uint32_t k = 0; k < g->nsoft; k++) {
    uint32_t want = l->soft_choice[k];
    if (want != NONE && dev_of(l, place, g->soft_node[k]) == want) continue;
    n++;
    w += g->soft_weight[k];
  }
  *broken = n;
  *weight = w;
}

void dp__lat_model_free(dp__lat *l) {
  struct dp__xg *m = l->xg;
  if (!m) return;
  dp_sched_graph *x = &m->x;
  free(x->kind);
  free(x->expr);
  free(x->dev);
  free(x->src);
  free(x->bytes);
  free(x->approx);
  free(x->poff);
  free(x->pred);
  free(x->soff);
  free(x->succ);
  free(m->dur);
  free(m->need);
  free(m->jbase);
  free(m->cbase);
  free(m->from);
  free(m->fill);
  free(m->key);
  free(m);
  l->xg = NULL;
}

static int oom(dp__lat *l) {
  l->oom = 1;
  if (!l->err) l->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  return -1;
}

/* Room for nn nodes and ne edges in x's arrays. */
static int reserve(dp__lat *l, struct dp__xg *m, uint32_t nn, uint32_t ne) {
  dp_sched_graph *x = &m->x;
  if (nn + 1 > m->capn) {
    uint32_t c = nn + 1 + nn / 4;
    void *p;
#define RE(a, base) if (!(p = dp_realloc(base a, (size_t)c * sizeof *base a))) return oom(l); base a = p;
    RE(kind, x->) RE(expr, x->) RE(dev, x->) RE(src, x->) RE(bytes, x->) RE(approx, x->)
    RE(poff, x->) RE(soff, x->) RE(dur, m->) RE(from, m->) RE(fill, m->) RE(key, m->)
#undef RE
    m->capn = c;
  }
  if (ne + 1 > m->cape) {
    uint32_t c = ne + 1 + ne / 4;
    void *p;
    if (!(p = dp_realloc(x->pred, (size_t)c * sizeof *x->pred))) return oom(l);
    x->pred = p;
    if (!(p = dp_realloc(x->succ, (size_t)c * sizeof *x->succ))) return oom(l);
    x->succ = p;
    m->cape = c;
  }
  return 0;
}

static struct dp__xg *model(dp__lat *l) {
  if (l->xg) return l->xg;
  struct dp__xg *m = dp_calloc(1, sizeof *m);
  size_t n = (size_t)l->n + 1;
  if (m) {
    m->need = dp_malloc(n * sizeof *m->need);
    m->jbase = dp_malloc(n * sizeof *m->jbase);
    m->cbase = dp_malloc(n * sizeof *m->cbase);
  }
  l->xg = m;
  if (!m || !m->need || !m->jbase || !m->cbase) {
    oom(l);
    return NULL;
  }
  return m;
}

/* Where the value of original node p is read on device b: its per-device
   join, itself, or its copy to b. */
static uint32_t source_on(const dp__lat *l, const struct dp__xg *m, const uint32_t *place, uint32_t p,
                          uint32_t b) {
  const dp_sched_graph *g = &l->g;
  if (!is_producer(g, p)) return m->jbase[p] + rank_in(m->need[p], b);
  uint32_t d = dev_of(l, place, p);
  if (d == b) return p;
  return m->cbase[p] + rank_in(m->need[p] & ~((uint64_t)1 << d), b);
}

/* The graph of the plan of `place` into m->x. */
static int build(dp__lat *l, struct dp__xg *m, const uint32_t *place) {
  const dp_sched_graph *g = &l->g;
  dp_sched_graph *x = &m->x;
  uint32_t n = l->n;
  /* what each value is needed on, readers first */
  uint32_t R = l->rdec ? place[n] : NONE;
  for (uint32_t i = n; i-- > 0;) {
    uint32_t v = l->topo[i];
    uint64_t need = v == g->result && R != NONE ? (uint64_t)1 << R : 0;
    for (uint32_t k = g->soff[v]; k < g->soff[v + 1]; k++) {
      uint32_t s = g->succ[k];
      need |= g->kind[s] == DP_TASK_CALL ? (uint64_t)1 << dev_of(l, place, s) : m->need[s];
    }
    m->need[v] = need;
  }
  /* the nodes: the original ones, the joins per device, the copies */
  uint32_t nn = n, ne = 0;
  for (uint32_t v = 0; v < n; v++) {
    uint32_t deg = g->poff[v + 1] - g->poff[v];
    m->jbase[v] = m->cbase[v] = NONE;
    ne += deg;
    if (is_producer(g, v)) { /* (a parameter nobody reads has no device: nothing to copy) */
      uint32_t d = dev_of(l, place, v);
      uint64_t c = d < 64 ? m->need[v] & ~((uint64_t)1 << d) : 0;
      if (c) {
        m->cbase[v] = nn;
        nn += (uint32_t)popc(c);
        ne += (uint32_t)popc(c);
      }
    } else if (m->need[v]) {
      m->jbase[v] = nn;
      nn += (uint32_t)popc(m->need[v]);
      ne += (uint32_t)popc(m->need[v]) * deg;
    }
  }
  if (reserve(l, m, nn, ne) < 0) return -1;
  x->n = nn;
  x->ntasks = 0;
  uint32_t e = 0;
  /* nodes in order, each with its predecessors */
  for (uint32_t v = 0; v < n; v++) {
    x->kind[v] = g->kind[v];
    x->expr[v] = g->expr[v];
    x->bytes[v] = g->bytes[v];
    x->approx[v] = 0;
    x->src[v] = NONE;
    x->dev[v] = is_producer(g, v) ? dev_of(l, place, v) : NONE;
    m->from[v] = v;
    x->poff[v] = e;
    if (g->kind[v] == DP_TASK_CALL) {
      uint32_t b = x->dev[v];
      x->ntasks++;
      m->dur[v] = l->cost[(size_t)v * l->K + b];
      for (uint32_t k = g->poff[v]; k < g->poff[v + 1]; k++) x->pred[e++] = source_on(l, m, place, g->pred[k], b);
    } else {
      m->dur[v] = 0;
      for (uint32_t k = g->poff[v]; k < g->poff[v + 1]; k++) x->pred[e++] = g->pred[k];
    }
  }
  for (uint32_t v = 0; v < n; v++) {
    if (m->jbase[v] != NONE) {
      uint64_t need = m->need[v];
      for (uint32_t b = 0, j = m->jbase[v]; b < 64 && need >> b; b++) {
        if (!((need >> b) & 1)) continue;
        x->kind[j] = DP_TASK_JOIN;
        x->expr[j] = NULL;
        x->bytes[j] = 0;
        x->approx[j] = 0;
        x->src[j] = x->dev[j] = NONE;
        m->dur[j] = 0;
        m->from[j] = v;
        x->poff[j] = e;
        for (uint32_t k = g->poff[v]; k < g->poff[v + 1]; k++) x->pred[e++] = source_on(l, m, place, g->pred[k], b);
        j++;
      }
    }
    if (m->cbase[v] != NONE) {
      uint32_t d = dev_of(l, place, v);
      uint64_t c = m->need[v] & ~((uint64_t)1 << d);
      for (uint32_t b = 0, j = m->cbase[v]; b < 64 && c >> b; b++) {
        if (!((c >> b) & 1)) continue;
        x->kind[j] = DP_TASK_COPY;
        x->expr[j] = g->expr[v];
        x->bytes[j] = g->bytes[v];
        x->approx[j] = 0;
        x->src[j] = d;
        x->dev[j] = b;
        x->ntasks++;
        m->dur[j] = g->bytes[v] / l->bw[(size_t)d * g->ndevs + b];
        m->from[j] = v;
        x->poff[j] = e;
        x->pred[e++] = v;
        j++;
      }
    }
  }
  x->poff[nn] = e;
  /* successors by counting */
  memset(x->soff, 0, ((size_t)nn + 1) * sizeof *x->soff);
  for (uint32_t k = 0; k < e; k++) x->soff[x->pred[k] + 1]++;
  for (uint32_t v = 0; v < nn; v++) x->soff[v + 1] += x->soff[v];
  memcpy(m->fill, x->soff, (size_t)nn * sizeof *m->fill);
  for (uint32_t v = 0; v < nn; v++)
    for (uint32_t k = x->poff[v]; k < x->poff[v + 1]; k++) x->succ[m->fill[x->pred[k]]++] = v;
  /* The order a plan's nodes would have: the module's, each copy just
     before its first reader (by argument), as ShareCopies binds it and a
     plan's walk meets it; ties of rank go by it, as in the plan. */
  for (uint32_t v = 0; v < nn; v++) m->key[v] = (uint64_t)m->from[v] * 64 + 32;
  for (uint32_t v = n; v < nn; v++) {
    if (x->kind[v] != DP_TASK_COPY) continue;
    uint64_t best = UINT64_MAX;
    for (uint32_t k = x->soff[v]; k < x->soff[v + 1]; k++) {
      uint32_t r = x->succ[k], pos = 0;
      for (uint32_t q = x->poff[r]; q < x->poff[r + 1] && x->pred[q] != v; q++) pos++;
      uint64_t key = (uint64_t)m->from[r] * 64 + (pos < 31 ? pos : 31);
      if (key < best) best = key;
    }
    if (best != UINT64_MAX) m->key[v] = best;
  }
  x->devs = g->devs;
  x->ndevs = l->K;
  x->phys = g->phys;
  x->nchoice = l->K;
  x->param0 = g->param0;
  x->nparams = g->nparams;
  x->result = R != NONE ? source_on(l, m, place, g->result, R) : g->result;
  x->mode = DP_GRAPH_PLANNED | DP_GRAPH_PARAMS;
  return 0;
}

static void add_crit(const dp__lat *l, uint32_t v, uint32_t *out, uint32_t *k, uint8_t *seen) {
  if (l->tied[v] != NONE) v = l->tied[v]; /* (a parameter moves with its call) */
  if (l->fixed[v] != NONE || l->allowed[v] == 0 || seen[v]) return;
  if (l->g.kind[v] != DP_TASK_CALL && !is_param(&l->g, v)) return;
  seen[v] = 1;
  out[(*k)++] = v;
}

/* The decisions on the critical path of the schedule (calls, and the
   makers of copies on it), in time order. */
static int critical(dp__lat *l, struct dp__xg *m, const dp_schedule *s, uint32_t **crit, uint32_t *ncrit) {
  uint32_t *path = NULL, len = 0;
  uint8_t *why = NULL, *seen = dp_calloc((size_t)l->n + 1, 1);
  dp_err *e = NULL;
  if (!seen || dp_sched_critical(&m->x, s, &path, &why, &len, &e) < 0) {
    dp_err_free(e);
    free(seen);
    return oom(l);
  }
  uint32_t *out = dp_malloc(((size_t)len * 2 + 1) * sizeof *out), k = 0;
  if (!out) {
    free(path);
    free(why);
    free(seen);
    return oom(l);
  }
  for (uint32_t i = 0; i < len; i++) {
    uint32_t v = m->from[path[i]];
    add_crit(l, v, out, &k, seen);
    if (m->x.kind[path[i]] == DP_TASK_COPY) /* and the reader after it */
      for (uint32_t q = m->x.soff[path[i]]; q < m->x.soff[path[i] + 1]; q++)
        if (m->x.kind[m->x.succ[q]] == DP_TASK_CALL && i + 1 < len && m->x.succ[q] == path[i + 1])
          add_crit(l, m->from[m->x.succ[q]], out, &k, seen);
  }
  free(path);
  free(why);
  free(seen);
  *crit = out;
  *ncrit = k;
  return 0;
}

int dp__lat_eval(dp__lat *l, const uint32_t *place, dp__score *out, uint32_t **crit, uint32_t *ncrit) {
  struct dp__xg *m = model(l);
  if (!m || build(l, m, place) < 0) return -1;
  dp_schedule s;
  dp_err *e = NULL;
  if (dp__sched_list_keyed(&m->x, m->dur, 0, m->key, &s, &e) < 0) {
    if (l->err) dp_err_free(e);
    else l->err = e;
    return -1;
  }
  l->evals++;
  l->work += m->x.n;
  for (uint32_t v = 0; l->tstart && v < l->n; v++) {
    l->tstart[v] = s.start[v];
    l->tfinish[v] = s.finish[v];
  }
  double bytes = 0, flow = 0;
  for (uint32_t v = l->n; v < m->x.n; v++)
    if (m->x.kind[v] == DP_TASK_COPY) bytes += m->x.bytes[v];
  for (uint32_t v = 0; v < m->x.n; v++)
    if (m->x.kind[v] != DP_TASK_JOIN) flow += s.finish[v];
  uint32_t nb;
  double soft;
  dp__lat_soft(l, place, &nb, &soft);
  *out = (dp__score){0, 0, s.makespan, bytes, soft, flow};
  out->primary = (l->objective == DP_LATENCY_BYTES ? bytes : s.makespan) + soft * l->soft_scale;
  int rc = 0;
  if (l->budgets) {
    dp_sched_memory mem;
    if (dp_sched_memory_profile(&m->x, &s, &mem, &e) < 0) {
      if (l->err) dp_err_free(e);
      else l->err = e;
      rc = -1;
    } else {
      for (uint32_t d = 0; d < l->K; d++)
        if (mem.peak[d] > l->budget[d]) out->excess += mem.peak[d] - l->budget[d];
      dp_sched_memory_free(&mem);
    }
  }
  if (rc == 0 && crit) rc = critical(l, m, &s, crit, ncrit);
  dp_schedule_free(&s);
  return rc;
}
