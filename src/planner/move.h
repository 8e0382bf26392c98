/*
 * MoveCopies' internals (include/devplan/move.h is the public side): the
 * analysis of a planned module it moves copies in (move_scope.c), the
 * rewrite that applies its decisions (move_rewrite.c) and the pass that
 * makes them (move.c).
 *
 * A copy is counted per execution: a node shared by several places runs
 * once, at the innermost scope that holds all its uses (a function body,
 * an if branch, a match clause: where the printer binds it), each time that
 * scope runs (include/devplan/visit.h). So where a copy runs is its scope,
 * its "home", and every decision here is made on homes: a copy at the top
 * of a function's body runs once per call, one in a branch when the branch
 * runs, one in a recursive function's branch once per iteration.
 */
#ifndef DEVPLAN_MOVE_INTERNAL_H
#define DEVPLAN_MOVE_INTERNAL_H

#include "planner.h"
#include "devplan/move.h"

#define MV_NONE UINT32_MAX

/* ================= move_scope.c: one function's nodes and scopes ================= */

enum { MS_ROOT, MS_FN, MS_ARM };   /* the body of the global function, of a literal, a branch */

typedef struct dp__mscope {
  uint32_t parent;   /* MV_NONE for the root */
  uint32_t depth;
  uint32_t opener;   /* the node that opens it (the global function for the root) */
  uint8_t kind;      /* MS_* */
} dp__mscope;

/* Every distinct node of one global function, numbered in post order (the
   order dp_visit and dp_rewrite meet them), with its children, its uses
   (the parent and child slot of each), and the scope it runs in. */
typedef struct dp__mfun {
  dp_expr *root;                  /* the global function (borrowed: the module holds it) */
  const char *name;               /* its name (borrowed) */
  dp__ptrmap id;                  /* node -> id */
  dp_expr **x; uint32_t n, capx;  /* id -> node */
  uint32_t *koff, *kid;           /* children of id: kid[koff[id] .. koff[id + 1]) */
  uint32_t nkid, capkid;
  uint32_t *uoff, *upar, *uslot;  /* uses of id: (upar, uslot)[uoff[id] .. uoff[id + 1]) */
  uint32_t *home;                 /* id -> the scope it runs in */
  uint32_t *open;                 /* id -> the first scope it opens (MV_NONE: none) */
  dp__mscope *s; uint32_t ns, caps;
} dp__mfun;

/* Number and scope the function f (0, or -1 + error: out of memory). */
int dp__mfun_init(dp__mfun *m, dp_expr *f, const char *name, dp_err **err);
void dp__mfun_free(dp__mfun *m);
static inline uint32_t dp__mfun_id(const dp__mfun *m, const dp_expr *e) {
  dp__ptrslot *s = dp__ptrmap_find(&m->id, e);
  return s ? s->val : MV_NONE;
}
static inline uint32_t dp__mfun_nuses(const dp__mfun *m, uint32_t id) {
  return m->uoff[id + 1] - m->uoff[id];
}
/* The scope node id opens at child slot (MV_NONE: none there). */
uint32_t dp__mfun_scope_at(const dp__mfun *m, uint32_t id, uint32_t slot);
/* Is scope a inside scope b (or b itself)? With arms_only, only through
   branches (no function literal between them: code in a runs whenever b
   runs and then takes the branches down to a, in the same call). */
int dp__mscope_within(const dp__mfun *m, uint32_t a, uint32_t b, int arms_only);
/* The lowest common ancestor of two scopes. */
uint32_t dp__mscope_lca(const dp__mfun *m, uint32_t a, uint32_t b);

/* The uses of node v, looking through the on_device calls around it (a
   planned module wraps a value where its device is written): each use with
   the node it reads (v or its outermost on_device) in u; the on_device calls
   met in w. 0 (the caller frees u and w), or -1 (out of memory: nothing to free). */
typedef struct dp__mvuse { uint32_t par, slot, node; } dp__mvuse;
typedef struct dp__mvuses { dp__mvuse *u; uint32_t n, cap; uint32_t *w, nw, capw; } dp__mvuses;
int dp__mfun_uses(const struct dp__plan_ops *ops, const dp__mfun *f, uint32_t v, dp__mvuses *out);
/* Dropping copy c takes a use from the value it copies: a value read
   elsewhere then runs where those reads meet. Is that no more often than
   now (its scope, or a branch below it; never inside a function literal,
   which may run many times)? 1 yes, 0 no, -1 out of memory. */
int dp__mfun_stays_put(const struct dp__plan_ops *ops, const dp__mfun *f, uint32_t c);

/* ================= move_rewrite.c: applying decisions ================= */

/* What the rewrite does at one node (by id, in one function). */
enum {
  MD_KEEP = 0,
  MD_VAR,        /* becomes the variable `var` */
  MD_KID,        /* becomes its rewritten child `kid` (a copy becomes its argument,
                    an on_device its body) */
  MD_REP,        /* a copy merged into copy `rep` (the first met stands for all) */
  MD_BODY,       /* a let becomes its body (a dead let) */
};
enum { MA_WRAP, MA_USE, MA_APPEND_VAR, MA_APPEND_USE };  /* call argument actions */

typedef struct dp__mact {
  uint32_t arg;          /* the argument (MA_WRAP, MA_USE) */
  uint8_t kind;
  uint32_t node;         /* MA_USE, MA_APPEND_USE: the rewritten node of this id */
  dp_var *var;           /* MA_APPEND_VAR: the variable (owned by the table); on a
                            function's decision, a parameter appended */
  dp_vdev *src, *dst;    /* MA_WRAP (borrowed: interned devices) */
} dp__mact;

typedef struct dp__mdec {
  uint8_t op;            /* MD_* */
  uint8_t wrap;          /* then a copy src -> dst of the result */
  uint8_t keep;          /* must come out as itself (a peel uses it by identity): no cancel */
  uint8_t sub;           /* child sub_slot becomes the rewritten node sub_node */
  uint32_t sub_slot, sub_node;
  uint32_t kid, rep;
  dp_var *var;           /* MD_VAR (owned by the table) */
  dp_vdev *src, *dst;    /* wrap */
  dp_vdev *vdev;         /* a function literal or the global: its new result device */
  dp_expr *callee;       /* a call: its new callee (owned by the table) */
  uint32_t aoff, na;     /* a call: its argument actions */
  dp_var *before_var;    /* a let: `let before_var = <clone>; <the let>` (owned) */
  struct dp__mtable *clone; /* that clone's decisions (borrowed), made from node clone_root
                               when the let is rewritten (what it shares with the let's
                               context is the rewrite's by then) */
  uint32_t clone_root;
} dp__mdec;

/* The decisions of one rewrite of one function (or of a clone of part of
   it). fresh: a clone: every variable bound inside gets a new one, every
   node but atoms is new (nothing is shared with the original, whose
   variables it must not read). */
typedef struct dp__mtable {
  dp__mfun *f;
  uint32_t *at;                   /* id -> decision index, or MV_NONE */
  dp__mdec *d; uint32_t nd, capd;
  dp__mact *a; uint32_t na, capa;
  int fresh;
  dp__ptrmap freshvars;           /* (fresh) bound variable -> its new variable (owned) */
  int any;                        /* a decision was made */
  uint32_t ncancel;               /* (the rewrite's count) copies that undid a copy */
} dp__mtable;

int dp__mtable_init(dp__mtable *t, dp__mfun *f, int fresh, dp_err **err);
void dp__mtable_free(dp__mtable *t);
/* The decision of id, made on first ask (NULL: out of memory). */
dp__mdec *dp__mtable_dec(dp__mtable *t, uint32_t id);
static inline dp__mdec *dp__mtable_get(const dp__mtable *t, uint32_t id) {
  return t->at[id] == MV_NONE ? NULL : &t->d[t->at[id]];
}
/* A call's argument action (appended to id's decision). */
int dp__mtable_act(dp__mtable *t, uint32_t id, dp__mact act);
/* A copy of v (fresh: not yet known) with device vd (NULL: as v). */
dp_var *dp__mvar_like(dp_var *v, dp_vdev *vd);

/* Rewrites node root of t's function (an id of it: the global function, a
   literal for a clone) by the table: a new reference, or NULL + error. */
dp_expr *dp__mrewrite(const struct dp__plan_ops *ops, dp__mtable *t, uint32_t root, dp_err **err);

#endif
