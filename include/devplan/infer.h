/*
 * Type inference over a whole module, as TVM's InferType: every expression
 * gets its checked type (dp_expr.type), including parameters and let
 * variables written without annotations (unification over types with type
 * variables; operator relations wait until their argument types are known).
 *
 * Details a caller may rely on:
 * - types are written only when inference succeeds; on error no node changes;
 * - a node whose type stays unknown (an unused, unannotated parameter) is an
 *   error naming it; unknowns nested inside a type stay as type variables
 *   named "?" (a lone `Nil` is List[?]), as TVM leaves them;
 * - operator nodes (DP_OP) get no type (each call is typed by the operator's
 *   relation); a constructor node gets its polymorphic type
 *   fn[A](A, List[A]) -> List[A], and each use is instantiated afresh; so
 *   does a function with type parameters (`def @id[A](%x: A) -> A`): its
 *   type is fn [A](A) -> A, and each call instantiates A afresh (inside its
 *   body A is rigid);
 * - on_device / device_copy (DP_OPF_IDENTITY) have exactly their argument's
 *   type; call_lowered(@prim, (args)) has the primfn's result buffer type;
 * - errors are DP_ERR_TYPE: "<what>: <why>" at the node's span (or its
 *   nearest enclosing node with one), e.g. "call of add `add(%x, %z)`:
 *   add: shapes ... do not broadcast".
 * Inference walks with explicit stacks: million-deep chains are fine.
 */
#ifndef DEVPLAN_INFER_H
#define DEVPLAN_INFER_H

#include "module.h"

/* Infers types for every function of m. Returns 0, or -1 with a type error
   that names the expression and its span. */
int dp_infer_module(dp_module *m, dp_err **err);
/* Infers one expression's types (free variables must be annotated or
   already typed); m (may be NULL) resolves globals and constructors. */
int dp_infer_expr(dp_module *m, dp_expr *e, dp_err **err);

#endif
