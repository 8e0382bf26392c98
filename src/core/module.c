/*
 * Modules, ADT type definitions and primfn declarations.
 *
 * A module holds its parts by reference: copying a module to change one
 * function shares every other part. Global functions and primfns share
 * the `@` namespace (one hash index finds both); type definitions and
 * constructors have their own.
 * Arrays grow by doubling when their length reaches a power of two, so no
 * capacity field is needed.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "devplan/module.h"

/* Stores a new error (if err is not NULL) with the span's source name
   resolved through ctx (may be NULL); returns -1 for the caller. */
static int set_err(dp_err **err, dp_ctx *ctx, dp_errcode code, dp_span span, const char *msg,
                   const char *name) {
  dp_err_set(err, dp_err_at(ctx, code, span, msg, name ? name : ""));
  return -1;
}

static dp_ctx *ctx_of(const dp_module *m) { return m ? m->ctx : NULL; }

/* Makes room for one more item in an array of n items of size sz. */
static int grow(void **arr, uint32_t n, size_t sz) {
  uint32_t cap;
  if (n == 0) cap = 4;                              /* first block holds 4 */
  else if (n < 4 || (n & (n - 1)) != 0) return 0;   /* room left */
  else cap = n * 2;
  void *p = dp_realloc(*arr, cap * sz);
  if (!p) return -1;
  *arr = p;
  return 0;
}

/* ---------------- type definitions ---------------- */

dp_typedef *dp_typedef_new(const char *name, uint32_t ntparams, dp_type *const *tparams,
                           uint32_t nctors, dp_ctor *const *ctors, dp_span span) {
  if (!name || (ntparams && !tparams) || (nctors && !ctors)) return NULL;
  for (uint32_t i = 0; i < ntparams; i++)
    if (!tparams[i] || tparams[i]->h.kind != DP_TY_VAR) return NULL;
  for (uint32_t i = 0; i < nctors; i++)
    if (!ctors[i] || ctors[i]->e.h.kind != DP_CTOR) return NULL;
  size_t len = strlen(name) + 1;
  dp_typedef *td = dp_calloc(1, sizeof *td + ntparams * sizeof(dp_type *) +
                                 nctors * sizeof(dp_ctor *) + len);
  if (!td) return NULL;
  td->h = (dp_obj){.rc = 1, .type = DP_OBJ_TYPEDEF};
  td->span = span;
  td->ntparams = ntparams;
  td->tparams = (dp_type **)(td + 1);
  td->nctors = nctors;
  td->ctors = (dp_ctor **)(td->tparams + ntparams);
  for (uint32_t i = 0; i < ntparams; i++) td->tparams[i] = dp_retain(tparams[i]);
  for (uint32_t i = 0; i < nctors; i++) td->ctors[i] = dp_retain(ctors[i]);
  td->name = (char *)(td->ctors + nctors);
  memcpy(td->name, name, len);
  return td;
}

void dp__typedef_free_fn(dp_obj *o, dp_worklist *wl) {
  dp_typedef *td = (dp_typedef *)o;
  for (uint32_t i = 0; i < td->ntparams; i++) dp_release_deferred(wl, td->tparams[i]);
  for (uint32_t i = 0; i < td->nctors; i++) dp_release_deferred(wl, td->ctors[i]);
  free(td);
}

/* ---------------- primfn declarations ---------------- */

dp_primfn *dp_primfn_new(const char *name, uint32_t nargs, const dp_buffer *args,
                         dp_buffer result, dp_span span) {
  if (!name || (nargs && !args) || !result.type) return NULL;
  size_t strbytes = strlen(name) + 1 + strlen(result.scope ? result.scope : "") + 1;
  for (uint32_t i = 0; i < nargs; i++) {
    if (!args[i].type) return NULL;
    strbytes += strlen(args[i].scope ? args[i].scope : "") + 1;
  }
  dp_primfn *pf = dp_calloc(1, sizeof *pf + nargs * sizeof(dp_buffer) + strbytes);
  if (!pf) return NULL;
  pf->h = (dp_obj){.rc = 1, .type = DP_OBJ_PRIMFN};
  pf->span = span;
  pf->nargs = nargs;
  pf->args = (dp_buffer *)(pf + 1);
  char *s = (char *)(pf->args + nargs);
#define COPY_STR(dst, src)                   \
  do {                                       \
    const char *src_ = (src) ? (src) : "";   \
    size_t n_ = strlen(src_) + 1;            \
    memcpy(s, src_, n_);                     \
    (dst) = s;                               \
    s += n_;                                 \
  } while (0)
  COPY_STR(pf->name, name);
  for (uint32_t i = 0; i < nargs; i++) {
    pf->args[i].type = dp_retain(args[i].type);
    COPY_STR(pf->args[i].scope, args[i].scope);
  }
  pf->result.type = dp_retain(result.type);
  COPY_STR(pf->result.scope, result.scope);
#undef COPY_STR
  return pf;
}

void dp__primfn_free_fn(dp_obj *o, dp_worklist *wl) {
  dp_primfn *pf = (dp_primfn *)o;
  for (uint32_t i = 0; i < pf->nargs; i++) dp_release_deferred(wl, pf->args[i].type);
  dp_release_deferred(wl, pf->result.type);
  free(pf);
}

/* ---------------- modules ---------------- */

dp_module *dp_module_new(dp_ctx *ctx) {
  if (!ctx) return NULL;
  dp_module *m = dp_calloc(1, sizeof *m);
  if (!m) return NULL;
  m->h = (dp_obj){.rc = 1, .type = DP_OBJ_MODULE};
  m->ctx = dp_retain(ctx);
  return m;
}

void dp__module_free_fn(dp_obj *o, dp_worklist *wl) {
  dp_module *m = (dp_module *)o;
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    dp_release_deferred(wl, m->funcs[i].global);
    dp_release_deferred(wl, m->funcs[i].fn);
  }
  for (uint32_t i = 0; i < m->ntypedefs; i++) dp_release_deferred(wl, m->typedefs[i]);
  for (uint32_t i = 0; i < m->nprims; i++) dp_release_deferred(wl, m->prims[i]);
  free(m->funcs);
  free(m->typedefs);
  free(m->prims);
  free(m->names);
  dp_release_deferred(wl, m->ctx);
  free(m);
}

/* ---------------- the `@` names ---------------- */

/* Open addressing over functions and primfns, so that a module of 100,000
   definitions is built and searched in linear time; slot = index + 1,
   primfns with the top bit set. */
struct dp__names {
  uint32_t mask; /* table size - 1 */
  uint32_t slots[];
};

#define PRIM_BIT 0x80000000u

static const char *slot_name(const dp_module *m, uint32_t v) {
  uint32_t i = (v & ~PRIM_BIT) - 1;
  return v & PRIM_BIT ? m->prims[i]->name : m->funcs[i].global->name;
}

/* The slot of name in the table (empty when absent). */
static uint32_t *name_slot(const dp_module *m, const char *name) {
  const struct dp__names *t = m->names;
  uint32_t i = dp__hash_bytes(0, name, strlen(name)) & t->mask;
  while (t->slots[i] && strcmp(slot_name(m, t->slots[i]), name) != 0) i = (i + 1) & t->mask;
  return (uint32_t *)&t->slots[i];
}

/* Index of the function (prim 0) or primfn (prim 1) named name, or -1. */
static int find_name(const dp_module *m, const char *name, int prim) {
  if (!m->names) return -1;
  uint32_t v = *name_slot(m, name);
  if (!v || !(v & PRIM_BIT) != !prim) return -1;
  return (int)((v & ~PRIM_BIT) - 1);
}

static int find_func(const dp_module *m, const char *name) { return find_name(m, name, 0); }
static int find_prim(const dp_module *m, const char *name) { return find_name(m, name, 1); }

/* Records a name just appended (v = its slot value), the table kept at most
   half full. 0, or -1 on out of memory. */
static int add_name(dp_module *m, uint32_t v) {
  uint32_t n = m->nfuncs + m->nprims; /* (the new one counted) */
  if (!m->names || 2 * n > m->names->mask) {
    uint32_t size = m->names ? (m->names->mask + 1) * 2 : 64;
    struct dp__names *old = m->names;
    m->names = dp_calloc(1, sizeof *m->names + size * sizeof m->names->slots[0]);
    if (!m->names) {
      m->names = old;
      return -1;
    }
    m->names->mask = size - 1;
    for (uint32_t i = 0; old && i <= old->mask; i++)
      if (old->slots[i]) *name_slot(m, slot_name(m, old->slots[i])) = old->slots[i];
    free(old);
  }
  *name_slot(m, slot_name(m, v)) = v;
  return 0;
}

static int oom(dp_err **err) {
  return set_err(err, NULL, DP_ERR_MEMORY, DP_NOSPAN, "out of memory", NULL);
}

int dp_module_add_func(dp_module *m, dp_global *g, dp_func *fn, dp_err **err) {
  if (!m || !g || !fn || fn->e.h.kind != DP_FUNC)
    return set_err(err, ctx_of(m), DP_ERR_VALUE, DP_NOSPAN,
                   "module: bad function definition", NULL);
  if (find_func(m, g->name) >= 0 || find_prim(m, g->name) >= 0)
    return set_err(err, ctx_of(m), DP_ERR_NAME, g->e.span, "@%s is already defined", g->name);
  if (grow((void **)&m->funcs, m->nfuncs, sizeof *m->funcs) < 0) return oom(err);
  m->funcs[m->nfuncs].global = g;
  m->funcs[m->nfuncs].fn = fn;
  m->nfuncs++;
  m->sizes = (struct dp_module_sizes){0, 0, 0}; /* (no longer those inference counted) */
  if (add_name(m, m->nfuncs) != 0) {
    m->nfuncs--;
    return oom(err);
  }
  dp_retain(g);
  dp_retain(fn);
  return 0;
}

int dp_module_add_typedef(dp_module *m, dp_typedef *td, dp_err **err) {
  if (!m || !td) return set_err(err, ctx_of(m), DP_ERR_VALUE, DP_NOSPAN,
                                "module: bad type definition", NULL);
  if (dp_module_typedef(m, td->name))
    return set_err(err, ctx_of(m), DP_ERR_NAME, td->span, "type %s is already defined", td->name);
  for (uint32_t i = 0; i < td->nctors; i++)
    if (dp_module_ctor(m, td->ctors[i]->name))
      return set_err(err, ctx_of(m), DP_ERR_NAME, td->ctors[i]->e.span,
                     "constructor %s is already defined", td->ctors[i]->name);
  if (grow((void **)&m->typedefs, m->ntypedefs, sizeof *m->typedefs) < 0) return oom(err);
  m->typedefs[m->ntypedefs++] = dp_retain(td);
  return 0;
}

int dp_module_add_primfn(dp_module *m, dp_primfn *pf, dp_err **err) {
  if (!m || !pf) return set_err(err, ctx_of(m), DP_ERR_VALUE, DP_NOSPAN,
                                "module: bad primfn", NULL);
  if (find_func(m, pf->name) >= 0 || find_prim(m, pf->name) >= 0)
    return set_err(err, ctx_of(m), DP_ERR_NAME, pf->span, "@%s is already defined", pf->name);
  if (grow((void **)&m->prims, m->nprims, sizeof *m->prims) < 0) return oom(err);
  m->prims[m->nprims++] = pf;
  if (add_name(m, m->nprims | PRIM_BIT) != 0) {
    m->nprims--;
    return oom(err);
  }
  dp_retain(pf);
  return 0;
}

dp_module *dp_module_copy(const dp_module *m) {
  dp_module *c = m ? dp_module_new(m->ctx) : NULL;
  if (!c) return NULL;
  for (uint32_t i = 0; i < m->nfuncs; i++)
    if (dp_module_add_func(c, m->funcs[i].global, m->funcs[i].fn, NULL) < 0) goto fail;
  for (uint32_t i = 0; i < m->ntypedefs; i++) {
    if (grow((void **)&c->typedefs, c->ntypedefs, sizeof *c->typedefs) < 0) goto fail;
    c->typedefs[c->ntypedefs++] = dp_retain(m->typedefs[i]);
  }
  for (uint32_t i = 0; i < m->nprims; i++)
    if (dp_module_add_primfn(c, m->prims[i], NULL) < 0) goto fail;
  c->sizes = m->sizes; /* (the same functions) */
  return c;
fail:
  dp_release(c);
  return NULL;
}

int dp_module_set_func(dp_module *m, const char *name, dp_func *fn, dp_err **err) {
  if (!m || !name || !fn || fn->e.h.kind != DP_FUNC)
    return set_err(err, ctx_of(m), DP_ERR_VALUE, DP_NOSPAN,
                   "module: bad function definition", NULL);
  int i = find_func(m, name);
  if (i < 0) return set_err(err, ctx_of(m), DP_ERR_NAME, DP_NOSPAN,
                            "no function @%s in the module", name);
  dp_retain(fn);
  dp_release(m->funcs[i].fn);
  m->funcs[i].fn = fn;
  m->sizes = (struct dp_module_sizes){0, 0, 0}; /* (no longer those inference counted) */
  return 0;
}

int dp_module_set_primfn(dp_module *m, dp_primfn *pf, dp_err **err) {
  if (!m || !pf) return set_err(err, ctx_of(m), DP_ERR_VALUE, DP_NOSPAN,
                                "module: bad primfn", NULL);
  int i = find_prim(m, pf->name);
  if (i < 0) return set_err(err, ctx_of(m), DP_ERR_NAME, pf->span,
                            "no primfn @%s in the module", pf->name);
  dp_retain(pf);
  dp_release(m->prims[i]);
  m->prims[i] = pf;
  return 0;
}

dp_func *dp_module_func(const dp_module *m, const char *name) {
  int i = m && name ? find_func(m, name) : -1;
  return i < 0 ? NULL : m->funcs[i].fn;
}

dp_global *dp_module_global(const dp_module *m, const char *name) {
  int i = m && name ? find_func(m, name) : -1;
  return i < 0 ? NULL : m->funcs[i].global;
}

dp_typedef *dp_module_typedef(const dp_module *m, const char *name) {
  if (!m || !name) return NULL;
  for (uint32_t i = 0; i < m->ntypedefs; i++)
    if (strcmp(m->typedefs[i]->name, name) == 0) return m->typedefs[i];
  return NULL;
}

dp_ctor *dp_module_ctor(const dp_module *m, const char *name) {
  if (!m || !name) return NULL;
  for (uint32_t i = 0; i < m->ntypedefs; i++)
    for (uint32_t j = 0; j < m->typedefs[i]->nctors; j++)
      if (strcmp(m->typedefs[i]->ctors[j]->name, name) == 0) return m->typedefs[i]->ctors[j];
  return NULL;
}

dp_primfn *dp_module_primfn(const dp_module *m, const char *name) {
  int i = m && name ? find_prim(m, name) : -1;
  return i < 0 ? NULL : m->prims[i];
}

int dp_module_func_index(const dp_module *m, const char *name) {
  return m && name ? find_func(m, name) : -1;
}
