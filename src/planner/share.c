/*
 * ShareCopies (plan.h, dp_plan_share_copies): one device_copy per value and
 * pair of devices in each function of a planned module, wherever one copy
 * can serve several uses. PlanDevices (as TVM) inserts a copy per use.
 *
 * Where a copy may be shared: a node used in several places is one value in
 * Relay's dataflow form, and the text format binds it in the innermost
 * evaluation scope (function body, if branch, match clause) that holds all
 * its uses, i.e. where it dominates them. Merging two copies must not move
 * one out of a scope that might not run (an if branch, a closure's body)
 * into one where it runs whether needed or not. So a copy is merged only
 * with copies of the same value and device pair that stand in its own
 * scope or in an enclosing one: the copies of a scope become one, and a copy
 * in a branch or closure reuses the copy of the outermost enclosing scope
 * that has one. Two branches that each copy a value keep a copy each. The
 * merged copy stays in the outer scope (already evaluated there), and its
 * value is in scope there since that copy already read it.
 *
 * Requires: a planned module (capture's copies: device_copy of a value,
 * optionally under fixed on_device calls, with both ends written). Leaves:
 * a new module whose functions share their unchanged parts with the input;
 * planning it again gives it back (the copies' ends are where their
 * argument and their readers live already).
 *
 * Per function, no recursion (any depth): one walk numbers the nodes in
 * post order; the scope of each node is found parents first, as the printer
 * finds it (the lowest common scope of its uses); one walk of the scope
 * tree, keeping per copy key the outermost copy on the path, picks each
 * copy's representative; one rewrite (dp_rewrite) replaces each copy by its
 * representative's rebuilt node. Time: linear in the function, plus
 * O(log depth) per use for common scopes (jump pointers, as the printer).
 */
#include <stdlib.h>
#include "planner.h"

#define NONE DP__NONE_ID

typedef struct scope { uint32_t parent, depth, jump; } scope; /* jump: see lca */
typedef struct ckey { dp_expr *value; dp_vdev *src, *dst; uint32_t next, rep, owner; } ckey;

typedef struct sctx {
  struct dp__plan_ops ops;
  dp__ptrmap id;              /* node -> id (post order) */
  dp_expr **node; uint32_t n, cap;
  uint32_t *home;             /* per id: its scope */
  scope *sc; uint32_t nsc, capsc;
  uint32_t *key;              /* per id: its copy key, or NONE (not a planner copy) */
  uint32_t *rep;              /* per id of a copy: the copy that stands for it */
  dp_expr **made;             /* per id of a representative: its rebuilt node (owned) */
  ckey *k; uint32_t nk, capk;
  dp__ptrmap first;           /* value -> its first key + 1 */
  int oom;
} sctx;

static int number(void *ud, dp_expr *e) {
  sctx *c = ud;
  if (dp_grow((void **)&c->node, &c->cap, c->n + 1, sizeof *c->node) < 0 ||
      dp__ptrmap_set(&c->id, e, c->n, 0) < 0) {
    c->oom = 1;
    return -1;
  }
  c->node[c->n++] = e;
  return 0;
}

static uint32_t new_scope(sctx *c, uint32_t parent) {
  if (dp_grow((void **)&c->sc, &c->capsc, c->nsc + 1, sizeof *c->sc) < 0) {
    c->oom = 1;
    return 0;
  }
  /* skew-binary jump pointers (Myers 1983), as the printer's: an ancestor
     whose depth depends on the scope's depth alone */
  uint32_t jump = c->nsc;
  if (parent != NONE) {
    uint32_t j = c->sc[parent].jump, jj = c->sc[j].jump;
    jump = c->sc[parent].depth - c->sc[j].depth == c->sc[j].depth - c->sc[jj].depth ? jj : parent;
  }
  c->sc[c->nsc] = (scope){parent, parent == NONE ? 0 : c->sc[parent].depth + 1, jump};
  return c->nsc++;
}

/* The innermost scope holding a and b, in O(log depth) steps (walking
   parents would make a value used at every level of a deep nesting of
   branches quadratic). */
static uint32_t lca(const sctx *c, uint32_t a, uint32_t b) {
  const scope *s = c->sc;
  if (s[a].depth < s[b].depth) {
    uint32_t t = a;
    a = b;
    b = t;
  }
  while (s[a].depth > s[b].depth) a = s[s[a].jump].depth >= s[b].depth ? s[a].jump : s[a].parent;
  while (a != b) {
    if (s[a].jump != s[b].jump) {
      a = s[a].jump;
      b = s[b].jump;
    } else {
      a = s[a].parent;
      b = s[b].parent;
    }
  }
  return a;
}

static void use_in(sctx *c, dp_expr *child, uint32_t s) {
  if (!child) return;
  dp__ptrslot *slot = dp__ptrmap_find(&c->id, child);
  uint32_t i = slot->val;
  c->home[i] = c->home[i] == NONE ? s : lca(c, c->home[i], s);
}

/* Scopes, parents before children (reverse post order): a function body,
   each if branch and each match clause opens one. */
static void homes(sctx *c) {
  c->home[c->n - 1] = new_scope(c, NONE);
  for (uint32_t i = c->n; i-- > 0 && !c->oom;) {
    dp_expr *e = c->node[i];
    uint32_t h = c->home[i], nc = dp__nchildren(e), first_inner = 0;
    switch (e->h.kind) {
    case DP_FUNC: first_inner = nc - 1; break;
    case DP_IF: case DP_MATCH: first_inner = 1; break;
    default: first_inner = nc;
    }
    for (uint32_t k = 0; k < nc && !c->oom; k++)
      use_in(c, dp__child(e, k), k < first_inner ? h : new_scope(c, h));
  }
}

/* The key of a planner copy (value under its on_device calls, src, dst). */
static uint32_t key_of(sctx *c, dp_expr *e) {
  dp_expr *body, *b;
  dp_vdev *src, *dst;
  if (!dp__device_copy_props(&c->ops, e, &body, &src, &dst) || !src || !dst) return NONE;
  while ((b = dp__on_device_body(&c->ops, body))) body = b;
  dp__ptrslot *slot = dp__ptrmap_find(&c->first, body);
  for (uint32_t k = slot ? slot->val : 0; k; k = c->k[k - 1].next)
    if (c->k[k - 1].src == src && c->k[k - 1].dst == dst) return k - 1;
  if (dp_grow((void **)&c->k, &c->capk, c->nk + 1, sizeof *c->k) < 0) goto oom;
  c->k[c->nk] = (ckey){body, src, dst, slot ? slot->val : 0, NONE, NONE};
  if (slot) slot->val = c->nk + 1;
  else if (dp__ptrmap_set(&c->first, body, c->nk + 1, 0) < 0) goto oom;
  return c->nk++;
oom:
  c->oom = 1;
  return NONE;
}

/* Each copy's representative: one walk of the scope tree (explicit stack)
   holding, per key, the outermost copy on the path from the root. */
static int representatives(sctx *c) {
  uint32_t ns = c->nsc, n = c->n, ncopy = 0;
  uint32_t *cstart = dp_calloc((size_t)ns + 1, sizeof *cstart);   /* copies by scope */
  uint32_t *sstart = dp_calloc((size_t)ns + 1, sizeof *sstart);   /* children by scope */
  uint32_t *clist = dp_malloc((size_t)n * sizeof *clist), *slist = dp_malloc((size_t)ns * sizeof *slist);
  uint32_t *stack = dp_malloc((size_t)ns * 2 * sizeof *stack);
  int rc = -1;
  if (!cstart || !sstart || !clist || !slist || !stack) goto done;
  for (uint32_t i = 0; i < n; i++)
    if (c->key[i] != NONE) cstart[c->home[i] + 1]++, ncopy++;
  for (uint32_t s = 1; s < ns; s++) sstart[c->sc[s].parent + 1]++;
  for (uint32_t s = 0; s < ns; s++) cstart[s + 1] += cstart[s], sstart[s + 1] += sstart[s];
  for (uint32_t i = 0; i < n; i++)
    if (c->key[i] != NONE) clist[cstart[c->home[i]]++] = i;
  for (uint32_t s = 1; s < ns; s++) slist[sstart[c->sc[s].parent]++] = s;
  for (uint32_t s = ns; s-- > 0;) { /* the fills moved each start to the next one's */
    cstart[s + 1] = cstart[s];
    sstart[s + 1] = sstart[s];
  }
  cstart[0] = sstart[0] = 0;
  uint32_t top = 0;
  stack[top++] = 0; /* entry s * 2 enters scope s, s * 2 + 1 leaves it */
  while (top) {
    uint32_t t = stack[--top], s = t >> 1;
    for (uint32_t j = cstart[s]; j < cstart[s + 1]; j++) {
      uint32_t i = clist[j];
      ckey *k = &c->k[c->key[i]];
      if (t & 1) {
        if (k->owner == s) k->owner = k->rep = NONE;
      } else {
        if (k->rep == NONE) k->rep = i, k->owner = s;
        c->rep[i] = k->rep;
      }
    }
    if (t & 1) continue;
    stack[top++] = t | 1;
    for (uint32_t j = sstart[s + 1]; j-- > sstart[s];) stack[top++] = slist[j] << 1;
  }
  rc = 0;
done:
  free(cstart);
  free(sstart);
  free(clist);
  free(slist);
  free(stack);
  if (rc < 0) c->oom = 1;
  return rc;
}

static dp_expr *post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  sctx *c = ud;
  (void)err;
  if (!rebuilt->type && orig->type) rebuilt->type = dp_retain(orig->type);
  dp__ptrslot *slot = dp__ptrmap_find(&c->id, orig);
  if (!slot || c->key[slot->val] == NONE) return dp_retain(rebuilt);
  uint32_t r = c->rep[slot->val];
  if (!c->made[r]) c->made[r] = dp_retain(rebuilt); /* the first member met stands for all */
  return dp_retain(c->made[r]);
}

static void forget(sctx *c) {
  if (c->made)
    for (uint32_t i = 0; i < c->n; i++) dp_release(c->made[i]);
  free(c->home);
  free(c->key);
  free(c->rep);
  free(c->made);
  c->home = c->key = c->rep = NULL;
  c->made = NULL;
  c->n = c->nsc = c->nk = 0;
  dp__ptrmap_free(&c->id);
  dp__ptrmap_free(&c->first);
}

/* The function f with its copies shared; NULL + error. */
static dp_expr *share_fn(sctx *c, dp_expr *f, dp_err **err) {
  dp_visitor v = {NULL, number, c};
  dp_expr *out = NULL;
  if (dp_visit(f, &v) < 0 || c->oom) goto oom;
  if (!(c->home = dp_malloc((size_t)c->n * sizeof *c->home)) ||
      !(c->key = dp_malloc((size_t)c->n * sizeof *c->key)) ||
      !(c->rep = dp_malloc((size_t)c->n * sizeof *c->rep)) ||
      !(c->made = dp_calloc(c->n, sizeof *c->made)))
    goto oom;
  for (uint32_t i = 0; i < c->n; i++) c->home[i] = NONE;
  homes(c);
  for (uint32_t i = 0; i < c->n && !c->oom; i++) {
    c->key[i] = key_of(c, c->node[i]);
    c->rep[i] = NONE;
  }
  if (c->oom || representatives(c) < 0) goto oom;
  dp_rewriter rw = {NULL, post, c};
  out = dp_rewrite(f, &rw, err);
  forget(c);
  return out;
oom:
  forget(c);
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return NULL;
}

dp_module *dp_plan_share_copies(dp_module *m, dp_err **err) {
  sctx c = {0};
  if (dp__plan_ops(m->ctx, &c.ops, err) < 0) return NULL;
  dp_module *out = dp_module_copy(m);
  if (!out) {
    dp__plan_ops_free(&c.ops);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    dp_expr *f = share_fn(&c, &m->funcs[i].fn->e, err);
    int rc = f ? dp_module_set_func(out, m->funcs[i].global->name, (dp_func *)f, err) : -1;
    dp_release(f);
    if (rc < 0) {
      dp_release(out);
      out = NULL;
      break;
    }
  }
  free(c.node);
  free(c.sc);
  free(c.k);
  dp__ptrmap_free(&c.id);
  dp__ptrmap_free(&c.first);
  dp__plan_ops_free(&c.ops);
  return out;
}
