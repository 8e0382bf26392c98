/*
 * Expression nodes: constructors, the free function, and uniform child
 * access (the order documented in expr.h, which every traversal uses).
 *
 * Each node is one allocation: arrays are flexible members and names are
 * copied behind the node, so a call with two arguments costs 72 bytes
 * (calls, lets, variables and projections may come from an arena instead:
 * arena.h). A variable's annotation and device, where it has either, are a
 * record in the same allocation, right before the node (expr.h,
 * dp_var_extra).
 * Constructors retain their children; the free function hands them to the
 * object layer's work list, so freeing a million-deep chain never recurses.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "devplan/expr.h"
#include "devplan/op.h"
#include "arena.h"

/* (dp_expr.mark sits in what was padding: a node is no larger for it) */
_Static_assert(sizeof(dp_expr) == 32, "dp_expr is 32 bytes");

static const char *kind_names[] = {
  NULL, "var", "global", "const", "op", "call", "fn", "let", "tuple", "proj",
  "if", "match", "ctor", "ref", "ref_read", "ref_write",
};

const char *dp_exprkind_name(int kind) {
  if (kind < DP_VAR || kind > DP_REF_WRITE) return "?";
  return kind_names[kind];
}

/* A node with its header set; the rest zeroed (new_node) or, for the
   nodes made by the million whose constructor sets every field (calls,
   lets, variables), left for it to set (set_node: no clearing first). */
static void *set_node(dp_expr *e, int kind, dp_span span) {
  if (!e) return NULL;
  e->h = (dp_obj){1, DP_OBJ_EXPR, (uint8_t)kind, 0};
  e->span = span;
  e->mark = 0;
  e->type = NULL;
  return e;
}

static void *new_node(size_t size, int kind, dp_span span) {
  return set_node(dp_calloc(1, size), kind, span);
}

static int all_set(dp_expr *const *items, uint32_t n) {
  if (n && !items) return 0;
  for (uint32_t i = 0; i < n; i++)
    if (!items[i]) return 0;
  return 1;
}

static void retain_all(dp_expr **items, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) dp_retain(items[i]);
}

/* A node made in arena a (NULL: on the heap) marked as such. */
static void *in_arena(dp__arena *a, size_t size, int kind, dp_span span) {
  int marked;
  dp_expr *e = set_node(dp__arena_alloc(a, size, &marked), kind, span);
  if (e && marked) e->h.flags = DP__OBJ_IN_ARENA;
  return e;
}

/* The record sits before the node (expr.h): the same pointer alignment, so
   the node after it is as aligned as the allocation. */
_Static_assert(sizeof(dp_var_extra) % _Alignof(dp_var) == 0 && _Alignof(dp_var_extra) <= 8,
               "a dp_var right after its dp_var_extra is aligned");
_Static_assert(sizeof(dp_var) == sizeof(dp_expr), "a variable's name follows its header");

/* A variable with neither annotation nor device (a let's, almost always)
   is its header and name; one with either carries the record before it. */
dp_var *dp__var_new_in(dp__arena *a, const char *name, dp_type *annot, dp_vdev *vdev, dp_span span) {
  if (!name) name = "";
  size_t len = strlen(name) + 1, pre = annot || vdev ? sizeof(dp_var_extra) : 0;
  int marked;
  char *mem = dp__arena_alloc(a, pre + sizeof(dp_var) + len, &marked);
  if (!mem) return NULL;
  dp_var *v = set_node((dp_expr *)(void *)(mem + pre), DP_VAR, span);
  v->e.h.flags = (uint16_t)((marked ? DP__OBJ_IN_ARENA : 0) | (pre ? DP_VAR_ANNOTATED : 0));
  if (pre) *(dp_var_extra *)(void *)mem = (dp_var_extra){dp_retain(annot), dp_retain(vdev)};
  memcpy(v->name, name, len);
  return v;
}

dp_var *dp_var_new(const char *name, dp_type *annot, dp_vdev *vdev, dp_span span) {
  return dp__var_new_in(NULL, name, annot, vdev, span);
}

dp_global *dp_global_new(const char *name, dp_span span) {
  if (!name) return NULL;
  size_t len = strlen(name) + 1;
  dp_global *g = new_node(sizeof *g + len, DP_GLOBAL, span);
  if (!g) return NULL;
  g->name = (char *)(g + 1);
  memcpy(g->name, name, len);
  return g;
}

/* Element count of a shape, or -1 when a dimension is negative or the
   byte size would overflow. */
static int64_t shape_size(uint32_t ndim, const int64_t *shape, size_t elem) {
  uint64_t n = 1;
  for (uint32_t i = 0; i < ndim; i++) {
    if (shape[i] < 0) return -1;
    if (shape[i] && n > (UINT64_MAX / 4) / (uint64_t)shape[i] / (elem ? elem : 1)) return -1;
    n *= (uint64_t)shape[i];
  }
  return (int64_t)n;
}

dp_const *dp_const_new(dp_dtype dtype, uint32_t ndim, const int64_t *shape,
                       const void *data, dp_span span, dp_err **err) {
  if (dtype == 0 || DP_DTYPE_CODE(dtype) > DP_DT_BFLOAT || DP_DTYPE_BITS(dtype) == 0) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, span, "constant: invalid dtype"));
    return NULL;
  }
  if (ndim && !shape) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, span, "constant: missing shape"));
    return NULL;
  }
  size_t elem = dp_dtype_bytes(dtype);
  int64_t count = shape_size(ndim, shape, elem);
  if (count < 0) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, span, "constant: invalid shape"));
    return NULL;
  }
  size_t nbytes = (size_t)count * elem;
  dp_const *c = new_node(sizeof *c + ndim * sizeof(int64_t) + nbytes, DP_CONST, span);
  if (!c) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, span, "out of memory"));
    return NULL;
  }
  c->dtype = dtype;
  c->ndim = ndim;
  c->shape = (int64_t *)(c + 1);
  if (ndim) memcpy(c->shape, shape, ndim * sizeof *shape);
  c->nbytes = nbytes;
  c->data = c->shape + ndim;
  if (data && nbytes) memcpy(c->data, data, nbytes); /* else zeros (calloc) */
  return c;
}

dp_call *dp__call_new_in(dp__arena *a, dp_expr *fn, uint32_t nargs, dp_expr *const *args,
                         dp_attrs *attrs, dp_span span) {
  if (!fn || !all_set(args, nargs)) return NULL;
  dp_call *c = in_arena(a, sizeof *c + nargs * sizeof(dp_expr *), DP_CALL, span);
  if (!c) return NULL;
  c->fn = dp_retain(fn);
  c->attrs = dp_retain(attrs);
  c->nargs = nargs;
  if (nargs) memcpy(c->args, args, nargs * sizeof *args);
  retain_all(c->args, nargs);
  return c;
}

dp_call *dp_call_new(dp_expr *fn, uint32_t nargs, dp_expr *const *args, dp_attrs *attrs,
                     dp_span span) {
  return dp__call_new_in(NULL, fn, nargs, args, attrs, span);
}

dp_func *dp_func_new_generic(uint32_t ntparams, dp_type *const *tparams, uint32_t nparams,
                             dp_var *const *params, dp_expr *body, dp_type *ret,
                             dp_attrs *attrs, dp_vdev *vdev, dp_span span) {
  if (!body || !all_set((dp_expr *const *)params, nparams)) return NULL;
  for (uint32_t i = 0; i < nparams; i++)
    if (params[i]->e.h.kind != DP_VAR) return NULL;
  for (uint32_t i = 0; i < ntparams; i++) {
    if (!tparams[i] || tparams[i]->h.kind != DP_TY_VAR) return NULL;
    for (uint32_t k = 0; k < i; k++)
      if (tparams[k] == tparams[i]) return NULL;
  }
  dp_func *f = new_node(sizeof *f + nparams * sizeof(dp_var *) + ntparams * sizeof(dp_type *), DP_FUNC, span);
  if (!f) return NULL;
  f->body = dp_retain(body);
  f->ret = dp_retain(ret);
  f->attrs = dp_retain(attrs);
  f->vdev = dp_retain(vdev);
  f->nparams = nparams;
  if (nparams) memcpy(f->params, params, nparams * sizeof *params);
  retain_all((dp_expr **)f->params, nparams);
  f->ntparams = ntparams;
  f->tparams = ntparams ? (dp_type **)(f->params + nparams) : NULL;
  for (uint32_t i = 0; i < ntparams; i++) f->tparams[i] = dp_retain(tparams[i]);
  return f;
}

dp_func *dp_func_new(uint32_t nparams, dp_var *const *params, dp_expr *body, dp_type *ret,
                     dp_attrs *attrs, dp_vdev *vdev, dp_span span) {
  return dp_func_new_generic(0, NULL, nparams, params, body, ret, attrs, vdev, span);
}

dp_let *dp__let_new_in(dp__arena *a, dp_var *var, dp_expr *value, dp_expr *body, dp_span span) {
  if (!var || var->e.h.kind != DP_VAR || !value || !body) return NULL;
  dp_let *l = in_arena(a, sizeof *l, DP_LET, span);
  if (!l) return NULL;
  l->var = dp_retain(var);
  l->value = dp_retain(value);
  l->body = dp_retain(body);
  return l;
}

dp_expr *dp__expr_with_children_in(dp__arena *a, dp_expr *e, dp_expr *const *kids) {
  if (e->h.kind != DP_CALL && e->h.kind != DP_LET) return dp_expr_with_children(e, kids);
  uint32_t n = dp_expr_nchildren(e), same = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (!kids[i]) return NULL;
    same += kids[i] == dp_expr_child(e, i);
  }
  return same == n ? dp_retain(e) : dp__expr_changed_in(a, e, kids);
}

dp_expr *dp__expr_changed_in(dp__arena *a, dp_expr *e, dp_expr *const *kids) {
  if (e->h.kind == DP_CALL) {
    const dp_call *call = (const dp_call *)e;
    return (dp_expr *)dp__call_new_in(a, kids[0], call->nargs, kids + 1, call->attrs, e->span);
  }
  if (e->h.kind == DP_LET) /* (NULL where kids[0] is no variable: dp__let_new_in checks) */
    return (dp_expr *)dp__let_new_in(a, (dp_var *)kids[0], kids[1], kids[2], e->span);
  return dp_expr_with_children(e, kids);
}

dp_let *dp_let_new(dp_var *var, dp_expr *value, dp_expr *body, dp_span span) {
  return dp__let_new_in(NULL, var, value, body, span);
}

dp_tuple *dp_tuple_new(uint32_t n, dp_expr *const *fields, dp_span span) {
  if (!all_set(fields, n)) return NULL;
  dp_tuple *t = new_node(sizeof *t + n * sizeof(dp_expr *), DP_TUPLE, span);
  if (!t) return NULL;
  t->n = n;
  if (n) memcpy(t->fields, fields, n * sizeof *fields);
  retain_all(t->fields, n);
  return t;
}

dp_proj *dp__proj_new_in(dp__arena *a, dp_expr *tuple, uint32_t index, dp_span span) {
  if (!tuple) return NULL;
  dp_proj *p = in_arena(a, sizeof *p, DP_PROJ, span);
  if (!p) return NULL;
  p->tuple = dp_retain(tuple);
  p->index = index;
  return p;
}

dp_proj *dp_proj_new(dp_expr *tuple, uint32_t index, dp_span span) {
  return dp__proj_new_in(NULL, tuple, index, span);
}

dp_if *dp_if_new(dp_expr *cond, dp_expr *then_, dp_expr *else_, dp_span span) {
  if (!cond || !then_ || !else_) return NULL;
  dp_if *i = new_node(sizeof *i, DP_IF, span);
  if (!i) return NULL;
  i->cond = dp_retain(cond);
  i->then_ = dp_retain(then_);
  i->else_ = dp_retain(else_);
  return i;
}

dp_match *dp_match_new(dp_expr *data, uint32_t n, const dp_clause *clauses, int complete,
                       dp_span span) {
  if (!data || (n && !clauses)) return NULL;
  for (uint32_t i = 0; i < n; i++)
    if (!clauses[i].pat || !clauses[i].rhs) return NULL;
  dp_match *m = new_node(sizeof *m + n * sizeof(dp_clause), DP_MATCH, span);
  if (!m) return NULL;
  m->data = dp_retain(data);
  m->complete = complete != 0;
  m->n = n;
  for (uint32_t i = 0; i < n; i++) {
    m->clauses[i].pat = dp_retain(clauses[i].pat);
    m->clauses[i].rhs = dp_retain(clauses[i].rhs);
  }
  return m;
}

dp_ctor *dp_ctor_new(const char *name, const char *adt_name, uint32_t tag, uint32_t ntparams,
                     dp_type *const *tparams, uint32_t ninputs, dp_type *const *inputs,
                     dp_span span) {
  if (!name || !adt_name || (ntparams && !tparams) || (ninputs && !inputs)) return NULL;
  for (uint32_t i = 0; i < ntparams; i++)
    if (!tparams[i] || tparams[i]->h.kind != DP_TY_VAR) return NULL;
  for (uint32_t i = 0; i < ninputs; i++)
    if (!inputs[i]) return NULL;
  size_t nlen = strlen(name) + 1, alen = strlen(adt_name) + 1;
  size_t nitems = (size_t)ntparams + ninputs;
  dp_ctor *c = new_node(sizeof *c + nitems * sizeof(dp_type *) + nlen + alen, DP_CTOR, span);
  if (!c) return NULL;
  c->tag = tag;
  c->ntparams = ntparams;
  c->ninputs = ninputs;
  for (uint32_t i = 0; i < ntparams; i++) c->items[i] = dp_retain(tparams[i]);
  for (uint32_t i = 0; i < ninputs; i++) c->items[ntparams + i] = dp_retain(inputs[i]);
  c->name = (char *)(c->items + nitems);
  memcpy(c->name, name, nlen);
  c->adt_name = c->name + nlen;
  memcpy(c->adt_name, adt_name, alen);
  return c;
}

dp_ref_create *dp_ref_create_new(dp_expr *value, dp_span span) {
  if (!value) return NULL;
  dp_ref_create *r = new_node(sizeof *r, DP_REF_CREATE, span);
  if (r) r->value = dp_retain(value);
  return r;
}

dp_ref_read *dp_ref_read_new(dp_expr *ref, dp_span span) {
  if (!ref) return NULL;
  dp_ref_read *r = new_node(sizeof *r, DP_REF_READ, span);
  if (r) r->ref = dp_retain(ref);
  return r;
}

dp_ref_write *dp_ref_write_new(dp_expr *ref, dp_expr *value, dp_span span) {
  if (!ref || !value) return NULL;
  dp_ref_write *r = new_node(sizeof *r, DP_REF_WRITE, span);
  if (!r) return NULL;
  r->ref = dp_retain(ref);
  r->value = dp_retain(value);
  return r;
}

/* ---------------- children ---------------- */

uint32_t dp_expr_nchildren(const dp_expr *e) {
  switch (e->h.kind) {
  case DP_CALL: return 1 + ((const dp_call *)e)->nargs;
  case DP_FUNC: return ((const dp_func *)e)->nparams + 1;
  case DP_LET: return 3;
  case DP_TUPLE: return ((const dp_tuple *)e)->n;
  case DP_PROJ: return 1;
  case DP_IF: return 3;
  case DP_MATCH: return 1 + ((const dp_match *)e)->n;
  case DP_REF_CREATE: return 1;
  case DP_REF_READ: return 1;
  case DP_REF_WRITE: return 2;
  default: return 0;
  }
}

dp_expr *dp_expr_child(const dp_expr *e, uint32_t i) {
  if (i >= dp_expr_nchildren(e)) return NULL;
  switch (e->h.kind) {
  case DP_CALL: {
    const dp_call *c = (const dp_call *)e;
    return i == 0 ? c->fn : c->args[i - 1];
  }
  case DP_FUNC: {
    const dp_func *f = (const dp_func *)e;
    return i < f->nparams ? &f->params[i]->e : f->body;
  }
  case DP_LET: {
    const dp_let *l = (const dp_let *)e;
    return i == 0 ? &l->var->e : i == 1 ? l->value : l->body;
  }
  case DP_TUPLE: return ((const dp_tuple *)e)->fields[i];
  case DP_PROJ: return ((const dp_proj *)e)->tuple;
  case DP_IF: {
    const dp_if *f = (const dp_if *)e;
    return i == 0 ? f->cond : i == 1 ? f->then_ : f->else_;
  }
  case DP_MATCH: {
    const dp_match *m = (const dp_match *)e;
    return i == 0 ? m->data : m->clauses[i - 1].rhs;
  }
  case DP_REF_CREATE: return ((const dp_ref_create *)e)->value;
  case DP_REF_READ: return ((const dp_ref_read *)e)->ref;
  case DP_REF_WRITE: {
    const dp_ref_write *w = (const dp_ref_write *)e;
    return i == 0 ? w->ref : w->value;
  }
  default: return NULL;
  }
}

void dp_expr_set_type(dp_expr *e, dp_type *t) {
  if (!e || e->type == t) return;
  dp_retain(t);
  dp_release(e->type);
  e->type = t;
}

int dp_is_op_call(const dp_expr *e, const char *name) {
  if (!e || e->h.kind != DP_CALL || !name) return 0;
  const dp_expr *fn = ((const dp_call *)e)->fn;
  return fn->h.kind == DP_OP && strcmp(((const dp_op *)fn)->name, name) == 0;
}

/* ---------------- freeing ---------------- */

/* Releases the node-specific references other than the uniform children. */
static void free_extras(dp_expr *e, dp_worklist *wl) {
  switch (e->h.kind) {
  case DP_VAR:
    dp_release_deferred(wl, dp_var_annot((dp_var *)e));
    dp_release_deferred(wl, dp_var_vdev((dp_var *)e));
    break;
  case DP_CALL: dp_release_deferred(wl, ((dp_call *)e)->attrs); break;
  case DP_FUNC: {
    dp_func *f = (dp_func *)e;
    dp_release_deferred(wl, f->ret);
    dp_release_deferred(wl, f->attrs);
    dp_release_deferred(wl, f->vdev);
    for (uint32_t i = 0; i < f->ntparams; i++) dp_release_deferred(wl, f->tparams[i]);
    break;
  }
  case DP_MATCH: {
    dp_match *m = (dp_match *)e;
    for (uint32_t i = 0; i < m->n; i++) dp_release_deferred(wl, m->clauses[i].pat);
    break;
  }
  case DP_CTOR: {
    dp_ctor *c = (dp_ctor *)e;
    for (uint32_t i = 0; i < c->ntparams + c->ninputs; i++) dp_release_deferred(wl, c->items[i]);
    break;
  }
  default: break;
  }
}

void dp__expr_free_fn(dp_obj *o, dp_worklist *wl) {
  dp_expr *e = (dp_expr *)o;
  dp_release_deferred(wl, e->type);
  e->type = NULL;
  if (e->h.kind == DP_OP) { /* the registry's node: op.c frees its own fields */
    dp__op_free((dp_op *)e);
    return;
  }
  uint32_t n = dp_expr_nchildren(e);
  for (uint32_t i = 0; i < n; i++) dp_release_deferred(wl, dp_expr_child(e, i));
  free_extras(e, wl);
  /* (an annotated variable's allocation starts at its record, before it;
     an arena finds the chunk from any address in the node) */
  void *mem = e->h.kind == DP_VAR && (e->h.flags & DP_VAR_ANNOTATED)
                  ? (void *)((char *)e - sizeof(dp_var_extra)) : (void *)e;
  if (e->h.flags & DP__OBJ_IN_ARENA) dp__arena_node_free(mem);
  else free(mem);
}
