/*
 * The planner's special operators (on_device, device_copy, the memory and
 * VM dialect, call_lowered): looking them up, reading their attributes and
 * building the annotations capture inserts. New nodes get the checked type
 * of what they wrap (on_device and device_copy are identities on types), so
 * the planned module stays typed and can be planned again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"

int dp__plan_ops(dp_ctx *ctx, struct dp_plan_ops *ops, dp_err **err) {
  static const char *names[] = {"on_device", "device_copy", "memory.alloc_storage",
                                "memory.alloc_tensor", "vm.shape_of", "vm.reshape_tensor",
                                "vm.invoke_tvm_op", "call_lowered"};
  dp_op **slots[] = {&ops->on_device, &ops->device_copy, &ops->alloc_storage,
                     &ops->alloc_tensor, &ops->shape_of, &ops->reshape_tensor,
                     &ops->invoke_tvm_op, &ops->call_lowered};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    *slots[i] = dp_op_get(ctx, names[i]);
    if (!*slots[i] && i < 2) {
      dp_err_set(err, dp_err_new(DP_ERR_NAME, DP_NOSPAN, "operator %s is not registered", names[i]));
      return -1;
    }
  }
  ops->cache = dp_calloc(1, sizeof *ops->cache);
  if (!ops->cache) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  return 0;
}

void dp__plan_ops_free(struct dp_plan_ops *ops) {
  if (!ops->cache) return;
  for (uint32_t i = 0; i < ops->cache->n; i++) dp_release(ops->cache->e[i].attrs);
  dp_release(ops->cache->pattrs);
  free(ops->cache);
  ops->cache = NULL;
}

/* The cached attribute set for (a, b, kind), or NULL. Borrowed. */
static dp_attrs *cached(const struct dp_plan_ops *ops, dp_vdev *a, dp_vdev *b, int kind) {
  struct dp_attr_cache *c = ops->cache;
  if (!c) return NULL;
  for (uint32_t i = 0; i < c->n; i++)
    if (c->e[i].a == a && c->e[i].b == b && c->e[i].kind == kind) return c->e[i].attrs;
  return NULL;
}

/* Remember attrs (new reference, kept by the cache while it has room). */
static void remember(const struct dp_plan_ops *ops, dp_vdev *a, dp_vdev *b, int kind,
                     dp_attrs *attrs) {
  struct dp_attr_cache *c = ops->cache;
  if (!c || c->n == DP_ATTR_CACHE) return;
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

static int attr_bool(const dp_op *op, const dp_attrs *a, const char *key, int dflt) {
  const dp_aval *v = dp_op_attr(op, a, key);
  if (!v || (v->kind != DP_AV_BOOL && v->kind != DP_AV_INT)) return dflt;
  return v->u.i != 0;
}

int dp__on_device_props(const struct dp_plan_ops *ops, const dp_expr *e, dp_ondev *p) {
  if (!is_call_of(e, ops->on_device)) return 0;
  const dp_call *c = (const dp_call *)e;
  if (c->nargs != 1) return 0;
  p->body = c->args[0];
  struct dp_attr_cache *m = ops->cache;
  if (m && c->attrs && m->pattrs == c->attrs) {
    p->vd = m->pvd;
    p->cbody = m->pcbody;
    p->cresult = m->pcresult;
    return 1;
  }
  p->vd = attr_vdev(ops->on_device, c->attrs, "virtual_device");
  if (p->vd && dp_vdev_is_fully_unconstrained(p->vd)) p->vd = NULL;
  p->cbody = attr_bool(ops->on_device, c->attrs, "constrain_body", 1);
  p->cresult = attr_bool(ops->on_device, c->attrs, "constrain_result", 0);
  if (m && c->attrs) {
    dp_release(m->pattrs);
    m->pattrs = dp_retain(c->attrs);
    m->pvd = p->vd; /* held by the attribute set */
    m->pcbody = p->cbody;
    m->pcresult = p->cresult;
  }
  return 1;
}

int dp__device_copy_props(const struct dp_plan_ops *ops, const dp_expr *e, dp_expr **body,
                          dp_vdev **src, dp_vdev **dst) {
  if (!is_call_of(e, ops->device_copy)) return 0;
  const dp_call *c = (const dp_call *)e;
  if (c->nargs != 1) return 0;
  *body = c->args[0];
  *src = attr_vdev(ops->device_copy, c->attrs, "src_virtual_device");
  *dst = attr_vdev(ops->device_copy, c->attrs, "dst_virtual_device");
  return 1;
}

uint32_t dp__any_call(const struct dp_plan_ops *ops, const dp_call *c, dp_expr **callee,
                      dp_expr *const **args) {
  if (is_call_of(&c->e, ops->call_lowered) && c->nargs == 2 &&
      c->args[1]->h.kind == DP_TUPLE) {
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

dp_expr *dp__on_device_at(const struct dp_plan_ops *ops, dp_expr *body, dp_vdev *vd, int cbody,
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
  dp_call *c = dp_call_new((dp_expr *)ops->on_device, 1, &body, a, span);
  dp_release(a);
  if (!c) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  return typed(&c->e, body);
}

dp_expr *dp__on_device(const struct dp_plan_ops *ops, dp_expr *body, dp_vdev *vd, int cbody,
                       int cresult, dp_err **err) {
  return dp__on_device_at(ops, body, vd, cbody, cresult, body->span, err);
}

/* on_device(body, vd) fixed, at span. An on_device body that constrains
   its own body to the same device merges into one (both say the same);
   on another device it stays inside: the value changes device there, and
   capture puts a copy at that point. */
static dp_expr *fixed(const struct dp_plan_ops *ops, dp_expr *body, dp_vdev *vd, dp_span span,
                      dp_err **err) {
  dp_ondev p;
  if (dp__on_device_props(ops, body, &p) && p.cbody && p.vd == vd)
    return dp__on_device_at(ops, p.body, vd, 1, 1, span, err);
  return dp__on_device_at(ops, body, vd, 1, 1, span, err);
}

dp_expr *dp__on_device_fixed_at(const struct dp_plan_ops *ops, dp_expr *body, dp_vdev *vd,
                                dp_span span, dp_err **err) {
  int k = body->h.kind;
  if (!vd || dp_vdev_is_fully_unconstrained(vd) || k == DP_OP || k == DP_CTOR)
    return dp_retain(body);
  return fixed(ops, body, vd, span, err);
}

/* TVM's MaybeOnDeviceFixed: no annotation on what carries its own device
   (variables, globals, functions) or is device polymorphic (operators,
   constructors). */
dp_expr *dp__maybe_on_device_fixed(const struct dp_plan_ops *ops, dp_expr *body, dp_vdev *vd,
                                   dp_err **err) {
  int k = body->h.kind;
  if (!vd || dp_vdev_is_fully_unconstrained(vd) || k == DP_OP || k == DP_CTOR || k == DP_GLOBAL ||
      k == DP_VAR || k == DP_FUNC)
    return dp_retain(body);
  return fixed(ops, body, vd, body->span, err);
}

dp_expr *dp__device_copy(const struct dp_plan_ops *ops, dp_expr *body, dp_vdev *src,
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
  dp_call *c = dp_call_new((dp_expr *)ops->device_copy, 1, &body, a, body->span);
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

char *dp__vdev_short(const dp_vdev *v) {
  char buf[256];
  if (!v || dp_vdev_is_fully_unconstrained(v)) return dp_strdup("an unconstrained device");
  const char *dt = v->device_type ? dp_device_type_name(v->device_type) : NULL;
  int n = snprintf(buf, sizeof buf, "%s", dt ? dt : (v->device_type ? "?" : "any device"));
  if (v->virtual_device_id > 0)
    n += snprintf(buf + n, sizeof buf - n, ":%d", v->virtual_device_id);
  if (v->memory_scope && v->memory_scope[0])
    snprintf(buf + n, sizeof buf - n, " (memory scope \"%s\")", v->memory_scope);
  return dp_strdup(buf);
}
