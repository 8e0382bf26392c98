/*
 * Phase 2, defaulting (seed 002 phase 2): first the free on_device calls
 * (neither body nor result constrained: "a copy is allowed here") try to
 * put their body and result on one device, so defaulting does not choose
 * devices that only cause copies; a failed try changes nothing. Then
 * TVM's rules fix what is still free, in definition order and pre order:
 * a function's result takes the configuration's default device and its
 * parameters the result's; a call's callee domain likewise (for operators:
 * the call's result, then its arguments); a let-bound variable takes the
 * device of the whole let.
 */
#include "planner.h"

typedef struct dctx {
  dp_domains *d;
  uint32_t dflt;
  dp_err *err;
} dctx;

static int free_on_device_post(void *ud, dp_expr *e) {
  dctx *c = ud;
  dp_ondev p;
  if (!dp__on_device_props(&c->d->ops, e, &p) || p.cbody || p.cresult) return 0;
  int rc = dp__unify(c->d, dp__dom_of(c->d, e), dp__dom_of(c->d, p.body), R_FREE_ON_DEVICE, e, 1,
                     &c->err);
  return rc < 0 ? -1 : 0;
}

static int skip_primitive(void *ud, dp_expr *e) {
  (void)ud;
  return !(e->h.kind == DP_FUNC && dp__is_primitive((dp_func *)e));
}

static int default_call(dctx *c, dp_call *call) {
  dp_domains *d = c->d;
  uint32_t f = dp__callee_dom(d, call);
  if (f != DP_NONE_ID)
    return dp__set_result_default_then_params(d, f, c->dflt, R_DEF_CALL, &call->e, &c->err);
  /* operators and constructors: params are the arguments' domains */
  if (dp__set_default(d, dp__dom_of(d, &call->e), c->dflt, R_DEF_CALL, &call->e, &c->err) < 0)
    return -1;
  uint32_t rv = d->nodes[dp__dom_result(d, dp__dom_of(d, &call->e))].vdev;
  for (uint32_t i = 0; i < call->nargs; i++)
    if (dp__set_default(d, dp__dom_of(d, call->args[i]), rv, R_DEF_CALL, &call->e, &c->err) < 0)
      return -1;
  return 0;
}

static int default_pre(void *ud, dp_expr *e) {
  dctx *c = ud;
  dp_domains *d = c->d;
  int rc = 0;
  switch (e->h.kind) {
  case DP_FUNC:
    if (dp__is_primitive((dp_func *)e)) return 0;
    rc = dp__set_result_default_then_params(d, dp__dom_of(d, e), c->dflt, R_DEF_RESULT, e, &c->err);
    break;
  case DP_CALL: rc = default_call(c, (dp_call *)e); break;
  case DP_LET: {
    dp_let *l = (dp_let *)e;
    uint32_t lv = d->nodes[dp__dom_result(d, dp__dom_of(d, e))].vdev;
    rc = dp__set_default(d, dp__dom_of(d, &l->var->e), lv ? lv : c->dflt, R_DEF_LET, e, &c->err);
    break;
  }
  default: break;
  }
  if (rc == 0 && d->oom) {
    c->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    rc = -1;
  }
  return rc < 0 ? -1 : 1;
}

int dp_plan_default(dp_domains *d, dp_err **err) {
  dctx c = {d, dp__vdev_index(d, d->cfg->default_vdev), NULL};
  dp_module *m = d->mod;
  dp_visitor fv = {skip_primitive, free_on_device_post, &c};
  for (uint32_t i = 0; i < m->nfuncs && !c.err; i++)
    if (dp_visit(&m->funcs[i].fn->e, &fv) < 0 && !c.err)
      c.err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  dp_visitor dv = {default_pre, NULL, &c};
  for (uint32_t i = 0; i < m->nfuncs && !c.err; i++)
    if (dp_visit(&m->funcs[i].fn->e, &dv) < 0 && !c.err)
      c.err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  if (c.err) {
    dp_err_set(err, c.err);
    return -1;
  }
  return 0;
}
