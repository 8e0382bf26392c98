/*
 * Placement by cost (PlanDevices' placement = "min_bytes"), between
 * analysis and defaulting: every class of domains that nobody constrained
 * and that a copy could reach gets the device that minimises the bytes
 * copied (or, with compute costs, the time: compute + bytes / bandwidth).
 * Where devplan goes further than TVM: TVM's defaulting rules give such a
 * value the device the first rule to reach it says.
 *
 * Requires: domains analysed with ix->relax (analyze.c), and the places
 * where PlanDevices would unify a value with its reader but capture can
 * put a copy: analysis' flows (the value's node, the domain it is made in,
 * the domain it is read in). Leaves: each such free class constrained to
 * its device (rule R_PLACEMENT, the class's first expression as why), and
 * the decisions (struct dp__placement, this file's own, which the caller
 * keeps and frees with dp__place_free) for explanations and replays;
 * defaulting then fixes what is left (classes no flow reaches) by TVM's
 * rules.
 *
 * The problem given to the optimiser (place_solve.c): a variable per class
 * a flow touches (constrained classes are fixed at their device, filled in
 * from the default); a net per value and making class, read by the classes
 * of its readers, of the value's bytes (its checked type): one copy per
 * value and destination device, as ShareCopies leaves a plan; the devices
 * a class may take: the configuration's (one per primitive target, and the
 * default), less those the capability hook refuses a call of it.
 * Annotations are never moved: a class an annotation reaches is fixed.
 * A device in a memory scope is one more device here; where a module names
 * scopes, plan.c has TVM's rules plan the result once more to fill them in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"

struct dp__placement {
  dp_place_problem p;
  uint32_t *label;            /* per variable (in block) */
  uint32_t labdev[64];        /* label -> device index */
  uint32_t nlab, nsel;        /* labels; the first nsel a free class may take (all, once
                                 the annotations' devices are known) */
  int time;                   /* costs in picoseconds (compute, bandwidth), else bytes */
  int tie;                    /* bytes times COPY_TIE plus copies (COPY_TIE: net()) */
  /* per variable: its class's root domain and first expression (pctx's,
     kept: a decision reads them through its variable) */
  uint32_t *vroot;
  dp_expr **vwhy;
  void *block;                /* p's arrays but the nets, the labels, vroot and vwhy
                                 (problem_room) */
  /* the decisions, in the order made: variable, the constraint domain made
     (increasing), read through dvar and dcons: var NULL where every
     variable is decided (the i-th decision is variable i), cons NULL where
     the decisions' domains are cons0, cons0 + 1, ... (decide_one's fast
     path: each made as the next domain), as on the generated modules,
     whose 8 bytes a decision (at 1,000,000 calls 8 MB) then are not made */
  uint32_t *var, *cons;
  uint32_t n, cons0;
};

static inline uint32_t dvar(const struct dp__placement *pl, uint32_t i) { return pl->var ? pl->var[i] : i; }
static inline uint32_t dcons(const struct dp__placement *pl, uint32_t i) {
  return pl->cons ? pl->cons[i] : pl->cons0 + i;
}

void dp__place_free(struct dp__placement *pl) {
  if (!pl) return;
  dp_place_problem *p = &pl->p;
  p->fixed = NULL, p->allowed = NULL, p->stamp = NULL, p->pins = NULL; /* (block's) */
  dp_place_free(p);
  free(pl->block);
  free(pl->var);
  free(pl->cons);
  free(pl);
}

typedef struct pctx {
  dp__domains *d;
  dp__flows *flows;           /* analysis' (its memory taken by the solve) */
  dp__index *ix;
  const dp_place_hooks *h;
  struct dp__placement *pl;
  uint32_t *var_of;           /* domain (root) -> variable + 1 (0: none; zeroed memory, so
                                 only the roots met are written) */
  /* per variable, as found (with the problem's fixed, allowed and stamp,
     in one block: problem_room; capv is the room of each): root, first
     expression */
  uint32_t *vroot;
  dp_expr **vwhy;
  uint32_t *vpart;            /* the device of a partly constrained class (a memory scope
                                 or an id left open), else 0; npart of them */
  uint32_t npart;
  uint32_t *exact, nexact;    /* the roots an operator's rule puts on the host, whole
                                 (increasing; few, most modules none) */
  uint32_t nv, capv;
  int order_in_pins;          /* nets: the value order is in the pins' room (value_order) */
  uint32_t *keys, capkeys;    /* nets: the keys of one value's flows */
  const dp_type *bytes_type;  /* value_bytes' last type (NULL: none yet; 0 bytes) */
  int64_t bytes;
  int64_t total;              /* the bytes of every net, once per reader (nets) */
  int tying;                  /* the nets' weights are tied (COPY_TIE): placing by bytes, the
                                 total at most TIE_MAX so far */
  void *spare;                /* the largest block the solve left (nspare bytes), its pages
                                 touched: the room of the domains' constraints (decide) */
  size_t nspare;
  void *spare2;               /* the next largest (nspare2 bytes) */
  size_t nspare2;
  size_t nvar_of;             /* var_of's block, bytes (the solve's room after) */
  int lean;                   /* capture alone reads the domains (dp__place's lean) */
  dp_err *err;
} pctx;

/* Bytes of a value of type t (0 when unknown: no dimension may be ?;
   TOO_LARGE when they reach DP_PLACE_INF, which means "cannot"). */
#define TOO_LARGE (-1)
static int64_t type_bytes(const dp_type *t) {
  if (!t) return 0;
  if (t->h.kind == DP_TY_TENSOR) {
    const dp_tensor_type *tt = (const dp_tensor_type *)t;
    int64_t n = (int64_t)dp_dtype_bytes(tt->dtype);
    int large = 0;
    for (uint32_t i = 0; i < tt->ndim; i++) {
      if (tt->dims[i] < 0) return 0;
      if (tt->dims[i] == 0) return 0;
      if (n >= DP_PLACE_INF / tt->dims[i]) large = 1;
      else n *= tt->dims[i];
    }
    return large ? TOO_LARGE : n;
  }
  if (t->h.kind == DP_TY_TUPLE) { /* (types nest as deep as written: recursion is fine) */
    const dp_tuple_type *tt = (const dp_tuple_type *)t;
    int64_t n = 0;
    for (uint32_t i = 0; i < tt->n; i++) {
      int64_t f = type_bytes(tt->fields[i]);
      if (f == TOO_LARGE || n >= DP_PLACE_INF - f) return TOO_LARGE;
      n += f;
    }
    return n;
  }
  return 0;
}

/* The bytes of value node id (e). (Types are interned: the last type's
   bytes are kept, as most values of a module share a few types; the type
   is the index's where it has it, without e, cold at a million calls.) */
static int64_t value_bytes(pctx *c, uint32_t id, const dp_expr *e) {
  const dp_type *t = dp__type_of(c->ix, id);
  if (!t && e->h.kind == DP_VAR) t = dp_var_annot((const dp_var *)e);
  if (t != c->bytes_type) {
    c->bytes_type = t;
    c->bytes = type_bytes(t);
  }
  return c->bytes;
}

/* The error for a value whose bytes no cost can hold (alone, or with the
   values before it: all): placement would otherwise weigh it as nothing,
   or as forbidden. */
static int too_large(pctx *c, const dp_expr *value, int all) {
  const dp_type *t = value->type;
  if (!t && value->h.kind == DP_VAR) t = dp_var_annot((const dp_var *)value);
  char *ts = t ? dp_type_str(t) : NULL;
  c->err = dp_err_at(c->d->ctx, DP_ERR_VALUE, value->span,
                     all ? "placement by cost: the module's values have more bytes together than a cost can "
                           "count (2^61), reached at a value of type %s"
                         : "placement by cost: a value of type %s has more bytes than a cost can count (2^61)",
                     ts ? ts : "?");
  free(ts);
  return -1;
}

static int oom(pctx *c) {
  if (!c->err) c->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  return -1;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* The label of device index dev (added when new; fixed labels only). */
static uint32_t label_of(pctx *c, uint32_t dev) {
  struct dp__placement *pl = c->pl;
  for (uint32_t l = 0; l < pl->nlab; l++)
    if (pl->labdev[l] == dev) return l;
  if (pl->nlab == 64) {
    c->err = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "placement by cost: more than 64 devices");
    return DP__NONE_ID;
  }
  pl->labdev[pl->nlab] = dev;
  return pl->nlab++;
}

/* The configuration's devices: the default first, then one per primitive
   target (device type, id 0, target), canonical. */
static int selectable(pctx *c) {
  dp__devices *dv = c->d->dev;
  const dp_config *cfg = dv->cfg;
  label_of(c, dv->dflt);
  for (uint32_t i = 0; i < cfg->ntargets; i++) {
    dp_err *e = NULL;
    dp_vdev *vd = dp_vdev_make(dv->ctx, 0, 0, cfg->primitive_targets[i], NULL, &e);
    uint32_t k = vd ? dp__dev_canon(dv, vd, NULL) : DP__NONE_ID;
    dp_release(vd);
    dp_err_free(e);
    if (k != DP__NONE_ID && k && label_of(c, k) == DP__NONE_ID) return -1;
  }
  c->pl->nsel = c->pl->nlab;
  return dv->oom ? oom(c) : 0;
}

/* The classes an operator's rule puts on the host: the host device, whole
   (its memory scope left open is not the user's to fill in). */
static int exact_classes(pctx *c) {
  dp__domains *d = c->d;
  uint32_t n = 0;
  for (uint32_t i = 0; i < d->ncons; i++) n += d->nodes[d->cons[i].dom].crule == R_HOST_ARG;
  if (!n) return 0;
  if (!(c->exact = dp_malloc((size_t)n * sizeof *c->exact))) return oom(c);
  for (uint32_t i = 0; i < d->ncons; i++)
    if (d->nodes[d->cons[i].dom].crule == R_HOST_ARG) c->exact[c->nexact++] = dp__dom_find(d, d->cons[i].dom);
  qsort(c->exact, n, sizeof *c->exact, cmp_u32);
  return 0;
}

/* Is root r's class one exact_classes found? */
static int is_exact(const pctx *c, uint32_t r) {
  uint32_t lo = 0, hi = c->nexact;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (c->exact[mid] < r) lo = mid + 1;
    else hi = mid;
  }
  return lo < c->nexact && c->exact[lo] == r;
}

/* The problem's arrays per variable (fixed, allowed, stamp: the labels
   later) and its pins, and each variable's root, expression (not where
   lean: no decision names one) and partial device, for capv variables and
   capn pins: one block (pl->block), made at once for what nets() counted
   (count_classes), so that a module of a million calls pays the 4 KiB
   faults at the ends of a mapping (where a huge page does not fit) once
   rather than for each array. Called again with more room (never, as
   nets() counts it), what is in it moves. The nets have a block of their
   own (net_room). 0, -1. */
static int problem_room(pctx *c, uint32_t capv, uint32_t capn) {
  struct dp__placement *pl = c->pl;
  dp_place_problem *p = &pl->p;
  if (capv < 1) capv = 1;
  if (capn < 1) capn = 1;
  size_t v8 = (size_t)capv * 8, w8 = c->lean ? 0 : v8; /* (allowed; vwhy) */
  uint64_t bytes = (uint64_t)v8 + w8 + (uint64_t)capv * 16 + (uint64_t)capn * sizeof *p->pins;
  if ((size_t)bytes != bytes) return oom(c);
  char *b = dp_calloc(1, (size_t)bytes); /* (zeroed: the partial devices, 0 for most, are
                                            not written; a large block's pages come zeroed,
                                            untouched until used) */
  if (!b) return oom(c);
  uint64_t *allowed = (uint64_t *)b;                 /* (the 8-byte ones first) */
  dp_expr **vwhy = c->lean ? NULL : (dp_expr **)(b + v8);
  uint32_t *vroot = (uint32_t *)(b + v8 + w8), *vpart = vroot + capv, *fixed = vpart + capv,
           *stamp = fixed + capv, *pins = stamp + capv;
  if (pl->block) {
    memcpy(allowed, p->allowed, (size_t)c->nv * sizeof *allowed);
    if (vwhy) memcpy(vwhy, c->vwhy, (size_t)c->nv * sizeof *vwhy);
    memcpy(vroot, c->vroot, (size_t)c->nv * sizeof *vroot);
    memcpy(vpart, c->vpart, (size_t)c->nv * sizeof *vpart);
    memcpy(fixed, p->fixed, (size_t)c->nv * sizeof *fixed);
    memcpy(stamp, p->stamp, (size_t)c->nv * sizeof *stamp);
    memcpy(pins, p->pins, (size_t)p->npins * sizeof *pins);
    free(pl->block);
  }
  pl->block = b;
  p->allowed = allowed, c->vwhy = vwhy, c->vroot = vroot, c->vpart = vpart;
  p->fixed = fixed, p->stamp = stamp, p->pins = pins;
  c->capv = capv, p->cappins = capn;
  return 0;
}

/* Room for n more nets: made at first for a net per value the flows
   carry (count_classes counts them), grown where a value read from several
   classes makes more. 0, -1. */
static int net_room(pctx *c, uint32_t n) {
  dp_place_problem *p = &c->pl->p;
  if (n <= p->capnets - p->nnets) return 0;
  if (n > UINT32_MAX - p->nnets) return oom(c);
  uint32_t need = p->nnets + n;
  if (!p->nets) { /* (to size at first; doubled after) */
    if (!(p->nets = dp_malloc((size_t)need * sizeof *p->nets))) return oom(c);
    p->capnets = need;
    return 0;
  }
  return dp_grow((void **)&p->nets, &p->capnets, need, sizeof *p->nets) < 0 ? oom(c) : 0;
}

/* The root of domain x's class: dp__dom_find's, read directly where the
   path is at most one step (most domains after analysis' finds), where
   dp__dom_find would compress nothing. */
static inline uint32_t root_of(dp__domains *d, uint32_t x) {
  uint32_t p = d->nodes[x].parent;
  return d->nodes[p].parent == p ? p : dp__dom_find(d, x);
}

/* A new variable for the class of root r (var_for's, when first met), or
   DP__NONE_ID + c->err. */
static uint32_t new_var(pctx *c, uint32_t r, dp_expr *why) {
  dp__domains *d = c->d;
  dp_place_problem *p = &c->pl->p;
  /* (more room: never, as nets() makes it; nor where the value order is
     in the pins' room, which a move would leave behind) */
  if (c->nv == c->capv &&
      (c->order_in_pins ||
       problem_room(c, c->capv < UINT32_MAX / 2 ? 2 * c->capv : UINT32_MAX, c->pl->p.cappins) < 0)) {
    oom(c);
    return DP__NONE_ID;
  }
  uint32_t v = c->nv, dev = d->nodes[r].vdev;
  /* (dp__place_var_init's fields, written once each) */
  p->stamp[v] = DP__NONE_ID;
  if (dev) { /* an annotation reached it: fixed, at its device as defaulting fills it in
                (a partly constrained one may take any label that refines it: widen) */
    uint32_t full = dp__dev_default(d->dev, dev, d->dev->dflt), l = label_of(c, full);
    if (l == DP__NONE_ID) return DP__NONE_ID;
    p->fixed[v] = l;
    p->allowed[v] = p->nlabels == 64 ? UINT64_MAX : ((uint64_t)1 << p->nlabels) - 1;
    if (!is_exact(c, r) && !dp_vdev_is_fully_constrained(d->dev->v[dev])) c->vpart[v] = dev, c->npart++;
  } else {
    p->fixed[v] = DP__NONE_ID;
    p->allowed[v] = 0; /* (every label: widen) */
  }
  c->nv++;
  c->vroot[v] = r;
  if (!c->lean) c->vwhy[v] = why; /* (lean: no decision names one) */
  c->var_of[r] = v + 1;
  return v;
}

/* The variable of domain dom's class (new when first met), or DP__NONE_ID
   + c->err. */
static inline uint32_t var_for(pctx *c, uint32_t dom, dp_expr *why) {
  uint32_t r = root_of(c->d, dom), v = c->var_of[r];
  return v ? v - 1 : new_var(c, r, why);
}

/* ---- nets: the flows of one value and making class ---- */

/* What groups a value's flows into nets: the class it is made in, or the
   device of a decided one (a value made in two classes of one device,
   through a copy to itself or an annotation looked through, is made there
   once). */
static inline uint32_t skey_of(dp__domains *d, uint32_t src) {
  uint32_t r = root_of(d, src), dev = d->nodes[r].vdev;
  return dev ? 0x80000000u | dev : r;
}

/* The flows by value, stably: a counting sort, or none where analysis
   made them in value order already; and the classes the flows name
   (count_classes), in the same pass over the flows. The sort's counts,
   an array of a value id each, go in the array of a variable per domain
   (all 0 before the nets, zeroed again after: pages the nets touch
   anyway, not a block touched once; chain at 1,000,000 calls: 12 MB)
   where it holds them, else in a block of their own; its order goes in
   the pins' room (the nets fill it behind them as they read it, a pin
   per flow at most, so a pin is written only where the order was read
   already: chain at 1,000,000 calls, 8 MB not touched once). */
typedef struct vorder {
  uint32_t *start;            /* the counts, then each value's first place (NULL: sorted) */
  int own;                    /* start is a block of its own, not the variables' array */
  uint32_t nvalues;           /* values the flows carry */
} vorder;

/* Marks root r's bit: 1 when it was not marked. */
static inline uint32_t mark(uint64_t *seen, uint32_t r) {
  uint64_t w = seen[r >> 6], m = (uint64_t)1 << (r & 63);
  seen[r >> 6] = w | m;
  return !(w & m);
}

/* Counts flow i's value (the counts made at the first flow out of value
   order, from the flows before it). 0, -1. */
static int count_value(pctx *c, vorder *vo, const dp__flowrec *f, uint32_t i) {
  if (!vo->start) {
    uint64_t nids = (uint64_t)c->ix->n + 2;
    vo->own = nids > c->d->nnodes;
    if (!vo->own) vo->start = c->var_of;
    else if (!(vo->start = (size_t)(nids * 4) == nids * 4 ? dp_calloc((size_t)nids, 4) : NULL)) return -1;
    for (uint32_t j = 0; j < i; j++) vo->start[f[j].value + 1]++;
  }
  vo->start[f[i].value + 1]++;
  return 0;
}

/* The classes the flows name (makers' and readers' roots, each once,
   marked in a bit per domain): as many variables as nets() can make, its
   room made to that size. (Room for a variable per class a flow could
   name was up to three times what a let-shaped module of a million calls
   made.) A domain just marked is not looked up again: a call's flows
   share its domain, and on a chain each value is made where the last
   flow was read. With them the values' counts (value_order). 0, -1. */
static int count_classes(pctx *c, vorder *vo, uint32_t *nclasses) {
  dp__domains *d = c->d;
  const dp__flowrec *f = c->flows->v;
  uint64_t *seen = dp_calloc(((size_t)d->nnodes + 63) / 64, sizeof *seen);
  if (!seen) return oom(c);
  uint32_t nc = 0, last = DP__NONE_ID, n = c->flows->n;
  vo->nvalues = n > 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t a = f[i].src, b = f[i].dst;
    if (a != last) nc += mark(seen, root_of(d, a));
    if (b != last && b != a) nc += mark(seen, root_of(d, b));
    last = b;
    if (!vo->start && i > 0) { /* (in value order so far) */
      if (f[i - 1].value <= f[i].value) {
        vo->nvalues += f[i - 1].value != f[i].value;
        continue;
      }
    } else if (!vo->start) continue;
    if (count_value(c, vo, f, i) < 0) {
      free(seen);
      return oom(c);
    }
  }
  free(seen);
  *nclasses = nc;
  return 0;
}

/* The order of the flows by value, from count_classes' counts (vo->start
   NULL: in order already, *out NULL), in room (nroom uint32_t: the pins')
   where it fits, else in a block of its own (*out != room: the caller
   frees it). The counts zeroed again (the variables' array) or freed.
   0, -1. */
static int value_order(pctx *c, vorder *vo, uint32_t *room, uint32_t nroom, uint32_t **out) {
  const dp__flowrec *flows = c->flows->v;
  uint32_t n = c->flows->n, nids = c->ix->n, *start = vo->start, nv = 0;
  *out = NULL;
  if (!start) return 0;
  uint32_t *order = room && n <= nroom ? room : dp_malloc((size_t)n * sizeof *order);
  if (order) {
    for (uint32_t v = 0; v <= nids; v++) {
      uint32_t k = start[v + 1];
      nv += k != 0;
      start[v + 1] = k + start[v];
    }
    for (uint32_t i = 0; i < n; i++) order[start[flows[i].value]++] = i;
    vo->nvalues = nv;
  }
  if (!vo->own) memset(start, 0, ((size_t)nids + 2) * sizeof *start);
  else free(start);
  vo->start = NULL;
  *out = order;
  return order ? 0 : -1;
}

typedef struct fkey { uint32_t s, i; } fkey;

static int cmp_flow(const void *a, const void *b) {
  const fkey *x = a, *y = b;
  if (x->s != y->s) return x->s < y->s ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* order[0..k), the flows of one value, and their keys by key, then
   index (stable: they are in index order). 0, -1. */
static int sort_by_key(uint32_t *order, uint32_t *key, uint32_t k) {
  if (k > 16) {
    fkey *g = dp_malloc((size_t)k * sizeof *g);
    if (!g) return -1;
    for (uint32_t a = 0; a < k; a++) g[a] = (fkey){key[a], order[a]};
    qsort(g, k, sizeof *g, cmp_flow);
    for (uint32_t a = 0; a < k; a++) key[a] = g[a].s, order[a] = g[a].i;
    free(g);
    return 0;
  }
  for (uint32_t a = 1; a < k; a++) { /* insertion sort: stable */
    uint32_t x = order[a], kx = key[a], b = a;
    for (; b > 0 && key[b - 1] > kx; b--) order[b] = order[b - 1], key[b] = key[b - 1];
    order[b] = x, key[b] = kx;
  }
  return 0;
}

/* dp_place_net for a net whose readers are already at the end of the
   pins (p->pins + p->npins, k of them): the repeats and the maker dropped
   in place, as dp_place_net drops them from a copy. */
static void net_in_place(dp_place_problem *p, uint32_t src, uint32_t k, int64_t w) {
  if (w <= 0 || k == 0) return;
  uint32_t *pin = p->pins + p->npins, id = p->nnets, kept = 0;
  for (uint32_t i = 0; i < k; i++) {
    uint32_t r = pin[i];
    if (r == src || p->stamp[r] == id) continue;
    p->stamp[r] = id;
    pin[kept++] = r;
  }
  if (kept == 0) return;
  p->nets[p->nnets++] = (dp_place_pin_range){src, p->npins, kept, w};
  p->npins += kept;
}

/* Placing by bytes, of two placements that copy as many bytes the one with
   fewer copies is cheaper: each net's weight is its bytes times COPY_TIE,
   plus one (a copy). Lexicographic while two placements differ by fewer
   than COPY_TIE copies, and where every weight stays far from overflow:
   while the nets' total (every net's bytes times its readers) is at most
   TIE_MAX, written so as each net is made (c->tying), else bytes alone. */
#define COPY_TIE 1024
#define TIE_MAX (DP_PLACE_INF / 16 / COPY_TIE)

/* Costs in picoseconds (compute, bandwidth) rather than bytes? */
static int by_time(const pctx *c) {
  return c->h->compute || c->h->bandwidth || dp_config_has_bandwidths(c->d->dev->cfg);
}

/* The nets before net i back to their bytes: the total went past TIE_MAX. */
static void untie(pctx *c, uint32_t i) {
  dp_place_pin_range *nets = c->pl->p.nets;
  for (uint32_t j = 0; j < i; j++) nets[j].w = (nets[j].w - 1) / COPY_TIE;
  c->tying = 0;
}

/* The net of value x made in the class of domain src and read in those of
   the flows order[0..k) (order NULL: the flows 0..k), its readers written
   where its pins go (the room for a pin per flow is made at once), not
   into an array of their own. 0, -1 + c->err. */
static int net(pctx *c, uint32_t value, uint32_t src, const dp__flowrec *flows, const uint32_t *order,
               uint32_t k) {
  dp_place_problem *p = &c->pl->p;
  dp_expr *x = c->ix->x[value];
  uint32_t *readers = p->pins + p->npins, s = var_for(c, src, x);
  if (s == DP__NONE_ID) return -1;
  for (uint32_t q = 0; q < k; q++) {
    uint32_t r = var_for(c, flows[order ? order[q] : q].dst, x);
    if (r == DP__NONE_ID) return -1;
    readers[q] = r;
  }
  int64_t w = value_bytes(c, value, x);
  if (w > 0 && c->h->recomputable && c->h->recomputable(c->h->ud, x)) w = 0; /* (recompute.c) */
  if (w == TOO_LARGE) return too_large(c, x, 0);
  if (p->nnets == p->capnets && net_room(c, 1) < 0) return -1;
  uint32_t before = p->nnets;
  if (k == 1 && w > 0 && readers[0] != s) /* (a net of one reader, most of them: one reader
                                              needs no stamp against repeats) */
    p->nets[p->nnets++] = (dp_place_pin_range){s, p->npins++, 1, w};
  else
    net_in_place(p, s, k, w);
  if (p->nnets == before) return 0;
  /* every copy together stays below DP_PLACE_INF: a net copies at most
     once per reader */
  int64_t n = p->nets[before].n;
  if (n == 1 ? w > DP_PLACE_INF - 1 - c->total : w > (DP_PLACE_INF - 1 - c->total) / n) return too_large(c, x, 1);
  c->total += w * n;
  if (c->tying && c->total > TIE_MAX) untie(c, before);
  if (c->tying) p->nets[before].w = w * COPY_TIE + 1;
  return 0;
}

/* The nets of one value: its flows order[0..k) (order NULL: the flows
   0..k), by making class (skey), then index, one net per class. *order is
   made (the identity) where they must be sorted and there is none; the
   keys in c->keys. */
static int value_nets(pctx *c, const dp__flowrec *flows, uint32_t **order, uint32_t i, uint32_t k) {
  dp__domains *d = c->d;
  uint32_t *o = *order ? *order + i : NULL;
  const dp__flowrec *f = o ? flows : flows + i;
  uint32_t x = f[o ? o[0] : 0].value;
  if (k == 1) return net(c, x, f[o ? o[0] : 0].src, f, o, 1);
  uint32_t k0 = skey_of(d, f[o ? o[0] : 0].src), q = 1;
  while (q < k && skey_of(d, f[o ? o[q] : q].src) == k0) q++;
  if (q == k) return net(c, x, f[o ? o[0] : 0].src, f, o, k); /* (most: read from one class) */
  if (k > c->capkeys && dp_grow((void **)&c->keys, &c->capkeys, k, sizeof *c->keys) < 0) return oom(c);
  uint32_t *key = c->keys, sorted = 1;
  for (q = 0; q < k; q++) {
    key[q] = skey_of(d, f[o ? o[q] : q].src);
    sorted &= q == 0 || key[q - 1] <= key[q];
  }
  if (!sorted) {
    if (!*order) {
      uint32_t n = c->flows->n;
      if (!(*order = dp_malloc((size_t)n * sizeof **order))) return oom(c);
      for (uint32_t a = 0; a < n; a++) (*order)[a] = a;
      o = *order + i, f = flows;
    }
    if (sort_by_key(o, key, k) < 0) return oom(c);
  }
  for (q = 0; q < k;) {
    uint32_t e = q + 1;
    while (e < k && key[e] == key[q]) e++;
    if (net(c, x, f[o ? o[q] : q].src, o ? f : f + q, o ? o + q : NULL, e - q) < 0) return -1;
    q = e;
  }
  return 0;
}

/* One net per (value, making class): the flows by value, then making
   class, then index. */
static int nets(pctx *c) {
  const dp__flowrec *flows = c->flows->v;
  uint32_t n = c->flows->n, *order = NULL, nclasses, nvalues;
  /* Room for what the flows make, at once: a variable per class a flow
     names, a pin per flow, a net per value the flows carry (most values
     are read from one class: a net each at most; growing instead copies
     each array at every doubling) */
  vorder vo = {0};
  if (count_classes(c, &vo, &nclasses) < 0 || problem_room(c, nclasses, n) < 0) {
    if (vo.own) free(vo.start);
    else if (vo.start) memset(vo.start, 0, ((size_t)c->ix->n + 2) * sizeof *vo.start);
    return -1;
  }
  if (!n) return 0;
  dp_place_problem *p = &c->pl->p;
  if (value_order(c, &vo, p->pins, p->cappins, &order) < 0) return oom(c);
  nvalues = vo.nvalues;
  if (net_room(c, nvalues) < 0) {
    if (order != p->pins) free(order);
    return -1;
  }
  c->order_in_pins = order && order == p->pins;
  int rc = 0;
  c->total = 0;
  for (uint32_t i = 0; i < n && rc == 0;) {
    uint32_t value = flows[order ? order[i] : i].value, j = i + 1;
    while (j < n && flows[order ? order[j] : j].value == value) j++;
    rc = value_nets(c, flows, &order, i, j - i);
    i = j;
  }
  if (!c->order_in_pins) free(order); /* (value_nets' identity order, or value_order's own) */
  c->order_in_pins = 0;
  free(c->keys);
  c->keys = NULL;
  return rc;
}

/* A free class may take any device of the configuration or of an
   annotation (a device with a memory scope exists only where annotations
   name it; leaving those out would copy to a scope and back for nothing). */
static int widen(pctx *c) {
  struct dp__placement *pl = c->pl;
  uint64_t all = pl->nlab == 64 ? UINT64_MAX : ((uint64_t)1 << pl->nlab) - 1;
  /* a partly constrained class joined with each device: cpu and the
     memory scope "global" make "cpu, global" (as unification would) */
  /* (the joins of a device with the labels there were already: once per
     run of variables of one device while no label is added) */
  for (uint32_t v = 0, last = 0, lastn = 0; v < c->nv && c->npart; v++) {
    if (!c->vpart[v] || (c->vpart[v] == last && pl->nlab == lastn)) continue;
    last = c->vpart[v], lastn = pl->nlab;
    for (uint32_t l = 0, n = pl->nlab; l < n && pl->nlab < 64; l++) {
      uint32_t j = dp__dev_join(c->d->dev, c->vpart[v], pl->labdev[l]);
      if (j != DP__NONE_ID && label_of(c, j) == DP__NONE_ID) return oom(c);
    }
  }
  if (c->d->dev->oom) return oom(c);
  all = pl->nlab == 64 ? UINT64_MAX : ((uint64_t)1 << pl->nlab) - 1;
  pl->nsel = pl->nlab;
  uint64_t ok = 0;
  for (uint32_t v = 0, last = 0; v < c->nv; v++) {
    if (pl->p.fixed[v] == DP__NONE_ID) pl->p.allowed[v] = all;
    if (!c->npart || !c->vpart[v]) continue;
    if (c->vpart[v] != last) { /* (the labels it may take: once per run of one device) */
      last = c->vpart[v], ok = 0;
      for (uint32_t l = 0; l < pl->nlab; l++)
        if (dp__dev_join(c->d->dev, c->vpart[v], pl->labdev[l]) == pl->labdev[l]) ok |= (uint64_t)1 << l;
    }
    pl->p.fixed[v] = DP__NONE_ID;
    pl->p.allowed[v] = ok;  /* (its defaulted device is one of them) */
  }
  return 0;
}

/* ---- what calls cost and where they can run ---- */

static int hook_failed(pctx *c, dp_err *e, const dp_expr *call) {
  if (e && e->span.line == 0 && call->span.line) {
    e->span = call->span;
    if (!e->source) e->source = dp_strdup(dp_ctx_source_name(c->d->ctx, call->span.source));
  }
  c->err = e ? e : dp_err_new(DP_ERR_CALLBACK, call->span, "placement: a hook failed");
  return -1;
}

static int no_device(pctx *c, dp_expr *call, const char *why) {
  char *w = dp__describe(c->d->ctx, call);
  c->err = dp_err_at(c->d->ctx, DP_ERR_VALUE, call->span, "placement by cost: %s %s", w ? w : "?", why);
  free(w);
  return -1;
}

/* The capability function refuses call where an annotation puts it. */
static int refused(pctx *c, dp_expr *call, dp_vdev *vd) {
  char *dv = dp__vdev_short(vd), buf[200];
  snprintf(buf, sizeof buf, "cannot run on %s (the capability function says so), where an "
           "annotation puts it", dv ? dv : "?");
  free(dv);
  return no_device(c, call, buf);
}

static int can_run(pctx *c, dp_expr *call, dp_vdev *vd, int *ok) {
  dp_err *e = NULL;
  *ok = 1;
  return c->h->can_run && c->h->can_run(c->h->ud, call, vd, ok, &e) < 0 ? hook_failed(c, e, call) : 0;
}

/* The capability and compute cost of the call node id, for its class's
   variable (only classes a flow touched: others are defaulting's). */
static int call_costs(pctx *c, uint32_t id) {
  dp__domains *d = c->d;
  struct dp__placement *pl = c->pl;
  dp_place_problem *p = &pl->p;
  uint32_t v = c->var_of[root_of(d, dp__dom_at(d, id))] - 1;
  if (v == DP__NONE_ID) return 0;
  dp_expr *call = c->ix->x[id];
  int ok;
  if (p->fixed[v] != DP__NONE_ID) { /* an annotation put it there: it must run there */
    dp_vdev *vd = d->dev->v[pl->labdev[p->fixed[v]]];
    if (can_run(c, call, vd, &ok) < 0) return -1;
    return ok ? 0 : refused(c, call, vd);
  }
  for (uint32_t l = 0; l < pl->nsel; l++) {
    dp_vdev *vd = d->dev->v[pl->labdev[l]];
    if (can_run(c, call, vd, &ok) < 0) return -1;
    if (!ok) p->allowed[v] &= ~((uint64_t)1 << l);
    if (c->h->compute) {
      double s = 0;
      dp_err *e = NULL;
      if (c->h->compute(c->h->ud, call, vd, &s, &e) < 0) return hook_failed(c, e, call);
      if (!(s >= 0) || s > 1e6)
        return no_device(c, call, "has a compute cost that is not a number of seconds in [0, 1e6]");
      p->unary[(size_t)v * pl->nlab + l] += (int64_t)(s * 1e12 + 0.5);
    }
  }
  if (!p->allowed[v] && c->vpart[v]) return refused(c, call, d->dev->v[c->vpart[v]]);
  if (!p->allowed[v])
    return no_device(c, call, "can run on no device of the configuration (the capability "
                     "function refuses each)");
  return 0;
}

/* Picoseconds per byte between each pair of labels: the bandwidth hook's,
   else the configuration's, else 10 GB/s. */
static int pair_costs(pctx *c) {
  struct dp__placement *pl = c->pl;
  const dp_place_hooks *h = c->h;
  uint32_t K = pl->nlab;
  pl->p.pair = dp_calloc((size_t)K * K, sizeof *pl->p.pair);
  if (!pl->p.pair) return oom(c);
  for (uint32_t a = 0; a < K; a++)
    for (uint32_t b = 0; b < K; b++) {
      if (a == b) continue;
      dp_vdev *va = c->d->dev->v[pl->labdev[a]], *vb = c->d->dev->v[pl->labdev[b]];
      double bw = dp_config_bandwidth(c->d->dev->cfg, va, vb);
      if (!(bw > 0)) bw = 1e10;
      if (h->bandwidth) { /* (the hook's answer before the configuration's) */
        dp_err *e = NULL;
        if (h->bandwidth(h->ud, va, vb, &bw, &e) < 0) {
          c->err = e ? e : dp_err_new(DP_ERR_CALLBACK, DP_NOSPAN, "placement: the bandwidth hook failed");
          return -1;
        }
        if (!(bw > 0)) {
          c->err = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "placement by cost: a bandwidth must be a "
                              "number of bytes per second > 0");
          return -1;
        }
      }
      pl->p.pair[(size_t)a * K + b] = 1e12 / bw;
    }
  return 0;
}

/* Capabilities, compute costs and bandwidths, from the hooks. */
static int costs(pctx *c) {
  dp__index *ix = c->ix;
  struct dp__placement *pl = c->pl;
  const dp_place_hooks *h = c->h;
  pl->time = by_time(c);
  pl->tie = c->tying; /* (placing by bytes, the nets' weights tied: net()) */
  if (h->compute) {
    pl->p.unary = dp_calloc((size_t)(c->nv ? c->nv : 1) * pl->nlab, sizeof *pl->p.unary);
    if (!pl->p.unary) return oom(c);
  }
  if (h->can_run || h->compute)
    for (uint32_t id = 0; id < ix->n; id++)
      if (ix->what[id] == W_OP_CALL && ix->ann[id] == OP_ORDINARY && call_costs(c, id) < 0) return -1;
  return pl->time ? pair_costs(c) : 0;
}

/* ---- the decisions ---- */

/* The class of root r constrained to device dev (rule R_PLACEMENT, why):
   dp__dom_first's constraint domain, then dp__unify's link of the two, as
   those make them (the new domain, of size 1, under r, which stays the
   root: r's class is first order, of size 1 at least), written in place
   where the room is made already and no one is told of links; the general
   path elsewhere. The constraint domain, or DP__NONE_ID: out of memory. */
/* The device root R's class takes when decided dev, where the fast path
   may write it in place: 0 where it may not (a function class, a device
   the class cannot take, someone told of links). A partly constrained
   class, a memory scope or an id left open, takes the join of its device
   and the decided one, as dp__unify's general path links it: the same
   link, the scratch of its undo trail aside. */
static uint32_t joined_in_place(const dp__domains *d, const dp__dnode *R, uint32_t dev) {
  uint32_t v = !R->vdev ? dev : dev ? dp__dev_join(d->dev, R->vdev, dev) : DP__NONE_ID;
  return v != DP__NONE_ID && !d->on_link && !R->isfn ? v : 0;
}

/* Root R as the fast path leaves it: one more in its class, device v. */
static void take_device(dp__dnode *R, uint32_t v) {
  R->size = R->size < DP__DSIZE_MAX ? (uint32_t)R->size + 1 : DP__DSIZE_MAX;
  R->vdev = v;
}

static uint32_t decide_one(dp__domains *d, uint32_t r, uint32_t dev, dp_expr *why) {
  r = root_of(d, r);
  dp__dnode *R = &d->nodes[r];
  uint32_t v = joined_in_place(d, R, dev);
  if (v && d->nnodes < d->capnodes && d->ncons < d->capcons) {
    uint32_t k = d->nnodes++;
    d->nodes[k] = (dp__dnode){.parent = r, .vdev = dev, .size = 1, .crule = R_PLACEMENT};
    d->cons[d->ncons++] = (dp__cons){k, dev, why};
    take_device(R, v);
    return k;
  }
  uint32_t k = dp__dom_first(d, dev, R_PLACEMENT, why);
  dp_err *e = NULL;
  if (d->oom || dp__unify(d, r, k, R_PLACEMENT, why, &e) != 0) {
    dp_err_free(e);
    return DP__NONE_ID;
  }
  return k;
}

/* A block of bytes for what the placement keeps: the solve's spare one
   cut to size where it is large enough (its pages touched already, its
   rest given back), else a new one. */
static void *kept_block(pctx *c, size_t bytes) {
  if (!c->spare || c->nspare < bytes) return dp_malloc(bytes);
  void *b = c->spare, *cut = dp_realloc(b, bytes); /* (shrinks in place) */
  c->spare = NULL;
  return cut ? cut : b;
}

/* Room for n more constraint domains: the domains' constraints moved into
   the block the solve left where it holds them (its pages touched: the
   flows analysis wrote, 12 bytes each, a constraint 16; at 1,000,000
   calls the decisions' 16 MB otherwise come fresh while those pages go
   back unused), else grown. 0, -1. */
static int cons_room(pctx *c, uint32_t n) {
  dp__domains *d = c->d;
  uint64_t need = (uint64_t)d->ncons + n, room = c->nspare / sizeof *d->cons;
  if (need <= d->capcons) return 0;
  if (c->spare && room >= need && room <= UINT32_MAX) {
    if (d->ncons) memcpy(c->spare, d->cons, (size_t)d->ncons * sizeof *d->cons);
    free(d->cons);
    d->cons = c->spare;
    d->capcons = (uint32_t)room;
    c->spare = NULL;
    return 0;
  }
  return need > UINT32_MAX ? -1 : dp_grow((void **)&d->cons, &d->capcons, (uint32_t)need, sizeof *d->cons);
}

/* pl->cons made when decision i's domain k is not cons0 + i (the ones
   before it were). 0, -1. */
static int cons_apart(struct dp__placement *pl, uint32_t n, uint32_t i, uint32_t k) {
  if (pl->cons || k == pl->cons0 + i) return 0; /* (made already, or not needed) */
  if (!(pl->cons = dp_malloc((size_t)(n ? n : 1) * sizeof *pl->cons))) return -1;
  for (uint32_t j = 0; j < i; j++) pl->cons[j] = pl->cons0 + j;
  return 0;
}

/* decide() where capture alone reads the domains (lean): each class takes
   its device as decide_one's fast path leaves the class (the device
   joined, the size one more, as if the constraint domain were under it),
   without the constraint domain, its constraint and the decisions' arrays,
   which only explanations and replays read: at 1,000,000 chain calls 12 MB
   of domains and 16 MB of constraints not written. Elsewhere (a function
   class; a device the class cannot take, which only memory failing could
   leave) decide_one's general path, whose reason no one reads. */
static int decide_lean(pctx *c) {
  dp__domains *d = c->d;
  struct dp__placement *pl = c->pl;
  const dp_place_problem *p = &pl->p;
  for (uint32_t v = 0; v < c->nv; v++) {
    if (p->fixed[v] != DP__NONE_ID) continue;
    uint32_t r = root_of(d, c->vroot[v]), dev = pl->labdev[pl->label[v]];
    uint32_t j = joined_in_place(d, &d->nodes[r], dev);
    if (j) take_device(&d->nodes[r], j);
    else if (decide_one(d, r, dev, NULL) == DP__NONE_ID) return oom(c);
  }
  return 0;
}

static int decide(pctx *c) {
  if (c->lean) return decide_lean(c);
  dp__domains *d = c->d;
  struct dp__placement *pl = c->pl;
  const dp_place_problem *p = &pl->p;
  uint32_t n = 0;
  for (uint32_t v = 0; v < c->nv; v++) n += p->fixed[v] == DP__NONE_ID;
  /* (room for a constraint domain per decision, made at once: dp__dom_first
     would grow the domains' arrays one at a time, copying them; the
     constraints first, to the larger block the solve left) */
  if (n > UINT32_MAX - d->nnodes || n > UINT32_MAX - d->ncons || cons_room(c, n) < 0 ||
      dp_grow((void **)&d->nodes, &d->capnodes, d->nnodes + n, sizeof *d->nodes) < 0)
    return oom(c);
  /* (every variable decided: no array of them) */
  if (n != c->nv && !(pl->var = kept_block(c, (size_t)(n ? n : 1) * sizeof *pl->var))) return oom(c);
  pl->cons0 = d->nnodes;
  for (uint32_t v = 0; v < c->nv; v++) {
    if (p->fixed[v] != DP__NONE_ID) continue;
    uint32_t k = decide_one(d, c->vroot[v], pl->labdev[pl->label[v]], c->vwhy[v]);
    if (k == DP__NONE_ID || cons_apart(pl, n, pl->n, k) < 0)
      return oom(c); /* (a free class takes any device: only memory can fail) */
    if (pl->var) pl->var[pl->n] = v;
    if (pl->cons) pl->cons[pl->n] = k;
    pl->n++;
  }
  return 0;
}

/* Each variable's expression (explanations, d:placements): the first node
   of its class in the index's order, rather than the value whose flow
   found it (a reader's class was found by the value it reads); an
   annotation only where nothing else is in it (named[v]: 1 by another
   node, 2 by an annotation so far). */
static void name_classes(pctx *c) {
  dp__index *ix = c->ix;
  uint8_t *named = (uint8_t *)c->vpart; /* (read no more after costs: its room, touched already) */
  memset(named, 0, c->nv);
  for (uint32_t id = 0; id < ix->n; id++) {
    uint32_t v = c->var_of[root_of(c->d, dp__dom_at(c->d, id))] - 1;
    if (v == DP__NONE_ID || named[v] == 1) continue;
    uint8_t by = ix->what[id] == W_ON_DEVICE ? 2 : 1;
    if (named[v] == 2 && by == 2) continue;
    named[v] = by;
    c->vwhy[v] = ix->x[id];
  }
}

static int solve(pctx *c) {
  struct dp__placement *pl = c->pl;
  dp_place_problem *p = &pl->p;
  p->nvars = c->nv;
  p->nlabels = pl->nlab;
  /* (the labels take the stamps' room, a uint32_t per variable: the nets
     are made) */
  pl->label = p->stamp;
  p->stamp = NULL;
  if (!pl->label) return oom(c);
  /* The solve's arrays in memory touched already: analysis' flows and the
     array of a variable per domain, read no more, given as the graph's
     room (rather than freed, and the solve's pages touched fresh) */
  dp__flow *g = dp__flow_new();
  if (!g) return oom(c);
  dp__flow_adopt(g, c->var_of, c->nvar_of, c->flows->v, (size_t)c->flows->cap * sizeof *c->flows->v);
  c->var_of = NULL;
  *c->flows = (dp__flows){0};
  free(c->exact);
  c->exact = NULL;
  int rc = dp__place_solve_in(p, pl->label, NULL, g); /* (its total is not read here) */
  c->spare = dp__flow_take(g, 1, &c->nspare); /* (the largest block it left: touched) */
  c->spare2 = dp__flow_take(g, 0, &c->nspare2);
  dp__flow_free(g);
  if (rc < 0) return oom(c);
  if (rc > 0) { /* (call_costs reports a class no device can take first) */
    c->err = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "placement by cost: a value can go on no device");
    return -1;
  }
  return 0;
}

/* The array of a variable per domain, zeroed: where capture alone reads
   the domains (lean), in the larger of the walk's spare blocks the index
   keeps for capture's nodes (keep_spare), made to size (a mapped block is
   remapped, its pages kept), its pages resident (at 1,000,000 let calls
   12 MB neither added at the placement's peak nor touched fresh;
   kept_for_capture hands blocks of the solve's back), else a new one.
   NULL: out of memory. */
static uint32_t *var_room(pctx *c) {
  dp__index *ix = c->ix;
  size_t n = (size_t)(c->d->nnodes ? c->d->nnodes : 1) * sizeof *c->var_of;
  int i = ix->nspare[1] > ix->nspare[0];
  c->nvar_of = n;
  if (!c->lean || !ix->spare[i]) return dp_calloc(1, n);
  uint32_t *v = dp_realloc(ix->spare[i], n);
  if (!v) return NULL; /* (the spare stays the index's) */
  ix->spare[i] = NULL, ix->nspare[i] = 0;
  return memset(v, 0, n);
}

/* Block b (n bytes, its pages touched) to the index's spare blocks where
   capture's node arena takes them (keep_spare, a megabyte and more, a
   slot free), instead of fresh pages there; else freed. */
static void kept_for_capture(pctx *c, void *b, size_t n) {
  dp__index *ix = c->ix;
  for (int i = 0; b && c->lean && ix->keep_spare && n >= ((size_t)1 << 20) && i < 2; i++)
    if (!ix->spare[i]) {
      ix->spare[i] = b, ix->nspare[i] = n;
      return;
    }
  free(b);
}

int dp__place(dp__domains *d, dp__flows *flows, const dp_place_hooks *h, int lean,
              struct dp__placement **out, dp_err **err) {
  static const dp_place_hooks none = {0};
  pctx c = {.d = d, .flows = flows, .ix = d->ix, .h = h ? h : &none, .lean = lean,
            .pl = dp_calloc(1, sizeof(struct dp__placement))};
  *out = NULL;
  int rc = -1;
  if (!c.pl || !(c.var_of = var_room(&c))) {
    oom(&c);
    goto done;
  }
  if (exact_classes(&c) < 0) goto done;
  /* the variables are found as the nets are made (var_for, in the room
     nets() makes), the labels counted when all are known */
  c.pl->p.nlabels = 64;
  c.tying = !by_time(&c);
  if (selectable(&c) < 0 || nets(&c) < 0 || widen(&c) < 0 || costs(&c) < 0) goto done;
  if (!c.lean) name_classes(&c); /* (lean: no decision is named) */
  if (solve(&c) < 0 || decide(&c) < 0) goto done;
  c.pl->vroot = c.vroot; /* (the decisions read them; in pl->block) */
  c.pl->vwhy = c.vwhy;
  *out = c.pl;
  c.pl = NULL;
  rc = 0;
done:
  dp__place_free(c.pl);
  free(c.var_of);
  free(c.exact);
  /* (the larger first: a slot may be left for one) */
  kept_for_capture(&c, c.spare, c.nspare);
  kept_for_capture(&c, c.spare2, c.nspare2);
  if (rc < 0) dp_err_set(err, c.err ? c.err : dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return rc;
}

/* ---- replays and explanations ---- */

int dp__place_replay(dp__domains *d, const struct dp__placement *pl, dp_err **err) {
  if (!pl) return 0;
  for (uint32_t i = 0; i < pl->n; i++) {
    uint32_t v = dvar(pl, i), k = dp__dom_first(d, pl->labdev[pl->label[v]], R_PLACEMENT, pl->vwhy[v]);
    if (d->oom || dp__unify(d, pl->vroot[v], k, R_PLACEMENT, pl->vwhy[v], err) < 0) {
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return -1;
    }
  }
  return 0;
}

static void cost_text(char *buf, size_t n, const struct dp__placement *pl, int64_t e) {
  if (e >= DP_PLACE_INF) {
    snprintf(buf, n, "not allowed (an annotation or the capability function)");
    return;
  }
  if (pl->time) {
    snprintf(buf, n, "%.6g s of compute and copies", (double)e / 1e12);
    return;
  }
  if (pl->tie) e /= COPY_TIE; /* (the copies' count below it) */
  snprintf(buf, n, "%lld byte%s copied", (long long)e, e == 1 ? "" : "s");
}

char *dp__place_reason(dp__domains *d, const struct dp__placement *pl, uint32_t cons) {
  if (!pl) return NULL;
  uint32_t lo = 0, hi = pl->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (dcons(pl, mid) < cons) lo = mid + 1;
    else hi = mid;
  }
  if (lo == pl->n || dcons(pl, lo) != cons) return NULL;
  uint32_t v = dvar(pl, lo), chosen = pl->label[v];
  size_t cap = 256 + 160 * (size_t)pl->nsel, len = 0;
  char *s = dp_malloc(cap), c[96];
  if (!s) return NULL;
  char *dv = dp__vdev_short(d->dev->v[pl->labdev[chosen]]);
  cost_text(c, sizeof c, pl, dp_place_energy_at(&pl->p, pl->label, v, chosen));
  len += (size_t)snprintf(s + len, cap - len, "the placement by cost (min_bytes), which chose %s: "
                          "its values and inputs cost %s there", dv ? dv : "?", c);
  free(dv);
  for (uint32_t l = 0; l < pl->nsel && len < cap; l++) {
    if (l == chosen) continue;
    char *ov = dp__vdev_short(d->dev->v[pl->labdev[l]]);
    cost_text(c, sizeof c, pl, dp_place_energy_at(&pl->p, pl->label, v, l));
    len += (size_t)snprintf(s + len, cap - len, ", %s on %s", c, ov ? ov : "?");
    free(ov);
  }
  return s;
}

int dp__place_each(dp__domains *d, const struct dp__placement *pl, dp_place_fn fn, void *ud,
                   dp_err **err) {
  for (uint32_t i = 0; pl && i < pl->n; i++) {
    uint32_t v = dvar(pl, i);
    uint64_t a = pl->p.allowed[v];
    if (!(a & (a - 1))) continue; /* one device it could take: an annotation's, no choice */
    char *text = dp__place_reason(d, pl, dcons(pl, i));
    if (!text) {
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return -1;
    }
    int rc = fn(ud, pl->vwhy[v], d->dev->v[pl->labdev[pl->label[v]]], text);
    free(text);
    if (rc) return rc;
  }
  return 0;
}
