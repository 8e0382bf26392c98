/*
 * Phase 2, defaulting.
 *
 * Requires: the domains after analysis (and whatever a script changed).
 * Leaves: every domain of a numbered node constrained (a device for each
 * value, the configuration's default where nothing decided); or, where a
 * default conflicts, dp__default returns 1 with the conflict in d->failed.
 *
 * First the free on_device calls (neither body nor result constrained: "a
 * copy is allowed here") try to put their body and result on one device,
 * so that defaulting does not choose devices that only cause copies; a
 * failed try changes nothing. Then TVM's rules fix what is still free,
 * function by function and each in pre order: a function's result takes
 * the configuration's default device and its parameters the result's; a
 * call's callee domain likewise (for operators: the call's result, then its
 * arguments); a let-bound variable takes the device of the whole let.
 *
 * The rules are order dependent by design (TVM's): the first rule to reach
 * a free class decides it. devplan fixes the order from the program alone:
 * functions callers first, then by name (order.c), so the same program
 * gives the same plan whatever the order of its definitions; within a
 * function, pre order.
 *
 * Before capture (dp__default_for_capture) the rules are skipped where they
 * would change nothing (settled), and after a placement by cost, where
 * only the classes no flow reached are free and no device can be refined,
 * only the rules of nodes that reach such a class run (dctx.free): the
 * same domains, without a pass of every rule over every node.
 */
#include <stdlib.h>
#include "planner.h"

typedef struct dctx {
  dp__domains *d;
  dp__index *ix;
  uint32_t dflt;
  dp_err *err;
  uint8_t *free;  /* NULL: every rule runs; else settled's marks (free[x]: domain x's class
                     was free), and only the rules of nodes that reach a free class run */
  uint32_t nfree; /* domains marked */
} dctx;

static int is_free_on_device(const dp__index *ix, uint32_t id) {
  return ix->what[id] == W_ON_DEVICE && !(dp__ann(ix, id) & (ON_CBODY | ON_CRESULT));
}

static int free_on_device(dctx *c, uint32_t id) {
  dp__domains *d = c->d;
  /* a failed try (1) changes nothing */
  return dp__unify(d, dp__dom_at(d, id), dp__kdom(d, id, 1), R_FREE_ON_DEVICE, c->ix->x[id], &c->err) < 0
             ? -1 : 0;
}

static int default_call(dctx *c, uint32_t id, dp_call *call) {
  dp__domains *d = c->d;
  uint32_t f = dp__callee_dom(d, id);
  if (f != DP__NONE_ID)
    return dp__set_result_default_then_params(d, f, c->dflt, R_DEF_CALL, &call->e, &c->err);
  /* operators and constructors: params are the arguments' domains */
  uint32_t me = dp__dom_at(d, id);
  int rc = dp__set_default(d, me, c->dflt, R_DEF_CALL, &call->e, &c->err);
  uint32_t rv = dp__dom_source(d, me);
  /* (call->nargs, not read cold: an operator's call has no slot for it) */
  uint32_t nargs = c->ix->koff[id + 1] - c->ix->koff[id] - 1 + dp__skip(c->ix, id);
  for (uint32_t i = 0; i < nargs && rc == 0; i++)
    rc = dp__set_default(d, dp__kdom(d, id, 1 + i), rv, R_DEF_CALL, &call->e, &c->err);
  return rc;
}

/* TVM's defaulting rules for one node. */
static int default_node(dctx *c, uint32_t id) {
  dp__domains *d = c->d;
  dp_expr *e = c->ix->x[id]; /* (its kind is the index's: e is read only where needed) */
  int rc = 0;
  switch (c->ix->kind[id] & K_KIND) {
  case DP_FUNC:
    if (c->ix->what[id] == W_PRIM_FUNC) return 0;
    rc = dp__set_result_default_then_params(d, dp__dom_at(d, id), c->dflt, R_DEF_RESULT, e, &c->err);
    break;
  case DP_CALL: rc = default_call(c, id, (dp_call *)e); break;
  case DP_LET: {
    uint32_t lv = dp__dom_source(d, dp__dom_at(d, id));
    rc = dp__set_default(d, dp__kdom(d, id, 0), lv ? lv : c->dflt, R_DEF_LET, e, &c->err);
    break;
  }
  default: break;
  }
  if (rc == 0 && d->oom) {
    c->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    rc = -1;
  }
  return rc;
}

/* ---- the rules of the nodes that reach a free class ---- */

/* ---- the rules of the nodes that reach a free class ----
   Where settled() answered 2, a rule whose domains are all decided changes
   nothing (no device it could take a default from refines them), so the
   rules of the other nodes, run in the same order, leave the domains as
   all of them would. After min_bytes that is most nodes (on the generated
   workloads a third of branchy's, a tenth of the chain's reach a free
   class). c->free[x]: domain x's class was free (or is a function's) when
   the rules started; domains made since are counted free. Nothing else
   changes: a rule only merges a free class with a device, and a decided
   class is never refined, so 0 stays exact; a 1 is asked of the class
   again (an earlier rule may have decided it). */
static int dom_free_now(dctx *c, uint32_t x) {
  const dp__dnode *r = &c->d->nodes[dp__dom_find(c->d, x)];
  return r->isfn || !r->vdev;
}

/* (inline: the mark is all most nodes' children need) */
static inline int dom_free(dctx *c, uint32_t x) {
  return x < c->nfree && !c->free[x] ? 0 : dom_free_now(c, x);
}

/* A child not numbered (DP__NONE_ID): the rule looks. */
static inline int kid_free(dctx *c, uint32_t k) {
  return k == DP__NONE_ID || dom_free(c, dp__dom_at(c->d, k));
}

/* Might the rule of node id change a class: does it default one that was
   free? (default_node's cases, reading the marks instead of the domains.) */
static int touches_free(dctx *c, uint32_t id) {
  const dp__index *ix = c->ix;
  switch (ix->kind[id] & K_KIND) {
  case DP_FUNC: return ix->what[id] != W_PRIM_FUNC && dom_free(c, dp__dom_at(c->d, id));
  case DP_CALL: {
    uint32_t i = ix->what[id] == W_LOWERED ? 1 : 0; /* (dp__callee_dom's cases) */
    if (i || ix->what[id] == W_FN_CALL) {
      int k = dp__child(ix->x[id], i)->h.kind;
      if (k != DP_OP && k != DP_CTOR) return kid_free(c, dp__kid(ix, id, i));
    }
    if (dom_free(c, dp__dom_at(c->d, id))) return 1;
    /* (the arguments: the index's children 1 on) */
    for (uint32_t o = ix->koff[id] + 1 - dp__skip(ix, id), end = ix->koff[id + 1]; o < end; o++)
      if (kid_free(c, ix->kid[o])) return 1;
    return 0;
  }
  case DP_LET: return kid_free(c, dp__kid(ix, id, 0));
  default: return 0;
  }
}

static int run(dctx *c, const uint32_t *order) {
  const dp__index *ix = c->ix;
  dp__domains *d = c->d;
  /* (placing by cost decided free on_device calls: their body and result
     are a flow) */
  for (uint32_t k = 0; k < ix->nfn && !ix->relax; k++) {
    uint32_t fn = order ? order[k] : k, id;
    dp__post it;
    dp__post_start(&it, ix, fn, fn + 1);
    while ((id = dp__post_next(&it)) != DP__NONE_ID)
      if (is_free_on_device(ix, id) && free_on_device(c, id) < 0) return -1;
  }
  /* A rule that takes a default from a device (parameters from their
     function's result, arguments from their operator call's, a let variable
     from its let's) reads it as it is then; a later rule may still fill in
     fields of it (a memory scope, an id). Planning the output again would
     read the filled-in device, so the rules run again until nothing more is
     filled in: the plan is then a fixed point (idempotent). A pass only
     fills unconstrained fields, so this ends; most modules need one pass. */
  d->repass = 1;
  for (int pass = 0; d->repass && pass < 8; pass++) {
    d->repass = 0;
    for (uint32_t k = 0; k < ix->nfn; k++) {
      uint32_t fn = order ? order[k] : k;
      for (uint32_t id = ix->fnid[fn]; id < ix->fnid[fn + 1]; id++) {
        if (c->free && !touches_free(c, id)) continue;
        int rc = default_node(c, id);
        if (rc) return rc;
      }
    }
  }
  return 0;
}

/* Would TVM's rules change nothing here? So when no first-order class is
   free and none of their devices is one a default could refine: a rule
   defaults a class from the configuration's default device or from
   another class's device, every one of them in the device table, and
   refines it only where dp__dev_default answers another device. (Asked of
   the devices themselves, without adding what a default would make to
   the table, which other phases read.) Domains, not nodes: sequential
   passes over the union-find, where the rules take a find per node.
   1: settled. After a placement (ix->relax) also 2: the classes no flow
   reached are free, but no device (the default's included) can be
   refined: then only the rules that reach a free class run (dctx.free). */
/* No device seen[] marks can be refined by one of the table's. */
static int unrefined(dp__devices *t, const uint8_t *seen) {
  for (uint32_t a = 1; a < t->n; a++) {
    if (!seen[a]) continue;
    for (uint32_t b = 1; b < t->n; b++) {
      if (b == a) continue;
      dp_vdev *v = dp_vdev_default(t->v[a], t->v[b]);
      dp_vdev *k = v ? dp_config_canonical(t->cfg, v, NULL) : NULL;
      int same = v && (k ? k : v) == t->v[a];
      dp_release(k);
      dp_release(v);
      if (!same) return 0;
    }
  }
  return 1;
}

/* settled() after a placement: one pass makes every path one step and
   marks each domain's class free or not (dctx.free's marks, *marks). */
static int settled_placed(dp__domains *d, uint8_t **marks) {
  dp__devices *t = d->dev;
  uint8_t *seen = dp_calloc(t->n, 1), *fr = dp_malloc(d->nnodes ? d->nnodes : 1);
  int ok = 1, nfree = 0;
  if (!seen || !fr) ok = 0; /* (then the rules run, and say so if they fail) */
  else fr[0] = 1;
  for (uint32_t x = 1; x < d->nnodes && ok >= 0 && fr && seen; x++) {
    uint32_t r = d->nodes[x].parent;
    if (d->nodes[r].parent != r) r = dp__dom_find(d, x);
    const dp__dnode *nd = &d->nodes[r];
    fr[x] = nd->isfn || !nd->vdev;
    if (nd->isfn || r != x) continue;
    if (nd->vdev == 0) ok = 0, nfree = 1;
    else if (nd->vdev >= t->n) ok = -1;
    else seen[nd->vdev] = 1;
  }
  if (ok < 0) ok = nfree = 0;
  if (nfree && t->dflt < t->n) seen[t->dflt] = 1; /* (what the free classes take) */
  if ((ok || nfree) && !unrefined(t, seen)) ok = nfree = 0;
  free(seen);
  if (nfree) *marks = fr;
  else free(fr);
  return ok ? 1 : nfree ? 2 : 0;
}

static int settled(dp__domains *d, uint8_t **marks) {
  if (d->ix->relax) return settled_placed(d, marks);
  dp__devices *t = d->dev;
  uint8_t *seen = dp_calloc(t->n, 1);
  if (!seen) return 0; /* (then the rules run, and say so if they fail) */
  int ok = 1;
  for (uint32_t x = 1; x < d->nnodes && ok; x++) { /* (0: what a failed allocation hands out) */
    const dp__dnode *nd = &d->nodes[x];
    if (nd->parent != x || nd->isfn) continue;
    if (nd->vdev == 0 || nd->vdev >= t->n) ok = 0;
    else seen[nd->vdev] = 1;
  }
  ok = ok && unrefined(t, seen);
  free(seen);
  /* every path made one step, as the rules' finds would have made most:
     capture's finds follow */
  for (uint32_t x = 1; x < d->nnodes && ok; x++)
    if (d->nodes[x].parent != x) dp__dom_find(d, x);
  return ok;
}

/* The rules: all of them, or (marks: settled's) those of the nodes that
   reach a free class. */
static int default_with(dp__domains *d, uint8_t *marks, dp_err **err) {
  dctx c = {d, d->ix, d->dev->dflt, NULL, marks, d->nnodes};
  uint32_t *order = d->ix->nfn > 1 ? dp__plan_order(d->ix) : NULL;
  int rc = d->ix->nfn > 1 && !order ? -1 : run(&c, order);
  free(order);
  free(marks);
  if (rc < 0) dp_err_set(err, c.err ? c.err : dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return rc;
}

int dp__default_for_capture(dp__domains *d, dp_err **err) {
  uint8_t *marks = NULL;
  return settled(d, &marks) == 1 ? 0 : default_with(d, marks, err);
}

int dp__default(dp__domains *d, dp_err **err) {
  return default_with(d, NULL, err);
}
