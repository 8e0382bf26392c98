/*
 * Phase 0, rewrite, one explicit-stack rewrite per
 * function:
 * - an on_device (body constrained, result not) that is a let value or a
 *   function body becomes fixed (constrain_result=True): the let variable
 *   and the function result then cannot drift to another device. Unlike
 *   TVM, whose rewrite dropped the annotation when its body was a
 *   variable, global or function, the constraint stays whatever the body
 *   is; an on_device body on another device stays nested (a copy goes
 *   between them), on the same device it merges. The fixed call keeps the
 *   position of the annotation the user wrote, for conflict messages;
 * - on_device(e).0 becomes on_device(e.0): copy the projection, not the
 *   whole tuple;
 * - call_lowered(@prim, (a, b)) to a primfn gets its arguments and result
 *   wrapped in unconstrained on_device calls (a copy is allowed there, when
 *   the primfn's memory scopes do not match).
 *
 * Where the only such forms are let values and function bodies analysis
 * can read as fixed where they stand (dp__fixed_in_place, and one parent:
 * F_MULTI), not of an operator, outside primitive functions, which analysis does not
 * read), phase 0 leaves the module as it is: rewriting them would rebuild
 * the whole spine above each, a let chain's every let, for the same
 * constraints. When it rewrites, it rewrites them all.
 *
 * Requires: the index of the module (index.c), which counted the nodes
 * phase 0 rewrites. Leaves: that index when there are none (the module is
 * not walked at all), else the index of the rewritten module.
 *
 * The walk rebuilds only the spine above a changed node: an unchanged node
 * is its own result (no allocation, no reference). Only shared nodes with
 * children are memoized (variables never change here, and a node with one
 * parent is reached once), so a let chain costs no pointer-map lookup.
 */
#include <stdlib.h>
#include "planner.h"

typedef struct rctx {
  const struct dp__plan_ops *ops;
  dp_module *m;
} rctx;

static int is_normal(const struct dp__plan_ops *ops, dp_expr *e, dp__ondev *p) {
  return dp__is_normal_on_device(ops, e, p);
}

static dp_expr *copy_ok(const struct dp__plan_ops *ops, dp_expr *e, dp_err **err) {
  return dp__on_device_at(ops, e, NULL, 0, 0, e->span, err);
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

/* r, or the out-of-memory error when r is NULL (a constructor failed). */
static dp_expr *made(dp_expr *r, dp_err **err) {
  if (!r) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return r;
}

static dp_expr *post(void *ud, dp_expr *orig, dp_expr *e, dp_err **err) {
  rctx *r = ud;
  const struct dp__plan_ops *ops = r->ops;
  dp__ondev p;
  switch (e->h.kind) {
  case DP_PROJ: {
    dp_proj *pr = (dp_proj *)e;
    if (!is_normal(ops, pr->tuple, &p)) break;
    dp_proj *np = dp_proj_new(p.body, pr->index, e->span);
    if (!np) return made(NULL, err);
    if (e->type) np->e.type = dp_retain(e->type);
    dp_expr *res = dp__on_device_at(ops, &np->e, p.vd, p.cbody, p.cresult, pr->tuple->span, err);
    dp_release(np);
    return res;
  }
  case DP_LET: {
    dp_let *l = (dp_let *)e;
    if (!is_normal(ops, l->value, &p)) break;
    dp_expr *v = dp__on_device_fixed_at(ops, p.body, p.vd, l->value->span, err);
    if (!v) return NULL;
    dp_expr *kids[3] = {&l->var->e, v, l->body};
    dp_expr *res = dp_expr_with_children(e, kids);
    dp_release(v);
    if (res && !res->type && orig->type) res->type = dp_retain(orig->type);
    return made(res, err);
  }
  case DP_FUNC: {
    dp_func *f = (dp_func *)e;
    if (!is_normal(ops, f->body, &p)) break;
    dp_expr *b = dp__on_device_fixed_at(ops, p.body, p.vd, f->body->span, err);
    if (!b) return NULL;
    dp_func *nf = dp_func_new_generic(f->ntparams, f->tparams, f->nparams, f->params, b, f->ret,
                                      f->attrs, f->vdev, e->span); /* type parameters kept */
    dp_release(b);
    if (nf && orig->type) nf->e.type = dp_retain(orig->type);
    return made(nf ? &nf->e : NULL, err);
  }
  case DP_CALL: {
    dp_call *c = (dp_call *)e;
    if (dp__is_lowered(ops, c) && c->args[0]->h.kind == DP_GLOBAL &&
        dp_module_primfn(r->m, ((dp_global *)c->args[0])->name)) {
      /* (a call rebuilt above a changed argument has no type yet: its
         original's, which placement by cost counts the bytes of) */
      if (!e->type && orig->type) e->type = dp_retain(orig->type);
      return lowered(r, c, err);
    }
    break;
  }
  default: break;
  }
  if (!e->type && orig->type) e->type = dp_retain(orig->type);
  return dp_retain(e);
}

/* ---- the walk ---- */

typedef struct wframe { dp_expr *e; uint32_t i, n, base; } wframe;

typedef struct walk {
  rctx *r;
  wframe *fr; uint32_t nfr, capfr;
  /* results awaiting their parent, with their originals: a result is
     owned where it differs from its original, borrowed where it is it */
  dp_expr **res, **ores; uint32_t nres, capres, capores;
  dp__ptrmap memo;                            /* shared original -> index in mres */
  dp_expr **mres, **morig; uint32_t nmres, capmres, capmorig;
} walk;

static void drop(dp_expr *res, const dp_expr *orig) {
  if (res != orig) dp_release(res);
}

/* Remember the result r of a shared node orig (a reference of its own). */
static int memoize(walk *w, dp_expr *orig, dp_expr *r) {
  if (dp_grow((void **)&w->mres, &w->capmres, w->nmres + 1, sizeof *w->mres) < 0 ||
      dp_grow((void **)&w->morig, &w->capmorig, w->nmres + 1, sizeof *w->morig) < 0 ||
      dp__ptrmap_set(&w->memo, orig, w->nmres, 0) < 0)
    return -1;
  if (r != orig) dp_retain(r);
  w->morig[w->nmres] = orig;
  w->mres[w->nmres++] = r;
  return 0;
}

/* Hand result r of orig (owned when it differs) to the parent. */
static int hand(walk *w, dp_expr *orig, dp_expr *r) {
  if (dp_grow((void **)&w->res, &w->capres, w->nres + 1, sizeof *w->res) < 0 ||
      dp_grow((void **)&w->ores, &w->capores, w->nres + 1, sizeof *w->ores) < 0) {
    drop(r, orig);
    return -1;
  }
  w->res[w->nres] = r;
  w->ores[w->nres++] = orig;
  return 0;
}

static int reach(walk *w, dp_expr *e) {
  uint32_t n = dp_expr_nchildren(e);
  if (!n) return hand(w, e, e); /* leaves never change here */
  if (e->h.rc > 1) {
    dp__ptrslot *s = dp__ptrmap_find(&w->memo, e);
    if (s) {
      dp_expr *r = w->mres[s->val];
      if (r != e) dp_retain(r);
      return hand(w, e, r);
    }
  }
  if (dp_grow((void **)&w->fr, &w->capfr, w->nfr + 1, sizeof *w->fr) < 0) return -1;
  w->fr[w->nfr++] = (wframe){e, 0, n, w->nres};
  return 0;
}

/* All children of the top frame are results: rebuild when one changed,
   then apply the node's own rule. */
static int complete(walk *w, dp_err **err) {
  wframe f = w->fr[--w->nfr];
  dp_expr **kids = w->res + f.base, *e = f.e;
  uint32_t changed = 0;
  for (uint32_t i = 0; i < f.n; i++) changed += kids[i] != w->ores[f.base + i];
  dp_expr *rebuilt = e;
  if (changed) {
    /* binder slots keep their variables here: only memory can fail it */
    rebuilt = made(dp_expr_with_children(e, kids), err);
  }
  for (uint32_t i = 0; i < f.n; i++) drop(kids[i], w->ores[f.base + i]);
  w->nres = f.base;
  if (!rebuilt) return -1;
  dp_expr *r = post(w->r, e, rebuilt, err);
  drop(rebuilt, e);
  if (!r) return -1;
  if (r == e) dp_release(r); /* unchanged: borrowed from here on */
  if (e->h.rc > 1 && memoize(w, e, r) < 0) {
    drop(r, e);
    return -1;
  }
  return hand(w, e, r);
}

/* The rewritten function (new reference; fn itself, retained, when
   unchanged), or NULL + error. */
static dp_expr *rewrite_fn(walk *w, dp_func *fn, dp_err **err) {
  w->nfr = w->nres = 0;
  int rc = reach(w, &fn->e);
  while (rc == 0 && w->nfr) {
    wframe *t = &w->fr[w->nfr - 1];
    if (t->i < t->n) rc = reach(w, dp_expr_child(t->e, t->i++));
    else rc = complete(w, err);
  }
  dp_expr *r = NULL;
  if (rc == 0 && w->nres == 1) {
    r = w->res[0];
    if (r == &fn->e) dp_retain(r);
    w->nres = 0;
  } else if (rc == 0 || !*err) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  }
  for (uint32_t i = 0; i < w->nres; i++) drop(w->res[i], w->ores[i]);
  w->nres = 0;
  return r;
}

static void walk_free(walk *w) {
  for (uint32_t i = 0; i < w->nmres; i++) drop(w->mres[i], w->morig[i]);
  free(w->fr);
  free(w->res);
  free(w->ores);
  free(w->mres);
  free(w->morig);
  dp__ptrmap_free(&w->memo);
}

/* The rewritten module (new reference; m itself when nothing changed). */
static dp_module *rewrite_module(dp_module *m, const struct dp__plan_ops *ops, dp_err **err) {
  rctx r = {ops, m};
  walk w = {0};
  w.r = &r;
  dp_module *out = NULL;
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    dp_expr *f = rewrite_fn(&w, m->funcs[i].fn, err);
    if (!f) goto fail;
    int rc = 0;
    if (f != &m->funcs[i].fn->e) {
      if (!out && !(out = dp_module_copy(m))) {
        dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
        rc = -1;
      }
      if (rc == 0) rc = dp_module_set_func(out, m->funcs[i].global->name, (dp_func *)f, err);
    }
    dp_release(f);
    if (rc < 0) goto fail;
  }
  walk_free(&w);
  return out ? out : dp_retain(m);
fail:
  walk_free(&w);
  dp_release(out);
  return NULL;
}

dp__index *dp__rewrite(dp__index *ix, dp_err **err) {
  if (!ix->nrewrite) return ix;
  dp_module *out = rewrite_module(ix->mod, &ix->ops, err);
  dp__index *next = out ? dp__index_new(out, ix->dev.cfg, err) : NULL;
  dp_release(out);
  dp__index_free(ix);
  return next;
}
