/*
 * The operator registry of a context, and the normalisation of a call's
 * attributes against an operator's schema.
 *
 * Operators are DP_OP expressions owned by the context's registry (one
 * reference) and retained by the calls that use them; the context clears
 * op->ctx when it goes, so an op outliving its context is still freed
 * cleanly by dp__op_free.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "devplan/suggest.h"
#include "ops_internal.h"

static int op_name_eq(const void *obj, const void *key) {
  return strcmp(((const dp_op *)obj)->name, (const char *)key) == 0;
}

dp_op *dp_op_get(dp_ctx *ctx, const char *name) {
  if (!ctx || !name) return NULL;
  return dp__itab_find(&ctx->opnames, dp__hash_string(0, name), op_name_eq, name);
}

uint32_t dp_op_count(dp_ctx *ctx) { return ctx ? ctx->nops : 0; }

dp_op *dp_op_at(dp_ctx *ctx, uint32_t i) {
  return ctx && i < ctx->nops ? ctx->ops[i] : NULL;
}

static const char *const pattern_names[] = {
  "elemwise", "broadcast", "injective", "comm_reduce", "out_elemwise_fusable", NULL, NULL,
  "tuple", "opaque"};

const char *dp_oppattern_name(int kind) {
  return kind >= 0 && kind <= DP_OPP_OPAQUE ? pattern_names[kind] : NULL;
}

int dp_oppattern_parse(const char *name) {
  for (int k = 0; name && k <= DP_OPP_OPAQUE; k++)
    if (pattern_names[k] && strcmp(pattern_names[k], name) == 0) return k;
  return -2;
}

int dp_op_set_pattern(dp_op *op, int kind) {
  if (!op || (kind != DP_OPP_NONE && !dp_oppattern_name(kind))) return -1;
  op->pattern = kind;
  return 0;
}

static void clear_fields(dp_attr_field *fields, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) dp_av_clear(&fields[i].dflt);
}

void dp__op_free(dp_op *op) {
  if (!op) return;
  if (op->ud_free) op->ud_free(op->ud);
  if (op->fields) {
    for (uint32_t i = 0; i < op->nfields; i++) free((char *)op->fields[i].name);
    clear_fields(op->fields, op->nfields);
    free(op->fields);
  }
  free(op->name);
  free(op); /* e.type was released by the expression free function */
}

/* Copies the schema: names are duplicated, default values moved. A
   non-NULL schema with no fields stays non-NULL ("no attributes allowed"),
   which is not the same as no schema at all. */
static dp_attr_field *copy_fields(const dp_attr_field *fields, uint32_t n) {
  dp_attr_field *out = dp_calloc(n ? n : 1, sizeof *out);
  if (!out) return NULL;
  for (uint32_t i = 0; i < n; i++) {
    out[i].name = dp_strdup(fields[i].name);
    if (!out[i].name) {
      for (uint32_t j = 0; j < i; j++) free((char *)out[j].name);
      free(out);
      return NULL;
    }
    out[i].kind = fields[i].kind;
    out[i].has_default = fields[i].has_default;
    out[i].dflt = fields[i].dflt;
  }
  return out;
}

static int registry_add(dp_ctx *ctx, dp_op *op) {
  if (ctx->nops == ctx->capops) {
    uint32_t cap = ctx->capops ? ctx->capops * 2 : 64;
    dp_op **ops = dp_realloc(ctx->ops, cap * sizeof *ops);
    if (!ops) return -1;
    ctx->ops = ops;
    ctx->capops = cap;
  }
  if (dp__itab_insert(&ctx->opnames, dp__hash_string(0, op->name), op) < 0) return -1;
  op->id = ctx->nops;
  ctx->ops[ctx->nops++] = op;
  return 0;
}

dp_op *dp_op_register(dp_ctx *ctx, const char *name, int num_inputs, uint32_t flags,
                      const dp_attr_field *fields, uint32_t nfields,
                      dp_type_rel rel, void *ud, void (*ud_free)(void *), dp_err **err) {
  dp_op *op = NULL;
  if (!ctx || !name || !*name) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "operator needs a name"));
    goto fail;
  }
  if (dp_op_get(ctx, name)) {
    dp_err_set(err, dp_err_new(DP_ERR_NAME, DP_NOSPAN, "operator '%s' is already registered", name));
    goto fail;
  }
  op = dp_calloc(1, sizeof *op);
  if (!op) goto oom;
  op->e.h.rc = 1;
  op->e.h.type = DP_OBJ_EXPR;
  op->e.h.kind = DP_OP;
  op->ctx = ctx;
  op->num_inputs = num_inputs;
  op->flags = flags;
  op->pattern = DP_OPP_NONE;
  op->rel = rel;
  op->name = dp_strdup(name);
  if (!op->name) goto oom;
  if (fields) {
    op->fields = copy_fields(fields, nfields);
    if (!op->fields) goto oom;
    op->nfields = nfields;
  }
  if (registry_add(ctx, op) < 0) goto oom;
  op->ud = ud;
  op->ud_free = ud_free;
  return op;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
fail:
  /* We own the defaults (and ud) whatever happens. */
  if (op && op->fields) {
    for (uint32_t i = 0; i < op->nfields; i++) free((char *)op->fields[i].name);
    free(op->fields);
    op->fields = NULL;
  }
  if (fields) clear_fields((dp_attr_field *)fields, nfields);
  if (ud_free) ud_free(ud);
  if (op) {
    free(op->name);
    free(op);
  }
  return NULL;
}

/* ---------------- attributes of a call ---------------- */

static int field_index(const dp_op *op, const char *key) {
  for (uint32_t i = 0; i < op->nfields; i++)
    if (strcmp(op->fields[i].name, key) == 0) return (int)i;
  return -1;
}

static int all_ints(const dp_aval *v) {
  for (uint32_t i = 0; i < v->n; i++)
    if (v->u.items[i].kind != DP_AV_INT) return 0;
  return 1;
}

/* Checks v against kind, converting the forms that mean the same value
   (1 for 1.0, 0/1 for booleans, 3 for [3] in a list field). A None is
   accepted where the default is None. Returns 0, or -1 when it does not fit. */
static int fit_kind(const dp_attr_field *f, dp_aval *v) {
  if (v->kind == DP_AV_NONE && f->has_default && f->dflt.kind == DP_AV_NONE) return 0;
  switch (f->kind) {
  case DP_AK_ANY: return 0;
  case DP_AK_BOOL:
    if (v->kind == DP_AV_INT && (v->u.i == 0 || v->u.i == 1)) { v->kind = DP_AV_BOOL; v->dtype = 0; }
    return v->kind == DP_AV_BOOL ? 0 : -1;
  case DP_AK_INT: return v->kind == DP_AV_INT ? 0 : -1;
  case DP_AK_FLOAT:
    if (v->kind == DP_AV_INT) *v = dp_av_float((double)v->u.i, 0);
    return v->kind == DP_AV_FLOAT ? 0 : -1;
  case DP_AK_STR: return v->kind == DP_AV_STR ? 0 : -1;
  case DP_AK_INTS:
    if (v->kind == DP_AV_INT) {
      dp_aval *item = dp_malloc(sizeof *item);
      if (!item) return -1;
      *item = *v;
      *v = dp_av_list(1, item);
    }
    return v->kind == DP_AV_LIST && all_ints(v) ? 0 : -1;
  case DP_AK_INT_OR_INTS:
    return v->kind == DP_AV_INT || (v->kind == DP_AV_LIST && all_ints(v)) ? 0 : -1;
  case DP_AK_INT_OR_NONE: return v->kind == DP_AV_INT || v->kind == DP_AV_NONE ? 0 : -1;
  case DP_AK_DTYPE:
    if (v->kind != DP_AV_STR) return -1;
    return !v->u.s[0] || dp_dtype_parse(v->u.s) ? 0 : -1;
  case DP_AK_VDEV: return v->kind == DP_AV_VDEV ? 0 : -1;
  }
  return -1;
}

static const char *kind_name(dp_attrkind k) {
  static const char *names[] = {"any value", "a boolean", "an integer", "a number", "a string",
                                "a list of integers", "an integer or a list of integers",
                                "an integer or None", "a dtype string", "a virtual device"};
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

/* Equal to the default, as the printer would decide: numbers by value
   (a dtype suffix written on a float does not make it different). */
static int is_default(const dp_attr_field *f, const dp_aval *v) {
  if (!f->has_default) return 0;
  const dp_aval *d = &f->dflt;
  if (v->kind == DP_AV_FLOAT && d->kind == DP_AV_FLOAT) return v->u.f == d->u.f;
  if (v->kind == DP_AV_INT && d->kind == DP_AV_INT) return v->u.i == d->u.i;
  if (v->kind == DP_AV_LIST && d->kind == DP_AV_LIST) {
    if (v->n != d->n) return 0;
    for (uint32_t i = 0; i < v->n; i++)
      if (!dp_av_equal(&v->u.items[i], &d->u.items[i])) return 0;
    return 1;
  }
  return dp_av_equal(v, d);
}

static void clear_items(uint32_t n, dp_attr *items) {
  for (uint32_t i = 0; i < n; i++) dp_av_clear(&items[i].val);
}

/* Finds each item's schema slot; an unknown, repeated or ill-kinded
   attribute is an error naming it and the operator. */
static int place_items(const dp_op *op, uint32_t n, dp_attr *items, int *slot, dp_err **err) {
  for (uint32_t i = 0; i < op->nfields; i++) slot[i] = -1;
  for (uint32_t i = 0; i < n; i++) {
    int k = field_index(op, items[i].key);
    if (k < 0) {
      dp_suggest s;
      char hint[DP_SUGGEST_HINT];
      dp_suggest_init(&s, items[i].key);
      for (uint32_t f = 0; f < op->nfields; f++) dp_suggest_add(&s, op->fields[f].name);
      dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "unknown attribute '%s' for operator %s%s",
                                 items[i].key, op->name, dp_suggest_hint(&s, hint, sizeof hint)));
      return -1;
    }
    if (slot[k] >= 0) {
      dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                                 "attribute '%s' given twice for operator %s", items[i].key, op->name));
      return -1;
    }
    if (fit_kind(&op->fields[k], &items[i].val) < 0) {
      dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                                 "attribute '%s' of operator %s must be %s", items[i].key, op->name,
                                 kind_name(op->fields[k].kind)));
      return -1;
    }
    slot[k] = (int)i;
  }
  return 0;
}

dp_attrs *dp_op_attrs(const dp_op *op, uint32_t n, dp_attr *items, dp_err **err) {
  if (!op->fields) return dp_attrs_make(n, items, err);
  int *slot = dp_malloc((op->nfields ? op->nfields : 1) * sizeof *slot);
  dp_attr *out = dp_malloc((n ? n : 1) * sizeof *out);
  if (!slot || !out) {
    free(slot);
    free(out);
    clear_items(n, items);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  dp_attrs *res = NULL;
  if (place_items(op, n, items, slot, err) == 0) {
    uint32_t m = 0;
    for (uint32_t k = 0; k < op->nfields; k++) {
      if (slot[k] < 0) continue;
      dp_attr *it = &items[slot[k]];
      if (is_default(&op->fields[k], &it->val)) {
        dp_av_clear(&it->val);
        continue;
      }
      out[m].key = (char *)op->fields[k].name; /* dp_attrs_make copies keys */
      out[m].val = it->val;
      it->val = dp_av_none();
      m++;
    }
    res = dp_attrs_make(m, out, err);
  }
  clear_items(n, items);
  free(slot);
  free(out);
  return res;
}

const dp_aval *dp_op_attr(const dp_op *op, const dp_attrs *attrs, const char *key) {
  const dp_aval *v = attrs ? dp_attrs_get(attrs, key) : NULL;
  if (v) return v;
  if (!op || !op->fields) return NULL;
  int k = field_index(op, key);
  return k >= 0 && op->fields[k].has_default ? &op->fields[k].dflt : NULL;
}
