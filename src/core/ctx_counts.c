/*
 * Live interned objects per context, so tests and benchmarks can prove
 * that making and dropping objects leaves the tables as they were.
 */
#include "internal.h"

void dp_ctx_counts(const dp_ctx *ctx, size_t *ntargets, size_t *nvdevs, size_t *ntypes) {
  if (ntargets) *ntargets = ctx ? ctx->targets.n : 0;
  if (nvdevs) *nvdevs = ctx ? ctx->vdevs.n : 0;
  if (ntypes) *ntypes = ctx ? ctx->types.n : 0;
}
