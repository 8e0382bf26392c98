/*
 * ShareCopies (plan.h, dp_plan_share_copies): one device_copy per value and
 * pair of devices in each function of a planned module. PlanDevices (as
 * TVM) inserts a copy per use; here the copies of one value between the
 * same two devices become one node. A node used in several places is one
 * value in Relay's dataflow form: the text format binds it once, in the
 * innermost scope that holds all its uses (before an `if` whose branches
 * both use it, outside a closure that reads it), so the shared copy is made
 * where it dominates its uses.
 *
 * Requires: a planned module (capture's copies: device_copy of a value,
 * optionally under fixed on_device calls, with both ends written). Leaves:
 * a new module whose functions share their unchanged parts with the input;
 * planning it again gives it back (the copies' ends are where their
 * argument and their readers live already).
 *
 * One explicit-stack rewrite per function (dp_rewrite, post order): a copy
 * is keyed by the value under its on_device calls (rebuilt: shared values
 * are rebuilt once), its source and its destination; the first copy of a
 * key stands for the later ones.
 */
#include <stdlib.h>
#include "planner.h"

typedef struct seen { dp_expr *copy; dp_vdev *src, *dst; uint32_t next; } seen;

typedef struct sctx {
  struct dp__plan_ops ops;
  dp__ptrmap first;          /* value -> its first copy + 1 in `s` */
  seen *s; uint32_t ns, caps;
} sctx;

/* The value a copy copies: its on_device calls looked through. */
static dp_expr *value_of(const sctx *c, dp_expr *e) {
  dp_expr *b;
  while ((b = dp__on_device_body(&c->ops, e))) e = b;
  return e;
}

static dp_expr *post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  sctx *c = ud;
  dp_expr *body;
  dp_vdev *src, *dst;
  if (!rebuilt->type && orig->type) rebuilt->type = dp_retain(orig->type);
  if (!dp__device_copy_props(&c->ops, rebuilt, &body, &src, &dst) || !src || !dst)
    return dp_retain(rebuilt);
  dp_expr *v = value_of(c, body);
  dp__ptrslot *slot = dp__ptrmap_find(&c->first, v);
  for (uint32_t k = slot ? slot->val : 0; k; k = c->s[k - 1].next)
    if (c->s[k - 1].src == src && c->s[k - 1].dst == dst) return dp_retain(c->s[k - 1].copy);
  if (dp_grow((void **)&c->s, &c->caps, c->ns + 1, sizeof *c->s) < 0) goto oom;
  c->s[c->ns] = (seen){dp_retain(rebuilt), src, dst, slot ? slot->val : 0};
  if (slot) slot->val = c->ns + 1;
  else if (dp__ptrmap_set(&c->first, v, c->ns + 1, 0) < 0) goto oom;
  c->ns++;
  return dp_retain(rebuilt);
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return NULL;
}

/* The copies of one function are kept (retained, their values with them)
   until it is done: a key's pointer stays that value's. */
static void forget(sctx *c) {
  for (uint32_t i = 0; i < c->ns; i++) dp_release(c->s[i].copy);
  c->ns = 0;
  dp__ptrmap_free(&c->first);
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
  dp_rewriter rw = {NULL, post, &c};
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    dp_expr *f = dp_rewrite(&m->funcs[i].fn->e, &rw, err);
    int rc = f ? dp_module_set_func(out, m->funcs[i].global->name, (dp_func *)f, err) : -1;
    dp_release(f);
    forget(&c);
    if (rc < 0) {
      dp_release(out);
      out = NULL;
      break;
    }
  }
  free(c.s);
  dp__plan_ops_free(&c.ops);
  return out;
}
