/*
 * Scopes: is every variable read inside the scope of what binds it?
 * (dp_check_scopes, visit.h)
 *
 * A let binds its variable in its body (and in its value when that is a
 * function literal: a recursive let), a function its parameters in its
 * body, a match clause its pattern's variables in its right-hand side. The
 * expression is a graph: a node shared by several places is evaluated once,
 * at the innermost scope that holds all its uses (where the printer binds
 * it), so its reads happen there.
 *
 * 1. post order of the distinct nodes with their children (atomic nodes,
 *    variables among them, are no nodes here: they are read in place);
 * 2. parents first (reverse post order), each node's home: the lowest
 *    common ancestor of the scopes its uses are in; a binder opens its
 *    scopes below its home;
 * 3. the scope tree numbered depth first, so that "scope a holds scope b"
 *    is an interval test, and every read of a bound variable checked
 *    against the scope of its binder.
 * Explicit stacks throughout; only nodes with more than one reference can
 * be shared, so only those go into the pointer map.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "ptrmap.h"
#include "devplan/visit.h"

#define NONE UINT32_MAX
#define BINDING (UINT32_MAX - 1) /* a child slot that binds (a let's variable, a parameter) */
#define VAR_TAG 0x80000000u      /* a child slot holding variable vars[k & ~VAR_TAG] */

typedef struct sscope { uint32_t parent, level, tin, tout; } sscope;
typedef struct binder {
  dp_var *var;
  uint32_t scope, node, again; /* again: a second node binding it, or NONE */
} binder;

typedef struct scopes {
  dp_expr **x;            /* nodes in post order */
  uint32_t n, capx;
  uint32_t *kstart, capk; /* children of node i: kids[kstart[i] .. kstart[i + 1]) */
  uint32_t *kids, nkids, capkids;
  dp_var **vars;          /* the variables read (one entry per read: no lookup while numbering) */
  uint32_t nvars, capvars;
  dp__ptrmap index;       /* shared node -> post order index + 1 */
  uint32_t *home, *open;  /* per node: its scope, the first scope it opens (NONE) */
  sscope *s;
  uint32_t ns, caps;
  dp__ptrmap bound;       /* variable -> binder index + 1 */
  binder *b;
  uint32_t nb, capb;
  uint32_t nbinders;      /* lets, functions and matches (each binds in scopes of its own) */
} scopes;

static int atomic(const dp_expr *e) { return dp_expr_nchildren(e) == 0; }

/* ---- 1. post order ---- */

typedef struct sframe { dp_expr *e; uint32_t i, n, kbase; } sframe;

static int push_kid(scopes *S, uint32_t k) {
  if (dp_grow((void **)&S->kids, &S->capkids, S->nkids + 1, sizeof *S->kids) < 0) return -1;
  S->kids[S->nkids++] = k;
  return 0;
}

/* The children lists are written in a scratch list as children finish, and
   moved to their parent's row when the parent finishes. */
static int number(scopes *S, dp_expr *root) {
  sframe *st = NULL;
  uint32_t sp = 0, cap = 0, *scratch = NULL, nscratch = 0, capscratch = 0;
  int rc = -1;
  if (atomic(root)) return 0;
  if (dp_grow((void **)&st, &cap, 1, sizeof *st) < 0) return -1;
  st[sp++] = (sframe){root, 0, dp_expr_nchildren(root), 0};
  while (sp) {
    sframe *f = &st[sp - 1];
    if (f->i < f->n) {
      dp_expr *k = dp_expr_child(f->e, f->i++);
      uint32_t known = NONE;
      if (k && !atomic(k) && k->h.rc > 1) {
        dp__ptrslot *s = dp__ptrmap_find(&S->index, k);
        if (s) known = (uint32_t)((uintptr_t)s->ptr - 1);
      }
      if (!k || atomic(k) || known != NONE) {
        uint32_t slot = k && !atomic(k) ? known : NONE;
        if (k && k->h.kind == DP_VAR) {
          if (S->nvars >= VAR_TAG - 1 || dp_grow((void **)&S->vars, &S->capvars, S->nvars + 1, sizeof *S->vars) < 0)
            goto out;
          S->vars[S->nvars] = (dp_var *)k;
          slot = VAR_TAG | S->nvars++;
        }
        if (dp_grow((void **)&scratch, &capscratch, nscratch + 1, sizeof *scratch) < 0) goto out;
        scratch[nscratch++] = slot;
        continue;
      }
      if (dp_grow((void **)&st, &cap, sp + 1, sizeof *st) < 0) goto out;
      st[sp++] = (sframe){k, 0, dp_expr_nchildren(k), nscratch};
      continue;
    }
    sframe done = *f;
    sp--;
    uint32_t me = S->n;
    if (dp_grow((void **)&S->x, &S->capx, me + 1, sizeof *S->x) < 0 ||
        dp_grow((void **)&S->kstart, &S->capk, me + 2, sizeof *S->kstart) < 0)
      goto out;
    S->x[me] = done.e;
    S->kstart[me] = S->nkids;
    int k = done.e->h.kind;
    S->nbinders += k == DP_LET || k == DP_FUNC || k == DP_MATCH;
    for (uint32_t j = done.kbase; j < nscratch; j++)
      if (push_kid(S, scratch[j]) < 0) goto out;
    nscratch = done.kbase;
    S->n++;
    S->kstart[S->n] = S->nkids;
    if (done.e->h.rc > 1 && dp__ptrmap_put(&S->index, done.e, (void *)(uintptr_t)(me + 1)) < 0) goto out;
    if (sp) { /* the parent's scratch gets this node's index */
      if (dp_grow((void **)&scratch, &capscratch, nscratch + 1, sizeof *scratch) < 0) goto out;
      scratch[nscratch++] = me;
    }
  }
  rc = 0;
out:
  free(st);
  free(scratch);
  return rc;
}

/* ---- 2. homes ---- */

static uint32_t new_scope(scopes *S, uint32_t parent) {
  if (dp_grow((void **)&S->s, &S->caps, S->ns + 1, sizeof *S->s) < 0) return NONE;
  S->s[S->ns] = (sscope){parent, parent == NONE ? 0 : S->s[parent].level + 1, 0, 0};
  return S->ns++;
}

static uint32_t lca(const scopes *S, uint32_t a, uint32_t b) {
  while (S->s[a].level > S->s[b].level) a = S->s[a].parent;
  while (S->s[b].level > S->s[a].level) b = S->s[b].parent;
  while (a != b) {
    a = S->s[a].parent;
    b = S->s[b].parent;
  }
  return a;
}

/* The scope child slot k of node i is read in, or BINDING. */
static uint32_t slot_scope(const scopes *S, uint32_t i, uint32_t k) {
  const dp_expr *e = S->x[i];
  switch (e->h.kind) {
  case DP_LET:
    if (k == 0) return BINDING;
    if (k == 2) return S->open[i];
    return ((const dp_let *)e)->value->h.kind == DP_FUNC ? S->open[i] : S->home[i];
  case DP_FUNC:
    return k < ((const dp_func *)e)->nparams ? BINDING : S->open[i];
  case DP_MATCH: return k == 0 ? S->home[i] : S->open[i] + (k - 1);
  default: return S->home[i];
  }
}

static int bind(scopes *S, dp_var *v, uint32_t scope, uint32_t node) {
  int fresh = 0;
  dp__ptrslot *slot = dp__ptrmap_insert(&S->bound, v, &fresh);
  if (!slot) return -1;
  if (!fresh) { /* bound twice: an error of its own; its reads are not checked */
    binder *b = &S->b[slot->word - 1];
    if (b->again == NONE && node != b->node) b->again = node;
    return 0;
  }
  if (dp_grow((void **)&S->b, &S->capb, S->nb + 1, sizeof *S->b) < 0) return -1;
  S->b[S->nb] = (binder){v, scope, node, NONE};
  slot->word = ++S->nb;
  return 0;
}

typedef struct pbind { scopes *S; uint32_t scope, node; } pbind;
static int bind_pattern_var(void *ud, dp_var *v) {
  pbind *p = ud;
  return bind(p->S, v, p->scope, p->node);
}

/* The scopes node i opens (below its home) and the variables it binds there. */
static int open_scopes(scopes *S, uint32_t i) {
  dp_expr *e = S->x[i];
  uint32_t first = NONE;
  if (e->h.kind == DP_LET) {
    if ((first = new_scope(S, S->home[i])) == NONE) return -1;
    if (bind(S, ((dp_let *)e)->var, first, i) < 0) return -1;
  } else if (e->h.kind == DP_FUNC) {
    dp_func *f = (dp_func *)e;
    if ((first = new_scope(S, S->home[i])) == NONE) return -1;
    for (uint32_t p = 0; p < f->nparams; p++)
      if (bind(S, f->params[p], first, i) < 0) return -1;
  } else if (e->h.kind == DP_MATCH) {
    dp_match *m = (dp_match *)e;
    for (uint32_t c = 0; c < m->n; c++) {
      uint32_t s = new_scope(S, S->home[i]);
      if (s == NONE) return -1;
      if (c == 0) first = s;
      pbind p = {S, s, i};
      if (dp_pattern_vars(m->clauses[c].pat, bind_pattern_var, &p) < 0) return -1;
    }
  }
  S->open[i] = first;
  return 0;
}

static int homes(scopes *S) {
  S->home = dp_malloc((S->n ? S->n : 1) * sizeof *S->home);
  S->open = dp_malloc((S->n ? S->n : 1) * sizeof *S->open);
  if (!S->home || !S->open || new_scope(S, NONE) == NONE) return -1;
  /* (one scope and at least one variable per binder, usually) */
  if (dp_grow((void **)&S->s, &S->caps, S->nbinders + 1, sizeof *S->s) < 0 ||
      dp_grow((void **)&S->b, &S->capb, S->nbinders, sizeof *S->b) < 0 ||
      dp__ptrmap_reserve(&S->bound, S->nbinders) < 0)
    return -1;
  for (uint32_t i = 0; i < S->n; i++) S->home[i] = NONE;
  if (S->n) S->home[S->n - 1] = 0;
  for (uint32_t i = S->n; i-- > 0;) {
    if (open_scopes(S, i) < 0) return -1;
    for (uint32_t k = 0; k < S->kstart[i + 1] - S->kstart[i]; k++) {
      uint32_t c = S->kids[S->kstart[i] + k];
      if (c == NONE || (c & VAR_TAG)) continue;
      uint32_t at = slot_scope(S, i, k);
      if (at == BINDING) continue;
      S->home[c] = S->home[c] == NONE ? at : lca(S, S->home[c], at);
    }
  }
  return 0;
}

/* ---- 0. the common case: a tree ----
   When no node inside e is held twice, each is evaluated where it stands,
   so a read is in scope exactly when a binder of its variable encloses it
   in the walk: one walk that counts each variable's open binders says so,
   with a map of the variables read or bound and a stack, instead of the
   arrays of 1-3 (a parsed million-let chain: a fifth of the memory and the
   time). Anything else (a node held twice, a variable bound twice, a read
   out of scope) is left to the full check, which words the errors. */

enum { V_BOUND = 1, V_OUTSIDE = 2, V_OPEN = 4 }; /* V_OPEN: one open binder */

typedef struct tframe { dp_expr *e; uint32_t k, n; } tframe;
typedef struct tstate { dp__ptrmap vars; int verdict; } tstate; /* verdict 0: ask the full check */

static uint64_t *var_state(tstate *T, const dp_var *v) {
  dp__ptrslot *s = dp__ptrmap_insert(&T->vars, v, NULL);
  if (!s) T->verdict = -1;
  return s ? &s->word : NULL;
}

/* A binder of v is met: bound twice, or read before (out of its scope), is
   the full check's to say. */
static int tree_bind(void *ud, dp_var *v) {
  tstate *T = ud;
  uint64_t *w = var_state(T, v);
  if (!w) return -1;
  if (*w & (V_BOUND | V_OUTSIDE)) {
    T->verdict = 0;
    return 1;
  }
  *w |= V_BOUND;
  return 0;
}

static int tree_open(void *ud, dp_var *v) {
  uint64_t *w = var_state(ud, v);
  if (w) *w += V_OPEN;
  return w ? 0 : -1;
}

static int tree_close(void *ud, dp_var *v) {
  uint64_t *w = var_state(ud, v);
  if (w) *w -= V_OPEN;
  return w ? 0 : -1;
}

/* Entering (open 1) or leaving (open 0) child slot k of e: the binders it
   is inside of open or close; entering a binding slot binds. Returns 1
   when slot k binds (its child is no read), 0, or -1 (see T->verdict). */
static int tree_slot(tstate *T, dp_expr *e, uint32_t k, int open) {
  int (*fn)(void *, dp_var *) = open ? tree_open : tree_close;
  switch (e->h.kind) {
  case DP_LET: {
    dp_let *l = (dp_let *)e;
    if (k == 0) return open && tree_bind(T, l->var) != 0 ? -1 : 1;
    if (k == 2 || l->value->h.kind == DP_FUNC) return fn(T, l->var);
    return 0;
  }
  case DP_FUNC: {
    dp_func *f = (dp_func *)e;
    if (k < f->nparams) return open && tree_bind(T, f->params[k]) != 0 ? -1 : 1;
    for (uint32_t p = 0; p < f->nparams; p++)
      if (fn(T, f->params[p]) != 0) return -1;
    return 0;
  }
  case DP_MATCH: {
    dp_pattern *pat = k ? ((dp_match *)e)->clauses[k - 1].pat : NULL;
    if (!pat) return 0;
    if (open && dp_pattern_vars(pat, tree_bind, T) != 0) return -1;
    return dp_pattern_vars(pat, fn, T) != 0 ? -1 : 0;
  }
  default: return 0;
  }
}

/* A read of v: in scope when a binder of v is open; a variable bound
   nowhere (yet) is marked, so that binding it later is a doubt. */
static int tree_read(tstate *T, dp_var *v) {
  uint64_t *w = var_state(T, v);
  if (!w) return -1;
  if (*w >= V_OPEN) return 0;
  if (*w & V_BOUND) {
    T->verdict = 0;
    return -1;
  }
  *w |= V_OUTSIDE;
  return 0;
}

static int binds_in(const dp_expr *e) {
  return e->h.kind == DP_LET || e->h.kind == DP_FUNC || e->h.kind == DP_MATCH;
}

/* dp_expr_child, the commonest kinds first. */
static dp_expr *tree_child(dp_expr *e, uint32_t k) {
  if (e->h.kind == DP_CALL) return k ? ((dp_call *)e)->args[k - 1] : ((dp_call *)e)->fn;
  if (e->h.kind == DP_LET) return k == 0 ? &((dp_let *)e)->var->e : k == 1 ? ((dp_let *)e)->value : ((dp_let *)e)->body;
  return dp_expr_child(e, k);
}

static uint32_t tree_nchildren(const dp_expr *e) {
  switch (e->h.kind) {
  case DP_VAR: case DP_GLOBAL: case DP_CONST: case DP_OP: case DP_CTOR: return 0;
  case DP_CALL: return ((const dp_call *)e)->nargs + 1;
  case DP_LET: return 3;
  default: return dp_expr_nchildren(e);
  }
}

/* 1: e is a tree whose reads are all in scope; 0: ask the full check;
   -1: out of memory. */
static int tree_in_scope(dp_expr *root) {
  tstate T = {DP__PTRMAP_INIT, 1};
  tframe *st = NULL;
  uint32_t sp = 0, cap = 0;
  if (dp_grow((void **)&st, &cap, 1, sizeof *st) < 0) return -1;
  st[sp++] = (tframe){root, 0, tree_nchildren(root)};
  while (sp && T.verdict == 1) {
    tframe *f = &st[sp - 1];
    if (f->k == f->n) {
      if (--sp && binds_in(st[sp - 1].e) && tree_slot(&T, st[sp - 1].e, st[sp - 1].k, 0) < 0) break;
      if (sp) st[sp - 1].k++;
      continue;
    }
    dp_expr *e = f->e, *c = tree_child(e, f->k);
    int scoped = binds_in(e), binds = scoped ? tree_slot(&T, e, f->k, 1) : 0;
    if (binds < 0) break;
    uint32_t nc = c ? tree_nchildren(c) : 0;
    if (nc == 0) { /* atomic: a read when a variable, then the slot is left */
      if (!binds && c && c->h.kind == DP_VAR && tree_read(&T, (dp_var *)c) < 0) break;
      if (scoped && tree_slot(&T, e, f->k, 0) < 0) break;
      f->k++;
      continue;
    }
    if (c->h.rc > 1) { /* (maybe held twice here) */
      T.verdict = 0;
      break;
    }
    if (dp_grow((void **)&st, &cap, sp + 1, sizeof *st) < 0) {
      T.verdict = -1;
      break;
    }
    st[sp++] = (tframe){c, 0, nc};
  }
  free(st);
  dp__ptrmap_free(&T.vars);
  return T.verdict;
}

/* ---- 3. the checks ---- */

/* Depth-first entry and exit numbers of the scope tree. Scopes are made
   after their parents, so children lists come from one counting pass. */
static int number_tree(scopes *S) {
  uint32_t *cstart = dp_calloc((size_t)S->ns + 1, sizeof *cstart);
  uint32_t *kids = dp_malloc((S->ns ? S->ns : 1) * sizeof *kids);
  uint32_t *st = dp_malloc(((size_t)S->ns + 1) * 2 * sizeof *st);
  int rc = -1;
  if (!cstart || !kids || !st) goto out;
  for (uint32_t v = 1; v < S->ns; v++) cstart[S->s[v].parent + 1]++;
  for (uint32_t v = 0; v < S->ns; v++) cstart[v + 1] += cstart[v];
  memcpy(st, cstart, (size_t)S->ns * sizeof *st);
  for (uint32_t v = 1; v < S->ns; v++) kids[st[S->s[v].parent]++] = v;
  uint32_t clock = 0, sp = 0;
  S->s[0].tin = clock++;
  st[sp++] = 0;
  st[sp++] = cstart[0];
  while (sp) {
    uint32_t v = st[sp - 2], k = st[sp - 1];
    if (k < cstart[v + 1]) {
      st[sp - 1]++;
      uint32_t c = kids[k];
      S->s[c].tin = clock++;
      st[sp++] = c;
      st[sp++] = cstart[c];
    } else {
      S->s[v].tout = clock++;
      sp -= 2;
    }
  }
  rc = 0;
out:
  free(cstart);
  free(kids);
  free(st);
  return rc;
}

static int holds(const scopes *S, uint32_t a, uint32_t b) {
  return S->s[a].tin <= S->s[b].tin && S->s[b].tout <= S->s[a].tout;
}

static uint32_t check_reads(scopes *S, dp_scope_error *out, uint32_t max) {
  uint32_t found = 0;
  for (uint32_t i = 0; i < S->nb; i++) {
    const binder *b = &S->b[i];
    if (b->again == NONE) continue;
    if (out && found < max) out[found] = (dp_scope_error){b->var, S->x[b->node], S->x[b->again], 1};
    found++;
  }
  for (uint32_t i = 0; i < S->n; i++) {
    dp_expr *e = S->x[i];
    uint32_t nk = S->kstart[i + 1] - S->kstart[i];
    for (uint32_t k = 0; k < nk; k++) {
      uint32_t kid = S->kids[S->kstart[i] + k];
      if (kid == NONE || !(kid & VAR_TAG)) continue;
      dp_expr *c = &S->vars[kid & ~VAR_TAG]->e;
      uint32_t at = slot_scope(S, i, k);
      dp__ptrslot *slot = at == BINDING ? NULL : dp__ptrmap_find(&S->bound, c);
      if (!slot) continue;
      const binder *b = &S->b[slot->word - 1];
      if (b->again != NONE || holds(S, b->scope, at)) continue;
      if (out && found < max) out[found] = (dp_scope_error){(dp_var *)c, S->x[b->node], e, 0};
      found++;
    }
  }
  return found;
}

int dp_check_scopes(dp_expr *e, dp_scope_error *out, uint32_t max) {
  int tree = e ? tree_in_scope(e) : 0;
  if (tree != 0) return tree > 0 ? 0 : -1;
  scopes S;
  memset(&S, 0, sizeof S);
  S.index = S.bound = DP__PTRMAP_INIT;
  int rc = -1;
  int numbered = e && number(&S, e) == 0;
  if (numbered && S.nbinders == 0) {
    rc = 0; /* nothing binds */
  } else if (numbered && homes(&S) == 0 && number_tree(&S) == 0) {
    uint32_t found = check_reads(&S, out, max);
    rc = found > INT32_MAX ? INT32_MAX : (int)found;
  }
  free(S.x);
  free(S.kstart);
  free(S.kids);
  free(S.vars);
  free(S.home);
  free(S.open);
  free(S.s);
  free(S.b);
  dp__ptrmap_free(&S.index);
  dp__ptrmap_free(&S.bound);
  return rc;
}

/* "%v is read outside the let that binds it (...)". */
static const char *binder_name(const dp_expr *b) {
  return b->h.kind == DP_LET ? "the let" : b->h.kind == DP_FUNC ? "the function" : "the match clause";
}

dp_err *dp_scope_error_new(dp_ctx *ctx, const dp_scope_error *s, dp_errcode code) {
  const char *what = binder_name(s->binder);
  if (s->twice) {
    dp_span at = s->user->span.line ? s->user->span : s->binder->span;
    dp_err *err = dp_err_at(ctx, code, at, "variable %%%s is bound twice: by %s and by %s%s",
                            s->var->name, what, s->binder == s->user ? "itself" : binder_name(s->user),
                            s->user->span.line || s->binder->span.line ? "" : " (no positions)");
    if (err && s->binder->span.line && at.line != s->binder->span.line)
      dp_err_note(err, s->binder->span, "%s that binds %%%s first is here", what, s->var->name);
    return err;
  }
  char user[200];
  const dp_expr *u = s->user;
  if (u->h.kind == DP_CALL) {
    const dp_expr *f = ((const dp_call *)u)->fn;
    if (f->h.kind == DP_OP) snprintf(user, sizeof user, "the call of %s", ((const dp_op *)f)->name);
    else if (f->h.kind == DP_GLOBAL) snprintf(user, sizeof user, "the call of @%s", ((const dp_global *)f)->name);
    else if (f->h.kind == DP_VAR) snprintf(user, sizeof user, "the call of %%%s", ((const dp_var *)f)->name);
    else snprintf(user, sizeof user, "a call");
  } else {
    snprintf(user, sizeof user, "a %s", dp_exprkind_name(u->h.kind));
  }
  dp_span at = u->span.line ? u->span : s->binder->span;
  dp_err *err = dp_err_at(ctx, code, at,
                          "variable %%%s is used outside its scope: %s reads it where %s that binds "
                          "it does not reach",
                          s->var->name, user, what);
  if (err && s->binder->span.line && at.line != s->binder->span.line)
    dp_err_note(err, s->binder->span, "%s that binds %%%s is here", what, s->var->name);
  return err;
}
