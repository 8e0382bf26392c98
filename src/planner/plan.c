/*
 * PlanDevices: the phases in order (plan.h, planner.md).
 *
 * The module is numbered once (index.c); phases 0 and 0b hand the same
 * index on when they change nothing (the usual case), and a new module's
 * when they insert something. Analysis takes the index into the domains,
 * which defaulting completes and capture writes back. Every phase drops
 * what it was given on an error, so nothing is left behind.
 */
#include <stdlib.h>
#include "planner.h"
#include "latency.h"
#include "devplan/print.h"

dp_module *dp_plan_devices(dp_module *m, const dp_config *cfg, dp_err **err) {
  dp__index *ix = dp__index_new(m, cfg, err);   /* every node numbered, once */
  if (ix) ix = dp__rewrite(ix, err);           /* phase 0: fixed annotations */
  if (ix) ix = dp__conflicts(ix, DP__0B_ANYWHERE, err); /* phase 0b: conflicting demands */
  if (!ix) return NULL;
  dp_domains *d = dp__analyze(ix, err);        /* phase 1: the domains */
  if (!d) return NULL;
  dp_module *out = NULL;
  if (dp_plan_default(d, err) == 0)            /* phase 2: defaults */
    out = dp_plan_capture(d, err);             /* phase 3: the planned module */
  dp_release(d);
  return out;
}

void dp_conflicts_clear(dp_conflicts *c) {
  for (uint32_t i = 0; i < c->n; i++) dp_err_free(c->v[i]);
  free(c->v);
  *c = (dp_conflicts){0};
}

/* The phases with options (plan.h): where devplan goes further than TVM.
   Placement by cost reads the module without TVM's phase 0b: the copies 0b
   would insert are what it decides (its own 0b only gives the readers that
   share a plain on_device's result a place for a copy each). */
dp_domains *dp_plan_domains(dp_module *m, const dp_config *cfg, const dp_plan_opts *o,
                            dp_conflicts *all, dp_err **err) {
  static const dp_plan_opts tvm = {0};
  if (!o) o = &tvm;
  if (all) *all = (dp_conflicts){0};
  int search = dp__placed_by_search(m, cfg, o, err); /* latency.c: latency, soft annotations, budgets */
  if (search) return search < 0 ? NULL : dp__search_domains(m, cfg, o, all, err);
  dp__index *ix = dp__index_new(m, cfg, err);
  if (ix) ix = dp__rewrite(ix, err);
  if (ix && o->placement != DP_PLACE_TVM) ix = dp__conflicts(ix, DP__0B_RELAX, err);
  else if (ix && !o->strict) ix = dp__conflicts(ix, o->tvm_conflicts ? DP__0B_TVM : DP__0B_ANYWHERE, err);
  if (!ix) return NULL;
  ix->relax = o->placement != DP_PLACE_TVM;
  ix->collect = o->all_conflicts != 0;
  dp_domains *d = dp__analyze(ix, err);
  if (!d) return NULL;
  int rc = 0;
  if (d->nconf) rc = dp__conflict_errors(d, all, err);
  else if (o->placement != DP_PLACE_TVM) rc = dp__place(d, o->hooks, err);
  if (rc == 0) rc = dp_plan_default(d, err);
  if (rc < 0) {
    dp_release(d);
    return NULL;
  }
  return d;
}

/* Placement by cost decides devices; where the module names memory scopes
   TVM's rules then decide them: its plan is planned once more by TVM's
   rules, which keep every copy it made between devices and fill in the
   memory scopes left open (a copy whose two ends they join goes). To the
   optimiser a device with its scope open and the same device in a scope
   are two devices, to TVM's rules one: without this last step a plan
   could change when planned again (generated programs 52, 104, 145). */
static dp_module *scopes_by_tvm(dp_module *planned, const dp_config *cfg, dp_err **err) {
  dp_module *out = planned ? dp_plan_devices(planned, cfg, err) : NULL;
  dp_release(planned);
  return out;
}

/* One round: the phases with options, capture, and on a module with
   memory scopes TVM's rules' scopes. */
static dp_module *plan_round(dp_module *m, const dp_config *cfg, const dp_plan_opts *o,
                             dp_conflicts *all, int *scoped, dp_err **err) {
  dp_domains *d = dp_plan_domains(m, cfg, o, all, err);
  dp_module *out = d ? dp_plan_capture(d, err) : NULL;
  *scoped = out && o && o->placement != DP_PLACE_TVM && dp__dev_any_scope(d->dev);
  dp_release(d);
  return *scoped ? scopes_by_tvm(out, cfg, err) : out;
}

dp_module *dp_plan_devices_opts(dp_module *m, const dp_config *cfg, const dp_plan_opts *o,
                                dp_conflicts *all, dp_err **err) {
  if (all) *all = (dp_conflicts){0};
  int search = dp__placed_by_search(m, cfg, o, err); /* latency.c: latency, soft annotations, budgets */
  if (search) return search < 0 ? NULL : dp__plan_search(m, cfg, o, all, err);
  int scoped;
  dp_module *out = plan_round(m, cfg, o, all, &scoped, err);
  /* With memory scopes the optimiser may also meet that plan differently
     (a copy TVM's rules wrote out is a new place for one, a primfn
     argument's scope is now written): it is planned again until it no
     longer changes, so that placement by cost plans its own output to
     itself. Generated programs settle in one more round; a few more are
     allowed, and the last plan (valid, verified like any) stands. */
  for (int round = 0; out && scoped && round < 4; round++) {
    dp_module *again = plan_round(out, cfg, o, NULL, &scoped, err);
    if (!again) {
      dp_release(out);
      return NULL;
    }
    int same = dp_module_equal(again, out, NULL);
    dp_release(out);
    out = again;
    if (same) break;
  }
  return out;
}

/* The phases one by one (plan.h), each on a module of its own. */
static dp_module *one(dp_module *m, const dp_config *cfg, dp__index *(*phase)(dp__index *, dp_err **),
                      dp_err **err) {
  dp__index *ix = dp__index_new(m, cfg, err);
  if (ix) ix = phase(ix, err);
  dp_module *out = ix ? dp_retain(ix->mod) : NULL;
  dp__index_free(ix);
  return out;
}

dp_module *dp_plan_rewrite(dp_module *m, const dp_config *cfg, dp_err **err) {
  return one(m, cfg, dp__rewrite, err);
}

static dp__index *conflicts(dp__index *ix, dp_err **err) {
  return dp__conflicts(ix, DP__0B_ANYWHERE, err);
}

dp_module *dp_plan_conflicts(dp_module *m, const dp_config *cfg, dp_err **err) {
  return one(m, cfg, conflicts, err);
}

dp_domains *dp_plan_analyze(dp_module *m, const dp_config *cfg, dp_err **err) {
  dp__index *ix = dp__index_new(m, cfg, err);
  return ix ? dp__analyze(ix, err) : NULL;
}
