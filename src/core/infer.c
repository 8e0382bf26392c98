/*
 * Type inference over a module or an expression, as TVM's InferType.
 *
 * One post-order walk with an explicit stack gives every node a type that
 * may contain unknowns (tsolve.c): unannotated parameters and let
 * variables start as unknowns and are fixed by unification with their
 * uses. Operator calls are typed by their relation once all argument types
 * are fully known; a call whose arguments are not known yet, and a
 * projection of a tuple not known yet, wait in the pending list, which is
 * solved to a fixed point after the walk. Global functions get signatures
 * before any body is walked, so globals may call each other in any order.
 * Constructors are polymorphic: each use instantiates their type variables.
 *
 * Types are written into the nodes (dp_expr.type) only when the whole
 * inference succeeded; an error leaves the nodes as they were. A module's
 * inference also leaves what its walk counted, nodes, child slots and the
 * deepest path, in dp_module.sizes (the planner sizes its arrays by them).
 *
 * Where the types live while the walk runs: the outermost inference keeps
 * each node's working type in the node itself, marked with F_TYPED in its
 * header flags, and saves the type the node had before; a failure puts the
 * old types back. No map is looked up per node, so million-node modules
 * cost a flag test per visit. An inference started while another runs (a
 * type relation written in Lua may start one) keeps its types in a map
 * instead, and refuses nodes the enclosing one is typing.
 *
 * The common case costs little: an operator call whose arguments are
 * tensors runs its relation at once (no unknown, nothing pending), and the
 * results of built-in relations are remembered by (op, attributes,
 * argument types), so a chain of a million `add`s of one shape runs the
 * relation a handful of times.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/infer.h"
#include "devplan/op.h"
#include "devplan/print.h"
#include "devplan/visit.h"
#include "internal.h"
#include "print_internal.h"
#include "tsolve.h"

typedef struct pending {
  dp_expr *e;          /* the call or projection */
  dp_type *res;        /* its result unknown (solver owned) */
  uint32_t nargs;
  dp_type **args;      /* call: argument types (retained); projection: args[0] = tuple type */
  uint32_t next;       /* 1 + the next entry waiting for the same unknown */
  dp_type *blocker;    /* the unknown it waits for (solver owned; NULL: not tried yet) */
} pending;

/* A remembered relation result. Types are interned, so the same argument
   pointers mean the same argument types: a million `add(%x, %b)` of one
   shape run the relation once. Only relations without owned user data
   (the built-in ones, C relations) are remembered: a relation written in
   Lua (its function is user data freed with the op) may count or log its
   calls. */
#define MEMO_SIZE 64
#define MEMO_ARGS 4
typedef struct memo {
  dp_op *op;             /* NULL: empty entry */
  dp_attrs *attrs;       /* retained; NULL for no attributes (or none set) */
  int has_attrs;         /* the call had an attribute set (maybe empty) */
  uint32_t nargs;
  dp_type *args[MEMO_ARGS]; /* retained, so their addresses stay theirs */
  dp_type *res;          /* retained */
} memo;

typedef struct frame {
  dp_expr *e;
  uint32_t next, n;    /* the next child to visit, of n */
} frame;

/* The old type of a node typed in node mode (restored on failure). */
typedef struct saved {
  dp_expr *e;
  dp_type *old;
} saved;

/* dp_obj.flags of an expression whose e->type is the running inference's
   working type (node mode only; cleared when the inference ends). */
#define F_TYPED 0x8000u
/* With F_TYPED: the working type is the node's old type itself (inferring
   a typed module again gives the same interned types): nothing saved. */
#define F_KEPT 0x4000u
#define F_MINE (F_TYPED | F_KEPT)
#define KEPT_TAG ((uintptr_t)1) /* low bit of an order entry (nodes are aligned) */

typedef struct infer {
  dp_ctx *ctx;
  uint32_t binders;    /* lets, matches and functions walked (scopes are checked when one binds inside) */
  dp_module *m;
  int expr_mode;       /* dp_infer_expr: free variables keep their checked type */
  int in_nodes;        /* working types in the nodes (outermost run), else in `types` */
  dp__tsolver ts;
  dp__ptrmap types;    /* map mode: expr -> type (retained) */
  dp_expr **order;     /* typed nodes, in the order they were typed (node mode: tagged with
                          KEPT_TAG when F_KEPT, as restore() needs it after flags are cleared) */
  uint32_t norder, caporder;
  saved *olds;         /* node mode: nodes that had a type before this run */
  uint32_t nolds, capolds;
  dp__ptrmap sigs;     /* dp_func of a global -> its signature (retained) */
  pending *pend;
  uint32_t npend, cappend;
  uint32_t swept;      /* entries [0, swept) wait in `waits` (or are solved: e NULL) */
  uint32_t nsolved;    /* of those, solved and not yet compacted away */
  dp__ptrmap waits;    /* unknown -> 1 + its first waiting entry */
  memo memo[MEMO_SIZE];
  frame *stack;        /* the walk (its ancestors locate errors without spans) */
  uint32_t nstack, capstack;
  uint32_t nkids, depth; /* the walk's child slots and deepest stack (the module's sizes) */
  dp_err *err;
} infer;

/* ---------------- errors ---------------- */

static int is_leaf(const dp_expr *e) {
  int k = e->h.kind;
  return k == DP_VAR || k == DP_GLOBAL || k == DP_CONST || k == DP_OP || k == DP_CTOR;
}

/* "call of nn.conv2d", "variable %x", ... plus the printed form of small nodes. */
static void describe(const dp_expr *e, char *buf, size_t n) {
  const dp_call *c = (const dp_call *)e;
  switch (e->h.kind) {
  case DP_VAR: snprintf(buf, n, "variable %%%s", ((const dp_var *)e)->name); return;
  case DP_GLOBAL: snprintf(buf, n, "global @%s", ((const dp_global *)e)->name); return;
  case DP_CTOR: snprintf(buf, n, "constructor %s", ((const dp_ctor *)e)->name); return;
  case DP_PROJ: snprintf(buf, n, "projection .%u", ((const dp_proj *)e)->index); return;
  case DP_CALL: break;
  default: snprintf(buf, n, "%s expression", dp_exprkind_name(e->h.kind)); return;
  }
  const dp_expr *f = c->fn;
  if (f->h.kind == DP_OP) snprintf(buf, n, "call of %s", ((const dp_op *)f)->name);
  else if (f->h.kind == DP_GLOBAL) snprintf(buf, n, "call of @%s", ((const dp_global *)f)->name);
  else if (f->h.kind == DP_VAR) snprintf(buf, n, "call of %%%s", ((const dp_var *)f)->name);
  else if (f->h.kind == DP_CTOR) snprintf(buf, n, "call of %s", ((const dp_ctor *)f)->name);
  else snprintf(buf, n, "call");
  int small = 1;
  for (uint32_t i = 0; i < c->nargs; i++) small = small && is_leaf(c->args[i]);
  char *text = small ? dp_print_expr(e, DP__PRINT_NO_DECLS, NULL) : NULL;
  if (text && strlen(text) <= 80 && !strchr(text, '\n')) {
    size_t len = strlen(buf);
    snprintf(buf + len, n - len, " `%s`", text);
  }
  free(text);
}

/* The span of e, or of its nearest ancestor on the walk that has one. */
static dp_span span_of(infer *I, const dp_expr *e) {
  if (e->span.line) return e->span;
  for (uint32_t i = I->nstack; i-- > 0;)
    if (I->stack[i].e->span.line) return I->stack[i].e->span;
  return DP_NOSPAN;
}

/* Records the first error: "<what e is>: <cause>" at e's span (takes cause). */
static int fail(infer *I, const dp_expr *e, dp_err *cause) {
  if (I->err) {
    dp_err_free(cause);
    return -1;
  }
  char what[256] = "expression";
  if (e) describe(e, what, sizeof what);
  dp_err *err = dp_err_at(I->ctx, cause && cause->code == DP_ERR_MEMORY ? DP_ERR_MEMORY : DP_ERR_TYPE,
                          e ? span_of(I, e) : DP_NOSPAN, "%s: %s", what, cause && cause->msg ? cause->msg : "type error");
  for (uint32_t i = 0; cause && i < cause->nnotes; i++)
    dp_err_note(err, cause->notes[i].span, "%s", cause->notes[i].msg);
  dp_err_free(cause);
  I->err = err;
  return -1;
}

static int failf(infer *I, const dp_expr *e, const char *msg) {
  return fail(I, e, dp_err_new(DP_ERR_TYPE, DP_NOSPAN, "%s", msg));
}

static int oom(infer *I, const dp_expr *e) {
  return fail(I, e, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
}

/* ---------------- node types ---------------- */

/* Inferences in progress on this thread: only the outermost keeps types
   in the nodes. */
static _Thread_local int running;

/* Room for one more element in a growing array. */
static int reserve(void **arr, uint32_t *cap, uint32_t n, size_t size, uint32_t first) {
  if (n < *cap) return 0;
  uint32_t ncap = *cap ? *cap * 2 : first;
  void *a = dp_realloc(*arr, (size_t)ncap * size);
  if (!a) return -1;
  *arr = a;
  *cap = ncap;
  return 0;
}

/* Stores t (a new reference) as e's type. Nothing changes on failure. */
static int set_type(infer *I, dp_expr *e, dp_type *t) {
  if (!t) return oom(I, e);
  int full = reserve((void **)&I->order, &I->caporder, I->norder, sizeof *I->order, 1024) < 0;
  if (I->in_nodes) {
    if (!full && e->type) full = reserve((void **)&I->olds, &I->capolds, I->nolds, sizeof *I->olds, 64) < 0;
    if (full) {
      dp_release(t);
      return oom(I, e);
    }
    if (e->type == t) {
      dp_release(t);
      e->h.flags |= F_MINE;
      I->order[I->norder++] = (dp_expr *)((uintptr_t)e | KEPT_TAG);
      return 0;
    }
    if (e->type) I->olds[I->nolds++] = (saved){e, e->type};
    e->type = t;
    e->h.flags |= F_TYPED;
  } else {
    if (e->h.flags & F_TYPED) {
      dp_release(t);
      return failf(I, e, "is being type-checked by an enclosing inference");
    }
    dp__ptrslot *s = full ? NULL : dp__ptrmap_insert(&I->types, e, NULL);
    if (!s) {
      dp_release(t);
      return oom(I, e);
    }
    s->ptr = t;
  }
  I->order[I->norder++] = e;
  return 0;
}

/* The working type of e, or NULL when not typed yet. */
static dp_type *lookup(infer *I, const dp_expr *e) {
  if (I->in_nodes) return e->h.flags & F_TYPED ? e->type : NULL;
  dp__ptrslot *s = dp__ptrmap_find(&I->types, e);
  return s ? s->ptr : NULL;
}

/* The type e had before this inference (free variables and globals of
   dp_infer_expr keep their checked types). */
static dp_type *old_type(infer *I, const dp_expr *e) {
  if (!(e->h.flags & F_TYPED) || (I->in_nodes && (e->h.flags & F_KEPT))) return e->type;
  if (!I->in_nodes) return NULL; /* being typed by an enclosing inference */
  for (uint32_t i = I->nolds; i-- > 0;)
    if (I->olds[i].e == e) return I->olds[i].old;
  return NULL;
}

/* An annotation as inference reads it: each `_` inside it a fresh unknown
   (new reference; NULL after recording the error). */
static dp_type *annotation(infer *I, dp_expr *at, dp_type *t) {
  dp_err *e = NULL;
  dp_type *r = dp__ts_fill_holes(&I->ts, t, &e);
  if (!r) fail(I, at, e);
  return r;
}

static dp_type *var_type(infer *I, dp_var *v) {
  dp_type *t = lookup(I, &v->e);
  if (t) return t;
  if (dp_var_annot(v)) t = annotation(I, &v->e, dp_var_annot(v));
  else if (I->expr_mode && old_type(I, &v->e)) t = dp_retain(old_type(I, &v->e));
  else t = dp_retain(dp__ts_fresh(&I->ts));
  return set_type(I, &v->e, t) < 0 ? NULL : t;
}

/* A constructor's type: fn[tparams](inputs) -> Adt[tparams]. */
static dp_type *ctor_poly_type(dp_ctx *ctx, dp_ctor *c) {
  dp_type *adt = dp_type_adt(ctx, c->adt_name, c->ntparams, c->items);
  if (!adt) return NULL;
  dp_type *f = dp_type_func(ctx, c->ntparams, c->items, c->ninputs, c->items + c->ntparams, adt);
  dp_release(adt);
  return f;
}

/* Instantiates a constructor: fresh unknowns for its type variables; its
   input types go to inputs[] (solver owned); returns the result ADT type. */
static dp_type *ctor_instance(infer *I, dp_ctor *c, dp_type **inputs) {
  dp_type *fresh[16], **to = c->ntparams <= 16 ? fresh : dp_malloc(c->ntparams * sizeof *to);
  dp_type *res = NULL;
  dp_err *e = NULL;
  if (!to) return NULL;
  for (uint32_t i = 0; i < c->ntparams; i++)
    if (!(to[i] = dp__ts_fresh(&I->ts))) goto out;
  for (uint32_t i = 0; i < c->ninputs; i++) {
    inputs[i] = dp__ts_keep(&I->ts, dp__ts_instantiate(&I->ts, c->items[c->ntparams + i], c->ntparams,
                                                       c->items, to, &e));
    if (!inputs[i]) goto out;
  }
  res = dp__ts_keep(&I->ts, dp_type_adt(I->ctx, c->adt_name, c->ntparams, to));
out:
  dp_err_free(e);
  if (to != fresh) free(to);
  return res;
}

/* The type of child e as its parent sees it (borrowed). */
static dp_type *ty(infer *I, dp_expr *e) {
  if (e->h.kind == DP_CTOR) {
    dp_ctor *c = (dp_ctor *)e;
    dp_type **in = dp_malloc((c->ninputs ? c->ninputs : 1) * sizeof *in);
    dp_type *adt = in ? ctor_instance(I, c, in) : NULL, *t = adt;
    if (adt && c->ninputs) /* a constructor used as a function value */
      t = dp__ts_keep(&I->ts, dp_type_func(I->ctx, 0, NULL, c->ninputs, in, adt));
    free(in);
    if (!t) oom(I, e);
    return t;
  }
  if (e->h.kind == DP_OP) {
    failf(I, e, "an operator can only be called, not used as a value");
    return NULL;
  }
  dp_type *t = lookup(I, e);
  if (!t) failf(I, e, "internal: child not typed before its parent");
  return t;
}

static int unify(infer *I, dp_expr *at, dp_type *a, dp_type *b) {
  dp_err *e = NULL;
  if (dp__ts_unify(&I->ts, a, b, &e) == 0) return 0;
  return fail(I, at, e);
}

/* ---------------- globals ---------------- */

/* fn(params) -> ret of a global function, made once; unknowns where a
   parameter or the result has no annotation. */
static dp_type *signature(infer *I, dp_func *fn) {
  dp__ptrslot *known = dp__ptrmap_find(&I->sigs, fn);
  if (known) return known->ptr;
  dp_type *checked = I->expr_mode ? old_type(I, &fn->e) : NULL;
  if (checked) {
    dp__ptrslot *s = dp__ptrmap_insert(&I->sigs, fn, NULL);
    if (!s) return NULL;
    s->ptr = dp_retain(checked);
    return checked;
  }
  dp_type *local[8], **ps = fn->nparams <= 8 ? local : dp_malloc(fn->nparams * sizeof *ps);
  if (!ps) return NULL;
  for (uint32_t i = 0; i < fn->nparams; i++)
    if (!(ps[i] = var_type(I, fn->params[i]))) {
      if (ps != local) free(ps);
      return NULL;
    }
  dp_type *ret = fn->ret ? dp__ts_keep(&I->ts, annotation(I, &fn->e, fn->ret)) : dp__ts_fresh(&I->ts);
  /* (a polymorphic function's type parameters: each call instantiates them) */
  dp_type *sig = ret ? dp_type_func(I->ctx, fn->ntparams, fn->tparams, fn->nparams, ps, ret) : NULL;
  if (ps != local) free(ps);
  dp__ptrslot *s = sig ? dp__ptrmap_insert(&I->sigs, fn, NULL) : NULL;
  if (!s) {
    dp_release(sig);
    return NULL;
  }
  s->ptr = sig;
  return sig;
}

/* A primfn's type: fn(buffer types) -> result buffer type. */
static dp_type *primfn_type(infer *I, dp_primfn *pf) {
  dp_type *local[8], **ps = pf->nargs <= 8 ? local : dp_malloc(pf->nargs * sizeof *ps);
  if (!ps) return NULL;
  for (uint32_t i = 0; i < pf->nargs; i++) ps[i] = pf->args[i].type;
  dp_type *t = dp_type_func(I->ctx, 0, NULL, pf->nargs, ps, pf->result.type);
  if (ps != local) free(ps);
  return t;
}

static int type_global(infer *I, dp_global *g) {
  dp_func *fn = I->m ? dp_module_func(I->m, g->name) : NULL;
  dp_primfn *pf = !fn && I->m ? dp_module_primfn(I->m, g->name) : NULL;
  if (fn) {
    dp_type *sig = signature(I, fn);
    return sig ? set_type(I, &g->e, dp_retain(sig)) : oom(I, &g->e);
  }
  if (pf) return set_type(I, &g->e, primfn_type(I, pf));
  dp_type *checked = I->expr_mode ? old_type(I, &g->e) : NULL;
  if (checked) return set_type(I, &g->e, dp_retain(checked));
  return failf(I, &g->e, "no function or primfn of this name in the module");
}

/* ---------------- operator relations ---------------- */

/* The memo entry for a call of op on args (NULL when not remembered). */
static memo *memo_entry(infer *I, dp_call *call, dp_type **args) {
  dp_op *op = (dp_op *)call->fn;
  if (op->ud_free || call->nargs > MEMO_ARGS) return NULL;
  uintptr_t h = (uintptr_t)op; /* attributes checked on a hit only */
  for (uint32_t i = 0; i < call->nargs; i++) h = h * 31 + (uintptr_t)args[i];
  h *= 0x9E3779B97F4A7C15ull;
  return &I->memo[(h >> 40) % MEMO_SIZE];
}

static int memo_hit(const memo *m, dp_call *call, dp_type **args) {
  dp_attrs *a = call->attrs && call->attrs->n ? call->attrs : NULL;
  if (m->op != (dp_op *)call->fn || m->nargs != call->nargs || m->attrs != a || m->has_attrs != (call->attrs != NULL))
    return 0;
  for (uint32_t i = 0; i < call->nargs; i++)
    if (m->args[i] != args[i]) return 0;
  return 1;
}

static void memo_clear(memo *m) {
  if (!m->op) return;
  dp_release(m->attrs);
  for (uint32_t i = 0; i < m->nargs; i++) dp_release(m->args[i]);
  dp_release(m->res);
  memset(m, 0, sizeof *m);
}

static void memo_put(memo *m, dp_call *call, dp_type **args, dp_type *res) {
  memo_clear(m);
  m->op = (dp_op *)call->fn;
  m->attrs = dp_retain(call->attrs && call->attrs->n ? call->attrs : NULL);
  m->has_attrs = call->attrs != NULL;
  m->nargs = call->nargs;
  for (uint32_t i = 0; i < call->nargs; i++) m->args[i] = dp_retain(args[i]);
  m->res = dp_retain(res);
}

/* Runs op's relation on complete argument types: 1 (*out a new reference)
   or -1. */
static int run_relation(infer *I, dp_call *call, dp_type **args, dp_type **out) {
  dp_op *op = (dp_op *)call->fn;
  dp_err *e = NULL;
  if (!op->rel) return failf(I, &call->e, "the operator has no type relation");
  memo *m = memo_entry(I, call, args);
  if (m && memo_hit(m, call, args)) {
    *out = dp_retain(m->res);
    return 1;
  }
  *out = op->rel(I->ctx, args, call->nargs, call->attrs, op->ud, &e);
  if (!*out) return e ? fail(I, &call->e, e) : oom(I, &call->e); /* a constructor failed */
  if (m) memo_put(m, call, args, *out);
  return 1;
}

/* The result of an operator call whose argument types are args. 1: solved
   (*out a new reference), 0: not ready (an argument type is not fully
   known yet), -1: error. */
static int relation_result(infer *I, pending *p, dp_type **out) {
  dp_call *call = (dp_call *)p->e;
  dp_type *local[8], **args = p->nargs <= 8 ? local : dp_calloc(p->nargs, sizeof *args);
  dp_err *e = NULL;
  int r = 1;
  uint32_t done = 0;
  if (!args) return oom(I, p->e);
  for (; done < p->nargs && r == 1; done++) {
    int complete = 1;
    args[done] = dp__ts_resolve(&I->ts, p->args[done], &complete, &e);
    if (!args[done]) {
      r = fail(I, p->e, e);
      break;
    }
    if (!complete) r = 0;
  }
  if (r == 1) r = run_relation(I, call, args, out);
  for (uint32_t i = 0; i < done; i++) dp_release(args[i]);
  if (args != local) free(args);
  return r;
}

/* The field a projection reads, once its tuple's type is known. */
static int projection_result(infer *I, pending *p, dp_type **out) {
  dp_proj *pr = (dp_proj *)p->e;
  dp_type *t = dp__ts_find(&I->ts, p->args[0]);
  if (dp__ts_is_unknown(&I->ts, t)) {
    I->ts.blocker = t;
    return 0;
  }
  if (t->h.kind != DP_TY_TUPLE) {
    char *s = dp_type_str(t);
    fail(I, p->e, dp_err_new(DP_ERR_TYPE, DP_NOSPAN, "projects a non-tuple of type %s", s ? s : "?"));
    free(s);
    return -1;
  }
  dp_tuple_type *tt = (dp_tuple_type *)t;
  if (pr->index >= tt->n) {
    char msg[96];
    snprintf(msg, sizeof msg, "index %u out of range for a tuple of %u fields", pr->index, tt->n);
    return failf(I, p->e, msg);
  }
  *out = dp_retain(tt->fields[pr->index]);
  return 1;
}

static int pending_result(infer *I, pending *p, dp_type **out) {
  return p->e->h.kind == DP_PROJ ? projection_result(I, p, out) : relation_result(I, p, out);
}

/* 1: solved (its result unified with p->res), 0: not ready (I->ts.blocker
   is an unknown it waits for), -1: error. */
static int try_pending(infer *I, pending *p) {
  dp_type *t = NULL;
  int r = pending_result(I, p, &t);
  if (r == 1 && unify(I, p->e, p->res, t) < 0) r = -1;
  dp_release(t);
  return r;
}

static void pending_clear(pending *p) {
  for (uint32_t i = 0; i < p->nargs; i++) dp_release(p->args[i]);
  free(p->args);
}

/* Types e now when its inputs are known (the usual case: no unknown is
   made); else gives it a fresh unknown and keeps it in the pending list.
   Takes args. */
static int defer(infer *I, dp_expr *e, uint32_t nargs, dp_type **args) {
  pending p = {e, NULL, nargs, args, 0, NULL};
  dp_type *t = NULL;
  int r = pending_result(I, &p, &t);
  if (r != 0) {
    pending_clear(&p);
    return r < 0 ? -1 : set_type(I, e, t);
  }
  if (I->npend == I->cappend) {
    uint32_t cap = I->cappend ? I->cappend * 2 : 64;
    pending *np = dp_realloc(I->pend, cap * sizeof *np);
    if (!np) {
      pending_clear(&p);
      return oom(I, e);
    }
    I->pend = np;
    I->cappend = cap;
  }
  if (!(p.res = dp__ts_fresh(&I->ts))) {
    pending_clear(&p);
    return oom(I, e);
  }
  I->pend[I->npend++] = p;
  return set_type(I, e, dp_retain(p.res));
}

/* Entry i waits for unknown v (an entry of the wait lists of solve). */
static int wait_for(infer *I, uint32_t i, dp_type *v) {
  if (!v) return failf(I, I->pend[i].e, "cannot infer the types of its arguments");
  dp__ptrslot *slot = dp__ptrmap_insert(&I->waits, v, NULL);
  if (!slot) return oom(I, I->pend[i].e);
  I->pend[i].blocker = v;
  I->pend[i].next = (uint32_t)slot->word; /* the list's order does not matter: */
  slot->word = i + 1;                     /* each entry is tried when it can go */
  return 0;
}

/* Tries entry i: solved (cleared, its e NULL), or waiting again. */
static int retry(infer *I, uint32_t i) {
  int r = try_pending(I, &I->pend[i]);
  if (r < 0) return -1;
  if (r == 0) return wait_for(I, i, I->ts.blocker);
  pending_clear(&I->pend[i]);
  I->pend[i].e = NULL;
  I->pend[i].args = NULL;
  I->pend[i].nargs = 0;
  I->nsolved++;
  return 0;
}

/* Tries again the entries waiting for the unknowns bound since bound[*b]. */
static int wake(infer *I, uint32_t *b) {
  int rc = 0;
  for (; *b < I->ts.nbound && rc == 0; (*b)++) {
    dp__ptrslot *slot = I->waits.n ? dp__ptrmap_find(&I->waits, I->ts.bound[*b]) : NULL;
    if (!slot) continue;
    uint32_t w = (uint32_t)slot->word;
    dp__ptrmap_remove(&I->waits, I->ts.bound[*b]);
    while (w && rc == 0) {
      uint32_t i = w - 1;
      w = I->pend[i].next;
      rc = retry(I, i);
    }
  }
  return rc;
}

/* Solved entries leave the list, the rest keep their order (so errors do
   not depend on addresses); the wait lists are made again for the new
   positions. */
static int compact(infer *I) {
  uint32_t keep = 0;
  for (uint32_t i = 0; i < I->npend; i++)
    if (I->pend[i].e) I->pend[keep++] = I->pend[i];
  I->npend = I->swept = keep;
  I->nsolved = 0;
  dp__ptrmap_free(&I->waits);
  for (uint32_t i = 0; i < keep; i++)
    if (wait_for(I, i, I->pend[i].blocker) < 0) return -1;
  return 0;
}

/* Runs the pending list to a fixed point; at the end (final) anything
   left is an error. Each entry is tried when it is added (here, after the
   walk that added it) and again only when the unknown that stopped it is
   bound (the solver's trail says which, also of the bindings the walks
   made between two solves): so a chain of n entries listed against the
   order they solve in takes n tries, not n sweeps, and a module of many
   functions, solved after each, sweeps each entry once. The list is
   compacted when half of it is solved, and at the end. */
static int solve(infer *I, int final) {
  uint32_t b = 0;
  int rc = wake(I, &b); /* earlier entries whose unknowns the walk bound */
  for (; I->swept < I->npend && rc == 0; I->swept++) rc = retry(I, I->swept);
  if (rc == 0) rc = wake(I, &b);
  I->ts.nbound = 0;
  if (rc < 0) return -1; /* the entries not solved stay for infer_finish to free */
  if ((final || 2 * I->nsolved > I->npend) && compact(I) < 0) return -1;
  if (final && I->npend)
    return failf(I, I->pend[0].e, "cannot infer the types of its arguments");
  return 0;
}

/* ---------------- calls ---------------- */

/* The argument types of c (borrowed) into args. */
static int borrow_arg_types(infer *I, dp_call *c, dp_type **args) {
  for (uint32_t i = 0; i < c->nargs; i++)
    if (!(args[i] = ty(I, c->args[i]))) return -1;
  return 0;
}

/* The argument types of c, retained, in a new array. */
static dp_type **arg_types(infer *I, dp_call *c) {
  dp_type **args = dp_calloc(c->nargs ? c->nargs : 1, sizeof *args);
  if (!args) return NULL;
  if (borrow_arg_types(I, c, args) < 0) {
    free(args);
    return NULL;
  }
  for (uint32_t i = 0; i < c->nargs; i++) dp_retain(args[i]);
  return args;
}

static int arity(infer *I, dp_call *c, uint32_t want) {
  if (c->nargs == want) return 0;
  char msg[96];
  snprintf(msg, sizeof msg, "expects %u argument%s, got %u", want, want == 1 ? "" : "s", c->nargs);
  return failf(I, &c->e, msg);
}

static int call_op(infer *I, dp_call *c, dp_op *op) {
  if (op->num_inputs >= 0 && arity(I, c, (uint32_t)op->num_inputs) < 0) return -1;
  if ((op->flags & DP_OPF_IDENTITY) && c->nargs >= 1) {
    dp_type *t = ty(I, c->args[0]);
    if (t && (op->flags & DP_OPF_CHECK_ATTRS) && op->rel) { /* (its attributes checked) */
      dp_err *e = NULL;
      dp_type *r = op->rel(I->ctx, &t, 1, c->attrs, op->ud, &e);
      if (!r) return e ? fail(I, &c->e, e) : oom(I, &c->e);
      dp_release(r);
    }
    return t ? set_type(I, &c->e, dp_retain(t)) : -1;
  }
  dp_type *local[8], **args = c->nargs <= 8 ? local : dp_malloc(c->nargs * sizeof *args);
  if (!args) return oom(I, &c->e);
  int r = borrow_arg_types(I, c, args), tensors = r == 0;
  for (uint32_t i = 0; tensors && i < c->nargs; i++) {
    args[i] = dp__ts_find(&I->ts, args[i]);
    tensors = args[i]->h.kind == DP_TY_TENSOR;
  }
  if (tensors && op->rel) { /* the usual case: typed now, nothing pending */
    dp_type *t = NULL;
    r = run_relation(I, c, args, &t) < 0 ? -1 : set_type(I, &c->e, t);
  } else if (r == 0) { /* wait (in the pending list) until the arguments are known */
    dp_type **kept = dp_malloc((c->nargs ? c->nargs : 1) * sizeof *kept);
    for (uint32_t i = 0; kept && i < c->nargs; i++) kept[i] = dp_retain(args[i]);
    r = kept ? defer(I, &c->e, c->nargs, kept) : oom(I, &c->e);
  }
  if (args != local) free(args);
  return r;
}

static int call_ctor(infer *I, dp_call *c, dp_ctor *k) {
  if (arity(I, c, k->ninputs) < 0) return -1;
  dp_type **in = dp_malloc((k->ninputs ? k->ninputs : 1) * sizeof *in);
  dp_type *adt = in ? ctor_instance(I, k, in) : NULL;
  int r = adt ? 0 : oom(I, &c->e);
  for (uint32_t i = 0; r == 0 && i < c->nargs; i++) {
    dp_type *a = ty(I, c->args[i]);
    r = a ? unify(I, &c->e, a, in[i]) : -1;
  }
  free(in);
  return r < 0 ? -1 : set_type(I, &c->e, dp_retain(adt));
}

/* A polymorphic function type used as a callee: fresh unknowns for its
   type parameters (solver owned, monomorphic). */
static dp_type *instantiate_func(infer *I, dp_func_type *f) {
  dp_type **to = dp_malloc(f->ntparams * sizeof *to);
  dp_type **args = dp_malloc((f->nargs ? f->nargs : 1) * sizeof *args);
  dp_type *ret = NULL, *res = NULL;
  dp_err *e = NULL;
  uint32_t n = 0;
  if (!to || !args) goto out;
  for (uint32_t i = 0; i < f->ntparams; i++)
    if (!(to[i] = dp__ts_fresh(&I->ts))) goto out;
  for (; n < f->nargs; n++)
    if (!(args[n] = dp__ts_instantiate(&I->ts, f->items[f->ntparams + n], f->ntparams, f->items, to, &e)))
      goto out;
  ret = dp__ts_instantiate(&I->ts, f->ret, f->ntparams, f->items, to, &e);
  if (ret) res = dp__ts_keep(&I->ts, dp_type_func(I->ctx, 0, NULL, f->nargs, args, ret));
out:
  for (uint32_t i = 0; i < n; i++) dp_release(args[i]);
  dp_release(ret);
  dp_err_free(e);
  free(to);
  free(args);
  return res;
}

static int call_value(infer *I, dp_call *c) {
  dp_type *f = ty(I, c->fn);
  if (!f) return -1;
  f = dp__ts_find(&I->ts, f);
  if (f->h.kind == DP_TY_FUNC && ((dp_func_type *)f)->ntparams)
    if (!(f = instantiate_func(I, (dp_func_type *)f))) return oom(I, &c->e);
  if (f->h.kind == DP_TY_FUNC) { /* known callee: no unknown needed for the result */
    dp_func_type *ft = (dp_func_type *)f;
    if (arity(I, c, ft->nargs) < 0) return -1;
    for (uint32_t i = 0; i < c->nargs; i++) {
      dp_type *a = ty(I, c->args[i]);
      if (!a || unify(I, &c->e, a, ft->items[ft->ntparams + i]) < 0) return -1;
    }
    return set_type(I, &c->e, dp_retain(ft->ret));
  }
  dp_type **args = arg_types(I, c), *res = args ? dp__ts_fresh(&I->ts) : NULL;
  if (!args || !res) { /* (arg_types retained each argument's type) */
    for (uint32_t i = 0; args && i < c->nargs; i++) dp_release(args[i]);
    free(args);
    return I->err ? -1 : oom(I, &c->e);
  }
  dp_type *want = dp_type_func(I->ctx, 0, NULL, c->nargs, args, res);
  for (uint32_t i = 0; i < c->nargs; i++) dp_release(args[i]);
  free(args);
  if (!want) return oom(I, &c->e);
  int r = unify(I, &c->e, f, want);
  dp_release(want);
  return r < 0 ? -1 : set_type(I, &c->e, dp_retain(res));
}

static int type_call(infer *I, dp_call *c) {
  if (c->fn->h.kind == DP_OP) return call_op(I, c, (dp_op *)c->fn);
  if (c->fn->h.kind == DP_CTOR) return call_ctor(I, c, (dp_ctor *)c->fn);
  return call_value(I, c);
}

/* ---------------- other nodes ---------------- */

static int type_func(infer *I, dp_func *fn) {
  dp_type *local[8], **ps = fn->nparams <= 8 ? local : dp_malloc(fn->nparams * sizeof *ps);
  if (!ps) return oom(I, &fn->e);
  int r = 0;
  for (uint32_t i = 0; i < fn->nparams && r == 0; i++)
    if (!(ps[i] = ty(I, &fn->params[i]->e))) r = -1;
  dp_type *body = r == 0 ? ty(I, fn->body) : NULL;
  if (!body) r = -1;
  /* (a result annotation with holes: the body's type, once unified, is it filled) */
  dp_type *ret = fn->ret && !(fn->ret->h.flags & DP_TYPE_HOLE) ? fn->ret : body;
  if (r == 0 && fn->ret && ret == body) {
    dp_type *want = dp__ts_keep(&I->ts, annotation(I, &fn->e, fn->ret));
    if (!want || unify(I, &fn->e, body, want) < 0) r = -1;
  } else if (r == 0 && fn->ret && unify(I, &fn->e, body, fn->ret) < 0) r = -1;
  if (r == 0)
    r = set_type(I, &fn->e, dp_type_func(I->ctx, fn->ntparams, fn->tparams, fn->nparams, ps, ret));
  if (ps != local) free(ps);
  return r;
}

static int type_tuple(infer *I, dp_tuple *t) {
  dp_type *local[8], **fs = t->n <= 8 ? local : dp_malloc(t->n * sizeof *fs);
  if (!fs) return oom(I, &t->e);
  int r = 0;
  for (uint32_t i = 0; i < t->n && r == 0; i++)
    if (!(fs[i] = ty(I, t->fields[i]))) r = -1;
  if (r == 0) r = set_type(I, &t->e, dp_type_tuple(I->ctx, t->n, fs));
  if (fs != local) free(fs);
  return r;
}

static int type_proj(infer *I, dp_proj *p) {
  dp_type *t = ty(I, p->tuple);
  dp_type **args = t ? dp_malloc(sizeof *args) : NULL;
  if (!args) return I->err ? -1 : oom(I, &p->e);
  args[0] = dp_retain(t);
  return defer(I, &p->e, 1, args);
}

static int type_if(infer *I, dp_if *e) {
  dp_type *c = ty(I, e->cond), *a = ty(I, e->then_), *b = ty(I, e->else_);
  if (!c || !a || !b) return -1;
  dp_type *bool_t = dp_type_tensor(I->ctx, DP_BOOL, 0, NULL);
  if (!bool_t) return oom(I, &e->e);
  int r = unify(I, &e->e, c, bool_t); /* reported at the if: a variable's span is its binding */
  dp_release(bool_t);
  if (r < 0 || unify(I, &e->e, b, a) < 0) return -1;
  return set_type(I, &e->e, dp_retain(a));
}

/* Pattern p must match a value of type t; binds the pattern variables.
   An explicit stack of (pattern, type). */
static int bind_pattern(infer *I, dp_match *m, dp_pattern *p0, dp_type *t0) {
  uint32_t n = 1, cap = 16;
  dp_pattern **ps = dp_malloc(cap * sizeof *ps);
  dp_type **ts = dp_malloc(cap * sizeof *ts);
  int r = ps && ts ? 0 : oom(I, &m->e);
  if (r == 0) { ps[0] = p0; ts[0] = t0; }
  while (r == 0 && n) {
    dp_pattern *p = ps[--n];
    dp_type *t = ts[n], **sub = NULL;
    if (p->h.kind == DP_PAT_VAR) {
      dp_type *v = var_type(I, p->var);
      r = v ? unify(I, &m->e, v, t) : -1;
      continue;
    }
    if (p->h.kind == DP_PAT_WILD) continue;
    sub = dp_malloc((p->n ? p->n : 1) * sizeof *sub);
    if (!sub) { r = oom(I, &m->e); break; }
    if (p->h.kind == DP_PAT_CTOR) {
      dp_type *adt = p->ctor->ninputs == p->n ? ctor_instance(I, p->ctor, sub) : NULL;
      if (!adt) r = p->ctor->ninputs == p->n ? oom(I, &m->e) : failf(I, &m->e, "constructor pattern with the wrong number of fields");
      else r = unify(I, &m->e, t, adt);
    } else {
      for (uint32_t i = 0; i < p->n && r == 0; i++)
        if (!(sub[i] = dp__ts_fresh(&I->ts))) r = oom(I, &m->e);
      dp_type *tt = r == 0 ? dp__ts_keep(&I->ts, dp_type_tuple(I->ctx, p->n, sub)) : NULL;
      if (r == 0) r = tt ? unify(I, &m->e, t, tt) : oom(I, &m->e);
    }
    if (r == 0 && n + p->n > cap) {
      cap = (n + p->n) * 2;
      dp_pattern **np = dp_realloc(ps, cap * sizeof *np);
      if (np) ps = np;
      dp_type **nt = dp_realloc(ts, cap * sizeof *nt);
      if (nt) ts = nt;
      if (!np || !nt) r = oom(I, &m->e);
    }
    for (uint32_t i = 0; r == 0 && i < p->n; i++) {
      ps[n] = p->sub[i];
      ts[n++] = sub[i];
    }
    free(sub);
  }
  free(ps);
  free(ts);
  return r;
}

static int type_match(infer *I, dp_match *m) {
  dp_type *d = ty(I, m->data), *res = NULL;
  if (!d) return -1;
  if (m->n == 0) return failf(I, &m->e, "a match needs at least one clause");
  for (uint32_t i = 0; i < m->n; i++) {
    if (bind_pattern(I, m, m->clauses[i].pat, d) < 0) return -1;
    dp_type *r = ty(I, m->clauses[i].rhs);
    if (!r) return -1;
    if (!res) res = r;
    else if (unify(I, &m->e, r, res) < 0) return -1;
  }
  return set_type(I, &m->e, dp_retain(res));
}

static int type_ref_read(infer *I, dp_ref_read *e) {
  dp_type *r = ty(I, e->ref);
  if (!r) return -1;
  dp_type *f = dp__ts_find(&I->ts, r);
  if (f->h.kind == DP_TY_REF) return set_type(I, &e->e, dp_retain(((dp_ref_type *)f)->elem));
  dp_type *a = dp__ts_fresh(&I->ts), *want = a ? dp_type_ref(I->ctx, a) : NULL;
  if (!want) return oom(I, &e->e);
  int rc = unify(I, &e->e, r, want);
  dp_release(want);
  return rc < 0 ? -1 : set_type(I, &e->e, dp_retain(a));
}

static int type_ref_write(infer *I, dp_ref_write *e) {
  dp_type *r = ty(I, e->ref), *v = ty(I, e->value);
  if (!r || !v) return -1;
  dp_type *want = dp_type_ref(I->ctx, v);
  if (!want) return oom(I, &e->e);
  int rc = unify(I, &e->e, r, want);
  dp_release(want);
  return rc < 0 ? -1 : set_type(I, &e->e, dp_type_tuple(I->ctx, 0, NULL));
}

static int type_const(infer *I, dp_const *c) {
  return set_type(I, &c->e, dp_type_tensor(I->ctx, c->dtype, c->ndim, c->shape));
}

static int type_let(infer *I, dp_let *l) {
  dp_type *v = ty(I, &l->var->e), *val = ty(I, l->value), *body = ty(I, l->body);
  if (!v || !val || !body || unify(I, &l->e, val, v) < 0) return -1;
  return set_type(I, &l->e, dp_retain(body));
}

/* Types node e, whose children are typed. */
static int post(infer *I, dp_expr *e) {
  switch (e->h.kind) {
  case DP_VAR: return var_type(I, (dp_var *)e) ? 0 : -1;
  case DP_GLOBAL: return type_global(I, (dp_global *)e);
  case DP_CONST: return type_const(I, (dp_const *)e);
  case DP_OP: return 0; /* typed per call, by its relation */
  case DP_CTOR: {
    dp_ctor *c = (dp_ctor *)e; /* its own type is the polymorphic one, constant */
    if (!c->e.type && !(c->e.type = ctor_poly_type(I->ctx, c))) return oom(I, e);
    return 0;
  }
  case DP_CALL: return type_call(I, (dp_call *)e);
  case DP_FUNC: I->binders++; return type_func(I, (dp_func *)e);
  case DP_LET: I->binders++; return type_let(I, (dp_let *)e);
  case DP_TUPLE: return type_tuple(I, (dp_tuple *)e);
  case DP_PROJ: return type_proj(I, (dp_proj *)e);
  case DP_IF: return type_if(I, (dp_if *)e);
  case DP_MATCH: I->binders++; return type_match(I, (dp_match *)e);
  case DP_REF_CREATE: {
    dp_type *v = ty(I, ((dp_ref_create *)e)->value);
    return v ? set_type(I, e, dp_type_ref(I->ctx, v)) : -1;
  }
  case DP_REF_READ: return type_ref_read(I, (dp_ref_read *)e);
  case DP_REF_WRITE: return type_ref_write(I, (dp_ref_write *)e);
  }
  return failf(I, e, "unknown expression kind");
}

/* ---------------- the walk ---------------- */

/* Whether the walk goes into e: a node not typed yet, or a constructor
   (its own type is made there, once). Not an operator: a call types it by
   its relation, and post() has nothing to do for it (no visit, so an
   operator call's callee costs nothing). */
static int needs_visit(infer *I, dp_expr *e) {
  if (e->h.kind == DP_OP) return 0;
  return e->h.kind == DP_CTOR ? 1 : lookup(I, e) == NULL;
}

static int push(infer *I, dp_expr *e) {
  if (I->nstack == I->capstack) {
    uint32_t cap = I->capstack ? I->capstack * 2 : 256;
    frame *s = dp_realloc(I->stack, cap * sizeof *s);
    if (!s) return oom(I, e);
    I->stack = s;
    I->capstack = cap;
  }
  /* (calls and lets, nearly every node, without dp_expr_nchildren's
     switch; an operator call starts at its first argument) */
  uint32_t first = 0, n;
  if (e->h.kind == DP_CALL) {
    const dp_call *c = (const dp_call *)e;
    n = 1 + c->nargs;
    first = c->fn->h.kind == DP_OP;
  } else {
    n = e->h.kind == DP_LET ? 3 : dp_expr_nchildren(e);
  }
  I->stack[I->nstack++] = (frame){e, first, n};
  I->nkids += n;
  if (I->nstack > I->depth) I->depth = I->nstack;
  return 0;
}

/* The k-th child to visit. A let's value goes before its variable, so an
   unannotated let variable simply takes the value's type (no unknown to
   make and solve: million-long let chains stay cheap). */
static dp_expr *child_at(infer *I, dp_expr *e, uint32_t k) {
  if (e->h.kind == DP_CALL) { /* (as dp_expr_child: the callee, then the arguments) */
    const dp_call *c = (const dp_call *)e;
    return k ? c->args[k - 1] : c->fn;
  }
  if (e->h.kind != DP_LET) return dp_expr_child(e, k);
  dp_let *l = (dp_let *)e;
  if (k == 0) return l->value;
  if (k == 2) return l->body; /* (as dp_expr_child) */
  if (!dp_var_annot(l->var) && !lookup(I, &l->var->e)) {
    dp_type *t = lookup(I, l->value);
    if (t && set_type(I, &l->var->e, dp_retain(t)) < 0) return NULL;
  }
  return &l->var->e;
}

/* Post-order over the DAG below root; each node typed once. */
static int walk(infer *I, dp_expr *root) {
  if (!needs_visit(I, root)) return 0;
  if (push(I, root) < 0) return -1;
  while (I->nstack) {
    frame *f = &I->stack[I->nstack - 1];
    dp_expr *e = f->e;
    if (f->next < f->n) {
      dp_expr *c = child_at(I, e, f->next++);
      if (I->err) return -1;
      if (c && needs_visit(I, c) && push(I, c) < 0) return -1;
      continue;
    }
    if (post(I, e) < 0) return -1;
    I->nstack--;
  }
  return 0;
}

/* ---------------- commit ---------------- */

/* The i-th typed node, and whether its type is its old one (F_KEPT). */
static dp_expr *order_at(const infer *I, uint32_t i) {
  return (dp_expr *)((uintptr_t)I->order[i] & ~KEPT_TAG);
}

static int order_kept(const infer *I, uint32_t i) {
  return ((uintptr_t)I->order[i] & KEPT_TAG) != 0;
}

/* Where e's working type is held (node or map slot). */
static dp_type **slot(infer *I, dp_expr *e) {
  if (I->in_nodes) return &e->type;
  dp__ptrslot *s = dp__ptrmap_find(&I->types, e);
  return s ? (dp_type **)&s->ptr : NULL;
}

/* Replaces every working type by its resolution, in typing order (so the
   error reported does not depend on addresses). Fails on a node whose type
   is itself unknown; unknowns nested in a type (List[?] of a lone Nil)
   stay, printed as `?`, as TVM. */
static int resolve_all(infer *I) {
  dp__ts_freeze(&I->ts);
  for (uint32_t i = 0; i < I->norder; i++) {
    dp_expr *n = order_at(I, i);
    dp_type **t = slot(I, n);
    if (I->in_nodes) { /* restore() clears the rest on failure */
      n->h.flags &= (uint16_t)~F_MINE;
      if (order_kept(I, i)) continue; /* made before this run: none of its unknowns inside */
    }
    if ((*t)->h.kind == DP_TY_TENSOR) continue; /* no unknowns inside */
    int complete = 1;
    dp_err *e = NULL;
    dp_type *final = dp__ts_resolve(&I->ts, *t, &complete, &e);
    if (!final) return fail(I, n, e);
    dp_release(*t);
    *t = final;
    if (!complete && dp__ts_is_unknown(&I->ts, final))
      return failf(I, n, "cannot infer its type (add a type annotation)");
  }
  return 0;
}

/* Writes the resolved types: they become the nodes' checked types. */
static int commit(infer *I) {
  if (resolve_all(I) < 0) return -1;
  for (uint32_t i = 0; !I->in_nodes && i < I->norder; i++) {
    dp_expr *e = order_at(I, i);
    dp_type **t = slot(I, e);
    dp_release(e->type);
    e->type = *t;
    *t = NULL;
  }
  for (uint32_t i = 0; i < I->nolds; i++) dp_release(I->olds[i].old);
  I->norder = I->nolds = 0;
  return 0;
}

/* After a failure in node mode: the nodes get their old types back. */
static void restore(infer *I) {
  for (uint32_t i = 0; i < I->norder; i++) {
    dp_expr *e = order_at(I, i);
    if (!order_kept(I, i)) {
      dp_release(e->type);
      e->type = NULL;
    }
    e->h.flags &= (uint16_t)~F_MINE;
  }
  for (uint32_t i = 0; i < I->nolds; i++) I->olds[i].e->type = I->olds[i].old;
  I->norder = I->nolds = 0;
}

/* ---------------- entry points ---------------- */

static void infer_init(infer *I, dp_ctx *ctx, dp_module *m, int expr_mode) {
  memset(I, 0, sizeof *I);
  I->ctx = ctx;
  I->m = m;
  I->expr_mode = expr_mode;
  I->in_nodes = running++ == 0;
  dp__ts_init(&I->ts, ctx);
}

static void release_values(dp__ptrmap *m) {
  for (uint32_t i = 0; i < m->cap; i++)
    if (m->slots[i].key) dp_release(m->slots[i].ptr);
  dp__ptrmap_free(m);
}

static int infer_finish(infer *I, int rc, dp_err **err) {
  if (I->in_nodes) restore(I); /* nothing left to restore after a commit */
  release_values(&I->types);
  release_values(&I->sigs);
  for (uint32_t i = 0; i < MEMO_SIZE; i++) memo_clear(&I->memo[i]);
  for (uint32_t i = 0; i < I->npend; i++)
    if (I->pend[i].e) pending_clear(&I->pend[i]);
  free(I->pend);
  dp__ptrmap_free(&I->waits);
  free(I->order);
  free(I->olds);
  free(I->stack);
  dp__ts_free(&I->ts);
  running--;
  if (rc < 0) {
    if (!I->err) I->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    dp_err_set(err, I->err);
    return -1;
  }
  return 0;
}

/* A variable read outside its binder's scope has no value there: a type
   error (visit.h, dp_check_scopes). Only where something inside e binds
   one (the walk of e counted the binders; a function's own parameters are
   in scope everywhere in its body). */
static int check_scopes(infer *I, dp_expr *e) {
  uint32_t own = e->h.kind == DP_FUNC;
  if (I->binders <= own) return 0;
  dp_scope_error s;
  int n = dp_check_scopes(e, &s, 1);
  if (n < 0) return oom(I, e);
  if (n > 0 && !I->err) I->err = dp_scope_error_new(I->ctx, &s, DP_ERR_TYPE);
  return n > 0 ? -1 : 0;
}

int dp_infer_module(dp_module *m, dp_err **err) { return dp__infer_module(m, 0, err); }

int dp__infer_module(dp_module *m, int scopes_known, dp_err **err) {
  infer I;
  if (!m) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "no module"));
    return -1;
  }
  infer_init(&I, m->ctx, m, 0);
  int rc = 0;
  for (uint32_t i = 0; i < m->nfuncs && rc == 0; i++) {
    dp_type *sig = signature(&I, m->funcs[i].fn);
    rc = sig ? set_type(&I, &m->funcs[i].global->e, dp_retain(sig)) : oom(&I, &m->funcs[i].fn->e);
  }
  for (uint32_t i = 0; i < m->nfuncs && rc == 0; i++) {
    dp_func *fn = m->funcs[i].fn;
    I.binders = 0;
    rc = walk(&I, &fn->e);
    if (rc == 0 && !scopes_known) rc = check_scopes(&I, &fn->e);
    if (rc == 0) rc = unify(&I, &fn->e, lookup(&I, &fn->e), signature(&I, fn));
    if (rc == 0) rc = solve(&I, 0); /* keep the pending list short */
  }
  if (rc == 0) rc = solve(&I, 1);
  /* (every function walked, each node once: the sizes a later walk may
     size its arrays by; commit empties the typing order) */
  struct dp_module_sizes sizes = {I.norder, I.nkids, I.depth};
  if (rc == 0) rc = commit(&I);
  if (rc == 0) m->sizes = sizes;
  return infer_finish(&I, rc, err);
}

/* A context to make types in, found in the expression itself. */
static dp_ctx *find_ctx(dp_expr *root) {
  dp__ptrmap seen = DP__PTRMAP_INIT;
  dp_expr **st = dp_malloc(64 * sizeof *st);
  uint32_t n = 0, cap = 64;
  dp_ctx *ctx = NULL;
  if (st) st[n++] = root;
  while (st && n && !ctx) {
    dp_expr *e = st[--n];
    int fresh = 0;
    if (!dp__ptrmap_insert(&seen, e, &fresh) || !fresh) continue;
    if (e->type) ctx = e->type->ctx;
    else if (e->h.kind == DP_OP) ctx = ((dp_op *)e)->ctx;
    else if (e->h.kind == DP_VAR && dp_var_annot((dp_var *)e)) ctx = dp_var_annot((dp_var *)e)->ctx;
    uint32_t k = dp_expr_nchildren(e);
    if (n + k > cap) {
      cap = (n + k) * 2;
      dp_expr **s = dp_realloc(st, cap * sizeof *s);
      if (!s) break;
      st = s;
    }
    for (uint32_t i = 0; i < k; i++) {
      dp_expr *c = dp_expr_child(e, i);
      if (c) st[n++] = c;
    }
  }
  free(st);
  dp__ptrmap_free(&seen);
  return ctx;
}

int dp_infer_expr(dp_module *m, dp_expr *e, dp_err **err) {
  infer I;
  if (!e) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "no expression"));
    return -1;
  }
  dp_ctx *ctx = m ? m->ctx : find_ctx(e), *own = NULL;
  if (!ctx && !(ctx = own = dp_ctx_new())) { /* types made here keep it alive */
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  infer_init(&I, ctx, m, 1);
  int rc = walk(&I, e);
  if (rc == 0) rc = check_scopes(&I, e);
  if (rc == 0) rc = solve(&I, 1);
  if (rc == 0) rc = commit(&I);
  rc = infer_finish(&I, rc, err);
  dp_release(own);
  return rc;
}
