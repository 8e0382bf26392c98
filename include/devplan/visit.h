/*
 * Traversals with an explicit stack: safe on 1,000,000-deep programs.
 *
 * Both visit every distinct node of a DAG once (sharing is kept), children
 * before parents in post order, in the child order of expr.h.
 */
#ifndef DEVPLAN_VISIT_H
#define DEVPLAN_VISIT_H

#include "expr.h"

/* Visitor callbacks. pre: called when a node is first reached; return 1 to
   visit its children, 0 to skip them (post is still called), -1 to stop.
   post: called after the children; return 0 to go on, -1 to stop.
   Either may be NULL. The walk returns 0, or -1 when a callback stopped it. */
typedef struct dp_visitor {
  int (*pre)(void *ud, dp_expr *e);
  int (*post)(void *ud, dp_expr *e);
  void *ud;
} dp_visitor;

int dp_visit(dp_expr *root, const dp_visitor *v);

/* Rewriting: children first; then `post` receives the original node and the
   node rebuilt with rewritten children (dp_expr_with_children; the same
   pointer when nothing below changed), and returns the replacement as a new
   reference (return dp_retain(rebuilt) to keep it), or NULL with *err set
   to stop. A node shared in the input is rewritten once and stays shared.
   `pre` (may be NULL) may return a replacement for a node before its
   children are visited (new reference; the node is then not descended), or
   NULL to descend normally; set *err and return NULL to stop. */
typedef struct dp_rewriter {
  dp_expr *(*pre)(void *ud, dp_expr *orig, dp_err **err);
  dp_expr *(*post)(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err);
  void *ud;
} dp_rewriter;

/* Match clause patterns are not children, but their variables follow the
   rewrite: when a pattern variable's uses were rewritten to another
   variable, the rebuilt match binds that variable (other patterns are kept).
   Returns a new reference to the rewritten root, or NULL + error. */
dp_expr *dp_rewrite(dp_expr *root, const dp_rewriter *rw, dp_err **err);

/* Free variables of e in first-occurrence order (borrowed pointers in a
   malloc'd array; *n set), or NULL on out of memory. */
dp_var **dp_free_vars(dp_expr *e, uint32_t *n);

/* Scopes. A let binds its variable in its body (and in its value when that
   is a function literal: a recursive let), a function its parameters in
   its body, a match clause its pattern's variables in its right-hand side.
   A node shared by several places is evaluated once, at the innermost
   scope holding all its uses (where the printer binds it), and reads its
   variables there. dp_check_scopes finds every variable that two nodes
   inside e bind, and every read of a variable that one node inside e
   binds made outside its scope (variables nothing inside e binds are not
   checked): lists the first `max` in out (may be NULL) and returns how
   many there are, or -1 on out of memory. Pointers are borrowed from e.
   Any depth. */
typedef struct dp_scope_error {
  dp_var *var;      /* the variable */
  dp_expr *binder;  /* the let, function or match that binds it (first) */
  dp_expr *user;    /* the expression that reads it out of scope (twice: the second binder) */
  int twice;        /* bound twice */
} dp_scope_error;
int dp_check_scopes(dp_expr *e, dp_scope_error *out, uint32_t max);
/* The error for one of them: "variable %x is used outside its scope: ..."
   at the reader's position (else the binder's), a note at the binder. */
dp_err *dp_scope_error_new(dp_ctx *ctx, const dp_scope_error *s, dp_errcode code);

#endif
