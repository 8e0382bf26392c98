/*
 * The latency placement's search: starting placements the baselines do
 * not give, and local search with the inner model (latency_model.c).
 *
 * - dp__lat_mincut: the placement that minimises compute plus copy time
 *   (objective time) or the bytes copied (objective bytes), plus the
 *   weights of the soft annotations it breaks: the placement optimiser of
 *   place_solve.c (one minimum cut for two devices: exact for that sum)
 *   over the calls and parameters, a net per value read on other devices;
 *   where the sum is what a serial runtime pays, it is the best serial
 *   placement;
 * - dp__lat_params: each free parameter of @main on the device most of
 *   its readers run on (the baselines leave them to TVM's rules);
 * - dp__lat_improve: moves until none improves the score: a call (with
 *   the parameters only it reads), a chain (calls each run straight into
 *   the next, their parameters with them), to each other device it may
 *   take; the calls on the critical path first, then, below ALL_MOVES
 *   decisions, every decision; each move scored by the whole inner model
 *   and kept when strictly better (first improvement);
 * - dp__lat_perturb: iterated local search: from the best placement, move
 *   a few random chains to another device, improve, keep what is better;
 *   a fixed seed, so the result depends on the module and costs alone.
 *
 * Every loop stops when the work budget (node-evaluations of the inner
 * model, l->work_budget) is spent.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"

#define NONE LAT_NONE
#define ALL_MOVES 4096   /* decisions up to which every one is tried each pass */

static int oom(dp__lat *l) {
  l->oom = 1;
  if (!l->err) l->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  return -1;
}

static int is_param(const dp_sched_graph *g, uint32_t v) {
  return g->nparams && v >= g->param0 && v - g->param0 < g->nparams;
}

static int spent(const dp__lat *l) { return l->work >= l->work_budget; }

/* ---- parameters ---- */

void dp__lat_params(dp__lat *l, uint32_t *place) {
  const dp_sched_graph *g = &l->g;
  for (uint32_t i = 0; i < g->nparams; i++) {
    uint32_t p = g->param0 + i;
    if (l->fixed[p] != NONE || !l->allowed[p]) continue;
    uint32_t count[64] = {0}, best = NONE;
    for (uint32_t k = g->soff[p]; k < g->soff[p + 1]; k++) {
      uint32_t s = g->succ[k];
      if (g->kind[s] != DP_TASK_CALL) continue;
      uint32_t d = l->fixed[s] != NONE ? l->fixed[s] : place[s];
      if (d < l->K) count[d]++;
    }
    for (uint32_t d = 0; d < l->K; d++)
      if ((l->allowed[p] >> d & 1) && (best == NONE || count[d] > count[best])) best = d;
    if (best == NONE || !count[best]) best = place[p] != NONE && place[p] < l->K ? place[p] : best;
    place[p] = best;
  }
}

void dp__lat_result(dp__lat *l, uint32_t *place) {
  const dp_sched_graph *g = &l->g;
  double bytes[64] = {0};
  uint32_t best = 0, sp = 0, *stack = dp_malloc(((size_t)l->n + 1) * sizeof *stack);
  uint8_t *seen = dp_calloc((size_t)l->n + 1, 1);
  if (stack && seen) { /* the values the result is made of, through joins */
    stack[sp++] = g->result;
    seen[g->result] = 1;
    while (sp) {
      uint32_t v = stack[--sp];
      if (g->kind[v] == DP_TASK_CALL || is_param(g, v)) {
        uint32_t d = l->fixed[v] != NONE ? l->fixed[v] : place[v];
        if (d < l->K) bytes[d] += g->bytes[v] + 1;
        continue;
      }
      for (uint32_t k = g->poff[v]; k < g->poff[v + 1]; k++)
        if (!seen[g->pred[k]]) {
          seen[g->pred[k]] = 1;
          stack[sp++] = g->pred[k];
        }
    }
  }
  for (uint32_t d = 1; d < l->K; d++)
    if (bytes[d] > bytes[best]) best = d;
  free(stack);
  free(seen);
  place[l->n] = best;
}

/* ---- the minimum cut ---- */

/* Every call a value of producer u is read by, through joins (stamped
   with `mark`): into out, n of them; -1 when more than cap. */
static int readers_of(const dp__lat *l, uint32_t u, uint32_t *stack, uint32_t *stamp, uint32_t mark,
                      uint32_t *out, uint32_t cap) {
  const dp_sched_graph *g = &l->g;
  uint32_t sp = 0, n = 0;
  stack[sp++] = u;
  while (sp) {
    uint32_t v = stack[--sp];
    for (uint32_t k = g->soff[v]; k < g->soff[v + 1]; k++) {
      uint32_t s = g->succ[k];
      if (stamp[s] == mark) continue;
      stamp[s] = mark;
      if (g->kind[s] == DP_TASK_CALL) {
        if (n == cap) return -1;
        out[n++] = s;
      } else {
        stack[sp++] = s;
      }
    }
  }
  return (int)n;
}

int dp__lat_mincut(dp__lat *l, uint32_t *place) {
  const dp_sched_graph *g = &l->g;
  uint32_t n = l->n, K = l->K;
  dp_place_problem p;
  if (dp_place_init(&p, n, K, 0) < 0) return oom(l);
  int time = l->objective == DP_LATENCY_TIME, rc = -1;
  uint32_t *stack = dp_malloc(((size_t)n + 1) * sizeof *stack);
  uint32_t *stamp = dp_malloc(((size_t)n + 1) * sizeof *stamp);
  uint32_t *rd = dp_malloc(((size_t)n + 1) * sizeof *rd);
  uint32_t *label = dp_malloc(((size_t)n + 1) * sizeof *label);
  p.unary = dp_calloc((size_t)n * K + 1, sizeof *p.unary);
  p.pair = time ? dp_calloc((size_t)K * K, sizeof *p.pair) : NULL;
  if (!stack || !stamp || !rd || !label || !p.unary || (time && !p.pair)) goto oom;
  for (uint32_t v = 0; v < n; v++) {
    stamp[v] = NONE;
    if (l->fixed[v] != NONE) p.fixed[v] = l->fixed[v];
    else if (l->allowed[v]) p.allowed[v] = l->allowed[v];
    if (time && g->kind[v] == DP_TASK_CALL)
      for (uint32_t d = 0; d < K; d++) {
        double c = l->cost[(size_t)v * K + d];
        p.unary[(size_t)v * K + d] = isfinite(c) ? (int64_t)llround(c * 1e12) : 0;
      }
  }
  double unit = time ? 1e12 : 1; /* a soft weight in the problem's unit */
  for (uint32_t k = 0; k < g->nsoft; k++) {
    uint32_t v = g->soft_node[k];
    double w = g->soft_weight[k] * unit;
    int64_t iw = w > (double)DP_PLACE_INF / 4 ? DP_PLACE_INF / 4 : (int64_t)llround(w);
    for (uint32_t d = 0; d < K; d++)
      if (d != l->soft_choice[k]) p.unary[(size_t)v * K + d] += iw;
  }
  for (uint32_t a = 0; time && a < K; a++)
    for (uint32_t b = 0; b < K; b++)
      if (a != b) p.pair[(size_t)a * K + b] = 1e12 / l->bw[(size_t)a * g->ndevs + b];
  /* a net per value, its readers through joins; too many readers (a huge
     join read by many) and this start is left out */
  uint64_t pins = 0, cap = 8 * (uint64_t)(g->poff[n] + n) + 64;
  for (uint32_t u = 0; u < n; u++) {
    if (g->kind[u] != DP_TASK_CALL && !is_param(g, u)) continue;
    int r = readers_of(l, u, stack, stamp, u, rd, n);
    if (r < 0 || (pins += (uint64_t)r) > cap) {
      rc = 1;
      goto done;
    }
    double bytes = g->bytes[u];
    if (r == 0 || !(bytes > 0)) continue;
    int64_t w = bytes > 1e15 ? (int64_t)1e15 : (int64_t)ceil(bytes);
    if (dp_place_net(&p, u, rd, (uint32_t)r, w) < 0) goto oom;
  }
  int64_t total;
  int s = dp_place_solve(&p, label, &total);
  if (s < 0) goto oom;
  if (s > 0) {
    rc = 1;
    goto done;
  }
  for (uint32_t v = 0; v < n; v++)
    if (l->fixed[v] == NONE && l->allowed[v]) place[v] = label[v];
  rc = 0;
  goto done;
oom:
  oom(l);
done:
  dp_place_free(&p);
  free(stack);
  free(stamp);
  free(rd);
  free(label);
  return rc;
}

/* ---- moves ---- */

/* The nodes a move of v takes along: v, and the free parameters only it
   reads; with whole, every call of v's chain and theirs. */
static uint32_t group(const dp__lat *l, uint32_t v, int whole, uint32_t *out) {
  uint32_t n = 0;
  uint32_t first = whole && l->chain[v] != NONE ? l->chain[v] : v;
  for (uint32_t c = first; c != NONE; c = whole ? l->chain_next[c] : NONE) {
    out[n++] = c;
    if (l->g.kind[c] == DP_TASK_CALL)
      for (uint32_t k = l->xoff[c]; k < l->xoff[c + 1]; k++) out[n++] = l->xpar[k];
  }
  return n;
}

typedef struct mover {
  dp__lat *l;
  uint32_t *place;
  dp__score *score;
  uint32_t *grp, *old;      /* a move's nodes and their devices before it (two groups) */
  uint32_t *crit, ncrit;    /* the last accepted placement's critical decisions */
  double *st, *fin;         /* the last accepted placement's start and finish per node */
} mover;

/* Scores mv->place as a move left it: kept when better (1: its critical
   decisions and times remembered), else the move's n nodes (mv->grp) put
   back to their devices before it (mv->old) (0); -1 out of memory. */
static int judge(mover *mv, uint32_t n) {
  dp__lat *l = mv->l;
  dp__score s;
  uint32_t *crit = NULL, ncrit = 0;
  if (dp__lat_eval(l, mv->place, &s, &crit, &ncrit) < 0) return -1;
  if (dp__score_better(&s, mv->score)) {
    *mv->score = s;
    free(mv->crit);
    mv->crit = crit;
    mv->ncrit = ncrit;
    memcpy(mv->st, l->tstart, (size_t)l->n * sizeof *mv->st);
    memcpy(mv->fin, l->tfinish, (size_t)l->n * sizeof *mv->fin);
    return 1;
  }
  free(crit);
  for (uint32_t i = 0; i < n; i++) mv->place[mv->grp[i]] = mv->old[i];
  return 0;
}

/* Moves the group to d (where allowed): 1 when kept (better), 0 not, -1. */
static int try_move(mover *mv, uint32_t ng, uint32_t d) {
  dp__lat *l = mv->l;
  uint32_t changed = 0;
  for (uint32_t i = 0; i < ng; i++) {
    uint32_t v = mv->grp[i];
    mv->old[i] = mv->place[v];
    if ((l->allowed[v] >> d & 1) && mv->place[v] != d) {
      mv->place[v] = d;
      changed++;
    }
  }
  if (!changed) return 0;
  return judge(mv, ng);
}

/* The time window of the group's calls in the last accepted schedule. */
static void window(const mover *mv, uint32_t ng, const uint32_t *grp, double *a, double *b) {
  const dp__lat *l = mv->l;
  *a = INFINITY;
  *b = -INFINITY;
  for (uint32_t i = 0; i < ng; i++) {
    uint32_t v = grp[i];
    if (l->g.kind[v] != DP_TASK_CALL) continue;
    if (mv->st[v] < *a) *a = mv->st[v];
    if (mv->fin[v] > *b) *b = mv->fin[v];
  }
}

/* v's chain and another chain running beside it on another device trade
   devices (each where it may). */
static int swaps_of(mover *mv, uint32_t v) {
  dp__lat *l = mv->l;
  uint32_t ng = group(l, v, 1, mv->grp), a = mv->place[v];
  double s0, f0;
  window(mv, ng, mv->grp, &s0, &f0);
  uint32_t head = l->chain[v];
  for (uint32_t h = 0; h < l->nheads && !spent(l); h++) {
    uint32_t u = l->heads[h], b = mv->place[u];
    if (u == head || b == a || !(l->allowed[v] >> b & 1) || !(l->allowed[u] >> a & 1)) continue;
    uint32_t nu = group(l, u, 1, mv->grp + ng);
    double s1, f1;
    window(mv, nu, mv->grp + ng, &s1, &f1);
    if (s1 >= f0 || s0 >= f1) continue; /* (not beside it) */
    for (uint32_t i = 0; i < ng + nu; i++) mv->old[i] = mv->place[mv->grp[i]];
    for (uint32_t i = 0; i < ng + nu; i++) {
      uint32_t x = mv->grp[i], to = i < ng ? b : a;
      if (l->allowed[x] >> to & 1) mv->place[x] = to;
    }
    int r = judge(mv, ng + nu);
    if (r != 0) return r;
  }
  return 0;
}

/* Every move of v: alone and with its chain, to each other device; then
   (swaps) its chain trading devices with one beside it. */
static int moves_of(mover *mv, uint32_t v, int swaps) {
  dp__lat *l = mv->l;
  for (int whole = 0; whole < 2; whole++) {
    if (whole && (l->chain[v] == NONE || (l->chain[v] == v && l->chain_next[v] == NONE))) break;
    uint32_t ng = group(l, v, whole, mv->grp);
    for (uint32_t d = 0; d < l->K; d++) {
      if (d == mv->place[v] || !(l->allowed[v] >> d & 1) || spent(l)) continue;
      int r = try_move(mv, ng, d);
      if (r != 0) return r;
    }
  }
  if (swaps && l->g.kind[v] == DP_TASK_CALL && l->chain[v] != NONE) return swaps_of(mv, v);
  return 0;
}

static int mover_init(mover *mv, dp__lat *l, uint32_t *place, dp__score *score) {
  *mv = (mover){.l = l, .place = place, .score = score};
  size_t n = (size_t)l->n + 1;
  mv->grp = dp_malloc(2 * n * sizeof *mv->grp);
  mv->old = dp_malloc(2 * n * sizeof *mv->old);
  mv->st = dp_malloc(n * sizeof *mv->st);
  mv->fin = dp_malloc(n * sizeof *mv->fin);
  if (!mv->grp || !mv->old || !mv->st || !mv->fin) return oom(l);
  if (dp__lat_eval(l, place, score, &mv->crit, &mv->ncrit) < 0) return -1;
  memcpy(mv->st, l->tstart, (size_t)l->n * sizeof *mv->st);
  memcpy(mv->fin, l->tfinish, (size_t)l->n * sizeof *mv->fin);
  return 0;
}

static void mover_free(mover *mv) {
  free(mv->grp);
  free(mv->old);
  free(mv->crit);
  free(mv->st);
  free(mv->fin);
}

/* One pass: the critical decisions, then (small problems) every decision.
   Returns 1 when some move was kept, 0 none, -1. */
static int pass(mover *mv, uint8_t *tried) {
  dp__lat *l = mv->l;
  int any = 0;
  memset(tried, 0, (size_t)l->n + 1);
  for (uint32_t d = 0; l->rdec && d < l->K && !spent(l); d++) { /* @main's result device */
    if (d == mv->place[l->n]) continue;
    mv->grp[0] = l->n;
    mv->old[0] = mv->place[l->n];
    mv->place[l->n] = d;
    int r = judge(mv, 1);
    if (r < 0) return -1;
    if (r > 0) any = 1;
  }
  for (uint32_t i = 0; i < mv->ncrit && !spent(l); i++) {
    uint32_t v = mv->crit[i];
    if (tried[v]) continue;
    tried[v] = 1;
    int r = moves_of(mv, v, 1);
    if (r < 0) return -1;
    if (r > 0) {
      any = 1;
      i = (uint32_t)-1; /* the critical path changed: from its start, what was not tried */
    }
  }
  if (l->ndec > ALL_MOVES) return any;
  for (uint32_t i = 0; i < l->ndec && !spent(l); i++) {
    uint32_t v = l->dec[i];
    if (tried[v]) continue;
    tried[v] = 1;
    int r = moves_of(mv, v, 0);
    if (r < 0) return -1;
    any |= r;
  }
  return any;
}

int dp__lat_improve(dp__lat *l, uint32_t *place, dp__score *score) {
  mover mv;
  uint8_t *tried = dp_malloc((size_t)l->n + 1);
  int rc = tried ? mover_init(&mv, l, place, score) : (mv = (mover){0}, oom(l));
  while (rc == 0 && !spent(l)) {
    int r = pass(&mv, tried);
    if (r < 0) rc = -1;
    if (r <= 0) break;
  }
  mover_free(&mv);
  free(tried);
  return rc;
}

/* ---- iterated local search ---- */

static uint32_t next_random(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(*s >> 33);
}

int dp__lat_perturb(dp__lat *l, uint32_t *place, dp__score *score) {
  if (!l->ndec || l->K < 2) return 0;
  size_t n = (size_t)l->n + 1;
  uint32_t *trial = dp_malloc(n * sizeof *trial), *grp = dp_malloc(n * sizeof *grp);
  if (!trial || !grp) {
    free(trial);
    free(grp);
    return oom(l);
  }
  uint64_t seed = 0x9e3779b97f4a7c15ULL ^ l->n;
  uint32_t rounds = 32 + (l->ndec < 512 ? l->ndec / 2 : 256);
  int rc = 0;
  for (uint32_t r = 0; r < rounds && !spent(l) && rc == 0; r++) {
    memcpy(trial, place, n * sizeof *trial); /* (n: the nodes and @main's result) */
    uint32_t k = 1 + next_random(&seed) % 3;
    for (uint32_t j = 0; j < k; j++) {
      uint32_t v = l->dec[next_random(&seed) % l->ndec];
      uint32_t d = next_random(&seed) % l->K;
      if (d == trial[v]) d = (d + 1) % l->K;
      uint32_t ng = group(l, v, next_random(&seed) & 1, grp);
      for (uint32_t i = 0; i < ng; i++)
        if (l->allowed[grp[i]] >> d & 1) trial[grp[i]] = d;
    }
    dp__score s;
    rc = dp__lat_improve(l, trial, &s);
    if (rc == 0 && dp__score_better(&s, score)) {
      memcpy(place, trial, n * sizeof *place);
      *score = s;
    }
  }
  free(trial);
  free(grp);
  return rc;
}
