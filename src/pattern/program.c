/*
 * Building a dataflow pattern program: nodes set one by one (children by
 * index, so a recursive pattern is a cycle), then sealed by dp_dfp_finish,
 * which checks the graph, orders it, and adds the patterns TVM's matcher
 * makes up on the fly for divide/multiply re-association, so that the
 * matcher itself only ever follows node indices.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

dp_dfp *dp_dfp_new(uint32_t n) {
  dp_dfp *p = dp_calloc(1, sizeof *p);
  if (!p) return NULL;
  p->cap = n ? n : 1;
  p->nodes = dp_calloc(p->cap, sizeof *p->nodes);
  if (!p->nodes) {
    free(p);
    return NULL;
  }
  for (uint32_t i = 0; i < n; i++) {
    p->nodes[i].kind = DP_DFP_WILD;
    p->nodes[i].input_rank = DP__DFP_NONE;
  }
  p->n = p->nuser = n;
  p->root = DP__DFP_NONE;
  return p;
}

static void clear_node(dp_dfp_node *x) {
  free(x->kids);
  free(x->name);
  free(x->shape);
  dp_release(x->expr);
  dp_release(x->type);
  dp_release(x->attrs);
  memset(x, 0, sizeof *x);
}

void dp_dfp_free(dp_dfp *p) {
  if (!p) return;
  for (uint32_t i = 0; i < p->n; i++) clear_node(&p->nodes[i]);
  free(p->nodes);
  free(p->order);
  free(p);
}

uint32_t dp_dfp_size(const dp_dfp *p) { return p ? p->nuser : 0; }
const dp_dfp_node *dp_dfp_at(const dp_dfp *p, uint32_t i) {
  return p && i < p->n ? &p->nodes[i] : NULL;
}
uint32_t dp_dfp_root(const dp_dfp *p) { return p ? p->root : DP__DFP_NONE; }

static int fail(dp_err **err, const char *msg, uint32_t i) {
  dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "pattern node %u: %s", i, msg));
  return -1;
}

/* Is the number of kids right for the kind? */
static int kids_fit(const dp_dfp_node *x) {
  int any = x->flags & DP_DFPF_ANY;
  switch (x->kind) {
  case DP_DFP_WILD: case DP_DFP_VAR: case DP_DFP_CONST: case DP_DFP_EXPR: case DP_DFP_OP:
  case DP_DFP_OPKIND:
    return x->nkids == 0;
  case DP_DFP_CALL: case DP_DFP_FN: return any ? x->nkids == 1 : x->nkids >= 1;
  case DP_DFP_TUPLE: return any ? x->nkids == 0 : 1;
  case DP_DFP_IF: case DP_DFP_LET: case DP_DFP_DOMINATES: return x->nkids == 3;
  case DP_DFP_ALT: return x->nkids == 2;
  case DP_DFP_PROJ: case DP_DFP_ATTR: case DP_DFP_TYPE: case DP_DFP_DTYPE: case DP_DFP_SHAPE:
  case DP_DFP_WHERE: case DP_DFP_USE:
    return x->nkids == 1;
  default: return 0;
  }
}

/* The fields a kind needs. */
static const char *missing(const dp_dfp_node *x) {
  if (x->kind == DP_DFP_EXPR && !x->expr) return "an expression pattern needs its expression";
  if (x->kind == DP_DFP_OP && (!x->expr || x->expr->h.kind != DP_OP))
    return "an operator pattern needs an operator";
  if (x->kind == DP_DFP_TYPE && !x->type) return "a type pattern needs its type";
  if (x->kind == DP_DFP_DTYPE && !x->dtype) return "a dtype pattern needs its dtype";
  return NULL;
}

int dp_dfp_set(dp_dfp *p, uint32_t i, const dp_dfp_node *proto, dp_err **err) {
  if (!p || p->finished) return fail(err, "the program is sealed", i);
  if (i >= p->nuser) return fail(err, "index out of range", i);
  if (!kids_fit(proto)) return fail(err, "wrong number of sub-patterns for its kind", i);
  const char *why = missing(proto);
  if (why) return fail(err, why, i);
  for (uint32_t k = 0; k < proto->nkids; k++)
    if (proto->kids[k] >= p->nuser) return fail(err, "a sub-pattern index is out of range", i);
  dp_dfp_node x = *proto;
  x.flags &= DP_DFPF_ANY;
  x.kids = proto->nkids ? dp_malloc(proto->nkids * sizeof *x.kids) : NULL;
  x.name = proto->name ? dp_strdup(proto->name) : NULL;
  x.shape = proto->ndim ? dp_malloc(proto->ndim * sizeof *x.shape) : NULL;
  if ((proto->nkids && !x.kids) || (proto->name && !x.name) || (proto->ndim && !x.shape)) {
    free(x.kids);
    free(x.name);
    free(x.shape);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  if (proto->nkids) memcpy(x.kids, proto->kids, proto->nkids * sizeof *x.kids);
  if (proto->ndim) memcpy(x.shape, proto->shape, proto->ndim * sizeof *x.shape);
  dp_retain(x.expr);
  dp_retain(x.type);
  dp_retain(x.attrs);
  clear_node(&p->nodes[i]);
  x.input_rank = DP__DFP_NONE;
  p->nodes[i] = x;
  return 0;
}

/* ---------------- re-association ---------------- */

/* Is node i a call pattern whose callee is the operator `name`, with two
   arguments? */
static int is_op_call2(const dp_dfp *p, uint32_t i, const char *name) {
  const dp_dfp_node *x = &p->nodes[i];
  if (x->kind != DP_DFP_CALL || (x->flags & DP_DFPF_ANY) || x->nkids != 3) return 0;
  const dp_dfp_node *c = &p->nodes[x->kids[0]];
  return c->kind == DP_DFP_OP && strcmp(((const dp_op *)c->expr)->name, name) == 0;
}

static int is_callee_op(const dp_dfp *p, uint32_t i, const char *name) {
  const dp_dfp_node *x = &p->nodes[i];
  if (x->kind != DP_DFP_CALL || (x->flags & DP_DFPF_ANY)) return 0;
  const dp_dfp_node *c = &p->nodes[x->kids[0]];
  return c->kind == DP_DFP_OP && strcmp(((const dp_op *)c->expr)->name, name) == 0;
}

/* A made-up call pattern callee(a, b), never bound (TVM builds a fresh
   one each time); the same triple gives the same node, so the closure of
   re-associations is finite. DP__DFP_NONE when the budget is spent. */
static uint32_t synth(dp_dfp *p, uint32_t callee, uint32_t a, uint32_t b) {
  for (uint32_t i = p->nuser; i < p->n; i++) {
    const uint32_t *k = p->nodes[i].kids;
    if (k[0] == callee && k[1] == a && k[2] == b) return i;
  }
  if (p->n >= 4 * p->nuser + 64) return DP__DFP_NONE;
  if (p->n == p->cap) {
    void *nodes = p->nodes;
    if (dp_grow(&nodes, &p->cap, p->n + 1, sizeof *p->nodes) < 0) return DP__DFP_NONE;
    p->nodes = nodes;
  }
  dp_dfp_node *x = &p->nodes[p->n];
  memset(x, 0, sizeof *x);
  x->input_rank = DP__DFP_NONE;
  x->kids = dp_malloc(3 * sizeof *x->kids);
  if (!x->kids) return DP__DFP_NONE;
  x->kind = DP_DFP_CALL;
  x->flags = DP__DFPF_UNBOUND;
  x->nkids = 3;
  x->kids[0] = callee;
  x->kids[1] = a;
  x->kids[2] = b;
  return p->n++;
}

/* What TVM's CallPattern visitor builds when the callee does not match:
   divide(multiply(A, B), C) may match multiply(B, divide(A, C)) or
   multiply(A, divide(B, C)); multiply(divide(A, B), C) may match
   divide(multiply(A, C), B). */
static void reassociate(dp_dfp *p, uint32_t i) {
  uint32_t callee = p->nodes[i].kids[0];
  if (is_op_call2(p, i, "divide") && is_callee_op(p, p->nodes[i].kids[1], "multiply") &&
      p->nodes[p->nodes[i].kids[1]].nkids == 3) {
    uint32_t mul = p->nodes[i].kids[1], c = p->nodes[i].kids[2];
    uint32_t mcallee = p->nodes[mul].kids[0];
    for (uint32_t k = 0; k < 2; k++) {
      uint32_t div = synth(p, callee, p->nodes[mul].kids[1 + k], c);
      uint32_t alt = div == DP__DFP_NONE ? DP__DFP_NONE : synth(p, mcallee, p->nodes[mul].kids[2 - k], div);
      if (alt == DP__DFP_NONE) return;
      p->nodes[i].alt[k] = alt;
    }
    p->nodes[i].reassoc = 1;
    return;
  }
  if (!is_op_call2(p, i, "multiply")) return;
  for (uint32_t k = 0; k < 2; k++) {
    uint32_t d = p->nodes[i].kids[1 + k];
    if (!is_op_call2(p, d, "divide")) continue;
    uint32_t mul = synth(p, callee, p->nodes[d].kids[1], p->nodes[i].kids[2 - k]);
    uint32_t alt = mul == DP__DFP_NONE ? DP__DFP_NONE : synth(p, p->nodes[d].kids[0], mul, p->nodes[d].kids[2]);
    if (alt == DP__DFP_NONE) return;
    p->nodes[i].alt[0] = alt;
    p->nodes[i].reassoc = 2;
    return;
  }
}

/* ---------------- sealing ---------------- */

/* The pattern graph from the root in post order (children first, each
   node once): the order in which TVM's grouper makes inputs. */
static int order_graph(dp_dfp *p) {
  uint8_t *seen = dp_calloc(p->nuser, 1);
  uint32_t *stack = dp_malloc(2 * (size_t)p->nuser * sizeof *stack);
  p->order = dp_malloc(p->nuser * sizeof *p->order);
  if (!seen || !stack || !p->order) {
    free(seen);
    free(stack);
    return -1;
  }
  uint32_t sp = 0;
  stack[sp++] = p->root;
  stack[sp++] = 0;
  seen[p->root] = 1;
  while (sp) {
    uint32_t i = stack[sp - 2], k = stack[sp - 1];
    if (k < p->nodes[i].nkids) {
      stack[sp - 1]++;
      uint32_t kid = p->nodes[i].kids[k];
      if (!seen[kid]) {
        seen[kid] = 1;
        stack[sp++] = kid;
        stack[sp++] = 0;
      }
    } else {
      const dp_dfp_node *x = &p->nodes[i];
      int any = x->flags & DP_DFPF_ANY;
      if (x->nkids == 0 || (any && (x->kind == DP_DFP_CALL || x->kind == DP_DFP_TUPLE)))
        p->nodes[i].input_rank = p->norder;
      p->order[p->norder++] = i;
      if (p->nodes[i].kind == DP_DFP_DOMINATES) {
        p->has_dominator = p->has_fuzzy = 1;
        p->nodes[p->nodes[i].kids[0]].fuzzy = p->nodes[p->nodes[i].kids[1]].fuzzy = 1;
      }
      if (p->nodes[i].kind == DP_DFP_FN) p->has_fuzzy = 1;
      sp -= 2;
    }
  }
  free(seen);
  free(stack);
  return 0;
}

/* The expression kind a match at the root needs (0: any), and for a call
   pattern whose callee is an operator (and that no re-association can
   change), that operator: a quick test before each match attempt. */
static void root_filter(dp_dfp *p) {
  uint32_t i = p->root;
  for (int step = 0; step < 16; step++) {
    const dp_dfp_node *x = &p->nodes[i];
    switch (x->kind) {
    case DP_DFP_ATTR: case DP_DFP_TYPE: case DP_DFP_DTYPE: case DP_DFP_SHAPE:
    case DP_DFP_WHERE: case DP_DFP_USE:
      i = x->kids[0];
      continue;
    case DP_DFP_DOMINATES: i = x->kids[2]; continue;
    case DP_DFP_CALL:
      p->root_kind = DP_CALL;
      if (p->nodes[x->kids[0]].kind == DP_DFP_OP && !x->reassoc) p->root_op = p->nodes[x->kids[0]].expr;
      return;
    case DP_DFP_VAR: p->root_kind = DP_VAR; return;
    case DP_DFP_CONST: p->root_kind = DP_CONST; return;
    case DP_DFP_TUPLE: p->root_kind = DP_TUPLE; return;
    case DP_DFP_PROJ: p->root_kind = DP_PROJ; return;
    case DP_DFP_FN: p->root_kind = DP_FUNC; return;
    case DP_DFP_IF: p->root_kind = DP_IF; return;
    case DP_DFP_LET: p->root_kind = DP_LET; return;
    default: return;
    }
  }
}

/* The kids of x that match the very expression x matches (the others
   match its children or other nodes): k of them from *first. */
static uint32_t same_expression(const dp_dfp_node *x, uint32_t *first) {
  *first = 0;
  switch (x->kind) {
  case DP_DFP_ALT: return 2;
  case DP_DFP_ATTR: case DP_DFP_TYPE: case DP_DFP_DTYPE: case DP_DFP_SHAPE:
  case DP_DFP_WHERE: case DP_DFP_USE:
    return 1;
  case DP_DFP_DOMINATES: *first = 2; return 1;
  default: return 0;
  }
}

/* A cycle of same-expression edges (left recursion: matching it would
   never end, as a left recursive LPeg grammar): the index of a node on
   it, DP__DFP_NONE when there is none, or -1 (as UINT32_MAX - 1) on out
   of memory. Depth-first with an explicit stack, three colours. */
#define LEFT_OOM (UINT32_MAX - 1)
static uint32_t left_recursion(const dp_dfp *p) {
  uint8_t *colour = dp_calloc(p->nuser, 1); /* 0 new, 1 on the stack, 2 done */
  uint32_t *stack = dp_malloc(2 * (size_t)p->nuser * sizeof *stack);
  uint32_t found = DP__DFP_NONE;
  if (!colour || !stack) found = LEFT_OOM;
  for (uint32_t s = 0; s < p->nuser && found == DP__DFP_NONE; s++) {
    if (colour[s]) continue;
    uint32_t sp = 0;
    stack[sp++] = s;
    stack[sp++] = 0;
    colour[s] = 1;
    while (sp && found == DP__DFP_NONE) {
      uint32_t i = stack[sp - 2], k = stack[sp - 1], first;
      uint32_t n = same_expression(&p->nodes[i], &first);
      if (k < n) {
        stack[sp - 1]++;
        uint32_t kid = p->nodes[i].kids[first + k];
        if (colour[kid] == 1) found = kid;
        if (colour[kid] == 0) {
          colour[kid] = 1;
          stack[sp++] = kid;
          stack[sp++] = 0;
        }
      } else {
        colour[i] = 2;
        sp -= 2;
      }
    }
  }
  free(colour);
  free(stack);
  return found;
}

int dp_dfp_finish(dp_dfp *p, uint32_t root, dp_err **err) {
  if (!p || p->finished) return fail(err, "the program is sealed", root);
  if (root >= p->nuser) return fail(err, "the root is out of range", root);
  uint32_t cycle = left_recursion(p);
  if (cycle == LEFT_OOM) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  if (cycle != DP__DFP_NONE)
    return fail(err, "left recursion: it can match itself again at the same expression before "
                "matching any sub-expression, so matching would never end", cycle);
  p->root = root;
  for (uint32_t i = 0; i < p->n; i++) {
    dp_dfp_node *x = &p->nodes[i];
    if (x->kind == DP_DFP_CALL && !(x->flags & DP_DFPF_ANY) && x->nkids == 3 &&
        (is_callee_op(p, i, "add") || is_callee_op(p, i, "multiply")))
      x->commute = 1;
    if (x->kind == DP_DFP_CALL) reassociate(p, i); /* may add nodes: p->n grows */
  }
  if (order_graph(p) < 0) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  root_filter(p);
  p->finished = 1;
  return 0;
}
