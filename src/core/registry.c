/*
 * Object types: what each is called and how one is freed.
 *
 * The core's own types have fixed ids (dp_objtype) and are in the table
 * from the start, so an object can be released before any context is
 * made. A layer above the core (the planner's state) registers its types
 * with dp_objtype_register; the core never names them.
 */
#include "internal.h"

dp__objtype dp__objtypes[DP__OBJTYPE_MAX] = {
  [DP_OBJ_CTX] = {"context", dp__ctx_free_fn},
  [DP_OBJ_TARGET] = {"Target", dp__target_free_fn},
  [DP_OBJ_VDEV] = {"VirtualDevice", dp__vdev_free_fn},
  [DP_OBJ_CONFIG] = {"CompilationConfig", dp__config_free_fn},
  [DP_OBJ_TYPE] = {"Type", dp__type_free_fn},
  [DP_OBJ_EXPR] = {"Expr", dp__expr_free_fn},
  [DP_OBJ_PATTERN] = {"Pattern", dp__pattern_free_fn},
  [DP_OBJ_ATTRS] = {"Attrs", dp__attrs_free_fn},
  [DP_OBJ_TYPEDEF] = {"TypeDef", dp__typedef_free_fn},
  [DP_OBJ_PRIMFN] = {"PrimFn", dp__primfn_free_fn},
  [DP_OBJ_MODULE] = {"IRModule", dp__module_free_fn},
};

static int ntypes = DP_OBJ__CORE_END;

int dp_objtype_register(const char *name, dp_free_fn free_fn) {
  if (ntypes == DP__OBJTYPE_MAX) return 0;
  dp__objtypes[ntypes] = (dp__objtype){name, free_fn};
  return ntypes++;
}

const char *dp_objtype_name(int type) {
  return type > 0 && type < ntypes ? dp__objtypes[type].name : NULL;
}
