/*
 * The operators the device planner knows (planner.md): on_device and
 * device_copy (they keep their argument's type: DP_OPF_IDENTITY), the
 * memory.* and vm.* operators of lowered programs, and call_lowered (its
 * callee, a primfn global, is typed by inference from the module's primfn
 * declaration; the relation returns that function type's result).
 */
#include <string.h>
#include "ops_internal.h"

#define OP ((const dp_op *)ud)
#define TENSOR(i) const dp_tensor_type *t##i = dp__arg_tensor(args, i, OP, err); if (!t##i) return NULL

static dp_type *identity_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                             const dp_attrs *attrs, void *ud, dp_err **err) {
  return dp_retain(args[0]);
}

/* on_device: its argument's type. A soft annotation (soft=W, devplan's: a
   preference of weight W instead of a constraint, issue 24) names a
   device, constrains its body only, and weighs W >= 0. */
static dp_type *on_device_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                              const dp_attrs *attrs, void *ud, dp_err **err) {
  const dp_aval *w = dp_op_attr(OP, attrs, "soft");
  if (w && w->kind != DP_AV_NONE) {
    double x = w->kind == DP_AV_FLOAT ? w->u.f : w->kind == DP_AV_INT ? (double)w->u.i : -1;
    const dp_aval *vd = dp_op_attr(OP, attrs, "virtual_device");
    const dp_aval *cb = dp_op_attr(OP, attrs, "constrain_body");
    const dp_aval *cr = dp_op_attr(OP, attrs, "constrain_result");
    if (!(x >= 0) || x > 1e300)
      return dp__rel_fail(err, OP, "soft must be a weight >= 0 (seconds under the latency placement, "
                          "bytes under min_bytes)");
    if (!vd || vd->kind != DP_AV_VDEV || !vd->u.vdev || vd->u.vdev->device_type == 0)
      return dp__rel_fail(err, OP, "a soft annotation needs a virtual_device with a device type");
    if ((cr && cr->kind == DP_AV_BOOL && cr->u.i) || (cb && cb->kind == DP_AV_BOOL && !cb->u.i))
      return dp__rel_fail(err, OP, "a soft annotation constrains its body only "
                          "(constrain_body=True, constrain_result=False)");
  }
  return dp_retain(args[0]);
}

/* An integer scalar or 1-D shape tensor argument. */
static int is_int_tensor(const dp_type *t, uint32_t ndim) {
  const dp_tensor_type *tt = (const dp_tensor_type *)t;
  return t->h.kind == DP_TY_TENSOR && tt->ndim == ndim &&
         (DP_DTYPE_CODE(tt->dtype) == DP_DT_INT || DP_DTYPE_CODE(tt->dtype) == DP_DT_UINT);
}

static dp_type *alloc_storage_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                  const dp_attrs *attrs, void *ud, dp_err **err) {
  if (nargs != 2 && nargs != 3)
    return dp__rel_fail(err, OP, "expects (size, alignment) or (size, shape, alignment)");
  if (!is_int_tensor(args[0], 0) || !is_int_tensor(args[nargs - 1], 0))
    return dp__rel_fail(err, OP, "size and alignment must be integer scalars");
  if (nargs == 3 && !is_int_tensor(args[1], 1))
    return dp__rel_fail(err, OP, "shape must be a 1-D integer tensor");
  return dp_type_storage(ctx);
}

/* The constant shape of alloc_tensor's const_shape attribute, if any. */
static int const_shape(const dp_aval *v, int64_t *dims, uint32_t *n) {
  if (!v || v->kind != DP_AV_EXPR || !v->u.expr || v->u.expr->h.kind != DP_CONST) return 0;
  const dp_const *c = (const dp_const *)v->u.expr;
  if (c->ndim != 1 || c->shape[0] > DP__MAXDIM) return -1;
  *n = (uint32_t)c->shape[0];
  for (uint32_t i = 0; i < *n; i++) {
    if (c->dtype == DP_INT64) dims[i] = ((const int64_t *)c->data)[i];
    else if (c->dtype == DP_INT32) dims[i] = ((const int32_t *)c->data)[i];
    else return -1;
  }
  return 1;
}

static dp_type *alloc_tensor_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                 const dp_attrs *attrs, void *ud, dp_err **err) {
  if (args[0]->h.kind != DP_TY_STORAGE) return dp__rel_fail(err, OP, "argument 1 must be Storage[]");
  if (!is_int_tensor(args[1], 0)) return dp__rel_fail(err, OP, "offset must be an integer scalar");
  if (!is_int_tensor(args[2], 1)) return dp__rel_fail(err, OP, "shape must be a 1-D integer tensor");
  dp_dtype dt = dp__attr_dtype(OP, attrs, "dtype", DP_FLOAT32);
  int64_t dims[DP__MAXDIM];
  uint32_t n = 0;
  int k = const_shape(dp_op_attr(OP, attrs, "const_shape"), dims, &n);
  if (k < 0) return dp__rel_fail(err, OP, "const_shape must be a 1-D integer constant");
  if (k == 0) {
    int m = dp__attr_ints(OP, attrs, "assert_shape", dims, DP__MAXDIM);
    if (m >= 0) n = (uint32_t)m;
    else {
      int64_t rank = ((const dp_tensor_type *)args[2])->dims[0];
      if (rank < 0 || rank > DP__MAXDIM) return dp__rel_fail(err, OP, "the rank of the shape is unknown");
      n = (uint32_t)rank;
      for (uint32_t i = 0; i < n; i++) dims[i] = DP_DIM_ANY;
    }
  }
  return dp__rel_tensor(ctx, OP, dt, n, dims, 0, err);
}

static dp_type *shape_of_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                             const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  int64_t n = t0->ndim;
  return dp__rel_tensor(ctx, OP, dp__attr_dtype(OP, attrs, "dtype", DP_INT64), 1, &n, 0, err);
}

static dp_type *reshape_tensor_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                   const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  if (!is_int_tensor(args[1], 1)) return dp__rel_fail(err, OP, "shape must be a 1-D integer tensor");
  int64_t dims[DP__MAXDIM];
  int n = dp__attr_ints(OP, attrs, "newshape", dims, DP__MAXDIM);
  if (n < 0) {
    int64_t rank = ((const dp_tensor_type *)args[1])->dims[0];
    if (rank < 0 || rank > DP__MAXDIM) return dp__rel_fail(err, OP, "the rank of the shape is unknown");
    n = (int)rank;
    for (int i = 0; i < n; i++) dims[i] = DP_DIM_ANY;
  }
  for (int i = 0; i < n; i++)
    if (dims[i] < 0) dims[i] = DP_DIM_ANY;
  return dp__rel_tensor(ctx, OP, t0->dtype, (uint32_t)n, dims, 0, err);
}

static dp_type *invoke_tvm_op_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                  const dp_attrs *attrs, void *ud, dp_err **err) {
  if (args[0]->h.kind != DP_TY_FUNC) return dp__rel_fail(err, OP, "argument 1 must be a function");
  return dp_type_tuple(ctx, 0, NULL);
}

static dp_type *call_lowered_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                 const dp_attrs *attrs, void *ud, dp_err **err) {
  char a[256], b[256];
  if (args[0]->h.kind != DP_TY_FUNC) return dp__rel_fail(err, OP, "argument 1 must be a lowered function");
  if (args[1]->h.kind != DP_TY_TUPLE) return dp__rel_fail(err, OP, "argument 2 must be a tuple of arguments");
  const dp_func_type *f = (const dp_func_type *)args[0];
  const dp_tuple_type *t = (const dp_tuple_type *)args[1];
  int ok = f->nargs == t->n;
  for (uint32_t i = 0; ok && i < t->n; i++) ok = f->items[f->ntparams + i] == t->fields[i];
  if (!ok)
    return dp__rel_fail(err, OP, "arguments %s do not match %s", dp__type_brief(args[1], a, sizeof a),
                        dp__type_brief(args[0], b, sizeof b));
  return dp_retain(f->ret);
}

static const dp__opdef defs[] = {
  {"on_device", 1, DP_OPF_IDENTITY | DP_OPF_CHECK_ATTRS,
   "virtual_device:vdev constrain_body:bool=True constrain_result:bool=False soft:float=None",
   on_device_rel, K_OPAQUE},
  {"device_copy", 1, DP_OPF_IDENTITY, "src_virtual_device:vdev dst_virtual_device:vdev", identity_rel, K_OPAQUE},
  {"memory.alloc_storage", -1, 0, "virtual_device:vdev dtype_hint:dtype=float32", alloc_storage_rel, K_OPAQUE},
  {"memory.alloc_tensor", 3, 0, "dtype:dtype=float32 const_shape:any=None assert_shape:ints=None",
   alloc_tensor_rel, K_OPAQUE},
  {"vm.shape_of", 1, 0, "dtype:dtype=", shape_of_rel, K_OPAQUE},
  {"vm.reshape_tensor", 2, 0, "newshape:ints=None", reshape_tensor_rel, K_OPAQUE},
  {"vm.invoke_tvm_op", 3, 0, "", invoke_tvm_op_rel, K_OPAQUE},
  {"call_lowered", 2, 0, NULL, call_lowered_rel, K_OPAQUE},
};

int dp__register_device_ops(dp_ctx *ctx, dp_err **err) {
  return dp__register_opdefs(ctx, defs, sizeof defs / sizeof defs[0], err);
}
