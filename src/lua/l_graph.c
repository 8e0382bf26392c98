/*
 * The dataflow graph of a module, grouped for a picture: the C half of
 * dp.graph (lua/devplan/graph.lua words and draws it). In C because a
 * picture of a 1,000,000-call module must be made in seconds: one pass
 * over the module, arrays and union-find, then only what is drawn goes to
 * Lua.
 *
 *   core._graph(mod, domains|nil, {params =, detail =, max_nodes =}) ->
 *     {level =, calls =, devices = {vd...}, functions = {"main", ...},
 *      boxes = {{fn =, dev =, nodes =, calls =, function_calls =, first =, last =,
 *                ops = {{name, n}...}}...},
 *      edges = {{from =, to =, copies =, bytes =, size =, src =, dst =}...},
 *      counts = {full =, chains =, regions =, devices =}}
 *
 * A node is every call, tuple, projection, constant, variable and control
 * node (on_device and device_copy are none: an edge goes through them, a
 * copy's edge marked with it); parameters only where params says (default:
 * functions of at most 12). Devices come from the planner's domains (NULL:
 * the module does not plan, no devices). The levels: full (each node),
 * chains (each chain of 3 or more calls, tuples and projections on one
 * device, each the only user of the one before, which is its only input
 * of those kinds: parameters and constants beside do not break a chain, is
 * one box), regions (each connected
 * part on one device) and devices (each function and device). detail
 * "auto" picks the most detailed with at most max_nodes boxes and 3 times
 * as many edges. Copies between two boxes are summed: bytes as
 * dp_type_bytes counts them (nil with size "unknown" or "too large").
 */
#include <stdlib.h>
#include <string.h>
#include "l_aux.h"
#include "l_init.h"

#define NONE UINT32_MAX
#define HIDDEN (UINT32_MAX - 1)
#define CHAIN_MIN 3

enum { L_FULL, L_CHAINS, L_REGIONS, L_DEVICES, L_AUTO };
static const char *const level_names[] = {"full", "chains", "regions", "devices", "auto", NULL};

/* ---- a pointer (or 64-bit key) -> uint32 map, open addressing ---- */

typedef struct pmap { uint64_t *keys; uint32_t *vals; uint32_t cap, n; } pmap;

static uint32_t hash64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return (uint32_t)k;
}

static int pmap_grow(pmap *m) {
  uint32_t cap = m->cap ? m->cap * 2 : 64;
  uint64_t *keys = dp_calloc(cap, sizeof *keys);
  uint32_t *vals = dp_malloc(cap * sizeof *vals);
  if (!keys || !vals || cap < m->cap) {
    free(keys);
    free(vals);
    return -1;
  }
  for (uint32_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    uint32_t j = hash64(m->keys[i]) & (cap - 1);
    while (keys[j]) j = (j + 1) & (cap - 1);
    keys[j] = m->keys[i];
    vals[j] = m->vals[i];
  }
  free(m->keys);
  free(m->vals);
  m->keys = keys;
  m->vals = vals;
  m->cap = cap;
  return 0;
}

/* The slot of key k (nonzero); *found says whether it holds k. */
static uint32_t pmap_slot(const pmap *m, uint64_t k, int *found) {
  uint32_t j = hash64(k) & (m->cap - 1);
  while (m->keys[j] && m->keys[j] != k) j = (j + 1) & (m->cap - 1);
  *found = m->keys[j] == k;
  return j;
}

static uint32_t pmap_get(const pmap *m, uint64_t k) {
  if (!m->cap) return NONE;
  int found;
  uint32_t j = pmap_slot(m, k, &found);
  return found ? m->vals[j] : NONE;
}

static int pmap_put(pmap *m, uint64_t k, uint32_t v) {
  if ((m->n + 1) * 2 > m->cap && pmap_grow(m) < 0) return -1;
  int found;
  uint32_t j = pmap_slot(m, k, &found);
  if (!found) {
    m->keys[j] = k;
    m->n++;
  }
  m->vals[j] = v;
  return 0;
}

static void pmap_free(pmap *m) {
  free(m->keys);
  free(m->vals);
  *m = (pmap){0};
}

/* ---- the graph ---- */

typedef struct gedge { uint32_t src, dst; dp_expr *copy; } gedge;
/* calls: of operators and constructors, as the report counts them;
   fcalls: of functions (globals, closures) */
typedef struct gbox { uint32_t fn, dev, nodes, calls, fcalls, first, last; } gbox;
typedef struct xedge { uint32_t from, to, copies; int64_t bytes; int size; dp_vdev *src, *dst; } xedge;

typedef struct graph {
  /* nodes */
  dp_expr **ex;
  uint32_t *fn, *dev, *name; /* name: index of the node's callee word in words, or NONE */
  uint8_t *kind;
  uint32_t n, capn;
  gedge *e;
  uint32_t m, capm;
  pmap index;                /* expr -> node (HIDDEN: a parameter not drawn) */
  dp_vdev **devs;            /* devices in order of first use (retained); dev 0: none */
  uint32_t ndevs, capdevs;
  char **words;              /* callee words ("nn.conv2d", "@f", ...), interned */
  uint32_t nwords, capwords;
  pmap wordix;               /* hash of a word -> first index with it (chained by linear search) */
  /* the chosen level */
  uint32_t *group, *parent, *count;
  gbox *boxes;
  uint32_t nboxes;
  xedge *xe;
  uint32_t nxe, capxe;
  pmap xix;
  pmap ops;                  /* (box, word) -> count index */
  uint32_t *opbox, *opword, *opn;
  uint32_t nops, capops;
  /* while walking */
  dp_domains *d;
  uint32_t cur_fn;
  int oom;
} graph;

static void graph_free(graph *g) {
  free(g->ex);
  free(g->fn);
  free(g->dev);
  free(g->name);
  free(g->kind);
  free(g->e);
  pmap_free(&g->index);
  for (uint32_t i = 0; i < g->ndevs; i++) dp_release(g->devs[i]);
  free(g->devs);
  for (uint32_t i = 0; i < g->nwords; i++) free(g->words[i]);
  free(g->words);
  pmap_free(&g->wordix);
  free(g->group);
  free(g->parent);
  free(g->count);
  free(g->boxes);
  free(g->xe);
  pmap_free(&g->xix);
  pmap_free(&g->ops);
  free(g->opbox);
  free(g->opword);
  free(g->opn);
  memset(g, 0, sizeof *g);
}

static int is_op(const dp_expr *e, const char *name) {
  if (e->h.kind != DP_CALL) return 0;
  const dp_expr *f = ((const dp_call *)e)->fn;
  return f->h.kind == DP_OP && strcmp(((const dp_op *)f)->name, name) == 0;
}

static uint32_t str_hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

/* The index of word s (copied when new), or NONE when out of memory. */
static uint32_t word(graph *g, const char *s) {
  uint64_t key = (uint64_t)str_hash(s) + 1;
  uint32_t i = pmap_get(&g->wordix, key);
  if (i != NONE)
    for (uint32_t j = i; j < g->nwords; j++)
      if (strcmp(g->words[j], s) == 0) return j;
  if (dp_grow((void **)&g->words, &g->capwords, g->nwords + 1, sizeof *g->words) < 0) return NONE;
  size_t len = strlen(s);
  char *copy = dp_malloc(len + 1);
  if (!copy) return NONE;
  memcpy(copy, s, len + 1);
  g->words[g->nwords] = copy;
  if (i == NONE && pmap_put(&g->wordix, key, g->nwords) < 0) {
    free(copy);
    return NONE;
  }
  return g->nwords++;
}

/* The word a call's node is labelled with: its operator, @callee, constructor. */
static uint32_t callee_word(graph *g, const dp_call *c) {
  const dp_expr *f = c->fn;
  if (f->h.kind == DP_OP) return word(g, ((const dp_op *)f)->name);
  if (f->h.kind == DP_CTOR) return word(g, ((const dp_ctor *)f)->name);
  if (f->h.kind == DP_GLOBAL) {
    const char *name = ((const dp_global *)f)->name;
    size_t len = strlen(name);
    char *s = dp_malloc(len + 2);
    if (!s) return NONE;
    s[0] = '@';
    memcpy(s + 1, name, len + 1);
    uint32_t w = word(g, s);
    free(s);
    return w;
  }
  return word(g, "call");
}

/* The device index of e (0: none), new devices added. */
static uint32_t device_of(graph *g, dp_expr *e) {
  if (!g->d) return 0;
  dp_err *err = NULL;
  dp_vdev *vd = dp_domains_lookup(g->d, e, &err);
  if (!vd) { /* (not in the module: no device; out of memory: an error) */
    if (!err || err->code == DP_ERR_MEMORY) g->oom = 1;
    dp_err_free(err);
    return 0;
  }
  uint32_t k = 0;
  if (!dp_vdev_is_fully_unconstrained(vd)) {
    for (uint32_t i = 0; i < g->ndevs && !k; i++)
      if (g->devs[i] == vd) k = i + 1;
    if (!k) {
      if (dp_grow((void **)&g->devs, &g->capdevs, g->ndevs + 1, sizeof *g->devs) < 0) {
        g->oom = 1;
        dp_release(vd);
        return 0;
      }
      g->devs[g->ndevs++] = dp_retain(vd);
      k = g->ndevs;
    }
  }
  dp_release(vd);
  return k;
}

static int add_node(graph *g, dp_expr *e) {
  if (g->n == g->capn) {
    uint32_t cap = g->capn;
    if (dp_grow((void **)&g->ex, &cap, g->n + 1, sizeof *g->ex) < 0) return -1;
    cap = g->capn;
    if (dp_grow((void **)&g->fn, &cap, g->n + 1, sizeof *g->fn) < 0) return -1;
    cap = g->capn;
    if (dp_grow((void **)&g->dev, &cap, g->n + 1, sizeof *g->dev) < 0) return -1;
    cap = g->capn;
    if (dp_grow((void **)&g->name, &cap, g->n + 1, sizeof *g->name) < 0) return -1;
    cap = g->capn;
    if (dp_grow((void **)&g->kind, &cap, g->n + 1, sizeof *g->kind) < 0) return -1;
    g->capn = cap;
  }
  uint32_t i = g->n;
  if (pmap_put(&g->index, (uint64_t)(uintptr_t)e, i) < 0) return -1;
  g->ex[i] = e;
  g->fn[i] = g->cur_fn;
  g->dev[i] = device_of(g, e);
  g->kind[i] = (uint8_t)e->h.kind;
  g->name[i] = NONE;
  if (e->h.kind == DP_CALL && (g->name[i] = callee_word(g, (const dp_call *)e)) == NONE) return -1;
  g->n++;
  return g->oom ? -1 : 0;
}

static int post_node(void *ud, dp_expr *e) {
  graph *g = ud;
  int k = e->h.kind;
  if (k == DP_OP || k == DP_GLOBAL || k == DP_CTOR) return 0;
  if (is_op(e, "on_device") || is_op(e, "device_copy")) return 0;
  if (pmap_get(&g->index, (uint64_t)(uintptr_t)e) != NONE) return 0; /* a parameter, drawn or not */
  return add_node(g, e) < 0 ? (g->oom = 1, -1) : 0;
}

/* The edges into user node i: from each child, through on_device and one
   device_copy. */
static int user_edges(graph *g, uint32_t i) {
  dp_expr *e = g->ex[i];
  uint32_t nk = dp_expr_nchildren(e), first = g->m;
  for (uint32_t c = 0; c < nk; c++) {
    dp_expr *x = dp_expr_child(e, c), *copy = NULL;
    if (!x) continue;
    int k = x->h.kind;
    if (k == DP_OP || k == DP_GLOBAL || k == DP_CTOR) continue;
    for (;;) {
      if (is_op(x, "on_device")) x = ((dp_call *)x)->args[0];
      else if (is_op(x, "device_copy") && !copy) {
        copy = x;
        x = ((dp_call *)x)->args[0];
      } else break;
    }
    uint32_t j = pmap_get(&g->index, (uint64_t)(uintptr_t)x);
    if (j == NONE || j == HIDDEN) continue;
    int dup = 0; /* (an input used twice: one edge) */
    for (uint32_t q = first; q < g->m && !dup; q++) dup = g->e[q].src == j && g->e[q].copy == copy;
    if (dup) continue;
    if (dp_grow((void **)&g->e, &g->capm, g->m + 1, sizeof *g->e) < 0) return -1;
    g->e[g->m++] = (gedge){j, i, copy};
  }
  return 0;
}

static int build(graph *g, dp_module *m, int params) {
  for (uint32_t f = 0; f < m->nfuncs; f++) {
    dp_func *fn = m->funcs[f].fn;
    g->cur_fn = f;
    int show = params < 0 ? fn->nparams <= 12 : params;
    for (uint32_t p = 0; p < fn->nparams; p++) {
      dp_expr *pe = (dp_expr *)fn->params[p];
      if (pmap_get(&g->index, (uint64_t)(uintptr_t)pe) != NONE) continue;
      if (show ? add_node(g, pe) < 0 : pmap_put(&g->index, (uint64_t)(uintptr_t)pe, HIDDEN) < 0) return -1;
    }
    dp_visitor v = {NULL, post_node, g};
    if (dp_visit(fn->body, &v) < 0) return -1;
  }
  for (uint32_t i = 0; i < g->n; i++) {
    int k = g->kind[i];
    if (k != DP_VAR && k != DP_CONST && user_edges(g, i) < 0) return -1;
  }
  return 0;
}

/* ---- levels ---- */

static uint32_t find(uint32_t *parent, uint32_t i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

static void unite(uint32_t *parent, uint32_t a, uint32_t b) {
  a = find(parent, a);
  b = find(parent, b);
  if (a != b) parent[a > b ? a : b] = a < b ? a : b;
}

static int chainable(int kind) { return kind == DP_CALL || kind == DP_TUPLE || kind == DP_PROJ; }

/* g->group for level lv, numbered 0.. in order of first node; returns the
   number of groups, or NONE when out of memory. */
static uint32_t groups(graph *g, int lv) {
  uint32_t n = g->n, count = 0;
  uint32_t *group = g->group, *parent = g->parent;
  for (uint32_t i = 0; i < n; i++) parent[i] = i;
  if (lv == L_CHAINS) {
    uint32_t *cnt = g->count; /* in-degree from chainable nodes (then reused below) */
    uint32_t *outdeg = group;
    for (uint32_t i = 0; i < n; i++) cnt[i] = outdeg[i] = 0;
    for (uint32_t k = 0; k < g->m; k++) {
      outdeg[g->e[k].src]++;
      if (chainable(g->kind[g->e[k].src])) cnt[g->e[k].dst]++;
    }
    for (uint32_t k = 0; k < g->m; k++) {
      uint32_t s = g->e[k].src, t = g->e[k].dst;
      if (!g->e[k].copy && outdeg[s] == 1 && cnt[t] == 1 && g->dev[s] == g->dev[t] && g->fn[s] == g->fn[t] &&
          chainable(g->kind[s]) && chainable(g->kind[t]))
        unite(parent, s, t);
    }
    for (uint32_t i = 0; i < n; i++) cnt[i] = 0;
    for (uint32_t i = 0; i < n; i++) cnt[group[i] = find(parent, i)]++;
    for (uint32_t i = 0; i < n; i++) /* a chain too short: its nodes on their own */
      parent[i] = cnt[group[i]] < CHAIN_MIN ? i : group[i];
  } else if (lv == L_REGIONS) {
    for (uint32_t k = 0; k < g->m; k++) {
      uint32_t s = g->e[k].src, t = g->e[k].dst;
      if (!g->e[k].copy && g->dev[s] == g->dev[t] && g->fn[s] == g->fn[t]) unite(parent, s, t);
    }
  } else if (lv == L_DEVICES) {
    /* the first node of each (function, device) as the root */
    pmap first = {0};
    for (uint32_t i = 0; i < n; i++) {
      uint64_t key = ((uint64_t)g->fn[i] << 32 | g->dev[i]) + 1;
      uint32_t r = pmap_get(&first, key);
      if (r == NONE) {
        if (pmap_put(&first, key, i) < 0) {
          pmap_free(&first);
          return NONE;
        }
        r = i;
      }
      parent[i] = r;
    }
    pmap_free(&first);
  }
  /* number the roots in order of first node */
  for (uint32_t i = 0; i < n; i++) group[i] = NONE;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t r = lv == L_FULL ? i : find(parent, i);
    if (group[r] == NONE) group[r] = count++;
    if (r != i) group[i] = group[r];
  }
  return count;
}

/* The edges between the groups of g->group: g->xe, copies summed. */
static int group_edges(graph *g) {
  g->nxe = 0;
  pmap_free(&g->xix);
  for (uint32_t k = 0; k < g->m; k++) {
    const gedge *e = &g->e[k];
    uint32_t a = g->group[e->src], b = g->group[e->dst];
    if (a == b && !e->copy) continue;
    uint64_t key = (((uint64_t)a << 32) | b) * 2 + (e->copy != NULL) + 1;
    uint32_t x = pmap_get(&g->xix, key);
    if (x == NONE) {
      if (dp_grow((void **)&g->xe, &g->capxe, g->nxe + 1, sizeof *g->xe) < 0 || pmap_put(&g->xix, key, g->nxe) < 0)
        return -1;
      x = g->nxe++;
      g->xe[x] = (xedge){a, b, 0, 0, DP_BYTES_KNOWN, NULL, NULL};
    }
    xedge *xe = &g->xe[x];
    if (!e->copy) continue;
    xe->copies++;
    const dp_call *c = (const dp_call *)e->copy;
    if (!xe->src && c->attrs) {
      const dp_aval *s = dp_attrs_get(c->attrs, "src_virtual_device");
      const dp_aval *t = dp_attrs_get(c->attrs, "dst_virtual_device");
      xe->src = s && s->kind == DP_AV_VDEV ? s->u.vdev : NULL;
      xe->dst = t && t->kind == DP_AV_VDEV ? t->u.vdev : NULL;
    }
    int64_t b0;
    int r = dp_type_bytes(e->copy->type, &b0);
    if (r < 0) return -1;
    if (xe->size == DP_BYTES_UNKNOWN) continue;
    if (r == DP_BYTES_UNKNOWN) xe->size = r;
    else if (r == DP_BYTES_TOO_LARGE || xe->bytes > INT64_MAX - b0) xe->size = DP_BYTES_TOO_LARGE;
    else if (xe->size == DP_BYTES_KNOWN) xe->bytes += b0;
  }
  return 0;
}

/* The boxes of g->group (nboxes of them) and their operator counts. */
static int boxes(graph *g, uint32_t nboxes) {
  g->boxes = dp_calloc(nboxes ? nboxes : 1, sizeof *g->boxes);
  if (!g->boxes) return -1;
  g->nboxes = nboxes;
  for (uint32_t i = 0; i < g->n; i++) {
    gbox *b = &g->boxes[g->group[i]];
    if (b->nodes == 0) {
      b->fn = g->fn[i];
      b->dev = g->dev[i];
      b->first = i;
    }
    b->nodes++;
    b->last = i;
    if (g->kind[i] != DP_CALL) continue;
    int callee = ((const dp_call *)g->ex[i])->fn->h.kind;
    if (callee == DP_OP || callee == DP_CTOR) b->calls++; /* (a call of a function is the callee's work) */
    else b->fcalls++;
    uint64_t key = (((uint64_t)g->group[i] << 32) | g->name[i]) + 1;
    uint32_t o = pmap_get(&g->ops, key);
    if (o == NONE) {
      uint32_t cap = g->capops;
      if (dp_grow((void **)&g->opbox, &cap, g->nops + 1, sizeof *g->opbox) < 0) return -1;
      cap = g->capops;
      if (dp_grow((void **)&g->opword, &cap, g->nops + 1, sizeof *g->opword) < 0) return -1;
      cap = g->capops;
      if (dp_grow((void **)&g->opn, &cap, g->nops + 1, sizeof *g->opn) < 0) return -1;
      g->capops = cap;
      if (pmap_put(&g->ops, key, g->nops) < 0) return -1;
      o = g->nops++;
      g->opbox[o] = g->group[i];
      g->opword[o] = g->name[i];
      g->opn[o] = 0;
    }
    g->opn[o]++;
  }
  return 0;
}

/* The level to draw (lv, or auto's choice) and its groups; NONE: no memory. */
static int choose(graph *g, int lv, uint32_t budget, uint32_t counts[4], int *chosen) {
  uint32_t n = g->n ? g->n : 1;
  g->group = dp_malloc(n * sizeof *g->group);
  g->parent = dp_malloc(n * sizeof *g->parent);
  g->count = dp_malloc(n * sizeof *g->count);
  if (!g->group || !g->parent || !g->count) return -1;
  int pick = -1;
  for (int l = L_FULL; l <= L_DEVICES; l++) {
    counts[l] = groups(g, l);
    if (counts[l] == NONE) return -1;
    if (pick >= 0) continue;
    if (lv == l) pick = l;
    else if (lv == L_AUTO) {
      if (l == L_DEVICES) pick = l;
      else if (counts[l] <= budget) {
        if (group_edges(g) < 0) return -1;
        if (g->nxe <= 3 * budget) pick = l;
      }
    }
  }
  *chosen = pick;
  if (groups(g, pick) == NONE || group_edges(g) < 0) return -1;
  return boxes(g, counts[pick]);
}

/* ---- to Lua ---- */

static void push_vd_or_nil(lua_State *L, dp_vdev *vd) {
  if (vd) dp__lua_push(L, vd);
  else lua_pushnil(L);
}

static void push_result(lua_State *L, graph *g, dp_module *m, int lv, const uint32_t counts[4]) {
  lua_createtable(L, 0, 8);
  lua_pushstring(L, level_names[lv]);
  lua_setfield(L, -2, "level");
  uint32_t calls = 0;
  for (uint32_t i = 0; i < g->nboxes; i++) calls += g->boxes[i].calls;
  lua_pushinteger(L, calls);
  lua_setfield(L, -2, "calls");
  lua_createtable(L, 0, 4);
  for (int l = L_FULL; l <= L_DEVICES; l++) {
    lua_pushinteger(L, counts[l]);
    lua_setfield(L, -2, level_names[l]);
  }
  lua_setfield(L, -2, "counts");
  lua_createtable(L, (int)g->ndevs, 0);
  for (uint32_t i = 0; i < g->ndevs; i++) {
    dp__lua_push(L, g->devs[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "devices");
  lua_createtable(L, (int)m->nfuncs, 0);
  for (uint32_t f = 0; f < m->nfuncs; f++) {
    lua_pushstring(L, m->funcs[f].global->name);
    lua_rawseti(L, -2, f + 1);
  }
  lua_setfield(L, -2, "functions");
  lua_createtable(L, (int)g->nboxes, 0);
  for (uint32_t b = 0; b < g->nboxes; b++) {
    const gbox *x = &g->boxes[b];
    lua_createtable(L, 0, 7);
    lua_pushinteger(L, x->fn + 1);
    lua_setfield(L, -2, "fn");
    lua_pushinteger(L, x->dev);
    lua_setfield(L, -2, "dev");
    lua_pushinteger(L, x->nodes);
    lua_setfield(L, -2, "nodes");
    lua_pushinteger(L, x->calls);
    lua_setfield(L, -2, "calls");
    lua_pushinteger(L, x->fcalls);
    lua_setfield(L, -2, "function_calls");
    dp__lua_push(L, g->ex[x->first]);
    lua_setfield(L, -2, "first");
    dp__lua_push(L, g->ex[x->last]);
    lua_setfield(L, -2, "last");
    lua_newtable(L);
    lua_setfield(L, -2, "ops");
    lua_rawseti(L, -2, b + 1);
  }
  for (uint32_t o = 0; o < g->nops; o++) { /* boxes[opbox].ops += {word, n} */
    lua_rawgeti(L, -1, g->opbox[o] + 1);
    lua_getfield(L, -1, "ops");
    lua_createtable(L, 2, 0);
    lua_pushstring(L, g->words[g->opword[o]]);
    lua_rawseti(L, -2, 1);
    lua_pushinteger(L, g->opn[o]);
    lua_rawseti(L, -2, 2);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    lua_pop(L, 2);
  }
  lua_setfield(L, -2, "boxes");
  lua_createtable(L, (int)g->nxe, 0);
  for (uint32_t k = 0; k < g->nxe; k++) {
    const xedge *x = &g->xe[k];
    lua_createtable(L, 0, 7);
    lua_pushinteger(L, x->from + 1);
    lua_setfield(L, -2, "from");
    lua_pushinteger(L, x->to + 1);
    lua_setfield(L, -2, "to");
    lua_pushinteger(L, x->copies);
    lua_setfield(L, -2, "copies");
    if (x->copies) {
      if (x->size == DP_BYTES_KNOWN) lua_pushinteger(L, x->bytes);
      else lua_pushstring(L, x->size == DP_BYTES_UNKNOWN ? "unknown" : "too large");
      lua_setfield(L, -2, x->size == DP_BYTES_KNOWN ? "bytes" : "size");
      push_vd_or_nil(L, x->src);
      lua_setfield(L, -2, "src");
      push_vd_or_nil(L, x->dst);
      lua_setfield(L, -2, "dst");
    }
    lua_rawseti(L, -2, k + 1);
  }
  lua_setfield(L, -2, "edges");
}

/* The graph's memory, freed by __gc when pushing the result raises. */
static int graph_gc(lua_State *L) {
  graph *g = lua_touserdata(L, 1);
  graph_free(g);
  return 0;
}

static int l_graph(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_domains *d = lua_isnoneornil(L, 2) ? NULL : dp__lua_check(L, 2, dp_domains_objtype());
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_getfield(L, 3, "params");
  int params = lua_isnil(L, -1) ? -1 : lua_toboolean(L, -1);
  lua_getfield(L, 3, "detail");
  int lv = luaL_checkoption(L, -1, "auto", level_names);
  lua_getfield(L, 3, "max_nodes");
  lua_Integer budget = luaL_optinteger(L, -1, 40);
  luaL_argcheck(L, budget >= 1 && budget <= UINT32_MAX / 4, 3, "max_nodes must be at least 1");
  lua_pop(L, 3);
  if (d && dp_domains_module(d) != m) luaL_argerror(L, 2, "the domains of another module");
  graph *g = lua_newuserdatauv(L, sizeof *g, 0);
  memset(g, 0, sizeof *g);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, graph_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  g->d = d;
  uint32_t counts[4] = {0, 0, 0, 0};
  int chosen = L_DEVICES;
  if (build(g, m, params) < 0 || choose(g, lv, (uint32_t)budget, counts, &chosen) < 0) {
    graph_free(g);
    return dp__lua_oom(L);
  }
  push_result(L, g, m, chosen, counts);
  graph_free(g);
  return 1;
}

void dp__lua_open_graph(lua_State *L) {
  lua_pushcfunction(L, l_graph);
  lua_setfield(L, -2, "_graph");
}
