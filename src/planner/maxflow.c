/*
 * Minimum s-t cut, for the placement optimiser (place_solve.c), which
 * builds one graph per move: nodes, arcs with a capacity each way, and
 * terminal capacities that accumulate per node (the source and sink are
 * not nodes of the caller's numbering). Capacities are non-negative int64;
 * DP__FLOW_INF marks an arc no cut may cross (the optimiser keeps the
 * finite ones far below it). The cut read is the same whichever maximum
 * flow is found: the sink side is the nodes that still reach the sink in
 * the residual graph.
 *
 * Two algorithms, for speed and for a guarantee:
 * - Boykov-Kolmogorov (2004) first: two search trees grown from the
 *   terminals, augmenting paths where they meet, orphans adopted again;
 *   on a large graph the nodes tied to a terminal join the search a batch
 *   of node numbers at a time (one part of the graph in the cache at once).
 *   On the optimiser's graphs (short paths, most nodes tied to a terminal)
 *   and on grids it is 1.4x to 4.7x faster than push-relabel
 *   (bench/maxflow.c at 1,000,000 nodes; on random sparse graphs 2.5x
 *   slower), but its running time has no polynomial bound. So it has a
 *   budget of work (arcs scanned and paths walked), 64 per node and arc
 *   plus a constant: the benchmark's graphs use at most 11.2.
 * - Push-relabel (Goldberg-Tarjan), the first phase only (a maximum
 *   preflow), when the budget runs out: O(n^2 sqrt(m)). Highest-label
 *   selection, the gap heuristic and global relabelling (a breadth-first
 *   search from the sink), as in Cherkassky and Goldberg's HIPR, but 32
 *   times rarer than HIPR's default: the gap heuristic keeps the labels
 *   close enough, and each global relabelling is a pass over the whole
 *   graph (bench/maxflow.c's graphs of 200,000 nodes: grid 1.12 s at
 *   HIPR's rate, 0.45 s at this one; a two-label placement of 160,000
 *   variables 1.06 s and 0.40 s; random sparse graphs lose: 0.56 s
 *   against 0.75 s).
 * Everything is arrays and explicit queues: no recursion, any graph size
 * the memory holds; deterministic (node and arc order).
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"

#define NIL UINT32_MAX

/* The graph (planner.h: dp__fnode, dp__farc, struct dp__flow) as the
   caller builds it is the solver's own: the search reads several of a
   node's fields at each node it meets (one cache line, not one per
   array); nothing is copied at the solve; push-relabel's fallback builds
   its own arrays from the residual graph Boykov-Kolmogorov leaves. */
typedef dp__fnode fnode;
typedef dp__farc farc;

/* On a graph of at least BK_LAZY_NODES nodes (dp__flow_batches: another
   size) the nodes tied to a terminal join the active queue BK_BATCH node
   numbers at a time, each batch when the queue has run dry, rather than
   all at the start (fnode.waits until then): the search then
   grows, augments and adopts in one part of the graph before the next,
   whose nodes and arcs stay in the cache meanwhile, where a queue of all
   of them grows every tree a step at a time across the whole graph, each
   round a pass over memory that does not fit there (bench/perf.lua,
   branchy, 1,000,000 calls, 2 devices: 1.27 million nodes, 4.6 million
   arcs; the search's CPU time 260-320 ms -> 131-143 ms, its work 8.8 ->
   12.2 million units, as trees reach further before the nodes ahead are
   queued). Below that size the graph stays in the cache either way and
   the extra work would be all that changes (branchy at 100,000 calls:
   127,000 nodes). Every node tied to a terminal is in its tree from the
   start, as before: only its turn to grow waits. Which maximum flow is
   found changes nothing read: the sink side is the same for all. */
#define BK_LAZY_NODES (1u << 18)
#define BK_BATCH 1024u
#define BK_BATCH_WORK 3u

dp__flow *dp__flow_new(void) {
  dp__flow *g = dp_calloc(1, sizeof(dp__flow));
  if (g) g->budget = -1, g->batch_from = BK_LAZY_NODES, g->batch = BK_BATCH;
  return g;
}

void dp__flow_budget(dp__flow *g, int64_t work) { g->budget = work; }

void dp__flow_batches(dp__flow *g, uint32_t from, uint32_t batch) {
  g->batch_from = from;
  g->batch = batch ? batch : 1;
}

/* (the room in whole elements, at most what a capacity counts) */
static uint32_t room_of(size_t bytes, size_t elem) {
  size_t n = bytes / elem;
  return n > UINT32_MAX - 8 ? UINT32_MAX - 8 : (uint32_t)n;
}

void dp__flow_adopt(dp__flow *g, void *nodes, size_t nbytes, void *arcs, size_t abytes) {
  if (nodes && !g->nd && room_of(nbytes, sizeof *g->nd)) {
    g->nd = nodes;
    g->capn = room_of(nbytes, sizeof *g->nd);
  } else {
    free(nodes);
  }
  if (arcs && !g->arc && room_of(abytes, sizeof *g->arc)) {
    g->arc = arcs;
    g->capa = room_of(abytes, sizeof *g->arc);
  } else {
    free(arcs);
  }
}

void *dp__flow_take(dp__flow *g, int arcs, size_t *bytes) {
  void *b = arcs ? (void *)g->arc : (void *)g->nd;
  *bytes = arcs ? (size_t)g->capa * sizeof *g->arc : (size_t)g->capn * sizeof *g->nd;
  if (arcs) g->arc = NULL, g->capa = g->na = 0;
  else g->nd = NULL, g->capn = g->n = 0;
  if (!b) *bytes = 0;
  return b;
}

void dp__flow_free(dp__flow *g) {
  if (!g) return;
  free(g->nd);
  free(g->arc);
  free(g);
}

uint32_t dp__flow_count(const dp__flow *g) { return g->n; }

uint32_t dp__flow_most(const dp__flow *g) { return g->most; }

int64_t dp__flow_all_source(const dp__flow *g) { return g->to_sink; }

int dp__flow_reserve(dp__flow *g, uint64_t nodes, uint64_t pairs) {
  if (nodes > UINT32_MAX - 8 || pairs > (UINT32_MAX - 8) / 2) return 0; /* (then they grow as made) */
  return dp_grow((void **)&g->nd, &g->capn, (uint32_t)nodes, sizeof *g->nd) < 0 ||
         dp_grow((void **)&g->arc, &g->capa, (uint32_t)(2 * pairs), sizeof *g->arc) < 0 ? -1 : 0;
}

void dp__flow_reset(dp__flow *g) {
  g->n = g->na = 0;
  g->oom = g->spent = 0;
}

int dp__flow_node_room(dp__flow *g) {
  if (dp_grow((void **)&g->nd, &g->capn, g->n + 1, sizeof *g->nd) < 0) {
    g->oom = 1;
    return -1;
  }
  return 0;
}

int dp__flow_arc_room(dp__flow *g) {
  /* (arc numbers stay below the tree links' marks) */
  if (g->na > UINT32_MAX - 8 || dp_grow((void **)&g->arc, &g->capa, g->na + 2, sizeof *g->arc) < 0) {
    g->oom = 1;
    return -1;
  }
  return 0;
}

/* ================= push-relabel ================= */

/* ---- the solver's own graph: CSR with paired arcs ---- */

typedef struct pr {
  uint32_t N, s, t;
  uint32_t *first;           /* N + 1 */
  uint32_t *head, *rev;      /* per arc */
  int64_t *cap;              /* residual capacity */
  int64_t *ex;               /* excess */
  uint32_t *d, *cur;         /* label, current arc */
  /* buckets by label: active nodes (singly linked), all nodes below N
     (doubly linked, for the gap heuristic) */
  uint32_t *bact, *ball, *anext, *nnext, *nprev;
  int64_t amax, dmax;        /* highest label with an active / any node (-1: none) */
  uint64_t work;
  uint32_t *queue;
} pr;

static void pr_free(pr *p) {
  free(p->first);
  free(p->head);
  free(p->rev);
  free(p->cap);
  free(p->ex);
  free(p->d);
  free(p->cur);
  free(p->bact);
  free(p->ball);
  free(p->anext);
  free(p->nnext);
  free(p->nprev);
  free(p->queue);
}

/* The CSR of g's arcs (their residual capacities) plus the terminal arcs
   (tr: a node with both terminal capacities keeps only their difference,
   min of the two is paid by every cut). */
static int pr_build(pr *p, const dp__flow *g) {
  uint32_t n = g->n, N = n + 2, s = n, t = n + 1;
  uint64_t m = g->na;
  for (uint32_t v = 0; v < n; v++) m += 2 * (g->nd[v].tr != 0);
  if (m > UINT32_MAX - 1) return -1;
  p->N = N;
  p->s = s;
  p->t = t;
  p->first = dp_calloc((size_t)N + 1, sizeof *p->first);
  p->head = dp_malloc((m ? m : 1) * sizeof *p->head);
  p->rev = dp_malloc((m ? m : 1) * sizeof *p->rev);
  p->cap = dp_malloc((m ? m : 1) * sizeof *p->cap);
  p->ex = dp_calloc(N, sizeof *p->ex);
  p->d = dp_malloc((size_t)N * sizeof *p->d);
  p->cur = dp_malloc((size_t)N * sizeof *p->cur);
  p->bact = dp_malloc((size_t)(2 * N + 1) * sizeof *p->bact);
  p->ball = dp_malloc((size_t)(2 * N + 1) * sizeof *p->ball);
  p->anext = dp_malloc((size_t)N * sizeof *p->anext);
  p->nnext = dp_malloc((size_t)N * sizeof *p->nnext);
  p->nprev = dp_malloc((size_t)N * sizeof *p->nprev);
  p->queue = dp_malloc((size_t)N * sizeof *p->queue);
  if (!p->first || !p->head || !p->rev || !p->cap || !p->ex || !p->d || !p->cur || !p->bact ||
      !p->ball || !p->anext || !p->nnext || !p->nprev || !p->queue)
    return -1;
  /* degrees, then offsets, then the arcs in place (counting sort by tail) */
  for (uint32_t a = 0; a < g->na; a++) p->first[g->arc[a ^ 1].head + 1]++;
  for (uint32_t v = 0; v < n; v++) {
    if (g->nd[v].tr > 0) p->first[s + 1]++, p->first[v + 1]++;
    if (g->nd[v].tr < 0) p->first[v + 1]++, p->first[t + 1]++;
  }
  for (uint32_t v = 0; v < N; v++) p->first[v + 1] += p->first[v];
  uint32_t *pos = p->cur; /* (free until the solve starts) */
  memcpy(pos, p->first, (size_t)N * sizeof *pos);
#define PAIR(u, v, c, rc)                                       \
  do {                                                         \
    uint32_t x = pos[u]++, y = pos[v]++;                        \
    p->head[x] = (v), p->rev[x] = y, p->cap[x] = (c);           \
    p->head[y] = (u), p->rev[y] = x, p->cap[y] = (rc);          \
  } while (0)
  for (uint32_t v = 0; v < n; v++) {
    if (g->nd[v].tr > 0) PAIR(s, v, g->nd[v].tr, 0);
    if (g->nd[v].tr < 0) PAIR(v, t, -g->nd[v].tr, 0);
  }
  for (uint32_t a = 0; a < g->na; a += 2) PAIR(g->arc[a + 1].head, g->arc[a].head, g->arc[a].cap, g->arc[a + 1].cap);
#undef PAIR
  return 0;
}

static void add_all(pr *p, uint32_t v) {
  uint32_t k = p->d[v];
  p->nprev[v] = NIL;
  p->nnext[v] = p->ball[k];
  if (p->ball[k] != NIL) p->nprev[p->ball[k]] = v;
  p->ball[k] = v;
  if ((int64_t)k > p->dmax) p->dmax = k;
}

static void remove_all(pr *p, uint32_t v) {
  uint32_t k = p->d[v];
  if (p->nprev[v] != NIL) p->nnext[p->nprev[v]] = p->nnext[v];
  else p->ball[k] = p->nnext[v];
  if (p->nnext[v] != NIL) p->nprev[p->nnext[v]] = p->nprev[v];
}

static void add_active(pr *p, uint32_t v) {
  uint32_t k = p->d[v];
  p->anext[v] = p->bact[k];
  p->bact[k] = v;
  if ((int64_t)k > p->amax) p->amax = k;
}

/* Exact distances to the sink in the residual graph (N: none), and the
   buckets made again from them. */
static void global_relabel(pr *p) {
  uint32_t N = p->N;
  for (uint32_t v = 0; v < N; v++) p->d[v] = N;
  for (uint32_t k = 0; k <= 2 * N; k++) p->bact[k] = p->ball[k] = NIL;
  p->amax = p->dmax = -1;
  uint32_t qh = 0, qt = 0;
  p->d[p->t] = 0;
  p->queue[qt++] = p->t;
  while (qh < qt) {
    uint32_t v = p->queue[qh++];
    for (uint32_t a = p->first[v]; a < p->first[v + 1]; a++) {
      uint32_t w = p->head[a];
      if (p->d[w] == N && w != p->s && p->cap[p->rev[a]] > 0) {
        p->d[w] = p->d[v] + 1;
        p->queue[qt++] = w;
      }
    }
  }
  for (uint32_t v = 0; v < N; v++) {
    p->cur[v] = p->first[v];
    if (v == p->s || v == p->t || p->d[v] >= N) continue;
    add_all(p, v);
    if (p->ex[v] > 0) add_active(p, v);
  }
  p->work = 0;
}

/* v's label has no other node: nothing above it reaches the sink. */
static void gap(pr *p, uint32_t k) {
  uint32_t N = p->N;
  for (int64_t j = k; j <= p->dmax; j++) {
    for (uint32_t v = p->ball[j]; v != NIL; v = p->nnext[v]) p->d[v] = N;
    p->ball[j] = NIL;
  }
  p->dmax = (int64_t)k - 1;
}

static void relabel(pr *p, uint32_t v) {
  uint32_t N = p->N, old = p->d[v], best = N, ba = p->first[v];
  p->work += 12 + p->first[v + 1] - p->first[v];
  remove_all(p, v);
  if (p->ball[old] == NIL) { /* v was alone: a gap */
    p->d[v] = N;
    gap(p, old);
    return;
  }
  for (uint32_t a = p->first[v]; a < p->first[v + 1]; a++)
    if (p->cap[a] > 0 && p->d[p->head[a]] + 1 < best) {
      best = p->d[p->head[a]] + 1;
      ba = a;
    }
  p->d[v] = best;
  p->cur[v] = ba;
  if (best < N) add_all(p, v);
}

static void discharge(pr *p, uint32_t v) {
  uint32_t N = p->N;
  while (p->ex[v] > 0 && p->d[v] < N) {
    uint32_t a = p->cur[v], end = p->first[v + 1];
    for (; a < end; a++) {
      uint32_t w = p->head[a];
      if (p->cap[a] <= 0 || p->d[w] + 1 != p->d[v]) continue;
      int64_t delta = p->ex[v] < p->cap[a] ? p->ex[v] : p->cap[a];
      if (p->ex[w] == 0 && w != p->t && w != p->s) add_active(p, w);
      p->cap[a] -= delta;
      p->cap[p->rev[a]] += delta;
      p->ex[v] -= delta;
      p->ex[w] += delta;
      if (p->ex[v] == 0) break;
    }
    p->cur[v] = a < end ? a : p->first[v];
    if (a == end) relabel(p, v);
  }
}

/* The sink side: nodes that reach the sink in the residual graph. */
static void cut(pr *p, uint8_t *side, uint32_t n) {
  uint32_t N = p->N, qh = 0, qt = 0;
  for (uint32_t v = 0; v < N; v++) p->d[v] = 0;
  p->d[p->t] = 1;
  p->queue[qt++] = p->t;
  while (qh < qt) {
    uint32_t v = p->queue[qh++];
    for (uint32_t a = p->first[v]; a < p->first[v + 1]; a++) {
      uint32_t w = p->head[a];
      if (!p->d[w] && p->cap[p->rev[a]] > 0) {
        p->d[w] = 1;
        p->queue[qt++] = w;
      }
    }
  }
  for (uint32_t v = 0; v < n; v++) side[v] = (uint8_t)p->d[v];
}

/* The flow through the residual graph (terminal capacities net of each
   other), or -1. */
static int64_t pr_solve(const dp__flow *g, uint8_t *side) {
  pr p = {0};
  int64_t flow = -1;
  if (pr_build(&p, g) < 0) goto done;
  for (uint32_t a = p.first[p.s]; a < p.first[p.s + 1]; a++) { /* saturate the source's arcs */
    int64_t c = p.cap[a];
    p.cap[a] = 0;
    p.cap[p.rev[a]] += c;
    p.ex[p.head[a]] += c;
  }
  global_relabel(&p);
  uint64_t every = 16 * (6 * (uint64_t)p.N + p.first[p.N]); /* (first[N]: arcs both ways) */
  while (p.amax >= 0) {
    uint32_t v = p.bact[p.amax];
    if (v == NIL) {
      p.amax--;
      continue;
    }
    p.bact[p.amax] = p.anext[v];
    if (p.d[v] != p.amax || p.ex[v] <= 0) continue; /* (stale: relabelled by a gap) */
    discharge(&p, v);
    if (p.work > every) global_relabel(&p);
  }
  cut(&p, side, g->n);
  flow = p.ex[p.t];
done:
  pr_free(&p);
  return flow;
}

/* ================= Boykov-Kolmogorov ================= */

/* parent[v]: the arc from v to its parent in its tree (for a source-tree
   node the arc back along which flow came, for a sink-tree node the arc
   its flow leaves by), or one of these: */
#define BK_TERM (UINT32_MAX - 1)   /* tied to its tree's terminal directly */
#define BK_ORPHAN (UINT32_MAX - 2) /* lost its parent in this augmentation */
#define BK_FREE UINT32_MAX         /* in no tree */

typedef struct bk {
  uint32_t n;
  farc *arc;                       /* the caller's graph, its capacities made residual */
  fnode *nd;
  uint32_t qh, qt, time;
  uint32_t *orph, norph, caporph;  /* the orphans of one augmentation (FIFO) */
  int64_t work, budget;
} bk;

static void bk_free(bk *b) {
  free(b->orph);
}

static void bk_activate(bk *b, uint32_t v) {
  if (b->nd[v].inq) return;
  b->nd[v].inq = 1;
  b->nd[v].qnext = NIL;
  if (b->qt == NIL) b->qh = v;
  else b->nd[b->qt].qnext = v;
  b->qt = v;
}

/* The next active node still in a tree, or NIL. The queue's next nodes
   are asked for early (the node after the next, the next one's first arc):
   on a large graph each is a cache miss the search would otherwise wait
   for when it gets there (bench/perf.lua, branchy, 1,000,000 calls: the
   search's CPU time 300-320 ms -> 230-255 ms). */
static uint32_t bk_next_active(bk *b) {
  while (b->qh != NIL) {
    uint32_t v = b->qh;
    b->qh = b->nd[v].qnext;
    if (b->qh == NIL) {
      b->qt = NIL;
    } else {
      const fnode *q = &b->nd[b->qh];
      if (q->qnext != NIL) dp__prefetch(&b->nd[q->qnext]);
      if (q->first != NIL) dp__prefetch(&b->arc[q->first]);
    }
    b->nd[v].inq = 0;
    if (b->nd[v].parent != BK_FREE) return v;
  }
  return NIL;
}

static int bk_orphan(bk *b, uint32_t v) {
  b->nd[v].parent = BK_ORPHAN;
  if (b->norph == b->caporph) {
    void *o = b->orph;
    if (dp_grow(&o, &b->caporph, b->norph + 1, sizeof *b->orph) < 0) return -1;
    b->orph = o;
  }
  b->orph[b->norph++] = v;
  return 0;
}

/* The nodes from next on, batch node numbers, that wait for their turn
   (bk_solve's batches) join the active queue where still in a tree (an
   orphan may have left it). The first node of the batch after. */
static uint32_t bk_batch(bk *b, uint32_t next, uint32_t batch) {
  for (uint32_t end = b->n - next > batch ? next + batch : b->n; next < end; next++) {
    fnode *x = &b->nd[next];
    if (!x->waits) continue;
    x->waits = 0;
    if (x->parent != BK_FREE) bk_activate(b, next);
  }
  return next;
}

/* Pushes the most the path through mid (from a source-tree node to a
   sink-tree node) takes; the nodes whose link saturates become orphans.
   The amount, or -1 (out of memory). */
static int64_t bk_augment(bk *b, uint32_t mid) {
  uint32_t s0 = b->arc[mid ^ 1].head, t0 = b->arc[mid].head, i;
  int64_t d = b->arc[mid].cap;
  for (i = s0; b->nd[i].parent != BK_TERM; i = b->arc[b->nd[i].parent].head, b->work++)
    if (b->arc[b->nd[i].parent ^ 1].cap < d) d = b->arc[b->nd[i].parent ^ 1].cap;
  if (b->nd[i].tr < d) d = b->nd[i].tr;
  for (i = t0; b->nd[i].parent != BK_TERM; i = b->arc[b->nd[i].parent].head, b->work++)
    if (b->arc[b->nd[i].parent].cap < d) d = b->arc[b->nd[i].parent].cap;
  if (-b->nd[i].tr < d) d = -b->nd[i].tr;
  b->arc[mid ^ 1].cap = dp__flow_sat_add(b->arc[mid ^ 1].cap, d);
  b->arc[mid].cap -= d;
  for (i = s0; b->nd[i].parent != BK_TERM;) {
    uint32_t a = b->nd[i].parent, up = b->arc[a].head;
    b->arc[a].cap = dp__flow_sat_add(b->arc[a].cap, d);
    b->arc[a ^ 1].cap -= d;
    if (!b->arc[a ^ 1].cap && bk_orphan(b, i) < 0) return -1;
    i = up;
  }
  b->nd[i].tr -= d;
  if (!b->nd[i].tr && bk_orphan(b, i) < 0) return -1;
  for (i = t0; b->nd[i].parent != BK_TERM;) {
    uint32_t a = b->nd[i].parent, up = b->arc[a].head;
    b->arc[a ^ 1].cap = dp__flow_sat_add(b->arc[a ^ 1].cap, d);
    b->arc[a].cap -= d;
    if (!b->arc[a].cap && bk_orphan(b, i) < 0) return -1;
    i = up;
  }
  b->nd[i].tr += d;
  if (!b->nd[i].tr && bk_orphan(b, i) < 0) return -1;
  return d;
}

/* Does the link a (of a node of tree sk, to its neighbour) carry flow
   the way that tree needs? */
static int bk_residual(const bk *b, uint8_t sk, uint32_t a) {
  return (sk ? b->arc[a].cap : b->arc[a ^ 1].cap) > 0;
}

/* Orphan i takes the neighbour of its tree whose path still reaches the
   terminal, the nearest one, as parent; with none it leaves the tree, its
   children become orphans and its neighbours in the tree active. 0, -1. */
static int bk_adopt(bk *b, uint32_t i) {
  uint8_t sk = b->nd[i].sink;
  uint32_t best = BK_FREE, dmin = UINT32_MAX;
  for (uint32_t a = b->nd[i].first; a != NIL; a = b->arc[a].next) {
    uint32_t j = b->arc[a].head, d = 0, k = j;
    b->work++;
    if (b->nd[j].sink != sk || b->nd[j].parent == BK_FREE || !bk_residual(b, sk, a)) continue;
    for (;; b->work++) { /* j's path up to the terminal, if it has one */
      if (b->nd[k].ts == b->time) {
        d += b->nd[k].dist;
        break;
      }
      uint32_t p = b->nd[k].parent;
      d++;
      if (p == BK_TERM) {
        b->nd[k].ts = b->time;
        b->nd[k].dist = 1;
        break;
      }
      if (p == BK_ORPHAN || p == BK_FREE) {
        d = UINT32_MAX;
        break;
      }
      k = b->arc[p].head;
    }
    if (d == UINT32_MAX) continue;
    if (d < dmin) best = a, dmin = d;
    for (k = j; b->nd[k].ts != b->time; k = b->arc[b->nd[k].parent].head) { /* remember the distances */
      b->nd[k].ts = b->time;
      b->nd[k].dist = d--;
    }
  }
  if (best != BK_FREE) {
    b->nd[i].parent = best;
    b->nd[i].ts = b->time;
    b->nd[i].dist = dmin + 1;
    return 0;
  }
  b->nd[i].parent = BK_FREE;
  for (uint32_t a = b->nd[i].first; a != NIL; a = b->arc[a].next) {
    uint32_t j = b->arc[a].head, p = b->nd[j].parent;
    if (b->nd[j].sink != sk || p == BK_FREE) continue;
    if (bk_residual(b, sk, a)) bk_activate(b, j);
    if (p != BK_TERM && p != BK_ORPHAN && b->arc[p].head == i && bk_orphan(b, j) < 0) return -1;
  }
  return 0;
}

/* Grows i's tree by one step over i's arcs: the arc from the source tree
   to the sink tree where the two meet, or NIL. */
static uint32_t bk_grow(bk *b, uint32_t i) {
  uint8_t sk = b->nd[i].sink;
  for (uint32_t a = b->nd[i].first; a != NIL; a = b->arc[a].next) {
    uint32_t j = b->arc[a].head;
    b->work++;
    if (!bk_residual(b, !sk, a)) continue; /* (i -> j for the source tree, j -> i for the sink's) */
    if (b->nd[j].parent == BK_FREE) {
      b->nd[j].sink = sk, b->nd[j].parent = a ^ 1, b->nd[j].ts = b->nd[i].ts, b->nd[j].dist = b->nd[i].dist + 1;
      bk_activate(b, j);
    } else if (b->nd[j].sink != sk) {
      return sk ? a ^ 1 : a;
    } else if (b->nd[j].ts <= b->nd[i].ts && b->nd[j].dist > b->nd[i].dist) { /* a shorter path for j */
      b->nd[j].parent = a ^ 1, b->nd[j].ts = b->nd[i].ts, b->nd[j].dist = b->nd[i].dist + 1;
    }
  }
  return NIL;
}

/* The flow through g's graph (terminal capacities net of each other, in
   tr), leaving it residual: -1 (out of memory) or -2 (over budget: the
   flow so far in *partial, nothing written). */
static int64_t bk_solve(dp__flow *g, uint8_t *side, int64_t budget, int64_t *partial) {
  uint32_t batch = g->batch;
  bk b = {.n = g->n, .arc = g->arc, .nd = g->nd};
  int64_t flow = -1;
  uint32_t n = b.n;
  b.qh = b.qt = NIL;
  uint32_t nsource = 0, nsink = 0, batches = n >= g->batch_from;
  for (uint32_t v = 0; v < n; v++) {
    fnode *x = &b.nd[v];
    x->ts = 0;
    x->inq = 0;
    x->waits = x->tr && batches;
    x->dist = 1;
    x->parent = x->tr ? BK_TERM : BK_FREE;
    x->sink = x->tr < 0;
    nsource += x->tr > 0, nsink += x->tr < 0;
    if (x->tr && !batches) bk_activate(&b, v);
  }
  flow = 0;
  uint32_t next = batches ? 0 : n; /* (the first node of the next batch) */
  /* (with no node tied to the source, or none to the sink, no path joins
     them: the flow is 0, and the trees need not be grown) */
  /* (batches cost more work where the graph has no parts to take in turn:
     bench/maxflow.c's random graph of 300,000 nodes and 1.2 million arcs,
     2.2 s without them, 18.2 s in batches alone, 3.9 s so. Past
     BK_BATCH_WORK units per node and arc, every node still waiting is
     queued at once, as without batches: branchy at 1M takes 2.1) */
  int64_t limit = budget, most = (int64_t)(BK_BATCH_WORK * ((uint64_t)n + g->na));
  if (batches && most < budget) limit = most;
  for (uint32_t i = NIL; nsource && nsink;) {
    if (b.work > limit) {
      if (limit < budget) { /* (the batches' limit, below the budget) */
        if (next < n) next = bk_batch(&b, next, n - next);
        limit = budget;
        continue;
      }
      *partial = flow;
      flow = -2;
      goto done;
    }
    if (i == NIL || b.nd[i].parent == BK_FREE)
      while ((i = bk_next_active(&b)) == NIL && next < n) next = bk_batch(&b, next, batch);
    if (i == NIL) break;
    uint32_t mid = bk_grow(&b, i);
    b.time++;
    if (mid == NIL) {
      i = NIL;
      continue;
    }
    /* i stays the node grown from: it may meet the other tree again */
    b.norph = 0;
    int64_t d = bk_augment(&b, mid);
    if (d < 0) goto oom;
    flow = dp__flow_sat_add(flow, d);
    for (uint32_t k = 0; k < b.norph; k++)
      if (bk_adopt(&b, b.orph[k]) < 0) goto oom;
  }
  /* the sink side: the nodes that reach the sink in the residual graph
     (the nodes to look from on a stack linked through qnext: the active
     queue is empty now) */
  uint32_t top = NIL;
  for (uint32_t v = 0; v < n; v++) {
    side[v] = b.nd[v].tr < 0;
    if (side[v]) b.nd[v].qnext = top, top = v;
  }
  while (top != NIL) {
    uint32_t w = top;
    top = b.nd[w].qnext;
    for (uint32_t a = b.nd[w].first; a != NIL; a = b.arc[a].next) {
      uint32_t u = b.arc[a].head;
      if (!side[u] && b.arc[a ^ 1].cap > 0) side[u] = 1, b.nd[u].qnext = top, top = u;
    }
  }
  goto done;
oom:
  flow = -1;
done:
  bk_free(&b);
  return flow;
}

/* ================= the cut ================= */

int64_t dp__flow_solve(dp__flow *g, uint8_t *side) {
  if (g->oom || g->spent) return -1;
  if (g->n > g->most) g->most = g->n;
  /* A node tied to both terminals gives the search only the difference;
     the smaller capacity is cut whichever side it takes. */
  int64_t both = 0, partial = 0, to_sink = 0;
  for (uint32_t v = 0; v < g->n; v++) {
    fnode *x = &g->nd[v];
    int64_t s = x->tr, t = x->trt;
    x->tr = s - t; /* (trt's room is the search's from here on) */
    both = dp__flow_sat_add(both, s < t ? s : t);
    to_sink = dp__flow_sat_add(to_sink, t);
  }
  g->to_sink = to_sink;
  uint64_t size = (uint64_t)g->n + (uint64_t)g->na;
  int64_t budget = g->budget >= 0 ? g->budget : (int64_t)(64 * size + (1u << 20));
  int64_t flow = budget > 0 ? bk_solve(g, side, budget, &partial) : -2;
  if (flow == -2) { /* push-relabel from where the search stopped */
    flow = pr_solve(g, side);
    if (flow >= 0) flow = dp__flow_sat_add(flow, partial);
  }
  g->spent = 1; /* (the graph is left residual: a reset before the next) */
  return flow < 0 ? -1 : dp__flow_sat_add(flow, both);
}
