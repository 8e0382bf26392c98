/*
 * Built-in neural-network operators (nn.*) and their type relations:
 * convolutions (2-D, transposed 2-D, 3-D), dense, batch norm, dropout,
 * pooling (windowed, global, adaptive), batch_flatten, bias_add, softmax.
 * Shapes follow TVM's relations (NCHW/OIHW by default, other primal
 * layouts such as NHWC/HWIO by their axis letters); `?` stays `?`.
 */
#include <string.h>
#include "ops_internal.h"

#define OP ((const dp_op *)ud)
#define TENSOR(i) const dp_tensor_type *t##i = dp__arg_tensor(args, i, OP, err); if (!t##i) return NULL

/* Position of axis letter c in a primal layout of rank n, or -1. */
static int axis_of(const char *layout, char c, uint32_t n) {
  const char *p = strchr(layout, c);
  return p && strlen(layout) == n ? (int)(p - layout) : -1;
}

/* Positions of batch, channel and the spatial letters sp ("HW", "DHW"). */
static int layout_axes(const dp_op *op, const char *layout, uint32_t ndim, const char *sp,
                       int *n, int *c, int *s, dp_err **err) {
  *n = axis_of(layout, 'N', ndim);
  *c = axis_of(layout, 'C', ndim);
  int ok = *n >= 0 && *c >= 0 && ndim == strlen(sp) + 2;
  for (size_t i = 0; sp[i]; i++) ok = ok && (s[i] = axis_of(layout, sp[i], ndim)) >= 0;
  if (ok) return 0;
  dp__rel_fail(err, op, "layout \"%s\" does not fit data of rank %u", layout, ndim);
  return -1;
}

/* Total padding per spatial dim from 1, nsp or 2*nsp values (TVM's rule). */
static int padding(const dp_op *op, const dp_attrs *attrs, int nsp, int64_t *pad, int *ovf,
                   dp_err **err) {
  int64_t p[6];
  int np = dp__attr_ints(op, attrs, "padding", p, 6);
  for (int i = 0; i < nsp; i++) {
    if (np == 1) pad[i] = dp__mul(2, p[0], ovf);
    else if (np == nsp) pad[i] = dp__mul(2, p[i], ovf);
    else if (np == 2 * nsp) pad[i] = dp__add(p[i], p[i + nsp], ovf);
    else if (np < 0) pad[i] = 0;
    else {
      dp__rel_fail(err, op, "padding must have 1, %d or %d values", nsp, 2 * nsp);
      return -1;
    }
  }
  return 0;
}

/* strides / dilation style attributes: 1 value for all, or one per dim. */
static int per_dim(const dp_op *op, const dp_attrs *attrs, const char *key, int nsp, int64_t *out,
                   dp_err **err) {
  int64_t v[3];
  int n = dp__attr_ints(op, attrs, key, v, 3);
  for (int i = 0; i < nsp; i++) out[i] = n < 0 ? 1 : n == 1 ? v[0] : v[i];
  if (n < 0 || n == 1 || n == nsp) {
    for (int i = 0; i < nsp; i++)
      if (out[i] <= 0) { dp__rel_fail(err, op, "%s must be positive", key); return -1; }
    return 0;
  }
  dp__rel_fail(err, op, "%s must have %d values", key, nsp);
  return -1;
}

/* Output size of a sliding window (convolution, pooling) over in + pad
   values; stride and dil are positive (per_dim). A window wider than the
   padded input is an error, not a negative size. */
static int window_out(const dp_op *op, int64_t in, int64_t pad, int64_t k, int64_t dil,
                      int64_t stride, int ceil, int64_t *out, int *ovf, dp_err **err) {
  if (k == 0 || k < DP_DIM_ANY) {
    dp__rel_fail(err, op, "window size %lld must be positive", (long long)k);
    return -1;
  }
  if (in < 0 || k < 0) {
    *out = DP_DIM_ANY;
    return 0;
  }
  int64_t dk = dp__add(dp__mul(k - 1, dil, ovf), 1, ovf), padded = dp__add(in, pad, ovf);
  int64_t span = dp__sub(padded, dk, ovf);
  if (*ovf) return 0; /* reported by dp__rel_tensor */
  if (span < 0) {
    dp__rel_fail(err, op, "window of %lld is wider than the padded input of %lld", (long long)dk,
                 (long long)padded);
    return -1;
  }
  *out = (ceil ? dp__add(span, stride - 1, ovf) / stride : span / stride) + 1;
  return 0;
}

/* nn.conv2d and nn.conv3d: nsp spatial dims named by sp. */
static dp_type *conv_common(dp_ctx *ctx, dp_type *const *args, const dp_attrs *attrs,
                            const dp_op *op, const char *sp, dp_err **err) {
  int nsp = (int)strlen(sp), dn, dc, ds[3], wo, wi, ws[3];
  const dp_tensor_type *d = dp__arg_tensor(args, 0, op, err), *w;
  if (!d || !(w = dp__arg_tensor(args, 1, op, err))) return NULL;
  const char *dl = dp__attr_string(op, attrs, "data_layout", ""), *kl = dp__attr_string(op, attrs, "kernel_layout", "");
  if (layout_axes(op, dl, d->ndim, sp, &dn, &dc, ds, err) < 0) return NULL;
  wo = axis_of(kl, 'O', w->ndim);
  wi = axis_of(kl, 'I', w->ndim);
  for (int i = 0; i < nsp; i++) ws[i] = axis_of(kl, sp[i], w->ndim);
  if (wo < 0 || wi < 0 || ws[0] < 0 || ws[nsp - 1] < 0)
    return dp__rel_fail(err, op, "kernel_layout \"%s\" does not fit a weight of rank %u", kl, w->ndim);
  int64_t groups = dp__attr_int(op, attrs, "groups", 1), ks[3], stride[3], dil[3], pad[3];
  int64_t chan = dp__attr_int(op, attrs, "channels", w->dims[wo]);
  int nk = dp__attr_ints(op, attrs, "kernel_size", ks, 3), ovf = 0;
  if (groups <= 0) return dp__rel_fail(err, op, "groups must be positive");
  if (per_dim(op, attrs, "strides", nsp, stride, err) < 0 || per_dim(op, attrs, "dilation", nsp, dil, err) < 0 ||
      padding(op, attrs, nsp, pad, &ovf, err) < 0)
    return NULL;
  if (nk >= 0 && nk != nsp) return dp__rel_fail(err, op, "kernel_size must have %d values", nsp);
  int govf = 0;
  int64_t cin = d->dims[dc], wcin = w->dims[wi], need = dp__dim_mul(wcin, groups, &govf);
  if (govf)
    return dp__rel_fail(err, op, "%lld channels x %lld groups does not fit in int64",
                        (long long)wcin, (long long)groups);
  if (cin >= 0 && need >= 0 && cin != need)
    return dp__rel_fail(err, op, "data has %lld channels but the weight expects %lld x %lld groups",
                        (long long)cin, (long long)wcin, (long long)groups);
  if (chan >= 0 && w->dims[wo] >= 0 && chan != w->dims[wo])
    return dp__rel_fail(err, op, "channels=%lld but the weight has %lld output channels",
                        (long long)chan, (long long)w->dims[wo]);
  int64_t out[5];
  memcpy(out, d->dims, d->ndim * sizeof out[0]);
  out[dc] = chan;
  for (int i = 0; i < nsp; i++) {
    int64_t k = w->dims[ws[i]];
    if (nk >= 0) {
      if (k >= 0 && ks[i] != k)
        return dp__rel_fail(err, op, "kernel_size %lld differs from the weight's %lld", (long long)ks[i], (long long)k);
      k = ks[i];
    }
    if (window_out(op, d->dims[ds[i]], pad[i], k, dil[i], stride[i], 0, &out[ds[i]], &ovf, err) < 0)
      return NULL;
  }
  dp_dtype dt = dp__attr_dtype(op, attrs, "out_dtype", d->dtype);
  return dp__rel_tensor(ctx, op, dt, d->ndim, out, ovf, err);
}

/* The spatial axes of an operator's layout: the 3-d family's (nn.conv3d,
   nn.adaptive_avg_pool3d, ...) are depth, height and width. */
static const char *spatial_axes(const dp_op *op) {
  return strstr(op->name, "3d") ? "DHW" : "HW";
}

static dp_type *conv_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                         const dp_attrs *attrs, void *ud, dp_err **err) {
  return conv_common(ctx, args, attrs, OP, spatial_axes(OP), err);
}

/* The weight of a transposed convolution holds (in channels, out channels
   / groups) in its first two positions whether the layout says IOHW or,
   as older TVM wrote it, OIHW. */
static dp_type *conv2d_transpose_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                     const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  TENSOR(1);
  int dn, dc, ds[2];
  const char *dl = dp__attr_string(OP, attrs, "data_layout", ""), *kl = dp__attr_string(OP, attrs, "kernel_layout", "");
  if (layout_axes(OP, dl, t0->ndim, "HW", &dn, &dc, ds, err) < 0) return NULL;
  int wh = axis_of(kl, 'H', t1->ndim), ww = axis_of(kl, 'W', t1->ndim);
  if (t1->ndim != 4 || wh < 2 || ww < 2)
    return dp__rel_fail(err, OP, "kernel_layout \"%s\" does not fit a weight of rank %u", kl, t1->ndim);
  int64_t groups = dp__attr_int(OP, attrs, "groups", 1), ks[2], stride[2], dil[2], pad[2], opad[2];
  int ovf = 0;
  if (groups <= 0) return dp__rel_fail(err, OP, "groups must be positive");
  if (per_dim(OP, attrs, "strides", 2, stride, err) < 0 || per_dim(OP, attrs, "dilation", 2, dil, err) < 0 ||
      padding(OP, attrs, 2, pad, &ovf, err) < 0)
    return NULL;
  int no = dp__attr_ints(OP, attrs, "output_padding", opad, 2);
  if (no == 1) opad[1] = opad[0];
  else if (no != 2) opad[0] = opad[1] = 0;
  int nk = dp__attr_ints(OP, attrs, "kernel_size", ks, 2);
  if (nk >= 0 && nk != 2) return dp__rel_fail(err, OP, "kernel_size must have 2 values");
  int64_t cin = t0->dims[dc];
  if (cin >= 0 && t1->dims[0] >= 0 && cin != t1->dims[0])
    return dp__rel_fail(err, OP, "data has %lld channels but the weight expects %lld",
                        (long long)cin, (long long)t1->dims[0]);
  int64_t chan = dp__attr_int(OP, attrs, "channels", dp__dim_mul(t1->dims[1], groups, &ovf));
  int64_t out[4];
  memcpy(out, t0->dims, sizeof out);
  out[dc] = chan;
  int wsp[2] = {wh, ww};
  for (int i = 0; i < 2; i++) {
    int64_t k = nk >= 0 ? ks[i] : t1->dims[wsp[i]], in = t0->dims[ds[i]];
    if (in < 0 || k < 0) {
      out[ds[i]] = DP_DIM_ANY;
      continue;
    }
    /* (in - 1) * stride - pad + (k - 1) * dil + 1 + output_padding */
    int64_t grown = dp__sub(dp__mul(in - 1, stride[i], &ovf), pad[i], &ovf);
    int64_t window = dp__add(dp__mul(k - 1, dil[i], &ovf), 1, &ovf);
    out[ds[i]] = dp__add(dp__add(grown, window, &ovf), opad[i], &ovf);
  }
  dp_dtype dt = dp__attr_dtype(OP, attrs, "out_dtype", t0->dtype);
  return dp__rel_tensor(ctx, OP, dt, 4, out, ovf, err);
}

static dp_type *dense_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                          const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  TENSOR(1);
  if (t0->ndim < 1 || t0->ndim > DP__MAXDIM || t1->ndim != 2)
    return dp__rel_fail(err, OP, "expects data of rank >= 1 and a weight of rank 2");
  int64_t k = t0->dims[t0->ndim - 1], units = dp__attr_int(OP, attrs, "units", t1->dims[0]);
  if (k >= 0 && t1->dims[1] >= 0 && k != t1->dims[1])
    return dp__rel_fail(err, OP, "data has %lld input features, weight %lld", (long long)k, (long long)t1->dims[1]);
  if (units >= 0 && t1->dims[0] >= 0 && units != t1->dims[0])
    return dp__rel_fail(err, OP, "units=%lld but the weight has %lld rows", (long long)units, (long long)t1->dims[0]);
  int64_t out[DP__MAXDIM];
  memcpy(out, t0->dims, t0->ndim * sizeof out[0]);
  out[t0->ndim - 1] = units;
  dp_dtype dt = dp__attr_dtype(OP, attrs, "out_dtype", t0->dtype);
  return dp__rel_tensor(ctx, OP, dt, t0->ndim, out, 0, err);
}

/* A 1-D tensor of the data's channel count: what bias, gamma, beta, mean
   and variance must be. */
static dp_type *channel_vector(dp_ctx *ctx, const dp_tensor_type *d, int axis, const dp_op *op,
                               dp_err **err) {
  return dp__rel_tensor(ctx, op, d->dtype, 1, &d->dims[axis], 0, err);
}

static int check_vector(dp_type *vec, dp_type *got, uint32_t i, const dp_op *op, dp_err **err) {
  const dp_tensor_type *v = (const dp_tensor_type *)vec, *g = (const dp_tensor_type *)got;
  if (got->h.kind == DP_TY_TENSOR && g->dtype == v->dtype && g->ndim == 1 &&
      (g->dims[0] == v->dims[0] || g->dims[0] < 0 || v->dims[0] < 0))
    return 0;
  char a[128], b[128];
  dp__rel_fail(err, op, "argument %u must be %s, got %s", i + 1, dp__type_brief(vec, a, sizeof a),
               dp__type_brief(got, b, sizeof b));
  return -1;
}

/* The channel vector of args[0] at its `axis` attribute, once args[1] to
   args[last] are checked to be such vectors (bias_add: the bias;
   batch_norm: gamma, beta, mean, variance). NULL with *err otherwise. */
static dp_type *channel_args(dp_ctx *ctx, dp_type *const *args, uint32_t last,
                             const dp_attrs *attrs, const dp_op *op, dp_err **err) {
  const dp_tensor_type *t0 = dp__arg_tensor(args, 0, op, err);
  if (!t0) return NULL;
  int ax = dp__norm_axis(dp__attr_int(op, attrs, "axis", 1), t0->ndim);
  if (ax < 0) return dp__rel_fail(err, op, "axis out of range for rank %u", t0->ndim);
  dp_type *vec = channel_vector(ctx, t0, ax, op, err);
  for (uint32_t i = 1; vec && i <= last; i++)
    if (check_vector(vec, args[i], i, op, err) < 0) {
      dp_release(vec);
      vec = NULL;
    }
  return vec;
}

static dp_type *bias_add_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                             const dp_attrs *attrs, void *ud, dp_err **err) {
  dp_type *vec = channel_args(ctx, args, 1, attrs, OP, err);
  if (!vec) return NULL;
  dp_release(vec);
  return dp_retain(args[0]);
}

static dp_type *batch_norm_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                               const dp_attrs *attrs, void *ud, dp_err **err) {
  dp_type *vec = channel_args(ctx, args, 4, attrs, OP, err);
  if (!vec) return NULL;
  dp_type *fields[3] = {args[0], vec, vec};
  dp_type *res = dp_type_tuple(ctx, 3, fields);
  dp_release(vec);
  return res;
}

static dp_type *dropout_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                            const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  dp_type *fields[2] = {args[0], args[0]};
  return dp_type_tuple(ctx, 2, fields);
}

static dp_type *pool2d_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                           const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  int dn, dc, ds[2];
  if (layout_axes(OP, dp__attr_string(OP, attrs, "layout", ""), t0->ndim, "HW", &dn, &dc, ds, err) < 0)
    return NULL;
  int64_t ps[2], stride[2], dil[2], pad[2];
  int np = dp__attr_ints(OP, attrs, "pool_size", ps, 2), ovf = 0;
  if (np == 1) ps[1] = ps[0];
  else if (np != 2) return dp__rel_fail(err, OP, "pool_size must have 1 or 2 values");
  if (per_dim(OP, attrs, "strides", 2, stride, err) < 0 || per_dim(OP, attrs, "dilation", 2, dil, err) < 0 ||
      padding(OP, attrs, 2, pad, &ovf, err) < 0)
    return NULL;
  int ceil = dp__attr_bool(OP, attrs, "ceil_mode", 0);
  int64_t out[4];
  memcpy(out, t0->dims, sizeof out);
  for (int i = 0; i < 2; i++) {
    if (ps[i] <= 0) return dp__rel_fail(err, OP, "pool_size must be positive");
    if (window_out(OP, t0->dims[ds[i]], pad[i], ps[i], dil[i], stride[i], ceil, &out[ds[i]], &ovf, err) < 0)
      return NULL;
  }
  return dp__rel_tensor(ctx, OP, t0->dtype, 4, out, ovf, err);
}

static dp_type *global_pool2d_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                  const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  int dn, dc, ds[2];
  if (layout_axes(OP, dp__attr_string(OP, attrs, "layout", ""), t0->ndim, "HW", &dn, &dc, ds, err) < 0)
    return NULL;
  int64_t out[4];
  memcpy(out, t0->dims, sizeof out);
  out[ds[0]] = out[ds[1]] = 1;
  return dp__rel_tensor(ctx, OP, t0->dtype, 4, out, 0, err);
}

/* Adaptive pooling: output_size empty keeps the input size, one value
   serves all spatial dims. */
static dp_type *adaptive_pool(dp_ctx *ctx, dp_type *const *args, const dp_attrs *attrs,
                              const dp_op *op, const char *sp, dp_err **err) {
  const dp_tensor_type *d = dp__arg_tensor(args, 0, op, err);
  if (!d) return NULL;
  int nsp = (int)strlen(sp), dn, dc, ds[3];
  if (layout_axes(op, dp__attr_string(op, attrs, "layout", ""), d->ndim, sp, &dn, &dc, ds, err) < 0)
    return NULL;
  int64_t os[3], out[5];
  int n = dp__attr_ints(op, attrs, "output_size", os, 3);
  if (n > 1 && n != nsp) return dp__rel_fail(err, op, "output_size must have 1 or %d values", nsp);
  memcpy(out, d->dims, d->ndim * sizeof out[0]);
  for (int i = 0; i < nsp && n > 0; i++) out[ds[i]] = n == 1 ? os[0] : os[i];
  return dp__rel_tensor(ctx, op, d->dtype, d->ndim, out, 0, err);
}

static dp_type *adaptive_pool_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                  const dp_attrs *attrs, void *ud, dp_err **err) {
  return adaptive_pool(ctx, args, attrs, OP, spatial_axes(OP), err);
}

static dp_type *batch_flatten_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                  const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  if (t0->ndim < 1) return dp__rel_fail(err, OP, "expects a tensor of rank >= 1");
  int64_t out[2] = {t0->dims[0], 1};
  int ovf = 0;
  for (uint32_t i = 1; i < t0->ndim; i++) out[1] = dp__dim_mul(out[1], t0->dims[i], &ovf);
  return dp__rel_tensor(ctx, OP, t0->dtype, 2, out, ovf, err);
}

static dp_type *softmax_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                            const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  if (dp__norm_axis(dp__attr_int(OP, attrs, "axis", -1), t0->ndim) < 0)
    return dp__rel_fail(err, OP, "axis out of range for rank %u", t0->ndim);
  return dp_retain(args[0]);
}

static dp_type *same_rel(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                         const dp_attrs *attrs, void *ud, dp_err **err) {
  TENSOR(0);
  return dp_retain(args[0]);
}

#define CONV2D_ATTRS "strides:ints=[1,1] padding:ints=[0,0] dilation:ints=[1,1] groups:int=1 " \
  "channels:int_or_none=None kernel_size:ints=None data_layout:str=NCHW kernel_layout:str=OIHW " \
  "out_layout:str= out_dtype:dtype="
#define CONV3D_ATTRS "strides:ints=[1,1,1] padding:ints=[0,0,0] dilation:ints=[1,1,1] groups:int=1 " \
  "channels:int_or_none=None kernel_size:ints=None data_layout:str=NCDHW kernel_layout:str=OIDHW " \
  "out_layout:str= out_dtype:dtype="
#define CONV2DT_ATTRS "channels:int_or_none=None kernel_size:ints=None strides:ints=[1,1] " \
  "padding:ints=[0,0] output_padding:ints=[0,0] dilation:ints=[1,1] groups:int=1 " \
  "data_layout:str=NCHW kernel_layout:str=IOHW out_layout:str= out_dtype:dtype="
#define POOL_ATTRS "pool_size:ints strides:ints=[1,1] dilation:ints=[1,1] padding:ints=[0,0] " \
  "layout:str=NCHW out_layout:str= ceil_mode:bool=False"

static const dp__opdef defs[] = {
  {"nn.conv2d", 2, 0, CONV2D_ATTRS, conv_rel, K_OUT_FUSABLE},
  {"nn.conv2d_transpose", 2, 0, CONV2DT_ATTRS, conv2d_transpose_rel, K_OUT_FUSABLE},
  {"nn.conv3d", 2, 0, CONV3D_ATTRS, conv_rel, K_OUT_FUSABLE},
  {"nn.dense", 2, 0, "units:int_or_none=None out_dtype:dtype=", dense_rel, K_OUT_FUSABLE},
  {"nn.batch_norm", 5, 0, "axis:int=1 epsilon:float=1e-5 center:bool=True scale:bool=True",
   batch_norm_rel, K_OUT_FUSABLE},
  {"nn.dropout", 1, 0, "rate:float=0.5", dropout_rel, K_OPAQUE},
  {"nn.max_pool2d", 1, 0, POOL_ATTRS, pool2d_rel, K_OUT_FUSABLE},
  {"nn.avg_pool2d", 1, 0, POOL_ATTRS " count_include_pad:bool=False", pool2d_rel, K_OUT_FUSABLE},
  {"nn.global_avg_pool2d", 1, 0, "layout:str=NCHW out_layout:str=", global_pool2d_rel, K_OUT_FUSABLE},
  {"nn.global_max_pool2d", 1, 0, "layout:str=NCHW out_layout:str=", global_pool2d_rel, K_OUT_FUSABLE},
  {"nn.adaptive_avg_pool2d", 1, 0, "output_size:ints=[] layout:str=NCHW out_layout:str=",
   adaptive_pool_rel, K_OUT_FUSABLE},
  {"nn.adaptive_max_pool2d", 1, 0, "output_size:ints=[] layout:str=NCHW out_layout:str=",
   adaptive_pool_rel, K_OUT_FUSABLE},
  {"nn.adaptive_avg_pool3d", 1, 0, "output_size:ints=[] layout:str=NCDHW out_layout:str=",
   adaptive_pool_rel, K_OUT_FUSABLE},
  {"nn.adaptive_max_pool3d", 1, 0, "output_size:ints=[] layout:str=NCDHW out_layout:str=",
   adaptive_pool_rel, K_OUT_FUSABLE},
  {"nn.batch_flatten", 1, 0, "", batch_flatten_rel, K_INJECTIVE},
  {"nn.bias_add", 2, 0, "axis:int=1", bias_add_rel, K_BROADCAST},
  {"nn.softmax", 1, 0, "axis:int=-1", softmax_rel, K_OPAQUE},
  {"nn.log_softmax", 1, 0, "axis:int=-1", softmax_rel, K_OPAQUE},
  {"nn.relu", 1, 0, "", same_rel, K_ELEMWISE},
  {"nn.leaky_relu", 1, 0, "alpha:float=0.25", same_rel, K_ELEMWISE},
};

int dp__register_nn_ops(dp_ctx *ctx, dp_err **err) {
  return dp__register_opdefs(ctx, defs, sizeof defs / sizeof defs[0], err);
}
