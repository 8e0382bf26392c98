/*
 * Tensors known at import (dp__ot): an initializer's or a Constant's value,
 * a shape, or what the importer computed from them (eval.c). Elements are
 * kept in their own dtype and read or written as integers or reals, so one
 * routine serves every dtype. A tensor larger than the import limit is
 * refused, so that no graph can make the importer allocate without bound.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* 64 MiB: far more than any shape computation (a mask of 4096 x 4096) */
#define MAX_BYTES ((size_t)1 << 26)

dp__ot *dp__ot_new(dp_dtype dtype, uint32_t ndim, const int64_t *dims, const char **why) {
  size_t eb = dp_elem_bytes(dtype), n = 1;
  *why = NULL;
  if (!eb || ndim > DP__OT_MAXDIM) {
    *why = !eb ? "a dtype with no element form" : "more than 64 dimensions";
    return NULL;
  }
  for (uint32_t i = 0; i < ndim; i++) {
    if (dims[i] < 0) {
      *why = "a negative dimension";
      return NULL;
    }
    if (dims[i] && n > MAX_BYTES / eb / (size_t)dims[i]) {
      *why = "more than 64 MiB";
      return NULL;
    }
    n *= (size_t)dims[i];
  }
  dp__ot *t = dp_calloc(1, sizeof *t);
  if (!t) return NULL;
  t->dtype = dtype;
  t->ndim = ndim;
  if (ndim) memcpy(t->dims, dims, ndim * sizeof dims[0]);
  t->n = n;
  if (n && !(t->data = dp_calloc(n, eb))) {
    free(t);
    return NULL;
  }
  return t;
}

void dp__ot_free(dp__ot *t) {
  if (!t) return;
  free(t->data);
  free(t);
}

int dp__ot_is_real(const dp__ot *t) {
  return DP_DTYPE_CODE(t->dtype) == DP_DT_FLOAT || DP_DTYPE_CODE(t->dtype) == DP_DT_BFLOAT;
}

int64_t dp__ot_int(const dp__ot *t, size_t i) {
  double f;
  int64_t v = 0;
  if (dp_elem_get(t->dtype, t->data, i, &f, &v) == 1) {
    if (f != f) return 0;
    if (f >= 0x1p63) return INT64_MAX;
    if (f < -0x1p63) return INT64_MIN;
    return (int64_t)f;
  }
  return v;
}

double dp__ot_real(const dp__ot *t, size_t i) {
  double f;
  int64_t v = 0;
  if (dp_elem_get(t->dtype, t->data, i, &f, &v) == 1) return f;
  if (DP_DTYPE_CODE(t->dtype) == DP_DT_UINT && DP_DTYPE_BITS(t->dtype) == 64) return (double)(uint64_t)v;
  return (double)v;
}

void dp__ot_set_int(dp__ot *t, size_t i, int64_t v) {
  if (DP_DTYPE_CODE(t->dtype) == DP_DT_BOOL) v = v != 0;
  dp_elem_set_int(t->dtype, t->data, i, v);
}

void dp__ot_set_real(dp__ot *t, size_t i, double v) {
  if (dp__ot_is_real(t)) {
    dp_elem_set_real(t->dtype, t->data, i, v);
    return;
  }
  if (DP_DTYPE_CODE(t->dtype) == DP_DT_BOOL) {
    dp_elem_set_int(t->dtype, t->data, i, v != 0);
    return;
  }
  /* to an integer: truncated toward zero, saturated (a cast of a value
     outside the range is undefined in C) */
  int64_t x = v != v ? 0 : v >= 0x1p63 ? INT64_MAX : v < -0x1p63 ? INT64_MIN : (int64_t)v;
  dp_elem_set_int(t->dtype, t->data, i, x);
}
