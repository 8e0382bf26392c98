/*
 * The indexed graph of an expression, as TVM's IndexedGraph: every
 * distinct node in post order (children in the order of expr.h; the
 * nodes numbered from first[v] to v are all below v), the
 * children and consumers of each node by index, and the post-dominator
 * tree (a node's immediate post-dominator is the nearest node every path
 * from it to the root passes). The grouper walks it; dominator patterns
 * and the grouper's "does this inner node escape the group" test read the
 * post-dominators, which are built on first use.
 *
 * Operators, constructors and globals are left out (their child slots say
 * DP__DFP_NONE): they are shared by every call that names them, say nothing
 * about dataflow, and would make the dominator computation quadratic. A
 * graph may also leave function literals unentered, or the Composite and
 * Primitive ones only (the partitioner's). One hash lookup per edge to a
 * shared node and one insertion per shared node; everything else is
 * arrays. Explicit stacks only.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

uint32_t dp__dfp_graph_find(dp__dfp_graph *g, const dp_expr *e) {
  if (!g->found.cap && g->n) {
    /* first lookup: every node by identity (building needed only the
       shared ones) */
    for (uint32_t i = 0; i < g->n; i++)
      if (dp__ptrmap_put(&g->found, g->x[i], (void *)(uintptr_t)(i + 1)) < 0) {
        dp__ptrmap_free(&g->found);
        return DP__DFP_OOM;
      }
  }
  dp__ptrslot *v = dp__ptrmap_find(&g->found, e);
  return v ? (uint32_t)((uintptr_t)v->ptr - 1) : DP__DFP_NONE;
}

void dp__dfp_graph_free(dp__dfp_graph *g) {
  free(g->x);
  free(g->kind);
  free(g->note);
  dp__ptrmap_free(&g->index);
  dp__ptrmap_free(&g->found);
  free(g->pre2post);
  free(g->kstart);
  free(g->first);
  free(g->kids);
  free(g->ostart);
  free(g->outs);
  free(g->idom);
  free(g->tin);
  free(g->tout);
  free(g->closed);
  memset(g, 0, sizeof *g);
}

typedef struct gframe {
  dp_expr *e;
  uint32_t i, n;     /* next child, children */
  uint32_t pre;      /* pre order number */
  uint32_t kbase;    /* where its children's numbers start on the scratch list */
  uint32_t first;    /* post order number of the first node finished after it was entered */
  uint8_t kind;      /* read when it was discovered (g->kind) */
} gframe;

/* A Composite or Primitive function literal: one unit of a program. */
int dp__dfp_is_unit_fn(const dp_expr *e) {
  if (e->h.kind != DP_FUNC) return 0;
  const dp_attrs *a = ((const dp_func *)e)->attrs;
  const dp_aval *p = a ? dp_attrs_get(a, "Primitive") : NULL;
  return a && (dp_attrs_get(a, "Composite") != NULL || (p && p->kind == DP_AV_INT && p->u.i != 0));
}

/* The child slots followed: none of an unentered function literal. */
static uint32_t slots(const dp__dfp_graph *g, const dp_expr *e) {
  if (e->h.kind == DP_FUNC &&
      (g->enter_fns == DP__DFP_FNS_NONE || (g->enter_fns == DP__DFP_FNS_PLAIN && dp__dfp_is_unit_fn(e))))
    return 0;
  return dp_expr_nchildren(e);
}

/* Discovers node e (not seen yet) and pushes its frame. A node with one
   reference has one parent, the one we came from: it cannot be reached
   again, so only shared nodes need to be remembered. */
static int discover(dp__dfp_graph *g, gframe **st, uint32_t *sp, uint32_t *cap, dp_expr *e,
                    uint32_t *pre, uint32_t kbase) {
  if ((e->h.rc > 1 || *pre == 0) && dp__ptrmap_put(&g->index, e, (void *)(uintptr_t)(*pre + 1)) < 0)
    return -1;
  if (*sp == *cap && dp_grow((void **)st, cap, *sp + 1, sizeof **st) < 0) return -1;
  (*st)[*sp] = (gframe){e, 0, slots(g, e), *pre, kbase, g->n, (uint8_t)e->h.kind};
  (*sp)++;
  (*pre)++;
  return 0;
}

/* Post order, with each node's children (pre order numbers for now). */
static int number_nodes(dp__dfp_graph *g, dp_expr *root, dp__dfp_u32s *kids) {
  gframe *st = NULL;
  uint32_t sp = 0, cap = 0, capx = 0, capk = 0, capf = 0, capkind = 0, pre = 0;
  dp__dfp_u32s scratch = {NULL, 0, 0}, p2p = {NULL, 0, 0};
  int rc = -1;
  if (discover(g, &st, &sp, &cap, root, &pre, 0) < 0) goto out;
  while (sp) {
    gframe *f = &st[sp - 1];
    if (f->i < f->n) {
      dp_expr *kid = dp_expr_child(f->e, f->i++);
      if (dp__dfp_graph_skips(kid)) {
        if (dp__dfp_u32s_push(&scratch, DP__DFP_NONE) < 0) goto out;
        continue;
      }
      dp__ptrslot *seen = kid->h.rc > 1 ? dp__ptrmap_find(&g->index, kid) : NULL;
      if (seen) {
        if (dp__dfp_u32s_push(&scratch, (uint32_t)((uintptr_t)seen->ptr - 1)) < 0) goto out;
        continue;
      }
      if (dp__dfp_u32s_push(&scratch, pre) < 0 || discover(g, &st, &sp, &cap, kid, &pre, scratch.n) < 0)
        goto out;
    } else {
      gframe done = *f;
      sp--;
      void *xs = g->x, *ks = g->kstart;
      if (dp_grow(&xs, &capx, g->n + 1, sizeof *g->x) < 0) goto out;
      g->x = xs;
      if (dp_grow(&ks, &capk, g->n + 2, sizeof *g->kstart) < 0) goto out;
      g->kstart = ks;
      void *fs = g->first;
      if (dp_grow(&fs, &capf, g->n + 1, sizeof *g->first) < 0) goto out;
      g->first = fs;
      g->first[g->n] = done.first;
      void *kinds = g->kind;
      if (g->n == capkind && dp_grow(&kinds, &capkind, g->n + 1, 1) < 0) goto out;
      g->kind = kinds;
      g->kind[g->n] = done.kind;
      while (p2p.n <= done.pre)
        if (dp__dfp_u32s_push(&p2p, DP__DFP_NONE) < 0) goto out;
      p2p.a[done.pre] = g->n;
      g->kstart[g->n] = kids->n;
      for (uint32_t k = done.kbase; k < scratch.n; k++)
        if (dp__dfp_u32s_push(kids, scratch.a[k]) < 0) goto out;
      scratch.n = done.kbase;
      g->x[g->n++] = done.e;
    }
  }
  g->kstart[g->n] = kids->n;
  g->pre2post = p2p.a;
  p2p.a = NULL;
  rc = 0;
out:
  free(st);
  free(scratch.a);
  free(p2p.a);
  return rc;
}

/* Children by post order index, and consumers in compressed rows; filled
   in post order, so each row of consumers is sorted, which keeps the
   dominator intersection below linear on chains. */
static int link(dp__dfp_graph *g, dp__dfp_u32s *kids) {
  for (uint32_t k = 0; k < kids->n; k++)
    if (kids->a[k] != DP__DFP_NONE) kids->a[k] = g->pre2post[kids->a[k]];
  g->kids = kids->a;
  kids->a = NULL;
  uint32_t total = g->kstart[g->n];
  g->ostart = dp_calloc((size_t)g->n + 1, sizeof *g->ostart);
  g->outs = dp_malloc((total ? total : 1) * sizeof *g->outs);
  uint32_t *fill = dp_malloc(((size_t)g->n + 1) * sizeof *fill);
  if (!g->ostart || !g->outs || !fill) {
    free(fill);
    return -1;
  }
  for (uint32_t k = 0; k < total; k++)
    if (g->kids[k] != DP__DFP_NONE) g->ostart[g->kids[k] + 1]++;
  for (uint32_t v = 0; v < g->n; v++) g->ostart[v + 1] += g->ostart[v];
  memcpy(fill, g->ostart, (size_t)g->n * sizeof *fill);
  for (uint32_t v = 0; v < g->n; v++)
    for (uint32_t k = g->kstart[v]; k < g->kstart[v + 1]; k++)
      if (g->kids[k] != DP__DFP_NONE) g->outs[fill[g->kids[k]]++] = v;
  free(fill);
  return 0;
}

int dp__dfp_graph_build(dp__dfp_graph *g, dp_expr *root, int enter_fns) {
  memset(g, 0, sizeof *g);
  g->index = DP__PTRMAP_INIT;
  g->enter_fns = enter_fns;
  dp__dfp_u32s kids = {NULL, 0, 0};
  int rc = number_nodes(g, root, &kids) < 0 || link(g, &kids) < 0 ? -1 : 0;
  free(kids.a);
  if (rc < 0) dp__dfp_graph_free(g);
  return rc;
}

/* ---------------- post-dominators ---------------- */

/* Immediate post-dominators, root first: a node's is the nearest common
   ancestor of its consumers' in the tree built so far (a node joins it
   as a leaf once its consumers have). Climbing one step at a time, as
   Cooper, Harvey and Kennedy's intersection does, is quadratic when a
   node read far up and far down (a captured variable of nested function
   literals) makes the meeting point jump to the top; skew-binary jump
   pointers (Myers) find each common ancestor in O(log n) steps. */
static uint32_t common_ancestor(const uint32_t *up, const uint32_t *jump, const uint32_t *depth,
                                uint32_t a, uint32_t b) {
  if (depth[a] < depth[b]) {
    uint32_t t = a;
    a = b;
    b = t;
  }
  while (depth[a] > depth[b]) a = depth[jump[a]] >= depth[b] ? jump[a] : up[a];
  while (a != b) {
    if (jump[a] != jump[b]) {
      a = jump[a];
      b = jump[b];
    } else {
      a = up[a];
      b = up[b];
    }
  }
  return a;
}

static int post_dominators(dp__dfp_graph *g) {
  uint32_t n = g->n;
  g->idom = dp_malloc(((size_t)n + 1) * sizeof *g->idom);
  uint32_t *jump = dp_malloc((n ? n : 1) * sizeof *jump);
  uint32_t *depth = dp_malloc((n ? n : 1) * sizeof *depth);
  if (!g->idom || !jump || !depth) {
    free(jump);
    free(depth);
    return -1;
  }
  for (uint32_t v = n; v-- > 0;) {
    uint32_t a = DP__DFP_NONE;
    for (uint32_t k = g->ostart[v]; k < g->ostart[v + 1]; k++)
      a = a == DP__DFP_NONE ? g->outs[k] : common_ancestor(g->idom, jump, depth, a, g->outs[k]);
    g->idom[v] = a;
    if (a == DP__DFP_NONE) {
      jump[v] = v;
      depth[v] = 0;
    } else {
      uint32_t j = jump[a];
      jump[v] = depth[a] - depth[j] == depth[j] - depth[jump[j]] ? jump[j] : a;
      depth[v] = depth[a] + 1;
    }
  }
  free(jump);
  free(depth);
  return 0;
}

/* Entry and exit numbers of the post-dominator tree, so that "a
   post-dominates b" is an interval test. */
static int tree_intervals(dp__dfp_graph *g) {
  uint32_t n = g->n;
  uint32_t *cstart = dp_calloc((size_t)n + 1, sizeof *cstart);
  uint32_t *kids = dp_malloc((n ? n : 1) * sizeof *kids);
  uint32_t *st = dp_malloc(((size_t)n + 1) * 2 * sizeof *st);
  g->tin = dp_malloc((n ? n : 1) * sizeof *g->tin);
  g->tout = dp_malloc((n ? n : 1) * sizeof *g->tout);
  int rc = -1;
  if (!cstart || !kids || !st || !g->tin || !g->tout) goto out;
  for (uint32_t v = 0; v < n; v++)
    if (g->idom[v] != DP__DFP_NONE) cstart[g->idom[v] + 1]++;
  for (uint32_t v = 0; v < n; v++) cstart[v + 1] += cstart[v];
  memcpy(st, cstart, (size_t)n * sizeof *st); /* fill pointers */
  for (uint32_t v = 0; v < n; v++)
    if (g->idom[v] != DP__DFP_NONE) kids[st[g->idom[v]]++] = v;
  uint32_t clock = 0, sp = 0;
  for (uint32_t r = 0; r < n; r++) {
    if (g->idom[r] != DP__DFP_NONE) continue;
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

static int ensure_dominators(dp__dfp_graph *g) {
  if (g->tout) return 0;
  if (post_dominators(g) < 0 || tree_intervals(g) < 0) {
    free(g->idom);
    free(g->tin);
    free(g->tout);
    g->idom = g->tin = g->tout = NULL;
    return -1;
  }
  return 0;
}

int dp__dfp_graph_dominates(dp__dfp_graph *g, uint32_t a, uint32_t b) {
  if (a == DP__DFP_OOM || b == DP__DFP_OOM) return -1;
  if (a == DP__DFP_NONE || b == DP__DFP_NONE || a == b) return 0;
  if (ensure_dominators(g) < 0) return -1;
  return g->tin[a] <= g->tin[b] && g->tout[b] <= g->tout[a];
}

/* ---------------- closed nodes ---------------- */

/* v is closed when no edge leaves its post-dominator subtree T(v) toward
   a node that is not a constant: then every such node below v is in
   T(v) (follow any path down from v: the first node outside T(v) would
   be reached by such an edge), and a node of T(v) other than v has all
   its consumers in T(v). The edges leaving T(v) are counted for every v
   at once: each node adds its edges to non-constants, and each node c of
   T(v) but v takes back the edges into it, all from inside T(v); so a
   node adds its edges and takes back its post-dominator children's
   consumers, and the counts are summed up the tree (a node's immediate
   post-dominator comes later in post order). */
static int find_closed(dp__dfp_graph *g) {
  uint32_t n = g->n;
  int64_t *sum = dp_calloc(n ? n : 1, sizeof *sum);
  g->closed = dp_malloc(n ? n : 1);
  if (!sum || !g->closed) {
    free(sum);
    free(g->closed);
    g->closed = NULL;
    return -1;
  }
  g->shared_fn = 0;
  for (uint32_t v = 0; v < n; v++) {
    uint32_t users = g->ostart[v + 1] - g->ostart[v];
    int kind = g->kind[v];
    if (kind == DP_FUNC && users > 1) g->shared_fn = 1;
    for (uint32_t k = g->kstart[v]; k < g->kstart[v + 1]; k++)
      if (g->kids[k] != DP__DFP_NONE && g->kind[g->kids[k]] != DP_CONST) sum[v]++;
    if (kind != DP_CONST && g->idom[v] != DP__DFP_NONE) sum[g->idom[v]] -= users;
  }
  for (uint32_t v = 0; v < n; v++) {
    g->closed[v] = sum[v] == 0;
    if (g->idom[v] != DP__DFP_NONE) sum[g->idom[v]] += sum[v];
  }
  free(sum);
  return 0;
}

int dp__dfp_graph_closed(dp__dfp_graph *g, uint32_t v) {
  if (!g->closed && (ensure_dominators(g) < 0 || find_closed(g) < 0)) return -1;
  if (g->shared_fn) return 2;
  return g->closed[v];
}
