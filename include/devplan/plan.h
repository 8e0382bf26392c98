/*
 * The device planner (PlanDevices), as separate phases (seed 002,
 * planner.md). Sketch: the planner's own files flesh this out.
 *
 *   phase 0  dp_plan_rewrite   normalise on_device / call_lowered forms,
 *                              and insert copies for conflicting demands
 *   phase 1  dp_plan_analyze   domains: union-find over first-order and
 *                              function domains
 *   phase 2  dp_plan_default   free on_device unification, then defaulting
 *   phase 3  dp_plan_capture   write the result back as annotations/copies
 */
#ifndef DEVPLAN_PLAN_H
#define DEVPLAN_PLAN_H

#include "module.h"

typedef struct dp_domains dp_domains; /* DP_OBJ_DOMAINS, reference counted */

dp_module *dp_plan_rewrite(dp_module *m, const dp_config *cfg, dp_err **err);
dp_domains *dp_plan_analyze(dp_module *m, const dp_config *cfg, dp_err **err);
int dp_plan_default(dp_domains *d, dp_err **err);
dp_module *dp_plan_capture(dp_domains *d, dp_err **err);
/* All phases in order. */
dp_module *dp_plan_devices(dp_module *m, const dp_config *cfg, dp_err **err);

#endif
