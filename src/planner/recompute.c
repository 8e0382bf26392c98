/*
 * Recompute instead of copy (include/devplan/move.h): in a planned module,
 * a copy of a value that costs next to nothing to compute again on the
 * destination is replaced by that computation there.
 *
 * What qualifies (its cost bound: at most RECOMPUTE_MAX_CALLS operator
 * calls computed again for one copy):
 *   - a constant (a new constant node on the destination);
 *   - zeros, ones and full (any registered operator of those names) of
 *     arguments that qualify themselves;
 *   - a view or shape of something already there: reshape, expand_dims,
 *     squeeze, broadcast_to, reshape_like, zeros_like, ones_like, shape_of,
 *     of arguments that qualify themselves, or that are variables (a
 *     parameter, a let) living on the destination;
 *   - a let variable whose value qualifies (computed again from there);
 *   - a copy from the destination of what qualifies (the value before it
 *     was copied away).
 * A copy is kept where dropping it would move the value it copies into a
 * function literal (its other readers all there: it would run on every
 * call instead of once, and its own copies with it); a value computed from
 * nothing runs no copy, and its copies always go. Nothing else moves: the recomputation stands where
 * the copy stood (the
 * copies of one value to one device in a function share one, which the
 * text format binds where it dominates them, as ShareCopies does), and a
 * variable already on the destination is read where it is bound.
 *
 * Placement by cost is told (dp_recompute_free, its hook): the nets of
 * values that qualify with no input at all (constants, zeros, ones, full of
 * constants) weigh nothing, so the optimiser does not move other values to
 * spare such a copy. The module is planned once more by TVM's rules at the
 * end, as MoveCopies does (the recomputations carry their device).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"

#define RECOMPUTE_MAX_CALLS 4

static int one_of(const char *name, const char *const *list) {
  for (; *list; list++)
    if (strcmp(name, *list) == 0) return 1;
  return 0;
}

static const char *const CREATE[] = {"zeros", "ones", "full", NULL};
static const char *const VIEWS[] = {"reshape", "expand_dims", "squeeze", "broadcast_to", "reshape_like",
                                    "zeros_like", "ones_like", "shape_of", NULL};

static const char *op_name(const dp_expr *e) {
  if (e->h.kind != DP_CALL) return NULL;
  const dp_expr *f = ((const dp_call *)e)->fn;
  return f->h.kind == DP_OP ? ((const dp_op *)f)->name : NULL;
}

/* A value computed from nothing: a constant, or zeros, ones, full of such
   values (at most RECOMPUTE_MAX_CALLS calls; explicit stack). */
int dp_recompute_free(dp_expr *value) {
  dp_expr *stack[RECOMPUTE_MAX_CALLS * 4 + 4];
  uint32_t n = 0, calls = 0;
  stack[n++] = value;
  while (n) {
    dp_expr *e = stack[--n];
    if (e->h.kind == DP_CONST) continue;
    const char *op = op_name(e);
    if (!op || !one_of(op, CREATE) || ++calls > RECOMPUTE_MAX_CALLS) return 0;
    const dp_call *c = (const dp_call *)e;
    if (n + c->nargs > sizeof stack / sizeof *stack) return 0;
    for (uint32_t i = 0; i < c->nargs; i++) stack[n++] = c->args[i];
  }
  return 1;
}

typedef struct rctx {
  struct dp__plan_ops ops;
  dp_domains *d;          /* the planned module's devices */
  dp__mfun f;             /* this function's scopes (a copy dropped must not move its value) */
  dp__ptrmap letval;      /* let variable -> its value (this function) */
  dp_recomputes *out;
  const char *fn;
  dp_err *err;
  /* this function's recomputations, one per value and device (owned) */
  struct { dp_expr *value; dp_vdev *dst; dp_expr *made; } *done;
  uint32_t ndone, capdone;
} rctx;

static dp_expr *strip(rctx *c, dp_expr *e) {
  dp_expr *b;
  while ((b = dp__on_device_body(&c->ops, e))) e = b;
  return e;
}

static int bind_lets(void *ud, dp_expr *e) {
  rctx *c = ud;
  if (e->h.kind == DP_LET && dp__ptrmap_put(&c->letval, ((dp_let *)e)->var, ((dp_let *)e)->value) < 0) {
    c->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    return -1;
  }
  return 0;
}

/* Is variable x on device dst (canonical, interned)? */
static int on(rctx *c, dp_expr *x, dp_vdev *dst) {
  dp_err *e = NULL;
  dp_vdev *v = dp_domains_lookup(c->d, x, &e);
  if (!v && e && e->code == DP_ERR_MEMORY && !c->err) c->err = e; /* (rebuild returns NULL, err set) */
  else dp_err_free(e);
  int same = v == dst;
  dp_release(v);
  return same;
}

/* e computed on dst from what is there: a new expression, NULL when it
   does not qualify (*calls counts the operator calls). Recursion is bounded
   by RECOMPUTE_MAX_CALLS (and a let chain by the same count). */
static dp_expr *rebuild(rctx *c, dp_expr *e, dp_vdev *dst, uint32_t *calls, uint32_t depth) {
  if (depth > RECOMPUTE_MAX_CALLS * 2) return NULL;
  e = strip(c, e);
  if (e->h.kind == DP_CONST) {
    const dp_const *k = (const dp_const *)e;
    dp_const *r = dp_const_new(k->dtype, k->ndim, k->shape, k->data, e->span, NULL);
    if (r && e->type) r->e.type = dp_retain(e->type);
    if (!r) c->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    return r ? &r->e : NULL;
  }
  if (e->h.kind == DP_VAR) {
    dp__ptrslot *s = dp__ptrmap_find(&c->letval, e);
    if (s) {
      dp_expr *r = rebuild(c, s->ptr, dst, calls, depth + 1);
      if (r || c->err) return r;
    }
    return on(c, e, dst) ? dp_retain(e) : NULL;
  }
  dp_expr *z;
  dp_vdev *s2, *d2;
  if (dp__device_copy_props(&c->ops, e, &z, &s2, &d2) && s2 == dst) /* what was copied away from there */
    return rebuild(c, z, dst, calls, depth + 1);
  const char *op = op_name(e);
  if (!op || !(one_of(op, CREATE) || one_of(op, VIEWS)) || ++*calls > RECOMPUTE_MAX_CALLS) return NULL;
  dp_call *call = (dp_call *)e;
  dp_expr *small[4], **args = call->nargs <= 4 ? small : dp_calloc(call->nargs, sizeof *args);
  dp_expr *r = NULL;
  uint32_t i = 0;
  if (!args) {
    c->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    return NULL;
  }
  for (; i < call->nargs; i++)
    if (!(args[i] = rebuild(c, call->args[i], dst, calls, depth + 1))) goto done;
  r = (dp_expr *)dp_call_new(call->fn, call->nargs, args, call->attrs, e->span);
  if (!r) c->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  else if (e->type) r->type = dp_retain(e->type);
done:
  for (uint32_t k = 0; k < i; k++) dp_release(args[k]);
  if (args != small) free(args);
  return r;
}

static int note(rctx *c, dp_expr *value, dp_vdev *src, dp_vdev *dst, uint32_t calls) {
  dp_recomputes *o = c->out;
  if (!o) return 0;
  if (dp_grow((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v) < 0) return -1;
  dp_recompute *r = &o->v[o->n];
  *r = (dp_recompute){NULL, dp_strdup(c->fn), value->span, dp_retain(src), dp_retain(dst), calls};
  if (value->h.kind == DP_VAR) {
    size_t n = strlen(((dp_var *)value)->name) + 2;
    if ((r->value = dp_malloc(n))) snprintf(r->value, n, "%%%s", ((dp_var *)value)->name);
  } else {
    const char *op = op_name(value);
    r->value = dp_strdup(op ? op : value->h.kind == DP_CONST ? "a constant" : dp_exprkind_name(value->h.kind));
  }
  o->n++;
  if (!r->value || !r->fn) return -1;
  return 0;
}

static dp_expr *post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  rctx *c = ud;
  if (!rebuilt->type && orig->type) rebuilt->type = dp_retain(orig->type);
  dp_expr *x;
  dp_vdev *src, *dst;
  if (!dp__device_copy_props(&c->ops, rebuilt, &x, &src, &dst) || !src || !dst || src == dst)
    return dp_retain(rebuilt);
  uint32_t calls = 0;
  dp_expr *value = strip(c, ((dp_call *)orig)->args[0]);
  /* the value copied loses this reader: it must not then run more often
     where that runs copies (a value computed from nothing has none: its
     copies always go, as placement by cost counted them) */
  int put = dp_recompute_free(value) ? 1 : dp__mfun_stays_put(&c->ops, &c->f, dp__mfun_id(&c->f, orig));
  if (put < 0) {
    *err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    return NULL;
  }
  if (!put) return dp_retain(rebuilt);
  for (uint32_t i = 0; i < c->ndone; i++) /* (one recomputation per value and device) */
    if (c->done[i].value == value && c->done[i].dst == dst) return dp_retain(c->done[i].made);
  dp_expr *r = rebuild(c, value, dst, &calls, 0);
  if (!r) {
    if (c->err) {
      *err = c->err;
      c->err = NULL;
      return NULL;
    }
    return dp_retain(rebuilt);
  }
  dp_expr *pinned = dp__maybe_on_device_fixed(&c->ops, r, dst, err);
  dp_release(r);
  if (pinned && (note(c, value, src, dst, calls) < 0 ||
                 dp_grow((void **)&c->done, &c->capdone, c->ndone + 1, sizeof *c->done) < 0)) {
    dp_release(pinned);
    *err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    return NULL;
  }
  if (pinned) {
    c->done[c->ndone].value = value;
    c->done[c->ndone].dst = dst;
    c->done[c->ndone++].made = dp_retain(pinned);
  }
  return pinned;
}

void dp_recomputes_clear(dp_recomputes *r) {
  for (uint32_t i = 0; i < r->n; i++) {
    free(r->v[i].value);
    free(r->v[i].fn);
    dp_release(r->v[i].src);
    dp_release(r->v[i].dst);
  }
  free(r->v);
  *r = (dp_recomputes){0};
}

/* One round over every function: the module (a new reference; planned
   again when anything was recomputed), or NULL + error. */
static dp_module *round_of(rctx *c, dp_module *planned, const dp_config *cfg, dp_err **err) {
  dp_module *m = NULL, *norm = NULL;
  uint32_t before = c->out->n;
  if (!(c->d = dp_plan_domains(planned, cfg, NULL, NULL, err))) goto done;
  if (!(m = dp_module_copy(planned))) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    goto done;
  }
  for (uint32_t g = 0; g < planned->nfuncs; g++) {
    dp_expr *f = &planned->funcs[g].fn->e;
    if (dp__is_primitive((dp_func *)f)) continue;
    c->fn = planned->funcs[g].global->name;
    dp_visitor v = {NULL, bind_lets, c};
    dp_rewriter rw = {NULL, post, c};
    dp_expr *nf = NULL;
    if (dp__mfun_init(&c->f, f, c->fn, err) < 0) goto done;
    if (dp_visit(f, &v) == 0) nf = dp_rewrite(f, &rw, err);
    else if (!c->err) c->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    dp__mfun_free(&c->f);
    dp__ptrmap_free(&c->letval);
    for (uint32_t i = 0; i < c->ndone; i++) dp_release(c->done[i].made);
    c->ndone = 0;
    if (!nf && c->err) {
      dp_err_set(err, c->err);
      c->err = NULL;
    }
    int rc = nf ? dp_module_set_func(m, c->fn, (dp_func *)nf, err) : -1;
    dp_release(nf);
    if (rc < 0) goto done;
  }
  if (c->out->n > before) {
    /* the planned form, by TVM's rules, which change no device here */
    if (dp_infer_module(m, err) == 0) norm = dp_plan_devices(m, cfg, err);
  } else {
    norm = dp_retain(planned);
  }
done:
  dp_release(m);
  dp_release(c->d);
  c->d = NULL;
  return norm;
}

/* Rounds until one recomputes nothing more (a copy kept because its value
   had a reader in a function literal may go once that reader's copy was
   recomputed): at most RECOMPUTE_ROUNDS. */
#define RECOMPUTE_ROUNDS 4

dp_module *dp_plan_recompute(dp_module *planned, const dp_config *cfg, dp_recomputes *out, dp_err **err) {
  rctx c = {0};
  dp_recomputes mine = {0};
  if (out) *out = (dp_recomputes){0};
  c.out = out ? out : &mine;
  if (dp__plan_ops(planned->ctx, &c.ops, err) < 0) return NULL;
  dp_module *m = dp_retain(planned);
  for (int r = 0; m && r < RECOMPUTE_ROUNDS; r++) {
    uint32_t before = c.out->n;
    dp_module *next = round_of(&c, m, cfg, err);
    dp_release(m);
    m = next;
    if (c.out->n == before) break;
  }
  free(c.done);
  dp__plan_ops_free(&c.ops);
  dp_err_free(c.err);
  if (!m && out) dp_recomputes_clear(out);
  dp_recomputes_clear(&mine);
  return m;
}
