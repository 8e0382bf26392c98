/*
 * Phase 1, analysis: the domain of every sub-expression of every global
 * function, from the constraints (planner.md "Domains").
 *
 * Requires: the index of the module phase 0b left (index.c): its nodes,
 * post order and decoded annotations.
 * Leaves: the domains (domains.c): dom[id] for every numbered node, the
 * primfns' domains in `extra`. Nothing is defaulted yet: a value no
 * constraint reaches is free.
 *
 * Each node gets a fresh domain (a function domain for a function-typed
 * node), then, functions in definition order and nodes in post order, its
 * rule: callee rules for calls (the special operators' table in rules.c,
 * polymorphic operators, constructors, call_lowered through the primfn's
 * buffer scopes, any other callee by its own domain), let / function /
 * tuple / projection / if / match / reference rules, and the virtual_device
 * annotations on parameters and functions. Phase 0's fixed let values and
 * function bodies are read here in place (F_FIXED): an on_device there
 * constrains its result too. An on_device of a function value is where its
 * body is: a function cannot be copied (plan.h).
 *
 * The first constraint that cannot hold stops the phase: dp__analyze
 * returns 1, the conflict in d->failed, the domains as they were before it
 * (a failed unification is undone); the caller has it worded (explain.c).
 * With how->collect (all conflicts) each is counted, told to how->conflict
 * (explain.c's replay words the independent ones as they are met) and
 * analysis goes on.
 *
 * With ix->relax (placement by cost), where PlanDevices unifies a value with
 * its reader across a place capture can put a copy on (an argument of a
 * call of an ordinary operator, a constructor or a function; the body and
 * the result of an on_device that does not fix both), analysis records a
 * flow instead (how->flows) and place.c decides both ends. A call's argument
 * that is a plain on_device reads the value where the annotation puts it
 * (read anywhere: the flow starts at its body); the user's device_copy is a
 * reader of its value on its destination; flows name a value by its node
 * under its on_device calls and copies to the same device, the first of
 * the user's copies of one value between two devices standing for them.
 */
#include <stdlib.h>
#include "planner.h"

typedef struct actx {
  dp__domains *d;
  dp__index *ix;
  dp__analysis *how;
  dp_err *err;
  int conflict;         /* the first conflict stopped analysis (d->failed) */
  uint32_t *copy_rep;   /* placing by cost: copy_reps() */
} actx;

/* Give an error without a position the position of e. */
static int fail_at(actx *a, dp_err *e, const dp_expr *at) {
  if (e && e->span.line == 0 && at && at->span.line) {
    e->span = at->span;
    if (!e->source) e->source = dp_strdup(dp_ctx_source_name(a->d->ctx, at->span.source));
  }
  a->err = e;
  return -1;
}

static int oom_at(actx *a, const dp_expr *at) {
  return fail_at(a, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"), at);
}

static int unify(actx *a, uint32_t x, uint32_t y, int rule, dp_expr *why) {
  if (dp__unify_quick(a->d, x, y)) return 0;
  dp_err *e = NULL;
  int rc = dp__unify(a->d, x, y, rule, why, &e);
  if (rc > 0 && a->how->collect) { /* every conflict: counted (undone), told, and on */
    a->how->nconf++;
    return a->how->conflict && a->how->conflict(a->how->ud, a->d) < 0 ? oom_at(a, why) : 0;
  }
  if (rc > 0) { /* the first one stops the phase */
    a->conflict = 1;
    return -1;
  }
  return rc ? fail_at(a, e, why) : 0;
}

/* A flow of the value of node value, made in src and read in dst. (The
   room is made once, for a flow per child of the index: a store per flow,
   not a call of dp_grow; a flow is a child read, so it stays within.) */
static inline int add_flow(actx *a, uint32_t value, uint32_t src, uint32_t dst, const dp_expr *why) {
  dp__flows *f = a->how->flows;
  if (!f) return 0;
  if (f->n == f->cap && dp_grow((void **)&f->v, &f->cap, f->n + 1, sizeof *f->v) < 0) return oom_at(a, why);
  f->v[f->n++] = (dp__flowrec){value, src, dst};
  return 0;
}

/* The flows' room, at once: one per child of the index at most (the room
   not reached is never touched), no more (a doubling would reserve up to
   twice that). Without it they grow as made. */
static void flow_room(actx *a) {
  dp__flows *f = a->how->flows;
  if (!f || !a->ix->relax || a->ix->nkid <= f->cap) return;
  dp__flowrec *v = dp_realloc(f->v, (size_t)a->ix->nkid * sizeof *v);
  if (v) f->v = v, f->cap = a->ix->nkid;
}

/* The room no flow reached given back (a let-shaped module makes about
   two flows in five children): the placement's arrays, made next, are
   the step's peak. A failed shrink keeps the room. */
static void flows_fit(dp__flows *f) {
  if (!f || !f->v || f->n == f->cap) return;
  uint32_t n = f->n ? f->n : 1;
  dp__flowrec *v = dp_realloc(f->v, (size_t)n * sizeof *v);
  if (v) f->v = v, f->cap = n;
}

/* A device_copy from a device to itself (capture removes it)? */
static int noop_copy(const dp__index *ix, uint32_t id) {
  const dp__copy_ends *ce = &ix->copies[dp__ann(ix, id)];
  return ce->src == ce->dst && ce->src != DP__NONE_ID;
}

/* The value node id stands for: its on_device calls, and the user's
   copies from a device to itself, looked through; a copy of the user's,
   the first copy of its value between the same devices (placing by cost:
   copy_rep), which ShareCopies makes one. */
static uint32_t value_of(const dp__index *ix, const uint32_t *copy_rep, uint32_t id) {
  while (id != DP__NONE_ID && (ix->what[id] == W_ON_DEVICE || (ix->what[id] == W_COPY && noop_copy(ix, id)))) {
    uint32_t k = dp__slot(ix, id, 0); /* (the body) */
    if (k == DP__NONE_ID) break;
    id = k;
  }
  if (id != DP__NONE_ID && ix->what[id] == W_COPY && copy_rep) id = copy_rep[dp__ann(ix, id)];
  return id;
}

/* copy_rep: per device_copy of the index, the first (in post order) of
   the copies of its value between its two devices. NULL + -1: out of
   memory. */
static uint32_t *copy_reps(const dp__index *ix) {
  uint32_t *rep = dp_malloc((ix->ncopies ? ix->ncopies : 1) * sizeof *rep);
  uint32_t *next = dp_malloc((ix->ncopies ? ix->ncopies : 1) * sizeof *next);
  dp__ptrmap first = DP__PTRMAP_INIT;  /* value -> its first copy + 1; copies chain through next */
  int ok = rep && next;
  dp__post it;
  dp__post_start(&it, ix, 0, ix->nfn);
  for (uint32_t id; ok && (id = dp__post_next(&it)) != DP__NONE_ID;) {
    if (ix->what[id] != W_COPY) continue;
    uint32_t kid = dp__slot(ix, id, 0); /* (the body) */
    uint32_t c = dp__ann(ix, id);
    rep[c] = id;
    if (noop_copy(ix, id) || kid == DP__NONE_ID) continue;
    const void *v = ix->x[value_of(ix, rep, kid)];
    dp__ptrslot *s = dp__ptrmap_find(&first, v);
    uint32_t j = s ? s->val : 0;
    for (; j; j = next[j - 1]) {
      const dp__copy_ends *a = &ix->copies[j - 1], *b = &ix->copies[c];
      if (a->src == b->src && a->dst == b->dst) break;
    }
    if (j) {
      rep[c] = rep[j - 1];
      continue;
    }
    next[c] = s ? s->val : 0;
    if (s) s->val = c + 1;
    else ok = dp__ptrmap_set(&first, v, c + 1, 0) == 0;
  }
  free(next);
  dp__ptrmap_free(&first);
  if (!ok) {
    free(rep);
    return NULL;
  }
  return rep;
}

/* The root of domain x's class: dp__dom_find's, read directly where the
   path is at most one step (as most are while analysis runs), where
   dp__dom_find would compress nothing. */
static inline uint32_t root_of(dp__domains *d, uint32_t x) {
  uint32_t p = d->nodes[x].parent;
  return d->nodes[p].parent == p ? p : dp__dom_find(d, x);
}

/* (fresh_domains leaves dom[] in its compact form: the ids of the last
   run by their offset) */
#define DOM(a, id) dp__dom_at((a)->d, (id))
/* The domain of child i of a node whose children all have slots (every
   node but a call of an operator: dp__skip is 0), and of argument (or
   body) j of a call of an operator (its slot j, its child 1 + j). */
#define KDOM(a, id, i) kdom((a)->d, (id), (i), (i))
#define ADOM(a, id, j) kdom((a)->d, (id), (j), 1 + (j))

static inline uint32_t kdom(dp__domains *d, uint32_t id, uint32_t slot, uint32_t i) {
  uint32_t k = dp__slot(d->ix, id, slot);
  return k != DP__NONE_ID ? dp__dom_at(d, k) : dp__dom_of(d, dp__child(d->ix->x[id], i));
}

/* The value of node id (domain src) is read in domain dst. PlanDevices
   unifies them (the reader runs where the value lives); placing by cost, a
   copy may sit between them: a flow for place.c, unless either is a
   function (no copy moves a function), the value is not copyable (only an
   on_device asks explicitly for a copy of any value, as in TVM), or the
   node is not numbered. */
static int flow(actx *a, uint32_t id, uint32_t src, uint32_t dst, int rule, dp_expr *why) {
  dp__domains *d = a->d;
  if (!a->ix->relax || id == DP__NONE_ID || d->nodes[root_of(d, src)].isfn || d->nodes[root_of(d, dst)].isfn)
    return unify(a, src, dst, rule, why);
  /* (value_of without the copies' representatives, then with them: one
     walk through the on_device calls) */
  uint32_t value = value_of(a->ix, NULL, id);
  if (rule != R_FREE_ON_DEVICE && !dp__copyable(dp__type_of(a->ix, value))) return unify(a, src, dst, rule, why);
  if (a->copy_rep && value != DP__NONE_ID && a->ix->what[value] == W_COPY) value = a->copy_rep[dp__ann(a->ix, value)];
  /* computed here, read anywhere: the reader of a plain on_device reads
     the value where the annotation puts it (its body), as its other readers
     do, whatever the annotation's result is read as elsewhere (a tuple, a
     copy's source); capture looks through it likewise */
  if (rule != R_FREE_ON_DEVICE && dp__plain_on_device(a->ix, id)) src = ADOM(a, id, 0);
  return add_flow(a, value, src, dst, why);
}

/* Canonical device index of an annotation, with the error placed at e. */
static int canon(actx *a, dp_vdev *v, dp_expr *e, uint32_t *out) {
  dp_err *err = NULL;
  *out = dp__dev_canon(a->d->dev, v, &err);
  if (*out == DP__NONE_ID) return fail_at(a, err, e);
  return 0;
}

/* Constrain x (domain xd) to device index v. */
static int constrain(actx *a, const dp_expr *x, uint32_t xd, uint32_t v, int rule, dp_expr *why) {
  if (!v) return 0;
  uint32_t k = dp__dom_for_type(a->d, x->type, v, rule, why);
  return unify(a, xd, k, rule, why);
}

static int call_on_device(actx *a, uint32_t id, dp_call *c) {
  uint32_t ann = dp__ann(a->ix, id), v = dp__ann_dev(ann);
  /* a function value is where its body is: no copy can move a function, so
     a call through the annotation calls the function itself (else its
     parameters would be free of the call's arguments, and a plan could
     pass an argument on one device to a parameter on another) */
  uint32_t body = ADOM(a, id, 0);
  if (a->d->nodes[dp__dom_find(a->d, body)].isfn && unify(a, DOM(a, id), body, R_ON_DEVICE, &c->e) < 0)
    return -1;
  if (v == ON_DEV) { /* the configuration has no such device: say why */
    dp__ondev p;
    dp__on_device_props(&a->ix->ops, &c->e, &p);
    return canon(a, p.vd, &c->e, &v);
  }
  int fixed = (ann & ON_CRESULT) || ((a->ix->flag[id] & F_FIXED) && (ann & ON_CBODY));
  int one = v && (ann & ON_CBODY) && fixed; /* body and result on v */
  if (!one) { /* the body and the result may differ: a copy between (placing by cost, where
                 something reads the result itself: a plain one's call arguments read its body) */
    if (a->ix->relax && (!dp__plain_on_device(a->ix, id) || (a->ix->flag[id] & F_EXACT)) &&
        flow(a, dp__slot(a->ix, id, 0), body, DOM(a, id), R_FREE_ON_DEVICE, &c->e) < 0)
      return -1;
    if (!v) return 0;
  }
  /* one constraint domain serves both sides, as TVM's target_domain; of
     the body's type only whether it is a function's matters, which the
     index's kind says of a numbered body (K_FIRST: not a function type),
     without the body's node, cold at a million calls (a miss per
     on_device: 0.8 a call on branchy) */
  uint32_t bk = dp__slot(a->ix, id, 0);
  uint32_t k = bk != DP__NONE_ID && (a->ix->kind[bk] & K_FIRST)
                   ? dp__dom_first(a->d, v, R_ON_DEVICE, &c->e)
                   : dp__dom_for_type(a->d, c->args[0]->type, v, R_ON_DEVICE, &c->e);
  if ((ann & ON_CBODY) && unify(a, body, k, R_ON_DEVICE, &c->e) < 0) return -1;
  if (fixed && unify(a, DOM(a, id), k, R_ON_DEVICE, &c->e) < 0) return -1;
  return 0;
}

/* An end the configuration has no canonical device for: say why. */
static int bad_end(actx *a, dp_call *c, int dst) {
  dp_expr *body;
  dp_vdev *src, *dv;
  uint32_t v;
  dp__device_copy_props(&a->ix->ops, &c->e, &body, &src, &dv);
  return canon(a, dst ? dv : src, &c->e, &v);
}

static int call_device_copy(actx *a, uint32_t id, dp_call *c) {
  dp__copy_ends ce = a->ix->copies[dp__ann(a->ix, id)];
  if (ce.src == DP__NONE_ID) return bad_end(a, c, 0);
  if (ce.dst == DP__NONE_ID) return bad_end(a, c, 1);
  if (constrain(a, c->args[0], ADOM(a, id, 0), ce.src, R_COPY_SRC, &c->e) < 0) return -1;
  if (constrain(a, &c->e, DOM(a, id), ce.dst, R_COPY_DST, &c->e) < 0) return -1;
  /* placing by cost, the user's copy is a reader of its value on its
     destination: another reader there is served by the same copy (one
     copy per value and destination device, as ShareCopies merges them) */
  uint32_t k = dp__slot(a->ix, id, 0);
  if (!a->ix->relax || k == DP__NONE_ID || !dp__copyable(c->args[0]->type)) return 0;
  return add_flow(a, value_of(a->ix, a->copy_rep, k), ADOM(a, id, 0), DOM(a, id), &c->e);
}

/* Calls of operators: the rules of planner.md's table (rules.c). */
static int call_op(actx *a, uint32_t id, dp_call *c) {
  const dp__oprule *r = &dp__op_rules[dp__ann_op(a->ix, id)];
  uint32_t host = a->d->dev->host;
  uint32_t nargs = a->ix->koff[id + 1] - a->ix->koff[id]; /* (c->nargs, not read cold) */
  for (uint32_t i = 0; i < nargs; i++) {
    int rule = dp__arg_rule(r, i);
    if (rule == ARG_CALL) {
      /* an ordinary operator's arguments may be copied to it (placing) */
      int rc = dp__ann_op(a->ix, id) == OP_ORDINARY
                   ? flow(a, dp__slot(a->ix, id, i), ADOM(a, id, i), DOM(a, id), R_ARG, &c->e)
                   : unify(a, ADOM(a, id, i), DOM(a, id), R_ARG, &c->e);
      if (rc < 0) return -1;
    }
    if (rule == ARG_HOST && constrain(a, c->args[i], ADOM(a, id, i), host, R_HOST_ARG, &c->e) < 0)
      return -1;
  }
  if (r->result == RES_HOST) return constrain(a, &c->e, DOM(a, id), host, R_HOST_ARG, &c->e);
  if (r->result == RES_ATTR) {
    const dp_aval *v = dp_op_attr((dp_op *)c->fn, c->attrs, "virtual_device");
    uint32_t t = 0;
    if (v && v->kind == DP_AV_VDEV && canon(a, v->u.vdev, &c->e, &t) < 0) return -1;
    return constrain(a, &c->e, DOM(a, id), t, R_ALLOC_DEV, &c->e);
  }
  return 0;
}

/* A call of a function (a global, a variable, a function value), lowered
   or not: the arguments unify with its parameters, the call with its
   result. */
static int call_fn(actx *a, uint32_t id, dp_call *c) {
  dp__domains *d = a->d;
  dp_expr *callee;
  dp_expr *const *args;
  uint32_t n = dp__any_call(&a->ix->ops, c, &callee, &args);
  int lowered = a->ix->what[id] == W_LOWERED;
  uint32_t f = lowered ? ADOM(a, id, 0) : KDOM(a, id, 0);
  if (dp__dom_arity(d, f) != n) {
    return fail_at(a, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                                 "the callee of this call does not take %u argument%s "
                                 "(is its type known?)", n, n == 1 ? "" : "s"), &c->e);
  }
  uint32_t tup = lowered ? dp__slot(a->ix, id, 1) : DP__NONE_ID;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t ad = !lowered ? KDOM(a, id, 1 + i)
                  : tup != DP__NONE_ID ? KDOM(a, tup, i) : dp__dom_of(d, args[i]);
    int rc = lowered ? unify(a, ad, dp__dom_kid(d, f, i), R_ARG, &c->e)
                     : flow(a, dp__slot(a->ix, id, 1 + i), ad, dp__dom_kid(d, f, i), R_ARG, &c->e);
    if (rc < 0) return -1;
  }
  return unify(a, DOM(a, id), dp__dom_kid(d, f, n), R_RESULT, &c->e);
}

static int analyze_call(actx *a, uint32_t id, dp_call *c) {
  switch (a->ix->what[id]) {
  case W_ON_DEVICE: return call_on_device(a, id, c);
  case W_COPY: return call_device_copy(a, id, c);
  case W_OP_CALL: return call_op(a, id, c);
  case W_CTOR_CALL:
    for (uint32_t i = 0; i < c->nargs; i++)
      if (flow(a, dp__slot(a->ix, id, 1 + i), KDOM(a, id, 1 + i), DOM(a, id), R_CTOR, &c->e) < 0)
        return -1;
    return 0;
  default: return call_fn(a, id, c);
  }
}

static int analyze_func(actx *a, uint32_t id, dp_func *fn) {
  dp__domains *d = a->d;
  uint32_t f = DOM(a, id);
  if (dp__dom_arity(d, f) != fn->nparams)
    return fail_at(a, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                                 "function's type does not match its %u parameters", fn->nparams),
                   &fn->e);
  uint32_t bd = KDOM(a, id, fn->nparams);
  if (unify(a, bd, dp__dom_kid(d, f, fn->nparams), R_FUNC_BODY, &fn->e) < 0) return -1;
  uint32_t v = 0;
  if (fn->vdev && canon(a, fn->vdev, &fn->e, &v) < 0) return -1;
  if (constrain(a, fn->body, bd, v, R_FUNC_ANNOT, &fn->e) < 0) return -1;
  for (uint32_t i = 0; i < fn->nparams; i++) {
    dp_var *p = fn->params[i];
    uint32_t pd = KDOM(a, id, i);
    if (unify(a, pd, dp__dom_kid(d, f, i), R_FUNC_PARAM, &fn->e) < 0) return -1;
    uint32_t pv = 0;
    if (dp_var_vdev(p) && canon(a, dp_var_vdev(p), &p->e, &pv) < 0) return -1;
    if (constrain(a, &p->e, pd, pv, R_PARAM_ANNOT, &p->e) < 0) return -1;
  }
  return 0;
}

/* Pattern variables collapse onto the matched data. */
typedef struct patctx { actx *a; uint32_t data; dp_expr *why; } patctx;

static int pattern_var(void *ud, dp_var *v) {
  patctx *p = ud;
  return unify(p->a, p->data, dp__dom_of(p->a->d, &v->e), R_MATCH_PAT, p->why);
}

static int analyze_pattern(actx *a, uint32_t data, dp_pattern *root, dp_expr *why) {
  patctx p = {a, data, why};
  int rc = dp_pattern_vars(root, pattern_var, &p);
  if (rc < 0 && !a->err && !a->conflict)
    return fail_at(a, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"), why);
  return rc;
}

static int analyze_node(actx *a, uint32_t id) {
  dp_expr *e = a->ix->x[id];
  uint32_t me = DOM(a, id);
  switch (a->ix->kind[id] & K_KIND) {
  case DP_CALL: return analyze_call(a, id, (dp_call *)e);
  /* (a primitive function's body is not numbered: its domain and its
     parameters' are found by expression) */
  case DP_FUNC: return analyze_func(a, id, (dp_func *)e);
  case DP_LET:
    if (unify(a, KDOM(a, id, 0), KDOM(a, id, 1), R_LET_VAR, e) < 0) return -1;
    return unify(a, me, KDOM(a, id, 2), R_LET_BODY, e);
  case DP_TUPLE: {
    dp_tuple *t = (dp_tuple *)e;
    if (a->ix->flag[id] & F_LOWERED_ARGS) return 0; /* the call's arguments, not a value */
    for (uint32_t i = 0; i < t->n; i++)
      if (unify(a, me, KDOM(a, id, i), R_TUPLE, e) < 0) return -1;
    return 0;
  }
  case DP_PROJ: return unify(a, KDOM(a, id, 0), me, R_PROJ, e);
  case DP_IF:
    if (unify(a, KDOM(a, id, 0), me, R_IF_COND, e) < 0) return -1;
    if (unify(a, KDOM(a, id, 1), me, R_IF_BRANCH, e) < 0) return -1;
    return unify(a, KDOM(a, id, 2), me, R_IF_BRANCH, e);
  case DP_MATCH: {
    dp_match *m = (dp_match *)e;
    uint32_t data = KDOM(a, id, 0);
    if (unify(a, data, me, R_MATCH_DATA, e) < 0) return -1;
    for (uint32_t i = 0; i < m->n; i++) {
      if (analyze_pattern(a, data, m->clauses[i].pat, e) < 0) return -1;
      if (unify(a, KDOM(a, id, 1 + i), me, R_MATCH_RHS, e) < 0) return -1;
    }
    return 0;
  }
  case DP_REF_CREATE: return unify(a, me, KDOM(a, id, 0), R_REF, e);
  case DP_REF_READ: return unify(a, KDOM(a, id, 0), me, R_REF, e);
  case DP_REF_WRITE:
    if (unify(a, KDOM(a, id, 0), KDOM(a, id, 1), R_REF, e) < 0) return -1;
    return unify(a, me, KDOM(a, id, 1), R_REF, e);
  default: return 0;
  }
}

/* The domain of a primfn: each buffer's memory scope constrains its
   argument or the result. */
static int primfn_domain(actx *a, dp_primfn *pf) {
  dp__domains *d = a->d;
  uint32_t small[8], *k = pf->nargs < 7 ? small : dp_malloc((pf->nargs + 1) * sizeof *k);
  if (!k) return fail_at(a, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"), NULL);
  int rc = 0;
  for (uint32_t i = 0; i <= pf->nargs && rc == 0; i++) {
    const dp_buffer *b = i < pf->nargs ? &pf->args[i] : &pf->result;
    uint32_t v = 0;
    if (b->scope && b->scope[0]) {
      dp_err *err = NULL;
      dp_vdev *vd = dp_vdev_make(d->ctx, 0, -1, NULL, b->scope, &err);
      if (!vd) {
        a->err = err;
        rc = -1;
        break;
      }
      v = dp__dev_index(d->dev, vd);
      dp_release(vd);
    }
    k[i] = dp__dom_first(d, v, i < pf->nargs ? R_PRIMFN_ARG : R_PRIMFN_RESULT, NULL);
  }
  if (rc == 0 && dp__ptrmap_set(&d->extra, pf, dp__dom_fn(d, pf->nargs, k), 0) < 0)
    d->oom = 1;
  if (k != small) free(k);
  return rc;
}

/* The first id of the last run of ids whose domains fresh_domains makes
   one after the other (first-order nodes, no global, none numbered
   twice): their domains are their ids plus one offset, and need no place
   in dom[] (at a million let calls the run is the whole program, and the
   array of 4 bytes an id, written whole and compacted once analysis was
   done, was 12 MB at the planner's peak). */
static uint32_t run_from(const dp__index *ix) {
  uint32_t from = ix->n;
  while (from > 0) {
    int k = ix->kind[from - 1];
    if (!(k & K_FIRST) || (k & K_KIND) == DP_GLOBAL || (ix->flag[from - 1] & F_DUP)) break;
    from--;
  }
  return from;
}

/* A fresh domain for every node (its type's shape); a node numbered in two
   functions has one, and a global reference its function's (roots are
   given theirs first). dom[] holds the ids below the last run (run_from),
   the run is read by its offset (dp__dom_at). */
static void fresh_domains(dp__domains *d) {
  dp__index *ix = d->ix;
  uint32_t from = run_from(ix);
  if (!(d->dom = dp__index_take(ix, (size_t)(from ? from : 1) * sizeof *d->dom))) {
    d->oom = 1;
    return;
  }
  for (uint32_t id = 0; id < from; id++) {
    int k = ix->kind[id];
    if ((k & K_KIND) == DP_GLOBAL) continue;
    /* most nodes are first order: a free domain, whatever else their type says */
    d->dom[id] = k & K_FIRST ? dp__dom_free(d) : dp__dom_new(d, ix->x[id]);
  }
  d->dom_from = from;
  d->dom_off = d->nnodes - from; /* (unsigned: wraps back, as dp__dom_at reads it) */
  dp__dom_free_run(d, ix->n - from);
  for (uint32_t k = 0; k < ix->ndups; k += 2) d->dom[ix->dups[k]] = dp__dom_at(d, ix->dups[k + 1]);
  for (uint32_t r = 0; r < ix->ngref; r++) {
    uint32_t id = ix->gref[r];
    if (!(ix->flag[id] & F_DUP)) d->dom[id] = dp__dom_new(d, ix->x[id]);
  }
  /* (a global numbered twice: its earlier id has its domain now) */
  for (uint32_t k = 0; k < ix->ndups; k += 2) d->dom[ix->dups[k]] = dp__dom_at(d, ix->dups[k + 1]);
}

static int analyze(actx *a) {
  dp__domains *d = a->d;
  dp_module *m = d->ix->mod;
  if (dp__index_map(d->ix) < 0) return fail_at(a, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"), NULL);
  for (uint32_t i = 0; i < m->nprims && !a->err; i++) primfn_domain(a, m->prims[i]);
  if (a->err) return -1;
  fresh_domains(d);
  if (d->oom) return fail_at(a, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"), NULL);
  flow_room(a);
  if (d->ix->relax && d->ix->ncopies && !(a->copy_rep = copy_reps(d->ix)))
    return fail_at(a, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"), NULL);
  dp__post it;
  dp__post_start(&it, d->ix, 0, d->ix->nfn);
  for (uint32_t id; !d->oom && (id = dp__post_next(&it)) != DP__NONE_ID;)
    if (analyze_node(a, id) < 0) return -1;
  if (d->oom || d->dev->oom)
    return fail_at(a, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"), NULL);
  return 0;
}

int dp__analyze(dp__domains *d, dp__analysis *how, dp_err **err) {
  actx a = {d, d->ix, how, NULL, 0, NULL};
  int rc = analyze(&a);
  free(a.copy_rep);
  if (rc == 0) flows_fit(how->flows);
  if (rc == 0) return 0;
  if (a.conflict) return 1;
  dp_err_set(err, a.err ? a.err : dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return -1;
}
