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
 * on_device calls, could be a conflict when planned again). A node keeps
 * the first demand it meets (its own device first: a parameter's
 * virtual_device, a device_copy's destination), joined with later demands
 * that join; a later demand that cannot join
 * marks that call argument (never an on_device call), and a copy is
 * allowed there: an unconstrained on_device (phase 0's copy_ok), whose
 * ends analysis fixes from the constraints the two demands came from, and
 * capture writes as a device_copy. (planner.md inserts a device_copy from
 * the node's device to the demanded one: the same plan, but a conflict
 * that remains then named that copy, which the user never wrote.)
 *
 * Computed here, read anywhere (PlanDevices' default, not TVM's): the walk
 * also records the demands that reach a plain on_device other references
 * may reach (dp__index.reads). Where they cannot all join, TVM's rules
 * fail (each is a constraint analysis puts on the annotation's result), and
 * there the annotation is made fixed, the readers whose demands join its
 * device read it in place, and every other reader (a call's argument, a
 * tuple field, a copy's source: any child slot) reads a copy, one node per
 * destination device (an unconstrained on_device naming it; capture makes
 * one device_copy of it). Placing by cost has a mode of its own: no mark of
 * TVM's, and the readers that share a plain on_device's result, when they
 * may differ, each get a place for a copy.
 *
 * Requires: the index of the module (index.c), whose walk carried the
 * demands and made the marks (dp__index.marks). Leaves: that index when
 * there are none (the module is returned unchanged, not walked again),
 * else the index of the module with the copies allowed.
 */
#include <stdlib.h>
#include "planner.h"

typedef struct kctx {
  dp__index *ix;
  dp__ptrmap callmarks;   /* parent -> its first mark + 1; marks of one parent chain through next */
  uint32_t *next;         /* mark -> the parent's next mark + 1 */
  dp__ptrmap fix;         /* plain on_device calls read anywhere: made fixed */
  dp_expr **shared;       /* share -> its copy (owned), made at its first mark */
  uint32_t *sharedev;     /* share -> its destination (device index) */
  uint32_t nshares;
} kctx;

/* ---- "computed here, read anywhere" ---- */

/* The first id of node id's expression (a node numbered in two functions
   has an id in each: dups). */
static uint32_t first_id(const dp__index *ix, uint32_t id) {
  for (uint32_t k = ix->ndups; (ix->flag[id] & F_DUP) && k >= 2; k -= 2)
    if (ix->dups[k - 2] == id) id = ix->dups[k - 1];
  return id;
}

typedef struct rkey { uint32_t node, i; } rkey;

static int by_node(const void *a, const void *b) {
  const rkey *x = a, *y = b;
  if (x->node != y->node) return x->node < y->node ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

static int push_mark(dp__index *ix, uint32_t parent, uint32_t slot, uint32_t share) {
  if (dp_grow((void **)&ix->marks, &ix->capmarks, ix->nmarks + 1, sizeof *ix->marks) < 0) return -1;
  ix->marks[ix->nmarks++] = (dp__mark){parent, slot, share};
  return 0;
}

/* The readers of one plain on_device (reads r[0..n), in walk order) when
   their demands cannot all join, which TVM's rules make a conflict (each
   demand is a constraint analysis puts on the annotation's result): the
   value is computed on the annotation's device D and lives there; the
   readers whose demands join D (in walk order) read it there, and each
   other reader gets a copy, one per destination device (marks of one
   share). Demands that all join: nothing (TVM's plan). */
typedef struct shares { uint32_t n, cap; uint32_t *dev; } shares; /* per share: its destination */

static int read_group(dp__index *ix, const rkey *r, uint32_t n, shares *sh) {
  dp__devices *dv = &ix->dev;
  uint32_t node = ix->reads[r[0].i].node, all = 0;
  for (uint32_t k = 0; k < n && all != DP__NONE_ID; k++) {
    const dp__read *x = &ix->reads[r[k].i];
    if (ix->flag[x->node] & F_FIXED) return 0; /* phase 0 fixes it: its result is its device */
    all = dp__dev_join(dv, all, x->d);
  }
  if (all != DP__NONE_ID || !dp__copyable(ix->x[node]->type)) return 0;
  uint32_t acc = dp__ann_dev(dp__ann(ix, node)), first = sh->n;
  uint32_t dest[64], ndest = 0;   /* the destinations met (share first + k) */
  for (uint32_t k = 0; k < n; k++) {
    const dp__read *x = &ix->reads[r[k].i];
    uint32_t j = dp__dev_join(dv, acc, x->d);
    if (j != DP__NONE_ID) {
      acc = j;
      continue;
    }
    uint32_t s = 0;
    while (s < ndest && dest[s] != x->d) s++;
    if (s == ndest) {
      if (ndest == 64) return 0; /* (more devices than a table holds: left to analysis) */
      dest[ndest++] = x->d;
      if (dp_grow((void **)&sh->dev, &sh->cap, sh->n + 1, sizeof *sh->dev) < 0) return -1;
      sh->dev[sh->n++] = x->d;
    }
    if (push_mark(ix, x->parent, x->slot, first + s) < 0) return -1;
  }
  return 0;
}

/* Does the reader at child slot of parent read it through a flow when
   placing by cost (a call's argument: analysis looks through the
   annotation to where it puts the value)? */
static int flow_reader(const dp__index *ix, uint32_t parent, uint32_t slot) {
  int w = ix->what[parent];
  return slot > 0 && (w == W_CTOR_CALL || w == W_FN_CALL ||
                      (w == W_OP_CALL && dp__ann_op(ix, parent) == OP_ORDINARY));
}

/* The device a reader that is no call argument puts the annotation's
   result on by itself (an on_device constraining its body to one, a
   device_copy's source), or 0 (where it is, is the optimiser's to say). */
static uint32_t reader_device(const dp__index *ix, uint32_t parent, uint32_t slot) {
  uint32_t a = dp__ann(ix, parent);
  if (ix->what[parent] == W_ON_DEVICE && (a & ON_CBODY) && dp__ann_dev(a) != ON_DEV) return dp__ann_dev(a);
  if (ix->what[parent] == W_COPY && slot == 1 && ix->copies[a].src != DP__NONE_ID) return ix->copies[a].src;
  return 0;
}

/* Placing by cost: the readers of one plain on_device that are no call
   argument (a tuple field, a copy's source, a branch: they share the
   annotation's result, one device for all) each get a place for a copy,
   and the annotation is fixed (every reader reads the value where it is
   made), when one device for all could cost: two or more of them, not all
   on one device they name themselves. */
static int relax_group(dp__index *ix, const rkey *r, uint32_t n) {
  uint32_t node = ix->reads[r[0].i].node, open = 0, dev[2], ndev = 0;
  for (uint32_t k = 0; k < n; k++) {
    const dp__read *x = &ix->reads[r[k].i];
    if (ix->flag[x->node] & F_FIXED) return 0;
    if (flow_reader(ix, x->parent, x->slot)) continue;
    uint32_t v = reader_device(ix, x->parent, x->slot);
    if (!v) open++;
    else if (ndev < 2 && (ndev == 0 || dev[0] != v)) dev[ndev++] = v;
  }
  if (open + ndev < 2 || !dp__copyable(ix->x[node]->type)) return 0;
  for (uint32_t k = 0; k < n; k++) {
    const dp__read *x = &ix->reads[r[k].i];
    if (!flow_reader(ix, x->parent, x->slot) && push_mark(ix, x->parent, x->slot, DP__NONE_ID - 1) < 0)
      return -1;
  }
  return 0;
}

/* Marks for the readers of every plain on_device demanded on devices that
   cannot join (read_group), or placing by cost (relax) for its readers that
   share its result (relax_group, and no other mark). 0, or -1 (out of
   memory). */
int dp__read_anywhere(dp__index *ix, int relax, uint32_t *nshares, uint32_t **dest) {
  shares sh = {0, 0, NULL};
  if (relax) ix->nmarks = 0;
  *nshares = 0;
  *dest = NULL;
  if (ix->nreads < 2) return 0;
  rkey *r = dp_malloc(ix->nreads * sizeof *r);
  if (!r) return -1;
  for (uint32_t i = 0; i < ix->nreads; i++) r[i] = (rkey){first_id(ix, ix->reads[i].node), i};
  qsort(r, ix->nreads, sizeof *r, by_node);
  int rc = 0;
  for (uint32_t a = 0, b; a < ix->nreads && rc == 0; a = b) {
    for (b = a + 1; b < ix->nreads && r[b].node == r[a].node; b++) {}
    if (b - a > 1) rc = relax ? relax_group(ix, r + a, b - a) : read_group(ix, r + a, b - a, &sh);
  }
  free(r);
  if (rc < 0) {
    free(sh.dev);
    return -1;
  }
  *nshares = sh.n;
  *dest = sh.dev;
  return 0;
}

/* ---- the rewrite ---- */

/* Child slot of rebuilt (kid) with the copy mark m allows (new reference):
   phase 0's unconstrained on_device, or for a share one node for all its
   readers, which names its destination (capture makes one copy of it). */
static dp_expr *copy_at(kctx *k, const dp__mark *m, dp_expr *kid, dp_err **err) {
  dp_expr **sh = m->share < k->nshares ? &k->shared[m->share] : NULL;
  if (sh && *sh && dp__on_device_body(&k->ix->ops, *sh) == kid) return dp_retain(*sh);
  dp_vdev *to = sh ? k->ix->dev.v[k->sharedev[m->share]] : NULL;
  dp_expr *c = dp__on_device_at(&k->ix->ops, kid, to, 0, 0, kid->span, err);
  if (c && sh && !*sh) *sh = dp_retain(c);
  return c;
}

static dp_expr *post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  kctx *k = ud;
  dp__ptrslot *s = dp__ptrmap_find(&k->callmarks, orig);
  if (dp__ptrmap_find(&k->fix, orig)) { /* read anywhere: it lives where it is computed */
    dp__ondev p;
    dp__on_device_props(&k->ix->ops, rebuilt, &p);
    return dp__on_device_at(&k->ix->ops, p.body, p.vd, 1, 1, orig->span, err);
  }
  if (!s) {
    /* a node rebuilt above a copy keeps its checked type: analysis gives a
       function-typed value (a closure under an on_device, say) a function
       domain from it */
    if (!rebuilt->type && orig->type) rebuilt->type = dp_retain(orig->type);
    return dp_retain(rebuilt);
  }
  uint32_t n = dp__nchildren(rebuilt);
  dp_expr **kids = dp_calloc(n, sizeof *kids);
  if (!kids) goto oom;
  for (uint32_t i = 0; i < n; i++) kids[i] = dp_retain(dp__child(rebuilt, i));
  dp_expr *r = NULL;
  for (uint32_t m = s->val; m; m = k->next[m - 1]) {
    dp__mark *mk = &k->ix->marks[m - 1];
    dp_expr *c = copy_at(k, mk, kids[mk->slot], err);
    if (!c) goto done;
    dp_release(kids[mk->slot]);
    kids[mk->slot] = c;
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

/* The module with the copies the marks ask for (new reference). */
static dp_module *with_copies(kctx *k, dp_err **err) {
  dp__index *ix = k->ix;
  dp_module *m = ix->mod;
  /* a parent's marks chained from the last made (the copies nest in that order) */
  for (uint32_t i = 0; i < ix->nmarks; i++) {
    dp_expr *parent = ix->x[ix->marks[i].parent];
    dp__ptrslot *s = dp__ptrmap_find(&k->callmarks, parent);
    k->next[i] = s ? s->val : 0;
    if (s) s->val = i + 1;
    else if (dp__ptrmap_set(&k->callmarks, parent, i + 1, 0) < 0) goto oom;
    if (ix->marks[i].share != DP__NONE_ID &&
        dp__ptrmap_set(&k->fix, dp__child(parent, ix->marks[i].slot), 1, 0) < 0)
      goto oom;
  }
  dp_module *out = dp_module_copy(m);
  if (!out) goto oom;
  dp_rewriter rw = {NULL, post, k};
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    dp_expr *f = dp_rewrite(&m->funcs[i].fn->e, &rw, err);
    int rc = f ? dp_module_set_func(out, m->funcs[i].global->name, (dp_func *)f, err) : -1;
    dp_release(f);
    if (rc < 0) {
      dp_release(out);
      return NULL;
    }
  }
  return out;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return NULL;
}

dp__index *dp__conflicts(dp__index *ix, int mode, dp_err **err) {
  kctx k = {ix, {0}, NULL, {0}, NULL, NULL, 0};
  dp__index *next = NULL;
  if (mode && dp__read_anywhere(ix, mode == DP__0B_RELAX, &k.nshares, &k.sharedev) < 0) goto oom;
  if (!ix->nmarks) return ix;
  k.next = dp_malloc(ix->nmarks * sizeof *k.next);
  k.shared = k.nshares ? dp_calloc(k.nshares, sizeof *k.shared) : NULL;
  if (!k.next || (k.nshares && !k.shared)) goto oom;
  dp_module *out = with_copies(&k, err);
  next = out ? dp__index_new(out, ix->dev.cfg, err) : NULL;
  dp_release(out);
  goto done;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
done:
  free(k.next);
  for (uint32_t i = 0; i < k.nshares && k.shared; i++) dp_release(k.shared[i]);
  free(k.shared);
  free(k.sharedev);
  dp__ptrmap_free(&k.callmarks);
  dp__ptrmap_free(&k.fix);
  dp__index_free(ix);
  return next;
}
