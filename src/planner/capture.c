/*
 * Phase 3, capture (seed 002 phase 3): writes the domains back into the
 * module, so that a later pass recovers every device lexically.
 *
 * - parameters get their virtual_device, functions their result device;
 * - the original on_device calls are removed, device_copy calls whose
 *   source and destination agree are removed, the others rebuilt with
 *   canonical devices;
 * - where a child's device differs from what its context expects, a
 *   device_copy(on_device(child, src, fixed), src, dst) is inserted (one
 *   per use, as TVM does);
 * - let values, and call arguments whose device differs from the call's,
 *   are wrapped in a fixed on_device (never variables, globals, functions,
 *   operators or constructors);
 * - primfn buffers take the memory scopes that flowed into them.
 *
 * Each node's children are handled in the node's own post-order callback
 * of an explicit-stack rewrite (dp_rewrite), from the original child (its
 * domain) and the rebuilt child (its rewritten form).
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"

typedef struct cctx {
  dp_domains *d;
} cctx;

static dp_err *no_device(cctx *c, const dp_expr *e) {
  char *what = dp__describe(c->d, e);
  dp_err *err = dp_err_at(c->d->ctx, DP_ERR_VALUE, e->span,
                          "no virtual device was determined for %s (run the defaulting phase "
                          "before capture)", what);
  free(what);
  return err;
}

/* The device of e, looking through on_device as capture removes them. */
static dp_vdev *vd_of(cctx *c, dp_expr *e, dp_err **err) {
  dp_ondev p;
  dp_expr *x = dp__on_device_props(&c->d->ops, e, &p) ? p.body : e;
  dp_vdev *v = dp__dom_vdev(c->d, dp__dom_of(c->d, x));
  if (!v) dp_err_set(err, no_device(c, x));
  return v;
}

static dp_vdev *dom_vd(cctx *c, uint32_t dom, const dp_expr *e, dp_err **err) {
  dp_vdev *v = dp__dom_vdev(c->d, dom);
  if (!v) dp_err_set(err, no_device(c, e));
  return v;
}

/* TVM's VisitChild: reconcile the child's device with what its context
   expects (copy) and with what a reader infers lexically (on_device).
   lexical NULL: unconstrained (let values, always annotated). */
static dp_expr *child(cctx *c, dp_vdev *lexical, dp_vdev *expected, dp_vdev *child_vd,
                      dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  const struct dp_plan_ops *ops = &c->d->ops;
  if (orig->h.kind == DP_OP || orig->h.kind == DP_CTOR) return dp_retain(rebuilt);
  dp_expr *res = dp_retain(rebuilt), *t;
  if (child_vd != expected) {
    t = dp__maybe_on_device_fixed(ops, res, child_vd, err);
    dp_release(res);
    if (!t) return NULL;
    res = dp__device_copy(ops, t, child_vd, expected, err);
    dp_release(t);
    if (!res) return NULL;
  }
  if (expected != lexical) {
    t = dp__maybe_on_device_fixed(ops, res, expected, err);
    dp_release(res);
    res = t;
  }
  return res;
}

/* A child expected on its parent's device. */
static dp_expr *same(cctx *c, dp_vdev *pv, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  if (orig->h.kind == DP_OP || orig->h.kind == DP_CTOR) return dp_retain(rebuilt);
  dp_vdev *cv = vd_of(c, orig, err);
  return cv ? child(c, pv, pv, cv, orig, rebuilt, err) : NULL;
}

static dp_expr *typed(dp_expr *e, const dp_expr *orig) {
  if (e && !e->type && orig->type) e->type = dp_retain(orig->type);
  return e;
}

static void release_all(dp_expr **kids, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) dp_release(kids[i]);
}

/* Rebuild `rebuilt` with kids (new references, released here). */
static dp_expr *with_kids(dp_expr *orig, dp_expr *rebuilt, dp_expr **kids, uint32_t n,
                          dp_err **err) {
  for (uint32_t i = 0; i < n; i++)
    if (!kids[i]) {
      release_all(kids, n);
      return NULL;
    }
  dp_expr *r = dp_expr_with_children(rebuilt, kids);
  release_all(kids, n);
  if (!r) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return typed(r, orig);
}

static dp_expr **kid_array(uint32_t n, dp_expr **small, uint32_t nsmall) {
  return n <= nsmall ? small : dp_calloc(n, sizeof(dp_expr *));
}

static dp_expr *capture_call(cctx *c, dp_call *orig, dp_call *rebuilt, dp_err **err) {
  dp_domains *d = c->d;
  dp_ondev p;
  dp_expr *body;
  dp_vdev *src, *dst;
  if (dp__on_device_props(&d->ops, &orig->e, &p)) return dp_retain(rebuilt->args[0]);
  if (dp__device_copy_props(&d->ops, &orig->e, &body, &src, &dst)) {
    uint32_t s = dp__canon_index(d, src, err), t = dp__canon_index(d, dst, err);
    if (s == DP_NONE_ID || t == DP_NONE_ID) return NULL;
    if (s == t) return dp_retain(rebuilt->args[0]);
    return child(c, d->vdevs[t], d->vdevs[t], d->vdevs[s], body, rebuilt->args[0], err);
  }
  dp_vdev *cv = dom_vd(c, dp__dom_of(d, &orig->e), &orig->e, err);
  if (!cv) return NULL;
  dp_expr *ocallee, *ncallee;
  dp_expr *const *oargs, *const *nargs;
  uint32_t n = dp__any_call(&d->ops, orig, &ocallee, &oargs);
  dp__any_call(&d->ops, rebuilt, &ncallee, &nargs);
  uint32_t f = dp__callee_dom(d, orig);
  dp_expr *small[9] = {0}, **k = kid_array(n + 1, small, 9);
  if (!k) goto oom;
  if (f == DP_NONE_ID) {
    k[0] = dp_retain(ncallee);
  } else {
    dp_vdev *rv = dom_vd(c, f, ocallee, err);
    k[0] = rv ? child(c, cv, cv, rv, ocallee, ncallee, err) : NULL;
  }
  for (uint32_t i = 0; i < n && k[i]; i++) {
    uint32_t pd = f == DP_NONE_ID ? dp__dom_of(d, oargs[i]) : dp__dom_kid(d, f, i);
    dp_vdev *pv = dom_vd(c, pd, oargs[i], err);
    dp_vdev *av = pv ? vd_of(c, oargs[i], err) : NULL;
    k[i + 1] = av ? child(c, cv, pv, av, oargs[i], nargs[i], err) : NULL;
  }
  dp_expr *r;
  if (ocallee != orig->fn) { /* call_lowered(@f, (args)): rebuild the tuple */
    for (uint32_t i = 0; i <= n; i++)
      if (!k[i]) goto fail;
    dp_tuple *t = dp_tuple_new(n, k + 1, rebuilt->args[1]->span);
    if (!t) goto fail;
    typed(&t->e, orig->args[1]);
    dp_expr *k3[3] = {rebuilt->fn, k[0], &t->e}; /* call_lowered's children */
    r = dp_expr_with_children(&rebuilt->e, k3);
    dp_release(t);
    release_all(k, n + 1);
    if (!r) goto oom;
    r = typed(r, &orig->e);
  } else {
    r = with_kids(&orig->e, &rebuilt->e, k, n + 1, err);
  }
  if (k != small) free(k);
  return r;
fail:
  release_all(k, n + 1);
  if (k != small) free(k);
  return NULL;
oom:
  if (k && k != small) free(k);
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return NULL;
}

static dp_expr *capture_func(cctx *c, dp_func *orig, dp_func *rebuilt, dp_err **err) {
  dp_vdev *rv = dom_vd(c, dp__dom_of(c->d, &orig->e), &orig->e, err);
  if (!rv) return NULL;
  dp_expr *body = same(c, rv, orig->body, rebuilt->body, err);
  if (!body) return NULL;
  dp_func *f = dp_func_new(rebuilt->nparams, rebuilt->params, body, rebuilt->ret, rebuilt->attrs,
                           rv, rebuilt->e.span);
  dp_release(body);
  if (!f) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return typed(&f->e, &orig->e);
}

static dp_expr *capture_param(cctx *c, dp_var *v, dp_err **err) {
  dp_vdev *vd = dom_vd(c, dp__dom_of(c->d, &v->e), &v->e, err);
  if (!vd) return NULL;
  if (v->vdev == vd) return dp_retain(&v->e);
  dp_var *n = dp_var_new(v->name, v->annot, vd, v->e.span);
  if (!n) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return typed(&n->e, &v->e);
}

static dp_expr *post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  cctx *c = ud;
  dp_domains *d = c->d;
  switch (orig->h.kind) {
  case DP_VAR: {
    struct dp_pslot *s = dp__pmap_get(&d->map, (uintptr_t)orig);
    if (s && (s->flags & PM_PARAM)) return capture_param(c, (dp_var *)orig, err);
    return dp_retain(rebuilt);
  }
  case DP_CALL: return capture_call(c, (dp_call *)orig, (dp_call *)rebuilt, err);
  case DP_FUNC: return capture_func(c, (dp_func *)orig, (dp_func *)rebuilt, err);
  case DP_LET: {
    dp_let *o = (dp_let *)orig, *r = (dp_let *)rebuilt;
    dp_vdev *xv = dom_vd(c, dp__dom_of(d, &o->var->e), &o->var->e, err);
    dp_vdev *lv = xv ? dom_vd(c, dp__dom_of(d, orig), orig, err) : NULL;
    dp_vdev *vv = lv ? vd_of(c, o->value, err) : NULL;
    if (!vv) return NULL;
    dp_expr *k[3] = {dp_retain(&r->var->e), child(c, NULL, xv, vv, o->value, r->value, err), NULL};
    if (k[1]) k[2] = same(c, lv, o->body, r->body, err);
    return with_kids(orig, rebuilt, k, 3, err);
  }
  case DP_TUPLE: {
    struct dp_pslot *s = dp__pmap_get(&d->map, (uintptr_t)orig);
    if (s && (s->flags & PM_LOWERED_ARGS)) return dp_retain(rebuilt);
  } /* fall through */
  case DP_PROJ: case DP_IF: case DP_MATCH: case DP_REF_NEW: case DP_REF_READ: case DP_REF_WRITE: {
    dp_vdev *pv = dom_vd(c, dp__dom_of(d, orig), orig, err);
    if (!pv) return NULL;
    uint32_t n = dp_expr_nchildren(orig);
    dp_expr *small[8], **k = kid_array(n, small, 8);
    if (!k) {
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return NULL;
    }
    for (uint32_t i = 0; i < n; i++)
      k[i] = (i == 0 || k[i - 1]) ? same(c, pv, dp_expr_child(orig, i), dp_expr_child(rebuilt, i), err)
                                  : NULL;
    dp_expr *r = with_kids(orig, rebuilt, k, n, err);
    if (k != small) free(k);
    return r;
  }
  default: return dp_retain(rebuilt);
  }
}

static dp_expr *pre(void *ud, dp_expr *orig, dp_err **err) {
  (void)ud;
  (void)err;
  if (orig->h.kind == DP_FUNC && dp__is_primitive((dp_func *)orig)) return dp_retain(orig);
  return NULL;
}

/* primfn buffers take the memory scopes that flowed into them. */
static int capture_primfn(cctx *c, dp_module *out, dp_primfn *pf, dp_err **err) {
  struct dp_pslot *s = dp__pmap_get(&c->d->map, (uintptr_t)pf);
  if (!s) return 0;
  dp_buffer *b = dp_calloc(pf->nargs + 1, sizeof *b);
  if (!b) return -1;
  int changed = 0;
  for (uint32_t i = 0; i <= pf->nargs; i++) {
    b[i] = i < pf->nargs ? pf->args[i] : pf->result;
    dp_vdev *v = dp__dom_vdev(c->d, dp__dom_kid(c->d, s->val, i));
    if (v && v->memory_scope[0] && strcmp(v->memory_scope, b[i].scope ? b[i].scope : "")) {
      b[i].scope = v->memory_scope;
      changed = 1;
    }
  }
  int rc = 0;
  if (changed) {
    dp_primfn *n = dp_primfn_new(pf->name, pf->nargs, b, b[pf->nargs], pf->span);
    rc = n ? dp_module_set_primfn(out, n, err) : -1;
    dp_release(n);
  }
  free(b);
  return rc;
}

dp_module *dp_plan_capture(dp_domains *d, dp_err **err) {
  cctx c = {d};
  dp_module *m = d->mod, *out = dp_module_copy(m);
  if (!out) goto oom;
  dp_rewriter rw = {pre, post, &c};
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    dp_expr *f = dp_rewrite(&m->funcs[i].fn->e, &rw, err);
    if (!f) goto fail;
    int rc = f->h.kind == DP_FUNC ? dp_module_set_func(out, m->funcs[i].global->name, (dp_func *)f, err) : -1;
    dp_release(f);
    if (rc < 0) goto fail;
  }
  for (uint32_t i = 0; i < m->nprims; i++)
    if (capture_primfn(&c, out, m->prims[i], err) < 0) goto fail;
  if (d->oom) goto oom;
  return out;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
fail:
  dp_release(out);
  return NULL;
}
