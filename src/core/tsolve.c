/*
 * The type solver of inference: unknowns are type variables made here and
 * recorded in `vars`; binding one to a type is union-find (find follows the
 * chain). Unification works on an explicit stack of pairs, resolution
 * (a type rebuilt with its unknowns substituted) on an explicit stack of
 * types: types nest as deep as the text does.
 */
#include <stdlib.h>
#include <string.h>
#include "tsolve.h"

void dp__ts_init(dp__tsolver *s, dp_ctx *ctx) {
  memset(s, 0, sizeof *s);
  s->ctx = ctx;
}

void dp__ts_free(dp__tsolver *s) {
  for (uint32_t i = 0; i < s->vars.cap; i++)
    if (s->vars.slots[i].key) dp_release(s->vars.slots[i].ptr);
  dp__ptrmap_free(&s->vars);
  for (uint32_t i = 0; i < s->resolved.cap; i++) {
    if (!s->resolved.slots[i].key) continue;
    dp_release((dp_type *)s->resolved.slots[i].key);
    dp_release((dp_type *)(s->resolved.slots[i].word & ~(uint64_t)1));
  }
  dp__ptrmap_free(&s->resolved);
  for (uint32_t i = 0; i < s->nkeep; i++) dp_release(s->keep[i]);
  free(s->keep);
  free(s->bound);
  memset(s, 0, sizeof *s);
}

dp_type *dp__ts_keep(dp__tsolver *s, dp_type *t) {
  if (!t) return NULL;
  if (s->nkeep == s->capkeep) {
    uint32_t cap = s->capkeep ? s->capkeep * 2 : 256;
    dp_type **k = dp_realloc(s->keep, cap * sizeof *k);
    if (!k) {
      dp_release(t);
      return NULL;
    }
    s->keep = k;
    s->capkeep = cap;
  }
  s->keep[s->nkeep++] = t;
  return t;
}

dp_type *dp__ts_fresh(dp__tsolver *s) {
  dp_type *v = dp__ts_keep(s, dp_type_var_new(s->ctx, "?"));
  if (v && !dp__ptrmap_insert(&s->vars, v, NULL)) return NULL;
  return v;
}

int dp__ts_is_unknown(const dp__tsolver *s, const dp_type *t) {
  return t && t->h.kind == DP_TY_VAR && dp__ptrmap_find(&s->vars, t) != NULL;
}

dp_type *dp__ts_find(dp__tsolver *s, dp_type *t) {
  while (t && t->h.kind == DP_TY_VAR) {
    dp__ptrslot *slot = dp__ptrmap_find(&s->vars, t);
    if (!slot || !slot->ptr) return t;
    t = slot->ptr;
  }
  return t;
}

/* ---------------- unification ---------------- */

/* A stack of type pairs; starts in `local`, so most unifications allocate
   nothing. */
typedef struct pairs {
  dp_type **a;
  uint32_t n, cap;
  dp_type *local[32];
} pairs;

static void pairs_init(pairs *p) {
  p->a = p->local;
  p->n = 0;
  p->cap = 32;
}

static void pairs_free(pairs *p) {
  if (p->a != p->local) free(p->a);
}

static int push2(pairs *p, dp_type *x, dp_type *y) {
  if (p->n + 2 > p->cap) {
    uint32_t cap = p->cap * 2;
    dp_type **a = p->a == p->local ? dp_malloc(cap * sizeof *a) : dp_realloc(p->a, cap * sizeof *a);
    if (!a) return -1;
    if (p->a == p->local) memcpy(a, p->local, p->n * sizeof *a);
    p->a = a;
    p->cap = cap;
  }
  p->a[p->n++] = x;
  p->a[p->n++] = y;
  return 0;
}

/* The direct component types of t (borrowed pointers into t). */
static uint32_t components(dp_type *t, dp_type *const **out) {
  switch (t->h.kind) {
  case DP_TY_TUPLE: *out = ((dp_tuple_type *)t)->fields; return ((dp_tuple_type *)t)->n;
  case DP_TY_ADT: *out = ((dp_adt_type *)t)->args; return ((dp_adt_type *)t)->nargs;
  case DP_TY_REF: *out = &((dp_ref_type *)t)->elem; return 1;
  case DP_TY_FUNC: {
    dp_func_type *f = (dp_func_type *)t;
    *out = f->items + f->ntparams;
    return f->nargs;
  }
  default: *out = NULL; return 0;
  }
}

/* Does unknown v occur in t? (an infinite type otherwise) */
static int occurs(dp__tsolver *s, dp_type *v, dp_type *t) {
  pairs st;
  int found = 0;
  pairs_init(&st);
  if (push2(&st, t, NULL) < 0) return 1;
  while (st.n && !found) {
    st.n -= 2;
    dp_type *x = dp__ts_find(s, st.a[st.n]);
    if (x == v) { found = 1; break; }
    dp_type *const *kids;
    uint32_t n = components(x, &kids);
    for (uint32_t i = 0; i < n && !found; i++)
      if (push2(&st, kids[i], NULL) < 0) found = 1;
    if (x->h.kind == DP_TY_FUNC && push2(&st, ((dp_func_type *)x)->ret, NULL) < 0) found = 1;
  }
  pairs_free(&st);
  return found;
}

static int tensors_agree(const dp_tensor_type *a, const dp_tensor_type *b) {
  if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
  for (uint32_t i = 0; i < a->ndim; i++)
    if (a->dims[i] != b->dims[i] && a->dims[i] != DP_DIM_ANY && b->dims[i] != DP_DIM_ANY) return 0;
  return 1;
}

/* Shapes of x and y agree at the top: push their components. */
static int step(pairs *st, dp_type *x, dp_type *y) {
  if (x->h.kind != y->h.kind) return 0;
  switch (x->h.kind) {
  case DP_TY_TENSOR: return tensors_agree((dp_tensor_type *)x, (dp_tensor_type *)y);
  case DP_TY_STORAGE: return 1;
  case DP_TY_VAR: return 0; /* two different rigid variables */
  case DP_TY_ADT:
    if (strcmp(((dp_adt_type *)x)->name, ((dp_adt_type *)y)->name) != 0) return 0;
    break;
  case DP_TY_FUNC: {
    dp_func_type *f = (dp_func_type *)x, *g = (dp_func_type *)y;
    if (f->ntparams != g->ntparams) return 0;
    for (uint32_t i = 0; i < f->ntparams; i++)
      if (f->items[i] != g->items[i]) return 0;
    if (push2(st, f->ret, g->ret) < 0) return -1;
    break;
  }
  default: break;
  }
  dp_type *const *kx, *const *ky;
  uint32_t nx = components(x, &kx), ny = components(y, &ky);
  if (nx != ny) return 0;
  for (uint32_t i = 0; i < nx; i++)
    if (push2(st, kx[i], ky[i]) < 0) return -1;
  return 1;
}

static int bind(dp__tsolver *s, dp_type *v, dp_type *t) {
  if (occurs(s, v, t)) return 0;
  if (dp_grow((void **)&s->bound, &s->capbound, s->nbound + 1, sizeof *s->bound) < 0) return -1;
  dp__ptrslot *slot = dp__ptrmap_insert(&s->vars, v, NULL);
  if (!slot) return -1;
  slot->ptr = dp_retain(t);
  s->bound[s->nbound++] = v;
  return 1;
}

static void mismatch(dp__tsolver *s, dp_type *a, dp_type *b, dp_type *x, dp_type *y, int infinite,
                     dp_err **err) {
  int ca = 1, cb = 1;
  dp_type *ra = dp__ts_resolve(s, a, &ca, NULL), *rb = dp__ts_resolve(s, b, &cb, NULL);
  char *sa = ra ? dp_type_str(ra) : NULL, *sb = rb ? dp_type_str(rb) : NULL;
  dp_err *e = dp_err_new(DP_ERR_TYPE, DP_NOSPAN, "%s %s and %s",
                         infinite ? "infinite type unifying" : "type mismatch:", sa ? sa : "?",
                         sb ? sb : "?");
  if (x != a || y != b) {
    char *sx = dp_type_str(x), *sy = dp_type_str(y);
    dp_err_note(e, DP_NOSPAN, "%s differs from %s", sx ? sx : "?", sy ? sy : "?");
    free(sx);
    free(sy);
  }
  free(sa);
  free(sb);
  dp_release(ra);
  dp_release(rb);
  dp_err_set(err, e);
}

int dp__ts_unify(dp__tsolver *s, dp_type *a, dp_type *b, dp_err **err) {
  if (a == b) return 0; /* types are interned: the common case of let chains */
  pairs st;
  pairs_init(&st);
  int ok = push2(&st, a, b) == 0 ? 1 : -1;
  dp_type *x = a, *y = b;
  int infinite = 0;
  while (ok == 1 && st.n) {
    st.n -= 2;
    x = dp__ts_find(s, st.a[st.n]);
    y = dp__ts_find(s, st.a[st.n + 1]);
    if (x == y) continue;
    if (dp__ts_is_unknown(s, x)) infinite = !(ok = bind(s, x, y));
    else if (dp__ts_is_unknown(s, y)) infinite = !(ok = bind(s, y, x));
    else ok = step(&st, x, y);
  }
  pairs_free(&st);
  if (ok == 1) return 0;
  if (ok < 0) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  else mismatch(s, a, b, x, y, infinite, err);
  return -1;
}

/* ---------------- resolution and instantiation ---------------- */

typedef struct mapper {
  dp__tsolver *s;
  int *complete;
  uint32_t unbound;         /* resolution: unbound unknowns met so far */
  uint32_t n;               /* instantiation: rigid from[i] -> to[i] */
  dp_type *const *from, *const *to;
  int holes;                /* filling: each hole (dp_type_hole) a fresh unknown */
} mapper;

/* Rebuild t from mapped components (kids[0..n) then ret for functions). */
static dp_type *rebuild(mapper *m, dp_type *t, dp_type **kids, uint32_t n, dp_type *ret) {
  dp_ctx *ctx = m->s->ctx;
  switch (t->h.kind) {
  case DP_TY_TUPLE: return dp_type_tuple(ctx, n, kids);
  case DP_TY_ADT: return dp_type_adt(ctx, ((dp_adt_type *)t)->name, n, kids);
  case DP_TY_REF: return dp_type_ref(ctx, kids[0]);
  case DP_TY_FUNC: {
    dp_func_type *f = (dp_func_type *)t;
    return dp_type_func(ctx, f->ntparams, f->items, n, kids, ret);
  }
  default: return dp_retain(t);
  }
}

/* A leaf's image (a new reference), or NULL when t has components to map
   first; *t follows a bound unknown to its binding. */
static dp_type *map_leaf(mapper *m, dp_type **t) {
  for (;;) {
    dp_type *x = *t;
    if (x->h.kind == DP_TY_TENSOR || x->h.kind == DP_TY_STORAGE) return dp_retain(x);
    if (m->holes && !(x->h.flags & DP_TYPE_HOLE)) return dp_retain(x); /* nothing to fill */
    if (x->h.kind != DP_TY_VAR) return NULL;
    if (m->holes) return dp_retain(dp__ts_fresh(m->s));
    for (uint32_t i = 0; i < m->n; i++)
      if (m->from[i] == x) return dp_retain(m->to[i]);
    if (!m->complete) return dp_retain(x);
    dp_type *b = dp__ts_find(m->s, x);
    if (b == x) {
      if (dp__ts_is_unknown(m->s, x)) {
        *m->complete = 0;
        if (!m->unbound++) m->s->blocker = x;
      }
      return dp_retain(x);
    }
    *t = b;
  }
}

/* One type being mapped: its components' images gather on the value
   stack from `base`; `unbound` is the mapper's count when it started. */
typedef struct mframe {
  dp_type *t;
  uint32_t next, n, base, unbound;
} mframe;

/* Resolving in a frozen solver: t's remembered image (a new reference),
   or NULL. */
static dp_type *remembered(mapper *m, dp_type *t) {
  if (!m->complete || !m->s->frozen || !m->s->resolved.n) return NULL;
  dp__ptrslot *slot = dp__ptrmap_find(&m->s->resolved, t);
  if (!slot) return NULL;
  if (slot->word & 1) { /* (frozen: nothing waits for a blocker) */
    *m->complete = 0;
    m->unbound++;
  }
  return dp_retain((dp_type *)(slot->word & ~(uint64_t)1));
}

/* Resolving in a frozen solver: remember t -> img (nothing on out of
   memory: it is only a shortcut). */
static void remember(mapper *m, dp_type *t, dp_type *img, int unbound) {
  if (!m->complete || !m->s->frozen) return;
  int fresh;
  dp__ptrslot *slot = dp__ptrmap_insert(&m->s->resolved, t, &fresh);
  if (!slot || !fresh) return;
  slot->word = (uint64_t)(uintptr_t)dp_retain(img) | (unbound ? 1u : 0u);
  dp_retain(t);
}

/* The image of t (a new reference): an explicit stack, so a type nests as
   deep as the parser reads it (types are DAGs of interned nodes; a shared
   part is mapped once per occurrence, as it is written). */
static dp_type *map_type(mapper *m, dp_type *t, dp_err **err) {
  mframe *fs = NULL;
  dp_type **vals = NULL;
  uint32_t nf = 0, capf = 0, nv = 0, capv = 0;
  dp_type *res = NULL;
  int ok = dp_grow((void **)&fs, &capf, 1, sizeof *fs) == 0;
  if (ok) fs[nf++] = (mframe){t, 0, UINT32_MAX, 0, 0};
  while (ok && nf) {
    mframe *f = &fs[nf - 1];
    dp_type *img = NULL;
    if (f->n == UINT32_MAX) { /* first visit */
      if (!(img = map_leaf(m, &f->t)) && !(img = remembered(m, f->t))) {
        f->unbound = m->unbound;
        dp_type *const *kids;
        f->n = components(f->t, &kids) + (f->t->h.kind == DP_TY_FUNC);
        f->base = nv;
      }
    }
    if (!img && f->next < f->n) {
      dp_type *const *kids;
      uint32_t nk = components(f->t, &kids), k = f->next++;
      dp_type *c = k < nk ? kids[k] : ((dp_func_type *)f->t)->ret;
      if (!(ok = dp_grow((void **)&fs, &capf, nf + 1, sizeof *fs) == 0)) break;
      fs[nf++] = (mframe){c, 0, UINT32_MAX, 0, 0};
      continue;
    }
    if (!img) { /* its components are mapped: the same type when none changed */
      dp_type *const *kids;
      uint32_t nk = components(f->t, &kids), same = 1;
      dp_type *ret = f->t->h.kind == DP_TY_FUNC ? vals[f->base + nk] : NULL;
      for (uint32_t i = 0; i < nk; i++) same = same && vals[f->base + i] == kids[i];
      same = same && (!ret || ret == ((dp_func_type *)f->t)->ret);
      img = same ? dp_retain(f->t) : rebuild(m, f->t, vals + f->base, nk, ret);
      while (nv > f->base) dp_release(vals[--nv]);
      if (!(ok = img != NULL)) break;
      remember(m, f->t, img, m->unbound != f->unbound);
    }
    nf--;
    if (!(ok = dp_grow((void **)&vals, &capv, nv + 1, sizeof *vals) == 0)) {
      dp_release(img);
      break;
    }
    vals[nv++] = img;
  }
  if (ok && nv == 1) res = vals[--nv];
  while (nv) dp_release(vals[--nv]);
  free(vals);
  free(fs);
  if (!res) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return res;
}

void dp__ts_freeze(dp__tsolver *s) { s->frozen = 1; }

dp_type *dp__ts_resolve(dp__tsolver *s, dp_type *t, int *complete, dp_err **err) {
  mapper m = {s, complete, 0, 0, NULL, NULL, 0};
  s->blocker = NULL;
  return map_type(&m, t, err);
}

dp_type *dp__ts_instantiate(dp__tsolver *s, dp_type *t, uint32_t n, dp_type *const *from,
                            dp_type *const *to, dp_err **err) {
  mapper m = {s, NULL, 0, n, from, to, 0};
  return map_type(&m, t, err);
}

dp_type *dp__ts_fill_holes(dp__tsolver *s, dp_type *t, dp_err **err) {
  if (!(t->h.flags & DP_TYPE_HOLE)) return dp_retain(t);
  mapper m = {s, NULL, 0, 0, NULL, NULL, 1};
  return map_type(&m, t, err);
}
