/*
 * Built-in operator registration: parses the schema strings of the
 * operator tables (see ops_internal.h), registers each family, and holds
 * the helpers that type relations share (attribute readers, errors).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops_internal.h"

static const struct { const char *name; dp_attrkind kind; } kinds[] = {
  {"any", DP_AK_ANY}, {"bool", DP_AK_BOOL}, {"int", DP_AK_INT}, {"float", DP_AK_FLOAT},
  {"str", DP_AK_STR}, {"ints", DP_AK_INTS}, {"int_or_ints", DP_AK_INT_OR_INTS},
  {"int_or_none", DP_AK_INT_OR_NONE}, {"dtype", DP_AK_DTYPE}, {"vdev", DP_AK_VDEV},
};

static int parse_kind(const char *s, size_t n, dp_attrkind *out) {
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strlen(kinds[i].name) == n && memcmp(kinds[i].name, s, n) == 0) {
      *out = kinds[i].kind;
      return 0;
    }
  return -1;
}

/* The parsers of schema text return 0, -1 on bad text, OOM on out of memory. */
#define OOM (-2)

/* "[1,1]" or "[]" -> list value. */
static int parse_list(const char *s, dp_aval *out) {
  uint32_t n = 0;
  dp_aval *items = dp_malloc(DP__MAXDIM * sizeof *items);
  if (!items) return OOM;
  s++; /* '[' */
  while (*s && *s != ']') {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || n == DP__MAXDIM) { free(items); return -1; }
    items[n++] = dp_av_int(v);
    s = end;
    if (*s == ',') s++;
  }
  *out = dp_av_list(n, items);
  return 0;
}

static int parse_value(dp_attrkind kind, const char *s, dp_aval *out) {
  if (kind == DP_AK_STR || kind == DP_AK_DTYPE) {
    *out = dp_av_string(s);
    return out->kind ? 0 : OOM;
  }
  if (strcmp(s, "None") == 0) { *out = dp_av_none(); return 0; }
  if (strcmp(s, "True") == 0) { *out = dp_av_bool(1); return 0; }
  if (strcmp(s, "False") == 0) { *out = dp_av_bool(0); return 0; }
  if (s[0] == '[') return parse_list(s, out);
  char *end;
  if (kind == DP_AK_FLOAT || strpbrk(s, ".e")) {
    double f = strtod(s, &end);
    if (*end) return -1;
    *out = dp_av_float(f, 0);
    return 0;
  }
  long long v = strtoll(s, &end, 10);
  if (*end || end == s) return -1;
  *out = dp_av_int(v);
  return 0;
}

/* One "name:kind[=value]" token (text[0..n)) into f; the name is a pointer
   into a scratch copy owned by the caller until registration copies it. */
static int parse_field(char *tok, dp_attr_field *f) {
  char *colon = strchr(tok, ':');
  if (!colon) return -1;
  *colon = 0;
  char *kind = colon + 1, *eq = strchr(kind, '=');
  size_t kn = eq ? (size_t)(eq - kind) : strlen(kind);
  memset(f, 0, sizeof *f);
  f->name = tok;
  if (parse_kind(kind, kn, &f->kind) < 0) return -1;
  if (!eq) return 0;
  f->has_default = 1;
  return parse_value(f->kind, eq + 1, &f->dflt);
}

static int register_one(dp_ctx *ctx, const dp__opdef *d, dp_err **err) {
  dp_attr_field fields[24];
  uint32_t n = 0;
  char *scratch = NULL;
  if (d->schema) {
    scratch = dp_strdup(d->schema);
    if (!scratch) {
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return -1;
    }
    for (char *save = NULL, *tok = strtok_r(scratch, " ", &save); tok;
         tok = strtok_r(NULL, " ", &save)) {
      int rc = n == 24 ? -1 : parse_field(tok, &fields[n]);
      if (rc < 0) {
        for (uint32_t i = 0; i < n; i++) dp_av_clear(&fields[i].dflt);
        dp_err_set(err, rc == OOM ? dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory")
                                  : dp_err_new(DP_ERR_GENERIC, DP_NOSPAN, "bad built-in schema for %s", d->name));
        free(scratch);
        return -1;
      }
      n++;
    }
  }
  dp_op *op = dp_op_register(ctx, d->name, d->num_inputs, d->flags, d->schema ? fields : NULL, n,
                             d->rel, NULL, NULL, err);
  free(scratch);
  if (!op) return -1;
  op->ud = op; /* built-in relations read defaults from their own schema */
  return dp_op_set_pattern(op, d->pattern) < 0 ? -1 : 0;
}

int dp__register_opdefs(dp_ctx *ctx, const dp__opdef *defs, size_t n, dp_err **err) {
  for (size_t i = 0; i < n; i++)
    if (register_one(ctx, &defs[i], err) < 0) return -1;
  return 0;
}

/* ---------------- relation helpers ---------------- */

dp_type *dp__rel_fail(dp_err **err, const dp_op *op, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  dp_err_set(err, dp_err_new(DP_ERR_TYPE, DP_NOSPAN, "%s: %s", op ? op->name : "operator", msg));
  return NULL;
}

const char *dp__type_brief(const dp_type *t, char *buf, size_t n) {
  char *s = t ? dp_type_str(t) : NULL;
  snprintf(buf, n, "%s", s ? s : "?");
  free(s);
  return buf;
}

const dp_tensor_type *dp__arg_tensor(dp_type *const *args, uint32_t i, const dp_op *op,
                                     dp_err **err) {
  if (args[i] && args[i]->h.kind == DP_TY_TENSOR) return (const dp_tensor_type *)args[i];
  char buf[128];
  dp__rel_fail(err, op, "argument %u must be a tensor, got %s", i + 1,
               dp__type_brief(args[i], buf, sizeof buf));
  return NULL;
}

static const dp_aval *attr(const dp_op *op, const dp_attrs *a, const char *key) {
  const dp_aval *v = dp_op_attr(op, a, key);
  return v && v->kind != DP_AV_NONE ? v : NULL;
}

int64_t dp__attr_int(const dp_op *op, const dp_attrs *a, const char *key, int64_t dflt) {
  const dp_aval *v = attr(op, a, key);
  if (v && (v->kind == DP_AV_INT || v->kind == DP_AV_BOOL)) return v->u.i;
  /* a float converts only when int64 holds it (the cast is undefined otherwise) */
  if (v && v->kind == DP_AV_FLOAT && v->u.f >= -0x1p63 && v->u.f < 0x1p63) return (int64_t)v->u.f;
  return dflt;
}

double dp__attr_float(const dp_op *op, const dp_attrs *a, const char *key, double dflt) {
  const dp_aval *v = attr(op, a, key);
  if (v && v->kind == DP_AV_FLOAT) return v->u.f;
  if (v && v->kind == DP_AV_INT) return (double)v->u.i;
  return dflt;
}

int dp__attr_bool(const dp_op *op, const dp_attrs *a, const char *key, int dflt) {
  const dp_aval *v = attr(op, a, key);
  return v && (v->kind == DP_AV_BOOL || v->kind == DP_AV_INT) ? v->u.i != 0 : dflt;
}

const char *dp__attr_string(const dp_op *op, const dp_attrs *a, const char *key, const char *dflt) {
  const dp_aval *v = attr(op, a, key);
  return v && v->kind == DP_AV_STR ? v->u.s : dflt;
}

dp_dtype dp__attr_dtype(const dp_op *op, const dp_attrs *a, const char *key, dp_dtype dflt) {
  const char *s = dp__attr_string(op, a, key, "");
  dp_dtype d = *s ? dp_dtype_parse(s) : 0;
  return d ? d : dflt;
}

int dp__attr_ints(const dp_op *op, const dp_attrs *a, const char *key, int64_t *out, int max) {
  const dp_aval *v = attr(op, a, key);
  if (!v) return -1;
  if (v->kind == DP_AV_INT) {
    if (max < 1) return -1;
    out[0] = v->u.i;
    return 1;
  }
  if (v->kind != DP_AV_LIST || v->n > (uint32_t)max) return -1;
  for (uint32_t i = 0; i < v->n; i++) {
    if (v->u.items[i].kind != DP_AV_INT) return -1;
    out[i] = v->u.items[i].u.i;
  }
  return (int)v->n;
}

dp_type *dp__rel_tensor(dp_ctx *ctx, const dp_op *op, dp_dtype dtype, uint32_t ndim,
                        const int64_t *dims, int ovf, dp_err **err) {
  if (ovf) return dp__rel_fail(err, op, "the output shape does not fit in int64 (sizes too large)");
  for (uint32_t i = 0; i < ndim; i++)
    if (dims[i] < DP_DIM_ANY)
      return dp__rel_fail(err, op, "output dimension %u would be %lld", i, (long long)dims[i]);
  dp_type *t = dp_type_tensor(ctx, dtype, ndim, dims);
  if (!t) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return t;
}

int dp__norm_axis(int64_t axis, uint32_t ndim) {
  if (axis < 0) axis += ndim;
  return axis >= 0 && axis < (int64_t)ndim ? (int)axis : -1;
}

/* The built-in operator families, a layer above the context: whoever makes
   a context for Relay programs asks for them (dp_ctx_new makes it empty). */
int dp_register_builtin_ops(dp_ctx *ctx, dp_err **err) {
  if (dp__register_tensor_ops(ctx, err) < 0) return -1;
  if (dp__register_nn_ops(ctx, err) < 0) return -1;
  if (dp__register_device_ops(ctx, err) < 0) return -1;
  if (dp__register_onnx_extra_ops(ctx, err) < 0) return -1;
  return 0;
}
