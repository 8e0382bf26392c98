/*
 * Domains: union-find over first-order domains (a virtual device, maybe
 * free) and function domains fn(D1..Dn):Dr (planner.md "Domains").
 *
 * Unification joins devices field by field (dp_vdev_join, canonicalised
 * through the configuration) and unifies function domains argument-wise; a
 * first-order domain met by a function domain collapses it (all its
 * parameters and result unify with the first-order one). It runs on an
 * explicit work list, keeps a trail so a failed unification is undone
 * (domains stay usable after a conflict, and phase 2's optional
 * unification needs it), and, once it succeeds, records each link in a
 * proof forest: an undirected spanning tree of every class whose edges say
 * why two domains were unified. Explanations and conflict messages walk
 * that forest from an expression to the constraint that decided it.
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"

static void domains_free(dp_obj *o, dp_worklist *wl) {
  dp_domains *d = (dp_domains *)o;
  for (uint32_t i = 0; i < d->nvdevs; i++) dp_release_deferred(wl, d->vdevs[i]);
  for (uint32_t i = 0; i < d->ncanon; i++) dp_release_deferred(wl, d->canon_key[i]);
  dp_release_deferred(wl, d->mod);
  dp_release_deferred(wl, d->cfg);
  free(d->vdevs);
  free(d->nodes);
  free(d->cons);
  free(d->kids);
  free(d->work);
  free(d->trail);
  free(d->links);
  free(d->order);
  dp__pmap_free(&d->map);
  dp__flat_free(&d->flat);
  dp__plan_ops_free(&d->ops);
  free(d);
}

void dp__domains_free_fn(dp_obj *o, dp_worklist *wl) { domains_free(o, wl); }

dp_domains *dp__domains_new(dp_module *m, const dp_config *cfg, dp_err **err) {
  dp_register_free(DP_OBJ_DOMAINS, dp__domains_free_fn);
  dp_domains *d = dp_calloc(1, sizeof *d);
  if (!d) goto oom;
  d->h.rc = 1;
  d->h.type = DP_OBJ_DOMAINS;
  d->mod = dp_retain(m);
  d->cfg = dp_retain((dp_config *)cfg);
  d->ctx = m->ctx;
  if (dp__plan_ops(d->ctx, &d->ops, err) < 0) {
    dp_release(d);
    return NULL;
  }
  dp_vdev *free_vd = dp_vdev_unconstrained(d->ctx);
  if (!free_vd || dp_grow((void **)&d->vdevs, &d->capvdevs, 1, sizeof *d->vdevs) < 0) {
    dp_release(free_vd);
    dp_release(d);
    goto oom;
  }
  d->vdevs[d->nvdevs++] = free_vd;
  d->host = dp__vdev_index(d, cfg->host_vdev);
  dp__dom_first(d, 0, 0, NULL); /* node 0: what a failed allocation hands out */
  if (d->oom) {
    dp_release(d);
    goto oom;
  }
  return d;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return NULL;
}

uint32_t dp__vdev_index(dp_domains *d, dp_vdev *v) {
  if (!v) return 0;
  for (uint32_t i = d->nvdevs; i-- > 0;)
    if (d->vdevs[i] == v) return i;
  if (dp_grow((void **)&d->vdevs, &d->capvdevs, d->nvdevs + 1, sizeof *d->vdevs) < 0) {
    d->oom = 1;
    return 0;
  }
  d->vdevs[d->nvdevs] = dp_retain(v);
  return d->nvdevs++;
}

uint32_t dp__canon_index(dp_domains *d, dp_vdev *v, dp_err **err) {
  if (!v || dp_vdev_is_fully_unconstrained(v)) return 0;
  for (uint32_t k = 0; k < d->ncanon; k++)
    if (d->canon_key[k] == v) return d->canon_val[k];
  dp_vdev *c = dp_config_canonical(d->cfg, v, err);
  if (!c) return DP_NONE_ID;
  uint32_t i = dp__vdev_index(d, c);
  dp_release(c);
  if (d->ncanon < 8 && !d->oom) {
    d->canon_key[d->ncanon] = dp_retain(v);
    d->canon_val[d->ncanon++] = i;
  }
  return i;
}

static uint32_t new_node(dp_domains *d) {
  if (dp_grow((void **)&d->nodes, &d->capnodes, d->nnodes + 1, sizeof *d->nodes) < 0) {
    d->oom = 1;
    return 0;
  }
  uint32_t id = d->nnodes++;
  dp_dnode *n = &d->nodes[id];
  memset(n, 0, sizeof *n);
  n->parent = id;
  n->size = 1;
  n->pparent = DP_NONE_ID;
  return id;
}

uint32_t dp__dom_first(dp_domains *d, uint32_t vdev, int crule, dp_expr *cwhy) {
  uint32_t id = new_node(d);
  if (d->oom) return 0;
  d->nodes[id].vdev = vdev;
  if (!vdev) return id;
  if (dp_grow((void **)&d->cons, &d->capcons, d->ncons + 1, sizeof *d->cons) < 0) {
    d->oom = 1;
    return 0;
  }
  d->cons[d->ncons] = (dp_cons){vdev, cwhy};
  d->nodes[id].aux = d->ncons++;
  d->nodes[id].crule = (uint8_t)crule;
  return id;
}

uint32_t dp__dom_fn(dp_domains *d, uint32_t arity, const uint32_t *kids) {
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
uint32_t dp__dom_for_type(dp_domains *d, const dp_type *t, uint32_t vdev, int crule,
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

static uint32_t dom_of_global(dp_domains *d, dp_global *g) {
  dp_func *f = dp_module_func(d->mod, g->name);
  if (f) return dp__dom_of(d, &f->e);
  dp_primfn *pf = dp_module_primfn(d->mod, g->name);
  if (pf) {
    struct dp_pslot *s = dp__pmap_get(&d->map, (uintptr_t)pf);
    if (s) return s->val;
  }
  return dp__dom_for_type(d, g->e.type, 0, 0, NULL);
}

uint32_t dp__dom_of(dp_domains *d, dp_expr *e) {
  struct dp_pslot *s = dp__pmap_get(&d->map, (uintptr_t)e);
  if (s && s->val != DP_NONE_ID) return s->flags & PM_ID ? d->flat.dom[s->val] : s->val;
  uint32_t id = dp__dom_new(d, e);
  if (dp__pmap_put(&d->map, (uintptr_t)e, id, 0) < 0) d->oom = 1;
  return id;
}

uint32_t dp__dom_new(dp_domains *d, dp_expr *e) {
  uint32_t id;
  if (e->h.kind == DP_GLOBAL) {
    id = dom_of_global(d, (dp_global *)e);
  } else if (e->h.kind == DP_FUNC && (!e->type || e->type->h.kind != DP_TY_FUNC)) {
    dp_func *f = (dp_func *)e;
    uint32_t small[8], *k = f->nparams < 7 ? small : dp_malloc((f->nparams + 1) * sizeof *k);
    if (!k) {
      d->oom = 1;
      return 0;
    }
    for (uint32_t i = 0; i <= f->nparams; i++) k[i] = dp__dom_first(d, 0, 0, NULL);
    id = dp__dom_fn(d, f->nparams, k);
    if (k != small) free(k);
  } else {
    const dp_type *t = e->type;
    if (!t && e->h.kind == DP_VAR) t = ((dp_var *)e)->annot;
    id = dp__dom_for_type(d, t, 0, 0, NULL);
  }
  return id;
}

static uint32_t find_nc(const dp_domains *d, uint32_t x) {
  while (d->nodes[x].parent != x) x = d->nodes[x].parent;
  return x;
}

uint32_t dp__dom_find(dp_domains *d, uint32_t x) {
  uint32_t r = find_nc(d, x);
  while (d->nodes[x].parent != r) { /* path compression */
    uint32_t next = d->nodes[x].parent;
    d->nodes[x].parent = r;
    x = next;
  }
  return r;
}

uint32_t dp__dom_arity(dp_domains *d, uint32_t x) {
  uint32_t r = dp__dom_find(d, x);
  return d->nodes[r].isfn ? d->kids[d->nodes[r].aux] : 0;
}

uint32_t dp__dom_kid(dp_domains *d, uint32_t x, uint32_t i) {
  uint32_t r = dp__dom_find(d, x);
  return d->kids[d->nodes[r].aux + 1 + i];
}

uint32_t dp__dom_result(dp_domains *d, uint32_t x) {
  uint32_t r = dp__dom_find(d, x);
  while (d->nodes[r].isfn) r = dp__dom_find(d, d->kids[d->nodes[r].aux + 1 + d->kids[d->nodes[r].aux]]);
  return r;
}

dp_vdev *dp__dom_vdev(dp_domains *d, uint32_t x) {
  uint32_t v = d->nodes[dp__dom_result(d, x)].vdev;
  return v ? d->vdevs[v] : NULL;
}

/* Join two device indices; DP_NONE_ID when a constrained field disagrees. */
static uint32_t join_idx(dp_domains *d, uint32_t a, uint32_t b) {
  if (a == b || b == 0) return a;
  if (a == 0) return b;
  dp_vdev *j = dp_vdev_join(d->vdevs[a], d->vdevs[b]);
  if (!j) return DP_NONE_ID;
  dp_vdev *c = dp_config_canonical(d->cfg, j, NULL);
  uint32_t i = dp__vdev_index(d, c ? c : j);
  dp_release(c);
  dp_release(j);
  return i;
}

static int push2(dp_domains *d, uint32_t **arr, uint32_t *n, uint32_t *cap, uint32_t a,
                 uint32_t b) {
  if (dp_grow((void **)arr, cap, *n + 2, sizeof **arr) < 0) return -1;
  (*arr)[(*n)++] = a;
  (*arr)[(*n)++] = b;
  return 0;
}

/* Link two roots; the trail keeps (child, old root device, old root size). */
static uint32_t link_roots(dp_domains *d, uint32_t rx, uint32_t ry, uint32_t vdev) {
  if (d->nodes[rx].size < d->nodes[ry].size) {
    uint32_t t = rx;
    rx = ry;
    ry = t;
  }
  if (push2(d, &d->trail, &d->ntrail, &d->captrail, ry, d->nodes[rx].vdev) < 0 ||
      push2(d, &d->trail, &d->ntrail, &d->captrail, d->nodes[rx].size, 0) < 0) {
    d->oom = 1;
    return rx;
  }
  d->nodes[ry].parent = rx;
  d->nodes[rx].size += d->nodes[ry].size;
  d->nodes[rx].vdev = vdev;
  d->nodes[rx].read |= d->nodes[ry].read; /* (not undone: one pass more at worst) */
  return rx;
}

static void undo(dp_domains *d) {
  while (d->ntrail >= 4) {
    d->ntrail -= 4;
    uint32_t child = d->trail[d->ntrail], vdev = d->trail[d->ntrail + 1];
    uint32_t size = d->trail[d->ntrail + 2];
    uint32_t root = d->nodes[child].parent;
    d->nodes[root].vdev = vdev;
    d->nodes[root].size = size;
    d->nodes[child].parent = child;
  }
}

/* Is the proof path from y shorter than the one from x? Walks both in
   lockstep, so the cost is the shorter of the two: a chain of a million
   unifications must not make each new link walk the whole chain. */
static int proof_shorter(const dp_domains *d, uint32_t x, uint32_t y) {
  for (;;) {
    if (d->nodes[y].pparent == DP_NONE_ID) return d->nodes[x].pparent != DP_NONE_ID;
    if (d->nodes[x].pparent == DP_NONE_ID) return 0;
    x = d->nodes[x].pparent;
    y = d->nodes[y].pparent;
  }
}

static void proof_link(dp_domains *d, uint32_t x, uint32_t y, int rule, dp_expr *why) {
  if (proof_shorter(d, x, y)) {
    uint32_t t = x;
    x = y;
    y = t;
  }
  uint32_t prev = y, cur = x;
  uint8_t prule = (uint8_t)rule;
  dp_expr *pwhy = why;
  while (cur != DP_NONE_ID) {
    dp_dnode *n = &d->nodes[cur];
    uint32_t next = n->pparent;
    uint8_t nr = n->erule;
    dp_expr *nw = n->ewhy;
    n->pparent = prev;
    n->erule = prule;
    n->ewhy = pwhy;
    prev = cur;
    prule = nr;
    pwhy = nw;
    cur = next;
  }
}

int dp__unify(dp_domains *d, uint32_t a, uint32_t b, int rule, dp_expr *why, int optional,
              dp_err **err) {
  d->nwork = d->ntrail = d->nlinks = 0;
  if (push2(d, &d->work, &d->nwork, &d->capwork, a, b) < 0) d->oom = 1;
  uint32_t fx = DP_NONE_ID, fy = DP_NONE_ID;
  while (d->nwork && !d->oom) {
    uint32_t y = d->work[--d->nwork], x = d->work[--d->nwork];
    uint32_t rx = find_nc(d, x), ry = find_nc(d, y);
    if (rx == ry) continue;
    dp_dnode *X = &d->nodes[rx], *Y = &d->nodes[ry];
    if (!X->isfn && !Y->isfn) {
      uint32_t v = join_idx(d, X->vdev, Y->vdev);
      if (v == DP_NONE_ID) {
        fx = x;
        fy = y;
        break;
      }
      link_roots(d, rx, ry, v);
    } else if (X->isfn && Y->isfn) {
      uint32_t ax = d->kids[X->aux], ay = d->kids[Y->aux];
      if (ax != ay) {
        fx = x;
        fy = y;
        break;
      }
      uint32_t offx = X->aux, offy = Y->aux;
      link_roots(d, rx, ry, 0);
      for (uint32_t i = 0; i <= ax; i++)
        if (push2(d, &d->work, &d->nwork, &d->capwork, d->kids[offx + 1 + i],
                  d->kids[offy + 1 + i]) < 0)
          d->oom = 1;
    } else {
      uint32_t h = X->isfn ? rx : ry, f = X->isfn ? y : x;
      uint32_t off = d->nodes[h].aux;
      for (uint32_t i = 0; i <= d->kids[off]; i++)
        if (push2(d, &d->work, &d->nwork, &d->capwork, d->kids[off + 1 + i], f) < 0) d->oom = 1;
      continue;
    }
    if (push2(d, &d->links, &d->nlinks, &d->caplinks, x, y) < 0) d->oom = 1;
  }
  if (d->oom || fx != DP_NONE_ID) {
    undo(d);
    if (d->oom) {
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return -1;
    }
    if (optional) return 1;
    dp_err_set(err, dp__conflict_error(d, fx, fy, rule, why));
    return -1;
  }
  for (uint32_t i = 0; i < d->nlinks; i += 2) proof_link(d, d->links[i], d->links[i + 1], rule, why);
  return 0;
}

int dp__unify_collapsed(dp_domains *d, uint32_t first, uint32_t any, int rule, dp_expr *why,
                        dp_err **err) {
  return dp__unify(d, first, any, rule, why, 0, err);
}

/* The canonical default of device cur by device vdev (indices). The
   answer depends on the two devices only, and defaulting asks the same few
   pairs for every node: the last answers are kept (interning a device per
   node was most of the defaulting phase). */
static uint32_t default_index(dp_domains *d, uint32_t cur, uint32_t vdev) {
  for (uint32_t k = 0; k < d->ndflt; k++)
    if (d->dflt[k][0] == cur && d->dflt[k][1] == vdev) return d->dflt[k][2];
  dp_vdev *v = dp_vdev_default(d->vdevs[cur], d->vdevs[vdev]);
  if (!v) {
    d->oom = 1;
    return DP_NONE_ID;
  }
  uint32_t want = dp__canon_index(d, v, NULL);
  if (want == DP_NONE_ID) want = dp__vdev_index(d, v);
  dp_release(v);
  if (d->oom) return DP_NONE_ID;
  uint32_t k = d->ndflt < 8 ? d->ndflt++ : (cur + vdev) % 8;
  d->dflt[k][0] = cur;
  d->dflt[k][1] = vdev;
  d->dflt[k][2] = want;
  return want;
}

static int default_first(dp_domains *d, uint32_t x, uint32_t vdev, int rule, dp_expr *why,
                         dp_err **err) {
  uint32_t r = dp__dom_find(d, x), cur = d->nodes[r].vdev;
  if (cur == vdev || vdev == 0) return 0;
  uint32_t want = vdev;
  if (cur) want = default_index(d, cur, vdev);
  if (want == DP_NONE_ID) return -1;
  if (want == cur) return 0;
  if (d->nodes[r].read) d->repass = 1;
  uint32_t c = dp__dom_first(d, want, rule, why);
  return dp__unify(d, r, c, rule, why, 0, err) < 0 ? -1 : 0;
}

/* A work stack that starts in the caller's frame (most domains are first
   order: no allocation) and moves to the heap when it outgrows it. */
static int stack_room(uint32_t **stack, uint32_t *cap, uint32_t *small, uint32_t need) {
  if (need <= *cap) return 0;
  uint32_t c = *cap * 2;
  while (c < need) c *= 2;
  uint32_t *s = dp_realloc(*stack == small ? NULL : *stack, (size_t)c * sizeof *s);
  if (!s) return -1;
  if (*stack == small) memcpy(s, small, *cap * sizeof *s);
  *stack = s;
  *cap = c;
  return 0;
}

int dp__set_default(dp_domains *d, uint32_t x, uint32_t vdev, int rule, dp_expr *why,
                    dp_err **err) {
  uint32_t small[16], *stack = small, n = 0, cap = 16;
  int rc = 0;
  uint32_t r0 = dp__dom_find(d, x);
  if (!d->nodes[r0].isfn) return default_first(d, r0, vdev, rule, why, err);
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

int dp__set_result_default_then_params(dp_domains *d, uint32_t x, uint32_t vdev, int rule,
                                       dp_expr *why, dp_err **err) {
  uint32_t r = dp__dom_find(d, x);
  if (!d->nodes[r].isfn) return dp__set_default(d, r, vdev, rule, why, err);
  uint32_t ar = dp__dom_arity(d, r);
  if (dp__set_default(d, dp__dom_kid(d, r, ar), vdev, rule, why, err) < 0) return -1;
  uint32_t rv = dp__dom_source(d, r);
  for (uint32_t i = 0; i < ar; i++)
    if (dp__set_default(d, dp__dom_kid(d, r, i), rv, R_DEF_PARAM, why, err) < 0) return -1;
  return 0;
}

uint32_t dp__dom_source(dp_domains *d, uint32_t x) {
  uint32_t r = dp__dom_result(d, x);
  d->nodes[r].read = 1;
  return d->nodes[r].vdev;
}

int dp__dom_fully_constrained(dp_domains *d, uint32_t x) {
  uint32_t *stack = NULL, n = 0, cap = 0;
  int ok = 1;
  if (dp_grow((void **)&stack, &cap, 1, sizeof *stack) < 0) return 0;
  stack[n++] = x;
  while (n && ok) {
    uint32_t r = dp__dom_find(d, stack[--n]);
    if (!d->nodes[r].isfn) {
      ok = dp_vdev_is_fully_constrained(d->vdevs[d->nodes[r].vdev]);
      continue;
    }
    uint32_t off = d->nodes[r].aux, ar = d->kids[off];
    if (dp_grow((void **)&stack, &cap, n + ar + 1, sizeof *stack) < 0) {
      ok = 0;
      break;
    }
    for (uint32_t i = 0; i <= ar; i++) stack[n++] = d->kids[off + 1 + i];
  }
  free(stack);
  return ok;
}

uint32_t dp__callee_dom(dp_domains *d, dp_call *c) {
  dp_expr *callee;
  dp_expr *const *args;
  dp__any_call(&d->ops, c, &callee, &args);
  if (callee->h.kind == DP_OP || callee->h.kind == DP_CTOR) return DP_NONE_ID;
  return dp__dom_of(d, callee);
}
