/*
 * Statements and the scopes that hold them: blocks (`{ ... }` of a branch
 * or a clause, the text of dp.parse_expr), functions (fn and def), match
 * clauses.
 *
 * A block is opened by an action before anything inside it is read and
 * closed by one after: names defined in it are undone when it closes
 * (graph bindings are the block's own: one name defined twice in a block
 * is an error; lets may shadow). A statement is one of
 *     %n = E;           a graph binding: %n names E's node (sharing)
 *     let %x: T = E;    a let; %x is in scope in E (a recursive function)
 *     E;                a let of an unused variable `_`
 *     free_var %x: T;   a free variable, in scope from here (no node: the
 *                       expression simply has %x free, as TVM's parser)
 *     E                 the block's final expression, before its `}` (or
 *                       the `)` of a block in parentheses, or the text's end)
 * and the block's expression is its lets around its final expression.
 * Statements come in batches (the grammar gives every statement without a
 * block inside it, up to 64 of them, to one action), or one at a time; a
 * let whose value holds a block has its head read first (LET_HEAD), so
 * that the variable is in scope inside that block.
 */
#include <stdlib.h>
#include <string.h>
#include "devplan/suggest.h"
#include "internal.h"

static pblock *top_block(dp_parser *p) {
  if (!p->nblocks) {
    dp__fail(p, DP_ERR_GENERIC, p->progress, "parser: no open block");
    return NULL;
  }
  return &p->blocks[p->nblocks - 1];
}

static pblock *open_block(dp_parser *p, int kind, uint32_t tok) {
  if (p->nblocks >= SCOPE_BLOCKS) {
    dp__fail(p, DP_ERR_GENERIC, tok, "nested too deeply");
    return NULL;
  }
  if (dp__grow(p, (void **)&p->blocks, &p->capblocks, p->nblocks + 1, sizeof *p->blocks, tok) != 0) return NULL;
  pblock *b = &p->blocks[p->nblocks++];
  memset(b, 0, sizeof *b);
  b->kind = (uint8_t)kind;
  b->id = p->nblocks + 1; /* (a slot holds only an open block's id: its depth, past 1) */
  b->mark = dp__scope_mark(&p->names);
  b->lets = p->lets;
  b->tok = tok;
  b->params = p->nparams;
  return b;
}

/* The block's expression, its lets around its final expression (a new
   reference); the block's names go out of scope and the block is popped. */
static dp_expr *close_block(dp_parser *p) {
  pblock *b = top_block(p);
  if (!b) return NULL;
  if (!b->final) {
    dp__fail(p, DP_ERR_GENERIC, b->tok, "parser: a block without its final expression");
    return NULL;
  }
  dp_expr *body = dp_retain(dp__obj(p, b->final));
  for (dp_let *let = p->lets, *prev; let != b->lets; let = prev) { /* (the references move) */
    prev = (dp_let *)let->body;
    let->body = body;
    body = &let->e;
  }
  p->lets = b->lets;
  dp__scope_unbind(&p->names, b->mark);
  p->nblocks--;
  return body;
}

/* Variables: the name of token tok without its `%`, a new var, kept. */
static uint32_t new_var(dp_parser *p, uint32_t tok, dp_type *annot, dp_vdev *vd) {
  size_t len;
  const char *name = dp__tok_text(p, tok, &len);
  const char *cn = dp__cname(p, name + 1, len - 1);
  return cn ? dp__keep(p, dp__var_new_in(p->vars, cn, annot, vd, dp__span(p, tok)), NULL, tok) : 0;
}

/* Binds the name of token tok to handle h; with a block, as that block's
   definition (what: "definition", "parameter"). */
static int bind_name(dp_parser *p, uint32_t tok, uint32_t h, const pblock *b, const char *what) {
  size_t len;
  const char *name = dp__tok_text(p, tok, &len);
  int64_t slot = dp__tok_slot(p, &p->names, tok);
  if (slot < 0) return -1;
  if (b && p->names.slots[slot].block == b->id)
    return dp__fail(p, DP_ERR_NAME, tok, "duplicate %s %.*s", what, (int)len, name);
  if (dp__scope_bind(&p->names, (uint32_t)slot, h, b ? b->id : 0) != 0) return dp__oom(p, tok);
  return 0;
}

/* The let of variable var (a handle) to value val, made now; its body,
   until the block closes, links it to the pending let before it. The
   value's handle is let go when it is the newest (nothing but the let
   refers to it: a let's value is read, kept and bound to no name). */
static int push_let(dp_parser *p, uint32_t var, uint32_t val, dp_span span) {
  dp_expr *value = (dp_expr *)dp__obj(p, val);
  dp_let *let = dp__let_new_in(p->nodes, (dp_var *)dp__obj(p, var), value, value, span);
  if (!let) return dp__oom(p, 0);
  dp_release(let->body);
  let->body = (dp_expr *)p->lets;
  p->lets = let;
  if (val == p->nobjs) dp_release(p->objs[--p->nobjs]);
  return 0;
}

/* A variable's `{virtual_device=...}` from ev[*i] (the `{`): *vd (a new
   reference, or NULL when there is none); left on the `}`. A key other
   than virtual_device is an error (`what` names it). 0, or -1 on error. */
static int var_attrs(dp_parser *p, const int64_t *ev, size_t n, size_t *i, const char *what, dp_vdev **vd) {
  int rc = 0;
  *vd = NULL;
  for ((*i)++; rc == 0 && *i < n && dp__kind(p, (uint32_t)ev[*i]) == DP_TOK_KEY; (*i)++) {
    uint32_t key = (uint32_t)ev[*i];
    size_t len;
    const char *k = dp__tok_text(p, key, &len);
    dp_aval v;
    (*i)++;
    if (dp__read_aval(p, ev, n, i, &v) != 0) {
      rc = -1;
      break;
    }
    if (len != 14 || memcmp(k, "virtual_device", 14) != 0)
      rc = dp__unknown_attr(p, key, what, "virtual_device");
    else if (v.kind != DP_AV_VDEV)
      rc = dp__fail(p, DP_ERR_VALUE, key, "virtual_device must be a virtual device");
    else if (!*vd)
      *vd = dp_retain(v.u.vdev);
    dp_av_clear(&v);
  }
  if (rc != 0 || p->err) {
    dp_release(*vd);
    *vd = NULL;
    return -1;
  }
  return 0;
}

/* `let %x {virtual_device=...}: T =` from ev[*i] (the `let`; the variable
   is the next token, a BIND or a VAR; the attributes and the type are
   optional, as a parameter's, so that what the printer writes of a let
   variable with a device reads back): the variable, in scope from now. */
static uint32_t let_head(dp_parser *p, const int64_t *ev, size_t n, size_t *i) {
  uint32_t let = (uint32_t)ev[(*i)++], vtok = let + 1;
  dp_type *annot = NULL;
  dp_vdev *vd = NULL;
  if (*i < n && ev[*i] > 0 && dp__kind(p, (uint32_t)ev[*i]) == DP_TOK_LBRACE) {
    if (var_attrs(p, ev, n, i, "let variable attribute", &vd) != 0) return 0;
    (*i)++; /* (past the `}`) */
  }
  if (*i < n && ev[*i] < 0) {
    dp_obj *t = dp__event_obj(p, ev[(*i)++], vtok);
    if (t && t->type != DP_OBJ_TYPE) dp__fail(p, DP_ERR_GENERIC, vtok, "parser: let type");
    if (!t || t->type != DP_OBJ_TYPE) {
      dp_release(vd);
      return 0;
    }
    annot = (dp_type *)t;
  }
  uint32_t h = new_var(p, vtok, annot, vd);
  dp_release(vd);
  return h && bind_name(p, vtok, h, NULL, NULL) == 0 ? h : 0;
}

/* A let's value is read from now until pop_pending (its variable is in
   scope there, for a recursive function; any other read of it there is
   the IR's scope error: parser.c has the scope check run then). */
static int push_pending(dp_parser *p, uint32_t var) {
  if (dp__grow(p, (void **)&p->pend, &p->cappend, p->npend + 1, sizeof *p->pend, p->progress) != 0) return -1;
  p->pend[p->npend++] = var;
  return 0;
}

int dp__pending_let(const dp_parser *p, uint32_t h) {
  uint32_t lo = 0, hi = p->npend; /* (ascending: a binary search) */
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (p->pend[mid] == h) return 1;
    if (p->pend[mid] < h) lo = mid + 1;
    else hi = mid;
  }
  return 0;
}

int64_t dp__act_let_head(dp_parser *p, const int64_t *ev, size_t n) {
  pblock *b = top_block(p);
  size_t i = 0;
  if (!b || !n) return -1;
  b->let_span = dp__span(p, (uint32_t)ev[0]);
  b->let_var = let_head(p, ev, n, &i);
  return b->let_var && push_pending(p, b->let_var) == 0 ? 0 : -1;
}

/* Where a statement starts: its first token, or the node an earlier
   action made (a function called on the spot). */
static dp_span stmt_span(dp_parser *p, int64_t first) {
  if (first > 0) return dp__span(p, (uint32_t)first);
  dp_obj *o = dp__event_obj(p, first, p->progress);
  return o && o->type == DP_OBJ_EXPR ? ((dp_expr *)o)->span : DP_NOSPAN;
}

static uint32_t param_var(dp_parser *p, const int64_t *ev, size_t n, size_t *i, pblock *b);

/* `free_var %x {attrs}: T;` from ev[*i] (the free_var): the variable is
   bound in block b; *i goes past the `;`. */
static int free_var(dp_parser *p, const int64_t *ev, size_t n, size_t *i, pblock *b) {
  (*i)++;
  if (*i >= n || !param_var(p, ev, n, i, b)) return p->err ? -1 : dp__fail(p, DP_ERR_GENERIC, 0, "parser: free_var");
  *i += 2; /* (its last event, then the `;`) */
  return 0;
}

int64_t dp__act_stmts(dp_parser *p, const int64_t *ev, size_t n) {
  size_t i = 0;
  while (i < n) {
    pblock *b = top_block(p);
    if (!b) return -1;
    uint32_t bind = 0, var = 0, first = ev[i] > 0 ? (uint32_t)ev[i] : 0;
    int64_t start = ev[i];
    dp_span span = b->let_span;
    if (b->let_var) { /* the value of a let whose head came first */
      var = b->let_var;
      b->let_var = 0;
    } else if (first && dp__kind(p, first) == DP_TOK_LET) {
      span = dp__span(p, first);
      if (!(var = let_head(p, ev, n, &i)) || push_pending(p, var) != 0) return -1;
    } else if (first && dp__kind(p, first) == DP_TOK_BIND) {
      bind = first;
      i++;
    } else if (first && dp__kind(p, first) == DP_TOK_FREE_VAR) {
      if (free_var(p, ev, n, &i, b) != 0) return -1;
      continue;
    }
    uint32_t term, h = dp__read_expr(p, ev, n, &i, &term);
    if (!h) return -1;
    if (var) p->npend--; /* (its value is read) */
    b = &p->blocks[p->nblocks - 1];
    if (bind) {
      if (bind_name(p, bind, h, b, "definition of") != 0) return -1;
    } else if (var) {
      if (push_let(p, var, h, span) != 0) return -1;
    } else if (dp__kind(p, term) == DP_TOK_SEMI) {
      span = stmt_span(p, start);
      uint32_t u = dp__keep(p, dp__var_new_in(p->vars, "_", NULL, NULL, span), NULL, first);
      if (!u || push_let(p, u, h, span) != 0) return -1;
      if (u == p->nobjs) dp_release(p->objs[--p->nobjs]); /* (the let holds both) */
      if (h == p->nobjs) dp_release(p->objs[--p->nobjs]);
    } else {
      b->final = h;
    }
  }
  return 0;
}

int64_t dp__act_block_open(dp_parser *p, const int64_t *ev, size_t n) {
  return open_block(p, B_BLOCK, n && ev[0] > 0 ? (uint32_t)ev[0] : p->progress + 1) ? 0 : -1;
}

int64_t dp__act_block_close(dp_parser *p, const int64_t *ev, size_t n) {
  (void)ev, (void)n;
  dp_expr *e = close_block(p);
  return e && dp__keep(p, e, NULL, 0) ? (int64_t)p->nobjs : -1;
}

/* ---------------- functions ---------------- */

/* An attribute of a parameter (or a buffer) other than the only one known. */
int dp__unknown_attr(dp_parser *p, uint32_t key, const char *what, const char *known) {
  size_t len;
  const char *k = dp__tok_text(p, key, &len);
  const char *name = dp__cname(p, k, len);
  char hint[DP_SUGGEST_HINT];
  if (!name) return dp__oom(p, key);
  return dp__fail(p, DP_ERR_NAME, key, "unknown %s '%s' (only %s)%s", what, name, known, dp__hint_in(name, known, hint));
}

/* A parameter's variable from ev[*i]: `{attrs}` (virtual_device only) and
   a type may follow; bound in block b. Left on its last event. Its
   handle, or 0 on error. */
static uint32_t param_var(dp_parser *p, const int64_t *ev, size_t n, size_t *i, pblock *b) {
  uint32_t tok = (uint32_t)ev[*i];
  dp_vdev *vd = NULL;
  dp_type *annot = NULL;
  int rc = 0;
  if (*i + 1 < n && ev[*i + 1] > 0 && dp__kind(p, (uint32_t)ev[*i + 1]) == DP_TOK_LBRACE) {
    (*i)++;
    rc = var_attrs(p, ev, n, i, "parameter attribute", &vd); /* (left on the `}`) */
  }
  if (p->err) rc = -1;
  if (rc == 0 && *i + 1 < n && ev[*i + 1] < 0) {
    dp_obj *t = dp__event_obj(p, ev[++*i], tok);
    if (!t || t->type != DP_OBJ_TYPE) rc = t ? dp__fail(p, DP_ERR_GENERIC, tok, "parser: parameter type") : -1;
    else annot = (dp_type *)t;
  }
  uint32_t h = rc == 0 ? new_var(p, tok, annot, vd) : 0;
  dp_release(vd);
  if (!h || bind_name(p, tok, h, b, b->kind == B_FN ? "parameter" : "definition of") != 0) return 0;
  return h;
}

/* A parameter of the function of block b (see param_var). */
static int param(dp_parser *p, const int64_t *ev, size_t n, size_t *i, pblock *b) {
  uint32_t tok = (uint32_t)ev[*i], h = param_var(p, ev, n, i, b);
  if (!h) return -1;
  if (dp__grow(p, (void **)&p->params, &p->capparams, p->nparams + 1, sizeof *p->params, tok) != 0) return -1;
  p->params[p->nparams++] = h;
  return 0;
}

/* `[A, B]`: type variables, in scope for the function whose head follows
   (fn_open takes them). Events: the names. */
int64_t dp__act_tparams(dp_parser *p, const int64_t *ev, size_t n) {
  p->tp_mark = dp__scope_mark(&p->types);
  p->tpending = (uint32_t)n;
  for (size_t i = 0; i < n; i++) {
    uint32_t tok = (uint32_t)ev[i];
    size_t len;
    const char *text = dp__tok_text(p, tok, &len);
    int64_t slot = dp__tok_slot(p, &p->types, tok);
    if (slot < 0) return -1;
    for (size_t k = 0; k < i; k++) {
      size_t klen;
      const char *other = dp__tok_text(p, (uint32_t)ev[k], &klen);
      if (klen == len && !memcmp(other, text, len))
        return dp__fail(p, DP_ERR_NAME, tok, "duplicate type parameter %.*s", (int)len, text);
    }
    const char *cn = dp__cname(p, text, len);
    uint32_t h = cn ? dp__keep(p, dp_type_var_new(p->ctx, cn), NULL, tok) : 0;
    if (!h || dp__scope_bind(&p->types, (uint32_t)slot, h, 0) != 0 ||
        dp__grow(p, (void **)&p->tps, &p->captps, p->ntps + 1, sizeof *p->tps, tok) != 0)
      return p->err ? -1 : dp__oom(p, tok);
    p->tps[p->ntps++] = h;
  }
  return 0;
}

/* `def @name`: its global, defined here (a second definition is an error). */
static uint32_t def_global(dp_parser *p, uint32_t def, uint32_t tok) {
  size_t len;
  const char *name = dp__tok_text(p, tok, &len);
  int64_t slot = dp__tok_slot(p, &p->names, tok);
  if (slot < 0) return 0;
  if (p->names.slots[slot].block) {
    dp__fail(p, DP_ERR_NAME, def, "duplicate definition of %.*s", (int)len, name);
    return 0;
  }
  if (!p->names.slots[slot].handle) {
    const char *cn = dp__cname(p, name + 1, len - 1);
    uint32_t h = cn ? dp__keep(p, dp_global_new(cn, dp__span(p, tok)), NULL, tok) : 0;
    if (!h) return 0;
    p->names.slots[slot].handle = h;
  }
  p->names.slots[slot].block = 1; /* defined */
  return p->names.slots[slot].handle;
}

/* fn (params, attrs) -> T {   or   def @f(params, attrs) -> T {
   Events: fn (or def and the global), each parameter's variable (its `{`,
   attributes and `}`, its type), each function attribute's key and value,
   `->` and the result type, the body's `{`. */
int64_t dp__act_fn_open(dp_parser *p, const int64_t *ev, size_t n) {
  uint32_t tok = (uint32_t)ev[0], global = 0;
  size_t i = 1;
  if (dp__kind(p, tok) == DP_TOK_DEF && !(global = def_global(p, tok, (uint32_t)ev[i++]))) return -1;
  pblock *fb = open_block(p, B_FN, tok);
  if (!fb) return -1;
  /* its type parameters, read just before (in scope in the head) */
  fb->ntps = p->tpending;
  fb->tps = p->ntps - p->tpending;
  fb->tmark = p->tpending ? p->tp_mark : dp__scope_mark(&p->types);
  p->tpending = 0;
  uint32_t attrs_from = p->nattrs, ret = 0;
  for (; i < n; i++) {
    uint32_t t = (uint32_t)ev[i];
    char k = ev[i] > 0 ? dp__kind(p, t) : 0;
    if (k == DP_TOK_VAR) {
      if (param(p, ev, n, &i, &p->blocks[p->nblocks - 1]) != 0) return -1;
    } else if (k == DP_TOK_KEY) {
      if (dp__grow(p, (void **)&p->attrs, &p->capattrs, p->nattrs + 1, sizeof *p->attrs, t) != 0) return -1;
      dp_aval v;
      i++;
      if (dp__read_aval(p, ev, n, &i, &v) != 0) return -1;
      p->attrs[p->nattrs++] = (pattr){t, v};
    } else if (k == DP_TOK_LBRACE && i + 1 == n) {
      /* (the body's `{`: it tells where the function's head ends) */
    } else if (k == DP_TOK_ARROW && i + 1 < n) {
      dp_obj *rt = dp__event_obj(p, ev[++i], t);
      if (!rt) return -1;
      ret = dp__keep(p, dp_retain(rt), NULL, t);
      if (!ret) return -1;
    } else {
      return dp__fail(p, DP_ERR_GENERIC, t, "parser: unexpected function head event");
    }
  }
  /* virtual_device is the function's device; the rest stay attributes */
  pblock *b = &p->blocks[p->nblocks - 1];
  b->global = global;
  b->ret = ret;
  for (uint32_t a = attrs_from; a < p->nattrs; a++) {
    size_t len;
    const char *k = dp__tok_text(p, p->attrs[a].key, &len);
    if (len != 14 || memcmp(k, "virtual_device", 14) != 0) continue;
    if (p->attrs[a].val.kind != DP_AV_VDEV)
      return dp__fail(p, DP_ERR_VALUE, p->attrs[a].key, "virtual_device must be a virtual device");
    if (!(b->vdev = dp__keep(p, dp_retain(p->attrs[a].val.u.vdev), NULL, tok))) return -1;
    dp_av_clear(&p->attrs[a].val);
    memmove(p->attrs + a, p->attrs + a + 1, (p->nattrs - a - 1) * sizeof *p->attrs);
    p->nattrs--;
    a--;
  }
  dp_attrs *attrs;
  if (dp__attrs_take(p, NULL, attrs_from, tok, &attrs) != 0) return -1;
  if (attrs && !(b->attrs = dp__keep(p, attrs, NULL, tok))) return -1;
  return 0;
}

static dp_func *close_fn(dp_parser *p) {
  pblock b = p->blocks[p->nblocks - 1];
  if (b.kind != B_FN) {
    dp__fail(p, DP_ERR_GENERIC, b.tok, "parser: not in a function");
    return NULL;
  }
  dp_expr *body = close_block(p);
  if (!body) return NULL;
  uint32_t np = p->nparams - b.params;
  dp_var *small[8], **params = np <= 8 ? small : dp_malloc(np * sizeof *params);
  dp_type *tsmall[8], **tps = b.ntps <= 8 ? tsmall : dp_malloc(b.ntps * sizeof *tps);
  dp_func *f = NULL;
  if (params && tps) {
    for (uint32_t i = 0; i < np; i++) params[i] = (dp_var *)dp__obj(p, p->params[b.params + i]);
    for (uint32_t i = 0; i < b.ntps; i++) tps[i] = (dp_type *)dp__obj(p, p->tps[b.tps + i]);
    f = dp_func_new_generic(b.ntps, tps, np, params, body, b.ret ? (dp_type *)dp__obj(p, b.ret) : NULL,
                            b.attrs ? (dp_attrs *)dp__obj(p, b.attrs) : NULL,
                            b.vdev ? (dp_vdev *)dp__obj(p, b.vdev) : NULL, dp__span(p, b.tok));
  }
  if (params != small) free(params);
  if (tps != tsmall) free(tps);
  dp_release(body);
  p->nparams = b.params;
  p->ntps = b.tps;
  dp__scope_unbind(&p->types, b.tmark);
  if (!f) dp__oom(p, b.tok);
  return f;
}

int64_t dp__act_fn_close(dp_parser *p, const int64_t *ev, size_t n) {
  (void)ev, (void)n;
  dp_func *f = close_fn(p);
  return f && dp__keep(p, f, NULL, 0) ? (int64_t)p->nobjs : -1;
}

int64_t dp__act_def_close(dp_parser *p, const int64_t *ev, size_t n) {
  (void)ev, (void)n;
  pblock b = p->blocks[p->nblocks - 1];
  dp_func *f = close_fn(p);
  dp_module *m = f ? dp__module(p, b.tok) : NULL;
  dp_err *err = NULL;
  int rc = m ? dp_module_add_func(m, (dp_global *)dp__obj(p, b.global), f, &err) : -1;
  dp_release(f);
  if (rc != 0) return m ? dp__fail_core(p, err, b.tok) : -1;
  return 0;
}

/* A module's text that ends with an expression: it is @main, a function as
   written, or any other expression as the body of a function of its free
   variables (TVM's IRModule.from_expr). */
int64_t dp__act_main_close(dp_parser *p, const int64_t *ev, size_t n) {
  (void)ev, (void)n;
  uint32_t tok = p->nblocks ? p->blocks[p->nblocks - 1].tok : 0;
  dp_expr *e = close_block(p);
  if (!e) return -1;
  dp_func *f = NULL;
  if (e->h.kind == DP_FUNC) {
    f = (dp_func *)dp_retain(e);
  } else {
    uint32_t nfree = 0;
    dp_var **fv = dp_free_vars(e, &nfree);
    /* an operator (interned, so without a span) has the position of the text */
    dp_span at = e->span.line ? e->span : dp__span(p, tok);
    f = fv ? dp_func_new(nfree, fv, e, NULL, NULL, NULL, at) : NULL;
    free(fv);
  }
  dp_release(e);
  int64_t slot = f ? dp__scope_intern(&p->names, "@main", 5) : -1;
  dp_module *m = slot >= 0 ? dp__module(p, tok) : NULL;
  int rc = -1;
  if (m && p->names.slots[slot].block) {
    dp__fail(p, DP_ERR_NAME, tok, "the text ends with an expression, but @main is defined already");
  } else if (m) {
    uint32_t g = p->names.slots[slot].handle;
    if (!g) g = dp__keep(p, dp_global_new("main", f->e.span), NULL, tok);
    dp_err *err = NULL;
    if (g && (rc = dp_module_add_func(m, (dp_global *)dp__obj(p, g), f, &err)) != 0) dp__fail_core(p, err, tok);
    if (g) dp__scope_set(&p->names, (uint32_t)slot, g, 1);
  }
  dp_release(f);
  return rc == 0 ? 0 : p->err ? -1 : dp__oom(p, tok);
}

/* ---------------- match clauses ---------------- */

int64_t dp__act_clause_open(dp_parser *p, const int64_t *ev, size_t n) {
  uint32_t vars = p->nparams, tok = n && ev[0] > 0 ? (uint32_t)ev[0] : p->progress;
  uint32_t pat = dp__read_pattern(p, ev, n);
  if (!pat || !open_block(p, B_CLAUSE, tok)) return -1;
  /* the pattern's variables come into scope for the clause */
  for (uint32_t i = vars; i < p->nparams; i++) {
    const dp_var *v = (const dp_var *)dp__obj(p, p->params[i]);
    size_t len = strlen(v->name);
    char *key = dp__scratch(p, len + 1);
    if (!key) return dp__oom(p, tok);
    key[0] = '%';
    memcpy(key + 1, v->name, len);
    int64_t slot = dp__scope_intern(&p->names, key, len + 1);
    if (slot < 0 || dp__scope_bind(&p->names, (uint32_t)slot, p->params[i], 0) != 0) return dp__oom(p, tok);
  }
  p->nparams = vars;
  p->blocks[p->nblocks - 1].params = vars;
  return pat;
}

int64_t dp__act_clause_close(dp_parser *p, const int64_t *ev, size_t n) {
  size_t i = 0;
  uint32_t term, h = dp__read_expr(p, ev, n, &i, &term);
  if (!h) return -1;
  pblock *b = top_block(p);
  if (!b || b->kind != B_CLAUSE) return dp__fail(p, DP_ERR_GENERIC, 0, "parser: not in a clause");
  dp__scope_unbind(&p->names, b->mark);
  p->nblocks--;
  return h;
}
