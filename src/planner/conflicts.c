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
 * Requires: the index of the module (index.c), whose walk carried the
 * demands and made the marks (dp__index.marks). Leaves: that index when
 * there are none (the module is returned unchanged, not walked again),
 * else the index of the module with the copies allowed.
 */
#include <stdlib.h>
#include "planner.h"

typedef struct kctx {
  dp__index *ix;
  dp__ptrmap callmarks;      /* call -> its first mark + 1; marks of one call chain through next */
  uint32_t *next;         /* mark -> the call's next mark + 1 */
} kctx;

static dp_expr *post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  kctx *k = ud;
  dp__ptrslot *s = orig->h.kind == DP_CALL ? dp__ptrmap_find(&k->callmarks, orig) : NULL;
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
    dp_expr *kid = kids[1 + mk->pos];
    dp_expr *c = dp__on_device_at(&k->ix->ops, kid, NULL, 0, 0, kid->span, err);
    if (!c) goto done;
    dp_release(kids[1 + mk->pos]);
    kids[1 + mk->pos] = c;
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
  /* a call's marks chained from the last made (the copies nest in that order) */
  for (uint32_t i = 0; i < ix->nmarks; i++) {
    dp_expr *call = ix->x[ix->marks[i].call];
    dp__ptrslot *s = dp__ptrmap_find(&k->callmarks, call);
    k->next[i] = s ? s->val : 0;
    if (s) s->val = i + 1;
    else if (dp__ptrmap_set(&k->callmarks, call, i + 1, 0) < 0) goto oom;
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

dp__index *dp__conflicts(dp__index *ix, dp_err **err) {
  if (!ix->nmarks) return ix;
  kctx k = {ix, {0}, dp_malloc(ix->nmarks * sizeof *k.next)};
  dp_module *out = k.next ? with_copies(&k, err) : NULL;
  if (!k.next) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  dp__index *next = out ? dp__index_new(out, ix->dev.cfg, err) : NULL;
  dp_release(out);
  free(k.next);
  dp__ptrmap_free(&k.callmarks);
  dp__index_free(ix);
  return next;
}
