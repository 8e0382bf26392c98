/*
 * Internals shared by the planner's files: the domains (union-find with a
 * proof forest for explanations), the expression-to-domain map, the special
 * operators, and helpers that read and build on_device / device_copy calls.
 */
#ifndef DEVPLAN_PLANNER_H
#define DEVPLAN_PLANNER_H

#include "devplan/devplan.h"

#define DP_NONE_ID UINT32_MAX

struct dp_sizes; /* conflicts.c */

/* Why a domain got a device, or why two domains were unified. The text of
   each rule is in domains.c (rule_text). */
enum {
  R_NONE = 0,
  /* constraints (a domain created with a device) */
  R_ON_DEVICE, R_COPY_SRC, R_COPY_DST, R_PARAM_ANNOT, R_FUNC_ANNOT, R_HOST_ARG,
  R_ALLOC_DEV, R_PRIMFN_ARG, R_PRIMFN_RESULT, R_DEF_RESULT, R_DEF_PARAM, R_DEF_LET,
  R_DEF_CALL, R_USER_CONSTRAIN, R_USER_DEFAULT,
  /* unification steps */
  R_ARG, R_RESULT, R_CALLEE, R_LET_VAR, R_LET_BODY, R_FUNC_BODY, R_FUNC_PARAM, R_TUPLE,
  R_PROJ, R_IF_COND, R_IF_BRANCH, R_MATCH_DATA, R_MATCH_PAT, R_MATCH_RHS, R_REF,
  R_GLOBAL, R_FREE_ON_DEVICE, R_CTOR, R_USER_UNIFY, R_COLLAPSE,
  R__COUNT
};

/* One domain node (32 bytes: a million-call program has millions). A
   class (union-find root) holds the class's device; a function domain
   lists its parameter and result domains in `kids`; a constraint's own
   device and reason are in `cons` (few nodes are constraints). */
typedef struct dp_dnode {
  uint32_t parent;   /* union-find parent (itself for a root) */
  uint32_t size;     /* class size (roots) */
  uint32_t vdev;     /* roots: index in d->vdevs (0: free) */
  uint32_t aux;      /* function node: index in d->kids; constraint: index in d->cons */
  uint32_t pparent;  /* proof forest parent, DP_NONE_ID at a proof root */
  uint8_t isfn;      /* function domain */
  uint8_t erule;     /* rule of the proof edge to pparent */
  uint8_t crule;     /* constraint rule (0: not a constraint) */
  uint8_t read;      /* roots: a default was taken from this class's device (dp__dom_source) */
  dp_expr *ewhy;     /* expression behind the proof edge */
} dp_dnode;

/* A constraint node's own device and the expression behind it. */
typedef struct dp_cons {
  uint32_t vdev;
  dp_expr *why;
} dp_cons;

/* Open-addressing map from a pointer key to a domain id (+ flags). */
typedef struct dp_pmap {
  struct dp_pslot { uintptr_t key; uint32_t val; uint32_t flags; } *slots;
  uint32_t cap, n;
} dp_pmap;

/* PM_ID: in d->map, val is the node's (latest) flat id, its domain
   flat.dom[val]; without it val is the domain itself. */
enum { PM_VISITED = 1, PM_PARAM = 2, PM_LOWERED_ARGS = 4, PM_SHARED = 8, PM_ID = 16 };
/* flat.flag only, set by analysis so that defaulting reads the flags
   instead of every node of the module again: a free on_device call (body
   and result unconstrained); a node with a defaulting rule (a call, a let,
   a function that is not primitive). */
enum { FL_FREE_ONDEV = 32, FL_DEFAULTS = 64, FL_FIX = 128 };

/* Attribute sets the planner builds, made once per device pair and reused:
   capture annotates most nodes of a module with a handful of distinct
   on_device / device_copy attribute sets. */
#define DP_ATTR_CACHE 16
struct dp_attr_cache {
  struct { dp_vdev *a, *b; int kind; dp_attrs *attrs; } e[DP_ATTR_CACHE];
  uint32_t n;
  /* the last on_device attribute set read (retained, so its address is
     not reused) and what it says: reading it costs three lookups by name,
     and every phase reads the same few sets again and again */
  dp_attrs *pattrs;
  dp_vdev *pvd;
  int pcbody, pcresult;
};

struct dp_plan_ops {
  dp_op *on_device, *device_copy, *alloc_storage, *alloc_tensor, *shape_of,
      *reshape_tensor, *invoke_tvm_op, *call_lowered;
  struct dp_attr_cache *cache; /* owned by whoever called dp__plan_ops (dp__plan_ops_free) */
};

/* The flat index (flat.c), built by analysis: every node of every global
   function gets a dense id in visit (pre) order, one id per distinct node
   of a function, as dp_visit reaches it. Operators and constructors get
   none (their id is DP_NONE_ID). Default and capture walk these arrays
   instead of the IR, so a node's domain and children cost no pointer-map
   lookup; only shared nodes (rc > 1) go through d->map, which maps them to
   their flat id (PM_ID). */
typedef struct dp_flat {
  dp_expr **x;       /* id -> node (borrowed: the module holds it) */
  uint32_t *dom;     /* id -> domain */
  uint32_t *koff;    /* id -> first child id in kid; koff[n] = nkid */
  uint32_t *kid;     /* children ids in dp_expr_child order (none for primitive bodies) */
  uint32_t *post;    /* ids in post order */
  uint8_t *flag;     /* PM_* flags */
  uint32_t n, cap, nkid, capkid, npost;
  /* per indexed function (definition order): its first id and its first
     index in post; entry [nfn] closes the last range */
  uint32_t *fnid, *fnpost;
  uint32_t nfn, capfn;
  uint32_t *gref;    /* ids of the global nodes, in id order (order.c's call graph) */
  uint32_t ngref, capgref;
} dp_flat;

struct dp_domains {
  dp_obj h;                 /* DP_OBJ_DOMAINS */
  dp_module *mod;           /* retained */
  dp_config *cfg;           /* retained */
  dp_ctx *ctx;
  struct dp_plan_ops ops;
  dp_dnode *nodes;
  uint32_t nnodes, capnodes;
  dp_cons *cons;             /* constraints (dp_dnode.aux of a constraint) */
  uint32_t ncons, capcons;
  uint32_t *kids;           /* function domains: arity, params..., result */
  uint32_t nkids, capkids;
  dp_vdev **vdevs;          /* distinct devices seen (retained); [0] is the unconstrained one */
  uint32_t nvdevs, capvdevs;
  uint32_t host;            /* vdev index of the host device */
  /* canonical index of the last few annotation devices (retained keys):
     canonicalising through the configuration costs a lookup and an intern */
  dp_vdev *canon_key[8];
  uint32_t canon_val[8], ncanon;
  uint32_t dflt[8][3], ndflt;  /* last defaults: (device, default) -> result (domains.c) */
  dp_pmap map;              /* expr (and global name ids) -> domain; complete once map_full */
  dp_flat flat;             /* analysis' index of the module (flat.c) */
  int map_full;             /* every flat node is in map (dp__domains_full_map) */
  uint32_t *order;          /* the global functions (indices) in the order defaulting
                               visits them (order.c); NULL: definition order */
  int xshared;              /* a node is indexed in two functions (it has two flat ids) */
  /* dp_plan_devices without phase 0's module: analysis treats the
     on_device calls phase 0 would fix (let values, function bodies) as
     fixed (FL_FIX); needs_rewrite: the module needs a rewrite this cannot
     stand in for (phase 0 must run) */
  int fixmode, needs_rewrite;
  /* scratch for unify */
  uint32_t *work; uint32_t nwork, capwork;
  uint32_t *trail; uint32_t ntrail, captrail;
  uint32_t *links; uint32_t nlinks, caplinks;
  int oom;                  /* an allocation failed: the phase reports it */
  int repass;               /* defaulting refined a device a default was taken from */
};

/* dp_expr_child / dp_expr_nchildren inline for the kinds a large program
   is made of (calls, lets): the planner asks for children of every node in
   every phase, and the out-of-line calls were a measurable part of it. */
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

/* --- pmap.c --- */
int dp__pmap_put(dp_pmap *m, uintptr_t key, uint32_t val, uint32_t flags);
/* put of a key known to be absent (one probe sequence instead of two) */
int dp__pmap_add(dp_pmap *m, uintptr_t key, uint32_t val, uint32_t flags);
struct dp_pslot *dp__pmap_get(const dp_pmap *m, uintptr_t key);
/* Room for n keys in an empty map (a hint: nothing on failure). */
void dp__pmap_reserve(dp_pmap *m, uint32_t n);
void dp__pmap_free(dp_pmap *m);

/* --- ops.c: special operators and on_device / device_copy helpers --- */
int dp__plan_ops(dp_ctx *ctx, struct dp_plan_ops *ops, dp_err **err);
void dp__plan_ops_free(struct dp_plan_ops *ops);
typedef struct dp_ondev {
  dp_expr *body;
  dp_vdev *vd;       /* borrowed, may be fully unconstrained */
  int cbody, cresult;
} dp_ondev;
int dp__on_device_props(const struct dp_plan_ops *ops, const dp_expr *e, dp_ondev *p);
int dp__device_copy_props(const struct dp_plan_ops *ops, const dp_expr *e, dp_expr **body,
                          dp_vdev **src, dp_vdev **dst);
/* The callee and arguments of a call as if it were not lowered:
   call_lowered(@f, (a, b)) is @f(a, b). Returns the argument count. */
uint32_t dp__any_call(const struct dp_plan_ops *ops, const dp_call *c, dp_expr **callee,
                      dp_expr *const **args);
/* on_device(body, ...) at body's span (dp__on_device) or at span. */
dp_expr *dp__on_device(const struct dp_plan_ops *ops, dp_expr *body, dp_vdev *vd, int cbody,
                       int cresult, dp_err **err);
dp_expr *dp__on_device_at(const struct dp_plan_ops *ops, dp_expr *body, dp_vdev *vd, int cbody,
                          int cresult, dp_span span, dp_err **err);
/* Capture's annotation (TVM's MaybeOnDeviceFixed): a fixed on_device,
   none around variables, globals, functions, operators, constructors. */
dp_expr *dp__maybe_on_device_fixed(const struct dp_plan_ops *ops, dp_expr *body, dp_vdev *vd,
                                   dp_err **err);
/* Phase 0's annotation of a let value or function body written
   on_device(body, vd): fixed, whatever body is (a variable, global or
   function included: the constraint must not be lost), at the span of the
   annotation the user wrote; none around operators and constructors. */
dp_expr *dp__on_device_fixed_at(const struct dp_plan_ops *ops, dp_expr *body, dp_vdev *vd,
                                dp_span span, dp_err **err);
dp_expr *dp__device_copy(const struct dp_plan_ops *ops, dp_expr *body, dp_vdev *src,
                         dp_vdev *dst, dp_err **err);
int dp__is_primitive(const dp_func *f);
/* Short device text for messages ("cuda", "cpu scope \"a\""), malloc'd. */
char *dp__vdev_short(const dp_vdev *v);

/* --- domains.c --- */
void dp__domains_free_fn(dp_obj *o, dp_worklist *wl);
dp_domains *dp__domains_new(dp_module *m, const dp_config *cfg, dp_err **err);
uint32_t dp__vdev_index(dp_domains *d, dp_vdev *v);   /* DP_NONE_ID on out of memory */
uint32_t dp__dom_first(dp_domains *d, uint32_t vdev, int crule, dp_expr *cwhy);
uint32_t dp__dom_fn(dp_domains *d, uint32_t arity, const uint32_t *kids);
uint32_t dp__dom_for_type(dp_domains *d, const dp_type *t, uint32_t vdev, int crule,
                          dp_expr *cwhy);
uint32_t dp__dom_of(dp_domains *d, dp_expr *e);       /* made free on first use */
uint32_t dp__dom_new(dp_domains *d, dp_expr *e);      /* a fresh domain for e's type, not in map */
uint32_t dp__dom_find(dp_domains *d, uint32_t x);
uint32_t dp__dom_result(dp_domains *d, uint32_t x);   /* root of the result domain */
uint32_t dp__dom_arity(dp_domains *d, uint32_t x);    /* 0 for first-order */
uint32_t dp__dom_kid(dp_domains *d, uint32_t x, uint32_t i); /* i == arity: result */
dp_vdev *dp__dom_vdev(dp_domains *d, uint32_t x);     /* result device, NULL free (borrowed) */
/* Unify; rule/why say why. optional: a failure leaves everything as it
   was and returns 1 without error. Returns 0, 1 (optional failure) or -1. */
int dp__unify(dp_domains *d, uint32_t a, uint32_t b, int rule, dp_expr *why, int optional,
              dp_err **err);
/* Unify a first-order domain with a maybe-function one, collapsing it. */
int dp__unify_collapsed(dp_domains *d, uint32_t first, uint32_t any, int rule, dp_expr *why,
                        dp_err **err);
/* Canonical device through the configuration, as a vdev index. */
uint32_t dp__canon_index(dp_domains *d, dp_vdev *v, dp_err **err);
int dp__set_default(dp_domains *d, uint32_t x, uint32_t vdev, int rule, dp_expr *why,
                    dp_err **err);
int dp__set_result_default_then_params(dp_domains *d, uint32_t x, uint32_t vdev, int rule,
                                       dp_expr *why, dp_err **err);
/* The device of x's result as the source of a default (a vdev index, 0:
   free): marked, so that a later refinement of it asks for another pass. */
uint32_t dp__dom_source(dp_domains *d, uint32_t x);
int dp__dom_fully_constrained(dp_domains *d, uint32_t x);
/* The domain of a call's callee; for operators and constructors the
   callee is implicit (params = argument domains, result = call domain):
   returns DP_NONE_ID then. */
uint32_t dp__callee_dom(dp_domains *d, dp_call *c);

/* --- flat.c --- */
/* Index the function root (appends to d->flat); 0 or -1 (out of memory). */
int dp__flat_add(dp_domains *d, dp_func *root);
void dp__flat_free(dp_flat *f);
/* Reserve room for the nodes, children and domains of sz (a hint). */
void dp__reserve(dp_domains *d, const struct dp_sizes *sz);
/* Child i of flat node id: its id (DP_NONE_ID for operators, constructors
   and bodies that are not indexed). */
static inline uint32_t dp__fkid(const dp_domains *d, uint32_t id, uint32_t i) {
  uint32_t o = d->flat.koff[id] + i;
  return o < d->flat.koff[id + 1] ? d->flat.kid[o] : DP_NONE_ID;
}
/* The domain of child i of flat node id (through d->map when not indexed). */
uint32_t dp__fkdom_slow(dp_domains *d, uint32_t id, uint32_t i);
static inline uint32_t dp__fkdom(dp_domains *d, uint32_t id, uint32_t i) {
  uint32_t k = dp__fkid(d, id, i);
  return k != DP_NONE_ID ? d->flat.dom[k] : dp__fkdom_slow(d, id, i);
}
/* The domain of a call's callee (DP_NONE_ID for operators and constructors). */
uint32_t dp__fcallee_dom(dp_domains *d, uint32_t id);
/* Put every indexed node into d->map (for lookups by expression). */
int dp__domains_full_map(dp_domains *d);

/* --- patvars.c --- */
/* fn(ud, v) for each variable the pattern binds, until fn returns non-zero
   (returned; -1 also on out of memory). */
int dp__pattern_vars(dp_pattern *root, int (*fn)(void *ud, dp_var *v), void *ud);

/* --- fnames.c: the module's global functions by name --- */
typedef struct dp_fnames {
  const dp_module *m;
  uint32_t n;
  uint32_t *byname;  /* function indices sorted by name */
  uint32_t *rank;    /* function index -> position in byname */
} dp_fnames;
int dp__fnames_init(dp_fnames *f, const dp_module *m);          /* 0 or -1 (out of memory) */
uint32_t dp__fnames_find(const dp_fnames *f, const char *name); /* index, or DP_NONE_ID */
void dp__fnames_free(dp_fnames *f);

/* --- order.c --- */
/* d->order from the flat index of all functions: callers before callees,
   by name where the calls do not decide. 0 or -1 (out of memory). */
int dp__plan_order(dp_domains *d);
/* The k-th function to visit in that order (an index of d->mod->funcs). */
static inline uint32_t dp__fn_at(const dp_domains *d, uint32_t k) {
  return d->order ? d->order[k] : k;
}

/* --- conflicts.c --- */
/* How big the module is, as phase 0b's walk saw it: analysis reserves its
   arrays from it instead of growing them by doubling (each growth copies
   everything so far, and holds both copies at once). */
struct dp_sizes { uint32_t nodes, edges, shared, cons; };
dp_module *dp__plan_conflicts_sized(dp_module *m, const dp_config *cfg, struct dp_sizes *sz,
                                    dp_err **err);

/* --- analyze.c --- */
/* Analysis standing in for phase 0's let / function-body rule (fixmode):
   NULL without error when phase 0 must run first. sz (or NULL): sizes to
   reserve. */
dp_domains *dp__plan_analyze_fixed(dp_module *m, const dp_config *cfg, const struct dp_sizes *sz,
                                   dp_err **err);

/* --- explain.c --- */
const char *dp__rule_text(int rule);
char *dp__describe(dp_ctx *ctx, const dp_expr *e); /* "add at 3:5", malloc'd */
dp_err *dp__conflict_error(dp_domains *d, uint32_t a, uint32_t b, int rule, dp_expr *why);

#endif
