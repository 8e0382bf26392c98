/*
 * ONNX's neural-network operators to Relay, as TVM's ONNX frontend mapped
 * them: Conv -> nn.conv2d (+ nn.bias_add), ConvTranspose ->
 * nn.conv2d_transpose, BatchNormalization -> nn.batch_norm and its first
 * field, pooling, Gemm -> nn.dense + add, MatMul -> nn.dense or
 * nn.batch_matmul between reshapes, LayerNormalization -> nn.layer_norm,
 * Softmax, Resize -> image.resize2d, Pad -> nn.pad, and the activations
 * (HardSigmoid and HardSwish through clip, as TVM wrote them).
 */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "internal.h"

#define MAXSP 3 /* spatial dimensions: 1-D to 3-D */

static dp_expr *call1(dp__onnx *X, const char *op, dp_expr *a, dp__ab *b) {
  return dp__ox_call(X, op, 1, &a, b);
}

static dp_expr *call2(dp__onnx *X, const char *op, dp_expr *a, dp_expr *c, dp__ab *b) {
  dp_expr *args[2] = {a, c};
  return dp__ox_call(X, op, 2, args, b);
}

/* op(a, scalar v of a's dtype); a is borrowed. */
static dp_expr *with_scalar(dp__onnx *X, const char *op, dp_expr *a, double v) {
  const dp_tensor_type *t = dp__ox_tensor_type(X, a);
  dp_expr *s = t ? dp__ox_scalar(X, t->dtype, v) : NULL;
  dp_expr *r = s ? call2(X, op, a, s, NULL) : NULL;
  dp_release(s);
  return r;
}

static const char *attr_str(dp__onnx *X, const char *name, const char *dflt, char *buf, size_t n) {
  return dp__ox_attr_str(X, name, dflt, buf, n);
}

/* ---------------- windows: convolutions and pooling ---------------- */

typedef struct window {
  int nsp;
  int64_t kernel[MAXSP], strides[MAXSP], dil[MAXSP], pads[2 * MAXSP];
} window;

/* The window attributes of the node over data t with kernel sizes k
   (kernel_shape, strides, dilations, pads or auto_pad). */
static int read_window(dp__onnx *X, const dp_tensor_type *t, const int64_t *k, window *w) {
  int nsp = (int)t->ndim - 2, n;
  char buf[32];
  if (nsp < 1 || nsp > MAXSP) return dp__ox_fail(X, DP_ERR_VALUE, "its input has rank %u, 3 to 5 expected", t->ndim);
  w->nsp = nsp;
  if ((n = dp__ox_attr_ints(X, "kernel_shape", w->kernel, MAXSP)) == -2) return -1;
  if (n < 0) {
    if (!k) return dp__ox_fail(X, DP_ERR_VALUE, "it needs kernel_shape");
    memcpy(w->kernel, k, (size_t)nsp * sizeof k[0]);
  } else if (n != nsp) {
    return dp__ox_fail(X, DP_ERR_VALUE, "kernel_shape has %d values for %d spatial dimensions", n, nsp);
  }
  const char *names[2] = {"strides", "dilations"};
  int64_t *outs[2] = {w->strides, w->dil};
  for (int j = 0; j < 2; j++) {
    if ((n = dp__ox_attr_ints(X, names[j], outs[j], MAXSP)) == -2) return -1;
    if (n < 0) for (int i = 0; i < nsp; i++) outs[j][i] = 1;
    else if (n != nsp) return dp__ox_fail(X, DP_ERR_VALUE, "%s has %d values for %d spatial dimensions", names[j], n, nsp);
    for (int i = 0; i < nsp; i++)
      if (outs[j][i] <= 0) return dp__ox_fail(X, DP_ERR_VALUE, "%s must be positive", names[j]);
  }
  for (int i = 0; i < nsp; i++)
    if (w->kernel[i] <= 0) return dp__ox_fail(X, DP_ERR_VALUE, "kernel_shape must be positive");
  const char *ap = attr_str(X, "auto_pad", "NOTSET", buf, sizeof buf);
  if (!ap) return -1;
  if (!strcmp(ap, "NOTSET")) {
    if ((n = dp__ox_attr_ints(X, "pads", w->pads, 2 * MAXSP)) == -2) return -1;
    if (n < 0) memset(w->pads, 0, sizeof w->pads);
    else if (n != 2 * nsp) return dp__ox_fail(X, DP_ERR_VALUE, "pads has %d values for %d spatial dimensions", n, nsp);
    for (int i = 0; i < 2 * nsp; i++)
      if (w->pads[i] < 0) return dp__ox_fail(X, DP_ERR_VALUE, "pads must not be negative");
  } else if (!strcmp(ap, "VALID")) {
    memset(w->pads, 0, sizeof w->pads);
  } else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
    for (int i = 0; i < nsp; i++) {
      int64_t in = t->dims[2 + i], s = w->strides[i];
      if (in < 0) return dp__ox_fail(X, DP_ERR_VALUE, "auto_pad %s needs a known input size", ap);
      int64_t out = (in + s - 1) / s, total = (out - 1) * s + (w->kernel[i] - 1) * w->dil[i] + 1 - in;
      if (total < 0) total = 0;
      int64_t small = total / 2;
      w->pads[i] = !strcmp(ap, "SAME_UPPER") ? small : total - small;
      w->pads[i + nsp] = total - w->pads[i];
    }
  } else {
    return dp__ox_fail(X, DP_ERR_VALUE, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);
  }
  return 0;
}

static const char *conv_op(int nsp) { return nsp == 2 ? "nn.conv2d" : nsp == 3 ? "nn.conv3d" : NULL; }

static dp_expr *bias_add(dp__onnx *X, dp_expr *out, uint32_t i) {
  if (!out || !dp__ox_has(X, i)) return out;
  dp_expr *b = dp__ox_in(X, i);
  dp_expr *r = b ? call2(X, "nn.bias_add", out, b, NULL) : NULL;
  dp_release(out);
  return r;
}

static int cv_conv(dp__onnx *X) {
  const dp_tensor_type *d = dp__ox_type(X, 0), *w = d ? dp__ox_type(X, 1) : NULL;
  window win;
  if (!w) return -1;
  if (w->ndim != d->ndim) return dp__ox_fail(X, DP_ERR_TYPE, "its weight has rank %u, its data %u", w->ndim, d->ndim);
  if (read_window(X, d, w->dims + 2, &win) < 0) return -1;
  const char *op = conv_op(win.nsp);
  if (!op) return dp__ox_fail(X, DP_ERR_VALUE, "a %d-D convolution is not supported (2-D and 3-D are)", win.nsp);
  dp_expr *args[2] = {dp__ox_in(X, 0), dp__ox_in(X, 1)};
  if (!args[0] || !args[1]) return -1;
  dp__ab b = {0};
  dp__ab_ints(&b, "strides", win.strides, (uint32_t)win.nsp);
  dp__ab_ints(&b, "padding", win.pads, 2 * (uint32_t)win.nsp);
  dp__ab_ints(&b, "dilation", win.dil, (uint32_t)win.nsp);
  dp__ab_int(&b, "groups", dp__ox_attr_int(X, "group", 1));
  dp__ab_int(&b, "channels", w->dims[0]);
  dp__ab_ints(&b, "kernel_size", win.kernel, (uint32_t)win.nsp);
  return dp__ox_out(X, 0, bias_add(X, dp__ox_call(X, op, 2, args, &b), 2));
}

static int cv_conv_transpose(dp__onnx *X) {
  const dp_tensor_type *d = dp__ox_type(X, 0), *w = d ? dp__ox_type(X, 1) : NULL;
  window win;
  int64_t opad[MAXSP] = {0}, oshape[MAXSP];
  if (!w) return -1;
  if (w->ndim != d->ndim) return dp__ox_fail(X, DP_ERR_TYPE, "its weight has rank %u, its data %u", w->ndim, d->ndim);
  if (read_window(X, d, w->dims + 2, &win) < 0) return -1;
  if (win.nsp != 2) return dp__ox_fail(X, DP_ERR_VALUE, "a %d-D transposed convolution is not supported (2-D is)", win.nsp);
  int n = dp__ox_attr_ints(X, "output_padding", opad, MAXSP);
  if (n == -2 || (n >= 0 && n != win.nsp)) return n == -2 ? -1 : dp__ox_fail(X, DP_ERR_VALUE, "output_padding has %d values", n);
  if ((n = dp__ox_attr_ints(X, "output_shape", oshape, MAXSP)) == -2) return -1;
  if (n >= 0) { /* pads from the wanted output (ONNX's rule; SAME_UPPER split) */
    if (n != win.nsp) return dp__ox_fail(X, DP_ERR_VALUE, "output_shape has %d values", n);
    for (int i = 0; i < n; i++) {
      int64_t total = win.strides[i] * (d->dims[2 + i] - 1) + opad[i] + (win.kernel[i] - 1) * win.dil[i] + 1 - oshape[i];
      if (total < 0) return dp__ox_fail(X, DP_ERR_VALUE, "output_shape is larger than the convolution makes");
      win.pads[i] = total / 2;
      win.pads[i + n] = total - total / 2;
    }
  }
  int64_t group = dp__ox_attr_int(X, "group", 1);
  dp_expr *args[2] = {dp__ox_in(X, 0), dp__ox_in(X, 1)};
  if (!args[0] || !args[1]) return -1;
  dp__ab b = {0};
  dp__ab_int(&b, "channels", w->dims[1] * group);
  dp__ab_ints(&b, "kernel_size", win.kernel, 2);
  dp__ab_ints(&b, "strides", win.strides, 2);
  dp__ab_ints(&b, "padding", win.pads, 4);
  dp__ab_ints(&b, "output_padding", opad, 2);
  dp__ab_ints(&b, "dilation", win.dil, 2);
  dp__ab_int(&b, "groups", group);
  return dp__ox_out(X, 0, bias_add(X, dp__ox_call(X, "nn.conv2d_transpose", 2, args, &b), 2));
}

static int cv_pool(dp__onnx *X, int max) {
  const dp_tensor_type *d = dp__ox_type(X, 0);
  window win;
  if (!d || read_window(X, d, NULL, &win) < 0) return -1;
  if (win.nsp != 2) return dp__ox_fail(X, DP_ERR_VALUE, "%d-D pooling is not supported (2-D is)", win.nsp);
  if (max && dp__ox_used(X, 1)) return dp__ox_fail(X, DP_ERR_VALUE, "its Indices output is not supported");
  if (max && dp__ox_attr_int(X, "storage_order", 0)) return dp__ox_fail(X, DP_ERR_VALUE, "storage_order 1 is not supported");
  dp_expr *x = dp__ox_in(X, 0);
  if (!x) return -1;
  dp__ab b = {0};
  dp__ab_ints(&b, "pool_size", win.kernel, 2);
  dp__ab_ints(&b, "strides", win.strides, 2);
  dp__ab_ints(&b, "dilation", win.dil, 2);
  dp__ab_ints(&b, "padding", win.pads, 4);
  dp__ab_bool(&b, "ceil_mode", (int)dp__ox_attr_int(X, "ceil_mode", 0));
  if (!max) dp__ab_bool(&b, "count_include_pad", (int)dp__ox_attr_int(X, "count_include_pad", 0));
  return dp__ox_out(X, 0, call1(X, max ? "nn.max_pool2d" : "nn.avg_pool2d", x, &b));
}

static int cv_max_pool(dp__onnx *X) { return cv_pool(X, 1); }
static int cv_average_pool(dp__onnx *X) { return cv_pool(X, 0); }

static int cv_global_pool(dp__onnx *X, int max) {
  const dp_tensor_type *d = dp__ox_type(X, 0);
  dp_expr *x = d ? dp__ox_in(X, 0) : NULL;
  if (!x) return -1;
  if (d->ndim == 4) return dp__ox_out(X, 0, call1(X, max ? "nn.global_max_pool2d" : "nn.global_avg_pool2d", x, NULL));
  if (d->ndim == 5) { /* as TVM: the adaptive 3-D pool to 1 x 1 x 1 */
    dp__ab b = {0};
    int64_t one[3] = {1, 1, 1};
    dp__ab_ints(&b, "output_size", one, 3);
    return dp__ox_out(X, 0, call1(X, max ? "nn.adaptive_max_pool3d" : "nn.adaptive_avg_pool3d", x, &b));
  }
  return dp__ox_fail(X, DP_ERR_VALUE, "global pooling of rank %u is not supported (4 and 5 are)", d->ndim);
}

static int cv_global_average_pool(dp__onnx *X) { return cv_global_pool(X, 0); }
static int cv_global_max_pool(dp__onnx *X) { return cv_global_pool(X, 1); }

/* ---------------- normalisation ---------------- */

static int cv_batch_norm(dp__onnx *X) {
  if (dp__ox_used(X, 1) || dp__ox_used(X, 2))
    return dp__ox_fail(X, DP_ERR_VALUE, "its running mean and variance outputs (training) are not supported");
  dp_expr *args[5];
  for (uint32_t i = 0; i < 5; i++)
    if (!(args[i] = dp__ox_in(X, i))) return -1;
  dp__ab b = {0};
  dp__ab_float(&b, "epsilon", dp__ox_attr_float(X, "epsilon", 1e-5));
  dp_expr *bn = dp__ox_call(X, "nn.batch_norm", 5, args, &b);
  dp_expr *r = bn ? dp__ox_proj(X, bn, 0) : NULL;
  dp_release(bn);
  return dp__ox_out(X, 0, r);
}

/* mean over axes (keepdims) of x. */
static dp_expr *mean_over(dp__onnx *X, dp_expr *x, const int64_t *axes, uint32_t n) {
  dp__ab b = {0};
  dp__ab_ints(&b, "axis", axes, n);
  dp__ab_bool(&b, "keepdims", 1);
  return call1(X, "mean", x, &b);
}

static int cv_layer_norm(dp__onnx *X) {
  const dp_tensor_type *d = dp__ox_type(X, 0);
  if (!d) return -1;
  int64_t axis = dp__ox_attr_int(X, "axis", -1), axes[DP__OT_MAXDIM];
  if (axis < 0) axis += d->ndim;
  if (axis < 0 || axis >= (int64_t)d->ndim) return dp__ox_fail(X, DP_ERR_VALUE, "axis is out of range for rank %u", d->ndim);
  double eps = dp__ox_attr_float(X, "epsilon", 1e-5);
  dp_expr *x = dp__ox_in(X, 0), *scale = x ? dp__ox_in(X, 1) : NULL, *bias = NULL;
  if (!scale || (dp__ox_has(X, 2) && !(bias = dp__ox_in(X, 2)))) return -1;
  const dp_tensor_type *st = dp__ox_tensor_type(X, scale);
  if (axis == (int64_t)d->ndim - 1 && st && st->ndim == 1 && !dp__ox_used(X, 1) && !dp__ox_used(X, 2)) {
    /* one normalised axis: nn.layer_norm (a zero bias with center=False when there is none) */
    dp__ab b = {0};
    dp__ab_int(&b, "axis", -1);
    dp__ab_float(&b, "epsilon", eps);
    dp_expr *zero = NULL;
    if (!bias) {
      dp__ot *z;
      const char *why;
      if (!(z = dp__ot_new(st->dtype, 1, st->dims, &why))) return dp__ox_fail(X, DP_ERR_MEMORY, "out of memory");
      zero = dp__ox_const(X, z);
      dp__ot_free(z);
      if (!zero) return -1;
      dp__ab_bool(&b, "center", 0);
    }
    dp_expr *args[3] = {x, scale, bias ? bias : zero};
    dp_expr *r = dp__ox_call(X, "nn.layer_norm", 3, args, &b);
    dp_release(zero);
    return dp__ox_out(X, 0, r);
  }
  /* several axes, or the mean and inverse deviation wanted: computed out */
  uint32_t n = 0;
  for (int64_t a = axis; a < (int64_t)d->ndim; a++) axes[n++] = a;
  dp_expr *mean = mean_over(X, x, axes, n);
  dp_expr *diff = mean ? call2(X, "subtract", x, mean, NULL) : NULL;
  dp_expr *sq = diff ? call2(X, "multiply", diff, diff, NULL) : NULL;
  dp_expr *var = sq ? mean_over(X, sq, axes, n) : NULL;
  dp_expr *ve = var ? with_scalar(X, "add", var, eps) : NULL;
  dp_expr *sd = ve ? call1(X, "sqrt", ve, NULL) : NULL;
  dp_expr *one = sd ? dp__ox_scalar(X, d->dtype, 1) : NULL;
  dp_expr *inv = one ? call2(X, "divide", one, sd, NULL) : NULL;
  dp_expr *norm = inv ? call2(X, "multiply", diff, inv, NULL) : NULL;
  dp_expr *scaled = norm ? call2(X, "multiply", norm, scale, NULL) : NULL;
  dp_expr *out = scaled && bias ? call2(X, "add", scaled, bias, NULL) : dp_retain(scaled);
  int rc = out ? 0 : -1;
  if (rc == 0) rc = dp__ox_out(X, 0, out);
  if (rc == 0 && mean) rc = dp__ox_out(X, 1, dp_retain(mean));
  if (rc == 0 && inv) rc = dp__ox_out(X, 2, dp_retain(inv));
  dp_release(mean), dp_release(diff), dp_release(sq), dp_release(var), dp_release(ve);
  dp_release(sd), dp_release(one), dp_release(inv), dp_release(norm), dp_release(scaled);
  return rc;
}

/* ---------------- matrix products ---------------- */

static dp_expr *reshape_to(dp__onnx *X, dp_expr *x, const int64_t *dims, uint32_t n) {
  dp__ab b = {0};
  dp__ab_ints(&b, "newshape", dims, n);
  return call1(X, "reshape", x, &b);
}

static dp_expr *transpose_2d(dp__onnx *X, dp_expr *x) {
  dp__ab b = {0};
  int64_t axes[2] = {1, 0};
  dp__ab_ints(&b, "axes", axes, 2);
  return call1(X, "transpose", x, &b);
}

static int cv_gemm(dp__onnx *X) {
  const dp_tensor_type *ta = dp__ox_type(X, 0), *tb = ta ? dp__ox_type(X, 1) : NULL;
  if (!tb) return -1;
  if (ta->ndim != 2 || tb->ndim != 2) return dp__ox_fail(X, DP_ERR_TYPE, "Gemm takes two matrices, got ranks %u and %u", ta->ndim, tb->ndim);
  int trans_a = (int)dp__ox_attr_int(X, "transA", 0), trans_b = (int)dp__ox_attr_int(X, "transB", 0);
  double alpha = dp__ox_attr_float(X, "alpha", 1), beta = dp__ox_attr_float(X, "beta", 1);
  dp_expr *a = dp__ox_in(X, 0), *b = a ? dp__ox_in(X, 1) : NULL;
  if (!b) return -1;
  a = trans_a ? transpose_2d(X, a) : dp_retain(a);
  b = a && !trans_b ? transpose_2d(X, b) : dp_retain(b);
  dp_expr *out = NULL;
  if (a && b) {
    dp__ab ab = {0};
    dp__ab_int(&ab, "units", trans_b ? tb->dims[0] : tb->dims[1]);
    out = call2(X, "nn.dense", a, b, &ab);
  }
  dp_release(a);
  dp_release(b);
  if (out && alpha != 1) {
    dp_expr *r = with_scalar(X, "multiply", out, alpha);
    dp_release(out);
    out = r;
  }
  if (out && dp__ox_has(X, 2)) {
    dp_expr *c = dp__ox_in(X, 2), *cb = NULL;
    if (c && beta != 1) { /* as TVM: beta * C */
      const dp_tensor_type *tc = dp__ox_tensor_type(X, c);
      dp_expr *s = tc ? dp__ox_scalar(X, tc->dtype, beta) : NULL;
      cb = s ? call2(X, "multiply", s, c, NULL) : NULL;
      dp_release(s);
    } else {
      cb = dp_retain(c);
    }
    dp_expr *r = cb ? call2(X, "add", out, cb, NULL) : NULL;
    dp_release(cb);
    dp_release(out);
    out = r;
  }
  return out ? dp__ox_out(X, 0, out) : -1;
}

static int cv_matmul(dp__onnx *X) {
  const dp_tensor_type *ta = dp__ox_type(X, 0), *tb = ta ? dp__ox_type(X, 1) : NULL;
  if (!tb) return -1;
  uint32_t ra = ta->ndim, rb = tb->ndim;
  if (ra < 2 || rb < 2) return dp__ox_fail(X, DP_ERR_VALUE, "MatMul of a vector (rank 1) is not supported");
  for (uint32_t i = 0; i < ra; i++)
    if (ta->dims[i] < 0) return dp__ox_fail(X, DP_ERR_VALUE, "its first input has an unknown dimension");
  for (uint32_t i = 0; i < rb; i++)
    if (tb->dims[i] < 0) return dp__ox_fail(X, DP_ERR_VALUE, "its second input has an unknown dimension");
  int64_t m = ta->dims[ra - 2], k = ta->dims[ra - 1], n = tb->dims[rb - 1];
  if (tb->dims[rb - 2] != k)
    return dp__ox_fail(X, DP_ERR_TYPE, "matrices of %lld columns and %lld rows do not multiply", (long long)k,
                       (long long)tb->dims[rb - 2]);
  dp_expr *a = dp__ox_in(X, 0), *b = a ? dp__ox_in(X, 1) : NULL;
  if (!b) return -1;
  int64_t shape[DP__OT_MAXDIM];
  if (rb == 2) { /* as TVM: a as rows, nn.dense with b transposed, the result reshaped back */
    int64_t rows[2] = {-1, k};
    dp_expr *a2 = ra == 2 ? dp_retain(a) : reshape_to(X, a, rows, 2);
    dp_expr *bt = a2 ? transpose_2d(X, b) : NULL;
    dp_expr *out = NULL;
    if (bt) {
      dp__ab ab = {0};
      dp__ab_int(&ab, "units", n);
      out = call2(X, "nn.dense", a2, bt, &ab);
    }
    dp_release(a2);
    dp_release(bt);
    if (out && ra != 2) {
      memcpy(shape, ta->dims, (ra - 1) * sizeof shape[0]);
      shape[ra - 1] = n;
      dp_expr *r = reshape_to(X, out, shape, ra);
      dp_release(out);
      out = r;
    }
    return out ? dp__ox_out(X, 0, out) : -1;
  }
  /* batches: both as rank 3 (b broadcast to a's batch when they differ),
     nn.batch_matmul with b transposed, then the batch dimensions back */
  uint32_t rout = ra > rb ? ra : rb;
  int64_t batch = 1, bb = 1;
  for (uint32_t i = 0; i + 2 < rout; i++) {
    int64_t da = i + ra >= rout ? ta->dims[i + ra - rout] : 1;
    int64_t db = i + rb >= rout ? tb->dims[i + rb - rout] : 1;
    if (da != db && da != 1 && db != 1) return dp__ox_fail(X, DP_ERR_TYPE, "the batch dimensions do not broadcast");
    shape[i] = da == 1 ? db : da;
    batch *= shape[i];
  }
  for (uint32_t i = 0; i + 2 < ra; i++) bb *= ta->dims[i];
  int64_t a3s[3] = {-1, m, k}, b3s[3] = {-1, k, n};
  dp_expr *a3 = bb == batch || bb == 1 ? (ra == 3 ? dp_retain(a) : reshape_to(X, a, a3s, 3)) : NULL;
  if (bb != batch && bb != 1) { /* a broadcast over b's batch */
    int64_t full[DP__OT_MAXDIM];
    memcpy(full, shape, (rout - 2) * sizeof full[0]);
    full[rout - 2] = m, full[rout - 1] = k;
    dp__ab ab = {0};
    dp__ab_ints(&ab, "shape", full, rout);
    dp_expr *ab2 = call1(X, "broadcast_to", a, &ab);
    a3 = ab2 ? reshape_to(X, ab2, a3s, 3) : NULL;
    dp_release(ab2);
  }
  int64_t nb = 1;
  for (uint32_t i = 0; i + 2 < rb; i++) nb *= tb->dims[i];
  dp_expr *b3 = NULL;
  if (nb == batch || nb == 1) b3 = rb == 3 ? dp_retain(b) : reshape_to(X, b, b3s, 3);
  else {
    int64_t full[DP__OT_MAXDIM];
    memcpy(full, shape, (rout - 2) * sizeof full[0]);
    full[rout - 2] = k, full[rout - 1] = n;
    dp__ab ab = {0};
    dp__ab_ints(&ab, "shape", full, rout);
    dp_expr *bb2 = call1(X, "broadcast_to", b, &ab);
    b3 = bb2 ? reshape_to(X, bb2, b3s, 3) : NULL;
    dp_release(bb2);
  }
  dp_expr *bt = NULL, *out = NULL;
  if (a3 && b3) {
    dp__ab ab = {0};
    int64_t perm[3] = {0, 2, 1};
    dp__ab_ints(&ab, "axes", perm, 3);
    bt = call1(X, "transpose", b3, &ab);
  }
  if (bt) out = call2(X, "nn.batch_matmul", a3, bt, NULL);
  dp_release(a3), dp_release(b3), dp_release(bt);
  if (out && rout != 3) {
    shape[rout - 2] = m, shape[rout - 1] = n;
    dp_expr *r = reshape_to(X, out, shape, rout);
    dp_release(out);
    out = r;
  }
  return out ? dp__ox_out(X, 0, out) : -1;
}

/* ---------------- activations ---------------- */

static int unary_op(dp__onnx *X, const char *op) {
  dp_expr *x = dp__ox_in(X, 0);
  return x ? dp__ox_out(X, 0, call1(X, op, x, NULL)) : -1;
}

static int cv_relu(dp__onnx *X) { return unary_op(X, "nn.relu"); }
static int cv_sigmoid(dp__onnx *X) { return unary_op(X, "sigmoid"); }
static int cv_tanh(dp__onnx *X) { return unary_op(X, "tanh"); }
static int cv_erf(dp__onnx *X) { return unary_op(X, "erf"); }

static int cv_leaky_relu(dp__onnx *X) {
  dp_expr *x = dp__ox_in(X, 0);
  dp__ab b = {0};
  if (!x) return -1;
  dp__ab_float(&b, "alpha", dp__ox_attr_float(X, "alpha", 0.01));
  return dp__ox_out(X, 0, call1(X, "nn.leaky_relu", x, &b));
}

static int cv_prelu(dp__onnx *X) {
  const dp_tensor_type *d = dp__ox_type(X, 0), *s = d ? dp__ox_type(X, 1) : NULL;
  if (!s) return -1;
  int64_t count = 1;
  for (uint32_t i = 0; i < s->ndim; i++) count *= s->dims[i];
  if (d->ndim < 2 || count != d->dims[1])
    return dp__ox_fail(X, DP_ERR_VALUE, "a slope other than one per channel is not supported");
  dp_expr *x = dp__ox_in(X, 0), *slope = x ? dp__ox_in(X, 1) : NULL;
  if (!slope) return -1;
  dp_expr *v = s->ndim == 1 ? dp_retain(slope) : reshape_to(X, slope, &count, 1);
  dp_expr *r = v ? call2(X, "nn.prelu", x, v, NULL) : NULL;
  dp_release(v);
  return r ? dp__ox_out(X, 0, r) : -1;
}

static dp_expr *clip(dp__onnx *X, dp_expr *x, double lo, double hi) {
  dp__ab b = {0};
  dp__ab_float(&b, "a_min", lo);
  dp__ab_float(&b, "a_max", hi);
  return call1(X, "clip", x, &b);
}

/* clip(x * alpha + beta, 0, 1), as TVM wrote HardSigmoid; x borrowed. */
static dp_expr *hard_sigmoid(dp__onnx *X, dp_expr *x, double alpha, double beta) {
  dp_expr *m = with_scalar(X, "multiply", x, alpha);
  dp_expr *a = m ? with_scalar(X, "add", m, beta) : NULL;
  dp_expr *c = a ? clip(X, a, 0, 1) : NULL;
  dp_release(m);
  dp_release(a);
  return c;
}

static int cv_hard_sigmoid(dp__onnx *X) {
  dp_expr *x = dp__ox_in(X, 0);
  return x ? dp__ox_out(X, 0, hard_sigmoid(X, x, dp__ox_attr_float(X, "alpha", 0.2), dp__ox_attr_float(X, "beta", 0.5))) : -1;
}

static int cv_hard_swish(dp__onnx *X) {
  dp_expr *x = dp__ox_in(X, 0), *h = x ? hard_sigmoid(X, x, 1.0 / 6, 0.5) : NULL;
  dp_expr *r = h ? call2(X, "multiply", x, h, NULL) : NULL;
  dp_release(h);
  return r ? dp__ox_out(X, 0, r) : -1;
}

static int cv_clip(dp__onnx *X) {
  dp_expr *x = dp__ox_in(X, 0);
  if (!x) return -1;
  const dp__ot *lo = dp__ox_has(X, 1) ? dp__ox_known(X, 1) : NULL, *hi = dp__ox_has(X, 2) ? dp__ox_known(X, 2) : NULL;
  if ((!dp__ox_has(X, 1) || (lo && lo->n == 1)) && (!dp__ox_has(X, 2) || (hi && hi->n == 1)))
    return dp__ox_out(X, 0, clip(X, x, lo ? dp__ot_real(lo, 0) : -INFINITY, hi ? dp__ot_real(hi, 0) : INFINITY));
  /* bounds computed by the graph: maximum and minimum, as TVM */
  dp_expr *r = dp_retain(x);
  for (uint32_t i = 1; r && i <= 2; i++) {
    if (!dp__ox_has(X, i)) continue;
    dp_expr *bound = dp__ox_in(X, i), *n = bound ? call2(X, i == 1 ? "maximum" : "minimum", r, bound, NULL) : NULL;
    dp_release(r);
    r = n;
  }
  return r ? dp__ox_out(X, 0, r) : -1;
}

/* Softmax and LogSoftmax: over the last axis with opset 13's meaning (any
   axis), and before 13 over the flattened axes from `axis` on (computed
   out as TVM did when that is not just the last axis). */
static int softmax(dp__onnx *X, int log) {
  const dp_tensor_type *d = dp__ox_type(X, 0);
  dp_expr *x = d ? dp__ox_in(X, 0) : NULL;
  if (!x) return -1;
  int64_t axis = dp__ox_attr_int(X, "axis", X->opset >= 13 ? -1 : 1);
  if (axis < 0) axis += d->ndim;
  if (axis < 0 || axis >= (int64_t)d->ndim) return dp__ox_fail(X, DP_ERR_VALUE, "axis is out of range for rank %u", d->ndim);
  if (X->opset >= 13 || axis == (int64_t)d->ndim - 1) {
    dp__ab b = {0};
    dp__ab_int(&b, "axis", axis);
    return dp__ox_out(X, 0, call1(X, log ? "nn.log_softmax" : "nn.softmax", x, &b));
  }
  int64_t axes[DP__OT_MAXDIM];
  uint32_t n = 0;
  for (int64_t a = axis; a < (int64_t)d->ndim; a++) axes[n++] = a;
  dp__ab b = {0};
  dp__ab_ints(&b, "axis", axes, n);
  dp__ab_bool(&b, "keepdims", 1);
  dp_expr *mx = call1(X, "max", x, &b);
  dp_expr *sh = mx ? call2(X, "subtract", x, mx, NULL) : NULL;
  dp_expr *e = sh ? call1(X, "exp", sh, NULL) : NULL;
  dp_expr *s = NULL, *r = NULL;
  if (e) {
    dp__ab_ints(&b, "axis", axes, n);
    dp__ab_bool(&b, "keepdims", 1);
    s = call1(X, "sum", e, &b);
  }
  if (s && log) {
    dp_expr *l = call1(X, "log", s, NULL);
    r = l ? call2(X, "subtract", sh, l, NULL) : NULL;
    dp_release(l);
  } else if (s) {
    r = call2(X, "divide", e, s, NULL);
  }
  dp_release(mx), dp_release(sh), dp_release(e), dp_release(s);
  return r ? dp__ox_out(X, 0, r) : -1;
}

static int cv_softmax(dp__onnx *X) { return softmax(X, 0); }
static int cv_log_softmax(dp__onnx *X) { return softmax(X, 1); }

/* ---------------- resize and pad ---------------- */

static int cv_resize(dp__onnx *X) {
  const dp_tensor_type *d = dp__ox_type(X, 0);
  char mode[32], ctm[32], nm[32];
  if (!d) return -1;
  if (d->ndim != 4) return dp__ox_fail(X, DP_ERR_VALUE, "resizing a tensor of rank %u is not supported (4 is)", d->ndim);
  const char *m = attr_str(X, "mode", "nearest", mode, sizeof mode);
  const char *c = m ? attr_str(X, "coordinate_transformation_mode", "half_pixel", ctm, sizeof ctm) : NULL;
  const char *r = c ? attr_str(X, "nearest_mode", "round_prefer_floor", nm, sizeof nm) : NULL;
  if (!r) return -1;
  const char *method = !strcmp(m, "nearest") ? "nearest_neighbor" : !strcmp(m, "linear") ? "linear" : !strcmp(m, "cubic") ? "cubic" : NULL;
  if (!method) return dp__ox_fail(X, DP_ERR_VALUE, "mode '%s' is not one of nearest, linear, cubic", m);
  if (dp__ox_attr_int(X, "antialias", 0)) return dp__ox_fail(X, DP_ERR_VALUE, "antialias is not supported");
  if (dp__ox_attr(X, "axes")) return dp__ox_fail(X, DP_ERR_VALUE, "the axes attribute is not supported");
  int64_t size[2];
  if (dp__ox_has(X, 3)) {
    const dp__ot *s = dp__ox_value(X, 3, "sizes");
    if (!s) return -1;
    if (s->n != 4) return dp__ox_fail(X, DP_ERR_VALUE, "sizes must have 4 values");
    if (dp__ot_int(s, 0) != d->dims[0] || dp__ot_int(s, 1) != d->dims[1])
      return dp__ox_fail(X, DP_ERR_VALUE, "resizing the batch or channel dimension is not supported");
    size[0] = dp__ot_int(s, 2), size[1] = dp__ot_int(s, 3);
  } else {
    const dp__ot *s = dp__ox_value(X, 2, "scales");
    if (!s) return -1;
    if (s->n != 4) return dp__ox_fail(X, DP_ERR_VALUE, "scales must have 4 values (or sizes be given)");
    if (dp__ot_real(s, 0) != 1 || dp__ot_real(s, 1) != 1)
      return dp__ox_fail(X, DP_ERR_VALUE, "resizing the batch or channel dimension is not supported");
    for (int i = 0; i < 2; i++) {
      double v = floor((double)d->dims[2 + i] * dp__ot_real(s, 2 + (size_t)i));
      if (!(v >= 1 && v < 1e12)) return dp__ox_fail(X, DP_ERR_VALUE, "scales make an empty or huge output");
      size[i] = (int64_t)v;
    }
  }
  dp_expr *x = dp__ox_in(X, 0);
  if (!x) return -1;
  dp__ab b = {0};
  dp__ab_ints(&b, "size", size, 2);
  if (!strcmp(c, "tf_crop_and_resize")) {
    const dp__ot *roi = dp__ox_value(X, 1, "roi");
    if (!roi) return -1;
    if (roi->n != 8) return dp__ox_fail(X, DP_ERR_VALUE, "roi must have 8 values");
    dp_aval *items = dp_malloc(4 * sizeof *items);
    if (!items) return dp__ox_fail(X, DP_ERR_MEMORY, "out of memory");
    static const int at[4] = {2, 3, 6, 7}; /* the spatial starts, then ends */
    for (int i = 0; i < 4; i++) items[i] = dp_av_float(dp__ot_real(roi, (size_t)at[i]), DP_FLOAT32);
    dp__ab_val(&b, "roi", dp_av_list(4, items));
  }
  dp__ab_str(&b, "method", method);
  dp__ab_str(&b, "coordinate_transformation_mode", c);
  dp__ab_str(&b, "rounding_method", r);
  dp__ab_float(&b, "cubic_alpha", dp__ox_attr_float(X, "cubic_coeff_a", -0.75));
  dp__ab_int(&b, "cubic_exclude", dp__ox_attr_int(X, "exclude_outside", 0));
  dp__ab_float(&b, "extrapolation_value", dp__ox_attr_float(X, "extrapolation_value", 0));
  return dp__ox_out(X, 0, call1(X, "image.resize2d", x, &b));
}

static int cv_pad(dp__onnx *X) {
  const dp_tensor_type *d = dp__ox_type(X, 0);
  char mode[16];
  if (!d) return -1;
  const char *m = attr_str(X, "mode", "constant", mode, sizeof mode);
  if (!m) return -1;
  if (strcmp(m, "constant") && strcmp(m, "reflect") && strcmp(m, "edge"))
    return dp__ox_fail(X, DP_ERR_VALUE, "mode '%s' is not one of constant, reflect, edge", m);
  const dp__ot *p = dp__ox_value(X, 1, "pads");
  if (!p) return -1;
  int64_t pads[2 * DP__OT_MAXDIM] = {0}, axes[DP__OT_MAXDIM];
  uint32_t na = d->ndim;
  for (uint32_t i = 0; i < na; i++) axes[i] = i;
  if (dp__ox_has(X, 3)) {
    const dp__ot *a = dp__ox_value(X, 3, "axes");
    if (!a) return -1;
    if (a->n > d->ndim) return dp__ox_fail(X, DP_ERR_VALUE, "more axes than dimensions");
    na = (uint32_t)a->n;
    for (uint32_t i = 0; i < na; i++) {
      axes[i] = dp__ot_int(a, i) < 0 ? dp__ot_int(a, i) + d->ndim : dp__ot_int(a, i);
      if (axes[i] < 0 || axes[i] >= d->ndim) return dp__ox_fail(X, DP_ERR_VALUE, "an axis is out of range");
    }
  }
  if (p->n != 2 * (size_t)na) return dp__ox_fail(X, DP_ERR_VALUE, "pads has %zu values for %u axes", p->n, na);
  for (uint32_t i = 0; i < na; i++) {
    pads[2 * axes[i]] = dp__ot_int(p, i);
    pads[2 * axes[i] + 1] = dp__ot_int(p, i + na);
    if (pads[2 * axes[i]] < 0 || pads[2 * axes[i] + 1] < 0)
      return dp__ox_fail(X, DP_ERR_VALUE, "negative pads (cropping) are not supported");
  }
  dp_expr *x = dp__ox_in(X, 0), *value = NULL;
  if (!x) return -1;
  if (dp__ox_has(X, 2)) {
    const dp__ot *v = dp__ox_known(X, 2);
    value = v ? dp__ox_scalar(X, d->dtype, dp__ot_real(v, 0)) : dp_retain(dp__ox_in(X, 2));
  } else {
    value = dp__ox_scalar(X, d->dtype, 0);
  }
  if (!value) return -1;
  dp_aval *rows = dp_malloc((d->ndim ? d->ndim : 1) * sizeof *rows);
  for (uint32_t i = 0; rows && i < d->ndim; i++) {
    dp_aval *pair = dp_malloc(2 * sizeof *pair);
    if (!pair) {
      rows[i] = (dp_aval){0};
      continue;
    }
    pair[0] = dp_av_int(pads[2 * i]);
    pair[1] = dp_av_int(pads[2 * i + 1]);
    rows[i] = dp_av_list(2, pair);
  }
  dp__ab b = {0};
  dp__ab_val(&b, "pad_width", rows ? dp_av_list(d->ndim, rows) : (dp_aval){0});
  for (uint32_t i = 0; rows && i < d->ndim; i++)
    if (!rows[i].kind) b.items[0].val.kind = 0; /* out of memory: dp__ox_call says so */
  dp__ab_str(&b, "pad_mode", m);
  dp_expr *r = call2(X, "nn.pad", x, value, &b);
  dp_release(value);
  return r ? dp__ox_out(X, 0, r) : -1;
}

static const struct { const char *op; dp__onnx_conv fn; } converters[] = {
  {"Conv", cv_conv}, {"ConvTranspose", cv_conv_transpose}, {"MaxPool", cv_max_pool},
  {"AveragePool", cv_average_pool}, {"GlobalAveragePool", cv_global_average_pool},
  {"GlobalMaxPool", cv_global_max_pool}, {"BatchNormalization", cv_batch_norm},
  {"LayerNormalization", cv_layer_norm}, {"Gemm", cv_gemm}, {"MatMul", cv_matmul},
  {"Relu", cv_relu}, {"Sigmoid", cv_sigmoid}, {"Tanh", cv_tanh}, {"Erf", cv_erf},
  {"LeakyRelu", cv_leaky_relu}, {"PRelu", cv_prelu}, {"HardSigmoid", cv_hard_sigmoid},
  {"HardSwish", cv_hard_swish}, {"Clip", cv_clip}, {"Softmax", cv_softmax},
  {"LogSoftmax", cv_log_softmax}, {"Resize", cv_resize}, {"Pad", cv_pad},
};

dp__onnx_conv dp__onnx_nn_converter(const char *op) {
  for (size_t i = 0; i < sizeof converters / sizeof converters[0]; i++)
    if (strcmp(converters[i].op, op) == 0) return converters[i].fn;
  return NULL;
}
