/*
 * The task graph of a module (schedule.h): which tasks there are, on which
 * device each runs, and which tasks each waits for. One explicit-stack walk
 * of each global function, as the verifier's (verify.c): top down it
 * carries the device a position runs on (the function's virtual_device, a
 * fixed on_device's device for its body, a device_copy's source for its
 * argument); bottom up it computes, for each expression, the value it
 * gives: the graph node whose finish makes it ready (none: ready at 0),
 * and, for a literal tuple, its fields (a projection of it reads one field
 * only), for a known function, which one (a call of it).
 *
 * Joins are zero-time nodes where several values meet (a tuple read whole,
 * an if, a constructor, a call of a function), so that a value read by
 * many costs one edge per reader, not one per part.
 *
 * Functions. A value can carry a known function (a global's name, a
 * function literal, through variables, lets, annotations and tuple
 * fields); a call whose callee carries one is a call site of it, any other
 * reference to it but as a let's value (an alias) makes it escape. The
 * walk meets a call of a function before or after the function's body (a
 * global defined after its caller, a closure), so each parameter of a
 * function other than @main is a join placeholder, and each call of a
 * known function a join too; which edges they get is decided when the
 * whole module has been walked: a function with exactly one call site that
 * never escapes and is not reached through itself (its site's function,
 * that one's site's function, ... never comes back to it) is read as inlined:
 * its parameters wait for the site's arguments, the site for its body. Any
 * other is scheduled apart: parameters ready at 0, each site waiting for
 * its arguments and callee. Reading every function inlined would need a
 * task per call of it (not "every call once"), and reading none inlined
 * would make a partitioned module's pieces all start at 0.
 *
 * Cost: linear in the module (shared nodes and variables through one
 * pointer map), plus the edges sorted into arrays by counting.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"
#include "devplan/schedule.h"

#define NONE DP_SCHED_NONE

/* What an expression gives its reader. */
typedef struct val {
  uint32_t node;   /* the node whose finish makes it ready; NONE: ready at 0 */
  uint32_t tup;    /* a literal tuple: its entry in tups (fields in tfield) */
  uint32_t fn;     /* a known function: index in fns */
} val;

#define VAL0 ((val){NONE, NONE, NONE})

typedef struct tup { uint32_t off, n; } tup;

/* A function of the module (globals first, by module index, then literals
   as met). */
typedef struct fnrec {
  dp_func *f;
  uint32_t param0;       /* its parameters' placeholder nodes param0 .. +nparams (NONE: @main) */
  uint32_t result;       /* the node of its body's value, NONE until walked / ready at 0 */
  uint32_t sites;        /* call sites */
  uint32_t escapes;      /* uses other than as a callee */
  uint32_t site;         /* its last call site (index in w->sites) */
  uint8_t main, prim;
  uint8_t state;         /* inline decision: 0 unknown, 1 in progress, 2 inline, 3 apart */
} fnrec;

/* A call of a known function: its join, the function whose body holds it. */
typedef struct siterec { uint32_t fn, owner, join, callee, argoff, nargs; } siterec;

typedef struct frame {
  dp_expr *e;
  uint32_t ctx;          /* device index where it runs (NONE: unknown) */
  uint32_t i, n, base;
  uint32_t fn;           /* FUNC frames: its fnrec */
} frame;

typedef struct gwalk {
  dp_sched_graph *g;
  dp_module *m;
  const dp_config *cfg;
  dp_ctx *ctx;
  struct dp__plan_ops ops;
  int dag;
  frame *fr; uint32_t nfr, capfr;
  val *vs; uint32_t nvs, capvs;         /* results of children awaiting their parent */
  val *recs; uint32_t nrecs, caprecs;   /* shared nodes and bound variables */
  dp__ptrmap seen;                       /* node -> index in recs */
  dp__ptrmap canon;                      /* annotation device -> device index + 1 */
  tup *tups; uint32_t ntups, captups;
  val *tfield; uint32_t ntfield, captfield;
  fnrec *fns; uint32_t nfns, capfns;
  dp__ptrmap fnof;                       /* function literal -> index in fns */
  uint32_t *fnstack; uint32_t nfnstack, capfnstack;
  siterec *sites; uint32_t nsites, capsites;
  uint32_t *siteargs; uint32_t nsiteargs, capsiteargs;
  uint32_t *efrom, *eto; uint32_t nedges, capedges;
  uint32_t capnodes, capdevs;
  uint32_t host;                         /* DAG: the host device index */
  uint32_t *lfix; uint32_t nlfix, caplfix; /* DAG: (join, device) pairs fixed once functions are decided */
  int params;                            /* DP_GRAPH_PARAMS */
  uint32_t capsoft;
  dp_err *err;
  int oom;
} gwalk;

static int oom(gwalk *w) {
  w->oom = 1;
  return -1;
}

static int failed(gwalk *w) { return w->oom || w->err; }

/* ---- devices ---- */

static uint32_t add_device(gwalk *w, dp_vdev *c) {
  dp_sched_graph *g = w->g;
  for (uint32_t i = 0; i < g->ndevs; i++)
    if (g->devs[i] == c) {
      dp_release(c);
      return i;
    }
  if (dp_grow((void **)&g->devs, &w->capdevs, g->ndevs + 1, sizeof *g->devs) < 0) {
    dp_release(c);
    oom(w);
    return NONE;
  }
  g->devs[g->ndevs] = c;
  return g->ndevs++;
}

/* The device index of annotation device v (canonical through the
   configuration), NONE + w->err when the configuration has none. e: what
   the annotation is on, for the message. */
static uint32_t device_of(gwalk *w, dp_vdev *v, const dp_expr *e) {
  if (!v) return NONE;
  dp__ptrslot *s = dp__ptrmap_find(&w->canon, v);
  if (s) return s->val - 1;
  dp_err *err = NULL;
  dp_vdev *c = dp_config_canonical(w->cfg, v, &err);
  if (!c) {
    char *d = dp__describe(w->ctx, e), *t = dp_vdev_str(v);
    if (!w->err)
      w->err = dp_err_at(w->ctx, DP_ERR_VALUE, e ? e->span : DP_NOSPAN, "schedule: the virtual "
                         "device %s of %s is not one of the configuration's: %s", t ? t : "?",
                         d ? d : "?", err && err->msg ? err->msg : "?");
    free(d);
    free(t);
    dp_err_free(err);
    return NONE;
  }
  uint32_t i = add_device(w, c);
  if (i != NONE && dp__ptrmap_set(&w->canon, v, i + 1, 0) < 0) oom(w);
  return i;
}

/* DAG mode: the configuration's devices first (its default, then one per
   primitive target), then the host. */
static int choice_devices(gwalk *w) {
  const dp_config *cfg = w->cfg;
  if (device_of(w, cfg->default_vdev, NULL) == NONE) return -1;
  for (uint32_t i = 0; i < cfg->ntargets; i++) {
    dp_err *e = NULL;
    dp_vdev *vd = dp_vdev_make(w->ctx, 0, 0, cfg->primitive_targets[i], NULL, &e);
    if (!vd) {
      w->err = e;
      return -1;
    }
    uint32_t k = device_of(w, vd, NULL);
    dp_release(vd);
    if (k == NONE) return -1;
  }
  w->g->nchoice = w->g->ndevs;
  w->host = device_of(w, cfg->host_vdev, NULL);
  return w->host == NONE ? -1 : 0;
}

/* ---- nodes and edges ---- */

static uint32_t new_node(gwalk *w, int kind, dp_expr *e) {
  dp_sched_graph *g = w->g;
  if (g->n + 1 > w->capnodes) {
    void **const arrs[] = {(void **)&g->kind, (void **)&g->expr, (void **)&g->dev, (void **)&g->src,
                           (void **)&g->bytes, (void **)&g->approx};
    const size_t sizes[] = {sizeof *g->kind, sizeof *g->expr, sizeof *g->dev, sizeof *g->src,
                            sizeof *g->bytes, sizeof *g->approx};
    if (dp_grow_arrays(&w->capnodes, g->n + 1, 6, arrs, sizes) < 0) return oom(w), NONE;
  }
  uint32_t v = g->n++;
  g->kind[v] = (uint8_t)kind;
  g->expr[v] = e;
  g->dev[v] = g->src[v] = NONE;
  g->bytes[v] = 0;
  g->approx[v] = 0;
  if (kind != DP_TASK_JOIN) g->ntasks++;
  return v;
}

static void edge(gwalk *w, uint32_t from, uint32_t to) {
  if (from == NONE || to == NONE) return;
  if (w->nedges + 1 > w->capedges) {
    void **const arrs[] = {(void **)&w->efrom, (void **)&w->eto};
    const size_t sizes[] = {sizeof *w->efrom, sizeof *w->eto};
    if (dp_grow_arrays(&w->capedges, w->nedges + 1, 2, arrs, sizes) < 0) {
      oom(w);
      return;
    }
  }
  w->efrom[w->nedges] = from;
  w->eto[w->nedges++] = to;
}

/* The node for several values read together: none, the one, or a join. */
static uint32_t join_of(gwalk *w, const uint32_t *nodes, uint32_t n) {
  uint32_t only = NONE, count = 0;
  for (uint32_t i = 0; i < n; i++)
    if (nodes[i] != NONE && nodes[i] != only) {
      only = nodes[i];
      count++;
    }
  if (count <= 1) return only;
  uint32_t j = new_node(w, DP_TASK_JOIN, NULL);
  for (uint32_t i = 0; i < n && j != NONE; i++) edge(w, nodes[i], j);
  return j;
}

/* join_of over the node of each of n values. */
static uint32_t join_vals(gwalk *w, const val *v, uint32_t n) {
  uint32_t small[8], *nodes = n <= 8 ? small : dp_malloc((size_t)n * sizeof *nodes);
  if (!nodes) return oom(w), NONE;
  for (uint32_t i = 0; i < n; i++) nodes[i] = v[i].node;
  uint32_t j = join_of(w, nodes, n);
  if (nodes != small) free(nodes);
  return j;
}

/* ---- records ---- */

static void push_val(gwalk *w, val v) {
  if (dp_grow((void **)&w->vs, &w->capvs, w->nvs + 1, sizeof *w->vs) < 0) {
    oom(w);
    return;
  }
  w->vs[w->nvs++] = v;
}

static void remember(gwalk *w, const void *e, val v) {
  dp__ptrslot *s = dp__ptrmap_find(&w->seen, e);
  if (s) {
    w->recs[s->val] = v;
    return;
  }
  if (dp_grow((void **)&w->recs, &w->caprecs, w->nrecs + 1, sizeof *w->recs) < 0 ||
      dp__ptrmap_set(&w->seen, e, w->nrecs, 0) < 0) {
    oom(w);
    return;
  }
  w->recs[w->nrecs++] = v;
}

static val *known(gwalk *w, const void *e) {
  dp__ptrslot *s = dp__ptrmap_find(&w->seen, e);
  return s ? &w->recs[s->val] : NULL;
}

/* The fnrec of function f (a literal met now, or a global by index). */
static uint32_t fn_index(gwalk *w, dp_func *f) {
  dp__ptrslot *s = dp__ptrmap_find(&w->fnof, f);
  if (s) return s->val;
  if (dp_grow((void **)&w->fns, &w->capfns, w->nfns + 1, sizeof *w->fns) < 0 ||
      dp__ptrmap_set(&w->fnof, f, w->nfns, 0) < 0)
    return oom(w), NONE;
  w->fns[w->nfns] = (fnrec){.f = f, .param0 = NONE, .result = NONE, .site = NONE,
                            .prim = (uint8_t)dp__is_primitive(f)};
  return w->nfns++;
}

/* ---- the walk ---- */

/* The device child i of frame t runs on. */
static uint32_t child_ctx(gwalk *w, frame *t, uint32_t i) {
  dp_expr *e = t->e;
  if (w->dag) return NONE;
  if (e->h.kind == DP_FUNC) {
    dp_func *f = (dp_func *)e;
    return i == f->nparams ? device_of(w, f->vdev, e) : NONE;
  }
  if (e->h.kind == DP_CALL && i == 1) {
    dp__ondev p;
    dp_expr *body;
    dp_vdev *src, *dst;
    if (dp__on_device_props(&w->ops, e, &p)) return p.cbody && p.vd ? device_of(w, p.vd, e) : t->ctx;
    if (dp__device_copy_props(&w->ops, e, &body, &src, &dst)) return device_of(w, src, e);
  }
  return t->ctx;
}

/* A reference to a function (a variable carrying one, a global's name, a
   literal) other than as a callee (or a let's value: the caller checks). */
static void use_fn(gwalk *w, val v, int callee) {
  if (v.fn != NONE && !callee) w->fns[v.fn].escapes++;
}

static void open_frame(gwalk *w, dp_expr *e, uint32_t ctx, uint32_t fn) {
  if (dp_grow((void **)&w->fr, &w->capfr, w->nfr + 1, sizeof *w->fr) < 0) {
    oom(w);
    return;
  }
  w->fr[w->nfr++] = (frame){e, ctx, 0, dp__nchildren(e), w->nvs, fn};
}

/* A function's frame: its parameters bound (placeholders but for @main). */
/* With DP_GRAPH_PARAMS, @main's parameters are nodes: their bytes, and
   the device a planned module gives them (DAG mode: an annotated one's). */
static void main_params(gwalk *w, dp_func *f, uint32_t p0) {
  dp_sched_graph *g = w->g;
  g->param0 = p0;
  g->nparams = f->nparams;
  for (uint32_t i = 0; i < f->nparams && !failed(w); i++) {
    dp_var *p = f->params[i];
    int unknown = 0;
    g->expr[p0 + i] = &p->e;
    g->bytes[p0 + i] = dp_sched_type_bytes(p->e.type ? p->e.type : dp_var_annot(p), &unknown);
    g->approx[p0 + i] = (uint8_t)unknown;
    if (dp_var_vdev(p) && dp_var_vdev(p)->device_type != 0) g->dev[p0 + i] = device_of(w, dp_var_vdev(p), &p->e);
  }
}

static void enter_fn(gwalk *w, dp_func *f, uint32_t ctx, uint32_t fi, int is_main) {
  fnrec *r = &w->fns[fi];
  r->main = (uint8_t)is_main;
  uint32_t p0 = NONE;
  if (!is_main || w->params) {
    p0 = w->g->n;
    for (uint32_t i = 0; i < f->nparams && !failed(w); i++) new_node(w, DP_TASK_JOIN, NULL);
  }
  if (!is_main) r->param0 = p0;
  else if (p0 != NONE && !failed(w)) main_params(w, f, p0);
  for (uint32_t i = 0; i < f->nparams && !failed(w); i++)
    remember(w, f->params[i], (val){p0 == NONE ? NONE : p0 + i, NONE, NONE});
  if (dp_grow((void **)&w->fnstack, &w->capfnstack, w->nfnstack + 1, sizeof *w->fnstack) < 0) {
    oom(w);
    return;
  }
  w->fnstack[w->nfnstack++] = fi;
  open_frame(w, &f->e, ctx, fi);
}

/* First reach of e, child i of parent (NULL: a function's root). */
static void reach(gwalk *w, dp_expr *e, uint32_t ctx, frame *parent, uint32_t i) {
  int k = e->h.kind;
  int callee = parent && parent->e->h.kind == DP_CALL && i == 0;
  int binding = parent && ((parent->e->h.kind == DP_LET && i < 2) ||
                           (parent->e->h.kind == DP_FUNC && i < ((dp_func *)parent->e)->nparams));
  if (k == DP_OP || k == DP_CTOR) {
    push_val(w, VAL0);
    return;
  }
  if (k == DP_VAR || e->h.rc > 1) {
    val *r = known(w, e);
    if (r) { /* a bound variable's use, or a shared node met again */
      val v = *r;
      if (!binding && (k == DP_VAR || k == DP_FUNC)) use_fn(w, v, callee);
      push_val(w, v);
      return;
    }
  }
  switch (k) {
  case DP_VAR: /* a let's variable (bound before its body), a free variable */
    push_val(w, VAL0);
    return;
  case DP_GLOBAL: {
    int fi = dp_module_func_index(w->m, ((dp_global *)e)->name);
    val v = {NONE, NONE, fi < 0 ? NONE : (uint32_t)fi};
    if (!binding) use_fn(w, v, callee);
    push_val(w, v);
    return;
  }
  case DP_CONST:
    push_val(w, VAL0);
    return;
  case DP_FUNC: {
    dp_func *f = (dp_func *)e;
    uint32_t fi = fn_index(w, f);
    if (fi == NONE) return;
    val v = {NONE, NONE, fi};
    if (!binding) use_fn(w, v, callee);
    if (w->fns[fi].prim) { /* a fused kernel: its body is not scheduled */
      if (e->h.rc > 1) remember(w, e, v);
      push_val(w, v);
      return;
    }
    enter_fn(w, f, ctx, fi, 0);
    return;
  }
  default:
    open_frame(w, e, ctx, NONE);
    return;
  }
}

/* Pattern variables take the matched value whole. */
typedef struct patctx { gwalk *w; val data; } patctx;

static int pattern_var(void *ud, dp_var *v) {
  patctx *p = ud;
  remember(p->w, v, p->data);
  return failed(p->w) ? -1 : 0;
}

/* Before child i of frame t: what the children before it bind. */
static void before_child(gwalk *w, frame *t, uint32_t i) {
  if (t->e->h.kind == DP_LET) {
    dp_let *l = (dp_let *)t->e;
    if (i == 1 && l->value->h.kind == DP_FUNC) { /* so that a recursive use knows it */
      uint32_t fi = fn_index(w, (dp_func *)l->value);
      if (fi != NONE) remember(w, l->var, (val){NONE, NONE, fi});
    } else if (i == 2) {
      remember(w, l->var, w->vs[t->base + 1]);
    }
  } else if (t->e->h.kind == DP_MATCH && i == 1) {
    dp_match *m = (dp_match *)t->e;
    patctx p = {w, {w->vs[t->base].node, NONE, NONE}};
    for (uint32_t c = 0; c < m->n && !failed(w); c++)
      if (dp_pattern_vars(m->clauses[c].pat, pattern_var, &p) < 0) oom(w);
  }
}

static void record_bytes(gwalk *w, uint32_t v, const dp_expr *e) {
  int unknown = 0;
  const dp_type *t = e->type;
  w->g->bytes[v] = dp_sched_type_bytes(t, &unknown);
  w->g->approx[v] = (uint8_t)unknown;
}

/* A task for call c: waits for its arguments. */
static uint32_t task(gwalk *w, int kind, dp_call *c, const val *args, uint32_t nargs) {
  uint32_t v = new_node(w, kind, &c->e);
  for (uint32_t i = 0; i < nargs && v != NONE; i++) edge(w, args[i].node, v);
  return v;
}

/* A call runs where its context says; a planned module says for each. */
static void place_call(gwalk *w, uint32_t v, frame *t) {
  if (v == NONE) return;
  if (!w->dag) {
    if (t->ctx == NONE && !w->err) {
      char *d = dp__describe(w->ctx, t->e);
      w->err = dp_err_at(w->ctx, DP_ERR_VALUE, t->e->span, "schedule: %s runs on no device: the "
                         "module is not planned (plan it with dp.passes.PlanDevices first)",
                         d ? d : "a call");
      free(d);
    }
    w->g->dev[v] = t->ctx;
  }
  record_bytes(w, v, t->e);
}

static int is_param(const dp_sched_graph *g, uint32_t v) {
  return g->nparams && v >= g->param0 && v - g->param0 < g->nparams;
}

/* DAG mode with DP_GRAPH_PARAMS: a soft annotation (on_device(..., soft=W))
   of the value a call or parameter makes: a preference of weight W for
   that device, resolved through calls of inlined functions as fixes are. */
static void soft_pref(gwalk *w, const val *kid, dp_vdev *vd, double weight, const dp_expr *ann) {
  dp_sched_graph *g = w->g;
  if (!vd || vd->device_type == 0 || kid->node == NONE) return;
  uint32_t d = device_of(w, vd, ann);
  if (d == NONE) return;
  if (dp_grow((void **)&g->soft_node, &w->capsoft, g->nsoft + 1, sizeof *g->soft_node) < 0) {
    oom(w);
    return;
  }
  void *a = dp_realloc(g->soft_dev, (size_t)w->capsoft * sizeof *g->soft_dev);
  if (!a) {
    oom(w);
    return;
  }
  g->soft_dev = a;
  a = dp_realloc(g->soft_weight, (size_t)w->capsoft * sizeof *g->soft_weight);
  if (!a) {
    oom(w);
    return;
  }
  g->soft_weight = a;
  g->soft_node[g->nsoft] = kid->node;
  g->soft_dev[g->nsoft] = d;
  g->soft_weight[g->nsoft++] = weight;
}

/* DAG mode: an annotation of a value a call makes (the call itself, a
   variable bound to it, a projection of it: TVM's rules unify them all)
   fixes where the call runs. */
static void fix_call(gwalk *w, const val *kid, dp_vdev *vd, const dp_expr *ann) {
  uint32_t v = kid->node;
  /* (an annotation that leaves the device type open, a memory scope
     alone, fixes no device: the placement's joins it) */
  if (!vd || vd->device_type == 0 || v == NONE) return;
  uint32_t d = device_of(w, vd, ann);
  if (d == NONE) return;
  if (is_param(w->g, v)) { /* @main's parameter (DP_GRAPH_PARAMS) */
    if (w->g->dev[v] == NONE) w->g->dev[v] = d;
    return;
  }
  if (w->g->kind[v] == DP_TASK_JOIN) { /* a call of a function: its body's, if inlined */
    if (dp_grow((void **)&w->lfix, &w->caplfix, w->nlfix + 2, sizeof *w->lfix) < 0) {
      oom(w);
      return;
    }
    w->lfix[w->nlfix++] = v;
    w->lfix[w->nlfix++] = d;
    return;
  }
  if (w->g->kind[v] == DP_TASK_CALL && w->g->dev[v] == NONE) w->g->dev[v] = d;
}

/* The fixes of values that calls of functions give: through each inlined
   function's result to the call that makes it. */
static void late_fixes(gwalk *w) {
  dp_sched_graph *g = w->g;
  uint32_t *site = dp_malloc(((size_t)g->n + 1) * sizeof *site);
  if (!site) {
    oom(w);
    return;
  }
  for (uint32_t v = 0; v < g->n; v++) site[v] = NONE;
  for (uint32_t s = 0; s < w->nsites; s++) site[w->sites[s].join] = s;
  for (uint32_t k = 0; k < w->nlfix; k += 2) {
    uint32_t v = w->lfix[k];
    for (uint32_t steps = 0; v != NONE && g->kind[v] == DP_TASK_JOIN && site[v] != NONE &&
                             steps <= w->nsites; steps++) {
      const fnrec *f = &w->fns[w->sites[site[v]].fn];
      v = f->state == 2 ? f->result : NONE;
    }
    if (v != NONE && g->kind[v] == DP_TASK_CALL && g->dev[v] == NONE) g->dev[v] = w->lfix[k + 1];
  }
  /* soft annotations: the call (or parameter) each prefers; others dropped */
  uint32_t kept = 0;
  for (uint32_t k = 0; k < g->nsoft; k++) {
    uint32_t v = g->soft_node[k];
    for (uint32_t steps = 0; v != NONE && g->kind[v] == DP_TASK_JOIN && site[v] != NONE &&
                             steps <= w->nsites; steps++) {
      const fnrec *f = &w->fns[w->sites[site[v]].fn];
      v = f->state == 2 ? f->result : NONE;
    }
    if (v == NONE || (g->kind[v] != DP_TASK_CALL && !is_param(g, v))) continue;
    g->soft_node[kept] = v;
    g->soft_dev[kept] = g->soft_dev[k];
    g->soft_weight[kept++] = g->soft_weight[k];
  }
  g->nsoft = kept;
  free(site);
}

static val post_call(gwalk *w, frame *t, dp_call *c, val *kids) {
  dp__ondev p;
  dp_expr *body;
  dp_vdev *src, *dst;
  if (dp__on_device_props(&w->ops, &c->e, &p)) {
    double soft = w->params ? dp__soft_weight(&w->ops, &c->e) : -1;
    if (w->dag && p.cbody && soft >= 0) soft_pref(w, &kids[1], p.vd, soft, &c->e);
    else if (w->dag && p.cbody) fix_call(w, &kids[1], p.vd, &c->e);
    return kids[1];
  }
  if (dp__device_copy_props(&w->ops, &c->e, &body, &src, &dst)) {
    if (w->dag) {
      fix_call(w, &kids[1], src, &c->e);
      return kids[1];
    }
    uint32_t v = task(w, DP_TASK_COPY, c, kids + 1, 1);
    if (v != NONE) {
      w->g->src[v] = device_of(w, src, &c->e);
      w->g->dev[v] = device_of(w, dst, &c->e);
      record_bytes(w, v, &c->e);
      if (!c->e.type && c->args[0]->type) record_bytes(w, v, c->args[0]);
      if (!w->err && (w->g->src[v] == NONE || w->g->dev[v] == NONE)) {
        char *d = dp__describe(w->ctx, &c->e);
        w->err = dp_err_at(w->ctx, DP_ERR_VALUE, c->e.span, "schedule: %s has no %s",
                           d ? d : "device_copy", src ? "dst_virtual_device" : "src_virtual_device");
        free(d);
      }
    }
    return (val){v, NONE, NONE};
  }
  if (c->fn->h.kind == DP_OP) {
    uint32_t v = task(w, DP_TASK_CALL, c, kids + 1, c->nargs);
    place_call(w, v, t);
    if (w->dag && v != NONE &&
        (dp__op_rule(&w->ops, (dp_op *)c->fn) != OP_ORDINARY || dp__is_lowered(&w->ops, c)))
      w->g->dev[v] = w->host;
    return (val){v, NONE, NONE};
  }
  if (c->fn->h.kind == DP_CTOR) return (val){join_vals(w, kids + 1, c->nargs), NONE, NONE};
  uint32_t fi = kids[0].fn;
  if (fi != NONE && w->fns[fi].prim) { /* a fused kernel: one task */
    uint32_t v = task(w, DP_TASK_CALL, c, kids + 1, c->nargs);
    place_call(w, v, t);
    return (val){v, NONE, NONE};
  }
  if (fi == NONE) { /* an unknown callee: ready with it and the arguments */
    return (val){join_vals(w, kids, 1 + c->nargs), NONE, NONE};
  }
  /* a call of a known function: a join whose edges come at the end */
  uint32_t j = new_node(w, DP_TASK_JOIN, NULL);
  if (dp_grow((void **)&w->sites, &w->capsites, w->nsites + 1, sizeof *w->sites) < 0 ||
      dp_grow((void **)&w->siteargs, &w->capsiteargs, w->nsiteargs + c->nargs + 1,
              sizeof *w->siteargs) < 0) {
    oom(w);
    return VAL0;
  }
  uint32_t owner = w->nfnstack ? w->fnstack[w->nfnstack - 1] : NONE;
  w->sites[w->nsites] = (siterec){fi, owner, j, kids[0].node, w->nsiteargs, c->nargs};
  for (uint32_t i = 0; i < c->nargs; i++) w->siteargs[w->nsiteargs++] = kids[1 + i].node;
  w->fns[fi].sites++;
  w->fns[fi].site = w->nsites++;
  return (val){j, NONE, NONE};
}

static val post_tuple(gwalk *w, val *kids, uint32_t n) {
  if (dp_grow((void **)&w->tups, &w->captups, w->ntups + 1, sizeof *w->tups) < 0 ||
      dp_grow((void **)&w->tfield, &w->captfield, w->ntfield + n + 1, sizeof *w->tfield) < 0) {
    oom(w);
    return VAL0;
  }
  w->tups[w->ntups] = (tup){w->ntfield, n};
  memcpy(w->tfield + w->ntfield, kids, (size_t)n * sizeof *kids);
  w->ntfield += n;
  return (val){join_vals(w, kids, n), w->ntups++, NONE};
}

/* All children of the top frame are done. */
static void complete(gwalk *w) {
  frame t = w->fr[--w->nfr];
  val *kids = w->vs + t.base, r = VAL0;
  dp_expr *e = t.e;
  switch (e->h.kind) {
  case DP_CALL: r = post_call(w, &t, (dp_call *)e, kids); break;
  case DP_FUNC: {
    dp_func *f = (dp_func *)e;
    w->fns[t.fn].result = kids[f->nparams].node;
    if (w->fns[t.fn].main) w->g->result = kids[f->nparams].node;
    if (w->dag) fix_call(w, &kids[f->nparams], f->vdev, e); /* the function's result device */
    w->nfnstack--;
    r = (val){NONE, NONE, t.fn};
    break;
  }
  case DP_LET: r = kids[2]; break;
  case DP_TUPLE: r = post_tuple(w, kids, t.n); break;
  case DP_PROJ: {
    uint32_t ti = kids[0].tup, idx = ((dp_proj *)e)->index;
    r = ti != NONE && idx < w->tups[ti].n ? w->tfield[w->tups[ti].off + idx]
                                          : (val){kids[0].node, NONE, NONE};
    break;
  }
  case DP_REF_CREATE: case DP_REF_READ: r = (val){kids[0].node, NONE, NONE}; break;
  default: /* if, match, ref_write: ready with every part */
    r = (val){join_vals(w, kids, t.n), NONE, NONE};
    break;
  }
  w->nvs = t.base;
  if (e->h.rc > 1 && e->h.kind != DP_VAR) remember(w, e, r);
  push_val(w, r);
}

static void walk_fn(gwalk *w, uint32_t fi) {
  dp_func *f = w->fns[fi].f;
  w->nfr = w->nvs = 0;
  enter_fn(w, f, NONE, fi, strcmp(w->m->funcs[fi].global->name, "main") == 0);
  while (w->nfr && !failed(w)) {
    frame *t = &w->fr[w->nfr - 1];
    if (t->i == t->n) {
      complete(w);
      continue;
    }
    uint32_t i = t->i++;
    before_child(w, t, i);
    if (failed(w)) break;
    dp_expr *k = dp__child(t->e, i);
    uint32_t ctx = child_ctx(w, t, i);
    reach(w, k, ctx, &w->fr[w->nfr - 1], i);
  }
}

/* ---- functions: inline or apart ---- */

static int candidate(const fnrec *r) {
  return !r->main && !r->prim && r->sites == 1 && r->escapes == 0;
}

/* Each function's decision: follow site -> owner until a function apart
   (or decided) is met; a chain that comes back to itself is a cycle, whose
   members are apart. */
static int decide(gwalk *w) {
  uint32_t *path = dp_malloc(((size_t)w->nfns + 1) * sizeof *path);
  if (!path) return oom(w);
  for (uint32_t s = 0; s < w->nfns; s++) {
    uint32_t n = 0, cur = s;
    while (cur != NONE && w->fns[cur].state == 0 && candidate(&w->fns[cur])) {
      w->fns[cur].state = 1;
      path[n++] = cur;
      cur = w->sites[w->fns[cur].site].owner;
    }
    uint32_t cut = n; /* path[cut ..] are a cycle */
    if (cur != NONE && w->fns[cur].state == 1)
      for (uint32_t k = 0; k < n; k++)
        if (path[k] == cur) cut = k;
    for (uint32_t k = 0; k < n; k++) w->fns[path[k]].state = k < cut ? 2 : 3;
    if (w->fns[s].state == 0) w->fns[s].state = 3;
  }
  free(path);
  return 0;
}

static void wire_sites(gwalk *w) {
  for (uint32_t s = 0; s < w->nsites && !failed(w); s++) {
    siterec *site = &w->sites[s];
    fnrec *f = &w->fns[site->fn];
    const uint32_t *args = w->siteargs + site->argoff;
    if (f->state == 2) {
      for (uint32_t i = 0; i < site->nargs && i < f->f->nparams; i++) edge(w, args[i], f->param0 + i);
      edge(w, f->result, site->join);
    } else {
      edge(w, site->callee, site->join);
      for (uint32_t i = 0; i < site->nargs; i++) edge(w, args[i], site->join);
    }
  }
}

/* ---- the arrays ---- */

static int csr(gwalk *w) {
  dp_sched_graph *g = w->g;
  uint32_t n = g->n, m = w->nedges;
  g->poff = dp_calloc((size_t)n + 1, sizeof *g->poff);
  g->soff = dp_calloc((size_t)n + 1, sizeof *g->soff);
  g->pred = dp_malloc(((size_t)m + 1) * sizeof *g->pred);
  g->succ = dp_malloc(((size_t)m + 1) * sizeof *g->succ);
  if (!g->poff || !g->soff || !g->pred || !g->succ) return oom(w);
  for (uint32_t k = 0; k < m; k++) {
    g->poff[w->eto[k] + 1]++;
    g->soff[w->efrom[k] + 1]++;
  }
  for (uint32_t v = 0; v < n; v++) {
    g->poff[v + 1] += g->poff[v];
    g->soff[v + 1] += g->soff[v];
  }
  uint32_t *pf = dp_malloc(((size_t)n + 1) * sizeof *pf), *sf = dp_malloc(((size_t)n + 1) * sizeof *sf);
  if (!pf || !sf) {
    free(pf);
    free(sf);
    return oom(w);
  }
  memcpy(pf, g->poff, (size_t)n * sizeof *pf);
  memcpy(sf, g->soff, (size_t)n * sizeof *sf);
  for (uint32_t k = 0; k < m; k++) { /* (edges in the order made: deterministic) */
    g->pred[pf[w->eto[k]]++] = w->efrom[k];
    g->succ[sf[w->efrom[k]]++] = w->eto[k];
  }
  free(pf);
  free(sf);
  return 0;
}

static int physical(gwalk *w) {
  dp_sched_graph *g = w->g;
  g->phys = dp_malloc(((size_t)g->ndevs + 1) * sizeof *g->phys);
  if (!g->phys) return oom(w);
  for (uint32_t i = 0; i < g->ndevs; i++) {
    g->phys[i] = i;
    for (uint32_t j = 0; j < i; j++)
      if (g->devs[j]->device_type == g->devs[i]->device_type &&
          g->devs[j]->virtual_device_id == g->devs[i]->virtual_device_id) {
        g->phys[i] = g->phys[j];
        break;
      }
  }
  return 0;
}

static void walk_free(gwalk *w) {
  dp__plan_ops_free(&w->ops);
  free(w->fr);
  free(w->vs);
  free(w->recs);
  dp__ptrmap_free(&w->seen);
  dp__ptrmap_free(&w->canon);
  dp__ptrmap_free(&w->fnof);
  free(w->tups);
  free(w->tfield);
  free(w->fns);
  free(w->fnstack);
  free(w->sites);
  free(w->siteargs);
  free(w->efrom);
  free(w->eto);
  free(w->lfix);
}

int dp_sched_graph_build(dp_sched_graph *g, dp_module *m, const dp_config *cfg, int mode,
                         dp_err **err) {
  *g = (dp_sched_graph){0};
  gwalk w = {.g = g, .m = m, .cfg = cfg, .ctx = m->ctx, .dag = (mode & 3) == DP_GRAPH_DAG,
             .params = (mode & DP_GRAPH_PARAMS) != 0, .host = NONE};
  g->param0 = g->result = NONE;
  g->mod = dp_retain(m);
  g->cfg = dp_retain((dp_config *)cfg);
  g->mode = mode;
  if (dp__plan_ops(m->ctx, &w.ops, err) < 0) {
    dp_sched_graph_free(g);
    return -1;
  }
  if (w.dag) choice_devices(&w);
  for (uint32_t i = 0; i < m->nfuncs && !failed(&w); i++) fn_index(&w, m->funcs[i].fn);
  for (uint32_t i = 0; i < m->nfuncs && !failed(&w); i++)
    if (!w.fns[i].prim) walk_fn(&w, i);
  if (!failed(&w)) decide(&w);
  if (!failed(&w)) wire_sites(&w);
  if (!failed(&w) && w.dag) late_fixes(&w);
  if (!failed(&w)) csr(&w);
  if (!failed(&w)) physical(&w);
  int rc = failed(&w) ? -1 : 0;
  if (w.err) dp_err_set(err, w.err);
  else if (w.oom) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  walk_free(&w);
  if (rc < 0) dp_sched_graph_free(g);
  return rc;
}

int dp_sched_order(const dp_sched_graph *g, uint32_t *order) {
  uint32_t *left = dp_malloc(((size_t)g->n + 1) * sizeof *left), head = 0, tail = 0;
  if (!left) return -2;
  for (uint32_t v = 0; v < g->n; v++) {
    left[v] = g->poff[v + 1] - g->poff[v];
    if (!left[v]) order[tail++] = v;
  }
  while (head < tail) {
    uint32_t v = order[head++];
    for (uint32_t k = g->soff[v]; k < g->soff[v + 1]; k++)
      if (--left[g->succ[k]] == 0) order[tail++] = g->succ[k];
  }
  free(left);
  return tail == g->n ? 0 : -1;
}

void dp_sched_graph_free(dp_sched_graph *g) {
  for (uint32_t i = 0; i < g->ndevs; i++) dp_release(g->devs[i]);
  free(g->devs);
  free(g->kind);
  free(g->expr);
  free(g->dev);
  free(g->src);
  free(g->bytes);
  free(g->approx);
  free(g->poff);
  free(g->pred);
  free(g->soff);
  free(g->succ);
  free(g->phys);
  free(g->soft_node);
  free(g->soft_dev);
  free(g->soft_weight);
  dp_release(g->mod);
  dp_release(g->cfg);
  *g = (dp_sched_graph){0};
}
