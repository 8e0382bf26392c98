/*
 * Built-in operators that models imported from ONNX need beyond the
 * others (src/import: TVM's ONNX frontend emits them): strided_slice,
 * take, where, floor_mod, logical_xor, broadcast_to, tile, nn.batch_matmul, nn.layer_norm,
 * nn.prelu, nn.pad and image.resize2d. Relations follow TVM's, `?` stays `?`.
 */
#include <string.h>
#include "ops_internal.h"

#define OP ((const dp_op *)ud)
#define TENSOR(i) const dp_tensor_type *t##i = dp__arg_tensor(args, i, OP, err); if (!t##i) return NULL

/* Python's slice of a dimension of size dim (known, >= 0): the number of
   elements of begin:end:stride once both ends are clamped, as TVM's
   strided_slice canonicalises them. */
static int64_t slice_len(int64_t dim, int64_t begin, int64_t end, int64_t stride) {
  if (stride > 0) {
    if (begin < 0) begin = begin < -dim ? 0 : begin + dim;
    if (end < 0) end = end < -dim ? 0 : end + dim;
    if (begin > dim) begin = dim;
    if (end > dim) end = dim;
    return end > begin ? (end - begin - 1) / stride + 1 : 0;
  }
  if (begin < 0) begin = begin < -dim ? -1 : begin + dim;
  if (end < 0) end = end < -dim ? -1 : end + dim;
  if (begin > dim - 1) begin = dim - 1;
  if (end > dim - 1) end = dim - 1;
  return begin > end ? (begin - end - 1) / -stride + 1 : 0;
}

static dp_type *strided_slice_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                  const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  int64_t begin[DP__MAXDIM], end[DP__MAXDIM], strides[DP__MAXDIM], axes[DP__MAXDIM], dims[DP__MAXDIM];
  if (t0->ndim > DP__MAXDIM) return dp__rel_fail(err, OP, "too many dimensions");
  int nb = dp__attr_ints(OP, attrs, "begin", begin, DP__MAXDIM);
  int ne = dp__attr_ints(OP, attrs, "end", end, DP__MAXDIM);
  int ns = dp__attr_ints(OP, attrs, "strides", strides, DP__MAXDIM);
  int na = dp__attr_ints(OP, attrs, "axes", axes, DP__MAXDIM);
  int size_mode = strcmp(dp__attr_string(OP, attrs, "slice_mode", "end"), "size") == 0;
  if (nb < 0 || ne < 0) return dp__rel_fail(err, OP, "needs begin and end lists");
  if (nb != ne) return dp__rel_fail(err, OP, "begin has %d values and end %d", nb, ne);
  if (ns > 1 && ns != nb) return dp__rel_fail(err, OP, "strides has %d values, begin %d", ns, nb);
  if (na >= 0 && na != nb) return dp__rel_fail(err, OP, "axes has %d values, begin %d", na, nb);
  if (na < 0 && (uint32_t)nb > t0->ndim)
    return dp__rel_fail(err, OP, "%d begin values for rank %u", nb, t0->ndim);
  memcpy(dims, t0->dims, t0->ndim * sizeof dims[0]);
  char seen[DP__MAXDIM] = {0};
  for (int i = 0; i < nb; i++) {
    int ax = na >= 0 ? dp__norm_axis(axes[i], t0->ndim) : i;
    if (ax < 0) return dp__rel_fail(err, OP, "axis %lld out of range for rank %u", (long long)axes[i], t0->ndim);
    if (seen[ax]++) return dp__rel_fail(err, OP, "axis %d sliced twice", ax);
    int64_t s = ns < 0 ? 1 : ns == 1 ? strides[0] : strides[i];
    if (s == 0) return dp__rel_fail(err, OP, "a stride of 0");
    int64_t d = t0->dims[ax];
    if (d < 0) continue; /* ? stays ? */
    if (size_mode) {
      int64_t b = begin[i] < 0 ? begin[i] + d : begin[i];
      if (b < 0 || b > d) return dp__rel_fail(err, OP, "begin %lld out of range for size %lld", (long long)begin[i], (long long)d);
      dims[ax] = end[i] < 0 || end[i] > d - b ? d - b : end[i];
    } else {
      dims[ax] = slice_len(d, begin[i], end[i], s == INT64_MIN ? -INT64_MAX : s);
    }
  }
  return dp__rel_tensor(ctx, OP, t0->dtype, t0->ndim, dims, 0, err);
}

static int is_integer(dp_dtype d) {
  return DP_DTYPE_CODE(d) == DP_DT_INT || DP_DTYPE_CODE(d) == DP_DT_UINT;
}

static dp_type *take_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                         const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  TENSOR(1);
  char b[16];
  if (!is_integer(t1->dtype)) return dp__rel_fail(err, OP, "indices must be integers, got %s", dp_dtype_name(t1->dtype, b));
  const dp_aval *axis = dp_op_attr(OP, attrs, "axis");
  if (!axis || axis->kind == DP_AV_NONE) return dp_type_tensor(ctx, t0->dtype, t1->ndim, t1->dims);
  int ax = dp__norm_axis(dp__attr_int(OP, attrs, "axis", 0), t0->ndim);
  if (ax < 0) return dp__rel_fail(err, OP, "axis out of range for rank %u", t0->ndim);
  int64_t bd = dp__attr_int(OP, attrs, "batch_dims", 0);
  if (bd < 0) bd += t1->ndim;
  if (bd < 0 || bd > ax || (uint32_t)bd > t1->ndim) return dp__rel_fail(err, OP, "bad batch_dims");
  uint32_t n = t0->ndim - 1 + t1->ndim - (uint32_t)bd;
  if (n > DP__MAXDIM) return dp__rel_fail(err, OP, "too many dimensions");
  int64_t dims[DP__MAXDIM];
  uint32_t k = 0;
  for (int i = 0; i < ax; i++) dims[k++] = t0->dims[i];
  for (uint32_t i = (uint32_t)bd; i < t1->ndim; i++) dims[k++] = t1->dims[i];
  for (uint32_t i = (uint32_t)ax + 1; i < t0->ndim; i++) dims[k++] = t0->dims[i];
  return dp__rel_tensor(ctx, OP, t0->dtype, n, dims, 0, err);
}

/* The broadcast of n shapes (TVM's rule: aligned on the right, 1 takes
   the other side, `?` too). -1 with an error when they do not broadcast. */
static int broadcast_shapes(const dp_op *op, uint32_t n, const dp_tensor_type *const *ts,
                            int64_t *dims, uint32_t *ndim, dp_err **err) {
  uint32_t r = 0;
  for (uint32_t k = 0; k < n; k++) r = ts[k]->ndim > r ? ts[k]->ndim : r;
  if (r > DP__MAXDIM) {
    dp__rel_fail(err, op, "too many dimensions");
    return -1;
  }
  for (uint32_t i = 0; i < r; i++) {
    int64_t d = 1;
    for (uint32_t k = 0; k < n; k++) {
      int64_t s = i < ts[k]->ndim ? ts[k]->dims[ts[k]->ndim - 1 - i] : 1;
      if (s == d || s == 1) continue;
      if (d == 1 || (d == DP_DIM_ANY && s >= 0)) d = s;
      else if (s != DP_DIM_ANY) {
        char a[128], b[128];
        dp__rel_fail(err, op, "shapes %s and %s do not broadcast",
                     dp__type_brief(&ts[0]->t, a, sizeof a), dp__type_brief(&ts[k]->t, b, sizeof b));
        return -1;
      }
    }
    dims[r - 1 - i] = d;
  }
  *ndim = r;
  return 0;
}

static dp_type *where_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                          const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  TENSOR(1);
  TENSOR(2);
  char a[16], b[16];
  if (t0->dtype != DP_BOOL) return dp__rel_fail(err, OP, "the condition must be bool, got %s", dp_dtype_name(t0->dtype, a));
  if (t1->dtype != t2->dtype)
    return dp__rel_fail(err, OP, "argument dtypes differ (%s and %s)", dp_dtype_name(t1->dtype, a), dp_dtype_name(t2->dtype, b));
  const dp_tensor_type *ts[3] = {t0, t1, t2};
  int64_t dims[DP__MAXDIM];
  uint32_t n;
  if (broadcast_shapes(OP, 3, ts, dims, &n, err) < 0) return NULL;
  return dp__rel_tensor(ctx, OP, t1->dtype, n, dims, 0, err);
}

/* Two tensors of one dtype, broadcast (floor_mod, logical_xor). */
static dp_type *binary_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                           const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  TENSOR(1);
  char a[16], b[16];
  if (t0->dtype != t1->dtype)
    return dp__rel_fail(err, OP, "argument dtypes differ (%s and %s)", dp_dtype_name(t0->dtype, a), dp_dtype_name(t1->dtype, b));
  const dp_tensor_type *ts[2] = {t0, t1};
  int64_t dims[DP__MAXDIM];
  uint32_t n;
  if (broadcast_shapes(OP, 2, ts, dims, &n, err) < 0) return NULL;
  return dp__rel_tensor(ctx, OP, t0->dtype, n, dims, 0, err);
}

static dp_type *broadcast_to_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                 const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  int64_t shape[DP__MAXDIM], dims[DP__MAXDIM];
  int n = dp__attr_ints(OP, attrs, "shape", shape, DP__MAXDIM);
  if (n < 0) return dp__rel_fail(err, OP, "needs a shape");
  if ((uint32_t)n < t0->ndim) return dp__rel_fail(err, OP, "shape has fewer dimensions than the data");
  for (int i = 0; i < n; i++) {
    int64_t s = shape[n - 1 - i], d = (uint32_t)i < t0->ndim ? t0->dims[t0->ndim - 1 - i] : 1;
    if (s < 0) return dp__rel_fail(err, OP, "shape has a negative size");
    if (d >= 0 && d != 1 && d != s)
      return dp__rel_fail(err, OP, "dimension of size %lld does not broadcast to %lld", (long long)d, (long long)s);
    dims[n - 1 - i] = s;
  }
  return dp__rel_tensor(ctx, OP, t0->dtype, (uint32_t)n, dims, 0, err);
}

static dp_type *tile_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                         const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  int64_t reps[DP__MAXDIM], dims[DP__MAXDIM];
  int n = dp__attr_ints(OP, attrs, "reps", reps, DP__MAXDIM), ovf = 0;
  if (n < 0) return dp__rel_fail(err, OP, "needs reps");
  uint32_t r = (uint32_t)n > t0->ndim ? (uint32_t)n : t0->ndim;
  for (uint32_t i = 0; i < r; i++) {
    int64_t d = i < t0->ndim ? t0->dims[t0->ndim - 1 - i] : 1, k = i < (uint32_t)n ? reps[n - 1 - i] : 1;
    if (k < 0) return dp__rel_fail(err, OP, "reps must not be negative");
    dims[r - 1 - i] = dp__dim_mul(d, k, &ovf);
  }
  return dp__rel_tensor(ctx, OP, t0->dtype, r, dims, ovf, err);
}

static dp_type *batch_matmul_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                 const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  TENSOR(1);
  if (t0->ndim != 3 || t1->ndim != 3) return dp__rel_fail(err, OP, "expects two tensors of rank 3");
  int ta = dp__attr_bool(OP, attrs, "transpose_a", 0), tb = dp__attr_bool(OP, attrs, "transpose_b", 1);
  int64_t b0 = t0->dims[0], b1 = t1->dims[0];
  int64_t m = ta ? t0->dims[2] : t0->dims[1], k0 = ta ? t0->dims[1] : t0->dims[2];
  int64_t n = tb ? t1->dims[1] : t1->dims[2], k1 = tb ? t1->dims[2] : t1->dims[1];
  if (b0 >= 0 && b1 >= 0 && b0 != b1 && b0 != 1 && b1 != 1)
    return dp__rel_fail(err, OP, "batch sizes %lld and %lld differ", (long long)b0, (long long)b1);
  if (k0 >= 0 && k1 >= 0 && k0 != k1)
    return dp__rel_fail(err, OP, "reduction sizes %lld and %lld differ", (long long)k0, (long long)k1);
  char a[16], b[16];
  if (t0->dtype != t1->dtype)
    return dp__rel_fail(err, OP, "argument dtypes differ (%s and %s)", dp_dtype_name(t0->dtype, a), dp_dtype_name(t1->dtype, b));
  int64_t dims[3] = {b0 == 1 ? b1 : b1 == 1 ? b0 : b0 >= 0 ? b0 : b1, m, n};
  return dp__rel_tensor(ctx, OP, dp__attr_dtype(OP, attrs, "out_dtype", t0->dtype), 3, dims, 0, err);
}

/* args[from..nargs) must be vectors as long as data's dimension `axis`. */
static dp_type *with_vectors(dp_ctx *ctx, dp_type *const *args, uint32_t nargs, uint32_t from,
                             const dp_attrs *attrs, const dp_op *op, dp_err **err) {
  const dp_tensor_type *d = dp__arg_tensor(args, 0, op, err);
  if (!d) return NULL;
  int ax = dp__norm_axis(dp__attr_int(op, attrs, "axis", 1), d->ndim);
  if (ax < 0) return dp__rel_fail(err, op, "axis out of range for rank %u", d->ndim);
  for (uint32_t i = from; i < nargs; i++) {
    const dp_tensor_type *v = dp__arg_tensor(args, i, op, err);
    if (!v) return NULL;
    char a[128], b[16];
    if (v->ndim != 1 || v->dtype != d->dtype || (v->dims[0] >= 0 && d->dims[ax] >= 0 && v->dims[0] != d->dims[ax]))
      return dp__rel_fail(err, op, "argument %u must be a vector of %lld %s, got %s", i + 1,
                          (long long)d->dims[ax], dp_dtype_name(d->dtype, b), dp__type_brief(args[i], a, sizeof a));
  }
  return dp_retain(args[0]);
}

static dp_type *vectors_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                            const dp_attrs *attrs, void *ud, dp_err **err) {
  return with_vectors(ctx, args, nargs, 1, attrs, OP, err);
}

/* pad_width: one [before, after] pair per dimension. */
static dp_type *pad_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                        const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  TENSOR(1);
  if (t1->ndim != 0) return dp__rel_fail(err, OP, "the pad value must be a scalar");
  const dp_aval *pw = dp_op_attr(OP, attrs, "pad_width");
  if (!pw || pw->kind != DP_AV_LIST || pw->n != t0->ndim || t0->ndim > DP__MAXDIM)
    return dp__rel_fail(err, OP, "pad_width must hold one [before, after] pair per dimension (%u)", t0->ndim);
  const char *mode = dp__attr_string(OP, attrs, "pad_mode", "constant");
  if (strcmp(mode, "constant") && strcmp(mode, "edge") && strcmp(mode, "reflect"))
    return dp__rel_fail(err, OP, "pad_mode must be constant, edge or reflect, got \"%s\"", mode);
  int64_t dims[DP__MAXDIM];
  int ovf = 0;
  for (uint32_t i = 0; i < t0->ndim; i++) {
    const dp_aval *p = &pw->u.items[i];
    if (p->kind != DP_AV_LIST || p->n != 2 || p->u.items[0].kind != DP_AV_INT || p->u.items[1].kind != DP_AV_INT)
      return dp__rel_fail(err, OP, "pad_width[%u] must be [before, after]", i);
    int64_t b = p->u.items[0].u.i, a = p->u.items[1].u.i;
    if (b < 0 || a < 0) return dp__rel_fail(err, OP, "pad_width[%u] is negative", i);
    dims[i] = dp__dim_add(t0->dims[i], dp__add(b, a, &ovf), &ovf);
  }
  return dp__rel_tensor(ctx, OP, t0->dtype, t0->ndim, dims, ovf, err);
}

static dp_type *resize2d_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                             const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  int64_t size[3];
  const char *layout = dp__attr_string(OP, attrs, "layout", "NCHW");
  const char *h = strchr(layout, 'H'), *w = strchr(layout, 'W');
  if (strlen(layout) != t0->ndim || !h || !w) return dp__rel_fail(err, OP, "layout \"%s\" does not fit rank %u", layout, t0->ndim);
  if (dp__attr_ints(OP, attrs, "size", size, 3) != 2) return dp__rel_fail(err, OP, "size must have 2 values");
  if (size[0] <= 0 || size[1] <= 0) return dp__rel_fail(err, OP, "size must be positive");
  const char *method = dp__attr_string(OP, attrs, "method", "linear");
  if (strcmp(method, "nearest_neighbor") && strcmp(method, "linear") && strcmp(method, "cubic"))
    return dp__rel_fail(err, OP, "method must be nearest_neighbor, linear or cubic, got \"%s\"", method);
  int64_t dims[DP__MAXDIM];
  memcpy(dims, t0->dims, t0->ndim * sizeof dims[0]);
  dims[h - layout] = size[0];
  dims[w - layout] = size[1];
  return dp__rel_tensor(ctx, OP, dp__attr_dtype(OP, attrs, "out_dtype", t0->dtype), t0->ndim, dims, 0, err);
}

static const dp__opdef defs[] = {
  {"strided_slice", 1, 0, "begin:ints end:ints strides:ints=None slice_mode:str=end axes:ints=None",
   strided_slice_rel, K_INJECTIVE},
  {"take", 2, 0, "batch_dims:int=0 axis:int_or_none=None mode:str=clip", take_rel, K_INJECTIVE},
  {"where", 3, 0, "", where_rel, K_BROADCAST},
  {"floor_mod", 2, 0, "", binary_rel, K_BROADCAST},
  {"logical_xor", 2, 0, "", binary_rel, K_BROADCAST},
  {"broadcast_to", 1, 0, "shape:ints", broadcast_to_rel, K_BROADCAST},
  {"tile", 1, 0, "reps:ints", tile_rel, K_INJECTIVE},
  {"nn.batch_matmul", 2, 0, "out_dtype:dtype= transpose_a:bool=False transpose_b:bool=True",
   batch_matmul_rel, K_OUT_FUSABLE},
  {"nn.layer_norm", 3, 0, "axis:int=-1 epsilon:float=1e-5 center:bool=True scale:bool=True",
   vectors_rel, K_OPAQUE},
  {"nn.prelu", 2, 0, "axis:int=1", vectors_rel, K_BROADCAST},
  {"nn.pad", 2, 0, "pad_width:any pad_mode:str=constant", pad_rel, K_INJECTIVE},
  {"image.resize2d", 1, 0,
   "size:ints roi:any=None layout:str=NCHW method:str=linear coordinate_transformation_mode:str=half_pixel "
   "rounding_method:str= cubic_alpha:float=-0.5 cubic_exclude:int=0 extrapolation_value:float=0 out_dtype:dtype=",
   resize2d_rel, K_INJECTIVE},
};

int dp__register_onnx_extra_ops(dp_ctx *ctx, dp_err **err) {
  return dp__register_opdefs(ctx, defs, sizeof defs / sizeof defs[0], err);
}
