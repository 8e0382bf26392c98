/*
 * Types: data types (parse/print/size) and the interned type nodes.
 *
 * Every type but a type variable is hash-consed in ctx->types: a
 * constructor first looks the fields up (by a probe key, without
 * allocating) and returns the existing node when there is one, so pointer
 * equality is structural equality. Children are interned already, so a
 * node's hash combines its children's pointers and never recurses.
 * A type retains its context and its children and leaves the table when
 * freed. Type variables are fresh objects identified by a context-unique id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "devplan/suggest.h"
#include "textbuf.h"
#include "devplan/type.h"

/* ---------------- data types ---------------- */

static const struct { const char *prefix; int code; int dflt_bits; } dt_prefixes[] = {
  {"bfloat", DP_DT_BFLOAT, 16}, {"float", DP_DT_FLOAT, 32}, {"uint", DP_DT_UINT, 32},
  {"int", DP_DT_INT, 32}, {"bool", DP_DT_BOOL, 1},
};

/* Parses decimal digits at *p into *out (1..max); advances *p. */
static int parse_num(const char **p, long max, long *out) {
  const char *s = *p;
  long v = 0;
  if (*s < '0' || *s > '9') return -1;
  while (*s >= '0' && *s <= '9') {
    v = v * 10 + (*s++ - '0');
    if (v > max) return -1;
  }
  if (v < 1) return -1;
  *p = s;
  *out = v;
  return 0;
}

dp_dtype dp_dtype_parse(const char *s) {
  if (!s) return 0;
  for (size_t i = 0; i < sizeof dt_prefixes / sizeof dt_prefixes[0]; i++) {
    size_t len = strlen(dt_prefixes[i].prefix);
    if (strncmp(s, dt_prefixes[i].prefix, len) != 0) continue;
    const char *p = s + len;
    long bits = dt_prefixes[i].dflt_bits, lanes = 1;
    int code = dt_prefixes[i].code;
    if (code != DP_DT_BOOL && *p >= '0' && *p <= '9' && parse_num(&p, 64, &bits) < 0) return 0;
    if (code == DP_DT_BFLOAT && bits != 16) return 0;
    if (*p == 'x') {
      p++;
      if (parse_num(&p, 65535, &lanes) < 0) return 0;
    }
    if (*p) return 0;
    return DP_DTYPE(code, bits, lanes);
  }
  return 0;
}

static const char *const dtype_names[] = {
  "float32", "float16", "float64", "bfloat16", "int8", "int16", "int32", "int64",
  "uint8", "uint16", "uint32", "uint64", "bool",
};

const char *dp_dtype_suggest(const char *name) {
  return dp_suggest_in(name, dtype_names, sizeof dtype_names / sizeof dtype_names[0]);
}

const char *dp_dtype_name(dp_dtype d, char *buf) {
  static const char *names[] = {"int", "uint", "float", "bool", "bfloat"};
  int code = DP_DTYPE_CODE(d);
  if (d == 0 || code > DP_DT_BFLOAT) {
    strcpy(buf, "?");
    return buf;
  }
  int n;
  if (code == DP_DT_BOOL) n = sprintf(buf, "bool");
  else n = sprintf(buf, "%s%d", names[code], DP_DTYPE_BITS(d));
  if (DP_DTYPE_LANES(d) > 1) sprintf(buf + n, "x%d", DP_DTYPE_LANES(d));
  return buf;
}

size_t dp_dtype_bytes(dp_dtype d) {
  size_t lanes = (size_t)DP_DTYPE_LANES(d);
  if (DP_DTYPE_CODE(d) == DP_DT_BOOL) return lanes;
  return (size_t)((DP_DTYPE_BITS(d) + 7) / 8) * lanes;
}

/* ---------------- sizes ---------------- */

/* Bytes of a tensor type, or -1 (unknown) / -2 (too large). */
static int64_t tensor_bytes(const dp_tensor_type *tt) {
  int64_t n = (int64_t)dp_dtype_bytes(tt->dtype);
  int large = 0;
  for (uint32_t i = 0; i < tt->ndim; i++) {
    int64_t d = tt->dims[i];
    if (d < 0) return -1;
    if (d == 0) return 0; /* (an empty tensor, however large the rest) */
    if (n > INT64_MAX / d) large = 1;
    else n *= d;
  }
  return large ? -2 : n;
}

int dp_type_bytes(const dp_type *t, int64_t *bytes) {
  *bytes = 0;
  if (!t) return DP_BYTES_UNKNOWN;
  dp_type *small[16], **stack = small;
  uint32_t n = 0, cap = 16;
  int rc = DP_BYTES_KNOWN;
  stack[n++] = (dp_type *)t;
  while (n > 0) {
    const dp_type *x = stack[--n];
    if (x->h.kind == DP_TY_TENSOR) {
      int64_t b = tensor_bytes((const dp_tensor_type *)x);
      if (b == -1) {
        rc = DP_BYTES_UNKNOWN;
        break;
      }
      if (b == -2 || *bytes > INT64_MAX - b) rc = DP_BYTES_TOO_LARGE; /* (an unknown one may follow) */
      else *bytes += b;
    } else if (x->h.kind == DP_TY_TUPLE) {
      const dp_tuple_type *tt = (const dp_tuple_type *)x;
      if (n + tt->n > cap) {
        uint32_t want = n + tt->n;
        dp_type **bigger = NULL;
        uint32_t c = 0;
        if (stack == small) {
          if (dp_grow((void **)&bigger, &c, want, sizeof *bigger) == 0) memcpy(bigger, small, n * sizeof *small);
        } else {
          bigger = stack;
          c = cap;
          if (dp_grow((void **)&bigger, &c, want, sizeof *bigger) < 0) bigger = NULL;
        }
        if (!bigger) {
          if (stack != small) free(stack);
          return -1;
        }
        stack = bigger;
        cap = c;
      }
      for (uint32_t i = tt->n; i-- > 0;) stack[n++] = tt->fields[i];
    }
  }
  if (stack != small) free(stack);
  if (rc != DP_BYTES_KNOWN) *bytes = 0;
  return rc;
}

/* ---------------- interning ---------------- */

/* The fields of a type to look up, before any node exists. */
typedef struct tkey {
  int kind;
  dp_dtype dtype;
  uint32_t n;              /* dims, fields, args (adt and func) */
  const int64_t *dims;
  dp_type *const *items;   /* fields / args / &elem */
  uint32_t ntp;            /* func type params */
  dp_type *const *tps;
  dp_type *ret;
  const char *name;        /* adt */
} tkey;

static uint32_t key_hash(const tkey *k) {
  uint32_t h = dp__hash_u64(0, (uint64_t)k->kind);
  h = dp__hash_u64(h, k->dtype);
  h = dp__hash_u64(h, k->n);
  if (k->dims) h = dp__hash_bytes(h, k->dims, k->n * sizeof *k->dims);
  if (k->items) h = dp__hash_bytes(h, k->items, k->n * sizeof *k->items);
  h = dp__hash_u64(h, k->ntp);
  if (k->tps) h = dp__hash_bytes(h, k->tps, k->ntp * sizeof *k->tps);
  h = dp__hash_u64(h, (uint64_t)(uintptr_t)k->ret);
  if (k->name) h = dp__hash_string(h, k->name);
  return h ? h : 1;
}

static int same_ptrs(dp_type *const *a, dp_type *const *b, uint32_t n) {
  return n == 0 || memcmp(a, b, n * sizeof *a) == 0;
}

static int key_eq(const void *obj, const void *key) {
  const dp_type *t = obj;
  const tkey *k = key;
  if (t->h.kind != k->kind) return 0;
  switch (k->kind) {
  case DP_TY_TENSOR: {
    const dp_tensor_type *tt = obj;
    return tt->dtype == k->dtype && tt->ndim == k->n &&
           (k->n == 0 || memcmp(tt->dims, k->dims, k->n * sizeof *k->dims) == 0);
  }
  case DP_TY_TUPLE: {
    const dp_tuple_type *tt = obj;
    return tt->n == k->n && same_ptrs(tt->fields, k->items, k->n);
  }
  case DP_TY_FUNC: {
    const dp_func_type *ft = obj;
    return ft->ret == k->ret && ft->ntparams == k->ntp && ft->nargs == k->n &&
           same_ptrs(ft->items, k->tps, k->ntp) && same_ptrs(ft->items + k->ntp, k->items, k->n);
  }
  case DP_TY_ADT: {
    const dp_adt_type *at = obj;
    return at->nargs == k->n && strcmp(at->name, k->name) == 0 &&
           same_ptrs(at->args, k->items, k->n);
  }
  case DP_TY_REF: return ((const dp_ref_type *)obj)->elem == k->items[0];
  case DP_TY_STORAGE: return 1;
  default: return 0;
  }
}

static void retain_all(dp_type *const *items, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) dp_retain(items[i]);
}

static int all_set(dp_type *const *items, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (!items[i]) return 0;
  return 1;
}

/* Node size and, for ADTs, the name copied behind the arguments. */
static size_t node_size(const tkey *k) {
  switch (k->kind) {
  case DP_TY_TENSOR: return sizeof(dp_tensor_type) + k->n * sizeof(int64_t);
  case DP_TY_TUPLE: return sizeof(dp_tuple_type) + k->n * sizeof(dp_type *);
  case DP_TY_FUNC: return sizeof(dp_func_type) + (k->ntp + k->n) * sizeof(dp_type *);
  case DP_TY_ADT: return sizeof(dp_adt_type) + k->n * sizeof(dp_type *) + strlen(k->name) + 1;
  case DP_TY_REF: return sizeof(dp_ref_type);
  default: return sizeof(dp_type);
  }
}

static void fill_node(dp_type *t, const tkey *k) {
  switch (k->kind) {
  case DP_TY_TENSOR: {
    dp_tensor_type *tt = (dp_tensor_type *)t;
    tt->dtype = k->dtype;
    tt->ndim = k->n;
    if (k->n) memcpy(tt->dims, k->dims, k->n * sizeof *k->dims);
    break;
  }
  case DP_TY_TUPLE: {
    dp_tuple_type *tt = (dp_tuple_type *)t;
    tt->n = k->n;
    if (k->n) memcpy(tt->fields, k->items, k->n * sizeof *k->items);
    retain_all(tt->fields, k->n);
    break;
  }
  case DP_TY_FUNC: {
    dp_func_type *ft = (dp_func_type *)t;
    ft->ret = dp_retain(k->ret);
    ft->ntparams = k->ntp;
    ft->nargs = k->n;
    if (k->ntp) memcpy(ft->items, k->tps, k->ntp * sizeof *k->tps);
    if (k->n) memcpy(ft->items + k->ntp, k->items, k->n * sizeof *k->items);
    retain_all(ft->items, k->ntp + k->n);
    break;
  }
  case DP_TY_ADT: {
    dp_adt_type *at = (dp_adt_type *)t;
    at->nargs = k->n;
    if (k->n) memcpy(at->args, k->items, k->n * sizeof *k->items);
    retain_all(at->args, k->n);
    at->name = (char *)(at->args + k->n);
    strcpy(at->name, k->name);
    break;
  }
  case DP_TY_REF: ((dp_ref_type *)t)->elem = dp_retain(k->items[0]); break;
  default: break;
  }
}

/* Whether a part of the type k describes is a hole (dp_type_hole). */
static int has_hole(const tkey *k) {
  if (k->ret && (k->ret->h.flags & DP_TYPE_HOLE)) return 1;
  if (k->kind == DP_TY_TENSOR) return 0;
  for (uint32_t i = 0; k->items && i < k->n; i++)
    if (k->items[i]->h.flags & DP_TYPE_HOLE) return 1;
  return 0;
}

static dp_type *intern(dp_ctx *ctx, const tkey *k) {
  if (!ctx) return NULL;
  uint32_t h = key_hash(k);
  dp_type *t = dp__itab_find(&ctx->types, h, key_eq, k);
  if (t) return dp_retain(t);
  t = dp_calloc(1, node_size(k));
  if (!t) return NULL;
  if (dp__itab_insert(&ctx->types, h, t) < 0) {
    free(t);
    return NULL;
  }
  t->h.rc = 1;
  t->h.type = DP_OBJ_TYPE;
  t->h.kind = (uint8_t)k->kind;
  t->hash = h;
  t->ctx = dp_retain(ctx);
  fill_node(t, k);
  t->h.flags = has_hole(k) ? DP_TYPE_HOLE : 0;
  return t;
}

dp_type *dp_type_tensor(dp_ctx *ctx, dp_dtype dtype, uint32_t ndim, const int64_t *dims) {
  if (dtype == 0 || (ndim && !dims)) return NULL;
  for (uint32_t i = 0; i < ndim; i++)
    if (dims[i] < DP_DIM_ANY) return NULL;
  tkey k = {.kind = DP_TY_TENSOR, .dtype = dtype, .n = ndim, .dims = ndim ? dims : NULL};
  return intern(ctx, &k);
}

dp_type *dp_type_tuple(dp_ctx *ctx, uint32_t n, dp_type *const *fields) {
  if (n && (!fields || !all_set(fields, n))) return NULL;
  tkey k = {.kind = DP_TY_TUPLE, .n = n, .items = n ? fields : NULL};
  return intern(ctx, &k);
}

dp_type *dp_type_func(dp_ctx *ctx, uint32_t ntparams, dp_type *const *tparams,
                      uint32_t nargs, dp_type *const *args, dp_type *ret) {
  if (!ret || (nargs && (!args || !all_set(args, nargs)))) return NULL;
  if (ntparams && (!tparams || !all_set(tparams, ntparams))) return NULL;
  for (uint32_t i = 0; i < ntparams; i++)
    if (tparams[i]->h.kind != DP_TY_VAR) return NULL;
  tkey k = {.kind = DP_TY_FUNC, .n = nargs, .items = nargs ? args : NULL, .ntp = ntparams,
            .tps = ntparams ? tparams : NULL, .ret = ret};
  return intern(ctx, &k);
}

dp_type *dp_type_adt(dp_ctx *ctx, const char *name, uint32_t nargs, dp_type *const *args) {
  if (!name || (nargs && (!args || !all_set(args, nargs)))) return NULL;
  tkey k = {.kind = DP_TY_ADT, .n = nargs, .items = nargs ? args : NULL, .name = name};
  return intern(ctx, &k);
}

dp_type *dp_type_ref(dp_ctx *ctx, dp_type *elem) {
  if (!elem) return NULL;
  tkey k = {.kind = DP_TY_REF, .n = 1, .items = &elem};
  return intern(ctx, &k);
}

dp_type *dp_type_storage(dp_ctx *ctx) {
  tkey k = {.kind = DP_TY_STORAGE};
  return intern(ctx, &k);
}

dp_type *dp_type_var_new(dp_ctx *ctx, const char *name) {
  if (!ctx) return NULL;
  if (!name) name = "t";
  size_t len = strlen(name);
  dp_type_var *v = dp_calloc(1, sizeof *v + len + 1);
  if (!v) return NULL;
  v->t.h.rc = 1;
  v->t.h.type = DP_OBJ_TYPE;
  v->t.h.kind = DP_TY_VAR;
  v->id = ctx->next_tvar_id++;
  v->t.hash = dp__hash_u64(0x7a11, v->id);
  v->t.ctx = dp_retain(ctx);
  memcpy(v->name, name, len + 1);
  return &v->t;
}

dp_type *dp_type_hole(dp_ctx *ctx) {
  dp_type *t = dp_type_var_new(ctx, "_");
  if (t) t->h.flags = DP_TYPE_HOLE;
  return t;
}

/* ---------------- freeing ---------------- */

static void release_all(dp_worklist *wl, dp_type **items, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) dp_release_deferred(wl, items[i]);
}

void dp__type_free_fn(dp_obj *o, dp_worklist *wl) {
  dp_type *t = (dp_type *)o;
  if (t->h.kind != DP_TY_VAR) dp__itab_remove(&t->ctx->types, t->hash, t);
  switch (t->h.kind) {
  case DP_TY_TUPLE: release_all(wl, ((dp_tuple_type *)t)->fields, ((dp_tuple_type *)t)->n); break;
  case DP_TY_FUNC: {
    dp_func_type *ft = (dp_func_type *)t;
    release_all(wl, ft->items, ft->ntparams + ft->nargs);
    dp_release_deferred(wl, ft->ret);
    break;
  }
  case DP_TY_ADT: release_all(wl, ((dp_adt_type *)t)->args, ((dp_adt_type *)t)->nargs); break;
  case DP_TY_REF: dp_release_deferred(wl, ((dp_ref_type *)t)->elem); break;
  default: break;
  }
  dp_release_deferred(wl, t->ctx);
  free(t);
}

/* ---------------- text ---------------- */

/* Number of child types printed in order, and the text around them:
   open before the first, sep before child i > 0 (or the func's "->"),
   close after the last. An explicit stack of (type, next child) keeps
   deeply nested types off the C stack. */
static uint32_t nkids(const dp_type *t) {
  switch (t->h.kind) {
  case DP_TY_TUPLE: return ((const dp_tuple_type *)t)->n;
  case DP_TY_FUNC: return ((const dp_func_type *)t)->nargs + 1;
  case DP_TY_ADT: return ((const dp_adt_type *)t)->nargs;
  case DP_TY_REF: return 1;
  default: return 0;
  }
}

static const dp_type *kid(const dp_type *t, uint32_t i) {
  switch (t->h.kind) {
  case DP_TY_TUPLE: return ((const dp_tuple_type *)t)->fields[i];
  case DP_TY_FUNC: {
    const dp_func_type *ft = (const dp_func_type *)t;
    return i < ft->nargs ? ft->items[ft->ntparams + i] : ft->ret;
  }
  case DP_TY_ADT: return ((const dp_adt_type *)t)->args[i];
  default: return ((const dp_ref_type *)t)->elem;
  }
}

static void put_leaf(dp__tb *b, const dp_type *t) {
  char buf[24];
  switch (t->h.kind) {
  case DP_TY_TENSOR: {
    const dp_tensor_type *tt = (const dp_tensor_type *)t;
    if (tt->ndim == 0) {
      dp__tb_puts(b, dp_dtype_name(tt->dtype, buf));
      return;
    }
    dp__tb_puts(b, "Tensor[(");
    for (uint32_t i = 0; i < tt->ndim; i++) {
      if (i) dp__tb_puts(b, ", ");
      if (tt->dims[i] == DP_DIM_ANY) dp__tb_putc(b, '?');
      else dp__tb_printf(b, "%lld", (long long)tt->dims[i]);
    }
    dp__tb_printf(b, "), %s]", dp_dtype_name(tt->dtype, buf));
    return;
  }
  case DP_TY_VAR: dp__tb_puts(b, ((const dp_type_var *)t)->name); return;
  case DP_TY_STORAGE: dp__tb_puts(b, "Storage[]"); return;
  case DP_TY_ADT: dp__tb_puts(b, ((const dp_adt_type *)t)->name); return;
  default: dp__tb_puts(b, "?"); return;
  }
}

static void put_open(dp__tb *b, const dp_type *t) {
  switch (t->h.kind) {
  case DP_TY_TUPLE: dp__tb_putc(b, '('); break;
  case DP_TY_FUNC: {
    const dp_func_type *ft = (const dp_func_type *)t;
    dp__tb_puts(b, "fn ");
    if (ft->ntparams) { /* as TVM prints it: fn [A, B](A) -> B */
      dp__tb_putc(b, '[');
      for (uint32_t i = 0; i < ft->ntparams; i++) {
        if (i) dp__tb_puts(b, ", ");
        put_leaf(b, ft->items[i]);
      }
      dp__tb_putc(b, ']');
    }
    dp__tb_putc(b, '(');
    break;
  }
  case DP_TY_ADT: dp__tb_puts(b, ((const dp_adt_type *)t)->name); dp__tb_putc(b, '['); break;
  case DP_TY_REF: dp__tb_puts(b, "ref("); break;
  }
}

static void put_sep(dp__tb *b, const dp_type *t, uint32_t i) {
  if (t->h.kind == DP_TY_FUNC && i == ((const dp_func_type *)t)->nargs) dp__tb_puts(b, ") -> ");
  else if (i > 0) dp__tb_puts(b, ", ");
}

static void put_close(dp__tb *b, const dp_type *t) {
  switch (t->h.kind) {
  case DP_TY_TUPLE: dp__tb_puts(b, ((const dp_tuple_type *)t)->n == 1 ? ",)" : ")"); break;
  case DP_TY_ADT: dp__tb_putc(b, ']'); break;
  case DP_TY_REF: dp__tb_putc(b, ')'); break;
  default: break;
  }
}

/* Leaves print at once; a tuple prints "()" even with no fields. */
static int is_leaf(const dp_type *t) {
  return t->h.kind != DP_TY_TUPLE && t->h.kind != DP_TY_FUNC && nkids(t) == 0;
}

char *dp_type_str(const dp_type *t) {
  struct frame { const dp_type *t; uint32_t i; } *stack = NULL;
  size_t n = 0, cap = 0;
  dp__tb b;
  dp__tb_init(&b);
  if (!t) return dp_strdup("?");
  const dp_type *next = t;
  for (;;) {
    if (next) {
      if (is_leaf(next)) {
        put_leaf(&b, next);
      } else {
        if (n == cap) {
          size_t c = cap ? cap * 2 : 16;
          struct frame *s = dp_realloc(stack, c * sizeof *s);
          if (!s) {
            free(stack);
            dp__tb_free(&b);
            return NULL;
          }
          stack = s;
          cap = c;
        }
        stack[n++] = (struct frame){next, 0};
        put_open(&b, next);
      }
      next = NULL;
    }
    if (n == 0) break;
    struct frame *f = &stack[n - 1];
    if (f->i < nkids(f->t)) {
      put_sep(&b, f->t, f->i);
      next = kid(f->t, f->i++);
    } else {
      put_close(&b, f->t);
      n--;
    }
  }
  free(stack);
  return dp__tb_take(&b);
}
