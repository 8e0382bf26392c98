/*
 * Writing the metadata section (DP_PRINT_META): the virtual devices and
 * constants a printed text refers to as meta[KIND][i], as TVM's
 * tvm.ir.save_json writes them (TVM 0.9's node layout), so that TVM's
 * parser reads the text and devplan's reads it back to the same module.
 *
 * The object graph is laid out as TVM's indexer does: node 0 is null, the
 * root Map next, then every node in pre-order of its fields (a field's
 * node before the next field's), each distinct object once (a target
 * shared by two devices is one node). Scalar attributes are strings, as
 * TVM writes them; object attributes node indices.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "json.h"
#include "print_internal.h"

#define TVM_VERSION "0.9.dev0"
#define MAX_ATTRS 6

/* ---------------- collecting ---------------- */

void dp__metaw_init(dp__metaw *w) {
  memset(w, 0, sizeof *w);
  w->index = DP__PTRMAP_INIT;
}

void dp__metaw_free(dp__metaw *w) {
  dp__ptrmap_free(&w->index);
  free(w->vdevs);
  free(w->consts);
  memset(w, 0, sizeof *w);
}

int64_t dp__metaw_add(dp__metaw *w, const void *obj, int is_const) {
  int fresh;
  dp__ptrslot *v = dp__ptrmap_insert(&w->index, obj, &fresh);
  if (!v) return -1;
  if (!fresh) return (int64_t)v->word;
  const void ***list = is_const ? (const void ***)&w->consts : (const void ***)&w->vdevs;
  uint32_t *n = is_const ? &w->nconsts : &w->nvdevs, *cap = is_const ? &w->capconsts : &w->capvdevs;
  if (dp_grow((void **)list, cap, *n + 1, sizeof **list) != 0) return -1;
  (*list)[*n] = obj;
  v->word = (*n)++;
  return (int64_t)v->word;
}

/* ---------------- the node graph ---------------- */

typedef struct jattr {
  const char *key;
  char val[24];
} jattr;

typedef struct jnode {
  const char *type_key;
  char *repr;                 /* repr_str, or NULL (owned) */
  uint32_t nattrs;
  jattr attrs[MAX_ATTRS];     /* written sorted by key */
  const char **keys;          /* a Map's keys (borrowed), or NULL */
  uint32_t nkeys;
  uint32_t *data;             /* Array items, Map values */
  uint32_t ndata, capdata;
} jnode;

typedef struct graph {
  jnode *nodes;
  uint32_t n, cap;
  dp__ptrmap index;             /* target -> node */
  const dp_const **arrays;    /* b64ndarrays, in order */
  uint32_t narrays, caparrays;
  int failed;
} graph;

static uint32_t new_node(graph *g, const char *type_key) {
  if (dp_grow((void **)&g->nodes, &g->cap, g->n + 1, sizeof *g->nodes) != 0) {
    g->failed = 1;
    return 0;
  }
  memset(&g->nodes[g->n], 0, sizeof g->nodes[g->n]);
  g->nodes[g->n].type_key = type_key;
  return g->n++;
}

static void set_attr(graph *g, uint32_t k, const char *key, long long v) {
  jnode *n = &g->nodes[k];
  if (g->failed || n->nattrs == MAX_ATTRS) return;
  n->attrs[n->nattrs].key = key;
  snprintf(n->attrs[n->nattrs].val, sizeof n->attrs[0].val, "%lld", v);
  n->nattrs++;
}

static void add_data(graph *g, uint32_t k, uint32_t item) {
  jnode *n = &g->nodes[k];
  if (g->failed) return;
  if (dp_grow((void **)&n->data, &n->capdata, n->ndata + 1, sizeof *n->data) != 0) {
    g->failed = 1;
    return;
  }
  n->data[n->ndata++] = item;
}

static uint32_t string_node(graph *g, const char *s) {
  uint32_t k = new_node(g, "runtime.String");
  if (!g->failed && s[0] && !(g->nodes[k].repr = dp_strdup(s))) g->failed = 1;
  return k;
}

/* Integer and boolean options as TVM 0.9 holds them (Integer and Bool:
   IntImm of int32, int64 beyond it, bool). */
static uint32_t intimm_node(graph *g, int64_t v, int is_bool) {
  uint32_t k = new_node(g, "IntImm");
  if (g->failed) return k;
  jnode *n = &g->nodes[k];
  n->attrs[0].key = "dtype";
  snprintf(n->attrs[0].val, sizeof n->attrs[0].val, "%s",
           is_bool ? "bool" : v >= INT32_MIN && v <= INT32_MAX ? "int32" : "int64");
  n->nattrs = 1;
  set_attr(g, k, "value", v);
  set_attr(g, k, "span", 0);
  return k;
}

static uint32_t strings_node(graph *g, char *const *items, uint32_t n) {
  uint32_t k = new_node(g, "Array");
  for (uint32_t i = 0; i < n && !g->failed; i++) add_data(g, k, string_node(g, items[i]));
  return k;
}

static uint32_t option_node(graph *g, const dp_target_opt *o) {
  switch (o->kind) {
  case DP_OPT_INT: return intimm_node(g, o->num, 0);
  case DP_OPT_BOOL: return intimm_node(g, o->num, 1);
  case DP_OPT_STRLIST: return strings_node(g, o->items, o->nitems);
  default: return string_node(g, o->str ? o->str : "");
  }
}

/* Target: kind, tag, keys, attrs (a Map of the other options), host. */
static uint32_t target_node(graph *g, const dp_target *t) {
  int fresh;
  dp__ptrslot *seen = dp__ptrmap_insert(&g->index, t, &fresh);
  if (!seen) {
    g->failed = 1;
    return 0;
  }
  if (!fresh) return (uint32_t)seen->word;
  uint32_t k = new_node(g, "Target");
  seen->word = k; /* (before the fields: a host is another target) */
  uint32_t kind = new_node(g, "TargetKind");
  if (!g->failed && !(g->nodes[kind].repr = dp_strdup(t->kind))) g->failed = 1;
  uint32_t tag = string_node(g, "");
  const dp_target_opt *keys = dp_target_opt_get(t, "keys");
  uint32_t keys_node = keys ? option_node(g, keys) : strings_node(g, NULL, 0);
  uint32_t attrs = new_node(g, "Map");
  if (!g->failed && !(g->nodes[attrs].keys = dp_calloc(t->nopts ? t->nopts : 1, sizeof(char *)))) g->failed = 1;
  for (uint32_t i = 0; i < t->nopts && !g->failed; i++) { /* (sorted by key already) */
    if (!strcmp(t->opts[i].key, "keys")) continue;
    uint32_t v = option_node(g, &t->opts[i]);
    if (g->failed) break;
    g->nodes[attrs].keys[g->nodes[attrs].nkeys++] = t->opts[i].key;
    add_data(g, attrs, v);
  }
  uint32_t host = t->host ? target_node(g, t->host) : 0;
  set_attr(g, k, "attrs", attrs);
  set_attr(g, k, "host", host);
  set_attr(g, k, "keys", keys_node);
  set_attr(g, k, "kind", kind);
  set_attr(g, k, "tag", tag);
  return k;
}

/* VirtualDevice: device_type_int (-1: none, as TVM), virtual_device_id,
   target, memory_scope. */
static uint32_t vdev_node(graph *g, const dp_vdev *vd) {
  uint32_t k = new_node(g, "VirtualDevice");
  uint32_t target = vd->target ? target_node(g, vd->target) : 0;
  uint32_t scope = string_node(g, vd->memory_scope);
  set_attr(g, k, "device_type_int", vd->device_type ? vd->device_type : -1);
  set_attr(g, k, "memory_scope", scope);
  set_attr(g, k, "target", target);
  set_attr(g, k, "virtual_device_id", vd->virtual_device_id);
  return k;
}

/* relay.Constant: its array goes to b64ndarrays. */
static uint32_t const_node(graph *g, const dp_const *c) {
  uint32_t k = new_node(g, "relay.Constant");
  if (dp_grow((void **)&g->arrays, &g->caparrays, g->narrays + 1, sizeof *g->arrays) != 0) {
    g->failed = 1;
    return k;
  }
  g->arrays[g->narrays] = c;
  set_attr(g, k, "_checked_type_", 0);
  set_attr(g, k, "data", g->narrays++);
  set_attr(g, k, "span", 0);
  set_attr(g, k, "virtual_device_", 0);
  return k;
}

static void build(graph *g, const dp__metaw *w) {
  static const char *kinds[] = {"VirtualDevice", "relay.Constant"};
  new_node(g, ""); /* null */
  uint32_t root = new_node(g, "Map");
  if (!g->failed && !(g->nodes[root].keys = dp_calloc(2, sizeof(char *)))) g->failed = 1;
  for (int kind = 0; kind < 2 && !g->failed; kind++) {
    uint32_t n = kind ? w->nconsts : w->nvdevs;
    if (!n) continue;
    uint32_t list = new_node(g, "Array");
    g->nodes[root].keys[g->nodes[root].nkeys++] = kinds[kind];
    add_data(g, root, list);
    for (uint32_t i = 0; i < n && !g->failed; i++)
      add_data(g, list, kind ? const_node(g, w->consts[i]) : vdev_node(g, w->vdevs[i]));
  }
}

/* ---------------- the text ---------------- */

static int by_key(const void *a, const void *b) {
  return strcmp(((const jattr *)a)->key, ((const jattr *)b)->key);
}

static void put_node(dp__jw *w, jnode *n) {
  char num[24];
  dp__jw_item(w);
  dp__jw_begin(w, '{', 1);
  dp__jw_key(w, "type_key");
  dp__jw_string(w, n->type_key, strlen(n->type_key));
  if (n->repr) {
    dp__jw_key(w, "repr_str");
    dp__jw_string(w, n->repr, strlen(n->repr));
  }
  if (n->nattrs) {
    qsort(n->attrs, n->nattrs, sizeof *n->attrs, by_key);
    dp__jw_key(w, "attrs");
    dp__jw_begin(w, '{', n->nattrs > 1);
    for (uint32_t i = 0; i < n->nattrs; i++) {
      dp__jw_key(w, n->attrs[i].key);
      dp__jw_string(w, n->attrs[i].val, strlen(n->attrs[i].val));
    }
    dp__jw_end(w, '}');
  }
  if (n->keys && n->nkeys) {
    dp__jw_key(w, "keys");
    dp__jw_begin(w, '[', 1);
    for (uint32_t i = 0; i < n->nkeys; i++) {
      dp__jw_item(w);
      dp__jw_string(w, n->keys[i], strlen(n->keys[i]));
    }
    dp__jw_end(w, ']');
  }
  if (n->ndata) {
    dp__jw_key(w, "data");
    dp__jw_begin(w, '[', n->ndata > 10);
    for (uint32_t i = 0; i < n->ndata; i++) {
      dp__jw_item(w);
      snprintf(num, sizeof num, "%u", n->data[i]);
      dp__tb_puts(w->b, num);
    }
    dp__jw_end(w, ']');
  }
  dp__jw_end(w, '}');
}

/* TVM's NDArray format: magic, reserved, device (cpu 0), ndim, dtype
   (DLPack codes), shape, byte size, bytes; all little-endian. */
static void put_array(dp__tb *b, const dp_const *c) {
  size_t n = 40 + 8 * (size_t)c->ndim + c->nbytes, at = 0;
  unsigned char *buf = dp_malloc(n);
  if (!buf) {
    b->failed = 1;
    return;
  }
#define LE(v, bytes) do { uint64_t x_ = (uint64_t)(v); for (int i_ = 0; i_ < (bytes); i_++, x_ >>= 8) buf[at++] = (unsigned char)x_; } while (0)
  int code = DP_DTYPE_CODE(c->dtype);
  LE(0xDD5E40F096B4A13FULL, 8);
  LE(0, 8);
  LE(1, 4); /* kDLCPU */
  LE(0, 4);
  LE(c->ndim, 4);
  LE(code == DP_DT_BOOL ? 1 : code, 1); /* (TVM's bool: uint of 1 bit) */
  LE(DP_DTYPE_BITS(c->dtype), 1);
  LE(DP_DTYPE_LANES(c->dtype), 2);
  for (uint32_t i = 0; i < c->ndim; i++) LE(c->shape[i], 8);
  LE(c->nbytes, 8);
#undef LE
  memcpy(buf + at, c->data, c->nbytes);
  dp__tb_putc(b, '"');
  dp__b64_encode(b, buf, n);
  dp__tb_putc(b, '"');
  free(buf);
}

int dp__metaw_write(dp__tb *b, const dp__metaw *mw) {
  graph g = {0};
  g.index = DP__PTRMAP_INIT;
  build(&g, mw);
  dp__jw w = {b, 0, {0}, {0}};
  if (!g.failed) {
    dp__jw_begin(&w, '{', 1);
    dp__jw_key(&w, "root");
    dp__tb_puts(b, "1");
    dp__jw_key(&w, "nodes");
    dp__jw_begin(&w, '[', 1);
    for (uint32_t i = 0; i < g.n; i++) put_node(&w, &g.nodes[i]);
    dp__jw_end(&w, ']');
    dp__jw_key(&w, "b64ndarrays");
    dp__jw_begin(&w, '[', 1);
    for (uint32_t i = 0; i < g.narrays; i++) {
      dp__jw_item(&w);
      put_array(b, g.arrays[i]);
    }
    dp__jw_end(&w, ']');
    dp__jw_key(&w, "attrs");
    dp__jw_begin(&w, '{', 0);
    dp__jw_key(&w, "tvm_version");
    dp__jw_string(&w, TVM_VERSION, strlen(TVM_VERSION));
    dp__jw_end(&w, '}');
    dp__jw_end(&w, '}');
  }
  for (uint32_t i = 0; i < g.n; i++) {
    free(g.nodes[i].repr);
    free(g.nodes[i].keys);
    free(g.nodes[i].data);
  }
  free(g.nodes);
  free(g.arrays);
  dp__ptrmap_free(&g.index);
  return g.failed || b->failed ? -1 : 0;
}
