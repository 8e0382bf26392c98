/*
 * Phase 3, capture: writes the domains back into the
 * module, so that a later pass recovers every device lexically.
 *
 * - parameters get their virtual_device, functions their result device;
 * - the original on_device calls are removed; a device_copy gets as ends
 *   the planned devices of its argument and of itself (which refine what
 *   was written: TVM kept the written ends, which could then disagree with
 *   their neighbours), and is removed when they are equal;
 * - where a child's device differs from what its context expects, a
 *   device_copy(on_device(child, src, fixed), src, dst) is inserted (one
 *   per use, as TVM does; one for all the readers of phase 0b's shared
 *   "read anywhere" copy); so also between nested on_device calls on
 *   different devices, which TVM lost;
 * - let values, and call arguments whose device differs from the call's,
 *   are wrapped in a fixed on_device (never variables, globals, functions,
 *   operators or constructors);
 * - primfn buffers take the memory scopes that flowed into them.
 *
 * Requires: the domains after defaulting (every numbered node's domain
 * constrained) and their index. Leaves: a new module (the input's
 * functions are not changed); the domains stay usable, except after
 * dp__capture_last (PlanDevices' own round), which frees them once it has
 * read every node's device where nothing else it asks needs them.
 *
 * With `consume` (PlanDevices' option: the caller gives its module up) a
 * call or a let that nothing but its parent holds, up to a function only
 * the module holds, takes its rewritten children in place instead of being
 * copied: the plan reuses the input's nodes, so that the input and the plan
 * are not resident side by side (at a million let calls, a new call and let
 * a call: 128 bytes). So does a call several parents read, where each of
 * them is one of those and nothing else holds it (a branchy program's
 * values). The input stays valid memory, holding the plan's nodes. Nothing
 * reads a node's old children after the node is captured (post order,
 * each node once; on_device calls, whose bodies capture follows, are never
 * changed in place).
 *
 * capture_last also cuts the index behind it where the ids it is done
 * with are the top ones (a let chain's, built from the last let up): their
 * pages go while the plan's new nodes are made. With consume always;
 * without it where the index is large enough for the pages to matter (the
 * plan's new nodes then take pages the cuts gave back, not fresh ones).
 *
 * Each function's nodes are rewritten in post order (the index's), each
 * once, from its children's rewritten forms and the devices of their
 * domains. A node whose children all come back as they were, and which
 * needs no change itself, is kept (no new node); the new ones are made in
 * one node arena (src/core/arena.h: in bulk, yet each an ordinary node to
 * whoever holds it).
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"

/* The copy capture made of a shared copy phase 0b made for the readers of
   a value on one device ("read anywhere"): node id's, to device vd
   (retained). */
typedef struct rcopy { uint32_t id, next; dp_vdev *vd; dp_expr *made; } rcopy;

/* Where the rewritten nodes wait for their parents (no array of every
   node's result: at a million nodes it was 8 bytes a node, and a page
   fault every 512): a node with one reference (not F_SHARED) has one
   parent, which post order captures right after the node's last sibling,
   so its result, where it differs from the node (a bit per id, isnew,
   says so), waits on a stack (vs) and is taken off it, in child order, by
   that parent; a shared node's result is looked up by id: where it differs
   from the node in `changed` (keyed by id_key(id)). A result that is the
   node itself (most of them: the node unchanged, or changed in place) is
   read from the index (at a million let calls the stack held every let's
   value until the lets were built, 8 MB at capture's peak).
   Where many shared nodes change (a program whose values are each read by
   several calls), the map would cost more than an array of them all: past
   n/64 entries they move to one (`dense`, id -> new form or NULL). */
typedef struct cctx {
  dp__domains *d;
  dp__index *ix;
  dp_expr **vs; uint32_t nvs, capvs;  /* results of single-reference nodes (owned) */
  dp__ptrmap changed;                 /* id_key(id) -> a shared node's new form (owned) */
  dp_expr **dense;                    /* or, once many changed, id -> it (owned) or NULL */
  uint8_t *isnew;                     /* a bit per id: a node with a new form (and
                                         fol's and excl's bits after them: one block,
                                         owned) */
  uint8_t *fol;                       /* a bit per id: its new form is its body's (follows) */
  dp_expr **kr; uint32_t capkr;       /* the node being captured: its kids' results (borrowed) */
  int anynew;                         /* one of them is not its child as it was (a new form) */
  rcopy *rc; uint32_t nrc, caprc;
  dp__ptrmap rcmap;  /* node -> its latest rcopy + 1 (a node numbered twice has two ids) */
  uint8_t *dev;      /* id -> its device's index (0: none), read once before capture
                        (NULL: more than 255 devices, then read from the domains) */
  int last;          /* dp__capture_last: nothing reads the domains after capture */
  int consume;       /* the caller gave the module up (cut: the arrays' tails go too) */
  uint8_t *excl;     /* consume: a bit per id, held by its parent alone up to a function
                        only the module holds (changed in place); NULL: nothing is (in
                        isnew's block) */
  void *spare; size_t nspare;  /* the dropped domains' constraints' block, for the bits */
  uint32_t *top;     /* capture_last: a checkpoint every `step` positions of the last
                        function's post order, the largest id read from there on
                        (NULL: none) */
  uint32_t ntop, step;
} cctx;

static dp_err *no_device(cctx *c, const dp_expr *e) {
  char *what = dp__describe(c->d->ctx, e);
  dp_err *err = dp_err_at(c->d->ctx, DP_ERR_VALUE, e->span,
                          "no virtual device was determined for %s (run the defaulting phase "
                          "before capture)", what);
  free(what);
  return err;
}

static dp_expr *child(cctx *c, dp_vdev *lexical, dp_vdev *expected, dp_vdev *child_vd,
                      dp_expr *orig, dp_expr *rebuilt, dp_err **err);
static dp_vdev *dom_vd(cctx *c, uint32_t dom, const dp_expr *e, dp_err **err);
static dp_vdev *id_vd(cctx *c, uint32_t id, dp_err **err);

/* One level of an on_device chain: the expression, its id, and where it
   has none (DP__NONE_ID) its domain. */
typedef struct level { dp_expr *e; uint32_t id, dom; } level;

/* e, child i of node parent (DP__NONE_ID: not numbered), as a level. */
static level level_at(cctx *c, uint32_t parent, uint32_t i, dp_expr *e) {
  uint32_t k = parent == DP__NONE_ID ? DP__NONE_ID : dp__kid(c->ix, parent, i);
  return (level){e, k, k != DP__NONE_ID ? 0 : dp__dom_of(c->d, e)};
}

/* The device of a level (read by id where it has one: capture_last may
   have dropped the domains then). */
static dp_vdev *level_vd(cctx *c, const level *l, dp_err **err) {
  return l->id != DP__NONE_ID ? id_vd(c, l->id, err) : dom_vd(c, l->dom, l->e, err);
}

/* Room for one more level (the first 8 live in the caller's frame). */
static int level_room(level **lv, uint32_t n, uint32_t *cap, level *small) {
  if (n < *cap) return 0;
  level *heap = *lv == small ? NULL : *lv;
  uint32_t c = *lv == small ? 0 : *cap;
  if (dp_grow((void **)&heap, &c, n + 1, sizeof *heap) < 0) return -1;
  if (*lv == small) memcpy(heap, small, n * sizeof *heap);
  *lv = heap;
  *cap = c;
  return 0;
}

/* The rewritten child i of node id (rebuilt: its rewritten form, from
   which capture removed every on_device), reconciled along the child's
   chain of nested on_device calls: where one puts its body on another
   device than its own result has, a copy goes there (TVM looked through
   one on_device only, and lost the copies between nested ones). *vd is the
   device the result lives on: the body's of the outermost on_device (as
   TVM's look-through: the parent reconciles that last step with what it
   expects), or with `full` the child's own device. For a child that is no
   on_device call, its device. A list, not recursion: a chain may be a
   million calls deep. */
static dp_expr *through(cctx *c, uint32_t id, uint32_t i, dp_expr *rebuilt, int full,
                        dp_vdev **vd, dp_err **err) {
  level small[8], *lv = small;
  uint32_t n = 0, cap = 8;
  lv[n++] = level_at(c, id, i, dp__child(c->ix->x[id], i));
  dp_expr *body;
  while ((body = dp__on_device_body(&c->ix->ops, lv[n - 1].e))) {
    if (level_room(&lv, n, &cap, small) < 0) {
      if (lv != small) free(lv);
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return NULL;
    }
    lv[n] = level_at(c, lv[n - 1].id, 1, body);
    n++;
  }
  /* lv[0] is the child, lv[n-1] the expression under all its on_device
     calls: transitions from the inside out, up to lv[1] (lv[0] if full) */
  dp_expr *res = dp_retain(rebuilt);
  dp_vdev *cur = level_vd(c, &lv[n - 1], err);
  for (uint32_t k = n - 1; k-- > (full ? 0u : 1u) && res && cur;) {
    dp_vdev *to = level_vd(c, &lv[k], err);
    dp_expr *t = to ? child(c, to, to, cur, lv[k + 1].e, res, err) : NULL;
    dp_release(res);
    res = t;
    cur = to;
  }
  if (lv != small) free(lv);
  if (!res || !cur) {
    dp_release(res);
    return NULL;
  }
  *vd = cur;
  return res;
}

static dp_vdev *dom_vd(cctx *c, uint32_t dom, const dp_expr *e, dp_err **err) {
  dp_vdev *v = dp__dom_vdev(c->d, dom);
  if (!v) dp_err_set(err, no_device(c, e));
  return v;
}

/* The device of node id. */
static dp_vdev *id_vd(cctx *c, uint32_t id, dp_err **err) {
  uint32_t v = c->dev ? c->dev[id] : dp__dom_dev(c->d, dp__dom_at(c->d, id));
  if (!v) {
    dp_err_set(err, no_device(c, c->ix->x[id]));
    return NULL;
  }
  return c->d->dev->v[v];
}

/* The device of child i of node id. */
static dp_vdev *kid_vd(cctx *c, uint32_t id, uint32_t i, dp_err **err) {
  uint32_t k = dp__kid(c->ix, id, i);
  return k != DP__NONE_ID ? id_vd(c, k, err)
                         : dom_vd(c, dp__kdom(c->d, id, i), dp__child(c->ix->x[id], i), err);
}

/* TVM's VisitChild: reconcile the child's device with what its context
   expects (copy) and with what a reader infers lexically (on_device).
   lexical NULL: unconstrained (let values, always annotated). */
static dp_expr *child(cctx *c, dp_vdev *lexical, dp_vdev *expected, dp_vdev *child_vd,
                      dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  const struct dp__plan_ops *ops = &c->ix->ops;
  if (orig->h.kind == DP_OP || orig->h.kind == DP_CTOR) return dp_retain(rebuilt);
  dp_expr *res = dp_retain(rebuilt), *t;
  if (child_vd != expected) {
    t = dp__maybe_on_device_fixed(ops, res, child_vd, err);
    dp_release(res);
    if (!t) return NULL;
    res = dp__device_copy(ops, t, child_vd, expected, err);
    dp_release(t);
    if (!res) return NULL;
  }
  if (expected != lexical) {
    t = dp__maybe_on_device_fixed(ops, res, expected, err);
    dp_release(res);
    res = t;
  }
  return res;
}

/* Is node k phase 0b's copy shared by the readers of a value on one device
   (an unconstrained on_device naming its destination, with other
   references)? */
static int read_anywhere_copy(const cctx *c, uint32_t k) {
  if (k == DP__NONE_ID || c->ix->what[k] != W_ON_DEVICE || !(c->ix->flag[k] & F_SHARED)) return 0;
  uint32_t ann = dp__ann(c->ix, k);
  return !(ann & (ON_CBODY | ON_CRESULT)) && dp__ann_dev(ann);
}

/* Child i of node id when it is such a copy (k): its chain with the copy,
   made once for all its readers; *vd its device. */
static dp_expr *read_anywhere(cctx *c, uint32_t id, uint32_t i, uint32_t k, dp_expr *rebuilt,
                              dp_vdev **vd, dp_err **err) {
  dp__ptrslot *s = dp__ptrmap_find(&c->rcmap, c->ix->x[k]);
  for (uint32_t j = s ? s->val : 0; j; j = c->rc[j - 1].next)
    if (c->rc[j - 1].id == k) {
      *vd = c->rc[j - 1].vd;
      return dp_retain(c->rc[j - 1].made);
    }
  dp_expr *r = through(c, id, i, rebuilt, 1, vd, err);
  if (r && (dp_grow((void **)&c->rc, &c->caprc, c->nrc + 1, sizeof *c->rc) < 0 ||
            (!s && dp__ptrmap_set(&c->rcmap, c->ix->x[k], 0, 0) < 0))) {
    dp_release(r);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  if (r) {
    s = dp__ptrmap_find(&c->rcmap, c->ix->x[k]);
    c->rc[c->nrc] = (rcopy){k, s->val, *vd, dp_retain(r)};
    s->val = ++c->nrc;
  }
  return r;
}

static int is_on_device(cctx *c, const dp_expr *e) {
  return dp__on_device_body(&c->ix->ops, e) != NULL;
}

/* Child i of node id (rewritten: rebuilt) where its context expects
   `expected` and a reader infers `lexical`. */
static dp_expr *reconcile(cctx *c, dp_vdev *lexical, dp_vdev *expected, uint32_t id, uint32_t i,
                          dp_expr *rebuilt, dp_err **err) {
  dp_expr *orig = dp__child(c->ix->x[id], i);
  if (orig->h.kind == DP_OP || orig->h.kind == DP_CTOR) return dp_retain(rebuilt);
  dp_vdev *cv;
  uint32_t k = dp__kid(c->ix, id, i);
  if (k == DP__NONE_ID ? !is_on_device(c, orig) : c->ix->what[k] != W_ON_DEVICE) {
    /* most children are no on_device: no chain to follow */
    cv = kid_vd(c, id, i, err);
    return cv ? child(c, lexical, expected, cv, orig, rebuilt, err) : NULL;
  }
  /* the outermost on_device's own device is the reader's (TVM looks
     through it; always under TVM's rules, and for a plain one, whose value
     is read anywhere, placing by cost too), except where placement by cost
     put a copy between them: then the value goes through that device too,
     as the annotation says */
  int plain = k != DP__NONE_ID && dp__plain_on_device(c->ix, k);
  dp_vdev *ov = c->ix->relax && !plain ? kid_vd(c, id, i, err) : expected;
  dp_expr *t = read_anywhere_copy(c, k) ? read_anywhere(c, id, i, k, rebuilt, &cv, err)
               : ov ? through(c, id, i, rebuilt, ov != expected, &cv, err) : NULL;
  if (!t) return NULL;
  dp_expr *r = child(c, lexical, expected, cv, orig, t, err);
  dp_release(t);
  return r;
}

/* Child i of node id, expected on its parent's device. */
static dp_expr *same(cctx *c, dp_vdev *pv, uint32_t id, uint32_t i, dp_expr *rebuilt,
                     dp_err **err) {
  return reconcile(c, pv, pv, id, i, rebuilt, err);
}

static dp_expr *typed(dp_expr *e, const dp_expr *orig) {
  if (e && !e->type && orig->type) e->type = dp_retain(orig->type);
  return e;
}

static void release_all(dp_expr **kids, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) dp_release(kids[i]);
}

/* Is node id one capture changes in place (consume)? */
static int in_place(const cctx *c, uint32_t id) {
  return c->excl && (c->excl[id >> 3] & (1u << (id & 7)));
}

/* orig, held by its parent alone, with kids (borrowed) in place of its
   children: the node itself (a new reference), now the plan's. Each new
   child is held before the old one goes (which may be freed: nothing reads
   it after its parent is captured). */
static dp_expr *reuse(dp_expr *orig, dp_expr *const *kids) {
  dp_expr **slot[3], **v;
  uint32_t n;
  if (orig->h.kind == DP_CALL) {
    dp_call *cl = (dp_call *)orig;
    n = 1 + cl->nargs;
    for (uint32_t i = 0; i < n; i++) {
      v = i ? &cl->args[i - 1] : &cl->fn;
      if (*v != kids[i]) {
        dp_expr *old = *v;
        *v = dp_retain(kids[i]);
        dp_release(old);
      }
    }
    return dp_retain(orig);
  }
  dp_let *l = (dp_let *)orig;
  slot[0] = (dp_expr **)&l->var, slot[1] = &l->value, slot[2] = &l->body;
  for (uint32_t i = 0; i < 3; i++)
    if (*slot[i] != kids[i]) {
      dp_expr *old = *slot[i];
      *slot[i] = dp_retain(kids[i]);
      dp_release(old);
    }
  return dp_retain(orig);
}

/* orig (node id) with other kids: calls and lets (most of a program) built
   here, without comparing the children again, or changed in place
   (consume). (Inlined: left to the compiler it became a call, made for
   nearly every new call and let of a program.) */
#if defined(__GNUC__)
#define CAP_INLINE __attribute__((always_inline)) inline
#else
#define CAP_INLINE inline
#endif

static CAP_INLINE dp_expr *rebuild(const cctx *c, uint32_t id, dp_expr *orig, dp_expr **kids) {
  dp__arena *a = c->ix->ops.arena;
  const dp__index *ix = c->ix;
  if (c->excl && in_place(c, id) &&
      (orig->h.kind == DP_CALL || (orig->h.kind == DP_LET && kids[0]->h.kind == DP_VAR)))
    return reuse(orig, kids); /* (the test first: without consume one compare) */
  if (orig->h.kind == DP_CALL) {
    /* (its arguments counted by its slots, not read from the node: the
       line they lie on is mostly cold and otherwise unread) */
    uint32_t nargs = ix->koff[id + 1] - ix->koff[id] + dp__skip(ix, id) - 1;
    return (dp_expr *)dp__call_new_in(a, kids[0], nargs, kids + 1, ((const dp_call *)orig)->attrs,
                                      orig->span);
  }
  if (orig->h.kind == DP_LET && kids[0]->h.kind == DP_VAR)
    return (dp_expr *)dp__let_new_in(a, (dp_var *)kids[0], kids[1], kids[2], orig->span);
  return dp_expr_with_children(orig, kids);
}

/* orig with kids (new references, released here): orig itself where every
   kid is its child as it was. */
static dp_expr *with_kids(cctx *c, uint32_t id, dp_expr *orig, dp_expr **kids, uint32_t n, dp_err **err) {
  uint32_t same = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (!kids[i]) {
      release_all(kids, n);
      return NULL;
    }
    same += kids[i] == dp__child(orig, i);
  }
  dp_expr *r = same == n ? dp_retain(orig) : rebuild(c, id, orig, kids);
  release_all(kids, n);
  if (!r) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return typed(r, orig);
}

static dp_expr **kid_array(uint32_t n, dp_expr **small, uint32_t nsmall) {
  return n <= nsmall ? small : dp_calloc(n, sizeof(dp_expr *));
}

/* The rewritten form of child i of node id, the node being captured
   (borrowed: gathered by kid_results). */
static dp_expr *out_kid(cctx *c, uint32_t id, uint32_t i) {
  (void)id;
  return c->kr[i];
}

/* A device_copy: its ends are the planned devices of its argument and of
   itself, which refine what was written (an end without a memory scope,
   or none at all); equal ends: a no-op copy, removed. */
static dp_expr *capture_copy(cctx *c, uint32_t id, dp_call *orig, dp_err **err) {
  dp_vdev *sv, *tv = id_vd(c, id, err);
  uint32_t k = dp__slot(c->ix, id, 0); /* (its body) */
  dp_expr *arg = !tv ? NULL
                 : read_anywhere_copy(c, k) ? read_anywhere(c, id, 1, k, out_kid(c, id, 1), &sv, err)
                 : through(c, id, 1, out_kid(c, id, 1), 1, &sv, err);
  if (!arg || sv == tv) return arg;
  dp_expr *r = child(c, tv, tv, sv, orig->args[0], arg, err);
  dp_release(arg);
  return r;
}

/* Is the child in slot s of node id one that lives on device index v
   (with an id, no annotation: nothing to follow or reconcile)? */
static int at_dev(const cctx *c, uint32_t id, uint32_t s, uint32_t v) {
  uint32_t k = dp__slot(c->ix, id, s);
  return k != DP__NONE_ID && c->ix->what[k] != W_ON_DEVICE && c->dev[k] == v;
}

/* Most of a program: an ordinary operator's call whose arguments all live
   where it runs. Then reconcile gives each argument's result back as it
   is: the call is its rewritten children (what the general path below
   makes of it, without taking and giving back a reference to each). */
static dp_expr *plain_call(cctx *c, uint32_t id, dp_call *orig, dp_err **err) {
  dp_expr *r = !c->anynew ? dp_retain(&orig->e) : rebuild(c, id, &orig->e, c->kr);
  if (!r) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return typed(r, &orig->e);
}

static int is_plain_call(const cctx *c, uint32_t id) {
  uint32_t v = c->dev ? c->dev[id] : 0, nargs = c->ix->koff[id + 1] - c->ix->koff[id];
  if (!v || dp__ann_op(c->ix, id) != OP_ORDINARY) return 0;
  for (uint32_t i = 0; i < nargs; i++) /* (argument i: slot i, the callee has none) */
    if (!at_dev(c, id, i, v)) return 0;
  return 1;
}

static dp_expr *capture_call(cctx *c, uint32_t id, dp_call *orig, dp_err **err) {
  dp__domains *d = c->d;
  switch (c->ix->what[id]) {
  case W_ON_DEVICE: return dp_retain(out_kid(c, id, 1)); /* the original ones go */
  case W_COPY: return capture_copy(c, id, orig, err);
  case W_OP_CALL:
    if (is_plain_call(c, id)) return plain_call(c, id, orig, err);
    break;
  default: break;
  }
  dp_vdev *cv = id_vd(c, id, err);
  if (!cv) return NULL;
  dp_expr *ocallee;
  dp_expr *const *oargs;
  uint32_t n = dp__any_call(&c->ix->ops, orig, &ocallee, &oargs);
  int lowered = ocallee != orig->fn;
  /* lowered: the callee is child 1 and the arguments are the tuple's */
  uint32_t aid = id, abase = 1;
  dp_tuple *ntup = NULL;
  if (lowered) {
    uint32_t tk = dp__slot(c->ix, id, 1); /* (child 2) */
    ntup = (dp_tuple *)out_kid(c, id, 2);
    if (tk != DP__NONE_ID) aid = tk, abase = 0;
  }
  uint32_t f = dp__callee_dom(d, id);
  dp_expr *small[9] = {0}, **k = kid_array(n + 1, small, 9);
  if (!k) goto oom;
  dp_expr *ncallee = out_kid(c, id, lowered ? 1 : 0);
  if (f == DP__NONE_ID) {
    k[0] = dp_retain(ncallee);
  } else {
    dp_vdev *rv = dom_vd(c, f, ocallee, err);
    k[0] = rv ? child(c, cv, cv, rv, ocallee, ncallee, err) : NULL;
  }
  /* an argument is expected where its parameter is (a function's), where
     the call runs (an ordinary operator's, a constructor's: one domain with
     the call, unless placement by cost put a copy there), or where it
     lives (the memory dialect's host and free arguments) */
  int at_call = c->ix->what[id] == W_CTOR_CALL ||
                (c->ix->what[id] == W_OP_CALL && dp__ann_op(c->ix, id) == OP_ORDINARY);
  for (uint32_t i = 0; i < n && k[i]; i++) {
    dp_vdev *pv = f != DP__NONE_ID ? dom_vd(c, dp__dom_kid(d, f, i), oargs[i], err)
                  : at_call ? cv : kid_vd(c, aid, abase + i, err);
    dp_expr *na = lowered ? ntup->fields[i] : out_kid(c, id, 1 + i);
    k[i + 1] = pv ? reconcile(c, cv, pv, aid, abase + i, na, err) : NULL;
  }
  dp_expr *r;
  if (lowered) { /* call_lowered(@f, (args)): rebuild the tuple */
    for (uint32_t i = 0; i <= n; i++)
      if (!k[i]) goto fail;
    dp_tuple *t = dp_tuple_new(n, k + 1, ntup->e.span);
    if (!t) {
      release_all(k, n + 1);
      goto oom;
    }
    typed(&t->e, orig->args[1]);
    dp_expr *k3[3] = {orig->fn, k[0], &t->e}; /* call_lowered's children */
    r = dp_expr_with_children(&orig->e, k3);
    dp_release(t);
    release_all(k, n + 1);
    if (!r) goto oom;
    r = typed(r, &orig->e);
  } else {
    r = with_kids(c, id, &orig->e, k, n + 1, err);
  }
  if (k != small) free(k);
  return r;
fail:
  release_all(k, n + 1);
  if (k != small) free(k);
  return NULL;
oom:
  if (k && k != small) free(k);
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return NULL;
}

static dp_expr *capture_func(cctx *c, uint32_t id, dp_func *orig, dp_err **err) {
  dp_vdev *rv = id_vd(c, id, err);
  if (!rv) return NULL;
  dp_expr *body = same(c, rv, id, orig->nparams, out_kid(c, id, orig->nparams), err);
  if (!body) return NULL;
  dp_var *small[8], **ps = orig->nparams <= 8 ? small : dp_calloc(orig->nparams, sizeof *ps);
  dp_func *f = NULL;
  if (ps) {
    for (uint32_t i = 0; i < orig->nparams; i++) ps[i] = (dp_var *)out_kid(c, id, i);
    f = dp_func_new_generic(orig->ntparams, orig->tparams, orig->nparams, ps, body, orig->ret,
                            orig->attrs, rv, orig->e.span); /* type parameters kept */
    if (ps != small) free(ps);
  }
  dp_release(body);
  if (!f) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  return typed(&f->e, &orig->e);
}

static dp_expr *capture_param(cctx *c, uint32_t id, dp_var *v, dp_err **err) {
  dp_vdev *vd = id_vd(c, id, err);
  if (!vd) return NULL;
  if (dp_var_vdev(v) == vd) return dp_retain(&v->e);
  dp_var *n = dp_var_new(v->name, dp_var_annot(v), vd, v->e.span);
  if (!n) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  return typed(&n->e, &v->e);
}

/* Is node id a parameter (in this function or, for a node numbered in
   several, in any of them)? */
static int is_param(cctx *c, uint32_t id) {
  const dp__index *ix = c->ix;
  if (ix->flag[id] & F_PARAM) return 1;
  if (!(ix->flag[id] & F_SHARED) || !ix->ndups) return 0;
  for (uint32_t k = 0; k < ix->ndups; k++)
    if (ix->x[ix->dups[k]] == ix->x[id] && (ix->flag[ix->dups[k]] & F_PARAM)) return 1;
  return 0;
}

/* A let whose value and body (each with an id, no annotation) live where
   its variable and the let itself do: its value gets its fixed on_device,
   its body stays as it is (what the general path makes of it, without
   reconcile's references). */
static int plain_let(const cctx *c, uint32_t id) {
  if (!c->dev) return 0;
  uint32_t k = dp__slot(c->ix, id, 0), xv = k != DP__NONE_ID ? c->dev[k] : 0, lv = c->dev[id];
  return xv && lv && at_dev(c, id, 1, xv) && at_dev(c, id, 2, lv);
}

static dp_expr *capture_plain_let(cctx *c, uint32_t id, dp_expr *orig, dp_err **err) {
  dp_vdev *xv = c->d->dev->v[c->dev[dp__slot(c->ix, id, 0)]];
  dp_expr *k[3] = {c->kr[0], dp__maybe_on_device_fixed(&c->ix->ops, c->kr[1], xv, err), c->kr[2]};
  if (!k[1]) return NULL;
  dp_expr *r = !c->anynew && k[1] == c->kr[1] ? dp_retain(orig) : rebuild(c, id, orig, k);
  dp_release(k[1]);
  if (!r) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return typed(r, orig);
}

/* The rewritten form of node id (new reference), from its children's
   (c->kr). */
static dp_expr *capture_node(cctx *c, uint32_t id, dp_err **err) {
  dp_expr *orig = c->ix->x[id];
  switch (orig->h.kind) { /* (not ix->kind: capture_last frees it; orig is read here anyway) */
  case DP_VAR:
    if (is_param(c, id)) return capture_param(c, id, (dp_var *)orig, err);
    return dp_retain(orig);
  case DP_CALL: return capture_call(c, id, (dp_call *)orig, err);
  case DP_FUNC:
    if (c->ix->what[id] == W_PRIM_FUNC) return dp_retain(orig);
    return capture_func(c, id, (dp_func *)orig, err);
  case DP_LET: {
    if (plain_let(c, id)) return capture_plain_let(c, id, orig, err);
    dp_vdev *xv = kid_vd(c, id, 0, err);
    dp_vdev *lv = xv ? id_vd(c, id, err) : NULL;
    if (!lv) return NULL;
    dp_expr *k[3] = {dp_retain(out_kid(c, id, 0)), reconcile(c, NULL, xv, id, 1, out_kid(c, id, 1), err),
                     NULL};
    if (k[1]) k[2] = same(c, lv, id, 2, out_kid(c, id, 2), err);
    return with_kids(c, id, orig, k, 3, err);
  }
  case DP_TUPLE: case DP_PROJ: case DP_IF: case DP_MATCH: case DP_REF_CREATE: case DP_REF_READ:
  case DP_REF_WRITE: {
    uint32_t n = dp__nchildren(orig);
    dp_expr *small[8], **k = kid_array(n, small, 8);
    if (!k) {
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return NULL;
    }
    dp_expr *r;
    if (c->ix->flag[id] & F_LOWERED_ARGS) {
      for (uint32_t i = 0; i < n; i++) k[i] = dp_retain(out_kid(c, id, i));
      r = with_kids(c, id, orig, k, n, err);
    } else {
      dp_vdev *pv = id_vd(c, id, err);
      for (uint32_t i = 0; i < n; i++)
        k[i] = pv && (i == 0 || k[i - 1]) ? same(c, pv, id, i, out_kid(c, id, i), err) : NULL;
      r = with_kids(c, id, orig, k, n, err);
    }
    if (k != small) free(k);
    return r;
  }
  default: return dp_retain(orig);
  }
}

/* primfn buffers take the memory scopes that flowed into them. */
static int capture_primfn(cctx *c, dp_module *out, dp_primfn *pf, dp_err **err) {
  dp__ptrslot *s = dp__ptrmap_find(&c->d->extra, pf);
  if (!s) return 0;
  dp_buffer *b = dp_calloc(pf->nargs + 1, sizeof *b);
  if (!b) goto oom;
  int changed = 0;
  for (uint32_t i = 0; i <= pf->nargs; i++) {
    b[i] = i < pf->nargs ? pf->args[i] : pf->result;
    dp_vdev *v = dp__dom_vdev(c->d, dp__dom_kid(c->d, s->val, i));
    if (v && v->memory_scope[0] && strcmp(v->memory_scope, b[i].scope ? b[i].scope : "")) {
      b[i].scope = v->memory_scope;
      changed = 1;
    }
  }
  int rc = 0;
  if (changed) {
    dp_primfn *n = dp_primfn_new(pf->name, pf->nargs, b, b[pf->nargs], pf->span);
    rc = n ? dp_module_set_primfn(out, n, err) : -1;
    if (!n) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    dp_release(n);
  }
  free(b);
  return rc;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return -1;
}

/* Node id as a key of `changed` (a node numbered in two functions has two
   ids: its address would not do). The map never reads what a key points
   to; it places keys by their bits above 12 (the "page") and 4 to 11 (the
   place in it): the id goes above, and a mix of it below, so that ids,
   unlike nodes, land anywhere rather than in runs. */
static const void *id_key(uint32_t id) {
  uint64_t mix = ((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 56;
  return (const void *)(uintptr_t)((((uint64_t)id + 1) << 12) | (mix << 4));
}

/* Is id's result its body's, which is a node of the module, kept nowhere
   (its isnew and fol bits set, nothing on the stack)? An on_device call capture
   removes (its result is its body's) whose body is unchanged, or such a
   call itself: at a million let calls every tenth let value is one, and
   the stack held each until the lets were built (2 MiB at capture's peak).
   Shared ones keep theirs in `changed` as any shared node. */
static int follows(const cctx *c, uint32_t id) {
  const dp__index *ix = c->ix;
  if (ix->flag[id] & F_SHARED) return 0; /* (the caller has read what[id]: an on_device) */
  uint32_t b = dp__slot(ix, id, 0); /* (its body, captured before it) */
  if (b == DP__NONE_ID) return 0;
  return !(c->isnew[b >> 3] & (1u << (b & 7))) || (c->fol[b >> 3] & (1u << (b & 7)));
}

/* The node a result that follows (above) is. */
static dp_expr *followed(const cctx *c, uint32_t id) {
  do id = dp__slot(c->ix, id, 0);
  while (c->isnew[id >> 3] & (1u << (id & 7)));
  return c->ix->x[id];
}

/* The rewritten forms of node id's children, borrowed, in c->kr: a
   single-reference child's from the top of the stack (its first one is
   *base), a shared one's from `changed` or the node itself, a child not
   numbered (an operator) as it is. -1 on out of memory. */
static int kid_results(cctx *c, uint32_t id, uint32_t *base) {
  const dp__index *ix = c->ix;
  uint32_t o = ix->koff[id], ns = ix->koff[id + 1] - o, skip = dp__skip(ix, id), top = c->nvs;
  if (ns + skip > c->capkr && dp_grow((void **)&c->kr, &c->capkr, ns + skip, sizeof *c->kr) < 0)
    return -1;
  dp_expr **kr = c->kr + skip; /* (slot s is child s + skip) */
  const uint32_t *kid = ix->kid + o;
  int anynew = 0;
  for (uint32_t s = ns; s-- > 0;) { /* (the last child's result is on top) */
    uint32_t k = kid[s];
    if (k == DP__NONE_ID) kr[s] = dp__child(ix->x[id], s + skip);
    else if (!(c->isnew[k >> 3] & (1u << (k & 7)))) kr[s] = ix->x[k];
    else if ((anynew = 1, !(ix->flag[k] & F_SHARED)))
      kr[s] = c->fol[k >> 3] & (1u << (k & 7)) ? followed(c, k) : c->vs[--top];
    else kr[s] = c->dense ? c->dense[k] : dp__ptrmap_find(&c->changed, id_key(k))->ptr;
  }
  c->anynew = anynew; /* (a new form is never the node: keep) */
  if (skip) c->kr[0] = ((const dp_call *)ix->x[id])->fn; /* (an operator: no slot, no id) */
  *base = top;
  return 0;
}

/* The changed shared nodes' forms, from the map to an array of every id.
   0, or -1 on out of memory (the map kept). */
static int to_dense(cctx *c) {
  const dp__index *ix = c->ix;
  if (!(c->dense = dp_calloc(ix->n, sizeof *c->dense))) return -1;
  for (uint32_t i = 0; i < c->changed.cap; i++) {
    const dp__ptrslot *s = &c->changed.slots[i];
    if (s->key) c->dense[((uintptr_t)s->key >> 12) - 1] = s->ptr;
  }
  dp__ptrmap_free(&c->changed);
  return 0;
}

/* Room on the stack for one more result. Where results pile up (a let
   chain's values wait for their lets, built last), past a few thousand it
   takes room for the module's deepest path at once, when inference counted
   it (dp_module.sizes): the doublings from 16 laid its first 4 MiB in
   small pages. */
static int grow_vs(cctx *c) {
  uint32_t need = c->nvs + 1, deep = c->ix->mod->sizes.depth;
  if (need > 4096 && deep > need)
    return dp__grow_fresh((void **)&c->vs, &c->capvs, c->nvs, deep, sizeof *c->vs);
  return dp_grow((void **)&c->vs, &c->capvs, need, sizeof *c->vs);
}

/* Node id's result r (a new reference) kept for its parent: on the stack
   (one parent), or, shared, in `changed` when it is a new node. -1 on out
   of memory (r released). */
static int keep(cctx *c, uint32_t id, dp_expr *r) {
  const dp__index *ix = c->ix;
  if (r == ix->x[id]) { /* (the module holds it: its parent, up to a function it holds) */
    dp_release(r);
    return 0;
  }
  if (!(ix->flag[id] & F_SHARED)) {
    if (ix->what[id] == W_ON_DEVICE && follows(c, id)) { /* (r is its body's: the module's) */
      dp_release(r);
      c->isnew[id >> 3] |= (uint8_t)(1u << (id & 7));
      c->fol[id >> 3] |= (uint8_t)(1u << (id & 7));
      return 0;
    }
    if (c->nvs == c->capvs && grow_vs(c) < 0) {
      dp_release(r);
      return -1;
    }
    c->vs[c->nvs++] = r;
    c->isnew[id >> 3] |= (uint8_t)(1u << (id & 7));
    return 0;
  }
  if (!c->dense && c->changed.n >= ix->n / 64 + 64 && to_dense(c) < 0) {
    dp_release(r);
    return -1;
  }
  if (c->dense) {
    c->dense[id] = r;
  } else {
    int fresh;
    dp__ptrslot *s = dp__ptrmap_insert(&c->changed, id_key(id), &fresh);
    if (!s) {
      dp_release(r);
      return -1;
    }
    s->ptr = r; /* (each id is captured once: the slot is fresh) */
  }
  c->isnew[id >> 3] |= (uint8_t)(1u << (id & 7));
  return 0;
}

/* The stack at half its room, once a quarter of it is used: a let chain
   piles up a result per let (its value) and takes them back one by one,
   and the room for all of them should not stay beside the planned module
   (a failed shrink keeps it). */
static void shrink_vs(cctx *c) {
  uint32_t cap = c->capvs / 2;
  dp_expr **p = dp_realloc(c->vs, (size_t)cap * sizeof *c->vs);
  if (p) c->vs = p, c->capvs = cap;
}

/* The index cut (capture_last) behind capture as it goes: at a million
   let calls a let's children are all the ids after it, and capture builds
   the lets last, from the last one up, so that the ids it is done with
   are one block at the top, which goes while the new on_device calls are
   made (the numbering's 96 MB were all there at capture's end, beside
   them and the plan). A checkpoint every c->step positions, a sixteenth
   of the ids with consume (at least 8: small programs are cut too, so
   that every test reads the index through cuts, where a read past one
   shows under ASan), a 32nd without (below).
   Without consume the input stays beside its plan, so the cuts lower
   the peak little; what they do is give pages back just before the
   plan's new nodes ask for more (a million let calls: some 70 MB of the
   index, for 190 MB of new nodes). On the benchmark VM a page the process
   gave back a moment ago costs its zeroing when taken again, a page the
   host has not backed several times that (the guest hands free 8 MiB
   blocks back to the host): PlanDevices on 1,000,000 let calls, median of
   12 runs alternated (load 4-6), 0.51 s without these cuts, 0.39 s with
   them (system seconds 0.18 -> 0.05). So they are made without consume
   too on modules of NOCONSUME_IDS ids and more (at a million calls let
   has 3.1 M, branchy 1.5 M, chain 1.1 M), whole huge pages only (a tail
   given back splits a page still read, on small pages then); on smaller
   modules the pass below and the cuts cost more than they give (100,000
   let calls: capture 2-3 ms, 10-15%, slower; 1,000,000 chain calls, cut
   from 2^20 ids: the step's peak 115 -> 82 MB, but its faults the same
   and 1,818 -> 1,894 instructions a call, the pass below). There the input is not
   cut into, and what is left of the index at the last cut stays beside
   the whole plan: the step is half as long (CUTS_NOCONSUME), so that less
   is left (1,000,000 let calls: the step's peak 225 -> 218 MB). With
   consume a cut also splits each array's last huge page (its tail goes):
   twice as many would split twice as many pages still read. */
#define CUTS 16u
#define CUTS_NOCONSUME 32u
#define NOCONSUME_IDS ((uint32_t)1 << 21)

/* The threshold in force, lowered by a test (dp_debug_capture_cut_ids:
   the path below 2^21 ids is otherwise met only by the 1M benchmarks,
   never under ASan), and the cuts made without consume, which that test
   counts to see the path ran. */
static uint32_t noconsume_ids = NOCONSUME_IDS;
static uint64_t noconsume_cuts;

uint64_t dp_debug_capture_cut_ids(uint32_t n) {
  uint64_t made = noconsume_cuts;
  noconsume_ids = n ? n : NOCONSUME_IDS;
  noconsume_cuts = 0;
  return made;
}

/* The largest id read at node id: its own, its children's, and those of
   a child's chain of nested on_device calls (`through` follows it); a
   lowered call also reads its tuple's fields and their chains (then
   nothing before it is cut: all). */
static uint32_t read_at(const dp__index *ix, uint32_t id, uint32_t m, uint32_t all) {
  if (id > m) m = id;
  if (ix->what[id] == W_LOWERED) return all;
  for (uint32_t o = ix->koff[id], e = ix->koff[id + 1]; o < e; o++) {
    uint32_t j = ix->kid[o];
    while (j != DP__NONE_ID) {
      if (j > m) m = j;
      if (ix->what[j] != W_ON_DEVICE) break;
      j = dp__slot(ix, j, 0); /* (its body) */
    }
  }
  return m;
}

/* The post order's entry that ends at *at (its last byte has no 0x80),
   read backwards: its zigzag difference; *at moves to its first byte. */
static uint32_t post_back(const uint8_t *lo, const uint8_t **at) {
  const uint8_t *b = *at - 1;
  while (b > lo && (b[-1] & 0x80)) b--;
  *at = b;
  uint32_t z = 0;
  for (unsigned sh = 0;; sh += 7, b++) {
    z |= (uint32_t)(*b & 0x7F) << sh;
    if (!(*b & 0x80)) return z;
  }
}

/* The last function's checkpoints (c->top): the largest id read from
   each on, by one pass over its post order from its end (each stretch's
   largest, kept as the largest from there on). Only where nothing else
   reads an id out of that order (no node numbered twice: is_param looks
   those up by their other ids). The pass stops at the first stretch
   (from the end) no cut could follow: the largest read from there on
   leaves less than a stretch of ids above it, and so from every earlier
   one (at a million let calls it reads the lets, the last third, and not
   the values before them: a whole pass cost capture some 200
   instructions a call, cold). Out of memory: no checkpoints (nothing is
   cut). */
static void tops(cctx *c) {
  const dp__index *ix = c->ix;
  if (!c->last || ix->ndups || !ix->nfn) return;
  uint32_t fn = ix->nfn - 1, len = ix->fnid[fn + 1] - ix->fnid[fn], all = ix->n - 1;
  uint32_t cuts = c->consume ? CUTS : CUTS_NOCONSUME;
  c->step = ix->n / cuts > 8 ? ix->n / cuts : 8;
  if (len < 2 * c->step || !(c->top = dp_calloc(len / c->step + 1, sizeof *c->top))) return;
  c->ntop = len / c->step + 1;
  const uint8_t *lo = ix->post + ix->fnpost[fn], *at = ix->post + ix->fnpost[fn + 1];
  uint32_t id = ix->fnid[fn], m = 0, t = c->ntop - 1; /* (the root is finished last) */
  if (t * c->step >= len) t--; /* (an empty last stretch: no checkpoint reaches it) */
  for (uint32_t k = len; k-- > 0;) {
    m = read_at(ix, id, m, all);
    uint32_t z = post_back(lo, &at);
    id -= (z >> 1) ^ (0u - (z & 1)); /* (the id finished before it) */
    if (k != t * c->step) continue;
    c->top[t] = m;
    if (t == 0 || (uint64_t)m + 1 + c->step > ix->cap) break; /* (no cut from here back) */
    t--;
  }
  for (; t > 0; t--) c->top[t - 1] = m; /* (as large or larger: no cut there) */
  /* (without consume, only where the ids go before capture's last stretch,
     while new nodes are still to be made: a cut at its end only frees
     early what goes a moment later; at 1,000,000 branchy calls, whose
     one cut came last, capture was slower with it) */
  if (!c->consume && (c->ntop < 2 || (uint64_t)c->top[c->ntop - 2] + 1 + c->step > ix->cap)) {
    free(c->top);
    c->top = NULL, c->ntop = 0;
  }
}

/* At checkpoint t: the ids after its largest go, where that frees a block
   worth it (and capture's own devices with them). */
static void cut(cctx *c, uint32_t t) {
  uint32_t keep = c->top[t] + 1;
  if (keep + c->step > c->ix->cap) return;
  /* (without consume the cuts are for whole huge pages the plan's nodes
     take next: a tail given back would split a page still read, on small
     pages then, where the peak no longer needs it) */
  dp__index_cut(c->ix, keep, c->consume);
  if (!c->consume) noconsume_cuts++;
  if (c->dev) {
    uint8_t *p = dp_realloc(c->dev, keep);
    if (p) c->dev = p;
  }
}

/* One function: its nodes in post order (the range of function fn), each
   rewritten once from its children's results; the root comes last. A node
   that is not shared has one parent, so its result is dropped as soon as
   the parent is built. */
#define AHEAD 8

static dp_expr *capture_function(cctx *c, uint32_t fn, dp_err **err) {
  const dp__index *ix = c->ix;
  dp_expr *r = NULL;
  uint32_t end = ix->fnid[fn + 1] - ix->fnid[fn], base;
  uint32_t next = c->top && fn + 1 == ix->nfn ? 0 : DP__NONE_ID; /* the next checkpoint */
  /* (the module's nodes are cold at a million: each is asked for a few
     nodes ahead of its turn, the order read AHEAD ids ahead into a ring) */
  uint32_t ring[AHEAD];
  dp__post it;
  dp__post_start(&it, ix, fn, fn + 1);
  for (uint32_t k = 0; k < AHEAD; k++) ring[k] = dp__post_next(&it);
  for (uint32_t k = 0; k < end; k++) {
    if (k == next) {
      const uint8_t *post = ix->post;
      cut(c, k / c->step);
      dp__post_rebase(&it, post); /* (the post order may have moved down) */
      next = k + c->step;
    }
    uint32_t id = ring[k % AHEAD];
    ring[k % AHEAD] = dp__post_next(&it);
    if (ring[k % AHEAD] != DP__NONE_ID) dp__prefetch(ix->x[ring[k % AHEAD]]);
    if (kid_results(c, id, &base) < 0) goto oom;
    r = capture_node(c, id, err);
    if (!r) break;
    /* the children's results are in r now (or were not needed) */
    while (c->nvs > base) dp_release(c->vs[--c->nvs]);
    if (c->nvs < c->capvs / 4 && c->capvs >= 4096) shrink_vs(c);
    if (k + 1 == end) break; /* the root */
    if (keep(c, id, r) < 0) goto oom;
  }
  return r; /* (a function has a root) */
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return NULL;
}

/* dp__dom_dev of domain x, without its call where x is a root or a root's
   child of first order (defaulting left most paths one step). */
static uint32_t dom_dev(dp__domains *d, uint32_t x) {
  const dp__dnode *nd = d->nodes;
  uint32_t r = nd[x].parent;
  return nd[r].parent == r && !nd[r].isfn ? nd[r].vdev : dp__dom_dev(d, x);
}

/* A block of the domains that go (*p, n bytes) to capture's node arena
   where it holds chunks (a megabyte or more): its pages, resident, take
   planned nodes instead of fresh pages (at a million let calls about
   9,500 faults). *p is NULL after (freed, or the arena's). */
static void give(dp__arena *a, void **p, size_t n) {
  if (!*p || n < ((size_t)1 << 20)) return;
  (void)dp__arena_adopt(a, *p, n); /* (out of memory: freed, the arena asks for more as before) */
  *p = NULL;
}

/* Every node's device, in one pass in id order (capture asks for each
   node's a few times, as a node and as a child, in post order: a find in
   the union-find each time). 0, or -1 on out of memory.
   For capture_last, where these are all capture asks of the domains, they
   go (the index's kinds, which capture reads from the nodes, are these now): what
   else it asks is a callee's function domain (calls of functions, lowered
   calls), a primfn's buffers, and the domain of a child with no id (an
   operator or a constructor as a value), made on demand. */
static int devices(cctx *c) {
  dp__index *ix = c->ix;
  if (c->d->dev->n > 256) return 0; /* (read from the domains) */
  /* (capture_last: nothing reads the index's kinds again, a byte an id: the
     devices take their block, no fresh pages) */
  if (c->last && ix->kind) c->dev = ix->kind, ix->kind = NULL;
  else if (!(c->dev = dp_malloc(ix->n ? ix->n : 1))) return -1;
  int asks = ix->nloose || ix->mod->nprims;
  for (uint32_t id = 0; id < ix->n; id++) {
    c->dev[id] = (uint8_t)dom_dev(c->d, dp__dom_at(c->d, id));
    uint8_t w = ix->what[id];
    asks |= w == W_FN_CALL || w == W_LOWERED || w == W_PRIM_FUNC;
  }
  if (c->last && !asks && !c->d->oom) {
    give(ix->ops.arena, (void **)&c->d->nodes, (size_t)c->d->capnodes * sizeof *c->d->nodes);
    c->spare = c->d->cons, c->nspare = (size_t)c->d->capcons * sizeof *c->d->cons;
    c->d->cons = NULL;
    give(ix->ops.arena, (void **)&c->d->kids, (size_t)c->d->capkids * sizeof *c->d->kids);
    dp__domains_drop(c->d);
  }
  /* (and the walk's spare block the domains did not take, kept for this:
     the numbering's demands at a million let calls, 12 MB; keep_spare) */
  for (int i = 0; c->last && i < 2; i++) {
    give(ix->ops.arena, &ix->spare[i], ix->nspare[i]);
    if (!ix->spare[i]) ix->nspare[i] = 0;
  }
  return 0;
}

/* The bits capture keeps an id, n bytes zeroed: in the dropped domains'
   constraints' block where it is as large (resident: at a million let
   calls the bits otherwise took a fresh 2 MiB page of the heap, at
   capture's peak), else a new block; NULL on out of memory. */
static uint8_t *bits(cctx *c, size_t n) {
  uint8_t *b = NULL;
  if (c->spare && c->nspare >= n && (b = dp_realloc(c->spare, n))) /* (shrinks in place) */
    memset(b, 0, n);
  else {
    free(c->spare);
    b = dp_calloc(n, 1);
  }
  c->spare = NULL;
  return b;
}

/* consume: the ids capture may change in place, a bit each (in b, zeroed):
   a function only the module and `out` (its copy so far) hold, then, from
   it down, each child its parent alone holds (one reference, no other
   parent in the module), and each call several parents reach where all of
   them are in (shared_in_place). */
static int held_alone(const dp__index *ix, uint32_t j) {
  return !(ix->flag[j] & (F_SHARED | F_MULTI | F_DUP)) && ix->x[j]->h.rc == 1;
}

/* A call reached from several parents in one function (not numbered in
   another): the module's alone where every reference to it is from a
   parent that is (a value read by several calls, as each of a branchy
   program's is: copied, the plan held the input's calls and their copies
   side by side until the input went). */
static int shared_call(const dp__index *ix, uint32_t j) {
  return (ix->flag[j] & (F_MULTI | F_DUP)) == F_MULTI && ix->what[j] != W_PLAIN && ix->what[j] != W_PRIM_FUNC;
}

/* (counted by the numbering: a let chain, whose shared nodes are its
   variables, is not asked id by id) */
static int any_shared_call(const dp__index *ix) {
  if (ix->nmulti == 0) return 0;
  for (uint32_t id = 0; id < ix->n; id++)
    if (shared_call(ix, id)) return 1;
  return 0;
}

static void set_bit(uint8_t *b, uint32_t id) { b[id >> 3] |= (uint8_t)(1u << (id & 7)); }
static int has_bit(const uint8_t *b, uint32_t id) { return b[id >> 3] & (1u << (id & 7)); }

/* Function fn, its root in b: in reverse post order (every parent before
   its children), a tree child of a node in b goes in; a shared call once
   its last parent is passed, where each of its references (refs, a
   count; 255: too many to count) is from a parent in b (seen, the
   same count) and nothing else holds it (its reference count no more). */
static void shared_in_place(const dp__index *ix, uint8_t *b, uint32_t fn, const uint8_t *refs, uint8_t *seen) {
  const uint8_t *first = ix->post + ix->fnpost[fn], *at = ix->post + ix->fnpost[fn + 1];
  uint32_t id = ix->fnid[fn]; /* (the root is finished last) */
  while (at > first) {
    if (!has_bit(b, id) && shared_call(ix, id) && refs[id] < 255 && seen[id] == refs[id] &&
        ix->x[id]->h.rc == refs[id])
      set_bit(b, id);
    if (has_bit(b, id))
      for (uint32_t o = ix->koff[id]; o < ix->koff[id + 1]; o++) {
        uint32_t j = ix->kid[o];
        if (j == DP__NONE_ID) continue;
        if (shared_call(ix, j)) seen[j] += seen[j] < 255;
        else if (held_alone(ix, j)) set_bit(b, j);
      }
    uint32_t z = post_back(first, &at);
    id -= (z >> 1) ^ (0u - (z & 1)); /* (the id finished before it) */
  }
}

/* (refs: each shared call's references, counted in every function's child
   slots; NULL: none, or no memory for the counts: tree children only) */
static uint8_t *exclusive(const dp__index *ix, uint8_t *b) {
  uint8_t *refs = any_shared_call(ix) ? dp_calloc(ix->n ? 2 * (size_t)ix->n : 1, 1) : NULL;
  if (refs)
    for (uint32_t o = 0; o < ix->nkid; o++) {
      uint32_t j = ix->kid[o];
      if (j != DP__NONE_ID && shared_call(ix, j)) refs[j] += refs[j] < 255;
    }
  for (uint32_t fn = 0; fn < ix->nfn; fn++) {
    uint32_t lo = ix->fnid[fn], hi = ix->fnid[fn + 1];
    if (hi == lo || ix->x[lo]->h.rc != 2) continue;
    set_bit(b, lo); /* (its root, its first id) */
    if (refs) {
      shared_in_place(ix, b, fn, refs, refs + ix->n);
      continue;
    }
    /* (in id order: a child its parent alone reaches was numbered there,
       after it) */
    for (uint32_t id = lo; id < hi; id++) {
      if (!has_bit(b, id)) continue;
      for (uint32_t o = ix->koff[id]; o < ix->koff[id + 1]; o++) {
        uint32_t j = ix->kid[o];
        if (j != DP__NONE_ID && held_alone(ix, j)) set_bit(b, j);
      }
    }
  }
  free(refs);
  return b;
}

static dp_module *capture(dp__domains *d, int last, int consume, dp_err **err) {
  dp__index *ix = d->ix;
  cctx c = {.d = d, .ix = ix, .changed = DP__PTRMAP_INIT, .rcmap = DP__PTRMAP_INIT, .last = last,
            .consume = consume};
  /* the planned module's new nodes, made in bulk (the annotations too:
     rules.c makes them in ix->ops.arena) */
  dp__arena arena = DP__ARENA_INIT;
  ix->ops.arena = &arena;
  dp_module *m = ix->mod, *out = dp_module_copy(m);
  size_t nb = ix->n / 8 + 1;
  if (!out || devices(&c) < 0 || !(c.isnew = bits(&c, consume ? 3 * nb : 2 * nb))) goto oom;
  c.fol = c.isnew + nb;
  if (consume) c.excl = exclusive(ix, c.isnew + 2 * nb); /* (after `out` holds every function) */
  if (consume || ix->n >= noconsume_ids) tops(&c);
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    dp_expr *f = capture_function(&c, i, err);
    if (!f) goto fail;
    int rc = f->h.kind == DP_FUNC ? dp_module_set_func(out, m->funcs[i].global->name, (dp_func *)f, err) : -1;
    dp_release(f);
    if (rc < 0) goto fail;
  }
  for (uint32_t i = 0; i < m->nprims; i++)
    if (capture_primfn(&c, out, m->prims[i], err) < 0) goto fail;
  if (d->oom) goto oom;
  goto done;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
fail:
  dp_release(out);
  out = NULL;
done:
  for (uint32_t i = 0; i < c.nvs; i++) dp_release(c.vs[i]);
  free(c.vs);
  for (uint32_t i = 0; i < c.changed.cap; i++)
    if (c.changed.slots[i].key) dp_release(c.changed.slots[i].ptr);
  dp__ptrmap_free(&c.changed);
  if (c.dense)
    for (uint32_t i = 0; i < ix->n; i++) dp_release(c.dense[i]);
  free(c.dense);
  free(c.isnew);
  free(c.spare);
  free(c.top);
  free(c.dev);
  free(c.kr);
  for (uint32_t i = 0; i < c.nrc; i++) dp_release(c.rc[i].made);
  free(c.rc);
  dp__ptrmap_free(&c.rcmap);
  ix->ops.arena = NULL;
  dp__arena_done(&arena);
  return out;
}

dp_module *dp__capture(dp__domains *d, dp_err **err) {
  return capture(d, 0, 0, err);
}

dp_module *dp__capture_last(dp__domains *d, int consume, dp_err **err) {
  return capture(d, 1, consume, err);
}
