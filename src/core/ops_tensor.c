/*
 * Built-in tensor operators and their type relations: elementwise and
 * broadcasting arithmetic, comparisons, cast/clip, reductions, and the
 * shape operators (concatenate, split, reshape, transpose, squeeze,
 * expand_dims, zeros/ones, layout_transform). The rules follow TVM's
 * relations, including how `?` dimensions propagate.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "ops_internal.h"

#define OP ((const dp_op *)ud)
#define TENSOR(i) const dp_tensor_type *t##i = dp__arg_tensor(args, i, OP, err); if (!t##i) return NULL

static dp_type *same_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                         const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  return dp_retain(args[0]);
}

/* TVM's broadcasting: shapes aligned on the right; a dim of 1 takes the
   other side; `?` takes the other side (so ? with 1 stays ?). */
static dp_type *broadcast(dp_ctx *ctx, dp_type *const *args, const dp_op *op, dp_dtype out,
                          dp_err **err) {
  const dp_tensor_type *a = dp__arg_tensor(args, 0, op, err), *b;
  if (!a || !(b = dp__arg_tensor(args, 1, op, err))) return NULL;
  char ba[16], bb[16], sa[128], sb[128];
  if (a->dtype != b->dtype)
    return dp__rel_fail(err, op, "argument dtypes differ (%s and %s)", dp_dtype_name(a->dtype, ba),
                        dp_dtype_name(b->dtype, bb));
  uint32_t n = a->ndim > b->ndim ? a->ndim : b->ndim;
  int64_t dims[DP__MAXDIM];
  if (n > DP__MAXDIM) return dp__rel_fail(err, op, "too many dimensions");
  for (uint32_t i = 0; i < n; i++) {
    int64_t s1 = i < a->ndim ? a->dims[a->ndim - 1 - i] : 1;
    int64_t s2 = i < b->ndim ? b->dims[b->ndim - 1 - i] : 1;
    int64_t r;
    if (s1 == s2 || s2 == 1) r = s1;
    else if (s1 == 1 || s1 == DP_DIM_ANY) r = s2;
    else if (s2 == DP_DIM_ANY) r = s1;
    else
      return dp__rel_fail(err, op, "shapes %s and %s do not broadcast",
                          dp__type_brief(args[0], sa, sizeof sa), dp__type_brief(args[1], sb, sizeof sb));
    dims[n - 1 - i] = r;
  }
  return dp__rel_tensor(ctx, op, out ? out : a->dtype, n, dims, 0, err);
}

static dp_type *broadcast_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                              const dp_attrs *attrs, void *ud, dp_err **err) {
  return broadcast(ctx, args, OP, 0, err);
}

static dp_type *compare_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                            const dp_attrs *attrs, void *ud, dp_err **err) {
  return broadcast(ctx, args, OP, DP_BOOL, err);
}

static dp_type *cast_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                         const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  dp_dtype d = dp__attr_dtype(OP, attrs, "dtype", 0);
  if (!d) return dp__rel_fail(err, OP, "needs a dtype attribute");
  return dp__rel_tensor(ctx, OP, d, t0->ndim, t0->dims, 0, err);
}

/* Reduction axes (None: all), as a mark per dimension. */
static int reduce_axes(const dp_op *op, const dp_attrs *attrs, uint32_t ndim, char *mark,
                       dp_err **err) {
  int64_t axes[DP__MAXDIM];
  int n = dp__attr_ints(op, attrs, "axis", axes, DP__MAXDIM);
  int exclude = dp__attr_bool(op, attrs, "exclude", 0);
  memset(mark, n < 0 ? 1 : 0, ndim);
  for (int i = 0; i < n; i++) {
    int ax = dp__norm_axis(axes[i], ndim);
    if (ax < 0) {
      dp__rel_fail(err, op, "axis %lld out of range for rank %u", (long long)axes[i], ndim);
      return -1;
    }
    mark[ax] = 1;
  }
  if (exclude && n >= 0)
    for (uint32_t i = 0; i < ndim; i++) mark[i] = !mark[i];
  return 0;
}

static dp_type *reduce_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                           const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  char mark[DP__MAXDIM];
  if (t0->ndim > DP__MAXDIM || reduce_axes(OP, attrs, t0->ndim, mark, err) < 0) return NULL;
  int keep = dp__attr_bool(OP, attrs, "keepdims", 0);
  int64_t dims[DP__MAXDIM];
  uint32_t n = 0;
  for (uint32_t i = 0; i < t0->ndim; i++) {
    if (!mark[i]) dims[n++] = t0->dims[i];
    else if (keep) dims[n++] = 1;
  }
  return dp__rel_tensor(ctx, OP, t0->dtype, n, dims, 0, err);
}

/* ---------------- shape operators ---------------- */

static dp_type *concatenate_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                const dp_attrs *attrs, void *ud, dp_err **err) {
  if (args[0]->h.kind != DP_TY_TUPLE) return dp__rel_fail(err, OP, "expects a tuple of tensors");
  const dp_tuple_type *tt = (const dp_tuple_type *)args[0];
  if (tt->n == 0) return dp__rel_fail(err, OP, "expects a non-empty tuple");
  const dp_tensor_type *first = dp__arg_tensor(tt->fields, 0, OP, err);
  if (!first || first->ndim > DP__MAXDIM) return NULL;
  int ax = dp__norm_axis(dp__attr_int(OP, attrs, "axis", 0), first->ndim);
  if (ax < 0) return dp__rel_fail(err, OP, "axis out of range for rank %u", first->ndim);
  int64_t dims[DP__MAXDIM];
  int ovf = 0;
  memcpy(dims, first->dims, first->ndim * sizeof dims[0]);
  for (uint32_t k = 1; k < tt->n; k++) {
    const dp_tensor_type *t = dp__arg_tensor(tt->fields, k, OP, err);
    if (!t) return NULL;
    if (t->ndim != first->ndim || t->dtype != first->dtype)
      return dp__rel_fail(err, OP, "field %u differs in rank or dtype from field 0", k);
    for (uint32_t i = 0; i < t->ndim; i++) {
      if ((int)i == ax) {
        dims[i] = dp__dim_add(dims[i], t->dims[i], &ovf);
        continue;
      }
      if (dims[i] == DP_DIM_ANY) dims[i] = t->dims[i];
      else if (t->dims[i] != DP_DIM_ANY && t->dims[i] != dims[i])
        return dp__rel_fail(err, OP, "field %u has size %lld on axis %u, expected %lld", k,
                            (long long)t->dims[i], i, (long long)dims[i]);
    }
  }
  return dp__rel_tensor(ctx, OP, first->dtype, first->ndim, dims, ovf, err);
}

static dp_type *split_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                          const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  int ax = dp__norm_axis(dp__attr_int(OP, attrs, "axis", 0), t0->ndim);
  if (ax < 0 || t0->ndim > DP__MAXDIM) return dp__rel_fail(err, OP, "axis out of range for rank %u", t0->ndim);
  const dp_aval *ios = dp_op_attr(OP, attrs, "indices_or_sections");
  int64_t idx[DP__MAXDIM + 1], dim = t0->dims[ax];
  uint32_t nparts;
  int sections = ios && ios->kind == DP_AV_INT;
  if (sections) {
    if (ios->u.i <= 0 || ios->u.i > DP__MAXDIM) return dp__rel_fail(err, OP, "bad number of sections");
    nparts = (uint32_t)ios->u.i;
    if (dim >= 0 && dim % ios->u.i)
      return dp__rel_fail(err, OP, "axis size %lld is not divisible by %lld sections", (long long)dim,
                          (long long)ios->u.i);
  } else {
    int n = dp__attr_ints(OP, attrs, "indices_or_sections", idx, DP__MAXDIM);
    if (n < 0) return dp__rel_fail(err, OP, "needs indices_or_sections");
    nparts = (uint32_t)n + 1;
  }
  dp_type *fields[DP__MAXDIM + 1];
  int64_t dims[DP__MAXDIM];
  memcpy(dims, t0->dims, t0->ndim * sizeof dims[0]);
  for (uint32_t p = 0; p < nparts; p++) {
    int ovf = 0;
    if (sections) dims[ax] = dim < 0 ? DP_DIM_ANY : dim / (int64_t)nparts;
    else if (dim < 0 && p + 1 == nparts) dims[ax] = DP_DIM_ANY;
    else {
      int64_t begin = p ? idx[p - 1] : 0, end = p + 1 < nparts ? idx[p] : dim;
      dims[ax] = dp__sub(end, begin, &ovf);
      if (ovf || dims[ax] < 0) {
        for (uint32_t q = 0; q < p; q++) dp_release(fields[q]);
        return dp__rel_fail(err, OP, "indices must be increasing and within the axis");
      }
    }
    fields[p] = dp__rel_tensor(ctx, OP, t0->dtype, t0->ndim, dims, 0, err);
    if (!fields[p]) {
      for (uint32_t q = 0; q < p; q++) dp_release(fields[q]);
      return NULL;
    }
  }
  dp_type *res = dp_type_tuple(ctx, nparts, fields);
  for (uint32_t p = 0; p < nparts; p++) dp_release(fields[p]);
  return res;
}

/* Product of known dims; -1 if any is unknown. */
static int64_t known_size(const int64_t *dims, uint32_t n, int *ovf) {
  int64_t s = 1;
  for (uint32_t i = 0; i < n; i++) s = dp__dim_mul(s, dims[i], ovf);
  return s;
}

/* TVM's reshape special values: 0 copy, -1 infer, -2 copy the rest,
   -3 merge two, -4 split one into the next two values. */
static int reshape_dims(const int64_t *in, uint32_t nin, const int64_t *ns, int nn, int allowzero,
                        int64_t *out, uint32_t *nout, int *ovf) {
  uint32_t src = 0, n = 0;
  int infer = -1;
  for (int i = 0; i < nn; i++) {
    if (n >= DP__MAXDIM) return -1;
    int64_t v = ns[i];
    if (v > 0 || (v == 0 && allowzero)) { out[n++] = v; src++; }
    else if (v == 0) { if (src >= nin) return -1; out[n++] = in[src++]; }
    else if (v == -1) { if (infer >= 0) return -1; infer = (int)n; out[n++] = 1; src++; }
    else if (v == -2) {
      if (nin > src && nin - src > DP__MAXDIM - n) return -1;
      while (src < nin) out[n++] = in[src++];
    } else if (v == -3) {
      if (src + 1 >= nin) return -1;
      out[n++] = dp__dim_mul(in[src], in[src + 1], ovf);
      src += 2;
    } else if (v == -4) {
      if (i + 2 >= nn || src >= nin || n + 2 > DP__MAXDIM) return -1;
      int64_t d = in[src++], a = ns[i + 1], b = ns[i + 2];
      if (a == -1) a = d < 0 || b <= 0 ? DP_DIM_ANY : d / b;
      if (b == -1) b = d < 0 || a <= 0 ? DP_DIM_ANY : d / a;
      out[n++] = a;
      out[n++] = b;
      i += 2;
    } else return -1;
  }
  if (infer >= 0) {
    int64_t total = known_size(in, nin, ovf), rest = 1;
    for (uint32_t i = 0; i < n; i++)
      if ((int)i != infer) rest = dp__dim_mul(rest, out[i], ovf);
    out[infer] = total < 0 || rest <= 0 ? DP_DIM_ANY : total / rest;
  }
  *nout = n;
  return 0;
}

static dp_type *reshape_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                            const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  /* -4 a b gives two dims for three values: room for a newshape of rank DP__MAXDIM */
  int64_t ns[2 * DP__MAXDIM], out[DP__MAXDIM];
  uint32_t nout;
  int nn = dp__attr_ints(OP, attrs, "newshape", ns, 2 * DP__MAXDIM), ovf = 0;
  if (nn < 0 && dp_op_attr(OP, attrs, "newshape"))
    return dp__rel_fail(err, OP, "newshape has more than %d values", 2 * DP__MAXDIM);
  if (nn < 0) return dp__rel_fail(err, OP, "needs a newshape attribute");
  if (reshape_dims(t0->dims, t0->ndim, ns, nn, (int)dp__attr_int(OP, attrs, "allowzero", 0), out,
                   &nout, &ovf) < 0)
    return dp__rel_fail(err, OP, "bad newshape for an input of rank %u", t0->ndim);
  int64_t a = known_size(t0->dims, t0->ndim, &ovf), b = known_size(out, nout, &ovf);
  if (!ovf && a >= 0 && b >= 0 && a != b) {
    char s[128];
    return dp__rel_fail(err, OP, "cannot reshape %s (%lld elements) to %lld elements",
                        dp__type_brief(args[0], s, sizeof s), (long long)a, (long long)b);
  }
  return dp__rel_tensor(ctx, OP, t0->dtype, nout, out, ovf, err);
}

static dp_type *reshape_like_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                 const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  TENSOR(1);
  int64_t lb = dp__attr_int(OP, attrs, "lhs_begin", 0), le = dp__attr_int(OP, attrs, "lhs_end", t0->ndim);
  int64_t rb = dp__attr_int(OP, attrs, "rhs_begin", 0), re = dp__attr_int(OP, attrs, "rhs_end", t1->ndim);
  if (lb < 0) lb += t0->ndim;
  if (le < 0) le += t0->ndim;
  if (rb < 0) rb += t1->ndim;
  if (re < 0) re += t1->ndim;
  if (lb < 0 || le > t0->ndim || lb > le || rb < 0 || re > t1->ndim || rb > re ||
      t0->ndim - (le - lb) + (re - rb) > DP__MAXDIM)
    return dp__rel_fail(err, OP, "begin/end attributes out of range");
  int64_t dims[DP__MAXDIM];
  uint32_t n = 0;
  for (int64_t i = 0; i < lb; i++) dims[n++] = t0->dims[i];
  for (int64_t i = rb; i < re; i++) dims[n++] = t1->dims[i];
  for (int64_t i = le; i < t0->ndim; i++) dims[n++] = t0->dims[i];
  int ovf = 0;
  int64_t a = known_size(t0->dims, t0->ndim, &ovf), b = known_size(dims, n, &ovf);
  if (!ovf && a >= 0 && b >= 0 && a != b)
    return dp__rel_fail(err, OP, "element counts differ (%lld and %lld)", (long long)a, (long long)b);
  return dp__rel_tensor(ctx, OP, t0->dtype, n, dims, ovf, err);
}

static dp_type *init_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                         const dp_attrs *attrs, void *ud, dp_err **err) {
  int64_t dims[DP__MAXDIM];
  int n = dp__attr_ints(OP, attrs, "shape", dims, DP__MAXDIM);
  if (n < 0) return dp__rel_fail(err, OP, "needs a shape attribute");
  dp_dtype dt = dp__attr_dtype(OP, attrs, "dtype", DP_FLOAT32);
  return dp__rel_tensor(ctx, OP, dt, (uint32_t)n, dims, 0, err);
}

static dp_type *transpose_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                              const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  int64_t axes[DP__MAXDIM], dims[DP__MAXDIM];
  char seen[DP__MAXDIM] = {0};
  if (t0->ndim > DP__MAXDIM) return dp__rel_fail(err, OP, "too many dimensions");
  int n = dp__attr_ints(OP, attrs, "axes", axes, DP__MAXDIM);
  if (n < 0) {
    for (uint32_t i = 0; i < t0->ndim; i++) dims[i] = t0->dims[t0->ndim - 1 - i];
    return dp__rel_tensor(ctx, OP, t0->dtype, t0->ndim, dims, 0, err);
  }
  if ((uint32_t)n != t0->ndim) return dp__rel_fail(err, OP, "axes must have %u entries", t0->ndim);
  for (int i = 0; i < n; i++) {
    int ax = dp__norm_axis(axes[i], t0->ndim);
    if (ax < 0 || seen[ax]++) return dp__rel_fail(err, OP, "axes must be a permutation");
    dims[i] = t0->dims[ax];
  }
  return dp__rel_tensor(ctx, OP, t0->dtype, t0->ndim, dims, 0, err);
}

static dp_type *squeeze_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                            const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  int64_t axes[DP__MAXDIM], dims[DP__MAXDIM];
  char drop[DP__MAXDIM] = {0};
  if (t0->ndim > DP__MAXDIM) return dp__rel_fail(err, OP, "too many dimensions");
  int n = dp__attr_ints(OP, attrs, "axis", axes, DP__MAXDIM);
  for (uint32_t i = 0; n < 0 && i < t0->ndim; i++) drop[i] = t0->dims[i] == 1;
  for (int i = 0; i < n; i++) {
    int ax = dp__norm_axis(axes[i], t0->ndim);
    if (ax < 0) return dp__rel_fail(err, OP, "axis %lld out of range", (long long)axes[i]);
    if (t0->dims[ax] != 1 && t0->dims[ax] != DP_DIM_ANY)
      return dp__rel_fail(err, OP, "axis %d has size %lld, not 1", ax, (long long)t0->dims[ax]);
    drop[ax] = 1;
  }
  uint32_t m = 0;
  for (uint32_t i = 0; i < t0->ndim; i++)
    if (!drop[i]) dims[m++] = t0->dims[i];
  return dp__rel_tensor(ctx, OP, t0->dtype, m, dims, 0, err);
}

static dp_type *expand_dims_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  int64_t axis = dp__attr_int(OP, attrs, "axis", 0), k = dp__attr_int(OP, attrs, "num_newaxis", 1);
  if (axis < 0) axis += t0->ndim + 1;
  if (axis < 0 || axis > t0->ndim) return dp__rel_fail(err, OP, "axis out of range for rank %u", t0->ndim);
  if (k < 0 || t0->ndim > DP__MAXDIM || k > DP__MAXDIM - (int64_t)t0->ndim)
    return dp__rel_fail(err, OP, "num_newaxis=%lld on rank %u exceeds rank %d", (long long)k, t0->ndim,
                        DP__MAXDIM);
  int64_t dims[DP__MAXDIM];
  uint32_t n = 0;
  for (uint32_t i = 0; i < t0->ndim + 1; i++) {
    if (i == axis)
      for (int64_t j = 0; j < k; j++) dims[n++] = 1;
    if (i < t0->ndim) dims[n++] = t0->dims[i];
  }
  return dp__rel_tensor(ctx, OP, t0->dtype, n, dims, 0, err);
}

/* ---------------- layout_transform ---------------- */

/* A layout such as "NCHW4c": primal axes (upper case) and sub-axes with
   their factor (lower case, preceded by the factor). */
typedef struct layout {
  uint32_t n;
  char axis[DP__MAXDIM];     /* the letter as written */
  int64_t factor[DP__MAXDIM]; /* sub-axes: factor; primal: 0 */
} layout;

static int parse_layout(const char *s, layout *l) {
  l->n = 0;
  while (*s) {
    int64_t f = 0;
    int ovf = 0;
    while (isdigit((unsigned char)*s)) f = dp__add(dp__mul(f, 10, &ovf), *s++ - '0', &ovf);
    if (ovf || !isalpha((unsigned char)*s) || l->n == DP__MAXDIM) return -1;
    if (isupper((unsigned char)*s) ? f != 0 : f <= 0) return -1;
    l->axis[l->n] = *s++;
    l->factor[l->n++] = f;
  }
  return 0;
}

static int64_t sub_factor(const layout *l, char primal) {
  for (uint32_t i = 0; i < l->n; i++)
    if (l->axis[i] == tolower((unsigned char)primal)) return l->factor[i];
  return 1;
}

static dp_type *layout_transform_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                     const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  layout src, dst;
  if (parse_layout(dp__attr_string(OP, attrs, "src_layout", ""), &src) < 0 ||
      parse_layout(dp__attr_string(OP, attrs, "dst_layout", ""), &dst) < 0)
    return dp__rel_fail(err, OP, "bad layout string");
  if (src.n != t0->ndim) return dp__rel_fail(err, OP, "src_layout has %u axes, data has rank %u", src.n, t0->ndim);
  int64_t dims[DP__MAXDIM];
  int ovf = 0;
  for (uint32_t i = 0; i < dst.n; i++) {
    char a = dst.axis[i];
    if (dst.factor[i]) { dims[i] = dst.factor[i]; continue; }
    int64_t size = DP_DIM_ANY;
    int found = 0;
    for (uint32_t j = 0; j < src.n; j++)
      if (src.axis[j] == a) {
        size = dp__dim_mul(t0->dims[j], sub_factor(&src, a), &ovf);
        found = 1;
      }
    if (!found) return dp__rel_fail(err, OP, "axis %c of dst_layout is not in src_layout", a);
    int64_t f = sub_factor(&dst, a);
    if (size >= 0 && size % f)
      return dp__rel_fail(err, OP, "axis %c of size %lld does not split by %lld", a, (long long)size, (long long)f);
    dims[i] = size < 0 ? DP_DIM_ANY : size / f;
  }
  return dp__rel_tensor(ctx, OP, t0->dtype, dst.n, dims, ovf, err);
}

static const dp__opdef defs[] = {
  {"add", 2, 0, "", broadcast_rel, K_BROADCAST},
  {"subtract", 2, 0, "", broadcast_rel, K_BROADCAST},
  {"multiply", 2, 0, "", broadcast_rel, K_BROADCAST},
  {"divide", 2, 0, "", broadcast_rel, K_BROADCAST},
  {"power", 2, 0, "", broadcast_rel, K_BROADCAST},
  {"maximum", 2, 0, "", broadcast_rel, K_BROADCAST},
  {"minimum", 2, 0, "", broadcast_rel, K_BROADCAST},
  {"floor_divide", 2, 0, "", broadcast_rel, K_BROADCAST},
  {"mod", 2, 0, "", broadcast_rel, K_BROADCAST},
  {"logical_and", 2, 0, "", broadcast_rel, K_BROADCAST},
  {"logical_or", 2, 0, "", broadcast_rel, K_BROADCAST},
  {"equal", 2, 0, "", compare_rel, K_BROADCAST},
  {"not_equal", 2, 0, "", compare_rel, K_BROADCAST},
  {"less", 2, 0, "", compare_rel, K_BROADCAST},
  {"less_equal", 2, 0, "", compare_rel, K_BROADCAST},
  {"greater", 2, 0, "", compare_rel, K_BROADCAST},
  {"greater_equal", 2, 0, "", compare_rel, K_BROADCAST},
  {"negative", 1, 0, "", same_rel, K_ELEMWISE},
  {"exp", 1, 0, "", same_rel, K_ELEMWISE},
  {"log", 1, 0, "", same_rel, K_ELEMWISE},
  {"sqrt", 1, 0, "", same_rel, K_ELEMWISE},
  {"rsqrt", 1, 0, "", same_rel, K_ELEMWISE},
  {"abs", 1, 0, "", same_rel, K_ELEMWISE},
  {"floor", 1, 0, "", same_rel, K_ELEMWISE},
  {"ceil", 1, 0, "", same_rel, K_ELEMWISE},
  {"round", 1, 0, "", same_rel, K_ELEMWISE},
  {"erf", 1, 0, "", same_rel, K_ELEMWISE},
  {"sigmoid", 1, 0, "", same_rel, K_ELEMWISE},
  {"tanh", 1, 0, "", same_rel, K_ELEMWISE},
  {"logical_not", 1, 0, "", same_rel, K_ELEMWISE},
  {"copy", 1, 0, "", same_rel, K_ELEMWISE},
  {"zeros_like", 1, 0, "", same_rel, K_ELEMWISE},
  {"ones_like", 1, 0, "", same_rel, K_ELEMWISE},
  {"clip", 1, 0, "a_min:float a_max:float", same_rel, K_ELEMWISE},
  {"cast", 1, 0, "dtype:dtype", cast_rel, K_ELEMWISE},
  {"sum", 1, 0, "axis:ints=None keepdims:bool=False exclude:bool=False", reduce_rel, K_REDUCE},
  {"mean", 1, 0, "axis:ints=None keepdims:bool=False exclude:bool=False", reduce_rel, K_REDUCE},
  {"max", 1, 0, "axis:ints=None keepdims:bool=False exclude:bool=False", reduce_rel, K_REDUCE},
  {"min", 1, 0, "axis:ints=None keepdims:bool=False exclude:bool=False", reduce_rel, K_REDUCE},
  {"prod", 1, 0, "axis:ints=None keepdims:bool=False exclude:bool=False", reduce_rel, K_REDUCE},
  {"concatenate", 1, 0, "axis:int=0", concatenate_rel, K_INJECTIVE},
  {"split", 1, 0, "indices_or_sections:int_or_ints axis:int=0", split_rel, K_INJECTIVE},
  {"reshape", 1, 0, "newshape:ints allowzero:int=0", reshape_rel, K_INJECTIVE},
  {"reshape_like", 2, 0,
   "lhs_begin:int=0 lhs_end:int_or_none=None rhs_begin:int=0 rhs_end:int_or_none=None",
   reshape_like_rel, K_INJECTIVE},
  {"zeros", 0, 0, "shape:ints dtype:dtype=", init_rel, K_ELEMWISE},
  {"ones", 0, 0, "shape:ints dtype:dtype=", init_rel, K_ELEMWISE},
  {"transpose", 1, 0, "axes:ints=None", transpose_rel, K_INJECTIVE},
  {"squeeze", 1, 0, "axis:ints=None", squeeze_rel, K_INJECTIVE},
  {"expand_dims", 1, 0, "axis:int num_newaxis:int=1", expand_dims_rel, K_BROADCAST},
  {"layout_transform", 1, 0, "src_layout:str dst_layout:str", layout_transform_rel, K_INJECTIVE},
};

int dp__register_tensor_ops(dp_ctx *ctx, dp_err **err) {
  return dp__register_opdefs(ctx, defs, sizeof defs / sizeof defs[0], err);
}
