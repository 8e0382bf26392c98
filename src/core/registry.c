/*
 * Registers each object type's free function with the object layer once.
 * Every file that defines an object type exports dp__<name>_free_fn.
 * (Weak while the core is being assembled: a missing type is skipped.)
 */
#include "internal.h"

__attribute__((weak)) void dp__ctx_free_fn(dp_obj *o, dp_worklist *wl);
__attribute__((weak)) void dp__target_free_fn(dp_obj *o, dp_worklist *wl);
__attribute__((weak)) void dp__vdev_free_fn(dp_obj *o, dp_worklist *wl);
__attribute__((weak)) void dp__config_free_fn(dp_obj *o, dp_worklist *wl);
__attribute__((weak)) void dp__type_free_fn(dp_obj *o, dp_worklist *wl);
__attribute__((weak)) void dp__expr_free_fn(dp_obj *o, dp_worklist *wl);
__attribute__((weak)) void dp__pattern_free_fn(dp_obj *o, dp_worklist *wl);
__attribute__((weak)) void dp__attrs_free_fn(dp_obj *o, dp_worklist *wl);
__attribute__((weak)) void dp__typedef_free_fn(dp_obj *o, dp_worklist *wl);
__attribute__((weak)) void dp__primfn_free_fn(dp_obj *o, dp_worklist *wl);
__attribute__((weak)) void dp__module_free_fn(dp_obj *o, dp_worklist *wl);

void dp__register_core_types(void) {
  static int done;
  if (done) return;
  done = 1;
  if (dp__ctx_free_fn) dp_register_free(DP_OBJ_CTX, dp__ctx_free_fn);
  if (dp__target_free_fn) dp_register_free(DP_OBJ_TARGET, dp__target_free_fn);
  if (dp__vdev_free_fn) dp_register_free(DP_OBJ_VDEV, dp__vdev_free_fn);
  if (dp__config_free_fn) dp_register_free(DP_OBJ_CONFIG, dp__config_free_fn);
  if (dp__type_free_fn) dp_register_free(DP_OBJ_TYPE, dp__type_free_fn);
  if (dp__expr_free_fn) dp_register_free(DP_OBJ_EXPR, dp__expr_free_fn);
  if (dp__pattern_free_fn) dp_register_free(DP_OBJ_PATTERN, dp__pattern_free_fn);
  if (dp__attrs_free_fn) dp_register_free(DP_OBJ_ATTRS, dp__attrs_free_fn);
  if (dp__typedef_free_fn) dp_register_free(DP_OBJ_TYPEDEF, dp__typedef_free_fn);
  if (dp__primfn_free_fn) dp_register_free(DP_OBJ_PRIMFN, dp__primfn_free_fn);
  if (dp__module_free_fn) dp_register_free(DP_OBJ_MODULE, dp__module_free_fn);
  /* DP_OBJ_DOMAINS registers itself from the planner (plan.h). */
}
