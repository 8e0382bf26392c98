/*
 * Structural equality of expressions, types and modules, as TVM's
 * structural_equal with map_free_vars=True.
 *
 * Variables are matched by binding position (function parameters, let
 * variables, pattern variables); free variables are paired on first
 * meeting, consistently in both directions; type variables likewise.
 * Annotations, attributes, virtual devices (interned: pointer compare, no
 * device == fully unconstrained), constants by value, globals by name,
 * operators by pointer, constructors by name and ADT. Spans and checked
 * types are not compared. Sharing is not semantic, but a pair of nodes
 * already met is not compared again, so equal DAGs cost their size.
 *
 * The walk uses an explicit stack of pairs, each with the field it came
 * through: the stack is the path from the root to the pair being compared,
 * so the first difference can be reported as a path (`@main.body.args[1]`)
 * at a memory cost of the depth, not of the size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "print_internal.h"
#include "textbuf.h"

/* Field names of lua/devplan/API.md, for the difference path. */
enum {
  L_ROOT, L_CALLEE, L_ARGS, L_PARAMS, L_BODY, L_VAR, L_VALUE, L_FIELDS, L_TUPLE, L_COND,
  L_THEN, L_ELSE, L_DATA, L_RHS, L_REF
};
static const char *const label_names[] = {
  "", "callee", "args", "params", "body", "var", "value", "fields", "tuple", "cond",
  "then_branch", "else_branch", "data", "clauses", "ref"
};

typedef struct pairrec {
  const dp_expr *a, *b;
  uint32_t k;      /* next child pair to compare */
  uint16_t label;  /* the field of the parent it came through */
  uint16_t entered;
  uint32_t index;
} pairrec;

typedef struct eq {
  dp__ptrmap seen;          /* a -> b of pairs already met */
  dp__ptrmap va, vb;        /* variable pairing, both directions */
  dp__ptrmap ta, tb;        /* type variable pairing */
  pairrec *recs;          /* the stack: recs[0] is the root pair */
  uint32_t nrecs, caprecs;
  const char *root;      /* path prefix: "@main" or "<root>" */
  dp_diff *diff;
  int oom;
} eq;

/* ---------------- helpers ---------------- */

static int vdev_eq(const dp_vdev *a, const dp_vdev *b) {
  if (a == b) return 1;
  int ua = !a || dp_vdev_is_fully_unconstrained(a), ub = !b || dp_vdev_is_fully_unconstrained(b);
  return ua && ub;
}

/* Pair x with y in the maps m (x->y) and n (y->x); 1 when consistent:
   both unpaired (they get paired) or already paired together. */
static int pair_with(eq *q, dp__ptrmap *m, dp__ptrmap *n, const void *x, const void *y, int bind) {
  if (!bind) {
    dp__ptrslot *px = dp__ptrmap_find(m, x), *py = dp__ptrmap_find(n, y);
    if (px || py) return px && py && px->ptr == y && py->ptr == x;
  }
  dp__ptrslot *sx = dp__ptrmap_insert(m, x, NULL), *sy = sx ? dp__ptrmap_insert(n, y, NULL) : NULL;
  if (!sy) return q->oom = 1, 0;
  sx->ptr = (void *)y;
  sy->ptr = (void *)x;
  return 1;
}

/* ---------------- types ---------------- */

static int type_eq(eq *q, const dp_type *a, const dp_type *b) {
  struct tp { const dp_type *a, *b; } *st = NULL;
  uint32_t n = 0, cap = 0;
  int ok = 1;
  if (dp_grow((void **)&st, &cap, 1, sizeof *st) < 0) return q->oom = 1, 0;
  st[n++] = (struct tp){a, b};
  while (n && ok) {
    struct tp p = st[--n];
    /* identical types are equal, but a type variable still gets paired
       (with itself) so that it cannot pair with another one later */
    if (p.a == p.b && (!p.a || p.a->h.kind != DP_TY_VAR)) continue;
    if (!p.a || !p.b || p.a->h.kind != p.b->h.kind) { ok = 0; break; }
    const dp_type *x = p.a, *y = p.b;
    const dp_type *const *xs = NULL, *const *ys = NULL;
    uint32_t cnt = 0;
    switch (x->h.kind) {
    case DP_TY_TENSOR: {
      const dp_tensor_type *s = (const void *)x, *t = (const void *)y;
      ok = s->dtype == t->dtype && s->ndim == t->ndim &&
           !memcmp(s->dims, t->dims, s->ndim * sizeof *s->dims);
      break;
    }
    case DP_TY_TUPLE: {
      const dp_tuple_type *s = (const void *)x, *t = (const void *)y;
      ok = s->n == t->n;
      xs = (const dp_type *const *)s->fields, ys = (const dp_type *const *)t->fields, cnt = s->n;
      break;
    }
    case DP_TY_FUNC: {
      const dp_func_type *s = (const void *)x, *t = (const void *)y;
      ok = s->ntparams == t->ntparams && s->nargs == t->nargs;
      for (uint32_t i = 0; ok && i < s->ntparams; i++)
        ok = pair_with(q, &q->ta, &q->tb, s->items[i], t->items[i], 1);
      xs = (const dp_type *const *)s->items + s->ntparams;
      ys = (const dp_type *const *)t->items + t->ntparams;
      cnt = s->nargs;
      if (ok && !dp_grow((void **)&st, &cap, n + 1, sizeof *st)) st[n++] = (struct tp){s->ret, t->ret};
      break;
    }
    case DP_TY_VAR: ok = pair_with(q, &q->ta, &q->tb, x, y, 0); break;
    case DP_TY_ADT: {
      const dp_adt_type *s = (const void *)x, *t = (const void *)y;
      ok = s->nargs == t->nargs && strcmp(s->name, t->name) == 0;
      xs = (const dp_type *const *)s->args, ys = (const dp_type *const *)t->args, cnt = s->nargs;
      break;
    }
    case DP_TY_REF:
      if (!dp_grow((void **)&st, &cap, n + 1, sizeof *st))
        st[n++] = (struct tp){((const dp_ref_type *)x)->elem, ((const dp_ref_type *)y)->elem};
      break;
    default: break; /* storage: one of a kind */
    }
    if (ok && cnt && dp_grow((void **)&st, &cap, n + cnt, sizeof *st) < 0) q->oom = 1;
    for (uint32_t i = cnt; ok && !q->oom && i-- > 0;) st[n++] = (struct tp){xs[i], ys[i]};
    if (q->oom) ok = 0;
  }
  free(st);
  return ok;
}

/* ---------------- differences ---------------- */

static void put_path(eq *q, dp__tb *b, uint32_t r) {
  dp__tb_puts(b, q->root);
  for (uint32_t i = 1; i <= r; i++) {
    const pairrec *p = &q->recs[i];
    dp__tb_printf(b, ".%s", label_names[p->label]);
    if (p->label == L_ARGS || p->label == L_PARAMS || p->label == L_FIELDS)
      dp__tb_printf(b, "[%u]", p->index);
    else if (p->label == L_RHS)
      dp__tb_printf(b, "[%u].rhs", p->index);
  }
}

/* Record the difference at pair r; `what` (may be NULL) extends the path,
   la/lb (may be NULL: the pair printed) are the two sides, taken over. */
static int differ(eq *q, uint32_t r, const char *what, char *la, char *lb) {
  if (q->diff && !q->diff->path) {
    dp__tb b;
    dp__tb_init(&b);
    put_path(q, &b, r);
    if (what) dp__tb_puts(&b, what);
    q->diff->path = dp__tb_take(&b);
    q->diff->lhs = la ? la : dp__print_short(q->recs[r].a, 6);
    q->diff->rhs = lb ? lb : dp__print_short(q->recs[r].b, 6);
    return 0;
  }
  free(la);
  free(lb);
  return 0;
}

static char *type_or_none(const dp_type *t) {
  return t ? dp_type_str(t) : dp_strdup("(none)");
}

static char *vdev_or_none(const dp_vdev *v) {
  return v ? dp_vdev_str(v) : dp_strdup("(none)");
}

static char *aval_or_absent(const dp_aval *v) {
  if (!v) return dp_strdup("(absent)");
  if (v->kind == DP_AV_EXPR && v->u.expr) return dp__print_short(v->u.expr, 3);
  return dp_av_str(v);
}

/* ---------------- the walk ---------------- */

static void push(eq *q, const dp_expr *a, const dp_expr *b, int label, uint32_t index) {
  if (dp_grow((void **)&q->recs, &q->caprecs, q->nrecs + 1, sizeof *q->recs) < 0) {
    q->oom = 1;
    return;
  }
  q->recs[q->nrecs++] = (pairrec){a, b, 0, (uint16_t)label, 0, index};
}

static int attrs_eq(eq *q, uint32_t r, const dp_attrs *a, const dp_attrs *b) {
  uint32_t na = a ? a->n : 0, nb = b ? b->n : 0;
  for (uint32_t i = 0; i < na; i++) {
    const dp_aval *y = b ? dp_attrs_get(b, a->items[i].key) : NULL;
    if (!y || !dp_av_equal(&a->items[i].val, y)) {
      char what[128];
      snprintf(what, sizeof what, ".attrs.%s", a->items[i].key);
      return differ(q, r, what, aval_or_absent(&a->items[i].val), aval_or_absent(y));
    }
  }
  for (uint32_t i = 0; i < nb; i++) {
    if (!a || !dp_attrs_get(a, b->items[i].key)) {
      char what[128];
      snprintf(what, sizeof what, ".attrs.%s", b->items[i].key);
      return differ(q, r, what, aval_or_absent(NULL), aval_or_absent(&b->items[i].val));
    }
  }
  return 1;
}

/* Pair two binders: annotations and devices must agree. */
static int bind_var(eq *q, uint32_t r, const dp_var *a, const dp_var *b, const char *where) {
  char what[64];
  if (!type_eq(q, dp_var_annot(a), dp_var_annot(b))) {
    snprintf(what, sizeof what, "%s.type_annotation", where);
    return differ(q, r, what, type_or_none(dp_var_annot(a)), type_or_none(dp_var_annot(b)));
  }
  if (!vdev_eq(dp_var_vdev(a), dp_var_vdev(b))) {
    snprintf(what, sizeof what, "%s.virtual_device", where);
    return differ(q, r, what, vdev_or_none(dp_var_vdev(a)), vdev_or_none(dp_var_vdev(b)));
  }
  return pair_with(q, &q->va, &q->vb, a, b, 1);
}

static int var_eq(eq *q, uint32_t r, const dp_var *a, const dp_var *b) {
  dp__ptrslot *pa = dp__ptrmap_find(&q->va, a), *pb = dp__ptrmap_find(&q->vb, b);
  if (!pa && !pb) return bind_var(q, r, a, b, ""); /* free variables: pair on first meeting */
  if (pa && pb && pa->ptr == b && pb->ptr == a) return 1;
  return differ(q, r, NULL, NULL, NULL);
}

static int const_eq(const dp_const *a, const dp_const *b) {
  return a->dtype == b->dtype && a->ndim == b->ndim && a->nbytes == b->nbytes &&
         !memcmp(a->shape, b->shape, a->ndim * sizeof *a->shape) &&
         !memcmp(a->data, b->data, a->nbytes);
}

/* Patterns of a clause: same shape, constructors by name, variables bound. */
static int pattern_eq(eq *q, uint32_t r, uint32_t clause, const dp_pattern *a,
                      const dp_pattern *b) {
  struct pp { const dp_pattern *a, *b; } *st = NULL;
  uint32_t n = 0, cap = 0;
  int ok = 1;
  if (dp_grow((void **)&st, &cap, 1, sizeof *st) < 0) return q->oom = 1, 0;
  st[n++] = (struct pp){a, b};
  while (n && ok) {
    struct pp p = st[--n];
    ok = p.a->h.kind == p.b->h.kind && p.a->n == p.b->n;
    if (ok && p.a->h.kind == DP_PAT_CTOR)
      ok = !strcmp(p.a->ctor->name, p.b->ctor->name) &&
           !strcmp(p.a->ctor->adt_name, p.b->ctor->adt_name);
    if (ok && p.a->h.kind == DP_PAT_VAR) {
      char where[48];
      snprintf(where, sizeof where, ".clauses[%u].pattern", clause);
      if (!bind_var(q, r, p.a->var, p.b->var, where)) {
        free(st);
        return 0;
      }
    }
    if (ok && dp_grow((void **)&st, &cap, n + p.a->n, sizeof *st) < 0) ok = 0, q->oom = 1;
    for (uint32_t i = p.a->n; ok && i-- > 0;) st[n++] = (struct pp){p.a->sub[i], p.b->sub[i]};
  }
  free(st);
  if (!ok && !q->oom) {
    char what[48];
    snprintf(what, sizeof what, ".clauses[%u].pattern", clause);
    return differ(q, r, what, NULL, NULL);
  }
  return ok;
}

static int func_eq(eq *q, uint32_t r, const dp_func *a, const dp_func *b) {
  if (a->nparams != b->nparams) return differ(q, r, ".params", NULL, NULL);
  if (a->ntparams != b->ntparams) return differ(q, r, ".type_params", NULL, NULL);
  for (uint32_t i = 0; i < a->ntparams; i++) /* (before the types that mention them) */
    if (!pair_with(q, &q->ta, &q->tb, a->tparams[i], b->tparams[i], 1)) return 0;
  if (!vdev_eq(a->vdev, b->vdev))
    return differ(q, r, ".virtual_device", vdev_or_none(a->vdev), vdev_or_none(b->vdev));
  if (!type_eq(q, a->ret, b->ret))
    return differ(q, r, ".ret_type", type_or_none(a->ret), type_or_none(b->ret));
  if (!attrs_eq(q, r, a->attrs, b->attrs)) return 0;
  for (uint32_t i = 0; i < a->nparams; i++) {
    char where[32];
    snprintf(where, sizeof where, ".params[%u]", i);
    if (!bind_var(q, r, a->params[i], b->params[i], where)) return 0;
  }
  return 1;
}

/* The pair's own fields (its children are compared after, as pairs). */
static int node_eq(eq *q, uint32_t r) {
  const dp_expr *a = q->recs[r].a, *b = q->recs[r].b;
  if (a->h.kind != b->h.kind) return differ(q, r, NULL, NULL, NULL);
  switch (a->h.kind) {
  case DP_VAR: return var_eq(q, r, (const dp_var *)a, (const dp_var *)b);
  case DP_GLOBAL:
    return !strcmp(((const dp_global *)a)->name, ((const dp_global *)b)->name) ||
           differ(q, r, NULL, NULL, NULL);
  case DP_CONST:
    return const_eq((const dp_const *)a, (const dp_const *)b) || differ(q, r, NULL, NULL, NULL);
  case DP_OP: return differ(q, r, NULL, NULL, NULL); /* a != b */
  case DP_CTOR: {
    const dp_ctor *x = (const dp_ctor *)a, *y = (const dp_ctor *)b;
    return (!strcmp(x->name, y->name) && !strcmp(x->adt_name, y->adt_name)) ||
           differ(q, r, NULL, NULL, NULL);
  }
  case DP_CALL: {
    const dp_call *x = (const dp_call *)a, *y = (const dp_call *)b;
    if (x->nargs != y->nargs) return differ(q, r, ".args", NULL, NULL);
    return attrs_eq(q, r, x->attrs, y->attrs);
  }
  case DP_FUNC: return func_eq(q, r, (const dp_func *)a, (const dp_func *)b);
  case DP_LET:
    return bind_var(q, r, ((const dp_let *)a)->var, ((const dp_let *)b)->var, ".var");
  case DP_TUPLE:
    return ((const dp_tuple *)a)->n == ((const dp_tuple *)b)->n ||
           differ(q, r, ".fields", NULL, NULL);
  case DP_PROJ:
    return ((const dp_proj *)a)->index == ((const dp_proj *)b)->index ||
           differ(q, r, ".index", NULL, NULL);
  case DP_MATCH: {
    const dp_match *x = (const dp_match *)a, *y = (const dp_match *)b;
    if (x->complete != y->complete) return differ(q, r, ".complete", NULL, NULL);
    if (x->n != y->n) return differ(q, r, ".clauses", NULL, NULL);
    for (uint32_t i = 0; i < x->n; i++)
      if (!pattern_eq(q, r, i, x->clauses[i].pat, y->clauses[i].pat)) return 0;
    return 1;
  }
  case DP_IF: case DP_REF_CREATE: case DP_REF_READ: case DP_REF_WRITE: return 1;
  default: return differ(q, r, NULL, NULL, NULL);
  }
}

/* Child pair k of a pair whose own fields are equal (so are its counts),
   in the order compared: 0 when there is no child k. Binders are not
   children here: node_eq paired them. */
static int child_pair(const pairrec *p, uint32_t k, pairrec *c) {
  const dp_expr *a = p->a, *b = p->b;
  *c = (pairrec){NULL, NULL, 0, L_ROOT, 0, 0};
#define CHILD(X, Y, L, I) (c->a = (X), c->b = (Y), c->label = (L), c->index = (I), 1)
  switch (a->h.kind) {
  case DP_CALL: {
    const dp_call *x = (const dp_call *)a, *y = (const dp_call *)b;
    if (k == 0) return CHILD(x->fn, y->fn, L_CALLEE, 0);
    return k <= x->nargs && CHILD(x->args[k - 1], y->args[k - 1], L_ARGS, k - 1);
  }
  case DP_FUNC:
    return k == 0 && CHILD(((const dp_func *)a)->body, ((const dp_func *)b)->body, L_BODY, 0);
  case DP_LET: {
    const dp_let *x = (const dp_let *)a, *y = (const dp_let *)b;
    if (k == 0) return CHILD(x->value, y->value, L_VALUE, 0);
    return k == 1 && CHILD(x->body, y->body, L_BODY, 0);
  }
  case DP_TUPLE: {
    const dp_tuple *x = (const dp_tuple *)a, *y = (const dp_tuple *)b;
    return k < x->n && CHILD(x->fields[k], y->fields[k], L_FIELDS, k);
  }
  case DP_PROJ:
    return k == 0 && CHILD(((const dp_proj *)a)->tuple, ((const dp_proj *)b)->tuple, L_TUPLE, 0);
  case DP_IF: {
    const dp_if *x = (const dp_if *)a, *y = (const dp_if *)b;
    if (k == 0) return CHILD(x->cond, y->cond, L_COND, 0);
    if (k == 1) return CHILD(x->then_, y->then_, L_THEN, 0);
    return k == 2 && CHILD(x->else_, y->else_, L_ELSE, 0);
  }
  case DP_MATCH: {
    const dp_match *x = (const dp_match *)a, *y = (const dp_match *)b;
    if (k == 0) return CHILD(x->data, y->data, L_DATA, 0);
    return k <= x->n && CHILD(x->clauses[k - 1].rhs, y->clauses[k - 1].rhs, L_RHS, k - 1);
  }
  case DP_REF_CREATE:
    return k == 0 && CHILD(((const dp_ref_create *)a)->value, ((const dp_ref_create *)b)->value, L_VALUE, 0);
  case DP_REF_READ:
    return k == 0 && CHILD(((const dp_ref_read *)a)->ref, ((const dp_ref_read *)b)->ref, L_REF, 0);
  case DP_REF_WRITE: {
    const dp_ref_write *x = (const dp_ref_write *)a, *y = (const dp_ref_write *)b;
    if (k == 0) return CHILD(x->ref, y->ref, L_REF, 0);
    return k == 1 && CHILD(x->value, y->value, L_VALUE, 0);
  }
  default: return 0;
  }
#undef CHILD
}

/* Entering a pair: skipped when identical (a shared, unchanged part) or
   already met (a DAG); a node of a met again with another partner is
   compared again (a DAG against its tree form). 1: compare it. */
static int enter(eq *q, const dp_expr *x, const dp_expr *y) {
  if (x == y && x->h.kind != DP_VAR) return 0;
  /* a node held once has one parent: it cannot be met again */
  if (x->h.kind != DP_VAR && x->h.rc > 1) {
    int fresh;
    dp__ptrslot *m = dp__ptrmap_insert(&q->seen, x, &fresh);
    if (!m) return q->oom = 1, 0;
    if (!fresh && m->ptr == y) return 0;
    if (fresh) m->ptr = (void *)y;
  }
  return 1;
}

/* Depth first, a pair's fields before its children, children in order:
   the first difference met is the one reported. */
static int walk(eq *q, const dp_expr *a, const dp_expr *b) {
  push(q, a, b, L_ROOT, 0);
  while (q->nrecs && !q->oom) {
    uint32_t r = q->nrecs - 1;
    pairrec *p = &q->recs[r];
    if (!p->entered) {
      p->entered = 1;
      if (!enter(q, p->a, p->b)) {
        q->nrecs--;
        continue;
      }
      if (!node_eq(q, r)) return 0;
      p = &q->recs[r];
    }
    pairrec c;
    if (!child_pair(p, p->k++, &c)) {
      q->nrecs--;
      continue;
    }
    push(q, c.a, c.b, c.label, c.index);
    if (!c.a || !c.b) { /* an absent child (built IR has none): defensive */
      if (c.a == c.b) {
        q->nrecs--;
        continue;
      }
      char *la = c.a ? dp__print_short(c.a, 6) : dp_strdup("(none)");
      char *lb = c.b ? dp__print_short(c.b, 6) : dp_strdup("(none)");
      return q->oom ? (free(la), free(lb), 0) : differ(q, q->nrecs - 1, NULL, la, lb);
    }
  }
  return !q->oom;
}

static void eq_init(eq *q, const char *root, dp_diff *diff) {
  memset(q, 0, sizeof *q);
  q->seen = DP__PTRMAP_INIT;
  q->va = DP__PTRMAP_INIT;
  q->vb = DP__PTRMAP_INIT;
  q->ta = DP__PTRMAP_INIT;
  q->tb = DP__PTRMAP_INIT;
  q->root = root;
  q->diff = diff;
}

static void eq_free(eq *q) {
  dp__ptrmap_free(&q->seen);
  dp__ptrmap_free(&q->va);
  dp__ptrmap_free(&q->vb);
  dp__ptrmap_free(&q->ta);
  dp__ptrmap_free(&q->tb);
  free(q->recs);
}

/* ---------------- public ---------------- */

void dp_diff_clear(dp_diff *d) {
  if (!d) return;
  free(d->path);
  free(d->lhs);
  free(d->rhs);
  d->path = d->lhs = d->rhs = NULL;
}

static int expr_eq_at(const dp_expr *a, const dp_expr *b, const char *root, dp_diff *diff) {
  eq q;
  eq_init(&q, root, diff);
  int ok = walk(&q, a, b);
  if (q.oom) ok = -1;
  eq_free(&q);
  return ok;
}

int dp_expr_equal(const dp_expr *a, const dp_expr *b, dp_diff *diff) {
  if (diff) dp_diff_clear(diff);
  return expr_eq_at(a, b, "<root>", diff);
}

int dp_type_equal(const dp_type *a, const dp_type *b) {
  eq q;
  eq_init(&q, "", NULL);
  int ok = type_eq(&q, a, b);
  if (q.oom) ok = -1;
  eq_free(&q);
  return ok;
}

/* A module-level difference: path and both sides given as text. */
static int mdiff(dp_diff *d, const char *path, const char *lhs, const char *rhs) {
  if (d && !d->path) {
    d->path = dp_strdup(path);
    d->lhs = dp_strdup(lhs);
    d->rhs = dp_strdup(rhs);
  }
  return 0;
}

static int buffer_eq(const dp_buffer *a, const dp_buffer *b) {
  const char *sa = a->scope ? a->scope : "", *sb = b->scope ? b->scope : "";
  return dp_type_equal(a->type, b->type) && !strcmp(sa, sb);
}

static int primfns_eq(const dp_module *a, const dp_module *b, dp_diff *d) {
  char path[256];
  if (a->nprims != b->nprims) return mdiff(d, "primfns", "(count differs)", "(count differs)");
  for (uint32_t i = 0; i < a->nprims; i++) {
    const dp_primfn *x = a->prims[i], *y = b->prims[i];
    snprintf(path, sizeof path, "primfn @%s", x->name);
    if (strcmp(x->name, y->name)) return mdiff(d, path, x->name, y->name);
    int ok = x->nargs == y->nargs && buffer_eq(&x->result, &y->result);
    for (uint32_t k = 0; ok && k < x->nargs; k++) ok = buffer_eq(&x->args[k], &y->args[k]);
    if (!ok) return mdiff(d, path, "(buffers differ)", "(buffers differ)");
  }
  return 1;
}

static int typedef_eq(const dp_typedef *x, const dp_typedef *y) {
  eq q;
  eq_init(&q, "", NULL);
  int ok = !strcmp(x->name, y->name) && x->ntparams == y->ntparams && x->nctors == y->nctors;
  for (uint32_t i = 0; ok && i < x->ntparams; i++)
    ok = pair_with(&q, &q.ta, &q.tb, x->tparams[i], y->tparams[i], 1);
  for (uint32_t i = 0; ok && i < x->nctors; i++) {
    const dp_ctor *s = x->ctors[i], *t = y->ctors[i];
    ok = !strcmp(s->name, t->name) && s->ninputs == t->ninputs;
    for (uint32_t k = 0; ok && k < s->ninputs; k++)
      ok = type_eq(&q, s->items[s->ntparams + k], t->items[t->ntparams + k]);
  }
  if (q.oom) ok = -1;
  eq_free(&q);
  return ok;
}

int dp_module_equal(const dp_module *a, const dp_module *b, dp_diff *diff) {
  if (diff) dp_diff_clear(diff);
  if (!primfns_eq(a, b, diff)) return 0;
  if (a->ntypedefs != b->ntypedefs) return mdiff(diff, "typedefs", "(count differs)", "(count differs)");
  for (uint32_t i = 0; i < a->ntypedefs; i++) {
    int same = typedef_eq(a->typedefs[i], b->typedefs[i]);
    if (same < 0) return -1;
    if (!same) {
      char path[256];
      snprintf(path, sizeof path, "type %s", a->typedefs[i]->name);
      return mdiff(diff, path, a->typedefs[i]->name, b->typedefs[i]->name);
    }
  }
  for (uint32_t i = 0; i < a->nfuncs || i < b->nfuncs; i++) {
    if (i >= a->nfuncs || i >= b->nfuncs) {
      const char *name = i < a->nfuncs ? a->funcs[i].global->name : b->funcs[i].global->name;
      return mdiff(diff, "functions", i < a->nfuncs ? name : "(absent)",
                   i < b->nfuncs ? name : "(absent)");
    }
    const char *na = a->funcs[i].global->name, *nb = b->funcs[i].global->name;
    if (strcmp(na, nb)) return mdiff(diff, "functions", na, nb);
    char root[256];
    snprintf(root, sizeof root, "@%s", na);
    int same = expr_eq_at(&a->funcs[i].fn->e, &b->funcs[i].fn->e, root, diff);
    if (same != 1) return same;
  }
  return 1;
}
