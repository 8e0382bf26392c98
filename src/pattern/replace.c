/*
 * What groups become: one rewrite of the body (visit.h's dp_rewrite, an
 * explicit stack) in which each group root is replaced, as TVM's
 * PatternPartitioner and PatternRewriter do:
 * - dp_dfp_composite: a call of a function literal holding the group
 *   (MergeComposite);
 * - dp_dfp_replace: whatever a callback builds from the group's bindings,
 *   read in the rewritten program (the rewriter; dp.pattern.rewrite).
 * The rewrite records the new version of every expression a group needs
 * (its inputs, its bindings) as it passes them, since they all lie below
 * the group's root and so are rewritten before it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "devplan/visit.h"

typedef struct rwctx {
  const dp_dfp_groups *gs;
  dp__ptrmap roots;      /* root -> group index + 1 (groups to replace) */
  dp__ptrmap want;       /* expressions whose new version is needed */
  dp__ptrmap got;        /* ... -> new version (owned reference) */
  /* composite */
  const char *name;
  /* replace */
  dp_dfp_replace_fn replace;
  void *ud;
} rwctx;

static void rwctx_free(rwctx *c) {
  for (uint32_t i = 0; i < c->got.cap; i++)
    if (c->got.slots[i].key) dp_release(c->got.slots[i].ptr);
  dp__ptrmap_free(&c->got);
  dp__ptrmap_free(&c->want);
  dp__ptrmap_free(&c->roots);
}

static dp_err *oom(void) { return dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"); }

/* Remembers r as the new version of orig when a group needs it. */
static int record(rwctx *c, dp_expr *orig, dp_expr *r) {
  if (!dp__ptrmap_find(&c->want, orig)) return 0;
  dp__ptrslot *old = dp__ptrmap_find(&c->got, orig);
  if (old) {
    dp_release(old->ptr);
    old->ptr = dp_retain(r);
    return 0;
  }
  if (dp__ptrmap_put(&c->got, orig, r) < 0) return -1;
  dp_retain(r);
  return 0;
}

static dp_expr *new_version(rwctx *c, dp_expr *orig) {
  dp__ptrslot *v = dp__ptrmap_find(&c->got, orig);
  return v ? v->ptr : orig;
}

/* ---------------- the composite function of a group ---------------- */

typedef struct extract {
  const dp_dfp_group *g;
  dp_var **params;
} extract;

static dp_expr *param_for(void *ud, dp_expr *orig, dp_err **err) {
  extract *x = ud;
  for (uint32_t i = 0; i < x->g->ninputs; i++)
    if (x->g->inputs[i] == orig) return dp_retain(&x->params[i]->e);
  return NULL;
}

static dp_expr *keep_rebuilt(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  return dp_retain(rebuilt);
}

static dp_attrs *composite_attrs(const char *name, const char *label, dp_err **err) {
  dp_attr items[2] = {{(char *)"Composite", dp_av_string(name)},
                      {(char *)"PartitionedFromPattern", dp_av_string(label)}};
  return dp_attrs_make(2, items, err);
}

/* fn (%FunctionVar_<n>_0, ...) { group with its inputs replaced } */
static dp_func *composite_fn(const dp_dfp_group *g, const char *name, dp_err **err) {
  dp_var **params = dp_calloc(g->ninputs ? g->ninputs : 1, sizeof *params);
  dp_func *fn = NULL;
  dp_expr *body = NULL;
  dp_attrs *attrs = NULL;
  if (!params) goto oom;
  for (uint32_t i = 0; i < g->ninputs; i++) {
    char vname[48];
    snprintf(vname, sizeof vname, "FunctionVar_%u_%u", g->number, i);
    params[i] = dp_var_new(vname, g->inputs[i]->type, NULL, DP_NOSPAN);
    if (!params[i]) goto oom;
  }
  extract x = {g, params};
  dp_rewriter rw = {param_for, keep_rebuilt, &x};
  body = dp_rewrite(g->root, &rw, err);
  if (!body) goto out;
  char *label = dp_dfp_group_label(g);
  attrs = label ? composite_attrs(name, label, err) : NULL;
  free(label);
  if (!attrs) {
    if (!label) dp_err_set(err, oom());
    goto out;
  }
  fn = dp_func_new(g->ninputs, params, body, NULL, attrs, NULL, DP_NOSPAN);
  if (!fn) goto oom;
  goto out;
oom:
  dp_err_set(err, oom());
out:
  for (uint32_t i = 0; params && i < g->ninputs; i++) dp_release(params[i]);
  free(params);
  dp_release(body);
  dp_release(attrs);
  return fn;
}

static dp_expr *composite_call(rwctx *c, const dp_dfp_group *g, dp_err **err) {
  dp_func *fn = composite_fn(g, c->name, err);
  if (!fn) return NULL;
  dp_expr **args = dp_malloc((g->ninputs ? g->ninputs : 1) * sizeof *args);
  dp_expr *call = NULL;
  if (args) {
    for (uint32_t i = 0; i < g->ninputs; i++) args[i] = new_version(c, g->inputs[i]);
    call = (dp_expr *)dp_call_new(&fn->e, g->ninputs, args, NULL, g->root->span);
  }
  free(args);
  dp_release(fn);
  if (!call) dp_err_set(err, oom());
  return call;
}

/* ---------------- the rewrite ---------------- */

/* What the callback makes of group gi (its bindings read in the rewritten
   program; the root as rebuilt); the rebuilt root when it returns nothing. */
static dp_expr *replacement(rwctx *c, uint32_t gi, dp_expr *rebuilt, dp_err **err) {
  const dp_dfp_group *g = &c->gs->items[gi];
  dp_dfp_bind *post = dp_malloc((g->nbinds ? g->nbinds : 1) * sizeof *post);
  if (!post) {
    dp_err_set(err, oom());
    return NULL;
  }
  for (uint32_t i = 0; i < g->nbinds; i++)
    post[i] = (dp_dfp_bind){g->binds[i].node, new_version(c, g->binds[i].expr)};
  dp_err *e = NULL;
  dp_expr *r = c->replace(c->ud, gi, rebuilt, post, g->nbinds, &e);
  free(post);
  if (e) {
    dp_release(r);
    dp_err_set(err, e);
    return NULL;
  }
  return r ? r : dp_retain(rebuilt);
}

static dp_expr *rw_post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  rwctx *c = ud;
  if (record(c, orig, rebuilt) < 0) {
    dp_err_set(err, oom());
    return NULL;
  }
  dp__ptrslot *slot = dp__ptrmap_find(&c->roots, orig);
  if (!slot) return dp_retain(rebuilt);
  uint32_t gi = (uint32_t)(uintptr_t)slot->ptr - 1;
  const dp_dfp_group *g = &c->gs->items[gi];
  dp_expr *r = c->name ? composite_call(c, g, err) : replacement(c, gi, rebuilt, err);
  /* a group above that takes this root as an input reads the replacement */
  if (r && record(c, orig, r) < 0) {
    dp_release(r);
    dp_err_set(err, oom());
    return NULL;
  }
  return r;
}

/* Sets up roots (the groups keep selects) and what they need. */
static int prepare(rwctx *c, const uint8_t *keep) {
  for (uint32_t i = 0; i < c->gs->n; i++) {
    const dp_dfp_group *g = &c->gs->items[i];
    if (keep && !keep[i]) continue;
    if (dp__ptrmap_put(&c->roots, g->root, (void *)(uintptr_t)(i + 1)) < 0) return -1;
    for (uint32_t k = 0; k < g->ninputs; k++)
      if (dp__ptrmap_put(&c->want, g->inputs[k], NULL) < 0) return -1;
    for (uint32_t k = 0; !c->name && k < g->nbinds; k++)
      if (dp__ptrmap_put(&c->want, g->binds[k].expr, NULL) < 0) return -1;
  }
  return 0;
}

static dp_expr *run(rwctx *c, const uint8_t *keep, dp_err **err) {
  dp_expr *r = NULL;
  if (prepare(c, keep) < 0) {
    dp_err_set(err, oom());
  } else {
    dp_rewriter rw = {NULL, rw_post, c};
    r = dp_rewrite(c->gs->body, &rw, err);
  }
  rwctx_free(c);
  return r;
}

dp_expr *dp_dfp_composite(const dp_dfp_groups *groups, const uint8_t *keep, const char *name,
                          dp_err **err) {
  rwctx c;
  memset(&c, 0, sizeof c);
  c.gs = groups;
  c.name = name ? name : "";
  return run(&c, keep, err);
}

dp_expr *dp_dfp_replace(const dp_dfp_groups *groups, dp_dfp_replace_fn replace, void *ud,
                        dp_err **err) {
  rwctx c;
  memset(&c, 0, sizeof c);
  c.gs = groups;
  c.replace = replace;
  c.ud = ud;
  return run(&c, NULL, err);
}
