/*
 * ShareCopies (plan.h, dp_plan_share_copies): one device_copy per value and
 * pair of devices in each function of a planned module. PlanDevices (as
 * TVM) inserts a copy per use.
 *
 * A node used in several places is one value in Relay's dataflow form, and
 * the text format binds it in the innermost evaluation scope (function
 * body, if branch, match clause) that holds all its uses, after what it
 * reads: where it dominates them. So the copies of one value between the
 * same two devices become one node, which is then made where it dominates
 * every use it serves, also when no one of them dominates the others (two
 * branches of an if that each copy the value share one copy made before
 * the if; closures that each copy a value of their context share one made
 * in it): one copy per value and destination device, the bytes placement
 * by cost counts. The value is in scope there, since it dominates its
 * uses, the copy among them.
 *
 * Requires: a planned module (capture's copies: device_copy of a value,
 * optionally under fixed on_device calls, with both ends written; the
 * user's own copies count too). Leaves: a new module whose functions share
 * their unchanged parts with the input; planning it again gives it back
 * (the copies' ends are where their argument and their readers live
 * already).
 *
 * Per function, no recursion (any depth): one walk (its own: shared nodes
 * found again by their marks) numbers the nodes in post order and keys
 * each copy (its value under its on_device calls, its two devices); the
 * first copy of a key stands for all; one rewrite
 * (dp_rewrite) replaces each copy by its representative's rebuilt node. A
 * copy of a copy that merged (a value copied to a device and back in two
 * places) is keyed by its value only then: another round merges it. Time:
 * linear in the function per round (one, or one more per level of such
 * chains).
 */
#include <stdlib.h>
#include "planner.h"

#define NONE DP__NONE_ID

typedef struct ckey { dp_expr *value; dp_vdev *src, *dst; uint32_t next, rep; } ckey;

typedef struct copy { dp_expr *e; uint32_t key, rep; } copy;

/* A node the walk keeps: a shared one (reached again: not walked twice), a
   copy, or a copied value. Found again by its mark (dp_expr.mark: its index
   here, checked against e, as index.c and report.c do), not a pointer map:
   on a plan without copies the walk's visited set was the whole pass, and
   its probes grew per node with the map's load (let, 100k -> 1M calls:
   913 -> 1,645 instructions per call). */
typedef struct node {
  dp_expr *e;
  uint32_t cp;    /* its index in cp (a planner copy), or NONE */
  uint32_t first; /* as a copied value: its first key + 1, or 0 */
} node;

typedef struct frame { dp_expr *e; uint32_t i, n; } frame;

typedef struct sctx {
  struct dp__plan_ops ops;
  copy *cp; uint32_t n, cap;  /* the planner copies, in post order */
  node *nd; uint32_t nn, capn;
  frame *st; uint32_t capst;  /* the walk's stack */
  dp_expr **made;             /* per copy that stands for others: its rebuilt node (owned) */
  ckey *k; uint32_t nk, capk;
  int again;                  /* a round merged the value of another copy */
  int oom;
} sctx;

/* e's entry in nd, or NONE. */
static uint32_t node_of(const sctx *c, const dp_expr *e) {
  uint32_t m = e->mark;
  return m < c->nn && c->nd[m].e == e ? m : NONE;
}

/* e's entry, made when it has none (NONE: out of memory). */
static uint32_t node_add(sctx *c, dp_expr *e) {
  uint32_t m = node_of(c, e);
  if (m != NONE) return m;
  if (dp_grow((void **)&c->nd, &c->capn, c->nn + 1, sizeof *c->nd) < 0) {
    c->oom = 1;
    return NONE;
  }
  c->nd[c->nn] = (node){e, NONE, 0};
  e->mark = c->nn;
  return c->nn++;
}

/* The key of a planner copy (value under its on_device calls, src, dst). */
static uint32_t key_of(sctx *c, dp_expr *e) {
  dp_expr *body, *b;
  dp_vdev *src, *dst;
  if (!dp__device_copy_props(&c->ops, e, &body, &src, &dst) || !src || !dst) return NONE;
  while ((b = dp__on_device_body(&c->ops, body))) body = b;
  uint32_t v = node_add(c, body);
  if (v == NONE) return NONE;
  for (uint32_t k = c->nd[v].first; k; k = c->k[k - 1].next)
    if (c->k[k - 1].src == src && c->k[k - 1].dst == dst) return k - 1;
  if (dp_grow((void **)&c->k, &c->capk, c->nk + 1, sizeof *c->k) < 0) {
    c->oom = 1;
    return NONE;
  }
  c->k[c->nk] = (ckey){body, src, dst, c->nd[v].first, NONE};
  c->nd[v].first = c->nk + 1;
  return c->nk++;
}

static int is_copy(const sctx *c, const dp_expr *e) {
  return e->h.kind == DP_CALL && ((const dp_call *)e)->fn == &c->ops.device_copy->e;
}

/* Post order: each planner copy keyed, its representative the first copy
   of its key. Only copies are remembered: a plan without copies costs one
   walk. */
static int number(sctx *c, dp_expr *e) {
  if (!is_copy(c, e)) return 0;
  uint32_t key = key_of(c, e);
  if (c->oom) return -1;
  if (key == NONE) return 0;
  uint32_t m = node_add(c, e);
  if (m == NONE || dp_grow((void **)&c->cp, &c->cap, c->n + 1, sizeof *c->cp) < 0) {
    c->oom = 1;
    return -1;
  }
  c->nd[m].cp = c->n;
  ckey *k = &c->k[key];
  if (k->rep == NONE) k->rep = c->n;
  c->cp[c->n] = (copy){e, key, k->rep};
  c->n++;
  return 0;
}

/* First reach of e: 0 already walked, 1 pushed, -1 out of memory. A node
   with one reference has one parent: it is reached once (as dp_visit). */
static int reach(sctx *c, dp_expr *e, uint32_t *top) {
  if (e->h.rc > 1) {
    if (node_of(c, e) != NONE) return 0;
    if (node_add(c, e) == NONE) return -1;
  }
  if (dp_grow((void **)&c->st, &c->capst, *top + 1, sizeof *c->st) < 0) return -1;
  c->st[(*top)++] = (frame){e, 0, dp_expr_nchildren(e)};
  return 1;
}

/* f's nodes in post order (as dp_visit with number as post, no recursion).
   Only a copy has something to do after its children: any other node's
   frame goes as its last child is reached, which takes its place, so a
   chain of lets (each the body of the one before) is walked in one frame,
   not a stack as deep as the chain. The copies are met in the same order. */
static int walk(sctx *c, dp_expr *f) {
  uint32_t top = 0;
  if (reach(c, f, &top) < 0) return -1;
  while (top > 0) {
    frame *fr = &c->st[top - 1];
    if (fr->i < fr->n) {
      dp_expr *k = dp_expr_child(fr->e, fr->i++);
      if (fr->i == fr->n && !is_copy(c, fr->e)) top--; /* (fr is not read again) */
      if (reach(c, k, &top) < 0) return -1;
    } else {
      top--;
      if (number(c, fr->e) < 0) return -1;
    }
  }
  return 0;
}

static dp_expr *post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  sctx *c = ud;
  (void)err;
  if (!rebuilt->type && orig->type) rebuilt->type = dp_retain(orig->type);
  uint32_t m = orig->h.kind == DP_CALL ? node_of(c, orig) : NONE;
  if (m == NONE || c->nd[m].cp == NONE) return dp_retain(rebuilt);
  uint32_t r = c->cp[c->nd[m].cp].rep;
  if (!c->made[r]) c->made[r] = dp_retain(rebuilt); /* the first member met stands for all */
  return dp_retain(c->made[r]);
}

static void forget(sctx *c) {
  if (c->made)
    for (uint32_t i = 0; i < c->n; i++) dp_release(c->made[i]);
  free(c->made);
  c->made = NULL;
  c->n = c->nk = c->nn = 0;
}

/* The function f with its copies shared; NULL + error. */
static dp_expr *share_fn(sctx *c, dp_expr *f, dp_err **err) {
  dp_expr *out = NULL;
  c->again = 0;
  if (walk(c, f) < 0 || c->oom) goto oom;
  if (c->n == 0) { /* nothing to share */
    forget(c);
    return dp_retain(f);
  }
  if (!(c->made = dp_calloc(c->n, sizeof *c->made))) goto oom;
  /* a copy of a copy that goes now has its key only after this round (a
     value copied to a device and back, twice): another round merges it */
  for (uint32_t i = 0; i < c->n && !c->again; i++) {
    uint32_t v = node_of(c, c->k[c->cp[i].key].value), j = v == NONE ? NONE : c->nd[v].cp;
    c->again = j != NONE && c->cp[j].rep != j;
  }
  dp_rewriter rw = {NULL, post, c};
  out = dp_rewrite(f, &rw, err);
  forget(c);
  return out;
oom:
  forget(c);
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return NULL;
}

dp_module *dp_plan_share_copies(dp_module *m, dp_err **err) {
  sctx c = {0};
  if (dp__plan_ops(m->ctx, &c.ops, err) < 0) return NULL;
  dp_module *out = dp_module_copy(m);
  if (!out) {
    dp__plan_ops_free(&c.ops);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    dp_expr *f = share_fn(&c, &m->funcs[i].fn->e, err);
    while (f && c.again) { /* (each round merges copies: it ends) */
      dp_expr *g = share_fn(&c, f, err);
      dp_release(f);
      f = g;
    }
    int rc = f ? dp_module_set_func(out, m->funcs[i].global->name, (dp_func *)f, err) : -1;
    dp_release(f);
    if (rc < 0) {
      dp_release(out);
      out = NULL;
      break;
    }
  }
  free(c.cp);
  free(c.k);
  free(c.nd);
  free(c.st);
  dp__plan_ops_free(&c.ops);
  return out;
}
