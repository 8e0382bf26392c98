/*
 * Scalar elements of dtypes (scalar.h): half-precision rounding, range
 * checks, and reading and writing one element of a buffer.
 */
#include <float.h>
#include <math.h>
#include <string.h>
#include "devplan/scalar.h"

/* The double v in a binary format with ebits exponent and mbits fraction
   bits (float16: 5, 10; bfloat16: 8, 7), rounded to nearest, ties to even.
   v = sig * 2^(e - 52) with sig the 53-bit significand; it is divided by the
   unit in the last place of the result (2^lsb) with the remainder deciding
   the rounding. A carry out of the fraction moves into the exponent, which
   is right (1.111..1 rounds up to 10.000..0), and past the largest exponent
   gives infinity. */
static uint32_t to_small_float(double v, int ebits, int mbits) {
  uint64_t x;
  memcpy(&x, &v, sizeof x);
  uint32_t sign = (uint32_t)(x >> 63) << (ebits + mbits);
  uint32_t inf = ((1u << ebits) - 1) << mbits;
  int bexp = (int)((x >> 52) & 0x7ff);
  uint64_t frac = x & ((UINT64_C(1) << 52) - 1);
  if (bexp == 0x7ff) return sign | inf | (frac ? 1u << (mbits - 1) : 0); /* quiet NaN, inf */
  if (bexp == 0) return sign; /* zero, or a double subnormal: far below any result */
  int bias = (1 << (ebits - 1)) - 1, e = bexp - 1023;
  if (e > bias) return sign | inf;
  uint64_t sig = frac | (UINT64_C(1) << 52);
  int normal = e >= 1 - bias;
  int lsb = normal ? e - mbits : 1 - bias - mbits;
  int shift = lsb - e + 52;
  if (shift > 53) return sign; /* below half the smallest subnormal */
  uint64_t q = sig >> shift, rem = sig & ((UINT64_C(1) << shift) - 1), half = UINT64_C(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  /* normal: q carries the implicit bit, so the exponent field is e + bias - 1 + (q >> mbits) */
  uint64_t bits = normal ? ((uint64_t)(e + bias - 1) << mbits) + q : q;
  return bits >= inf ? sign | inf : sign | (uint32_t)bits;
}

static double from_small_float(uint32_t h, int ebits, int mbits) {
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t e = (h >> mbits) & ((1u << ebits) - 1), m = h & ((1u << mbits) - 1);
  double v;
  if (e == 0) v = ldexp((double)m, 1 - bias - mbits);
  else if (e == (1u << ebits) - 1) v = m ? NAN : INFINITY;
  else v = ldexp((double)(m | (1u << mbits)), (int)e - bias - mbits);
  return (h >> (ebits + mbits)) & 1 ? -v : v;
}

uint16_t dp_f16_from_double(double v) { return (uint16_t)to_small_float(v, 5, 10); }
uint16_t dp_bf16_from_double(double v) { return (uint16_t)to_small_float(v, 8, 7); }
double dp_f16_to_double(uint16_t h) { return from_small_float(h, 5, 10); }
double dp_bf16_to_double(uint16_t h) { return from_small_float(h, 8, 7); }

int dp_dtype_fits_int(dp_dtype dt, int neg, uint64_t mag) {
  int code = DP_DTYPE_CODE(dt), bits = DP_DTYPE_BITS(dt);
  if (mag == 0) return 1;
  if (code == DP_DT_BOOL) return !neg && mag == 1;
  if (bits < 1 || bits > 64) return 0;
  if (code == DP_DT_UINT) return !neg && (bits == 64 || mag <= (UINT64_C(1) << bits) - 1);
  if (code != DP_DT_INT) return 0;
  uint64_t top = UINT64_C(1) << (bits - 1); /* -top .. top - 1 */
  return neg ? mag <= top : mag < top;
}

int dp_dtype_fits_real(dp_dtype dt, double v) {
  double max;
  int code = DP_DTYPE_CODE(dt), bits = DP_DTYPE_BITS(dt);
  if (!isfinite(v)) return 1;
  if (code == DP_DT_BFLOAT) max = 0x1.fep127;
  else if (code != DP_DT_FLOAT) return 0;
  else if (bits == 16) max = 65504.0;
  else if (bits == 32) max = FLT_MAX;
  else return bits == 64;
  return fabs(v) <= max;
}

size_t dp_elem_bytes(dp_dtype dt) {
  int code = DP_DTYPE_CODE(dt), bits = DP_DTYPE_BITS(dt);
  if (DP_DTYPE_LANES(dt) != 1) return 0;
  if (code == DP_DT_BOOL) return 1;
  if (code == DP_DT_BFLOAT) return bits == 16 ? 2 : 0;
  if (code == DP_DT_FLOAT) return bits == 16 || bits == 32 || bits == 64 ? (size_t)bits / 8 : 0;
  return bits == 8 || bits == 16 || bits == 32 || bits == 64 ? (size_t)bits / 8 : 0;
}

int dp_elem_set_real(dp_dtype dt, void *buf, size_t i, double v) {
  size_t n = dp_elem_bytes(dt);
  unsigned char *p = (unsigned char *)buf + i * n;
  int code = DP_DTYPE_CODE(dt);
  if (!n) return -1;
  if (code == DP_DT_BFLOAT || (code == DP_DT_FLOAT && n == 2)) {
    uint16_t h = code == DP_DT_BFLOAT ? dp_bf16_from_double(v) : dp_f16_from_double(v);
    memcpy(p, &h, 2);
  } else if (code == DP_DT_FLOAT && n == 4) {
    float f = (float)v;
    memcpy(p, &f, 4);
  } else if (code == DP_DT_FLOAT) {
    memcpy(p, &v, 8);
  } else if (code == DP_DT_BOOL) {
    p[0] = v != 0;
  } else {
    /* (in range of int64 for the callers: truncation of integral values) */
    int64_t t = isfinite(v) && fabs(v) < 0x1p63 ? (int64_t)v : 0;
    return dp_elem_set_int(dt, buf, i, t);
  }
  return 0;
}

int dp_elem_set_int(dp_dtype dt, void *buf, size_t i, int64_t v) {
  size_t n = dp_elem_bytes(dt);
  unsigned char *p = (unsigned char *)buf + i * n;
  int code = DP_DTYPE_CODE(dt);
  if (!n) return -1;
  if (code == DP_DT_FLOAT || code == DP_DT_BFLOAT) return dp_elem_set_real(dt, buf, i, (double)v);
  if (code == DP_DT_BOOL) {
    p[0] = v != 0;
    return 0;
  }
  uint64_t u = (uint64_t)v; /* two's complement: the low bytes are the element */
  switch (n) {
  case 1: { uint8_t x = (uint8_t)u; memcpy(p, &x, 1); break; }
  case 2: { uint16_t x = (uint16_t)u; memcpy(p, &x, 2); break; }
  case 4: { uint32_t x = (uint32_t)u; memcpy(p, &x, 4); break; }
  default: memcpy(p, &u, 8); break;
  }
  return 0;
}

int dp_elem_get(dp_dtype dt, const void *buf, size_t i, double *f, int64_t *v) {
  size_t n = dp_elem_bytes(dt);
  const unsigned char *p = (const unsigned char *)buf + i * n;
  int code = DP_DTYPE_CODE(dt), is_signed = code == DP_DT_INT;
  if (!n) return -1;
  if (code == DP_DT_FLOAT || code == DP_DT_BFLOAT) {
    if (n == 2) {
      uint16_t h;
      memcpy(&h, p, 2);
      *f = code == DP_DT_BFLOAT ? dp_bf16_to_double(h) : dp_f16_to_double(h);
    } else if (n == 4) {
      float x;
      memcpy(&x, p, 4);
      *f = x;
    } else {
      memcpy(f, p, 8);
    }
    return 1;
  }
  if (code == DP_DT_BOOL) {
    *v = p[0] != 0;
    return 0;
  }
  switch (n) {
  case 1: *v = is_signed ? (int64_t)(int8_t)p[0] : (int64_t)p[0]; break;
  case 2: { int16_t s; uint16_t u; memcpy(&s, p, 2); memcpy(&u, p, 2); *v = is_signed ? s : u; break; }
  case 4: { int32_t s; uint32_t u; memcpy(&s, p, 4); memcpy(&u, p, 4); *v = is_signed ? s : (int64_t)u; break; }
  default: memcpy(v, p, 8); break;
  }
  return 0;
}
