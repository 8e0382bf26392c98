/*
 * Soft annotations (issue 24): on_device(e, virtual_device=D, soft=W), a
 * preference of weight W for D instead of a constraint. The placements by
 * cost weigh it (latency: W seconds; min_bytes: W bytes) and break it only
 * where that saves more than W; TVM's rules have no costs to weigh it
 * against and read it as the annotation it would be without `soft`.
 *
 * Here: reading the weight, and rewriting a module's soft annotations away
 * (each becomes its body: the placement by cost decides) or into ordinary
 * ones (each becomes a hard on_device), for the plans the latency
 * placement compares.
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"

double dp__soft_weight(const struct dp__plan_ops *ops, const dp_expr *e) {
  if (!ops->on_device || e->h.kind != DP_CALL || ((const dp_call *)e)->fn != (const dp_expr *)ops->on_device)
    return -1;
  return dp__attrs_soft_weight(((const dp_call *)e)->attrs);
}

typedef struct sctx {
  struct dp__plan_ops ops;
  int harden;
  uint32_t found;
} sctx;

static dp_expr *rw_pre(void *ud, dp_expr *orig, dp_err **err) {
  (void)ud;
  (void)err;
  if (orig->h.kind == DP_FUNC && dp__is_primitive((dp_func *)orig)) return dp_retain(orig);
  return NULL;
}

static dp_expr *rw_post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  sctx *c = ud;
  if (dp__soft_weight(&c->ops, orig) < 0) {
    /* (what an annotation wraps keeps its type, and so every node rebuilt) */
    if (!rebuilt->type && orig->type) dp_expr_set_type(rebuilt, orig->type);
    return dp_retain(rebuilt);
  }
  dp_expr *body = ((dp_call *)rebuilt)->args[0];
  if (!c->harden) return dp_retain(body);
  dp__ondev p;
  dp__on_device_props(&c->ops, orig, &p);
  return dp__on_device_at(&c->ops, body, p.vd, p.cbody, p.cresult, orig->span, err);
}

/* Leaves hold no annotation and are not walked: most shared nodes are
   leaves (operators, a parameter every call reads), and the set of nodes
   seen would be asked about each. */
static int leaf(const dp_expr *e) {
  int k = e->h.kind;
  return k == DP_OP || k == DP_VAR || k == DP_CONST || k == DP_GLOBAL || k == DP_CTOR;
}

/* The shared nodes seen by one walk: each is found again by its mark
   (dp_expr.mark: its index in v, checked against v, so a mark left by
   another walk names no node here or not this one), as the index's
   numbering does: no hashing on a module whose nodes are mostly shared. */
typedef struct seen_set { dp_expr **v; uint32_t n, cap; } seen_set;

/* Is kid to be walked: no leaf, and a shared node only the first time
   (marked then)? -1 out of memory. */
static inline int fresh(seen_set *seen, dp_expr *kid) {
  if (leaf(kid)) return 0;
  if (kid->h.rc > 1) {
    uint32_t m = kid->mark;
    if (m < seen->n && seen->v[m] == kid) return 0;
    if (seen->n == seen->cap && dp_grow((void **)&seen->v, &seen->cap, seen->n + 1, sizeof *seen->v) < 0)
      return -1;
    kid->mark = seen->n;
    seen->v[seen->n++] = kid;
  }
  return 1;
}

typedef struct stack { dp_expr **v; uint32_t n, cap; } stack;

/* Pushes kid when it is to be walked; -1 out of memory. */
static inline int push(stack *st, seen_set *seen, dp_expr *kid) {
  int f = fresh(seen, kid);
  if (f <= 0) return f;
  if (st->n == st->cap && dp_grow((void **)&st->v, &st->cap, st->n + 1, sizeof *st->v) < 0) return -1;
  st->v[st->n++] = kid;
  return 0;
}

/* Counts the soft annotations of m (not inside primitive functions): an
   explicit stack (a let's body is walked next without it), a set for the
   shared nodes only. -1 out of memory. */
static int count(dp_module *m, sctx *c, dp_err **err) {
  stack st = {0};
  seen_set seen = {0};
  int rc = 0;
  for (uint32_t i = 0; rc == 0 && i < m->nfuncs; i++) {
    if (push(&st, &seen, &m->funcs[i].fn->e) < 0) rc = -1;
    while (rc == 0 && st.n) {
      dp_expr *e = st.v[--st.n];
      while (e && rc == 0) {
        dp_expr *next = NULL;
        if (e->h.kind == DP_CALL) { /* (most nodes: read in place) */
          dp_call *call = (dp_call *)e;
          /* (the callee compared here first: most calls are of an operator
             other than on_device, and dp__soft_weight is a call) */
          if (call->fn == (const dp_expr *)c->ops.on_device &&
              dp__soft_weight(&c->ops, e) >= 0)
            c->found++;
          if (push(&st, &seen, call->fn) < 0) rc = -1;
          for (uint32_t k = 0; rc == 0 && k < call->nargs; k++)
            if (push(&st, &seen, call->args[k]) < 0) rc = -1;
        } else if (e->h.kind == DP_LET) { /* the value on the stack, the body next */
          dp_let *let = (dp_let *)e;
          int f = fresh(&seen, let->body);
          if (push(&st, &seen, let->value) < 0 || f < 0) rc = -1;
          else if (f) next = let->body;
        } else if (!(e->h.kind == DP_FUNC && dp__is_primitive((dp_func *)e))) {
          uint32_t nk = dp_expr_nchildren(e);
          for (uint32_t k = 0; rc == 0 && k < nk; k++)
            if (push(&st, &seen, dp_expr_child(e, k)) < 0) rc = -1;
        }
        e = next;
      }
    }
  }
  free(st.v);
  free(seen.v);
  if (rc < 0) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return rc;
}

int dp__soft_count(dp_module *m, uint32_t *found, dp_err **err) {
  sctx c = {0};
  *found = 0;
  if (dp__plan_ops(m->ctx, &c.ops, err) < 0) return -1;
  int rc = count(m, &c, err);
  dp__plan_ops_free(&c.ops);
  *found = c.found;
  return rc;
}

dp_module *dp__soft_rewrite(dp_module *m, int harden, uint32_t *found, dp_err **err) {
  sctx c = {.harden = harden};
  *found = 0;
  if (dp__plan_ops(m->ctx, &c.ops, err) < 0) return NULL;
  if (count(m, &c, err) < 0) {
    dp__plan_ops_free(&c.ops);
    return NULL;
  }
  *found = c.found;
  dp_module *out = c.found ? dp_module_copy(m) : dp_retain(m);
  if (!out) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  dp_rewriter rw = {rw_pre, rw_post, &c};
  for (uint32_t i = 0; out && c.found && i < m->nfuncs; i++) {
    if (dp__is_primitive(m->funcs[i].fn)) continue;
    dp_expr *f = dp_rewrite(&m->funcs[i].fn->e, &rw, err);
    int rc = f ? dp_module_set_func(out, m->funcs[i].global->name, (dp_func *)f, err) : -1;
    dp_release(f);
    if (rc < 0) {
      dp_release(out);
      out = NULL;
    }
  }
  dp__plan_ops_free(&c.ops);
  return out;
}
