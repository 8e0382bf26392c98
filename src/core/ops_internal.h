/*
 * Internals shared by the built-in operator files (ops_*.c): a table form
 * for declaring operators, and helpers for writing type relations.
 *
 * A schema is written as one string, fields in TVM's declaration order:
 *   "strides:ints=[1,1] channels:int_or_none=None data_layout:str=NCHW out_dtype:dtype="
 * `name:kind` has no default; `name:kind=value` has one. Values: None,
 * True/False, integers, floats, [lists of integers], anything else is a
 * string (possibly empty) for str/dtype fields.
 * A NULL schema means "attributes unchecked"; "" means "no attributes".
 *
 * Built-in relations get their op as `ud`, so defaults live in the schema
 * only and relations read attributes through dp_op_attr.
 */
#ifndef DEVPLAN_OPS_INTERNAL_H
#define DEVPLAN_OPS_INTERNAL_H

#include "devplan/op.h"

typedef struct dp__opdef {
  const char *name;
  int num_inputs;
  uint32_t flags;
  const char *schema;
  dp_type_rel rel;
  int pattern;           /* dp_oppattern: TVM's TOpPattern for this operator */
} dp__opdef;

/* Short names for the operator tables. */
#define K_ELEMWISE DP_OPP_ELEMWISE
#define K_BROADCAST DP_OPP_BROADCAST
#define K_INJECTIVE DP_OPP_INJECTIVE
#define K_REDUCE DP_OPP_COMM_REDUCE
#define K_OUT_FUSABLE DP_OPP_OUT_ELEMWISE_FUSABLE
#define K_OPAQUE DP_OPP_OPAQUE

int dp__register_opdefs(dp_ctx *ctx, const dp__opdef *defs, size_t n, dp_err **err);

/* Each family registers its operators (ops_tensor.c, ops_nn.c, ops_device.c). */
int dp__register_tensor_ops(dp_ctx *ctx, dp_err **err);
int dp__register_nn_ops(dp_ctx *ctx, dp_err **err);
int dp__register_device_ops(dp_ctx *ctx, dp_err **err);
/* What models imported from ONNX need besides (ops_onnx_extra.c). */
int dp__register_onnx_extra_ops(dp_ctx *ctx, dp_err **err);

/* ---- relation helpers (op is the relation's ud) ---- */

#define DP__MAXDIM 64

/* Sets a type error "<op>: <message>" and returns NULL. */
dp_type *dp__rel_fail(dp_err **err, const dp_op *op, const char *fmt, ...);
/* args[i] as a tensor type, or NULL with an error naming the argument. */
const dp_tensor_type *dp__arg_tensor(dp_type *const *args, uint32_t i, const dp_op *op,
                                     dp_err **err);
/* Attribute readers; `dflt` is used when the attribute is absent or None. */
int64_t dp__attr_int(const dp_op *op, const dp_attrs *a, const char *key, int64_t dflt);
double dp__attr_float(const dp_op *op, const dp_attrs *a, const char *key, double dflt);
int dp__attr_bool(const dp_op *op, const dp_attrs *a, const char *key, int dflt);
const char *dp__attr_string(const dp_op *op, const dp_attrs *a, const char *key, const char *dflt);
/* An empty or absent dtype attribute gives dflt. */
dp_dtype dp__attr_dtype(const dp_op *op, const dp_attrs *a, const char *key, dp_dtype dflt);
/* A list of integers (a single integer counts as a list of one) into out
   (at most max); returns the count, or -1 when absent / None / too long. */
int dp__attr_ints(const dp_op *op, const dp_attrs *a, const char *key, int64_t *out, int max);
/* axis in [-ndim, ndim) normalised to [0, ndim), or -1. */
int dp__norm_axis(int64_t axis, uint32_t ndim);
/* Short printed form of a type for messages (static buffer, truncated). */
const char *dp__type_brief(const dp_type *t, char *buf, size_t n);

/* ---- checked shape arithmetic ----
   Every computation on dimensions and shape attributes goes through these,
   so that no relation can overflow, whatever the sizes written: a result
   outside int64 sets the sticky flag *ovf (and gives 0). A relation
   computes its whole shape, then builds it with dp__rel_tensor, which turns
   a set flag into a type error. */
static inline int64_t dp__add(int64_t a, int64_t b, int *ovf) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) { *ovf = 1; return 0; }
  return r;
}
static inline int64_t dp__sub(int64_t a, int64_t b, int *ovf) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) { *ovf = 1; return 0; }
  return r;
}
static inline int64_t dp__mul(int64_t a, int64_t b, int *ovf) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) { *ovf = 1; return 0; }
  return r;
}
/* The same on dimensions, keeping `?` (DP_DIM_ANY, or any negative) unknown. */
static inline int64_t dp__dim_add(int64_t a, int64_t b, int *ovf) {
  return a < 0 || b < 0 ? DP_DIM_ANY : dp__add(a, b, ovf);
}
static inline int64_t dp__dim_mul(int64_t a, int64_t b, int *ovf) {
  return a < 0 || b < 0 ? DP_DIM_ANY : dp__mul(a, b, ovf);
}
/* The tensor type a relation computed, or a type error naming op when its
   arithmetic overflowed (ovf), a dimension is negative (other than `?`)
   or memory ran out: never NULL without an error. */
dp_type *dp__rel_tensor(dp_ctx *ctx, const dp_op *op, dp_dtype dtype, uint32_t ndim,
                        const int64_t *dims, int ovf, dp_err **err);

#endif
