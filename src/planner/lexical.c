/*
 * A planned module's devices read from the module itself (lexical.c,
 * planner.h), as a later pass reads them (TVM's device-aware visitors),
 * instead of planning it again for its domains.
 *
 * PlanDevices' capture writes every device down: a function's body lives
 * where its virtual_device says, a parameter where its own says, a fixed
 * on_device's body where the on_device says, a device_copy's argument at
 * its source, and every other child where its parent runs (capture wraps
 * each child that lives elsewhere, and each let value, in a fixed
 * on_device). Bottom up each node has a device: a parameter its
 * virtual_device, a let variable its value's, a global or function value
 * its result's, an on_device its own, a device_copy its destination, a
 * call of a function its callee's result, anything else its position's.
 * Where a module says so consistently it is what planning it again finds:
 * each node is held to its annotations by the same rules, and nothing is
 * left for defaults. So the walk checks, at each child, that the child
 * lives where its parent wants it (an operator's or constructor's
 * arguments where the call runs, a function's where its parameters are, a
 * function body where the function says, a copy's argument at its source,
 * a tuple's fields, an if's parts, a let's body and a projection's tuple
 * where the node is), and that a value reached from two positions is read
 * on one device.
 *
 * It gives up (1: the caller plans the module for its domains, which knows
 * what to do) on anything else: a device missing or one planning by the
 * configuration would change (not canonical, or with a field left to
 * default), an on_device that is not fixed, a device_copy without its two
 * ends, a primitive function (planning does not enter one), the memory and
 * VM dialect, references, match, a call of anything but an operator, a
 * constructor, a global function or a function literal, and any check that
 * fails. One explicit-stack walk per function, in dp_visit's order (a
 * node with other references visited once per function, the first time;
 * such nodes and variables are found again by their mark, dp_expr.mark,
 * checked against the record it names, as index.c does: no pointer map),
 * for the report; and the same rules over a body's graph in post order
 * (dp__lexical_graph_read: positions top down, devices bottom up), for
 * PartitionByVirtualDevice, whose arrays are indexed by that order (its
 * variables' lets and the positions' scratch are the caller's arrays: no
 * per-node array of its own; each on_device is read as the caller builds
 * the graph, dp__lexical_on_device, planner.h).
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"

/* A node with other references: where it was first met. */
typedef struct lrec {
  dp_expr *e;
  dp_vdev *ctx, *dev; /* its position's device, its own (a variable: where it is bound) */
  uint32_t walk;      /* the walk (function) that met it last */
  uint8_t done;       /* posted in that walk (its device known) */
} lrec;

typedef struct lframe {
  dp_expr *e;
  dp_vdev *ctx;      /* where its position says it lives */
  uint32_t i, n;     /* next child, children */
  uint32_t base;     /* its children's devices: vals[base ..] */
  uint32_t rec;      /* its lrec + 1, 0: none */
  dp_vdev *ends[2];  /* an on_device's device; a device_copy's source and destination
                        (read once, by readable) */
} lframe;

/* The attributes of an on_device or device_copy found readable, and the
   devices they give (ends). Planning shares one attributes object among
   the annotations of one device: each is read once, not once per node. */
typedef struct lattrs {
  const dp_expr *op;  /* on_device or device_copy */
  const dp_attrs *a;  /* (held) */
  dp_vdev *ends[2];
} lattrs;

#define LX_ATTRS 4

struct dp__lexical {
  dp_module *m;
  const dp_config *cfg;
  const dp_op *on_device, *device_copy;
  const dp_op *op_ok;             /* the operator last found readable */
  lattrs seen[LX_ATTRS];          /* attributes found readable, the last few */
  uint32_t nextseen;
  dp_vdev **ok;                   /* the devices found settled */
  uint32_t nok, capok;
  lrec *recs;                     /* the nodes with other references (variables too),
                                     found by their mark (dp_expr.mark: the index here,
                                     checked against recs[].e, as index.c does) */
  uint32_t nrecs, caprecs, walk;
  int crossed;                    /* a node (not a variable) met in two walks */
  lframe *st;
  uint32_t sp, capst;
  dp_vdev **vals;                 /* the devices of the children being gathered */
  uint32_t nvals, capvals;
};

dp__lexical *dp__lexical_new(dp_module *m, const dp_config *cfg) {
  dp__lexical *lx = dp_calloc(1, sizeof *lx);
  if (!lx) return NULL;
  lx->m = m;
  lx->cfg = cfg;
  lx->on_device = dp_op_get(m->ctx, "on_device");
  lx->device_copy = dp_op_get(m->ctx, "device_copy");
  if (!lx->on_device || !lx->device_copy) {
    free(lx);
    return NULL;
  }
  return lx;
}

void dp__lexical_free(dp__lexical *lx) {
  if (!lx) return;
  for (uint32_t i = 0; i < LX_ATTRS; i++) dp_release((dp_attrs *)lx->seen[i].a);
  free(lx->ok);
  free(lx->recs);
  free(lx->st);
  free(lx->vals);
  free(lx);
}

int dp__lexical_settled(dp__lexical *lx, dp_vdev *vd) {
  if (!vd) return 0;
  for (uint32_t i = 0; i < lx->nok; i++)
    if (lx->ok[i] == vd) return 1;
  dp_vdev *dflt = dp_vdev_default(vd, lx->cfg->default_vdev);
  dp_vdev *canon = dflt ? dp_config_canonical(lx->cfg, dflt, NULL) : NULL;
  int yes = canon == vd && dflt == vd && !dp_vdev_is_fully_unconstrained(vd);
  dp_release(dflt);
  dp_release(canon);
  if (!yes) return 0;
  if (dp_grow((void **)&lx->ok, &lx->capok, lx->nok + 1, sizeof *lx->ok) < 0) return -1;
  lx->ok[lx->nok++] = vd;
  return 1;
}

static const dp_aval *attr(const dp_call *call, const char *key) {
  return call->attrs ? dp_attrs_get(call->attrs, key) : NULL;
}

static dp_vdev *vdev_attr(const dp_call *call, const char *key) {
  const dp_aval *v = attr(call, key);
  return v && v->kind == DP_AV_VDEV ? v->u.vdev : NULL;
}

/* A boolean attribute (dflt when absent; -1: not a boolean). */
static int flag(const dp_call *call, const char *key, int dflt) {
  const dp_aval *v = attr(call, key);
  if (!v) return dflt;
  return (v->kind == DP_AV_BOOL || v->kind == DP_AV_INT) ? v->u.i != 0 : -1;
}

/* The function a call's callee names (a global function or a function
   literal), or NULL. */
static dp_func *callee_fn(dp__lexical *lx, const dp_expr *fn) {
  if (fn->h.kind == DP_FUNC) return (dp_func *)fn;
  if (fn->h.kind == DP_GLOBAL) return dp_module_func(lx->m, ((const dp_global *)fn)->name);
  return NULL;
}

/* e's record, or NULL. */
static lrec *rec_of(dp__lexical *lx, const dp_expr *e) {
  uint32_t m = e->mark;
  return m < lx->nrecs && lx->recs[m].e == e ? &lx->recs[m] : NULL;
}

/* e's record, made when new (NULL: out of memory). */
static lrec *rec_make(dp__lexical *lx, dp_expr *e, dp_vdev *ctx) {
  lrec *r = rec_of(lx, e);
  if (r) return r;
  if (dp_grow((void **)&lx->recs, &lx->caprecs, lx->nrecs + 1, sizeof *lx->recs) < 0) return NULL;
  e->mark = lx->nrecs;
  lx->recs[lx->nrecs] = (lrec){e, ctx, NULL, 0, 0};
  return &lx->recs[lx->nrecs++];
}

/* A variable is where it is bound. */
static int bind(dp__lexical *lx, dp_var *v, dp_vdev *dev) {
  lrec *r = rec_make(lx, &v->e, NULL);
  if (!r) return -1;
  r->dev = dev;
  return 0;
}

/* The annotation's attributes found readable before: their ends. */
static int seen(const dp__lexical *lx, const dp_call *call, dp_vdev **ends) {
  const dp_attrs *a = call->attrs;
  for (uint32_t i = 0; a && i < LX_ATTRS; i++)
    if (lx->seen[i].a == a && lx->seen[i].op == call->fn) {
      ends[0] = lx->seen[i].ends[0];
      ends[1] = lx->seen[i].ends[1];
      return 1;
    }
  return 0;
}

/* An annotation whose attributes are readable, with these ends (kept in
   place of the oldest). Gives 1. */
static int saw(dp__lexical *lx, const dp_call *call, dp_vdev *const *ends) {
  if (!call->attrs) return 1;
  lattrs *s = &lx->seen[lx->nextseen++ % LX_ATTRS];
  dp_release((dp_attrs *)s->a);
  *s = (lattrs){call->fn, dp_retain(call->attrs), {ends[0], ends[1]}};
  return 1;
}

/* An on_device (of one argument) readable: fixed, on a settled device (ends[0]). */
static int on_device_readable(dp__lexical *lx, const dp_call *call, dp_vdev **ends) {
  if (seen(lx, call, ends)) return 1;
  int s = flag(call, "constrain_body", 1) == 1 && flag(call, "constrain_result", 0) == 1
              ? dp__lexical_settled(lx, ends[0] = vdev_attr(call, "virtual_device")) : 0;
  return s == 1 ? saw(lx, call, ends) : s;
}

/* A device_copy (of one argument) readable: both ends written and settled. */
static int copy_readable(dp__lexical *lx, const dp_call *call, dp_vdev **ends) {
  if (seen(lx, call, ends)) return 1;
  int s = dp__lexical_settled(lx, ends[0] = vdev_attr(call, "src_virtual_device"));
  if (s == 1) s = dp__lexical_settled(lx, ends[1] = vdev_attr(call, "dst_virtual_device"));
  return s == 1 ? saw(lx, call, ends) : s;
}

/* Node e, first met: 1 read on, 0 give up, -1 out of memory. Parameters
   go into the map of variables here. An on_device's device goes to
   ends[0], a device_copy's source and destination to ends[0] and ends[1]. */
static int readable(dp__lexical *lx, dp_expr *e, dp_vdev **ends) {
  switch (e->h.kind) {
  case DP_FUNC: {
    const dp_func *f = (const dp_func *)e;
    if (dp__is_primitive(f)) return 0;
    int s = dp__lexical_settled(lx, f->vdev);
    for (uint32_t i = 0; i < f->nparams && s == 1; i++) {
      s = dp__lexical_settled(lx, dp_var_vdev(f->params[i]));
      if (s == 1 && bind(lx, f->params[i], dp_var_vdev(f->params[i])) < 0) s = -1;
    }
    return s;
  }
  case DP_CALL: {
    const dp_call *call = (const dp_call *)e;
    if (call->fn == &lx->on_device->e) return call->nargs == 1 ? on_device_readable(lx, call, ends) : 0;
    if (call->fn == &lx->device_copy->e) return call->nargs == 1 ? copy_readable(lx, call, ends) : 0;
    if (call->fn->h.kind == DP_OP) {
      const dp_op *op = (const dp_op *)call->fn;
      if (op == lx->op_ok) return 1;
      if (!strcmp(op->name, "call_lowered") || !strncmp(op->name, "memory.", 7) || !strncmp(op->name, "vm.", 3)) return 0;
      lx->op_ok = op;
      return 1;
    }
    if (call->fn->h.kind == DP_CTOR) return 1;
    const dp_func *f = callee_fn(lx, call->fn);
    return f && !dp__is_primitive(f) && f->nparams == call->nargs;
  }
  case DP_MATCH: case DP_REF_CREATE: case DP_REF_READ: case DP_REF_WRITE: return 0;
  default: return 1;
  }
}

static int is_on_device(dp__lexical *lx, const dp_expr *e) {
  return e->h.kind == DP_CALL && ((const dp_call *)e)->fn == &lx->on_device->e;
}
static int is_copy(dp__lexical *lx, const dp_expr *e) {
  return e->h.kind == DP_CALL && ((const dp_call *)e)->fn == &lx->device_copy->e;
}

/* (the step below inlines child_ctx and finish: a call of each at every
   node was a tenth more of the report's instructions on a let chain) */
#if defined(__GNUC__)
#define LX_INLINE __attribute__((always_inline)) inline
#else
#define LX_INLINE inline
#endif

/* Where child i of f's node lives by its position. */
static LX_INLINE dp_vdev *child_ctx(dp__lexical *lx, const lframe *f, uint32_t i) {
  dp_expr *e = f->e;
  if (e->h.kind == DP_FUNC) return i == ((dp_func *)e)->nparams ? ((dp_func *)e)->vdev : f->ctx;
  if (i == 1 && (is_on_device(lx, e) || is_copy(lx, e))) return f->ends[0];
  return f->ctx;
}

/* Does a node's device come from its position rather than from itself? */
static int positional(dp__lexical *lx, const dp_expr *e) {
  switch (e->h.kind) {
  case DP_VAR: case DP_GLOBAL: case DP_FUNC: case DP_OP: case DP_CTOR: return 0;
  case DP_CALL: return !is_on_device(lx, e) && !is_copy(lx, e);
  default: return 1;
  }
}

static dp_vdev *var_dev(dp__lexical *lx, const dp_expr *v);

/* Node e is done, its children's devices in vals[base ..]: checks them,
   and gives its own device (*dev). 1 consistent, 0 not. */
static LX_INLINE int finish(dp__lexical *lx, const lframe *f, dp_vdev **dev) {
  dp_expr *e = f->e;
  dp_vdev **k = lx->vals + f->base;
  *dev = f->ctx;
  switch (e->h.kind) {
  case DP_VAR: *dev = var_dev(lx, e); return 1; /* (NULL: a let's own, not bound yet) */
  case DP_GLOBAL: {
    dp_func *g = dp_module_func(lx->m, ((dp_global *)e)->name);
    *dev = g ? g->vdev : NULL;
    return 1; /* (a callee; as a value it is checked where it is read) */
  }
  case DP_OP: case DP_CTOR: *dev = NULL; return 1;
  case DP_CONST: return 1;
  case DP_FUNC: {
    dp_func *fn = (dp_func *)e;
    *dev = fn->vdev;
    return k[fn->nparams] == fn->vdev;
  }
  case DP_LET: return k[2] == f->ctx;
  case DP_CALL: {
    const dp_call *call = (const dp_call *)e;
    if (is_on_device(lx, e)) return *dev = f->ends[0], k[1] == *dev;
    if (is_copy(lx, e)) return *dev = f->ends[1], k[1] == f->ends[0];
    if (call->fn->h.kind == DP_OP || call->fn->h.kind == DP_CTOR) {
      for (uint32_t i = 0; i < call->nargs; i++)
        if (k[1 + i] != f->ctx) return 0;
      return 1;
    }
    dp_func *g = callee_fn(lx, call->fn);
    for (uint32_t i = 0; i < call->nargs; i++)
      if (k[1 + i] != dp_var_vdev(g->params[i])) return 0;
    return g->vdev == f->ctx;
  }
  default: /* tuple, projection, if: every part where the node is */
    for (uint32_t i = 0; i < f->n; i++)
      if (k[i] != f->ctx) return 0;
    return 1;
  }
}

static dp_vdev *var_dev(dp__lexical *lx, const dp_expr *v) {
  lrec *r = rec_of(lx, v);
  return r ? r->dev : NULL;
}

static int push_val(dp__lexical *lx, dp_vdev *v) {
  if (lx->nvals == lx->capvals && dp_grow((void **)&lx->vals, &lx->capvals, lx->nvals + 1, sizeof *lx->vals) < 0)
    return -1;
  lx->vals[lx->nvals++] = v;
  return 0;
}

/* Meets e at position ctx: 1 pushed, 0 met in this walk already (its
   device pushed), 2 give up, -1 out of memory. Operators and constructors
   are no values: their device is none, and they are not posted. */
static int reach(dp__lexical *lx, dp_expr *e, dp_vdev *ctx) {
  uint32_t rec = 0;
  if (e->h.kind == DP_OP || e->h.kind == DP_CTOR) return push_val(lx, NULL) < 0 ? -1 : 0;
  if (e->h.rc > 1 || e->h.kind == DP_VAR) {
    lrec *r = rec_of(lx, e);
    if (r && r->walk == lx->walk) {
      if (e->h.kind != DP_VAR && r->ctx != ctx && positional(lx, e)) return 2;
      if (!r->done && e->h.kind != DP_VAR) return 2; /* (a cycle: no module of ours) */
      return push_val(lx, r->dev) < 0 ? -1 : 0;
    }
    if (r && e->h.kind != DP_VAR && r->ctx != ctx && positional(lx, e)) return 2; /* (another function's) */
    if (r && e->h.kind != DP_VAR) lx->crossed = 1;
    if (!r && !(r = rec_make(lx, e, ctx))) return -1;
    r->walk = lx->walk;
    r->done = 0;
    rec = (uint32_t)(r - lx->recs) + 1;
  }
  dp_vdev *ends[2] = {NULL, NULL};
  int r = readable(lx, e, ends);
  if (r <= 0) return r < 0 ? -1 : 2;
  if (lx->sp == lx->capst && dp_grow((void **)&lx->st, &lx->capst, lx->sp + 1, sizeof *lx->st) < 0) return -1;
  lx->st[lx->sp++] = (lframe){e, ctx, 0, dp_expr_nchildren(e), lx->nvals, rec, {ends[0], ends[1]}};
  return 1;
}

int dp__lexical_begin(dp__lexical *lx, dp_func *fn) {
  lx->walk++;
  lx->sp = lx->nvals = 0;
  int r = reach(lx, &fn->e, fn->vdev);
  return r == 1 ? 2 : r < 0 ? -1 : 1;
}

/* One step of the walk: a child reached or a node posted. 2: more to
   walk, 0: done, 1: the module does not say its devices so, -1: out of
   memory or the callback's error. Inlined in dp__lexical_walk's loop (a
   call per step was more of the report's instructions on a let chain). */
static LX_INLINE int step(dp__lexical *lx, dp__lexical_post post, void *ud) {
  lframe *f = &lx->st[lx->sp - 1];
  if (f->i < f->n) {
    uint32_t i = f->i++;
    if (f->e->h.kind == DP_LET && i == 2) { /* the variable lives where its value does */
      dp_vdev *v = lx->vals[f->base + 1];
      if (!v) return 1;
      if (bind(lx, ((dp_let *)f->e)->var, v) < 0) return -1;
    }
    int r = reach(lx, dp_expr_child(f->e, i), child_ctx(lx, f, i));
    if (r < 0) return -1;
    if (r == 2) return 1;
  } else {
    lframe done = lx->st[--lx->sp];
    dp_vdev *dev;
    if (!finish(lx, &done, &dev)) return 1;
    lx->nvals = done.base;
    if (done.rec) {
      lrec *rc = &lx->recs[done.rec - 1];
      if (done.e->h.kind != DP_VAR) rc->dev = dev; /* (a variable keeps where it is bound) */
      rc->done = 1;
    }
    if (push_val(lx, dev) < 0 || post(ud, done.e, dev) < 0) return -1;
  }
  return lx->sp ? 2 : 0;
}

int dp__lexical_step(dp__lexical *lx, dp__lexical_post post, void *ud) {
  return lx->sp ? step(lx, post, ud) : 0;
}

int dp__lexical_walk(dp__lexical *lx, dp_func *fn, dp__lexical_post post, void *ud) {
  int r = dp__lexical_begin(lx, fn);
  while (r == 2) r = step(lx, post, ud);
  return r;
}

uint32_t dp__lexical_met(const dp__lexical *lx, const dp_expr *e) {
  uint32_t m = e->mark;
  return m < lx->nrecs && lx->recs[m].e == e && lx->recs[m].walk == lx->walk ? m : UINT32_MAX;
}

int dp__lexical_crossed(const dp__lexical *lx) { return lx->crossed; }

/* ---- devices by a small number ---- */

uint32_t dp__devcode(dp__devcodes *t, dp_vdev *vd) {
  if (!vd) return 0;
  if (vd == t->last) return t->lastcode;
  const dp__ptrslot *s = dp__ptrmap_find(&t->map, vd);
  uint32_t c = s ? s->val : t->n ? t->n : 1; /* (code 0: none) */
  if (!s) {
    if (c >= DP__DEVCODE_OOM - 1 || dp_grow((void **)&t->v, &t->cap, c + 1, sizeof *t->v) < 0 ||
        dp__ptrmap_set(&t->map, vd, c, 0) < 0)
      return DP__DEVCODE_OOM;
    t->v[0] = NULL, t->v[c] = vd, t->n = c + 1;
  }
  t->last = vd;
  return t->lastcode = c;
}

void dp__devcodes_free(dp__devcodes *t) {
  free(t->v);
  dp__ptrmap_free(&t->map);
  *t = (dp__devcodes){0};
}

/* ---- the same reading over a graph of one body (partition.c) ---- */

#define NONE UINT32_MAX
#define OOM DP__DEVCODE_OOM

/* The graph, with what the caller read of each node (its kind, and
   whether it is an on_device or a device_copy; an on_device's device in
   dev[], which the caller read with dp__lexical_on_device as it built the
   graph, the node in the cache then): the two passes over the nodes read
   the IR only where a node's attributes or callee are needed (a
   million-node body is far larger than the cache: each node read is a
   miss). The devices of dev[] and ctx[] are codes (codes). */
typedef struct lgraph {
  uint32_t n;
  dp_expr *const *x;
  const uint32_t *kstart, *kids;
  const uint8_t *kind, *call;
  const uint32_t *bound; /* a let's variable -> its let (NONE: a parameter; the caller's) */
  uint32_t *ctx, *dev;   /* (ctx: the caller's scratch) */
  dp__devcodes *codes;
} lgraph;

static uint32_t gkid(const lgraph *g, uint32_t v, uint32_t k) { return g->kids[g->kstart[v] + k]; }

/* The device of a code. */
static dp_vdev *gdev(const lgraph *g, uint32_t code) { return dp__devcode_vdev(g->codes, code); }

/* The node a variable's value is (a let's variable: its value's, through
   chains of them), else v. */
static uint32_t gvalue(const lgraph *g, uint32_t v) {
  while (g->kind[v] == DP_VAR && g->bound[v] != NONE) v = gkid(g, g->bound[v], 1);
  return v;
}

/* positional on the graph. */
static int gpositional(const lgraph *g, uint32_t v) {
  switch (g->kind[v]) {
  case DP_VAR: case DP_GLOBAL: case DP_FUNC: case DP_OP: case DP_CTOR: return 0;
  case DP_CALL: return !(g->call[v] & (DP__LX_ON_DEVICE | DP__LX_COPY));
  default: return 1;
  }
}

/* Where the children of node v live by their position (child_ctx on the
   graph): every slot where v is (a copy's: its source, once read_ends has
   read it), but an on_device's argument, where the caller read its device
   (dp__lexical_on_device), and a function's body, where the function says.
   Each child's position is written, or checked where it has one (a
   positional node reached from two positions). 0, 1 a check failed, -1
   out of memory. */
static int place_children(lgraph *g, uint32_t v) {
  uint32_t first = g->kstart[v], ns = g->kstart[v + 1] - first, at = g->ctx[v];
  uint32_t other = NONE, oc = 0; /* (the slot placed elsewhere, and where) */
  if (g->kind[v] == DP_FUNC) {
    const dp_func *fn = (const dp_func *)g->x[v];
    other = fn->nparams;
    if ((oc = dp__devcode(g->codes, fn->vdev)) == OOM) return -1;
  } else if (g->call[v] & DP__LX_ON_DEVICE) {
    other = 1;
    oc = g->dev[v];
  }
  for (uint32_t k = 0; k < ns; k++) {
    uint32_t ci = g->kids[first + k];
    if (ci == NONE) continue;
    uint32_t c = k == other ? oc : at;
    if (!g->ctx[ci]) g->ctx[ci] = c;
    else if (g->ctx[ci] != c && gpositional(g, ci)) return 1;
  }
  return 0;
}

/* A device_copy v, when the top-down pass meets it (its parents are
   done): readable, its destination in dev[v] and its source in ctx[v], in
   place of its position's device, which nothing reads again (it is not
   positional). Its ends are in dev[v] already where the caller read them
   while building the graph (dp__lexical_copy), as an on_device's device
   is (dp__lexical_on_device): else the node is read here (each read of a
   node of a large body is a miss). 1, 0 not readable, -1 out of memory. */
static int read_ends(dp__lexical *lx, lgraph *g, uint32_t v) {
  if (g->dev[v] >> 16) { /* (the caller read it as it built the graph) */
    g->ctx[v] = g->dev[v] >> 16;
    g->dev[v] &= 0xffffu;
    return 1;
  }
  dp_vdev *ends[2] = {NULL, NULL};
  int r = readable(lx, g->x[v], ends);
  if (r != 1) return r;
  g->dev[v] = dp__devcode(g->codes, ends[1]);
  g->ctx[v] = dp__devcode(g->codes, ends[0]);
  return g->dev[v] == OOM || g->ctx[v] == OOM ? -1 : 1;
}

int dp__lexical_on_device(dp__lexical *lx, dp_expr *e, dp_vdev **dev) {
  dp_vdev *ends[2] = {NULL, NULL};
  int r = readable(lx, e, ends);
  *dev = ends[0];
  return r;
}

int dp__lexical_copy(dp__lexical *lx, dp_expr *e, dp_vdev **src, dp_vdev **dst) {
  dp_vdev *ends[2] = {NULL, NULL};
  int r = readable(lx, e, ends);
  *src = ends[0];
  *dst = ends[1];
  return r;
}

/* The device of the value in slot k of v (done already), or NULL. */
static dp_vdev *slot_dev(dp__lexical *lx, const lgraph *g, uint32_t v, uint32_t k) {
  uint32_t ci = gkid(g, v, k);
  if (ci == NONE) { /* an operator, a constructor, a global */
    const dp_expr *e = dp_expr_child(g->x[v], k);
    if (e->h.kind != DP_GLOBAL) return NULL;
    dp_func *f = dp_module_func(lx->m, ((const dp_global *)e)->name);
    return f ? f->vdev : NULL;
  }
  return gdev(g, g->dev[gvalue(g, ci)]);
}

/* Does the value in slot k of v (done already) live on device code c? */
static int slot_on(dp__lexical *lx, const lgraph *g, uint32_t v, uint32_t k, uint32_t c) {
  uint32_t ci = gkid(g, v, k);
  return ci != NONE ? g->dev[gvalue(g, ci)] == c : slot_dev(lx, g, v, k) == gdev(g, c);
}

/* Node v (its slots done): its device in g->dev[v]. 1 consistent, 0 not,
   -1 out of memory. Lets, variables, constants, tuples, projections and
   ifs are checked from the graph alone (readable has nothing to say of
   them); functions and calls are read. */
static int graph_node(dp__lexical *lx, lgraph *g, uint32_t v) {
  /* (read already: their devices are in dev[v], a copy's source in ctx[v]) */
  if (g->call[v] & DP__LX_ON_DEVICE) return slot_on(lx, g, v, 1, g->dev[v]);
  if (g->call[v] & DP__LX_COPY) return slot_on(lx, g, v, 1, g->ctx[v]);
  int kind = g->kind[v];
  uint32_t ctx = g->ctx[v], ns = g->kstart[v + 1] - g->kstart[v];
  g->dev[v] = ctx;
  switch (kind) {
  case DP_VAR: {
    if (g->bound[v] != NONE) return 1; /* (where its value is: slot_dev) */
    dp_vdev *vd = dp_var_vdev((dp_var *)g->x[v]);
    if ((g->dev[v] = dp__devcode(g->codes, vd)) == OOM) return -1;
    return dp__lexical_settled(lx, vd);
  }
  case DP_CONST: return 1;
  case DP_LET: {
    uint32_t x = gkid(g, v, 0), val = gkid(g, v, 1); /* its variable lives where its value
                                                          does (the value is done) */
    if (x != NONE && val != NONE && g->bound[x] == v) g->dev[x] = g->dev[gvalue(g, val)];
    return slot_on(lx, g, v, 2, ctx);
  }
  case DP_CALL:
    if (g->call[v] & DP__LX_OP_CALL) { /* (readable: its arguments where it runs) */
      for (uint32_t k = 1; k < ns; k++)
        if (!slot_on(lx, g, v, k, ctx)) return 0;
      return 1;
    }
    break;
  case DP_FUNC: case DP_MATCH: case DP_REF_CREATE: case DP_REF_READ: case DP_REF_WRITE: break;
  default: /* tuple, projection, if */
    for (uint32_t k = 0; k < ns; k++)
      if (!slot_on(lx, g, v, k, ctx)) return 0;
    return 1;
  }
  dp_expr *e = g->x[v];
  dp_vdev *ends[2] = {NULL, NULL};
  int r = readable(lx, e, ends);
  if (r <= 0) return r;
  if (kind == DP_FUNC) {
    dp_func *fn = (dp_func *)e;
    if ((g->dev[v] = dp__devcode(g->codes, fn->vdev)) == OOM) return -1;
    return ns == 0 || slot_dev(lx, g, v, fn->nparams) == fn->vdev; /* (a Composite one: a leaf) */
  }
  const dp_call *call = (const dp_call *)e; /* (readable gave up on the others) */
  if (call->fn->h.kind == DP_OP || call->fn->h.kind == DP_CTOR) {
    for (uint32_t i = 0; i < call->nargs; i++)
      if (!slot_on(lx, g, v, 1 + i, ctx)) return 0;
    return 1;
  }
  dp_func *f = callee_fn(lx, call->fn);
  for (uint32_t i = 0; i < call->nargs; i++)
    if (slot_dev(lx, g, v, 1 + i) != dp_var_vdev(f->params[i]) || dp__lexical_settled(lx, dp_var_vdev(f->params[i])) != 1) return 0;
  return f->vdev == gdev(g, ctx) && dp__lexical_settled(lx, f->vdev) == 1;
}

int dp__lexical_graph_read(dp__lexical *lx, uint32_t n, dp_expr *const *x, const uint32_t *kstart,
                           const uint32_t *kids, const uint8_t *kind, const uint8_t *call, const uint32_t *bound,
                           dp_vdev *root_ctx, dp__devcodes *codes, uint32_t *dev, uint32_t *ctx) {
  lgraph g = {n, x, kstart, kids, kind, call, bound, ctx, dev, codes};
  int rc = 0;
  if (n) {
    /* top down (reverse post order is topological): where each position says */
    if ((g.ctx[n - 1] = dp__devcode(codes, root_ctx)) == OOM) return -1;
    for (uint32_t v = n; v-- > 0 && rc == 0;) {
      if (call[v] & DP__LX_COPY) {
        int r = read_ends(lx, &g, v);
        if (r != 1) {
          rc = r < 0 ? -1 : 1;
          break;
        }
      }
      rc = place_children(&g, v);
    }
    /* bottom up: each node's device, checked against its parts' */
    for (uint32_t v = 0; v < n && rc == 0; v++) {
      int r = graph_node(lx, &g, v);
      rc = r < 0 ? -1 : r == 0 ? 1 : 0;
    }
    /* the body lives where its function says (its let variables' devices
       were written at their lets, while the let's slots were in the cache:
       a pass over the graph less, with a cold read of each variable's let
       and value at a million calls) */
    if (rc == 0 && gdev(&g, dev[gvalue(&g, n - 1)]) != root_ctx) rc = 1;
  }
  return rc;
}
