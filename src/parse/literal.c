/*
 * Numbers: a number token read once into its sign, integer magnitude, real
 * value and suffix dtype, then checked against the dtype it becomes, so
 * that no number is ever silently changed (an int8 300, a dimension of
 * 99999999999999999999, 3.40283e+38f32 and 65505f16 are errors, as in
 * TVM's parser). An integer without a suffix is an int32, or an int64 when
 * it does not fit (as TVM reads it); a real without a suffix is a float32.
 * Elements are stored with the core's conversions (scalar.h), so a literal
 * and dp.const of the same number give the same bits.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

typedef struct number {
  int neg;           /* an odd run of '-' */
  int real;          /* a fraction, an exponent, an f suffix, inf or nan */
  int huge;          /* integer digits beyond 2^64 - 1 */
  uint64_t mag;      /* the integer's magnitude (when !real) */
  double value;      /* the value as a double, sign included */
  dp_dtype dtype;    /* of the suffix; 0 without one */
  const char *text;  /* the token, for messages */
  int len;
} number;

static dp_dtype suffix_dtype(const char *s, size_t n) {
  int code = s[0] == 'f' ? DP_DT_FLOAT : s[0] == 'i' ? DP_DT_INT : DP_DT_UINT;
  int bits = n == 1 ? 32 : atoi(s + 1);
  return DP_DTYPE(code, bits, 1);
}

/* The lexer checked the token's form (lex.c); this reads it. */
static int read_number(dp_parser *p, uint32_t tok, number *n) {
  size_t len, i = 0;
  const char *t = dp__tok_text(p, tok, &len);
  memset(n, 0, sizeof *n);
  n->text = t;
  n->len = (int)len;
  while (i < len && t[i] == '-') i++;
  n->neg = i % 2;
  size_t end = len;
  while (end > i && t[end - 1] >= '0' && t[end - 1] <= '9') end--;
  size_t sfx = len; /* where the suffix starts */
  if (end > i && (t[end - 1] == 'f' || t[end - 1] == 'i' || t[end - 1] == 'u') &&
      !(len - i >= 3 && (!memcmp(t + i, "inf", 3) || !memcmp(t + i, "nan", 3)) && end - i == 3)) {
    sfx = end - 1;
    n->dtype = suffix_dtype(t + sfx, len - sfx);
  }
  if (t[i] == 'i' || t[i] == 'n') { /* inf, nan */
    n->real = 1;
    n->value = t[i] == 'i' ? INFINITY : NAN;
    if (n->neg) n->value = -n->value;
    return 0;
  }
  char buf[400];
  size_t m = sfx - i;
  if (m + 2 > sizeof buf) return dp__fail(p, DP_ERR_VALUE, tok, "number '%.*s' has too many digits", n->len, t);
  n->real = n->dtype && DP_DTYPE_CODE(n->dtype) == DP_DT_FLOAT;
  for (size_t j = i; j < sfx; j++) {
    char c = t[j];
    if (c == '.' || c == 'e' || c == 'E') n->real = 1;
    if (c >= '0' && c <= '9' && !n->huge) {
      uint64_t d = (uint64_t)(c - '0');
      if (n->mag > (UINT64_MAX - d) / 10) n->huge = 1;
      else n->mag = n->mag * 10 + d;
    }
  }
  buf[0] = n->neg ? '-' : '+';
  memcpy(buf + 1, t + i, m);
  buf[m + 1] = '\0';
  errno = 0;
  n->value = strtod(buf, NULL);
  if (errno == ERANGE && isinf(n->value))
    return dp__fail(p, DP_ERR_VALUE, tok, "number '%.*s' is out of range", n->len, t);
  return 0;
}

static int out_of_range(dp_parser *p, uint32_t tok, const number *n, dp_dtype dt) {
  char name[16];
  return dp__fail(p, DP_ERR_VALUE, tok, "number '%.*s' is out of range for %s", n->len, n->text,
                  dp_dtype_name(dt, name));
}

/* The dtype a number literal stands for on its own. */
static int literal_dtype(dp_parser *p, uint32_t tok, const number *n, dp_dtype *dt) {
  if (n->dtype) *dt = n->dtype;
  else if (n->real) *dt = DP_FLOAT32;
  else if (!n->huge && dp_dtype_fits_int(DP_INT32, n->neg, n->mag)) *dt = DP_INT32;
  else *dt = DP_INT64;
  if (n->real ? dp_dtype_fits_real(*dt, n->value) : !n->huge && dp_dtype_fits_int(*dt, n->neg, n->mag))
    return 0;
  return out_of_range(p, tok, n, *dt);
}

static int64_t signed_value(const number *n) {
  return n->neg ? (int64_t)(0 - n->mag) : (int64_t)n->mag;
}

dp_obj *dp__scalar(dp_parser *p, uint32_t tok) {
  unsigned char buf[8] = {0};
  dp_dtype dt = DP_BOOL;
  char k = dp__kind(p, tok);
  if (k == DP_TOK_TRUE || k == DP_TOK_FALSE) {
    buf[0] = k == DP_TOK_TRUE;
  } else {
    number n;
    if (read_number(p, tok, &n) != 0 || literal_dtype(p, tok, &n, &dt) != 0) return NULL;
    if (n.real) dp_elem_set_real(dt, buf, 0, n.value);
    else dp_elem_set_int(dt, buf, 0, signed_value(&n));
  }
  dp_err *err = NULL;
  dp_const *c = dp_const_new(dt, 0, NULL, buf, dp__span(p, tok), &err);
  if (!c) dp__fail_core(p, err, tok);
  return (dp_obj *)c;
}

int dp__number_aval(dp_parser *p, uint32_t tok, dp_aval *out) {
  number n;
  if (read_number(p, tok, &n) != 0) return -1;
  if (n.real) {
    if (n.dtype && !dp_dtype_fits_real(n.dtype, n.value)) return out_of_range(p, tok, &n, n.dtype);
    *out = dp_av_float(n.value, n.dtype);
    return 0;
  }
  dp_dtype dt = n.dtype ? n.dtype : DP_INT64; /* (attribute integers are int64) */
  if (n.huge || !dp_dtype_fits_int(dt, n.neg, n.mag) || !dp_dtype_fits_int(DP_INT64, n.neg, n.mag))
    return out_of_range(p, tok, &n, dt);
  *out = dp_av_int(signed_value(&n));
  out->dtype = n.dtype;
  return 0;
}

int dp__number_int(dp_parser *p, uint32_t tok, int64_t lo, int64_t hi, const char *what, int64_t *out) {
  number n;
  if (read_number(p, tok, &n) != 0) return -1;
  if (n.real) return dp__fail(p, DP_ERR_VALUE, tok, "%s must be an integer, found '%.*s'", what, n.len, n.text);
  int64_t v = signed_value(&n);
  if (n.huge || !dp_dtype_fits_int(DP_INT64, n.neg, n.mag) || v < lo || v > hi)
    return dp__fail(p, DP_ERR_VALUE, tok, "%s '%.*s' is out of range (%lld to %lld)", what, n.len, n.text,
                    (long long)lo, (long long)hi);
  *out = v;
  return 0;
}

int dp__number_index(dp_parser *p, uint32_t tok, int64_t max, const char *what, int64_t *out) {
  return dp__number_int(p, tok, 0, max, what, out);
}

/* One value of a Constant(...) list as element i of dt. */
static int const_value(dp_parser *p, uint32_t tok, dp_dtype dt, unsigned char *data, size_t i) {
  char k = dp__kind(p, tok), name[16];
  int code = DP_DTYPE_CODE(dt);
  number n;
  if (k == DP_TOK_TRUE || k == DP_TOK_FALSE) {
    if (code != DP_DT_BOOL) return dp__fail(p, DP_ERR_VALUE, tok, "a %s constant takes numbers", dp_dtype_name(dt, name));
    return dp_elem_set_int(dt, data, i, k == DP_TOK_TRUE);
  }
  if (read_number(p, tok, &n) != 0) return -1;
  if (code == DP_DT_FLOAT || code == DP_DT_BFLOAT) {
    if (!dp_dtype_fits_real(dt, n.value)) return out_of_range(p, tok, &n, dt);
    return dp_elem_set_real(dt, data, i, n.value);
  }
  if (n.real) return dp__fail(p, DP_ERR_VALUE, tok, "a %s constant takes integers, found '%.*s'",
                              dp_dtype_name(dt, name), n.len, n.text);
  if (n.huge || !dp_dtype_fits_int(dt, n.neg, n.mag)) return out_of_range(p, tok, &n, dt);
  return dp_elem_set_int(dt, data, i, signed_value(&n));
}

dp_obj *dp__const_literal(dp_parser *p, dp_type *t, uint32_t ctok, uint32_t lbrack) {
  if (t->h.kind != DP_TY_TENSOR) {
    dp__fail(p, DP_ERR_TYPE, ctok, "a constant needs a tensor type");
    return NULL;
  }
  dp_tensor_type *tt = (dp_tensor_type *)t;
  size_t count = 1, esize = dp_elem_bytes(tt->dtype);
  char name[16];
  if (!esize) {
    dp__fail(p, DP_ERR_TYPE, ctok, "no constants of dtype %s", dp_dtype_name(tt->dtype, name));
    return NULL;
  }
  for (uint32_t i = 0; i < tt->ndim; i++) {
    if (tt->dims[i] < 0) {
      dp__fail(p, DP_ERR_TYPE, ctok, "a constant needs a static shape");
      return NULL;
    }
    if (tt->dims[i] && count > ((size_t)1 << 40) / (size_t)tt->dims[i]) {
      dp__fail(p, DP_ERR_VALUE, ctok, "constant too large");
      return NULL;
    }
    count *= (size_t)tt->dims[i];
  }
  /* the values: tokens lbrack+1, +3, ... up to `]` (a comma after each but
     the last, as the grammar checked): count the `[` and the commas */
  size_t have = 0;
  if (dp__kind(p, lbrack + 1) != DP_TOK_RBRACK)
    for (uint32_t k = lbrack; dp__kind(p, k) && dp__kind(p, k) != DP_TOK_RBRACK; k += 2) have++;
  if (have != count) {
    dp__fail(p, DP_ERR_VALUE, ctok, "constant of %zu element%s has %zu value%s", count, count == 1 ? "" : "s",
             have, have == 1 ? "" : "s");
    return NULL;
  }
  if (count * esize > p->capbytes) {
    unsigned char *b = dp_realloc(p->bytes, count * esize);
    if (!b) {
      dp__oom(p, ctok);
      return NULL;
    }
    p->bytes = b;
    p->capbytes = count * esize;
  }
  for (size_t i = 0; i < count; i++)
    if (const_value(p, lbrack + 1 + 2 * (uint32_t)i, tt->dtype, p->bytes, i) != 0) return NULL;
  dp_err *err = NULL;
  dp_const *c = dp_const_new(tt->dtype, tt->ndim, tt->dims, p->bytes, dp__span(p, ctok), &err);
  if (!c) dp__fail_core(p, err, ctok);
  return (dp_obj *)c;
}
