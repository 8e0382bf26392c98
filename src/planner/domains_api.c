/*
 * The planner's state between analysis and capture (plan.h's dp_domains)
 * and its public face: lookups, unification, constraints and defaults by
 * expression, for scripts that run between analysis and capture, the walk
 * that lists every expression's device, and placement by cost's decisions.
 *
 * The state is the domains (the union-find and the devices, domains.c)
 * and, beside them, what the layers above keep: the log of what changed
 * them after analysis (replay.c), so that explain.c can replay it, and
 * placement by cost's decisions (place.c's own state, freed by place.c).
 * Each change is logged before it is applied; a conflict is worded by
 * explain.c, the layer above the phases.
 */
#include <stdlib.h>
#include "planner.h"

static void state_free(dp_obj *o, dp_worklist *wl) {
  (void)wl;
  dp_domains *s = (dp_domains *)o;
  dp__index *ix = s->uf.ix;
  dp__domains_clear(&s->uf);
  dp__index_free(ix);
  dp__log_free(&s->log);
  dp__place_free(s->place);
  free(s);
}

int dp_domains_objtype(void) {
  static int type;
  if (!type) type = dp_objtype_register("Domains", state_free);
  return type;
}

dp_domains *dp__state_new(dp__index *ix, dp_err **err) {
  dp_domains *s = dp_calloc(1, sizeof *s);
  if (!s) {
    dp__index_free(ix);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  s->h.rc = 1;
  s->h.type = dp_domains_objtype();
  if (dp__domains_init(&s->uf, ix, 0, err) < 0) {
    dp_release(s);
    return NULL;
  }
  return s;
}

int dp__state_apply(dp_domains *s, dp__op_log op, dp_err **err) {
  uint32_t n = s->log.n;
  if (dp__log_add(&s->log, op) < 0) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  int rc = dp__log_apply(&s->uf, &op, s->place, err);
  if (rc > 0) dp_err_set(err, dp__conflict_error(s));
  if (rc == 0 && s->uf.oom) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    rc = -1;
  }
  if (rc) s->log.n = n; /* undone: the log as it was */
  return rc ? -1 : 0;
}

dp_module *dp_domains_module(const dp_domains *s) { return s->uf.ix->mod; }
const dp_config *dp_domains_config(const dp_domains *s) { return s->uf.dev->cfg; }

int dp_domains_has(const dp_domains *s, const dp_expr *e) { return dp__dom_has(&s->uf, e); }

static int known(dp_domains *s, dp_expr *e, dp_err **err) {
  if (dp__dom_has(&s->uf, e)) return 1;
  char *w = dp__describe(s->uf.ctx, e);
  dp_err_set(err, dp_err_at(s->uf.ctx, DP_ERR_VALUE, e->span,
                            "%s is not an expression of the analysed module", w));
  free(w);
  return 0;
}

dp_vdev *dp_domains_lookup(dp_domains *s, dp_expr *e, dp_err **err) {
  dp__domains *d = &s->uf;
  dp__ondev p;
  if (!dp__dom_has(d, e) && dp__on_device_props(&d->ix->ops, e, &p)) e = p.body;
  if (!known(s, e, err)) return NULL;
  return dp_retain(d->dev->v[dp__dom_dev(d, dp__dom_of(d, e))]);
}

int dp_domains_unify(dp_domains *s, dp_expr *a, dp_expr *b, dp_err **err) {
  if (!known(s, a, err) || !known(s, b, err)) return -1;
  return dp__state_apply(s, (dp__op_log){LOG_UNIFY, R_USER_UNIFY, a, b, 0}, err);
}

int dp_domains_constrain(dp_domains *s, dp_expr *e, dp_vdev *vd, dp_err **err) {
  if (!known(s, e, err)) return -1;
  uint32_t v = dp__dev_canon(s->uf.dev, vd, err);
  if (v == DP__NONE_ID) return -1;
  return dp__state_apply(s, (dp__op_log){LOG_CONSTRAIN, R_USER_CONSTRAIN, e, NULL, v}, err);
}

int dp_domains_set_default(dp_domains *s, dp_expr *e, dp_vdev *vd, dp_err **err) {
  if (!known(s, e, err)) return -1;
  uint32_t v = dp__dev_canon(s->uf.dev, vd, err);
  if (v == DP__NONE_ID) return -1;
  return dp__state_apply(s, (dp__op_log){LOG_SET_DEFAULT, R_USER_DEFAULT, e, NULL, v}, err);
}

int dp_domains_fully_constrained(dp_domains *s, dp_expr *e) {
  return dp__dom_has(&s->uf, e) && dp__dom_fully_constrained(&s->uf, dp__dom_of(&s->uf, e));
}

int dp_domains_placements(dp_domains *s, dp_place_fn fn, void *ud, dp_err **err) {
  return dp__place_each(&s->uf, s->place, fn, ud, err);
}

typedef struct ectx {
  dp__domains *d;
  const char *global;
  dp_vdev_fn fn;
  void *ud;
  int rc;
} ectx;

static int each_pre(void *ud, dp_expr *e) {
  ectx *c = ud;
  if (e->h.kind == DP_OP || e->h.kind == DP_CTOR) return 1;
  if (dp__dom_has(c->d, e)) {
    dp_vdev *v = c->d->dev->v[dp__dom_dev(c->d, dp__dom_of(c->d, e))];
    c->rc = c->fn(c->ud, c->global, e, v);
    if (c->rc) return -1;
  }
  return !(e->h.kind == DP_FUNC && dp__is_primitive((dp_func *)e));
}

int dp_domains_each(dp_domains *s, dp_vdev_fn fn, void *ud, dp_err **err) {
  ectx c = {&s->uf, NULL, fn, ud, 0};
  dp_visitor v = {each_pre, NULL, &c};
  const dp_module *m = s->uf.ix->mod;
  for (uint32_t i = 0; i < m->nfuncs && !c.rc; i++) {
    c.global = m->funcs[i].global->name;
    if (dp_visit(&m->funcs[i].fn->e, &v) < 0 && !c.rc) {
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return -1;
    }
  }
  return c.rc;
}
