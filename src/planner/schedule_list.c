/*
 * List scheduling of a placed task graph (dp_sched_list, schedule.h): an
 * event-driven simulation of the machine. Each resource (a physical device,
 * or the link of an ordered pair of them) keeps a heap of its ready tasks
 * by priority; a heap of finish events moves time forward. At each time,
 * first every task that finishes then is taken (its readers' counts go
 * down; a join whose values are all ready passes the time on at once), then
 * every idle resource with a ready task starts its best one, resources in
 * index order. So no resource idles while it has work, and nothing depends
 * on anything but the graph and the durations.
 *
 * The priority is the upward rank: a node's duration plus the largest rank
 * of its readers, the length of the longest chain of work still behind it
 * (with copies, as tasks, on the chains); ties go to the lower node number.
 * It is HEFT's order with every task's place fixed: what lies on the
 * longest remaining chain goes first.
 *
 * The critical path (dp_sched_critical) is read back from the schedule: from
 * a task ending at the makespan, each task started when a value it reads
 * was finished, or when the task before it on its resource was.
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"
#include "devplan/schedule.h"

#define NONE DP_SCHED_NONE

/* A binary heap of node numbers; `before` says which of two comes out first. */
typedef struct heap { uint32_t *v; uint32_t n, cap; } heap;
typedef struct lctx {
  const dp_sched_graph *g;
  const double *dur;
  dp_schedule *s;
  double *rank;
  uint32_t *left;           /* per node: predecessors not yet finished */
  double *ready;            /* per node: when its last predecessor finished */
  heap *rq;                 /* per resource: ready tasks */
  heap ev;                  /* finish events */
  uint8_t *busy, *dirty;
  uint32_t *dlist, ndirty;
  uint32_t *work, nwork;    /* nodes finished at the current time, to release */
  uint32_t *last;           /* per resource: the task it ran last */
  uint32_t nres;            /* resources (rq's length, kept past dp_schedule_free) */
  const uint64_t *key;      /* ties of rank: by key, else by node number */
  double now;
  int oom;
} lctx;

static int rank_before(const lctx *c, uint32_t a, uint32_t b) {
  if (c->rank[a] != c->rank[b]) return c->rank[a] > c->rank[b];
  if (c->key && c->key[a] != c->key[b]) return c->key[a] < c->key[b];
  return a < b;
}

static int event_before(const lctx *c, uint32_t a, uint32_t b) {
  const double *f = c->s->finish;
  if (f[a] != f[b]) return f[a] < f[b];
  return a < b;
}

typedef int (*before_fn)(const lctx *, uint32_t, uint32_t);

static void heap_push(lctx *c, heap *h, uint32_t x, before_fn before) {
  if (dp_grow((void **)&h->v, &h->cap, h->n + 1, sizeof *h->v) < 0) {
    c->oom = 1;
    return;
  }
  uint32_t i = h->n++;
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (!before(c, x, h->v[p])) break;
    h->v[i] = h->v[p];
    i = p;
  }
  h->v[i] = x;
}

static uint32_t heap_pop(lctx *c, heap *h, before_fn before) {
  uint32_t top = h->v[0], x = h->v[--h->n], i = 0;
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, m = i;
    uint32_t best = x;
    if (l < h->n && before(c, h->v[l], best)) m = l, best = h->v[l];
    if (r < h->n && before(c, h->v[r], best)) m = r;
    if (m == i) break;
    h->v[i] = h->v[m];
    i = m;
  }
  if (h->n) h->v[i] = x;
  return top;
}

/* ---- resources ---- */

/* Every physical device is a resource; every ordered pair of them a copy
   uses, a link after them (numbered as first used). Serial: one resource. */
static int resources(lctx *c, int serial) {
  const dp_sched_graph *g = c->g;
  dp_schedule *s = c->s;
  uint32_t nd = g->ndevs, nres = serial ? 1 : 0;
  uint32_t *devres = dp_malloc(((size_t)nd + 1) * sizeof *devres);
  uint32_t *linkres = dp_malloc(((size_t)nd * nd + 1) * sizeof *linkres);
  int rc = devres && linkres ? 0 : -1;
  for (size_t i = 0; rc == 0 && i < (size_t)nd * nd; i++) linkres[i] = NONE;
  for (uint32_t d = 0; rc == 0 && d < nd; d++)
    devres[d] = !serial && g->phys[d] == d ? nres++ : NONE;
  for (uint32_t v = 0; rc == 0 && !serial && v < g->n; v++) {
    if (g->kind[v] != DP_TASK_COPY) continue;
    uint32_t *slot = &linkres[(size_t)g->phys[g->src[v]] * nd + g->phys[g->dev[v]]];
    if (*slot == NONE) *slot = nres++;
  }
  if (rc == 0) {
    s->res_src = dp_malloc(((size_t)nres + 1) * sizeof *s->res_src);
    s->res_dst = dp_malloc(((size_t)nres + 1) * sizeof *s->res_dst);
    s->res_link = dp_calloc((size_t)nres + 1, 1);
    rc = s->res_src && s->res_dst && s->res_link ? 0 : -1;
  }
  if (rc == 0) {
    s->nres = nres;
    if (serial) s->res_src[0] = s->res_dst[0] = NONE;
    for (uint32_t d = 0; d < nd; d++)
      if (devres[d] != NONE) s->res_src[devres[d]] = s->res_dst[devres[d]] = d;
    for (uint32_t a = 0; a < nd; a++)
      for (uint32_t b = 0; b < nd; b++) {
        uint32_t r = linkres[(size_t)a * nd + b];
        if (r == NONE) continue;
        s->res_src[r] = a;
        s->res_dst[r] = b;
        s->res_link[r] = 1;
      }
    for (uint32_t v = 0; v < g->n; v++) {
      s->res[v] = NONE;
      if (g->kind[v] == DP_TASK_JOIN) continue;
      if (serial) s->res[v] = 0;
      else if (g->kind[v] == DP_TASK_CALL) s->res[v] = devres[g->phys[g->dev[v]]];
      else s->res[v] = linkres[(size_t)g->phys[g->src[v]] * nd + g->phys[g->dev[v]]];
    }
  }
  free(devres);
  free(linkres);
  return rc;
}

/* ---- order and ranks ---- */

/* The upward ranks over a topological order, backwards: 0, -1 on a cycle
   (a bug of the graph's builder), -2 when out of memory. */
static int ranks(lctx *c, uint32_t *order) {
  const dp_sched_graph *g = c->g;
  int rc = dp_sched_order(g, order);
  if (rc < 0) return rc;
  for (uint32_t i = g->n; i-- > 0;) {
    uint32_t v = order[i];
    double best = 0;
    for (uint32_t k = g->soff[v]; k < g->soff[v + 1]; k++)
      if (c->rank[g->succ[k]] > best) best = c->rank[g->succ[k]];
    c->rank[v] = c->dur[v] + best;
  }
  for (uint32_t v = 0; v < g->n; v++) c->left[v] = g->poff[v + 1] - g->poff[v];
  return 0;
}

/* ---- the simulation ---- */

static void mark_dirty(lctx *c, uint32_t r) {
  if (c->dirty[r]) return;
  c->dirty[r] = 1;
  c->dlist[c->ndirty++] = r;
}

/* Node v's predecessors are all finished (the last at c->ready[v]). */
static void becomes_ready(lctx *c, uint32_t v) {
  if (c->g->kind[v] == DP_TASK_JOIN) {
    c->s->start[v] = c->s->finish[v] = c->ready[v];
    c->work[c->nwork++] = v;
    return;
  }
  uint32_t r = c->s->res[v];
  heap_push(c, &c->rq[r], v, rank_before);
  mark_dirty(c, r);
}

/* Everything in the work list finished at time now: release its readers. */
static void release(lctx *c) {
  const dp_sched_graph *g = c->g;
  while (c->nwork && !c->oom) {
    uint32_t v = c->work[--c->nwork];
    for (uint32_t k = g->soff[v]; k < g->soff[v + 1]; k++) {
      uint32_t s = g->succ[k];
      if (c->s->finish[v] > c->ready[s]) c->ready[s] = c->s->finish[v];
      if (--c->left[s] == 0) becomes_ready(c, s);
    }
  }
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Every idle resource with a ready task starts its best one. */
static void start_ready(lctx *c) {
  qsort(c->dlist, c->ndirty, sizeof *c->dlist, cmp_u32);
  for (uint32_t i = 0; i < c->ndirty && !c->oom; i++) {
    uint32_t r = c->dlist[i];
    c->dirty[r] = 0;
    if (c->busy[r] || !c->rq[r].n) continue;
    uint32_t v = heap_pop(c, &c->rq[r], rank_before);
    c->s->start[v] = c->now;
    c->s->finish[v] = c->now + c->dur[v];
    c->s->prev[v] = c->last[r];
    c->last[r] = v;
    c->busy[r] = 1;
    c->s->busy[r] += c->dur[v];
    c->s->ntask[r]++;
    heap_push(c, &c->ev, v, event_before);
  }
  c->ndirty = 0;
}

static int simulate(lctx *c) {
  const dp_sched_graph *g = c->g;
  for (uint32_t v = 0; v < g->n; v++)
    if (!c->left[v]) becomes_ready(c, v);
  release(c);
  start_ready(c);
  while (c->ev.n && !c->oom) {
    c->now = c->s->finish[c->ev.v[0]];
    while (c->ev.n && c->s->finish[c->ev.v[0]] == c->now) {
      uint32_t v = heap_pop(c, &c->ev, event_before);
      uint32_t r = c->s->res[v];
      c->busy[r] = 0;
      mark_dirty(c, r);
      c->work[c->nwork++] = v;
      release(c);
    }
    start_ready(c);
  }
  return c->oom ? -1 : 0;
}

static void lctx_free(lctx *c) {
  free(c->rank);
  free(c->left);
  free(c->ready);
  if (c->rq)
    for (uint32_t r = 0; r < c->nres; r++) free(c->rq[r].v);
  free(c->rq);
  free(c->ev.v);
  free(c->busy);
  free(c->dirty);
  free(c->dlist);
  free(c->work);
  free(c->last);
}

int dp_sched_list(const dp_sched_graph *g, const double *dur, int serial, dp_schedule *out,
                  dp_err **err) {
  return dp__sched_list_keyed(g, dur, serial, NULL, out, err);
}

int dp__sched_list_keyed(const dp_sched_graph *g, const double *dur, int serial, const uint64_t *key,
                         dp_schedule *out, dp_err **err) {
  dp_schedule *s = out;
  *s = (dp_schedule){.n = g->n};
  lctx c = {.g = g, .dur = dur, .s = s, .key = key};
  size_t n = (size_t)g->n + 1;
  s->start = dp_calloc(n, sizeof *s->start);
  s->finish = dp_calloc(n, sizeof *s->finish);
  s->res = dp_malloc(n * sizeof *s->res);
  s->prev = dp_malloc(n * sizeof *s->prev);
  c.rank = dp_calloc(n, sizeof *c.rank);
  c.left = dp_malloc(n * sizeof *c.left);
  c.ready = dp_calloc(n, sizeof *c.ready);
  c.work = dp_malloc(n * sizeof *c.work);
  uint32_t *order = dp_malloc(n * sizeof *order);
  int rc = -1;
  if (!s->start || !s->finish || !s->res || !s->prev || !c.rank || !c.left || !c.ready ||
      !c.work || !order || resources(&c, serial) < 0)
    goto oom;
  for (uint32_t v = 0; v < g->n; v++) s->prev[v] = NONE;
  s->busy = dp_calloc((size_t)s->nres + 1, sizeof *s->busy);
  s->ntask = dp_calloc((size_t)s->nres + 1, sizeof *s->ntask);
  c.rq = dp_calloc((size_t)s->nres + 1, sizeof *c.rq);
  c.nres = c.rq ? s->nres : 0;
  c.busy = dp_calloc((size_t)s->nres + 1, 1);
  c.dirty = dp_calloc((size_t)s->nres + 1, 1);
  c.dlist = dp_malloc(((size_t)s->nres + 1) * sizeof *c.dlist);
  c.last = dp_malloc(((size_t)s->nres + 1) * sizeof *c.last);
  if (!s->busy || !s->ntask || !c.rq || !c.busy || !c.dirty || !c.dlist || !c.last) goto oom;
  for (uint32_t r = 0; r < s->nres; r++) c.last[r] = NONE;
  int rk = ranks(&c, order);
  if (rk == -2) goto oom;
  if (rk < 0) {
    dp_err_set(err, dp_err_new(DP_ERR_GENERIC, DP_NOSPAN, "schedule: the task graph has a cycle "
                               "(a bug of devplan: please report the module)"));
    goto fail;
  }
  if (simulate(&c) < 0) goto oom;
  for (uint32_t v = 0; v < g->n; v++)
    if (g->kind[v] != DP_TASK_JOIN && s->finish[v] > s->makespan) s->makespan = s->finish[v];
  rc = 0;
  goto done;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
fail:
  dp_schedule_free(s);
done:
  free(order);
  lctx_free(&c);
  return rc;
}

void dp_schedule_free(dp_schedule *s) {
  free(s->start);
  free(s->finish);
  free(s->res);
  free(s->prev);
  free(s->res_src);
  free(s->res_dst);
  free(s->res_link);
  free(s->busy);
  free(s->ntask);
  *s = (dp_schedule){0};
}

/* ---- the critical path ---- */

/* What v waited for: a task whose finish is v's start (through joins), by
   data first; NONE at time 0. *by_res set when it was the resource. */
static uint32_t waited_for(const dp_sched_graph *g, const dp_schedule *s, uint32_t v, int *by_res) {
  double t = s->start[v];
  *by_res = 0;
  if (t <= 0) return NONE;
  uint32_t cur = v;
  for (;;) { /* down through joins that finished at t */
    uint32_t next = NONE;
    for (uint32_t k = g->poff[cur]; k < g->poff[cur + 1]; k++) {
      uint32_t p = g->pred[k];
      if (s->finish[p] == t) {
        next = p;
        if (g->kind[p] != DP_TASK_JOIN) break;
      }
    }
    if (next == NONE) break;
    if (g->kind[next] != DP_TASK_JOIN) return next;
    cur = next;
  }
  if (s->prev[v] != NONE && s->finish[s->prev[v]] == t) {
    *by_res = 1;
    return s->prev[v];
  }
  return NONE;
}

int dp_sched_critical(const dp_sched_graph *g, const dp_schedule *s, uint32_t **path, uint8_t **why,
                      uint32_t *n, dp_err **err) {
  *path = NULL;
  *why = NULL;
  *n = 0;
  uint32_t end = NONE;
  for (uint32_t v = 0; v < g->n; v++)
    if (g->kind[v] != DP_TASK_JOIN && s->finish[v] == s->makespan && end == NONE) end = v;
  if (end == NONE) return 0;
  uint32_t cap = 0, capw = 0, len = 0, *p = NULL;
  uint8_t *w = NULL;
  for (uint32_t v = end; v != NONE;) {
    int by_res;
    uint32_t u = waited_for(g, s, v, &by_res);
    if (dp_grow((void **)&p, &cap, len + 1, sizeof *p) < 0 ||
        dp_grow((void **)&w, &capw, len + 1, sizeof *w) < 0)
      goto oom;
    p[len] = v;
    w[len++] = (uint8_t)by_res;
    v = u;
  }
  for (uint32_t i = 0; i < len / 2; i++) { /* into time order */
    uint32_t t = p[i];
    p[i] = p[len - 1 - i];
    p[len - 1 - i] = t;
    uint8_t b = w[i];
    w[i] = w[len - 1 - i];
    w[len - 1 - i] = b;
  }
  /* why[i]: path[i] waited for its resource (the flag belongs to the later task) */
  *path = p;
  *why = w;
  *n = len;
  return 0;
oom:
  free(p);
  free(w);
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return -1;
}
