/*
 * Dataflow patterns: TVM's pattern language over the IR (dataflow_matcher.cc),
 * compiled to a program and matched with explicit stacks.
 *
 * Not to be confused with the match-clause patterns of expr.h (dp_pattern,
 * `match (x) { Cons(%h, _) => ... }`): a dataflow pattern describes a piece
 * of a program (`nn.relu(nn.conv2d(_, const))`) to find, group or rewrite.
 *
 * A program is a graph of nodes (indices 0..n-1, children by index, cycles
 * allowed for recursive patterns), built with dp_dfp_new / dp_dfp_set and
 * sealed by dp_dfp_finish. One node used twice is one node: TVM's sharing
 * by identity (a wildcard used twice matches the very same expression both
 * times). Matching (dp_dfp_match) asks whether the pattern matches an
 * expression at its root; the grouping (dp_dfp_group_matches) finds the
 * non-overlapping matches of a function body as TVM's PatternGrouper does,
 * which MergeComposite, the rewriter and MergeAndAnnotate build on.
 *
 * Nothing here recurses on the C stack over the IR or over the pattern:
 * a pattern that follows a 1,000,000-deep chain (a recursive pattern, a
 * dominator path) is fine. Errors are returned, never raised: a user
 * predicate that fails stops the match with its error.
 */
#ifndef DEVPLAN_DFPATTERN_H
#define DEVPLAN_DFPATTERN_H

#include "module.h"

typedef enum dp_dfpkind {
  DP_DFP_WILD = 1, /* anything */
  DP_DFP_VAR,      /* a local variable; name (may be NULL: any) */
  DP_DFP_CONST,    /* a constant */
  DP_DFP_EXPR,     /* an expression structurally equal to expr */
  DP_DFP_OP,       /* the operator expr (a dp_op) itself */
  DP_DFP_CALL,     /* kids: callee, args...; DP_DFPF_ANY: any number of arguments */
  DP_DFP_TUPLE,    /* kids: fields...; DP_DFPF_ANY: any tuple */
  DP_DFP_PROJ,     /* kids: tuple; index (-1: any) */
  DP_DFP_FN,       /* kids: params..., body; DP_DFPF_ANY: any parameters */
  DP_DFP_IF,       /* kids: cond, then, else */
  DP_DFP_LET,      /* kids: var, value, body */
  DP_DFP_ALT,      /* kids: left, right (left first) */
  DP_DFP_ATTR,     /* kids: pattern; attrs */
  DP_DFP_TYPE,     /* kids: pattern; type */
  DP_DFP_DTYPE,    /* kids: pattern; dtype */
  DP_DFP_SHAPE,    /* kids: pattern; ndim, shape */
  DP_DFP_DOMINATES,/* kids: parent, path, child */
  DP_DFP_WHERE,    /* kids: pattern; pred (the host's predicate number) */
  DP_DFP_USE,      /* kids: target; matches when the target does (named
                      captures, and the reference of a recursive pattern) */
  DP_DFP_OPKIND    /* an operator whose pattern kind (op.h) is in `kinds` */
} dp_dfpkind;

enum {
  DP_DFPF_ANY = 1       /* CALL, TUPLE, FN: the list is not constrained
                           (the other bits are the matcher's own) */
};

typedef struct dp_dfp_node {
  uint8_t kind;          /* dp_dfpkind */
  uint8_t flags;
  uint32_t nkids;
  uint32_t *kids;        /* node indices */
  char *name;            /* VAR (NULL: any name) */
  dp_expr *expr;         /* EXPR, OP (retained) */
  dp_type *type;         /* TYPE (retained) */
  dp_attrs *attrs;       /* ATTR (retained) */
  dp_dtype dtype;        /* DTYPE */
  uint32_t ndim;         /* SHAPE */
  int64_t *shape;
  int64_t index;         /* PROJ: -1 any */
  uint32_t pred;         /* WHERE */
  uint32_t kinds;        /* OPKIND: bit k set for dp_oppattern k */
  /* filled by dp_dfp_finish: TVM's divide/multiply re-association, tried
     when the callee does not match (see match.c) */
  uint8_t reassoc;       /* 0 none, 1 divide(multiply(A, B), C), 2 multiply(.., divide(A, B)) */
  uint8_t commute;       /* callee is the operator add or multiply, two arguments */
  uint32_t alt[2];       /* the re-associated patterns to try */
  uint8_t fuzzy;         /* a dominator's parent or path: what it matches is no input */
  uint32_t input_rank;   /* a node that makes group inputs (a leaf, an any-arity call or
                            tuple): its place in the pattern graph's post order; else
                            UINT32_MAX */
} dp_dfp_node;

typedef struct dp_dfp dp_dfp;

/* A program of n nodes, all DP_DFP_WILD until set (NULL on out of memory). */
dp_dfp *dp_dfp_new(uint32_t n);
void dp_dfp_free(dp_dfp *p);
/* Sets node i from `proto` (kids, name, shape copied; expr, type, attrs
   retained). 0, or -1 + error (index out of range, a kid out of range, a
   wrong number of kids for the kind, out of memory). */
int dp_dfp_set(dp_dfp *p, uint32_t i, const dp_dfp_node *proto, dp_err **err);
/* Seals the program with its root: checks it (a cycle that comes back to
   a node at the same expression, through alternatives, predicates and
   uses alone, is left recursion: an error), adds the re-associated
   patterns, orders the pattern graph. 0, or -1 + error. */
int dp_dfp_finish(dp_dfp *p, uint32_t root, dp_err **err);
uint32_t dp_dfp_size(const dp_dfp *p);        /* nodes given to dp_dfp_new */
const dp_dfp_node *dp_dfp_at(const dp_dfp *p, uint32_t i);
uint32_t dp_dfp_root(const dp_dfp *p);

/* What a match needs from its caller: the predicates of DP_DFP_WHERE
   nodes. pred returns 1 (holds), 0 (does not) or -1 with *err set. */
typedef struct dp_dfp_host {
  int (*pred)(void *ud, uint32_t pred, dp_expr *e, dp_err **err);
  void *ud;
} dp_dfp_host;

/* One binding of a match: pattern node `node` matched expression `expr`. */
typedef struct dp_dfp_bind {
  uint32_t node;
  dp_expr *expr;
} dp_dfp_bind;

/* Does p match e at its root? 1, 0, or -1 + error (a predicate's).
   On 1, *binds receives the bindings in the order they were made (a node
   may appear more than once: the path of a dominator, a recursive
   pattern; the last is the outermost), as a malloc'd array of *nbinds
   (borrowed expressions). binds may be NULL. */
int dp_dfp_match(const dp_dfp *p, dp_expr *e, const dp_dfp_host *host, dp_dfp_bind **binds,
                 uint32_t *nbinds, dp_err **err);

/* Every node of root (post order, each distinct node once) at which p
   matches, each handed to found with its bindings (valid during the
   call). found returns 0 to go on, or -1 with *err set to stop. Returns
   0, or -1 + error. */
typedef int (*dp_dfp_found_fn)(void *ud, dp_expr *e, const dp_dfp_bind *binds, uint32_t nbinds,
                               dp_err **err);
int dp_dfp_find(const dp_dfp *p, dp_expr *root, const dp_dfp_host *host, dp_dfp_found_fn found,
                void *ud, dp_err **err);

/* ---- grouping: TVM's PatternGrouper over a function body ---- */

typedef struct dp_dfp_group {
  dp_expr *root;          /* the expression the group replaces */
  uint32_t number;        /* TVM's graph number (names the parameters) */
  uint32_t ninputs;
  dp_expr **inputs;       /* what flows in, in TVM's parameter order (distinct) */
  uint32_t ninterior;
  dp_expr **interior;     /* everything from the root down to the inputs, post order
                             (nodes inside function literals included; operators,
                             constructors and globals left out) */
  uint32_t nbinds;
  dp_dfp_bind *binds;     /* the match (as dp_dfp_match) */
} dp_dfp_group;

/* TVM's PartitionedFromPattern label of a group: its nodes in post order,
   an operator call "<op>_", another call "Call_", a tuple "Tuple_", a
   projection "TupleGetItem<i>_", a function literal "Function"
   ("nn.conv2d_nn.bias_add_nn.relu_"). malloc'd; NULL on out of memory. */
char *dp_dfp_group_label(const dp_dfp_group *g);

typedef struct dp_dfp_groups {
  uint32_t n;
  dp_dfp_group *items;    /* from the output toward the inputs */
  dp_expr *body;          /* retained: the expressions above are borrowed from it */
  dp_expr **xpool;        /* the groups' inputs and interiors point in here */
  dp_dfp_bind *bpool;     /* ... and their bindings in here */
} dp_dfp_groups;

/* Nodes an earlier grouping took (MergeAndAnnotate keeps its groups in
   place, so later patterns see them as opaque values): an opaque
   expression is matched only by leaf patterns (wildcard, var, const,
   expr), as the call of a composite function would be, and is never a
   root. A set of expressions (opaque_add / opaque_has); NULL: none. */
typedef struct dp_dfp_opaque dp_dfp_opaque;
dp_dfp_opaque *dp_dfp_opaque_new(void);
void dp_dfp_opaque_free(dp_dfp_opaque *o);
/* Adds the nodes of group g (its interior). 0, or -1 on out of memory. */
int dp_dfp_opaque_add(dp_dfp_opaque *o, const dp_dfp_group *g);

/* The indexed graph of a body (its nodes in post order, children,
   consumers, post-dominators): built by each grouping unless one made
   here is given, so that several patterns over one body build it once. */
typedef struct dp_dfp_graph dp_dfp_graph;
dp_dfp_graph *dp_dfp_graph_new(dp_expr *body, dp_err **err);
void dp_dfp_graph_free(dp_dfp_graph *g);
dp_expr *dp_dfp_graph_root(const dp_dfp_graph *g);

/* The groups of p in body (candidate roots from the output toward the
   inputs; overlapping groups and groups whose inner nodes escape are
   rejected, as TVM). graph: NULL, or the graph of body. 0, or -1 +
   error; out is cleared first. */
int dp_dfp_group_matches(const dp_dfp *p, dp_expr *body, const dp_dfp_host *host,
                         const dp_dfp_opaque *opaque, dp_dfp_graph *graph, dp_dfp_groups *out,
                         dp_err **err);
void dp_dfp_groups_clear(dp_dfp_groups *g);

/* ---- what the groups become ---- */

/* MergeComposite's rewrite of body (the groups of `groups`, made over the
   same body): each group whose keep[i] is non-zero is replaced by a call
   of a function literal with attributes Composite = name and
   PartitionedFromPattern = label, whose parameters FunctionVar_<n>_<i>
   take the inputs (annotated with their checked types) and whose body is
   the group with the inputs replaced; constants matched by const / expr
   patterns stay inside. Returns the new body (a new reference). */
dp_expr *dp_dfp_composite(const dp_dfp_groups *groups, const uint8_t *keep, const char *name,
                          dp_err **err);

/* The rewriter's step: replaces each group root by what `replace`
   returns for it: a new reference, or NULL with *err NULL to keep the
   rebuilt node, or NULL with *err set to stop. `post` lists the group's
   bindings with each expression already rewritten (in the order of
   g->binds). Returns the new body (a new reference). */
typedef dp_expr *(*dp_dfp_replace_fn)(void *ud, uint32_t group, dp_expr *rebuilt,
                                      const dp_dfp_bind *post, uint32_t nbinds, dp_err **err);
dp_expr *dp_dfp_replace(const dp_dfp_groups *groups, dp_dfp_replace_fn replace, void *ud,
                        dp_err **err);

/* MergeAndAnnotate: groups kept in place. Every call of a group (not
   inside a function literal of it) becomes on_device(call, vd) and every
   input that no group computes is read through on_device(input, vd,
   constrain_body=False, constrain_result=True) by the group's nodes, so
   the planner puts the group on vd and copies only its inputs and
   outputs. `sets` lists ngroups groupings, each of them over `body`,
   keep[k][i] saying whether group i of set k is taken and vd[k] its
   device. Returns the new body (a new reference). */
typedef struct dp_dfp_placed {
  const dp_dfp_groups *groups;
  const uint8_t *keep;
  dp_vdev *vd;
} dp_dfp_placed;
dp_expr *dp_dfp_annotate(dp_expr *body, const dp_dfp_placed *sets, uint32_t nsets, dp_err **err);

#endif
