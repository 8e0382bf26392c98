/*
 * Structural hash of an expression, consistent with dp_expr_equal:
 * variables hash by the order in which a walk first meets them (so
 * alpha-equivalent expressions hash alike), each distinct node is hashed
 * once (a DAG and its tree form hash alike), and only what equality
 * compares goes in. Types contribute their kind (tensor types, which have
 * no type variables and are interned, their pointer); attributes their
 * keys, order-free. Explicit stack: safe at any depth.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "print_internal.h"

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

static uint64_t type_hash(const dp_type *t) {
  if (!t) return 0;
  if (t->h.kind == DP_TY_TENSOR) return (uint64_t)(uintptr_t)t;
  return t->h.kind;
}

static uint64_t attrs_hash(const dp_attrs *a) {
  uint64_t h = 0;
  for (uint32_t i = 0; a && i < a->n; i++) h += dp__hash_string(0, a->items[i].key);
  return h;
}

typedef struct hasher {
  dp__ptrmap memo;  /* node -> hash */
  uint64_t nvars;
  int oom;
} hasher;

static uint64_t child_hash(hasher *s, const dp_expr *c) {
  dp__ptrslot *v = c ? dp__ptrmap_find(&s->memo, c) : NULL;
  return v ? v->word : 0;
}

/* The node's own hash, its children being hashed already. */
static uint64_t own_hash(hasher *s, const dp_expr *e) {
  uint64_t h = mix(0, e->h.kind);
  switch (e->h.kind) {
  case DP_VAR: {
    const dp_var *v = (const dp_var *)e;
    return mix(mix(h, s->nvars++), type_hash(dp_var_annot(v)));
  }
  case DP_GLOBAL: return mix(h, dp__hash_string(0, ((const dp_global *)e)->name));
  case DP_CTOR: return mix(h, dp__hash_string(0, ((const dp_ctor *)e)->name));
  case DP_OP: return mix(h, (uint64_t)(uintptr_t)e);
  case DP_CONST: {
    const dp_const *c = (const dp_const *)e;
    h = mix(mix(h, c->dtype), c->ndim);
    h = mix(h, dp__hash_bytes(0, c->shape, c->ndim * sizeof *c->shape));
    return mix(h, dp__hash_bytes(0, c->data, c->nbytes));
  }
  case DP_CALL: h = mix(h, attrs_hash(((const dp_call *)e)->attrs)); break;
  case DP_FUNC: {
    const dp_func *f = (const dp_func *)e;
    h = mix(mix(h, attrs_hash(f->attrs)), type_hash(f->ret));
    break;
  }
  case DP_PROJ: h = mix(h, ((const dp_proj *)e)->index); break;
  case DP_MATCH: h = mix(h, ((const dp_match *)e)->complete); break;
  default: break;
  }
  uint32_t n = dp_expr_nchildren(e);
  h = mix(h, n);
  for (uint32_t i = 0; i < n; i++) h = mix(h, child_hash(s, dp_expr_child(e, i)));
  return h;
}

uint64_t dp_expr_hash(const dp_expr *e) {
  struct fr { const dp_expr *e; uint32_t k; } *st = NULL;
  uint32_t n = 0, cap = 0;
  hasher s = {.nvars = 0};
  uint64_t out = 0;
  s.memo = DP__PTRMAP_INIT;
  if (!(st = dp_malloc(16 * sizeof *st))) return 0;
  cap = 16;
  st[n++] = (struct fr){e, 0};
  while (n && !s.oom) {
    struct fr *f = &st[n - 1];
    if (f->k < dp_expr_nchildren(f->e)) {
      const dp_expr *c = dp_expr_child(f->e, f->k++);
      if (!c || dp__ptrmap_find(&s.memo, c)) continue;
      if (n == cap) {
        void *p = dp_realloc(st, 2 * cap * sizeof *st);
        if (!p) { s.oom = 1; break; }
        st = p;
        cap *= 2;
      }
      st[n++] = (struct fr){c, 0};
      continue;
    }
    uint64_t h = own_hash(&s, f->e);
    dp__ptrslot *slot = dp__ptrmap_insert(&s.memo, f->e, NULL);
    if (slot) slot->word = h;
    else s.oom = 1;
    if (--n == 0) out = h;
  }
  free(st);
  dp__ptrmap_free(&s.memo);
  return out;
}
