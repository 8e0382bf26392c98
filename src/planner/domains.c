/*
 * Domains: union-find over first-order domains (a device index, 0 while
 * free) and function domains fn(D1..Dn):Dr (planner.md "Domains"), over
 * the devices of a module's index (devices.c). Every numbered node has one
 * (dom[id]); what the numbering leaves out (primfns, pattern variables
 * never used) has one in `extra`.
 *
 * Unification joins devices field by field (devices.c) and unifies
 * function domains argument-wise; a first-order domain met by a function
 * domain collapses it (all its parameters and result unify with the
 * first-order one). It runs on an explicit work list and keeps a trail, so
 * a failed unification is undone (domains stay usable after a conflict,
 * phase 2's optional unification needs it, and a later pass may go on
 * after a conflict). The common case, two first-order classes of which
 * one is free or both agree, links the roots and nothing else.
 *
 * A conflict is data: dp__unify returns 1 and d->failed says which two
 * domains could not be one and why they were asked to; whoever asked
 * decides what to do with it (the pipeline has explain.c word it). Each
 * link made is told to on_link when it is set: explain.c keeps the proofs
 * of the domains it replays so, and nothing here knows of them.
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"

_Static_assert(R__COUNT <= 64, "dp__dnode.crule has 6 bits");

int dp__domains_init(dp__domains *d, dp__index *ix, uint32_t cap, dp_err **err) {
  *d = (dp__domains){.ix = ix, .dev = &ix->dev, .ctx = ix->mod->ctx};
  int fresh = !cap;
  if (!cap) {
    /* one domain per node, a constraint per annotation (at most two), and
       a few more: sized once, not doubled (a doubling copies everything and
       holds both copies at once) */
    uint64_t want = (uint64_t)ix->n + 2 * (uint64_t)ix->nann + ix->n / 16 + 64;
    cap = want > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)want;
  }
  /* the constraints likewise, one per annotation where it names a device
     (at 1,000,000 branchy calls their doublings from 16 wrote 1,300 small
     pages); a few more made by analysis (parameters, host arguments) grow
     from there */
  if (fresh && ix->nann) {
    d->capcons = ix->nann + 64 > UINT32_MAX / 2 ? UINT32_MAX / 2 : ix->nann + 64;
    if (!(d->cons = dp_malloc((size_t)d->capcons * sizeof *d->cons))) {
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return -1;
    }
  }
  d->capnodes = cap;
  /* (in the pages the numbering's walk left, where it left some; dom[] is
     made by analysis, which knows how much of it is needed) */
  d->nodes = dp__index_take(ix, (size_t)d->capnodes * sizeof *d->nodes);
  if (!d->nodes) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  /* (about to be written whole: their pages in one go; of the nodes, those
     of the ids and annotations, not the room beyond, which is trimmed) */
  dp__prefault(d->nodes, ((size_t)ix->n + ix->nann) * sizeof *d->nodes);
  /* (and the rest of the last huge page that took goes back: the room
     past it is made small as analysis needs it, and the domains and the
     index are the planner's peak; not after a placement by cost, ix->relax,
     whose defaulting makes a domain per class no flow reached right there,
     each page of that huge page then faulted in alone) */
  if (!ix->relax)
    dp__release_tail(d->nodes, ((size_t)ix->n + ix->nann) * sizeof *d->nodes,
                     (size_t)d->capnodes * sizeof *d->nodes);
  dp__dom_first(d, 0, 0, NULL); /* domain 0: what a failed allocation hands out */
  return 0;
}

void dp__domains_clear(dp__domains *d) {
  free(d->nodes);
  free(d->cons);
  free(d->kids);
  free(d->dom);
  free(d->work);
  free(d->trail);
  free(d->links);
  dp__ptrmap_free(&d->extra);
  *d = (dp__domains){0};
}

void dp__domains_drop(dp__domains *d) {
  dp__domains keep = {.ix = d->ix, .dev = d->dev, .ctx = d->ctx, .oom = d->oom};
  dp__domains_clear(d);
  *d = keep;
}

void dp__dom_compact(dp__domains *d) {
  uint32_t n = d->ix->n;
  if (!n || d->dom_from != n) return;
  uint32_t off = d->dom[n - 1] - (n - 1), from = n - 1;
  while (from > 0 && d->dom[from - 1] == (from - 1) + off) from--;
  uint32_t *p = dp_realloc(d->dom, (size_t)(from ? from : 1) * sizeof *d->dom);
  if (!p) return; /* (a failed shrink keeps the whole array, which stays right) */
  d->dom = p;
  d->dom_from = from;
  d->dom_off = off;
}

void dp__domains_trim(dp__domains *d) {
  dp__dom_compact(d);
  uint32_t n = d->nnodes + 64; /* (room for the few domains a lookup makes) */
  if (d->cons)
    dp__release_tail(d->cons, (size_t)d->ncons * sizeof *d->cons, (size_t)d->capcons * sizeof *d->cons);
  if (n >= d->capnodes) return;
  dp__dnode *p = dp_realloc(d->nodes, (size_t)n * sizeof *d->nodes);
  if (p) d->nodes = p, d->capnodes = n; /* (a failed shrink keeps the larger array) */
  if (p) dp__release_tail(p, (size_t)d->nnodes * sizeof *p, (size_t)n * sizeof *p);
}

static uint32_t new_node(dp__domains *d) {
  if (d->nnodes == d->capnodes &&
      dp_grow((void **)&d->nodes, &d->capnodes, d->nnodes + 1, sizeof *d->nodes) < 0) {
    d->oom = 1;
    return 0;
  }
  uint32_t id = d->nnodes++;
  d->nodes[id] = (dp__dnode){.parent = id, .size = 1};
  return id;
}

uint32_t dp__dom_first(dp__domains *d, uint32_t vdev, int crule, dp_expr *cwhy) {
  uint32_t id = new_node(d);
  if (d->oom) return 0;
  d->nodes[id].vdev = vdev;
  if (!vdev) return id;
  if (dp_grow((void **)&d->cons, &d->capcons, d->ncons + 1, sizeof *d->cons) < 0) {
    d->oom = 1;
    return 0;
  }
  d->cons[d->ncons++] = (dp__cons){id, vdev, cwhy};
  d->nodes[id].crule = (uint32_t)crule;
  return id;
}

void dp__dom_free_run(dp__domains *d, uint32_t n) {
  if (d->nnodes + (uint64_t)n > d->capnodes &&
      dp_grow((void **)&d->nodes, &d->capnodes, d->nnodes + n, sizeof *d->nodes) < 0) {
    d->oom = 1;
    return;
  }
  for (uint32_t id = d->nnodes, end = d->nnodes + n; id < end; id++)
    d->nodes[id] = (dp__dnode){.parent = id, .size = 1};
  d->nnodes += n;
}

uint32_t dp__dom_fn(dp__domains *d, uint32_t arity, const uint32_t *kids) {
  if (dp_grow((void **)&d->kids, &d->capkids, d->nkids + arity + 2, sizeof *d->kids) < 0) {
    d->oom = 1;
    return 0;
  }
  uint32_t off = d->nkids;
  d->kids[off] = arity;
  memcpy(d->kids + off + 1, kids, (size_t)(arity + 1) * sizeof *kids);
  d->nkids += arity + 2;
  uint32_t id = new_node(d);
  if (d->oom) return 0;
  d->nodes[id].isfn = 1;
  d->nodes[id].aux = off;
  return id;
}

/* Types nest only as deep as a user writes them, so recursion is fine. */
uint32_t dp__dom_for_type(dp__domains *d, const dp_type *t, uint32_t vdev, int crule,
                          dp_expr *cwhy) {
  if (!t || t->h.kind != DP_TY_FUNC) return dp__dom_first(d, vdev, crule, cwhy);
  const dp_func_type *ft = (const dp_func_type *)t;
  uint32_t small[8], *k = ft->nargs < 7 ? small : dp_malloc((ft->nargs + 1) * sizeof *k);
  if (!k) {
    d->oom = 1;
    return 0;
  }
  for (uint32_t i = 0; i < ft->nargs; i++)
    k[i] = dp__dom_for_type(d, ft->items[ft->ntparams + i], 0, 0, NULL);
  k[ft->nargs] = dp__dom_for_type(d, ft->ret, vdev, crule, cwhy);
  uint32_t id = dp__dom_fn(d, ft->nargs, k);
  if (k != small) free(k);
  return id;
}

static uint32_t dom_of_global(dp__domains *d, const dp_global *g) {
  const dp__index *ix = d->ix;
  int f = dp_module_func_index(ix->mod, g->name);
  if (f >= 0 && (uint32_t)f < ix->nfn) return dp__dom_at(d, ix->fnid[f]); /* its root's */
  dp_primfn *pf = dp_module_primfn(ix->mod, g->name);
  if (pf) {
    dp__ptrslot *s = dp__ptrmap_find(&d->extra, pf);
    if (s) return s->val;
  }
  return dp__dom_for_type(d, g->e.type, 0, 0, NULL);
}

uint32_t dp__dom_of(dp__domains *d, dp_expr *e) {
  /* (operators and constructors are never numbered) */
  if (e->h.kind != DP_OP && e->h.kind != DP_CTOR) {
    uint32_t k = dp__index_find(d->ix, e, &d->oom);
    if (k != DP__NONE_ID) return dp__dom_at(d, k);
  }
  dp__ptrslot *s = dp__ptrmap_find(&d->extra, e);
  if (s) return s->val;
  uint32_t id = dp__dom_new(d, e);
  if (dp__ptrmap_set(&d->extra, e, id, 0) < 0) d->oom = 1;
  return id;
}

int dp__dom_has(const dp__domains *d, const dp_expr *e) {
  if (!e) return 0;
  const dp_module *m = d->ix->mod;
  if (e->h.kind == DP_GLOBAL) return dp_module_func(m, ((const dp_global *)e)->name) != NULL ||
                                     dp_module_primfn(m, ((const dp_global *)e)->name) != NULL;
  if (dp__index_id(d->ix, e) != DP__NONE_ID) return 1;
  return dp__ptrmap_find(&d->extra, e) != NULL;
}

uint32_t dp__dom_new(dp__domains *d, const dp_expr *e) {
  if (e->h.kind == DP_GLOBAL) return dom_of_global(d, (const dp_global *)e);
  if (e->h.kind == DP_FUNC && (!e->type || e->type->h.kind != DP_TY_FUNC)) {
    const dp_func *f = (const dp_func *)e;
    uint32_t small[8], *k = f->nparams < 7 ? small : dp_malloc((f->nparams + 1) * sizeof *k);
    if (!k) {
      d->oom = 1;
      return 0;
    }
    for (uint32_t i = 0; i <= f->nparams; i++) k[i] = dp__dom_first(d, 0, 0, NULL);
    uint32_t id = dp__dom_fn(d, f->nparams, k);
    if (k != small) free(k);
    return id;
  }
  const dp_type *t = e->type;
  if (!t && e->h.kind == DP_VAR) t = dp_var_annot((const dp_var *)e);
  return dp__dom_for_type(d, t, 0, 0, NULL);
}

static uint32_t find_nc(const dp__domains *d, uint32_t x) {
  while (d->nodes[x].parent != x) x = d->nodes[x].parent;
  return x;
}

uint32_t dp__dom_find(dp__domains *d, uint32_t x) {
  uint32_t r = find_nc(d, x);
  while (d->nodes[x].parent != r) { /* path compression */
    uint32_t next = d->nodes[x].parent;
    d->nodes[x].parent = r;
    x = next;
  }
  return r;
}

uint32_t dp__dom_arity(dp__domains *d, uint32_t x) {
  uint32_t r = dp__dom_find(d, x);
  return d->nodes[r].isfn ? d->kids[d->nodes[r].aux] : 0;
}

uint32_t dp__dom_kid(dp__domains *d, uint32_t x, uint32_t i) {
  uint32_t r = dp__dom_find(d, x);
  return d->kids[d->nodes[r].aux + 1 + i];
}

uint32_t dp__dom_result(dp__domains *d, uint32_t x) {
  uint32_t r = dp__dom_find(d, x);
  while (d->nodes[r].isfn) r = dp__dom_find(d, d->kids[d->nodes[r].aux + 1 + d->kids[d->nodes[r].aux]]);
  return r;
}

uint32_t dp__dom_dev(dp__domains *d, uint32_t x) {
  return d->nodes[dp__dom_result(d, x)].vdev;
}

dp_vdev *dp__dom_vdev(dp__domains *d, uint32_t x) {
  uint32_t v = dp__dom_dev(d, x);
  return v ? d->dev->v[v] : NULL;
}

static int push2(uint32_t **arr, uint32_t *n, uint32_t *cap, uint32_t a, uint32_t b) {
  if (dp_grow((void **)arr, cap, *n + 2, sizeof **arr) < 0) return -1;
  (*arr)[(*n)++] = a;
  (*arr)[(*n)++] = b;
  return 0;
}

static void grow_size(dp__dnode *root, const dp__dnode *other) {
  uint32_t n = root->size + other->size;
  root->size = n > DP__DSIZE_MAX ? DP__DSIZE_MAX : n;
}

/* Link two roots, the smaller class under the larger; the trail keeps
   (child, old root value, old root size). A function root keeps its own
   kids (set_val 0). */
static void link_roots(dp__domains *d, uint32_t rx, uint32_t ry, uint32_t vdev, int set_val) {
  if (d->nodes[rx].size < d->nodes[ry].size) {
    uint32_t t = rx;
    rx = ry;
    ry = t;
  }
  if (push2(&d->trail, &d->ntrail, &d->captrail, ry, d->nodes[rx].vdev) < 0 ||
      push2(&d->trail, &d->ntrail, &d->captrail, d->nodes[rx].size, 0) < 0) {
    d->oom = 1;
    return;
  }
  d->nodes[ry].parent = rx;
  grow_size(&d->nodes[rx], &d->nodes[ry]);
  if (set_val) d->nodes[rx].vdev = vdev;
  d->nodes[rx].read |= d->nodes[ry].read; /* (not undone: one pass more at worst) */
}

static void undo(dp__domains *d) {
  while (d->ntrail >= 4) {
    d->ntrail -= 4;
    uint32_t child = d->trail[d->ntrail], val = d->trail[d->ntrail + 1];
    uint32_t size = d->trail[d->ntrail + 2];
    uint32_t root = d->nodes[child].parent;
    d->nodes[root].vdev = val;
    d->nodes[root].size = size;
    d->nodes[child].parent = child;
  }
}

/* ---- unification ---- */

/* The general case: function domains, collapses, a join to compute; all
   undone on failure. */
static int unify_slow(dp__domains *d, uint32_t a, uint32_t b, uint32_t *fx, uint32_t *fy) {
  d->nwork = d->ntrail = d->nlinks = 0;
  if (push2(&d->work, &d->nwork, &d->capwork, a, b) < 0) d->oom = 1;
  while (d->nwork && !d->oom) {
    uint32_t y = d->work[--d->nwork], x = d->work[--d->nwork];
    uint32_t rx = find_nc(d, x), ry = find_nc(d, y);
    if (rx == ry) continue;
    dp__dnode *X = &d->nodes[rx], *Y = &d->nodes[ry];
    if (!X->isfn && !Y->isfn) {
      uint32_t v = dp__dev_join(d->dev, X->vdev, Y->vdev);
      if (v == DP__NONE_ID) {
        *fx = x;
        *fy = y;
        return -1;
      }
      link_roots(d, rx, ry, v, 1);
    } else if (X->isfn && Y->isfn) {
      uint32_t ax = d->kids[X->aux], ay = d->kids[Y->aux];
      if (ax != ay) {
        *fx = x;
        *fy = y;
        return -1;
      }
      uint32_t offx = X->aux, offy = Y->aux;
      link_roots(d, rx, ry, 0, 0);
      for (uint32_t i = 0; i <= ax; i++)
        if (push2(&d->work, &d->nwork, &d->capwork, d->kids[offx + 1 + i], d->kids[offy + 1 + i]) < 0)
          d->oom = 1;
    } else {
      uint32_t h = X->isfn ? rx : ry, f = X->isfn ? y : x;
      uint32_t off = d->nodes[h].aux;
      for (uint32_t i = 0; i <= d->kids[off]; i++)
        if (push2(&d->work, &d->nwork, &d->capwork, d->kids[off + 1 + i], f) < 0) d->oom = 1;
      continue;
    }
    if (d->on_link && push2(&d->links, &d->nlinks, &d->caplinks, x, y) < 0) d->oom = 1;
  }
  return d->oom ? -1 : 0;
}

int dp__unify(dp__domains *d, uint32_t a, uint32_t b, int rule, dp_expr *why, dp_err **err) {
  uint32_t ra = dp__dom_find(d, a), rb = dp__dom_find(d, b);
  if (ra == rb) return 0;
  /* the fast path: two first-order classes that agree (or one is free) */
  if (dp__link_agreeing(d, ra, rb)) {
    if (d->on_link && d->on_link(d->link_ud, d, a, b, rule, why) < 0) d->oom = 1;
    return 0;
  }
  uint32_t fx = DP__NONE_ID, fy = DP__NONE_ID;
  if (unify_slow(d, a, b, &fx, &fy) < 0) {
    undo(d);
    if (d->oom) {
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return -1;
    }
    d->failed = (dp__conflict){fx, fy, rule, why};
    return 1;
  }
  for (uint32_t i = 0; i < d->nlinks && d->on_link; i += 2)
    if (d->on_link(d->link_ud, d, d->links[i], d->links[i + 1], rule, why) < 0) d->oom = 1;
  return 0;
}

/* ---- defaults ---- */

static int default_first(dp__domains *d, uint32_t x, uint32_t vdev, int rule, dp_expr *why,
                         dp_err **err) {
  uint32_t r = dp__dom_find(d, x), cur = d->nodes[r].vdev;
  if (cur == vdev || vdev == 0) return 0;
  uint32_t want = dp__dev_default(d->dev, cur, vdev);
  if (d->dev->oom) {
    d->oom = 1;
    return -1;
  }
  if (want == cur) return 0;
  if (d->nodes[r].read) d->repass = 1;
  uint32_t c = dp__dom_first(d, want, rule, why);
  return dp__unify(d, r, c, rule, why, err);
}

/* A work stack that starts in the caller's frame (most domains are first
   order: no allocation) and moves to the heap when it outgrows it. */
static int stack_room(uint32_t **stack, uint32_t *cap, uint32_t *small, uint32_t need) {
  if (need <= *cap) return 0;
  uint32_t *heap = *stack == small ? NULL : *stack, c = *stack == small ? 0 : *cap;
  if (dp_grow((void **)&heap, &c, need, sizeof *heap) < 0) return -1;
  if (*stack == small) memcpy(heap, small, *cap * sizeof *heap);
  *stack = heap;
  *cap = c;
  return 0;
}

int dp__set_default(dp__domains *d, uint32_t x, uint32_t vdev, int rule, dp_expr *why,
                    dp_err **err) {
  uint32_t r0 = dp__dom_find(d, x);
  if (!d->nodes[r0].isfn) {
    /* most defaults find the class decided already */
    uint32_t cur = d->nodes[r0].vdev;
    return cur == vdev || vdev == 0 ? 0 : default_first(d, r0, vdev, rule, why, err);
  }
  uint32_t small[16], *stack = small, n = 0, cap = 16;
  int rc = 0;
  stack[n++] = x;
  while (n && rc == 0) {
    uint32_t r = dp__dom_find(d, stack[--n]);
    if (!d->nodes[r].isfn) {
      rc = default_first(d, r, vdev, rule, why, err);
      continue;
    }
    uint32_t off = d->nodes[r].aux, ar = d->kids[off];
    if (stack_room(&stack, &cap, small, n + ar + 1) < 0) goto oom;
    for (uint32_t i = ar + 1; i-- > 0;) stack[n++] = d->kids[off + 1 + i];
  }
  if (stack != small) free(stack);
  return rc;
oom:
  if (stack != small) free(stack);
  d->oom = 1;
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return -1;
}

int dp__set_result_default_then_params(dp__domains *d, uint32_t x, uint32_t vdev, int rule,
                                       dp_expr *why, dp_err **err) {
  uint32_t r = dp__dom_find(d, x);
  if (!d->nodes[r].isfn) return dp__set_default(d, r, vdev, rule, why, err);
  uint32_t ar = dp__dom_arity(d, r);
  int rc = dp__set_default(d, dp__dom_kid(d, r, ar), vdev, rule, why, err);
  uint32_t rv = dp__dom_source(d, r);
  for (uint32_t i = 0; i < ar && rc == 0; i++)
    rc = dp__set_default(d, dp__dom_kid(d, r, i), rv, R_DEF_PARAM, why, err);
  return rc;
}

int dp__constrain(dp__domains *d, dp_expr *e, uint32_t vdev, int rule, dp_err **err) {
  uint32_t k = dp__dom_first(d, vdev, rule, e);
  return dp__unify(d, dp__dom_result(d, dp__dom_of(d, e)), k, rule, e, err);
}

uint32_t dp__dom_source(dp__domains *d, uint32_t x) {
  uint32_t r = dp__dom_result(d, x);
  d->nodes[r].read = 1;
  return d->nodes[r].vdev;
}

int dp__dom_fully_constrained(dp__domains *d, uint32_t x) {
  uint32_t small[16], *stack = small, n = 0, cap = 16;
  int ok = 1;
  stack[n++] = x;
  while (n && ok) {
    uint32_t r = dp__dom_find(d, stack[--n]);
    if (!d->nodes[r].isfn) {
      ok = dp_vdev_is_fully_constrained(d->dev->v[d->nodes[r].vdev]);
      continue;
    }
    uint32_t off = d->nodes[r].aux, ar = d->kids[off];
    if (stack_room(&stack, &cap, small, n + ar + 1) < 0) {
      ok = 0;
      break;
    }
    for (uint32_t i = 0; i <= ar; i++) stack[n++] = d->kids[off + 1 + i];
  }
  if (stack != small) free(stack);
  return ok;
}

uint32_t dp__callee_dom(dp__domains *d, uint32_t id) {
  const dp__index *ix = d->ix;
  /* call_lowered(@f, (args)): @f is child 1 */
  uint32_t i = ix->what[id] == W_LOWERED ? 1 : 0;
  if (!i && ix->what[id] != W_FN_CALL) return DP__NONE_ID;
  int k = dp__child(ix->x[id], i)->h.kind;
  return k == DP_OP || k == DP_CTOR ? DP__NONE_ID : dp__kdom(d, id, i);
}

const dp__cons *dp__dom_cons(const dp__domains *d, uint32_t x) {
  uint32_t lo = 0, hi = d->ncons;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (d->cons[mid].dom < x) lo = mid + 1;
    else hi = mid;
  }
  return lo < d->ncons && d->cons[lo].dom == x ? &d->cons[lo] : NULL;
}
