/*
 * The public face of the domains (plan.h): lookups, unification,
 * constraints and defaults by expression, for scripts that run between
 * analysis and capture, and the walk that lists every expression's device.
 */
#include <stdlib.h>
#include "planner.h"

dp_module *dp_domains_module(const dp_domains *d) { return d->mod; }
const dp_config *dp_domains_config(const dp_domains *d) { return d->cfg; }

int dp_domains_has(const dp_domains *d, const dp_expr *e) {
  if (!e) return 0;
  /* analysis keeps unshared nodes in its flat index only; lookups by
     expression need them all in the map */
  if (dp__domains_full_map((dp_domains *)d) < 0) return 0;
  if (e->h.kind == DP_GLOBAL) return dp_module_func(d->mod, ((const dp_global *)e)->name) != NULL ||
                                     dp_module_primfn(d->mod, ((const dp_global *)e)->name) != NULL;
  struct dp_pslot *s = dp__pmap_get(&d->map, (uintptr_t)e);
  return s && s->val != DP_NONE_ID;
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

dp_vdev *dp_domains_lookup(dp_domains *d, dp_expr *e, dp_err **err) {
  dp_ondev p;
  if (!dp_domains_has(d, e) && dp__on_device_props(&d->ops, e, &p)) e = p.body;
  if (!known(d, e, err)) return NULL;
  return dp_retain(d->vdevs[d->nodes[dp__dom_result(d, dp__dom_of(d, e))].vdev]);
}

int dp_domains_unify(dp_domains *d, dp_expr *a, dp_expr *b, dp_err **err) {
  if (!known(d, a, err) || !known(d, b, err)) return -1;
  if (dp__unify(d, dp__dom_of(d, a), dp__dom_of(d, b), R_USER_UNIFY, a, 0, err) < 0) return -1;
  return oom(d, err);
}

int dp_domains_constrain(dp_domains *d, dp_expr *e, dp_vdev *vd, dp_err **err) {
  if (!known(d, e, err)) return -1;
  uint32_t v = dp__canon_index(d, vd, err);
  if (v == DP_NONE_ID) return -1;
  uint32_t k = dp__dom_first(d, v, R_USER_CONSTRAIN, e);
  if (dp__unify(d, dp__dom_result(d, dp__dom_of(d, e)), k, R_USER_CONSTRAIN, e, 0, err) < 0) return -1;
  return oom(d, err);
}

int dp_domains_set_default(dp_domains *d, dp_expr *e, dp_vdev *vd, dp_err **err) {
  if (!known(d, e, err)) return -1;
  uint32_t v = dp__canon_index(d, vd, err);
  if (v == DP_NONE_ID) return -1;
  if (dp__set_default(d, dp__dom_of(d, e), v, R_USER_DEFAULT, e, err) < 0) return -1;
  return oom(d, err);
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
    dp_vdev *v = c->d->vdevs[c->d->nodes[dp__dom_result(c->d, dp__dom_of(c->d, e))].vdev];
    c->rc = c->fn(c->ud, c->global, e, v);
    if (c->rc) return -1;
  }
  return !(e->h.kind == DP_FUNC && dp__is_primitive((dp_func *)e));
}

int dp_domains_each(dp_domains *d, dp_vdev_fn fn, void *ud, dp_err **err) {
  ectx c = {d, NULL, fn, ud, 0};
  dp_visitor v = {each_pre, NULL, &c};
  for (uint32_t i = 0; i < d->mod->nfuncs && !c.rc; i++) {
    c.global = d->mod->funcs[i].global->name;
    if (dp_visit(&d->mod->funcs[i].fn->e, &v) < 0 && !c.rc) {
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return -1;
    }
  }
  return c.rc;
}
