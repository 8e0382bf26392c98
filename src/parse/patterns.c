/*
 * Patterns of match clauses, read from their events with an explicit
 * stack: `_`; a variable (a type after it when annotated); a constructor,
 * alone or with its `(` (one token, CALLEE) and sub-patterns up to `)`; a
 * tuple `(` ... `)`. The variables a pattern binds are left in p->params for the
 * clause to bring into scope.
 */
#include <stdlib.h>
#include <string.h>
#include "devplan/suggest.h"
#include "internal.h"

enum { P_CTOR = 1, P_TUPLE };

static int push_pat(dp_parser *p, dp_pattern *pat, uint32_t tok) {
  return pat ? dp__push_val(p, (dp_obj *)pat, tok, 0) : dp__oom(p, tok);
}

static dp_ctor *ctor_named(dp_parser *p, uint32_t tok) {
  size_t len;
  const char *name = dp__tok_text(p, tok, &len);
  uint32_t h = dp__scope_get(&p->names, name, len);
  dp_obj *o = h ? dp__obj(p, h) : NULL;
  if (!o || o->type != DP_OBJ_EXPR || o->kind != DP_CTOR) {
    char hint[DP_SUGGEST_HINT];
    const char *cn = dp__cname(p, name, len);
    dp__fail(p, DP_ERR_NAME, tok, "unknown constructor '%.*s'%s", (int)len, name,
             cn ? dp__hint(p, HINT_CTOR, cn, hint) : "");
    return NULL;
  }
  return (dp_ctor *)o;
}

/* A constructor pattern of the top m patterns (or a tuple when c is NULL). */
static int close_pat(dp_parser *p, dp_ctor *c, uint32_t from, uint32_t tok) {
  uint32_t m = p->nvals - from;
  if (c && c->ninputs != m)
    return dp__fail(p, DP_ERR_TYPE, tok, "constructor '%s' takes %u argument%s, %u given", c->name,
                    c->ninputs, c->ninputs == 1 ? "" : "s", m);
  dp_pattern *small[8], **subs = m <= 8 ? small : dp_malloc(m * sizeof *subs);
  if (!subs) return dp__oom(p, tok);
  for (uint32_t i = 0; i < m; i++) subs[i] = (dp_pattern *)p->vals[from + i].obj;
  dp_pattern *pat = c ? dp_pat_ctor(c, m, subs, dp__span(p, tok)) : dp_pat_tuple(m, subs, dp__span(p, tok));
  if (subs != small) free(subs);
  while (p->nvals > from) dp_release(p->vals[--p->nvals].obj);
  return push_pat(p, pat, tok);
}

static int pattern_var(dp_parser *p, uint32_t tok, dp_type *annot) {
  size_t len;
  const char *name = dp__tok_text(p, tok, &len);
  const char *cn = dp__cname(p, name + 1, len - 1);
  uint32_t h = cn ? dp__keep(p, dp_var_new(cn, annot, NULL, dp__span(p, tok)), NULL, tok) : 0;
  if (!h || dp__grow(p, (void **)&p->params, &p->capparams, p->nparams + 1, sizeof *p->params, tok) != 0)
    return -1;
  p->params[p->nparams++] = h;
  return push_pat(p, dp_pat_var((dp_var *)dp__obj(p, h), dp__span(p, tok)), tok);
}

static int pattern_event(dp_parser *p, const int64_t *ev, size_t n, size_t *i) {
  uint32_t tok = (uint32_t)ev[*i];
  switch (dp__kind(p, tok)) {
  case DP_TOK_UNDERSCORE: return push_pat(p, dp_pat_wild(dp__span(p, tok)), tok);
  case DP_TOK_VAR: {
    dp_type *annot = NULL;
    if (*i + 1 < n && ev[*i + 1] < 0) {
      dp_obj *t = dp__event_obj(p, ev[++*i], tok);
      if (!t || t->type != DP_OBJ_TYPE) return t ? dp__fail(p, DP_ERR_GENERIC, tok, "parser: pattern type") : -1;
      annot = (dp_type *)t;
    }
    return pattern_var(p, tok, annot);
  }
  case DP_TOK_IDENT: case DP_TOK_CALLEE: {
    dp_ctor *c = ctor_named(p, tok);
    if (!c) return -1;
    if (dp__kind(p, tok) == DP_TOK_IDENT) return close_pat(p, c, p->nvals, tok);
    if (dp__grow(p, (void **)&p->frames, &p->capframes, p->nframes + 1, sizeof *p->frames, tok) != 0) return -1;
    p->frames[p->nframes++] = (rframe){P_CTOR, 0, tok, p->nvals, 0, 0, {(dp_obj *)dp_retain(c), tok, 0}, 0, 0};
    return 0;
  }
  case DP_TOK_LPAREN:
    if (dp__grow(p, (void **)&p->frames, &p->capframes, p->nframes + 1, sizeof *p->frames, tok) != 0) return -1;
    p->frames[p->nframes++] = (rframe){P_TUPLE, 0, tok, p->nvals, 0, 0, {NULL, 0, 0}, 0, 0};
    return 0;
  case DP_TOK_RPAREN: {
    if (!p->nframes) return dp__fail(p, DP_ERR_GENERIC, tok, "parser: unbalanced pattern events");
    rframe f = p->frames[--p->nframes];
    int r = close_pat(p, (dp_ctor *)f.callee.obj, f.base, f.tok);
    dp_release(f.callee.obj);
    return r;
  }
  default: return dp__fail(p, DP_ERR_GENERIC, tok, "parser: unexpected pattern event");
  }
}

uint32_t dp__read_pattern(dp_parser *p, const int64_t *ev, size_t n) {
  uint32_t base = p->nvals, frames = p->nframes;
  for (size_t i = 0; i < n; i++) {
    if (ev[i] < 0) {
      dp__fail(p, DP_ERR_GENERIC, 0, "parser: a value among pattern events");
      return 0;
    }
    if (pattern_event(p, ev, n, &i) != 0) return 0;
  }
  if (p->nvals != base + 1 || p->nframes != frames) {
    dp__fail(p, DP_ERR_GENERIC, n ? (uint32_t)ev[0] : 0, "parser: pattern events");
    return 0;
  }
  rval v = p->vals[--p->nvals];
  return dp__keep(p, v.obj, NULL, v.tok);
}
