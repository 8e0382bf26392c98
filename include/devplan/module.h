/*
 * Modules: global functions in definition order, ADT type definitions and
 * lowered primitive function declarations (`primfn`).
 *
 * A module is immutable once built; passes make new modules that share the
 * unchanged functions. Build one with dp_module_new and the dp_module_add_*
 * functions, then hand it out.
 */
#ifndef DEVPLAN_MODULE_H
#define DEVPLAN_MODULE_H

#include "expr.h"

/* type List[A] { Cons(A, List[A]), Nil } */
typedef struct dp_typedef {
  dp_obj h;             /* DP_OBJ_TYPEDEF */
  dp_span span;
  char *name;
  uint32_t ntparams;
  dp_type **tparams;    /* type variables */
  uint32_t nctors;
  dp_ctor **ctors;      /* tag = index */
} dp_typedef;

/* One buffer of a primfn: its tensor type and memory scope ("" unconstrained). */
typedef struct dp_buffer {
  dp_type *type;
  char *scope;
} dp_buffer;

/* primfn @gem(T scope="a", T, T scope="b") -> T scope="a"; */
typedef struct dp_primfn {
  dp_obj h;             /* DP_OBJ_PRIMFN */
  dp_span span;
  char *name;
  uint32_t nargs;
  dp_buffer *args;
  dp_buffer result;
} dp_primfn;

typedef struct dp_defn {
  dp_global *global;
  dp_func *fn;
} dp_defn;

typedef struct dp_module {
  dp_obj h;             /* DP_OBJ_MODULE */
  dp_ctx *ctx;          /* retained */
  uint32_t nfuncs;
  dp_defn *funcs;       /* definition order */
  uint32_t ntypedefs;
  dp_typedef **typedefs;
  uint32_t nprims;
  dp_primfn **prims;
  struct dp__names *names; /* the index of the `@` names (module.c's own) */
  /* The functions' graphs as type inference last walked them all: nodes,
     child slots and the deepest path (a count of nodes). Hints, so that a
     later walk over a large module (the planner's numbering) sizes its
     arrays once instead of doubling them from a few entries; 0: not known.
     Adding or replacing a function clears them. */
  struct dp_module_sizes { uint32_t nodes, kids, depth; } sizes;
} dp_module;

dp_module *dp_module_new(dp_ctx *ctx);
/* Adds (retains) a function; a name defined twice is an error. */
int dp_module_add_func(dp_module *m, dp_global *g, dp_func *fn, dp_err **err);
int dp_module_add_typedef(dp_module *m, dp_typedef *td, dp_err **err);
int dp_module_add_primfn(dp_module *m, dp_primfn *pf, dp_err **err);
/* A copy of m sharing all its parts (to build a changed module from). */
dp_module *dp_module_copy(const dp_module *m);
/* Replace the function of an existing name (retains fn). */
int dp_module_set_func(dp_module *m, const char *name, dp_func *fn, dp_err **err);
int dp_module_set_primfn(dp_module *m, dp_primfn *pf, dp_err **err);

/* Lookups (borrowed; NULL when absent). */
dp_func *dp_module_func(const dp_module *m, const char *name);
dp_global *dp_module_global(const dp_module *m, const char *name);
dp_typedef *dp_module_typedef(const dp_module *m, const char *name);
dp_ctor *dp_module_ctor(const dp_module *m, const char *name);
dp_primfn *dp_module_primfn(const dp_module *m, const char *name);
/* The index in m->funcs of the function named name, or -1 (constant time). */
int dp_module_func_index(const dp_module *m, const char *name);

dp_typedef *dp_typedef_new(const char *name, uint32_t ntparams, dp_type *const *tparams,
                           uint32_t nctors, dp_ctor *const *ctors, dp_span span);
/* args: nargs buffers (types retained, scopes copied). */
dp_primfn *dp_primfn_new(const char *name, uint32_t nargs, const dp_buffer *args,
                         dp_buffer result, dp_span span);

#endif
