/*
 * Reading the metadata section (meta.h): TVM's JSON object graph into
 * devplan's objects, every entry at once, so that whatever devplan cannot
 * represent is an error before anything is built from it.
 *
 * Nodes reference each other by index; a node is read once (memo) however
 * often it is referenced. The reading follows the schema of each type key
 * (a VirtualDevice's target is a Target, whose host is a Target, ...), so
 * it nests only as deep as the schema does; lists of lists, the one open
 * nesting, stop at a fixed depth.
 *
 * TVM writes a node's scalar attributes as strings ("device_type_int":
 * "2") and its object attributes as node indices ("target": "5", "0" for
 * none); both are read that way, and as plain JSON numbers too.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "json.h"
#include "devplan/meta.h"
#include "devplan/scalar.h"

#define LIST_DEPTH 32
#define NDARRAY_MAGIC 0xDD5E40F096B4A13FULL

struct dp_meta {
  dp_ctx *ctx;
  uint32_t nkinds;
  struct mkind {
    char *name;
    uint32_t n;
    dp_aval *items;
  } *kinds;
};

typedef struct reader {
  dp_ctx *ctx;
  dp__jdoc d;
  const char *text;
  uint32_t source;
  uint32_t nnodes;
  uint32_t *node;      /* json index of each node */
  uint32_t nb64;
  uint32_t *b64;       /* json index of each b64ndarrays string */
  dp_aval *memo;       /* per node, once read (kind 0: not yet) */
  uint8_t *busy;       /* per node: being read (a cycle otherwise) */
  dp_err *err;
} reader;

/* s[0..n) as a C string (malloc'd). */
static char *copy_n(const char *s, size_t n) {
  char *out = dp_malloc(n + 1);
  if (out) {
    memcpy(out, s, n);
    out[n] = '\0';
  }
  return out;
}

/* ---------------- errors ---------------- */

static dp_span span_at(const reader *r, size_t off) {
  uint32_t line = 1;
  size_t bol = 0;
  for (size_t i = 0; i < off; i++)
    if (r->text[i] == '\n') line++, bol = i + 1;
  return (dp_span){r->source, line, (uint32_t)(off - bol) + 1};
}

/* An error at json value j (DP__J_NONE: the section's start): -1. */
static int fail(reader *r, uint32_t j, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(reader *r, uint32_t j, const char *fmt, ...) {
  if (r->err) return -1;
  char with_prefix[256];
  snprintf(with_prefix, sizeof with_prefix, "metadata: %s", fmt); /* fmt's own %s stay */
  size_t off = j < r->d.n ? r->d.v[j].off - (r->d.v[j].kind == DP__J_STR) : 0;
  va_list ap;
  va_start(ap, fmt);
  r->err = dp__err_vat(r->ctx, DP_ERR_VALUE, span_at(r, off), with_prefix, ap);
  va_end(ap);
  return -1;
}

static int oom(reader *r) {
  if (!r->err) r->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  return -1;
}

/* A maker's error e (NULL: out of memory) for node json j, read as what
   ("Target"); frees e. Running out of memory stays that, unprefixed. */
static int fail_made(reader *r, uint32_t j, const char *what, dp_err *e) {
  if (!e || e->code == DP_ERR_MEMORY) oom(r);
  else fail(r, j, "%s: %s", what, e->msg);
  dp_err_free(e);
  return -1;
}

/* ---------------- nodes ---------------- */

/* The json object of node k. */
static uint32_t node_json(const reader *r, uint32_t k) { return r->node[k]; }

static int type_is(const reader *r, uint32_t k, const char *key) {
  return dp__json_is(&r->d, dp__json_member(&r->d, node_json(r, k), "type_key"), key);
}

/* The node's type key, NUL-terminated, into buf. */
static const char *type_key(const reader *r, uint32_t k, char *buf, size_t cap) {
  size_t n;
  char *tmp;
  const char *s = dp__json_string(&r->d, dp__json_member(&r->d, node_json(r, k), "type_key"), &n, &tmp);
  snprintf(buf, cap, "%.*s", s ? (int)(n < cap ? n : cap - 1) : 1, s ? s : "?");
  free(tmp);
  return buf;
}

/* Attribute `name` of node k (its json value), or DP__J_NONE. */
static uint32_t attr(const reader *r, uint32_t k, const char *name) {
  return dp__json_member(&r->d, dp__json_member(&r->d, node_json(r, k), "attrs"), name);
}

static int attr_int(reader *r, uint32_t k, const char *name, int64_t *out) {
  uint32_t a = attr(r, k, name);
  if (a == DP__J_NONE) return fail(r, node_json(r, k), "the node has no attribute '%s'", name);
  if (dp__json_int(&r->d, a, out) != 0) return fail(r, a, "attribute '%s' is not an integer", name);
  return 0;
}

/* A node index held by attribute `name` (or a json value j): 0 is none. */
static int ref_of(reader *r, uint32_t j, const char *what, uint32_t *out) {
  int64_t v;
  if (dp__json_int(&r->d, j, &v) != 0 || v < 0 || v >= r->nnodes)
    return fail(r, j, "%s is not a node index (0 to %u)", what, r->nnodes - 1);
  *out = (uint32_t)v;
  return 0;
}

static int attr_ref(reader *r, uint32_t k, const char *name, uint32_t *out) {
  uint32_t a = attr(r, k, name);
  if (a == DP__J_NONE) {
    *out = 0;
    return 0;
  }
  return ref_of(r, a, name, out);
}

/* The node's "data" list (node indices) and "keys" list. */
static uint32_t data_of(const reader *r, uint32_t k) { return dp__json_member(&r->d, node_json(r, k), "data"); }

/* runtime.String's bytes (repr_str, repr_b64, or an older repr_bytes),
   malloc'd and NUL-terminated. */
static char *string_node(reader *r, uint32_t k) {
  if (!type_is(r, k, "runtime.String")) {
    char tk[64];
    fail(r, node_json(r, k), "a string (runtime.String) was expected, found %s", type_key(r, k, tk, sizeof tk));
    return NULL;
  }
  uint32_t o = node_json(r, k), j = dp__json_member(&r->d, o, "repr_str");
  int b64 = 0;
  if (j == DP__J_NONE) j = dp__json_member(&r->d, o, "repr_bytes");
  if (j == DP__J_NONE && (j = dp__json_member(&r->d, o, "repr_b64")) != DP__J_NONE) b64 = 1;
  if (j == DP__J_NONE) return dp_strdup(""); /* TVM writes no repr for "" */
  size_t n;
  char *tmp;
  const char *s = dp__json_string(&r->d, j, &n, &tmp);
  char *out = NULL;
  if (!s) {
    if (r->d.v[j].kind != DP__J_STR) fail(r, j, "a string's bytes must be a JSON string");
    else oom(r);
  } else if (b64) {
    int bad;
    size_t m;
    unsigned char *bytes = dp__b64_decode(s, n, &m, &bad);
    if (bytes && memchr(bytes, 0, m)) bad = 1;
    if (bytes && !bad && (out = dp_malloc(m + 1))) {
      memcpy(out, bytes, m);
      out[m] = '\0';
    }
    free(bytes);
    if (!out) bad ? fail(r, j, "a string's repr_b64 is not base64 of text") : oom(r);
  } else if (memchr(s, 0, n)) {
    fail(r, j, "a string holds a NUL byte");
  } else if ((out = dp_malloc(n + 1))) {
    memcpy(out, s, n);
    out[n] = '\0';
  } else {
    oom(r);
  }
  free(tmp);
  return out;
}

/* ---------------- values ---------------- */

static int read_value(reader *r, uint32_t k, int depth, dp_aval *out);

static int int_node(reader *r, uint32_t k, dp_aval *out) {
  /* IntImm: attrs dtype, value; runtime.Box*: the value as its repr */
  if (type_is(r, k, "IntImm")) {
    int64_t v;
    uint32_t dt = attr(r, k, "dtype");
    if (attr_int(r, k, "value", &v) != 0) return -1;
    *out = dp__json_is(&r->d, dt, "bool") ? dp_av_bool(v != 0) : dp_av_int(v);
    return 0;
  }
  uint32_t o = node_json(r, k), j = dp__json_member(&r->d, o, "repr_str");
  if (j == DP__J_NONE) j = attr(r, k, "value");
  int64_t v;
  if (type_is(r, k, "runtime.BoxBool")) {
    if (dp__json_is(&r->d, j, "true") || dp__json_is(&r->d, j, "false")) {
      *out = dp_av_bool(dp__json_is(&r->d, j, "true"));
      return 0;
    }
    if (dp__json_int(&r->d, j, &v) != 0) return fail(r, o, "runtime.BoxBool without a boolean value");
    *out = dp_av_bool(v != 0);
    return 0;
  }
  if (dp__json_int(&r->d, j, &v) != 0) return fail(r, o, "runtime.BoxInt without an integer value");
  *out = dp_av_int(v);
  return 0;
}

static int float_node(reader *r, uint32_t k, dp_aval *out) {
  uint32_t j = type_is(r, k, "FloatImm") ? attr(r, k, "value") : dp__json_member(&r->d, node_json(r, k), "repr_str");
  if (j == DP__J_NONE) j = attr(r, k, "value");
  double v;
  if (dp__json_real(&r->d, j, &v) != 0) return fail(r, node_json(r, k), "a float node without a number");
  *out = dp_av_float(v, 0);
  return 0;
}

/* Array: its items (each a value), as a list. */
static int array_node(reader *r, uint32_t k, int depth, dp_aval *out) {
  uint32_t data = data_of(r, k);
  uint32_t n = data == DP__J_NONE ? 0 : r->d.v[data].n;
  if (data != DP__J_NONE && r->d.v[data].kind != DP__J_ARR) return fail(r, data, "an Array's data must be a list");
  if (depth >= LIST_DEPTH) return fail(r, node_json(r, k), "lists nested more than %d deep", LIST_DEPTH);
  dp_aval *items = dp_calloc(n ? n : 1, sizeof *items);
  if (!items) return oom(r);
  uint32_t i = 0;
  for (uint32_t j = data + 1; i < n; i++, j = r->d.v[j].next) {
    uint32_t item;
    if (ref_of(r, j, "an Array item", &item) != 0 || read_value(r, item, depth + 1, &items[i]) != 0) break;
  }
  if (i < n) {
    while (i--) dp_av_clear(&items[i]);
    free(items);
    return -1;
  }
  *out = dp_av_list(n, items);
  return 0;
}

/* ---------------- targets ---------------- */

static dp_target *target_node(reader *r, uint32_t k, int depth);

static void opts_free(dp_target_opt *o, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    free(o[i].key);
    free(o[i].str);
    for (uint32_t j = 0; j < o[i].nitems; j++) free(o[i].items[j]);
    free(o[i].items);
  }
  free(o);
}

/* A target option from a value: integers, booleans, strings, lists of
   strings (what target options hold). */
static int option_of(reader *r, const char *key, uint32_t vnode, dp_target_opt *o) {
  dp_aval v;
  *o = (dp_target_opt){dp_strdup(key), DP_OPT_STR, NULL, 0, 0, NULL};
  if (!o->key) return oom(r);
  if (read_value(r, vnode, LIST_DEPTH - 1, &v) != 0) return -1;
  int rc = 0;
  switch (v.kind) {
  case DP_AV_INT: o->kind = DP_OPT_INT; o->num = v.u.i; break;
  case DP_AV_BOOL: o->kind = DP_OPT_BOOL; o->num = v.u.i; break;
  case DP_AV_STR: o->str = v.u.s; v.u.s = NULL; v.kind = DP_AV_NONE; break;
  case DP_AV_LIST:
    o->kind = DP_OPT_STRLIST;
    o->items = dp_calloc(v.n ? v.n : 1, sizeof *o->items);
    if (!o->items) rc = oom(r);
    for (uint32_t i = 0; rc == 0 && i < v.n; i++) {
      if (v.u.items[i].kind != DP_AV_STR)
        rc = fail(r, node_json(r, vnode), "target option '%s': a list of strings was expected", key);
      else if (!(o->items[o->nitems++] = dp_strdup(v.u.items[i].u.s)))
        rc = oom(r);
    }
    break;
  default:
    rc = fail(r, node_json(r, vnode), "target option '%s': no target option takes this value", key);
  }
  dp_av_clear(&v);
  return rc;
}

/* Target: kind (TargetKind, its name as repr), keys, attrs (a Map of the
   options), host. The tag is a name for what the options say: not needed;
   features are derived. */
static dp_target *target_node(reader *r, uint32_t k, int depth) {
  char tk[64];
  if (!type_is(r, k, "Target")) {
    fail(r, node_json(r, k), "a Target was expected, found %s", type_key(r, k, tk, sizeof tk));
    return NULL;
  }
  uint32_t kind_node, keys_node, attrs_node, host_node;
  if (attr_ref(r, k, "kind", &kind_node) || attr_ref(r, k, "keys", &keys_node) ||
      attr_ref(r, k, "attrs", &attrs_node) || attr_ref(r, k, "host", &host_node))
    return NULL;
  if (!kind_node || !type_is(r, kind_node, "TargetKind")) {
    fail(r, node_json(r, k), "a Target without its kind (a TargetKind)");
    return NULL;
  }
  uint32_t rj = dp__json_member(&r->d, node_json(r, kind_node), "repr_str");
  size_t n;
  char *tmp = NULL;
  const char *s = dp__json_string(&r->d, rj, &n, &tmp);
  char *kind = s ? copy_n(s, n) : NULL;
  free(tmp);
  uint32_t am = attrs_node ? data_of(r, attrs_node) : DP__J_NONE;
  uint32_t akeys = attrs_node ? dp__json_member(&r->d, node_json(r, attrs_node), "keys") : DP__J_NONE;
  uint32_t na = am == DP__J_NONE ? 0 : r->d.v[am].n;
  dp_target_opt *opts = dp_calloc(na + 2, sizeof *opts);
  uint32_t no = 0;
  dp_target *host = NULL, *t = NULL;
  int rc = kind && opts ? 0 : (s ? oom(r) : fail(r, node_json(r, kind_node), "a TargetKind without its name"));
  if (rc == 0 && attrs_node && (!type_is(r, attrs_node, "Map") ||
                                (akeys == DP__J_NONE ? na != 0 : r->d.v[akeys].n != na)))
    rc = fail(r, node_json(r, attrs_node), "a Target's attrs must be a Map of names to values");
  if (rc == 0 && keys_node) rc = option_of(r, "keys", keys_node, &opts[no++]);
  for (uint32_t i = 0, vj = am + 1, kj = akeys + 1; rc == 0 && i < na; i++, vj = r->d.v[vj].next) {
    uint32_t vnode;
    char *key = NULL;
    const char *ks = dp__json_string(&r->d, kj, &n, &tmp);
    if (!ks || !(key = copy_n(ks, n))) rc = ks ? oom(r) : fail(r, kj, "an option name must be a string");
    free(tmp);
    kj = r->d.v[kj].next;
    if (rc == 0 && (rc = ref_of(r, vj, "an option's value", &vnode)) == 0)
      rc = option_of(r, key, vnode, &opts[no++]);
    free(key);
  }
  if (rc == 0 && host_node) {
    if (depth > 0) rc = fail(r, node_json(r, host_node), "a host target has a host of its own");
    else if (!(host = target_node(r, host_node, depth + 1))) rc = -1;
  }
  if (rc == 0) {
    dp_err *e = NULL;
    if (!(t = dp_target_make(r->ctx, kind, opts, no, host, &e))) fail_made(r, node_json(r, k), "Target", e);
  }
  dp_release(host);
  opts_free(opts, no);
  free(kind);
  return t;
}

/* ---------------- virtual devices and constants ---------------- */

static int vdev_node(reader *r, uint32_t k, dp_aval *out) {
  int64_t dt = -1, id = -1;
  uint32_t tnode, snode;
  if (attr(r, k, "device_type_int") != DP__J_NONE ? attr_int(r, k, "device_type_int", &dt)
                                                  : attr_int(r, k, "device_type", &dt))
    return -1;
  if (attr_int(r, k, "virtual_device_id", &id) || attr_ref(r, k, "target", &tnode) ||
      attr_ref(r, k, "memory_scope", &snode))
    return -1;
  if (dt < -1 || dt > 1024 || id < -1 || id > INT32_MAX)
    return fail(r, node_json(r, k), "VirtualDevice: device type %lld or id %lld out of range", (long long)dt,
                (long long)id);
  dp_target *t = tnode ? target_node(r, tnode, 0) : NULL;
  char *scope = snode ? string_node(r, snode) : dp_strdup("");
  dp_vdev *vd = NULL;
  if ((!tnode || t) && scope) {
    dp_err *e = NULL;
    vd = dp_vdev_make(r->ctx, dt < 0 ? 0 : (int)dt, (int)id, t, scope, &e);
    if (!vd) fail_made(r, node_json(r, k), "VirtualDevice", e);
  } else if (!scope) {
    oom(r);
  }
  dp_release(t);
  free(scope);
  if (!vd) return -1;
  *out = dp_av_vdev(vd);
  dp_release(vd);
  return 0;
}

static uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n; i-- > 0;) v = v << 8 | p[i];
  return v;
}

/* TVM's dtype codes (DLPack) to devplan's. */
static dp_dtype dtype_of(unsigned code, unsigned bits, unsigned lanes) {
  if (lanes == 0) return 0;
  if (code == 1 && bits == 1) return DP_DTYPE(DP_DT_BOOL, 1, lanes);
  if (code == 0 && (bits == 8 || bits == 16 || bits == 32 || bits == 64)) return DP_DTYPE(DP_DT_INT, bits, lanes);
  if (code == 1 && (bits == 8 || bits == 16 || bits == 32 || bits == 64)) return DP_DTYPE(DP_DT_UINT, bits, lanes);
  if (code == 2 && (bits == 16 || bits == 32 || bits == 64)) return DP_DTYPE(DP_DT_FLOAT, bits, lanes);
  if (code == 4 && bits == 16) return DP_DTYPE(DP_DT_BFLOAT, bits, lanes);
  return 0;
}

/* TVM's NDArray format: magic, reserved, device (cpu), ndim, dtype, shape,
   byte size, the bytes. */
static dp_const *ndarray(reader *r, uint32_t j, const unsigned char *b, size_t n, dp_span span) {
  /* magic 0..7, reserved 8..15, device 16..23, ndim 24..27, dtype 28..31 */
  if (n < 32 || le(b, 8) != NDARRAY_MAGIC) {
    fail(r, j, "relay.Constant: not an array (TVM's NDArray format)");
    return NULL;
  }
  uint64_t ndim = le(b + 24, 4);
  size_t at = 32;
  if (ndim > 64 || n < at + 8 * ndim + 8) {
    fail(r, j, "relay.Constant: a malformed array header");
    return NULL;
  }
  dp_dtype dt = dtype_of(b[28], b[29], (unsigned)le(b + 30, 2));
  if (!dt) {
    fail(r, j, "relay.Constant: an array of dtype code %u, %u bits, %u lanes, which devplan does not represent",
         b[28], b[29], (unsigned)le(b + 30, 2));
    return NULL;
  }
  int64_t shape[64];
  uint64_t count = 1;
  for (uint64_t i = 0; i < ndim; i++, at += 8) {
    shape[i] = (int64_t)le(b + at, 8);
    if (shape[i] < 0 || (shape[i] && count > (UINT64_C(1) << 40) / (uint64_t)shape[i])) {
      fail(r, j, "relay.Constant: a malformed array shape");
      return NULL;
    }
    count *= (uint64_t)shape[i];
  }
  uint64_t size = le(b + at, 8), need = count * dp_dtype_bytes(dt);
  at += 8;
  if (n - at != need) {
    fail(r, j, "relay.Constant: the array holds %llu bytes where its shape and dtype need %llu",
         (unsigned long long)(n - at), (unsigned long long)need);
    return NULL;
  }
  if (size != need) {
    fail(r, j, "relay.Constant: the array's header gives its size as %llu bytes where its shape and "
         "dtype need %llu (which it holds)", (unsigned long long)size, (unsigned long long)need);
    return NULL;
  }
  dp_err *e = NULL;
  dp_const *c = dp_const_new(dt, (uint32_t)ndim, shape, b + at, span, &e);
  if (!c) fail_made(r, j, "relay.Constant", e);
  return c;
}

static int const_node(reader *r, uint32_t k, dp_aval *out) {
  int64_t data;
  uint32_t vnode;
  if (attr_int(r, k, "data", &data) || attr_ref(r, k, "virtual_device_", &vnode)) return -1;
  if (data < 0 || data >= r->nb64)
    return fail(r, attr(r, k, "data"), "relay.Constant: array %lld is not in b64ndarrays (%u arrays)",
                (long long)data, r->nb64);
  if (vnode) { /* TVM's constants carry no device but the unconstrained one */
    dp_aval vd;
    if (read_value(r, vnode, 0, &vd) != 0) return -1;
    int free_vd = vd.kind == DP_AV_VDEV && dp_vdev_is_fully_unconstrained(vd.u.vdev);
    dp_av_clear(&vd);
    if (!free_vd)
      return fail(r, node_json(r, vnode), "relay.Constant with a virtual device of its own, which devplan "
                                          "does not represent (wrap the constant in on_device instead)");
  }
  uint32_t j = r->b64[data];
  size_t n, m;
  char *tmp;
  int bad;
  const char *s = dp__json_string(&r->d, j, &n, &tmp);
  unsigned char *bytes = s ? dp__b64_decode(s, n, &m, &bad) : NULL;
  free(tmp);
  if (!bytes) return !s ? (r->d.v[j].kind == DP__J_STR ? oom(r) : fail(r, j, "an array must be a string"))
                        : bad ? fail(r, j, "an array is not base64") : oom(r);
  dp_const *c = ndarray(r, j, bytes, m, DP_NOSPAN);
  free(bytes);
  if (!c) return -1;
  *out = dp_av_expr(&c->e);
  dp_release(c);
  return 0;
}

/* ---------------- dispatch ---------------- */

static int read_node(reader *r, uint32_t k, int depth, dp_aval *out) {
  char tk[64];
  type_key(r, k, tk, sizeof tk);
  if (!strcmp(tk, "VirtualDevice")) return vdev_node(r, k, out);
  if (!strcmp(tk, "relay.Constant")) return const_node(r, k, out);
  if (!strcmp(tk, "runtime.String")) {
    char *s = string_node(r, k);
    if (!s) return -1;
    *out = dp_av_string(s);
    free(s);
    return out->u.s ? 0 : oom(r);
  }
  if (!strcmp(tk, "IntImm") || !strcmp(tk, "runtime.BoxInt") || !strcmp(tk, "runtime.BoxBool"))
    return int_node(r, k, out);
  if (!strcmp(tk, "FloatImm") || !strcmp(tk, "runtime.BoxFloat")) return float_node(r, k, out);
  if (!strcmp(tk, "Array")) return array_node(r, k, depth, out);
  if (!strcmp(tk, "Target"))
    return fail(r, node_json(r, k), "a Target stands only as a VirtualDevice's target: devplan has no "
                                    "meta[Target] values");
  if (!strcmp(tk, "Map") || !strcmp(tk, "StrMap"))
    return fail(r, node_json(r, k), "a Map stands only as a Target's attrs (or the root): devplan has no "
                                    "map values");
  return fail(r, node_json(r, k), "type key '%s' is not one devplan represents (it reads VirtualDevice, "
                                  "relay.Constant, Target, runtime.String, IntImm, FloatImm, "
                                  "runtime.BoxInt/BoxFloat/BoxBool, Array)", tk);
}

/* Node k as a value (a copy of the memo: a node read once). */
static int read_value(reader *r, uint32_t k, int depth, dp_aval *out) {
  if (k == 0) return fail(r, DP__J_NONE, "a null node where a value is needed");
  if (r->memo[k].kind) {
    *out = dp_av_copy(&r->memo[k]);
    return out->kind ? 0 : oom(r);
  }
  if (r->busy[k]) return fail(r, node_json(r, k), "a node that contains itself");
  r->busy[k] = 1;
  int rc = read_node(r, k, depth, &r->memo[k]);
  r->busy[k] = 0;
  if (rc != 0) {
    r->memo[k].kind = 0;
    return -1;
  }
  *out = dp_av_copy(&r->memo[k]);
  return out->kind ? 0 : oom(r);
}

/* ---------------- the section ---------------- */

/* The json indices of the items of array a into a new array. */
static uint32_t *items_of(reader *r, uint32_t a, uint32_t *n) {
  *n = r->d.v[a].n;
  uint32_t *out = dp_malloc((*n ? *n : 1) * sizeof *out);
  if (!out) return NULL;
  for (uint32_t i = 0, j = a + 1; i < *n; i++, j = r->d.v[j].next) out[i] = j;
  return out;
}

static int read_graph(reader *r, uint32_t top) {
  uint32_t nodes = dp__json_member(&r->d, top, "nodes"), root = dp__json_member(&r->d, top, "root");
  uint32_t b64 = dp__json_member(&r->d, top, "b64ndarrays");
  if (r->d.v[top].kind != DP__J_OBJ || nodes == DP__J_NONE || r->d.v[nodes].kind != DP__J_ARR || root == DP__J_NONE)
    return fail(r, top, "expected TVM's JSON object graph: {\"root\": ..., \"nodes\": [...], ...}");
  if (b64 != DP__J_NONE && r->d.v[b64].kind != DP__J_ARR) return fail(r, b64, "b64ndarrays must be a list");
  if (!(r->node = items_of(r, nodes, &r->nnodes))) return oom(r);
  if (b64 != DP__J_NONE && !(r->b64 = items_of(r, b64, &r->nb64))) return oom(r);
  for (uint32_t k = 0; k < r->nnodes; k++)
    if (r->d.v[r->node[k]].kind != DP__J_OBJ) return fail(r, r->node[k], "node %u is not an object", k);
  r->memo = dp_calloc(r->nnodes + 1, sizeof *r->memo);
  r->busy = dp_calloc(r->nnodes + 1, 1);
  if (!r->memo || !r->busy) return oom(r);
  return 0;
}

/* The root Map: kind names (its "keys", or String nodes in "data" pairs)
   to Arrays of entries. */
static int read_kinds(reader *r, dp_meta *m, uint32_t top) {
  uint32_t root;
  if (ref_of(r, dp__json_member(&r->d, top, "root"), "root", &root) != 0) return -1;
  if (!root) return 0; /* an empty section */
  if (!type_is(r, root, "Map") && !type_is(r, root, "StrMap"))
    return fail(r, node_json(r, root), "the root must be a Map of kinds to lists");
  uint32_t data = data_of(r, root), keys = dp__json_member(&r->d, node_json(r, root), "keys");
  uint32_t nd = data == DP__J_NONE ? 0 : r->d.v[data].n, n = keys == DP__J_NONE ? nd / 2 : nd;
  if (keys != DP__J_NONE && r->d.v[keys].n != nd) return fail(r, keys, "the root Map's keys and data differ in number");
  m->kinds = dp_calloc(n ? n : 1, sizeof *m->kinds);
  if (!m->kinds) return oom(r);
  uint32_t j = data + 1, kj = keys + 1;
  for (uint32_t i = 0; i < n; i++) {
    struct mkind *mk = &m->kinds[m->nkinds++];
    uint32_t list;
    if (keys != DP__J_NONE) {
      size_t len;
      char *tmp;
      const char *s = dp__json_string(&r->d, kj, &len, &tmp);
      mk->name = s ? copy_n(s, len) : NULL;
      free(tmp);
      if (!mk->name) return s ? oom(r) : fail(r, kj, "a kind must be a string");
      kj = r->d.v[kj].next;
    } else {
      uint32_t kn;
      if (ref_of(r, j, "a kind", &kn) != 0 || !(mk->name = string_node(r, kn))) return -1;
      j = r->d.v[j].next;
    }
    if (ref_of(r, j, "a kind's list", &list) != 0) return -1;
    j = r->d.v[j].next;
    if (!list || !type_is(r, list, "Array"))
      return fail(r, node_json(r, list), "meta[%s] must be an Array", mk->name);
    dp_aval v;
    if (read_value(r, list, 0, &v) != 0) return -1;
    mk->n = v.n;
    mk->items = v.u.items;
  }
  return 0;
}

dp_meta *dp_meta_read(dp_ctx *ctx, const char *text, size_t start, size_t len, uint32_t source, dp_err **err) {
  reader r = {.ctx = ctx, .text = text, .source = source};
  dp_meta *m = dp_calloc(1, sizeof *m);
  size_t at;
  const char *why;
  if (!m) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  m->ctx = dp_retain(ctx);
  if (dp__json_read(&r.d, text, start, len, &at, &why) != 0) {
    r.err = !strcmp(why, "out of memory") ? dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory")
                                          : dp_err_at(ctx, DP_ERR_SYNTAX, span_at(&r, at), "metadata: %s", why);
  } else if (read_graph(&r, 0) == 0) {
    read_kinds(&r, m, 0);
  }
  for (uint32_t k = 0; r.memo && k <= r.nnodes; k++) dp_av_clear(&r.memo[k]);
  free(r.memo);
  free(r.busy);
  free(r.node);
  free(r.b64);
  dp__json_free(&r.d);
  if (r.err) {
    dp_meta_free(m);
    dp_err_set(err, r.err);
    return NULL;
  }
  return m;
}

void dp_meta_free(dp_meta *m) {
  if (!m) return;
  for (uint32_t i = 0; i < m->nkinds; i++) {
    for (uint32_t k = 0; k < m->kinds[i].n; k++) dp_av_clear(&m->kinds[i].items[k]);
    free(m->kinds[i].items);
    free(m->kinds[i].name);
  }
  free(m->kinds);
  dp_release(m->ctx);
  free(m);
}

int dp_meta_get(const dp_meta *m, const char *kind, int64_t index, const dp_aval **out, dp_err **err) {
  for (uint32_t i = 0; m && i < m->nkinds; i++) {
    const struct mkind *mk = &m->kinds[i];
    if (strcmp(mk->name, kind)) continue;
    if (index < 0 || index >= mk->n) {
      dp_err_set(err, dp_err_new(DP_ERR_NAME, DP_NOSPAN, "meta[%s][%lld] is out of range (the metadata has %u %s entr%s)",
                                 kind, (long long)index, mk->n, kind, mk->n == 1 ? "y" : "ies"));
      return -1;
    }
    *out = &mk->items[index];
    return 1;
  }
  return 0;
}

const char *dp_meta_kind(const dp_meta *m, uint32_t i, uint32_t *count) {
  if (!m || i >= m->nkinds) return NULL;
  if (count) *count = m->kinds[i].n;
  return m->kinds[i].name;
}
