/*
 * The public face of the domains (plan.h): lookups, unification,
 * constraints and defaults by expression, for scripts that run between
 * analysis and capture, and the walk that lists every expression's device.
 * Each change is logged before it is applied, so that explain.c can replay
 * it (dp__domains_apply serves both); a conflict is worded by explain.c.
 */
#include <stdlib.h>
#include "planner.h"

dp_module *dp_domains_module(const dp_domains *d) { return d->ix->mod; }
const dp_config *dp_domains_config(const dp_domains *d) { return d->dev->cfg; }

int dp_domains_has(const dp_domains *d, const dp_expr *e) {
  if (!e) return 0;
  const dp_module *m = d->ix->mod;
  if (e->h.kind == DP_GLOBAL) return dp_module_func(m, ((const dp_global *)e)->name) != NULL ||
                                     dp_module_primfn(m, ((const dp_global *)e)->name) != NULL;
  if (dp__index_id(d->ix, e) != DP__NONE_ID) return 1;
  return dp__ptrmap_find(&d->extra, e) != NULL;
}

static int known(dp_domains *d, dp_expr *e, dp_err **err) {
  if (dp_domains_has(d, e)) return 1;
  char *w = dp__describe(d->ctx, e);
  dp_err_set(err, dp_err_at(d->ctx, DP_ERR_VALUE, e->span,
                            "%s is not an expression of the analysed module", w));
  free(w);
  return 0;
}

static int oom(dp_domains *d, dp_err **err) {
  if (!d->oom) return 0;
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return -1;
}

/* The result of a domains operation (0, 1: a conflict, -1) as 0 or -1 + error. */
static int done(dp_domains *d, int rc, dp_err **err) {
  if (rc > 0) dp_err_set(err, dp__conflict_error(d));
  return rc ? -1 : oom(d, err);
}

int dp__domains_apply(dp_domains *d, const dp__op_log *op, dp_err **err) {
  switch (op->op) {
  case LOG_DEFAULT: return dp_plan_default(d, err);
  case LOG_UNIFY: return dp_domains_unify(d, op->a, op->b, err);
  case LOG_CONSTRAIN: {
    uint32_t k = dp__dom_first(d, op->vdev, R_USER_CONSTRAIN, op->a);
    return done(d, dp__unify(d, dp__dom_result(d, dp__dom_of(d, op->a)), k, R_USER_CONSTRAIN, op->a, err),
                err);
  }
  case LOG_SET_DEFAULT:
    return done(d, dp__set_default(d, dp__dom_of(d, op->a), op->vdev, R_USER_DEFAULT, op->a, err), err);
  case LOG_PLACE: return dp__place_replay(d, err);
  default: return 0;
  }
}

/* Log op, apply it; a failed one (undone) leaves the log as it was. */
static int logged(dp_domains *d, dp__op_log op, dp_err **err) {
  uint32_t n = d->nlog;
  dp__domains_log(d, op.op, op.rule, op.a, op.b, op.vdev);
  int rc = dp__domains_apply(d, &op, err);
  if (rc < 0) d->nlog = n;
  return rc;
}

dp_vdev *dp_domains_lookup(dp_domains *d, dp_expr *e, dp_err **err) {
  dp__ondev p;
  if (!dp_domains_has(d, e) && dp__on_device_props(&d->ix->ops, e, &p)) e = p.body;
  if (!known(d, e, err)) return NULL;
  return dp_retain(d->dev->v[dp__dom_dev(d, dp__dom_of(d, e))]);
}

int dp_domains_unify(dp_domains *d, dp_expr *a, dp_expr *b, dp_err **err) {
  if (!known(d, a, err) || !known(d, b, err)) return -1;
  uint32_t n = d->nlog;
  dp__domains_log(d, LOG_UNIFY, R_USER_UNIFY, a, b, 0);
  if (done(d, dp__unify(d, dp__dom_of(d, a), dp__dom_of(d, b), R_USER_UNIFY, a, err), err) < 0) {
    d->nlog = n; /* undone */
    return -1;
  }
  return 0;
}

int dp_domains_constrain(dp_domains *d, dp_expr *e, dp_vdev *vd, dp_err **err) {
  if (!known(d, e, err)) return -1;
  uint32_t v = dp__dev_canon(d->dev, vd, err);
  if (v == DP__NONE_ID) return -1;
  return logged(d, (dp__op_log){LOG_CONSTRAIN, R_USER_CONSTRAIN, e, NULL, v}, err);
}

int dp_domains_set_default(dp_domains *d, dp_expr *e, dp_vdev *vd, dp_err **err) {
  if (!known(d, e, err)) return -1;
  uint32_t v = dp__dev_canon(d->dev, vd, err);
  if (v == DP__NONE_ID) return -1;
  return logged(d, (dp__op_log){LOG_SET_DEFAULT, R_USER_DEFAULT, e, NULL, v}, err);
}

int dp_domains_fully_constrained(dp_domains *d, dp_expr *e) {
  return dp_domains_has(d, e) && dp__dom_fully_constrained(d, dp__dom_of(d, e));
}

typedef struct ectx {
  dp_domains *d;
  const char *global;
  dp_vdev_fn fn;
  void *ud;
  int rc;
} ectx;

static int each_pre(void *ud, dp_expr *e) {
  ectx *c = ud;
  if (e->h.kind == DP_OP || e->h.kind == DP_CTOR) return 1;
  if (dp_domains_has(c->d, e)) {
    dp_vdev *v = c->d->dev->v[dp__dom_dev(c->d, dp__dom_of(c->d, e))];
    c->rc = c->fn(c->ud, c->global, e, v);
    if (c->rc) return -1;
  }
  return !(e->h.kind == DP_FUNC && dp__is_primitive((dp_func *)e));
}

int dp_domains_each(dp_domains *d, dp_vdev_fn fn, void *ud, dp_err **err) {
  ectx c = {d, NULL, fn, ud, 0};
  dp_visitor v = {each_pre, NULL, &c};
  const dp_module *m = d->ix->mod;
  for (uint32_t i = 0; i < m->nfuncs && !c.rc; i++) {
    c.global = m->funcs[i].global->name;
    if (dp_visit(&m->funcs[i].fn->e, &v) < 0 && !c.rc) {
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return -1;
    }
  }
  return c.rc;
}
