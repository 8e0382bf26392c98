/*
 * Evaluation at import: the operators of the subgraphs exporters write to
 * compute shapes and constants (Shape, Gather, Concat, Unsqueeze, Range,
 * Equal, Where, Mod, Not, ScatterND, ConstantOfShape, Expand, ...), on
 * tensors known at import (value.c). The driver (import.c) calls an
 * evaluator when every input of the node is known; what it computes may
 * feed other evaluators, or become an attribute (a reshape's new shape) or
 * a constant of the module. Semantics are ONNX's; integer arithmetic wraps
 * as two's complement (never undefined behaviour in C), a division by zero
 * is an error.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static dp__ot *make(dp__onnx *X, dp_dtype dt, uint32_t ndim, const int64_t *dims) {
  const char *why;
  dp__ot *t = dp__ot_new(dt, ndim, dims, &why);
  if (!t) {
    if (why) dp__ox_fail(X, DP_ERR_VALUE, "its result at import would have %s", why);
    else dp__ox_fail(X, DP_ERR_MEMORY, "out of memory");
  }
  return t;
}

static dp__ot *copy_of(dp__onnx *X, const dp__ot *v) {
  dp__ot *t = make(X, v->dtype, v->ndim, v->dims);
  if (t && v->n) memcpy(t->data, v->data, v->n * dp_elem_bytes(v->dtype));
  return t;
}

static int is_real(dp_dtype d) { return DP_DTYPE_CODE(d) == DP_DT_FLOAT || DP_DTYPE_CODE(d) == DP_DT_BFLOAT; }

/* A list of integers from a known 0-D or 1-D tensor. */
static int ints_of(dp__onnx *X, const dp__ot *v, int64_t *out, int max, const char *what) {
  if (v->ndim > 1 || v->n > (size_t)max)
    return dp__ox_fail(X, DP_ERR_VALUE, "its %s must be a list of at most %d integers", what, max);
  for (size_t i = 0; i < v->n; i++) out[i] = dp__ot_int(v, i);
  return (int)v->n;
}

/* Axes from the attribute (opset < 13, or always for some) or input k. */
static int axes_of(dp__onnx *X, uint32_t k, int64_t *axes) {
  int n = dp__ox_attr_ints(X, "axes", axes, DP__OT_MAXDIM);
  if (n != -1) return n;
  if (!dp__ox_has(X, k)) return -1;
  const dp__ot *v = dp__ox_value(X, k, "axes");
  return v ? ints_of(X, v, axes, DP__OT_MAXDIM, "axes") : -2;
}

static int norm_axis(dp__onnx *X, int64_t a, uint32_t rank) {
  int64_t r = a < 0 ? a + rank : a;
  if (r < 0 || r >= (int64_t)rank) return dp__ox_fail(X, DP_ERR_VALUE, "axis %lld is out of range for rank %u", (long long)a, rank);
  return (int)r;
}

/* ---------------- shapes ---------------- */

static int ev_shape(dp__onnx *X) {
  const dp_tensor_type *t = dp__ox_type(X, 0);
  if (!t) return -1;
  int64_t r = t->ndim, start = dp__ox_attr_int(X, "start", 0), end = dp__ox_attr_int(X, "end", r);
  start = start < 0 ? start + r : start;
  end = end < 0 ? end + r : end;
  start = start < 0 ? 0 : start > r ? r : start;
  end = end < 0 ? 0 : end > r ? r : end;
  int64_t n = end > start ? end - start : 0;
  for (int64_t i = start; i < end; i++)
    if (t->dims[i] < 0) return dp__ox_fail(X, DP_ERR_VALUE, "the shape of its input has an unknown dimension %lld", (long long)i);
  dp__ot *v = make(X, DP_INT64, 1, &n);
  if (!v) return -1;
  for (int64_t i = 0; i < n; i++) dp__ot_set_int(v, (size_t)i, t->dims[start + i]);
  return dp__ox_out_value(X, 0, v);
}

static int ev_size(dp__onnx *X) {
  const dp_tensor_type *t = dp__ox_type(X, 0);
  if (!t) return -1;
  int64_t n = 1;
  for (uint32_t i = 0; i < t->ndim; i++) {
    if (t->dims[i] < 0) return dp__ox_fail(X, DP_ERR_VALUE, "the shape of its input has an unknown dimension %u", i);
    if (__builtin_mul_overflow(n, t->dims[i], &n)) return dp__ox_fail(X, DP_ERR_VALUE, "the size overflows int64");
  }
  dp__ot *v = make(X, DP_INT64, 0, NULL);
  if (!v) return -1;
  dp__ot_set_int(v, 0, n);
  return dp__ox_out_value(X, 0, v);
}

static int ev_constant(dp__onnx *X) {
  const Onnx__AttributeProto *a = dp__ox_attr(X, "value");
  dp__ot *v = NULL;
  if (a) v = dp__ox_attr_tensor(X, a);
  else if ((a = dp__ox_attr(X, "value_float")) && a->has_f) {
    if ((v = make(X, DP_FLOAT32, 0, NULL))) dp__ot_set_real(v, 0, a->f);
  } else if ((a = dp__ox_attr(X, "value_int")) && a->has_i) {
    if ((v = make(X, DP_INT64, 0, NULL))) dp__ot_set_int(v, 0, a->i);
  } else if ((a = dp__ox_attr(X, "value_floats"))) {
    int64_t n = (int64_t)a->n_floats;
    if ((v = make(X, DP_FLOAT32, 1, &n)))
      for (size_t i = 0; i < a->n_floats; i++) dp__ot_set_real(v, i, a->floats[i]);
  } else if ((a = dp__ox_attr(X, "value_ints"))) {
    int64_t n = (int64_t)a->n_ints;
    if ((v = make(X, DP_INT64, 1, &n)))
      for (size_t i = 0; i < a->n_ints; i++) dp__ot_set_int(v, i, a->ints[i]);
  } else {
    return dp__ox_fail(X, DP_ERR_VALUE, "a Constant needs a value attribute (value, value_float, value_int, "
                                        "value_floats or value_ints; sparse and string values are not supported)");
  }
  return v ? dp__ox_out_value(X, 0, v) : -1;
}

static int ev_constant_of_shape(dp__onnx *X) {
  const dp__ot *s = dp__ox_value(X, 0, "shape");
  int64_t dims[DP__OT_MAXDIM];
  if (!s) return -1;
  int n = ints_of(X, s, dims, DP__OT_MAXDIM, "shape");
  if (n < 0) return -1;
  const Onnx__AttributeProto *a = dp__ox_attr(X, "value");
  dp__ot *fill = a ? dp__ox_attr_tensor(X, a) : NULL;
  if (a && !fill) return -1;
  if (fill && fill->n != 1) {
    dp__ot_free(fill);
    return dp__ox_fail(X, DP_ERR_VALUE, "its value must hold one element");
  }
  dp__ot *v = make(X, fill ? fill->dtype : DP_FLOAT32, (uint32_t)n, dims);
  if (v && fill) {
    size_t eb = dp_elem_bytes(v->dtype);
    for (size_t i = 0; i < v->n; i++) memcpy((char *)v->data + i * eb, fill->data, eb);
  }
  dp__ot_free(fill);
  return v ? dp__ox_out_value(X, 0, v) : -1;
}

static int ev_identity(dp__onnx *X) {
  const dp__ot *v = dp__ox_value(X, 0, "input");
  dp__ot *r = v ? copy_of(X, v) : NULL;
  return r ? dp__ox_out_value(X, 0, r) : -1;
}

static int ev_cast(dp__onnx *X) {
  const dp__ot *v = dp__ox_value(X, 0, "input");
  if (!v) return -1;
  int64_t to = dp__ox_attr_int(X, "to", 0);
  dp_dtype dt = dp__onnx_dtype((int32_t)to);
  if (!dt) return dp__ox_fail(X, DP_ERR_VALUE, "a cast to %s is not supported", dp__onnx_elem_name((int32_t)to));
  dp__ot *r = make(X, dt, v->ndim, v->dims);
  if (!r) return -1;
  for (size_t i = 0; i < v->n; i++) {
    if (is_real(v->dtype)) dp__ot_set_real(r, i, dp__ot_real(v, i));
    else dp__ot_set_int(r, i, dp__ot_int(v, i));
  }
  return dp__ox_out_value(X, 0, r);
}

/* Row-major strides of a shape. */
static void strides_of(uint32_t ndim, const int64_t *dims, int64_t *st) {
  int64_t s = 1;
  for (uint32_t i = ndim; i-- > 0;) {
    st[i] = s;
    s *= dims[i];
  }
}

static int ev_gather(dp__onnx *X) {
  const dp__ot *d = dp__ox_value(X, 0, "data"), *ix = d ? dp__ox_value(X, 1, "indices") : NULL;
  if (!ix) return -1;
  if (d->ndim == 0) return dp__ox_fail(X, DP_ERR_VALUE, "it gathers from a scalar");
  int ax = norm_axis(X, dp__ox_attr_int(X, "axis", 0), d->ndim);
  if (ax < 0) return -1;
  uint32_t n = d->ndim - 1 + ix->ndim;
  if (n > DP__OT_MAXDIM) return dp__ox_fail(X, DP_ERR_VALUE, "its result has more than 64 dimensions");
  int64_t dims[DP__OT_MAXDIM];
  uint32_t k = 0;
  for (int i = 0; i < ax; i++) dims[k++] = d->dims[i];
  for (uint32_t i = 0; i < ix->ndim; i++) dims[k++] = ix->dims[i];
  for (uint32_t i = (uint32_t)ax + 1; i < d->ndim; i++) dims[k++] = d->dims[i];
  dp__ot *r = make(X, d->dtype, n, dims);
  if (!r) return -1;
  if (r->n == 0) return dp__ox_out_value(X, 0, r); /* nothing to copy (and no buffer) */
  size_t outer = 1, inner = 1, eb = dp_elem_bytes(d->dtype);
  for (int i = 0; i < ax; i++) outer *= (size_t)d->dims[i];
  for (uint32_t i = (uint32_t)ax + 1; i < d->ndim; i++) inner *= (size_t)d->dims[i];
  int64_t len = d->dims[ax];
  for (size_t o = 0; o < outer; o++)
    for (size_t j = 0; j < ix->n; j++) {
      int64_t at = dp__ot_int(ix, j);
      if (at < -len || at >= len) {
        dp__ot_free(r);
        return dp__ox_fail(X, DP_ERR_VALUE, "index %lld is out of range for a dimension of %lld", (long long)at, (long long)len);
      }
      if (at < 0) at += len;
      memcpy((char *)r->data + ((o * ix->n + j) * inner) * eb, (char *)d->data + ((o * (size_t)len + (size_t)at) * inner) * eb,
             inner * eb);
    }
  return dp__ox_out_value(X, 0, r);
}

static int ev_unsqueeze(dp__onnx *X) {
  const dp__ot *v = dp__ox_value(X, 0, "data");
  int64_t axes[DP__OT_MAXDIM], dims[DP__OT_MAXDIM];
  if (!v) return -1;
  int na = axes_of(X, 1, axes);
  if (na < 0) return na == -1 ? dp__ox_fail(X, DP_ERR_VALUE, "it needs axes") : -1;
  uint32_t r = v->ndim + (uint32_t)na;
  if (r > DP__OT_MAXDIM) return dp__ox_fail(X, DP_ERR_VALUE, "its result has more than 64 dimensions");
  char mark[DP__OT_MAXDIM] = {0};
  for (int i = 0; i < na; i++) {
    int a = norm_axis(X, axes[i], r);
    if (a < 0) return -1;
    if (mark[a]++) return dp__ox_fail(X, DP_ERR_VALUE, "axis %lld is given twice", (long long)axes[i]);
  }
  for (uint32_t i = 0, k = 0; i < r; i++) dims[i] = mark[i] ? 1 : v->dims[k++];
  dp__ot *o = copy_of(X, v);
  if (!o) return -1;
  o->ndim = r;
  memcpy(o->dims, dims, r * sizeof dims[0]);
  return dp__ox_out_value(X, 0, o);
}

static int ev_squeeze(dp__onnx *X) {
  const dp__ot *v = dp__ox_value(X, 0, "data");
  int64_t axes[DP__OT_MAXDIM];
  if (!v) return -1;
  int na = axes_of(X, 1, axes);
  if (na == -2) return -1;
  char mark[DP__OT_MAXDIM] = {0};
  for (int i = 0; i < na; i++) {
    int a = norm_axis(X, axes[i], v->ndim);
    if (a < 0) return -1;
    if (v->dims[a] != 1) return dp__ox_fail(X, DP_ERR_VALUE, "axis %d has size %lld, not 1", a, (long long)v->dims[a]);
    mark[a] = 1;
  }
  dp__ot *o = copy_of(X, v);
  if (!o) return -1;
  uint32_t k = 0;
  for (uint32_t i = 0; i < v->ndim; i++)
    if (na >= 0 ? !mark[i] : v->dims[i] != 1) o->dims[k++] = v->dims[i];
  o->ndim = k;
  return dp__ox_out_value(X, 0, o);
}

static int ev_concat(dp__onnx *X) {
  uint32_t n = dp__ox_nin(X);
  if (n == 0) return dp__ox_fail(X, DP_ERR_VALUE, "it has no inputs");
  const dp__ot *first = dp__ox_value(X, 0, "input");
  if (!first) return -1;
  if (first->ndim == 0) return dp__ox_fail(X, DP_ERR_VALUE, "it concatenates scalars");
  int ax = norm_axis(X, dp__ox_attr_int(X, "axis", 0), first->ndim);
  if (ax < 0) return -1;
  int64_t dims[DP__OT_MAXDIM];
  memcpy(dims, first->dims, first->ndim * sizeof dims[0]);
  dims[ax] = 0;
  for (uint32_t i = 0; i < n; i++) {
    const dp__ot *v = dp__ox_value(X, i, "input");
    if (!v) return -1;
    if (v->ndim != first->ndim || v->dtype != first->dtype)
      return dp__ox_fail(X, DP_ERR_VALUE, "input %u differs from input 0 in rank or type", i);
    for (uint32_t d = 0; d < v->ndim; d++)
      if ((int)d != ax && v->dims[d] != first->dims[d])
        return dp__ox_fail(X, DP_ERR_VALUE, "input %u differs from input 0 in dimension %u", i, d);
    dims[ax] += v->dims[ax];
  }
  dp__ot *r = make(X, first->dtype, first->ndim, dims);
  if (!r) return -1;
  if (r->n == 0) return dp__ox_out_value(X, 0, r);
  size_t outer = 1, inner = 1, eb = dp_elem_bytes(r->dtype), at = 0;
  for (int i = 0; i < ax; i++) outer *= (size_t)dims[i];
  for (uint32_t i = (uint32_t)ax + 1; i < r->ndim; i++) inner *= (size_t)dims[i];
  for (size_t o = 0; o < outer; o++)
    for (uint32_t i = 0; i < n; i++) {
      const dp__ot *v = dp__ox_known(X, i);
      size_t chunk = (size_t)v->dims[ax] * inner * eb;
      if (!chunk) continue;
      memcpy((char *)r->data + at, (char *)v->data + o * chunk, chunk);
      at += chunk;
    }
  return dp__ox_out_value(X, 0, r);
}

/* ONNX Slice's clamping of one axis: the first index and the count. */
static void slice_axis(int64_t dim, int64_t b, int64_t e, int64_t s, int64_t *first, int64_t *count) {
  if (s > 0) {
    b = b < 0 ? (b < -dim ? 0 : b + dim) : (b > dim ? dim : b);
    e = e < 0 ? (e < -dim ? 0 : e + dim) : (e > dim ? dim : e);
    *count = e > b ? (e - b - 1) / s + 1 : 0;
  } else {
    b = b < 0 ? (b < -dim ? -1 : b + dim) : (b > dim - 1 ? dim - 1 : b);
    e = e < 0 ? (e < -dim ? -1 : e + dim) : (e > dim - 1 ? dim - 1 : e);
    *count = b > e ? (b - e - 1) / -s + 1 : 0;
  }
  *first = b;
}

static int ev_slice(dp__onnx *X) {
  const dp__ot *v = dp__ox_value(X, 0, "data");
  int64_t st[DP__OT_MAXDIM], en[DP__OT_MAXDIM], ax[DP__OT_MAXDIM], sp[DP__OT_MAXDIM];
  if (!v) return -1;
  const dp__ot *s = dp__ox_value(X, 1, "starts"), *e = s ? dp__ox_value(X, 2, "ends") : NULL;
  if (!e) return -1;
  int n = ints_of(X, s, st, DP__OT_MAXDIM, "starts");
  if (n < 0 || ints_of(X, e, en, DP__OT_MAXDIM, "ends") != n) return n < 0 || X->err ? -1 : dp__ox_fail(X, DP_ERR_VALUE, "starts and ends differ in length");
  for (int i = 0; i < n; i++) ax[i] = i, sp[i] = 1;
  if (dp__ox_has(X, 3)) {
    const dp__ot *a = dp__ox_value(X, 3, "axes");
    if (!a || ints_of(X, a, ax, DP__OT_MAXDIM, "axes") != n) return X->err ? -1 : dp__ox_fail(X, DP_ERR_VALUE, "axes and starts differ in length");
  }
  if (dp__ox_has(X, 4)) {
    const dp__ot *p = dp__ox_value(X, 4, "steps");
    if (!p || ints_of(X, p, sp, DP__OT_MAXDIM, "steps") != n) return X->err ? -1 : dp__ox_fail(X, DP_ERR_VALUE, "steps and starts differ in length");
  }
  int64_t first[DP__OT_MAXDIM], step[DP__OT_MAXDIM], dims[DP__OT_MAXDIM], vst[DP__OT_MAXDIM];
  for (uint32_t d = 0; d < v->ndim; d++) first[d] = 0, step[d] = 1, dims[d] = v->dims[d];
  char seen[DP__OT_MAXDIM] = {0};
  for (int i = 0; i < n; i++) {
    int a = norm_axis(X, ax[i], v->ndim);
    if (a < 0) return -1;
    if (seen[a]++) return dp__ox_fail(X, DP_ERR_VALUE, "axis %d is sliced twice", a);
    if (sp[i] == 0) return dp__ox_fail(X, DP_ERR_VALUE, "a step of 0");
    step[a] = sp[i] == INT64_MIN ? -INT64_MAX : sp[i];
    slice_axis(v->dims[a], st[i], en[i], step[a], &first[a], &dims[a]);
  }
  dp__ot *r = make(X, v->dtype, v->ndim, dims);
  if (!r) return -1;
  strides_of(v->ndim, v->dims, vst);
  size_t eb = dp_elem_bytes(v->dtype);
  int64_t idx[DP__OT_MAXDIM] = {0};
  for (size_t o = 0; o < r->n; o++) {
    int64_t off = 0;
    for (uint32_t d = 0; d < v->ndim; d++) off += (first[d] + idx[d] * step[d]) * vst[d];
    memcpy((char *)r->data + o * eb, (char *)v->data + (size_t)off * eb, eb);
    for (uint32_t d = v->ndim; d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return dp__ox_out_value(X, 0, r);
}

/* ONNX Reshape's new shape (0 copies, -1 infers), checked. */
int dp__onnx_reshape_dims(dp__onnx *X, uint32_t ndim, const int64_t *in, const int64_t *want, int n,
                          int allowzero, int64_t *out) {
  int64_t total = 1, known = 1;
  int infer = -1;
  for (uint32_t i = 0; i < ndim; i++) total *= in[i];
  for (int i = 0; i < n; i++) {
    int64_t d = want[i];
    if (d == 0 && !allowzero) {
      if ((uint32_t)i >= ndim) return dp__ox_fail(X, DP_ERR_VALUE, "new shape copies dimension %d, which the input lacks", i);
      d = in[i];
    } else if (d == -1) {
      if (infer >= 0) return dp__ox_fail(X, DP_ERR_VALUE, "new shape has two -1 dimensions");
      infer = i;
      out[i] = 1;
      continue;
    } else if (d < -1) return dp__ox_fail(X, DP_ERR_VALUE, "new shape has a dimension of %lld", (long long)d);
    out[i] = d;
    if (__builtin_mul_overflow(known, d, &known)) return dp__ox_fail(X, DP_ERR_VALUE, "new shape overflows int64");
  }
  if (infer >= 0) {
    if (known == 0 || total % known) return dp__ox_fail(X, DP_ERR_VALUE, "cannot infer the -1 of the new shape for %lld elements", (long long)total);
    out[infer] = total / known;
  } else if (known != total) {
    return dp__ox_fail(X, DP_ERR_VALUE, "new shape holds %lld elements, the input %lld", (long long)known, (long long)total);
  }
  return 0;
}

static int ev_reshape(dp__onnx *X) {
  const dp__ot *v = dp__ox_value(X, 0, "data"), *s = v ? dp__ox_value(X, 1, "shape") : NULL;
  int64_t want[DP__OT_MAXDIM], dims[DP__OT_MAXDIM];
  if (!s) return -1;
  int n = ints_of(X, s, want, DP__OT_MAXDIM, "shape");
  if (n < 0 || dp__onnx_reshape_dims(X, v->ndim, v->dims, want, n, (int)dp__ox_attr_int(X, "allowzero", 0), dims) < 0) return -1;
  dp__ot *o = copy_of(X, v);
  if (!o) return -1;
  o->ndim = (uint32_t)n;
  memcpy(o->dims, dims, (size_t)n * sizeof dims[0]);
  return dp__ox_out_value(X, 0, o);
}

static int ev_flatten(dp__onnx *X) {
  const dp__ot *v = dp__ox_value(X, 0, "input");
  if (!v) return -1;
  int64_t a = dp__ox_attr_int(X, "axis", 1);
  if (a < 0) a += v->ndim;
  if (a < 0 || a > (int64_t)v->ndim) return dp__ox_fail(X, DP_ERR_VALUE, "axis out of range");
  int64_t d[2] = {1, 1};
  for (uint32_t i = 0; i < v->ndim; i++) d[(int64_t)i >= a] *= v->dims[i];
  dp__ot *o = copy_of(X, v);
  if (!o) return -1;
  o->ndim = 2;
  o->dims[0] = d[0];
  o->dims[1] = d[1];
  return dp__ox_out_value(X, 0, o);
}

static int ev_transpose(dp__onnx *X) {
  const dp__ot *v = dp__ox_value(X, 0, "data");
  int64_t perm[DP__OT_MAXDIM], dims[DP__OT_MAXDIM], st[DP__OT_MAXDIM];
  if (!v) return -1;
  int n = dp__ox_attr_ints(X, "perm", perm, DP__OT_MAXDIM);
  if (n == -2) return -1;
  if (n < 0) {
    n = (int)v->ndim;
    for (int i = 0; i < n; i++) perm[i] = n - 1 - i;
  }
  if ((uint32_t)n != v->ndim) return dp__ox_fail(X, DP_ERR_VALUE, "perm has %d values for rank %u", n, v->ndim);
  char seen[DP__OT_MAXDIM] = {0};
  for (int i = 0; i < n; i++) {
    if (perm[i] < 0 || perm[i] >= n || seen[perm[i]]++) return dp__ox_fail(X, DP_ERR_VALUE, "perm is not a permutation");
    dims[i] = v->dims[perm[i]];
  }
  dp__ot *r = make(X, v->dtype, v->ndim, dims);
  if (!r) return -1;
  strides_of(v->ndim, v->dims, st);
  size_t eb = dp_elem_bytes(v->dtype);
  int64_t idx[DP__OT_MAXDIM] = {0};
  for (size_t o = 0; o < r->n; o++) {
    int64_t off = 0;
    for (int d = 0; d < n; d++) off += idx[d] * st[perm[d]];
    memcpy((char *)r->data + o * eb, (char *)v->data + (size_t)off * eb, eb);
    for (int d = n; d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return dp__ox_out_value(X, 0, r);
}

/* ---------------- elementwise, with broadcasting ---------------- */

static int broadcast(dp__onnx *X, uint32_t k, const dp__ot *const *in, uint32_t *ndim, int64_t *dims) {
  uint32_t r = 0;
  for (uint32_t j = 0; j < k; j++) r = in[j]->ndim > r ? in[j]->ndim : r;
  for (uint32_t i = 0; i < r; i++) {
    int64_t d = 1;
    for (uint32_t j = 0; j < k; j++) {
      int64_t s = i < in[j]->ndim ? in[j]->dims[in[j]->ndim - 1 - i] : 1;
      if (s == d || s == 1) continue;
      if (d != 1) return dp__ox_fail(X, DP_ERR_VALUE, "its inputs' shapes do not broadcast");
      d = s;
    }
    dims[r - 1 - i] = d;
  }
  *ndim = r;
  return 0;
}

/* Offset into t of the output index idx (of rank r), broadcasting. */
static size_t offset_in(const dp__ot *t, uint32_t r, const int64_t *idx) {
  size_t off = 0;
  for (uint32_t d = 0; d < t->ndim; d++) {
    int64_t c = t->dims[d] == 1 ? 0 : idx[d + r - t->ndim];
    off = off * (size_t)t->dims[d] + (size_t)c;
  }
  return off;
}

typedef enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MOD, B_FMOD, B_POW, B_MIN, B_MAX, B_EQ, B_LT, B_GT, B_LE, B_GE,
               B_AND, B_OR, B_XOR } binop;

static int is_compare(binop op) { return op >= B_EQ && op <= B_GE; }
static int is_logic(binop op) { return op >= B_AND; }

static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

static int int_op(dp__onnx *X, binop op, int64_t a, int64_t b, int64_t *r) {
  switch (op) {
  case B_ADD: *r = wrap_add(a, b); return 0;
  case B_SUB: *r = wrap_sub(a, b); return 0;
  case B_MUL: *r = wrap_mul(a, b); return 0;
  case B_DIV:
  case B_MOD:
  case B_FMOD:
    if (b == 0) return dp__ox_fail(X, DP_ERR_VALUE, "an integer division by zero at import");
    if (b == -1) {
      *r = op == B_DIV ? wrap_sub(0, a) : 0;
      return 0;
    }
    if (op == B_DIV) *r = a / b;
    else {
      *r = a % b;
      if (op == B_MOD && *r != 0 && ((*r < 0) != (b < 0))) *r += b; /* the divisor's sign */
    }
    return 0;
  case B_POW: {
    int64_t p = 1;
    if (b < 0) {
      *r = a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
      return 0;
    }
    for (int64_t base = a; b; b >>= 1, base = wrap_mul(base, base))
      if (b & 1) p = wrap_mul(p, base);
    *r = p;
    return 0;
  }
  case B_MIN: *r = a < b ? a : b; return 0;
  case B_MAX: *r = a > b ? a : b; return 0;
  case B_EQ: *r = a == b; return 0;
  case B_LT: *r = a < b; return 0;
  case B_GT: *r = a > b; return 0;
  case B_LE: *r = a <= b; return 0;
  case B_GE: *r = a >= b; return 0;
  case B_AND: *r = a && b; return 0;
  case B_OR: *r = a || b; return 0;
  case B_XOR: *r = !a != !b; return 0;
  }
  return 0;
}

static double real_op(binop op, double a, double b) {
  switch (op) {
  case B_ADD: return a + b;
  case B_SUB: return a - b;
  case B_MUL: return a * b;
  case B_DIV: return a / b;
  case B_MOD: {
    double m = fmod(a, b);
    return m != 0 && ((m < 0) != (b < 0)) ? m + b : m;
  }
  case B_FMOD: return fmod(a, b);
  case B_POW: return pow(a, b);
  case B_MIN: return a < b ? a : b;
  case B_MAX: return a > b ? a : b;
  case B_EQ: return a == b;
  case B_LT: return a < b;
  case B_GT: return a > b;
  case B_LE: return a <= b;
  case B_GE: return a >= b;
  case B_AND: return a != 0 && b != 0;
  case B_OR: return a != 0 || b != 0;
  case B_XOR: return (a != 0) != (b != 0);
  }
  return 0;
}

/* Folds inputs [0, n) left to right with op (n >= 1). */
static int binary(dp__onnx *X, binop op) {
  uint32_t n = dp__ox_nin(X);
  const dp__ot *in[64];
  if (n == 0 || n > 64) return dp__ox_fail(X, DP_ERR_VALUE, "it takes 1 to 64 inputs, got %u", n);
  for (uint32_t i = 0; i < n; i++)
    if (!(in[i] = dp__ox_value(X, i, "input"))) return -1;
  for (uint32_t i = 1; i < n; i++)
    if (in[i]->dtype != in[0]->dtype && op != B_POW)
      return dp__ox_fail(X, DP_ERR_VALUE, "its inputs differ in element type");
  uint32_t r;
  int64_t dims[DP__OT_MAXDIM], idx[DP__OT_MAXDIM] = {0};
  if (broadcast(X, n, in, &r, dims) < 0) return -1;
  dp__ot *o = make(X, is_compare(op) || is_logic(op) ? DP_BOOL : in[0]->dtype, r, dims);
  if (!o) return -1;
  int real = is_real(in[0]->dtype) || (n > 1 && is_real(in[1]->dtype));
  for (size_t k = 0; k < o->n; k++) {
    if (real) {
      double acc = dp__ot_real(in[0], offset_in(in[0], r, idx));
      for (uint32_t i = 1; i < n; i++) acc = real_op(op, acc, dp__ot_real(in[i], offset_in(in[i], r, idx)));
      dp__ot_set_real(o, k, acc);
    } else {
      int64_t acc = dp__ot_int(in[0], offset_in(in[0], r, idx));
      for (uint32_t i = 1; i < n; i++)
        if (int_op(X, op, acc, dp__ot_int(in[i], offset_in(in[i], r, idx)), &acc) < 0) {
          dp__ot_free(o);
          return -1;
        }
      dp__ot_set_int(o, k, acc);
    }
    for (uint32_t d = r; d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return dp__ox_out_value(X, 0, o);
}

static int ev_add(dp__onnx *X) { return binary(X, B_ADD); }
static int ev_sub(dp__onnx *X) { return binary(X, B_SUB); }
static int ev_mul(dp__onnx *X) { return binary(X, B_MUL); }
static int ev_div(dp__onnx *X) { return binary(X, B_DIV); }
static int ev_mod(dp__onnx *X) { return binary(X, dp__ox_attr_int(X, "fmod", 0) ? B_FMOD : B_MOD); }
static int ev_pow(dp__onnx *X) { return binary(X, B_POW); }
static int ev_min(dp__onnx *X) { return binary(X, B_MIN); }
static int ev_max(dp__onnx *X) { return binary(X, B_MAX); }
static int ev_sum(dp__onnx *X) { return binary(X, B_ADD); }
static int ev_equal(dp__onnx *X) { return binary(X, B_EQ); }
static int ev_less(dp__onnx *X) { return binary(X, B_LT); }
static int ev_greater(dp__onnx *X) { return binary(X, B_GT); }
static int ev_less_equal(dp__onnx *X) { return binary(X, B_LE); }
static int ev_greater_equal(dp__onnx *X) { return binary(X, B_GE); }
static int ev_and(dp__onnx *X) { return binary(X, B_AND); }
static int ev_or(dp__onnx *X) { return binary(X, B_OR); }
static int ev_xor(dp__onnx *X) { return binary(X, B_XOR); }

typedef enum { U_NEG, U_ABS, U_NOT, U_FLOOR, U_CEIL, U_SQRT, U_RECIP, U_SIGN, U_RELU } unop;

static int unary(dp__onnx *X, unop op) {
  const dp__ot *v = dp__ox_value(X, 0, "input");
  if (!v) return -1;
  dp__ot *o = make(X, v->dtype, v->ndim, v->dims);
  if (!o) return -1;
  for (size_t i = 0; i < v->n; i++) {
    if (is_real(v->dtype)) {
      double x = dp__ot_real(v, i), y = 0;
      switch (op) {
      case U_NEG: y = -x; break;
      case U_ABS: y = fabs(x); break;
      case U_NOT: y = x == 0; break;
      case U_FLOOR: y = floor(x); break;
      case U_CEIL: y = ceil(x); break;
      case U_SQRT: y = sqrt(x); break;
      case U_RECIP: y = 1 / x; break;
      case U_SIGN: y = (x > 0) - (x < 0); break;
      case U_RELU: y = x > 0 ? x : 0; break;
      }
      dp__ot_set_real(o, i, y);
    } else {
      int64_t x = dp__ot_int(v, i), y = x;
      switch (op) {
      case U_NEG: y = wrap_sub(0, x); break;
      case U_ABS: y = x < 0 ? wrap_sub(0, x) : x; break;
      case U_NOT: y = x == 0; break;
      case U_SQRT: y = (int64_t)sqrt((double)x); break;
      case U_RECIP: y = x == 1 ? 1 : x == -1 ? -1 : 0; break;
      case U_SIGN: y = (x > 0) - (x < 0); break;
      case U_RELU: y = x > 0 ? x : 0; break;
      default: break;
      }
      dp__ot_set_int(o, i, y);
    }
  }
  return dp__ox_out_value(X, 0, o);
}

static int ev_neg(dp__onnx *X) { return unary(X, U_NEG); }
static int ev_abs(dp__onnx *X) { return unary(X, U_ABS); }
static int ev_not(dp__onnx *X) { return unary(X, U_NOT); }
static int ev_floor(dp__onnx *X) { return unary(X, U_FLOOR); }
static int ev_ceil(dp__onnx *X) { return unary(X, U_CEIL); }
static int ev_sqrt(dp__onnx *X) { return unary(X, U_SQRT); }
static int ev_reciprocal(dp__onnx *X) { return unary(X, U_RECIP); }
static int ev_sign(dp__onnx *X) { return unary(X, U_SIGN); }
static int ev_relu(dp__onnx *X) { return unary(X, U_RELU); }

static int ev_where(dp__onnx *X) {
  const dp__ot *in[3];
  for (uint32_t i = 0; i < 3; i++)
    if (!(in[i] = dp__ox_value(X, i, "input"))) return -1;
  if (in[1]->dtype != in[2]->dtype) return dp__ox_fail(X, DP_ERR_VALUE, "its two branches differ in element type");
  uint32_t r;
  int64_t dims[DP__OT_MAXDIM], idx[DP__OT_MAXDIM] = {0};
  if (broadcast(X, 3, in, &r, dims) < 0) return -1;
  dp__ot *o = make(X, in[1]->dtype, r, dims);
  if (!o) return -1;
  size_t eb = dp_elem_bytes(o->dtype);
  for (size_t k = 0; k < o->n; k++) {
    const dp__ot *src = dp__ot_int(in[0], offset_in(in[0], r, idx)) ? in[1] : in[2];
    memcpy((char *)o->data + k * eb, (char *)src->data + offset_in(src, r, idx) * eb, eb);
    for (uint32_t d = r; d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return dp__ox_out_value(X, 0, o);
}

static int ev_expand(dp__onnx *X) {
  const dp__ot *v = dp__ox_value(X, 0, "input"), *s = v ? dp__ox_value(X, 1, "shape") : NULL;
  int64_t want[DP__OT_MAXDIM];
  if (!s) return -1;
  int n = ints_of(X, s, want, DP__OT_MAXDIM, "shape");
  if (n < 0) return -1;
  dp__ot shape = {.dtype = DP_INT64, .ndim = (uint32_t)n};
  memcpy(shape.dims, want, (size_t)n * sizeof want[0]);
  const dp__ot *in[2] = {v, &shape};
  uint32_t r;
  int64_t dims[DP__OT_MAXDIM], idx[DP__OT_MAXDIM] = {0};
  if (broadcast(X, 2, in, &r, dims) < 0) return -1;
  dp__ot *o = make(X, v->dtype, r, dims);
  if (!o) return -1;
  size_t eb = dp_elem_bytes(o->dtype);
  for (size_t k = 0; k < o->n; k++) {
    memcpy((char *)o->data + k * eb, (char *)v->data + offset_in(v, r, idx) * eb, eb);
    for (uint32_t d = r; d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return dp__ox_out_value(X, 0, o);
}

static int ev_tile(dp__onnx *X) {
  const dp__ot *v = dp__ox_value(X, 0, "input"), *rp = v ? dp__ox_value(X, 1, "repeats") : NULL;
  int64_t reps[DP__OT_MAXDIM], dims[DP__OT_MAXDIM], idx[DP__OT_MAXDIM] = {0}, st[DP__OT_MAXDIM];
  if (!rp) return -1;
  if (ints_of(X, rp, reps, DP__OT_MAXDIM, "repeats") != (int)v->ndim)
    return X->err ? -1 : dp__ox_fail(X, DP_ERR_VALUE, "repeats must have one value per dimension");
  for (uint32_t d = 0; d < v->ndim; d++) {
    if (reps[d] < 0 || (reps[d] && v->dims[d] > INT64_MAX / reps[d])) return dp__ox_fail(X, DP_ERR_VALUE, "bad repeats");
    dims[d] = v->dims[d] * reps[d];
  }
  dp__ot *o = make(X, v->dtype, v->ndim, dims);
  if (!o) return -1;
  strides_of(v->ndim, v->dims, st);
  size_t eb = dp_elem_bytes(o->dtype);
  for (size_t k = 0; k < o->n; k++) {
    int64_t off = 0;
    for (uint32_t d = 0; d < v->ndim; d++) off += (idx[d] % v->dims[d]) * st[d];
    memcpy((char *)o->data + k * eb, (char *)v->data + (size_t)off * eb, eb);
    for (uint32_t d = v->ndim; d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return dp__ox_out_value(X, 0, o);
}

static int ev_range(dp__onnx *X) {
  const dp__ot *in[3];
  for (uint32_t i = 0; i < 3; i++)
    if (!(in[i] = dp__ox_value(X, i, i == 0 ? "start" : i == 1 ? "limit" : "delta"))) return -1;
  for (uint32_t i = 0; i < 3; i++)
    if (in[i]->n != 1) return dp__ox_fail(X, DP_ERR_VALUE, "its start, limit and delta must be scalars");
  int64_t n;
  if (is_real(in[0]->dtype)) {
    double s = dp__ot_real(in[0], 0), l = dp__ot_real(in[1], 0), d = dp__ot_real(in[2], 0);
    double c = d != 0 ? ceil((l - s) / d) : -1;
    if (d == 0 || c != c || c > 1e15) return dp__ox_fail(X, DP_ERR_VALUE, "a range with a delta of 0 or no end");
    n = c > 0 ? (int64_t)c : 0;
  } else {
    int64_t s = dp__ot_int(in[0], 0), l = dp__ot_int(in[1], 0), d = dp__ot_int(in[2], 0);
    if (d == 0) return dp__ox_fail(X, DP_ERR_VALUE, "a range with a delta of 0");
    double c = ceil(((double)l - (double)s) / (double)d);
    n = c > 0 ? (c > 1e15 ? INT64_MAX : (int64_t)c) : 0;
  }
  dp__ot *o = make(X, in[0]->dtype, 1, &n);
  if (!o) return -1;
  for (int64_t k = 0; k < n; k++) {
    if (is_real(o->dtype)) dp__ot_set_real(o, (size_t)k, dp__ot_real(in[0], 0) + (double)k * dp__ot_real(in[2], 0));
    else dp__ot_set_int(o, (size_t)k, wrap_add(dp__ot_int(in[0], 0), wrap_mul(k, dp__ot_int(in[2], 0))));
  }
  return dp__ox_out_value(X, 0, o);
}

static int ev_scatter_nd(dp__onnx *X) {
  const dp__ot *d = dp__ox_value(X, 0, "data"), *ix = d ? dp__ox_value(X, 1, "indices") : NULL;
  const dp__ot *up = ix ? dp__ox_value(X, 2, "updates") : NULL;
  int64_t st[DP__OT_MAXDIM];
  if (!up) return -1;
  char red[16];
  const char *reduction = dp__ox_attr_str(X, "reduction", "none", red, sizeof red);
  if (!reduction) return -1;
  if (strcmp(reduction, "none")) return dp__ox_fail(X, DP_ERR_VALUE, "reduction '%s' is not supported at import", reduction);
  if (ix->ndim == 0) return dp__ox_fail(X, DP_ERR_VALUE, "its indices must have rank >= 1");
  int64_t k = ix->dims[ix->ndim - 1];
  if (k < 1 || k > (int64_t)d->ndim) return dp__ox_fail(X, DP_ERR_VALUE, "its indices' last dimension must be 1 to %u", d->ndim);
  if (up->dtype != d->dtype) return dp__ox_fail(X, DP_ERR_VALUE, "its updates differ from its data in element type");
  size_t slice = 1, count = ix->n / (size_t)k, eb = dp_elem_bytes(d->dtype);
  for (uint32_t i = (uint32_t)k; i < d->ndim; i++) slice *= (size_t)d->dims[i];
  if (up->n != count * slice) return dp__ox_fail(X, DP_ERR_VALUE, "its updates do not fit its indices and data");
  dp__ot *o = copy_of(X, d);
  if (!o) return -1;
  if (!slice || !o->n) return dp__ox_out_value(X, 0, o);
  strides_of(d->ndim, d->dims, st);
  for (size_t c = 0; c < count; c++) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; j++) {
      int64_t at = dp__ot_int(ix, c * (size_t)k + (size_t)j), len = d->dims[j];
      if (at < -len || at >= len) {
        dp__ot_free(o);
        return dp__ox_fail(X, DP_ERR_VALUE, "index %lld is out of range for a dimension of %lld", (long long)at, (long long)len);
      }
      off += (at < 0 ? at + len : at) * st[j];
    }
    memcpy((char *)o->data + (size_t)off * eb, (char *)up->data + c * slice * eb, slice * eb);
  }
  return dp__ox_out_value(X, 0, o);
}

static int ev_nonzero(dp__onnx *X) {
  const dp__ot *v = dp__ox_value(X, 0, "input");
  int64_t st[DP__OT_MAXDIM];
  if (!v) return -1;
  int64_t nz = 0;
  for (size_t i = 0; i < v->n; i++) nz += is_real(v->dtype) ? dp__ot_real(v, i) != 0 : dp__ot_int(v, i) != 0;
  int64_t dims[2] = {v->ndim, nz};
  dp__ot *o = make(X, DP_INT64, 2, dims);
  if (!o) return -1;
  strides_of(v->ndim, v->dims, st);
  int64_t k = 0;
  for (size_t i = 0; i < v->n; i++) {
    if (!(is_real(v->dtype) ? dp__ot_real(v, i) != 0 : dp__ot_int(v, i) != 0)) continue;
    int64_t rest = (int64_t)i;
    for (uint32_t d = 0; d < v->ndim; d++) {
      dp__ot_set_int(o, (size_t)(d * nz + k), rest / st[d]);
      rest %= st[d];
    }
    k++;
  }
  return dp__ox_out_value(X, 0, o);
}

typedef enum { R_SUM, R_PROD, R_MAX, R_MIN, R_MEAN } redop;

static int reduce(dp__onnx *X, redop op) {
  const dp__ot *v = dp__ox_value(X, 0, "data");
  int64_t axes[DP__OT_MAXDIM], dims[DP__OT_MAXDIM], idx[DP__OT_MAXDIM] = {0}, ost[DP__OT_MAXDIM];
  if (!v) return -1;
  int na = axes_of(X, 1, axes);
  if (na == -2) return -1;
  int keep = (int)dp__ox_attr_int(X, "keepdims", 1);
  char mark[DP__OT_MAXDIM];
  int all = na <= 0 && !(na == 0 && dp__ox_attr_int(X, "noop_with_empty_axes", 0));
  memset(mark, all, sizeof mark);
  for (int i = 0; i < na; i++) {
    int a = norm_axis(X, axes[i], v->ndim);
    if (a < 0) return -1;
    mark[a] = 1;
  }
  uint32_t r = 0;
  for (uint32_t d = 0; d < v->ndim; d++) dims[d] = mark[d] ? 1 : v->dims[d];
  dp__ot *o = make(X, v->dtype, v->ndim, dims);
  double *acc = o ? dp_calloc(o->n ? o->n : 1, sizeof *acc) : NULL;
  size_t *cnt = acc ? dp_calloc(o->n ? o->n : 1, sizeof *cnt) : NULL;
  if (!cnt) {
    free(acc);
    dp__ot_free(o);
    return o ? dp__ox_fail(X, DP_ERR_MEMORY, "out of memory") : -1;
  }
  strides_of(v->ndim, dims, ost);
  for (size_t k = 0; k < v->n; k++) {
    size_t at = 0;
    for (uint32_t d = 0; d < v->ndim; d++) at += (size_t)((mark[d] ? 0 : idx[d]) * ost[d]);
    double x = dp__ot_real(v, k);
    if (!cnt[at]) acc[at] = op == R_PROD ? 1 : op == R_MAX || op == R_MIN ? x : 0;
    switch (op) {
    case R_SUM: case R_MEAN: acc[at] += x; break;
    case R_PROD: acc[at] *= x; break;
    case R_MAX: acc[at] = x > acc[at] ? x : acc[at]; break;
    case R_MIN: acc[at] = x < acc[at] ? x : acc[at]; break;
    }
    cnt[at]++;
    for (uint32_t d = v->ndim; d-- > 0;) {
      if (++idx[d] < v->dims[d]) break;
      idx[d] = 0;
    }
  }
  for (size_t k = 0; k < o->n; k++) dp__ot_set_real(o, k, op == R_MEAN && cnt[k] ? acc[k] / (double)cnt[k] : acc[k]);
  free(acc);
  free(cnt);
  if (!keep) {
    for (uint32_t d = 0; d < v->ndim; d++)
      if (!mark[d]) o->dims[r++] = v->dims[d];
    o->ndim = r;
  }
  return dp__ox_out_value(X, 0, o);
}

static int ev_reduce_sum(dp__onnx *X) { return reduce(X, R_SUM); }
static int ev_reduce_prod(dp__onnx *X) { return reduce(X, R_PROD); }
static int ev_reduce_max(dp__onnx *X) { return reduce(X, R_MAX); }
static int ev_reduce_min(dp__onnx *X) { return reduce(X, R_MIN); }
static int ev_reduce_mean(dp__onnx *X) { return reduce(X, R_MEAN); }

static const struct { const char *op; dp__onnx_conv fn; } evaluators[] = {
  {"Shape", ev_shape}, {"Size", ev_size}, {"Constant", ev_constant},
  {"ConstantOfShape", ev_constant_of_shape}, {"Identity", ev_identity}, {"Cast", ev_cast},
  {"Gather", ev_gather}, {"Unsqueeze", ev_unsqueeze}, {"Squeeze", ev_squeeze}, {"Concat", ev_concat},
  {"Slice", ev_slice}, {"Reshape", ev_reshape}, {"Flatten", ev_flatten}, {"Transpose", ev_transpose},
  {"Add", ev_add}, {"Sub", ev_sub}, {"Mul", ev_mul}, {"Div", ev_div}, {"Mod", ev_mod}, {"Pow", ev_pow},
  {"Min", ev_min}, {"Max", ev_max}, {"Sum", ev_sum}, {"Equal", ev_equal}, {"Less", ev_less},
  {"Greater", ev_greater}, {"LessOrEqual", ev_less_equal}, {"GreaterOrEqual", ev_greater_equal},
  {"And", ev_and}, {"Or", ev_or}, {"Xor", ev_xor}, {"Neg", ev_neg}, {"Abs", ev_abs}, {"Not", ev_not},
  {"Floor", ev_floor}, {"Ceil", ev_ceil}, {"Sqrt", ev_sqrt}, {"Reciprocal", ev_reciprocal},
  {"Sign", ev_sign}, {"Relu", ev_relu}, {"Where", ev_where}, {"Expand", ev_expand}, {"Tile", ev_tile},
  {"Range", ev_range}, {"ScatterND", ev_scatter_nd}, {"NonZero", ev_nonzero},
  {"ReduceSum", ev_reduce_sum}, {"ReduceProd", ev_reduce_prod}, {"ReduceMax", ev_reduce_max},
  {"ReduceMin", ev_reduce_min}, {"ReduceMean", ev_reduce_mean},
};

dp__onnx_conv dp__onnx_evaluator(const char *op) {
  for (size_t i = 0; i < sizeof evaluators / sizeof evaluators[0]; i++)
    if (strcmp(evaluators[i].op, op) == 0) return evaluators[i].fn;
  return NULL;
}
