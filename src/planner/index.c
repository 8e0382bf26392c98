/*
 * The node numbering every phase shares. One walk per global function
 * (an explicit stack, depth first, children in dp_expr_child order) gives
 * each distinct node a dense id in pre order and records, per id, the
 * node, its children's ids, how the phases read it (what: on_device,
 * device_copy, which call) with its annotation decoded once (devices
 * canonicalised through the configuration), and flags (shared, parameter,
 * call_lowered arguments, phase 0's fixed positions), and the order the
 * walk finished them in (post order, about a byte an id: dp__post). The
 * phases then run over these arrays; attributes are never
 * read by name again. A node is looked up by pointer only where it is
 * shared (other references may reach it: let variables, parameters, values
 * read twice), and then by its mark (dp_expr.mark: the id this walk gave
 * it, checked against x[], so a mark left by another walk is never
 * believed): no hash map is made unless something asks by expression.
 *
 * The same walk does two phases' reading:
 * - phase 0 (rewrite.c): it counts the nodes phase 0 rewrites (nrewrite);
 *   none, and phase 0 returns the index as it is, without a walk;
 * - phase 0b (conflicts.c): it carries the device each call demands of
 *   its arguments, top down, and marks where a node already reached with
 *   one demand meets another it cannot join (marks); none, and phase 0b
 *   returns the index as it is. (The demand walk reaches what the numbering
 *   reaches, in the same order, less binding positions: let variables and
 *   parameters are reached at their first use.) It also records each
 *   demand that reaches a plain on_device other references may reach
 *   (reads: "read anywhere", conflicts.c). Nothing here depends on a
 *   reference count but which nodes it must remember: a node with one
 *   reference has one parent and is reached once.
 *
 * The arrays are sized once where type inference counted the module
 * (dp_module.sizes: a parsed module's), and double from a few entries
 * where it did not, or where those counts fall short.
 *
 * Requires: a module (operators registered) and a configuration.
 * Leaves: dp__index (planner.h), with the walk's stack and demands as spare
 * blocks, the larger of which the domains' nodes take, resident (the other is
 * freed then: dp__index_take). A reader done with the ids from some point on
 * (capture's last round) may cut the arrays there (dp__index_cut).
 * Operators and constructors get no id, nor do the bodies of primitive
 * functions (not planned). A node shared by two functions gets an id in
 * each (F_DUP, dups: one domain for both), so that each function's ids
 * form one range.
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"

/* 16 bytes: a million-deep chain keeps a million of them */
typedef struct frame {
  uint32_t id, i;
  uint32_t n : 31;          /* children */
  uint32_t quiet : 1;       /* phase 0b reached this subtree already (another function) */
  uint32_t demand;          /* phase 0b: what was demanded of this node */
} frame;

typedef struct walk {
  dp__index *ix;
  frame *st; uint32_t nst, capst;
  uint32_t *aux; uint32_t capaux; /* shared node id -> phase 0b's demand + 1 (0: none yet) */
  uint32_t from;            /* the first id of the function being numbered */
  uint32_t done;            /* the id finished last (the post order's last) */
  uint32_t parent, slot;    /* the node being reached is child slot of parent (DP__NONE_ID: a root) */
  uint32_t ready, kready;   /* ids and kid slots below these have their pages (prefaulted) */
  dp_expr **pend; uint32_t npend, cappend; /* the children of the frames on the stack not
                                              reached yet, the next one on top (below) */
  int oom;
} walk;

/* ---- growing the arrays ---- */

/* The per-id arrays, which share one capacity. */
#define ID_ARRAYS(ix) {(void **)&(ix)->x, (void **)&(ix)->koff, (void **)&(ix)->what, \
                       (void **)&(ix)->flag, (void **)&(ix)->ann, (void **)&(ix)->kind}
#define ID_SIZES(ix) {sizeof *(ix)->x, sizeof *(ix)->koff, sizeof *(ix)->what, \
                      sizeof *(ix)->flag, sizeof *(ix)->ann, sizeof *(ix)->kind}
#define NID_ARRAYS 6

/* Room for one more id (+1: koff[n] closes). Doubling, so that the arrays
   are copied about once in all (each copy of six arrays of a million
   entries is a cost of its own); trim() gives the slack back at the end. */
static int room(dp__index *ix) {
  if (ix->n + 2 <= ix->cap) return 0;
  void **const arrs[] = ID_ARRAYS(ix);
  const size_t sizes[] = ID_SIZES(ix);
  return dp_grow_arrays(&ix->cap, ix->n + 2, NID_ARRAYS, arrs, sizes);
}

int dp__grow_fresh(void **a, uint32_t *cap, uint32_t n, uint32_t need, size_t elem) {
  if (need <= *cap) return 0;
  void *p = dp_malloc((size_t)need * elem);
  if (!p) return -1;
  if (n) memcpy(p, *a, (size_t)n * elem);
  free(*a);
  *a = p;
  *cap = need;
  return 0;
}

/* Room for about n more items, with a little slack (a node numbered in
   two functions has an id in each, which inference counted once). */
static uint32_t hinted(uint32_t n) {
  uint64_t c = (uint64_t)n + n / 32 + 64;
  return c > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)c;
}

/* The arrays sized once where inference counted the module's nodes, child
   slots and deepest path (dp_module.sizes): at a million let calls the
   doublings from 16 entries copied each array's first megabyte, and laid
   its first 4 MiB in small pages (dp_advise_huge asks for huge pages from
   4 MiB on), some 9,000 faults in all. Without the counts (a module built
   or changed since), or where a count falls short, they double as before. */
static int reserve(dp__index *ix, walk *w) {
  const struct dp_module_sizes *s = &ix->mod->sizes;
  if (!s->nodes) return room(ix);
  uint32_t c = hinted(s->nodes + ix->mod->nfuncs), k = hinted(s->kids), d = hinted(s->depth);
  void **const arrs[] = ID_ARRAYS(ix);
  const size_t sizes[] = ID_SIZES(ix);
  for (int i = 0; i < NID_ARRAYS; i++) {
    void *p = dp_realloc(*arrs[i], (size_t)c * sizes[i]);
    if (!p) return -1;
    *arrs[i] = p;
  }
  ix->cap = c;
  /* (the post order: about a byte an id) */
  ix->cappost = (size_t)c + c / 4 + 8;
  if (!(ix->post = dp_malloc(ix->cappost))) return -1;
  if (!(ix->kid = dp_malloc((size_t)k * sizeof *ix->kid))) return -1;
  ix->capkid = k;
  if (!(w->st = dp_malloc((size_t)d * sizeof *w->st))) return -1;
  w->capst = d;
  return 0;
}

/* The pages of the next WINDOW ids (and twice as many child slots) in
   one go, as the walk reaches them: a fresh page asked for in a batch
   costs about 1.75 microseconds on the benchmark machine, one fault at a
   time 2.5 (a million-call let module writes 31,000 of them here). The
   window keeps what is prefaulted and never written small (the last one,
   trimmed away); dp__prefault skips what is under 16 pages. */
#define WINDOW 65536u

static void prefault_ids(walk *w) {
  dp__index *ix = w->ix;
  void **const arrs[] = ID_ARRAYS(ix);
  const size_t sizes[] = ID_SIZES(ix);
  uint32_t from = ix->n, to = ix->cap - from > WINDOW ? from + WINDOW : ix->cap;
  for (int i = 0; i < NID_ARRAYS; i++)
    dp__prefault((char *)*arrs[i] + (size_t)from * sizes[i], (size_t)(to - from) * sizes[i]);
  w->ready = to;
}

static void prefault_kids(walk *w) {
  dp__index *ix = w->ix;
  uint32_t from = ix->nkid, to = ix->capkid - from > 2 * WINDOW ? from + 2 * WINDOW : ix->capkid;
  dp__prefault(ix->kid + from, (size_t)(to - from) * sizeof *ix->kid);
  w->kready = to;
}

static int push_u32(uint32_t **a, uint32_t *n, uint32_t *cap, uint32_t v) {
  if (dp_grow((void **)a, cap, *n + 1, sizeof **a) < 0) return -1;
  (*a)[(*n)++] = v;
  return 0;
}

/* ---- decoding a node ---- */

static uint32_t canon(dp__index *ix, dp_vdev *v) {
  return dp__dev_canon(&ix->dev, v, NULL);
}

/* Node id's annotation v (dp__ann): its byte, or 0xFF and v in `wide`,
   appended (ids are decoded in order, so `wide` is sorted). Out of memory:
   dev.oom, on which the walk stops. */
static void set_ann(dp__index *ix, uint32_t id, uint32_t v) {
  uint32_t b = (v & 0x3F) | (v >> 24 & 0xC0);
  if (!(v & ~(ON_CBODY | ON_CRESULT | 0x3Fu)) && b != 0xFF) {
    ix->ann[id] = (uint8_t)b;
    return;
  }
  ix->ann[id] = 0xFF;
  if (dp_grow((void **)&ix->wide, &ix->capwide, ix->nwide + 1, sizeof *ix->wide) < 0) {
    ix->dev.oom = 1;
    return;
  }
  ix->wide[ix->nwide++] = (dp__annw){id, v};
}

uint32_t dp__ann_wide(const dp__index *ix, uint32_t id) {
  uint32_t lo = 0, hi = ix->nwide;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (ix->wide[mid].id < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < ix->nwide && ix->wide[lo].id == id ? ix->wide[lo].ann : 0;
}

static uint32_t decode_call(dp__index *ix, uint32_t id, dp_call *c) {
  const struct dp__plan_ops *o = &ix->ops;
  dp__ondev p;
  dp_expr *body;
  dp_vdev *src, *dst;
  /* (most calls are of an operator none of the forms below is made of:
     its rule at once, the attributes unread) */
  const dp_op *op = c->fn->h.kind == DP_OP ? (const dp_op *)c->fn : NULL;
  if (op && op != o->on_device && op != o->device_copy && op != o->special[OP_CALL_LOWERED]) {
    ix->ann[id] = (uint8_t)dp__op_rule(o, op); /* (below 63: dp__ann_op) */
    return W_OP_CALL;
  }
  if (dp__on_device_props(o, &c->e, &p)) {
    uint32_t d = p.vd ? canon(ix, p.vd) : 0;
    set_ann(ix, id, (d == DP__NONE_ID ? ON_DEV : d) | (p.cbody ? ON_CBODY : 0) |
                        (p.cresult ? ON_CRESULT : 0));
    ix->nann++;
    ix->nsoft += p.soft;
    return W_ON_DEVICE;
  }
  if (dp__device_copy_props(o, &c->e, &body, &src, &dst)) {
    if (dp_grow((void **)&ix->copies, &ix->capcopies, ix->ncopies + 1, sizeof *ix->copies) < 0) {
      ix->dev.oom = 1; /* (the walk stops on it) */
      return W_PLAIN;
    }
    ix->copies[ix->ncopies] = (dp__copy_ends){src ? canon(ix, src) : 0, dst ? canon(ix, dst) : 0};
    set_ann(ix, id, ix->ncopies++);
    ix->nann += 2;
    return W_COPY;
  }
  if (dp__is_lowered(o, c)) {
    if (c->args[0]->h.kind == DP_GLOBAL && dp_module_primfn(ix->mod, ((dp_global *)c->args[0])->name))
      ix->nrewrite++; /* phase 0: arguments and result may be copied */
    return W_LOWERED;
  }
  if (op) {
    ix->ann[id] = (uint8_t)dp__op_rule(o, op); /* (below 63: dp__ann_op) */
    return W_OP_CALL;
  }
  return c->fn->h.kind == DP_CTOR ? W_CTOR_CALL : W_FN_CALL;
}

/* Phase 0's forms in a primitive function's body, which is not numbered
   (nor read in place by analysis): each is a rewrite. */
typedef struct pscan { const struct dp__plan_ops *ops; dp_module *m; uint32_t n; } pscan;

static int scan_pre(void *ud, dp_expr *e) {
  pscan *s = ud;
  dp__ondev p;
  switch (e->h.kind) {
  case DP_LET: s->n += dp__is_normal_on_device(s->ops, ((dp_let *)e)->value, &p); break;
  case DP_FUNC: s->n += dp__is_normal_on_device(s->ops, ((dp_func *)e)->body, &p); break;
  case DP_PROJ: s->n += dp__is_normal_on_device(s->ops, ((dp_proj *)e)->tuple, &p); break;
  case DP_CALL: {
    dp_call *c = (dp_call *)e;
    s->n += dp__is_lowered(s->ops, c) && c->args[0]->h.kind == DP_GLOBAL &&
            dp_module_primfn(s->m, ((dp_global *)c->args[0])->name) != NULL;
    break;
  }
  default: break;
  }
  return 1;
}

static int scan_primitive(dp__index *ix, dp_func *f) {
  pscan s = {&ix->ops, ix->mod, 0};
  dp_visitor v = {scan_pre, NULL, &s};
  if (dp_visit(f->body, &v) < 0) return -1;
  ix->nrewrite += s.n;
  return 0;
}

static uint32_t decode(dp__index *ix, uint32_t id, dp_expr *e) {
  dp__ondev p;
  switch (e->h.kind) {
  case DP_CALL: return decode_call(ix, id, (dp_call *)e);
  case DP_FUNC:
    if (!dp__is_primitive((dp_func *)e)) return W_PLAIN;
    if (scan_primitive(ix, (dp_func *)e) < 0) ix->dev.oom = 1;
    return W_PRIM_FUNC;
  case DP_PROJ: /* phase 0: on_device(e).0 becomes on_device(e.0) */
    ix->nrewrite += dp__is_normal_on_device(&ix->ops, ((dp_proj *)e)->tuple, &p);
    return W_PLAIN;
  default: return W_PLAIN;
  }
}

/* ---- phase 0b's demands ---- */

static int first_order(const dp_expr *e) {
  return e->h.kind != DP_FUNC && !(e->type && e->type->h.kind == DP_TY_FUNC);
}

/* Whether demand d can change what a node reached again keeps, aux (its
   demand + 1, not 0): no demand (0) and the same one join to what it
   has (dp__dev_join), so demand_again is not asked (a hot path: every
   reuse of a variable). */
static inline int new_demand(uint32_t aux, uint32_t d) {
  return d != 0 && d + 1 != aux;
}

/* A node reached again with demand d from argument pos of call (DP__NONE_ID:
   no call), keeping *aux (its demand + 1): joined with it, or a mark (a
   copy goes there). */
static int demand_again(walk *w, uint32_t id, uint32_t *aux, uint32_t d, uint32_t call,
                        uint32_t pos) {
  dp__index *ix = w->ix;
  if (!first_order(ix->x[id])) return 0;
  uint32_t cur = *aux - 1, j = dp__dev_join(&ix->dev, cur, d);
  if (j != DP__NONE_ID) {
    *aux = j + 1;
    return 0;
  }
  if (call == DP__NONE_ID || ix->what[id] == W_ON_DEVICE) return 0;
  if (dp_grow((void **)&ix->marks, &ix->capmarks, ix->nmarks + 1, sizeof *ix->marks) < 0) return -1;
  ix->marks[ix->nmarks++] = (dp__mark){call, 1 + pos, DP__NONE_ID};
  return 0;
}

/* The demand node id (expression e) keeps when phase 0b first reaches it,
   with demand d (DP__NONE_ID: a binding position) from argument pos of
   call, as aux (device + 1; 0: none yet): d, unless the node has a device
   of its own, which is then its first demand and d a later one (a mark
   where they cannot join):
   - a parameter's virtual_device (else the first use's demand stood for
     the parameter, and the copy went to the use that agreed with its
     annotation, naming the parameter's position twice);
   - a device_copy's destination (else a first use asking for the source
     device stood for the copy, and the copy inserted for a later use went
     from that device: generated seeds 10939 and 18710, a conflict between
     the two ends of one copy).
   Every node's first reach comes here, whether or not other references
   may reach it again: what a node demands cannot depend on who else holds
   it (a Lua script holding a single-use device_copy once changed its plan).
   0, or -1 (out of memory). */
static int first_demand(walk *w, uint32_t id, dp_expr *e, uint32_t d, uint32_t call,
                        uint32_t pos, uint32_t *aux) {
  dp__index *ix = w->ix;
  int fo = first_order(e);
  *aux = d != DP__NONE_ID ? (fo ? d : 0) + 1 : 0;
  if (!fo) return 0;
  if (d == DP__NONE_ID && e->h.kind == DP_VAR && dp_var_vdev((dp_var *)e)) {
    uint32_t v = canon(ix, dp_var_vdev((dp_var *)e));
    if (v != DP__NONE_ID) *aux = v + 1;
    return 0;
  }
  uint32_t dst = ix->what[id] == W_COPY ? ix->copies[dp__ann(ix, id)].dst : 0;
  if (dst == 0 || dst == DP__NONE_ID) return 0;
  *aux = dst + 1;
  return d != DP__NONE_ID ? demand_again(w, id, aux, d, call, pos) : 0;
}

/* A plain on_device by its annotation alone: F_FIXED is given after the
   node is reached (dp__read_anywhere skips those). */
static int plain_ondev(const dp__index *ix, uint32_t id) {
  uint32_t a = dp__ann(ix, id), d = dp__ann_dev(a);
  return ix->what[id] == W_ON_DEVICE && (a & ON_CBODY) && !(a & ON_CRESULT) && d != 0 &&
         d != ON_DEV;
}

/* Demand d reached node id, child w->slot of w->parent: recorded when id
   is a plain on_device another reference may reach (its readers, for
   dp__read_anywhere). Reached once, nothing can conflict there. */
static void read_of(walk *w, uint32_t id, uint32_t d) {
  dp__index *ix = w->ix;
  if (d == DP__NONE_ID || w->parent == DP__NONE_ID || !plain_ondev(ix, id) ||
      !first_order(ix->x[id]))
    return;
  if (dp_grow((void **)&ix->reads, &ix->capreads, ix->nreads + 1, sizeof *ix->reads) < 0) {
    w->oom = 1;
    return;
  }
  ix->reads[ix->nreads++] = (dp__read){id, d, w->parent, w->slot};
}

/* The function a call's callee is, when known. */
static const dp_func *callee_fn(dp__index *ix, const dp_expr *callee) {
  if (callee->h.kind == DP_FUNC) return (const dp_func *)callee;
  if (callee->h.kind != DP_GLOBAL) return NULL;
  return dp_module_func(ix->mod, ((const dp_global *)callee)->name);
}

/* What frame t demands of its child i, and the call argument it is (call,
   pos), if any. Binding positions (let variables, parameters) demand
   nothing: DP__NONE_ID. */
static uint32_t demand_of(walk *w, const frame *t, uint32_t i, uint32_t *call, uint32_t *pos) {
  dp__index *ix = w->ix;
  *call = *pos = DP__NONE_ID;
  switch (ix->what[t->id]) {
  case W_ON_DEVICE: {
    uint32_t a = dp__ann(ix, t->id), d = dp__ann_dev(a);
    return (a & ON_CBODY) && d != ON_DEV ? d : 0;
  }
  case W_COPY: {
    uint32_t s = ix->copies[dp__ann(ix, t->id)].src;
    return s == DP__NONE_ID ? 0 : s;
  }
  case W_OP_CALL:
  case W_CTOR_CALL: /* ordinary operators and constructors pass it on */
    if (i == 0 || (ix->what[t->id] == W_OP_CALL && dp__ann_op(ix, t->id) != OP_ORDINARY)) return 0;
    *call = t->id, *pos = i - 1;
    return t->demand;
  case W_FN_CALL: {
    /* a function takes its arguments where its parameters say, whatever
       the call's own demand (planner.md passed that on, which made
       PlanDevices' own output a conflict when planned again) */
    if (i == 0) return 0;
    *call = t->id, *pos = i - 1;
    const dp_func *f = callee_fn(ix, ((const dp_call *)ix->x[t->id])->fn);
    dp_vdev *pv = f && i - 1 < f->nparams ? dp_var_vdev(f->params[i - 1]) : NULL;
    uint32_t d = pv ? canon(ix, pv) : 0;
    return d == DP__NONE_ID ? 0 : d;
  }
  case W_LOWERED: return 0;
  default: break;
  }
  /* (the node's kind from the index: the node is cold here at a million) */
  int k = ix->kind[t->id] & K_KIND;
  if (k == DP_LET) return i == 0 ? DP__NONE_ID : i == 1 ? 0 : t->demand;
  if (k == DP_FUNC) {
    dp_func *f = (dp_func *)ix->x[t->id];
    if (i < f->nparams) return DP__NONE_ID;
    uint32_t d = f->vdev ? canon(ix, f->vdev) : 0;
    return d == DP__NONE_ID ? 0 : d;
  }
  return t->demand;
}

static int post_put(dp__index *ix, uint32_t z);

/* ---- the walk ---- */

/* Room in aux for id. Where shared nodes keep coming (a let chain's
   variables, every third id), past a few thousand ids it takes the ids'
   capacity at once, when that was sized from the module's counts (most
   programs' shared nodes are a few parameters: aux stays small). */
static int grow_aux(walk *w, uint32_t id) {
  uint32_t need = id + 1;
  if (w->ix->mod->sizes.nodes && need > 4096 && w->ix->cap > need)
    return dp__grow_fresh((void **)&w->aux, &w->capaux, w->capaux, w->ix->cap, sizeof *w->aux);
  return dp_grow((void **)&w->aux, &w->capaux, need, sizeof *w->aux);
}

/* Room for need children waiting (walk.pend). Where they pile up (a
   chain of calls, each waiting for its second argument), past a few
   thousand it takes room for one a level of the module's deepest path
   at once, when inference counted it (as capture's stack, grow_vs). */
static int grow_pend(walk *w, uint32_t need) {
  uint32_t deep = w->ix->mod->sizes.depth;
  if (need > 4096 && deep > need)
    return dp__grow_fresh((void **)&w->pend, &w->cappend, w->npend, deep, sizeof *w->pend);
  return dp_grow((void **)&w->pend, &w->cappend, need, sizeof *w->pend);
}

/* The K_TYPE bits of a first-order node of type t (the types of values
   a copy may move; a function's first would take the first slot): its
   slot in ix->types (taken when free), 0 where it has none (no type, the
   slots taken). The first slot's type is compared first: most nodes of a
   module have it (a variable's is often its annotation's, not its own). */
static int type_slot_rest(dp__index *ix, const dp_type *t) {
  for (int i = 0; i < K_TYPE_SLOTS; i++) {
    if (!ix->types[i]) ix->types[i] = t;
    if (ix->types[i] == t) return (i + 1) << 5;
  }
  return 0;
}

static inline int type_slot(dp__index *ix, const dp_type *t) {
  return !t ? 0 : t == ix->types[0] ? 1 << 5 : type_slot_rest(ix, t);
}

/* A new id for e, its frame pushed. */
static uint32_t number(walk *w, dp_expr *e, int shared, uint32_t demand, int quiet) {
  dp__index *ix = w->ix;
  uint32_t id = ix->n;
  if ((id + 2 > ix->cap && room(ix) < 0) ||
      (w->nst == w->capst && dp_grow((void **)&w->st, &w->capst, w->nst + 1, sizeof *w->st) < 0)) {
    w->oom = 1;
    return DP__NONE_ID;
  }
  if (id >= w->ready) prefault_ids(w);
  ix->n++;
  ix->x[id] = e;
  int k = e->h.kind;
  /* (most nodes are first order: analysis gives them a free domain,
     whatever else their type says) */
  int first = k != DP_FUNC && !(e->type && e->type->h.kind == DP_TY_FUNC) &&
              !(k == DP_VAR && !e->type && dp_var_annot((const dp_var *)e));
  ix->kind[id] = (uint8_t)(k | (first ? type_slot(ix, e->type) | K_FIRST : 0));
  ix->flag[id] = shared ? F_SHARED : 0;
  ix->ann[id] = 0;
  int what = decode(ix, id, e);
  ix->what[id] = (uint8_t)what;
  uint32_t nk = what == W_PRIM_FUNC ? 0 : dp__nchildren(e);
  if (ix->nkid + nk > ix->capkid &&
      dp_grow((void **)&ix->kid, &ix->capkid, ix->nkid + nk, sizeof *ix->kid) < 0) {
    w->oom = 1;
    return DP__NONE_ID;
  }
  if (ix->nkid + nk > w->kready) prefault_kids(w);
  /* (each kid slot is written when the walk reaches that child; the
     operator these calls call, their child 0, gets no id, takes no demand
     and has no slot: the walk starts at the first argument) */
  uint32_t from = DP__SKIP >> what & 1; /* (dp__skip) */
  ix->koff[id] = ix->nkid;
  ix->nkid += nk - from;
  ix->koff[id + 1] = ix->nkid;
  if (shared && id >= w->capaux && grow_aux(w, id) < 0) {
    w->oom = 1;
    return DP__NONE_ID;
  }
  /* (the children after the first, last first: the walk reads each from
     here when it gets to it, not from the node, which at a million calls
     is out of the cache by the time a deep earlier child's subtree is
     done: a chain call's second argument, a let's body; only those of the
     nodes on the walk's path wait here) */
  if (nk > from + 1) { /* (the first is read next, from the node, while it is in the cache) */
    if (w->npend + nk > w->cappend && grow_pend(w, w->npend + nk) < 0) {
      w->oom = 1;
      return DP__NONE_ID;
    }
    dp_expr **p = w->pend + w->npend;
    if (k == DP_CALL) { /* (child i is argument i - 1) */
      dp_expr *const *a = ((const dp_call *)e)->args;
      for (uint32_t i = nk; --i > from;) *p++ = a[i - 1];
    } else if (k == DP_LET) { /* (from 0: body, then value, on top) */
      *p++ = ((const dp_let *)e)->body;
      *p++ = ((const dp_let *)e)->value;
    } else {
      for (uint32_t i = nk; --i > from;) *p++ = dp__child(e, i);
    }
    w->npend = (uint32_t)(p - w->pend);
  }
  w->st[w->nst++] = (frame){id, from, nk, (uint32_t)(quiet != 0), demand};
  if (e->h.kind == DP_GLOBAL && push_u32(&ix->gref, &ix->ngref, &ix->capgref, id) < 0) w->oom = 1;
  return id;
}

/* Reach e, child of frame t (NULL: the function's root) with demand d
   (DP__NONE_ID: a binding position) from argument pos of call: its id,
   new (and its frame pushed) or found. */
static uint32_t reach(walk *w, dp_expr *e, int root, uint32_t d, uint32_t call, uint32_t pos,
                      int quiet) {
  dp__index *ix = w->ix;
  int k = e->h.kind;
  if (k == DP_OP || k == DP_CTOR) return DP__NONE_ID;
  /* globals take no demand (phase 0b skips them) */
  if (k == DP_GLOBAL) d = DP__NONE_ID;
  /* A node with one reference has one parent: it is reached once, and
     needs no place in the map (a pure saving: first_demand does for it
     what the map's first entry does for a shared one; of what it keeps
     only a mark matters then, which only a device_copy can make). */
  int shared = root || e->h.rc > 1;
  if (!shared) {
    uint32_t id = number(w, e, 0, d == DP__NONE_ID ? 0 : d, quiet), aux;
    if (id != DP__NONE_ID && !quiet && d != DP__NONE_ID && ix->what[id] == W_COPY &&
        first_demand(w, id, e, d, call, pos, &aux) < 0)
      w->oom = 1;
    return id;
  }
  /* A shared node is found by its mark: the id this walk gave it last
     (a mark another walk left names no node of this one, or not this
     node), and what phase 0b demanded of it so far is in w->aux. */
  uint32_t m = e->mark;
  int known = m < ix->n && ix->x[m] == e;
  if (known && m >= w->from) { /* reached again in this function */
    ix->nmulti += !(ix->flag[m] & F_MULTI) && ix->what[m] != W_PLAIN && ix->what[m] != W_PRIM_FUNC;
    ix->flag[m] |= F_MULTI;
    if (!quiet && d != DP__NONE_ID) {
      if (w->aux[m] == 0) w->aux[m] = (first_order(e) ? d : 0) + 1; /* its first use */
      else if (new_demand(w->aux[m], d) && demand_again(w, m, &w->aux[m], d, call, pos) < 0)
        w->oom = 1;
      if (ix->what[m] == W_ON_DEVICE) read_of(w, m, d);
    }
    return m;
  }
  int again = 0; /* phase 0b reached it in an earlier function */
  if (known && !quiet && d != DP__NONE_ID) {
    if (w->aux[m] == 0) w->aux[m] = (first_order(e) ? d : 0) + 1;
    else if (new_demand(w->aux[m], d) && demand_again(w, m, &w->aux[m], d, call, pos) < 0)
      w->oom = 1;
    again = 1;
  }
  uint32_t old = known ? m : DP__NONE_ID, aux = known ? w->aux[m] : 0;
  uint32_t id = number(w, e, 1, d == DP__NONE_ID ? 0 : d, quiet || again);
  if (id == DP__NONE_ID) return id;
  if (!quiet && ix->what[id] == W_ON_DEVICE) read_of(w, id, d);
  if (old != DP__NONE_ID) {
    ix->flag[id] |= F_DUP | F_MULTI;
    ix->flag[old] |= F_MULTI;
    if (push_u32(&ix->dups, &ix->ndups, &ix->capdups, id) < 0 ||
        push_u32(&ix->dups, &ix->ndups, &ix->capdups, old) < 0)
      w->oom = 1;
  } else if (!quiet && first_demand(w, id, e, d, call, pos, &aux) < 0) {
    w->oom = 1;
  }
  e->mark = id;
  w->aux[id] = aux;
  return id;
}

/* Flags a parent gives its child i (id k). */
static void child_flags(dp__index *ix, uint32_t id, uint32_t i, uint32_t k) {
  int kind = ix->kind[id] & K_KIND; /* (not the node's: cold here at a million) */
  dp__ondev p;
  if (k == DP__NONE_ID) return;
  if (ix->what[id] == W_LOWERED && i == 2) ix->flag[k] |= F_LOWERED_ARGS;
  /* (only an annotation's own readers are asked about) */
  if (ix->what[k] == W_ON_DEVICE &&
      !(i > 0 && (ix->what[id] == W_FN_CALL || ix->what[id] == W_CTOR_CALL ||
                  (ix->what[id] == W_OP_CALL && dp__ann_op(ix, id) == OP_ORDINARY))))
    ix->flag[k] |= F_EXACT;
  int fixpos = kind == DP_LET && i == 1;
  if (kind == DP_FUNC) {
    if (i < ((dp_func *)ix->x[id])->nparams) ix->flag[k] |= F_PARAM;
    else fixpos = 1;
  }
  if (!fixpos || ix->what[k] != W_ON_DEVICE || !dp__is_normal_on_device(&ix->ops, ix->x[k], &p))
    return;
  /* phase 0's fixed let value or function body: analysis reads it as
     fixed, and phase 0 rewrites it (all of them) where that would not say
     the same. (After phase 0 the module has none of those, whatever other
     references a node has then: a later phase's module shares it.) */
  ix->flag[k] |= F_FIXED;
  /* (read in place only where no other parent in the module reaches it:
     counted once the numbering knows, never by reference counts, which a
     caller holding nodes would change) */
  if (dp__fixed_in_place(&ix->ops, ix->x[k])) ix->flag[k] |= F_INPLACE;
  else ix->nrewrite++;
}

static int number_fn(walk *w, dp_func *root) {
  dp__index *ix = w->ix;
  w->from = w->done = ix->n;
  w->nst = w->npend = 0;
  w->parent = w->slot = DP__NONE_ID;
  reach(w, &root->e, 1, 0, DP__NONE_ID, DP__NONE_ID, 0);
  while (w->nst && !w->oom) {
    frame *t = &w->st[w->nst - 1];
    if (t->i < t->n) {
      /* (child i's slot, counted from the node's last: its callee may have none) */
      uint32_t id = t->id, i = t->i++, back = t->n - i, call = DP__NONE_ID, pos = DP__NONE_ID;
      uint32_t d = t->quiet ? DP__NONE_ID : demand_of(w, t, i, &call, &pos);
      w->parent = id, w->slot = i;
      dp_expr *ce = i == dp__skip(ix, id) ? dp__child(ix->x[id], i) : w->pend[--w->npend];
      uint32_t k = reach(w, ce, 0, d, call, pos, t->quiet);
      /* (reach may have moved w->st: t is not used after it) */
      ix->kid[ix->koff[id + 1] - back] = k;
      ix->nloose += k == DP__NONE_ID && i > 0;
      child_flags(ix, id, i, k);
      continue;
    }
    w->nst--;
    /* (its place in the post order: a byte, mostly) */
    uint32_t d = t->id - w->done, z = (d << 1) ^ (0u - (d >> 31));
    if (z < 0x80 && ix->npost < ix->cappost) ix->post[ix->npost++] = (uint8_t)z;
    else if (post_put(ix, z) < 0) w->oom = 1;
    w->done = t->id;
  }
  return w->oom || ix->dev.oom ? -1 : 0;
}

/* Does the post order lie in kid's block, after its slots (trim)? Then
   kid's block is not shrunk and the post order is not freed on its own. */
static int post_in_kid(const dp__index *ix) {
  return ix->post && ix->kid && ix->post == (const uint8_t *)(ix->kid + ix->capkid);
}

/* Each array to its final size: what a million-node module keeps through
   every phase should not carry the growth slack. */
static void trim(dp__index *ix) {
  uint32_t c = ix->n + 1;
  void **const arrs[] = ID_ARRAYS(ix);
  const size_t sizes[] = ID_SIZES(ix);
  int shrunk = 1;
  for (int i = 0; i < NID_ARRAYS && c < ix->cap; i++) {
    void *p = dp_realloc(*arrs[i], (size_t)c * sizes[i]);
    if (p) *arrs[i] = p;
    else shrunk = 0; /* (a failed shrink keeps the larger array) */
  }
  if (c < ix->cap && shrunk) ix->cap = c;
  size_t nb = (size_t)ix->nkid * sizeof *ix->kid;
  if (ix->nkid && ix->npost && nb + ix->npost <= (size_t)ix->capkid * sizeof *ix->kid &&
      dp__tail_small(ix->kid, nb + ix->npost, nb + ix->npost) <
          dp__tail_small(ix->kid, nb, nb) + dp__tail_small(ix->post, ix->npost, ix->npost)) {
    /* the post order goes after the child slots, in the room their block
       has (a shrink: nothing moves but these bytes), where that leaves
       fewer bytes read on small pages (dp__tail_small: the last huge page
       of each block, split below): the slots, read by id in every phase,
       ended in one (1.5 MB at a million let calls) and the post order, read
       once a pass from start to end, in another (1 MB); now 0.4 MB of the
       post order does. PlanDevices' analysis there 67 -> 64 ms. At
       100,000 the two are worse together, and stay apart. */
    uint8_t *p = dp_realloc(ix->kid, nb + ix->npost);
    if (p) {
      memcpy(p + nb, ix->post, ix->npost);
      free(ix->post);
      ix->kid = (uint32_t *)(void *)p, ix->capkid = ix->nkid;
      ix->post = p + nb, ix->cappost = ix->npost;
    }
  }
  if (ix->nkid && ix->nkid < ix->capkid) {
    void *p = dp_realloc(ix->kid, nb);
    if (p) ix->kid = p, ix->capkid = ix->nkid;
  }
  if (!post_in_kid(ix) && ix->npost && ix->npost < ix->cappost) {
    void *p = dp_realloc(ix->post, ix->npost);
    if (p) ix->post = p, ix->cappost = ix->npost;
  }
  /* (and the rest of each block's last huge page goes back: these arrays
     and the domains' nodes, made next, are the planner's peak) */
  for (int i = 0; i < NID_ARRAYS && c == ix->cap; i++)
    dp__release_tail(*arrs[i], (size_t)c * sizes[i], (size_t)c * sizes[i]);
  if (post_in_kid(ix)) {
    dp__release_tail(ix->kid, nb + ix->npost, nb + ix->npost);
  } else {
    dp__release_tail(ix->kid, nb, (size_t)ix->capkid * sizeof *ix->kid);
    dp__release_tail(ix->post, ix->npost, ix->cappost);
  }
}

dp__index *dp__index_new(dp_module *m, const dp_config *cfg, dp_err **err) {
  dp__index *ix = dp_calloc(1, sizeof *ix);
  if (!ix) goto oom;
  ix->mod = dp_retain(m);
  if (dp__plan_ops(m->ctx, &ix->ops, err) < 0 || dp__devices_init(&ix->dev, m->ctx, cfg, err) < 0) {
    dp__index_free(ix);
    return NULL;
  }
  ix->fnid = dp_malloc((m->nfuncs + 1) * sizeof *ix->fnid);
  ix->fnpost = dp_malloc((m->nfuncs + 1) * sizeof *ix->fnpost);
  walk w = {.ix = ix, .parent = DP__NONE_ID, .slot = DP__NONE_ID};
  if (!ix->fnid || !ix->fnpost || reserve(ix, &w) < 0) {
    free(w.st);
    goto fail;
  }
  for (uint32_t f = 0; f < m->nfuncs; f++) {
    ix->fnid[f] = ix->n;
    ix->fnpost[f] = ix->npost;
    if (number_fn(&w, m->funcs[f].fn) < 0) {
      free(w.st);
      free(w.aux);
      free(w.pend);
      goto fail;
    }
    ix->nfn++;
  }
  free(w.pend);
  ix->fnid[ix->nfn] = ix->n;
  ix->fnpost[ix->nfn] = ix->npost;
  ix->spare[0] = w.st, ix->nspare[0] = (size_t)w.capst * sizeof *w.st;
  ix->spare[1] = w.aux, ix->nspare[1] = (size_t)w.capaux * sizeof *w.aux;
  /* a fixed position another parent reaches too is rewritten (phase 0
     gives that position a fixed annotation of its own) */
  for (uint32_t id = 0; id < ix->n; id++)
    if ((ix->flag[id] & (F_INPLACE | F_MULTI)) == (F_INPLACE | F_MULTI)) ix->nrewrite++;
  trim(ix);
  return ix;
fail:
  dp__index_free(ix);
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return NULL;
}

/* (capture's node arena takes a block of a megabyte and more: capture.c, give) */
#define KEPT ((size_t)1 << 20)

void *dp__index_take(dp__index *ix, size_t n) {
  int i = ix->nspare[1] > ix->nspare[0];
  void *p = ix->spare[i];
  /* (the other one goes: it should not stay resident through the phases,
     unless capture_last's node arena takes it, keep_spare, which takes a
     block of KEPT bytes and more) */
  if (!ix->keep_spare || ix->nspare[!i] < KEPT) {
    free(ix->spare[!i]);
    ix->spare[!i] = NULL, ix->nspare[!i] = 0;
  }
  /* (kept for capture's arena, a block is not cut from it for much less:
     analysis' dom[] at a million let calls is a few ids, at a million
     branchy calls as large as the walk's demands) */
  if (!p || (ix->keep_spare && ix->nspare[i] >= KEPT && n < ix->nspare[i] / 2))
    return dp_malloc(n ? n : 1);
  ix->spare[i] = NULL, ix->nspare[i] = 0;
  /* (a mapped block is remapped, its pages kept; a small one may move) */
  void *q = dp_realloc(p, n ? n : 1);
  if (!q) free(p);
  return q;
}

/* The cuts that moved the post order (cut_kid_post), for a test that
   plans a module large enough to make one. */
static uint64_t post_moves;

uint64_t dp_debug_capture_post_moves(void) {
  uint64_t n = post_moves;
  post_moves = 0;
  return n;
}

/* The child slots cut to their first nk where the post order lies after
   them in their block (trim): the post order moves down to follow slot nk
   (its bytes are positions, not ids: all of them stay, a reader's place
   in them is rebased by dp__post_rebase) and the block shrinks behind it.
   Only where that gives back at least a huge page: a move of the post
   order (3 MB at a million let calls) for less is not worth it. At a
   million let calls the slots were kept whole to capture's end, 20 MB of
   its peak beside the plan's new nodes. */
static void cut_kid_post(dp__index *ix, uint32_t nk, int tails) {
  size_t was = (size_t)ix->capkid * sizeof *ix->kid + ix->npost, nb = (size_t)nk * sizeof *ix->kid;
  if (dp_huge_size(nb + ix->npost) + ((size_t)2 << 20) > dp_huge_size(was)) return;
  uint8_t *b = (uint8_t *)(void *)ix->kid;
  memmove(b + nb, ix->post, ix->npost);
  post_moves++;
  ix->capkid = nk, ix->post = b + nb; /* (post_in_kid still; a failed shrink keeps the block) */
  uint8_t *p = dp_realloc(b, nb + ix->npost);
  if (!p) return;
  ix->kid = (uint32_t *)(void *)p, ix->post = p + nb;
  if (tails) dp__release_tail(p, nb + ix->npost, nb + ix->npost);
}

void dp__post_rebase(dp__post *p, const uint8_t *old) {
  const uint8_t *now = p->ix->post;
  if (now == old || !p->at) return;
  p->at = now + (p->at - old), p->stop = now + (p->stop - old);
}

void dp__index_cut(dp__index *ix, uint32_t keep, int tails) {
  if (keep >= ix->n || keep + 1 >= ix->cap) return;
  uint32_t nk = ix->koff[keep];
  /* (post is by position, not id: it stays) */
  void **const arrs[] = {(void **)&ix->x, (void **)&ix->koff, (void **)&ix->what,
                         (void **)&ix->flag, (void **)&ix->ann, (void **)&ix->kind};
  const size_t sizes[] = {sizeof *ix->x, sizeof *ix->koff, sizeof *ix->what, sizeof *ix->flag,
                          sizeof *ix->ann, sizeof *ix->kind};
  for (int i = 0; i < 6; i++) {
    void *p = *arrs[i] ? dp_realloc(*arrs[i], ((size_t)keep + 1) * sizes[i]) : NULL;
    if (p) *arrs[i] = p; /* (a failed shrink keeps the larger array) */
    if (p && tails) dp__release_tail(p, ((size_t)keep + 1) * sizes[i], ((size_t)keep + 1) * sizes[i]);
  }
  ix->cap = keep + 1;
  if (nk && nk < ix->capkid && post_in_kid(ix)) {
    cut_kid_post(ix, nk, tails);
  } else if (nk && nk < ix->capkid) {
    void *p = dp_realloc(ix->kid, (size_t)nk * sizeof *ix->kid);
    if (p) ix->kid = p, ix->capkid = nk;
    if (p && tails) dp__release_tail(p, (size_t)nk * sizeof *ix->kid, (size_t)nk * sizeof *ix->kid);
  }
}

/* ---- the post order ---- */

void dp__post_start(dp__post *p, const dp__index *ix, uint32_t fn, uint32_t end) {
  /* (at == stop: dp__post_fn moves to fn first) */
  *p = (dp__post){.ix = ix, .fn = fn - 1, .end = end};
}

int dp__post_fn(dp__post *p) {
  const dp__index *ix = p->ix;
  while (p->at == p->stop) {
    if (++p->fn >= p->end) {
      p->fn = p->end;
      return 0;
    }
    p->at = ix->post + ix->fnpost[p->fn];
    p->stop = ix->post + ix->fnpost[p->fn + 1];
    p->prev = ix->fnid[p->fn];
  }
  return 1;
}

uint32_t dp__post_wide(dp__post *p, uint32_t z) {
  z &= 0x7F;
  for (unsigned sh = 7;; sh += 7) {
    uint32_t b = *p->at++;
    z |= (b & 0x7F) << sh;
    if (!(b & 0x80)) return z;
  }
}

/* A finished id's difference from the one finished before it, zigzag (z),
   put in the post order. 0, or -1 (out of memory). */
static int post_put(dp__index *ix, uint32_t z) {
  if (ix->npost + 5 > ix->cappost) {
    size_t cap = ix->cappost ? ix->cappost * 2 : 64;
    uint8_t *q = dp_realloc(ix->post, cap);
    if (!q) return -1;
    ix->post = q, ix->cappost = cap;
  }
  for (; z >= 0x80; z >>= 7) ix->post[ix->npost++] = (uint8_t)(z | 0x80);
  ix->post[ix->npost++] = (uint8_t)z;
  return 0;
}

void dp__index_free(dp__index *ix) {
  if (!ix) return;
  uint8_t *post = post_in_kid(ix) ? NULL : ix->post; /* (else it goes with kid) */
  free(ix->spare[0]);
  free(ix->spare[1]);
  free(ix->x);
  free(ix->koff);
  free(ix->kid);
  free(ix->what);
  free(ix->kind);
  free(ix->flag);
  free(ix->ann);
  free(ix->wide);
  free(ix->copies);
  free(ix->fnid);
  free(ix->fnpost);
  free(post);
  free(ix->gref);
  free(ix->dups);
  free(ix->marks);
  free(ix->reads);
  dp__ptrmap_free(&ix->map);
  dp__devices_free(&ix->dev);
  dp__plan_ops_free(&ix->ops);
  dp_release(ix->mod);
  free(ix);
}

/* The map of every node (the latest id of a node numbered twice: ids
   ascend, a later one replaces an earlier). 0, or -1 on out of memory. */
static int full_map(dp__index *ix) {
  if (ix->full) return 0;
  dp__ptrmap_free(&ix->map);
  if (dp__ptrmap_reserve(&ix->map, ix->n) < 0) return -1;
  for (uint32_t id = 0; id < ix->n; id++)
    if (dp__ptrmap_set(&ix->map, ix->x[id], id, 0) < 0) return -1;
  ix->full = 1;
  ix->shared = 0;
  ix->dropped = 0;
  return 0;
}

/* The map of the shared nodes, for lookups where a mark cannot be
   trusted. 0, or -1 on out of memory. */
static int shared_map(dp__index *ix) {
  if (ix->full || ix->shared) return 0;
  for (uint32_t id = 0; id < ix->n; id++)
    if ((ix->flag[id] & F_SHARED) && dp__ptrmap_set(&ix->map, ix->x[id], id, 0) < 0) return -1;
  ix->shared = 1;
  return 0;
}

int dp__index_map(dp__index *ix) {
  return ix->dropped ? full_map(ix) : 0;
}

void dp__index_drop_map(dp__index *ix) {
  dp__ptrmap_free(&ix->map);
  ix->full = 0;
  ix->shared = 0;
  ix->dropped = 1;
}

uint32_t dp__index_id(dp__index *ix, const dp_expr *e) {
  if (full_map(ix) < 0) return DP__NONE_ID; /* lookups by expression need every node */
  dp__ptrslot *s = dp__ptrmap_find(&ix->map, e);
  return s ? s->val : DP__NONE_ID;
}

uint32_t dp__index_find(dp__index *ix, const dp_expr *e, int *oom) {
  if (ix->dropped || ix->full) {
    if (full_map(ix) < 0) {
      *oom = 1;
      return DP__NONE_ID;
    }
  } else {
    /* a node numbered once: its mark is its id, when no later walk has
       marked it since (then it names another node or none) */
    uint32_t m = e->mark;
    if (!ix->ndups && m < ix->n && ix->x[m] == e) return ix->flag[m] & F_SHARED ? m : DP__NONE_ID;
    if (shared_map(ix) < 0) {
      *oom = 1;
      return DP__NONE_ID;
    }
  }
  dp__ptrslot *s = dp__ptrmap_find(&ix->map, e);
  return s ? s->val : DP__NONE_ID;
}
