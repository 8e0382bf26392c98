/*
 * Phase 0, rewrite (seed 002 phase 0), one explicit-stack rewrite per
 * function:
 * - an on_device (body constrained, result not) that is a let value or a
 *   function body becomes fixed (constrain_result=True): the let variable
 *   and the function result then cannot drift to another device;
 * - on_device(e).0 becomes on_device(e.0): copy the projection, not the
 *   whole tuple;
 * - call_lowered(@prim, (a, b)) to a primfn gets its arguments and result
 *   wrapped in unconstrained on_device calls (a copy is allowed there, when
 *   the primfn's memory scopes do not match).
 */
#include <stdlib.h>
#include "planner.h"

typedef struct rctx {
  const struct dp_plan_ops *ops;
  dp_module *m;
} rctx;

static int is_normal(const struct dp_plan_ops *ops, dp_expr *e, dp_ondev *p) {
  return dp__on_device_props(ops, e, p) && p->cbody && !p->cresult && p->vd;
}

static dp_expr *copy_ok(const struct dp_plan_ops *ops, dp_expr *e, dp_err **err) {
  return dp__on_device(ops, e, NULL, 0, 0, err);
}

static dp_expr *lowered(rctx *r, dp_call *c, dp_err **err) {
  dp_tuple *t = (dp_tuple *)c->args[1];
  dp_expr *small[8] = {0}, **k = t->n <= 8 ? small : dp_calloc(t->n, sizeof *k);
  dp_expr *res = NULL;
  if (!k) goto oom;
  for (uint32_t i = 0; i < t->n; i++)
    if (!(k[i] = copy_ok(r->ops, t->fields[i], err))) goto done;
  dp_tuple *nt = dp_tuple_new(t->n, k, t->e.span);
  if (!nt) goto oom;
  if (t->e.type) nt->e.type = dp_retain(t->e.type);
  dp_expr *kids[3] = {c->fn, c->args[0], &nt->e};
  dp_expr *call = dp_expr_with_children(&c->e, kids);
  dp_release(nt);
  if (!call) goto oom;
  if (!call->type && c->e.type) call->type = dp_retain(c->e.type);
  res = copy_ok(r->ops, call, err);
  dp_release(call);
  goto done;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
done:
  if (k) for (uint32_t i = 0; i < t->n; i++) dp_release(k[i]);
  if (k != small) free(k);
  return res;
}

static dp_expr *post(void *ud, dp_expr *orig, dp_expr *e, dp_err **err) {
  rctx *r = ud;
  const struct dp_plan_ops *ops = r->ops;
  dp_ondev p;
  switch (e->h.kind) {
  case DP_PROJ: {
    dp_proj *pr = (dp_proj *)e;
    if (!is_normal(ops, pr->tuple, &p)) break;
    dp_proj *np = dp_proj_new(p.body, pr->index, e->span);
    if (!np) break;
    if (e->type) np->e.type = dp_retain(e->type);
    dp_expr *res = dp__on_device(ops, &np->e, p.vd, p.cbody, p.cresult, err);
    dp_release(np);
    return res;
  }
  case DP_LET: {
    dp_let *l = (dp_let *)e;
    if (!is_normal(ops, l->value, &p)) break;
    dp_expr *v = dp__maybe_on_device_fixed(ops, p.body, p.vd, err);
    if (!v) return NULL;
    dp_expr *kids[3] = {&l->var->e, v, l->body};
    dp_expr *res = dp_expr_with_children(e, kids);
    dp_release(v);
    if (res && !res->type && orig->type) res->type = dp_retain(orig->type);
    return res;
  }
  case DP_FUNC: {
    dp_func *f = (dp_func *)e;
    if (!is_normal(ops, f->body, &p)) break;
    dp_expr *b = dp__maybe_on_device_fixed(ops, p.body, p.vd, err);
    if (!b) return NULL;
    dp_func *nf = dp_func_new(f->nparams, f->params, b, f->ret, f->attrs, f->vdev, e->span);
    dp_release(b);
    if (nf && orig->type) nf->e.type = dp_retain(orig->type);
    return nf ? &nf->e : NULL;
  }
  case DP_CALL: {
    dp_call *c = (dp_call *)e;
    if (ops->call_lowered && c->fn == (dp_expr *)ops->call_lowered && c->nargs == 2 &&
        c->args[0]->h.kind == DP_GLOBAL && c->args[1]->h.kind == DP_TUPLE &&
        dp_module_primfn(r->m, ((dp_global *)c->args[0])->name))
      return lowered(r, c, err);
    break;
  }
  default: break;
  }
  if (!e->type && orig->type) e->type = dp_retain(orig->type);
  return dp_retain(e);
}

dp_module *dp_plan_rewrite(dp_module *m, const dp_config *cfg, dp_err **err) {
  (void)cfg;
  struct dp_plan_ops ops;
  if (dp__plan_ops(m->ctx, &ops, err) < 0) return NULL;
  rctx r = {&ops, m};
  dp_module *out = dp_module_copy(m);
  if (!out) {
    dp__plan_ops_free(&ops);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  dp_rewriter rw = {NULL, post, &r};
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    dp_expr *f = dp_rewrite(&m->funcs[i].fn->e, &rw, err);
    if (!f) goto fail;
    int rc = 0;
    if (f != &m->funcs[i].fn->e)
      rc = dp_module_set_func(out, m->funcs[i].global->name, (dp_func *)f, err);
    dp_release(f);
    if (rc < 0) goto fail;
  }
  dp__plan_ops_free(&ops);
  return out;
fail:
  dp__plan_ops_free(&ops);
  dp_release(out);
  return NULL;
}
