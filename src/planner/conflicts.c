/*
 * Phase 0b, conflicting demands on values nobody annotated (TVM 2023;
 * planner.md). One depth-first, left-to-right walk of each function body
 * (explicit stack) carries the device each call demands of its arguments:
 * an on_device that constrains its body demands its device, a device_copy
 * its source device, the memory/VM dialect nothing, an operator or
 * constructor call what was demanded of the call itself, and a call of a
 * function (a global, a function value) what its parameters are annotated
 * with, if anything: where a call runs says nothing about where the function
 * takes its arguments (planner.md passed the call's demand on to them, so
 * that PlanDevices' own output, whose let values and arguments carry fixed
 * on_device calls, could be a conflict when planned again). A node keeps the first demand it meets,
 * joined with later demands that join; a later demand that cannot join
 * marks that call argument (never an on_device call), and a device_copy
 * from the node's device to the demanded one is inserted there. Without
 * marks the module is returned unchanged. The walk also counts what it
 * saw (dp__plan_conflicts_sized), so that analysis can size its arrays
 * once instead of growing them.
 */
#include <stdlib.h>
#include "planner.h"

typedef struct item { dp_expr *e; uint32_t demand; dp_call *parent; uint32_t pos; } item;
typedef struct mark { dp_call *call; uint32_t pos, src, dst, next; } mark;

typedef struct kctx {
  dp_domains *d;          /* its vdev table, canonicalisation and map (demand + 1) */
  item *st; uint32_t n, cap;
  mark *marks; uint32_t nmarks, capmarks;
  dp_pmap callmarks;      /* call -> first mark + 1 */
  dp_fnames names;        /* the module's functions by name (callees' parameters) */
  /* sizes for analysis: distinct nodes expanded, children (pushed, and let
     variables and parameters, which are not), constraint domains */
  uint32_t nvisit, npush, ncons;
} kctx;

static int push(kctx *k, dp_expr *e, uint32_t demand, dp_call *parent, uint32_t pos) {
  if (k->n == k->cap) {
    uint32_t cap = k->cap ? k->cap * 2 : 256;
    item *s = dp_realloc(k->st, cap * sizeof *s);
    if (!s) return -1;
    k->st = s;
    k->cap = cap;
  }
  k->st[k->n++] = (item){e, demand, parent, pos};
  k->npush++;
  return 0;
}

static uint32_t canon(kctx *k, dp_vdev *v) {
  uint32_t i = dp__canon_index(k->d, v, NULL);
  return i == DP_NONE_ID ? 0 : i;
}

static uint32_t join(kctx *k, uint32_t a, uint32_t b) {
  if (a == b || b == 0) return a;
  if (a == 0) return b;
  dp_vdev *j = dp_vdev_join(k->d->vdevs[a], k->d->vdevs[b]);
  if (!j) return DP_NONE_ID;
  uint32_t i = canon(k, j);
  dp_release(j);
  return i;
}

static int add_mark(kctx *k, dp_call *c, uint32_t pos, uint32_t src, uint32_t dst) {
  if (k->nmarks == k->capmarks) {
    uint32_t cap = k->capmarks ? k->capmarks * 2 : 16;
    mark *m = dp_realloc(k->marks, cap * sizeof *m);
    if (!m) return -1;
    k->marks = m;
    k->capmarks = cap;
  }
  struct dp_pslot *s = dp__pmap_get(&k->callmarks, (uintptr_t)c);
  k->marks[k->nmarks] = (mark){c, pos, src, dst, s ? s->val : 0};
  k->nmarks++;
  return dp__pmap_put(&k->callmarks, (uintptr_t)c, k->nmarks, 0);
}

static int is_dialect(const struct dp_plan_ops *o, const dp_expr *fn) {
  return fn == (dp_expr *)o->alloc_storage || fn == (dp_expr *)o->alloc_tensor ||
         fn == (dp_expr *)o->shape_of || fn == (dp_expr *)o->reshape_tensor ||
         fn == (dp_expr *)o->invoke_tvm_op || fn == (dp_expr *)o->call_lowered;
}

/* The function a call's callee is, when known: a global function, a
   function value written in place. */
static const dp_func *callee_fn(kctx *k, const dp_expr *callee) {
  if (callee->h.kind == DP_FUNC) return (const dp_func *)callee;
  if (callee->h.kind != DP_GLOBAL) return NULL;
  uint32_t i = dp__fnames_find(&k->names, ((const dp_global *)callee)->name);
  return i == DP_NONE_ID ? NULL : k->d->mod->funcs[i].fn;
}

/* Push a function call's arguments with their parameters' annotations. */
static int expand_fn_call(kctx *k, dp_call *c, const dp_func *f) {
  int rc = 0;
  for (uint32_t i = c->nargs; i-- > 0 && rc == 0;) {
    dp_vdev *pv = f && i < f->nparams ? f->params[i]->vdev : NULL;
    rc = push(k, c->args[i], pv ? canon(k, pv) : 0, c, i);
  }
  return rc ? rc : push(k, c->fn, 0, NULL, 0);
}

/* Push e's children (reversed, so they pop left to right) with their demands. */
static int expand(kctx *k, dp_expr *e, uint32_t demand) {
  const struct dp_plan_ops *o = &k->d->ops;
  dp_ondev p;
  dp_expr *body;
  dp_vdev *src, *dst;
  int rc = 0;
  if (dp__on_device_props(o, e, &p)) {
    k->ncons++;
    k->npush++; /* the operator */
    return push(k, p.body, p.cbody && p.vd ? canon(k, p.vd) : 0, NULL, 0);
  }
  if (dp__device_copy_props(o, e, &body, &src, &dst)) {
    k->ncons += 2;
    k->npush++;
    return push(k, body, src ? canon(k, src) : 0, NULL, 0);
  }
  switch (e->h.kind) {
  case DP_CALL: {
    dp_call *c = (dp_call *)e;
    int fk = c->fn->h.kind;
    if (fk != DP_OP && fk != DP_CTOR) return expand_fn_call(k, c, callee_fn(k, c->fn));
    int plain = !is_dialect(o, c->fn);
    for (uint32_t i = c->nargs; i-- > 0 && rc == 0;)
      rc = push(k, c->args[i], plain ? demand : 0, plain ? c : NULL, i);
    return rc ? rc : push(k, c->fn, 0, NULL, 0);
  }
  case DP_FUNC: {
    dp_func *f = (dp_func *)e;
    if (dp__is_primitive(f)) return 0;
    k->npush += f->nparams;
    k->ncons += 1 + f->nparams;
    return push(k, f->body, f->vdev ? canon(k, f->vdev) : 0, NULL, 0);
  }
  case DP_LET: {
    dp_let *l = (dp_let *)e;
    k->npush++;
    if (push(k, l->body, demand, NULL, 0) < 0) return -1;
    return push(k, l->value, 0, NULL, 0);
  }
  default: {
    uint32_t n = dp__nchildren(e);
    for (uint32_t i = n; i-- > 0 && rc == 0;) rc = push(k, dp__child(e, i), demand, NULL, 0);
    return rc;
  }
  }
}

static int walk(kctx *k, dp_func *f) {
  if (push(k, &f->e, 0, NULL, 0) < 0) return -1;
  while (k->n) {
    item it = k->st[--k->n];
    dp_expr *e = it.e;
    int kind = e->h.kind;
    if (kind == DP_OP || kind == DP_CTOR || kind == DP_GLOBAL) continue;
    int first_order = kind != DP_FUNC && !(e->type && e->type->h.kind == DP_TY_FUNC);
    /* a node that is not shared is reached once: no need to remember it */
    int shared = e->h.rc > 1 || e == &f->e;
    struct dp_pslot *s = shared ? dp__pmap_get(&k->d->map, (uintptr_t)e) : NULL;
    if (s) {
      if (!first_order) continue;
      uint32_t cur = s->val - 1, j = join(k, cur, it.demand);
      if (j != DP_NONE_ID) s->val = j + 1;
      else if (it.parent && !dp__on_device_props(&k->d->ops, e, &(dp_ondev){0}) &&
               add_mark(k, it.parent, it.pos, cur, it.demand) < 0)
        return -1;
      continue;
    }
    if (shared && dp__pmap_add(&k->d->map, (uintptr_t)e, (first_order ? it.demand : 0) + 1, 0) < 0)
      return -1;
    k->nvisit++;
    if (expand(k, e, it.demand) < 0) return -1;
  }
  return 0;
}

static dp_expr *post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  kctx *k = ud;
  struct dp_pslot *s = orig->h.kind == DP_CALL ? dp__pmap_get(&k->callmarks, (uintptr_t)orig) : NULL;
  if (!s) return dp_retain(rebuilt);
  uint32_t n = dp__nchildren(rebuilt);
  dp_expr **kids = dp_calloc(n, sizeof *kids);
  if (!kids) goto oom;
  for (uint32_t i = 0; i < n; i++) kids[i] = dp_retain(dp__child(rebuilt, i));
  dp_expr *r = NULL;
  for (uint32_t m = s->val; m; m = k->marks[m - 1].next) {
    mark *mk = &k->marks[m - 1];
    dp_expr *c = dp__device_copy(&k->d->ops, kids[1 + mk->pos], k->d->vdevs[mk->src],
                                 k->d->vdevs[mk->dst], err);
    if (!c) goto done;
    dp_release(kids[1 + mk->pos]);
    kids[1 + mk->pos] = c;
  }
  r = dp_expr_with_children(rebuilt, kids);
  if (r && !r->type && orig->type) r->type = dp_retain(orig->type);
  if (!r) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
done:
  for (uint32_t i = 0; i < n; i++) dp_release(kids[i]);
  free(kids);
  return r;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return NULL;
}

dp_module *dp_plan_conflicts(dp_module *m, const dp_config *cfg, dp_err **err) {
  return dp__plan_conflicts_sized(m, cfg, NULL, err);
}

dp_module *dp__plan_conflicts_sized(dp_module *m, const dp_config *cfg, struct dp_sizes *sz,
                                    dp_err **err) {
  kctx k = {0};
  dp_module *out = NULL;
  k.d = dp__domains_new(m, cfg, err);
  if (!k.d) return NULL;
  if (dp__fnames_init(&k.names, m) < 0) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    dp_release(k.d);
    return NULL;
  }
  for (uint32_t i = 0; i < m->nfuncs; i++)
    if (walk(&k, m->funcs[i].fn) < 0 || k.d->oom) {
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      goto done;
    }
  if (k.nmarks == 0) {
    out = dp_retain(m);
    goto done;
  }
  out = dp_module_copy(m);
  if (!out) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    goto done;
  }
  dp_rewriter rw = {NULL, post, &k};
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    dp_expr *f = dp_rewrite(&m->funcs[i].fn->e, &rw, err);
    int rc = f ? dp_module_set_func(out, m->funcs[i].global->name, (dp_func *)f, err) : -1;
    dp_release(f);
    if (rc < 0) {
      dp_release(out);
      out = NULL;
      break;
    }
  }
done:
  if (sz) *sz = (struct dp_sizes){k.nvisit, k.npush, k.d->map.n, k.ncons};
  dp__fnames_free(&k.names);
  free(k.st);
  free(k.marks);
  dp__pmap_free(&k.callmarks);
  dp_release(k.d);
  return out;
}
