/*
 * Phase 1, analysis: the domain of every sub-expression of every global
 * function, from the constraints (planner.md "Domains", seed 002 phase 1).
 *
 * Functions are analysed in definition order; each with one explicit-stack
 * walk (dp_visit) whose post-order callback states the node's constraints:
 * callee rules for calls (special operators, polymorphic operators,
 * constructors, call_lowered through the primfn's buffer scopes, any other
 * callee by its own domain), let/function/tuple/projection/if/match/ref
 * rules, and the virtual_device annotations already on parameters and
 * functions. Every device that enters is canonicalised through the
 * configuration. The first constraint that cannot hold stops the phase
 * with a DP_ERR_CONFLICT error (explain.c writes it).
 */
#include <stdlib.h>
#include "planner.h"

typedef struct actx {
  dp_domains *d;
  dp_err *err;
} actx;

/* Give an error without a position the position of e. */
static int fail_at(actx *a, dp_err *e, const dp_expr *at) {
  if (e && e->span.line == 0 && at && at->span.line) {
    e->span = at->span;
    if (!e->source) e->source = dp_strdup(dp_ctx_source_name(a->d->ctx, at->span.source));
  }
  a->err = e;
  return -1;
}

static int unify(actx *a, uint32_t x, uint32_t y, int rule, dp_expr *why) {
  dp_err *e = NULL;
  if (dp__unify(a->d, x, y, rule, why, 0, &e) < 0) return fail_at(a, e, why);
  return 0;
}

/* Domains by flat id: the node's own, and its child i's. */
#define DOM(a, id) ((a)->d->flat.dom[id])
#define KDOM(a, id, i) dp__fkdom((a)->d, (id), (i))

/* Canonical device index of an annotation, with the error placed at e. */
static int canon(actx *a, dp_vdev *v, dp_expr *e, uint32_t *out) {
  dp_err *err = NULL;
  *out = dp__canon_index(a->d, v, &err);
  if (*out == DP_NONE_ID) return fail_at(a, err, e);
  return 0;
}

/* Constrain x (domain xd) to device index v. */
static int constrain(actx *a, dp_expr *x, uint32_t xd, uint32_t v, int rule, dp_expr *why) {
  if (!v) return 0;
  uint32_t k = dp__dom_for_type(a->d, x->type, v, rule, why);
  return unify(a, xd, k, rule, why);
}

static int call_on_device(actx *a, uint32_t id, dp_call *c, const dp_ondev *p) {
  uint32_t v = 0;
  if (p->vd && canon(a, p->vd, &c->e, &v) < 0) return -1;
  if (!v) return 0;
  /* one constraint domain serves both sides, as TVM's target_domain */
  uint32_t k = dp__dom_for_type(a->d, p->body->type, v, R_ON_DEVICE, &c->e);
  if (p->cbody && unify(a, KDOM(a, id, 1), k, R_ON_DEVICE, &c->e) < 0) return -1;
  /* FL_FIX: phase 0 would have made it fixed (dp__plan_analyze_fixed) */
  int cresult = p->cresult || (a->d->flat.flag[id] & FL_FIX);
  if (cresult && unify(a, DOM(a, id), k, R_ON_DEVICE, &c->e) < 0) return -1;
  return 0;
}

static int call_device_copy(actx *a, uint32_t id, dp_call *c, dp_expr *body, dp_vdev *src,
                            dp_vdev *dst) {
  uint32_t s = 0, t = 0;
  if ((src && canon(a, src, &c->e, &s) < 0) || (dst && canon(a, dst, &c->e, &t) < 0)) return -1;
  if (constrain(a, body, KDOM(a, id, 1), s, R_COPY_SRC, &c->e) < 0) return -1;
  return constrain(a, &c->e, DOM(a, id), t, R_COPY_DST, &c->e);
}

static int args_host(actx *a, uint32_t id, dp_call *c, uint32_t from) {
  for (uint32_t i = from; i < c->nargs; i++)
    if (constrain(a, c->args[i], KDOM(a, id, 1 + i), a->d->host, R_HOST_ARG, &c->e) < 0) return -1;
  return 0;
}

static int args_with_call(actx *a, uint32_t id, dp_call *c, uint32_t from, uint32_t to, int rule) {
  for (uint32_t i = from; i < to && i < c->nargs; i++)
    if (unify(a, KDOM(a, id, 1 + i), DOM(a, id), rule, &c->e) < 0) return -1;
  return 0;
}

/* Calls of operators: the rules of planner.md's table. */
static int call_op(actx *a, uint32_t id, dp_call *c) {
  const struct dp_plan_ops *o = &a->d->ops;
  dp_op *op = (dp_op *)c->fn;
  if (op == o->alloc_storage) {
    const dp_aval *v = dp_op_attr(op, c->attrs, "virtual_device");
    uint32_t t = 0;
    if (v && v->kind == DP_AV_VDEV && canon(a, v->u.vdev, &c->e, &t) < 0) return -1;
    if (args_host(a, id, c, 0) < 0) return -1;
    return constrain(a, &c->e, DOM(a, id), t, R_ALLOC_DEV, &c->e);
  }
  if (op == o->alloc_tensor) {
    if (args_with_call(a, id, c, 0, 1, R_ARG) < 0) return -1;
    return args_host(a, id, c, 1);
  }
  if (op == o->shape_of) return constrain(a, &c->e, DOM(a, id), a->d->host, R_HOST_ARG, &c->e);
  if (op == o->reshape_tensor) {
    if (args_with_call(a, id, c, 0, 1, R_ARG) < 0) return -1;
    return args_host(a, id, c, 1);
  }
  if (op == o->invoke_tvm_op) return args_with_call(a, id, c, 1, c->nargs, R_ARG);
  /* polymorphic: one fresh device per call site, shared by args and result */
  return args_with_call(a, id, c, 0, c->nargs, R_ARG);
}

static int analyze_call(actx *a, uint32_t id, dp_call *c) {
  dp_domains *d = a->d;
  dp_ondev p;
  dp_expr *body;
  dp_vdev *src, *dst;
  if (dp__on_device_props(&d->ops, &c->e, &p)) return call_on_device(a, id, c, &p);
  if (dp__device_copy_props(&d->ops, &c->e, &body, &src, &dst))
    return call_device_copy(a, id, c, body, src, dst);
  dp_expr *callee;
  dp_expr *const *args;
  uint32_t n = dp__any_call(&d->ops, c, &callee, &args);
  if (callee->h.kind == DP_OP && callee == c->fn) return call_op(a, id, c);
  if (callee->h.kind == DP_CTOR) return args_with_call(a, id, c, 0, c->nargs, R_CTOR);
  int lowered = callee != c->fn;
  uint32_t f = KDOM(a, id, lowered ? 1 : 0);
  if (dp__dom_arity(d, f) != n) {
    return fail_at(a, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                                 "the callee of this call does not take %u argument%s "
                                 "(is its type known?)", n, n == 1 ? "" : "s"), &c->e);
  }
  uint32_t tup = lowered ? dp__fkid(d, id, 2) : DP_NONE_ID;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t ad = !lowered ? KDOM(a, id, 1 + i)
                  : tup != DP_NONE_ID ? KDOM(a, tup, i) : dp__dom_of(d, args[i]);
    if (unify(a, ad, dp__dom_kid(d, f, i), R_ARG, &c->e) < 0) return -1;
  }
  return unify(a, DOM(a, id), dp__dom_kid(d, f, n), R_RESULT, &c->e);
}

static int analyze_func(actx *a, uint32_t id, dp_func *fn) {
  dp_domains *d = a->d;
  uint32_t f = DOM(a, id);
  if (dp__dom_arity(d, f) != fn->nparams)
    return fail_at(a, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                                 "function's type does not match its %u parameters", fn->nparams),
                   &fn->e);
  uint32_t bd = KDOM(a, id, fn->nparams);
  if (unify(a, bd, dp__dom_kid(d, f, fn->nparams), R_FUNC_BODY, &fn->e) < 0)
    return -1;
  uint32_t v = 0;
  if (fn->vdev && canon(a, fn->vdev, &fn->e, &v) < 0) return -1;
  if (constrain(a, fn->body, bd, v, R_FUNC_ANNOT, &fn->e) < 0) return -1;
  for (uint32_t i = 0; i < fn->nparams; i++) {
    dp_var *p = fn->params[i];
    uint32_t pd = KDOM(a, id, i), pk = dp__fkid(d, id, i);
    if (unify(a, pd, dp__dom_kid(d, f, i), R_FUNC_PARAM, &fn->e) < 0) return -1;
    if (pk != DP_NONE_ID) d->flat.flag[pk] |= PM_PARAM;
    if (pk == DP_NONE_ID || (d->flat.flag[pk] & PM_SHARED)) {
      struct dp_pslot *s = dp__pmap_get(&d->map, (uintptr_t)p);
      if (s) s->flags |= PM_PARAM;
    }
    uint32_t pv = 0;
    if (p->vdev && canon(a, p->vdev, &p->e, &pv) < 0) return -1;
    if (constrain(a, &p->e, pd, pv, R_PARAM_ANNOT, &p->e) < 0) return -1;
  }
  return 0;
}

/* Pattern variables collapse onto the matched data. */
typedef struct patctx { actx *a; uint32_t data; dp_expr *why; } patctx;

static int pattern_var(void *ud, dp_var *v) {
  patctx *p = ud;
  return unify(p->a, p->data, dp__dom_of(p->a->d, &v->e), R_MATCH_PAT, p->why);
}

static int analyze_pattern(actx *a, uint32_t data, dp_pattern *root, dp_expr *why) {
  patctx p = {a, data, why};
  int rc = dp__pattern_vars(root, pattern_var, &p);
  if (rc < 0 && !a->err) return fail_at(a, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"), why);
  return rc;
}

/* The flags defaulting goes by (FL_*). */
static void default_flags(dp_domains *d, uint32_t id, dp_expr *e) {
  dp_ondev p;
  switch (e->h.kind) {
  case DP_CALL:
    d->flat.flag[id] |= FL_DEFAULTS;
    if (dp__on_device_props(&d->ops, e, &p) && !p.cbody && !p.cresult)
      d->flat.flag[id] |= FL_FREE_ONDEV;
    break;
  case DP_LET: d->flat.flag[id] |= FL_DEFAULTS; break;
  case DP_FUNC:
    if (!dp__is_primitive((dp_func *)e)) d->flat.flag[id] |= FL_DEFAULTS;
    break;
  default: break;
  }
}

static int analyze_node(actx *a, uint32_t id) {
  dp_domains *d = a->d;
  dp_expr *e = d->flat.x[id];
  uint32_t me = DOM(a, id);
  default_flags(d, id, e);
  switch (e->h.kind) {
  case DP_CALL: return analyze_call(a, id, (dp_call *)e);
  case DP_FUNC: return analyze_func(a, id, (dp_func *)e);
  case DP_LET:
    if (unify(a, KDOM(a, id, 0), KDOM(a, id, 1), R_LET_VAR, e) < 0) return -1;
    return unify(a, me, KDOM(a, id, 2), R_LET_BODY, e);
  case DP_TUPLE: {
    dp_tuple *t = (dp_tuple *)e;
    if (d->flat.flag[id] & PM_LOWERED_ARGS) {
      for (uint32_t i = 0; i < t->n; i++) KDOM(a, id, i);
      return 0;
    }
    for (uint32_t i = 0; i < t->n; i++)
      if (unify(a, me, KDOM(a, id, i), R_TUPLE, e) < 0) return -1;
    return 0;
  }
  case DP_PROJ: return unify(a, KDOM(a, id, 0), me, R_PROJ, e);
  case DP_IF:
    if (unify(a, KDOM(a, id, 0), me, R_IF_COND, e) < 0) return -1;
    if (unify(a, KDOM(a, id, 1), me, R_IF_BRANCH, e) < 0) return -1;
    return unify(a, KDOM(a, id, 2), me, R_IF_BRANCH, e);
  case DP_MATCH: {
    dp_match *m = (dp_match *)e;
    uint32_t data = KDOM(a, id, 0);
    if (unify(a, data, me, R_MATCH_DATA, e) < 0) return -1;
    for (uint32_t i = 0; i < m->n; i++) {
      if (analyze_pattern(a, data, m->clauses[i].pat, e) < 0) return -1;
      if (unify(a, KDOM(a, id, 1 + i), me, R_MATCH_RHS, e) < 0) return -1;
    }
    return 0;
  }
  case DP_REF_NEW: return unify(a, me, KDOM(a, id, 0), R_REF, e);
  case DP_REF_READ: return unify(a, KDOM(a, id, 0), me, R_REF, e);
  case DP_REF_WRITE:
    if (unify(a, KDOM(a, id, 0), KDOM(a, id, 1), R_REF, e) < 0) return -1;
    return unify(a, me, KDOM(a, id, 1), R_REF, e);
  default: return 0;
  }
}

/* Index one function (flat.c), then state its nodes' constraints in post
   order, as a dp_visit post callback would. */
static int analyze_function(actx *a, dp_func *fn) {
  dp_domains *d = a->d;
  uint32_t from = d->flat.npost;
  if (dp__flat_add(d, fn) < 0) return -1;
  if (d->needs_rewrite) return 0;
  for (uint32_t k = from; k < d->flat.npost; k++) {
    uint32_t id = d->flat.post[k];
    if (analyze_node(a, id) < 0) return -1;
    d->flat.flag[id] |= PM_VISITED;
    if (d->oom) return fail_at(a, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"), d->flat.x[id]);
  }
  return 0;
}

/* The domain of a primfn: each buffer's memory scope constrains its
   argument or the result. */
static int primfn_domain(actx *a, dp_primfn *pf) {
  dp_domains *d = a->d;
  uint32_t small[8], *k = pf->nargs < 7 ? small : dp_malloc((pf->nargs + 1) * sizeof *k);
  if (!k) return fail_at(a, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"), NULL);
  int rc = 0;
  for (uint32_t i = 0; i <= pf->nargs && rc == 0; i++) {
    const dp_buffer *b = i < pf->nargs ? &pf->args[i] : &pf->result;
    uint32_t v = 0;
    if (b->scope && b->scope[0]) {
      dp_err *err = NULL;
      dp_vdev *vd = dp_vdev_make(d->ctx, 0, -1, NULL, b->scope, &err);
      if (!vd) {
        a->err = err;
        rc = -1;
        break;
      }
      v = dp__vdev_index(d, vd);
      dp_release(vd);
    }
    k[i] = dp__dom_first(d, v, i < pf->nargs ? R_PRIMFN_ARG : R_PRIMFN_RESULT, NULL);
  }
  if (rc == 0) {
    uint32_t f = dp__dom_fn(d, pf->nargs, k);
    if (dp__pmap_put(&d->map, (uintptr_t)pf, f, 0) < 0) d->oom = 1;
  }
  if (k != small) free(k);
  return rc;
}

static dp_domains *analyze(dp_module *m, const dp_config *cfg, int fixmode,
                           const struct dp_sizes *sz, dp_err **err) {
  dp_domains *d = dp__domains_new(m, cfg, err);
  if (!d) return NULL;
  d->fixmode = fixmode;
  if (sz) dp__reserve(d, sz);
  actx a = {d, NULL};
  for (uint32_t i = 0; i < m->nprims && !a.err; i++) primfn_domain(&a, m->prims[i]);
  for (uint32_t i = 0; i < m->nfuncs && !a.err && !d->needs_rewrite; i++) {
    if (analyze_function(&a, m->funcs[i].fn) < 0 && !a.err)
      a.err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  }
  if (!a.err && d->oom) a.err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  if (a.err) {
    dp_err_set(err, a.err);
    dp_release(d);
    return NULL;
  }
  if (d->needs_rewrite) {
    dp_release(d);
    return NULL;
  }
  return d;
}

dp_domains *dp_plan_analyze(dp_module *m, const dp_config *cfg, dp_err **err) {
  return analyze(m, cfg, 0, NULL, err);
}

dp_domains *dp__plan_analyze_fixed(dp_module *m, const dp_config *cfg, const struct dp_sizes *sz,
                                   dp_err **err) {
  return analyze(m, cfg, 1, sz, err);
}
