/*
 * The plan verifier (dp_plan_verify, plan.h): does a planned module say one
 * consistent thing about where every value lives? It reads the module
 * alone, as a later pass reads it lexically (TVM's device-aware visitors),
 * and never the planner's domains, so that it checks the planner rather
 * than repeating it.
 *
 * One explicit-stack walk per function carries, top down, the context of
 * each position: the device a reader infers there (the function's
 * virtual_device, then a fixed on_device's device for its body, a
 * device_copy's source for its argument). Bottom up it computes where each
 * value lives: a parameter where its virtual_device says, a let variable
 * where its value lives, a global or function value where its result lives,
 * an on_device where it says, a device_copy at its destination, a call of a
 * function where the function's result lives, anything else where its
 * context is. Then, at each node:
 *
 *   argument    an operator's arguments live where the call runs (the memory
 *               and VM dialect: shapes and sizes on the host, in whatever
 *               memory scope defaulting gave them, as the host device leaves
 *               it open); a function's arguments where its parameters are;
 *   copy        a device_copy's argument lives at its source, and the source
 *               differs from the destination (its consumer's side is the
 *               context check of the copy itself);
 *   annotation  every function and parameter has a virtual_device, a body
 *               lives where its function's virtual_device says, an on_device
 *               is fixed (a planned module marks each change of device with
 *               one) and its body lives where it says;
 *   context     an expression that carries no device of its own (anything
 *               but variables, globals, functions and on_device) lives
 *               where its context says: a reader cannot see it otherwise;
 *   input       with the input module: its annotations hold in the output.
 *               The two are walked together with every on_device and
 *               device_copy looked through (the planner adds and removes
 *               those and nothing else): an on_device's device holds for
 *               the expression under it (for the value it gives, when fixed
 *               or a let value or function body, phase 0's rule), a
 *               device_copy's source for its argument and its destination
 *               for its value, parameter and function annotations for the
 *               planned ones; "holds" means the planned device refines it.
 *               An annotation around a call_lowered of a primfn holds for
 *               phase 0's wrapper around it, which a copy may follow.
 *
 * Devices are compared after canonicalisation through the configuration;
 * primitive functions (not planned) are checked by refinement. Linear in
 * the module: shared nodes and variables are found through a pointer map,
 * everything else through the walk's own stacks.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"

enum { ROLE_USE, ROLE_PARAM, ROLE_LET };

/* What the walk knows of one node. Devices are canonical and borrowed (the
   walk's cache holds them); NULL: unknown (no check is made with it). */
typedef struct vrec {
  dp_vdev *dev;     /* where its value lives */
  dp_vdev *core;    /* where the expression under its on_device / device_copy chain lives */
  dp_vdev *ctx;     /* what its position implies */
  dp_func *fn;      /* a function value: the function, when known */
  uint8_t carrier;  /* it carries its own device (variable, global, function, on_device) */
} vrec;

typedef struct frame {
  dp_expr *e;
  dp_vdev *ctx;
  const dp_expr *in;        /* the input's node it stands for (annotations looked through), or NULL */
  const dp_primfn *pf;      /* a call_lowered's argument tuple: the primfn, if one */
  uint32_t i, n, base;
  uint8_t lowered;          /* a call_lowered's argument tuple */
} frame;

typedef struct vwalk {
  dp_module *m;
  const dp_config *cfg;
  dp_ctx *ctx;
  struct dp__plan_ops ops;
  frame *fr; uint32_t nfr, capfr;
  vrec *val; uint32_t nval, capval;      /* results of the children awaiting their parent */
  vrec *recs; uint32_t nrecs, caprecs;   /* shared nodes and bound variables */
  dp__ptrmap seen;                          /* node -> index in recs */
  dp__ptrmap canon;                         /* device -> index in cv */
  dp_vdev **cv; uint32_t ncv, capcv;     /* canonical devices (held; NULL: none) */
  const dp_defn *def;    /* the global function being walked */
  dp_violations *out;
  uint32_t limit, capv;
  int oom;
} vwalk;

/* ---- devices ---- */

/* The canonical form of v (borrowed), NULL for NULL or a device the
   configuration cannot canonicalise (an annotation violation at e). */
static dp_vdev *canon(vwalk *w, dp_vdev *v, dp_expr *e);

static char *vd_text(const dp_vdev *v, const dp_vdev *other) {
  char *a = dp__vdev_short(v), *b = other ? dp__vdev_short(other) : NULL;
  /* two devices that read the same in short differ in their target or id */
  if (a && b && strcmp(a, b) == 0 && v) {
    free(a);
    a = dp_vdev_str(v);
  }
  free(b);
  return a;
}

/* A violation at expression e; its position is e's, or `use`'s where e is a
   variable or global (their nodes carry the position of the definition,
   not of the use). */
static void violate_in(vwalk *w, const char *kind, dp_expr *e, const dp_expr *use,
                       dp_vdev *expected, dp_vdev *actual, const char *fmt, va_list ap) {
  dp_violations *o = w->out;
  o->total++;
  if (w->limit && o->n >= w->limit) return;
  char buf[1024];
  vsnprintf(buf, sizeof buf, fmt, ap);
  if (dp_grow((void **)&o->v, &w->capv, o->n + 1, sizeof *o->v) < 0) {
    w->oom = 1;
    return;
  }
  char *msg = dp_strdup(buf);
  if (!msg) {
    w->oom = 1;
    return;
  }
  int carrier = e && (e->h.kind == DP_VAR || e->h.kind == DP_GLOBAL);
  dp_span at = e ? (carrier && use ? use->span : e->span) : DP_NOSPAN;
  o->v[o->n++] = (dp_violation){kind, msg, at, e ? dp_retain(e) : NULL,
                                expected ? dp_retain(expected) : NULL,
                                actual ? dp_retain(actual) : NULL};
}

static void violate(vwalk *w, const char *kind, dp_expr *e, dp_vdev *expected, dp_vdev *actual,
                    const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  violate_in(w, kind, e, NULL, expected, actual, fmt, ap);
  va_end(ap);
}

static void violate_use(vwalk *w, const char *kind, dp_expr *e, const dp_expr *use,
                        dp_vdev *expected, dp_vdev *actual, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  violate_in(w, kind, e, use, expected, actual, fmt, ap);
  va_end(ap);
}

/* "add at 3:5"; a variable or global used in parent: "%a in add at 3:5". */
static char *describe_in(vwalk *w, const dp_expr *e, const dp_expr *parent) {
  char *d = dp__describe(w->ctx, e);
  if (!parent || !d || (e->h.kind != DP_VAR && e->h.kind != DP_GLOBAL)) return d;
  char *p = dp__describe(w->ctx, parent);
  const char *name = e->h.kind == DP_VAR ? ((const dp_var *)e)->name : ((const dp_global *)e)->name;
  size_t n = strlen(name) + (p ? strlen(p) : 1) + 8;
  char *r = dp_malloc(n);
  if (r) snprintf(r, n, "%c%s in %s", e->h.kind == DP_VAR ? '%' : '@', name, p ? p : "?");
  free(p);
  free(d);
  return r;
}

/* fmt reads what, have, where, want (four %s): the devices as text. */
static void mismatch_use(vwalk *w, const char *kind, dp_expr *e, const dp_expr *use,
                         dp_vdev *want, dp_vdev *have, const char *fmt, const char *what,
                         const char *where) {
  char *a = vd_text(have, want), *b = vd_text(want, have);
  violate_use(w, kind, e, use, want, have, fmt, what ? what : "?", a ? a : "?",
              where ? where : "", b ? b : "?");
  free(a);
  free(b);
}

static void mismatch(vwalk *w, const char *kind, dp_expr *e, dp_vdev *want, dp_vdev *have,
                     const char *fmt, const char *what, const char *where) {
  mismatch_use(w, kind, e, NULL, want, have, fmt, what, where);
}

static dp_vdev *canon(vwalk *w, dp_vdev *v, dp_expr *e) {
  if (!v) return NULL;
  dp__ptrslot *s = dp__ptrmap_find(&w->canon, v);
  if (s) return w->cv[s->val];
  dp_err *err = NULL;
  dp_vdev *c = dp_config_canonical(w->cfg, v, &err);
  if (!c) {
    char *t = dp_vdev_str(v), *d = dp__describe(w->ctx, e);
    violate(w, "annotation", e, NULL, NULL, "the virtual device %s of %s is not one of the "
            "configuration's: %s", t ? t : "?", d ? d : "?", err && err->msg ? err->msg : "?");
    free(t);
    free(d);
    dp_err_free(err);
  }
  if (dp_grow((void **)&w->cv, &w->capcv, w->ncv + 1, sizeof *w->cv) < 0 ||
      dp__ptrmap_set(&w->canon, v, w->ncv, 0) < 0) {
    dp_release(c);
    w->oom = 1;
    return NULL;
  }
  w->cv[w->ncv++] = c;
  return c;
}

/* Does have refine want (every field want constrains, have has alike)? */
static int refines(const dp_vdev *have, dp_vdev *want) {
  if (!have || !want) return 1;
  dp_vdev *j = dp_vdev_join((dp_vdev *)have, want);
  int ok = j == have;
  dp_release(j);
  return ok;
}

/* ---- the stacks ---- */

static void push_val(vwalk *w, vrec r) {
  if (dp_grow((void **)&w->val, &w->capval, w->nval + 1, sizeof *w->val) < 0) {
    w->oom = 1;
    return;
  }
  w->val[w->nval++] = r;
}

/* Remember r for node e (shared, or a variable bound here). */
static void remember(vwalk *w, const void *e, vrec r) {
  dp__ptrslot *s = dp__ptrmap_find(&w->seen, e);
  if (s) {
    w->recs[s->val] = r;
    return;
  }
  if (dp_grow((void **)&w->recs, &w->caprecs, w->nrecs + 1, sizeof *w->recs) < 0 ||
      dp__ptrmap_set(&w->seen, e, w->nrecs, 0) < 0) {
    w->oom = 1;
    return;
  }
  w->recs[w->nrecs++] = r;
}

static vrec *known(vwalk *w, const void *e) {
  dp__ptrslot *s = dp__ptrmap_find(&w->seen, e);
  return s ? &w->recs[s->val] : NULL;
}

/* ---- what the walk reads of a node ---- */

static int is_annotation(vwalk *w, const dp_expr *e) {
  if (e->h.kind != DP_CALL) return 0;
  const dp_expr *fn = ((const dp_call *)e)->fn;
  return (fn == (dp_expr *)w->ops.on_device || fn == (dp_expr *)w->ops.device_copy) &&
         ((const dp_call *)e)->nargs == 1;
}

/* e without its on_device and device_copy calls. */
static const dp_expr *strip(vwalk *w, const dp_expr *e) {
  while (e && is_annotation(w, e)) e = ((const dp_call *)e)->args[0];
  return e;
}

/* call_lowered(@f, (args...)): the planner reads it as @f(args...). */
static int is_lowered(vwalk *w, const dp_expr *e) {
  const dp_call *c = (const dp_call *)e;
  return e->h.kind == DP_CALL && dp__is_lowered(&w->ops, c) && c->args[0]->h.kind == DP_GLOBAL;
}

static const dp_primfn *lowered_primfn(vwalk *w, const dp_call *c) {
  return dp_module_primfn(w->m, ((const dp_global *)c->args[0])->name);
}

/* The context of child i of frame t. */
static dp_vdev *child_ctx(vwalk *w, frame *t, uint32_t i) {
  dp_expr *e = t->e;
  dp__ondev p;
  dp_expr *body;
  dp_vdev *src, *dst;
  if (e->h.kind == DP_FUNC) {
    dp_func *f = (dp_func *)e;
    return i == f->nparams ? canon(w, f->vdev, e) : NULL;
  }
  if (e->h.kind == DP_CALL && i == 1) {
    if (dp__on_device_props(&w->ops, e, &p)) return p.cbody && p.vd ? canon(w, p.vd, e) : t->ctx;
    if (dp__device_copy_props(&w->ops, e, &body, &src, &dst)) return canon(w, src, e);
  }
  return t->ctx;
}

/* The input's node child i of frame t stands for. */
static const dp_expr *child_in(vwalk *w, frame *t, uint32_t i) {
  if (!t->in) return NULL;
  if (is_annotation(w, t->e)) return i == 1 ? t->in : NULL;
  return strip(w, dp_expr_child(t->in, i));
}

/* First reach of e: a leaf's result right away, a frame for the rest. */
static void reach(vwalk *w, dp_expr *e, dp_vdev *ctx, const dp_expr *in, int role,
                  int lowered, const dp_primfn *pf) {
  int k = e->h.kind;
  if (k == DP_OP || k == DP_CTOR) {
    push_val(w, (vrec){.carrier = 1});
    return;
  }
  vrec *r = e->h.rc > 1 && role == ROLE_USE ? known(w, e) : NULL;
  if (r) { /* a variable's use, or a shared node met again */
    vrec v = *r;
    if (!v.carrier && v.dev && ctx && v.dev != ctx) {
      char *d = dp__describe(w->ctx, e);
      mismatch(w, "context", e, ctx, v.dev, "%s lives on %s%s, but it is also used where %s is "
               "expected (one node, two devices)", d, NULL);
      free(d);
    }
    v.ctx = ctx;
    push_val(w, v);
    return;
  }
  if (in && !is_annotation(w, e) &&
      (in->h.kind != k || dp_expr_nchildren(in) != dp_expr_nchildren(e))) {
    char *d = dp__describe(w->ctx, e), *di = dp__describe(w->ctx, in);
    violate(w, "input", e, NULL, NULL, "%s does not stand where the input has %s", d, di);
    free(d);
    free(di);
    in = NULL;
  }
  vrec v = {.ctx = ctx, .carrier = k == DP_VAR || k == DP_GLOBAL || k == DP_FUNC};
  switch (k) {
  case DP_VAR:
    if (role == ROLE_PARAM) v.dev = canon(w, dp_var_vdev((dp_var *)e), e);
    v.core = v.dev;
    if (role != ROLE_USE && e->h.rc > 1) remember(w, e, v);
    push_val(w, v);
    return;
  case DP_GLOBAL: {
    v.fn = dp_module_func(w->m, ((dp_global *)e)->name);
    if (v.fn) {
      v.dev = v.core = canon(w, v.fn->vdev, &v.fn->e);
    }
    push_val(w, v);
    return;
  }
  case DP_CONST:
    v.dev = v.core = ctx;
    push_val(w, v);
    return;
  case DP_FUNC:
    if (dp__is_primitive((dp_func *)e)) { /* not planned: its own annotations only */
      v.fn = (dp_func *)e;
      v.dev = v.core = canon(w, v.fn->vdev, e);
      push_val(w, v);
      return;
    }
    break;
  default: break;
  }
  if (dp_grow((void **)&w->fr, &w->capfr, w->nfr + 1, sizeof *w->fr) < 0) {
    w->oom = 1;
    return;
  }
  w->fr[w->nfr++] = (frame){e, ctx, in, pf, 0, dp__nchildren(e), w->nval, (uint8_t)lowered};
}

/* Pattern variables live where the matched data lives. */
typedef struct patctx { vwalk *w; dp_vdev *data; } patctx;

static int pattern_var(void *ud, dp_var *v) {
  patctx *p = ud;
  remember(p->w, v, (vrec){p->data, p->data, NULL, NULL, 1});
  return p->w->oom ? -1 : 0;
}

static void bind_patterns(vwalk *w, const dp_match *m, dp_vdev *data) {
  patctx p = {w, data};
  for (uint32_t c = 0; c < m->n && !w->oom; c++)
    if (dp_pattern_vars(m->clauses[c].pat, pattern_var, &p) < 0) w->oom = 1;
}

/* Before child i of frame t: variables bound by what came before it. */
static void before_child(vwalk *w, frame *t, uint32_t i) {
  if (t->e->h.kind == DP_LET) {
    dp_let *l = (dp_let *)t->e;
    vrec *var = known(w, l->var);
    if (!var) return;
    if (i == 1 && l->value->h.kind == DP_FUNC) { /* so a recursive use sees it */
      var->fn = (dp_func *)l->value;
      var->dev = var->core = canon(w, var->fn->vdev, l->value);
    } else if (i == 2) {
      vrec *v = &w->val[t->base + 1];
      var->dev = var->core = v->dev;
      var->fn = v->fn;
    }
  } else if (t->e->h.kind == DP_MATCH && i == 1) {
    bind_patterns(w, (dp_match *)t->e, w->val[t->base].dev);
  }
}

/* ---- the checks, when a node's children are done ---- */

/* What a message says of the parent: where (with %s: warg in it). Made
   only for a violation: most checks pass. */
typedef struct said { const char *where, *warg; } said;

static void child_mismatch(vwalk *w, dp_expr *e, uint32_t k, const vrec *r, dp_vdev *want,
                           const char *fmt, said s) {
  dp_expr *c = dp__child(e, k);
  char *d = describe_in(w, c, e), where[300];
  snprintf(where, sizeof where, s.where, s.warg ? s.warg : "");
  mismatch_use(w, "argument", c, e, want, r->dev, fmt, d, where);
  free(d);
}

/* Child k of e (result r) where expected is asked (fmt and s word the
   message). A child carrying no device of its own was checked against its
   context already, which is what is expected unless the parent says
   otherwise. */
static void expect(vwalk *w, dp_expr *e, uint32_t k, const vrec *r, dp_vdev *expected,
                   const char *fmt, said s) {
  if (!expected || !r->dev || r->dev == expected) return;
  if (!r->carrier && (r->ctx == expected || r->dev != r->ctx)) return;
  child_mismatch(w, e, k, r, expected, fmt, s);
}

/* Same, by refinement: a primitive function's partial annotations, and the
   host positions of the memory and VM operators (the host device leaves its
   memory scope open, and defaulting fills it from the call, as TVM's
   SetResultDefaultThenParams does). */
static void expect_refined(vwalk *w, dp_expr *e, uint32_t k, const vrec *r, dp_vdev *want,
                           const char *fmt, said s) {
  if (refines(r->dev, want)) return;
  if (!r->carrier && r->dev != r->ctx) return; /* its context check said it */
  child_mismatch(w, e, k, r, want, fmt, s);
}

static void own_context(vwalk *w, dp_expr *e, dp_vdev *dev, dp_vdev *ctx, const char *fmt) {
  if (!dev || !ctx || dev == ctx) return;
  char *d = dp__describe(w->ctx, e);
  mismatch(w, "context", e, ctx, dev, fmt, d, NULL);
  free(d);
}

/* Operator calls: planner.md's table (rules.c), read from the other side. */
static dp_vdev *check_op(vwalk *w, frame *t, dp_call *c, const vrec *kids) {
  dp_op *op = (dp_op *)c->fn;
  const dp__oprule *r = &dp__op_rules[dp__op_rule(&w->ops, op)];
  dp_vdev *host = canon(w, w->cfg->host_vdev, &c->e), *ctx = t->ctx;
  for (uint32_t i = 0; i < c->nargs; i++) {
    int rule = dp__arg_rule(r, i);
    if (rule == ARG_CALL)
      expect(w, &c->e, 1 + i, &kids[1 + i], ctx, "%s lives on %s, but %s on %s", (said){"%s runs", op->name});
    else if (rule == ARG_HOST)
      expect_refined(w, &c->e, 1 + i, &kids[1 + i], host,
                     "%s lives on %s, but %s it on the host, %s", (said){"%s needs", op->name});
  }
  dp_vdev *fixed = ctx;
  if (r->result == RES_HOST) fixed = host;
  if (r->result == RES_ATTR) {
    const dp_aval *v = dp_op_attr(op, c->attrs, "virtual_device");
    if (v && v->kind == DP_AV_VDEV) fixed = canon(w, v->u.vdev, &c->e);
  }
  /* the result lives where the call stands when that refines what the rule
     fixes: defaulting fills the fields the host device or the attribute as
     written leave open, and the planner keeps the attribute as written */
  return ctx && refines(ctx, fixed) ? ctx : fixed;
}

static void check_lowered_args(vwalk *w, frame *t, const vrec *kids) {
  const dp_primfn *pf = t->pf;
  dp_tuple *tu = (dp_tuple *)t->e;
  for (uint32_t i = 0; i < tu->n && i < pf->nargs; i++) {
    const char *s = pf->args[i].scope;
    if (!s || !s[0] || !kids[i].dev || strcmp(kids[i].dev->memory_scope, s) == 0) continue;
    char *d = dp__describe(w->ctx, tu->fields[i]);
    violate(w, "argument", tu->fields[i], NULL, kids[i].dev, "%s lives in memory scope \"%s\", "
            "but buffer %u of primfn @%s is in scope \"%s\"", d, kids[i].dev->memory_scope, i,
            pf->name, s);
    free(d);
  }
}

/* A call of a function value: where its result lives. */
static dp_vdev *check_fn_call(vwalk *w, frame *t, dp_call *c, const vrec *kids) {
  dp_func *f = kids[0].fn;
  if (!f) return kids[0].dev ? kids[0].dev : t->ctx;
  int prim = dp__is_primitive(f);
  for (uint32_t i = 0; i < c->nargs && i < f->nparams; i++) {
    dp_vdev *pv = canon(w, dp_var_vdev(f->params[i]), &f->params[i]->e);
    said s = {"parameter %%%s of the function called", f->params[i]->name};
    if (prim)
      expect_refined(w, &c->e, 1 + i, &kids[1 + i], pv, "%s lives on %s, but %s asks for %s", s);
    else expect(w, &c->e, 1 + i, &kids[1 + i], pv, "%s lives on %s, but %s is on %s", s);
  }
  dp_vdev *fv = canon(w, f->vdev, &f->e);
  if (!prim) return fv;
  if (!refines(t->ctx, fv)) {
    char *d = dp__describe(w->ctx, &c->e);
    mismatch(w, "context", &c->e, fv, t->ctx, "%s runs on %s%s, but the primitive function's "
             "virtual_device is %s", d, NULL);
    free(d);
  }
  return t->ctx;
}

static void check_copy(vwalk *w, dp_call *c, const vrec *body, dp_vdev *src, dp_vdev *dst) {
  if (!src || !dst || src == dst) {
    char *d = dp__describe(w->ctx, &c->e), *t = dp__vdev_short(src);
    if (!src || !dst)
      violate(w, "copy", &c->e, NULL, NULL, "%s has no %s", d,
              !src ? "src_virtual_device" : "dst_virtual_device");
    else
      violate(w, "copy", &c->e, dst, src, "%s copies from %s to %s: a copy to the same device", d,
              t ? t : "?", t ? t : "?");
    free(t);
    free(d);
  }
  if (body->dev && src && body->dev != src && (body->carrier || body->dev == body->ctx)) {
    dp_expr *a = c->args[0];
    char *da = describe_in(w, a, &c->e);
    mismatch_use(w, "copy", a, &c->e, src, body->dev, "%s lives on %s, but %s copies from %s", da,
                 "the copy");
    free(da);
  }
}

static vrec post_call(vwalk *w, frame *t, dp_call *c, const vrec *kids) {
  vrec r = {.ctx = t->ctx, .dev = t->ctx};
  dp__ondev p;
  dp_expr *body;
  dp_vdev *src, *dst;
  if (dp__on_device_props(&w->ops, &c->e, &p)) {
    dp_vdev *vd = canon(w, p.vd, &c->e);
    r.carrier = 1;
    r.core = kids[1].core;
    r.dev = p.cresult && vd ? vd : kids[1].dev;
    if (!vd || !p.cbody || !p.cresult) {
      char *d = dp__describe(w->ctx, &c->e);
      violate(w, "annotation", &c->e, NULL, NULL, "%s does not fix a device (virtual_device, "
              "constrain_body and constrain_result): a planned module marks each change of "
              "device with a fixed on_device", d);
      free(d);
    }
    if (p.cbody) expect(w, &c->e, 1, &kids[1], vd, "%s lives on %s, but %s says %s", (said){"on_device", NULL});
    return r;
  }
  if (dp__device_copy_props(&w->ops, &c->e, &body, &src, &dst)) {
    src = canon(w, src, &c->e);
    dst = canon(w, dst, &c->e);
    check_copy(w, c, &kids[1], src, dst);
    r.dev = dst;
    r.core = kids[1].core;
    own_context(w, &c->e, dst, t->ctx, "%s copies to %s%s, but its consumer expects %s");
    return r;
  }
  int lowered = is_lowered(w, &c->e);
  const dp_primfn *pf = lowered ? lowered_primfn(w, c) : NULL;
  if (lowered && !pf) { /* a lowered call of a function: where it returns */
    r.dev = kids[1].dev ? kids[1].dev : t->ctx;
    own_context(w, &c->e, r.dev, t->ctx, "%s returns on %s%s, but where it stands %s is "
                "expected (no on_device says so)");
  } else if (c->fn->h.kind == DP_OP && !pf) {
    r.dev = check_op(w, t, c, kids);
    own_context(w, &c->e, r.dev, t->ctx, "%s gives its result on %s%s, but where it stands %s "
                "is expected");
  } else if (c->fn->h.kind == DP_CTOR) {
    for (uint32_t i = 0; i < c->nargs; i++)
      expect(w, &c->e, 1 + i, &kids[1 + i], t->ctx, "%s lives on %s, but %s on %s",
             (said){"the constructed value lives", NULL});
  } else if (pf) {
    const char *s = pf->result.scope;
    if (s && s[0] && t->ctx && strcmp(t->ctx->memory_scope, s) != 0) {
      char *d = dp__describe(w->ctx, &c->e);
      violate(w, "context", &c->e, NULL, t->ctx, "%s stands where memory scope \"%s\" is "
              "expected, but primfn @%s gives its result in scope \"%s\"", d,
              t->ctx->memory_scope, pf->name, s);
      free(d);
    }
  } else {
    r.dev = check_fn_call(w, t, c, kids);
    r.fn = NULL;
    own_context(w, &c->e, r.dev, t->ctx, "%s returns on %s%s, but where it stands %s is "
                "expected (no on_device says so)");
  }
  r.core = r.dev;
  return r;
}

/* "@main at 1:1" for a global function, else "fn at 3:4". */
static char *fn_desc(vwalk *w, const dp_func *f) {
  char *d = dp__describe(w->ctx, &f->e);
  if (!d || f != w->def->fn) return d;
  size_t n = strlen(d) + strlen(w->def->global->name) + 4;
  char *r = dp_malloc(n);
  if (r) snprintf(r, n, "@%s%s", w->def->global->name, d + 2); /* d is "fn..." */
  free(d);
  return r;
}

static vrec post_func(vwalk *w, frame *t, dp_func *f, const vrec *kids) {
  dp_vdev *fv = canon(w, f->vdev, &f->e);
  char *d = fn_desc(w, f);
  if (!f->vdev) violate(w, "annotation", &f->e, NULL, NULL, "%s has no virtual_device", d);
  for (uint32_t i = 0; i < f->nparams; i++)
    if (!dp_var_vdev(f->params[i]))
      violate(w, "annotation", &f->params[i]->e, NULL, NULL,
              "parameter %%%s of %s has no virtual_device", f->params[i]->name, d);
  expect(w, &f->e, f->nparams, &kids[f->nparams], fv, "%s lives on %s, but %s is %s",
         (said){"the function's virtual_device", NULL});
  free(d);
  return (vrec){fv, fv, t->ctx, f, 1};
}

/* ---- the input's annotations ---- */

/* NULL when want (an annotation of the input, at ann) holds for have,
   else want canonicalised. */
static dp_vdev *fails(vwalk *w, const dp_expr *ann, dp_vdev *want, dp_vdev *have) {
  want = canon(w, want, (dp_expr *)ann);
  return !want || !have || refines(have, want) ? NULL : want;
}

/* The violation of want (canonical) by have, at the planned expression at
   (used in use); fmt reads subject, want, have. */
static void input_fails(vwalk *w, dp_expr *at, const dp_expr *use, dp_vdev *want, dp_vdev *have,
                        const char *fmt, const char *subject) {
  char *a = vd_text(want, have), *b = vd_text(have, want);
  violate_use(w, "input", at, use, want, have, fmt, subject, a ? a : "?", b ? b : "?");
  free(a);
  free(b);
}

/* An annotation of the input and the expression it is about. */
static void input_ann(vwalk *w, dp_expr *at, const dp_expr *use, const dp_expr *ann,
                      const char *role, const dp_expr *what, dp_vdev *want, dp_vdev *have) {
  if (!(want = fails(w, ann, want, have))) return;
  char *da = dp__describe(w->ctx, ann), *dw = dp__describe(w->ctx, what);
  char subject[700];
  snprintf(subject, sizeof subject, "%s puts %s%s", da ? da : "?", role, dw ? dw : "?");
  input_fails(w, at, use, want, have, "%s on %s in the input, but the planned module has it on %s",
              subject);
  free(da);
  free(dw);
}

/* The device of the value at some level of the planned chain at (its
   on_device and device_copy calls, outermost first, then the expression
   under them, whose device is r->core) that refines want (an annotation of
   the input, at ann); else r->dev. The planner puts copies outside an
   annotation (phase 0b before a consumer, capture where a context expects
   another device) and drops a copy between equal ends, so the value the
   input annotated stands at some level of the chain, not always the
   outermost. */
static dp_vdev *chain_value(vwalk *w, dp_expr *at, const dp_expr *ann, dp_vdev *want,
                            const vrec *r) {
  dp_vdev *cw = canon(w, want, (dp_expr *)ann);
  if (!cw || refines(r->dev, cw)) return r->dev;
  for (const dp_expr *x = at; is_annotation(w, x); x = ((const dp_call *)x)->args[0]) {
    dp__ondev p;
    dp_expr *body;
    dp_vdev *src, *dst, *v = NULL;
    if (dp__on_device_props(&w->ops, x, &p)) v = p.cresult ? p.vd : NULL;
    else if (dp__device_copy_props(&w->ops, x, &body, &src, &dst)) v = dst;
    if (v && refines(canon(w, v, (dp_expr *)x), cw)) return canon(w, v, (dp_expr *)x);
  }
  return refines(r->core, cw) ? r->core : r->dev;
}

/* The annotations of the input's child k of in (the output's child has
   result r) hold: the outermost one for the value at that position, the
   innermost for the expression under them. pos_fixed: a let value or
   function body (phase 0 fixes a normal on_device there). */
static void input_child(vwalk *w, dp_expr *out, uint32_t k, const dp_expr *in, const vrec *r,
                        int pos_fixed) {
  const dp_expr *x = dp_expr_child(in, k), *core = strip(w, x);
  dp_expr *at = dp__child(out, k);
  dp__ondev p;
  dp_expr *body;
  dp_vdev *src, *dst;
  if (!is_annotation(w, x) || core->h.kind == DP_OP || core->h.kind == DP_CTOR) return;
  uint64_t before = w->out->total;
  if (dp__on_device_props(&w->ops, x, &p)) {
    if (p.cresult || (pos_fixed && p.cbody))
      input_ann(w, at, out, x, "the value of ", core, p.vd, chain_value(w, at, x, p.vd, r));
  } else if (dp__device_copy_props(&w->ops, x, &body, &src, &dst)) {
    input_ann(w, at, out, x, "the value of ", core, dst, chain_value(w, at, x, dst, r));
  }
  /* the same device failing the same annotation: said once */
  if (w->out->total != before && r->core == r->dev) return;
  /* a projection of an on_device (phase 0: on_device(t).0 is on_device(t.0))
     lives where that on_device says (input_node checks it); an annotation
     around it constrains the result of that on_device, which a copy may
     follow */
  if (core->h.kind == DP_PROJ &&
      dp__is_normal_on_device(&w->ops, ((const dp_proj *)core)->tuple, &p))
    return;
  const dp_expr *inner = x;
  while (is_annotation(w, ((const dp_call *)inner)->args[0])) inner = ((const dp_call *)inner)->args[0];
  /* phase 0 wraps a call_lowered of a primfn in an unconstrained on_device
     (a copy may follow the primfn's result scope): an annotation around it
     holds for the wrapper, whose value stands in the chain */
  int wrapped = is_lowered(w, core) && lowered_primfn(w, (const dp_call *)core);
  dp_vdev *want = NULL;
  if (dp__on_device_props(&w->ops, inner, &p)) want = p.cbody ? p.vd : NULL;
  else if (dp__device_copy_props(&w->ops, inner, &body, &src, &dst)) want = src;
  if (want)
    input_ann(w, at, out, inner, "", core, want,
              wrapped ? chain_value(w, at, inner, want, r) : r->core);
}

static void input_node(vwalk *w, frame *t, const vrec *self, const vrec *kids) {
  const dp_expr *in = t->in;
  dp_expr *e = t->e;
  dp__ondev p;
  if (e->h.kind == DP_PROJ && dp__on_device_props(&w->ops, ((const dp_proj *)in)->tuple, &p) &&
      p.cbody && !p.cresult && p.vd) {
    /* phase 0: on_device(t).0 is on_device(t.0): the projection is annotated */
    input_ann(w, e, NULL, ((const dp_proj *)in)->tuple, "", in, p.vd, self->dev);
    return;
  }
  for (uint32_t k = 0; k < t->n; k++) {
    int fixed = (e->h.kind == DP_LET && k == 1) ||
                (e->h.kind == DP_FUNC && k == ((dp_func *)e)->nparams);
    input_child(w, e, k, in, &kids[k], fixed);
  }
  if (e->h.kind == DP_FUNC) {
    const dp_func *fi = (const dp_func *)in, *fo = (const dp_func *)e;
    const char *fmt = "%s is annotated %s in the input, but the planned module has it on %s";
    char what[400], *d;
    dp_vdev *want;
    if ((want = fails(w, in, fi->vdev, self->dev))) {
      snprintf(what, sizeof what, "the result of %s", (d = fn_desc(w, fo)) ? d : "?");
      input_fails(w, e, NULL, want, self->dev, fmt, what);
      free(d);
    }
    for (uint32_t i = 0; i < fi->nparams; i++) {
      if (!(want = fails(w, &fi->params[i]->e, dp_var_vdev(fi->params[i]), kids[i].dev))) continue;
      snprintf(what, sizeof what, "parameter %%%s of %s", fi->params[i]->name,
               (d = fn_desc(w, fo)) ? d : "?");
      input_fails(w, &fo->params[i]->e, NULL, want, kids[i].dev, fmt, what);
      free(d);
    }
  }
}

/* All children of the top frame are done: its result, and the checks. */
static void complete(vwalk *w) {
  frame t = w->fr[--w->nfr];
  vrec *kids = w->val + t.base, r = {.ctx = t.ctx, .dev = t.ctx, .core = t.ctx};
  dp_expr *e = t.e;
  const char *same = "%s lives on %s, but %s is on %s";
  switch (e->h.kind) {
  case DP_CALL: r = post_call(w, &t, (dp_call *)e, kids); break;
  case DP_FUNC: r = post_func(w, &t, (dp_func *)e, kids); break;
  case DP_LET: expect(w, e, 2, &kids[2], t.ctx, same, (said){"the let", NULL}); break;
  case DP_TUPLE:
    if (t.lowered) {
      if (t.pf) check_lowered_args(w, &t, kids);
    }
    else
      for (uint32_t i = 0; i < t.n; i++) expect(w, e, i, &kids[i], t.ctx, same, (said){"the tuple", NULL});
    break;
  case DP_PROJ: expect(w, e, 0, &kids[0], t.ctx, same, (said){"the projection", NULL}); break;
  case DP_IF:
    for (uint32_t i = 0; i < 3; i++) expect(w, e, i, &kids[i], t.ctx, same, (said){"the if", NULL});
    break;
  case DP_MATCH:
    for (uint32_t i = 0; i < t.n; i++) expect(w, e, i, &kids[i], t.ctx, same, (said){"the match", NULL});
    break;
  default: /* references */
    for (uint32_t i = 0; i < t.n; i++) expect(w, e, i, &kids[i], t.ctx, same, (said){"the reference", NULL});
    break;
  }
  if (t.in && !is_annotation(w, e)) input_node(w, &t, &r, kids);
  w->nval = t.base;
  if (e->h.rc > 1) remember(w, e, r);
  push_val(w, r);
}

/* ---- the walk ---- */

static void verify_fn(vwalk *w, const dp_defn *def, const dp_expr *in) {
  dp_func *f = def->fn;
  w->def = def;
  w->nfr = w->nval = 0;
  reach(w, &f->e, NULL, in, ROLE_USE, 0, NULL);
  while (w->nfr && !w->oom) {
    frame *t = &w->fr[w->nfr - 1];
    if (t->i == t->n) {
      complete(w);
      continue;
    }
    uint32_t i = t->i++;
    before_child(w, t, i);
    dp_expr *k = dp__child(t->e, i);
    int role = (t->e->h.kind == DP_FUNC && i < ((dp_func *)t->e)->nparams) ? ROLE_PARAM
               : (t->e->h.kind == DP_LET && i == 0) ? ROLE_LET : ROLE_USE;
    int lowered = i == 2 && is_lowered(w, t->e);
    const dp_primfn *pf = lowered ? lowered_primfn(w, (dp_call *)t->e) : NULL;
    reach(w, k, child_ctx(w, t, i), child_in(w, t, i), role, lowered, pf);
  }
}

/* Every variable read inside its binder's scope (visit.h): a reader
   outside it has no value to read, wherever the value lives. */
static void verify_scopes(vwalk *w, dp_func *f) {
  dp_scope_error few[8];
  int n = dp_check_scopes(&f->e, few, 8);
  if (n < 0) {
    w->oom = 1;
    return;
  }
  for (int i = 0; i < n && i < 8; i++) {
    dp_err *e = dp_scope_error_new(w->ctx, &few[i], DP_ERR_VALUE);
    violate_use(w, "scope", &few[i].var->e, few[i].user, NULL, NULL, "%s",
                e && e->msg ? e->msg : "a variable is used outside its scope");
    dp_err_free(e);
  }
  if (n > 8) w->out->total += (uint64_t)(n - 8); /* counted, not listed */
}

/* The input's functions, each with its planned one. */
static void verify_module(vwalk *w, dp_module *input) {
  for (uint32_t i = 0; i < w->m->nfuncs && !w->oom; i++) {
    const char *name = w->m->funcs[i].global->name;
    verify_scopes(w, w->m->funcs[i].fn);
    dp_func *in = input ? dp_module_func(input, name) : NULL;
    if (input && !in)
      violate(w, "input", &w->m->funcs[i].fn->e, NULL, NULL, "@%s is not a function of the input",
              name);
    verify_fn(w, &w->m->funcs[i], in ? &in->e : NULL);
  }
  for (uint32_t j = 0; input && j < input->nfuncs && !w->oom; j++)
    if (!dp_module_func(w->m, input->funcs[j].global->name))
      violate(w, "input", NULL, NULL, NULL, "@%s of the input is not in the planned module",
              input->funcs[j].global->name);
}

int dp_plan_verify(dp_module *planned, const dp_config *cfg, dp_module *input, uint32_t limit,
                   dp_violations *out, dp_err **err) {
  *out = (dp_violations){0};
  vwalk w = {.m = planned, .cfg = cfg, .ctx = planned->ctx, .out = out, .limit = limit};
  if (dp__plan_ops(planned->ctx, &w.ops, err) < 0) return -1;
  verify_module(&w, input);
  dp__plan_ops_free(&w.ops);
  for (uint32_t i = 0; i < w.ncv; i++) dp_release(w.cv[i]);
  free(w.cv);
  free(w.fr);
  free(w.val);
  free(w.recs);
  dp__ptrmap_free(&w.seen);
  dp__ptrmap_free(&w.canon);
  if (w.oom) {
    dp_violations_clear(out);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  return 0;
}

void dp_violations_clear(dp_violations *v) {
  for (uint32_t i = 0; i < v->n; i++) {
    free(v->v[i].msg);
    dp_release(v->v[i].expr);
    dp_release(v->v[i].expected);
    dp_release(v->v[i].actual);
  }
  free(v->v);
  *v = (dp_violations){0};
}
