/*
 * PlanDevices: the phases in order (plan.h). Each phase makes a new module
 * (or the domains) and drops the previous one, so an error in any phase
 * leaves nothing behind.
 *
 * Phase 0 mostly makes let values and function bodies that are on_device
 * calls fixed, which rebuilds the whole spine above each of them (a let
 * chain: every let). So the pass first runs without it, analysis treating
 * those calls as fixed (dp__plan_analyze_fixed); where phase 0 would do
 * more, or anything fails (so that errors read exactly as phase 0's module
 * gives them), the phases run again in order.
 */
#include "planner.h"

static dp_module *from_domains(dp_domains *d, dp_err **err) {
  dp_module *out = NULL;
  if (dp_plan_default(d, err) == 0) out = dp_plan_capture(d, err);
  dp_release(d);
  return out;
}

/* Without phase 0's module; NULL (an error or not) when it is needed. */
static dp_module *without_rewrite(dp_module *m, const dp_config *cfg, dp_err **err) {
  struct dp_sizes sz;
  dp_module *c = dp__plan_conflicts_sized(m, cfg, &sz, err);
  if (!c) return NULL;
  dp_domains *d = dp__plan_analyze_fixed(c, cfg, &sz, err);
  dp_release(c);
  return d ? from_domains(d, err) : NULL;
}

dp_module *dp_plan_devices(dp_module *m, const dp_config *cfg, dp_err **err) {
  dp_err *e = NULL;
  dp_module *fast = without_rewrite(m, cfg, &e);
  if (fast) return fast;
  dp_err_free(e);
  dp_module *r = dp_plan_rewrite(m, cfg, err);
  if (!r) return NULL;
  dp_module *c = dp_plan_conflicts(r, cfg, err);
  dp_release(r);
  if (!c) return NULL;
  dp_domains *d = dp_plan_analyze(c, cfg, err);
  dp_release(c);
  return d ? from_domains(d, err) : NULL;
}
