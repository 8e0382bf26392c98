/*
 * Type inference over a whole module, as TVM's InferType: every expression
 * gets its checked type (dp_expr.type), including parameters and let
 * variables written without annotations (unification over types with type
 * variables; operator relations wait until their argument types are known).
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
