/*
 * Internals shared by the core's files (not installed, not for users):
 * the context's layout, the interning table, the object type table.
 */
#ifndef DEVPLAN_INTERNAL_H
#define DEVPLAN_INTERNAL_H

#include <stdarg.h>
#include "devplan/core.h"
#include "devplan/op.h"

/* An open-addressing set of interned objects keyed by their hash. Lookup
   takes an equality predicate against a probe key, so a caller can look up
   by fields without building the object first. */
typedef struct dp__itab {
  struct dp__islot { uint32_t hash; void *obj; } *slots; /* obj NULL: empty; ITAB_TOMB: removed */
  uint32_t cap, n, used;
} dp__itab;

typedef int (*dp__itab_eq)(const void *obj, const void *key);
void *dp__itab_find(const dp__itab *t, uint32_t hash, dp__itab_eq eq, const void *key);
int dp__itab_insert(dp__itab *t, uint32_t hash, void *obj);   /* 0, or -1 on out of memory */
void dp__itab_remove(dp__itab *t, uint32_t hash, const void *obj);
void dp__itab_free(dp__itab *t);

/* The object types (registry.c): the core's fixed ones, then those
   registered by dp_objtype_register. Indexed by dp_obj.type (8 bits). */
#define DP__OBJTYPE_MAX 256
typedef struct dp__objtype {
  const char *name;
  dp_free_fn free_fn; /* NULL: plain free() */
} dp__objtype;
extern dp__objtype dp__objtypes[DP__OBJTYPE_MAX];
/* The free function of each of the core's types, in its own file. */
void dp__ctx_free_fn(dp_obj *o, dp_worklist *wl);
void dp__target_free_fn(dp_obj *o, dp_worklist *wl);
void dp__vdev_free_fn(dp_obj *o, dp_worklist *wl);
void dp__config_free_fn(dp_obj *o, dp_worklist *wl);
void dp__type_free_fn(dp_obj *o, dp_worklist *wl);
void dp__expr_free_fn(dp_obj *o, dp_worklist *wl);
void dp__pattern_free_fn(dp_obj *o, dp_worklist *wl);
void dp__attrs_free_fn(dp_obj *o, dp_worklist *wl);
void dp__typedef_free_fn(dp_obj *o, dp_worklist *wl);
void dp__primfn_free_fn(dp_obj *o, dp_worklist *wl);
void dp__module_free_fn(dp_obj *o, dp_worklist *wl);

/* Frees an op node whose last reference went (called by the expression
   free function, expr.c, after it released e.type): the op's own fields
   (name, schema, ud via ud_free) and the node. */
void dp__op_free(dp_op *op);

/* dp_err_new with a va_list and the span's source name (copied; NULL:
   none), for dp_err_at (error.c). Never NULL. */
dp_err *dp__err_v(dp_errcode code, dp_span span, const char *source, const char *fmt, va_list ap);
/* dp_err_at with a va_list (context.c), for the core's and the parser's own
   printf-like error functions. */
dp_err *dp__err_vat(dp_ctx *ctx, dp_errcode code, dp_span span, const char *fmt, va_list ap);

/* dp_infer_module; scopes_known: the caller knows every variable is read
   inside the scope of its binder (the parser, which resolves names by
   scope, says when), so the scope check (dp_check_scopes) is not run. */
struct dp_module;
int dp__infer_module(struct dp_module *m, int scopes_known, dp_err **err);

uint32_t dp__hash_bytes(uint32_t h, const void *p, size_t n);
uint32_t dp__hash_string(uint32_t h, const char *s);
uint32_t dp__hash_u64(uint32_t h, uint64_t v);

struct dp_ctx {
  dp_obj h;
  dp__itab targets;          /* interned dp_target (not retained by the table) */
  dp__itab vdevs;            /* interned dp_vdev */
  dp__itab types;            /* interned dp_type */
  char **sources;           /* source names; id = index + 1 */
  uint32_t nsources, capsources;
  uint32_t *srcslots;       /* hash index of sources: id, or 0 empty (capsrcslots a power of 2) */
  uint32_t capsrcslots;
  dp_op **ops;              /* registry, registration order (retained) */
  uint32_t nops, capops;
  dp__itab opnames;          /* name -> op */
  uint64_t next_tvar_id;
  struct dp__kind **kinds;  /* target kinds registered (dp_target_kind_register), owned */
  uint32_t nkinds, capkinds;
};

/* Frees the target kinds registered in ctx (target_kinds.c). */
void dp__kinds_free(dp_ctx *ctx);

/* Memory pages (alloc.c): the system's page size, and the size of a
   transparent huge page (0 where there are none; read once). */
size_t dp__page_size(void);
size_t dp__huge_page_size(void);
/* 1 in the sanitizer build (its allocator keeps its own blocks' books). */
#if defined(__SANITIZE_ADDRESS__)
#define DP__SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DP__SANITIZED 1
#endif
#endif
#ifndef DP__SANITIZED
#define DP__SANITIZED 0
#endif
/* n bytes (a multiple of the huge page size) mapped on their own on a
   huge page boundary and asked to be backed by huge pages; freed by
   dp__unmap_huge(p, n). NULL with *oom 0 where that cannot be (no huge
   pages, the sanitizer build; the caller mallocs instead), with *oom 1 on
   an injected failure (DEVPLAN_FAIL_ALLOC). */
void *dp__map_huge(size_t n, int *oom);
void dp__unmap_huge(void *p, size_t n);

#endif
