/*
 * A placement written as annotations (dp_sched_annotate, schedule.h), so
 * that PlanDevices turns it into a planned module: the baselines' plans
 * are then planned, checked and scheduled like any other.
 *
 * Each use of a placed call (each reference to it from a parent, or to a
 * projection of it) becomes on_device(call, vd), a node of its own: the
 * call on vd, that use's
 * result free, so a reader elsewhere gets a copy. (One annotation shared
 * by all the uses would be one value with one device, and two readers on
 * two devices a conflict.) Where such an annotation stands in a position
 * that fixes the value too (a let's value, a function's body: phase 0
 * reads on_device there as fixed), a reader elsewhere would meet a
 * conflict; so every use of what carries that value (the let variable, a
 * call of the global function) is wrapped alike, on_device(%x, vd), which
 * lets a copy follow. A first walk finds what carries a pinned value (let
 * variables bound to one, looking through lets and annotations; global
 * functions whose body ends in one, to a fixed point over the globals),
 * the rewrite then wraps the uses.
 *
 * The lean form (dp_sched_annotate_lean, the latency placement's) leaves
 * out what TVM's rules make no difference for: the annotation of a use
 * by an ordinary operator running on the very device the value is fixed
 * on (an operator's arguments are on its device), and one around a let
 * value or function body that is an on_device of that device already
 * (phase 0 fixes either alone). A placement of a million calls on one
 * device then writes nearly nothing, and plans in a third of the time.
 * Not where a memory scope is named: a placed device leaves its scope
 * open, and TVM's rules may still put a copy between two scopes there.
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"
#include "devplan/schedule.h"

typedef struct actx {
  const dp_sched_graph *g;
  struct dp__plan_ops ops;
  const uint32_t *placement; /* per node of g */
  dp__ptrmap node;           /* call of the graph -> its node + 1 (one map for a million calls,
                                not one per question) */
  uint8_t *what;             /* per node: IS_READER (its arguments may be copied to it),
                                RUNS_WHOLE (lean: an ordinary operator call whose device, placed
                                or fixed, has a type, an id and a target) */
  dp__ptrmap pinned;         /* let variable -> device of the value it carries */
  dp_vdev **fnpin;           /* per global function: the device its result is pinned to */
  int changed;
  int global_calls;          /* a call of a global function was met (fnpin matters) */
  int lean;                  /* dp_sched_annotate_lean: no annotation where the reader unifies */
  int scoped;                /* a memory scope is named somewhere (lean then is not) */
  int writes;                /* lean: the last round of find_pinned met a node to rewrite
                                below a global function (the function itself aside) */
  const dp_expr *top;        /* the global function find_pinned walks */
  int oom;
} actx;

enum { IS_READER = 1, RUNS_WHOLE = 2 };

static dp_vdev *lookup(const dp__ptrmap *m, const void *k) {
  dp__ptrslot *s = dp__ptrmap_find(m, k);
  return s ? s->ptr : NULL;
}

/* e's node in the graph, or DP_SCHED_NONE. */
static uint32_t node_of(const actx *c, const dp_expr *e) {
  dp__ptrslot *s = e->h.kind == DP_CALL ? dp__ptrmap_find(&c->node, e) : NULL;
  return s ? (uint32_t)((uintptr_t)s->ptr - 1) : DP_SCHED_NONE;
}

/* The device the placement puts node v on (NULL: none, or fixed). */
static dp_vdev *placed(const actx *c, uint32_t v) {
  const dp_sched_graph *g = c->g;
  uint32_t d = v == DP_SCHED_NONE ? DP_SCHED_NONE : c->placement[v];
  return v != DP_SCHED_NONE && g->dev[v] == DP_SCHED_NONE && d != DP_SCHED_NONE && d < g->ndevs ? g->devs[d] : NULL;
}

/* The device the value of e is fixed on, by the placement or by an
   annotation: a placed call; an on_device that fixes its body or result; a
   device_copy (its destination); a call of a global function whose result
   is fixed; a variable bound to such a value (or a parameter with a
   virtual_device); a projection of any of these. NULL otherwise. */
static dp_vdev *made_on(actx *c, const dp_expr *e) {
  for (;;) { /* (a soft annotation goes: what it wraps is placed) */
    if (e->h.kind == DP_PROJ) e = ((const dp_proj *)e)->tuple;
    else if (dp__soft_weight(&c->ops, e) >= 0) e = ((const dp_call *)e)->args[0];
    else break;
  }
  if (e->h.kind == DP_VAR) return lookup(&c->pinned, e);
  if (e->h.kind != DP_CALL) return NULL;
  const dp_call *call = (const dp_call *)e;
  dp__ondev p;
  dp_expr *body;
  dp_vdev *src, *dst;
  /* (an annotation that constrains its body: the value is made there, and
     each reader elsewhere takes a copy from there) */
  if (dp__on_device_props(&c->ops, e, &p)) return p.cresult || p.cbody ? p.vd : NULL;
  if (dp__device_copy_props(&c->ops, e, &body, &src, &dst)) return dst;
  if (call->fn->h.kind == DP_GLOBAL) {
    int i = dp_module_func_index(c->g->mod, ((const dp_global *)call->fn)->name);
    return i < 0 ? NULL : c->fnpin[i];
  }
  return placed(c, node_of(c, e));
}

/* The device a let's value or a function's body fixes: an on_device there
   (phase 0 reads it as fixed), else, through let bodies, made_on. */
static dp_vdev *pinned_value(actx *c, const dp_expr *e) {
  while (e->h.kind == DP_LET) e = ((const dp_let *)e)->body;
  dp__ondev p;
  if (dp__soft_weight(&c->ops, e) < 0 && dp__on_device_props(&c->ops, e, &p))
    return p.cbody || p.cresult ? p.vd : NULL;
  return made_on(c, e);
}

static int scope_of(const dp_vdev *vd) { return vd && vd->memory_scope[0]; }

/* Does e name a memory scope (an attribute's device, a parameter's or a
   let variable's, a function's)? */
static int names_scope(const dp_expr *e) {
  if (e->h.kind == DP_CALL && ((const dp_call *)e)->attrs) {
    const dp_attrs *a = ((const dp_call *)e)->attrs;
    for (uint32_t i = 0; i < a->n; i++)
      if (a->items[i].val.kind == DP_AV_VDEV && scope_of(a->items[i].val.u.vdev)) return 1;
  }
  if (e->h.kind == DP_LET) return scope_of(dp_var_vdev(((const dp_let *)e)->var));
  if (e->h.kind == DP_FUNC) {
    const dp_func *f = (const dp_func *)e;
    for (uint32_t i = 0; i < f->nparams; i++)
      if (scope_of(dp_var_vdev(f->params[i]))) return 1;
    return scope_of(f->vdev);
  }
  return 0;
}

static dp_vdev *pinned_use(actx *c, const dp_expr *e, uint32_t i, const dp_expr *kid);
static int copy_ok(actx *c, const dp_expr *e, uint32_t i, const dp_expr *kid);
static int needless(actx *c, const dp_expr *e, uint32_t i, const dp_expr *kid, const dp_vdev *vd);

/* Lean: would the rewrite change e (a soft annotation goes, a child is
   wrapped)? As rw_post decides. */
static int rewrites(actx *c, dp_expr *e) {
  if (dp__soft_weight(&c->ops, e) >= 0) return 1;
  uint32_t n = dp_expr_nchildren(e);
  for (uint32_t i = 0; i < n; i++) {
    dp_expr *kid = dp_expr_child(e, i);
    dp_vdev *vd = pinned_use(c, e, i, kid);
    if (!vd && !copy_ok(c, e, i, kid)) continue;
    if (vd && needless(c, e, i, kid, vd)) continue;
    return 1;
  }
  return 0;
}

static int pin_pre(void *ud, dp_expr *e) {
  actx *c = ud;
  if (c->lean && !c->scoped) c->scoped = names_scope(e);
  if (e->h.kind == DP_FUNC && dp__is_primitive((dp_func *)e)) return 0;
  if (e->h.kind == DP_CALL && ((dp_call *)e)->fn->h.kind == DP_GLOBAL) c->global_calls = 1;
  if (e->h.kind == DP_FUNC) {
    dp_func *f = (dp_func *)e;
    for (uint32_t i = 0; i < f->nparams; i++)
      if (dp_var_vdev(f->params[i]) && !dp_vdev_is_fully_unconstrained(dp_var_vdev(f->params[i])) &&
          dp__ptrmap_put(&c->pinned, f->params[i], dp_var_vdev(f->params[i])) < 0)
        return c->oom = 1, -1;
  }
  if (e->h.kind == DP_LET) {
    dp_let *l = (dp_let *)e;
    dp_vdev *vd = pinned_value(c, l->value);
    if (vd && lookup(&c->pinned, l->var) != vd) {
      if (dp__ptrmap_put(&c->pinned, l->var, vd) < 0) return c->oom = 1, -1;
    }
  }
  if (c->lean && !c->writes && e != c->top) c->writes = rewrites(c, e);
  return 1;
}

/* The let variables and global functions that carry pinned values. */
static int find_pinned(actx *c) {
  dp_module *m = c->g->mod;
  for (uint32_t round = 0; round <= m->nfuncs; round++) {
    c->changed = 0;
    c->writes = 0; /* (the last round's answer holds: the maps are final in it) */
    for (uint32_t i = 0; i < m->nfuncs; i++) {
      dp_visitor v = {pin_pre, NULL, c};
      c->top = &m->funcs[i].fn->e;
      if (dp_visit(&m->funcs[i].fn->e, &v) < 0) return -1; /* (out of memory: its own or pin_pre's) */
      dp_func *f = m->funcs[i].fn;
      dp_vdev *vd = dp__is_primitive(f) ? NULL
                    : f->vdev && !dp_vdev_is_fully_unconstrained(f->vdev) ? f->vdev
                    : pinned_value(c, f->body);
      if (vd != c->fnpin[i]) {
        c->fnpin[i] = vd;
        c->changed = 1;
      }
    }
    if (!c->changed || !c->global_calls) return 0; /* (what fnpin says matters to calls of globals) */
  }
  c->writes = 1; /* (no fixed point within the rounds: the maps may still move) */
  return 0;
}

/* ---- the rewrite ---- */

/* Where child i of e uses a value fixed on a device (made_on): that
   device, else NULL. Not the binding slots, a callee, a projection's
   tuple (the projection's uses are wrapped instead), what an annotation
   that constrains its body or a copy wraps (the user's), nor a let (its
   own body is a use, wrapped there: following a chain of lets from each
   would be quadratic), nor what is not a tensor or a tuple. */
static dp_vdev *pinned_use(actx *c, const dp_expr *e, uint32_t i, const dp_expr *kid) {
  if (e->h.kind == DP_LET && i == 0) return NULL;
  if (e->h.kind == DP_FUNC && i < ((const dp_func *)e)->nparams) return NULL;
  if (e->h.kind == DP_PROJ || (e->h.kind == DP_CALL && i == 0)) return NULL;
  dp_expr *body;
  dp_vdev *src, *dst;
  dp__ondev p;
  if ((dp__on_device_props(&c->ops, e, &p) && p.cbody && p.vd) ||
      dp__device_copy_props(&c->ops, e, &body, &src, &dst))
    return NULL;
  const dp_type *t = kid->type;
  if (kid->h.kind == DP_LET || !t || (t->h.kind != DP_TY_TENSOR && t->h.kind != DP_TY_TUPLE)) return NULL;
  return made_on(c, kid);
}

/* Where child i of e is an argument of a call of the graph (an ordinary
   operator's, a fused kernel's) that nothing fixes: a copy may go there
   (an unconstrained on_device, as phase 0b marks one), so that a value
   nobody placed (a parameter, a constant, an annotation that leaves its
   result free, shared by two readers) read on two devices is copied, not
   a conflict, whatever operators read it (phase 0b passes no demand
   through the memory and VM operators). Tensors and tuples only. */
static int copy_ok(actx *c, const dp_expr *e, uint32_t i, const dp_expr *kid) {
  uint32_t v;
  if (e->h.kind != DP_CALL || i == 0 || (v = node_of(c, e)) == DP_SCHED_NONE || !(c->what[v] & IS_READER))
    return 0;
  dp__ondev p;
  if (dp__on_device_props(&c->ops, kid, &p) && p.cresult) return 0; /* (made_on's) */
  const dp_type *t = kid->type;
  return t && (t->h.kind == DP_TY_TENSOR || t->h.kind == DP_TY_TUPLE);
}

/* Lean: is the annotation of child i of e (kid, fixed on vd) one TVM's
   rules make no difference for? Where e is an ordinary operator call
   running on vd (the very device object: devices are interned), since
   TVM's rules put an ordinary operator's arguments on its device; and
   where e is a let whose value, or a function whose body, kid is, kid
   an on_device of vd that leaves its result free: phase 0 fixes kid
   there as it would fix the annotation (and merge the two). */
static int needless(actx *c, const dp_expr *e, uint32_t i, const dp_expr *kid, const dp_vdev *vd) {
  if (e->h.kind == DP_CALL) {
    const dp_sched_graph *g = c->g;
    uint32_t v = node_of(c, e);
    if (v == DP_SCHED_NONE || !(c->what[v] & RUNS_WHOLE)) return 0;
    return (g->dev[v] != DP_SCHED_NONE ? g->devs[g->dev[v]] : placed(c, v)) == vd;
  }
  int fixes = (e->h.kind == DP_LET && i == 1) || (e->h.kind == DP_FUNC && i == ((const dp_func *)e)->nparams);
  dp__ondev p;
  return fixes && dp__soft_weight(&c->ops, kid) < 0 && dp__on_device_props(&c->ops, kid, &p) && p.cbody &&
         !p.cresult && p.vd == vd;
}

static dp_expr *rw_pre(void *ud, dp_expr *orig, dp_err **err) {
  (void)ud;
  (void)err;
  if (orig->h.kind == DP_FUNC && dp__is_primitive((dp_func *)orig)) return dp_retain(orig);
  return NULL;
}

static dp_expr *rw_post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  actx *c = ud;
  if (dp__soft_weight(&c->ops, orig) >= 0) return dp_retain(((dp_call *)rebuilt)->args[0]);
  uint32_t n = dp_expr_nchildren(orig);
  dp_expr *out = dp_retain(rebuilt);
  /* (an annotation keeps its body's type, and so each node rebuilt keeps
     its own: the module stays typed without inference) */
  if (!out->type && orig->type) dp_expr_set_type(out, orig->type);
  dp_expr *small[8], **kids = NULL;
  for (uint32_t i = 0; i < n; i++) {
    dp_expr *kid = dp_expr_child(orig, i);
    dp_vdev *vd = pinned_use(c, orig, i, kid);
    if (!vd && !copy_ok(c, orig, i, kid)) continue;
    if (vd && c->lean && needless(c, orig, i, kid, vd)) continue;
    if (!kids) {
      kids = n <= 8 ? small : dp_malloc((size_t)n * sizeof *kids);
      if (!kids) goto oom;
      for (uint32_t k = 0; k < n; k++) kids[k] = dp_retain(dp_expr_child(rebuilt, k));
    }
    dp_expr *w = dp__on_device_at(&c->ops, kids[i], vd, vd != NULL, 0, kids[i]->span, err);
    if (!w) goto fail;
    dp_release(kids[i]);
    kids[i] = w;
  }
  if (kids) {
    dp_expr *r = dp_expr_with_children(rebuilt, kids);
    for (uint32_t k = 0; k < n; k++) dp_release(kids[k]);
    if (kids != small) free(kids);
    kids = NULL;
    if (!r) goto oom;
    dp_release(out);
    out = r;
    if (!out->type && orig->type) dp_expr_set_type(out, orig->type);
  }
  return out;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
fail:
  if (kids) {
    for (uint32_t k = 0; k < n; k++) dp_release(kids[k]);
    if (kids != small) free(kids);
  }
  dp_release(out);
  return NULL;
}

static dp_module *annotate(const dp_sched_graph *g, const uint32_t *placement, int lean, dp_err **err) {
  actx c = {.g = g, .lean = lean, .placement = placement};
  dp_module *m = g->mod, *out = NULL;
  if (dp__plan_ops(m->ctx, &c.ops, err) < 0) return NULL;
  c.fnpin = dp_calloc((size_t)m->nfuncs + 1, sizeof *c.fnpin);
  c.what = dp_calloc((size_t)g->n + 1, 1);
  if (!c.fnpin || !c.what) goto oom;
  for (uint32_t v = 0; v < g->n; v++) {
    if (g->kind[v] != DP_TASK_CALL) continue;
    const dp_call *call = (const dp_call *)g->expr[v];
    int special = call->fn->h.kind == DP_OP &&
                  (dp__op_rule(&c.ops, (const dp_op *)call->fn) != OP_ORDINARY || dp__is_lowered(&c.ops, call));
    if (dp__ptrmap_put(&c.node, call, (void *)((uintptr_t)v + 1)) < 0) goto oom;
    c.what[v] = special ? 0 : IS_READER;
    if (!lean || special || call->fn->h.kind != DP_OP) continue;
    dp_vdev *runs = g->dev[v] != DP_SCHED_NONE ? g->devs[g->dev[v]] : placed(&c, v);
    if (runs && runs->device_type && runs->virtual_device_id >= 0 && runs->target) c.what[v] |= RUNS_WHOLE;
  }
  /* @main's parameters a placement puts somewhere (DP_GRAPH_PARAMS) */
  for (uint32_t i = 0; i < g->nparams; i++) {
    uint32_t v = g->param0 + i, d = placement[v];
    if (g->dev[v] == DP_SCHED_NONE && d != DP_SCHED_NONE && d < g->ndevs &&
        dp__ptrmap_put(&c.pinned, g->expr[v], g->devs[d]) < 0)
      goto oom;
  }
  if (find_pinned(&c) < 0) goto oom;
  /* (with memory scopes a device placed is not whole: TVM's rules may
     still give a value and its reader two scopes, a copy between them) */
  if (c.scoped || m->nprims) c.lean = 0;
  /* (lean, and nothing to write below the functions: each function's own
     node alone, as the rewrite would treat it, its body wrapped) */
  int rewrite = !c.lean || c.writes;
  out = dp_module_copy(m);
  if (!out) goto oom;
  /* @main's result device, one past the nodes (DP_GRAPH_PARAMS) */
  dp_vdev *result = NULL;
  if ((g->mode & DP_GRAPH_PARAMS) && placement[g->n] != DP_SCHED_NONE && placement[g->n] < g->ndevs)
    result = g->devs[placement[g->n]];
  dp_rewriter rw = {rw_pre, rw_post, &c};
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    if (dp__is_primitive(m->funcs[i].fn)) continue;
    dp_expr *fe = &m->funcs[i].fn->e;
    dp_expr *f = rewrite ? dp_rewrite(fe, &rw, err) : rw_post(&c, fe, fe, err);
    if (f && result && strcmp(m->funcs[i].global->name, "main") == 0) {
      dp_func *fn = (dp_func *)f;
      dp_func *r = dp_func_new_generic(fn->ntparams, fn->tparams, fn->nparams, fn->params, fn->body,
                                       fn->ret, fn->attrs, result, fn->e.span);
      if (r && f->type) dp_expr_set_type(&r->e, f->type);
      dp_release(f);
      f = (dp_expr *)r;
      if (!f) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    }
    int rc = f ? dp_module_set_func(out, m->funcs[i].global->name, (dp_func *)f, err) : -1;
    dp_release(f);
    if (rc < 0) {
      dp_release(out);
      out = NULL;
      break;
    }
  }
  goto done;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
done:
  dp__plan_ops_free(&c.ops);
  dp__ptrmap_free(&c.node);
  dp__ptrmap_free(&c.pinned);
  free(c.fnpin);
  free(c.what);
  return out;
}

dp_module *dp_sched_annotate(const dp_sched_graph *g, const uint32_t *placement, dp_err **err) {
  return annotate(g, placement, 0, err);
}

dp_module *dp_sched_annotate_lean(const dp_sched_graph *g, const uint32_t *placement, dp_err **err) {
  return annotate(g, placement, 1, err);
}
