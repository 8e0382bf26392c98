/*
 * C checks of the minimum s-t cut (src/planner/maxflow.c) against brute
 * force: on thousands of random graphs of up to 12 nodes (arcs both ways,
 * nodes tied to the source, the sink or both, infinite arcs among them),
 * the capacity dp__flow_solve returns is the least over all 2^n cuts, and
 * the side it returns has that capacity; by Boykov-Kolmogorov, by
 * push-relabel alone, and by Boykov-Kolmogorov stopped by its budget
 * part-way (push-relabel then starts again), and by Boykov-Kolmogorov
 * queueing the nodes tied to a terminal in batches of 1 to 3 (as it does
 * on large graphs, dp__flow_batches): the same side every way (the
 * cut read does not depend on the flow found); in memory taken from the
 * caller (dp__flow_adopt) that held other data: the same side; and after
 * its room was taken from it (dp__flow_take, as a placement takes it for
 * its own arrays): the room as large as the graph made in it, and the
 * same side in the room made again. And the placement's moves on a
 * problem of many parts (place_solve.c's move_in_parts): each part's cut
 * where the part alone puts it, in a graph no larger than one part's (the
 * given graph's room taken for the moves' arrays, its largest block given
 * back as its arcs' room).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../src/planner/planner.h"

#define CHECK(cond) do { if (cond) (*passed)++; else { (*failed)++; \
  printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

void dp_test_maxflow(int *passed, int *failed);

enum { MAXN = 12, MAXA = 40 };

typedef struct small {
  uint32_t n, na, u[MAXA], v[MAXA];
  int64_t c[MAXA], rc[MAXA], ts[MAXN], tt[MAXN];
} small;

static uint32_t next_random(uint64_t *st) {
  *st = *st * 6364136223846793005u + 1442695040888963407u;
  return (uint32_t)(*st >> 33);
}

static int64_t add(int64_t a, int64_t b) { return a > DP__FLOW_INF - b ? DP__FLOW_INF : a + b; }

/* The capacity of the cut with node v on the sink side when bit v of mask is set. */
/* g into f, afresh. */
static void build(dp__flow *f, const small *g) {
  dp__flow_reset(f);
  for (uint32_t v = 0; v < g->n; v++) {
    dp__flow_node(f);
    dp__flow_terminal(f, v, g->ts[v], g->tt[v]);
  }
  for (uint32_t a = 0; a < g->na; a++) dp__flow_arc(f, g->u[a], g->v[a], g->c[a], g->rc[a]);
}

static int64_t cut_of(const small *g, uint32_t mask) {
  int64_t c = 0;
  for (uint32_t v = 0; v < g->n; v++)
    c = add(c, mask >> v & 1 ? g->ts[v] : g->tt[v]);
  for (uint32_t a = 0; a < g->na; a++) {
    int su = mask >> g->u[a] & 1, sv = mask >> g->v[a] & 1;
    if (!su && sv) c = add(c, g->c[a]);
    if (su && !sv) c = add(c, g->rc[a]);
  }
  return c;
}

/* The side of g's minimum cut solved in adopted blocks of garbage (as a
   placement's graph is made in analysis' flows), as a mask; UINT32_MAX:
   out of memory. */
static uint32_t adopted_mask(const small *g) {
  dp__flow *f = dp__flow_new();
  void *nodes = malloc(MAXN * sizeof(dp__fnode)), *arcs = malloc(2 * MAXA * sizeof(dp__farc));
  if (!f || !nodes || !arcs) {
    dp__flow_free(f);
    free(nodes);
    free(arcs);
    return UINT32_MAX;
  }
  memset(nodes, 0xA5, MAXN * sizeof(dp__fnode));
  memset(arcs, 0x5A, 2 * MAXA * sizeof(dp__farc));
  dp__flow_adopt(f, nodes, MAXN * sizeof(dp__fnode), arcs, 2 * MAXA * sizeof(dp__farc));
  build(f, g);
  uint8_t side[MAXN];
  uint32_t mask = 0;
  if (dp__flow_solve(f, side) < 0) mask = UINT32_MAX;
  for (uint32_t v = 0; v < g->n && mask != UINT32_MAX; v++) mask |= (uint32_t)(side[v] != 0) << v;
  dp__flow_free(f);
  return mask;
}

/* The side of g's minimum cut (a mask; UINT32_MAX: out of memory, or a
   room taken smaller than the graph made in it) made, its room for nodes
   then arcs taken, then made and solved again in new room. */
static uint32_t taken_mask(const small *g) {
  dp__flow *f = dp__flow_new();
  uint32_t mask = f ? 0 : UINT32_MAX;
  for (int arcs = 0; arcs < 2 && f; arcs++) {
    build(f, g);
    size_t bytes, used = arcs ? (size_t)f->na * sizeof(dp__farc) : (size_t)f->n * sizeof(dp__fnode);
    uint32_t left = dp__flow_count(f);
    void *b = dp__flow_take(f, arcs, &bytes);
    if ((used && !b) || bytes < used || (!arcs && dp__flow_count(f) != 0) || (arcs && dp__flow_count(f) != left))
      mask = UINT32_MAX;
    free(b);
  }
  if (f && mask == 0) {
    build(f, g);
    uint8_t side[MAXN];
    if (dp__flow_solve(f, side) < 0) mask = UINT32_MAX;
    for (uint32_t v = 0; v < g->n && mask != UINT32_MAX; v++) mask |= (uint32_t)(side[v] != 0) << v;
  }
  dp__flow_free(f);
  return mask;
}

static int64_t weight(uint64_t *st) {
  uint32_t r = next_random(st) % 10;
  return r < 3 ? 0 : r == 9 ? DP__FLOW_INF : 1 + next_random(st) % 50;
}

/* PARTS chains of LEN variables, two labels (the default 0): each chain's
   first variable may take label 1 alone, its last label 0 alone, the
   others either; a net of one reader from each variable to the next of
   its chain, weights distinct within a chain. A move towards 1 cuts each
   chain at its lightest net (the variables before it on 1), each chain a
   part of the move's graph of its own. */
enum { PARTS = 3000, LEN = 10 };

static void parts_test(int *passed, int *failed) {
  dp_place_problem p;
  uint32_t n = PARTS * LEN, *label = malloc(n * sizeof *label);
  dp__flow *g = dp__flow_new();
  size_t nb = (size_t)n * 4, ab = (size_t)n * 12; /* (as a placement gives them: a variable per
                                                      domain, analysis' flows) */
  void *nodes = malloc(nb), *arcs = malloc(ab);
  if (!label || !g || !nodes || !arcs || dp_place_init(&p, n, 2, 0) < 0) {
    CHECK(0);
    free(label), free(nodes), free(arcs), dp__flow_free(g);
    return;
  }
  memset(nodes, 0xA5, nb);
  memset(arcs, 0x5A, ab);
  dp__flow_adopt(g, nodes, nb, arcs, ab);
  int made = 0;
  for (uint32_t c = 0; c < PARTS; c++) {
    uint32_t v0 = c * LEN;
    p.allowed[v0] = 2;
    p.allowed[v0 + LEN - 1] = 1;
    for (uint32_t i = 0; i + 1 < LEN; i++) {
      uint32_t r = v0 + i + 1;
      made |= dp_place_net(&p, v0 + i, &r, 1, 100 + (c * 7 + i * 13) % 50);
    }
  }
  long wrong = 0;
  int rc = dp__place_solve_in(&p, label, NULL, g);
  for (uint32_t c = 0; c < PARTS && rc == 0; c++) {
    uint32_t cut = 0; /* (the lightest net: its maker the last variable on 1) */
    for (uint32_t i = 1; i + 1 < LEN; i++)
      if ((c * 7 + i * 13) % 50 < (c * 7 + cut * 13) % 50) cut = i;
    for (uint32_t i = 0; i < LEN; i++) wrong += label[c * LEN + i] != (i <= cut ? 1u : 0u);
  }
  size_t room, back;
  void *b = dp__flow_take(g, 0, &room);
  free(b);
  b = dp__flow_take(g, 1, &back);
  free(b);
  CHECK(made == 0);
  CHECK(rc == 0);
  CHECK(wrong == 0);
  CHECK(dp__flow_most(g) < 64); /* (one part's graph at a time: the whole one would have n nodes) */
  CHECK(back >= ab);            /* (the largest block left: the caller's arcs' room) */
  CHECK(room >= nb);            /* (the next largest: its nodes' room) */
  dp_place_free(&p);
  dp__flow_free(g);
  free(label);
}

void dp_test_maxflow(int *passed, int *failed) {
  parts_test(passed, failed);
  uint64_t st = 7;
  long wrong_value = 0, wrong_side = 0, other_side = 0, graphs = 0, spent = 0;
  dp__flow *f = dp__flow_new();
  if (!f) {
    CHECK(f != NULL);
    return;
  }
  for (int round = 0; round < 4000; round++) {
    small g = {0};
    g.n = 1 + next_random(&st) % MAXN;
    g.na = next_random(&st) % (MAXA + 1);
    for (uint32_t v = 0; v < g.n; v++) {
      uint32_t kind = next_random(&st) % 4; /* none, source, sink, both */
      g.ts[v] = kind & 1 ? weight(&st) : 0;
      g.tt[v] = kind & 2 ? weight(&st) : 0;
    }
    for (uint32_t a = 0; a < g.na; a++) {
      g.u[a] = next_random(&st) % g.n;
      g.v[a] = next_random(&st) % g.n;
      g.c[a] = weight(&st);
      g.rc[a] = next_random(&st) % 2 ? weight(&st) : 0;
    }
    int64_t best = DP__FLOW_INF;
    for (uint32_t mask = 0; mask < (1u << g.n); mask++) {
      int64_t c = cut_of(&g, mask);
      if (c < best) best = c;
    }
    uint32_t masks[4];
    for (int way = 0; way < 4; way++) { /* BK; push-relabel; BK stopped, then push-relabel;
                                           BK queueing the terminals' nodes in batches */
      build(f, &g); /* (a solve leaves the graph residual) */
      dp__flow_budget(f, way == 0 || way == 3 ? -1 : way == 1 ? 0 : 1 + (int64_t)(next_random(&st) % 8));
      if (way == 3) dp__flow_batches(f, 0, 1 + next_random(&st) % 3);
      uint8_t side[MAXN];
      int64_t got = dp__flow_solve(f, side);
      spent += dp__flow_solve(f, side) == -1; /* (solved again without a reset: refused) */
      uint32_t mask = 0;
      for (uint32_t v = 0; v < g.n; v++) mask |= (uint32_t)(side[v] != 0) << v;
      /* Below DP__FLOW_INF the value is exact; a cut no finite one beats is
         reported as at least DP__FLOW_INF. */
      wrong_value += best < DP__FLOW_INF ? got != best : got < DP__FLOW_INF;
      wrong_side += best < DP__FLOW_INF && cut_of(&g, mask) != best;
      masks[way] = mask;
    }
    dp__flow_batches(f, UINT32_MAX, 1); /* (the default's behaviour on these sizes) */
    other_side += masks[1] != masks[0] || masks[2] != masks[0] || masks[3] != masks[0] || adopted_mask(&g) != masks[0] ||
                  taken_mask(&g) != masks[0];
    graphs++;
  }
  dp__flow_free(f);
  CHECK(wrong_value == 0);
  CHECK(wrong_side == 0);
  CHECK(other_side == 0);
  CHECK(spent == 4 * graphs);
  CHECK(graphs == 4000);
}
