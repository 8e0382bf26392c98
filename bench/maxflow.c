/*
 * Max-flow benchmark (bench/maxflow.sh): the placement optimiser's minimum
 * s-t cut (src/planner/maxflow.c, push-relabel) on graphs of 1,000,000
 * nodes, against igraph's (igraph_maxflow, also push-relabel) on the same
 * graphs when built with -DDP_BENCH_IGRAPH, and the whole optimiser
 * (dp_place_solve: alpha-expansion over that cut) on placement problems of
 * 1,000,000 variables.
 *
 * Graphs (random, seeded: the same every run):
 *   grid     a 1000 x 1000 grid, four neighbours, capacities 1..100 each
 *            way, every node tied to the source or the sink (0..100): the
 *            image-segmentation graphs push-relabel codes are measured on
 *   chain    a path whose arcs are values (weights 1..1000 both ways),
 *            every 10th node pinned to the source or the sink: the graph
 *            a million-call chain with every 10th call annotated makes
 *   branchy  blocks of 8 nodes, each reading one or two of the 16 nodes
 *            before it, every 10th node pinned: a branchy module's values
 *   random   1,000,000 nodes and 4,000,000 random arcs, 10% of the nodes
 *            tied to a terminal
 * Placement problems: the chain and branchy shapes as dp_place_problem
 * nets (one value read by one to three later variables, every 10th
 * variable fixed), with 2 labels (one cut) and 4 (alpha-expansion).
 *
 * Usage: devplan-bench-flow [N]   (N nodes, default 1000000)
 * Prints one row per graph: nodes, arcs, CPU seconds of each solver
 * (devplan's best of 3, igraph's one run), the cut's capacity by each;
 * "same" when the two capacities agree. Placement rows: one run each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "devplan/plan.h"
#include "../src/planner/planner.h"
#ifdef DP_BENCH_IGRAPH
#include <igraph.h>
#endif

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(uint32_t n) { /* xorshift64, uniform enough for a benchmark */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng % n);
}

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A graph as lists, fed to either solver. Terminal capacities are per node. */
typedef struct graph {
  uint32_t n, na, capa;
  uint32_t *u, *v;
  int64_t *c, *rc;
  int64_t *ts, *tt;
} graph;

static void die_oom(void) {
  fputs("devplan-bench-flow: out of memory\n", stderr);
  exit(1);
}

static void *xcalloc(size_t n, size_t sz) {
  void *p = calloc(n ? n : 1, sz);
  if (!p) die_oom();
  return p;
}

static void arc(graph *g, uint32_t u, uint32_t v, int64_t c, int64_t rc) {
  if (g->na == g->capa) {
    g->capa = g->capa ? 2 * g->capa : 1024;
    g->u = realloc(g->u, g->capa * sizeof *g->u);
    g->v = realloc(g->v, g->capa * sizeof *g->v);
    g->c = realloc(g->c, g->capa * sizeof *g->c);
    g->rc = realloc(g->rc, g->capa * sizeof *g->rc);
    if (!g->u || !g->v || !g->c || !g->rc) die_oom();
  }
  g->u[g->na] = u;
  g->v[g->na] = v;
  g->c[g->na] = c;
  g->rc[g->na] = rc;
  g->na++;
}

static graph graph_new(uint32_t n) {
  graph g = {0};
  g.n = n;
  g.ts = xcalloc(n, sizeof *g.ts);
  g.tt = xcalloc(n, sizeof *g.tt);
  return g;
}

static void graph_free(graph *g) {
  free(g->u);
  free(g->v);
  free(g->c);
  free(g->rc);
  free(g->ts);
  free(g->tt);
}

/* Every 10th node pinned (a large capacity to one terminal), the others free. */
static void pin_tenth(graph *g, int64_t big) {
  for (uint32_t i = 0; i < g->n; i += 10) {
    if (rnd(2)) g->ts[i] = big;
    else g->tt[i] = big;
  }
}

static graph make_grid(uint32_t n) {
  uint32_t side = 1;
  while ((uint64_t)(side + 1) * (side + 1) <= n) side++;
  graph g = graph_new(side * side);
  for (uint32_t y = 0; y < side; y++)
    for (uint32_t x = 0; x < side; x++) {
      uint32_t i = y * side + x;
      if (x + 1 < side) arc(&g, i, i + 1, 1 + rnd(100), 1 + rnd(100));
      if (y + 1 < side) arc(&g, i, i + side, 1 + rnd(100), 1 + rnd(100));
      g.ts[i] = rnd(101);
      g.tt[i] = rnd(101);
    }
  return g;
}

static graph make_chain(uint32_t n) {
  graph g = graph_new(n);
  for (uint32_t i = 0; i + 1 < n; i++) arc(&g, i, i + 1, 1 + rnd(1000), 1 + rnd(1000));
  pin_tenth(&g, 1000000);
  return g;
}

static graph make_branchy(uint32_t n) {
  graph g = graph_new(n);
  for (uint32_t i = 1; i < n; i++) {
    uint32_t reads = 1 + rnd(2);
    for (uint32_t k = 0; k < reads; k++) {
      uint32_t back = 1 + rnd(i < 16 ? i : 16);
      arc(&g, i - back, i, 1 + rnd(1000), 1 + rnd(1000));
    }
  }
  pin_tenth(&g, 1000000);
  return g;
}

static graph make_random(uint32_t n) {
  graph g = graph_new(n);
  for (uint32_t k = 0; k < 4 * n; k++) {
    uint32_t u = rnd(n), v = rnd(n);
    if (u != v) arc(&g, u, v, 1 + rnd(100), 0);
  }
  for (uint32_t i = 0; i < n; i++) {
    if (rnd(10)) continue;
    if (rnd(2)) g.ts[i] = 1 + rnd(1000);
    else g.tt[i] = 1 + rnd(1000);
  }
  return g;
}

/* devplan's cut: graph building and solving both timed (the optimiser
   builds one graph per move). */
static double run_devplan(const graph *g, int64_t *capacity) {
  dp__flow *f = dp__flow_new();
  uint8_t *side = xcalloc(g->n, 1);
  if (!f) die_oom();
  double t0 = cpu_now();
  for (uint32_t i = 0; i < g->n; i++) {
    uint32_t v = dp__flow_node(f);
    dp__flow_terminal(f, v, g->ts[i], g->tt[i]);
  }
  for (uint32_t a = 0; a < g->na; a++) dp__flow_arc(f, g->u[a], g->v[a], g->c[a], g->rc[a]);
  *capacity = dp__flow_solve(f, side);
  double t = cpu_now() - t0;
  if (*capacity < 0) die_oom();
  dp__flow_free(f);
  free(side);
  return t;
}

#ifdef DP_BENCH_IGRAPH
/* igraph's cut on the same graph: the source and sink are nodes n, n+1;
   an arc of both capacities is two edges. Building the graph is not timed
   (igraph_maxflow takes a built graph); the minimum cut's partition is
   asked for, as devplan's solver gives one. */
static double run_igraph(const graph *g, double *capacity) {
  igraph_vector_int_t edges;
  igraph_vector_t caps;
  igraph_integer_t m = 0, s = g->n, t = (igraph_integer_t)g->n + 1;
  igraph_vector_int_init(&edges, 0);
  igraph_vector_init(&caps, 0);
  for (uint32_t a = 0; a < g->na; a++) {
    if (g->c[a] > 0) {
      igraph_vector_int_push_back(&edges, g->u[a]);
      igraph_vector_int_push_back(&edges, g->v[a]);
      igraph_vector_push_back(&caps, (igraph_real_t)g->c[a]);
      m++;
    }
    if (g->rc[a] > 0) {
      igraph_vector_int_push_back(&edges, g->v[a]);
      igraph_vector_int_push_back(&edges, g->u[a]);
      igraph_vector_push_back(&caps, (igraph_real_t)g->rc[a]);
      m++;
    }
  }
  for (uint32_t i = 0; i < g->n; i++) {
    if (g->ts[i] > 0) {
      igraph_vector_int_push_back(&edges, s);
      igraph_vector_int_push_back(&edges, i);
      igraph_vector_push_back(&caps, (igraph_real_t)g->ts[i]);
    }
    if (g->tt[i] > 0) {
      igraph_vector_int_push_back(&edges, i);
      igraph_vector_int_push_back(&edges, t);
      igraph_vector_push_back(&caps, (igraph_real_t)g->tt[i]);
    }
  }
  (void)m;
  igraph_t ig;
  if (igraph_create(&ig, &edges, (igraph_integer_t)g->n + 2, IGRAPH_DIRECTED) != IGRAPH_SUCCESS) die_oom();
  igraph_vector_int_t part;
  igraph_vector_int_init(&part, 0);
  double t0 = cpu_now();
  igraph_real_t value = 0;
  if (igraph_maxflow(&ig, &value, NULL, NULL, &part, NULL, s, t, &caps, NULL) != IGRAPH_SUCCESS) die_oom();
  double el = cpu_now() - t0;
  *capacity = value;
  igraph_vector_int_destroy(&part);
  igraph_destroy(&ig);
  igraph_vector_int_destroy(&edges);
  igraph_vector_destroy(&caps);
  return el;
}
#endif

static void row_graph(const char *name, graph (*make)(uint32_t), uint32_t n) {
  graph g = make(n);
  double best = 1e30;
  int64_t cap = 0;
  for (int r = 0; r < 3; r++) {
    double t = run_devplan(&g, &cap);
    if (t < best) best = t;
  }
  printf("%-16s %9u %9u %11.3f %16lld", name, g.n, g.na, best, (long long)cap);
#ifdef DP_BENCH_IGRAPH
  double icap = 0, ibest = run_igraph(&g, &icap); /* once: it is the reference, and slow on chains */
  printf(" %11.3f %16.0f  %s", ibest, icap, (double)cap == icap ? "same" : "DIFFERENT");
#endif
  printf("\n");
  fflush(stdout);
  graph_free(&g);
}

/* A placement problem of the chain or branchy shape: variable i's value is
   read by one to three later variables (the next one for a chain), weights
   in bytes 4..4096, every 10th variable fixed to a random label. */
static void row_place(const char *name, int branchy, uint32_t n, uint32_t labels) {
  uint64_t seed = rng; /* every placement row starts from the same random state */
  dp_place_problem p;
  if (dp_place_init(&p, n, labels, 0) < 0) die_oom();
  for (uint32_t i = 0; i < n; i += 10) p.fixed[i] = rnd(labels);
  for (uint32_t i = 0; i + 1 < n; i++) {
    uint32_t readers[3], k = 0;
    if (!branchy) readers[k++] = i + 1;
    else {
      uint32_t reads = 1 + rnd(3);
      for (uint32_t j = 0; j < reads; j++) {
        uint32_t fwd = 1 + rnd(16);
        if (i + fwd < n) readers[k++] = i + fwd;
      }
    }
    if (k && dp_place_net(&p, i, readers, k, 4 * (1 + (int64_t)rnd(1024))) < 0) die_oom();
  }
  uint32_t *label = xcalloc(n, sizeof *label);
  int64_t cost = 0;
  double t0 = cpu_now();
  if (dp_place_solve(&p, label, &cost) < 0) die_oom();
  double t = cpu_now() - t0;
  printf("%-16s %9u %9u %11.3f %16lld   (%u labels)\n", name, n, p.npins, t, (long long)cost, labels);
  fflush(stdout);
  free(label);
  dp_place_free(&p);
  rng = seed;
}

int main(int argc, char **argv) {
  uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1000000;
  if (n < 16) n = 16;
#ifdef DP_BENCH_IGRAPH
  printf("%-16s %9s %9s %11s %16s %11s %16s\n", "graph", "nodes", "arcs", "devplan s", "cut",
         "igraph s", "cut");
#else
  printf("%-16s %9s %9s %11s %16s   (igraph: not built in; bench/maxflow.sh adds it)\n", "graph",
         "nodes", "arcs", "devplan s", "cut");
#endif
  row_graph("grid", make_grid, n);
  row_graph("chain", make_chain, n);
  row_graph("branchy", make_branchy, n);
  row_graph("random", make_random, n);
  printf("\n%-16s %9s %9s %11s %16s\n", "placement", "variables", "readers", "devplan s", "bytes");
  row_place("chain", 0, n, 2);
  row_place("branchy", 1, n, 2);
  row_place("chain", 0, n, 4);
  row_place("branchy", 1, n, 4);
  return 0;
}
