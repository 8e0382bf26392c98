/*
 * ONNX's tensor operators to Relay, as TVM's ONNX frontend mapped them:
 * elementwise arithmetic, comparisons and logic (broadcasting), unary
 * functions, Cast, Where, reductions, and the shape operators (Reshape,
 * Flatten, Transpose, Concat, Split, Slice -> strided_slice, Gather ->
 * take, Squeeze, Unsqueeze -> expand_dims, Expand -> broadcast_to, Tile).
 * Shapes, axes and sizes come from attributes or from inputs known at
 * import. The operators eval.c computes at import that have no Relay form
 * here (Range, NonZero, ConstantOfShape, ScatterND) need known inputs.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static dp_expr *call1(dp__onnx *X, const char *op, dp_expr *a, dp__ab *b) {
  return dp__ox_call(X, op, 1, &a, b);
}

static dp_expr *call2(dp__onnx *X, const char *op, dp_expr *a, dp_expr *c, dp__ab *b) {
  dp_expr *args[2] = {a, c};
  return dp__ox_call(X, op, 2, args, b);
}

/* Integers of a known 0-D or 1-D input (at most max): count, or -1 with the error set. */
static int known_ints(dp__onnx *X, uint32_t i, const char *what, int64_t *out, int max) {
  const dp__ot *v = dp__ox_value(X, i, what);
  if (!v) return -1;
  if (v->ndim > 1 || v->n > (size_t)max)
    return dp__ox_fail(X, DP_ERR_VALUE, "its %s must be a list of at most %d integers", what, max);
  for (size_t k = 0; k < v->n; k++) out[k] = dp__ot_int(v, k);
  return (int)v->n;
}

/* Axes from the attribute, else from input i: count, -1 when neither, -2 error. */
static int axes_of(dp__onnx *X, uint32_t i, int64_t *axes) {
  int n = dp__ox_attr_ints(X, "axes", axes, DP__OT_MAXDIM);
  if (n != -1) return n;
  if (!dp__ox_has(X, i)) return -1;
  n = known_ints(X, i, "axes", axes, DP__OT_MAXDIM);
  return n < 0 ? -2 : n;
}

/* ---------------- elementwise ---------------- */

static int binary(dp__onnx *X, const char *op) {
  dp_expr *a = dp__ox_in(X, 0), *b = a ? dp__ox_in(X, 1) : NULL;
  return b ? dp__ox_out(X, 0, call2(X, op, a, b, NULL)) : -1;
}

static int cv_add(dp__onnx *X) { return binary(X, "add"); }
static int cv_sub(dp__onnx *X) { return binary(X, "subtract"); }
static int cv_mul(dp__onnx *X) { return binary(X, "multiply"); }
static int cv_div(dp__onnx *X) { return binary(X, "divide"); }
static int cv_pow(dp__onnx *X) { return binary(X, "power"); }
static int cv_equal(dp__onnx *X) { return binary(X, "equal"); }
static int cv_less(dp__onnx *X) { return binary(X, "less"); }
static int cv_greater(dp__onnx *X) { return binary(X, "greater"); }
static int cv_less_equal(dp__onnx *X) { return binary(X, "less_equal"); }
static int cv_greater_equal(dp__onnx *X) { return binary(X, "greater_equal"); }
static int cv_and(dp__onnx *X) { return binary(X, "logical_and"); }
static int cv_or(dp__onnx *X) { return binary(X, "logical_or"); }
static int cv_xor(dp__onnx *X) { return binary(X, "logical_xor"); }
/* fmod=0 is numpy's mod (TVM: floor_mod), fmod=1 C's fmod (TVM: mod) */
static int cv_mod(dp__onnx *X) { return binary(X, dp__ox_attr_int(X, "fmod", 0) ? "mod" : "floor_mod"); }

static int unary(dp__onnx *X, const char *op) {
  dp_expr *x = dp__ox_in(X, 0);
  return x ? dp__ox_out(X, 0, call1(X, op, x, NULL)) : -1;
}

static int cv_exp(dp__onnx *X) { return unary(X, "exp"); }
static int cv_log(dp__onnx *X) { return unary(X, "log"); }
static int cv_sqrt(dp__onnx *X) { return unary(X, "sqrt"); }
static int cv_neg(dp__onnx *X) { return unary(X, "negative"); }
static int cv_abs(dp__onnx *X) { return unary(X, "abs"); }
static int cv_floor(dp__onnx *X) { return unary(X, "floor"); }
static int cv_ceil(dp__onnx *X) { return unary(X, "ceil"); }
static int cv_round(dp__onnx *X) { return unary(X, "round"); }
static int cv_not(dp__onnx *X) { return unary(X, "logical_not"); }

static int cv_reciprocal(dp__onnx *X) {
  const dp_tensor_type *t = dp__ox_type(X, 0);
  dp_expr *x = t ? dp__ox_in(X, 0) : NULL, *one = x ? dp__ox_scalar(X, t->dtype, 1) : NULL;
  dp_expr *r = one ? call2(X, "divide", one, x, NULL) : NULL;
  dp_release(one);
  return r ? dp__ox_out(X, 0, r) : -1;
}

/* Max, Min, Sum of any number of inputs: a chain, left to right; Mean
   divides the sum by the count. */
static int variadic(dp__onnx *X, const char *op, int mean) {
  uint32_t n = dp__ox_nin(X);
  if (n == 0) return dp__ox_fail(X, DP_ERR_VALUE, "it has no inputs");
  dp_expr *r = dp_retain(dp__ox_in(X, 0));
  for (uint32_t i = 1; r && i < n; i++) {
    dp_expr *b = dp__ox_in(X, i), *c = b ? call2(X, op, r, b, NULL) : NULL;
    dp_release(r);
    r = c;
  }
  if (r && mean && n > 1) {
    const dp_tensor_type *t = dp__ox_tensor_type(X, r);
    dp_expr *k = t ? dp__ox_scalar(X, t->dtype, n) : NULL, *c = k ? call2(X, "divide", r, k, NULL) : NULL;
    dp_release(k);
    dp_release(r);
    r = c;
  }
  return r ? dp__ox_out(X, 0, r) : -1;
}

static int cv_max(dp__onnx *X) { return variadic(X, "maximum", 0); }
static int cv_min(dp__onnx *X) { return variadic(X, "minimum", 0); }
static int cv_sum(dp__onnx *X) { return variadic(X, "add", 0); }
static int cv_mean(dp__onnx *X) { return variadic(X, "add", 1); }

static int cv_where(dp__onnx *X) {
  dp_expr *args[3];
  for (uint32_t i = 0; i < 3; i++)
    if (!(args[i] = dp__ox_in(X, i))) return -1;
  return dp__ox_out(X, 0, dp__ox_call(X, "where", 3, args, NULL));
}

static int cv_cast(dp__onnx *X) {
  int64_t to = dp__ox_attr_int(X, "to", 0);
  dp_dtype dt = dp__onnx_dtype((int32_t)to);
  char buf[16];
  if (!dt) return dp__ox_fail(X, DP_ERR_VALUE, "a cast to %s is not supported", dp__onnx_elem_name((int32_t)to));
  dp_expr *x = dp__ox_in(X, 0);
  if (!x) return -1;
  dp__ab b = {0};
  dp__ab_str(&b, "dtype", dp_dtype_name(dt, buf));
  return dp__ox_out(X, 0, call1(X, "cast", x, &b));
}

/* Identity and Dropout (inference: its input; the mask, when used, all true). */
static int cv_identity(dp__onnx *X) {
  dp_expr *x = dp__ox_in(X, 0);
  if (!x || dp__ox_out(X, 0, dp_retain(x)) < 0) return -1;
  if (dp__ox_used(X, 1)) {
    const dp_tensor_type *t = dp__ox_tensor_type(X, x);
    const char *why;
    dp__ot *mask = t ? dp__ot_new(DP_BOOL, t->ndim, t->dims, &why) : NULL;
    if (!mask) return dp__ox_fail(X, DP_ERR_VALUE, "its mask output has no static shape");
    for (size_t i = 0; i < mask->n; i++) dp__ot_set_int(mask, i, 1);
    return dp__ox_out_value(X, 1, mask);
  }
  return 0;
}

/* ---------------- reductions ---------------- */

static int reduce(dp__onnx *X, const char *op) {
  int64_t axes[DP__OT_MAXDIM];
  dp_expr *x = dp__ox_in(X, 0);
  if (!x) return -1;
  int n = axes_of(X, 1, axes);
  if (n == -2) return -1;
  dp__ab b = {0};
  if (n == 0 && dp__ox_attr_int(X, "noop_with_empty_axes", 0)) return dp__ox_out(X, 0, dp_retain(x));
  if (n > 0) dp__ab_ints(&b, "axis", axes, (uint32_t)n);
  dp__ab_bool(&b, "keepdims", (int)dp__ox_attr_int(X, "keepdims", 1));
  return dp__ox_out(X, 0, call1(X, op, x, &b));
}

static int cv_reduce_mean(dp__onnx *X) { return reduce(X, "mean"); }
static int cv_reduce_sum(dp__onnx *X) { return reduce(X, "sum"); }
static int cv_reduce_max(dp__onnx *X) { return reduce(X, "max"); }
static int cv_reduce_min(dp__onnx *X) { return reduce(X, "min"); }
static int cv_reduce_prod(dp__onnx *X) { return reduce(X, "prod"); }

/* ---------------- shapes ---------------- */

static int cv_reshape(dp__onnx *X) {
  const dp_tensor_type *t = dp__ox_type(X, 0);
  int64_t want[DP__OT_MAXDIM], dims[DP__OT_MAXDIM];
  if (!t) return -1;
  int n = known_ints(X, 1, "shape", want, DP__OT_MAXDIM);
  int allowzero = (int)dp__ox_attr_int(X, "allowzero", 0);
  if (n < 0 || dp__onnx_reshape_dims(X, t->ndim, t->dims, want, n, allowzero, dims) < 0) return -1;
  dp_expr *x = dp__ox_in(X, 0);
  if (!x) return -1;
  dp__ab b = {0};
  dp__ab_ints(&b, "newshape", want, (uint32_t)n); /* as written, as TVM passes it on */
  if (allowzero) dp__ab_int(&b, "allowzero", 1);
  return dp__ox_out(X, 0, call1(X, "reshape", x, &b));
}

static int cv_flatten(dp__onnx *X) {
  const dp_tensor_type *t = dp__ox_type(X, 0);
  dp_expr *x = t ? dp__ox_in(X, 0) : NULL;
  if (!x) return -1;
  int64_t axis = dp__ox_attr_int(X, "axis", 1);
  if (axis < 0) axis += t->ndim;
  if (axis < 0 || axis > (int64_t)t->ndim) return dp__ox_fail(X, DP_ERR_VALUE, "axis is out of range for rank %u", t->ndim);
  if (axis == 1 && t->ndim >= 2) return dp__ox_out(X, 0, call1(X, "nn.batch_flatten", x, NULL));
  int64_t d[2] = {1, 1};
  for (uint32_t i = 0; i < t->ndim; i++) {
    if (t->dims[i] < 0) return dp__ox_fail(X, DP_ERR_VALUE, "its input has an unknown dimension");
    d[(int64_t)i >= axis] *= t->dims[i];
  }
  dp__ab b = {0};
  dp__ab_ints(&b, "newshape", d, 2);
  return dp__ox_out(X, 0, call1(X, "reshape", x, &b));
}

static int cv_transpose(dp__onnx *X) {
  int64_t perm[DP__OT_MAXDIM];
  dp_expr *x = dp__ox_in(X, 0);
  if (!x) return -1;
  int n = dp__ox_attr_ints(X, "perm", perm, DP__OT_MAXDIM);
  if (n == -2) return -1;
  dp__ab b = {0};
  if (n >= 0) dp__ab_ints(&b, "axes", perm, (uint32_t)n);
  return dp__ox_out(X, 0, call1(X, "transpose", x, &b));
}

static int cv_concat(dp__onnx *X) {
  uint32_t n = dp__ox_nin(X);
  if (n == 0 || n > 4096) return dp__ox_fail(X, DP_ERR_VALUE, "it takes 1 to 4096 inputs, got %u", n);
  dp_expr **items = dp_malloc(n * sizeof *items);
  if (!items) return dp__ox_fail(X, DP_ERR_MEMORY, "out of memory");
  for (uint32_t i = 0; i < n; i++)
    if (!(items[i] = dp__ox_in(X, i))) {
      free(items);
      return -1;
    }
  dp_expr *t = dp__ox_tuple(X, n, items);
  free(items);
  if (!t) return -1;
  dp__ab b = {0};
  dp__ab_int(&b, "axis", dp__ox_attr_int(X, "axis", 0));
  dp_expr *r = call1(X, "concatenate", t, &b);
  dp_release(t);
  return dp__ox_out(X, 0, r);
}

static int cv_split(dp__onnx *X) {
  const dp_tensor_type *t = dp__ox_type(X, 0);
  int64_t sizes[DP__OT_MAXDIM + 1];
  if (!t) return -1;
  int64_t axis = dp__ox_attr_int(X, "axis", 0);
  int ax = (int)(axis < 0 ? axis + t->ndim : axis);
  if (ax < 0 || ax >= (int)t->ndim) return dp__ox_fail(X, DP_ERR_VALUE, "axis is out of range for rank %u", t->ndim);
  uint32_t nout = (uint32_t)X->node->n_output;
  if (nout == 0 || nout > DP__OT_MAXDIM) return dp__ox_fail(X, DP_ERR_VALUE, "it has %u outputs (1 to 64 are supported)", nout);
  int n = dp__ox_attr_ints(X, "split", sizes, DP__OT_MAXDIM + 1);
  if (n == -2) return -1;
  if (n == -1 && dp__ox_has(X, 1) && (n = known_ints(X, 1, "split", sizes, DP__OT_MAXDIM + 1)) < 0) return -1;
  if (n == -1 && t->dims[ax] >= 0 && t->dims[ax] % nout) { /* opset 18: the last part smaller */
    int64_t part = (t->dims[ax] + nout - 1) / nout, left = t->dims[ax];
    for (uint32_t i = 0; i < nout; i++, left -= part) sizes[i] = left < part ? (left > 0 ? left : 0) : part;
    n = (int)nout;
  }
  dp__ab b = {0};
  if (n >= 0) {
    if ((uint32_t)n != nout) return dp__ox_fail(X, DP_ERR_VALUE, "split has %d sizes for %u outputs", n, nout);
    int64_t idx[DP__OT_MAXDIM], at = 0;
    for (int i = 0; i + 1 < n; i++) idx[i] = at += sizes[i];
    if (t->dims[ax] >= 0 && at + sizes[n - 1] != t->dims[ax])
      return dp__ox_fail(X, DP_ERR_TYPE, "split sizes add up to %lld, the axis has %lld", (long long)(at + sizes[n - 1]),
                         (long long)t->dims[ax]);
    dp__ab_ints(&b, "indices_or_sections", idx, (uint32_t)n - 1);
  } else {
    dp__ab_int(&b, "indices_or_sections", nout);
  }
  dp__ab_int(&b, "axis", axis);
  dp_expr *x = dp__ox_in(X, 0), *s = x ? call1(X, "split", x, &b) : (dp__ab_clear(&b), NULL);
  if (!s) return -1;
  int rc = 0;
  for (uint32_t i = 0; rc == 0 && i < nout; i++)
    if (dp__ox_used(X, i)) rc = dp__ox_out(X, i, dp__ox_proj(X, s, i));
  dp_release(s);
  return rc;
}

static int cv_slice(dp__onnx *X) {
  const dp_tensor_type *t = dp__ox_type(X, 0);
  int64_t st[DP__OT_MAXDIM], en[DP__OT_MAXDIM], ax[DP__OT_MAXDIM], sp[DP__OT_MAXDIM];
  if (!t) return -1;
  int n = known_ints(X, 1, "starts", st, DP__OT_MAXDIM);
  if (n < 0) return -1;
  if (known_ints(X, 2, "ends", en, DP__OT_MAXDIM) != n) return X->err ? -1 : dp__ox_fail(X, DP_ERR_VALUE, "starts and ends differ in length");
  for (int i = 0; i < n; i++) ax[i] = i, sp[i] = 1;
  if (dp__ox_has(X, 3) && known_ints(X, 3, "axes", ax, DP__OT_MAXDIM) != n)
    return X->err ? -1 : dp__ox_fail(X, DP_ERR_VALUE, "axes and starts differ in length");
  if (dp__ox_has(X, 4) && known_ints(X, 4, "steps", sp, DP__OT_MAXDIM) != n)
    return X->err ? -1 : dp__ox_fail(X, DP_ERR_VALUE, "steps and starts differ in length");
  for (int i = 0; i < n; i++) { /* bounds clamped to [-dim - 1, dim]: the same slice, readable numbers */
    int64_t a = ax[i] < 0 ? ax[i] + t->ndim : ax[i];
    if (a < 0 || a >= t->ndim) return dp__ox_fail(X, DP_ERR_VALUE, "axis %lld is out of range for rank %u", (long long)ax[i], t->ndim);
    int64_t d = t->dims[a];
    if (d < 0) continue;
    st[i] = st[i] > d ? d : st[i] < -d - 1 ? -d - 1 : st[i];
    en[i] = en[i] > d ? d : en[i] < -d - 1 ? -d - 1 : en[i];
  }
  dp_expr *x = dp__ox_in(X, 0);
  if (!x) return -1;
  dp__ab b = {0};
  dp__ab_ints(&b, "begin", st, (uint32_t)n);
  dp__ab_ints(&b, "end", en, (uint32_t)n);
  dp__ab_ints(&b, "strides", sp, (uint32_t)n);
  if (dp__ox_has(X, 3)) dp__ab_ints(&b, "axes", ax, (uint32_t)n);
  return dp__ox_out(X, 0, call1(X, "strided_slice", x, &b));
}

static int cv_gather(dp__onnx *X) {
  const dp_tensor_type *t = dp__ox_type(X, 0);
  if (!t) return -1;
  int64_t axis = dp__ox_attr_int(X, "axis", 0);
  int ax = (int)(axis < 0 ? axis + t->ndim : axis);
  if (ax < 0 || ax >= (int)t->ndim) return dp__ox_fail(X, DP_ERR_VALUE, "axis is out of range for rank %u", t->ndim);
  dp_expr *data = dp__ox_in(X, 0), *idx = NULL;
  if (!data) return -1;
  const dp__ot *k = dp__ox_known(X, 1);
  if (k && t->dims[ax] >= 0) { /* negative indices counted from the end, as ONNX means them */
    const char *why;
    dp__ot *norm = dp__ot_new(k->dtype, k->ndim, k->dims, &why);
    if (!norm) return dp__ox_fail(X, DP_ERR_MEMORY, "out of memory");
    for (size_t i = 0; i < k->n; i++) {
      int64_t v = dp__ot_int(k, i);
      if (v < -t->dims[ax] || v >= t->dims[ax]) {
        dp__ot_free(norm);
        return dp__ox_fail(X, DP_ERR_VALUE, "index %lld is out of range for a dimension of %lld", (long long)v, (long long)t->dims[ax]);
      }
      dp__ot_set_int(norm, i, v < 0 ? v + t->dims[ax] : v);
    }
    idx = dp__ox_const(X, norm);
    dp__ot_free(norm);
  } else {
    idx = dp_retain(dp__ox_in(X, 1));
  }
  if (!idx) return -1;
  dp__ab b = {0};
  dp__ab_int(&b, "axis", axis);
  dp_expr *r = call2(X, "take", data, idx, &b);
  dp_release(idx);
  return dp__ox_out(X, 0, r);
}

static int cv_squeeze(dp__onnx *X) {
  int64_t axes[DP__OT_MAXDIM];
  dp_expr *x = dp__ox_in(X, 0);
  if (!x) return -1;
  int n = axes_of(X, 1, axes);
  if (n == -2) return -1;
  dp__ab b = {0};
  if (n >= 0) dp__ab_ints(&b, "axis", axes, (uint32_t)n);
  return dp__ox_out(X, 0, call1(X, "squeeze", x, &b));
}

static int cv_unsqueeze(dp__onnx *X) {
  const dp_tensor_type *t = dp__ox_type(X, 0);
  int64_t axes[DP__OT_MAXDIM];
  if (!t) return -1;
  int n = axes_of(X, 1, axes);
  if (n < 0) return n == -1 ? dp__ox_fail(X, DP_ERR_VALUE, "it needs axes") : -1;
  int64_t r = (int64_t)t->ndim + n;
  char mark[DP__OT_MAXDIM] = {0};
  if (r > DP__OT_MAXDIM) return dp__ox_fail(X, DP_ERR_VALUE, "its result has more than 64 dimensions");
  for (int i = 0; i < n; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
    if (a < 0 || a >= r || mark[a]++) return dp__ox_fail(X, DP_ERR_VALUE, "axis %lld is out of range or repeated", (long long)axes[i]);
  }
  dp_expr *x = dp__ox_in(X, 0);
  if (!x) return -1;
  dp_expr *cur = dp_retain(x);
  for (int64_t a = 0; cur && a < r; a++) { /* ascending: each axis is where the result has it */
    if (!mark[a]) continue;
    dp__ab b = {0};
    dp__ab_int(&b, "axis", a);
    dp_expr *next = call1(X, "expand_dims", cur, &b);
    dp_release(cur);
    cur = next;
  }
  return cur ? dp__ox_out(X, 0, cur) : -1;
}

static int cv_expand(dp__onnx *X) {
  const dp_tensor_type *t = dp__ox_type(X, 0);
  int64_t want[DP__OT_MAXDIM], dims[DP__OT_MAXDIM];
  if (!t) return -1;
  int n = known_ints(X, 1, "shape", want, DP__OT_MAXDIM);
  if (n < 0) return -1;
  uint32_t r = (uint32_t)n > t->ndim ? (uint32_t)n : t->ndim;
  for (uint32_t i = 0; i < r; i++) { /* both ways, as numpy (and ONNX) broadcast */
    int64_t a = i < t->ndim ? t->dims[t->ndim - 1 - i] : 1, b = i < (uint32_t)n ? want[n - 1 - i] : 1;
    if (a != b && a != 1 && b != 1) return dp__ox_fail(X, DP_ERR_TYPE, "its input does not broadcast to the shape");
    dims[r - 1 - i] = a == 1 ? b : a;
  }
  dp_expr *x = dp__ox_in(X, 0);
  if (!x) return -1;
  dp__ab b = {0};
  dp__ab_ints(&b, "shape", dims, r);
  return dp__ox_out(X, 0, call1(X, "broadcast_to", x, &b));
}

static int cv_tile(dp__onnx *X) {
  int64_t reps[DP__OT_MAXDIM];
  int n = known_ints(X, 1, "repeats", reps, DP__OT_MAXDIM);
  dp_expr *x = n >= 0 ? dp__ox_in(X, 0) : NULL;
  if (!x) return -1;
  dp__ab b = {0};
  dp__ab_ints(&b, "reps", reps, (uint32_t)n);
  return dp__ox_out(X, 0, call1(X, "tile", x, &b));
}

/* Operators computed only at import: every input must be known. */
static int cv_needs_known(dp__onnx *X) {
  for (uint32_t i = 0; i < dp__ox_nin(X); i++)
    if (dp__ox_has(X, i) && !dp__ox_value(X, i, "input")) return -1;
  return dp__ox_fail(X, DP_ERR_VALUE, "it is computed at import only, from known inputs");
}

static const struct { const char *op; dp__onnx_conv fn; } converters[] = {
  {"Add", cv_add}, {"Sub", cv_sub}, {"Mul", cv_mul}, {"Div", cv_div}, {"Pow", cv_pow}, {"Mod", cv_mod},
  {"Equal", cv_equal}, {"Less", cv_less}, {"Greater", cv_greater}, {"LessOrEqual", cv_less_equal},
  {"GreaterOrEqual", cv_greater_equal}, {"And", cv_and}, {"Or", cv_or}, {"Xor", cv_xor},
  {"Exp", cv_exp}, {"Log", cv_log}, {"Sqrt", cv_sqrt}, {"Neg", cv_neg}, {"Abs", cv_abs},
  {"Floor", cv_floor}, {"Ceil", cv_ceil}, {"Round", cv_round}, {"Not", cv_not},
  {"Reciprocal", cv_reciprocal}, {"Max", cv_max}, {"Min", cv_min}, {"Sum", cv_sum}, {"Mean", cv_mean},
  {"Where", cv_where}, {"Cast", cv_cast}, {"Identity", cv_identity}, {"Dropout", cv_identity},
  {"ReduceMean", cv_reduce_mean}, {"ReduceSum", cv_reduce_sum}, {"ReduceMax", cv_reduce_max},
  {"ReduceMin", cv_reduce_min}, {"ReduceProd", cv_reduce_prod}, {"Reshape", cv_reshape},
  {"Flatten", cv_flatten}, {"Transpose", cv_transpose}, {"Concat", cv_concat}, {"Split", cv_split},
  {"Slice", cv_slice}, {"Gather", cv_gather}, {"Squeeze", cv_squeeze}, {"Unsqueeze", cv_unsqueeze},
  {"Expand", cv_expand}, {"Tile", cv_tile}, {"Range", cv_needs_known}, {"NonZero", cv_needs_known},
  {"ConstantOfShape", cv_needs_known}, {"ScatterND", cv_needs_known},
};

dp__onnx_conv dp__onnx_converter(const char *op) {
  for (size_t i = 0; i < sizeof converters / sizeof converters[0]; i++)
    if (strcmp(converters[i].op, op) == 0) return converters[i].fn;
  return dp__onnx_nn_converter(op);
}
