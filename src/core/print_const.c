/*
 * Constants in the text format. Scalars of the common dtypes print as
 * literals (`1f`, `2.5f16`, `3i64`, `1`, `True`); everything else prints as
 * the devplan extension `Constant(TYPE, [v, ...])` with the values flat in
 * row-major order, so a printed module re-parses without a metatable.
 * Floats use the shortest decimal that reads back to the same value.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "print_internal.h"
#include "textbuf.h"

static float half_to_float(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) v = ldexpf((float)man, -24);
  else if (exp == 31) v = man ? NAN : INFINITY;
  else v = ldexpf((float)(man | 0x400), exp - 25);
  return sign ? -v : v;
}

static float bfloat_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* Shortest form that reads back to f; single precision values only need
   to read back as the same float. */
static void put_real(dp_tb *b, double f, int single) {
  char buf[40];
  if (isnan(f)) {
    dp_tb_puts(b, "nan");
    return;
  }
  if (isinf(f)) {
    dp_tb_puts(b, f < 0 ? "-inf" : "inf");
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, f);
    double back = strtod(buf, NULL);
    if (single ? (float)back == (float)f : back == f) break;
  }
  dp_tb_puts(b, buf);
}

/* Element i of c as a double or an integer; returns 1 for a real. */
static int elem(const dp_const *c, size_t i, double *f, int64_t *v) {
  int code = DP_DTYPE_CODE(c->dtype), bits = DP_DTYPE_BITS(c->dtype);
  const unsigned char *p = (const unsigned char *)c->data + i * dp_dtype_bytes(c->dtype);
  if (code == DP_DT_FLOAT || code == DP_DT_BFLOAT) {
    uint16_t h;
    if (bits == 64) memcpy(f, p, 8);
    else if (bits == 32) { float x; memcpy(&x, p, 4); *f = x; }
    else { memcpy(&h, p, 2); *f = code == DP_DT_BFLOAT ? bfloat_to_float(h) : half_to_float(h); }
    return 1;
  }
  if (code == DP_DT_BOOL) { *v = p[0] != 0; return 0; }
  int is_signed = code == DP_DT_INT;
  switch (bits) {
  case 8: *v = is_signed ? (int64_t)*(const int8_t *)p : (int64_t)p[0]; break;
  case 16: { int16_t s; uint16_t u; memcpy(&s, p, 2); memcpy(&u, p, 2); *v = is_signed ? s : u; break; }
  case 32: { int32_t s; uint32_t u; memcpy(&s, p, 4); memcpy(&u, p, 4); *v = is_signed ? s : (int64_t)u; break; }
  default: memcpy(v, p, 8); break;
  }
  return 0;
}

/* The literal forms of relay-text.md: bool, int32, int64, float16/32/64. */
static int put_scalar_literal(dp_tb *b, const dp_const *c) {
  dp_dtype d = c->dtype;
  int code = DP_DTYPE_CODE(d), bits = DP_DTYPE_BITS(d);
  double f = 0;
  int64_t v = 0;
  if (c->ndim != 0 || DP_DTYPE_LANES(d) != 1) return 0;
  if (code == DP_DT_BOOL) {
    elem(c, 0, &f, &v);
    dp_tb_puts(b, v ? "True" : "False");
    return 1;
  }
  if (code == DP_DT_INT && (bits == 32 || bits == 64)) {
    elem(c, 0, &f, &v);
    dp_tb_printf(b, bits == 32 ? "%lld" : "%lldi64", (long long)v);
    return 1;
  }
  if (code == DP_DT_FLOAT && (bits == 16 || bits == 32 || bits == 64)) {
    elem(c, 0, &f, &v);
    if (!isfinite(f)) return 0; /* no literal for these: the Constant form */
    put_real(b, f, bits != 64);
    dp_tb_puts(b, bits == 32 ? "f" : bits == 16 ? "f16" : "f64");
    return 1;
  }
  return 0;
}

static void put_const_type(dp_tb *b, const dp_const *c) {
  char dt[16];
  dp_dtype_str(c->dtype, dt);
  if (c->ndim == 0) {
    dp_tb_puts(b, dt);
    return;
  }
  dp_tb_puts(b, "Tensor[(");
  for (uint32_t i = 0; i < c->ndim; i++)
    dp_tb_printf(b, i ? ", %lld" : "%lld", (long long)c->shape[i]);
  dp_tb_printf(b, "), %s]", dt);
}

void dp__put_const(dp_tb *b, const dp_const *c) {
  if (put_scalar_literal(b, c)) return;
  size_t esize = dp_dtype_bytes(c->dtype), n = esize ? c->nbytes / esize : 0;
  int single = DP_DTYPE_BITS(c->dtype) != 64;
  dp_tb_puts(b, "Constant(");
  put_const_type(b, c);
  dp_tb_puts(b, ", [");
  for (size_t i = 0; i < n && !b->failed; i++) {
    double f;
    int64_t v;
    if (i) dp_tb_puts(b, ", ");
    if (elem(c, i, &f, &v)) put_real(b, f, single);
    else dp_tb_printf(b, "%lld", (long long)v);
  }
  dp_tb_puts(b, "])");
}
