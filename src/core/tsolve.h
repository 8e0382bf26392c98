/*
 * The type solver used by inference (internal): solver type variables
 * (unknowns, distinct from the rigid type variables users write), their
 * bindings (union-find through a pointer map), unification and resolution.
 */
#ifndef DEVPLAN_TSOLVE_H
#define DEVPLAN_TSOLVE_H

#include "devplan/type.h"
#include "ptrmap.h"

typedef struct dp__tsolver {
  dp_ctx *ctx;
  dp__ptrmap vars;       /* solver var -> binding (retained) or NULL when unbound */
  dp_type **keep;        /* types kept alive until the solver goes (vars, instances) */
  uint32_t nkeep, capkeep;
  dp_type **bound;       /* the unknowns bound, in order (the trail inference's
                            pending list follows; it empties it) */
  uint32_t nbound, capbound;
  dp_type *blocker;      /* an unbound unknown the last resolution met, or NULL */
  int frozen;            /* bindings no longer change: resolutions are remembered */
  dp__ptrmap resolved;   /* frozen: type (retained) -> its resolution (retained;
                            low bit set: it holds an unbound unknown) */
} dp__tsolver;

void dp__ts_init(dp__tsolver *s, dp_ctx *ctx);
void dp__ts_free(dp__tsolver *s);
/* A fresh unknown (borrowed: owned by the solver); NULL on out of memory. */
dp_type *dp__ts_fresh(dp__tsolver *s);
/* Hands a new reference to the solver and returns it borrowed (NULL passes). */
dp_type *dp__ts_keep(dp__tsolver *s, dp_type *t);
int dp__ts_is_unknown(const dp__tsolver *s, const dp_type *t);
/* t with its top-level bindings followed (borrowed). */
dp_type *dp__ts_find(dp__tsolver *s, dp_type *t);
/* Unify a and b; on failure sets *err (a message without position). */
int dp__ts_unify(dp__tsolver *s, dp_type *a, dp_type *b, dp_err **err);
/* t with every bound unknown substituted (new reference); *complete is
   cleared when unbound unknowns remain (s->blocker is then the first met).
   NULL + *err on failure. */
/* No unknown will be bound from now on (the solving is over): resolution
   remembers each type it resolves, so resolving the types of n nested
   tuples (each holding the one before) costs n, not n^2. */
void dp__ts_freeze(dp__tsolver *s);
dp_type *dp__ts_resolve(dp__tsolver *s, dp_type *t, int *complete, dp_err **err);
/* t with the rigid variables from[i] replaced by to[i] (new reference):
   instantiates a polymorphic constructor or function type. */
dp_type *dp__ts_instantiate(dp__tsolver *s, dp_type *t, uint32_t n, dp_type *const *from,
                            dp_type *const *to, dp_err **err);
/* t with each hole (dp_type_hole: `_` inside an annotation) replaced by a
   fresh unknown (new reference); t itself when it has none. */
dp_type *dp__ts_fill_holes(dp__tsolver *s, dp_type *t, dp_err **err);

#endif
