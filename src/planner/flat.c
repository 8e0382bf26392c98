/*
 * The flat index of an analysed module: one walk per global function (an
 * explicit stack, the reach order of dp_visit) gives every distinct node a
 * dense id and records its domain, its children's ids and the post order.
 * Later phases run over these arrays, so the planner looks a node up by
 * pointer only where the node is shared (rc > 1: it may be reached again)
 * instead of several times per node and phase. Why: pointer-map lookups
 * on a million nodes are cache misses, and they were most of the time.
 * In fixmode (dp_plan_devices without phase 0's module) the walk also
 * flags the on_device calls phase 0 would have fixed (FL_FIX), and notes
 * where phase 0 would change more than that (needs_rewrite).
 */
#include <stdlib.h>
#include "planner.h"

typedef struct fframe { uint32_t id, i, n; } fframe;

static int resize_nodes(dp_flat *f, uint32_t c);

static int grow_nodes(dp_flat *f, uint32_t need) {
  if (need + 1 <= f->cap) return 0;
  uint32_t c = f->cap ? f->cap : 256;
  while (c < need + 1) c *= 2;
  return resize_nodes(f, c);
}

/* Every per-node array to exactly c entries. */
static int resize_nodes(dp_flat *f, uint32_t c) {
  void *x = dp_realloc(f->x, (size_t)c * sizeof *f->x);
  if (x) f->x = x;
  void *d = x ? dp_realloc(f->dom, (size_t)c * sizeof *f->dom) : NULL;
  if (d) f->dom = d;
  void *k = d ? dp_realloc(f->koff, (size_t)c * sizeof *f->koff) : NULL;
  if (k) f->koff = k;
  void *p = k ? dp_realloc(f->post, (size_t)c * sizeof *f->post) : NULL;
  if (p) f->post = p;
  void *g = p ? dp_realloc(f->flag, (size_t)c * sizeof *f->flag) : NULL;
  if (g) f->flag = g;
  if (!g) return -1;
  f->cap = c;
  return 0;
}

static uint32_t slack(uint32_t n, uint32_t div) {
  uint64_t r = (uint64_t)n + n / div + 256;
  return r > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)r;
}

void dp__reserve(dp_domains *d, const struct dp_sizes *sz) {
  dp_flat *f = &d->flat;
  if (f->n || f->cap) return;
  /* exact sizes plus a little (not powers of two: a million-node module
     would waste up to half of each array); a failure here only leaves the
     arrays to grow as they go */
  if (resize_nodes(f, slack(sz->nodes, 32)) < 0) return;
  uint32_t nk = slack(sz->edges, 32);
  void *k = dp_realloc(f->kid, (size_t)nk * sizeof *f->kid);
  if (!k) return;
  f->kid = k;
  f->capkid = nk;
  uint32_t nd = slack(sz->nodes + sz->cons, 16);
  if (nd > d->capnodes) {
    void *p = dp_realloc(d->nodes, (size_t)nd * sizeof *d->nodes);
    if (!p) return;
    d->nodes = p;
    d->capnodes = nd;
  }
  dp__pmap_reserve(&d->map, slack(sz->shared, 8));
}

void dp__flat_free(dp_flat *f) {
  free(f->fnid);
  free(f->fnpost);
  free(f->gref);
  free(f->x);
  free(f->dom);
  free(f->koff);
  free(f->kid);
  free(f->post);
  free(f->flag);
  *f = (dp_flat){0};
}

static int is_lowered(const dp_domains *d, const dp_call *c) {
  return d->ops.call_lowered && c->fn == (dp_expr *)d->ops.call_lowered && c->nargs == 2 &&
         c->args[1]->h.kind == DP_TUPLE;
}

/* The domain of a shared node reached for the first time in this
   function (ids from `from` on), and whether it is in d->map already.
   d->map holds its domain or its flat id in an earlier function. */
static uint32_t shared_dom(dp_domains *d, dp_expr *e, struct dp_pslot *s) {
  if (!s) return dp__dom_new(d, e);
  if (!(s->flags & PM_ID)) return s->val;
  d->xshared = 1;
  return d->flat.dom[s->val];
}

/* First reach of e: its id (new, or from d->map for a shared node already
   indexed in this function: ids from `from` on), DP_NONE_ID for operators
   and constructors; a new node is pushed on the frame stack. */
static uint32_t reach(dp_domains *d, uint32_t from, dp_expr *e, int root, fframe **st,
                      uint32_t *nst, uint32_t *capst) {
  dp_flat *f = &d->flat;
  int k = e->h.kind;
  if (k == DP_OP || k == DP_CTOR) return DP_NONE_ID;
  int shared = root || e->h.rc > 1;
  struct dp_pslot *s = NULL;
  if (shared) {
    s = dp__pmap_get(&d->map, (uintptr_t)e);
    if (s && (s->flags & PM_ID) && s->val >= from) return s->val;
  }
  int prim = k == DP_FUNC && dp__is_primitive((dp_func *)e);
  /* phase 0 rewrites inside primitive bodies, which are not indexed */
  if (prim && d->fixmode) d->needs_rewrite = 1;
  uint32_t nk = prim ? 0 : dp__nchildren(e);
  if (grow_nodes(f, f->n + 1) < 0 || dp_grow((void **)&f->kid, &f->capkid, f->nkid + nk, sizeof *f->kid) < 0 ||
      dp_grow((void **)st, capst, *nst + 1, sizeof **st) < 0) {
    d->oom = 1;
    return DP_NONE_ID;
  }
  uint32_t id = f->n++;
  f->x[id] = e;
  f->flag[id] = shared ? PM_SHARED : 0;
  /* shared nodes keep their id in d->map, so every reach of them agrees
     (and globals their function's domain) */
  f->dom[id] = shared ? shared_dom(d, e, s) : k == DP_GLOBAL ? dp__dom_of(d, e) : dp__dom_new(d, e);
  f->koff[id] = f->nkid;
  for (uint32_t i = 0; i < nk; i++) f->kid[f->nkid + i] = DP_NONE_ID;
  f->nkid += nk;
  f->koff[id + 1] = f->nkid;
  if (shared) {
    if (s) { /* (s is still valid: only dp__dom_new, run when s is NULL, grows d->map) */
      s->val = id;
      s->flags |= PM_ID;
    } else if (dp__pmap_add(&d->map, (uintptr_t)e, id, PM_ID) < 0) {
      d->oom = 1;
    }
  }
  (*st)[(*nst)++] = (fframe){id, 0, nk};
  if (k == DP_GLOBAL) { /* an edge of the call graph (order.c) */
    if (dp_grow((void **)&f->gref, &f->capgref, f->ngref + 1, sizeof *f->gref) < 0) d->oom = 1;
    else f->gref[f->ngref++] = id;
  }
  return id;
}

/* Open the range of the next function (and close it: entry nfn + 1). */
static int fn_range(dp_domains *d) {
  dp_flat *f = &d->flat;
  uint32_t cap = f->capfn;
  if (dp_grow((void **)&f->fnid, &f->capfn, f->nfn + 2, sizeof *f->fnid) < 0) return -1;
  if (cap != f->capfn || !f->fnpost) {
    void *p = dp_realloc(f->fnpost, (size_t)f->capfn * sizeof *f->fnpost);
    if (!p) return -1;
    f->fnpost = p;
  }
  f->fnid[f->nfn] = f->n;
  f->fnpost[f->nfn] = f->npost;
  return 0;
}

static int fn_typed(const dp_expr *e) {
  return e->type && e->type->h.kind == DP_TY_FUNC;
}

/* fixmode: child e (flat id kid) of parent, at position i, as phase 0 sees
   it. A let value or function body that is an on_device constraining its
   body only becomes fixed (FL_FIX) where phase 0 would make it a fixed
   on_device of the same body; anything else phase 0 changes (projections
   of such calls, a body phase 0 would drop the annotation of or merge or
   nest, a shared call, function types) needs phase 0 itself. */
static void fix_check(dp_domains *d, dp_expr *parent, uint32_t i, dp_expr *e, uint32_t kid) {
  dp_ondev p, q;
  if (!dp__on_device_props(&d->ops, e, &p) || !p.cbody || p.cresult || !p.vd) return;
  int pk = parent->h.kind;
  if (pk == DP_PROJ) {
    d->needs_rewrite = 1;
    return;
  }
  if (!(pk == DP_LET && i == 1) && !(pk == DP_FUNC && i == ((dp_func *)parent)->nparams)) return;
  int bk = p.body->h.kind;
  if (e->h.rc > 1 || bk == DP_OP || bk == DP_CTOR || dp__on_device_props(&d->ops, p.body, &q) ||
      fn_typed(e) || fn_typed(p.body) || kid == DP_NONE_ID) {
    d->needs_rewrite = 1;
    return;
  }
  d->flat.flag[kid] |= FL_FIX;
}

/* fixmode: call_lowered of a primfn, which phase 0 wraps. */
static void lowered_check(dp_domains *d, dp_call *c) {
  if (c->args[0]->h.kind == DP_GLOBAL && dp_module_primfn(d->mod, ((dp_global *)c->args[0])->name))
    d->needs_rewrite = 1;
}

int dp__flat_add(dp_domains *d, dp_func *root) {
  dp_flat *f = &d->flat;
  fframe *st = NULL;
  uint32_t nst = 0, capst = 0, from = f->n;
  if (fn_range(d) < 0) {
    d->oom = 1;
    return -1;
  }
  reach(d, from, &root->e, 1, &st, &nst, &capst);
  while (nst && !d->oom) {
    fframe *t = &st[nst - 1];
    if (t->i < t->n) {
      uint32_t id = t->id, i = t->i++;
      uint32_t k = reach(d, from, dp__child(f->x[id], i), 0, &st, &nst, &capst);
      f->kid[f->koff[id] + i] = k;
      if (d->fixmode && !d->oom) fix_check(d, f->x[id], i, dp__child(f->x[id], i), k);
      continue;
    }
    uint32_t id = t->id;
    nst--;
    f->post[f->npost++] = id;
    dp_expr *e = f->x[id];
    if (e->h.kind == DP_CALL && is_lowered(d, (dp_call *)e)) {
      if (d->fixmode) lowered_check(d, (dp_call *)e);
      uint32_t tk = dp__fkid(d, id, 2);
      if (tk != DP_NONE_ID) {
        f->flag[tk] |= PM_LOWERED_ARGS;
        if (f->flag[tk] & PM_SHARED) {
          struct dp_pslot *s = dp__pmap_get(&d->map, (uintptr_t)f->x[tk]);
          if (s) s->flags |= PM_LOWERED_ARGS;
        }
      }
    }
  }
  free(st);
  f->nfn++;
  f->fnid[f->nfn] = f->n;
  f->fnpost[f->nfn] = f->npost;
  return d->oom ? -1 : 0;
}

uint32_t dp__fkdom_slow(dp_domains *d, uint32_t id, uint32_t i) {
  return dp__dom_of(d, dp__child(d->flat.x[id], i));
}

uint32_t dp__fcallee_dom(dp_domains *d, uint32_t id) {
  dp_call *c = (dp_call *)d->flat.x[id];
  uint32_t i = is_lowered(d, c) ? 1 : 0;
  dp_expr *callee = i ? c->args[0] : c->fn;
  if (callee->h.kind == DP_OP || callee->h.kind == DP_CTOR) return DP_NONE_ID;
  return dp__fkdom(d, id, i);
}

int dp__domains_full_map(dp_domains *d) {
  if (d->map_full) return 0;
  dp_flat *f = &d->flat;
  for (uint32_t id = 0; id < f->n; id++) {
    uint32_t fl = f->flag[id] & (PM_PARAM | PM_LOWERED_ARGS | PM_VISITED);
    struct dp_pslot *s = dp__pmap_get(&d->map, (uintptr_t)f->x[id]);
    if (s && (s->flags & PM_ID)) { /* shared: its slot names a flat id already */
      s->flags |= fl;
      continue;
    }
    if (dp__pmap_put(&d->map, (uintptr_t)f->x[id], f->dom[id], fl) < 0) {
      d->oom = 1;
      return -1;
    }
  }
  d->map_full = 1;
  return 0;
}
