/*
 * The planner's special operators (on_device, device_copy, the memory and
 * VM dialect, call_lowered): their rules (one table for analysis, phase 0b
 * and the verifier), reading their attributes and building the
 * annotations phase 0 and capture insert. New nodes get the checked type
 * of what they wrap (on_device and device_copy are identities on types), so
 * the planned module stays typed and can be planned again.
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"

/* planner.md's table. Ordinary operators are device polymorphic: one fresh
   device per call site, shared by the arguments and the result. */
const dp__oprule dp__op_rules[OP__COUNT] = {
  [OP_ORDINARY] = {NULL, ARG_CALL, ARG_CALL, RES_CALL},
  [OP_ALLOC_STORAGE] = {"memory.alloc_storage", ARG_HOST, ARG_HOST, RES_ATTR},
  [OP_ALLOC_TENSOR] = {"memory.alloc_tensor", ARG_CALL, ARG_HOST, RES_CALL},
  [OP_SHAPE_OF] = {"vm.shape_of", ARG_FREE, ARG_FREE, RES_HOST},
  [OP_RESHAPE_TENSOR] = {"vm.reshape_tensor", ARG_CALL, ARG_HOST, RES_CALL},
  [OP_INVOKE_TVM_OP] = {"vm.invoke_tvm_op", ARG_FREE, ARG_CALL, RES_CALL},
  /* (a call_lowered not of the form call_lowered(@f, (args)) is read as
     an ordinary operator; phase 0b passes no demand through either) */
  [OP_CALL_LOWERED] = {"call_lowered", ARG_CALL, ARG_CALL, RES_CALL},
};

/* The attribute sets the planner builds, one per device pair and kind:
   capture annotates most nodes of a module with a handful of them. */
#define DP__ATTR_CACHE 16
struct dp__attr_cache {
  struct { dp_vdev *a, *b; int kind; dp_attrs *attrs; } e[DP__ATTR_CACHE];
  uint32_t n;
};

int dp__plan_ops(dp_ctx *ctx, struct dp__plan_ops *ops, dp_err **err) {
  *ops = (struct dp__plan_ops){0};
  ops->on_device = dp_op_get(ctx, "on_device");
  ops->device_copy = dp_op_get(ctx, "device_copy");
  if (!ops->on_device || !ops->device_copy) {
    dp_err_set(err, dp_err_new(DP_ERR_NAME, DP_NOSPAN, "operator %s is not registered",
                               ops->on_device ? "device_copy" : "on_device"));
    return -1;
  }
  for (int i = 1; i < OP__COUNT; i++) ops->special[i] = dp_op_get(ctx, dp__op_rules[i].name);
  ops->cache = dp_calloc(1, sizeof *ops->cache);
  if (!ops->cache) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  return 0;
}

int dp__op_rule(const struct dp__plan_ops *ops, const dp_op *op) {
  for (int i = 1; i < OP__COUNT; i++)
    if (op == ops->special[i]) return i;
  return OP_ORDINARY;
}

void dp__plan_ops_free(struct dp__plan_ops *ops) {
  if (!ops->cache) return;
  for (uint32_t i = 0; i < ops->cache->n; i++) dp_release(ops->cache->e[i].attrs);
  free(ops->cache);
  ops->cache = NULL;
}

/* The cached attribute set for (a, b, kind), or NULL. Borrowed. */
static dp_attrs *cached(const struct dp__plan_ops *ops, dp_vdev *a, dp_vdev *b, int kind) {
  struct dp__attr_cache *c = ops->cache;
  if (!c) return NULL;
  for (uint32_t i = 0; i < c->n; i++)
    if (c->e[i].a == a && c->e[i].b == b && c->e[i].kind == kind) return c->e[i].attrs;
  return NULL;
}

/* Remember attrs (new reference, kept by the cache while it has room). */
static void remember(const struct dp__plan_ops *ops, dp_vdev *a, dp_vdev *b, int kind,
                     dp_attrs *attrs) {
  struct dp__attr_cache *c = ops->cache;
  if (!c || c->n == DP__ATTR_CACHE) return;
  /* attrs hold their devices, so the pointers stay valid keys */
  c->e[c->n].a = a;
  c->e[c->n].b = b;
  c->e[c->n].kind = kind;
  c->e[c->n++].attrs = dp_retain(attrs);
}

static int is_call_of(const dp_expr *e, const dp_op *op) {
  return op && e && e->h.kind == DP_CALL && ((const dp_call *)e)->fn == (const dp_expr *)op;
}

static dp_vdev *attr_vdev(const dp_op *op, const dp_attrs *a, const char *key) {
  const dp_aval *v = dp_op_attr(op, a, key);
  if (!v || v->kind != DP_AV_VDEV) return NULL;
  return v->u.vdev;
}

dp_expr *dp__on_device_body(const struct dp__plan_ops *ops, const dp_expr *e) {
  if (!is_call_of(e, ops->on_device) || ((const dp_call *)e)->nargs != 1) return NULL;
  return ((const dp_call *)e)->args[0];
}

double dp__attrs_soft_weight(const dp_attrs *a) {
  for (uint32_t i = 0; a && i < a->n; i++) {
    if (strcmp(a->items[i].key, "soft") != 0) continue;
    const dp_aval *v = &a->items[i].val;
    if (v->kind == DP_AV_FLOAT) return v->u.f >= 0 ? v->u.f : -1;
    if (v->kind == DP_AV_INT) return v->u.i >= 0 ? (double)v->u.i : -1;
  }
  return -1;
}

/* An attribute set the planner built says what it is without a lookup by
   name: capture reads back the annotations it has just made. */
static int built(const struct dp__plan_ops *ops, const dp_attrs *a, dp__ondev *p) {
  const struct dp__attr_cache *c = ops->cache;
  for (uint32_t i = 0; c && i < c->n; i++)
    if (c->e[i].attrs == a && c->e[i].kind < 8) {
      p->vd = c->e[i].a;
      p->cbody = (c->e[i].kind - 1) >> 1 & 1;
      p->cresult = (c->e[i].kind - 1) & 1;
      p->soft = 0; /* (the planner builds none) */
      return 1;
    }
  return 0;
}

int dp__on_device_props(const struct dp__plan_ops *ops, const dp_expr *e, dp__ondev *p) {
  if (!is_call_of(e, ops->on_device)) return 0;
  const dp_call *c = (const dp_call *)e;
  if (c->nargs != 1) return 0;
  p->body = c->args[0];
  if (built(ops, c->attrs, p)) return 1;
  /* one pass over the set, not a lookup by name per field (on_device's
     defaults, as registered: no device, body constrained, result not) */
  p->vd = NULL;
  p->cbody = 1;
  p->cresult = 0;
  for (uint32_t i = 0; c->attrs && i < c->attrs->n; i++) {
    const char *k = c->attrs->items[i].key;
    const dp_aval *v = &c->attrs->items[i].val;
    int flag = v->kind == DP_AV_BOOL || v->kind == DP_AV_INT;
    if (strcmp(k, "virtual_device") == 0) p->vd = v->kind == DP_AV_VDEV ? v->u.vdev : NULL;
    else if (flag && strcmp(k, "constrain_body") == 0) p->cbody = v->u.i != 0;
    else if (flag && strcmp(k, "constrain_result") == 0) p->cresult = v->u.i != 0;
  }
  if (p->vd && dp_vdev_is_fully_unconstrained(p->vd)) p->vd = NULL;
  p->soft = dp__attrs_soft_weight(c->attrs) >= 0;
  return 1;
}

int dp__is_normal_on_device(const struct dp__plan_ops *ops, const dp_expr *e, dp__ondev *p) {
  return dp__on_device_props(ops, e, p) && p->cbody && !p->cresult && p->vd;
}

static int fn_typed(const dp_expr *e) {
  return e->type && e->type->h.kind == DP_TY_FUNC;
}

int dp__fixed_in_place(const struct dp__plan_ops *ops, const dp_expr *value) {
  const dp_expr *body = ((const dp_call *)value)->args[0];
  dp__ondev p;
  return body->h.kind != DP_OP && body->h.kind != DP_CTOR &&
         !dp__on_device_props(ops, body, &p) && !fn_typed(value) && !fn_typed(body);
}

int dp__device_copy_props(const struct dp__plan_ops *ops, const dp_expr *e, dp_expr **body,
                          dp_vdev **src, dp_vdev **dst) {
  if (!is_call_of(e, ops->device_copy)) return 0;
  const dp_call *c = (const dp_call *)e;
  if (c->nargs != 1) return 0;
  *body = c->args[0];
  *src = attr_vdev(ops->device_copy, c->attrs, "src_virtual_device");
  *dst = attr_vdev(ops->device_copy, c->attrs, "dst_virtual_device");
  return 1;
}

int dp__is_lowered(const struct dp__plan_ops *ops, const dp_call *c) {
  return is_call_of(&c->e, ops->special[OP_CALL_LOWERED]) && c->nargs == 2 &&
         c->args[1]->h.kind == DP_TUPLE;
}

uint32_t dp__any_call(const struct dp__plan_ops *ops, const dp_call *c, dp_expr **callee,
                      dp_expr *const **args) {
  if (dp__is_lowered(ops, c)) {
    const dp_tuple *t = (const dp_tuple *)c->args[1];
    *callee = c->args[0];
    *args = t->fields;
    return t->n;
  }
  *callee = c->fn;
  *args = c->args;
  return c->nargs;
}

static dp_expr *typed(dp_expr *e, const dp_expr *like) {
  if (e && !e->type && like->type) e->type = dp_retain(like->type);
  return e;
}

dp_expr *dp__on_device_at(const struct dp__plan_ops *ops, dp_expr *body, dp_vdev *vd, int cbody,
                          int cresult, dp_span span, dp_err **err) {
  if (vd && dp_vdev_is_fully_unconstrained(vd)) vd = NULL;
  int kind = 1 + (cbody ? 2 : 0) + (cresult ? 1 : 0);
  dp_attrs *a = dp_retain(cached(ops, vd, NULL, kind));
  if (!a) {
    dp_attr items[3];
    uint32_t n = 0;
    if (vd) {
      items[n].key = (char *)"virtual_device";
      items[n++].val = dp_av_vdev(vd);
    }
    items[n].key = (char *)"constrain_body";
    items[n++].val = dp_av_bool(cbody);
    items[n].key = (char *)"constrain_result";
    items[n++].val = dp_av_bool(cresult);
    a = dp_op_attrs(ops->on_device, n, items, err);
    if (!a) return NULL;
    remember(ops, vd, NULL, kind, a);
  }
  dp_call *c = dp__call_new_in(ops->arena, (dp_expr *)ops->on_device, 1, &body, a, span);
  dp_release(a);
  if (!c) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  return typed(&c->e, body);
}

/* on_device(body, vd) fixed, at span. An on_device body that constrains
   its own body to the same device merges into one (both say the same);
   on another device it stays inside: the value changes device there, and
   capture puts a copy at that point. */
static dp_expr *fixed(const struct dp__plan_ops *ops, dp_expr *body, dp_vdev *vd, dp_span span,
                      dp_err **err) {
  dp__ondev p;
  if (dp__on_device_props(ops, body, &p) && p.cbody && p.vd == vd)
    return dp__on_device_at(ops, p.body, vd, 1, 1, span, err);
  return dp__on_device_at(ops, body, vd, 1, 1, span, err);
}

dp_expr *dp__on_device_fixed_at(const struct dp__plan_ops *ops, dp_expr *body, dp_vdev *vd,
                                dp_span span, dp_err **err) {
  int k = body->h.kind;
  if (!vd || dp_vdev_is_fully_unconstrained(vd) || k == DP_OP || k == DP_CTOR)
    return dp_retain(body);
  return fixed(ops, body, vd, span, err);
}

/* TVM's MaybeOnDeviceFixed: no annotation on what carries its own device
   (variables, globals, functions) or is device polymorphic (operators,
   constructors). */
dp_expr *dp__maybe_on_device_fixed(const struct dp__plan_ops *ops, dp_expr *body, dp_vdev *vd,
                                   dp_err **err) {
  int k = body->h.kind;
  if (!vd || dp_vdev_is_fully_unconstrained(vd) || k == DP_OP || k == DP_CTOR || k == DP_GLOBAL ||
      k == DP_VAR || k == DP_FUNC)
    return dp_retain(body);
  return fixed(ops, body, vd, body->span, err);
}

dp_expr *dp__device_copy(const struct dp__plan_ops *ops, dp_expr *body, dp_vdev *src,
                         dp_vdev *dst, dp_err **err) {
  dp_attrs *a = dp_retain(cached(ops, src, dst, 8));
  if (!a) {
    dp_attr items[2];
    items[0].key = (char *)"src_virtual_device";
    items[0].val = dp_av_vdev(src);
    items[1].key = (char *)"dst_virtual_device";
    items[1].val = dp_av_vdev(dst);
    a = dp_op_attrs(ops->device_copy, 2, items, err);
    if (!a) return NULL;
    remember(ops, src, dst, 8, a);
  }
  dp_call *c = dp__call_new_in(ops->arena, (dp_expr *)ops->device_copy, 1, &body, a, body->span);
  dp_release(a);
  if (!c) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  return typed(&c->e, body);
}

int dp__is_primitive(const dp_func *f) {
  const dp_aval *v = f->attrs ? dp_attrs_get(f->attrs, "Primitive") : NULL;
  if (!v) return 0;
  if (v->kind == DP_AV_INT || v->kind == DP_AV_BOOL) return v->u.i != 0;
  return 1;
}

/* May a device_copy carry a value of type t? Tensors and tuples of them;
   not a reference (a copy would be another cell: writes through one would
   not reach readers of the other), an ADT, storage or a function. Unknown:
   yes (nothing says otherwise). (Types nest as deep as written.) */
int dp__copyable(const dp_type *t) {
  if (!t || t->h.kind == DP_TY_TENSOR) return 1;
  if (t->h.kind != DP_TY_TUPLE) return 0;
  const dp_tuple_type *tt = (const dp_tuple_type *)t;
  for (uint32_t i = 0; i < tt->n; i++)
    if (!dp__copyable(tt->fields[i])) return 0;
  return 1;
}
