/*
 * MoveCopies' rewrite (move.h): applies the decisions one round made to
 * one function, in one dp_rewrite (post order, each node once, shared
 * nodes stay shared), or makes a clone of part of it (a fresh copy: new
 * variables for everything bound inside, new nodes for everything but
 * atoms, so that nothing is shared with the original).
 *
 * At each node, in this order: its own decision (become a variable, its
 * child, the copy it merged into, its let's body), then a call's new callee
 * and argument actions (wrap an argument in a copy, use another node,
 * append one), a function's new result device or appended parameter, a
 * copy around the result, a let put before it (a copy a closure made of
 * what it captures, a loop's clone); and everywhere a copy of a
 * copy back to where the value was is the value itself (looking through
 * on_device calls and through let variables bound to copies).
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"

int dp__mtable_init(dp__mtable *t, dp__mfun *f, int fresh, dp_err **err) {
  *t = (dp__mtable){0};
  t->f = f;
  t->fresh = fresh;
  if (!(t->at = dp_malloc((size_t)f->n * sizeof *t->at))) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  for (uint32_t i = 0; i < f->n; i++) t->at[i] = MV_NONE;
  return 0;
}

void dp__mtable_free(dp__mtable *t) {
  for (uint32_t i = 0; i < t->nd; i++) {
    dp_release(t->d[i].var);
    dp_release(t->d[i].callee);
    dp_release(t->d[i].before_var);
    dp_release(t->d[i].hoist_var);
  }
  for (uint32_t i = 0; i < t->na; i++) dp_release(t->a[i].var);
  for (uint32_t i = 0; i < t->freshvars.cap; i++)
    if (t->freshvars.slots[i].key) dp_release(t->freshvars.slots[i].ptr);
  dp__ptrmap_free(&t->freshvars);
  free(t->at);
  free(t->d);
  free(t->a);
  *t = (dp__mtable){0};
}

dp__mdec *dp__mtable_dec(dp__mtable *t, uint32_t id) {
  if (t->at[id] != MV_NONE) return &t->d[t->at[id]];
  if (dp_grow((void **)&t->d, &t->capd, t->nd + 1, sizeof *t->d) < 0) return NULL;
  t->d[t->nd] = (dp__mdec){0};
  t->d[t->nd].aoff = MV_NONE;
  t->at[id] = t->nd;
  t->any = 1;
  return &t->d[t->nd++];
}

/* Actions of one call are contiguous: a call gets them in one go. */
int dp__mtable_act(dp__mtable *t, uint32_t id, dp__mact act) {
  dp__mdec *d = dp__mtable_dec(t, id);
  if (!d || dp_grow((void **)&t->a, &t->capa, t->na + 1, sizeof *t->a) < 0) return -1;
  if (d->aoff == MV_NONE) {
    d->aoff = t->na;
  } else if (d->aoff + d->na != t->na) {
    /* not the last call given actions: move its actions to the end */
    if (dp_grow((void **)&t->a, &t->capa, t->na + d->na + 1, sizeof *t->a) < 0) return -1;
    memmove(&t->a[t->na], &t->a[d->aoff], d->na * sizeof *t->a);
    for (uint32_t i = d->aoff; i < d->aoff + d->na; i++) t->a[i].var = NULL; /* (moved) */
    d->aoff = t->na;
    t->na += d->na;
  }
  dp_retain(act.var);
  t->a[t->na++] = act;
  d->na++;
  return 0;
}

dp_var *dp__mvar_like(dp_var *v, dp_vdev *vd) {
  dp_var *r = dp_var_new(v->name, dp_var_annot(v), vd ? vd : dp_var_vdev(v), v->e.span);
  if (r && v->e.type) r->e.type = dp_retain(v->e.type);
  return r;
}

/* ---- the rewrite ---- */

typedef struct mrw {
  const struct dp__plan_ops *ops;
  dp__mtable *t;
  dp_expr **made;      /* id -> its rewritten node (owned) */
  dp_expr **rep;       /* id of a representative -> the node standing for its group (owned) */
  dp__ptrmap letval;   /* rewritten let variable -> rewritten value (borrowed from made) */
  dp__ptrmap letid;    /* rewritten let variable -> the let's id */
  const struct mrw *outer; /* a clone made inside a rewrite: that rewrite */
  uint32_t root, body; /* a clone: its root and the scope of its body */
} mrw;

static dp_expr *rewrite_with(const struct dp__plan_ops *ops, dp__mtable *t, uint32_t root,
                             const struct mrw *outer, dp_err **err);

static dp_err *oom(void) { return dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"); }

static int is_atom(const dp_expr *e) {
  int k = e->h.kind;
  return k == DP_VAR || k == DP_GLOBAL || k == DP_OP || k == DP_CTOR || k == DP_CONST;
}

static dp_expr *strip(const struct dp__plan_ops *ops, dp_expr *e) {
  dp_expr *b;
  while ((b = dp__on_device_body(ops, e))) e = b;
  return e;
}

/* The value a copy from b to a of x gives back without a copy: x is (under
   on_device calls, or a let variable bound to) a copy from a to b of z: z
   (borrowed), else NULL. pos: the node whose place the value takes. Through
   a let variable, z is read there from then on, and once the let goes (a
   let of a copy nobody reads) there alone: pos must run at most as often as
   the let (in its scope or a branch below it, not in a function literal). */
static dp_expr *undone(mrw *c, dp_expr *x, dp_vdev *a, dp_vdev *b, uint32_t pos) {
  dp_expr *y = strip(c->ops, x), *z;
  if (y->h.kind == DP_VAR) {
    dp__ptrslot *s = dp__ptrmap_find(&c->letval, y), *l = dp__ptrmap_find(&c->letid, y);
    dp__mfun *f = c->t->f;
    if (!s || !l || pos == MV_NONE || !dp__mscope_within(f, f->home[pos], f->home[l->val], 1)) return NULL;
    y = strip(c->ops, s->ptr);
  }
  dp_vdev *s2, *d2;
  if (dp__device_copy_props(c->ops, y, &z, &s2, &d2) && s2 == a && d2 == b && a && b) return z;
  return NULL;
}

/* out (owned, at the place of node pos) replaced when it is a copy that
   undoes a copy. */
static dp_expr *cancel(mrw *c, dp_expr *out, uint32_t pos) {
  dp_expr *x;
  dp_vdev *src, *dst;
  if (!dp__device_copy_props(c->ops, out, &x, &src, &dst) || !src || !dst) return out;
  dp_expr *z = undone(c, x, dst, src, pos);
  if (!z) return out;
  c->t->ncancel++;
  dp_retain(z);
  dp_release(out);
  return z;
}

/* A copy of x (borrowed, at the place of node pos) from src to dst, or
   what undoes it. */
static dp_expr *copy_of(mrw *c, dp_expr *x, dp_vdev *src, dp_vdev *dst, uint32_t pos, dp_err **err) {
  dp_expr *z = undone(c, x, dst, src, pos);
  if (z) {
    c->t->ncancel++;
    return dp_retain(z);
  }
  z = strip(c->ops, x); /* (no annotation around a variable: it carries its device) */
  if (z->h.kind == DP_VAR || z->h.kind == DP_GLOBAL || z->h.kind == DP_FUNC) x = z;
  dp_expr *body = dp__maybe_on_device_fixed(c->ops, x, src, err);
  if (!body) return NULL;
  dp_expr *r = dp__device_copy(c->ops, body, src, dst, err);
  dp_release(body);
  return r;
}

static dp_expr *made_of(mrw *c, uint32_t id) {
  return c->made[id] ? c->made[id] : c->t->f->x[id];
}

static void typed_like(dp_expr *e, const dp_expr *like) {
  if (e && !e->type && like->type) e->type = dp_retain(like->type);
}

/* let var = value; body, typed as body, taking both (value NULL: failed,
   with *err set or out of memory). NULL when not made. */
static dp_expr *let_before(dp_var *var, dp_expr *value, dp_expr *body, dp_span span, dp_err **err) {
  dp_let *l = value ? dp_let_new(var, value, body, span) : NULL;
  dp_release(value);
  if (l) typed_like(&l->e, body);
  else if (!*err) *err = oom();
  dp_release(body);
  return l ? &l->e : NULL;
}

/* A new node like e (variables, globals, operators, constructors
   excepted): a clone shares nothing with the original (the planner gives a
   node two functions share one device, and the text format evaluates a
   node two closures share once, outside both). */
static dp_expr *fresh_node(dp_expr *e) {
  dp_expr *r = NULL;
  switch (e->h.kind) {
  case DP_CALL: {
    dp_call *x = (dp_call *)e;
    r = (dp_expr *)dp_call_new(x->fn, x->nargs, x->args, x->attrs, e->span);
    break;
  }
  case DP_FUNC: {
    dp_func *x = (dp_func *)e;
    r = (dp_expr *)dp_func_new_generic(x->ntparams, x->tparams, x->nparams, x->params, x->body,
                                       x->ret, x->attrs, x->vdev, e->span);
    break;
  }
  case DP_LET: {
    dp_let *x = (dp_let *)e;
    r = (dp_expr *)dp_let_new(x->var, x->value, x->body, e->span);
    break;
  }
  case DP_TUPLE: {
    dp_tuple *x = (dp_tuple *)e;
    r = (dp_expr *)dp_tuple_new(x->n, x->fields, e->span);
    break;
  }
  case DP_PROJ: r = (dp_expr *)dp_proj_new(((dp_proj *)e)->tuple, ((dp_proj *)e)->index, e->span); break;
  case DP_IF: {
    dp_if *x = (dp_if *)e;
    r = (dp_expr *)dp_if_new(x->cond, x->then_, x->else_, e->span);
    break;
  }
  case DP_MATCH: {
    dp_match *x = (dp_match *)e;
    r = (dp_expr *)dp_match_new(x->data, x->n, x->clauses, x->complete, e->span);
    break;
  }
  case DP_REF_CREATE: r = (dp_expr *)dp_ref_create_new(((dp_ref_create *)e)->value, e->span); break;
  case DP_REF_READ: r = (dp_expr *)dp_ref_read_new(((dp_ref_read *)e)->ref, e->span); break;
  case DP_REF_WRITE: {
    dp_ref_write *x = (dp_ref_write *)e;
    r = (dp_expr *)dp_ref_write_new(x->ref, x->value, e->span);
    break;
  }
  case DP_CONST: { /* (the planner gives a node shared by two functions one device) */
    dp_const *x = (dp_const *)e;
    r = (dp_expr *)dp_const_new(x->dtype, x->ndim, x->shape, x->data, e->span, NULL);
    break;
  }
  default: return dp_retain(e);
  }
  if (!r) return NULL;
  typed_like(r, e);
  return r;
}

/* A match whose patterns bind the clone's variables (a pattern variable
   nothing reads keeps its old one in dp_rewrite's remap). Patterns nest as
   deep as written: explicit stack. */
static dp_pattern *fresh_pattern(dp__mtable *t, dp_pattern *root) {
  typedef struct pf { dp_pattern *p; uint32_t i; } pf;
  pf *st = NULL;
  dp_pattern **res = NULL, *out = NULL;
  uint32_t nst = 0, capst = 0, nres = 0, capres = 0;
  if (dp_grow((void **)&st, &capst, 1, sizeof *st) < 0) goto done;
  st[nst++] = (pf){root, 0};
  while (nst) {
    pf *f = &st[nst - 1];
    if (f->i < f->p->n) {
      dp_pattern *sub = f->p->sub[f->i++];
      if (dp_grow((void **)&st, &capst, nst + 1, sizeof *st) < 0) goto done;
      st[nst++] = (pf){sub, 0};
      continue;
    }
    dp_pattern *p = f->p, *r;
    nst--;
    dp_pattern **subs = res + (nres - p->n);
    switch (p->h.kind) {
    case DP_PAT_VAR: {
      dp__ptrslot *s = dp__ptrmap_find(&t->freshvars, p->var);
      r = s ? dp_pat_var(s->ptr, p->span) : dp_retain(p);
      break;
    }
    case DP_PAT_CTOR: r = dp_pat_ctor(p->ctor, p->n, subs, p->span); break;
    case DP_PAT_TUPLE: r = dp_pat_tuple(p->n, subs, p->span); break;
    default: r = dp_retain(p); break;
    }
    for (uint32_t i = 0; i < p->n; i++) dp_release(subs[i]);
    nres -= p->n;
    if (!r || dp_grow((void **)&res, &capres, nres + 1, sizeof *res) < 0) {
      dp_release(r);
      goto done;
    }
    res[nres++] = r;
  }
  out = res[0];
  nres = 0;
done:
  for (uint32_t i = 0; i < nres; i++) dp_release(res[i]);
  free(res);
  free(st);
  return out;
}

static dp_expr *fresh_match(dp__mtable *t, dp_match *m) {
  dp_clause *cl = dp_calloc(m->n ? m->n : 1, sizeof *cl);
  dp_expr *r = NULL;
  uint32_t i = 0;
  if (!cl) return NULL;
  for (; i < m->n; i++) {
    cl[i].rhs = m->clauses[i].rhs;
    if (!(cl[i].pat = fresh_pattern(t, m->clauses[i].pat))) goto done;
  }
  r = (dp_expr *)dp_match_new(m->data, m->n, cl, m->complete, m->e.span);
  if (r) typed_like(r, &m->e);
done:
  for (uint32_t k = 0; k < i; k++) dp_release(cl[k].pat);
  free(cl);
  return r;
}

/* The call out (owned) with its new callee and argument actions. */
static dp_expr *call_actions(mrw *c, const dp__mdec *d, dp_expr *out, uint32_t id, dp_err **err) {
  if (out->h.kind != DP_CALL) return out;
  dp_call *x = (dp_call *)out;
  uint32_t extra = 0;
  for (uint32_t i = 0; i < d->na; i++) {
    uint8_t k = c->t->a[d->aoff + i].kind;
    extra += k == MA_APPEND_VAR || k == MA_APPEND_USE;
  }
  uint32_t n = x->nargs + extra;
  dp_expr **args = dp_calloc(n ? n : 1, sizeof *args);
  dp_call *r = NULL;
  if (!args) goto fail;
  for (uint32_t i = 0; i < x->nargs; i++) args[i] = dp_retain(x->args[i]);
  uint32_t at = x->nargs;
  for (uint32_t i = 0; i < d->na; i++) {
    const dp__mact *a = &c->t->a[d->aoff + i];
    dp_expr *v = NULL;
    switch (a->kind) {
    case MA_WRAP:
      if (a->arg >= x->nargs) continue;
      v = copy_of(c, args[a->arg], a->src, a->dst, id, err);
      if (!v) goto fail;
      dp_release(args[a->arg]);
      args[a->arg] = v;
      break;
    case MA_USE:
      if (a->arg >= x->nargs) continue;
      dp_release(args[a->arg]);
      args[a->arg] = dp_retain(made_of(c, a->node));
      break;
    case MA_APPEND_VAR: args[at++] = dp_retain(&a->var->e); break;
    case MA_APPEND_USE: args[at++] = dp_retain(made_of(c, a->node)); break;
    }
  }
  r = dp_call_new(d->callee ? d->callee : x->fn, n, args, x->attrs, out->span);
  if (!r) goto fail;
  typed_like(&r->e, out);
  for (uint32_t i = 0; i < n; i++) dp_release(args[i]);
  free(args);
  dp_release(out);
  return &r->e;
fail:
  if (args)
    for (uint32_t i = 0; i < n; i++) dp_release(args[i]);
  free(args);
  dp_release(out);
  if (!*err) *err = oom();
  return NULL;
}

/* The function out (owned) with its new result device or parameters
   (MA_APPEND_VAR actions). */
static dp_expr *func_changes(const dp__mtable *t, const dp__mdec *d, dp_expr *out, dp_err **err) {
  if (out->h.kind != DP_FUNC) return out;
  dp_func *f = (dp_func *)out;
  uint32_t n = f->nparams;
  for (uint32_t i = 0; i < d->na; i++) n += t->a[d->aoff + i].kind == MA_APPEND_VAR;
  dp_var **ps = dp_malloc((n ? n : 1) * sizeof *ps);
  if (!ps) goto fail;
  for (uint32_t i = 0; i < f->nparams; i++) ps[i] = f->params[i];
  for (uint32_t i = 0, k = f->nparams; i < d->na; i++)
    if (t->a[d->aoff + i].kind == MA_APPEND_VAR) ps[k++] = t->a[d->aoff + i].var;
  dp_func *r = dp_func_new_generic(f->ntparams, f->tparams, n, ps, f->body, f->ret, f->attrs,
                                   d->vdev ? d->vdev : f->vdev, out->span);
  free(ps);
  if (!r) goto fail;
  if (n == f->nparams) typed_like(&r->e, out);
  dp_release(out);
  return &r->e;
fail:
  dp_release(out);
  *err = oom();
  return NULL;
}

/* Records the rewritten value of a let, by its rewritten variable. */
static int note_let_value(mrw *c, uint32_t id, dp_expr *out) {
  dp__mfun *f = c->t->f;
  for (uint32_t u = f->uoff[id]; u < f->uoff[id + 1]; u++) {
    uint32_t p = f->upar[u];
    if (f->uslot[u] != 1 || f->x[p]->h.kind != DP_LET) continue;
    uint32_t v = f->kid[f->koff[p]];
    dp_expr *var = made_of(c, v);
    if (dp__ptrmap_put(&c->letval, var, out) < 0 || dp__ptrmap_set(&c->letid, var, p, 0) < 0) return -1;
  }
  return 0;
}

static dp_expr *post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  mrw *c = ud;
  dp__mtable *t = c->t;
  typed_like(rebuilt, orig);
  uint32_t id = dp__mfun_id(t->f, orig);
  if (id == MV_NONE) return dp_retain(rebuilt);
  const dp__mdec *d = dp__mtable_get(t, id);
  dp_expr *out = NULL;
  if (d) {
    switch (d->op) {
    case MD_VAR: out = dp_retain(&d->var->e); break;
    case MD_KID: out = dp_retain(dp__child(rebuilt, d->kid)); break;
    case MD_BODY: out = dp_retain(((dp_let *)rebuilt)->body); break;
    case MD_REP:
      if (c->rep[d->rep]) { /* a later member: the first stands for it */
        out = dp_retain(c->rep[d->rep]);
        goto record;
      }
      break;
    default: break;
    }
  }
  if (!out && t->fresh && orig->h.kind == DP_VAR) {
    dp__ptrslot *s = dp__ptrmap_find(&t->freshvars, orig);
    if (s) out = dp_retain(s->ptr);
  }
  if (!out && t->fresh && rebuilt == orig && (!is_atom(orig) || orig->h.kind == DP_CONST)) {
    if (!(out = fresh_node(orig))) goto fail;
  }
  if (!out) out = dp_retain(rebuilt);
  if (t->fresh && out->h.kind == DP_MATCH && orig->h.kind == DP_MATCH) {
    dp_expr *m = fresh_match(t, (dp_match *)out);
    dp_release(out);
    if (!(out = m)) goto fail;
  }
  if (d && d->sub && out->h.kind == orig->h.kind) { /* one child becomes another node */
    uint32_t n = dp__nchildren(out);
    dp_expr **kids = dp_malloc((n ? n : 1) * sizeof *kids);
    if (!kids) {
      dp_release(out);
      goto fail;
    }
    for (uint32_t i = 0; i < n; i++) kids[i] = dp__child(out, i);
    if (d->sub_slot < n) kids[d->sub_slot] = made_of(c, d->sub_node);
    dp_expr *r = dp_expr_with_children(out, kids);
    free(kids);
    dp_release(out);
    if (!(out = r)) goto fail;
    typed_like(out, orig);
  }
  if (d && (d->callee || d->na) && !(out = call_actions(c, d, out, id, err))) return NULL;
  if (d && (d->vdev || d->na) && !(out = func_changes(t, d, out, err))) return NULL;
  if (d && d->wrap) {
    dp_expr *w = copy_of(c, out, d->src, d->dst, id, err);
    dp_release(out);
    if (!(out = w)) return NULL;
  }
  if (!(d && d->keep)) out = cancel(c, out, id);
  if (d && d->op == MD_REP && !c->rep[d->rep]) c->rep[d->rep] = dp_retain(out);
  if (d && d->hoist_var) /* the closure's copy, now made where the closure is */
    out = let_before(d->hoist_var,
                     copy_of(c, made_of(c, d->hoist_arg), d->hoist_src, d->hoist_dst, id, err), out,
                     orig->span, err);
  if (out && d && d->clone)
    out = let_before(d->before_var, rewrite_with(c->ops, d->clone, d->clone_root, c, err), out,
                     orig->span, err);
  if (!out) return NULL;
record:
  c->made[id] = dp_retain(out);
  if (note_let_value(c, id, out) < 0) {
    dp_release(out);
    goto fail;
  }
  return out;
fail:
  if (!*err) *err = oom();
  return NULL;
}

/* Every variable bound inside root gets a fresh one (a clone). */
typedef struct bctx { dp__mtable *t; int oom; } bctx;

static int bind_fresh(bctx *b, dp_var *v) {
  int fresh = 0;
  dp__ptrslot *s = dp__ptrmap_insert(&b->t->freshvars, v, &fresh);
  if (!s) return -1;
  if (!fresh) return 0;
  dp_var *n = dp__mvar_like(v, NULL);
  if (!n) {
    dp__ptrmap_remove(&b->t->freshvars, v);
    return -1;
  }
  s->ptr = n;
  return 0;
}

static int pattern_binders(bctx *b, dp_pattern *root) {
  dp_pattern **st = NULL;
  uint32_t n = 0, cap = 0;
  int rc = 0;
  if (dp_grow((void **)&st, &cap, 1, sizeof *st) < 0) return -1;
  st[n++] = root;
  while (n && rc == 0) {
    dp_pattern *p = st[--n];
    if (p->h.kind == DP_PAT_VAR) rc = bind_fresh(b, p->var);
    for (uint32_t i = 0; i < p->n && rc == 0; i++) {
      if (dp_grow((void **)&st, &cap, n + 1, sizeof *st) < 0) rc = -1;
      else st[n++] = p->sub[i];
    }
  }
  free(st);
  return rc;
}

static int binders(void *ud, dp_expr *e) {
  bctx *b = ud;
  int rc = 0;
  if (e->h.kind == DP_LET) rc = bind_fresh(b, ((dp_let *)e)->var);
  else if (e->h.kind == DP_FUNC)
    for (uint32_t i = 0; i < ((dp_func *)e)->nparams && rc == 0; i++)
      rc = bind_fresh(b, ((dp_func *)e)->params[i]);
  else if (e->h.kind == DP_MATCH)
    for (uint32_t i = 0; i < ((dp_match *)e)->n && rc == 0; i++)
      rc = pattern_binders(b, ((dp_match *)e)->clauses[i].pat);
  if (rc < 0) b->oom = 1;
  return rc;
}

/* A clone of part of a function shares what it reads from its context (a
   node whose scope is outside the clone's body runs there, once): the
   context's rewritten node, not a copy. */
static dp_expr *pre(void *ud, dp_expr *orig, dp_err **err) {
  mrw *c = ud;
  (void)err;
  if (!c->t->fresh || is_atom(orig)) return NULL;
  dp__mfun *f = c->t->f;
  uint32_t id = dp__mfun_id(f, orig);
  if (id == MV_NONE || id == c->root || c->body == MV_NONE || dp__mscope_within(f, f->home[id], c->body, 0))
    return NULL;
  if (c->outer && c->outer->made[id]) return dp_retain(c->outer->made[id]);
  return dp_retain(orig);
}

static dp_expr *rewrite_with(const struct dp__plan_ops *ops, dp__mtable *t, uint32_t root,
                             const struct mrw *outer, dp_err **err) {
  dp__mfun *f = t->f;
  uint32_t body = MV_NONE;
  if (f->x[root]->h.kind == DP_FUNC) body = dp__mfun_scope_at(f, root, ((dp_func *)f->x[root])->nparams);
  mrw c = {ops, t, NULL, NULL, DP__PTRMAP_INIT, DP__PTRMAP_INIT, outer, root, body};
  dp_expr *out = NULL;
  if (!(c.made = dp_calloc(f->n, sizeof *c.made)) || !(c.rep = dp_calloc(f->n, sizeof *c.rep))) {
    dp_err_set(err, oom());
    goto done;
  }
  if (t->fresh) {
    bctx b = {t, 0};
    dp_visitor v = {NULL, binders, &b};
    if (dp_visit(f->x[root], &v) < 0 || b.oom) {
      dp_err_set(err, oom());
      goto done;
    }
  }
  dp_rewriter rw = {t->fresh ? pre : NULL, post, &c};
  out = dp_rewrite(f->x[root], &rw, err);
done:
  if (c.made)
    for (uint32_t i = 0; i < f->n; i++) dp_release(c.made[i]);
  if (c.rep)
    for (uint32_t i = 0; i < f->n; i++) dp_release(c.rep[i]);
  free(c.made);
  free(c.rep);
  dp__ptrmap_free(&c.letval);
  dp__ptrmap_free(&c.letid);
  return out;
}

dp_expr *dp__mrewrite(const struct dp__plan_ops *ops, dp__mtable *t, uint32_t root, dp_err **err) {
  return rewrite_with(ops, t, root, NULL, err);
}
