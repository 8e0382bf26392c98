/*
 * Constants and numbers in the text format.
 *
 * Scalars print as literals with their dtype's suffix (`1f`, `2.5f16`,
 * `3i64`, `7u8`, `1`, `True`); every other constant prints as the devplan
 * extension `Constant(TYPE, [v, ...])` with the values flat in row-major
 * order, so a printed module re-parses without a metatable. Reals use the
 * shortest decimal that reads back to the same value; the values no decimal
 * writes are spelled `inf`, `-inf`, `nan` and `-nan` (`inff`, `-nanf16` as
 * literals: TVM's tokenizer reads `inff`), so every constant reads back to
 * the same bits (a NaN's payload aside). The parser reads these forms
 * (src/parse/literal.c); attribute values print their numbers here too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "print_internal.h"
#include "textbuf.h"
#include "devplan/scalar.h"

/* Shortest form that reads back to f; single precision values only need
   to read back as the same float. */
static void put_decimal(dp__tb *b, double f, int single) {
  char buf[40];
  if (isnan(f)) {
    dp__tb_puts(b, signbit(f) ? "-nan" : "nan");
    return;
  }
  if (isinf(f)) {
    dp__tb_puts(b, f < 0 ? "-inf" : "inf");
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, f);
    double back = strtod(buf, NULL);
    if (single ? (float)back == (float)f : back == f) break;
  }
  dp__tb_puts(b, buf);
}

void dp__put_real(dp__tb *b, double f, dp_dtype dt, int single) {
  size_t start = b->n;
  put_decimal(b, f, single);
  if (dt == DP_FLOAT32) dp__tb_putc(b, 'f');
  else if (dt && DP_DTYPE_CODE(dt) == DP_DT_FLOAT) dp__tb_printf(b, "f%d", DP_DTYPE_BITS(dt));
  else if (!b->failed && !strpbrk(b->s + start, ".ena")) dp__tb_puts(b, ".0"); /* stays a real */
}

void dp__put_int(dp__tb *b, int64_t v, dp_dtype dt) {
  int code = DP_DTYPE_CODE(dt);
  if (code == DP_DT_UINT) dp__tb_printf(b, "%llu", (unsigned long long)v);
  else dp__tb_printf(b, "%lld", (long long)v);
  if (!dt || dt == DP_INT32) return;
  if (code == DP_DT_INT) dp__tb_printf(b, "i%d", DP_DTYPE_BITS(dt));
  else if (code == DP_DT_UINT) dp__tb_printf(b, "u%d", DP_DTYPE_BITS(dt));
}

/* A scalar as a literal: bool, integers and float16/32/64; 0 when its
   dtype has none (bfloat16, vectors). */
static int put_scalar_literal(dp__tb *b, const dp_const *c) {
  dp_dtype d = c->dtype;
  int code = DP_DTYPE_CODE(d), bits = DP_DTYPE_BITS(d);
  double f;
  int64_t v;
  if (c->ndim != 0 || code == DP_DT_BFLOAT) return 0;
  int kind = dp_elem_get(d, c->data, 0, &f, &v);
  if (kind < 0) return 0;
  if (code == DP_DT_BOOL) dp__tb_puts(b, v ? "True" : "False");
  else if (kind == 0) dp__put_int(b, v, d);
  else dp__put_real(b, f, d, bits != 64);
  return 1;
}

static void put_const_type(dp__tb *b, const dp_const *c) {
  char dt[16];
  dp_dtype_name(c->dtype, dt);
  if (c->ndim == 0) {
    dp__tb_puts(b, dt);
    return;
  }
  dp__tb_puts(b, "Tensor[(");
  for (uint32_t i = 0; i < c->ndim; i++)
    dp__tb_printf(b, i ? ", %lld" : "%lld", (long long)c->shape[i]);
  dp__tb_printf(b, "), %s]", dt);
}

void dp__put_const(dp__tb *b, const dp_const *c) {
  if (put_scalar_literal(b, c)) return;
  size_t esize = dp_elem_bytes(c->dtype), n = esize ? c->nbytes / esize : 0;
  int single = DP_DTYPE_BITS(c->dtype) != 64, is_unsigned = DP_DTYPE_CODE(c->dtype) == DP_DT_UINT;
  dp__tb_puts(b, "Constant(");
  put_const_type(b, c);
  dp__tb_puts(b, ", [");
  for (size_t i = 0; i < n && !b->failed; i++) {
    double f;
    int64_t v;
    if (i) dp__tb_puts(b, ", ");
    if (dp_elem_get(c->dtype, c->data, i, &f, &v) > 0) put_decimal(b, f, single);
    else if (is_unsigned) dp__tb_printf(b, "%llu", (unsigned long long)v);
    else dp__tb_printf(b, "%lld", (long long)v);
  }
  dp__tb_puts(b, "])");
}
