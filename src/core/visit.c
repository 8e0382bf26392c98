/*
 * Traversals with explicit stacks: dp_visit, dp_rewrite, dp_free_vars,
 * and dp_expr_with_children (the one place that rebuilds a node of any
 * kind from new children).
 *
 * Sharing: a node reached with a reference count of 1 has exactly one
 * parent (the one we came from), so it cannot be reached again; only
 * nodes with rc > 1 go into the visited set / memo table. That keeps the
 * tables small on chains, where almost nothing is shared.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "ptrmap.h"
#include "devplan/visit.h"

/* ---------------- rebuilding one node ---------------- */

static int all_vars(dp_expr *const *kids, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (kids[i]->h.kind != DP_VAR) return 0;
  return 1;
}

static dp_expr *rebuild_match(const dp_match *m, dp_expr *const *kids) {
  dp_clause small[8], *cl = m->n <= 8 ? small : dp_malloc(m->n * sizeof *cl);
  if (!cl) return NULL;
  for (uint32_t i = 0; i < m->n; i++) cl[i] = (dp_clause){m->clauses[i].pat, kids[1 + i]};
  dp_expr *r = (dp_expr *)dp_match_new(kids[0], m->n, cl, m->complete, m->e.span);
  if (cl != small) free(cl);
  return r;
}

dp_expr *dp_expr_with_children(dp_expr *e, dp_expr *const *kids) {
  uint32_t n = dp_expr_nchildren(e);
  uint32_t same = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (!kids[i]) return NULL;
    same += kids[i] == dp_expr_child(e, i);
  }
  if (same == n) return dp_retain(e);
  dp_span sp = e->span;
  switch (e->h.kind) {
  case DP_CALL: {
    const dp_call *c = (const dp_call *)e;
    return (dp_expr *)dp_call_new(kids[0], c->nargs, kids + 1, c->attrs, sp);
  }
  case DP_FUNC: {
    const dp_func *f = (const dp_func *)e;
    if (!all_vars(kids, f->nparams)) return NULL;
    return (dp_expr *)dp_func_new_generic(f->ntparams, f->tparams, f->nparams, (dp_var *const *)kids,
                                          kids[f->nparams], f->ret, f->attrs, f->vdev, sp);
  }
  case DP_LET:
    if (kids[0]->h.kind != DP_VAR) return NULL;
    return (dp_expr *)dp_let_new((dp_var *)kids[0], kids[1], kids[2], sp);
  case DP_TUPLE: return (dp_expr *)dp_tuple_new(n, kids, sp);
  case DP_PROJ: return (dp_expr *)dp_proj_new(kids[0], ((const dp_proj *)e)->index, sp);
  case DP_IF: return (dp_expr *)dp_if_new(kids[0], kids[1], kids[2], sp);
  case DP_MATCH: return rebuild_match((const dp_match *)e, kids);
  case DP_REF_CREATE: return (dp_expr *)dp_ref_create_new(kids[0], sp);
  case DP_REF_READ: return (dp_expr *)dp_ref_read_new(kids[0], sp);
  case DP_REF_WRITE: return (dp_expr *)dp_ref_write_new(kids[0], kids[1], sp);
  default: return dp_retain(e);
  }
}

/* ---------------- a growable stack ---------------- */

typedef struct frame {
  dp_expr *e;
  uint32_t i, n; /* next child, children to walk */
} frame;

typedef struct stack {
  void *items;
  size_t n, cap, size;
} stack;

static void *stack_push(stack *s) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    void *p = dp_realloc(s->items, cap * s->size);
    if (!p) return NULL;
    s->items = p;
    s->cap = cap;
  }
  return (char *)s->items + s->size * s->n++;
}

#define TOP(s, T) (&((T *)(s)->items)[(s)->n - 1])

/* ---------------- visiting ---------------- */

/* First reach of e: -1 stop/out of memory, 0 already seen, 1 pushed. */
static int visit_reach(dp_expr *e, const dp_visitor *v, stack *st, dp__ptrmap *seen) {
  if (e->h.rc > 1) {
    int fresh = 0;
    if (!dp__ptrmap_insert(seen, e, &fresh)) return -1;
    if (!fresh) return 0;
  }
  int r = v->pre ? v->pre(v->ud, e) : 1;
  if (r < 0) return -1;
  frame *f = stack_push(st);
  if (!f) return -1;
  *f = (frame){e, 0, r ? dp_expr_nchildren(e) : 0};
  return 1;
}

int dp_visit(dp_expr *root, const dp_visitor *v) {
  stack st = {NULL, 0, 0, sizeof(frame)};
  dp__ptrmap seen = DP__PTRMAP_INIT;
  int rc = 0;
  if (!root) return 0;
  if (visit_reach(root, v, &st, &seen) < 0) rc = -1;
  while (rc == 0 && st.n > 0) {
    frame *f = TOP(&st, frame);
    if (f->i < f->n) {
      dp_expr *kid = dp_expr_child(f->e, f->i++);
      if (visit_reach(kid, v, &st, &seen) < 0) rc = -1;
    } else {
      dp_expr *e = f->e;
      st.n--;
      if (v->post && v->post(v->ud, e) < 0) rc = -1;
    }
  }
  free(st.items);
  dp__ptrmap_free(&seen);
  return rc;
}

/* ---------------- rewriting ---------------- */

typedef struct rewrite {
  const dp_rewriter *rw;
  stack frames;    /* frame */
  stack results;   /* dp_expr *, owned: rewritten children awaiting their parent */
  dp__ptrmap memo;  /* shared original -> rewritten (owned) */
  dp_err *err;
} rewrite;

/* Hands r (owned) to the parent through the results stack. */
static int rw_push(rewrite *w, dp_expr *r) {
  dp_expr **slot = stack_push(&w->results);
  if (!slot) {
    dp_release(r);
    return -1;
  }
  *slot = r;
  return 0;
}

/* e is done with replacement r (owned): memoize when shared, hand to parent. */
static int rw_finish(rewrite *w, dp_expr *e, dp_expr *r) {
  if (e->h.rc > 1) {
    dp__ptrslot *m = dp__ptrmap_insert(&w->memo, e, NULL);
    if (!m) {
      dp_release(r);
      return -1;
    }
    m->ptr = dp_retain(r);
  }
  return rw_push(w, r);
}

static int rw_reach(rewrite *w, dp_expr *e) {
  if (e->h.rc > 1) {
    dp__ptrslot *m = dp__ptrmap_find(&w->memo, e);
    if (m) return rw_push(w, dp_retain(m->ptr));
  }
  if (w->rw->pre) {
    dp_expr *r = w->rw->pre(w->rw->ud, e, &w->err);
    if (r) return rw_finish(w, e, r);
    if (w->err) return -1;
  }
  frame *f = stack_push(&w->frames);
  if (!f) return -1;
  *f = (frame){e, 0, dp_expr_nchildren(e)};
  return 0;
}

/* ---- match binders: pattern variables follow the rewrite of their uses ----
   Pattern variables are not children (expr.h), but a rewrite that renames a
   variable renames its uses in the clause's rhs; the pattern must bind the
   new variable. A used pattern variable is shared (pattern + use), so its
   rewrite is in the memo. */

static dp_var *mapped_var(const dp__ptrmap *memo, dp_var *v) {
  dp__ptrslot *m = dp__ptrmap_find(memo, v);
  dp_expr *r = m ? m->ptr : NULL;
  return r && r->h.kind == DP_VAR ? (dp_var *)r : v;
}

/* p rebuilt from its rewritten sub-patterns subs (new reference). */
static dp_pattern *pattern_with(const dp__ptrmap *memo, dp_pattern *p, dp_pattern *const *subs) {
  uint32_t same = 0;
  for (uint32_t i = 0; i < p->n; i++) same += subs[i] == p->sub[i];
  switch (p->h.kind) {
  case DP_PAT_VAR: {
    dp_var *v = mapped_var(memo, p->var);
    return v == p->var ? dp_retain(p) : dp_pat_var(v, p->span);
  }
  case DP_PAT_CTOR:
    return same == p->n ? dp_retain(p) : dp_pat_ctor(p->ctor, p->n, subs, p->span);
  case DP_PAT_TUPLE: return same == p->n ? dp_retain(p) : dp_pat_tuple(p->n, subs, p->span);
  default: return dp_retain(p);
  }
}

/* The pattern with its variables mapped (new reference), NULL on out of
   memory. Post order with explicit stacks: patterns nest as deep as written. */
static dp_pattern *remap_pattern(const dp__ptrmap *memo, dp_pattern *root) {
  typedef struct pframe { dp_pattern *p; uint32_t i; } pframe;
  stack frames = {NULL, 0, 0, sizeof(pframe)}, results = {NULL, 0, 0, sizeof(dp_pattern *)};
  dp_pattern *out = NULL;
  pframe *f = stack_push(&frames);
  if (!f) goto done;
  *f = (pframe){root, 0};
  while (frames.n > 0) {
    f = TOP(&frames, pframe);
    if (f->i < f->p->n) {
      dp_pattern *sub = f->p->sub[f->i++];
      if (!(f = stack_push(&frames))) goto done;
      *f = (pframe){sub, 0};
      continue;
    }
    dp_pattern *p = f->p;
    frames.n--;
    dp_pattern **subs = (dp_pattern **)results.items + (results.n - p->n);
    dp_pattern *r = pattern_with(memo, p, subs);
    for (uint32_t i = 0; i < p->n; i++) dp_release(subs[i]);
    results.n -= p->n;
    dp_pattern **slot = r ? stack_push(&results) : NULL;
    if (!slot) {
      dp_release(r);
      goto done;
    }
    *slot = r;
  }
  out = ((dp_pattern **)results.items)[0];
  results.n = 0;
done:
  for (size_t i = 0; i < results.n; i++) dp_release(((dp_pattern **)results.items)[i]);
  free(results.items);
  free(frames.items);
  return out;
}

/* m (owned) with its clause patterns remapped: m itself when no binder
   changed, a new match otherwise; NULL on out of memory (m released). */
static dp_expr *remap_match(const dp__ptrmap *memo, dp_match *m) {
  dp_clause *cl = dp_malloc((m->n ? m->n : 1) * sizeof *cl);
  uint32_t done = 0, changed = 0;
  dp_expr *r = NULL;
  if (!cl) goto out;
  for (; done < m->n; done++) {
    cl[done].rhs = m->clauses[done].rhs;
    cl[done].pat = remap_pattern(memo, m->clauses[done].pat);
    if (!cl[done].pat) goto out;
    changed += cl[done].pat != m->clauses[done].pat;
  }
  r = changed ? (dp_expr *)dp_match_new(m->data, m->n, cl, m->complete, m->e.span)
              : dp_retain(&m->e);
out:
  for (uint32_t i = 0; i < done; i++) dp_release(cl[i].pat);
  free(cl);
  dp_release(m);
  return r;
}

/* Whether kids fill e's binder slots (a let's variable, a function's
   parameters) with variables: when they do, a failed rebuild ran out of
   memory. */
static int binders_are_vars(const dp_expr *e, dp_expr *const *kids) {
  uint32_t nb = e->h.kind == DP_LET ? 1 : e->h.kind == DP_FUNC ? ((const dp_func *)e)->nparams : 0;
  for (uint32_t i = 0; i < nb; i++)
    if (kids[i]->h.kind != DP_VAR) return 0;
  return 1;
}

/* All children of the top frame are on the results stack: rebuild, post. */
static int rw_complete(rewrite *w) {
  frame f = *TOP(&w->frames, frame);
  w->frames.n--;
  /* no children: the results stack may be unallocated (NULL + 0 is undefined) */
  dp_expr **kids = f.n ? (dp_expr **)w->results.items + (w->results.n - f.n) : NULL;
  dp_expr *rebuilt = dp_expr_with_children(f.e, kids);
  int vars_ok = rebuilt || binders_are_vars(f.e, kids); /* before kids go */
  for (uint32_t i = 0; i < f.n; i++) dp_release(kids[i]);
  w->results.n -= f.n;
  if (rebuilt && rebuilt != f.e && rebuilt->h.kind == DP_MATCH)
    rebuilt = remap_match(&w->memo, (dp_match *)rebuilt);
  if (!rebuilt) {
    w->err = vars_ok
                 ? dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory")
                 : dp_err_new(DP_ERR_VALUE, f.e->span, "rewrite: cannot rebuild a %s node (a binder slot got a non-variable)",
                              dp_exprkind_name(f.e->h.kind));
    return -1;
  }
  dp_expr *r = rebuilt;
  if (w->rw->post) {
    r = w->rw->post(w->rw->ud, f.e, rebuilt, &w->err);
    dp_release(rebuilt);
    if (!r) {
      if (!w->err) w->err = dp_err_new(DP_ERR_CALLBACK, f.e->span, "rewrite: callback failed");
      return -1;
    }
  }
  return rw_finish(w, f.e, r);
}

static void rw_cleanup(rewrite *w) {
  dp_expr **res = w->results.items;
  for (size_t i = 0; i < w->results.n; i++) dp_release(res[i]);
  for (uint32_t i = 0; i < w->memo.cap; i++)
    if (w->memo.slots[i].key) dp_release(w->memo.slots[i].ptr);
  free(w->results.items);
  free(w->frames.items);
  dp__ptrmap_free(&w->memo);
}

dp_expr *dp_rewrite(dp_expr *root, const dp_rewriter *rw, dp_err **err) {
  static const dp_rewriter identity = {NULL, NULL, NULL};
  rewrite w = {rw ? rw : &identity, {NULL, 0, 0, sizeof(frame)},
               {NULL, 0, 0, sizeof(dp_expr *)}, DP__PTRMAP_INIT, NULL};
  if (!root) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "rewrite: no expression"));
    return NULL;
  }
  int rc = rw_reach(&w, root);
  while (rc == 0 && w.frames.n > 0) {
    frame *f = TOP(&w.frames, frame);
    if (f->i < f->n) rc = rw_reach(&w, dp_expr_child(f->e, f->i++));
    else rc = rw_complete(&w);
  }
  dp_expr *result = NULL;
  if (rc == 0 && w.results.n == 1) {
    result = ((dp_expr **)w.results.items)[0];
    w.results.n = 0;
  } else if (!w.err) {
    w.err = dp_err_new(DP_ERR_MEMORY, root->span, "rewrite: out of memory");
  }
  rw_cleanup(&w);
  if (!result) dp_err_set(err, w.err);
  return result;
}

/* ---------------- free variables ---------------- */

typedef struct fv {
  dp__ptrmap bound;  /* variables bound anywhere in the expression */
  dp_var **list;
  uint32_t n, cap;
  int failed;
} fv;

static void fv_bind(fv *s, dp_var *v) {
  if (!dp__ptrmap_insert(&s->bound, v, NULL)) s->failed = 1;
}

/* Pattern variables, with an explicit stack (patterns nest as written). */
static void fv_bind_pattern(fv *s, dp_pattern *p) {
  stack st = {NULL, 0, 0, sizeof(dp_pattern *)};
  dp_pattern **slot = stack_push(&st);
  if (!slot) {
    s->failed = 1;
    return;
  }
  *slot = p;
  while (st.n > 0) {
    dp_pattern *q = ((dp_pattern **)st.items)[--st.n];
    if (q->var) fv_bind(s, q->var);
    for (uint32_t i = 0; i < q->n; i++) {
      if (!(slot = stack_push(&st))) {
        s->failed = 1;
        break;
      }
      *slot = q->sub[i];
    }
  }
  free(st.items);
}

static int fv_pre(void *ud, dp_expr *e) {
  fv *s = ud;
  if (e->h.kind == DP_LET) {
    fv_bind(s, ((dp_let *)e)->var);
  } else if (e->h.kind == DP_FUNC) {
    dp_func *f = (dp_func *)e;
    for (uint32_t i = 0; i < f->nparams; i++) fv_bind(s, f->params[i]);
  } else if (e->h.kind == DP_MATCH) {
    dp_match *m = (dp_match *)e;
    for (uint32_t i = 0; i < m->n; i++) fv_bind_pattern(s, m->clauses[i].pat);
  }
  return s->failed ? -1 : 1;
}

/* Variables are leaves and each node is visited once, so post order lists
   them once each, in first-occurrence order. */
static int fv_post(void *ud, dp_expr *e) {
  fv *s = ud;
  if (e->h.kind != DP_VAR) return 0;
  if (s->n == s->cap) {
    uint32_t cap = s->cap ? s->cap * 2 : 8;
    dp_var **l = dp_realloc(s->list, cap * sizeof *l);
    if (!l) return -1;
    s->list = l;
    s->cap = cap;
  }
  s->list[s->n++] = (dp_var *)e;
  return 0;
}

dp_var **dp_free_vars(dp_expr *e, uint32_t *n) {
  fv s = {DP__PTRMAP_INIT, NULL, 0, 0, 0};
  dp_visitor v = {fv_pre, fv_post, &s};
  *n = 0;
  int rc = dp_visit(e, &v);
  dp_var **out = NULL;
  if (rc == 0) out = dp_malloc((s.n ? s.n : 1) * sizeof *out);
  if (out) {
    for (uint32_t i = 0; i < s.n; i++)
      if (!dp__ptrmap_find(&s.bound, s.list[i])) out[(*n)++] = s.list[i];
  }
  free(s.list);
  dp__ptrmap_free(&s.bound);
  return out;
}
