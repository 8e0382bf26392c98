/*
 * Internals shared by the dataflow pattern files (src/pattern): the
 * program's layout, the indexed graph of an expression (post order,
 * consumers, post-dominator tree) and the matcher's state.
 */
#ifndef DEVPLAN_PATTERN_INTERNAL_H
#define DEVPLAN_PATTERN_INTERNAL_H

#include "devplan/dfpattern.h"
#include "devplan/op.h"
#include "devplan/print.h"
#include "../core/ptrmap.h"

#define DP__DFP_NONE UINT32_MAX
/* dp__dfp_graph_find's answer when its index cannot be made (out of memory). */
#define DP__DFP_OOM (UINT32_MAX - 1)
/* dp_dfp_node.flags bit of a node made by re-association (never bound). */
#define DP__DFPF_UNBOUND 2

struct dp_dfp {
  uint32_t n, cap;        /* nodes (user's, then re-associated ones), capacity */
  uint32_t nuser;         /* nodes given to dp_dfp_new */
  dp_dfp_node *nodes;
  uint32_t root;
  int finished;
  int has_dominator;
  int has_fuzzy;          /* dominators or function patterns: the grouper looks for fuzzy matches */
  uint32_t *order;        /* the pattern graph in post order (user nodes from the root) */
  uint32_t norder;
  /* a quick test before matching at a root: the root's expression kind
     (0: any) and, for a call of an operator, that operator */
  int root_kind;
  const dp_expr *root_op;
};

/* ---- the indexed graph of an expression (graph.c) ----
   Every distinct node reachable from the root except operators,
   constructors and globals, in post order (children in expr.h order),
   with its children (one per child slot: DP__DFP_NONE for a node left out)
   and consumers by index, and (built on first use) its immediate
   post-dominator. enter_fns DP__DFP_FNS_NONE: function literals under the
   root are nodes without children; DP__DFP_FNS_PLAIN: Composite and
   Primitive ones are; DP__DFP_FNS_ALL (1): none is. */
enum { DP__DFP_FNS_NONE = 0, DP__DFP_FNS_ALL = 1, DP__DFP_FNS_PLAIN = 2 };
typedef struct dp__dfp_graph {
  uint32_t n;
  dp_expr **x;             /* post order; x[n-1] is the root */
  uint8_t *kind;           /* per node: its kind (dp_exprkind) */
  uint8_t *note;           /* per node: what PartitionByVirtualDevice's own build of the
                              graph notes of it (partition.c; NULL here) */
  dp__ptrmap index;         /* shared expression -> pre order number + 1 (building) */
  dp__ptrmap found;         /* expression -> post order index + 1 (first dp__dfp_graph_find) */
  uint32_t *pre2post;
  uint32_t *kstart, *kids; /* child slots of i: kids[kstart[i] .. kstart[i+1]) */
  uint32_t *first;         /* the nodes first[i] .. i are all below i (the walk found them from i) */
  uint32_t *ostart, *outs; /* consumers of i, likewise (sorted) */
  uint32_t *idom;          /* immediate post-dominator (DP__DFP_NONE for the root) */
  uint32_t *tin, *tout;    /* the post-dominator tree as intervals */
  uint8_t *closed;         /* per node: everything below it (constants aside) is post-dominated by it */
  int shared_fn;           /* some function literal has two consumers (closed says nothing then) */
  int enter_fns;
} dp__dfp_graph;

int dp__dfp_graph_build(dp__dfp_graph *g, dp_expr *root, int enter_fns);
/* A Composite or Primitive function literal (attributes Composite, or
   Primitive = 1): a unit the partitioner never enters. */
int dp__dfp_is_unit_fn(const dp_expr *e);
void dp__dfp_graph_free(dp__dfp_graph *g);
/* Index of e, DP__DFP_NONE when e is not in the graph, or DP__DFP_OOM
   when the index of every node (made on first use) cannot be made. */
uint32_t dp__dfp_graph_find(dp__dfp_graph *g, const dp_expr *e);
/* Does a strictly post-dominate b (every path from b to the root passes
   a)? 1, 0, or -1 when the dominator tree cannot be built or an index is
   DP__DFP_OOM (out of memory). */
int dp__dfp_graph_dominates(dp__dfp_graph *g, uint32_t a, uint32_t b);
/* Is every node below v, constants aside, post-dominated by v, so that
   nothing below it is used from outside? 1 yes, 0 no, 2 unknown (a
   function literal of the graph has two consumers), -1 out of memory.
   Linear once per graph, then constant. */
int dp__dfp_graph_closed(dp__dfp_graph *g, uint32_t v);
/* Is e one of the nodes the graph leaves out (operators, constructors, globals)? */
static inline int dp__dfp_graph_skips(const dp_expr *e) {
  int k = e->h.kind;
  return k == DP_OP || k == DP_CTOR || k == DP_GLOBAL;
}

/* ---- the matcher (match.c) ---- */
typedef struct dp__dfp_matcher {
  const dp_dfp *p;
  const dp_dfp_host *host;
  dp__dfp_graph *graph;              /* for dominators (NULL: built on demand over the root) */
  dp__dfp_graph own;                 /* that graph, when built on demand */
  int own_built;
  const dp_dfp_opaque *opaque;
  /* bindings: a trail of (node, expr), and each node's first binding */
  dp_dfp_bind *trail;
  uint32_t ntrail, captrail;
  uint32_t *first;               /* per node: trail index of its first binding, or DP__DFP_NONE */
  /* the explicit stack */
  struct dp__dfp_frame *frames;
  uint32_t nframes, capframes;
  int memoize;                   /* TVM's memoize_ flag (off on a dominator's path) */
  int imm;                       /* the result of a leaf matched on the spot */
  dp_err *err;
  /* walks kept (match.c): per dominator, the expressions from which its
     path was walked while nothing the walk may look up was bound, and
     what the walk found, which then holds for every later root */
  uint32_t ndom;                 /* 0: no dominator, or too many to keep this */
  uint32_t *dom;                 /* per pattern node: its dominator number, or DP__DFP_NONE */
  uint32_t *rstart, *reads;      /* per node: the dominators whose walk may look it up */
  uint32_t *nbound;              /* per dominator: how many of those are bound now */
  dp__ptrmap *walked;            /* per dominator: expression -> what its walk found */
  int cut;                       /* a walk stopped on its root's test: keep no failure */
} dp__dfp_matcher;

int dp__dfp_matcher_init(dp__dfp_matcher *m, const dp_dfp *p, const dp_dfp_host *host,
                     dp__dfp_graph *graph, const dp_dfp_opaque *opaque);
/* The quick test before a match at e: can p match there at all? */
int dp__dfp_root_may_match(const dp_dfp *p, const dp_expr *e);
void dp__dfp_matcher_free(dp__dfp_matcher *m);
/* Match at e: 1, 0, -1 (m->err set). The bindings stay in m->trail until
   dp__dfp_matcher_reset. */
int dp__dfp_matcher_run(dp__dfp_matcher *m, dp_expr *e);
void dp__dfp_matcher_reset(dp__dfp_matcher *m);

/* Does the ATTR node's attribute set hold for e (attr.c)? */
int dp__dfp_attrs_hold(const dp_attrs *want, const dp_expr *e);

/* The opaque set (group.c). */
int dp__dfp_opaque_has(const dp_dfp_opaque *o, const dp_expr *e);

/* Growable arrays of pointers and of indices (group.c). */
typedef struct dp__dfp_vec {
  void **items;
  uint32_t n, cap;
} dp__dfp_vec;
int dp__dfp_vec_push(dp__dfp_vec *v, void *x);

typedef struct dp__dfp_u32s {
  uint32_t *a;
  uint32_t n, cap;
} dp__dfp_u32s;
int dp__dfp_u32s_push(dp__dfp_u32s *v, uint32_t x);

#endif
