/*
 * Contexts: interning tables, the operator registry, source names.
 * A context is freed when its last reference goes; interned objects and
 * modules retain it.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* Takes the operator registry out of ctx; the ops (still retained) are
   returned for the caller to release. */
static dp_op **take_registry(dp_ctx *ctx, uint32_t *n) {
  dp_op **ops = ctx->ops;
  *n = ctx->nops;
  for (uint32_t i = 0; i < *n; i++) ops[i]->ctx = NULL; /* calls may still hold the op */
  ctx->ops = NULL;
  ctx->nops = ctx->capops = 0;
  dp__itab_free(&ctx->opnames);
  return ops;
}

static void ctx_free(dp_obj *o, dp_worklist *wl) {
  dp_ctx *ctx = (dp_ctx *)o;
  uint32_t n;
  dp_op **ops = take_registry(ctx, &n);
  for (uint32_t i = 0; i < n; i++) dp_release_deferred(wl, ops[i]);
  free(ops);
  for (uint32_t i = 0; i < ctx->nsources; i++) free(ctx->sources[i]);
  free(ctx->sources);
  free(ctx->srcslots);
  dp__itab_free(&ctx->targets);
  dp__itab_free(&ctx->vdevs);
  dp__itab_free(&ctx->types);
  dp__kinds_free(ctx);
  free(ctx);
}

/* Empty: the operators are a layer above (dp_register_builtin_ops, op.h). */
dp_ctx *dp_ctx_new(void) {
  dp_ctx *ctx = dp_calloc(1, sizeof *ctx);
  if (!ctx) return NULL;
  ctx->h.rc = 1;
  ctx->h.type = DP_OBJ_CTX;
  ctx->next_tvar_id = 1;
  return ctx;
}

void dp__ctx_free_fn(dp_obj *o, dp_worklist *wl) { ctx_free(o, wl); }

/* An operator's attribute defaults may hold objects of its context (a
   virtual device, a constant), and those retain the context: a cycle
   through the registry that reference counting alone never frees. The
   owner ends it here, after which the registry is empty. The registry is
   taken out before the ops are released, so nothing can find a half-freed
   op by name meanwhile. */
void dp_ctx_close(dp_ctx *ctx) {
  if (!ctx) return;
  uint32_t n;
  dp_op **ops = take_registry(ctx, &n);
  for (uint32_t i = 0; i < n; i++) dp_release(ops[i]);
  free(ops);
  dp_release(ctx);
}

/* The slot of name in the hash index (its id, or the empty slot to put it in). */
static uint32_t *source_slot(dp_ctx *ctx, const char *name, uint32_t h) {
  for (uint32_t i = h & (ctx->capsrcslots - 1);; i = (i + 1) & (ctx->capsrcslots - 1)) {
    uint32_t id = ctx->srcslots[i];
    if (!id || strcmp(ctx->sources[id - 1], name) == 0) return &ctx->srcslots[i];
  }
}

/* Keeps the index at most half full (an imported ONNX model names a source
   per node: thousands, looked up once per node). */
static int grow_source_index(dp_ctx *ctx) {
  uint32_t cap = ctx->capsrcslots ? ctx->capsrcslots * 2 : 16;
  uint32_t *slots = dp_calloc(cap, sizeof *slots);
  if (!slots) return -1;
  uint32_t *old = ctx->srcslots;
  ctx->srcslots = slots;
  ctx->capsrcslots = cap;
  for (uint32_t id = 1; id <= ctx->nsources; id++) {
    const char *s = ctx->sources[id - 1];
    *source_slot(ctx, s, dp__hash_string(0, s)) = id;
  }
  free(old);
  return 0;
}

uint32_t dp_ctx_source(dp_ctx *ctx, const char *name) {
  if (!name) name = "<string>";
  if ((ctx->nsources + 1) * 2 > ctx->capsrcslots && grow_source_index(ctx) < 0) return 0;
  uint32_t h = dp__hash_string(0, name);
  uint32_t *slot = source_slot(ctx, name, h);
  if (*slot) return *slot;
  if (ctx->nsources == ctx->capsources) {
    uint32_t cap = ctx->capsources ? ctx->capsources * 2 : 8;
    char **s = dp_realloc(ctx->sources, cap * sizeof *s);
    if (!s) return 0;
    ctx->sources = s;
    ctx->capsources = cap;
  }
  char *copy = dp_strdup(name);
  if (!copy) return 0;
  ctx->sources[ctx->nsources++] = copy;
  *slot = ctx->nsources;
  return ctx->nsources;
}

const char *dp_ctx_source_name(const dp_ctx *ctx, uint32_t id) {
  if (!ctx || id == 0 || id > ctx->nsources) return "<unknown>";
  return ctx->sources[id - 1];
}

/* Here rather than in error.c: errors are a layer below the context. */
dp_err *dp__err_vat(dp_ctx *ctx, dp_errcode code, dp_span span, const char *fmt, va_list ap) {
  const char *source = ctx && span.source ? dp_ctx_source_name(ctx, span.source) : NULL;
  return dp__err_v(code, span, source, fmt, ap);
}

dp_err *dp_err_at(dp_ctx *ctx, dp_errcode code, dp_span span, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dp_err *e = dp__err_vat(ctx, code, span, fmt, ap);
  va_end(ap);
  return e;
}
