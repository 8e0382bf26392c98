/*
 * The planner's internals, in layers: a file calls only files of the layers
 * below its own (scripts/planner_layers.lua checks it, in the suite):
 *
 *   above it        move.c (MoveCopies), poly.c (device-polymorphic
 *                   functions), recompute.c: on a planned module, planning
 *                   again through plan.c; move_scope.c (scopes, uses) and
 *                   move_rewrite.c (applying decisions) beside the phases
 *   the pipeline    plan.c: PlanDevices' phases composed once (the options
 *                   its branches), the public phases one by one;
 *                   partition.c reads its devices through it
 *   the search      latency.c: the latency placement, judging placements
 *                   by their plans (plan.c's composition handed to it as
 *                   a function); latency_model.c (a placement's score),
 *                   latency_search.c, latency_exact.c, latency_soft.c
 *                   (soft annotations) below it
 *   the state       domains_api.c: dp_domains (plan.h's handle) = the
 *                   domains, the log of later changes, placement's
 *                   decisions; lookups and a script's changes
 *   explanation     explain.c: conflicts worded, explanations, on replays
 *                   (replay.c applies the log) that keep proofs
 *   the phases      rewrite.c (0), conflicts.c (0b), analyze.c (1),
 *                   place.c (placement by cost), default.c (2, order.c),
 *                   capture.c (3); share.c, verify.c, schedule_*.c beside
 *                   them. A phase returns a conflict as data (dp__conflict)
 *                   and keeps its own state in its own file.
 *   the domains     domains.c: the union-find over the devices, nothing else
 *   shared pieces   index.c (every node numbered once, in one walk, with its
 *                   children, post order, decoded annotations, phase 0's
 *                   and 0b's findings), devices.c (the canonical devices of
 *                   a plan by index), rules.c (the special operators, one
 *                   table for analysis, phase 0b and the verifier),
 *                   describe.c (how diagnostics name things), maxflow.c,
 *                   place_solve.c, independent.c
 *
 * Where devplan reads planner.md differently, on purpose (plan.h says
 * why): phase 0's fixed let values and function bodies are read in place
 * by analysis (dp__fixed_in_place); phase 0b asks each argument of a call
 * of a function for its parameter's annotation instead of passing the
 * call's own demand on (index.c, demand_of); an on_device of a function
 * value is where its body is (analyze.c, call_on_device); a plain
 * on_device demanded on devices that cannot join is computed there and
 * read anywhere (conflicts.c, dp__read_anywhere; capture.c makes one copy
 * per destination). docs/planner-semantics.md states each.
 */
#ifndef DEVPLAN_PLANNER_H
#define DEVPLAN_PLANNER_H

#include "devplan/devplan.h"

#define DP__NONE_ID UINT32_MAX

/* ================= rules.c: the special operators ================= */

/* How a node is read by the phases (dp__index.what): decoded once, when it
   is numbered. */
enum {
  W_PLAIN = 0,        /* anything that is none of the below */
  W_ON_DEVICE,        /* on_device(body): ann = device | cbody | cresult */
  W_COPY,             /* device_copy(body): ann = index in dp__index.copies */
  W_OP_CALL,          /* a call of an operator: ann = rule (R_OP_*) */
  W_CTOR_CALL,        /* a call of a constructor */
  W_FN_CALL,          /* a call of anything else (global, variable, function value) */
  W_LOWERED,          /* call_lowered(@f, (args)): a call of @f */
  W_PRIM_FUNC,        /* a function with Primitive=1 (not planned, not descended) */
};

/* The special operators of planner.md's table, and the ordinary ones. One
   table says, for each, where its arguments live and where its result
   lives; analysis states it as unifications, phase 0b reads which
   arguments take the call's demand, the verifier checks it. */
enum { OP_ORDINARY, OP_ALLOC_STORAGE, OP_ALLOC_TENSOR, OP_SHAPE_OF, OP_RESHAPE_TENSOR,
       OP_INVOKE_TVM_OP, OP_CALL_LOWERED, OP__COUNT };
enum { ARG_CALL, ARG_HOST, ARG_FREE };      /* an argument lives where the call runs, on the host, anywhere */
enum { RES_CALL, RES_HOST, RES_ATTR };      /* the result: where the call runs, the host, its virtual_device */
typedef struct dp__oprule {
  const char *name;
  uint8_t first;      /* argument 0's rule */
  uint8_t rest;       /* the other arguments' rule */
  uint8_t result;
} dp__oprule;
extern const dp__oprule dp__op_rules[OP__COUNT];
static inline int dp__arg_rule(const dp__oprule *r, uint32_t i) { return i == 0 ? r->first : r->rest; }

struct dp__attr_cache; /* rules.c */
struct dp__plan_ops {
  dp_op *on_device, *device_copy;
  dp_op *special[OP__COUNT];  /* [OP_ORDINARY] unused; NULL when not registered */
  struct dp__attr_cache *cache; /* attribute sets built, by device pair (dp__plan_ops_free) */
  struct dp__arena *arena;    /* where the annotations below are made (NULL: the heap;
                                 capture's arena while it runs) */
};

int dp__plan_ops(dp_ctx *ctx, struct dp__plan_ops *ops, dp_err **err);
void dp__plan_ops_free(struct dp__plan_ops *ops);
/* The rule of an operator (OP_ORDINARY for every operator not special). */
int dp__op_rule(const struct dp__plan_ops *ops, const dp_op *op);

/* An on_device call's attributes, read by name (the index decodes each
   call once; the verifier and phase 0 read them through this). */
typedef struct dp__ondev {
  dp_expr *body;
  dp_vdev *vd;       /* borrowed; NULL when unconstrained */
  int cbody, cresult;
  int soft;          /* a soft annotation (dp__soft_weight >= 0) */
} dp__ondev;
int dp__on_device_props(const struct dp__plan_ops *ops, const dp_expr *e, dp__ondev *p);
/* An on_device's soft=W of its attributes a (the first number given as
   soft; dp__soft_weight reads it so), or -1: none, or negative. */
double dp__attrs_soft_weight(const dp_attrs *a);
/* The body of an on_device call (its attributes unread), or NULL. */
dp_expr *dp__on_device_body(const struct dp__plan_ops *ops, const dp_expr *e);
int dp__device_copy_props(const struct dp__plan_ops *ops, const dp_expr *e, dp_expr **body,
                          dp_vdev **src, dp_vdev **dst);
/* "Normal" on_device: constrains its body to a device, not its result. */
int dp__is_normal_on_device(const struct dp__plan_ops *ops, const dp_expr *e, dp__ondev *p);
/* Phase 0's rule for an on_device that is a let value or a function body:
   it is fixed. Analysis reads that in place (rewriting it would rebuild
   the whole spine above it), except where reading in place would not say
   the same: an annotation of an operator or constructor (phase 0
   drops it), of another on_device (phase 0 merges the two when they say
   the same device), or of a function; phase 0 runs where there is such a
   one (or another of its forms). A node another parent in the module
   reaches too (phase 0's fixed one is for this position only) is not read
   in place either: the index counts those (F_MULTI), never by reference
   counts, which a caller holding nodes would change. */
int dp__fixed_in_place(const struct dp__plan_ops *ops, const dp_expr *value);
/* call_lowered(@f, (args)) (a call of @f): the callee and arguments as if
   it were not lowered. Returns the argument count. */
int dp__is_lowered(const struct dp__plan_ops *ops, const dp_call *c);
uint32_t dp__any_call(const struct dp__plan_ops *ops, const dp_call *c, dp_expr **callee,
                      dp_expr *const **args);
int dp__is_primitive(const dp_func *f);
/* May a device_copy carry a value of type t (NULL: unknown, yes)? Tensors
   and tuples of them. */
int dp__copyable(const dp_type *t);

/* The annotations the planner builds (typed like what they wrap). */
dp_expr *dp__on_device_at(const struct dp__plan_ops *ops, dp_expr *body, dp_vdev *vd, int cbody,
                          int cresult, dp_span span, dp_err **err);
/* Capture's annotation (TVM's MaybeOnDeviceFixed): a fixed on_device,
   none around variables, globals, functions, operators, constructors. */
dp_expr *dp__maybe_on_device_fixed(const struct dp__plan_ops *ops, dp_expr *body, dp_vdev *vd,
                                   dp_err **err);
/* Phase 0's fixed annotation of a let value or function body. */
dp_expr *dp__on_device_fixed_at(const struct dp__plan_ops *ops, dp_expr *body, dp_vdev *vd,
                                dp_span span, dp_err **err);
dp_expr *dp__device_copy(const struct dp__plan_ops *ops, dp_expr *body, dp_vdev *src,
                         dp_vdev *dst, dp_err **err);

/* ================= devices.c: the device table ================= */

typedef struct dp__devices {
  dp_ctx *ctx;
  dp_config *cfg;             /* retained */
  dp_vdev **v;                /* retained; [0] the unconstrained device */
  uint32_t n, cap;
  uint32_t host, dflt;        /* the configuration's host and default devices */
  /* the last few answers: a million nodes ask about a handful of devices */
  dp_vdev *ckey[8]; uint32_t cval[8], nc;   /* annotation device -> canonical index */
  uint32_t djoin[8][3], njoin;              /* (a, b) -> join */
  uint32_t ddflt[8][3], ndflt;              /* (cur, by) -> default */
  int oom;
} dp__devices;

int dp__devices_init(dp__devices *t, dp_ctx *ctx, const dp_config *cfg, dp_err **err);
void dp__devices_free(dp__devices *t);
uint32_t dp__dev_index(dp__devices *t, dp_vdev *v);  /* interned as is; 0 for NULL */
/* The canonical device of an annotation through the configuration;
   DP__NONE_ID + error when the configuration has none. */
uint32_t dp__dev_canon(dp__devices *t, dp_vdev *v, dp_err **err);
/* Join (DP__NONE_ID when a constrained field disagrees) and TVM's Default. */
uint32_t dp__dev_join(dp__devices *t, uint32_t a, uint32_t b);
uint32_t dp__dev_default(dp__devices *t, uint32_t cur, uint32_t by);
/* Does a device of the table name a memory scope? */
int dp__dev_any_scope(const dp__devices *t);
static inline dp_vdev *dp__dev(const dp__devices *t, uint32_t i) { return t->v[i]; }

/* ================= the pointer map: src/core/ptrmap.h ================= */
#include "../core/ptrmap.h"
/* ================= node arenas: src/core/arena.h ================= */
#include "../core/arena.h"

/* ================= index.c: the node numbering ================= */

enum { /* dp__index.flag */
  F_SHARED = 1,        /* other references may reach it: found again by its mark */
  F_PARAM = 2,         /* a function's parameter */
  F_LOWERED_ARGS = 4,  /* call_lowered's argument tuple */
  F_FIXED = 8,         /* an on_device phase 0 fixes (a let value, a function body) */
  F_DUP = 16,          /* numbered in an earlier function too: the same domain (dups) */
  F_EXACT = 32,        /* an on_device read where no copy can go: a child of anything but
                          an argument of a call of an ordinary operator, constructor or
                          function */
  F_MULTI = 64,        /* reached from more than one parent in the module */
  F_INPLACE = 128,     /* F_FIXED and readable where it stands, were it reached once */
};
enum { ON_CBODY = 1u << 30, ON_CRESULT = 1u << 31, ON_DEV = ON_CBODY - 1 };

/* A device_copy's written ends (device indices, DP__NONE_ID: not canonical). */
typedef struct dp__copy_ends { uint32_t src, dst; } dp__copy_ends;
/* Phase 0b: at child slot of node parent (a call's argument i: slot
   1 + i), a copy is allowed; marks of one share (below the count made) are
   one copy (dp__read_anywhere: one per value and destination device);
   any share but DP__NONE_ID also fixes the annotation the mark's child is. */
typedef struct dp__mark { uint32_t parent, slot, share; } dp__mark;
/* Phase 0b: demand d reached plain on_device node, child slot of parent. */
typedef struct dp__read { uint32_t node, d, parent, slot; } dp__read;

/* dp__index.kind: the node's dp_exprkind, its type's slot in
   dp__index.types (0: none there; read it with dp__type_of), and K_FIRST. */
enum { K_KIND = 0x1F, K_TYPE = 0x60, K_FIRST = 0x80 };
#define K_TYPE_SLOTS 3

/* An annotation a byte cannot hold (dp__index.ann, set_ann in index.c): a
   device or a copy's index past 63, device 63 with both ON_CBODY and
   ON_CRESULT, ON_DEV (no canonical device). */
typedef struct dp__annw { uint32_t id, ann; } dp__annw;

typedef struct dp__index {
  dp_module *mod;          /* retained */
  struct dp__plan_ops ops;
  dp__devices dev;
  uint32_t n, cap;         /* ids */
  dp_expr **x;             /* id -> node (borrowed: the module holds it) */
  uint32_t *koff;          /* id -> first child in kid; koff[n] closes */
  uint32_t *kid;           /* children's ids in dp_expr_child order (DP__NONE_ID: operators,
                              constructors, and the bodies of primitive functions: none),
                              but the callee of a call whose callee is an operator (W_OP_CALL,
                              W_ON_DEVICE, W_COPY, W_LOWERED: dp__skip), which has no slot:
                              read them with dp__kid, or dp__slot where the node is known */
  uint32_t nkid, capkid;
  uint8_t *kind;           /* the node's dp_exprkind (K_KIND), and K_FIRST: analysis gives
                              it a first-order domain whatever its type (the phases read
                              what a node is here, not from the IR, cold at a million);
                              K_TYPE: a first-order one's type's slot in types */
  const dp_type *types[K_TYPE_SLOTS]; /* the first types the nodes have (interned: a
                              module's values share a few), read by dp__type_of without
                              the node (placement by cost reads each value's type) */
  uint8_t *what;           /* W_* */
  uint8_t *flag;           /* F_* */
  uint8_t *ann;            /* the annotation, a byte (read it with dp__ann): W_ON_DEVICE: device
                              | ON_CBODY | ON_CRESULT (device ON_DEV when the configuration has
                              no canonical one); W_COPY: index in copies; W_OP_CALL: the
                              operator's rule (OP_*); else 0 */
  dp__annw *wide; uint32_t nwide, capwide; /* the annotations a byte cannot hold, by id */
  dp__copy_ends *copies; uint32_t ncopies, capcopies;
  uint8_t *post;           /* ids in post order, dp__post's bytes */
  size_t npost, cappost;
  /* per global function, definition order: first id and first byte in post
     (entry nfn closes) */
  uint32_t *fnid, nfn;
  size_t *fnpost;
  uint32_t *gref; uint32_t ngref, capgref;   /* ids of global references (order.c) */
  uint32_t *dups; uint32_t ndups, capdups;   /* (id, earlier id) pairs of F_DUP nodes */
  dp__ptrmap map;          /* node -> latest id, made on demand (the walk finds a shared
                              node by its mark, dp_expr.mark): empty, the shared nodes, or
                              every node */
  int full;                /* map holds every node (dp__index_id) */
  int shared;              /* map holds the shared nodes (dp__index_find) */
  int dropped;             /* map freed after analysis (dp__index_drop_map) */
  uint32_t nrewrite;       /* nodes phase 0 rewrites */
  uint32_t nmulti;         /* calls reached again in their function (F_MULTI there):
                              capture's consume asks which (capture.c, shared_call) */
  dp__mark *marks; uint32_t nmarks, capmarks; /* phase 0b's copies */
  dp__read *reads; uint32_t nreads, capreads; /* phase 0b's demands on shared plain on_device calls */
  uint32_t nann;           /* annotations (constraint domains analysis makes) */
  uint32_t nsoft;          /* soft annotations among them (on_device soft=W): min_bytes
                              with any is the latency search's (plan.c), told by the
                              walk that numbers the module rather than by one more */
  uint32_t nloose;         /* children other than a callee with no id (an operator or a
                              constructor as a value): their domains are made on demand */
  /* how analysis, defaulting and capture read the module (set with phase
     0b's mode, seen by replays): placement by cost (place.c): where a copy
     may sit, a value and its reader are not unified but recorded as a flow */
  uint8_t relax;
  /* the walk's stack and demands once it is done: resident pages the
     domains' arrays, made next, take over (dp__index_take) instead of
     fresh ones */
  void *spare[2]; size_t nspare[2];
  /* the smaller spare block stays (dp__index_take does not free it), for
     capture_last's node arena: set where capture_last follows without
     consume (plan.c) */
  uint8_t keep_spare;
} dp__index;

/* The checked type of node id (NULL: none): its slot's, else the node's. */
static inline const dp_type *dp__type_of(const dp__index *ix, uint32_t id) {
  uint32_t s = (ix->kind[id] & K_TYPE) >> 5;
  return s ? ix->types[s - 1] : ix->x[id]->type;
}

/* Number every global function of m (one walk each); NULL + error. */
dp__index *dp__index_new(dp_module *m, const dp_config *cfg, dp_err **err);
void dp__index_free(dp__index *ix);
/* For a reader that never again reads the ids from keep on (capture's
   last round, dp__capture_last): the per-id arrays and the children's
   slots cut there (their pages go; koff keeps keep + 1 entries, so that
   the ids below keep still have their children). n stays: nothing may
   read those ids, nor walk every id, after it. tails: the rest of each
   array's last huge page goes too (splitting it: what is still in use
   there is then read on small pages); 0: whole huge pages only. The post
   order may move (it lies after the child slots in their block): a
   reader going through it rebases its place (dp__post_rebase). */
void dp__index_cut(dp__index *ix, uint32_t keep, int tails);
/* A block of n bytes (uninitialised), the largest of the walk's spare
   blocks made to that size where one is left (the other is freed, or kept
   with keep_spare), else a new one; NULL on out of memory. */
void *dp__index_take(dp__index *ix, size_t n);
/* Node id's annotation (dp__index.ann). A byte an id, not four (9 MB less
   at a million let calls): the low 6 bits of the value and its top two
   (ON_CBODY, ON_CRESULT) where its others are 0, and 0xFF for any other
   value, which is then found in `wide` (made in id order: a binary
   search). An annotation below 63 is its own byte (an operator's rule,
   most copies' indices): ix->ann[id] == OP_ORDINARY reads as it says. */
uint32_t dp__ann_wide(const dp__index *ix, uint32_t id);
static inline uint32_t dp__ann(const dp__index *ix, uint32_t id) {
  uint32_t b = ix->ann[id];
  if (b == 0xFF) return dp__ann_wide(ix, id);
  return (b & 0x3F) | (b & 0xC0) << 24;
}
/* A W_OP_CALL's rule (OP_*, below 63: its own byte), read as it is; and
   for any node, 0 where its annotation is 0 (no other packs to 0). */
static inline uint32_t dp__ann_op(const dp__index *ix, uint32_t id) { return ix->ann[id]; }
_Static_assert(OP__COUNT < 63, "an operator's rule is its own byte in dp__index.ann");
/* e's id (its latest, for a node numbered twice), or DP__NONE_ID. */
uint32_t dp__index_id(dp__index *ix, const dp_expr *e);
/* The id of e where analysis asks by expression: before dp__index_drop_map
   a shared node's (what other references may reach; DP__NONE_ID for any
   other), after it any node's; *oom set on out of memory. */
uint32_t dp__index_find(dp__index *ix, const dp_expr *e, int *oom);
/* After analysis the phases find nodes by id alone: the map is freed (a
   million shared nodes hold tens of megabytes), and made again, with every
   node, when something asks by expression (dp__index_map: 0 or -1). */
void dp__index_drop_map(dp__index *ix);
int dp__index_map(dp__index *ix);
/* The children of node id with no slot in kid, before its first slot: 1
   for a call whose callee is an operator (an ordinary or special one,
   on_device, device_copy, call_lowered), which gets no id (a slot of 4
   bytes for every such call held DP__NONE_ID: 4 MiB at a million let
   calls); else 0. */
#define DP__SKIP (1u << W_OP_CALL | 1u << W_ON_DEVICE | 1u << W_COPY | 1u << W_LOWERED)
static inline uint32_t dp__skip(const dp__index *ix, uint32_t id) {
  return DP__SKIP >> ix->what[id] & 1;
}
/* The id in slot s of node id's children (DP__NONE_ID: not numbered, or
   past them): child s + dp__skip(ix, id). */
static inline uint32_t dp__slot(const dp__index *ix, uint32_t id, uint32_t s) {
  uint32_t o = ix->koff[id] + s;
  return o < ix->koff[id + 1] ? ix->kid[o] : DP__NONE_ID;
}
/* Child i of id (dp_expr_child order): its id (DP__NONE_ID: not numbered). */
static inline uint32_t dp__kid(const dp__index *ix, uint32_t id, uint32_t i) {
  uint32_t s = dp__skip(ix, id);
  return i < s ? DP__NONE_ID : dp__slot(ix, id, i - s);
}
/* The post order of the ids of functions fn .. end - 1 (the order the
   numbering's walk finished them in), read from dp__index.post: each id
   as its difference from the one before (the function's first id before
   its first), zigzag, 7 bits a byte, low first, the top bit set on every
   byte but the last. Most differences are small (a child and its parent
   are near in id): about a byte an id, not four (9 MB less at a million
   let calls). Read in order only, as every phase reads it. */
typedef struct dp__post {
  const dp__index *ix;
  const uint8_t *at, *stop;  /* the next byte, the end of the function's */
  uint32_t prev;             /* the id given last */
  uint32_t fn, end;          /* the function read, the end of the range */
} dp__post;
void dp__post_start(dp__post *p, const dp__index *ix, uint32_t fn, uint32_t end);
/* (dp__post_next's slow steps: the next function's start, 0 at the end;
   a difference of more than a byte, from its first) */
int dp__post_fn(dp__post *p);
/* p's place moved with the post order, which was at old (dp__index_cut). */
void dp__post_rebase(dp__post *p, const uint8_t *old);
uint32_t dp__post_wide(dp__post *p, uint32_t z);

/* The next id in post order; DP__NONE_ID at the end. */
static inline uint32_t dp__post_next(dp__post *p) {
  if (p->at == p->stop && !dp__post_fn(p)) return DP__NONE_ID;
  uint32_t z = *p->at++;
  if (z & 0x80) z = dp__post_wide(p, z);
  p->prev += (z >> 1) ^ (0u - (z & 1));
  return p->prev;
}

/* The device of a W_ON_DEVICE node's ann (ON_DEV: not canonical). */
static inline uint32_t dp__ann_dev(uint32_t ann) { return ann & ON_DEV; }
/* Is node id a plain on_device: of a device, constraining its body, not
   its result (neither as written nor as phase 0 fixes it)? Its value is
   computed there and may be read anywhere. */
static inline int dp__plain_on_device(const dp__index *ix, uint32_t id) {
  uint32_t a = dp__ann(ix, id), d = dp__ann_dev(a);
  return ix->what[id] == W_ON_DEVICE && (a & ON_CBODY) && !(a & ON_CRESULT) &&
         !(ix->flag[id] & F_FIXED) && d != 0 && d != ON_DEV;
}

/* Asks for the cache line of p ahead of its use (a hint; nothing where the
   compiler has no way to say it). */
#if defined(__GNUC__)
#define dp__prefetch(p) __builtin_prefetch(p)
#else
#define dp__prefetch(p) ((void)(p))
#endif

/* *a (*cap items of elem bytes, the first n used) moved to a new block of
   need items, or NULL (*a kept). Not dp_realloc: a large block asks for
   huge pages once it is made (dp_advise_huge), and realloc's copy would
   have written its first pages, small ones, before that (an array that
   jumps from a few thousand entries to a million lays its first 2 MiB in
   512 small pages so). 0, or -1 on out of memory. */
int dp__grow_fresh(void **a, uint32_t *cap, uint32_t n, uint32_t need, size_t elem);

/* dp_expr_child / dp_expr_nchildren inline for the kinds a large program
   is made of (calls, lets): every phase asks for them. */
static inline dp_expr *dp__child(const dp_expr *e, uint32_t i) {
  if (e->h.kind == DP_CALL) {
    const dp_call *c = (const dp_call *)e;
    return i == 0 ? c->fn : i <= c->nargs ? c->args[i - 1] : NULL;
  }
  if (e->h.kind == DP_LET) {
    const dp_let *l = (const dp_let *)e;
    return i == 0 ? &l->var->e : i == 1 ? l->value : i == 2 ? l->body : NULL;
  }
  return dp_expr_child(e, i);
}
static inline uint32_t dp__nchildren(const dp_expr *e) {
  if (e->h.kind == DP_CALL) return 1 + ((const dp_call *)e)->nargs;
  if (e->h.kind == DP_LET) return 3;
  if (e->h.kind == DP_VAR) return 0;
  return dp_expr_nchildren(e);
}

/* ================= domains.c: the union-find ================= */

/* Why a domain got a device, or why two domains were unified. The text of
   each rule is in explain.c. */
enum {
  R_NONE = 0,
  /* constraints (a domain created with a device) */
  R_ON_DEVICE, R_COPY_SRC, R_COPY_DST, R_PARAM_ANNOT, R_FUNC_ANNOT, R_HOST_ARG,
  R_ALLOC_DEV, R_PRIMFN_ARG, R_PRIMFN_RESULT, R_DEF_RESULT, R_DEF_PARAM, R_DEF_LET,
  R_DEF_CALL, R_USER_CONSTRAIN, R_USER_DEFAULT, R_PLACEMENT,
  /* unification steps */
  R_ARG, R_RESULT, R_CALLEE, R_LET_VAR, R_LET_BODY, R_FUNC_BODY, R_FUNC_PARAM, R_TUPLE,
  R_PROJ, R_IF_COND, R_IF_BRANCH, R_MATCH_DATA, R_MATCH_PAT, R_MATCH_RHS, R_REF,
  R_GLOBAL, R_FREE_ON_DEVICE, R_CTOR, R_USER_UNIFY, R_COLLAPSE,
  R__COUNT
};

/* One domain (12 bytes: a million-call program has millions). A class
   (union-find root) holds the class's device; a function domain lists its
   parameter and result domains in kids; a constraint's own device and
   reason are in cons (few domains are constraints). */
typedef struct dp__dnode {
  uint32_t parent;   /* union-find parent (itself for a root) */
  union {
    uint32_t vdev;   /* first order, roots: device index (0: free) */
    uint32_t aux;    /* function domain: offset in kids */
  };
  uint32_t size : 24; /* roots: class size, union by size (saturates at DP__DSIZE_MAX) */
  uint32_t isfn : 1;  /* function domain */
  uint32_t read : 1;  /* roots: a default was taken from this class's device */
  uint32_t crule : 6; /* constraint rule (0: not a constraint) */
} dp__dnode;
#define DP__DSIZE_MAX 0xFFFFFFu

/* A constraint domain (dom) with its own device and the expression behind
   it; made in domain order, so found by binary search (dp__dom_cons). */
typedef struct dp__cons { uint32_t dom, vdev; dp_expr *why; } dp__cons;

/* A conflict, as data: unification was asked to make domains a and b one
   (rule and why say why) and could not; what it had done was undone. */
typedef struct dp__conflict { uint32_t a, b; int rule; dp_expr *why; } dp__conflict;

typedef struct dp__domains dp__domains;
/* Told each link the union-find makes: domains x and y are one now, for
   rule and why (explain.c keeps its proofs so). 0, or -1: out of memory. */
typedef int (*dp__link_fn)(void *ud, dp__domains *d, uint32_t x, uint32_t y, int rule, dp_expr *why);

/* The domains of a module: the union-find over the devices of its index,
   nothing else. What the layers above keep beside it is theirs: the
   planner's state (dp_domains, below) holds the log of later changes and
   placement's decisions; explain.c keeps the proofs of the domains it
   replays, through on_link. */
struct dp__domains {
  dp__index *ix;             /* the numbering (borrowed) */
  dp__devices *dev;          /* &ix->dev */
  dp_ctx *ctx;
  dp__dnode *nodes; uint32_t nnodes, capnodes;
  dp__cons *cons; uint32_t ncons, capcons;
  uint32_t *kids; uint32_t nkids, capkids;   /* function domains: arity, params..., result */
  uint32_t *dom;            /* id -> domain, for the ids below dom_from; from there on a
                               node's domain is id + dom_off (analysis makes the domains of
                               first-order nodes in id order: most of a program is one run,
                               which it never writes here); read by dp__dom_at */
  uint32_t dom_from, dom_off;
  dp__ptrmap extra;         /* domains of what the index does not number (primfns,
                               pattern variables never used, operators of lookups) */
  /* scratch for unify */
  uint32_t *work; uint32_t nwork, capwork;
  uint32_t *trail; uint32_t ntrail, captrail;
  uint32_t *links; uint32_t nlinks, caplinks;
  dp__conflict failed;      /* the last conflict (dp__unify returned 1) */
  int oom;                  /* an allocation failed: the phase reports it */
  int repass;               /* a class a default was taken from was refined (default.c) */
  dp__link_fn on_link;      /* NULL: links are not told */
  void *link_ud;
};

/* Domains over ix (borrowed), room for cap domains (0: as analysis needs);
   domain 0 made (what a failed allocation hands out). 0, or -1 + error
   (then clear them all the same). */
int dp__domains_init(dp__domains *d, dp__index *ix, uint32_t cap, dp_err **err);
void dp__domains_clear(dp__domains *d);
/* The domains' arrays to their size, after analysis: what capture and the
   planner's state keep need not carry the room analysis was given (a later
   domain grows them again), nor dom[]'s last run (dp__dom_compact). */
void dp__domains_trim(dp__domains *d);
uint32_t dp__dom_first(dp__domains *d, uint32_t vdev, int crule, dp_expr *cwhy);
/* dp__dom_first(d, 0, 0, NULL), a free first-order domain, inline where
   there is room (analysis makes one for most nodes). */
static inline uint32_t dp__dom_free(dp__domains *d) {
  if (d->nnodes == d->capnodes) return dp__dom_first(d, 0, 0, NULL);
  uint32_t id = d->nnodes++;
  d->nodes[id] = (dp__dnode){.parent = id, .size = 1};
  return id;
}
/* n free domains, one after the other (d->oom set on out of memory). */
void dp__dom_free_run(dp__domains *d, uint32_t n);
uint32_t dp__dom_fn(dp__domains *d, uint32_t arity, const uint32_t *kids);
uint32_t dp__dom_for_type(dp__domains *d, const dp_type *t, uint32_t vdev, int crule,
                          dp_expr *cwhy);
uint32_t dp__dom_new(dp__domains *d, const dp_expr *e); /* a fresh free domain for e's type */
uint32_t dp__dom_of(dp__domains *d, dp_expr *e);        /* e's domain (a fresh one if none) */
/* Does e have a domain (is it an expression of the analysed module)? */
int dp__dom_has(const dp__domains *d, const dp_expr *e);
uint32_t dp__dom_find(dp__domains *d, uint32_t x);
uint32_t dp__dom_result(dp__domains *d, uint32_t x);    /* root of the result domain */
uint32_t dp__dom_arity(dp__domains *d, uint32_t x);     /* 0 for first-order */
uint32_t dp__dom_kid(dp__domains *d, uint32_t x, uint32_t i); /* i == arity: result */
uint32_t dp__dom_dev(dp__domains *d, uint32_t x);       /* result device index (0: free) */
dp_vdev *dp__dom_vdev(dp__domains *d, uint32_t x);      /* result device, NULL free (borrowed) */
/* Unify; rule/why say why. 0; 1 when the two cannot be one (a conflict:
   everything is left as it was, d->failed says where); -1 + error (out of
   memory). */
int dp__unify(dp__domains *d, uint32_t a, uint32_t b, int rule, dp_expr *why, dp_err **err);
/* dp__unify's common case, two first-order roots that agree (or one is
   free): linked, the smaller class under the larger; 1, or 0 (nothing
   done) where it does not apply. */
static inline int dp__link_agreeing(dp__domains *d, uint32_t ra, uint32_t rb) {
  dp__dnode *A = &d->nodes[ra], *B = &d->nodes[rb];
  if (A->isfn || B->isfn || (A->vdev != B->vdev && A->vdev && B->vdev)) return 0;
  uint32_t v = A->vdev ? A->vdev : B->vdev;
  if (A->size < B->size) {
    dp__dnode *t = A;
    A = B, B = t;
    ra = rb;
  }
  B->parent = ra;
  uint32_t n = A->size + B->size;
  A->size = n > DP__DSIZE_MAX ? DP__DSIZE_MAX : n;
  A->vdev = v;
  A->read |= B->read;
  return 1;
}
/* dp__unify inline where a and b are at most one step from their roots,
   those agree and no one is told of links (analysis' usual case: a node's
   fresh domain joins a class); 1, or 0 where dp__unify must run. */
static inline int dp__unify_quick(dp__domains *d, uint32_t a, uint32_t b) {
  uint32_t ra = d->nodes[a].parent, rb = d->nodes[b].parent;
  if (d->on_link || d->nodes[ra].parent != ra || d->nodes[rb].parent != rb) return 0;
  return ra == rb || dp__link_agreeing(d, ra, rb);
}
/* TVM's SetDefault and its function form; 0, 1 (a conflict) or -1, as dp__unify. */
int dp__set_default(dp__domains *d, uint32_t x, uint32_t vdev, int rule, dp_expr *why,
                    dp_err **err);
int dp__set_result_default_then_params(dp__domains *d, uint32_t x, uint32_t vdev, int rule,
                                       dp_expr *why, dp_err **err);
/* A constraint (rule) putting e's domain's result on device index vdev: 0,
   1 (a conflict) or -1, as dp__unify. */
int dp__constrain(dp__domains *d, dp_expr *e, uint32_t vdev, int rule, dp_err **err);
/* The device of x's result as the source of a default: marked, so that a
   later refinement of it asks for another pass (default.c). */
uint32_t dp__dom_source(dp__domains *d, uint32_t x);
/* The constraint of domain x (its crule is set). */
const dp__cons *dp__dom_cons(const dp__domains *d, uint32_t x);
int dp__dom_fully_constrained(dp__domains *d, uint32_t x);
/* The domain of node id. */
static inline uint32_t dp__dom_at(const dp__domains *d, uint32_t id) {
  return id < d->dom_from ? d->dom[id] : id + d->dom_off; /* (unsigned: wraps back) */
}
/* Keeps of dom[] only what precedes its last run of id + a constant
   (after analysis: analysis itself reads dom[] whole). */
void dp__dom_compact(dp__domains *d);
/* The domain of child i of id. */
static inline uint32_t dp__kdom(dp__domains *d, uint32_t id, uint32_t i) {
  uint32_t k = dp__kid(d->ix, id, i);
  return k != DP__NONE_ID ? dp__dom_at(d, k) : dp__dom_of(d, dp__child(d->ix->x[id], i));
}
/* The domain of a call's callee (DP__NONE_ID for operators and constructors). */
uint32_t dp__callee_dom(dp__domains *d, uint32_t id);

/* ================= independent.c: which conflicts are independent ================= */

typedef struct dp__indep dp__indep;
dp__indep *dp__indep_new(void);
void dp__indep_free(dp__indep *t);
/* Domains x and y were unified (a link of the domains): 0, or -1 (out of memory). */
int dp__indep_link(dp__indep *t, uint32_t x, uint32_t y);
/* A conflict between the classes of a and b: 1 when independent (recorded),
   0 when an earlier one joined the same two classes, -1 (out of memory). */
int dp__indep_conflict(dp__indep *t, uint32_t a, uint32_t b);

/* ================= the phases (plan.h has the public ones) ================= */

/* Phase 0 and 0b on an index: the index itself when nothing changes (the
   module is not walked again), else the new module's. ix is consumed. */
dp__index *dp__rewrite(dp__index *ix, dp_err **err);
/* Phase 0b (conflicts.c) in one of three modes: TVM's (a copy where a
   value nobody annotated is demanded on two devices); TVM's and "computed
   here, read anywhere" (the readers of a plain on_device on other devices
   get a copy, PlanDevices' default); placing by cost's (none of TVM's: the
   optimiser places those copies; the readers of a plain on_device that
   share its result each get a place for a copy). */
enum { DP__0B_TVM, DP__0B_ANYWHERE, DP__0B_RELAX };
dp__index *dp__conflicts(dp__index *ix, int mode, dp_err **err);
/* The marks of "read anywhere" (relax: placing by cost's): *nshares the
   copies they share, *dest (malloc'd) the destination of each. 0, or -1
   (out of memory). */
int dp__read_anywhere(dp__index *ix, int relax, uint32_t *nshares, uint32_t **dest);

/* Where a copy may sit when placing by cost: the value of node `value`
   (its on_device calls looked through) made in domain src and read in
   domain dst (analyze.c, ix->relax). */
typedef struct dp__flowrec { uint32_t value, src, dst; } dp__flowrec;
typedef struct dp__flows { dp__flowrec *v; uint32_t n, cap; } dp__flows;

/* How analysis runs, and what it found besides the domains. */
typedef struct dp__analysis {
  int collect;              /* a conflict is counted (and told) and analysis goes on
                               (0: the first conflict stops it) */
  /* collect: each conflict as met (d->failed), told before analysis goes
     on; 0, or -1 (out of memory). NULL: counted only. */
  int (*conflict)(void *ud, dp__domains *d);
  void *ud;
  dp__flows *flows;         /* ix->relax: the flows made (NULL: not kept) */
  uint32_t nconf;           /* collect: the conflicts met */
} dp__analysis;
/* Phase 1 (analyze.c): the domains of every numbered node of d's index
   (ix->relax: placing by cost's reading), on fresh domains. 0; 1 when the
   first conflict stopped it (d->failed); -1 + error. */
int dp__analyze(dp__domains *d, dp__analysis *how, dp_err **err);
/* The global functions in the order defaulting visits them (order.c):
   callers first, then by name. A new array of ix->nfn indices, or NULL. */
uint32_t *dp__plan_order(const dp__index *ix);

/* Placement by cost (place.c), between analysis and defaulting: every free
   class a flow reaches gets the device that minimises the bytes copied
   (or the time). Its decisions (*out, place.c's own: dp__place_free) say
   what it weighed and replay it. 0, or -1 + error. */
struct dp__placement;
/* (flows->v is taken, NULL after: its memory, touched already, is the
   room of the cut's graph, with that of its own array of a variable per
   domain). lean: capture alone reads d after this (then it goes): the
   classes take their devices without the constraint domains that say
   why, and *out holds no decisions (no replay, no explanations) */
int dp__place(dp__domains *d, dp__flows *flows, const dp_place_hooks *h, int lean,
              struct dp__placement **out, dp_err **err);
void dp__place_free(struct dp__placement *p);
/* The decisions pl made, made again on d (fresh domains of the same index
   after the same analysis: explain.c's replay). 0, or -1 + error. */
int dp__place_replay(dp__domains *d, const struct dp__placement *pl, dp_err **err);
/* What placing domain cons (an R_PLACEMENT constraint) weighed: the
   sentence after "because of" (malloc'd), or NULL. */
char *dp__place_reason(dp__domains *d, const struct dp__placement *pl, uint32_t cons);
/* dp_domains_placements (plan.h) of the decisions pl. */
int dp__place_each(dp__domains *d, const struct dp__placement *pl, dp_place_fn fn, void *ud,
                   dp_err **err);

/* place_solve.c: variable v of a problem free (no fixed label, every
   label allowed, no stamp), as dp_place_init leaves each of its own. */
void dp__place_var_init(dp_place_problem *m, uint32_t v);
/* dp_place_solve with the cuts made in g (NULL: its own). g's adopted
   blocks (dp__flow_adopt: the caller's, pages touched already) hold the
   moves' arrays and the parts' lists; each part of a move is cut alone in
   g kept small, and the largest block left goes back as g's arc room. */
struct dp__flow;
int dp__place_solve_in(dp_place_problem *m, uint32_t *label, int64_t *energy, struct dp__flow *g);
/* Phase 2 (default.c): 0; 1 when a default conflicts (d->failed); -1 + error. */
int dp__default(dp__domains *d, dp_err **err);
/* The same for domains capture alone reads next: nothing where no rule
   would change a device (every class has a device no default refines). */
int dp__default_for_capture(dp__domains *d, dp_err **err);
/* Phase 3 (capture.c): the planned module, or NULL + error. */
dp_module *dp__capture(dp__domains *d, dp_err **err);
/* The same where nothing reads the domains after capture (PlanDevices'
   own round): once it has every node's device, capture frees the domains
   (dp__domains_drop) and the index's kinds when the module leaves it
   nothing else to ask them (no call of a function value, no primfn), so
   that they are not held beside the planned module as it is built.
   consume (dp_plan_opts.consume): the module's calls and lets that nothing
   else holds take their rewritten children in place (capture.c). */
dp_module *dp__capture_last(dp__domains *d, int consume, dp_err **err);
/* Frees the union-find's arrays (domains.c): after it only ix, dev, ctx
   and oom may be read, and dp__domains_clear. */
void dp__domains_drop(dp__domains *d);

/* ================= replay.c: the log of later changes ================= */

/* What changed the domains after analysis, in order: replayed on new
   domains when proofs are asked for (explain.c). */
typedef struct dp__op_log { uint8_t op; int rule; dp_expr *a, *b; uint32_t vdev; } dp__op_log;
enum { LOG_DEFAULT, LOG_UNIFY, LOG_CONSTRAIN, LOG_SET_DEFAULT, LOG_PLACE };
typedef struct dp__log { dp__op_log *v; uint32_t n, cap; } dp__log;

/* Appends op: 0, or -1 (out of memory). */
int dp__log_add(dp__log *l, dp__op_log op);
void dp__log_free(dp__log *l);
/* Applies op to d (pl: the decisions LOG_PLACE replays). 0, 1 (a
   conflict: d->failed) or -1 + error, as dp__unify. */
int dp__log_apply(dp__domains *d, const dp__op_log *op, const struct dp__placement *pl,
                  dp_err **err);

/* ================= domains_api.c: the planner's state ================= */

/* plan.h's dp_domains: the domains of a module between analysis and
   capture, and what the layers above them keep beside them, each freed by
   its owner: the log of what changed them after analysis (so that explain.c
   can replay it) and placement by cost's decisions (place.c's). It owns
   the index its domains are over. */
struct dp_domains {
  dp_obj h;                 /* dp_domains_objtype() */
  dp__domains uf;           /* the union-find and the devices */
  dp__log log;
  struct dp__placement *place;
};

/* New state over ix (taken), its domains not yet analysed; NULL + error. */
dp_domains *dp__state_new(dp__index *ix, dp_err **err);
/* Logs op and applies it (undone from the log when it fails); a conflict
   worded (explain.c). 0, or -1 + error. */
int dp__state_apply(dp_domains *s, dp__op_log op, dp_err **err);

/* ================= explain.c ================= */
const char *dp__rule_text(int rule);
/* The error of the conflict s's domains record (after something returned
   1): found again on a replay that keeps proofs, and worded. */
dp_err *dp__conflict_error(dp_domains *s);
/* The errors of the conflicts analysis met (all_conflicts): a replay of
   analysis words each independent one as it is met (independent.c says
   which), with both constraints and the chain; in source order, a summary
   error (*err) and each in *all (may be NULL). -1. */
int dp__conflict_errors(dp_domains *s, dp_conflicts *all, dp_err **err);

/* ================= maxflow.c: minimum s-t cut ================= */

#define DP__FLOW_INF DP_PLACE_INF
typedef struct dp__flow dp__flow;
dp__flow *dp__flow_new(void);
void dp__flow_free(dp__flow *g);
void dp__flow_reset(dp__flow *g);                  /* no nodes, no arcs (memory kept) */
static inline uint32_t dp__flow_node(dp__flow *g); /* a new node (0, 1, ...) */
uint32_t dp__flow_count(const dp__flow *g);        /* nodes so far */
uint32_t dp__flow_most(const dp__flow *g);         /* the most nodes of a graph solved in g */
/* Room for nodes and pairs of arcs (dp__flow_arc's), made at once. 0, -1. */
int dp__flow_reserve(dp__flow *g, uint64_t nodes, uint64_t pairs);
/* Capacity from the source to v and from v to the sink (added up). */
static inline void dp__flow_terminal(dp__flow *g, uint32_t v, int64_t from_source, int64_t to_sink);
/* An arc u -> v of capacity cap, and v -> u of rcap. */
static inline void dp__flow_arc(dp__flow *g, uint32_t u, uint32_t v, int64_t cap, int64_t rcap);
/* The minimum cut: side[v] = 0 (source side) or 1 (sink side) for every
   node; returns its capacity, or -1 (out of memory). Ties go to the source
   side. The graph is left residual: dp__flow_reset before building and
   solving another (solved again as it is: -1). */
int64_t dp__flow_solve(dp__flow *g, uint8_t *side);
/* The capacity of the cut with every node on the source side (every
   node's capacity to the sink, as added), read at the last solve. */
int64_t dp__flow_all_source(const dp__flow *g);
/* Work Boykov-Kolmogorov may do before push-relabel takes over (maxflow.c):
   < 0 the default, 0 push-relabel alone (the tests run both). */
void dp__flow_budget(dp__flow *g, int64_t work);
/* On a graph of at least `from` nodes the search queues the nodes tied to
   a terminal `batch` node numbers at a time (maxflow.c says why; by
   default from 2^18 nodes, 1,024 at a time); the tests take batches on
   small graphs too. */
void dp__flow_batches(dp__flow *g, uint32_t from, uint32_t batch);
/* Blocks the caller no longer needs (malloc'd; NULL: none), taken as the
   room of g's nodes and arcs before any is made: the pages they touched
   are not touched fresh again (the cut's graph is the largest thing a
   placement makes; a block over 1 MB freed goes back to the system). */
void dp__flow_adopt(dp__flow *g, void *nodes, size_t nbytes, void *arcs, size_t abytes);
/* The other way: g's room for nodes (arcs 0) or for arcs (arcs 1), its
   size in *bytes, taken from g (NULL: none); g makes new room if it needs
   some again. For the caller's arrays after a cut, or before one where no
   graph is made: pages touched already. */
void *dp__flow_take(dp__flow *g, int arcs, size_t *bytes);

/* The graph as the optimiser builds it is the solver's own (maxflow.c says
   how it reads it): here, so that the builders, called a few times per
   variable of a placement, are inlined. Each node with its terminal
   capacities, its first arc and Boykov-Kolmogorov's fields side by side;
   the arcs in pairs, arc a and its reverse a ^ 1, each linked to the next
   arc of its tail. */
typedef struct dp__fnode {
  int64_t tr;                      /* from the source, as added; from the solve on its residual
                                      terminal capacity: > 0 from the source, < 0 to the sink */
  union {                          /* (the one until the solve, the others from it on: 32 bytes
                                      a node, not 48) */
    int64_t trt;                   /* to the sink, as added */
    struct { uint32_t ts, dist; }; /* when its distance to its terminal was last known */
  };
  uint32_t first;                  /* its first arc (UINT32_MAX: none) */
  uint32_t parent;                 /* tree link */
  uint32_t qnext;                  /* the active nodes (FIFO); the cut's stack */
  uint8_t sink, inq, waits;        /* which tree; in the active queue; tied to a terminal, its
                                      turn to grow not yet come (maxflow.c's batches) */
} dp__fnode;

typedef struct dp__farc {
  uint32_t head, next;             /* where it goes; the next arc of its tail */
  int64_t cap;                     /* residual capacity */
} dp__farc;

struct dp__flow {
  uint32_t n, capn;          /* the caller's nodes */
  dp__fnode *nd;
  dp__farc *arc;             /* 2 per dp__flow_arc */
  uint32_t na, capa;
  int oom;
  int spent;                 /* solved: its capacities are residual until a reset */
  int64_t to_sink;           /* the last solve's: every node's capacity to the sink, as added */
  int64_t budget;            /* Boykov-Kolmogorov's work: < 0 the default */
  uint32_t batch_from, batch; /* dp__flow_batches */
  uint32_t most;             /* the most nodes a graph solved had (dp__flow_most) */
};

/* (maxflow.c: the builders' paths when the room is used up; -1 and g->oom
   when it cannot grow) */
int dp__flow_node_room(dp__flow *g);
int dp__flow_arc_room(dp__flow *g);

static inline int64_t dp__flow_sat_add(int64_t a, int64_t b) {
  return a > DP__FLOW_INF - b ? DP__FLOW_INF : a + b;
}

static inline uint32_t dp__flow_node(dp__flow *g) {
  if (g->n == g->capn && dp__flow_node_room(g) < 0) return 0;
  g->nd[g->n] = (dp__fnode){.first = UINT32_MAX};
  return g->n++;
}

static inline void dp__flow_terminal(dp__flow *g, uint32_t v, int64_t from_source, int64_t to_sink) {
  if (g->oom || g->spent) return;
  g->nd[v].tr = dp__flow_sat_add(g->nd[v].tr, from_source);
  g->nd[v].trt = dp__flow_sat_add(g->nd[v].trt, to_sink);
}

static inline void dp__flow_arc(dp__flow *g, uint32_t u, uint32_t v, int64_t cap, int64_t rcap) {
  if (g->oom || g->spent || (cap == 0 && rcap == 0) || u == v) return;
  if (g->na + 2 > g->capa && dp__flow_arc_room(g) < 0) return;
  uint32_t a = g->na;
  g->arc[a] = (dp__farc){v, g->nd[u].first, cap};
  g->arc[a + 1] = (dp__farc){u, g->nd[v].first, rcap};
  g->nd[u].first = a;
  g->nd[v].first = a + 1;
  g->na += 2;
}

/* ================= diagnostics text (describe.c) ================= */
/* "add at 3:5", malloc'd; an on_device with no position (a pass inserted
   it) by the call it wraps: "on_device of tanh at 4:8". */
char *dp__describe(dp_ctx *ctx, const dp_expr *e);
/* e's position; an on_device's without one: the call's it wraps. */
dp_span dp__span_of(const dp_expr *e);
/* Short device text for messages ("cuda", "cpu (memory scope \"a\")"), malloc'd. */
char *dp__vdev_short(const dp_vdev *v);

/* ================= MoveCopies' internals (move.c, poly.c, recompute.c) =================

   A copy is counted per execution: a node shared by several places runs
   once, at the innermost scope that holds all its uses (a function body,
   an if branch, a match clause: where the printer binds it), each time that
   scope runs (include/devplan/visit.h). So where a copy runs is its scope,
   its "home", and every decision MoveCopies makes is made on homes: a copy
   at the top of a function's body runs once per call, one in a branch when
   the branch runs, one in a recursive function's branch once per iteration.
   include/devplan/move.h is the public side. */

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
  dp_var *hoist_var;     /* a let: `let hoist_var = device_copy(<node hoist_arg>, hoist_src,
                            hoist_dst); <the let>` (owned): a copy its closure made of
                            what it captures, now made where the closure is */
  uint32_t hoist_arg;
  dp_vdev *hoist_src, *hoist_dst; /* (borrowed: interned devices) */
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
/* ================= schedule_list.c: the list scheduler's order ================= */

/* dp_sched_list with ties of rank broken by key[v] (the order the
   nodes of a plan would have), then by node number (schedule_list.c). */
int dp__sched_list_keyed(const dp_sched_graph *g, const double *dur, int serial, const uint64_t *key,
                         dp_schedule *out, dp_err **err);

/* ================= latency_soft.c: soft annotations (on_device soft=W) ================= */

/* The weight of a soft annotation (on_device(..., soft=W)), or -1 when e
   is not one (an ordinary on_device, or no on_device). */
double dp__soft_weight(const struct dp__plan_ops *ops, const dp_expr *e);
/* m with each soft annotation made its body (harden 0: the placement
   decides) or an ordinary on_device (harden 1); *found counts them (m
   itself, retained, when none). NULL + error. */
dp_module *dp__soft_rewrite(dp_module *m, int harden, uint32_t *found, dp_err **err);
/* The soft annotations of m into *found: 0, or -1 + error. */
int dp__soft_count(dp_module *m, uint32_t *found, dp_err **err);

/* ================= latency_model.c: the latency placement's problem and its score ================= */

#define LAT_NONE DP_SCHED_NONE

/* What a placement scores: memory over the budgets first, then the
   objective (makespan or bytes copied, plus the weights of the soft
   annotations it breaks), then the makespan, then the sum of the tasks'
   finish times (the inner model's: a move that lets work finish earlier
   without changing the makespan yet is progress), then the bytes copied. */
typedef struct dp__score {
  double excess;      /* bytes over the budgets, summed over devices */
  double primary;     /* the objective */
  double makespan, bytes, soft;
  double flow;        /* the sum of the tasks' finish times (0 for a plan's score) */
} dp__score;

/* Is a strictly better than b (relative tolerance 1e-9)? */
int dp__score_better(const dp__score *a, const dp__score *b);

/* One placement problem: the module's task graph (DAG mode, with @main's
   parameters), the costs, which nodes are decisions, and scratch for the
   inner model. */
typedef struct dp__lat {
  dp_sched_graph g;           /* DP_GRAPH_DAG | DP_GRAPH_PARAMS */
  const dp_config *cfg;
  int objective;              /* DP_LATENCY_TIME, DP_LATENCY_BYTES */
  uint32_t n, K;              /* nodes; devices to choose from (g.devs[0 .. K)) */
  uint32_t nphys;             /* physical devices among them */
  double *cost;               /* n * K: a call's seconds (INFINITY: cannot); others 0 */
  double *bw;                 /* g.ndevs * g.ndevs bytes per second */
  double *minc;               /* per node: a call's cheapest cost (0 for the others) */
  uint32_t *fixed;            /* per node: the device of a fixed call or parameter, else NONE */
  uint64_t *allowed;          /* per node: the devices a decision may take */
  uint32_t *dec, ndec;        /* the decisions the search moves (free calls, and parameters
                                 that do not move with a call), in topological order */
  uint32_t *all, nall;        /* every decision (calls and parameters), in topological order:
                                 the exact search's (a parameter copied to its only reader can
                                 be better: it lets another task go first) */
  int rdec;                   /* @main's result device is a decision: place[n] holds it (its
                                 result is a join, a tuple of values: those made elsewhere are
                                 copied there, as TVM's rules copy them to @main's device) */
  uint32_t *topo;             /* a topological order of the graph */
  uint32_t *chain;            /* per node: the first node of its chain (a call run straight
                                 into its only reader), itself otherwise; NONE for non-decisions */
  uint32_t *chain_next;       /* per decision: the next node of its chain, NONE at its end */
  uint32_t *xoff, *xpar;      /* per call: the free parameters only it reads, xpar[xoff[v] ..
                                 xoff[v + 1]) (they move with it) */
  uint32_t *tied;             /* per node: the call a parameter moves with (not a decision of
                                 its own), else NONE */
  uint32_t *soft_choice;      /* per soft annotation: the device it prefers (NONE: none of K) */
  double budget[64];          /* per device: bytes (INFINITY: none) */
  int budgets;                /* any budget given */
  double soft_scale;          /* a soft weight in the objective's unit */
  uint32_t *heads, nheads;    /* the first call of each chain (of two calls or more) */
  /* the inner model's scratch (latency_model.c) */
  struct dp__xg *xg;
  double *tstart, *tfinish;   /* per node: its start and finish in the last evaluation (calls) */
  /* counters */
  uint64_t work, work_budget; /* node-evaluations spent and allowed in the search */
  uint32_t evals;
  int oom;
  dp_err *err;
} dp__lat;

/* The score of a placement (a device per node: calls and
   parameters; others ignored) without planning it: the task graph with a
   copy per value and destination device, scheduled by dp_sched_list as a
   plan's would be. *crit (optional) gets the decisions on its critical
   path (malloc'd, *ncrit of them). 0, or -1 (l->err). */
int dp__lat_eval(dp__lat *l, const uint32_t *place, dp__score *out, uint32_t **crit, uint32_t *ncrit);
void dp__lat_model_free(dp__lat *l);
/* The soft annotations a placement breaks: their count and weight (in
   the annotations' own unit). */
void dp__lat_soft(const dp__lat *l, const uint32_t *place, uint32_t *broken, double *weight);

/* ================= latency_search.c: starting placements, local search ================= */

int dp__lat_mincut(dp__lat *l, uint32_t *place);            /* serial time or bytes, min cut */
void dp__lat_params(dp__lat *l, uint32_t *place);           /* each free parameter by its readers */
void dp__lat_result(dp__lat *l, uint32_t *place);           /* @main's result where most of it is made */
int dp__lat_improve(dp__lat *l, uint32_t *place, dp__score *score); /* to a local optimum */
int dp__lat_perturb(dp__lat *l, uint32_t *place, dp__score *score); /* iterated local search */

/* ================= latency_exact.c: branch and bound ================= */

/* Branch and bound over the decisions (at most 64), with
   the inner model at the leaves. place/score hold the incumbent and get
   the optimum; returns 1 when the search was complete (optimal under the
   inner model), 0 when it stopped at its node limit, -1 on error. */
int dp__lat_exact(dp__lat *l, uint32_t *place, dp__score *score, uint64_t node_limit);

/* ================= latency.c: the latency placement ================= */

/* How the placement plans a module (written as annotations, or as it is
   by TVM's rules or min_bytes): plan.c hands it dp_plan_devices_opts, the
   composition of the phases; the search sits below plan.c and knows that
   composition only through this. */
typedef dp_module *(*dp__plan_fn)(dp_module *m, const dp_config *cfg, const dp_plan_opts *o,
                                  dp_conflicts *all, dp_err **err);
/* dp_plan_latency (latency.h) with the planner given. */
int dp__latency(dp_module *m, const dp_config *cfg, const dp_latency_opts *o, dp__plan_fn plan,
                dp_latency_result *out, dp_err **err);
/* PlanDevices' options (plan.c): placement = "latency", and min_bytes with
   soft annotations or memory budgets, are placed by the search: 1, 0 (not),
   or -1 + error (out of memory). */
int dp__placed_by_search(dp_module *m, const dp_config *cfg, const dp_plan_opts *o, dp_err **err);
/* The search's plan with PlanDevices' options o (objective: the time for
   latency, else the bytes; costs: o->costs, else o->hooks' as a cost
   model). As dp__latency. */
int dp__latency_of_plan(dp_module *m, const dp_config *cfg, const dp_plan_opts *o, dp_conflicts *all,
                        dp__plan_fn plan, dp_latency_result *out, dp_err **err);

/* ================= lexical.c: a planned module's devices, read from it ================= */

/* The devices a planned module's annotations say (capture's: src/planner/
   lexical.c says how and when it gives up), which are those planning it
   again by the configuration finds, read without planning. */
typedef struct dp__lexical dp__lexical;
/* post: each node once per walk, children first (dp_visit's order), with
   its device (NULL: operators, constructors, a let's variable at its let;
   borrowed: the module holds it). -1 stops the walk. */
typedef int (*dp__lexical_post)(void *ud, dp_expr *e, dp_vdev *dev);
dp__lexical *dp__lexical_new(dp_module *m, const dp_config *cfg); /* NULL: out of memory */
void dp__lexical_free(dp__lexical *lx);
/* Walks function fn of the module: 0, 1 the module does not say its
   devices so (the caller plans it), -1 out of memory or post stopped. */
int dp__lexical_walk(dp__lexical *lx, dp_func *fn, dp__lexical_post post, void *ud);
/* The same walk a step at a time (a child reached or a node posted), for
   a caller that walks the module with the printer at the same time (the
   report: each node read once while it is in the cache): begin, then
   step while 2 (0 done, 1 and -1 as dp__lexical_walk). */
int dp__lexical_begin(dp__lexical *lx, dp_func *fn);
int dp__lexical_step(dp__lexical *lx, dp__lexical_post post, void *ud);
/* A node (shared, or a variable) this walk has reached: its number among
   the walks' records (dense, in the order first reached), else UINT32_MAX. */
uint32_t dp__lexical_met(const dp__lexical *lx, const dp_expr *e);
/* Did the walks meet a node (not a variable) in two functions? (Then a
   name the printer gives it in one is not the one it gives in another.) */
int dp__lexical_crossed(const dp__lexical *lx);
/* Devices by a small number (0: none), for arrays of a node each: 4 bytes
   a node where a pointer was 8 (a million-node body names a handful of
   devices). The devices are borrowed: the table lives no longer than the
   module they come from. */
typedef struct dp__devcodes {
  dp_vdev **v;          /* code -> device; v[0] NULL */
  uint32_t n, cap;
  dp__ptrmap map;       /* device -> its code */
  const dp_vdev *last;  /* the device last coded, and its code */
  uint32_t lastcode;
} dp__devcodes;
#define DP__DEVCODE_OOM UINT32_MAX
uint32_t dp__devcode(dp__devcodes *t, dp_vdev *vd); /* vd's code, made when new; DP__DEVCODE_OOM */
void dp__devcodes_free(dp__devcodes *t);
static inline dp_vdev *dp__devcode_vdev(const dp__devcodes *t, uint32_t code) { return code ? t->v[code] : NULL; }

/* The same reading over the graph of one body: n nodes in post order (x,
   the root last), child slots kids[kstart[v] .. kstart[v + 1]) as node
   indices (UINT32_MAX: an operator, a constructor or a global), the root
   in position root_ctx (a function's virtual_device); dev[v] each node's
   device, by its code in codes. What the caller read of each node already is given,
   so that the reading touches the IR only where it needs a node's
   attributes or callee: kind[v] x[v]'s kind (dp_exprkind), call[v]
   DP__LX_ON_DEVICE for a call of on_device, DP__LX_COPY for one of
   device_copy, DP__LX_OP_CALL for one of any other operator but the
   memory and VM dialect's (call_lowered, memory.*, vm.*: such a call is
   checked from the graph alone); other bits ignored. dev[v] of a copy:
   its ends as the caller read them (DP__LX_COPY_ENDS, below), or 0.
   bound[v]: a let's variable's let (UINT32_MAX: none; the caller has it
   from its graph's build). ctx: n zeroed codes of scratch, the caller's (its own
   zeroed block, so that no fresh pages are mapped here). 0, 1 the body
   does not say its devices so (the caller plans it), -1 out of memory. */
enum { DP__LX_ON_DEVICE = 1, DP__LX_COPY = 2, DP__LX_OP_CALL = 16 };
int dp__lexical_graph_read(dp__lexical *lx, uint32_t n, dp_expr *const *x, const uint32_t *kstart,
                           const uint32_t *kids, const uint8_t *kind, const uint8_t *call, const uint32_t *bound,
                           dp_vdev *root_ctx, dp__devcodes *codes, uint32_t *dev, uint32_t *ctx);
/* On_device e (a call of on_device) readable: fixed, on a settled device,
   which goes to *dev (for dp__lexical_graph_read's dev[] of its node, coded; the
   caller's graph build reads it while it has the node in the cache, so
   that the reading over the graph does not read every on_device again:
   at a million calls each read of a node is a miss). 1, 0 not readable
   (the body does not say its devices so: the caller plans the module),
   -1 out of memory. */
int dp__lexical_on_device(dp__lexical *lx, dp_expr *e, dp_vdev **dev);
/* The same for device_copy e: readable (both ends written and settled),
   its source and destination in *src and *dst. A caller that reads a copy
   so gives dp__lexical_graph_read its two ends in dev[] of its node,
   DP__LX_COPY_ENDS(dst code, src code), where both codes fit (else 0:
   the reading reads the node itself). */
int dp__lexical_copy(dp__lexical *lx, dp_expr *e, dp_vdev **src, dp_vdev **dst);
#define DP__LX_COPY_ENDS(dst, src) ((dst) < 0x10000u && (src) < 0x10000u ? (uint32_t)(dst) | (uint32_t)(src) << 16 : 0u)
/* Is vd a device as planning by the configuration leaves it (canonical,
   nothing left to default)? 1, 0, -1 out of memory. */
int dp__lexical_settled(dp__lexical *lx, dp_vdev *vd);

#endif
