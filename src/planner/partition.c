/*
 * PartitionByVirtualDevice (partition.h): the connected same-device pieces
 * of each function of a planned module hoisted into global functions.
 *
 * Every function body is partitioned, the bodies of the function literals
 * inside it too (innermost first; a Composite or Primitive literal is one
 * unit and is never entered). Per body, over its dataflow graph (function
 * literals are leaves there, replaced by their partitioned versions):
 * 1. every node is a member (a call of an operator, a global or a
 *    Composite function, a tuple, a projection, with a device), a wrapper
 *    (on_device, and a let-bound variable, which stands for its let's value:
 *    transparent), a barrier (anything else with inputs: device_copy, let,
 *    if, ...), or a leaf (a parameter, a constant, a function literal); a
 *    let's body is in the let's block (it always runs after the value), an
 *    if's branches and a match's clauses each in a block of their own, and
 *    regions never cross blocks;
 * 2. in post order (a topological order), each member starts a region and
 *    takes in its producers' regions of the same device and block, unless
 *    a producer's region is restricted: TVM's MergeCompilerRegions, where a
 *    region's restrictions are the regions that reach it through another
 *    region or a barrier (a region of another device is always one);
 *    restrictions of regions that can take no more consumers are dropped,
 *    and a set is taken over, or shared with the set it was made from,
 *    instead of copied where the restrictions of a node are those of one
 *    producer (plus barriers), so that a program with a wide open frontier
 *    (a DAG reading values far back) stays linear ("restriction sets"
 *    below);
 * 3. each region with a call becomes a function (inputs as parameters,
 *    outputs as its result or a tuple of them), and the caller is rebuilt
 *    in a topological order of the graph with each region contracted to
 *    its call, which exists since regions never form a cycle. A let whose
 *    value is hoisted and whose variable only its region reads is dropped
 *    (the region computes the value and its uses); any other let keeps its
 *    variable, bound to the region's output. (Not when the body has a
 *    function literal: its reads of variables are not in the graph.)
 * 4. scopes: a region's call is one node, evaluated where all its uses
 *    meet, so a region that reads a let's variable and also gives a value
 *    used before that let would read the variable out of its scope. The
 *    rebuilt body is checked (dp_check_scopes); the lets whose variables
 *    were read out of scope become block boundaries and the body is
 *    partitioned again; should that still fail, every let body is a block
 *    of its own, where every node of a block lives in the block's scope and
 *    no region can leave it.
 * 5. types: in a typed module each new node is typed as it is made (the
 *    type of the node it replaces; a hoisted function fn(its parameters)
 *    -> its body, its call and projections what they give), so the output
 *    is not type-checked again (only where an input node had no type).
 * The devices: read from the planned module's own annotations, per body
 * over its graph (lexical.c: what capture writes down, checked, which is
 * what planning the module again finds); where a body does not say them
 * so (the module was not planned, or not by this configuration), the whole
 * module is partitioned again from the domains of PlanDevices' phases 0
 * to 2 (which leave a planned module as it is).
 * Everything walks with explicit stacks and arrays indexed by the post
 * order: a 1,000,000-node program is fine.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../pattern/internal.h"
#include "planner.h"
#include "devplan/partition.h"
#include "devplan/infer.h"
#include "devplan/visit.h"

enum { C_LEAF = 0, C_WRAP, C_MEMBER, C_BARRIER };
/* nflag[]: an on_device; a device_copy; a call of another operator, not of
   the dialect (the three as lexical.c reads them); an on_device that says
   nothing; a member's kind; a node with more references than its parent's
   one (F_MANY; without it a node has one reader at most) */
enum { F_ONDEV = DP__LX_ON_DEVICE, F_COPY = DP__LX_COPY, F_OPCALL = DP__LX_OP_CALL, F_NOOP = 4, F_MEMBER = 8,
       F_DIALECT = 32 /* a call of the memory and VM dialect (while the graph is built) */, F_MANY = 64,
       F_LAST = 128 /* (a frame of the graph's build only: the last argument is in the frame) */ };
#define MULTI UINT32_MAX
#define NOPS 4 /* operators whose flags note_node keeps */

/* A region's restrictions (see "restriction sets" below): the first n
   entries of a store that the sets made from one another share. */
typedef struct rstore {
  uint32_t *a, n, cap;  /* entries */
  uint32_t *h, hcap;    /* hash index: entry positions + 1 (made when first looked up) */
  uint32_t refs;        /* the sets that read it */
  uint32_t frozen;      /* a[0 .. frozen) is seen by more than one set: never changed in place */
} rstore;

typedef struct rset {
  rstore *s;            /* NULL: no entries */
  uint32_t n;           /* its entries: s->a[0 .. n) */
  uint32_t alias1;      /* 0, or region R + 1: one more entry, R covered (made from R's set);
                           (+ 1: the zeroed array is every set empty, with no sweep over it) */
} rset;

/* x's alias: DP__DFP_NONE or R. */
static uint32_t alias_of(const rset *x) { return x->alias1 ? x->alias1 - 1 : DP__DFP_NONE; }

typedef struct region {
  dp_global *global;     /* the hoisted function's name (owned) */
  dp_func *fn;           /* the hoisted function (owned; added to the module once the body checks) */
  dp_vdev *vd;           /* where it runs (owned) */
  uint32_t first, nmem;  /* its members: mem[first .. first + nmem) */
  uint32_t nout;
  uint32_t *inputs;      /* what flows in: node indices */
  uint32_t ninputs;
  dp_expr *call;         /* the call in the caller (owned) */
  uint8_t state;         /* caller walk: 0 new, 1 open, 2 done */
} region;

/* The next number of the hoisted functions named <function>_<label>_<n>. */
typedef struct namectr {
  char kind[64];  /* what it is named after */
  char label[64]; /* as a name writes it */
  uint32_t next;
} namectr;

typedef struct pctx {
  /* the module */
  dp_domains *d;        /* the devices, from planning the module again; or */
  dp__lexical *lx;      /* read from the module itself (lexical.c): dev below */
  uint32_t *dev;        /* per node of the body: its device, by its code in codes
                           (planning again: the members' only, classify); grown with
                           the graph, whose build writes the on_devices' (lexical) */
  dp__devcodes codes;   /* the body's devices by code (borrowed: the module's, or
                           interned and held by the domains) */
  int gave_up;          /* lexical.c cannot read a body: plan the module again */
  int unread;           /* an on_device lexical.c cannot read, met as the graph was built */
  dp_vdev *body_vd;     /* the function's virtual_device (where its body lives) */
  dp_partition_by by;
  dp_module *out;
  int typed;            /* the module is typed: the output's new nodes are typed as they are made */
  int untyped;          /* one could not be (a node of the input had no type): infer the output */
  dp_regions *regions;  /* the regions made, for the caller (NULL: not wanted) */
  dp_err *err;
  /* the global function */
  const char *fname;
  namectr *names;
  uint32_t nnames, capnames;
  /* the body: its graph, and the lets whose bodies are blocks of their own */
  int strict;           /* every let body */
  int opens;            /* the graph has an if, a match or a function literal entered (blocks) */
  int fenced;           /* a let is fenced */
  uint8_t *fence;
  uint8_t *kind;        /* per node: its kind (dp_exprkind), read once (g.kind) */
  uint8_t *nflag;       /* per node: F_*, read once (g.note) */
  const dp_attrs *noop_of; /* the on_device attributes last read, and whether they say nothing */
  int noop;
  const dp_expr *ops[NOPS]; /* the operators note_node met last, and their flags (F_ONDEV: read on) */
  uint8_t opflag[NOPS];
  uint32_t nextop;
  /* the graph, in post order (function literals not entered) */
  dp__dfp_graph g;
  uint32_t n;           /* g.n */
  dp_expr **x;          /* g.x */
  uint8_t *cls;
  uint32_t *base;       /* per node: the flow number of the node under any wrappers when it
                           is a member or a barrier (what a read of the node reads:
                           producer), else DP__DFP_NONE; a member's or barrier's own is its
                           flow number */
  uint32_t *fnode;      /* per flow number: its node */
  uint32_t nflow, capflow; /* members and barriers; at most capflow (counted as the graph is
                              built, before the devices say which nodes are members) */
  uint32_t *block;      /* let body / branch the node is in (MULTI: several); NULL: the
                           body is one block (no if, match, function literal or fence) */
  uint32_t *blockmem;   /* its array, allocated for the first body that has blocks */
  /* regions: union-find over flow numbers (the arrays of the regions, indexed by a
     flow number, not a node: a let call is four nodes, two of them flow) */
  uint32_t *uf, *remaining, *stamp, *pos, clock; /* uf: parent + 1, 0 a root (find); pos: an entry's
                                                   place in the set being made (then a hoisted
                                                   function's parameter: param_for, by node) */
  uint8_t *closed, *hascall, *isout;
  uint8_t *state;       /* per node: the caller's rebuild, 0 new, 1 open, 2 done, 3 done and read */
  uint8_t *released;    /* member -> its copy's reference given up (make_function; closed's place) */
  uint32_t *letof;      /* per node of the graph: a let-bound variable -> its let (MULTI:
                           none); written as the graph is built, lexical.c reads it too */
  uint8_t *drop;        /* per node: a let dropped from the caller */
  int has_fnlit;        /* a Composite or Primitive literal with free variables (not entered) */
  rset *restr;          /* per representative (a flow number): its restrictions */
  int sets_freed;       /* make_regions ended, and freed every set (no sweep over restr) */
  /* hoisted regions */
  uint32_t *rid;        /* rep -> region number + 1; once the regions are listed, every
                           flow number's (0: not hoisted; no find after list_regions) */
  region *regs;
  uint32_t nregs;
  uint32_t *mem;        /* members of each region (flow numbers), post order */
  uint32_t *outpos;     /* member -> position among its region's outputs (uf's place) */
  dp_expr **inner;      /* member -> its copy inside the function (owned while its function is made) */
  dp_expr **outexpr;    /* member (output) -> what the caller reads (owned) */
  /* (members, by flow number, from inner on) */
  dp__arena arena;      /* where the output's new calls, lets, variables and projections are made */
  void *arrays;         /* the block the per-node arrays above lie in (alloc_arrays) */
  size_t narrays;       /* its bytes */
  size_t dirty;         /* its first bytes written since it was zeroed (zeroed before an attempt) */
} pctx;

/* A scratch block the pass is done with (n bytes, from the allocator):
   given to the output's node arena where it holds chunks (a megabyte or
   more), so that its pages, resident, take the output's new nodes instead
   of fresh pages (capture gives its domains so); else freed. */
static void give(pctx *c, void *p, size_t n) {
  if (p && n >= ((size_t)1 << 20)) (void)dp__arena_adopt(&c->arena, p, n); /* (out of memory: freed) */
  else free(p);
}

static void set_oom(pctx *c) {
  if (!c->err) c->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
}

/* The device of node v of the body (new reference, or NULL). */
static dp_vdev *device_of(pctx *c, uint32_t v) {
  return c->lx ? dp_retain(dp__devcode_vdev(&c->codes, c->dev[v])) : dp_domains_lookup(c->d, c->x[v], NULL);
}

/* made, typed t when the module is typed: each new node of the output
   takes the type inference would give it (the type of the node it
   replaces, whose children have the types of the old ones), so that the
   output is not type-checked again. NULL stays NULL. */
static dp_expr *typed_as(pctx *c, dp_expr *made, dp_type *t) {
  if (made && c->typed && !made->type) {
    if (t) made->type = dp_retain(t);
    else c->untyped = 1;
  }
  return made;
}

/* Child slot k of node v: a node index, or DP__DFP_NONE (an operator, a global). */
static uint32_t kid(const pctx *c, uint32_t v, uint32_t k) { return c->g.kids[c->g.kstart[v] + k]; }
static uint32_t nslots(const pctx *c, uint32_t v) { return c->g.kstart[v + 1] - c->g.kstart[v]; }

/* The arrays of the attempts at one body, in one zeroed block (allocated
   once a body, before lexical.c reads the devices, whose scratch, 4 bytes
   a node, lies in it too; zeroed again for a further attempt): for a
   large body a block the allocator backs by huge pages (alloc.c), where
   separate arrays of a few MiB each were faulted in a page at a time.
   Each byte of it is a fresh page's at a million calls, so arrays share
   places where their lives do not overlap (reuse_arrays), and those only
   the regions read are indexed by a flow number (a member's or barrier's,
   base[]), not a node: 15 bytes a node and 31 a flow number (a let call
   is four nodes, two of them flow: 23 bytes a node there, 41 by node).
   The first DEAD_BYTES of it are dead once the caller is rebuilt
   (record_all). */
enum { NODE_BYTES = 2 * 4 + 4 + 3, FLOW_BYTES = 16 + 3 * 4 + 3 };
#define DEAD_BYTES(n, f) ((size_t)(f) * 16 + (size_t)(n) * 12)

static int alloc_arrays(pctx *c) {
  size_t n = c->n ? c->n : 1, f = c->capflow ? c->capflow : 1;
  size_t bytes = n * NODE_BYTES + f * FLOW_BYTES;
  if (!(c->arrays = dp_calloc(bytes, 1))) return -1;
  c->narrays = bytes;
  c->dirty = 0;
  return 0;
}

/* An attempt's view of the block (widest first: every array stays aligned). */
static void lay_out_arrays(pctx *c) {
  size_t n = c->n ? c->n : 1, f = c->capflow ? c->capflow : 1;
  char *m = c->arrays;
  memset(m, 0, c->dirty);
  c->dirty = c->narrays;
  c->restr = (rset *)(void *)m; /* (then inner and outexpr; the rebuild's stack in inner) */
  m += f * sizeof *c->restr;
  c->stamp = (uint32_t *)(void *)m; /* (and pos: the rebuild's new nodes later) */
  c->pos = c->stamp + n;
  m += 2 * n * sizeof *c->stamp;
  c->base = (uint32_t *)(void *)m;
  m += n * sizeof *c->base; /* (DEAD_BYTES: record_all) */
  uint32_t **u32[] = {&c->uf, &c->remaining, &c->fnode};
  for (size_t i = 0; i < sizeof u32 / sizeof *u32; i++, m += f * sizeof(uint32_t)) *u32[i] = (uint32_t *)(void *)m;
  uint8_t **u8n[] = {&c->cls, &c->drop, &c->state};
  for (size_t i = 0; i < sizeof u8n / sizeof *u8n; i++, m += n) *u8n[i] = (uint8_t *)m;
  uint8_t **u8f[] = {&c->closed, &c->hascall, &c->isout};
  for (size_t i = 0; i < sizeof u8f / sizeof *u8f; i++, m += f) *u8f[i] = (uint8_t *)m;
  c->nflow = 0;
}

/* Blocks, parents first (reverse post order is topological): an if's
   branches, a match's clauses, a function literal's body and a fenced
   let's body open new blocks.
   0: not reached yet; the body is block 1. A body with no blocks has no
   array (NULL: every node in the body's block, as same_place reads it):
   4 bytes a node neither allocated nor swept. -1: out of memory. */
static int assign_blocks(pctx *c) {
  uint32_t next = 2;
  c->block = NULL;
  if (!c->opens && !c->fenced && !c->strict) return 0;
  if (!c->blockmem && !(c->blockmem = dp_malloc((size_t)c->n * sizeof *c->blockmem))) return -1;
  c->block = c->blockmem;
  memset(c->block, 0, c->n * sizeof *c->block);
  c->block[c->n - 1] = 1;
  for (uint32_t v = c->n; v-- > 0;) {
    int kind = c->kind[v];
    for (uint32_t k = 0; k < nslots(c, v); k++) {
      uint32_t ci = kid(c, v, k);
      if (ci == DP__DFP_NONE) continue;
      int opens = ((kind == DP_IF || kind == DP_MATCH) && k > 0) ||
                  (kind == DP_FUNC && k == ((const dp_func *)c->x[v])->nparams) ||
                  (kind == DP_LET && k == 2 && (c->strict || (c->fence && c->fence[v])));
      uint32_t b = c->block[v] == MULTI ? MULTI : opens ? next++ : c->block[v];
      uint32_t old = c->block[ci];
      c->block[ci] = old == 0 || old == b ? b : MULTI;
    }
  }
  return 0;
}

/* The memory and VM dialect (call_lowered, memory.*, vm.*): instructions of
   the executor with their own device rules (sizes and shapes on the host,
   argument tuples written in place), never part of a piece. */
static int is_dialect_call(const dp_expr *e) {
  if (e->h.kind != DP_CALL || ((const dp_call *)e)->fn->h.kind != DP_OP) return 0;
  const char *name = ((const dp_op *)((const dp_call *)e)->fn)->name;
  return !strcmp(name, "call_lowered") || !strncmp(name, "memory.", 7) || !strncmp(name, "vm.", 3);
}

/* Is e a member's kind? A tuple is, unless an argument tuple of the
   dialect: the graph's build clears it when it finishes a consumer. */
static int is_member_kind(const dp_expr *e) {
  if (e->h.kind == DP_TUPLE || e->h.kind == DP_PROJ) return 1;
  if (e->h.kind != DP_CALL || is_dialect_call(e)) return 0;
  const dp_expr *fn = ((const dp_call *)e)->fn;
  if (fn->h.kind == DP_GLOBAL || dp__dfp_is_unit_fn(fn)) return 1;
  return fn->h.kind == DP_OP && !dp_is_op_call(e, "on_device") && !dp_is_op_call(e, "device_copy");
}

/* An on_device that says nothing (no device, constrains neither its body
   nor its result): phase 0 wraps values so while planning; the caller is
   rebuilt without them, as planning's last phase leaves its output. */
static int is_noop_on_device(const dp_expr *e) {
  if (!dp_is_op_call(e, "on_device")) return 0;
  const dp_attrs *a = ((const dp_call *)e)->attrs;
  const dp_aval *vd = a ? dp_attrs_get(a, "virtual_device") : NULL;
  const dp_aval *cb = a ? dp_attrs_get(a, "constrain_body") : NULL;
  const dp_aval *cr = a ? dp_attrs_get(a, "constrain_result") : NULL;
  int body = !cb || ((cb->kind == DP_AV_BOOL || cb->kind == DP_AV_INT) && cb->u.i != 0);
  int result = cr && (cr->kind == DP_AV_BOOL || cr->kind == DP_AV_INT) && cr->u.i != 0;
  int device = vd && vd->kind == DP_AV_VDEV && vd->u.vdev && !dp_vdev_is_fully_unconstrained(vd->u.vdev);
  return !body && !result && !device;
}

/* The flags of a call of operator fn (e): its name is read once while it
   stays among the last few operators met (a program's calls cycle through
   a few: add, multiply and the on_device around them). */
static uint8_t op_flags(pctx *c, const dp_expr *fn, const dp_expr *e) {
  for (uint32_t i = 0; i < NOPS; i++)
    if (c->ops[i] == fn) return c->opflag[i];
  const char *op = ((const dp_op *)fn)->name;
  uint32_t i = c->nextop++ % NOPS;
  c->ops[i] = fn;
  c->opflag[i] = !strcmp(op, "on_device") ? F_ONDEV : !strcmp(op, "device_copy") ? F_COPY
               : is_dialect_call(e) ? F_DIALECT : F_OPCALL | F_MEMBER;
  return c->opflag[i];
}

/* nflag[v] of node e, as the graph's build meets it. */
static uint8_t note_node(pctx *c, const dp_expr *e) {
  const dp_expr *fn = e->h.kind == DP_CALL ? ((const dp_call *)e)->fn : NULL;
  if (!fn || fn->h.kind != DP_OP) return is_member_kind(e) ? F_MEMBER : 0;
  uint8_t flags = op_flags(c, fn, e);
  if (flags != F_ONDEV) return flags;
  const dp_attrs *a = ((const dp_call *)e)->attrs;
  if (!a || a != c->noop_of) { /* (planning shares one object among the annotations of a device) */
    c->noop = is_noop_on_device(e);
    c->noop_of = a;
  }
  return F_ONDEV | (c->noop ? F_NOOP : 0);
}

/* ---------------- the body's graph ----------------
   Every distinct node of the body but operators, constructors and globals
   (their slots say DP__DFP_NONE), in post order, with its child slots by
   post order index, its kind and its flags (nflag[], note_node: read when
   the walk first meets the node, which it just read to follow it); the
   function literals but Composite and Primitive ones entered (the order
   and the slots of dp__dfp_graph_build with DP__DFP_FNS_PLAIN, which this
   replaces for the partitioner: it made consumers, first-node and
   pre-order arrays nobody here reads, and found shared nodes through a
   pointer map, 9% of the pass's instructions and a fresh table per body).
   A node with other references is found again by its mark (dp_expr.mark:
   its index here, checked against x[], as index.c does): in a DAG it is
   met again only once finished. A child slot is filled when the child is
   finished (its frame knows the slot). An argument tuple of the memory
   dialect is no member: cleared when its consumer is finished. */
typedef struct gfr {
  dp_expr *e;
  union {
    dp_expr *last; /* a call's last argument when it has two or more, read as the node
                      is met: it is followed after the others, whose subtrees (a chain
                      of calls) have put the node out of the cache by then at a
                      million calls */
    uint32_t dev;  /* dev[] of an on_device or a device_copy (one argument), read as it
                      is met (lexical; a copy's: DP__LX_COPY_ENDS), for the same reason */
  } u;
  uint32_t i, n;   /* next child slot, slots followed */
  uint32_t kbase;  /* its slots on the scratch list start here, just past its own slot
                      on it (kbase - 1; the root's kbase is 0: no slot) */
  uint8_t note;    /* nflag[], F_MANY included: read as the node is met */
  uint8_t kind;    /* its kind: a deep node (a let, whose body is its last slot) is
                      finished long after it was met, its node cold by then at a
                      million calls (0.9 LL misses a call on let); the frame has both */
} gfr;
_Static_assert(sizeof(gfr) <= 32, "a frame a level: at a million lets the stack is a million frames");

typedef struct gbuild {
  gfr *st;
  uint32_t sp, capst;
  uint32_t *scratch;   /* the slots of the nodes on the stack */
  uint32_t nscratch, capscratch;
  uint32_t cap, capkids; /* of x, kind, note, kstart; of kids */
} gbuild;

/* Child i of e (calls and lets read here, the rest by expr.c). */
static dp_expr *child_of(const dp_expr *e, uint32_t i) {
  if (e->h.kind == DP_CALL) return i ? ((const dp_call *)e)->args[i - 1] : ((const dp_call *)e)->fn;
  if (e->h.kind == DP_LET) {
    const dp_let *l = (const dp_let *)e;
    return i == 0 ? &l->var->e : i == 1 ? l->value : l->body;
  }
  return dp_expr_child(e, i);
}

/* The child slots followed: none of a Composite or Primitive literal. */
static uint32_t slots_of(const dp_expr *e) {
  if (e->h.kind == DP_CALL) return 1 + ((const dp_call *)e)->nargs;
  if (e->h.kind == DP_LET) return 3;
  if (e->h.kind == DP_FUNC && dp__dfp_is_unit_fn(e)) return 0;
  return dp_expr_nchildren(e);
}

/* The capacity an array of the graph's build grows to for need items of
   elem bytes, from cap: eightfold while it is small (under a megabyte
   realloc copies it: an eighth of the final size copied, not a half),
   twofold once it is large (glibc maps a block of a megabyte and more on
   its own, main's threshold, and realloc moves its pages with mremap, no
   copy: eightfold only left up to seven eighths of the block never used,
   at a million calls 100 MB of the 134 MB of the child slots). */
enum { BIG = 1 << 20 };
static uint32_t grown_cap(uint32_t cap, uint32_t need, size_t elem) {
  uint64_t want = (uint64_t)cap * ((uint64_t)cap * elem < BIG ? 8 : 2);
  return want > need && want <= UINT32_MAX / 2 ? (uint32_t)want : need;
}

static int grow_big(void **arr, uint32_t *cap, uint32_t need, size_t elem) {
  return need <= *cap ? 0 : dp_grow(arr, cap, grown_cap(*cap, need, elem), elem);
}

/* The device lexical.c reads of annotation e (flags note) for dev[]
   (DP__DEVCODE_OOM: out of memory); c->unread once it cannot read one. */
static uint32_t annotation_dev(pctx *c, dp_expr *e, uint8_t note) {
  if (!c->lx || !(note & (F_ONDEV | F_COPY)) || c->unread) return 0;
  dp_vdev *vd = NULL, *dst = NULL;
  int r = note & F_ONDEV ? dp__lexical_on_device(c->lx, e, &vd) : dp__lexical_copy(c->lx, e, &vd, &dst);
  if (r < 0) return DP__DEVCODE_OOM;
  c->unread = r == 0;
  uint32_t code = r ? dp__devcode(&c->codes, vd) : 0;
  if (!(note & F_COPY) || !r || code == DP__DEVCODE_OOM) return code;
  uint32_t to = dp__devcode(&c->codes, dst);
  return to == DP__DEVCODE_OOM ? to : DP__LX_COPY_ENDS(to, code);
}

/* Meets e, not in the graph yet (its slot on the scratch list just
   pushed, but for the root's): its frame pushed, its flags read. */
static int discover(pctx *c, gbuild *b, dp_expr *e) {
  if (b->sp == b->capst && grow_big((void **)&b->st, &b->capst, b->sp + 1, sizeof *b->st) < 0) return -1;
  uint8_t note = (uint8_t)(note_node(c, e) | (e->h.rc > 1 ? F_MANY : 0));
  gfr *f = &b->st[b->sp++];
  *f = (gfr){e, {NULL}, 0, slots_of(e), b->nscratch, note, (uint8_t)e->h.kind};
  if (note & (F_ONDEV | F_COPY)) {
    if ((f->u.dev = annotation_dev(c, e, note)) == DP__DEVCODE_OOM) return -1;
  } else if (f->kind == DP_CALL && f->n > 2) {
    f->u.last = ((const dp_call *)e)->args[f->n - 2];
    f->note |= F_LAST;
  }
  return 0;
}

/* The child in the next slot of frame f (its node, or its last argument
   from the frame). */
static dp_expr *next_child(gfr *f) {
  uint32_t i = f->i++;
  return (f->note & F_LAST) && i + 1 == f->n ? f->u.last : child_of(f->e, i);
}

/* The graph's per-node arrays (and letof, dev) grown to hold need nodes,
   all to one capacity (x's, the widest, decides the step). */
static int grow_nodes(pctx *c, gbuild *b, uint32_t need) {
  dp__dfp_graph *g = &c->g;
  uint32_t want = grown_cap(b->cap, need, sizeof *g->x);
  void **arrs[] = {(void **)&g->x, (void **)&g->kstart, (void **)&g->kind, (void **)&g->note,
                   (void **)&c->letof, (void **)&c->dev};
  const size_t elems[] = {sizeof *g->x, sizeof *g->kstart, 1, 1, sizeof *c->letof, sizeof *c->dev};
  uint32_t cap = b->cap;
  for (size_t i = 0; i < sizeof arrs / sizeof *arrs; i++) {
    cap = b->cap;
    if (dp_grow(arrs[i], &cap, want, elems[i]) < 0) return -1;
  }
  b->cap = cap; /* (the same for each: dp_grow's steps do not depend on elem) */
  return 0;
}

/* An array of the build cut to its n items once the build is done: the
   capacity a growth step left past them is given back (realloc shrinks a
   large block in place) before the attempt's arrays are allocated. (A
   shrink that fails leaves the array as it was.) */
static void fit(void **arr, uint32_t cap, uint32_t n, size_t elem) {
  if (!*arr || n >= cap || (size_t)cap * elem < BIG) return;
  void *a = dp_realloc(*arr, (size_t)(n ? n : 1) * elem);
  if (a) *arr = a;
}

/* The top frame's node is done: numbered, its slots moved to kids. */
static int finish_node(pctx *c, gbuild *b) {
  dp__dfp_graph *g = &c->g;
  gfr f = b->st[--b->sp];
  uint32_t v = g->n, nk = b->nscratch - f.kbase, total = v ? g->kstart[v] : 0;
  if (v + 1 >= b->cap && grow_nodes(c, b, v + 2) < 0) return -1;
  if (total + nk > b->capkids && grow_big((void **)&g->kids, &b->capkids, total + nk, sizeof *g->kids) < 0)
    return -1;
  for (uint32_t k = 0; k < nk; k++) g->kids[total + k] = b->scratch[f.kbase + k]; /* (a few: no memcpy) */
  g->kstart[v] = total;
  g->kstart[v + 1] = total + nk;
  g->x[v] = f.e;
  g->kind[v] = f.kind;
  g->note[v] = (uint8_t)(f.note & ~F_LAST);
  if (f.kind == DP_IF || f.kind == DP_MATCH || (f.kind == DP_FUNC && nk)) c->opens = 1;
  if (!(f.note & F_ONDEV) && ((f.note & F_MEMBER) || nk)) c->capflow++; /* (classify's members and
                                                                           barriers are among these) */
  c->letof[v] = MULTI;
  if (f.kind == DP_LET && nk == 3 && g->kids[total] != DP__DFP_NONE && g->kids[total + 1] != DP__DFP_NONE)
    c->letof[g->kids[total]] = v; /* (its variable, finished before it) */
  if (f.note & (F_ONDEV | F_COPY)) c->dev[v] = f.u.dev; /* (for lexical.c: its pass over the
                                                           graph would read the node cold) */
  if (f.note & F_DIALECT)
    for (uint32_t k = 0; k < nk; k++) {
      uint32_t t = g->kids[total + k];
      if (t != DP__DFP_NONE && g->kind[t] == DP_TUPLE) g->note[t] &= (uint8_t)~F_MEMBER;
    }
  if (f.note & F_MANY) f.e->mark = v; /* (only a shared node is met again) */
  g->n = v + 1;
  b->nscratch = f.kbase;
  if (f.kbase) b->scratch[f.kbase - 1] = v;
  return 0;
}

/* c->g over body root; kind[] and nflag[] from it. */
static int build_graph(pctx *c, dp_expr *root) {
  dp__dfp_graph *g = &c->g;
  memset(g, 0, sizeof *g);
  g->index = g->found = DP__PTRMAP_INIT;
  g->enter_fns = DP__DFP_FNS_PLAIN;
  gbuild b = {NULL, 0, 0, NULL, 0, 0, 0, 0};
  c->capflow = 0;
  int rc = discover(c, &b, root);
  while (rc == 0 && b.sp) {
    gfr *f = &b.st[b.sp - 1];
    if (f->i == f->n) {
      rc = finish_node(c, &b);
      continue;
    }
    dp_expr *kid = next_child(f);
    if (b.nscratch == b.capscratch &&
        grow_big((void **)&b.scratch, &b.capscratch, b.nscratch + 1, sizeof *b.scratch) < 0) {
      rc = -1;
      break;
    }
    uint32_t slot = b.nscratch++;
    b.scratch[slot] = DP__DFP_NONE;
    if (dp__dfp_graph_skips(kid)) continue;
    uint32_t m = kid->mark;
    if (kid->h.rc > 1 && m < g->n && g->x[m] == kid) {
      b.scratch[slot] = m;
      continue;
    }
    rc = discover(c, &b, kid);
  }
  give(c, b.st, (size_t)b.capst * sizeof *b.st); /* (a frame a level: a deep body's is large) */
  give(c, b.scratch, (size_t)b.capscratch * sizeof *b.scratch);
  if (rc < 0) {
    dp__dfp_graph_free(g);
    return -1;
  }
  uint32_t n = g->n, nk = g->kstart[n];
  fit((void **)&g->x, b.cap, n, sizeof *g->x);
  fit((void **)&g->kstart, b.cap, n + 1, sizeof *g->kstart);
  fit((void **)&g->kind, b.cap, n, 1);
  fit((void **)&g->note, b.cap, n, 1);
  fit((void **)&c->letof, b.cap, n, sizeof *c->letof);
  fit((void **)&c->dev, b.cap, n, sizeof *c->dev);
  fit((void **)&g->kids, b.capkids, nk, sizeof *g->kids);
  c->kind = g->kind;
  c->nflag = g->note;
  return 0;
}

/* What a member's device is compared by (dev[v]: read from the module,
   or put there by classify; no array of keys, 8 bytes a node). */
static uintptr_t key_of(const pctx *c, const dp_vdev *vd) {
  if (c->by == DP_PART_DEVICE_TYPE) return (uintptr_t)vd->device_type;
  if (c->by == DP_PART_TARGET && vd->target) return (uintptr_t)vd->target;
  return (uintptr_t)vd;
}

/* What wrapper v stands for: on_device its argument, a let-bound variable
   its let's value (DP__DFP_NONE: nothing). */
static uint32_t wrapped(const pctx *c, uint32_t v) {
  if (c->letof[v] != MULTI) return kid(c, c->letof[v], 1);
  return kid(c, v, 1);
}

static uint32_t producer(const pctx *c, uint32_t v, uint32_t k);
static int flows(const pctx *c, uint32_t v);

/* The reads of member or barrier v counted (remaining[], the regions'
   readers, make_regions), its children's bases found already. */
static void count_reads(pctx *c, uint32_t v) {
  if (!flows(c, v)) return;
  for (uint32_t k = 0; k < nslots(c, v); k++) {
    uint32_t p = producer(c, v, k);
    if (p != DP__DFP_NONE) c->remaining[p]++;
  }
}

/* base[v]: the flow number of the node under v's wrappers, DP__DFP_NONE where that is a leaf
   (so that producer reads one array at the child, not base[] and then
   cls[] at the base: both cold at a million calls, read in five passes).
   A variable comes before its value in post order, so chains are followed
   here, after classify; each node's base is found once (a stack of the
   chain being resolved). Each node's children come before it, their bases
   found: its reads are counted in the same pass (a sweep over the graph
   less, cold at a million calls). */
static int resolve_bases(pctx *c) {
  uint8_t *done = dp_calloc(c->n ? c->n : 1, 1);
  uint32_t *chain = NULL, nchain = 0, cap = 0;
  int rc = done ? 0 : -1;
  for (uint32_t v = 0; v < c->n && rc == 0; v++) {
    uint32_t w = v;
    nchain = 0;
    while (!done[w] && c->cls[w] == C_WRAP && wrapped(c, w) != DP__DFP_NONE) {
      if (dp_grow((void **)&chain, &cap, nchain + 1, sizeof *chain) < 0) {
        rc = -1;
        break;
      }
      chain[nchain++] = w;
      w = wrapped(c, w);
    }
    uint32_t b = done[w] || flows(c, w) ? c->base[w] : DP__DFP_NONE; /* (classify numbered the flow) */
    done[w] = 1;
    c->base[w] = b;
    while (nchain) {
      uint32_t u = chain[--nchain];
      c->base[u] = b;
      done[u] = 1;
    }
    if (rc == 0) count_reads(c, v);
  }
  free(chain);
  give(c, done, c->n);
  return rc;
}

/* Member or barrier v's flow number, the next (post order: a producer's is
   less than its reader's, as its node's index is). */
static void number_flow(pctx *c, uint32_t v) {
  c->fnode[c->nflow] = v;
  c->base[v] = c->nflow++;
}

static int classify(pctx *c) {
  for (uint32_t v = 0; v < c->n; v++) { /* (base[]: resolve_bases writes every node's; uf[]: zero is a root) */
    if (c->kind[v] == DP_FUNC && nslots(c, v) == 0 && !c->has_fnlit) {
      uint32_t nfree = 0;
      dp_var **fv = dp_free_vars(c->x[v], &nfree);
      c->has_fnlit = !fv || nfree > 0; /* (out of memory: as if it read some) */
      free(fv);
    }
    if (c->letof[v] != MULTI || (c->nflag[v] & F_ONDEV)) {
      c->cls[v] = C_WRAP;
      continue;
    }
    if ((c->nflag[v] & F_MEMBER) && (!c->block || c->block[v] != MULTI)) {
      dp_vdev *vd = device_of(c, v);
      if (vd && !dp_vdev_is_fully_unconstrained(vd)) {
        c->cls[v] = C_MEMBER;
        if (!c->lx && (c->dev[v] = dp__devcode(&c->codes, vd)) == DP__DEVCODE_OOM) /* (the device
                                                       compared; lexical.c's are there already) */
          return dp_release(vd), -1;
        c->hascall[c->nflow] = c->kind[v] == DP_CALL;
        number_flow(c, v);
        dp_release(vd); /* interned and held by the domains: dev[v] stays valid */
        continue;
      }
      dp_release(vd);
    }
    c->cls[v] = nslots(c, v) ? C_BARRIER : C_LEAF;
    if (c->cls[v] == C_BARRIER) number_flow(c, v);
  }
  return 0;
}

/* The node child k of v reads (under its wrappers), or DP__DFP_NONE when it
   is a leaf, an operator or a global. */
static uint32_t producer(const pctx *c, uint32_t v, uint32_t k) {
  uint32_t ci = kid(c, v, k);
  if (ci == DP__DFP_NONE || (k == 0 && c->kind[v] == DP_LET)) return DP__DFP_NONE;
  return c->base[ci];
}

static int flows(const pctx *c, uint32_t v) { return c->cls[v] == C_MEMBER || c->cls[v] == C_BARRIER; }

/* ---------------- regions ---------------- */

/* uf[v]: v's parent + 1, 0 at a root (the zeroed block is every node its
   own region: no pass to write them, cold at a million calls). */
static uint32_t find(pctx *c, uint32_t v) {
  while (c->uf[v]) {
    uint32_t p = c->uf[v] - 1;
    if (c->uf[p]) c->uf[v] = c->uf[p]; /* (halving: v points to its grandparent) */
    v = c->uf[v] - 1;
  }
  return v;
}

/* ---- restriction sets ----
   Entries ENTRY(r, covered): r was a region's representative when it went
   in; covered: r's own restrictions were all in the set then (they are set
   once, when r's representative is visited, and only grow into a new
   representative's), so while r stays a representative each of them is in
   the set or closed. Entries may be stale (r joined a region since) or
   closed: a set made from another resolves and drops them, and a lookup
   only trusts a covered representative. (A let variable's value may come
   after a reader in the post order: such a producer's set is made later,
   so it is never covered, and a node reading one makes its set by copying.)
   A set is a view: the first n entries of a store that the sets made from
   one another share, plus at most one region R standing for one more
   covered entry (alias: the set was made from R's, as R's plus R). A set
   only grows at the end of its store (else it is copied first), and an
   entry that another set also sees is never changed in place, so a set
   made from another costs nothing, whatever the other's size. That lets
   the common cases make no copy (copying made the walk quadratic where
   many regions stay open, as on branchy modules):
   - a node whose producer region b of its place covers every other
     producer region q (q covered in b's set, or q's set made from a region
     covered there): its restrictions are b's plus those q, b joins its
     region and no other does, so it takes b's set over;
   - else a node (a barrier, or a member starting a region) whose producer
     region b of another place or a barrier covers every other producer
     region the same way: its set is made from b's (b's plus b) plus those
     q, and no producer joins it. */
#define ENTRY(r, covered) ((r) << 1 | (uint32_t)(covered))

/* What a lookup in a set finds for r. */
enum { R_ABSENT = 0, R_STALE, R_COVERED };

/* Where region r's entry is looked for first in a hash index of mask + 1
   slots (16 at least): aligned runs of 16 regions hash apart, and the 16 of
   an aligned run take the 16 slots of an aligned run, one cache line.
   Sets read regions near one another in turn (a chain of lets: each let
   covers the next one's region), so at a million calls the lookups of a
   store of a million entries read a line every 16 regions, where a hash
   of each region read a cold line each (7-15% of the pass on let and
   branchy modules, perf at a million calls). */
static uint32_t slot_of(uint32_t r, uint32_t mask) { return (((r >> 4) * 0x9E3779B1u) << 4 | (r & 15)) & mask; }

/* The hash index of store s (slots hold entry positions + 1; each region
   is at most once in a store), made on the first lookup and kept up to
   date after. */
static void index_put(rstore *s, uint32_t pos) {
  uint32_t mask = s->hcap - 1, i = slot_of(s->a[pos] >> 1, mask);
  while (s->h[i]) i = (i + 1) & mask;
  s->h[i] = pos + 1;
}

static int index_build(rstore *s) {
  uint32_t cap = 16;
  while (cap < 2 * s->n + 2) cap *= 2;
  uint32_t *h = dp_calloc(cap, sizeof *h);
  if (!h) return -1;
  free(s->h);
  s->h = h;
  s->hcap = cap;
  for (uint32_t i = 0; i < s->n; i++) index_put(s, i);
  return 0;
}

static void rset_free(rset *x) {
  rstore *s = x->s;
  if (s && --s->refs == 0) {
    free(s->a);
    free(s->h);
    free(s);
  }
  *x = (rset){NULL, 0, 0};
}

/* x's entries copied into a store of its own. */
static int rset_copy(rset *x) {
  rstore *s = dp_calloc(1, sizeof *s);
  uint32_t cap = x->n + 4;
  if (!s || !(s->a = dp_malloc(cap * sizeof *s->a))) return free(s), -1;
  if (x->n) memcpy(s->a, x->s->a, x->n * sizeof *s->a);
  s->n = x->n;
  s->cap = cap;
  s->refs = 1;
  uint32_t alias1 = x->alias1;
  rset_free(x);
  x->s = s;
  x->n = s->n;
  x->alias1 = alias1;
  return 0;
}

/* Makes x the only reader of the end of its store (where it grows): a
   store of its own unless it sees every entry of its store. */
static int rset_own_end(rset *x) {
  return x->s && x->n == x->s->n ? 0 : rset_copy(x);
}

/* Appends an entry (its region not in x yet). */
static int rset_push(rset *x, uint32_t entry) {
  if (rset_own_end(x) < 0) return -1;
  rstore *s = x->s;
  if (dp_grow8((void **)&s->a, &s->cap, s->n + 1, sizeof *s->a) < 0) return -1;
  s->a[s->n++] = entry;
  x->n = s->n;
  if (!s->h) return 0;
  if (2 * s->n + 2 > s->hcap) return index_build(s);
  index_put(s, s->n - 1);
  return 0;
}


/* Position of r's entry in set x (its alias not looked at), or UINT32_MAX
   (-2: out of memory). */
static uint32_t rset_find(rset *x, uint32_t r) {
  rstore *s = x->s;
  if (!x->n) return UINT32_MAX;
  if (!s->h && index_build(s) < 0) return UINT32_MAX - 1;
  uint32_t mask = s->hcap - 1, i = slot_of(r, mask);
  for (; s->h[i]; i = (i + 1) & mask)
    if (s->a[s->h[i] - 1] >> 1 == r) return s->h[i] - 1 < x->n ? s->h[i] - 1 : UINT32_MAX;
  return UINT32_MAX;
}

/* Adds r to x covered (there already: marks it covered). */
static int rset_cover(rset *x, uint32_t r) {
  uint32_t pos = rset_find(x, r);
  if (pos == UINT32_MAX - 1) return -1;
  if (pos == UINT32_MAX) return rset_push(x, ENTRY(r, 1));
  if (x->s->a[pos] & 1) return 0;
  if (pos < x->s->frozen && rset_copy(x) < 0) return -1; /* (another set sees it) */
  x->s->a[pos] |= 1;
  return 0;
}

/* x's alias made an entry: x stops being made from one set alone. A
   closed alias is dropped instead (add_set drops closed entries too): on
   a chain of lets each let's set is made from the next one's, whose alias
   is closed by then, and each such entry was kept in one store shared
   down the chain (a million entries and their index at a million lets). */
static int rset_unalias(const pctx *c, rset *x) {
  uint32_t r = alias_of(x);
  if (r == DP__DFP_NONE) return 0;
  x->alias1 = 0;
  if (c->closed[r]) return 0;
  if (rset_cover(x, r) < 0) return x->alias1 = r + 1, -1;
  return 0;
}

/* x, made from the set of region b: b's entries (shared) and b. */
static int rset_made_from(pctx *c, rset *x, uint32_t b) {
  rset *from = &c->restr[b];
  if (rset_unalias(c, from) < 0) return -1; /* (b's own alias an entry of b's, once) */
  rset_free(x);
  if (from->s) {
    x->s = from->s;
    x->n = from->n;
    x->s->refs++;
    if (x->s->frozen < x->n) x->s->frozen = x->n; /* both see these now */
  }
  x->alias1 = b + 1;
  return 0;
}

/* What representative r is in the restrictions of region q. -1: out of memory. */
static int lookup_restr(pctx *c, uint32_t q, uint32_t r) {
  rset *x = &c->restr[q];
  if (r == alias_of(x)) return R_COVERED;
  uint32_t pos = rset_find(x, r);
  if (pos == UINT32_MAX - 1) return -1;
  return pos == UINT32_MAX ? R_ABSENT : x->s->a[pos] & 1 ? R_COVERED : R_STALE;
}

/* Adds region r (a representative) to acc unless closed; there already:
   marks it covered when this entry is. (acc's store is its own.) */
static int add_restr(pctx *c, rset *acc, uint32_t r, int covered) {
  if (c->closed[r]) return 0;
  if (c->stamp[r] == c->clock) {
    if (covered) acc->s->a[c->pos[r]] |= 1;
    return 0;
  }
  c->stamp[r] = c->clock;
  c->pos[r] = acc->n;
  return rset_push(acc, ENTRY(r, covered));
}

/* Adds the entries of set x, resolved. */
static int add_set(pctx *c, rset *acc, const rset *x) {
  for (uint32_t j = 0; j < x->n; j++) {
    uint32_t e = x->s->a[j], r = find(c, e >> 1);
    if (add_restr(c, acc, r, r == e >> 1 && (e & 1)) < 0) return -1;
  }
  uint32_t a = alias_of(x);
  if (a == DP__DFP_NONE) return 0;
  uint32_t r = find(c, a);
  return add_restr(c, acc, r, r == a);
}

/* Are flow numbers a and b members of one device and block? */
static int same_place(const pctx *c, uint32_t a, uint32_t b) {
  uint32_t x = c->fnode[a], y = c->fnode[b];
  if (c->cls[x] != C_MEMBER || c->cls[y] != C_MEMBER || (c->block && c->block[x] != c->block[y])) return 0;
  return c->dev[x] == c->dev[y] || (c->by != DP_PART_VIRTUAL_DEVICE &&
                                    key_of(c, dp__devcode_vdev(&c->codes, c->dev[x])) ==
                                    key_of(c, dp__devcode_vdev(&c->codes, c->dev[y])));
}

/* Producer region p joins v's. */
static void join(pctx *c, uint32_t p, uint32_t v) {
  c->uf[p] = v + 1;
  c->remaining[v] += c->remaining[p];
  c->hascall[v] |= c->hascall[p];
}

/* Region p can take no more consumers: its set is never read again. */
static void close_region(pctx *c, uint32_t p) {
  c->closed[p] = 1;
  rset_free(&c->restr[p]);
}

/* Does b's set cover every other producer region of v, each covered there
   or with a set made from a region covered there (an extra: counted)?
   1 yes, 0 no, -1 out of memory. */
static int covers(pctx *c, uint32_t b, uint32_t v, const dp__dfp_u32s *parents, uint32_t *nextra) {
  *nextra = 0;
  for (uint32_t i = 0; i < parents->n; i++) {
    uint32_t q = parents->a[i];
    if (q == b) continue;
    int in = lookup_restr(c, b, q);
    if (in < 0) return -1;
    if (in == R_COVERED) continue;
    if (same_place(c, q, v)) return 0; /* (it would join v) */
    const rset *s = &c->restr[q];
    uint32_t from = alias_of(s);
    int inside = from != DP__DFP_NONE ? (find(c, from) == from ? lookup_restr(c, b, from) : R_ABSENT)
                 : s->n == 0 ? R_COVERED : R_ABSENT;
    if (inside < 0) return -1;
    if (inside != R_COVERED) return 0;
    (*nextra)++;
  }
  return 1;
}

/* The cases without a copy (above), at flow number v. 1 done, 0 not one
   of them, -1 error. */
static int take_over(pctx *c, uint32_t v, const dp__dfp_u32s *parents) {
  for (uint32_t i = 0; i < parents->n; i++) /* (a variable's value may come later: its set is not made yet) */
    if (parents->a[i] > v) return 0;
  /* (b: tried among the first few producers of v's place, then of another) */
  uint32_t b = DP__DFP_NONE, nextra = 0;
  for (int other = 0; other < 2 && b == DP__DFP_NONE; other++) {
    uint32_t tries = 0;
    for (uint32_t t = 0; t < parents->n && b == DP__DFP_NONE && tries < 4; t++) {
      uint32_t cand = parents->a[t];
      if (same_place(c, cand, v) == other) continue;
      tries++;
      int ok = covers(c, cand, v, parents, &nextra);
      if (ok < 0) return -1;
      if (ok) b = cand;
    }
  }
  if (b == DP__DFP_NONE) return 0;
  rset_free(&c->restr[v]);
  if (same_place(c, b, v)) {
    join(c, b, v);
    c->restr[v] = c->restr[b];
    c->restr[b] = (rset){NULL, 0, 0};
  } else if (rset_made_from(c, &c->restr[v], b) < 0) {
    return -1;
  }
  if (nextra && rset_unalias(c, &c->restr[v]) < 0) return -1;
  for (uint32_t i = 0; nextra && i < parents->n; i++) {
    uint32_t q = parents->a[i];
    if (q != b && lookup_restr(c, v, q) != R_COVERED && rset_cover(&c->restr[v], q) < 0) return -1;
  }
  return 1;
}

/* One member or barrier v (a node), in topological order; its region's
   arrays are indexed by its flow number f. */
static int visit(pctx *c, uint32_t v, dp__dfp_u32s *parents, dp__dfp_u32s *joins) {
  uint32_t ns = nslots(c, v), f = c->base[v];
  parents->n = joins->n = 0;
  c->clock++;
  for (uint32_t k = 0; k < ns; k++) {
    uint32_t p = producer(c, v, k);
    if (p == DP__DFP_NONE) continue;
    uint32_t r = find(c, p);
    if (c->stamp[r] != c->clock) {
      c->stamp[r] = c->clock;
      if (dp__dfp_u32s_push(parents, r) < 0) return -1;
    }
  }
  int taken = take_over(c, f, parents);
  if (taken < 0) return -1;
  if (!taken) {
    rset acc = {NULL, 0, 0};
    c->clock++; /* the stamp now marks acc */
    for (uint32_t i = 0; i < parents->n; i++)
      if (add_set(c, &acc, &c->restr[parents->a[i]]) < 0) return rset_free(&acc), -1;
    for (uint32_t i = 0; i < parents->n; i++) { /* all their restrictions are in: covered, once made */
      uint32_t p = parents->a[i];
      if (!same_place(c, p, f) && add_restr(c, &acc, p, p < f) < 0) return rset_free(&acc), -1;
    }
    for (uint32_t i = 0; i < parents->n; i++) {
      uint32_t p = parents->a[i];
      if (same_place(c, p, f) && c->stamp[p] != c->clock && dp__dfp_u32s_push(joins, p) < 0)
        return rset_free(&acc), -1;
    }
    for (uint32_t i = 0; i < joins->n; i++) { /* the producers' regions join v's */
      join(c, joins->a[i], f);
      rset_free(&c->restr[joins->a[i]]);
    }
    rset_free(&c->restr[f]);
    c->restr[f] = acc;
  }
  /* v's reads are done: regions with no reader left are closed */
  for (uint32_t k = 0; k < ns; k++) {
    uint32_t p = producer(c, v, k);
    if (p == DP__DFP_NONE) continue;
    uint32_t r = find(c, p);
    if (c->remaining[r] && --c->remaining[r] == 0) close_region(c, r);
  }
  return 0;
}

static int make_regions(pctx *c) {
  /* (the reads are counted: resolve_bases) */
  uint32_t root = c->base[c->n - 1];
  if (root != DP__DFP_NONE) c->remaining[root]++; /* the function's result: never closed */
  dp__dfp_u32s parents = {NULL, 0, 0}, joins = {NULL, 0, 0};
  int rc = 0;
  for (uint32_t v = 0; v < c->n && rc == 0; v++) {
    if (!flows(c, v)) continue;
    rc = visit(c, v, &parents, &joins);
    if (rc == 0 && c->remaining[c->base[v]] == 0) close_region(c, c->base[v]);
  }
  free(parents.a);
  free(joins.a);
  /* every read done, every region is closed (its set freed) but the
     function result's: the sets are gone without a sweep over them (a
     million-node body's array is far larger than the cache) */
  if (rc == 0) {
    if (root != DP__DFP_NONE) rset_free(&c->restr[find(c, root)]);
    c->sets_freed = 1;
  }
  return rc;
}

/* ---------------- the hoisted functions ---------------- */

/* Is flow number f (or DP__DFP_NONE) a hoisted member? (Once the regions
   are listed: rid[] at every flow number, 0 at a barrier's.) */
static int fhoisted(const pctx *c, uint32_t f) { return f != DP__DFP_NONE && c->rid[f] != 0; }

/* Is node v (or DP__DFP_NONE) a hoisted member? (A member is its own
   base, its flow number.) */
static int hoisted(const pctx *c, uint32_t v) {
  return v != DP__DFP_NONE && c->cls[v] == C_MEMBER && c->rid[c->base[v]] != 0;
}

/* The region of hoisted member f (a flow number). */
static region *region_of(pctx *c, uint32_t f) { return &c->regs[c->rid[f] - 1]; }

/* Which lets the caller drops (the value hoisted, the variable read, and
   only by members of the value's region; vout: read from anywhere else,
   through any chain of wrappers), and which members are outputs (read
   from outside their region, but by a dropped let), in one pass over the
   graph (each was a pass of cold reads at a million calls): every read of
   a let's variable is in its body, which comes before the let in post
   order, so a let is decided when the pass reaches it, after its own
   reads (its body may be the variable) and before its outputs. */
static void mark_drop(pctx *c, uint32_t v, const uint8_t *read, const uint8_t *vout) {
  uint32_t x = kid(c, v, 0);
  if (x == DP__DFP_NONE || c->letof[x] != v) return; /* (no variable of its own: kept) */
  c->drop[v] = (uint8_t)(read[x] && !vout[x] && !c->has_fnlit && fhoisted(c, c->base[x]));
}

static int mark_reads(pctx *c) {
  /* per variable: read at all, and read from outside its value's region */
  uint8_t *read = dp_calloc(c->n ? c->n : 1, 1), *vout = dp_calloc(c->n ? c->n : 1, 1);
  if (!read || !vout) {
    free(read);
    free(vout);
    return -1;
  }
  /* the function's result read through variables: read from outside */
  for (uint32_t w = c->n - 1; w != DP__DFP_NONE && c->cls[w] == C_WRAP; w = wrapped(c, w))
    if (c->letof[w] != MULTI) vout[w] = 1;
  for (uint32_t v = 0; v < c->n; v++) {
    if (!flows(c, v)) continue;
    uint32_t id = c->rid[c->base[v]]; /* (v's region number + 1; 0: not hoisted) */
    uint32_t ns = nslots(c, v);
    for (uint32_t k = 0; k < ns; k++) {
      uint32_t w = kid(c, v, k);
      if (w == DP__DFP_NONE || (k == 0 && c->kind[v] == DP_LET)) continue;
      for (; w != DP__DFP_NONE && c->cls[w] == C_WRAP; w = wrapped(c, w)) {
        if (c->letof[w] == MULTI) continue;
        read[w] = 1;
        if (!id || !fhoisted(c, c->base[w]) || c->rid[c->base[w]] != id) vout[w] = 1;
      }
    }
    if (c->kind[v] == DP_LET) mark_drop(c, v, read, vout);
    for (uint32_t k = 0; k < ns; k++) {
      if (c->drop[v] && k == 1) continue; /* a dropped let reads nothing */
      uint32_t p = producer(c, v, k);
      if (fhoisted(c, p) && !(id && c->rid[p] == id)) c->isout[p] = 1;
    }
  }
  give(c, read, c->n);
  give(c, vout, c->n);
  return 0;
}

/* Numbers the regions with a call, lists their members, marks outputs.
   The regions are numbered and their members counted in one pass (a
   count a region, grown as they are numbered), then listed in a second:
   each pass reads fnode[], cls[] and uf[] at every flow number, cold at a
   million calls. */
static int list_regions(pctx *c) {
  uint32_t nregs = 0, *count = NULL, capcount = 0;
  for (uint32_t f = 0; f < c->nflow; f++) {
    if (c->cls[c->fnode[f]] != C_MEMBER) continue;
    uint32_t r = find(c, f);
    if (!c->hascall[r]) continue;
    if (!c->rid[r]) {
      if (dp_grow8((void **)&count, &capcount, nregs + 1, sizeof *count) < 0) return free(count), -1;
      count[nregs] = 0;
      c->rid[r] = ++nregs;
    }
    count[c->rid[r] - 1]++;
  }
  if (!(c->regs = dp_calloc(nregs ? nregs : 1, sizeof *c->regs))) return free(count), -1;
  c->nregs = nregs;
  for (uint32_t i = 0; i < nregs; i++) c->regs[i].nmem = count[i];
  free(count);
  uint32_t total = 0;
  for (uint32_t i = 0; i < c->nregs; i++) {
    c->regs[i].first = total;
    total += c->regs[i].nmem;
    c->regs[i].nmem = 0;
  }
  c->mem = dp_malloc((total ? total : 1) * sizeof *c->mem);
  if (!c->mem) return -1;
  /* every member's region number at its flow number (its
     representative's: a representative's own entry, written first or not,
     is its number; a barrier's is 0), so that hoisted() and region_of()
     read one array, no find (whose uf[] is outpos' place from here on) */
  for (uint32_t f = 0; f < c->nflow; f++) {
    uint32_t id = c->cls[c->fnode[f]] == C_MEMBER ? c->rid[find(c, f)] : 0;
    c->rid[f] = id;
    if (id) {
      region *g = &c->regs[id - 1];
      c->mem[g->first + g->nmem++] = f;
    }
  }
  c->outpos = c->uf; /* (written for each output before it is read) */
  c->uf = NULL;
  /* outputs: read from outside the region, or the function's result */
  uint32_t root = c->base[c->n - 1];
  if (fhoisted(c, root)) c->isout[root] = 1;
  if (mark_reads(c) < 0) return -1;
  /* a region whose only readers were dropped lets (its values are dead but
     for them) keeps one of them: it is still evaluated, as before */
  for (uint32_t f = 0; f < c->nflow; f++)
    if (c->isout[f]) region_of(c, f)->nout = 1; /* (counted for real below) */
  for (uint32_t v = 0; v < c->n; v++) {
    if (!c->drop[v]) continue;
    uint32_t p = producer(c, v, 1);
    region *g = region_of(c, p);
    if (!g->nout) {
      c->drop[v] = 0;
      c->isout[p] = 1;
      g->nout = 1;
    }
  }
  for (uint32_t i = 0; i < c->nregs; i++) c->regs[i].nout = 0;
  for (uint32_t i = 0; i < c->nregs; i++) {
    region *g = &c->regs[i];
    for (uint32_t j = 0; j < g->nmem; j++)
      if (c->isout[c->mem[g->first + j]]) c->outpos[c->mem[g->first + j]] = g->nout++;
  }
  return 0;
}

/* What a hoisted function is named after: its target's kind (a toolchain's
   name: "ccompiler"), or its device type when partitioning by device type
   or when it has no target. */
static const char *label_of(const pctx *c, const dp_vdev *vd) {
  if (vd && vd->target && c->by != DP_PART_DEVICE_TYPE) return vd->target->kind;
  const char *dev = vd && vd->device_type > 0 ? dp_device_type_name(vd->device_type) : NULL;
  return dev ? dev : "device";
}

/* A fresh global name <function>_<label>_<n>, n counting per label from
   where the last one stopped. */
static dp_global *fresh_global(pctx *c, dp_vdev *vd) {
  const char *label = label_of(c, vd);
  namectr *ctr = NULL;
  for (uint32_t i = 0; i < c->nnames && !ctr; i++)
    if (!strcmp(c->names[i].kind, label)) ctr = &c->names[i];
  if (!ctr) {
    if (dp_grow((void **)&c->names, &c->capnames, c->nnames + 1, sizeof *c->names) < 0) return NULL;
    ctr = &c->names[c->nnames++];
    snprintf(ctr->kind, sizeof ctr->kind, "%s", label);
    snprintf(ctr->label, sizeof ctr->label, "%s", label);
    for (char *p = ctr->label; *p; p++) /* a global's name: letters, digits and '_' ("ethos-u": ethos_u) */
      if (!(isalnum((unsigned char)*p) || *p == '_')) *p = '_';
    ctr->next = 0;
  }
  char name[320];
  for (;; ctr->next++) {
    snprintf(name, sizeof name, "%.200s_%.63s_%u", c->fname, ctr->label, ctr->next);
    if (!dp_module_func(c->out, name) && !dp_module_primfn(c->out, name)) break;
  }
  ctr->next++;
  return dp_global_new(name, DP_NOSPAN);
}

typedef struct fbuild {
  dp__dfp_vec params;       /* dp_var * (owned) */
  dp__dfp_u32s inputs;      /* node indices */
  uint32_t mark;            /* stamp[xi] == mark: input xi is parameter pos[xi] */
} fbuild;

/* A parameter's name: the input variable's (its first 30 bytes), else
   p<n>. Written by hand: snprintf was 7% of the pass's instructions on
   branchy modules, one call per parameter. */
static void param_name(char name[32], const dp_expr *x, uint32_t n) {
  if (x->h.kind == DP_VAR) {
    const char *v = ((const dp_var *)x)->name;
    size_t len = strnlen(v, 30);
    memcpy(name, v, len);
    name[len] = 0;
    return;
  }
  char digits[10];
  int k = 0;
  do digits[k++] = (char)('0' + n % 10); while ((n /= 10) && k < 10);
  name[0] = 'p';
  for (int i = 0; i < k; i++) name[1 + i] = digits[k - 1 - i];
  name[1 + k] = 0;
}

/* The parameter standing for input xi (one per distinct input; the
   stamps and positions of make_regions, free until the rebuild takes
   their place, say which: no map of pointers, a hash an input and a
   table grown by rehashing, 13 MB for the largest region of branchy at a
   million calls). */
static dp_expr *param_for(pctx *c, fbuild *b, uint32_t xi, dp_vdev *fallback) {
  if (c->stamp[xi] == b->mark) return b->params.items[c->pos[xi]];
  dp_expr *x = c->x[xi];
  char name[32];
  param_name(name, x, b->params.n);
  dp_vdev *vd = device_of(c, xi);
  dp_var *p = dp__var_new_in(&c->arena, name, x->type, vd ? vd : fallback, DP_NOSPAN);
  dp_release(vd);
  if (p) typed_as(c, &p->e, x->type); /* (its annotation) */
  if (!p || dp__dfp_vec_push(&b->params, p) < 0 || dp__dfp_u32s_push(&b->inputs, xi) < 0) {
    if (p && (b->params.n == 0 || b->params.items[b->params.n - 1] != p)) dp_release(p);
    return NULL;
  }
  c->stamp[xi] = b->mark;
  c->pos[xi] = b->params.n - 1;
  return &p->e;
}

/* Does child xi move into the function that reads it (not a member of
   it)? A constant does, with the on_device annotations around it (the
   host's sizes and shapes of the memory dialect say so); so does a
   Composite or Primitive literal without free variables. Not through a
   variable: its let stays in the caller. -1: out of memory. */
static int stays_inside(const pctx *c, uint32_t xi) {
  uint32_t xb = xi; /* (its base, a leaf or not: base[] has only those that flow) */
  for (; c->cls[xb] == C_WRAP && wrapped(c, xb) != DP__DFP_NONE; xb = wrapped(c, xb))
    if (c->letof[xb] != MULTI) return 0;
  if (c->kind[xb] == DP_CONST) return 1;
  if (c->kind[xb] != DP_FUNC) return 0; /* (the graph's kind: no read of a cold node) */
  const dp_expr *e = c->x[xb];
  if (!dp__dfp_is_unit_fn(e)) return 0;
  uint32_t n = 0;
  dp_var **fv = dp_free_vars((dp_expr *)e, &n);
  free(fv);
  return fv ? n == 0 : -1;
}

/* Child k of node e that is no node of the graph (an operator, a
   constructor, a global): a call's callee read without its argument
   count (dp_expr_child), further into a node that is out of the cache. */
static dp_expr *fixed_child(const dp_expr *e, uint32_t k) {
  return k == 0 && e->h.kind == DP_CALL ? ((const dp_call *)e)->fn : dp_expr_child(e, k);
}

/* e with children kids (same: each of them is e's own), typed as e. */
static dp_expr *remade(pctx *c, dp_expr *e, dp_expr *const *kids, int same) {
  return typed_as(c, same ? dp_retain(e) : dp__expr_changed_in(&c->arena, e, kids), e->type);
}

/* The copy of member f (a flow number) inside its function: children in
   the region are their copies (wrappers dropped), constants and closed
   Composite functions stay, anything else is read through a parameter. */
static dp_expr *copy_member(pctx *c, fbuild *b, uint32_t f, dp_vdev *vd) {
  uint32_t m = c->fnode[f], id = c->rid[f];
  dp_expr *e = c->x[m];
  uint32_t n = nslots(c, m);
  dp_expr *small[8], **kids = n <= 8 ? small : dp_malloc(n * sizeof *kids);
  if (!kids) return NULL;
  dp_expr *r = NULL;
  int same = 1;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t xi = kid(c, m, k);
    uint32_t xb = xi == DP__DFP_NONE ? DP__DFP_NONE : c->base[xi];
    if (xi == DP__DFP_NONE) {
      kids[k] = fixed_child(e, k);
      continue;
    }
    if (xb != DP__DFP_NONE && c->rid[xb] == id) kids[k] = c->inner[xb];
    else {
      int inside = stays_inside(c, xi); /* (a member's copy is never a leaf: asked only here) */
      if (inside < 0) goto out;
      if (inside) kids[k] = c->x[xi];
      else if (!(kids[k] = param_for(c, b, xi, vd))) goto out;
    }
    same = same && kids[k] == c->x[xi];
  }
  r = remade(c, e, kids, same);
  /* A copy that is no output is held by its first reader's copy from
     here on (which its own reference or its readers' keep alive while
     the function is made): its reference is given up now, while it is in
     the cache, not in a sweep over every member after (make_function). */
  for (uint32_t k = 0; r && k < n; k++) {
    uint32_t xi = kid(c, m, k);
    uint32_t xb = xi == DP__DFP_NONE ? DP__DFP_NONE : c->base[xi];
    if (xb == DP__DFP_NONE || c->rid[xb] != id || c->isout[xb] || c->released[xb])
      continue; /* (not a copy of this function's, an output (read after), or given up already) */
    c->released[xb] = 1;
    dp_release(c->inner[xb]);
  }
out:
  if (kids != small) free(kids);
  return r;
}

/* The type of a hoisted function's tuple of outputs. -1: out of memory. */
static int type_tuple(pctx *c, dp_expr *tuple, dp_expr *const *outs, uint32_t n) {
  if (!c->typed) return 0;
  dp_type *small[8], **fs = n <= 8 ? small : dp_malloc(n * sizeof *fs);
  if (!fs) return -1;
  int known = 1;
  for (uint32_t i = 0; i < n; i++) known = known && (fs[i] = outs[i]->type) != NULL;
  dp_type *t = known ? dp_type_tuple(c->out->ctx, n, fs) : NULL;
  if (fs != small) free(fs);
  if (known && !t) return -1;
  tuple->type = t;
  if (!known) c->untyped = 1;
  return 0;
}

/* The type of hoisted function g (fn(its parameters) -> its body), which
   its global has too. -1: out of memory. */
static int type_function(pctx *c, region *g) {
  dp_func *fn = g->fn;
  if (!c->typed) return 0;
  if (!fn->body->type) return c->untyped = 1, 0;
  dp_type *small[8], **ps = fn->nparams <= 8 ? small : dp_malloc(fn->nparams * sizeof *ps);
  if (!ps) return -1;
  int known = 1;
  for (uint32_t i = 0; i < fn->nparams; i++) known = known && (ps[i] = fn->params[i]->e.type) != NULL;
  dp_type *t = known ? dp_type_func(c->out->ctx, 0, NULL, fn->nparams, ps, fn->body->type) : NULL;
  if (ps != small) free(ps);
  if (known && !t) return -1;
  if (!known) c->untyped = 1;
  fn->e.type = t;
  g->global->e.type = t ? dp_retain(t) : NULL;
  return 0;
}

/* Region g's function (not yet in the module). */
static int make_function(pctx *c, region *g) {
  fbuild b = {{NULL, 0, 0}, {NULL, 0, 0}, ++c->clock}; /* (a stamp no set and no other function has) */
  dp_expr **outs = dp_malloc(g->nout * sizeof *outs);
  dp_expr *body = NULL;
  uint32_t nmade = 0; /* members whose copies were made (inner[] is not zeroed) */
  int rc = -1;
  if (!outs) goto out;
  for (uint32_t j = 0; j < g->nmem; j++) {
    uint32_t m = c->mem[g->first + j];
    if (c->isout[m] && !g->vd) g->vd = device_of(c, c->fnode[m]);
  }
  for (; nmade < g->nmem; nmade++) {
    uint32_t m = c->mem[g->first + nmade];
    if (!(c->inner[m] = copy_member(c, &b, m, g->vd))) goto out;
    if (c->isout[m]) outs[c->outpos[m]] = c->inner[m];
  }
  body = g->nout == 1 ? dp_retain(outs[0]) : (dp_expr *)dp_tuple_new(g->nout, outs, DP_NOSPAN);
  if (!body || (g->nout > 1 && type_tuple(c, body, outs, g->nout) < 0)) goto out;
  g->fn = dp_func_new(b.params.n, (dp_var *const *)b.params.items, body, NULL, NULL, g->vd, DP_NOSPAN);
  g->global = g->fn ? fresh_global(c, g->vd) : NULL;
  if (!g->global || type_function(c, g) < 0) goto out;
  g->inputs = b.inputs.a;
  g->ninputs = b.inputs.n;
  b.inputs.a = NULL;
  rc = 0;
out:
  /* the copies are the function's now (or go with it): the outputs' (and
     those not read yet, on an error) released here, the others were as
     their first reader was made (copy_member); inner[] is written again
     before it is read (no NULL written: cold lines at a million calls) */
  for (uint32_t j = 0; j < nmade; j++) { /* (on an error, the one that failed is NULL: not counted) */
    uint32_t m = c->mem[g->first + j];
    if (!c->released[m]) dp_release(c->inner[m]);
  }
  for (uint32_t i = 0; i < b.params.n; i++) dp_release(b.params.items[i]);
  free(b.params.items);
  free(b.inputs.a);
  free(outs);
  dp_release(body);
  return rc;
}

/* ---------------- the caller ---------------- */

/* The type of output m (a flow number) of region g, a tuple of outputs:
   its field of the tuple's type, which is its member's type (the copy
   took it, types are interned), read from the region's function, in the
   cache while the region's outputs are read, not from the member's node
   (node v), which is not at a million calls. */
static dp_type *output_type(const pctx *c, const region *g, uint32_t m, uint32_t v) {
  if (!c->typed) return NULL;
  const dp_type *t = g->fn->body->type;
  if (t && t->h.kind == DP_TY_TUPLE && c->outpos[m] < ((const dp_tuple_type *)t)->n)
    return ((const dp_tuple_type *)t)->fields[c->outpos[m]];
  return c->x[v]->type;
}

/* What the caller reads for hoisted member v (a node): the call, or its
   projection. */
static dp_expr *out_of(pctx *c, uint32_t v) {
  uint32_t m = c->base[v];
  region *g = region_of(c, m);
  if (g->nout == 1) return g->call;
  if (!c->outexpr[m])
    c->outexpr[m] = typed_as(c, (dp_expr *)dp__proj_new_in(&c->arena, g->call, c->outpos[m], DP_NOSPAN),
                             output_type(c, g, m, v));
  return c->outexpr[m];
}

/* A frame of the caller's walk: 8 bytes, for at a million lets the walk
   is a million frames deep (a let's body is its last slot). */
typedef struct cfr {
  uint32_t id;      /* a node of the caller (< n), or n + a region's number */
  uint32_t i;       /* the next slot (node) or input (region) to follow */
} cfr;

typedef struct walk {
  cfr *st;          /* the stack: at first the place of inner[] (8 bytes a flow
                       number, free once the functions are made: pages touched
                       already), copied to a block of its own if it grows past it (own) */
  uint32_t sp, cap;
  int own;
  uint8_t *state;   /* per node: 0 new, 1 open, 2 done, 3 done and read (read_once) */
  dp_expr **newx;   /* per node: its new version (owned where state is 2; not zeroed) */
} walk;

static region *frame_region(const pctx *c, const cfr *f) { return f->id >= c->n ? &c->regs[f->id - c->n] : NULL; }

static uint32_t frame_slots(const pctx *c, const cfr *f) {
  const region *g = frame_region(c, f);
  return g ? g->ninputs : nslots(c, f->id);
}

static int push(walk *w, cfr f) {
  if (w->sp == w->cap) {
    if (w->own) {
      if (dp_grow8((void **)&w->st, &w->cap, w->sp + 1, sizeof *w->st) < 0) return -1;
    } else {
      cfr *st = NULL;
      uint32_t cap = 0;
      if (dp_grow8((void **)&st, &cap, w->sp + 1, sizeof *st) < 0) return -1;
      if (w->sp) memcpy(st, w->st, w->sp * sizeof *st);
      w->st = st;
      w->cap = cap;
      w->own = 1;
    }
  }
  w->st[w->sp++] = f;
  return 0;
}

/* What the caller reads for slot k of node v (done already). */
static dp_expr *read_new(pctx *c, walk *w, uint32_t xi, dp_expr *x) {
  if (xi == DP__DFP_NONE) return x;
  if (hoisted(c, xi)) return out_of(c, xi);
  return w->state[xi] == 2 ? w->newx[xi] : NULL; /* (NULL: a slot not followed, never read) */
}

/* Pushes what node xi needs first: its region, or itself. 0 done already,
   1 pushed, -1 error (a cycle would be a bug: regions never form one). */
static int need(pctx *c, walk *w, uint32_t xi) {
  if (xi == DP__DFP_NONE) return 0;
  region *g = hoisted(c, xi) ? region_of(c, c->base[xi]) : NULL;
  cfr f = {g ? c->n + (uint32_t)(g - c->regs) : xi, 0};
  uint8_t *state = g ? &g->state : &w->state[xi];
  if (*state >= 2) return 0;
  if (*state == 1) {
    c->err = dp_err_new(DP_ERR_GENERIC, DP_NOSPAN, "PartitionByVirtualDevice: the pieces of @%s form a cycle",
                        c->fname);
    return -1;
  }
  *state = 1;
  return push(w, f) < 0 ? -1 : 1;
}

/* The new version of caller node xi, read by its only reader (no other
   reference in the input: it has no other), which holds it now: given up
   while it is in the cache (state 3), not in a sweep over every new node
   after the walk (a cold line each at a million calls). */
static void read_once(walk *w, const pctx *c, uint32_t xi) {
  if (xi == DP__DFP_NONE || w->state[xi] != 2 || (c->nflag[xi] & F_MANY)) return;
  w->state[xi] = 3;
  dp_release(w->newx[xi]);
}

static int finish(pctx *c, walk *w, cfr f) {
  region *g = frame_region(c, &f);
  uint32_t n = frame_slots(c, &f), v = f.id;
  dp_expr *small[8], **kids = n <= 8 ? small : dp_malloc(n * sizeof *kids);
  if (!kids) return -1;
  int same = 1;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t xi = g ? g->inputs[k] : kid(c, v, k);
    kids[k] = read_new(c, w, xi, xi == DP__DFP_NONE ? fixed_child(c->x[v], k) : c->x[xi]);
    same = same && (xi == DP__DFP_NONE || kids[k] == c->x[xi]);
  }
  int rc = -1;
  if (g) {
    g->call = typed_as(c, (dp_expr *)dp__call_new_in(&c->arena, &g->global->e, n, kids, NULL, DP_NOSPAN),
                       g->fn->body->type);
    g->state = 2;
    rc = g->call ? 0 : -1;
  } else {
    dp_expr *x = c->x[v];
    w->newx[v] = c->drop[v] || (c->nflag[v] & F_NOOP) ? dp_retain(kids[c->drop[v] ? 2 : 1])
                 : n == 0 ? dp_retain(x) : remade(c, x, kids, same);
    w->state[v] = 2;
    rc = w->newx[v] ? 0 : -1;
  }
  for (uint32_t k = 0; rc == 0 && k < n; k++) /* (its new version holds them now) */
    read_once(w, c, g ? g->inputs[k] : kid(c, v, k));
  if (kids != small) free(kids);
  return rc;
}

/* The caller's body, in a topological order of its graph with each region
   contracted to its call. */
static dp_expr *rebuild_caller(pctx *c) {
  /* (stamps and positions: 8 bytes a node; the stack: inner[], a frame a
     flow number (a let is one, and the walk is a frame a let deep): pages
     already touched, not fresh ones; at a million let calls the stack
     was 24 MB of them) */
  walk w = {.st = (cfr *)(void *)c->inner, .cap = c->capflow ? c->capflow : 1,
            .state = c->state, .newx = (dp_expr **)(void *)c->stamp};
  _Static_assert(sizeof(cfr) == sizeof(dp_expr *), "a frame in a member's copy's place");
  c->stamp = c->pos = NULL;
  c->inner = NULL;
  /* (newx is not zeroed, nor swept whole at the end: the nodes the walk
     made are those it marked done, whose byte is read instead; a pass of
     8 bytes a node less, cold at a million calls; and a node with one
     reader is given up when that reader is made, read_once: the sweep
     releases the shared ones and the root) */
  uint32_t root = c->n - 1;
  dp_expr *r = NULL;
  /* (a region's frame is numbered after the nodes: every region has a
     member, so n + nregs is 2n at most, which a body that fits in memory
     cannot overflow) */
  int rc = w.state && w.newx && c->nregs <= UINT32_MAX - c->n ? need(c, &w, root) : -1;
  while (rc >= 0 && w.sp) {
    cfr *f = &w.st[w.sp - 1];
    const region *g = frame_region(c, f);
    if (f->i < (g ? g->ninputs : nslots(c, f->id))) {
      uint32_t v = f->id, xi = g ? g->inputs[f->i] : kid(c, v, f->i);
      if (!g && c->drop[v] && f->i == 0) xi = DP__DFP_NONE; /* (a dropped let is its body) */
      if (!g && c->drop[v] && f->i == 1 && xi != DP__DFP_NONE && (c->nflag[xi] & F_ONDEV) &&
          kid(c, xi, 1) != DP__DFP_NONE && hoisted(c, kid(c, xi, 1)))
        xi = kid(c, xi, 1); /* its value's wrapper is not made either (a user elsewhere makes it),
                               only the region, where it was made before */
      f->i++;
      rc = need(c, &w, xi); /* (f may move: it is not read after) */
    } else {
      cfr done = *f;
      w.sp--;
      rc = finish(c, &w, done);
    }
  }
  if (rc >= 0) r = dp_retain(read_new(c, &w, root, c->x[root]));
  for (uint32_t i = 0; w.state && i < c->n; i++)
    if (w.state[i] == 2) dp_release(w.newx[i]);
  if (w.own) free(w.st); /* (else it, state and newx lie in the attempt's arrays) */
  c->state = NULL;
  if (!r) set_oom(c);
  return r;
}

/* ---------------- one body ---------------- */

/* The outputs' projections given up (the rebuilt body holds those it
   reads): only a region with outputs has them, no sweep over every node. */
static void release_projections(pctx *c) {
  for (uint32_t i = 0; c->outexpr && c->mem && i < c->nregs; i++) {
    const region *g = &c->regs[i];
    for (uint32_t j = 0; g->nout > 1 && j < g->nmem; j++) {
      uint32_t m = c->mem[g->first + j];
      dp_release(c->outexpr[m]);
      c->outexpr[m] = NULL;
    }
  }
}

/* Frees what one attempt at the body made (not the graph, the fences, the
   arrays' block). */
static void attempt_clear(pctx *c) {
  for (uint32_t i = 0; c->restr && !c->sets_freed && i < c->nflow; i++) rset_free(&c->restr[i]);
  release_projections(c); /* (inner[]: each function released its copies) */
  for (uint32_t i = 0; i < c->nregs; i++) {
    dp_release(c->regs[i].global);
    dp_release(c->regs[i].fn);
    dp_release(c->regs[i].vd);
    dp_release(c->regs[i].call);
    free(c->regs[i].inputs);
  }
  free(c->regs);
  free(c->mem);
  c->regs = NULL;
  c->nregs = 0;
  c->cls = c->closed = c->hascall = c->isout = c->drop = c->released = c->state = NULL; /* (the block stays for the next attempt) */
  c->base = c->block = c->uf = c->remaining = c->stamp = c->pos = c->rid = c->mem = c->outpos = c->fnode = NULL;
  c->nflow = 0;
  c->restr = NULL;
  c->sets_freed = 0;
  c->inner = c->outexpr = NULL;
  c->clock = 0;
  c->has_fnlit = 0;
}

/* The regions made, for the caller of dp_partition_by_device: every
   region's lists of nodes, inputs and outputs and the caller's name, in
   one block a body (the regions own it). The lists are 8 bytes a node,
   input and output: at a million branchy calls 18 MB, which a malloc a
   list put on fresh pages. A large attempt's block holds them instead
   where they fit in its first DEAD_BYTES (inner, outexpr, the stamps,
   positions and bases: dead once the caller is rebuilt and the
   projections given up), on pages touched already; what follows them
   (fnode, isout and outpos, read here) is given back to the system after. */
static int record_all(pctx *c) {
  dp_regions *o = c->regions;
  if (!o || !c->nregs) return 0;
  size_t ptrs = 0, name = strlen(c->fname) + 1;
  for (uint32_t i = 0; i < c->nregs; i++) ptrs += (size_t)c->regs[i].nmem + c->regs[i].ninputs + c->regs[i].nout;
  size_t need = ptrs * sizeof(dp_expr *) + name;
  /* (a block of 4 MiB and more: past a huge page, whose tail can be given back) */
  int adopt = c->arrays && c->narrays >= ((size_t)4 << 20) &&
              need <= DEAD_BYTES(c->n ? c->n : 1, c->capflow ? c->capflow : 1);
  if (dp_grow((void **)&o->r, &o->cap, o->n + c->nregs, sizeof *o->r) < 0 ||
      dp_grow((void **)&o->blocks, &o->capblocks, o->nblocks + 1, sizeof *o->blocks) < 0)
    return -1;
  if (adopt) release_projections(c);
  dp_expr **p = adopt ? c->arrays : dp_malloc(need);
  if (!p) return -1;
  o->blocks[o->nblocks++] = p;
  for (uint32_t i = 0; i < c->nregs; i++) {
    const region *g = &c->regs[i];
    dp_region *r = &o->r[o->n++];
    *r = (dp_region){.global = dp_retain(g->global), .vdev = dp_retain(g->vd), .nnodes = g->nmem,
                     .ninputs = g->ninputs, .noutputs = g->nout, .nodes = p, .inputs = p + g->nmem,
                     .outputs = p + g->nmem + g->ninputs};
    p += (size_t)g->nmem + g->ninputs + g->nout;
    for (uint32_t j = 0; j < g->nmem; j++) {
      uint32_t m = c->mem[g->first + j];
      r->nodes[j] = c->x[c->fnode[m]];
      if (c->isout[m]) r->outputs[c->outpos[m]] = r->nodes[j];
    }
    for (uint32_t j = 0; j < g->ninputs; j++) r->inputs[j] = c->x[g->inputs[j]];
  }
  memcpy(p, c->fname, name);
  for (uint32_t i = o->n - c->nregs; i < o->n; i++) o->r[i].caller = (char *)p;
  if (adopt) { /* (the block is the regions' now; nothing of it is read after) */
    dp__release_tail(c->arrays, need, c->narrays);
    c->arrays = NULL;
    c->outexpr = NULL;
    c->isout = NULL;
    c->outpos = NULL;
    c->fnode = NULL;
  }
  return 0;
}

/* The body the recorded regions' nodes are in, kept alive by the regions. */
static int record_body(pctx *c) {
  dp_regions *o = c->regions;
  if (!o || !c->nregs) return 0;
  if (dp_grow((void **)&o->bodies, &o->capbodies, o->nbodies + 1, sizeof *o->bodies) < 0) return -1;
  o->bodies[o->nbodies++] = dp_retain(c->x[c->n - 1]);
  return 0;
}

/* Marks the lets to fence after the scope errors of a rebuilt body (in
   round `round`, from 1); asks for every let when one cannot be found or
   was fenced in an earlier round already. */
static void fence_lets(pctx *c, int nerr, const dp_scope_error *errs, int shown, uint8_t round) {
  if (nerr > shown) c->strict = 1;
  for (int i = 0; i < shown && i < nerr && !c->strict; i++) {
    uint32_t v = dp__dfp_graph_find(&c->g, &errs[i].var->e);
    if (v == DP__DFP_OOM) {
      set_oom(c);
      return;
    }
    uint32_t let = v == DP__DFP_NONE || errs[i].twice ? MULTI : c->letof[v];
    if (let != MULTI && !c->fence && !(c->fence = dp_calloc(c->n, 1))) { /* (a body with a fence has its array) */
      set_oom(c);
      return;
    }
    if (let == MULTI || (c->fence[let] && c->fence[let] != round)) c->strict = 1;
    else c->fence[let] = round, c->fenced = 1;
  }
}

/* Does the body bind a variable (a let, a match clause, a function literal
   it enters)? Else every variable it reads is a parameter, in scope
   wherever a piece's call lands. */
static int binds(const pctx *c) {
  for (uint32_t v = 0; v < c->n; v++) {
    int k = c->kind[v];
    if (k == DP_LET || k == DP_MATCH || (k == DP_FUNC && nslots(c, v) > 0)) return 1;
  }
  return 0;
}

/* Is there anything to rebuild in a body without pieces: an on_device
   that says nothing? */
static int rebuilds(pctx *c) {
  for (uint32_t v = 0; v < c->n; v++)
    if (c->nflag[v] & F_NOOP) return 1;
  return 0;
}

/* The regions are made, their sets freed: the arrays only that walk used
   (restriction sets, reader counts, closed marks; 25 bytes a flow number)
   become the arrays of what follows, on pages already touched instead of
   fresh ones: the members' copies and projections (inner, outexpr), the
   region numbers (rid), the copies given up (released); the stamps and
   positions become the rebuild's new nodes, and inner (dead once the
   functions are made) its stack (rebuild_caller). */
_Static_assert(sizeof(rset) == 2 * sizeof(dp_expr *), "a set's place holds a member's two nodes");
_Static_assert(2 * sizeof(uint32_t) == sizeof(dp_expr *), "a stamp and a position hold a new node");

static void reuse_arrays(pctx *c) {
  uint32_t n = c->capflow ? c->capflow : 1; /* (these arrays are by flow number) */
  /* Each set was freed (zeroed) as its region closed, and every region is
     closed but the function result's, whose reader count is the one left:
     the sets' place is zero already, and so is the count of every region
     but that one (rid is read at representatives only). No sweep over
     them (at a million calls each was a pass of cold writes). */
  if (!c->sets_freed) {
    memset(c->restr, 0, (size_t)n * sizeof *c->restr);
    memset(c->remaining, 0, (size_t)n * sizeof *c->remaining);
  } else if (c->n && c->base[c->n - 1] != DP__DFP_NONE) {
    c->remaining[find(c, c->base[c->n - 1])] = 0;
  }
  c->inner = (dp_expr **)(void *)c->restr; /* (16 bytes a flow number: two pointers; inner
                                              is written before it is read) */
  c->outexpr = c->inner + n;
  c->restr = NULL;
  c->rid = c->remaining;
  c->remaining = NULL;
  c->released = memset(c->closed, 0, n);
  c->closed = NULL;
}

/* The devices of the body's nodes in dev[]: as the body says them
   (lexical.c: the graph's kinds and flags, and the on_devices' devices,
   read as the graph was built, spare it the IR; its scratch, 4 bytes a
   node, is the arrays' block, zeroed before and after), or, planning
   again, the members' (classify). An attempt gives dev[] to the output's
   arena once the functions are made (drop_devices): a further attempt
   reads them again, the on_devices' from the IR. 0, 1 lexical.c cannot
   read them (gave_up), -1 out of memory. */
static int read_devices(pctx *c) {
  if (!c->dev) {
    if (!(c->dev = dp_malloc((size_t)(c->n ? c->n : 1) * sizeof *c->dev))) return -1;
    for (uint32_t v = 0; c->lx && v < c->n; v++) {
      dp_vdev *vd = NULL;
      if (c->nflag[v] & F_COPY) c->dev[v] = 0; /* (lexical.c reads it) */
      if ((c->nflag[v] & F_ONDEV) && (dp__lexical_on_device(c->lx, c->x[v], &vd) < 0 ||
                                      (c->dev[v] = dp__devcode(&c->codes, vd)) == DP__DEVCODE_OOM))
        return -1;
    }
  }
  if (!c->lx) return 0;
  memset(c->arrays, 0, c->dirty);
  int r = c->unread ? 1
        : dp__lexical_graph_read(c->lx, c->n, c->x, c->g.kstart, c->g.kids, c->kind, c->nflag, c->letof,
                                 c->body_vd, &c->codes, c->dev, (uint32_t *)c->arrays);
  if (r > 0) c->gave_up = 1;
  c->dirty = (size_t)c->n * sizeof(uint32_t);
  return r;
}

/* The functions are made: nothing of this attempt reads a device again
   (the rebuild, the scope check and the regions recorded read none), so
   dev[] (8 bytes a node, its pages touched) takes the output's new nodes
   in the arena instead of fresh pages. */
static void drop_devices(pctx *c) {
  give(c, c->dev, (size_t)c->n * sizeof *c->dev);
  c->dev = NULL;
}

/* The last attempt's functions are made (no scope check follows, so no
   further attempt): letof[] and kind[] (5 bytes a node), which the
   rebuild does not read, take the output's new nodes in the arena too. */
static void drop_scopes(pctx *c) {
  give(c, c->letof, (size_t)c->n * sizeof *c->letof);
  give(c, c->g.kind, c->n);
  c->letof = NULL;
  c->kind = c->g.kind = NULL;
}

/* One attempt: the body partitioned under the current fences. 1 done
   (*out the new body), 0 a variable is read out of its scope (fences
   added), -1 error. */
static int attempt(pctx *c, uint8_t round, dp_expr **out) {
  *out = NULL;
  if (!c->dev && read_devices(c) != 0) return -1; /* (a further attempt) */
  lay_out_arrays(c);
  if (assign_blocks(c) < 0) return -1;
  if (classify(c) < 0 || resolve_bases(c) < 0 || make_regions(c) < 0) return -1;
  reuse_arrays(c);
  if (list_regions(c) < 0) return -1;
  for (uint32_t i = 0; i < c->nregs; i++)
    if (make_function(c, &c->regs[i]) < 0) return -1;
  int checked = c->nregs && binds(c); /* (the rebuilt body's scopes are checked: a further
                                         attempt may follow) */
  drop_devices(c);
  if (!checked) drop_scopes(c);
  if (!c->nregs && !rebuilds(c)) {
    *out = dp_retain(c->x[c->n - 1]);
    return 1;
  }
  dp_expr *body = rebuild_caller(c);
  if (!body) return -1;
  if (!checked) { /* no read moved, or no variable but parameters */
    *out = body;
    return 1;
  }
  dp_scope_error errs[16];
  int nerr = dp_check_scopes(body, errs, 16);
  if (nerr < 0) {
    dp_release(body);
    return -1;
  }
  if (nerr > 0) {
    if (c->strict) { /* every node of a block lives in its scope: cannot happen */
      c->err = dp_err_new(DP_ERR_GENERIC, DP_NOSPAN, "PartitionByVirtualDevice: internal error: a "
                          "piece of @%s reads %%%s outside its scope", c->fname, errs[0].var->name);
      dp_release(body);
      return -1;
    }
    fence_lets(c, nerr, errs, 16, round);
    dp_release(body);
    return c->err ? -1 : 0;
  }
  *out = body;
  return 1;
}

/* Partitions one body: *out is its new version; the hoisted functions are
   added to the module. */
static int partition_body(pctx *c, dp_expr *body, dp_expr **out) {
  int rc = -1;
  namectr *saved = NULL;
  uint32_t nsaved = c->nnames;
  c->opens = 0; /* (the build notes any if, match or function literal) */
  c->unread = 0;
  if (build_graph(c, body) < 0) goto done;
  c->n = c->g.n;
  c->x = c->g.x;
  if (!c->dev || alloc_arrays(c) < 0 || read_devices(c) != 0) goto done; /* (dev: grown with the graph) */
  c->strict = c->fenced = 0;
  saved = dp_malloc((c->nnames ? c->nnames : 1) * sizeof *saved);
  if (!saved) goto done;
  if (c->nnames) memcpy(saved, c->names, c->nnames * sizeof *saved);
  for (int tries = 0; tries < 3; tries++) {
    if (tries == 2) c->strict = 1;
    rc = attempt(c, (uint8_t)(tries + 1), out);
    if (rc != 0) break;
    attempt_clear(c);
    c->nnames = nsaved; /* the names start again where they were */
    if (nsaved) memcpy(c->names, saved, nsaved * sizeof *saved);
  }
  if (rc == 1 && record_body(c) < 0) rc = -1;
  for (uint32_t i = 0; rc == 1 && i < c->nregs; i++)
    if (dp_module_add_func(c->out, c->regs[i].global, c->regs[i].fn, &c->err) < 0) rc = -1;
  if (rc == 1 && record_all(c) < 0) rc = -1;
done:
  if (rc < 0) {
    dp_release(*out);
    *out = NULL;
  }
  attempt_clear(c);
  dp__dfp_graph_free(&c->g);
  free(c->letof);
  free(c->arrays);
  free(c->fence);
  free(c->blockmem);
  free(c->dev);
  dp__devcodes_free(&c->codes);
  free(saved);
  c->kind = c->nflag = NULL; /* (the graph's) */
  c->letof = NULL;
  c->arrays = NULL;
  c->dev = NULL;
  c->fence = NULL;
  c->blockmem = c->block = NULL;
  c->n = 0;
  c->x = NULL;
  if (rc < 0 && !c->gave_up) set_oom(c);
  return rc < 0 ? -1 : 0;
}

/* ---------------- one function, the module ---------------- */

/* Partitions global function `name`: adds the hoisted functions to c->out
   and replaces the function there. */
static int partition_fn(pctx *c, const char *name, dp_func *fn) {
  c->fname = name;
  c->body_vd = fn->vdev;
  c->nnames = 0; /* the names count per function */
  dp_expr *body = NULL;
  int rc = partition_body(c, fn->body, &body);
  if (rc == 0 && body != fn->body) {
    dp_expr *small[17], **kids = fn->nparams < 16 ? small : dp_malloc((fn->nparams + 1) * sizeof *kids);
    dp_expr *nf = NULL;
    if (kids) {
      for (uint32_t i = 0; i < fn->nparams; i++) kids[i] = &fn->params[i]->e;
      kids[fn->nparams] = body;
      nf = typed_as(c, dp_expr_with_children(&fn->e, kids), fn->e.type);
      if (kids != small) free(kids);
    }
    rc = nf ? dp_module_set_func(c->out, name, (dp_func *)nf, &c->err) : -1;
    dp_release(nf);
  }
  dp_release(body);
  if (rc < 0 && !c->gave_up) set_oom(c);
  return rc;
}

static int typed(const dp_module *m) {
  for (uint32_t i = 0; i < m->nfuncs; i++)
    if (!m->funcs[i].fn->e.type) return 0;
  return 1;
}

void dp_regions_clear(dp_regions *rs) {
  for (uint32_t i = 0; rs && i < rs->n; i++) {
    dp_region *r = &rs->r[i];
    dp_release(r->global);
    dp_release(r->vdev);
  }
  for (uint32_t i = 0; rs && i < rs->nbodies; i++) dp_release(rs->bodies[i]);
  for (uint32_t i = 0; rs && i < rs->nblocks; i++) free(rs->blocks[i]);
  if (rs) {
    free(rs->r);
    free(rs->bodies);
    free(rs->blocks);
    *rs = (dp_regions){0};
  }
}

/* The module partitioned, its devices read from it (lexical) or from
   planning it again (PlanDevices' phases 0 to 2, which leave a planned
   module as it is). NULL with *gave_up: lexical.c cannot read them. */
static dp_module *partition_module(dp_module *m, const dp_config *cfg, dp_partition_by by,
                                   dp_regions *regions, int lexical, int *gave_up, dp_err **err) {
  if (regions) *regions = (dp_regions){0};
  pctx c;
  memset(&c, 0, sizeof c);
  c.by = by;
  c.regions = regions;
  c.typed = typed(m);
  dp_module *planned = m;
  if (lexical) {
    if (!(c.lx = dp__lexical_new(m, cfg))) {
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return NULL;
    }
  } else {
    if (!(c.d = dp_plan_domains(m, cfg, NULL, NULL, err))) return NULL;
    planned = dp_domains_module(c.d);
  }
  if (!(c.out = dp_module_copy(planned))) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    goto fail;
  }
  for (uint32_t i = 0; i < planned->nfuncs; i++) {
    dp_defn *f = &planned->funcs[i];
    if (dp__is_primitive(f->fn)) continue; /* (not planned) */
    if (partition_fn(&c, f->global->name, f->fn) < 0) {
      if (c.gave_up) *gave_up = 1;
      else dp_err_set(err, c.err ? c.err : dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      c.err = NULL;
      goto fail;
    }
  }
  /* typed: the new nodes took their types as they were made, unless one
     of the input's had none */
  if (c.typed && c.untyped && dp_infer_module(c.out, err) < 0) goto fail;
  dp__arena_done(&c.arena);
  free(c.names);
  dp_release(c.d);
  dp__lexical_free(c.lx);
  return c.out;
fail:
  dp__arena_done(&c.arena);
  dp_regions_clear(regions);
  free(c.names);
  dp_err_free(c.err);
  dp_release(c.out);
  dp_release(c.d);
  dp__lexical_free(c.lx);
  return NULL;
}

dp_module *dp_partition_by_device(dp_module *m, const dp_config *cfg, dp_partition_by by,
                                  dp_regions *regions, dp_err **err) {
  int gave_up = 0;
  dp_module *r = cfg ? partition_module(m, cfg, by, regions, 1, &gave_up, err) : NULL;
  if (!r && (gave_up || !cfg)) r = partition_module(m, cfg, by, regions, 0, &gave_up, err);
  return r;
}

dp_module *dp_partition_by_device_replanned(dp_module *m, const dp_config *cfg, dp_partition_by by,
                                            dp_regions *regions, dp_err **err) {
  int gave_up = 0;
  return partition_module(m, cfg, by, regions, 0, &gave_up, err);
}
