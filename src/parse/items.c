/*
 * Module items besides functions (blocks.c): type definitions and their
 * constructors, primfn declarations, and the check, at the end, that every
 * global referenced is defined (globals may be used before their def).
 *
 * A type definition is read in three actions: its head (`type List[A]`:
 * the name becomes a type, the type variables come into scope), each
 * constructor (`Cons(A, List[A])`), and its end.
 */
#include <stdlib.h>
#include <string.h>
#include "devplan/suggest.h"
#include "internal.h"

static int td_push(dp_parser *p, uint32_t h, uint32_t tok) {
  if (dp__grow(p, (void **)&p->td_items, &p->td_cap, p->td_n + 1, sizeof *p->td_items, tok) != 0) return -1;
  p->td_items[p->td_n++] = h;
  return 0;
}

/* Events: `type`, the name, the type variables. */
int64_t dp__act_typedef_open(dp_parser *p, const int64_t *ev, size_t n) {
  uint32_t name = (uint32_t)ev[1];
  size_t len;
  const char *text = dp__tok_text(p, name, &len);
  int64_t slot = dp__tok_slot(p, &p->types, name);
  if (slot < 0) return -1;
  if (p->types.slots[slot].block)
    return dp__fail(p, DP_ERR_NAME, name, "duplicate definition of type %.*s", (int)len, text);
  dp__scope_set(&p->types, (uint32_t)slot, p->types.slots[slot].handle, 1); /* a type definition */
  p->td_tok = (uint32_t)ev[0];
  p->td_mark = dp__scope_mark(&p->types);
  p->td_n = 0;
  for (size_t i = 2; i < n; i++) {
    uint32_t tok = (uint32_t)ev[i];
    const char *v = dp__tok_text(p, tok, &len);
    const char *cn = dp__cname(p, v, len);
    uint32_t h = cn ? dp__keep(p, dp_type_var_new(p->ctx, cn), NULL, tok) : 0;
    int64_t s = h ? dp__tok_slot(p, &p->types, tok) : -1;
    if (s < 0 || dp__scope_bind(&p->types, (uint32_t)s, h, 0) != 0 || td_push(p, h, tok) != 0)
      return p->err ? -1 : dp__oom(p, tok);
  }
  p->td_ntvars = p->td_n;
  return 0;
}

/* Events: the constructor's name, its input types. */
int64_t dp__act_ctor(dp_parser *p, const int64_t *ev, size_t n) {
  uint32_t tok = (uint32_t)ev[0], nin = (uint32_t)n - 1;
  size_t len;
  const char *name = dp__tok_text(p, tok, &len);
  int64_t slot = dp__tok_slot(p, &p->names, tok);
  if (slot < 0) return -1;
  uint32_t old = p->names.slots[slot].handle;
  if (old && dp__obj(p, old)->kind == DP_CTOR && dp__obj(p, old)->type == DP_OBJ_EXPR)
    return dp__fail(p, DP_ERR_NAME, tok, "duplicate definition of constructor %.*s", (int)len, name);
  dp_type **ts = dp_malloc((p->td_ntvars + nin + 1) * sizeof *ts);
  if (!ts) return dp__oom(p, tok);
  for (uint32_t i = 0; i < p->td_ntvars; i++) ts[i] = (dp_type *)dp__obj(p, p->td_items[i]);
  for (uint32_t i = 0; i < nin; i++) {
    dp_obj *t = dp__event_obj(p, ev[1 + i], tok);
    if (!t) {
      free(ts);
      return -1;
    }
    ts[p->td_ntvars + i] = (dp_type *)t;
  }
  size_t alen;
  const char *adt = dp__tok_text(p, p->td_tok + 1, &alen);
  char *names = dp_malloc(len + alen + 2);
  dp_ctor *c = NULL;
  if (names) {
    memcpy(names, name, len);
    names[len] = '\0';
    memcpy(names + len + 1, adt, alen);
    names[len + 1 + alen] = '\0';
    c = dp_ctor_new(names, names + len + 1, p->td_n - p->td_ntvars, p->td_ntvars, ts, nin,
                    ts + p->td_ntvars, dp__span(p, tok));
  }
  free(names);
  free(ts);
  if (!c) return dp__oom(p, tok);
  uint32_t h = dp__keep(p, c, NULL, tok);
  if (!h || td_push(p, h, tok) != 0) return -1;
  dp__scope_set(&p->names, (uint32_t)slot, h, 0);
  return 0;
}

int64_t dp__act_typedef_close(dp_parser *p, const int64_t *ev, size_t n) {
  (void)ev, (void)n;
  uint32_t ntv = p->td_ntvars, nc = p->td_n - ntv;
  size_t len;
  const char *text = dp__tok_text(p, p->td_tok + 1, &len);
  dp_type **tvs = dp_malloc((ntv + 1) * sizeof *tvs);
  dp_ctor **cs = dp_malloc((nc + 1) * sizeof *cs);
  const char *name = dp__cname(p, text, len);
  dp_typedef *td = NULL;
  if (tvs && cs && name) {
    for (uint32_t i = 0; i < ntv; i++) tvs[i] = (dp_type *)dp__obj(p, p->td_items[i]);
    for (uint32_t i = 0; i < nc; i++) cs[i] = (dp_ctor *)dp__obj(p, p->td_items[ntv + i]);
    td = dp_typedef_new(name, ntv, tvs, nc, cs, dp__span(p, p->td_tok));
  }
  free(tvs);
  free(cs);
  dp__scope_unbind(&p->types, p->td_mark);
  p->td_n = p->td_ntvars = 0;
  dp_module *m = td ? dp__module(p, p->td_tok) : NULL;
  dp_err *err = NULL;
  int rc = m ? dp_module_add_typedef(m, td, &err) : -1;
  dp_release(td);
  if (rc == 0) return 0;
  return m ? dp__fail_core(p, err, p->td_tok) : p->err ? -1 : dp__oom(p, p->td_tok);
}

/* primfn @name(T scope="s", ...) -> T scope="s";
   Events: primfn, the global, each buffer's type (its scope key and
   string), `->`, the result buffer. */
int64_t dp__act_primfn(dp_parser *p, const int64_t *ev, size_t n) {
  uint32_t tok = (uint32_t)ev[0], gtok = (uint32_t)ev[1];
  size_t glen, len;
  const char *gname = dp__tok_text(p, gtok, &glen);
  int64_t slot = dp__tok_slot(p, &p->names, gtok);
  if (slot < 0) return -1;
  if (p->names.slots[slot].block)
    return dp__fail(p, DP_ERR_NAME, tok, "duplicate definition of %.*s", (int)glen, gname);
  p->names.slots[slot].block = 1;
  dp_buffer *bufs = dp_calloc(n, sizeof *bufs);
  if (!bufs) return dp__oom(p, tok);
  uint32_t nb = 0, ret = 0;
  int rc = 0;
  /* scopes live in one string: the parser's buffer would be reused */
  char **scopes = dp_calloc(n, sizeof *scopes);
  for (size_t i = 2; rc == 0 && scopes && i < n; i++) {
    uint32_t t = (uint32_t)ev[i];
    if (ev[i] < 0) {
      dp_obj *ty = dp__event_obj(p, ev[i], tok);
      if (!ty) rc = -1;
      else bufs[nb++].type = (dp_type *)ty;
    } else if (dp__kind(p, t) == DP_TOK_ARROW) {
      ret = nb;
    } else if (dp__kind(p, t) == DP_TOK_KEY && i + 1 < n && nb) {
      const char *k = dp__tok_text(p, t, &len);
      if (len != 5 || memcmp(k, "scope", 5) != 0) {
        rc = dp__unknown_attr(p, t, "buffer attribute", "scope");
      } else {
        const char *s = dp__string_value(p, (uint32_t)ev[++i]);
        if (!s || !(scopes[nb - 1] = dp_strdup(s))) rc = dp__oom(p, t);
      }
    }
  }
  if (!scopes) rc = dp__oom(p, tok);
  const char *cn = rc == 0 ? dp__cname(p, gname + 1, glen - 1) : NULL;
  dp_primfn *pf = NULL;
  if (rc == 0 && cn && nb == ret + 1) {
    for (uint32_t i = 0; i < nb; i++) bufs[i].scope = scopes[i] ? scopes[i] : "";
    pf = dp_primfn_new(cn, ret, bufs, bufs[ret], dp__span(p, tok));
    if (!pf) rc = dp__oom(p, tok);
  } else if (rc == 0) {
    rc = cn ? dp__fail(p, DP_ERR_GENERIC, tok, "parser: primfn events") : dp__oom(p, tok);
  }
  for (size_t i = 0; scopes && i < n; i++) free(scopes[i]);
  free(scopes);
  free(bufs);
  dp_module *m = pf ? dp__module(p, tok) : NULL;
  dp_err *err = NULL;
  if (pf && m && dp_module_add_primfn(m, pf, &err) != 0) rc = dp__fail_core(p, err, tok);
  else if (pf && !m) rc = -1;
  dp_release(pf);
  return rc;
}

int dp__check_globals(dp_parser *p) {
  uint32_t first = 0, at = 0;
  for (uint32_t i = 0; i < p->ngrefs; i++) {
    const struct pgref *g = &p->grefs[i];
    if (!p->names.slots[g->slot].block && (!first || g->tok < at)) {
      first = g->slot + 1;
      at = g->tok;
    }
  }
  if (!first) return 0;
  char hint[DP_SUGGEST_HINT];
  size_t len = dp__scope_len(&p->names, first - 1);
  const char *cn = dp__cname(p, dp__scope_name(&p->names, first - 1), len);
  return dp__fail(p, DP_ERR_NAME, at, "unknown global %.*s%s", (int)len, dp__scope_name(&p->names, first - 1),
                  cn ? dp__hint(p, HINT_GLOBAL, cn, hint) : "");
}
