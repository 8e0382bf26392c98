/*
 * ShareCopies (plan.h, dp_plan_share_copies): one device_copy per value and
 * pair of devices in each function of a planned module. PlanDevices (as
 * TVM) inserts a copy per use.
 *
 * A node used in several places is one value in Relay's dataflow form, and
 * the text format binds it in the innermost evaluation scope (function
 * body, if branch, match clause) that holds all its uses, after what it
 * reads: where it dominates them. So the copies of one value between the
 * same two devices become one node, which is then made where it dominates
 * every use it serves, also when no one of them dominates the others (two
 * branches of an if that each copy the value share one copy made before
 * the if; closures that each copy a value of their context share one made
 * in it): one copy per value and destination device, the bytes placement
 * by cost counts. The value is in scope there, since it dominates its
 * uses, the copy among them.
 *
 * Requires: a planned module (capture's copies: device_copy of a value,
 * optionally under fixed on_device calls, with both ends written; the
 * user's own copies count too). Leaves: a new module whose functions share
 * their unchanged parts with the input; planning it again gives it back
 * (the copies' ends are where their argument and their readers live
 * already).
 *
 * Per function, no recursion (any depth): one walk numbers the nodes in
 * post order and keys each copy (its value under its on_device calls, its
 * two devices); the first copy of a key stands for all; one rewrite
 * (dp_rewrite) replaces each copy by its representative's rebuilt node. A
 * copy of a copy that merged (a value copied to a device and back in two
 * places) is keyed by its value only then: another round merges it. Time:
 * linear in the function per round (one, or one more per level of such
 * chains).
 */
#include <stdlib.h>
#include "planner.h"

#define NONE DP__NONE_ID

typedef struct ckey { dp_expr *value; dp_vdev *src, *dst; uint32_t next, rep; } ckey;

typedef struct copy { dp_expr *e; uint32_t key, rep; } copy;

typedef struct sctx {
  struct dp__plan_ops ops;
  copy *cp; uint32_t n, cap;  /* the planner copies, in post order */
  dp__ptrmap id;              /* copy -> its index in cp */
  dp_expr **made;             /* per copy that stands for others: its rebuilt node (owned) */
  ckey *k; uint32_t nk, capk;
  dp__ptrmap first;           /* value -> its first key + 1 */
  int again;                  /* a round merged the value of another copy */
  int oom;
} sctx;

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
  c->k[c->nk] = (ckey){body, src, dst, slot ? slot->val : 0, NONE};
  if (slot) slot->val = c->nk + 1;
  else if (dp__ptrmap_set(&c->first, body, c->nk + 1, 0) < 0) goto oom;
  return c->nk++;
oom:
  c->oom = 1;
  return NONE;
}

/* Post order: each planner copy keyed, its representative the first copy
   of its key. Only copies are remembered: a plan without copies costs one
   walk. */
static int number(void *ud, dp_expr *e) {
  sctx *c = ud;
  if (e->h.kind != DP_CALL || ((dp_call *)e)->fn != &c->ops.device_copy->e) return 0;
  uint32_t key = key_of(c, e);
  if (c->oom) return -1;
  if (key == NONE) return 0;
  if (dp_grow((void **)&c->cp, &c->cap, c->n + 1, sizeof *c->cp) < 0 ||
      dp__ptrmap_set(&c->id, e, c->n, 0) < 0) {
    c->oom = 1;
    return -1;
  }
  ckey *k = &c->k[key];
  if (k->rep == NONE) k->rep = c->n;
  c->cp[c->n] = (copy){e, key, k->rep};
  c->n++;
  return 0;
}

static dp_expr *post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  sctx *c = ud;
  (void)err;
  if (!rebuilt->type && orig->type) rebuilt->type = dp_retain(orig->type);
  dp__ptrslot *slot = orig->h.kind == DP_CALL ? dp__ptrmap_find(&c->id, orig) : NULL;
  if (!slot) return dp_retain(rebuilt);
  uint32_t r = c->cp[slot->val].rep;
  if (!c->made[r]) c->made[r] = dp_retain(rebuilt); /* the first member met stands for all */
  return dp_retain(c->made[r]);
}

static void forget(sctx *c) {
  if (c->made)
    for (uint32_t i = 0; i < c->n; i++) dp_release(c->made[i]);
  free(c->made);
  c->made = NULL;
  c->n = c->nk = 0;
  dp__ptrmap_free(&c->id);
  dp__ptrmap_free(&c->first);
}

/* The function f with its copies shared; NULL + error. */
static dp_expr *share_fn(sctx *c, dp_expr *f, dp_err **err) {
  dp_visitor v = {NULL, number, c};
  dp_expr *out = NULL;
  c->again = 0;
  if (dp_visit(f, &v) < 0 || c->oom) goto oom;
  if (c->n == 0) { /* nothing to share */
    forget(c);
    return dp_retain(f);
  }
  if (!(c->made = dp_calloc(c->n, sizeof *c->made))) goto oom;
  /* a copy of a copy that goes now has its key only after this round (a
     value copied to a device and back, twice): another round merges it */
  for (uint32_t i = 0; i < c->n && !c->again; i++) {
    dp__ptrslot *v = dp__ptrmap_find(&c->id, c->k[c->cp[i].key].value);
    c->again = v && c->cp[v->val].rep != v->val;
  }
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
    while (f && c.again) { /* (each round merges copies: it ends) */
      dp_expr *g = share_fn(&c, f, err);
      dp_release(f);
      f = g;
    }
    int rc = f ? dp_module_set_func(out, m->funcs[i].global->name, (dp_func *)f, err) : -1;
    dp_release(f);
    if (rc < 0) {
      dp_release(out);
      out = NULL;
      break;
    }
  }
  free(c.cp);
  free(c.k);
  dp__ptrmap_free(&c.id);
  dp__ptrmap_free(&c.first);
  dp__plan_ops_free(&c.ops);
  return out;
}
