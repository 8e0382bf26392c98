/*
 * Phase 2, defaulting (seed 002 phase 2): first the free on_device calls
 * (neither body nor result constrained: "a copy is allowed here") try to
 * put their body and result on one device, so defaulting does not choose
 * devices that only cause copies; a failed try changes nothing. Then
 * TVM's rules fix what is still free, function by function and in pre order:
 * a function's result takes the configuration's default device and its
 * parameters the result's; a call's callee domain likewise (for operators:
 * the call's result, then its arguments); a let-bound variable takes the
 * device of the whole let. Functions are visited callers first, then by
 * name (order.c), not in definition order: the same program gives the same
 * plan whatever the order of its definitions.
 */
#include "planner.h"

typedef struct dctx {
  dp_domains *d;
  uint32_t dflt;
  dp_err *err;
} dctx;

/* Free on_device calls, in post order. */
static int free_on_device(dctx *c, uint32_t id) {
  dp_ondev p;
  dp_domains *d = c->d;
  if (!dp__on_device_props(&d->ops, d->flat.x[id], &p) || p.cbody || p.cresult) return 0;
  int rc = dp__unify(d, d->flat.dom[id], dp__fkdom(d, id, 1), R_FREE_ON_DEVICE, d->flat.x[id], 1,
                     &c->err);
  return rc < 0 ? -1 : 0;
}

static int default_call(dctx *c, uint32_t id, dp_call *call) {
  dp_domains *d = c->d;
  uint32_t f = dp__fcallee_dom(d, id);
  if (f != DP_NONE_ID)
    return dp__set_result_default_then_params(d, f, c->dflt, R_DEF_CALL, &call->e, &c->err);
  /* operators and constructors: params are the arguments' domains */
  uint32_t me = d->flat.dom[id];
  if (dp__set_default(d, me, c->dflt, R_DEF_CALL, &call->e, &c->err) < 0) return -1;
  uint32_t rv = dp__dom_source(d, me);
  for (uint32_t i = 0; i < call->nargs; i++)
    if (dp__set_default(d, dp__fkdom(d, id, 1 + i), rv, R_DEF_CALL, &call->e, &c->err) < 0)
      return -1;
  return 0;
}

/* TVM's defaulting rules for one node, in pre order. */
static int default_node(dctx *c, uint32_t id) {
  dp_domains *d = c->d;
  dp_expr *e = d->flat.x[id];
  int rc = 0;
  switch (e->h.kind) {
  case DP_FUNC:
    if (dp__is_primitive((dp_func *)e)) return 0;
    rc = dp__set_result_default_then_params(d, d->flat.dom[id], c->dflt, R_DEF_RESULT, e, &c->err);
    break;
  case DP_CALL: rc = default_call(c, id, (dp_call *)e); break;
  case DP_LET: {
    uint32_t lv = dp__dom_source(d, d->flat.dom[id]);
    rc = dp__set_default(d, dp__fkdom(d, id, 0), lv ? lv : c->dflt, R_DEF_LET, e, &c->err);
    break;
  }
  default: break;
  }
  if (rc == 0 && d->oom) {
    c->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    rc = -1;
  }
  return rc < 0 ? -1 : 0;
}

/* The flat index lists each function's nodes in pre order (ids) and post
   order (post), each function in one range of both. Functions are visited
   in d->order (order.c: callers first, then by name), so that the plan does
   not depend on the order of the definitions. Analysis flagged the nodes
   each loop acts on (FL_*), so the loops read the flags, not every node of
   the module again. */
int dp_plan_default(dp_domains *d, dp_err **err) {
  dctx c = {d, dp__vdev_index(d, d->cfg->default_vdev), NULL};
  const dp_flat *f = &d->flat;
  const uint8_t *flag = f->flag;
  if (dp__plan_order(d) < 0) c.err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  for (uint32_t k = 0; k < f->nfn && !c.err; k++) {
    uint32_t fn = dp__fn_at(d, k);
    for (uint32_t j = f->fnpost[fn]; j < f->fnpost[fn + 1] && !c.err; j++)
      if ((flag[f->post[j]] & FL_FREE_ONDEV) && free_on_device(&c, f->post[j]) < 0 && !c.err)
        c.err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  }
  /* A rule that takes a default from a device (parameters from their
     function's result, arguments from their operator call's, a let variable
     from its let's) reads it as it is then; a later rule may still fill in
     fields of it (a memory scope, an id). Planning the output again would
     read the filled-in device, so the rules run again until nothing more is
     filled in: the plan is then a fixed point (idempotent). A pass only
     fills unconstrained fields, so this ends; most modules need one pass. */
  d->repass = 1;
  for (int pass = 0; d->repass && pass < 8 && !c.err; pass++) {
    d->repass = 0;
    for (uint32_t k = 0; k < f->nfn && !c.err; k++) {
      uint32_t fn = dp__fn_at(d, k);
      for (uint32_t id = f->fnid[fn]; id < f->fnid[fn + 1] && !c.err; id++)
        if ((flag[id] & FL_DEFAULTS) && default_node(&c, id) < 0 && !c.err)
          c.err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    }
  }
  if (c.err) {
    dp_err_set(err, c.err);
    return -1;
  }
  return 0;
}
