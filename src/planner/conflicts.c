/*
 * Phase 0b, conflicting demands (TVM 2023; planner.md "Conflicting demands
 * on values nobody annotated"). Placeholder pass-through until the step
 * lands: returns the module unchanged.
 */
#include "planner.h"

dp_module *dp_plan_conflicts(dp_module *m, const dp_config *cfg, dp_err **err) {
  (void)cfg;
  (void)err;
  return dp_retain(m);
}
