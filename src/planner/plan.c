/*
 * PlanDevices: the phases in order (plan.h). Each phase makes a new module
 * (or the domains) and drops the previous one, so an error in any phase
 * leaves nothing behind.
 */
#include "planner.h"

dp_module *dp_plan_devices(dp_module *m, const dp_config *cfg, dp_err **err) {
  dp_module *r = dp_plan_rewrite(m, cfg, err);
  if (!r) return NULL;
  dp_module *c = dp_plan_conflicts(r, cfg, err);
  dp_release(r);
  if (!c) return NULL;
  dp_domains *d = dp_plan_analyze(c, cfg, err);
  dp_release(c);
  if (!d) return NULL;
  dp_module *out = NULL;
  if (dp_plan_default(d, err) == 0) out = dp_plan_capture(d, err);
  dp_release(d);
  return out;
}
