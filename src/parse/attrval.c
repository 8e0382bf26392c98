/*
 * Attribute values (`padding=[1, 1]`, `virtual_device=meta[VirtualDevice][0]`,
 * `a_min=-inff`, `dtype="int8"`, `units=None`), the VirtualDevice(...)
 * literal, and the attribute sets they make: checked against an operator's
 * schema, with the attribute at fault named and pointed at.
 *
 * A value's events follow its key: one token (a number, a string, True,
 * False, None, a meta reference, an identifier in a VirtualDevice field),
 * a list `[` ... `]` (nested lists with an explicit stack), a
 * VirtualDevice(...) (its fields `=` and values, then `)`), or a
 * Constant(...) (a type, its `[`, then `)`).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/suggest.h"
#include "devplan/meta.h"
#include "internal.h"

/* Attribute values are small: the core's list helpers recurse (attrs.h),
   so lists nest at most this deep, as dp.call's attribute tables. */
#define DP__ATTR_LIST_DEPTH 32

/* What the two kinds the text format names hold (entries of other kinds,
   from a metadata section, are attribute values). */
static int meta_fits(const char *kind, const dp_aval *v, const char **want) {
  if (!strcmp(kind, "VirtualDevice")) {
    *want = "virtual device";
    return v->kind == DP_AV_VDEV;
  }
  if (!strcmp(kind, "relay.Constant")) {
    *want = "constant";
    return v->kind == DP_AV_EXPR && v->u.expr->h.kind == DP_CONST;
  }
  return 1;
}

/* The text's own metadata section (after #[metadata], the last token),
   read once; 0 when read or when there is none. */
int dp__meta_load(dp_parser *p) {
  if (p->metadata || p->meta_failed || !p->ntok || p->kinds[p->ntok - 1] != DP_TOK_METADATA) return p->meta_failed ? -1 : 0;
  size_t off = dp__tok_off(p, p->ntok), start = dp__token_end(p->text, p->len, off, DP_TOK_METADATA);
  dp_err *err = NULL;
  if (!(p->metadata = dp_meta_read(p->ctx, p->text, start, p->len - start, p->source, &err))) {
    p->meta_failed = 1;
    return dp__fail_core(p, err, p->ntok);
  }
  return 0;
}

/* meta[KIND][INDEX] as an object (a virtual device, a constant) from the
   metatable given to the parser: NULL and no error when that has no list
   KIND (the text's metadata is asked then). */
static dp_obj *from_metatable(dp_parser *p, uint32_t tok, const char *kind, int64_t index) {
  dp_err *err = NULL;
  dp_obj *o = p->meta ? p->meta(p->meta_ud, kind, index, &err) : NULL;
  if (!o && err) dp__fail_core(p, err, tok);
  return o;
}

int dp__meta_value(dp_parser *p, uint32_t tok, dp_aval *out) {
  int64_t slot = dp__tok_slot(p, &p->names, tok);
  if (slot < 0) return -1;
  if (p->names.slots[slot].handle) { /* resolved before */
    dp_obj *o = dp__obj(p, p->names.slots[slot].handle);
    *out = o->type == DP_OBJ_VDEV ? dp_av_vdev((dp_vdev *)o) : dp_av_expr((dp_expr *)o);
    return 0;
  }
  const char *name;
  char kind[100];
  int64_t index;
  if (dp__meta_parts(p, tok, &name, &index) != 0) return -1;
  snprintf(kind, sizeof kind, "%s", name);
  dp_obj *o = from_metatable(p, tok, kind, index);
  if (p->err) return -1;
  int found = 0;
  if (o) {
    *out = o->type == DP_OBJ_VDEV ? dp_av_vdev((dp_vdev *)o)
           : o->type == DP_OBJ_EXPR ? dp_av_expr((dp_expr *)o) : dp_av_none();
    dp_release(o);
    found = 1;
  } else {
    const dp_aval *v = NULL;
    dp_err *err = NULL;
    if (dp__meta_load(p) != 0) return -1;
    found = p->metadata ? dp_meta_get(p->metadata, kind, index, &v, &err) : 0;
    if (found < 0) return dp__fail_core(p, err, tok);
    if (found) *out = dp_av_copy(v);
    if (found && !out->kind) return dp__oom(p, tok);
  }
  if (!found) {
    const char *why = p->metadata ? (p->meta_given ? "neither the metatable nor the text's metadata has a '%s' list"
                                                   : "the text's metadata has no '%s' list")
                      : p->meta_given ? "the metatable has no '%s' list, and the text no metadata section"
                                      : "no metatable was given and the text has no metadata section%.0s";
    char msg[256];
    snprintf(msg, sizeof msg, why, kind);
    return dp__fail(p, DP_ERR_NAME, tok, "meta[%s][%lld]: %s", kind, (long long)index, msg);
  }
  const char *want;
  if (!meta_fits(kind, out, &want)) {
    dp_av_clear(out);
    return dp__fail(p, DP_ERR_VALUE, tok, "meta[%s][%lld] is not a %s", kind, (long long)index, want);
  }
  if (out->kind == DP_AV_VDEV || out->kind == DP_AV_EXPR) { /* resolved once: cached under its text */
    dp_obj *obj = out->kind == DP_AV_VDEV ? (dp_obj *)out->u.vdev : (dp_obj *)out->u.expr;
    uint32_t h = dp__keep(p, dp_retain(obj), NULL, tok);
    if (!h) {
      dp_av_clear(out);
      return -1;
    }
    dp__scope_set(&p->names, (uint32_t)slot, h, 0);
  }
  return 0;
}

/* A VirtualDevice field that is unknown (with a suggestion), given twice,
   or given a value of the wrong kind. */
static int vdev_field_error(dp_parser *p, uint32_t key, uint32_t val) {
  static const char *const fields[] = {"device_type", "virtual_device_id", "target", "memory_scope"};
  static const char *const wants[] = {"a device type name or number", "an integer", "a target string",
                                      "a string"};
  size_t klen;
  const char *k = dp__tok_text(p, key, &klen);
  const char *name = dp__cname(p, k, klen);
  if (!name) return dp__oom(p, key);
  for (size_t f = 0; f < 4; f++)
    if (!strcmp(name, fields[f]))
      return dp__fail(p, DP_ERR_VALUE, val, "VirtualDevice field '%s' takes %s, once", name, wants[f]);
  char hint[DP_SUGGEST_HINT];
  return dp__fail(p, DP_ERR_NAME, key, "unknown VirtualDevice field '%s'%s", name,
                  dp__hint_in(name, dp_suggest_in(name, fields, 4), hint));
}

/* VirtualDevice(field=value, ...): from ev[*i] (the VDEV event) over each
   field's key and value to its `)`. */
static int read_vdev(dp_parser *p, const int64_t *ev, size_t n, size_t *i, dp_aval *out) {
  uint32_t tok = (uint32_t)ev[*i];
  int64_t device_type = 0, id = -1;
  dp_target *target = NULL;
  char *scope = NULL;
  int rc = 0;
  for ((*i)++; rc == 0 && *i < n && dp__kind(p, (uint32_t)ev[*i]) == DP_TOK_KEY; (*i)++) {
    uint32_t key = (uint32_t)ev[*i], val = (uint32_t)ev[++*i];
    size_t klen;
    const char *k = dp__tok_text(p, key, &klen);
    char vk = dp__kind(p, val);
    if (klen == 11 && !memcmp(k, "device_type", 11)) {
      if (vk == DP_TOK_NUMBER) {
        rc = dp__number_int(p, val, -1, 1024, "device_type", &device_type);
      } else {
        size_t vlen;
        const char *v = dp__tok_text(p, val, &vlen);
        const char *name = vk == DP_TOK_STRING ? dp__string_value(p, val) : dp__cname(p, v, vlen);
        device_type = name ? dp_device_type_parse(name) : -1;
        if (!name) rc = dp__oom(p, val);
        else if (device_type < 0) {
          char hint[DP_SUGGEST_HINT];
          rc = dp__fail(p, DP_ERR_NAME, val, "unknown device type '%s'%s", name,
                        dp__hint_in(name, dp_device_type_suggest(name), hint));
        }
      }
    } else if (klen == 17 && !memcmp(k, "virtual_device_id", 17) && vk == DP_TOK_NUMBER) {
      rc = dp__number_int(p, val, -1, INT32_MAX, "virtual_device_id", &id);
    } else if (klen == 6 && !memcmp(k, "target", 6) && vk == DP_TOK_STRING && !target) {
      const char *s = dp__string_value(p, val);
      dp_err *err = NULL;
      target = s ? dp_target_parse(p->ctx, s, &err) : NULL;
      if (!target) rc = dp__fail_core(p, err, val);
    } else if (klen == 12 && !memcmp(k, "memory_scope", 12) && vk == DP_TOK_STRING && !scope) {
      const char *s = dp__string_value(p, val);
      scope = s ? dp_strdup(s) : NULL;
      if (!scope) rc = dp__oom(p, val);
    } else {
      rc = vdev_field_error(p, key, val);
    }
  }
  dp_vdev *vd = NULL;
  if (rc == 0) {
    dp_err *err = NULL;
    vd = dp_vdev_make(p->ctx, (int)device_type, (int)id, target, scope, &err);
    if (!vd) rc = dp__fail_core(p, err, tok);
  }
  dp_release(target);
  free(scope);
  if (rc != 0) return -1;
  *out = dp_av_vdev(vd);
  dp_release(vd);
  return 0;
}

/* One value that is a single token (or a VirtualDevice / Constant form). */
static int read_scalar(dp_parser *p, const int64_t *ev, size_t n, size_t *i, dp_aval *out) {
  uint32_t tok = (uint32_t)ev[*i];
  switch (dp__kind(p, tok)) {
  case DP_TOK_NUMBER: return dp__number_aval(p, tok, out);
  case DP_TOK_TRUE: *out = dp_av_bool(1); return 0;
  case DP_TOK_FALSE: *out = dp_av_bool(0); return 0;
  case DP_TOK_NONE: *out = dp_av_none(); return 0;
  case DP_TOK_STRING: case DP_TOK_IDENT: {
    const char *s;
    if (dp__kind(p, tok) == DP_TOK_STRING) {
      s = dp__string_value(p, tok);
    } else {
      size_t len;
      const char *t = dp__tok_text(p, tok, &len);
      s = dp__cname(p, t, len);
    }
    *out = s ? dp_av_string(s) : (dp_aval){0};
    return out->kind ? 0 : dp__oom(p, tok);
  }
  case DP_TOK_META: return dp__meta_value(p, tok, out);
  case DP_TOK_VDEV: return read_vdev(p, ev, n, i, out);
  case DP_TOK_CONSTANT: {
    dp_obj *t = *i + 2 < n ? dp__event_obj(p, ev[*i + 1], tok) : NULL;
    if (!t || t->type != DP_OBJ_TYPE) return t ? dp__fail(p, DP_ERR_GENERIC, tok, "parser: constant type") : -1;
    dp_obj *c = dp__const_literal(p, (dp_type *)t, tok, (uint32_t)ev[*i + 2]);
    *i += 3; /* (type, `[`, `)`) */
    if (!c) return -1;
    *out = dp_av_expr((dp_expr *)c);
    dp_release(c);
    return 0;
  }
  default:
    return dp__fail(p, DP_ERR_GENERIC, tok, "parser: not an attribute value");
  }
}

int dp__read_aval(dp_parser *p, const int64_t *ev, size_t n, size_t *i, dp_aval *out) {
  uint32_t lists = 0, base = p->navs;
  for (; *i < n; (*i)++) {
    uint32_t tok = (uint32_t)ev[*i];
    char k = ev[*i] > 0 ? dp__kind(p, tok) : 0;
    dp_aval v;
    if (k == DP_TOK_LBRACK) { /* a list opens: its items pile up in p->avs above its mark */
      if (lists == DP__ATTR_LIST_DEPTH) {
        dp__fail(p, DP_ERR_VALUE, tok, "attribute lists nested too deeply (more than %d levels)", DP__ATTR_LIST_DEPTH);
        break;
      }
      if (dp__grow(p, (void **)&p->marks, &p->capmarks, p->nmarks + 1, sizeof *p->marks, tok) != 0) break;
      p->marks[p->nmarks++] = p->navs;
      lists++;
      continue;
    }
    if (k == DP_TOK_RBRACK) {
      uint32_t from = p->marks[--p->nmarks], m = p->navs - from;
      lists--;
      dp_aval *items = m ? dp_malloc(m * sizeof *items) : NULL;
      if (m && !items) {
        dp__oom(p, tok);
        break;
      }
      if (m) memcpy(items, p->avs + from, m * sizeof *items);
      p->navs = from;
      v = dp_av_list(m, items);
    } else if (read_scalar(p, ev, n, i, &v) != 0) {
      break;
    }
    if (lists == 0) {
      *out = v;
      return 0;
    }
    if (dp__grow(p, (void **)&p->avs, &p->capavs, p->navs + 1, sizeof *p->avs, tok) != 0) {
      dp_av_clear(&v);
      break;
    }
    p->avs[p->navs++] = v;
  }
  /* an error (or events that ended inside a list): drop what was read */
  while (p->navs > base) dp_av_clear(&p->avs[--p->navs]);
  p->nmarks -= lists;
  if (!p->err) dp__fail(p, DP_ERR_GENERIC, 0, "parser: attribute value");
  return -1;
}

/* ---------------- attribute sets ---------------- */

/* Items of p->attrs[from..] (into items) with NUL-terminated keys (in the
   name buffer), the values moved out; -1 on out of memory. */
static int attr_items(dp_parser *p, uint32_t from, uint32_t m, dp_attr *items) {
  size_t total = 0;
  for (uint32_t i = from; i < from + m; i++) {
    size_t len;
    dp__tok_text(p, p->attrs[i].key, &len);
    total += len + 1;
  }
  char *keys = dp__scratch(p, total);
  if (!keys) return -1;
  for (uint32_t i = 0; i < m; i++) {
    size_t len;
    const char *k = dp__tok_text(p, p->attrs[from + i].key, &len);
    memcpy(keys, k, len);
    keys[len] = '\0';
    items[i].key = keys;
    items[i].val = p->attrs[from + i].val;
    p->attrs[from + i].val = dp_av_none();
    keys += len + 1;
  }
  return 0;
}

static void attrs_drop(dp_parser *p, uint32_t from) {
  while (p->nattrs > from) dp_av_clear(&p->attrs[--p->nattrs].val);
}

/* The operator's schema rejected the set: find the attribute at fault (each
   alone) to point at it. */
static uint32_t culprit(const dp_op *op, const dp_attr *items, uint32_t m, const pattr *at, uint32_t tok) {
  for (uint32_t i = 0; i < m; i++) {
    dp_attr one = {items[i].key, dp_av_copy(&items[i].val)};
    dp_attrs *a = dp_op_attrs(op, 1, &one, NULL);
    if (!a) return at[i].key;
    dp_release(a);
  }
  return tok;
}

/* ---------------- recent attribute sets ----------------

   A program writes the same attributes on many calls (every
   `on_device(..., virtual_device=meta[VirtualDevice][0])`, every conv2d of
   a network with the same padding): a call whose operator and attributes
   equal a recent one's shares that call's checked set, as every call
   without attributes shares the empty one. (dp_op_attrs gives equal sets
   for equal input; sets are immutable.) Direct-mapped, few entries. */

#define ACACHE 64
#define ACACHE_MAX 4  /* attributes per call */

typedef struct pacache {
  struct acache_entry {
    const dp_expr *op;         /* NULL: empty */
    uint32_t m;
    char keys[ACACHE_MAX][32];
    dp_aval vals[ACACHE_MAX];  /* owned */
    dp_attrs *attrs;           /* retained */
  } e[ACACHE];
} pacache;

static void entry_clear(struct acache_entry *e) {
  for (uint32_t i = 0; e->op && i < e->m; i++) dp_av_clear(&e->vals[i]);
  dp_release(e->attrs);
  e->op = NULL;
  e->attrs = NULL;
}

void dp__attrs_cache_free(dp_parser *p) {
  for (int i = 0; p->acache && i < ACACHE; i++) entry_clear(&p->acache->e[i]);
  free(p->acache);
  p->acache = NULL;
}

/* The slot for the attributes p->attrs[from..from + m) of op, or NULL when
   they are not cached at all (too many, a key too long). */
static struct acache_entry *acache_slot(dp_parser *p, const dp_expr *op, uint32_t from, uint32_t m) {
  if (m > ACACHE_MAX) return NULL;
  if (!p->acache && !(p->acache = dp_calloc(1, sizeof *p->acache))) return NULL;
  uintptr_t h = (uintptr_t)op >> 4 ^ m;
  for (uint32_t i = 0; i < m; i++) {
    const dp_aval *v = &p->attrs[from + i].val;
    size_t len;
    dp__tok_text(p, p->attrs[from + i].key, &len);
    if (len >= sizeof p->acache->e[0].keys[0]) return NULL;
    uintptr_t x = v->kind == DP_AV_INT || v->kind == DP_AV_BOOL ? (uintptr_t)v->u.i
                : v->kind == DP_AV_VDEV ? (uintptr_t)v->u.vdev >> 4 : v->kind == DP_AV_LIST ? v->n : 0;
    h = h * 31 + len * 7 + v->kind + x;
  }
  return &p->acache->e[h % ACACHE];
}

static int acache_hit(dp_parser *p, const struct acache_entry *e, const dp_expr *op, uint32_t from, uint32_t m) {
  if (e->op != op || e->m != m) return 0;
  for (uint32_t i = 0; i < m; i++) {
    size_t len;
    const char *k = dp__tok_text(p, p->attrs[from + i].key, &len);
    if (strlen(e->keys[i]) != len || memcmp(e->keys[i], k, len) != 0) return 0;
    if (!dp_av_equal(&e->vals[i], &p->attrs[from + i].val)) return 0;
  }
  return 1;
}

static void acache_put(dp_parser *p, struct acache_entry *e, const dp_expr *op, const dp_attr *items,
                       uint32_t m, dp_attrs *attrs) {
  entry_clear(e);
  for (uint32_t i = 0; i < m; i++) {
    snprintf(e->keys[i], sizeof e->keys[i], "%s", items[i].key);
    e->vals[i] = dp_av_copy(&items[i].val);
  }
  e->op = op;
  e->m = m;
  e->attrs = dp_retain(attrs);
  (void)p;
}

int dp__attrs_take(dp_parser *p, dp_expr *fn, uint32_t from, uint32_t tok, dp_attrs **out) {
  uint32_t m = p->nattrs - from;
  *out = NULL;
  if (fn && fn->h.kind == DP_CTOR && m) {
    uint32_t at = p->attrs[from].key;
    attrs_drop(p, from);
    return dp__fail(p, DP_ERR_VALUE, at, "constructor '%s' takes no attributes", ((dp_ctor *)fn)->name);
  }
  if (fn && fn->h.kind == DP_OP && m == 0) {
    /* what dp_op_attrs gives for no attributes: one empty set for every such call */
    if (!p->no_attrs && !(p->no_attrs = dp_attrs_make(0, NULL, NULL))) return dp__oom(p, tok);
    *out = dp_retain(p->no_attrs);
    return 0;
  }
  if (m == 0) return 0;
  struct acache_entry *slot = fn && fn->h.kind == DP_OP ? acache_slot(p, fn, from, m) : NULL;
  if (slot && acache_hit(p, slot, fn, from, m)) {
    *out = dp_retain(slot->attrs);
    attrs_drop(p, from);
    return 0;
  }
  /* (the values move into items, consumed by the core on every path; a
     copy is kept to find the culprit when an operator rejects them, and
     to remember the set) */
  dp_attr small[8], scopy[8];
  dp_attr *items = m <= 8 ? small : dp_malloc(m * sizeof *items);
  dp_attr *copies = m <= 8 ? scopy : dp_malloc(m * sizeof *copies);
  int is_op = fn && fn->h.kind == DP_OP;
  if (!items || !copies || attr_items(p, from, m, items) != 0) {
    if (items != small) free(items);
    if (copies != scopy) free(copies);
    attrs_drop(p, from);
    return dp__oom(p, tok);
  }
  uint32_t last = p->attrs[p->nattrs - 1].key;
  for (uint32_t i = 0; is_op && i < m; i++) copies[i] = (dp_attr){items[i].key, dp_av_copy(&items[i].val)};
  dp_err *err = NULL;
  *out = is_op ? dp_op_attrs((const dp_op *)fn, m, items, &err) : dp_attrs_make(m, items, &err);
  if (*out && slot) acache_put(p, slot, fn, copies, m, *out);
  uint32_t at = *out ? tok : is_op ? culprit((const dp_op *)fn, copies, m, p->attrs + from, tok) : last;
  for (uint32_t i = 0; is_op && i < m; i++) dp_av_clear(&copies[i].val);
  if (items != small) free(items);
  if (copies != scopy) free(copies);
  attrs_drop(p, from);
  return *out ? 0 : dp__fail_core(p, err, at);
}
