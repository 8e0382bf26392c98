/*
 * PartitionByVirtualDevice (partition.h): the connected same-device pieces
 * of each function of a planned module hoisted into global functions.
 *
 * Per function body, over its dataflow graph (function literals are not
 * entered):
 * 1. every node is a member (a call of an operator or a global, a tuple, a
 *    projection, with a device), a wrapper (on_device, and a let-bound
 *    variable, which stands for its let's value: transparent), a barrier
 *    (anything else with inputs: device_copy, let, if, ...), or a leaf
 *    (a parameter, a constant, a function literal); a let's body is in
 *    the let's block (it always runs after the value), an if's branches
 *    and a match's clauses each in a block of their own, and regions never
 *    cross blocks;
 * 2. in post order (a topological order), each member starts a region and
 *    takes in its producers' regions of the same device and block, unless
 *    a producer's region is restricted: TVM's MergeCompilerRegions, where a
 *    region's restrictions are the regions that reach it through another
 *    region or a barrier (a region of another device is always one);
 *    restrictions of regions that can take no more consumers are dropped,
 *    which keeps the sets as small as the open frontier of the program;
 * 3. each region with a call becomes a function (inputs as parameters,
 *    outputs as its result or a tuple of them), and the caller is rebuilt
 *    in a topological order of the graph with each region contracted to
 *    its call, which exists since regions never form a cycle. A let whose
 *    value is hoisted and whose variable only its region reads is dropped
 *    (the region computes the value and its uses); any other let keeps its
 *    variable, bound to the region's output. (Not when the function has a
 *    function literal: its reads of variables are not in the graph.)
 * Everything walks with explicit stacks and arrays indexed by the post
 * order: a 1,000,000-node program is fine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "devplan/partition.h"
#include "devplan/infer.h"

enum { C_LEAF = 0, C_WRAP, C_MEMBER, C_BARRIER };
#define MULTI UINT32_MAX

typedef struct region {
  dp_global *global;     /* the hoisted function (owned) */
  uint32_t first, nmem;  /* its members: mem[first .. first + nmem) */
  uint32_t nout;
  uint32_t *inputs;      /* what flows in: node indices */
  uint32_t ninputs;
  dp_expr *call;         /* the call in the caller (owned) */
  uint8_t state;         /* caller walk: 0 new, 1 open, 2 done */
} region;

typedef struct pctx {
  dp_domains *d;
  dp_partition_by by;
  dp_module *out;
  const char *fname;
  uint32_t next_name[64]; /* per device type: the next hoisted function's number */
  dp_err *err;
  /* the graph, in post order (function literals not entered) */
  dp__dfp_graph g;
  uint32_t n;           /* g.n */
  dp_expr **x;          /* g.x */
  uint8_t *cls;
  uint32_t *base;       /* the node under any on_device wrappers */
  uint32_t *block;      /* let body / branch the node is in (MULTI: several) */
  uintptr_t *key;       /* members: the device compared */
  /* regions: union-find over node indices */
  uint32_t *uf, *remaining, *stamp, clock;
  uint8_t *closed, *hascall, *isout;
  uint32_t *letof;      /* a let-bound variable -> its let (MULTI: none) */
  uint8_t *drop;        /* a let dropped from the caller */
  int has_fnlit;        /* a function literal in the body */
  dp__dfp_u32s *restr;
  /* hoisted regions */
  uint32_t *rid;        /* rep -> region number + 1 */
  region *regs;
  uint32_t nregs;
  uint32_t *mem;        /* members of each region, post order */
  uint32_t *outpos;     /* member -> position among its region's outputs */
  dp_expr **inner;      /* member -> its copy inside the function (owned) */
  dp_expr **outexpr;    /* member (output) -> what the caller reads (owned) */
} pctx;

static void set_oom(pctx *c) {
  if (!c->err) c->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
}

/* Child slot k of node v: a node index, or DP__DFP_NONE (an operator, a global). */
static uint32_t kid(const pctx *c, uint32_t v, uint32_t k) { return c->g.kids[c->g.kstart[v] + k]; }
static uint32_t nslots(const pctx *c, uint32_t v) { return c->g.kstart[v + 1] - c->g.kstart[v]; }

static int alloc_arrays(pctx *c) {
  uint32_t n = c->n ? c->n : 1;
  c->cls = dp_calloc(n, 1);
  c->closed = dp_calloc(n, 1);
  c->hascall = dp_calloc(n, 1);
  c->isout = dp_calloc(n, 1);
  c->base = dp_calloc(n, sizeof *c->base);
  c->block = dp_calloc(n, sizeof *c->block);
  c->key = dp_calloc(n, sizeof *c->key);
  c->uf = dp_calloc(n, sizeof *c->uf);
  c->remaining = dp_calloc(n, sizeof *c->remaining);
  c->stamp = dp_calloc(n, sizeof *c->stamp);
  c->restr = dp_calloc(n, sizeof *c->restr);
  c->rid = dp_calloc(n, sizeof *c->rid);
  c->outpos = dp_calloc(n, sizeof *c->outpos);
  c->inner = dp_calloc(n, sizeof *c->inner);
  c->outexpr = dp_calloc(n, sizeof *c->outexpr);
  c->letof = dp_malloc(n * sizeof *c->letof);
  c->drop = dp_calloc(n, 1);
  return c->cls && c->closed && c->hascall && c->isout && c->base && c->block && c->key && c->uf &&
                 c->remaining && c->stamp && c->restr && c->rid && c->outpos && c->inner && c->outexpr &&
                 c->letof && c->drop
             ? 0 : -1;
}

/* Blocks, parents first (reverse post order is topological): a let's body,
   an if's branches and a match's clauses open new blocks. 0: not reached
   yet; the body is block 1. */
static void assign_blocks(pctx *c) {
  uint32_t next = 2;
  memset(c->block, 0, c->n * sizeof *c->block);
  c->block[c->n - 1] = 1;
  for (uint32_t v = c->n; v-- > 0;) {
    dp_expr *e = c->x[v];
    for (uint32_t k = 0; k < nslots(c, v); k++) {
      uint32_t ci = kid(c, v, k);
      if (ci == DP__DFP_NONE) continue;
      int opens = (e->h.kind == DP_IF && k > 0) || (e->h.kind == DP_MATCH && k > 0);
      uint32_t b = c->block[v] == MULTI ? MULTI : opens ? next++ : c->block[v];
      uint32_t old = c->block[ci];
      c->block[ci] = old == 0 || old == b ? b : MULTI;
    }
  }
}

static int is_member_kind(const dp_expr *e) {
  if (e->h.kind == DP_TUPLE || e->h.kind == DP_PROJ) return 1;
  if (e->h.kind != DP_CALL) return 0;
  const dp_expr *fn = ((const dp_call *)e)->fn;
  if (fn->h.kind == DP_GLOBAL) return 1;
  return fn->h.kind == DP_OP && !dp_is_op_call(e, "on_device") && !dp_is_op_call(e, "device_copy");
}

static uintptr_t key_of(const pctx *c, dp_vdev *vd) {
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

/* base[v]: the node under v's wrappers. A variable comes before its value
   in post order, so chains are followed here, after classify; each node's
   base is found once (a stack of the chain being resolved). */
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
    uint32_t b = done[w] ? c->base[w] : w;
    done[w] = 1;
    c->base[w] = b;
    while (nchain) {
      uint32_t u = chain[--nchain];
      c->base[u] = b;
      done[u] = 1;
    }
  }
  free(chain);
  free(done);
  return rc;
}

static void classify(pctx *c) {
  for (uint32_t v = 0; v < c->n; v++) c->letof[v] = MULTI;
  for (uint32_t v = 0; v < c->n; v++) /* a let's variable stands for its value */
    if (c->x[v]->h.kind == DP_LET && kid(c, v, 0) != DP__DFP_NONE && kid(c, v, 1) != DP__DFP_NONE)
      c->letof[kid(c, v, 0)] = v;
  for (uint32_t v = 0; v < c->n; v++) {
    dp_expr *e = c->x[v];
    c->base[v] = v;
    c->uf[v] = v;
    if (e->h.kind == DP_FUNC) c->has_fnlit = 1;
    if (c->letof[v] != MULTI || dp_is_op_call(e, "on_device")) {
      c->cls[v] = C_WRAP;
      continue;
    }
    if (is_member_kind(e) && c->block[v] != MULTI) {
      dp_vdev *vd = dp_domains_lookup(c->d, e, NULL);
      if (vd && !dp_vdev_is_fully_unconstrained(vd)) {
        c->cls[v] = C_MEMBER;
        c->key[v] = key_of(c, vd);
        c->hascall[v] = e->h.kind == DP_CALL;
        dp_release(vd); /* interned and held by the domains: the key stays valid */
        continue;
      }
      dp_release(vd);
    }
    c->cls[v] = nslots(c, v) ? C_BARRIER : C_LEAF;
  }
}

/* The node child k of v reads (under its wrappers), or DP__DFP_NONE when it
   is a leaf, an operator or a global. */
static uint32_t producer(const pctx *c, uint32_t v, uint32_t k) {
  uint32_t ci = kid(c, v, k);
  if (ci == DP__DFP_NONE || (k == 0 && c->x[v]->h.kind == DP_LET)) return DP__DFP_NONE;
  uint32_t b = c->base[ci];
  return c->cls[b] == C_MEMBER || c->cls[b] == C_BARRIER ? b : DP__DFP_NONE;
}

static int flows(const pctx *c, uint32_t v) { return c->cls[v] == C_MEMBER || c->cls[v] == C_BARRIER; }

/* ---------------- regions ---------------- */

static uint32_t find(pctx *c, uint32_t v) {
  while (c->uf[v] != v) {
    c->uf[v] = c->uf[c->uf[v]];
    v = c->uf[v];
  }
  return v;
}

/* Adds region r (a representative) to acc unless closed or there already. */
static int add_restr(pctx *c, dp__dfp_u32s *acc, uint32_t r) {
  if (c->closed[r] || c->stamp[r] == c->clock) return 0;
  c->stamp[r] = c->clock;
  return dp__dfp_u32s_push(acc, r);
}

static int same_place(const pctx *c, uint32_t a, uint32_t b) {
  return c->cls[a] == C_MEMBER && c->cls[b] == C_MEMBER && c->key[a] == c->key[b] &&
         c->block[a] == c->block[b];
}

/* One member or barrier v, in topological order. */
static int visit(pctx *c, uint32_t v, dp__dfp_u32s *parents, dp__dfp_u32s *acc) {
  uint32_t ns = nslots(c, v);
  parents->n = acc->n = 0;
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
  c->clock++; /* the stamp now marks acc */
  for (uint32_t i = 0; i < parents->n; i++) {
    dp__dfp_u32s *pr = &c->restr[parents->a[i]];
    for (uint32_t j = 0; j < pr->n; j++)
      if (add_restr(c, acc, find(c, pr->a[j])) < 0) return -1;
  }
  for (uint32_t i = 0; i < parents->n; i++)
    if (!same_place(c, parents->a[i], v) && add_restr(c, acc, parents->a[i]) < 0) return -1;
  for (uint32_t i = 0; i < parents->n; i++) {
    uint32_t p = parents->a[i];
    if (!same_place(c, p, v) || c->stamp[p] == c->clock) continue;
    c->uf[p] = v;                        /* the producer's region joins v's */
    c->remaining[v] += c->remaining[p];
    c->hascall[v] |= c->hascall[p];
    free(c->restr[p].a);
    c->restr[p] = (dp__dfp_u32s){NULL, 0, 0};
  }
  free(c->restr[v].a);
  c->restr[v] = *acc;
  *acc = (dp__dfp_u32s){NULL, 0, 0};
  /* v's reads are done: regions with no reader left are closed */
  for (uint32_t k = 0; k < ns; k++) {
    uint32_t p = producer(c, v, k);
    if (p == DP__DFP_NONE) continue;
    uint32_t r = find(c, p);
    if (c->remaining[r] && --c->remaining[r] == 0) c->closed[r] = 1;
  }
  return 0;
}

static int make_regions(pctx *c) {
  for (uint32_t v = 0; v < c->n; v++)
    if (flows(c, v))
      for (uint32_t k = 0; k < nslots(c, v); k++) {
        uint32_t p = producer(c, v, k);
        if (p != DP__DFP_NONE) c->remaining[p]++;
      }
  uint32_t root = c->base[c->n - 1];
  if (flows(c, root)) c->remaining[root]++; /* the function's result: never closed */
  dp__dfp_u32s parents = {NULL, 0, 0}, acc = {NULL, 0, 0};
  int rc = 0;
  for (uint32_t v = 0; v < c->n && rc == 0; v++) {
    if (!flows(c, v)) continue;
    rc = visit(c, v, &parents, &acc);
    if (rc == 0 && c->remaining[v] == 0) c->closed[v] = 1;
  }
  free(parents.a);
  free(acc.a);
  return rc;
}

/* ---------------- the hoisted functions ---------------- */

static int hoisted(pctx *c, uint32_t v) {
  return v != DP__DFP_NONE && c->cls[v] == C_MEMBER && c->rid[find(c, v)] != 0;
}

static region *region_of(pctx *c, uint32_t v) { return &c->regs[c->rid[find(c, v)] - 1]; }

/* Which lets the caller drops: the value hoisted, the variable read, and
   only by members of the value's region (vout: read from anywhere else,
   through any chain of wrappers). */
static int mark_lets(pctx *c) {
  /* per variable: read at all, and read from outside its value's region */
  uint8_t *read = dp_calloc(c->n ? c->n : 1, 1), *vout = dp_calloc(c->n ? c->n : 1, 1);
  if (!read || !vout) {
    free(read);
    free(vout);
    return -1;
  }
  for (uint32_t v = 0; v < c->n; v++) {
    if (!flows(c, v)) continue;
    int inside = hoisted(c, v);
    for (uint32_t k = 0; k < nslots(c, v); k++) {
      uint32_t w = kid(c, v, k);
      if (w == DP__DFP_NONE || (k == 0 && c->x[v]->h.kind == DP_LET)) continue;
      for (; w != DP__DFP_NONE && c->cls[w] == C_WRAP; w = wrapped(c, w)) {
        if (c->letof[w] == MULTI) continue;
        read[w] = 1;
        if (!inside || !hoisted(c, c->base[w]) || find(c, v) != find(c, c->base[w])) vout[w] = 1;
      }
    }
  }
  /* the function's result read through variables: read from outside */
  for (uint32_t w = c->n - 1; w != DP__DFP_NONE && c->cls[w] == C_WRAP; w = wrapped(c, w))
    if (c->letof[w] != MULTI) vout[w] = 1;
  for (uint32_t v = 0; v < c->n; v++) {
    uint32_t let = c->letof[v];
    int drop = let != MULTI && read[v] && !vout[v] && !c->has_fnlit && hoisted(c, c->base[v]);
    if (let != MULTI) c->drop[let] = (uint8_t)drop;
  }
  free(read);
  free(vout);
  return 0;
}

/* Numbers the regions with a call, lists their members, marks outputs. */
static int list_regions(pctx *c) {
  for (uint32_t v = 0; v < c->n; v++) {
    if (c->cls[v] != C_MEMBER) continue;
    uint32_t r = find(c, v);
    if (!c->hascall[r]) continue;
    if (!c->rid[r]) {
      void *regs = c->regs;
      uint32_t cap = c->nregs;
      if (dp_grow(&regs, &cap, c->nregs + 1, sizeof *c->regs) < 0) return -1;
      c->regs = regs;
      memset(&c->regs[c->nregs], 0, sizeof *c->regs);
      c->rid[r] = ++c->nregs;
    }
    c->regs[c->rid[r] - 1].nmem++;
  }
  uint32_t total = 0;
  for (uint32_t i = 0; i < c->nregs; i++) {
    c->regs[i].first = total;
    total += c->regs[i].nmem;
    c->regs[i].nmem = 0;
  }
  c->mem = dp_malloc((total ? total : 1) * sizeof *c->mem);
  if (!c->mem) return -1;
  for (uint32_t v = 0; v < c->n; v++)
    if (hoisted(c, v)) {
      region *g = region_of(c, v);
      c->mem[g->first + g->nmem++] = v;
    }
  /* outputs: read from outside the region, or the function's result */
  uint32_t root = c->base[c->n - 1];
  if (hoisted(c, root)) c->isout[root] = 1;
  if (mark_lets(c) < 0) return -1;
  for (uint32_t v = 0; v < c->n; v++) {
    if (!flows(c, v)) continue;
    for (uint32_t k = 0; k < nslots(c, v); k++) {
      uint32_t p = producer(c, v, k);
      if (c->drop[v] && k == 1) continue; /* a dropped let reads nothing */
      if (hoisted(c, p) && !(c->cls[v] == C_MEMBER && find(c, v) == find(c, p))) c->isout[p] = 1;
    }
  }
  /* a region whose only readers were dropped lets (its values are dead but
     for them) keeps one of them: it is still evaluated, as before */
  for (uint32_t v = 0; v < c->n; v++)
    if (c->isout[v]) region_of(c, v)->nout = 1; /* (counted for real below) */
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

/* A fresh global name <function>_<device type>_<n>, n counting per device
   type from where the last one stopped. */
static dp_global *fresh_global(pctx *c, dp_vdev *vd) {
  int t = vd && vd->device_type > 0 && vd->device_type < 64 ? vd->device_type : 0;
  const char *dev = t ? dp_device_type_name(t) : NULL;
  char name[256];
  for (;; c->next_name[t]++) {
    snprintf(name, sizeof name, "%.200s_%s_%u", c->fname, dev ? dev : "device", c->next_name[t]);
    if (!dp_module_func(c->out, name) && !dp_module_primfn(c->out, name)) break;
  }
  c->next_name[t]++;
  return dp_global_new(name, DP_NOSPAN);
}

typedef struct fbuild {
  dp__dfp_vec params;       /* dp_var * (owned) */
  dp__dfp_u32s inputs;      /* node indices */
  dp__ptrmap seen;       /* input -> param index + 1 */
} fbuild;

/* The parameter standing for input xi (one per distinct input). */
static dp_expr *param_for(pctx *c, fbuild *b, uint32_t xi, dp_vdev *fallback) {
  dp_expr *x = c->x[xi];
  dp__ptrslot *s = dp__ptrmap_find(&b->seen, x);
  if (s) return b->params.items[(uintptr_t)s->ptr - 1];
  char name[32];
  if (x->h.kind == DP_VAR) snprintf(name, sizeof name, "%.30s", ((dp_var *)x)->name);
  else snprintf(name, sizeof name, "p%u", b->params.n);
  dp_vdev *vd = dp_domains_lookup(c->d, x, NULL);
  dp_var *p = dp_var_new(name, x->type, vd ? vd : fallback, DP_NOSPAN);
  dp_release(vd);
  if (!p || dp__dfp_vec_push(&b->params, p) < 0 || dp__dfp_u32s_push(&b->inputs, xi) < 0 ||
      dp__ptrmap_put(&b->seen, x, (void *)(uintptr_t)b->params.n) < 0) {
    if (p && (b->params.n == 0 || b->params.items[b->params.n - 1] != p)) dp_release(p);
    return NULL;
  }
  return &p->e;
}

/* The copy of member m inside its function: children in the region are
   their copies (wrappers dropped), constants stay, anything else is read
   through a parameter. */
static dp_expr *copy_member(pctx *c, fbuild *b, uint32_t m, dp_vdev *vd) {
  dp_expr *e = c->x[m];
  uint32_t n = nslots(c, m);
  dp_expr *small[8], **kids = n <= 8 ? small : dp_malloc(n * sizeof *kids);
  if (!kids) return NULL;
  dp_expr *r = NULL;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t xi = kid(c, m, k);
    uint32_t xb = xi == DP__DFP_NONE ? DP__DFP_NONE : c->base[xi];
    if (xi == DP__DFP_NONE) kids[k] = dp_expr_child(e, k);
    else if (hoisted(c, xb) && find(c, xb) == find(c, m)) kids[k] = c->inner[xb];
    else if (c->x[xb]->h.kind == DP_CONST) kids[k] = c->x[xb];
    else if (!(kids[k] = param_for(c, b, xi, vd))) goto out;
  }
  r = dp_expr_with_children(e, kids);
out:
  if (kids != small) free(kids);
  return r;
}

static int make_function(pctx *c, region *g) {
  fbuild b = {{NULL, 0, 0}, {NULL, 0, 0}, DP__PTRMAP_INIT};
  dp_expr **outs = dp_malloc(g->nout * sizeof *outs);
  dp_vdev *vd = NULL;
  dp_expr *body = NULL;
  dp_func *fn = NULL;
  int rc = -1;
  if (!outs) goto out;
  for (uint32_t j = 0; j < g->nmem; j++) {
    uint32_t m = c->mem[g->first + j];
    if (c->isout[m] && !vd) vd = dp_domains_lookup(c->d, c->x[m], NULL);
  }
  for (uint32_t j = 0; j < g->nmem; j++) {
    uint32_t m = c->mem[g->first + j];
    if (!(c->inner[m] = copy_member(c, &b, m, vd))) goto out;
    if (c->isout[m]) outs[c->outpos[m]] = c->inner[m];
  }
  body = g->nout == 1 ? dp_retain(outs[0]) : (dp_expr *)dp_tuple_new(g->nout, outs, DP_NOSPAN);
  if (!body) goto out;
  fn = dp_func_new(b.params.n, (dp_var *const *)b.params.items, body, NULL, NULL, vd, DP_NOSPAN);
  g->global = fn ? fresh_global(c, vd) : NULL;
  if (!g->global || dp_module_add_func(c->out, g->global, fn, &c->err) < 0) goto out;
  g->inputs = b.inputs.a;
  g->ninputs = b.inputs.n;
  b.inputs.a = NULL;
  rc = 0;
out:
  for (uint32_t i = 0; i < b.params.n; i++) dp_release(b.params.items[i]);
  free(b.params.items);
  free(b.inputs.a);
  dp__ptrmap_free(&b.seen);
  free(outs);
  dp_release(body);
  dp_release(fn);
  dp_release(vd);
  return rc;
}

/* ---------------- the caller ---------------- */

/* What the caller reads for hoisted member m: the call, or its projection. */
static dp_expr *out_of(pctx *c, uint32_t m) {
  region *g = region_of(c, m);
  if (g->nout == 1) return g->call;
  if (!c->outexpr[m]) c->outexpr[m] = (dp_expr *)dp_proj_new(g->call, c->outpos[m], DP_NOSPAN);
  return c->outexpr[m];
}

typedef struct cfr {
  uint32_t v;       /* a node of the caller, when g is NULL */
  region *g;
  uint32_t i, n;
} cfr;

typedef struct walk {
  cfr *st;
  uint32_t sp, cap;
  uint8_t *state;   /* per node: 0 new, 1 open, 2 done */
  dp_expr **newx;   /* per node: its new version (owned) */
} walk;

/* What the caller reads for slot k of node v (done already). */
static dp_expr *read_new(pctx *c, walk *w, uint32_t xi, dp_expr *x) {
  if (xi == DP__DFP_NONE) return x;
  if (hoisted(c, xi)) return out_of(c, xi);
  return w->newx[xi];
}

/* Pushes what node xi needs first: its region, or itself. 0 done already,
   1 pushed, -1 error (a cycle would be a bug: regions never form one). */
static int need(pctx *c, walk *w, uint32_t xi) {
  if (xi == DP__DFP_NONE) return 0;
  cfr f = {xi, NULL, 0, 0};
  uint8_t *state = hoisted(c, xi) ? &(f.g = region_of(c, xi))->state : &w->state[xi];
  if (*state == 2) return 0;
  if (*state == 1) {
    c->err = dp_err_new(DP_ERR_GENERIC, DP_NOSPAN, "PartitionByVirtualDevice: the pieces of @%s form a cycle",
                        c->fname);
    return -1;
  }
  *state = 1;
  f.n = f.g ? f.g->ninputs : nslots(c, xi);
  if (dp_grow((void **)&w->st, &w->cap, w->sp + 1, sizeof *w->st) < 0) return -1;
  w->st[w->sp++] = f;
  return 1;
}

static int finish(pctx *c, walk *w, cfr *f) {
  dp_expr *small[8], **kids = f->n <= 8 ? small : dp_malloc(f->n * sizeof *kids);
  if (!kids) return -1;
  for (uint32_t k = 0; k < f->n; k++) {
    uint32_t xi = f->g ? f->g->inputs[k] : kid(c, f->v, k);
    kids[k] = read_new(c, w, xi, xi == DP__DFP_NONE ? dp_expr_child(c->x[f->v], k) : c->x[xi]);
  }
  int rc = -1;
  if (f->g) {
    f->g->call = (dp_expr *)dp_call_new(&f->g->global->e, f->n, kids, NULL, DP_NOSPAN);
    f->g->state = 2;
    rc = f->g->call ? 0 : -1;
  } else {
    dp_expr *x = c->x[f->v];
    /* (a node the graph does not enter, a function literal, is kept whole) */
    w->newx[f->v] = c->drop[f->v] ? dp_retain(kids[2]) : f->n == 0 ? dp_retain(x) : dp_expr_with_children(x, kids);
    w->state[f->v] = 2;
    rc = w->newx[f->v] ? 0 : -1;
  }
  if (kids != small) free(kids);
  return rc;
}

/* The caller's body, in a topological order of its graph with each region
   contracted to its call. */
static dp_expr *rebuild_caller(pctx *c) {
  walk w = {NULL, 0, 0, dp_calloc(c->n, 1), dp_calloc(c->n, sizeof(dp_expr *))};
  uint32_t root = c->n - 1;
  dp_expr *r = NULL;
  int rc = w.state && w.newx ? need(c, &w, root) : -1;
  while (rc >= 0 && w.sp) {
    cfr *f = &w.st[w.sp - 1];
    if (f->i < f->n) {
      uint32_t xi = f->g ? f->g->inputs[f->i] : kid(c, f->v, f->i);
      f->i++;
      rc = need(c, &w, xi);
    } else {
      cfr done = *f;
      w.sp--;
      rc = finish(c, &w, &done);
    }
  }
  if (rc >= 0) r = dp_retain(read_new(c, &w, root, c->x[root]));
  for (uint32_t i = 0; w.newx && i < c->n; i++) dp_release(w.newx[i]);
  free(w.newx);
  free(w.state);
  free(w.st);
  if (!r) set_oom(c);
  return r;
}

/* ---------------- one function, the module ---------------- */

static void pctx_clear(pctx *c) {
  for (uint32_t i = 0; i < c->n; i++) {
    if (c->restr) free(c->restr[i].a);
    if (c->inner) dp_release(c->inner[i]);
    if (c->outexpr) dp_release(c->outexpr[i]);
  }
  for (uint32_t i = 0; i < c->nregs; i++) {
    dp_release(c->regs[i].global);
    dp_release(c->regs[i].call);
    free(c->regs[i].inputs);
  }
  free(c->regs);
  dp__dfp_graph_free(&c->g);
  free(c->cls); free(c->closed); free(c->hascall); free(c->isout); free(c->base); free(c->block);
  free(c->key); free(c->uf); free(c->remaining); free(c->stamp); free(c->restr); free(c->rid);
  free(c->mem); free(c->outpos); free(c->inner); free(c->outexpr);
  free(c->letof); free(c->drop);
  dp_domains *d = c->d;
  dp_module *out = c->out;
  dp_partition_by by = c->by;
  dp_err *err = c->err;
  memset(c, 0, sizeof *c); /* the name counters too: they count per function */
  c->d = d;
  c->out = out;
  c->by = by;
  c->err = err;
}

/* Partitions function `name`: adds the hoisted functions to c->out and
   replaces the function there. */
static int partition_fn(pctx *c, const char *name, dp_func *fn) {
  c->fname = name;
  int rc = -1;
  if (dp__dfp_graph_build(&c->g, fn->body, 0) < 0) goto oom;
  c->n = c->g.n;
  c->x = c->g.x;
  if (alloc_arrays(c) < 0) goto oom;
  assign_blocks(c);
  classify(c);
  if (resolve_bases(c) < 0) goto oom;
  if (make_regions(c) < 0 || list_regions(c) < 0) goto oom;
  for (uint32_t i = 0; i < c->nregs; i++)
    if (make_function(c, &c->regs[i]) < 0) goto oom;
  if (c->nregs) {
    dp_expr *body = rebuild_caller(c);
    if (!body) goto done;
    dp_expr *small[17], **kids = fn->nparams < 16 ? small : dp_malloc((fn->nparams + 1) * sizeof *kids);
    dp_expr *nf = NULL;
    if (kids) {
      for (uint32_t i = 0; i < fn->nparams; i++) kids[i] = &fn->params[i]->e;
      kids[fn->nparams] = body;
      nf = dp_expr_with_children(&fn->e, kids);
      if (kids != small) free(kids);
    }
    dp_release(body);
    if (!nf) goto oom;
    rc = dp_module_set_func(c->out, name, (dp_func *)nf, &c->err);
    dp_release(nf);
    goto done;
  }
  rc = 0;
  goto done;
oom:
  set_oom(c);
done:
  pctx_clear(c);
  return rc;
}

static int is_primitive(const dp_func *f) {
  const dp_aval *v = f->attrs ? dp_attrs_get(f->attrs, "Primitive") : NULL;
  return v && v->kind == DP_AV_INT && v->u.i != 0;
}

static int typed(const dp_module *m) {
  for (uint32_t i = 0; i < m->nfuncs; i++)
    if (!m->funcs[i].fn->e.type) return 0;
  return 1;
}

dp_module *dp_partition_by_device(dp_module *m, const dp_config *cfg, dp_partition_by by,
                                  dp_err **err) {
  dp_module *r = dp_plan_rewrite(m, cfg, err), *planned = NULL;
  if (r) planned = dp_plan_conflicts(r, cfg, err);
  dp_release(r);
  if (!planned) return NULL;
  pctx c;
  memset(&c, 0, sizeof c);
  c.by = by;
  c.d = dp_plan_analyze(planned, cfg, err);
  if (!c.d || dp_plan_default(c.d, err) < 0 || !(c.out = dp_module_copy(planned))) goto fail;
  for (uint32_t i = 0; i < planned->nfuncs; i++) {
    dp_defn *f = &planned->funcs[i];
    if (is_primitive(f->fn)) continue;
    if (partition_fn(&c, f->global->name, f->fn) < 0) {
      dp_err_set(err, c.err ? c.err : dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      c.err = NULL;
      goto fail;
    }
  }
  if (typed(m) && dp_infer_module(c.out, err) < 0) goto fail;
  dp_release(c.d);
  dp_release(planned);
  return c.out;
fail:
  dp_err_free(c.err);
  dp_release(c.out);
  dp_release(c.d);
  dp_release(planned);
  return NULL;
}
