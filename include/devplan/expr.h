/*
 * Expressions and patterns: all of Relay.
 *
 * Nodes are immutable once made (the one exception: `type`, the checked
 * type that inference fills in) and reference counted; a node is shared by
 * every expression and module that holds it. Constructors take their
 * children as borrowed pointers and retain them; they return a new
 * reference, or NULL (+ error) on out of memory or invalid arguments.
 *
 * Children of every node can be walked uniformly with dp_expr_nchildren /
 * dp_expr_child (visit.h builds the explicit-stack traversals on them), in
 * this order:
 *   CALL: fn, args...        FUNC: params..., body     LET: var, value, body
 *   TUPLE: fields...         PROJ: tuple               IF: cond, then, else
 *   MATCH: data, clause rhs... (pattern variables are reached through
 *          dp_match clauses)  REF_NEW: value  REF_READ: ref  REF_WRITE: ref, value
 *   VAR, GLOBAL, CONST, OP, CTOR: none
 */
#ifndef DEVPLAN_EXPR_H
#define DEVPLAN_EXPR_H

#include "core.h"
#include "type.h"
#include "attrs.h"
#include "device.h"

typedef enum dp_exprkind {
  DP_VAR = 1, DP_GLOBAL, DP_CONST, DP_OP, DP_CALL, DP_FUNC, DP_LET, DP_TUPLE,
  DP_PROJ, DP_IF, DP_MATCH, DP_CTOR, DP_REF_CREATE, DP_REF_READ, DP_REF_WRITE
} dp_exprkind;

/* "var", "global", "const", "op", "call", "fn", "let", "tuple", "proj",
   "if", "match", "ctor", "ref", "ref_read", "ref_write" */
const char *dp_exprkind_name(int kind);

typedef struct dp_expr {
  dp_obj h;          /* h.type = DP_OBJ_EXPR, h.kind = dp_exprkind */
  dp_span span;
  uint32_t mark;     /* not part of the node's value: scratch of the walks that find a
                        node again by it (the planner's numbering: its last id of the
                        node; the printer's one walk, which puts the old value back),
                        each checking it against its own table before reading it; in
                        what was padding */
  dp_type *type;     /* checked type; NULL until inferred (owned) */
} dp_expr;

typedef struct dp_var {
  dp_expr e;         /* e.h.flags & DP_VAR_ANNOTATED: the node has a dp_var_extra */
  char name[];       /* name hint, without the %, NUL-terminated, in the node (not a
                        pointer to it: 8 bytes less a variable, 8 MB on a million lets) */
} dp_var;

/* A variable's type annotation and virtual_device, read through
   dp_var_annot / dp_var_vdev. Most variables have neither (a let's, in a
   module of a million lets, has none): only a variable made with one or
   both carries this record, 16 bytes less each of the others. The record
   lies right before the node in its allocation (not after it: `name` keeps
   its fixed place behind the fixed part), so the node's pointer is
   unchanged and the record is found at a constant offset. */
typedef struct dp_var_extra {
  dp_type *annot;    /* type annotation or NULL */
  dp_vdev *vdev;     /* virtual_device attribute (parameters) or NULL */
} dp_var_extra;

/* dp_obj.flags of a variable that carries a dp_var_extra (set by its
   constructor only; expr.c's free function frees from the record). The
   library's other bits of an expression's flags: 0x1000 (AnnotateVirtual-
   Devices' records), 0x2000 (the node is an arena's), 0x4000 and 0x8000
   (type inference's working types); the bits below 0x0800 are unused. */
#define DP_VAR_ANNOTATED 0x0800u

static inline const dp_var_extra *dp__var_extra(const dp_var *v) {
  /* (dp_var_extra and dp_var are both pointer-aligned, so the record right
     before the node is as aligned as the node) */
  return (const dp_var_extra *)(const void *)((const char *)v - sizeof(dp_var_extra));
}
/* The variable's type annotation, or NULL (borrowed). */
static inline dp_type *dp_var_annot(const dp_var *v) {
  return v->e.h.flags & DP_VAR_ANNOTATED ? dp__var_extra(v)->annot : NULL;
}
/* The variable's virtual_device attribute (parameters), or NULL (borrowed). */
static inline dp_vdev *dp_var_vdev(const dp_var *v) {
  return v->e.h.flags & DP_VAR_ANNOTATED ? dp__var_extra(v)->vdev : NULL;
}

typedef struct dp_global {
  dp_expr e;
  char *name;        /* without the @; globals are equal when names are */
} dp_global;

typedef struct dp_const {
  dp_expr e;
  dp_dtype dtype;
  uint32_t ndim;     /* 0: scalar */
  int64_t *shape;    /* ndim dims (points into the node) */
  size_t nbytes;
  void *data;        /* row-major elements (points into the node) */
} dp_const;

typedef struct dp_call {
  dp_expr e;
  dp_expr *fn;       /* op, global, var, fn value, ctor, ... */
  dp_attrs *attrs;   /* NULL: none */
  uint32_t nargs;
  dp_expr *args[];
} dp_call;

typedef struct dp_func {
  dp_expr e;
  dp_expr *body;
  dp_type *ret;      /* result type annotation or NULL */
  dp_attrs *attrs;   /* other attributes (Primitive=1, Compiler="..."), or NULL */
  dp_vdev *vdev;     /* virtual_device attribute or NULL */
  uint32_t ntparams; /* type parameters `def @f[A, B](...)`: a polymorphic
                        function, instantiated afresh at each call */
  dp_type **tparams; /* ntparams type variables (DP_TY_VAR; points into the node) */
  uint32_t nparams;
  dp_var *params[];
} dp_func;

typedef struct dp_let {
  dp_expr e;
  dp_var *var;
  dp_expr *value;
  dp_expr *body;
} dp_let;

typedef struct dp_tuple {
  dp_expr e;
  uint32_t n;
  dp_expr *fields[];
} dp_tuple;

typedef struct dp_proj {
  dp_expr e;
  dp_expr *tuple;
  uint32_t index;
} dp_proj;

typedef struct dp_if {
  dp_expr e;
  dp_expr *cond, *then_, *else_;
} dp_if;

/* Constructor of an ADT (a value usable as a callee). Result type is
   adt_name[tparams...]; inputs may mention the tparams. */
typedef struct dp_ctor {
  dp_expr e;
  char *name;
  char *adt_name;
  uint32_t tag;        /* index in its type definition */
  uint32_t ntparams;
  uint32_t ninputs;
  dp_type *items[];    /* ntparams type vars (the definition's), then ninputs input types */
} dp_ctor;

typedef enum dp_patkind { DP_PAT_WILD = 1, DP_PAT_VAR, DP_PAT_CTOR, DP_PAT_TUPLE } dp_patkind;

typedef struct dp_pattern {
  dp_obj h;            /* h.type = DP_OBJ_PATTERN, h.kind = dp_patkind */
  dp_span span;
  dp_var *var;         /* DP_PAT_VAR */
  dp_ctor *ctor;       /* DP_PAT_CTOR */
  uint32_t n;          /* CTOR / TUPLE sub-patterns */
  struct dp_pattern *sub[];
} dp_pattern;

typedef struct dp_clause {
  dp_pattern *pat;
  dp_expr *rhs;
} dp_clause;

typedef struct dp_match {
  dp_expr e;
  dp_expr *data;
  int complete;        /* 1: match, 0: match? */
  uint32_t n;
  dp_clause clauses[];
} dp_match;

typedef struct dp_ref_create { dp_expr e; dp_expr *value; } dp_ref_create;
typedef struct dp_ref_read { dp_expr e; dp_expr *ref; } dp_ref_read;
typedef struct dp_ref_write { dp_expr e; dp_expr *ref, *value; } dp_ref_write;

/* ---- constructors (new references; children retained) ---- */
dp_var *dp_var_new(const char *name, dp_type *annot, dp_vdev *vdev, dp_span span);
dp_global *dp_global_new(const char *name, dp_span span);
/* data: nbytes = product(shape) * dtype bytes, copied. */
dp_const *dp_const_new(dp_dtype dtype, uint32_t ndim, const int64_t *shape,
                       const void *data, dp_span span, dp_err **err);
/* attrs may be NULL (retained otherwise). */
dp_call *dp_call_new(dp_expr *fn, uint32_t nargs, dp_expr *const *args, dp_attrs *attrs,
                     dp_span span);
dp_func *dp_func_new(uint32_t nparams, dp_var *const *params, dp_expr *body, dp_type *ret,
                     dp_attrs *attrs, dp_vdev *vdev, dp_span span);
/* A function with type parameters (each a DP_TY_VAR, distinct; retained):
   dp_func_new is this with none. */
dp_func *dp_func_new_generic(uint32_t ntparams, dp_type *const *tparams, uint32_t nparams,
                             dp_var *const *params, dp_expr *body, dp_type *ret,
                             dp_attrs *attrs, dp_vdev *vdev, dp_span span);
dp_let *dp_let_new(dp_var *var, dp_expr *value, dp_expr *body, dp_span span);
dp_tuple *dp_tuple_new(uint32_t n, dp_expr *const *fields, dp_span span);
dp_proj *dp_proj_new(dp_expr *tuple, uint32_t index, dp_span span);
dp_if *dp_if_new(dp_expr *cond, dp_expr *then_, dp_expr *else_, dp_span span);
dp_match *dp_match_new(dp_expr *data, uint32_t n, const dp_clause *clauses, int complete,
                       dp_span span);
dp_ctor *dp_ctor_new(const char *name, const char *adt_name, uint32_t tag, uint32_t ntparams,
                     dp_type *const *tparams, uint32_t ninputs, dp_type *const *inputs,
                     dp_span span);
dp_ref_create *dp_ref_create_new(dp_expr *value, dp_span span);
dp_ref_read *dp_ref_read_new(dp_expr *ref, dp_span span);
dp_ref_write *dp_ref_write_new(dp_expr *ref, dp_expr *value, dp_span span);

dp_pattern *dp_pat_wild(dp_span span);
dp_pattern *dp_pat_var(dp_var *var, dp_span span);
dp_pattern *dp_pat_ctor(dp_ctor *ctor, uint32_t n, dp_pattern *const *sub, dp_span span);
dp_pattern *dp_pat_tuple(uint32_t n, dp_pattern *const *sub, dp_span span);
/* fn(ud, v) for each variable the pattern binds, in order, until fn returns
   non-zero (returned; -1 also on out of memory). */
int dp_pattern_vars(dp_pattern *root, int (*fn)(void *ud, dp_var *v), void *ud);

/* ---- uniform child access ---- */
uint32_t dp_expr_nchildren(const dp_expr *e);
dp_expr *dp_expr_child(const dp_expr *e, uint32_t i);
/* A node like e with its children replaced by kids (dp_expr_nchildren(e) of
   them, in the order above; LET and FUNC var slots must be DP_VAR). Returns
   e itself, retained, when every child is the same pointer. Span, attrs,
   annotations, a function's type parameters and (when children are
   unchanged) the checked type are kept. */
dp_expr *dp_expr_with_children(dp_expr *e, dp_expr *const *kids);

/* Set the checked type (retains t, releases the previous one; NULL clears).
   The one mutation of a node, for type inference. */
void dp_expr_set_type(dp_expr *e, dp_type *t);

/* Convenience: is e a call of the operator named `name`? */
int dp_is_op_call(const dp_expr *e, const char *name);

#endif
