/*
 * Registers each object type's free function with the object layer once.
 * Every file that defines an object type exports dp__<name>_free_fn.
 */
#include "internal.h"

void dp__ctx_free_fn(dp_obj *o, dp_worklist *wl);
void dp__target_free_fn(dp_obj *o, dp_worklist *wl);
void dp__vdev_free_fn(dp_obj *o, dp_worklist *wl);
void dp__config_free_fn(dp_obj *o, dp_worklist *wl);
void dp__type_free_fn(dp_obj *o, dp_worklist *wl);
void dp__expr_free_fn(dp_obj *o, dp_worklist *wl);
void dp__pattern_free_fn(dp_obj *o, dp_worklist *wl);
void dp__attrs_free_fn(dp_obj *o, dp_worklist *wl);
void dp__typedef_free_fn(dp_obj *o, dp_worklist *wl);
void dp__primfn_free_fn(dp_obj *o, dp_worklist *wl);
void dp__module_free_fn(dp_obj *o, dp_worklist *wl);

void dp__register_core_types(void) {
  static int done;
  if (done) return;
  done = 1;
  dp_register_free(DP_OBJ_CTX, dp__ctx_free_fn);
  dp_register_free(DP_OBJ_TARGET, dp__target_free_fn);
  dp_register_free(DP_OBJ_VDEV, dp__vdev_free_fn);
  dp_register_free(DP_OBJ_CONFIG, dp__config_free_fn);
  dp_register_free(DP_OBJ_TYPE, dp__type_free_fn);
  dp_register_free(DP_OBJ_EXPR, dp__expr_free_fn);
  dp_register_free(DP_OBJ_PATTERN, dp__pattern_free_fn);
  dp_register_free(DP_OBJ_ATTRS, dp__attrs_free_fn);
  dp_register_free(DP_OBJ_TYPEDEF, dp__typedef_free_fn);
  dp_register_free(DP_OBJ_PRIMFN, dp__primfn_free_fn);
  dp_register_free(DP_OBJ_MODULE, dp__module_free_fn);
  /* DP_OBJ_DOMAINS registers itself from the planner (plan.h). */
}
