/*
 * Types: the action that reads one type from its events, with an explicit
 * stack (a tuple of tuples of tuples nests as deep as the text).
 *
 * Events: Tensor, then its dimensions (numbers, `?`) and its dtype (an
 * identifier); `(` `)` of a tuple type, with its trailing `,` when it has
 * one (`(T,)` is a tuple, `(T)` is T); fn, its argument types, `->`, its
 * result type (complete with that one type: `fn () -> fn () -> T` chains);
 * Storage; ref up to its `)`; a type name (a type variable in scope, a
 * type definition, a dtype), with `]` closing its arguments when a `[`
 * follows it (List[A]). A function type's type parameters come as `[`,
 * their names, `]` after fn: each a fresh type variable, in scope up to the
 * end of that function type. `_` is a hole (dp_type_hole).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/suggest.h"
#include "internal.h"

enum { T_TENSOR = 1, T_TUPLE, T_FN, T_REF, T_ADT, T_TPARAMS };

static int open_tframe(dp_parser *p, int kind, uint32_t tok) {
  if (dp__grow(p, (void **)&p->frames, &p->capframes, p->nframes + 1, sizeof *p->frames, tok) != 0) return -1;
  /* (attrbase: where a T_TENSOR's dimensions start in p->avs; where a T_FN's
     `->` came, once comma says it did) */
  p->frames[p->nframes++] = (rframe){(uint8_t)kind, 0, tok, p->nvals, 0, p->navs, {NULL, 0, 0}, 0, 0};
  return 0;
}

static int push_type(dp_parser *p, dp_type *t, uint32_t tok) {
  return t ? dp__push_val(p, (dp_obj *)t, tok, 0) : dp__oom(p, tok);
}

/* The types on the stack from `from` (borrowed pointers, in a scratch array). */
static dp_type **types_from(dp_parser *p, uint32_t from, uint32_t m, dp_type **small) {
  dp_type **ts = m <= 8 ? small : dp_malloc(m * sizeof *ts);
  for (uint32_t i = 0; ts && i < m; i++) ts[i] = (dp_type *)p->vals[from + i].obj;
  return ts;
}

static int replace(dp_parser *p, uint32_t from, dp_type *t, uint32_t tok) {
  while (p->nvals > from) dp_release(p->vals[--p->nvals].obj);
  return push_type(p, t, tok);
}

/* A function type is complete with its one result type. */
static int complete_fns(dp_parser *p) {
  while (p->nframes && p->frames[p->nframes - 1].kind == T_FN) {
    rframe f = p->frames[p->nframes - 1];
    if (!f.comma || p->nvals != f.attrbase + 1) return 0;
    p->nframes--;
    dp_type *small[8], **items = types_from(p, f.base, f.attrbase - f.base, small);
    if (!items) return dp__oom(p, f.tok);
    dp_type *t = dp_type_func(p->ctx, f.ntp, items, f.attrbase - f.base - f.ntp, items + f.ntp,
                              (dp_type *)p->vals[p->nvals - 1].obj);
    if (items != small) free(items);
    if (f.ntp) dp__scope_unbind(&p->types, f.tmark);
    if (replace(p, f.base, t, f.tok) != 0) return -1;
  }
  return 0;
}

/* A type name: a type variable in scope, a type definition, a dtype. */
static dp_type *named(dp_parser *p, uint32_t tok) {
  size_t len;
  const char *text = dp__tok_text(p, tok, &len);
  int64_t slot = dp__scope_find(&p->types, text, len);
  const char *name = dp__cname(p, text, len);
  if (!name) return NULL;
  if (slot >= 0 && p->types.slots[slot].handle) return dp_retain(dp__obj(p, p->types.slots[slot].handle));
  if (slot >= 0 && p->types.slots[slot].block) return dp_type_adt(p->ctx, name, 0, NULL);
  dp_dtype dt = dp_dtype_parse(name);
  if (dt) return dp_type_tensor(p->ctx, dt, 0, NULL);
  char hint[DP_SUGGEST_HINT];
  dp__fail(p, DP_ERR_NAME, tok, "unknown type '%s'%s", name, dp__hint(p, HINT_TYPE, name, hint));
  return NULL;
}

static int close_tensor(dp_parser *p, rframe *f, uint32_t tok) {
  size_t len;
  const char *text = dp__tok_text(p, tok, &len);
  const char *name = dp__cname(p, text, len);
  dp_dtype dt = name ? dp_dtype_parse(name) : 0;
  if (!name) return dp__oom(p, tok);
  if (!dt) {
    char hint[DP_SUGGEST_HINT];
    return dp__fail(p, DP_ERR_NAME, tok, "unknown type '%s'%s", name, dp__hint_in(name, dp_dtype_suggest(name), hint));
  }
  uint32_t nd = p->navs - f->attrbase;
  int64_t small[8], *dims = nd <= 8 ? small : dp_malloc(nd * sizeof *dims);
  if (!dims) return dp__oom(p, tok);
  for (uint32_t i = 0; i < nd; i++) dims[i] = p->avs[f->attrbase + i].u.i;
  p->navs = f->attrbase;
  dp_type *t = dp_type_tensor(p->ctx, dt, nd, dims);
  if (dims != small) free(dims);
  return push_type(p, t, f->tok);
}

static int dimension(dp_parser *p, uint32_t tok) {
  int64_t d = DP_DIM_ANY;
  if (dp__kind(p, tok) == DP_TOK_NUMBER && dp__number_index(p, tok, INT64_MAX, "dimension", &d) != 0) return -1;
  if (dp__grow(p, (void **)&p->avs, &p->capavs, p->navs + 1, sizeof *p->avs, tok) != 0) return -1;
  p->avs[p->navs++] = dp_av_int(d);
  return 0;
}

/* `)` or `]`: the top frame closes. */
static int close_tframe(dp_parser *p, uint32_t tok) {
  rframe f = p->frames[--p->nframes];
  uint32_t m = p->nvals - f.base;
  dp_type *small[8], **ts = types_from(p, f.base, m, small), *t = NULL;
  if (!ts) return dp__oom(p, tok);
  if (f.kind == T_TUPLE) {
    t = m == 1 && !f.comma ? dp_retain(ts[0]) : dp_type_tuple(p->ctx, m, ts);
  } else if (f.kind == T_REF && m == 1) {
    t = dp_type_ref(p->ctx, ts[0]);
  } else if (f.kind == T_ADT) {
    size_t len;
    const char *text = dp__tok_text(p, f.tok, &len);
    const char *name = dp__cname(p, text, len);
    int64_t slot = dp__scope_find(&p->types, text, len);
    if (name && (slot < 0 || !p->types.slots[slot].block)) {
      char hint[DP_SUGGEST_HINT];
      if (ts != small) free(ts);
      return dp__fail(p, DP_ERR_NAME, f.tok, "unknown type '%s'%s", name, dp__hint(p, HINT_TYPE, name, hint));
    }
    t = name ? dp_type_adt(p->ctx, name, m, ts) : NULL;
  } else {
    if (ts != small) free(ts);
    return dp__fail(p, DP_ERR_GENERIC, tok, "parser: unbalanced type events");
  }
  if (ts != small) free(ts);
  return replace(p, f.base, t, f.tok);
}

/* `[` A, B `]` after fn: type variables, in scope up to the function type's end. */
static int tparam_event(dp_parser *p, rframe *top, uint32_t tok) {
  char k = dp__kind(p, tok);
  rframe *fn = &p->frames[p->nframes - 2];
  if (k == DP_TOK_RBRACK) {
    p->nframes--;
    fn->ntp = p->nvals - fn->base;
    return 0;
  }
  if (k != DP_TOK_IDENT) return dp__fail(p, DP_ERR_GENERIC, tok, "parser: unexpected type event '%c'", k);
  size_t len;
  const char *text = dp__tok_text(p, tok, &len);
  int64_t slot = dp__tok_slot(p, &p->types, tok);
  if (slot < 0) return -1;
  for (uint32_t i = top->base; i < p->nvals; i++) {
    const dp_type_var *v = (const dp_type_var *)p->vals[i].obj;
    if (strlen(v->name) == len && !memcmp(v->name, text, len))
      return dp__fail(p, DP_ERR_NAME, tok, "duplicate type parameter %.*s", (int)len, text);
  }
  const char *cn = dp__cname(p, text, len);
  dp_type *v = cn ? dp_type_var_new(p->ctx, cn) : NULL;
  if (!v || push_type(p, v, tok) != 0) return p->err ? -1 : dp__oom(p, tok);
  uint32_t h = dp__keep(p, dp_retain(v), NULL, tok);
  if (!h || dp__scope_bind(&p->types, (uint32_t)slot, h, 0) != 0) return p->err ? -1 : dp__oom(p, tok);
  return 0;
}

/* One event; 0, or -1 on error. */
static int type_event(dp_parser *p, int64_t e) {
  if (e < 0) return dp__fail(p, DP_ERR_GENERIC, 0, "parser: a value among type events");
  uint32_t tok = (uint32_t)e;
  char k = dp__kind(p, tok);
  rframe *top = p->nframes ? &p->frames[p->nframes - 1] : NULL;
  if (top && top->kind == T_TENSOR) {
    if (k == DP_TOK_IDENT) {
      rframe f = p->frames[--p->nframes];
      return close_tensor(p, &f, tok);
    }
    return dimension(p, tok);
  }
  if (top && top->kind == T_TPARAMS) return tparam_event(p, top, tok);
  switch (k) {
  case DP_TOK_TENSOR: return open_tframe(p, T_TENSOR, tok);
  case DP_TOK_LPAREN: return open_tframe(p, T_TUPLE, tok);
  case DP_TOK_FN: return open_tframe(p, T_FN, tok);
  case DP_TOK_REF: return open_tframe(p, T_REF, tok);
  case DP_TOK_COMMA: top->comma = 1; return 0;
  case DP_TOK_ARROW:
    top->comma = 1;
    top->attrbase = p->nvals;
    return 0;
  case DP_TOK_RPAREN: case DP_TOK_RBRACK: return close_tframe(p, tok);
  case DP_TOK_STORAGE: return push_type(p, dp_type_storage(p->ctx), tok);
  case DP_TOK_UNDERSCORE: return push_type(p, dp_type_hole(p->ctx), tok);
  case DP_TOK_LBRACK: /* fn [A, B]: the type parameters */
    if (!top || top->kind != T_FN || p->nvals != top->base)
      return dp__fail(p, DP_ERR_GENERIC, tok, "parser: unexpected type event '['");
    top->tmark = dp__scope_mark(&p->types);
    return open_tframe(p, T_TPARAMS, tok);
  case DP_TOK_IDENT:
    if (dp__kind(p, tok + 1) == DP_TOK_LBRACK) return open_tframe(p, T_ADT, tok);
    {
      dp_type *t = named(p, tok);
      if (!t) return p->err ? -1 : dp__oom(p, tok); /* named reports all but out of memory */
      return push_type(p, t, tok);
    }
  default: return dp__fail(p, DP_ERR_GENERIC, tok, "parser: unexpected type event '%c'", k);
  }
}

int64_t dp__act_type(dp_parser *p, const int64_t *ev, size_t n) {
  uint32_t frames = p->nframes, base = p->nvals;
  for (size_t i = 0; i < n; i++) {
    if (type_event(p, ev[i]) != 0) return -1;
    if (p->nvals > base && complete_fns(p) != 0) return -1;
  }
  if (p->nframes != frames || p->nvals != base + 1)
    return dp__fail(p, DP_ERR_GENERIC, n ? (uint32_t)ev[0] : 0, "parser: type events");
  rval v = p->vals[--p->nvals];
  return dp__keep(p, v.obj, NULL, v.tok) ? (int64_t)p->nobjs : -1;
}
