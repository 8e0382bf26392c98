/*
 * The ONNX importer's driver: from the decoded ModelProto to a module.
 *
 *   1. the default domain's opset; every value's name in one table: the
 *      initializers, the graph's inputs (their shapes static: a dimension
 *      nothing fixes is an error naming the input), each node's outputs;
 *      every node input must name a value made before the node;
 *   2. the nodes in order: a node whose inputs are all known at import
 *      (constants, shapes, integer initializers, what was computed from
 *      them) and that eval.c can compute is computed; any other goes to
 *      its converter (conv_*.c), which makes typed Relay calls carrying the
 *      node's span, so that a node that does not type-check is an error
 *      naming it right there;
 *   3. @main: the graph inputs, then the weights when they are parameters,
 *      returning the graph outputs (a tuple when several); type-checked.
 *
 * The converters see the node through the dp__ox_* helpers below.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

typedef struct entry {
  const char *name;              /* borrowed from the model */
  uint32_t hash;
  int32_t producer;              /* node index; -1: graph input or initializer */
  uint32_t uses;                 /* node inputs naming it */
  uint8_t is_output, fold, is_input;
  dp_expr *expr;                 /* owned; NULL until made */
  dp_type *type;                 /* owned; NULL until known */
  dp__ot *known;                 /* owned; the value at import, or NULL */
  const Onnx__TensorProto *init; /* an initializer, or NULL */
} entry;

typedef struct opcount {
  const char *op;
  uint32_t n;
} opcount;

struct dp__ox_state {
  Onnx__ModelProto *model;
  Onnx__GraphProto *g;
  entry *ents;
  uint32_t nents, capents;
  uint32_t *slots;               /* entry index + 1; 0 empty */
  uint32_t capslots;
  dp_var **params;               /* graph inputs, then weights made parameters */
  uint32_t nparams, capparams;
  dp_onnx_info *info;            /* the caller's, or NULL */
  uint32_t capvalues;
  opcount *counts;               /* unnamed nodes: OpType_k */
  uint32_t ncounts, capcounts;
  char nodename[512];            /* the current node's name in errors and spans */
};

/* ---------------- errors ---------------- */

int dp__ox_fail(dp__onnx *X, dp_errcode code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (X->err) return -1; /* the first error stands */
  if (code == DP_ERR_MEMORY) X->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  else if (X->node)
    X->err = dp_err_new(code, DP_NOSPAN, "%s: graph.node[%u] '%s' (%s): %s", X->source, X->node_index,
                        X->st->nodename, X->node->op_type ? X->node->op_type : "", msg);
  else X->err = dp_err_new(code, DP_NOSPAN, "%s: %s", X->source, msg);
  return -1;
}

static int oom(dp__onnx *X) { return dp__ox_fail(X, DP_ERR_MEMORY, "out of memory"); }

static const char *str(const char *s) { return s ? s : ""; }

/* ---------------- the table of values ---------------- */

static uint32_t hash_name(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

static entry *lookup(dp__onnx *X, const char *name) {
  struct dp__ox_state *S = X->st;
  if (!S->capslots) return NULL;
  uint32_t h = hash_name(name);
  for (uint32_t i = h & (S->capslots - 1);; i = (i + 1) & (S->capslots - 1)) {
    uint32_t k = S->slots[i];
    if (!k) return NULL;
    entry *e = &S->ents[k - 1];
    if (e->hash == h && strcmp(e->name, name) == 0) return e;
  }
}

static int grow_slots(dp__onnx *X) {
  struct dp__ox_state *S = X->st;
  uint32_t cap = S->capslots ? S->capslots * 2 : 64;
  uint32_t *slots = dp_calloc(cap, sizeof *slots);
  if (!slots) return oom(X);
  for (uint32_t k = 0; k < S->nents; k++) {
    uint32_t i = S->ents[k].hash & (cap - 1);
    while (slots[i]) i = (i + 1) & (cap - 1);
    slots[i] = k + 1;
  }
  free(S->slots);
  S->slots = slots;
  S->capslots = cap;
  return 0;
}

/* A new value named name (not yet in the table). */
static entry *add_entry(dp__onnx *X, const char *name, int32_t producer) {
  struct dp__ox_state *S = X->st;
  if ((S->nents + 1) * 2 > S->capslots && grow_slots(X) < 0) return NULL;
  if (dp_grow((void **)&S->ents, &S->capents, S->nents + 1, sizeof *S->ents) < 0) {
    oom(X);
    return NULL;
  }
  entry *e = &S->ents[S->nents];
  memset(e, 0, sizeof *e);
  e->name = name;
  e->hash = hash_name(name);
  e->producer = producer;
  uint32_t i = e->hash & (S->capslots - 1);
  while (S->slots[i]) i = (i + 1) & (S->capslots - 1);
  S->slots[i] = ++S->nents;
  return e;
}

static void free_state(struct dp__ox_state *S) {
  for (uint32_t k = 0; k < S->nents; k++) {
    dp_release(S->ents[k].expr);
    dp_release(S->ents[k].type);
    dp__ot_free(S->ents[k].known);
  }
  free(S->ents);
  free(S->slots);
  for (uint32_t k = 0; k < S->nparams; k++) dp_release(S->params[k]);
  free(S->params);
  free(S->counts);
  dp__onnx_free(S->model);
}

/* ---------------- tensors of the model ---------------- */

/* n elements of dtype dt from t's data into out. 0, or -1 with *why. */
static int read_tensor(const Onnx__TensorProto *t, dp_dtype dt, size_t n, void *out, const char **why) {
  size_t eb = dp_elem_bytes(dt);
  if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    *why = "its data is in an external file (data_location EXTERNAL), which devplan does not read";
    return -1;
  }
  if (n == 0) return 0;
  if (t->has_raw_data) {
    if (t->raw_data.len != n * eb) {
      *why = "its raw_data has the wrong size for its shape";
      return -1;
    }
    memcpy(out, t->raw_data.data, n * eb); /* little-endian, as ONNX stores it */
    return 0;
  }
  size_t have = 0;
  switch (t->data_type) {
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    if ((have = t->n_float_data) == n) memcpy(out, t->float_data, n * 4);
    break;
  case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
    if ((have = t->n_double_data) == n) memcpy(out, t->double_data, n * 8);
    break;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    if ((have = t->n_int64_data) == n) memcpy(out, t->int64_data, n * 8);
    break;
  case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
  case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
    if ((have = t->n_uint64_data) == n)
      for (size_t i = 0; i < n; i++) dp_elem_set_int(dt, out, i, (int64_t)t->uint64_data[i]);
    break;
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
  case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: /* the bits, in int32_data */
    if ((have = t->n_int32_data) == n)
      for (size_t i = 0; i < n; i++) ((uint16_t *)out)[i] = (uint16_t)t->int32_data[i];
    break;
  default: /* int32, int16, int8, uint16, uint8, bool */
    if ((have = t->n_int32_data) == n)
      for (size_t i = 0; i < n; i++) dp_elem_set_int(dt, out, i, t->int32_data[i]);
    break;
  }
  if (have == n) return 0;
  *why = have ? "its data has the wrong number of elements for its shape" : "it has no data";
  return -1;
}

/* dtype and shape of a TensorProto. 0, or -1 with the error set. */
static int tensor_shape(dp__onnx *X, const Onnx__TensorProto *t, const char *what, dp_dtype *dt,
                        uint32_t *ndim, int64_t *dims) {
  *dt = dp__onnx_dtype(t->data_type);
  if (!*dt)
    return dp__ox_fail(X, DP_ERR_VALUE, "%s '%s' has element type %s, which devplan does not support", what,
                       str(t->name), dp__onnx_elem_name(t->data_type));
  if (t->n_dims > DP__OT_MAXDIM) return dp__ox_fail(X, DP_ERR_VALUE, "%s '%s' has more than 64 dimensions", what, str(t->name));
  for (size_t i = 0; i < t->n_dims; i++)
    if (t->dims[i] < 0)
      return dp__ox_fail(X, DP_ERR_VALUE, "%s '%s' has a negative dimension", what, str(t->name));
  *ndim = (uint32_t)t->n_dims;
  if (*ndim) memcpy(dims, t->dims, *ndim * sizeof dims[0]);
  return 0;
}

/* The value of a TensorProto (an initializer, a Constant's, an attribute). */
static dp__ot *tensor_value(dp__onnx *X, const Onnx__TensorProto *t, const char *what) {
  dp_dtype dt;
  uint32_t ndim;
  int64_t dims[DP__OT_MAXDIM];
  const char *why;
  if (tensor_shape(X, t, what, &dt, &ndim, dims) < 0) return NULL;
  dp__ot *v = dp__ot_new(dt, ndim, dims, &why);
  if (!v) {
    if (why) dp__ox_fail(X, DP_ERR_VALUE, "%s '%s' is too large to read at import (%s)", what, str(t->name), why);
    else oom(X);
    return NULL;
  }
  if (read_tensor(t, dt, v->n, v->data, &why) < 0) {
    dp__ot_free(v);
    dp__ox_fail(X, DP_ERR_VALUE, "%s '%s': %s", what, str(t->name), why);
    return NULL;
  }
  return v;
}

dp__ot *dp__ox_attr_tensor(dp__onnx *X, const Onnx__AttributeProto *a) {
  if (!a->t) {
    dp__ox_fail(X, DP_ERR_VALUE, "attribute '%s' must be a tensor", str(a->name));
    return NULL;
  }
  return tensor_value(X, a->t, "the tensor attribute");
}

static dp_type *type_of_value(dp__onnx *X, const dp__ot *v) {
  dp_type *t = dp_type_tensor(X->ctx, v->dtype, v->ndim, v->dims);
  if (!t) oom(X);
  return t;
}

/* ---------------- values as expressions ---------------- */

const dp_tensor_type *dp__ox_tensor_type(dp__onnx *X, const dp_expr *e) {
  return e && e->type && e->type->h.kind == DP_TY_TENSOR ? (const dp_tensor_type *)e->type : NULL;
}

dp_expr *dp__ox_const(dp__onnx *X, const dp__ot *v) {
  dp_err *e = NULL;
  dp_const *c = dp_const_new(v->dtype, v->ndim, v->dims, v->data, X->span, &e);
  if (!c) {
    dp__ox_fail(X, e ? e->code : DP_ERR_MEMORY, "%s", e ? e->msg : "out of memory");
    dp_err_free(e);
    return NULL;
  }
  dp_type *t = dp_type_tensor(X->ctx, v->dtype, v->ndim, v->dims);
  if (!t) {
    dp_release(c);
    oom(X);
    return NULL;
  }
  dp_expr_set_type(&c->e, t);
  dp_release(t);
  return &c->e;
}

dp_expr *dp__ox_scalar(dp__onnx *X, dp_dtype dtype, double v) {
  const char *why;
  dp__ot *t = dp__ot_new(dtype, 0, NULL, &why);
  if (!t) {
    oom(X);
    return NULL;
  }
  dp__ot_set_real(t, 0, v);
  dp_expr *c = dp__ox_const(X, t);
  dp__ot_free(t);
  return c;
}

static int add_param(dp__onnx *X, dp_var *v) {
  struct dp__ox_state *S = X->st;
  if (dp_grow((void **)&S->params, &S->capparams, S->nparams + 1, sizeof *S->params) < 0) {
    dp_release(v);
    return oom(X);
  }
  S->params[S->nparams++] = v;
  return 0;
}

/* A weight as a constant: its data decoded straight into the node. */
static dp_const *weight_const(dp__onnx *X, entry *en) {
  dp_dtype dt;
  uint32_t ndim;
  int64_t dims[DP__OT_MAXDIM];
  const char *why;
  dp_err *e = NULL;
  if (tensor_shape(X, en->init, "initializer", &dt, &ndim, dims) < 0) return NULL;
  dp_const *c = dp_const_new(dt, ndim, dims, NULL, X->span, &e);
  if (!c) {
    dp__ox_fail(X, e ? e->code : DP_ERR_MEMORY, "initializer '%s': %s", en->name, e ? e->msg : "out of memory");
    dp_err_free(e);
    return NULL;
  }
  if (read_tensor(en->init, dt, c->nbytes / dp_elem_bytes(dt), c->data, &why) < 0) {
    dp_release(c);
    dp__ox_fail(X, DP_ERR_VALUE, "initializer '%s': %s%s", en->name, why,
                X->opts->weights == DP_ONNX_WEIGHTS_CONST ? " (import with weights none to plan without the values)" : "");
    return NULL;
  }
  dp_expr_set_type(&c->e, en->type);
  return c;
}

static int add_value(dp__onnx *X, const char *name, dp_const *c) {
  dp_onnx_info *I = X->st->info;
  if (dp_grow((void **)&I->params, &X->st->capvalues, I->nparams + 1, sizeof *I->params) < 0) return oom(X);
  char *copy = dp_strdup(name);
  if (!copy) return oom(X);
  I->params[I->nparams].name = copy;
  I->params[I->nparams++].value = (dp_const *)dp_retain(c);
  return 0;
}

/* The expression of an initializer: a constant, or a parameter of @main. */
static dp_expr *weight_expr(dp__onnx *X, entry *en) {
  if (X->opts->weights == DP_ONNX_WEIGHTS_CONST) {
    dp_const *c = weight_const(X, en);
    return c ? &c->e : NULL;
  }
  dp_var *v = dp_var_new(en->name, en->type, NULL, DP_NOSPAN);
  if (!v) {
    oom(X);
    return NULL;
  }
  dp_expr_set_type(&v->e, en->type);
  if (X->opts->weights == DP_ONNX_WEIGHTS_PARAMS && X->st->info) {
    dp_const *c = weight_const(X, en);
    int rc = c ? add_value(X, en->name, c) : -1;
    dp_release(c);
    if (rc < 0) {
      dp_release(v);
      return NULL;
    }
  }
  if (add_param(X, (dp_var *)dp_retain(v)) < 0) {
    dp_release(v);
    return NULL;
  }
  return &v->e;
}

/* The entry behind input i of the node, or NULL (error set) when missing. */
static entry *input_entry(dp__onnx *X, uint32_t i) {
  if (!dp__ox_has(X, i)) {
    dp__ox_fail(X, DP_ERR_VALUE, "input %u is missing", i);
    return NULL;
  }
  entry *en = lookup(X, X->node->input[i]);
  if (!en) dp__ox_fail(X, DP_ERR_VALUE, "input %u '%s' is not defined", i, X->node->input[i]);
  return en;
}

static dp_expr *entry_expr(dp__onnx *X, entry *en) {
  if (en->expr) return en->expr;
  if (en->init) en->expr = weight_expr(X, en); /* a weight whatever was read of it */
  else if (en->known) en->expr = dp__ox_const(X, en->known);
  else dp__ox_fail(X, DP_ERR_VALUE, "value '%s' has no expression", en->name);
  return en->expr;
}

static int has_data(const Onnx__TensorProto *t) {
  int64_t n = 1;
  for (size_t i = 0; i < t->n_dims; i++) n = t->dims[i] == 0 ? 0 : n;
  return n == 0 || t->has_raw_data || t->n_float_data || t->n_int32_data || t->n_int64_data ||
         t->n_double_data || t->n_uint64_data;
}

/* The known value of an entry: an initializer's is read on first use. */
static const dp__ot *entry_known(dp__onnx *X, entry *en, int *failed) {
  if (!en->known && en->init) {
    en->known = tensor_value(X, en->init, "initializer");
    if (!en->known) *failed = 1;
  }
  return en->known;
}

uint32_t dp__ox_nin(dp__onnx *X) { return (uint32_t)X->node->n_input; }

int dp__ox_has(dp__onnx *X, uint32_t i) {
  return i < X->node->n_input && X->node->input[i] && X->node->input[i][0];
}

dp_expr *dp__ox_in(dp__onnx *X, uint32_t i) {
  entry *en = input_entry(X, i);
  return en ? entry_expr(X, en) : NULL;
}

const dp_tensor_type *dp__ox_type(dp__onnx *X, uint32_t i) {
  entry *en = input_entry(X, i);
  if (!en) return NULL;
  if (!en->type || en->type->h.kind != DP_TY_TENSOR) {
    dp__ox_fail(X, DP_ERR_TYPE, "input %u '%s' is not a tensor", i, en->name);
    return NULL;
  }
  return (const dp_tensor_type *)en->type;
}

const dp__ot *dp__ox_value(dp__onnx *X, uint32_t i, const char *what) {
  entry *en = input_entry(X, i);
  if (!en) return NULL;
  int failed = 0;
  const dp__ot *v = entry_known(X, en, &failed);
  if (!v && !failed)
    dp__ox_fail(X, DP_ERR_VALUE,
                "its %s (input %u '%s') must be known at import, but it is computed from the graph's inputs%s",
                what, i, en->name, en->producer >= 0 ? "" : " (a graph input)");
  return v;
}

const dp__ot *dp__ox_known(dp__onnx *X, uint32_t i) {
  if (!dp__ox_has(X, i)) return NULL;
  entry *en = lookup(X, X->node->input[i]);
  int failed = 0;
  if (!en || (en->init && !en->known && !has_data(en->init))) return NULL; /* a stripped weight: unknown */
  return entry_known(X, en, &failed);
}

static entry *output_entry(dp__onnx *X, uint32_t i) {
  if (i >= X->node->n_output || !X->node->output[i] || !X->node->output[i][0]) return NULL;
  return lookup(X, X->node->output[i]);
}

int dp__ox_used(dp__onnx *X, uint32_t i) {
  entry *en = output_entry(X, i);
  return en && (en->uses || en->is_output);
}

int dp__ox_out(dp__onnx *X, uint32_t i, dp_expr *e) {
  entry *en = output_entry(X, i);
  if (!e) return -1;
  if (!en) {
    dp_release(e);
    return 0;
  }
  dp_release(en->expr);
  dp_release(en->type);
  en->expr = e;
  en->type = dp_retain(e->type);
  return 0;
}

int dp__ox_out_value(dp__onnx *X, uint32_t i, dp__ot *v) {
  entry *en = output_entry(X, i);
  if (!v) return -1;
  if (!en) {
    dp__ot_free(v);
    return 0;
  }
  dp__ot_free(en->known);
  en->known = v;
  en->fold = 1;
  dp_release(en->type);
  en->type = type_of_value(X, v);
  return en->type ? 0 : -1;
}

/* ---------------- attributes ---------------- */

const Onnx__AttributeProto *dp__ox_attr(dp__onnx *X, const char *name) {
  for (size_t k = 0; k < X->node->n_attribute; k++) {
    const Onnx__AttributeProto *a = X->node->attribute[k];
    if (a->name && strcmp(a->name, name) == 0) return a;
  }
  return NULL;
}

int64_t dp__ox_attr_int(dp__onnx *X, const char *name, int64_t dflt) {
  const Onnx__AttributeProto *a = dp__ox_attr(X, name);
  return a && a->has_i ? a->i : dflt;
}

/* The shortest decimal that is the float32 f: what was written (1e-3, not
   0.0010000000474974513), so attributes print and read back as TVM's. */
static double shortest(float f) {
  char buf[32];
  for (int p = 1; p < 10; p++) {
    snprintf(buf, sizeof buf, "%.*g", p, (double)f);
    if (strtof(buf, NULL) == f) return strtod(buf, NULL);
  }
  return f;
}

double dp__ox_attr_float(dp__onnx *X, const char *name, double dflt) {
  const Onnx__AttributeProto *a = dp__ox_attr(X, name);
  return a && a->has_f ? shortest(a->f) : dflt;
}

const char *dp__ox_attr_str(dp__onnx *X, const char *name, const char *dflt, char *buf, size_t n) {
  const Onnx__AttributeProto *a = dp__ox_attr(X, name);
  if (!a || !a->has_s) return dflt;
  if (a->s.len >= n || memchr(a->s.data, 0, a->s.len)) {
    dp__ox_fail(X, DP_ERR_VALUE, "attribute '%s' is not a short string", name);
    return NULL;
  }
  memcpy(buf, a->s.data, a->s.len);
  buf[a->s.len] = 0;
  return buf;
}

int dp__ox_attr_ints(dp__onnx *X, const char *name, int64_t *out, int max) {
  const Onnx__AttributeProto *a = dp__ox_attr(X, name);
  if (!a) return -1;
  if (a->n_ints > (size_t)max) {
    dp__ox_fail(X, DP_ERR_VALUE, "attribute '%s' has %zu values, at most %d make sense", name, a->n_ints, max);
    return -2;
  }
  if (a->n_ints) memcpy(out, a->ints, a->n_ints * sizeof out[0]);
  return (int)a->n_ints;
}

int dp__ox_attr_floats(dp__onnx *X, const char *name, double *out, int max) {
  const Onnx__AttributeProto *a = dp__ox_attr(X, name);
  if (!a) return -1;
  if (a->n_floats > (size_t)max) {
    dp__ox_fail(X, DP_ERR_VALUE, "attribute '%s' has %zu values, at most %d make sense", name, a->n_floats, max);
    return -2;
  }
  for (size_t k = 0; k < a->n_floats; k++) out[k] = a->floats[k];
  return (int)a->n_floats;
}

/* ---------------- calls ---------------- */

static void ab_put(dp__ab *b, const char *key, dp_aval v) {
  if (b->n == sizeof b->items / sizeof b->items[0]) {
    dp_av_clear(&v);
    return;
  }
  b->items[b->n].key = (char *)key;
  b->items[b->n++].val = v;
}

void dp__ab_int(dp__ab *b, const char *key, int64_t v) { ab_put(b, key, dp_av_int(v)); }
void dp__ab_float(dp__ab *b, const char *key, double v) { ab_put(b, key, dp_av_float(v, DP_FLOAT32)); }
void dp__ab_bool(dp__ab *b, const char *key, int v) { ab_put(b, key, dp_av_bool(v)); }
void dp__ab_str(dp__ab *b, const char *key, const char *v) { ab_put(b, key, dp_av_string(v)); }
void dp__ab_val(dp__ab *b, const char *key, dp_aval v) { ab_put(b, key, v); }

void dp__ab_ints(dp__ab *b, const char *key, const int64_t *v, uint32_t n) {
  dp_aval *items = dp_malloc((n ? n : 1) * sizeof *items);
  if (!items) {
    ab_put(b, key, (dp_aval){0});
    return;
  }
  for (uint32_t i = 0; i < n; i++) items[i] = dp_av_int(v[i]);
  ab_put(b, key, dp_av_list(n, items));
}

void dp__ab_clear(dp__ab *b) {
  for (uint32_t i = 0; i < b->n; i++) dp_av_clear(&b->items[i].val);
  b->n = 0;
}

dp_expr *dp__ox_call(dp__onnx *X, const char *name, uint32_t nargs, dp_expr *const *args, dp__ab *b) {
  dp_op *op = dp_op_get(X->ctx, name);
  dp_err *e = NULL;
  dp_type *types[16];
  if (!op || (op->num_inputs >= 0 && (uint32_t)op->num_inputs != nargs) || nargs > 16) {
    if (b) dp__ab_clear(b);
    dp__ox_fail(X, DP_ERR_GENERIC, "internal: operator %s is not registered as the importer calls it", name);
    return NULL;
  }
  for (uint32_t i = 0; i < nargs; i++) {
    if (!args[i] || !args[i]->type) {
      if (b) dp__ab_clear(b);
      if (args[i]) dp__ox_fail(X, DP_ERR_GENERIC, "internal: an untyped argument of %s", name);
      return NULL;
    }
    types[i] = args[i]->type;
  }
  dp_attrs *attrs = NULL;
  if (b && b->n) {
    for (uint32_t i = 0; i < b->n; i++)
      if (!b->items[i].val.kind) { /* a value constructor ran out of memory */
        dp__ab_clear(b);
        oom(X);
        return NULL;
      }
    attrs = dp_op_attrs(op, b->n, b->items, &e);
    b->n = 0;
    if (!attrs) {
      dp__ox_fail(X, e ? e->code : DP_ERR_MEMORY, "%s: %s", name, e ? e->msg : "out of memory");
      dp_err_free(e);
      return NULL;
    }
  }
  dp_type *rt = op->rel(X->ctx, types, nargs, attrs, op->ud, &e);
  if (!rt) {
    dp_release(attrs);
    if (e && e->code != DP_ERR_MEMORY) dp__ox_fail(X, DP_ERR_TYPE, "%s", e->msg);
    else oom(X);
    dp_err_free(e);
    return NULL;
  }
  dp_call *c = dp_call_new(&op->e, nargs, args, attrs, X->span);
  dp_release(attrs);
  if (!c) {
    dp_release(rt);
    oom(X);
    return NULL;
  }
  dp_expr_set_type(&c->e, rt);
  dp_release(rt);
  return &c->e;
}

dp_expr *dp__ox_proj(dp__onnx *X, dp_expr *tuple, uint32_t i) {
  const dp_tuple_type *tt = (const dp_tuple_type *)tuple->type;
  if (!tt || tt->t.h.kind != DP_TY_TUPLE || i >= tt->n) {
    dp__ox_fail(X, DP_ERR_GENERIC, "internal: a projection of a value that is no tuple");
    return NULL;
  }
  dp_proj *p = dp_proj_new(tuple, i, X->span);
  if (!p) {
    oom(X);
    return NULL;
  }
  dp_expr_set_type(&p->e, tt->fields[i]);
  return &p->e;
}

dp_expr *dp__ox_tuple(dp__onnx *X, uint32_t n, dp_expr *const *fields) {
  dp_type **types = dp_malloc((n ? n : 1) * sizeof *types);
  if (!types) {
    oom(X);
    return NULL;
  }
  for (uint32_t i = 0; i < n; i++) types[i] = fields[i]->type;
  dp_type *tt = dp_type_tuple(X->ctx, n, types);
  free(types);
  dp_tuple *t = tt ? dp_tuple_new(n, fields, X->span) : NULL;
  if (!t) {
    dp_release(tt);
    oom(X);
    return NULL;
  }
  dp_expr_set_type(&t->e, tt);
  dp_release(tt);
  return &t->e;
}

/* ---------------- the graph ---------------- */

static int is_default_domain(const char *d) { return !d || !d[0] || strcmp(d, "ai.onnx") == 0; }

static int read_opset(dp__onnx *X) {
  Onnx__ModelProto *m = X->st->model;
  X->opset = -1;
  for (size_t k = 0; k < m->n_opset_import; k++)
    if (is_default_domain(m->opset_import[k]->domain) && m->opset_import[k]->has_version)
      X->opset = m->opset_import[k]->version;
  if (X->opset < 0) return dp__ox_fail(X, DP_ERR_VALUE, "the model imports no opset of the default domain (ai.onnx)");
  if (X->opset < 11 || X->opset > 18)
    return dp__ox_fail(X, DP_ERR_VALUE, "opset %lld of ai.onnx is not supported (devplan reads opsets 11 to 18)",
                       (long long)X->opset);
  return 0;
}

static const dp_onnx_shape *given_shape(dp__onnx *X, const char *name) {
  for (uint32_t k = 0; k < X->opts->nshapes; k++)
    if (X->opts->shapes[k].name && strcmp(X->opts->shapes[k].name, name) == 0) return &X->opts->shapes[k];
  return NULL;
}

/* The type of graph input vi: the file's, with the shapes option's sizes. */
static dp_type *input_type(dp__onnx *X, const Onnx__ValueInfoProto *vi) {
  const char *name = str(vi->name);
  const Onnx__TypeProto *tp = vi->type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
    dp__ox_fail(X, DP_ERR_VALUE, "graph input '%s' is not a tensor (sequences, maps and optionals are not supported)", name);
    return NULL;
  }
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  dp_dtype dt = dp__onnx_dtype(tt->elem_type);
  if (!dt) {
    dp__ox_fail(X, DP_ERR_VALUE, "graph input '%s' has element type %s, which devplan does not support", name,
                dp__onnx_elem_name(tt->elem_type));
    return NULL;
  }
  const dp_onnx_shape *given = given_shape(X, name);
  int64_t dims[DP__OT_MAXDIM];
  uint32_t ndim;
  if (given) {
    if (given->ndim > DP__OT_MAXDIM || (tt->shape && tt->shape->n_dim != given->ndim)) {
      dp__ox_fail(X, DP_ERR_VALUE, "the shape given for graph input '%s' has %u dimensions, the model's %zu", name,
                  given->ndim, tt->shape ? tt->shape->n_dim : 0);
      return NULL;
    }
    ndim = given->ndim;
    for (uint32_t i = 0; i < ndim; i++) {
      const Onnx__TensorShapeProto__Dimension *d = tt->shape ? tt->shape->dim[i] : NULL;
      dims[i] = given->dims[i];
      if (dims[i] < 0) {
        dp__ox_fail(X, DP_ERR_VALUE, "the shape given for graph input '%s' has a negative size", name);
        return NULL;
      }
      if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value != dims[i]) {
        dp__ox_fail(X, DP_ERR_VALUE, "the shape given for graph input '%s' has %lld at dimension %u, the model %lld",
                    name, (long long)dims[i], i, (long long)d->dim_value);
        return NULL;
      }
    }
  } else {
    if (!tt->shape) {
      dp__ox_fail(X, DP_ERR_VALUE, "graph input '%s' has no shape: give it one (the shapes option, --input-shape %s=D1,D2,...)",
                  name, name);
      return NULL;
    }
    if (tt->shape->n_dim > DP__OT_MAXDIM) {
      dp__ox_fail(X, DP_ERR_VALUE, "graph input '%s' has more than 64 dimensions", name);
      return NULL;
    }
    ndim = (uint32_t)tt->shape->n_dim;
    for (uint32_t i = 0; i < ndim; i++) {
      const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
      if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || d->dim_value < 0) {
        int param = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param;
        dp__ox_fail(X, DP_ERR_VALUE,
                    "graph input '%s' has a dynamic dimension %u%s%s%s: devplan plans static shapes; give its size "
                    "(the shapes option, --input-shape %s=D1,D2,...)",
                    name, i, param ? " ('" : "", param ? d->dim_param : "", param ? "')" : "", name);
        return NULL;
      }
      dims[i] = d->dim_value;
    }
  }
  dp_type *t = dp_type_tensor(X->ctx, dt, ndim, dims);
  if (!t) oom(X);
  return t;
}

/* Step 1: the table of every value, and the checks on names. */
static int read_values(dp__onnx *X) {
  struct dp__ox_state *S = X->st;
  Onnx__GraphProto *g = S->g;
  if (g->n_sparse_initializer)
    return dp__ox_fail(X, DP_ERR_VALUE, "the graph has sparse initializers, which devplan does not read");
  for (size_t k = 0; k < g->n_initializer; k++) {
    const Onnx__TensorProto *t = g->initializer[k];
    if (!t->name || !t->name[0]) return dp__ox_fail(X, DP_ERR_VALUE, "initializer %zu has no name", k);
    if (lookup(X, t->name)) return dp__ox_fail(X, DP_ERR_VALUE, "initializer '%s' is defined twice", t->name);
    dp_dtype dt;
    uint32_t ndim;
    int64_t dims[DP__OT_MAXDIM];
    if (tensor_shape(X, t, "initializer", &dt, &ndim, dims) < 0) return -1;
    entry *en = add_entry(X, t->name, -1);
    if (!en) return -1;
    en->init = t;
    en->fold = DP_DTYPE_CODE(dt) == DP_DT_INT || DP_DTYPE_CODE(dt) == DP_DT_UINT || DP_DTYPE_CODE(dt) == DP_DT_BOOL;
    if (!(en->type = dp_type_tensor(X->ctx, dt, ndim, dims))) return oom(X);
  }
  for (uint32_t k = 0; k < X->opts->nshapes; k++) {
    const char *name = X->opts->shapes[k].name;
    int found = 0;
    for (size_t i = 0; name && i < g->n_input && !found; i++) found = g->input[i]->name && !strcmp(g->input[i]->name, name);
    if (!found) return dp__ox_fail(X, DP_ERR_VALUE, "a shape is given for '%s', which is not an input of the graph", name ? name : "");
  }
  for (size_t k = 0; k < g->n_input; k++) {
    const Onnx__ValueInfoProto *vi = g->input[k];
    if (!vi->name || !vi->name[0]) return dp__ox_fail(X, DP_ERR_VALUE, "graph input %zu has no name", k);
    entry *en = lookup(X, vi->name);
    if (en && en->init) continue; /* listed as an input too (IR version < 4): a weight */
    if (en) return dp__ox_fail(X, DP_ERR_VALUE, "graph input '%s' is listed twice", vi->name);
    dp_type *t = input_type(X, vi);
    if (!t) return -1;
    dp_var *v = dp_var_new(vi->name, t, NULL, DP_NOSPAN);
    if (!v || !(en = add_entry(X, vi->name, -1))) {
      dp_release(t);
      dp_release(v);
      return en ? oom(X) : -1;
    }
    dp_expr_set_type(&v->e, t);
    en->type = t;
    en->is_input = 1;
    en->expr = &v->e;
    if (add_param(X, (dp_var *)dp_retain(v)) < 0) return -1;
  }
  for (size_t k = 0; k < g->n_node; k++) {
    const Onnx__NodeProto *n = g->node[k];
    for (size_t o = 0; o < n->n_output; o++) {
      const char *name = n->output[o];
      if (!name || !name[0]) continue;
      entry *en = lookup(X, name);
      if (en)
        return dp__ox_fail(X, DP_ERR_VALUE, "value '%s' is defined twice (graph.node[%zu] '%s' (%s) makes it again)",
                           name, k, str(n->name), str(n->op_type));
      if (!add_entry(X, name, (int32_t)k)) return -1;
    }
  }
  for (size_t k = 0; k < g->n_node; k++) {
    const Onnx__NodeProto *n = g->node[k];
    for (size_t i = 0; i < n->n_input; i++) {
      if (!n->input[i] || !n->input[i][0]) continue;
      entry *en = lookup(X, n->input[i]);
      if (!en)
        return dp__ox_fail(X, DP_ERR_VALUE,
                           "graph.node[%zu] '%s' (%s): input %zu '%s' is neither a graph input, an initializer nor "
                           "the output of a node", k, str(n->name), str(n->op_type), i, n->input[i]);
      if (en->producer >= (int32_t)k)
        return dp__ox_fail(X, DP_ERR_VALUE,
                           "graph.node[%zu] '%s' (%s): input %zu '%s' is made by graph.node[%d], which comes after "
                           "it (the nodes must be in topological order)", k, str(n->name), str(n->op_type), i,
                           n->input[i], en->producer);
      en->uses++;
    }
  }
  if (g->n_output == 0) return dp__ox_fail(X, DP_ERR_VALUE, "the graph has no outputs");
  for (size_t k = 0; k < g->n_output; k++) {
    const char *name = str(g->output[k]->name);
    entry *en = lookup(X, name);
    if (!en) return dp__ox_fail(X, DP_ERR_VALUE, "graph output '%s' is made by no node", name);
    en->is_output = 1;
  }
  return 0;
}

/* The name errors and spans give the node: its own, or OpType_k. */
static void name_node(dp__onnx *X, const Onnx__NodeProto *n) {
  struct dp__ox_state *S = X->st;
  if (n->name && n->name[0]) {
    snprintf(S->nodename, sizeof S->nodename, "%s", n->name);
    return;
  }
  const char *op = str(n->op_type);
  uint32_t k = 0;
  for (; k < S->ncounts; k++)
    if (strcmp(S->counts[k].op, op) == 0) break;
  if (k == S->ncounts) {
    if (dp_grow((void **)&S->counts, &S->capcounts, S->ncounts + 1, sizeof *S->counts) < 0) {
      snprintf(S->nodename, sizeof S->nodename, "%s", op);
      return;
    }
    S->counts[S->ncounts++] = (opcount){op, 0};
  }
  snprintf(S->nodename, sizeof S->nodename, "%s_%u", op, S->counts[k].n++);
}

/* Can the node be computed at import? Every given input known and foldable. */
static int foldable(dp__onnx *X, const Onnx__NodeProto *n) {
  for (size_t i = 0; i < n->n_input; i++) {
    if (!n->input[i] || !n->input[i][0]) continue;
    entry *en = lookup(X, n->input[i]);
    if (!en || !en->fold) return 0;
  }
  return 1;
}

static int convert_node(dp__onnx *X, uint32_t k) {
  struct dp__ox_state *S = X->st;
  const Onnx__NodeProto *n = S->g->node[k];
  X->node = n;
  X->node_index = k;
  name_node(X, n);
  uint32_t src = dp_ctx_source(X->ctx, S->nodename);
  if (!src) return oom(X);
  X->span = (dp_span){src, k + 1, 0}; /* column 0: a node has none */
  const char *op = str(n->op_type);
  if (!is_default_domain(n->domain))
    return dp__ox_fail(X, DP_ERR_VALUE, "operator '%s' of domain '%s' is not supported (only the default domain ai.onnx is)",
                       op, n->domain);
  dp__onnx_conv ev = dp__onnx_evaluator(op), cv = dp__onnx_converter(op);
  /* Shape and Size read the type alone: known whatever their input is */
  int always = strcmp(op, "Shape") == 0 || strcmp(op, "Size") == 0;
  int rc;
  if (ev && (always || foldable(X, n))) rc = ev(X);
  else if (cv) rc = cv(X);
  else return dp__ox_fail(X, DP_ERR_VALUE, "operator '%s' (opset %lld) is not supported", op, (long long)X->opset);
  if (rc < 0) return X->err ? -1 : oom(X);
  for (uint32_t o = 0; o < n->n_output; o++) {
    entry *en = output_entry(X, o);
    if (en && (en->uses || en->is_output) && !en->expr && !en->known)
      return dp__ox_fail(X, DP_ERR_VALUE, "output %u '%s' is not supported (devplan makes outputs 0 to %u of %s)", o,
                         en->name, o ? o - 1 : 0, op);
  }
  return 0;
}

static dp_expr *graph_outputs(dp__onnx *X) {
  struct dp__ox_state *S = X->st;
  Onnx__GraphProto *g = S->g;
  X->node = NULL;
  X->span = DP_NOSPAN;
  dp_expr **outs = dp_calloc(g->n_output, sizeof *outs);
  if (!outs) {
    oom(X);
    return NULL;
  }
  dp_expr *body = NULL;
  size_t k = 0;
  for (; k < g->n_output; k++) {
    entry *en = lookup(X, str(g->output[k]->name));
    if (!(outs[k] = entry_expr(X, en))) break;
  }
  if (k == g->n_output) body = g->n_output == 1 ? dp_retain(outs[0]) : dp__ox_tuple(X, (uint32_t)g->n_output, outs);
  free(outs);
  return body;
}

static dp_module *build_module(dp__onnx *X) {
  struct dp__ox_state *S = X->st;
  dp_expr *body = graph_outputs(X);
  if (!body) return NULL;
  dp_func *fn = dp_func_new(S->nparams, S->params, body, NULL, NULL, NULL, DP_NOSPAN);
  dp_release(body);
  dp_module *m = fn ? dp_module_new(X->ctx) : NULL;
  dp_global *gl = m ? dp_global_new("main", DP_NOSPAN) : NULL;
  dp_err *e = NULL;
  if (!gl || dp_module_add_func(m, gl, fn, &e) < 0 || dp_infer_module(m, &e) < 0) {
    if (e && e->code != DP_ERR_MEMORY) dp__ox_fail(X, e->code, "%s", e->msg);
    else oom(X);
    dp_err_free(e);
    dp_release(gl);
    dp_release(fn);
    dp_release(m);
    return NULL;
  }
  dp_release(gl);
  dp_release(fn);
  return m;
}

void dp_onnx_info_free(dp_onnx_info *I) {
  if (!I) return;
  for (uint32_t k = 0; k < I->nparams; k++) {
    free(I->params[k].name);
    dp_release(I->params[k].value);
  }
  for (uint32_t k = 0; k < I->ntypes; k++) {
    free(I->types[k].name);
    dp_release(I->types[k].type);
  }
  free(I->params);
  free(I->types);
  *I = (dp_onnx_info){0};
}

/* The type of every value with one, for the caller's info. */
static int collect_types(dp__onnx *X) {
  struct dp__ox_state *S = X->st;
  dp_onnx_info *I = S->info;
  if (!I) return 0;
  I->nodes = (uint32_t)S->g->n_node;
  uint32_t n = 0;
  for (uint32_t k = 0; k < S->nents; k++) n += S->ents[k].type != NULL;
  if (!(I->types = dp_calloc(n ? n : 1, sizeof *I->types))) return oom(X);
  for (uint32_t k = 0; k < S->nents; k++) {
    entry *en = &S->ents[k];
    if (!en->type) continue;
    if (!(I->types[I->ntypes].name = dp_strdup(en->name))) return oom(X);
    I->types[I->ntypes++].type = dp_retain(en->type);
  }
  return 0;
}

dp_module *dp_onnx_import(dp_ctx *ctx, const void *bytes, size_t n, const dp_onnx_opts *opts,
                          dp_onnx_info *info, dp_err **err) {
  static const dp_onnx_opts defaults = {0};
  struct dp__ox_state S = {0};
  dp__onnx X = {0};
  X.ctx = ctx;
  X.opts = opts ? opts : &defaults;
  X.source = X.opts->source ? X.opts->source : "<bytes>";
  X.st = &S;
  if (info) *info = (dp_onnx_info){0};
  S.info = info;
  dp_module *m = NULL;
  if (!(S.model = dp__onnx_decode(bytes, n, X.source, &X.err))) goto done;
  S.g = S.model->graph;
  if (read_opset(&X) < 0 || read_values(&X) < 0) goto done;
  for (size_t k = 0; k < S.g->n_node; k++)
    if (convert_node(&X, (uint32_t)k) < 0) goto done;
  m = build_module(&X);
  if (m && collect_types(&X) < 0) {
    dp_release(m);
    m = NULL;
  }
done:
  free_state(&S);
  if (!m) {
    if (info) dp_onnx_info_free(info);
    if (!X.err) X.err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    dp_err_set(err, X.err);
  }
  return m;
}

dp_module *dp_onnx_import_file(dp_ctx *ctx, const char *path, const dp_onnx_opts *opts,
                               dp_onnx_info *info, dp_err **err) {
  dp_onnx_opts o = opts ? *opts : (dp_onnx_opts){0};
  if (!o.source) o.source = path;
  FILE *f = fopen(path, "rb");
  if (!f) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "cannot open %s", path));
    return NULL;
  }
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      size_t c = cap ? cap * 2 : (size_t)1 << 16;
      char *b = dp_realloc(buf, c);
      if (!b) {
        free(buf);
        fclose(f);
        dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
        return NULL;
      }
      buf = b;
      cap = c;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "cannot read %s", path));
    return NULL;
  }
  dp_module *m = dp_onnx_import(ctx, buf, len, &o, info, err);
  free(buf);
  return m;
}
