/*
 * The indexed graph of an expression, as TVM's IndexedGraph: every
 * distinct node in post order (children in the order of expr.h), the
 * consumers of each node, and the post-dominator tree (a node's immediate
 * post-dominator is the nearest node every path from it to the root
 * passes). Dominator patterns and the grouper's "does this inner node
 * escape the group" test read it.
 *
 * Operators, constructors and globals are left out: they are shared by
 * every call that names them, say nothing about dataflow, and would make
 * the dominator computation quadratic. Everything is built with explicit
 * stacks.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

int dfp_graph_skips(const dp_expr *e) {
  int k = e->h.kind;
  return k == DP_OP || k == DP_CTOR || k == DP_GLOBAL;
}

uint32_t dfp_graph_find(const dfp_graph *g, const dp_expr *e) {
  void **v = dp_ptrmap_get(&g->index, e);
  return v ? (uint32_t)((uintptr_t)*v - 1) : DFP_NONE;
}

int dfp_graph_dominates(const dfp_graph *g, uint32_t a, uint32_t b) {
  if (a == DFP_NONE || b == DFP_NONE || a == b) return 0;
  return g->tin[a] <= g->tin[b] && g->tout[b] <= g->tout[a];
}

void dfp_graph_free(dfp_graph *g) {
  free(g->x);
  dp_ptrmap_free(&g->index);
  free(g->ostart);
  free(g->outs);
  free(g->idom);
  free(g->tin);
  free(g->tout);
  memset(g, 0, sizeof *g);
}

typedef struct gframe {
  dp_expr *e;
  uint32_t i, n;
} gframe;

/* Post order of the distinct nodes under root (each once). */
static int number_nodes(dfp_graph *g, dp_expr *root) {
  gframe *st = NULL;
  uint32_t sp = 0, cap = 0, capx = 0;
  void *xs = NULL;
  int rc = -1;
  if (dp_ptrmap_put(&g->index, root, (void *)(uintptr_t)0) < 0) goto out;
  if (dp_grow((void **)&st, &cap, 1, sizeof *st) < 0) goto out;
  st[sp++] = (gframe){root, 0, dp_expr_nchildren(root)};
  while (sp) {
    gframe *f = &st[sp - 1];
    if (f->i < f->n) {
      dp_expr *kid = dp_expr_child(f->e, f->i++);
      if (dfp_graph_skips(kid) || dp_ptrmap_get(&g->index, kid)) continue;
      if (dp_ptrmap_put(&g->index, kid, (void *)(uintptr_t)0) < 0) goto out;
      if (dp_grow((void **)&st, &cap, sp + 1, sizeof *st) < 0) goto out;
      st[sp++] = (gframe){kid, 0, dp_expr_nchildren(kid)};
    } else {
      dp_expr *e = f->e;
      sp--;
      if (dp_grow(&xs, &capx, g->n + 1, sizeof(dp_expr *)) < 0) goto out;
      ((dp_expr **)xs)[g->n] = e;
      if (dp_ptrmap_put(&g->index, e, (void *)(uintptr_t)(g->n + 1)) < 0) goto out;
      g->n++;
    }
  }
  rc = 0;
out:
  g->x = xs;
  free(st);
  return rc;
}

/* Consumers in compressed rows; filled in post order, so each row is
   sorted, which keeps the dominator intersection below linear on chains. */
static int link_consumers(dfp_graph *g) {
  g->ostart = dp_calloc((size_t)g->n + 1, sizeof *g->ostart);
  if (!g->ostart) return -1;
  size_t total = 0;
  for (uint32_t v = 0; v < g->n; v++) {
    uint32_t nk = dp_expr_nchildren(g->x[v]);
    for (uint32_t k = 0; k < nk; k++) {
      uint32_t c = dfp_graph_find(g, dp_expr_child(g->x[v], k));
      if (c != DFP_NONE) g->ostart[c + 1]++, total++;
    }
  }
  for (uint32_t v = 0; v < g->n; v++) g->ostart[v + 1] += g->ostart[v];
  g->outs = dp_malloc((total ? total : 1) * sizeof *g->outs);
  uint32_t *fill = dp_malloc(((size_t)g->n + 1) * sizeof *fill);
  if (!g->outs || !fill) {
    free(fill);
    return -1;
  }
  memcpy(fill, g->ostart, (size_t)g->n * sizeof *fill);
  for (uint32_t v = 0; v < g->n; v++) {
    uint32_t nk = dp_expr_nchildren(g->x[v]);
    for (uint32_t k = 0; k < nk; k++) {
      uint32_t c = dfp_graph_find(g, dp_expr_child(g->x[v], k));
      if (c != DFP_NONE) g->outs[fill[c]++] = v;
    }
  }
  free(fill);
  return 0;
}

/* Immediate post-dominators, root first: a node's is the meeting point of
   its consumers' (Cooper, Harvey and Kennedy's intersection; post order
   numbers grow toward the root). */
static int post_dominators(dfp_graph *g) {
  g->idom = dp_malloc(((size_t)g->n + 1) * sizeof *g->idom);
  if (!g->idom) return -1;
  for (uint32_t v = g->n; v-- > 0;) {
    uint32_t a = DFP_NONE;
    for (uint32_t k = g->ostart[v]; k < g->ostart[v + 1]; k++) {
      uint32_t b = g->outs[k];
      if (a == DFP_NONE) {
        a = b;
        continue;
      }
      while (a != b) {
        while (a < b) a = g->idom[a];
        while (b < a) b = g->idom[b];
      }
    }
    g->idom[v] = a;
  }
  return 0;
}

/* Entry and exit numbers of the post-dominator tree, so that "a
   post-dominates b" is an interval test. */
static int tree_intervals(dfp_graph *g) {
  uint32_t n = g->n;
  uint32_t *cstart = dp_calloc((size_t)n + 1, sizeof *cstart);
  uint32_t *kids = dp_malloc((n ? n : 1) * sizeof *kids);
  uint32_t *st = dp_malloc(((size_t)n + 1) * 2 * sizeof *st);
  g->tin = dp_malloc((n ? n : 1) * sizeof *g->tin);
  g->tout = dp_malloc((n ? n : 1) * sizeof *g->tout);
  int rc = -1;
  if (!cstart || !kids || !st || !g->tin || !g->tout) goto out;
  for (uint32_t v = 0; v < n; v++)
    if (g->idom[v] != DFP_NONE) cstart[g->idom[v] + 1]++;
  for (uint32_t v = 0; v < n; v++) cstart[v + 1] += cstart[v];
  memcpy(st, cstart, (size_t)n * sizeof *st); /* fill pointers */
  for (uint32_t v = 0; v < n; v++)
    if (g->idom[v] != DFP_NONE) kids[st[g->idom[v]]++] = v;
  uint32_t clock = 0, sp = 0;
  for (uint32_t r = 0; r < n; r++) {
    if (g->idom[r] != DFP_NONE) continue;
    g->tin[r] = clock++;
    st[sp++] = r;
    st[sp++] = cstart[r];
    while (sp) {
      uint32_t v = st[sp - 2], k = st[sp - 1];
      if (k < cstart[v + 1]) {
        st[sp - 1]++;
        uint32_t c = kids[k];
        g->tin[c] = clock++;
        st[sp++] = c;
        st[sp++] = cstart[c];
      } else {
        g->tout[v] = clock++;
        sp -= 2;
      }
    }
  }
  rc = 0;
out:
  free(cstart);
  free(kids);
  free(st);
  return rc;
}

int dfp_graph_build(dfp_graph *g, dp_expr *root) {
  memset(g, 0, sizeof *g);
  g->index = DP_PTRMAP_INIT;
  if (number_nodes(g, root) < 0 || link_consumers(g) < 0 || post_dominators(g) < 0 ||
      tree_intervals(g) < 0) {
    dfp_graph_free(g);
    return -1;
  }
  return 0;
}
