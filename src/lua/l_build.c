/*
 * The parser's builder: a C-side arena of IR nodes addressed by small
 * integer handles (lua/devplan/parser.lua feeds it).
 *
 * Making a million nodes through one Lua userdata each would be slow and
 * would leave the collector to free them, so the parser instead asks this
 * builder for nodes and gets back integers: handle h is objs[h - 1], of which
 * the builder holds one reference. Positions arrive as byte offsets into the
 * text; the builder turns them into (source, line, col) spans with a line
 * table it computes once. When the parse ends (finished, failed, or the
 * builder dropped by the collector) every reference is released, so an
 * error at any point leaves nothing leaked and no half-built module.
 *
 * Names live here too (l_scope.h): variables resolve to handles through a
 * C hash table with an undo log, blocks collect their lets here, and the
 * parser's fast path (b:fast_stmt, called by an LPeg match-time capture
 * once per simple statement) builds a whole statement from its position
 * captures without making a Lua string or table. Operators, their arities
 * and attribute schemas are checked here, where dp_op_attrs is.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lbind.h"
#include "l_scope.h"

#define BUILDER_META "devplan.Builder"

typedef struct dp_builder {
  dp_ctx *ctx;               /* retained */
  dp_obj **objs;             /* handle h -> objs[h - 1] (one reference each) */
  uint32_t n, cap;
  const char *text;          /* the source text, kept alive by the uservalue */
  size_t len;
  uint32_t source;           /* source id in ctx */
  size_t *lines;             /* byte offsets (0-based) where each line starts */
  uint32_t nlines, lastline;
  dp_module *mod;            /* made on the first definition */
  dp_scope scope;            /* variable names -> handles; callee and meta caches */
  uint32_t block, nblock;    /* the open block's id; ids given so far */
  struct open_block { uint32_t prev, mark, lets; } *blocks;
  uint32_t nblocks, capblocks;
  struct pending_let { dp_span span; uint32_t var, val; } *lets; /* of the open blocks */
  uint32_t nlets, caplets;
  /* fast path scratch: operand stack, open calls, attributes (owned values) */
  dp_expr **stk;
  uint32_t nstk, capstk;
  struct fast_call { lua_Integer pos; dp_expr *fn; uint32_t base, attrs; } *calls;
  uint32_t ncalls, capcalls;
  struct fast_attr { lua_Integer pos; char key[48]; dp_aval val; } *attrs;
  uint32_t nattrs, capattrs;
  dp_attrs *no_attrs;        /* the empty attribute set of calls without any */
  char *namebuf;             /* a NUL-terminated copy of a name */
  size_t capname;
  lua_Integer fast_end;      /* where the last fast statement ended */
  dp_expr *result;           /* b:expr's expression while it is checked */
} dp_builder;

/* ---------------- life cycle ---------------- */

/* Drop what only the parse itself needs (handles, names, scratch). Done
   before type inference, so that inference's peak memory does not add to
   the parser's; the handles are invalid after. */
static void drop_parse_state(dp_builder *b) {
  /* Release in reverse creation order: later nodes hold earlier ones. */
  while (b->n > 0) dp_release(b->objs[--b->n]);
  free(b->objs);
  b->objs = NULL;
  b->cap = 0;
  dp_release(b->no_attrs);
  b->no_attrs = NULL;
  dp_scope_free(&b->scope);
  for (uint32_t i = 0; i < b->nattrs; i++) dp_av_clear(&b->attrs[i].val);
  free(b->blocks);
  free(b->lets);
  free(b->stk);
  free(b->calls);
  free(b->attrs);
  free(b->namebuf);
  b->blocks = NULL;
  b->lets = NULL;
  b->stk = NULL;
  b->calls = NULL;
  b->attrs = NULL;
  b->namebuf = NULL;
  b->nblocks = b->capblocks = b->nlets = b->caplets = b->nstk = b->capstk = 0;
  b->ncalls = b->capcalls = b->nattrs = b->capattrs = 0;
  b->capname = 0;
}

static void builder_close(dp_builder *b) {
  drop_parse_state(b);
  free(b->lines);
  b->lines = NULL;
  b->nlines = 0;
  dp_release(b->mod);
  b->mod = NULL;
  dp_release(b->result);
  b->result = NULL;
  dp_release(b->ctx);
  b->ctx = NULL;
}

static dp_builder *check_builder(lua_State *L) {
  dp_builder *b = luaL_checkudata(L, 1, BUILDER_META);
  if (!b->ctx) luaL_error(L, "devplan: builder used after it was finished");
  return b;
}

static int b_gc(lua_State *L) {
  dp_builder *b = luaL_checkudata(L, 1, BUILDER_META);
  if (b->ctx) builder_close(b);
  return 0;
}

static int b_close(lua_State *L) { return b_gc(L); }

/* dp._builder(text, source_name) */
static int b_new(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  const char *source = luaL_optstring(L, 2, "<string>");
  dp_ctx *ctx = dp_lua_ctx(L);
  dp_builder *b = lua_newuserdatauv(L, sizeof *b, 1);
  memset(b, 0, sizeof *b);
  luaL_setmetatable(L, BUILDER_META);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  b->ctx = dp_retain(ctx);
  b->text = text;
  b->len = len;
  b->source = dp_ctx_source(ctx, source);
  return 1;
}

/* ---------------- positions ---------------- */

static int make_lines(dp_builder *b) {
  size_t cap = 1024, n = 0;
  size_t *lines = malloc(cap * sizeof *lines);
  if (!lines) return -1;
  lines[n++] = 0;
  for (const char *p = b->text, *end = b->text + b->len; (p = memchr(p, '\n', (size_t)(end - p)));) {
    p++;
    if (n == cap) {
      size_t *nl = realloc(lines, cap * 2 * sizeof *nl);
      if (!nl) {
        free(lines);
        return -1;
      }
      lines = nl;
      cap *= 2;
    }
    lines[n++] = (size_t)(p - b->text);
  }
  b->lines = lines;
  b->nlines = (uint32_t)n;
  return 0;
}

/* Span of a 1-based byte offset. Offsets arrive mostly in increasing order,
   so the line of the previous lookup (or the next one) is tried first. */
static dp_span span_at(dp_builder *b, lua_Integer pos) {
  if (pos < 1) return DP_NOSPAN;
  if (!b->lines && make_lines(b) != 0) return DP_NOSPAN;
  size_t off = (size_t)pos - 1;
  uint32_t i = b->lastline, n = b->nlines;
  if (!(b->lines[i] <= off && (i + 1 == n || off < b->lines[i + 1]))) {
    if (i + 1 < n && b->lines[i + 1] <= off && (i + 2 == n || off < b->lines[i + 2])) {
      i++;
    } else {
      uint32_t lo = 0, hi = n - 1;
      while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if (b->lines[mid] <= off) lo = mid; else hi = mid - 1;
      }
      i = lo;
    }
    b->lastline = i;
  }
  return (dp_span){b->source, i + 1, (uint32_t)(off - b->lines[i]) + 1};
}

/* ---------------- errors ---------------- */

static int raise_at(lua_State *L, dp_builder *b, dp_errcode code, lua_Integer pos,
                    const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return dp_lua_error(L, dp_err_at(b->ctx, code, span_at(b, pos), "%s", buf));
}

/* Raise an error from the core; one without a position gets pos. */
static int raise_core(lua_State *L, dp_builder *b, dp_err *err, lua_Integer pos) {
  if (!err) return raise_at(L, b, DP_ERR_MEMORY, pos, "out of memory");
  if (err->span.line == 0 && err->code != DP_ERR_MEMORY) {
    dp_err *e = dp_err_at(b->ctx, err->code, span_at(b, pos), "%s", err->msg);
    dp_err_free(err);
    err = e;
  }
  return dp_lua_error(L, err);
}

/* static int b_error(b, code, pos, msg): errors found by the parser itself. */
static int b_error(lua_State *L) {
  dp_builder *b = check_builder(L);
  static const char *const codes[] = {"syntax", "name", "type", "value", NULL};
  static const dp_errcode values[] = {DP_ERR_SYNTAX, DP_ERR_NAME, DP_ERR_TYPE, DP_ERR_VALUE};
  int c = luaL_checkoption(L, 2, "syntax", codes);
  return raise_at(L, b, values[c], luaL_checkinteger(L, 3), "%s", luaL_checkstring(L, 4));
}

/* b:linecol(pos) -> line, col */
static int b_linecol(lua_State *L) {
  dp_builder *b = check_builder(L);
  dp_span s = span_at(b, luaL_checkinteger(L, 2));
  lua_pushinteger(L, s.line);
  lua_pushinteger(L, s.col);
  return 2;
}

/* ---------------- handles ---------------- */

/* Take ownership of a new reference and return its handle (raises on
   failure: obj NULL, or no room). */
static uint32_t keep(lua_State *L, dp_builder *b, void *obj, dp_err *err, lua_Integer pos) {
  if (!obj) return (uint32_t)raise_core(L, b, err, pos);
  if (b->n == b->cap) {
    uint32_t cap = b->cap ? b->cap * 2 : 256;
    dp_obj **objs = cap > b->cap ? realloc(b->objs, (size_t)cap * sizeof *objs) : NULL;
    if (!objs) {
      dp_release(obj);
      dp_err_free(err);
      return (uint32_t)raise_at(L, b, DP_ERR_MEMORY, pos, "out of memory");
    }
    b->objs = objs;
    b->cap = cap;
  }
  dp_err_free(err);
  b->objs[b->n++] = obj;
  return b->n;
}

/* keep, and push the handle. */
static int put(lua_State *L, dp_builder *b, void *obj, dp_err *err, lua_Integer pos) {
  lua_pushinteger(L, keep(L, b, obj, err, pos));
  return 1;
}

static dp_obj *get_obj(lua_State *L, dp_builder *b, int idx, dp_objtype type) {
  lua_Integer h = lua_tointeger(L, idx);
  if (h < 1 || h > b->n) luaL_error(L, "devplan builder: bad handle #%d", idx);
  dp_obj *o = b->objs[h - 1];
  if (o->type != type) luaL_error(L, "devplan builder: handle #%d has the wrong kind", idx);
  return o;
}

/* nil, false or 0: none */
static dp_obj *opt_obj(lua_State *L, dp_builder *b, int idx, dp_objtype type) {
  if (lua_isnoneornil(L, idx) || (lua_isboolean(L, idx) && !lua_toboolean(L, idx)) ||
      lua_tointeger(L, idx) == 0)
    return NULL;
  return get_obj(L, b, idx, type);
}

#define EXPR(i) ((dp_expr *)get_obj(L, b, (i), DP_OBJ_EXPR))
#define TYPE(i) ((dp_type *)get_obj(L, b, (i), DP_OBJ_TYPE))

/* A scratch array of n pointers that the Lua stack owns (freed by the
   collector even when an error unwinds). */
static void **scratch(lua_State *L, int n) {
  return lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof(void *), 0);
}

/* b:get(h) -> the object's Lua value */
static int b_get(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer h = luaL_checkinteger(L, 2);
  if (h < 1 || h > b->n) return luaL_error(L, "devplan builder: bad handle");
  dp_lua_push(L, b->objs[h - 1]);
  return 1;
}

/* b:obj(userdata) -> handle, type name ("vdev", "expr", "type", ...) */
static int b_obj(lua_State *L) {
  dp_builder *b = check_builder(L);
  dp_obj *o = dp_lua_testobj(L, 2);
  if (!o) {
    lua_pushnil(L);
    return 1;
  }
  put(L, b, dp_retain(o), NULL, 0);
  const char *kind = o->type == DP_OBJ_VDEV ? "vdev"
                   : o->type == DP_OBJ_EXPR ? (o->kind == DP_CONST ? "const" : "expr")
                   : o->type == DP_OBJ_TYPE ? "type" : "other";
  lua_pushstring(L, kind);
  return 2;
}

/* ---------------- types ---------------- */

/* b:ttensor(pos, dtype, dims...) (no dims: a scalar) */
static int b_ttensor(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  const char *name = luaL_checkstring(L, 3);
  dp_dtype dt = dp_dtype_parse(name);
  if (!dt) return raise_at(L, b, DP_ERR_NAME, pos, "unknown type '%s'", name);
  int nd = lua_gettop(L) - 3;
  int64_t *dims = (int64_t *)scratch(L, nd);
  for (int i = 0; i < nd; i++) dims[i] = lua_tointeger(L, 4 + i);
  return put(L, b, dp_type_tensor(b->ctx, dt, (uint32_t)nd, dims), NULL, pos);
}

static int b_ttuple(lua_State *L) {
  dp_builder *b = check_builder(L);
  int n = lua_gettop(L) - 1;
  dp_type **f = (dp_type **)scratch(L, n);
  for (int i = 0; i < n; i++) f[i] = TYPE(2 + i);
  return put(L, b, dp_type_tuple(b->ctx, (uint32_t)n, f), NULL, 0);
}

/* b:tfunc(ntparams, ret, tparams..., args...) */
static int b_tfunc(lua_State *L) {
  dp_builder *b = check_builder(L);
  int ntp = (int)luaL_checkinteger(L, 2);
  dp_type *ret = TYPE(3);
  int n = lua_gettop(L) - 3 - ntp;
  if (n < 0) return luaL_error(L, "devplan builder: tfunc arguments");
  dp_type **tp = (dp_type **)scratch(L, ntp), **a = (dp_type **)scratch(L, n);
  for (int i = 0; i < ntp; i++) tp[i] = TYPE(4 + i);
  for (int i = 0; i < n; i++) a[i] = TYPE(4 + ntp + i);
  return put(L, b, dp_type_func(b->ctx, (uint32_t)ntp, tp, (uint32_t)n, a, ret), NULL, 0);
}

static int b_tref(lua_State *L) {
  dp_builder *b = check_builder(L);
  return put(L, b, dp_type_ref(b->ctx, TYPE(2)), NULL, 0);
}

static int b_tstorage(lua_State *L) {
  dp_builder *b = check_builder(L);
  return put(L, b, dp_type_storage(b->ctx), NULL, 0);
}

static int b_tvar(lua_State *L) {
  dp_builder *b = check_builder(L);
  return put(L, b, dp_type_var_new(b->ctx, luaL_checkstring(L, 2)), NULL, 0);
}

/* b:tadt(name, args...) */
static int b_tadt(lua_State *L) {
  dp_builder *b = check_builder(L);
  const char *name = luaL_checkstring(L, 2);
  int n = lua_gettop(L) - 2;
  dp_type **a = (dp_type **)scratch(L, n);
  for (int i = 0; i < n; i++) a[i] = TYPE(3 + i);
  return put(L, b, dp_type_adt(b->ctx, name, (uint32_t)n, a), NULL, 0);
}

/* ---------------- attribute values ---------------- */

/* Lua encoding of attribute values (made by the parser): an integer, a
   boolean, a string, or a table {tag, ...}: {"none"}, {"i", v, dtype},
   {"f", v, dtype}, {"list", item...}, {"vdev", h}, {"expr", h}. */
static int to_aval(lua_State *L, dp_builder *b, int idx, dp_aval *out, int depth);

static int list_aval(lua_State *L, dp_builder *b, int idx, dp_aval *out, int depth) {
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx) - 1;
  dp_aval *items = n > 0 ? dp_calloc((size_t)n, sizeof *items) : NULL;
  if (n > 0 && !items) return -1;
  for (lua_Integer i = 0; i < n; i++) {
    lua_rawgeti(L, idx, i + 2);
    int r = to_aval(L, b, lua_gettop(L), &items[i], depth + 1);
    lua_pop(L, 1);
    if (r != 0) {
      for (lua_Integer j = 0; j < i; j++) dp_av_clear(&items[j]);
      free(items);
      return r;
    }
  }
  *out = dp_av_list((uint32_t)(n > 0 ? n : 0), items);
  return 0;
}

static dp_dtype opt_dtype(lua_State *L, int idx) {
  const char *s = lua_tostring(L, idx);
  return s ? dp_dtype_parse(s) : 0;
}

/* 0 on success; -1 out of memory; -2 bad encoding (an internal error). */
static int to_aval(lua_State *L, dp_builder *b, int idx, dp_aval *out, int depth) {
  if (depth > 200) return -2;
  switch (lua_type(L, idx)) {
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) *out = dp_av_int(lua_tointeger(L, idx));
    else *out = dp_av_float(lua_tonumber(L, idx), 0);
    return 0;
  case LUA_TBOOLEAN: *out = dp_av_bool(lua_toboolean(L, idx)); return 0;
  case LUA_TSTRING:
    *out = dp_av_str(lua_tostring(L, idx));
    return out->u.s ? 0 : -1;
  case LUA_TTABLE: break;
  default: return -2;
  }
  lua_rawgeti(L, idx, 1);
  const char *tag = lua_tostring(L, -1);
  lua_pop(L, 1);
  if (!tag) return -2;
  int top = lua_gettop(L);
  lua_rawgeti(L, idx, 2);
  lua_rawgeti(L, idx, 3);
  int r = 0;
  if (!strcmp(tag, "none")) *out = dp_av_none();
  else if (!strcmp(tag, "i")) {
    *out = dp_av_int(lua_tointeger(L, top + 1));
    out->dtype = opt_dtype(L, top + 2);
  } else if (!strcmp(tag, "f")) *out = dp_av_float(lua_tonumber(L, top + 1), opt_dtype(L, top + 2));
  else if (!strcmp(tag, "list")) r = list_aval(L, b, idx, out, depth);
  else if (!strcmp(tag, "vdev")) *out = dp_av_vdev((dp_vdev *)get_obj(L, b, top + 1, DP_OBJ_VDEV));
  else if (!strcmp(tag, "expr")) *out = dp_av_expr(EXPR(top + 1));
  else r = -2;
  lua_settop(L, top);
  return r;
}

/* Converted attributes, owned by C until handed to dp_op_attrs/dp_attrs_make. */
typedef struct attr_list {
  uint32_t n;
  dp_attr *items;        /* keys point into Lua strings until copied by the core */
  lua_Integer *pos;
} attr_list;

static void attr_list_clear(attr_list *a) {
  for (uint32_t i = 0; i < a->n; i++) dp_av_clear(&a->items[i].val);
  free(a->items);
  free(a->pos);
  a->items = NULL;
  a->pos = NULL;
  a->n = 0;
}

/* Convert the attribute list {pos1, key1, val1, pos2, key2, val2, ...} at
   idx; on failure nothing is left allocated and a message is returned. */
static const char *attr_list_read(lua_State *L, dp_builder *b, int idx, attr_list *a) {
  a->n = 0;
  a->items = NULL;
  a->pos = NULL;
  if (lua_type(L, idx) != LUA_TTABLE) return NULL;
  uint32_t m = (uint32_t)(lua_rawlen(L, idx) / 3);
  if (m == 0) return NULL;
  a->items = dp_calloc(m, sizeof *a->items);
  a->pos = dp_calloc(m, sizeof *a->pos);
  if (!a->items || !a->pos) {
    attr_list_clear(a);
    return "out of memory";
  }
  for (uint32_t i = 0; i < m; i++) {
    lua_rawgeti(L, idx, 3 * i + 1);
    lua_rawgeti(L, idx, 3 * i + 2);
    lua_rawgeti(L, idx, 3 * i + 3);
    a->pos[i] = lua_tointeger(L, -3);
    a->items[i].key = (char *)lua_tostring(L, -2);
    int r = a->items[i].key ? to_aval(L, b, lua_gettop(L), &a->items[i].val, 0) : -2;
    lua_pop(L, 3);
    if (r != 0) {
      a->n = i;
      attr_list_clear(a);
      return r == -1 ? "out of memory" : "devplan builder: bad attribute encoding";
    }
    a->n = i + 1;
  }
  return NULL;
}

/* A copy of the items whose keys are stable (the core copies keys anyway;
   values are moved out of a). */
static dp_attr *attr_items_move(attr_list *a) {
  dp_attr *items = dp_calloc(a->n ? a->n : 1, sizeof *items);
  if (!items) return NULL;
  for (uint32_t i = 0; i < a->n; i++) {
    items[i].key = a->items[i].key;
    items[i].val = a->items[i].val;
    a->items[i].val = dp_av_none();
  }
  return items;
}

/* Checked attributes of a call of op. On a schema error, find the attribute
   at fault (each alone) to point at it. Raises on error. */
static dp_attrs *op_attrs(lua_State *L, dp_builder *b, dp_op *op, attr_list *a, lua_Integer pos) {
  dp_attr *items = attr_items_move(a);
  if (!items) {
    attr_list_clear(a);
    raise_at(L, b, DP_ERR_MEMORY, pos, "out of memory");
  }
  /* keep copies of the values to retry one by one if the whole set fails */
  dp_aval *copies = dp_calloc(a->n ? a->n : 1, sizeof *copies);
  for (uint32_t i = 0; copies && i < a->n; i++) copies[i] = dp_av_copy(&items[i].val);
  dp_err *err = NULL;
  dp_attrs *attrs = dp_op_attrs(op, a->n, items, &err);
  free(items);
  if (attrs || !copies) {
    for (uint32_t i = 0; copies && i < a->n; i++) dp_av_clear(&copies[i]);
    free(copies);
    if (!attrs) {
      attr_list_clear(a);
      raise_core(L, b, err, pos);
    }
    attr_list_clear(a);
    return attrs;
  }
  lua_Integer at = pos;
  for (uint32_t i = 0; i < a->n; i++) {
    dp_attr one = {a->items[i].key, copies[i]};
    copies[i] = dp_av_none();
    dp_err *e1 = NULL;
    dp_attrs *t = dp_op_attrs(op, 1, &one, &e1);
    if (!t) {
      at = a->pos[i];
      dp_err_free(e1);
      break;
    }
    dp_release(t);
  }
  for (uint32_t i = 0; i < a->n; i++) dp_av_clear(&copies[i]);
  free(copies);
  attr_list_clear(a);
  if (err && err->span.line == 0) {
    dp_err *e = dp_err_at(b->ctx, err->code, span_at(b, at), "%s", err->msg);
    dp_err_free(err);
    err = e;
  }
  raise_core(L, b, err, at);
  return NULL;
}

/* Unchecked attributes (functions, calls of non-operators). Raises on error. */
static dp_attrs *plain_attrs(lua_State *L, dp_builder *b, attr_list *a, lua_Integer pos) {
  if (a->n == 0) return NULL;
  dp_attr *items = attr_items_move(a);
  if (!items) {
    attr_list_clear(a);
    raise_at(L, b, DP_ERR_MEMORY, pos, "out of memory");
  }
  dp_err *err = NULL;
  dp_attrs *attrs = dp_attrs_make(a->n, items, &err);
  free(items);
  lua_Integer at = a->n ? a->pos[a->n - 1] : pos;
  attr_list_clear(a);
  if (!attrs) raise_core(L, b, err, at);
  return attrs;
}

/* ---------------- expressions ---------------- */

/* b:op(pos, name) */
static int b_op(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  const char *name = luaL_checkstring(L, 3);
  dp_op *op = dp_op_get(b->ctx, name);
  if (!op) return raise_at(L, b, DP_ERR_NAME, pos, "unknown operator '%s'", name);
  return put(L, b, dp_retain(op), NULL, pos);
}

/* b:var(pos, name, type_h, vdev_h) */
static int b_var(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  const char *name = luaL_checkstring(L, 3);
  dp_type *t = (dp_type *)opt_obj(L, b, 4, DP_OBJ_TYPE);
  dp_vdev *vd = (dp_vdev *)opt_obj(L, b, 5, DP_OBJ_VDEV);
  return put(L, b, dp_var_new(name, t, vd, span_at(b, pos)), NULL, pos);
}

/* b:global(pos, name) */
static int b_global(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  return put(L, b, dp_global_new(luaL_checkstring(L, 3), span_at(b, pos)), NULL, pos);
}

static const char *op_name_of(const dp_expr *fn) {
  return fn->h.kind == DP_OP ? ((const dp_op *)fn)->name : ((const dp_ctor *)fn)->name;
}

/* The call fn(args) with the attributes a, which it consumes on every
   path. Returns the handle; raises on error (arity, attributes). */
static uint32_t make_call(lua_State *L, dp_builder *b, lua_Integer pos, dp_expr *fn, int nargs,
                          dp_expr *const *args, attr_list *a) {
  if (fn->h.kind == DP_OP) {
    dp_op *op = (dp_op *)fn;
    if (op->num_inputs >= 0 && op->num_inputs != nargs) {
      attr_list_clear(a);
      return (uint32_t)raise_at(L, b, DP_ERR_TYPE, pos, "operator '%s' takes %d argument%s, %d given",
                                op->name, op->num_inputs, op->num_inputs == 1 ? "" : "s", nargs);
    }
  } else if (fn->h.kind == DP_CTOR) {
    dp_ctor *c = (dp_ctor *)fn;
    if ((int)c->ninputs != nargs) {
      attr_list_clear(a);
      return (uint32_t)raise_at(L, b, DP_ERR_TYPE, pos, "constructor '%s' takes %d argument%s, %d given",
                                c->name, (int)c->ninputs, c->ninputs == 1 ? "" : "s", nargs);
    }
    if (a->n) {
      lua_Integer at = a->pos[0];
      attr_list_clear(a);
      return (uint32_t)raise_at(L, b, DP_ERR_VALUE, at, "constructor '%s' takes no attributes",
                                op_name_of(fn));
    }
  }
  dp_attrs *attrs;
  if (fn->h.kind == DP_OP && a->n == 0) {
    /* what dp_op_attrs gives for no attributes (defaults are never stored):
       one empty set shared by every such call */
    if (!b->no_attrs) b->no_attrs = dp_attrs_make(0, NULL, NULL);
    if (!b->no_attrs) return (uint32_t)raise_at(L, b, DP_ERR_MEMORY, pos, "out of memory");
    attrs = dp_retain(b->no_attrs);
  } else {
    attrs = fn->h.kind == DP_OP ? op_attrs(L, b, (dp_op *)fn, a, pos) : plain_attrs(L, b, a, pos);
  }
  dp_call *c = dp_call_new(fn, (uint32_t)nargs, args, attrs, span_at(b, pos));
  dp_release(attrs);
  return keep(L, b, c, NULL, pos);
}

/* b:call(pos, callee, args..., [attrs]): a trailing table is the call's
   attribute list (so that argument handles pass straight through). */
static int b_call(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  dp_expr *fn = EXPR(3);
  int top = lua_gettop(L);
  int attrs_idx = lua_type(L, top) == LUA_TTABLE ? top : 0;
  int nargs = top - 3 - (attrs_idx ? 1 : 0);
  if (nargs < 0) nargs = 0;
  if (!attrs_idx) {
    lua_pushnil(L);
    attrs_idx = lua_gettop(L);
  }
  dp_expr **args = (dp_expr **)scratch(L, nargs);
  for (int i = 0; i < nargs; i++) args[i] = EXPR(4 + i);
  attr_list a;
  const char *why = attr_list_read(L, b, attrs_idx, &a);
  if (why) return raise_at(L, b, DP_ERR_VALUE, pos, "%s", why);
  lua_pushinteger(L, make_call(L, b, pos, fn, nargs, args, &a));
  return 1;
}

/* b:fn(pos, body, ret|false, attrs|false, params...): a virtual_device
   attribute becomes the function's device; the rest stay attributes. */
static int b_fn(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  dp_expr *body = EXPR(3);
  dp_type *ret = (dp_type *)opt_obj(L, b, 4, DP_OBJ_TYPE);
  int np = lua_gettop(L) - 5;
  if (np < 0) np = 0;
  dp_var **params = (dp_var **)scratch(L, np);
  for (int i = 0; i < np; i++) {
    params[i] = (dp_var *)EXPR(6 + i);
    if (params[i]->e.h.kind != DP_VAR) return luaL_error(L, "devplan builder: parameter is not a var");
  }
  dp_vdev *vd = NULL;
  if (lua_type(L, 5) == LUA_TTABLE) {
    /* pull virtual_device out of the attribute list (Lua side) */
    int m = (int)lua_rawlen(L, 5) / 3;
    lua_newtable(L);
    int k = 0;
    for (int i = 0; i < m; i++) {
      lua_rawgeti(L, 5, 3 * i + 2);
      if (!strcmp(luaL_optstring(L, -1, ""), "virtual_device")) {
        lua_pop(L, 1);
        lua_rawgeti(L, 5, 3 * i + 3);
        if (lua_type(L, -1) != LUA_TTABLE || (lua_rawgeti(L, -1, 1), strcmp(luaL_optstring(L, -1, ""), "vdev"))) {
          lua_rawgeti(L, 5, 3 * i + 1);
          return raise_at(L, b, DP_ERR_VALUE, lua_tointeger(L, -1),
                          "virtual_device must be a virtual device");
        }
        lua_rawgeti(L, -2, 2);
        vd = (dp_vdev *)get_obj(L, b, lua_gettop(L), DP_OBJ_VDEV);
        lua_pop(L, 3);
        continue;
      }
      lua_pop(L, 1);
      for (int j = 1; j <= 3; j++) {
        lua_rawgeti(L, 5, 3 * i + j);
        lua_rawseti(L, -2, ++k);
      }
    }
    lua_replace(L, 5);
  }
  attr_list a;
  const char *why = attr_list_read(L, b, 5, &a);
  if (why) return raise_at(L, b, DP_ERR_VALUE, pos, "%s", why);
  dp_attrs *attrs = plain_attrs(L, b, &a, pos);
  dp_func *f = dp_func_new((uint32_t)np, params, body, ret, attrs, vd, span_at(b, pos));
  dp_release(attrs);
  return put(L, b, f, NULL, pos);
}

/* b:let(pos, var, value, body) */
static int b_let(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  dp_expr *v = EXPR(3);
  if (v->h.kind != DP_VAR) return luaL_error(L, "devplan builder: let of a non-var");
  return put(L, b, dp_let_new((dp_var *)v, EXPR(4), EXPR(5), span_at(b, pos)), NULL, pos);
}

static int b_tuple(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  int n = lua_gettop(L) - 2;
  dp_expr **f = (dp_expr **)scratch(L, n);
  for (int i = 0; i < n; i++) f[i] = EXPR(3 + i);
  return put(L, b, dp_tuple_new((uint32_t)n, f, span_at(b, pos)), NULL, pos);
}

static int b_proj(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  lua_Integer i = luaL_checkinteger(L, 4);
  if (i < 0 || i > 0x7fffffff) return raise_at(L, b, DP_ERR_VALUE, pos, "bad tuple index");
  return put(L, b, dp_proj_new(EXPR(3), (uint32_t)i, span_at(b, pos)), NULL, pos);
}

static int b_if(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  return put(L, b, dp_if_new(EXPR(3), EXPR(4), EXPR(5), span_at(b, pos)), NULL, pos);
}

static int b_ref(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  return put(L, b, dp_ref_new_new(EXPR(3), span_at(b, pos)), NULL, pos);
}

static int b_ref_read(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  return put(L, b, dp_ref_read_new(EXPR(3), span_at(b, pos)), NULL, pos);
}

static int b_ref_write(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  return put(L, b, dp_ref_write_new(EXPR(3), EXPR(4), span_at(b, pos)), NULL, pos);
}

/* b:match(pos, data, complete, pat1, rhs1, ...) */
static int b_match(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  dp_expr *data = EXPR(3);
  int complete = lua_toboolean(L, 4);
  int n = (lua_gettop(L) - 4) / 2;
  dp_clause *cl = (dp_clause *)lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *cl, 0);
  for (int i = 0; i < n; i++) {
    cl[i].pat = (dp_pattern *)get_obj(L, b, 5 + 2 * i, DP_OBJ_PATTERN);
    cl[i].rhs = EXPR(6 + 2 * i);
  }
  return put(L, b, dp_match_new(data, (uint32_t)n, cl, complete, span_at(b, pos)), NULL, pos);
}

/* ---------------- patterns ---------------- */

static int b_pwild(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  return put(L, b, dp_pat_wild(span_at(b, pos)), NULL, pos);
}

static int b_pvar(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  dp_expr *v = EXPR(3);
  if (v->h.kind != DP_VAR) return luaL_error(L, "devplan builder: pattern var");
  return put(L, b, dp_pat_var((dp_var *)v, span_at(b, pos)), NULL, pos);
}

static dp_pattern **subpatterns(lua_State *L, dp_builder *b, int from, int *n) {
  *n = lua_gettop(L) - from + 1;
  if (*n < 0) *n = 0;
  int k = *n;
  dp_pattern **s = (dp_pattern **)scratch(L, k);
  for (int i = 0; i < k; i++) s[i] = (dp_pattern *)get_obj(L, b, from + i, DP_OBJ_PATTERN);
  return s;
}

/* b:pctor(pos, ctor, subs...) */
static int b_pctor(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  dp_expr *c = EXPR(3);
  if (c->h.kind != DP_CTOR) return luaL_error(L, "devplan builder: pattern ctor");
  int n;
  dp_pattern **s = subpatterns(L, b, 4, &n);
  dp_ctor *ct = (dp_ctor *)c;
  if ((int)ct->ninputs != n)
    return raise_at(L, b, DP_ERR_TYPE, pos, "constructor '%s' takes %d argument%s, %d given",
                    ct->name, (int)ct->ninputs, ct->ninputs == 1 ? "" : "s", n);
  return put(L, b, dp_pat_ctor(ct, (uint32_t)n, s, span_at(b, pos)), NULL, pos);
}

static int b_ptuple(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  int n;
  dp_pattern **s = subpatterns(L, b, 3, &n);
  return put(L, b, dp_pat_tuple((uint32_t)n, s, span_at(b, pos)), NULL, pos);
}

/* ---------------- constants ---------------- */

static uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, mant = x & 0x7fffff;
  int exp = (int)((x >> 23) & 0xff) - 127 + 15;
  if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 31) return (uint16_t)(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return (uint16_t)sign;
    mant |= 0x800000;
    return (uint16_t)(sign | (mant >> (14 - exp)));
  }
  return (uint16_t)(sign | ((uint32_t)exp << 10) | (mant >> 13));
}

/* Store the Lua number/boolean at idx as one element of dt at dst. */
static int put_elem(lua_State *L, int idx, dp_dtype dt, unsigned char *dst) {
  int code = DP_DTYPE_CODE(dt), bits = DP_DTYPE_BITS(dt);
  if (lua_isboolean(L, idx)) {
    lua_pushinteger(L, lua_toboolean(L, idx));
    lua_replace(L, idx);
  }
  if (!lua_isnumber(L, idx)) return -1;
  if (code == DP_DT_FLOAT) {
    double v = lua_tonumber(L, idx);
    if (bits == 64) memcpy(dst, &v, 8);
    else if (bits == 32) { float f = (float)v; memcpy(dst, &f, 4); }
    else if (bits == 16) { uint16_t h = float_to_half((float)v); memcpy(dst, &h, 2); }
    else return -1;
    return 0;
  }
  if (code == DP_DT_BFLOAT) {
    float f = (float)lua_tonumber(L, idx);
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t h = (uint16_t)(x >> 16);
    memcpy(dst, &h, 2);
    return 0;
  }
  int64_t v = lua_isinteger(L, idx) ? lua_tointeger(L, idx) : (int64_t)lua_tonumber(L, idx);
  if (code == DP_DT_BOOL) { dst[0] = v != 0; return 0; }
  switch (bits) {
  case 8: { int8_t x = (int8_t)v; memcpy(dst, &x, 1); return 0; }
  case 16: { int16_t x = (int16_t)v; memcpy(dst, &x, 2); return 0; }
  case 32: { int32_t x = (int32_t)v; memcpy(dst, &x, 4); return 0; }
  case 64: memcpy(dst, &v, 8); return 0;
  default: return -1;
  }
}

/* b:const(pos, dtype, value): a scalar */
static int b_const(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  const char *name = luaL_checkstring(L, 3);
  dp_dtype dt = dp_dtype_parse(name);
  if (!dt) return raise_at(L, b, DP_ERR_NAME, pos, "unknown dtype '%s'", name);
  unsigned char buf[16] = {0};
  if (DP_DTYPE_LANES(dt) != 1 || put_elem(L, 4, dt, buf) != 0)
    return raise_at(L, b, DP_ERR_VALUE, pos, "bad constant of type %s", name);
  dp_err *err = NULL;
  dp_const *c = dp_const_new(dt, 0, NULL, buf, span_at(b, pos), &err);
  return put(L, b, c, err, pos);
}

/* b:const_tensor(pos, type_h, values): flat row-major values */
static int b_const_tensor(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  dp_type *t = TYPE(3);
  luaL_checktype(L, 4, LUA_TTABLE);
  if (t->h.kind != DP_TY_TENSOR) return raise_at(L, b, DP_ERR_TYPE, pos, "a constant needs a tensor type");
  dp_tensor_type *tt = (dp_tensor_type *)t;
  size_t count = 1;
  for (uint32_t i = 0; i < tt->ndim; i++) {
    if (tt->dims[i] < 0) return raise_at(L, b, DP_ERR_TYPE, pos, "a constant needs a static shape");
    count *= (size_t)tt->dims[i];
  }
  size_t have = lua_rawlen(L, 4);
  if (have != count)
    return raise_at(L, b, DP_ERR_VALUE, pos, "constant of %zu element%s has %zu value%s", count,
                    count == 1 ? "" : "s", have, have == 1 ? "" : "s");
  size_t esz = dp_dtype_bytes(tt->dtype);
  unsigned char *data = lua_newuserdatauv(L, count * esz + 1, 0);
  for (size_t i = 0; i < count; i++) {
    lua_rawgeti(L, 4, (lua_Integer)i + 1);
    if (put_elem(L, lua_gettop(L), tt->dtype, data + i * esz) != 0)
      return raise_at(L, b, DP_ERR_VALUE, pos, "bad constant value #%zu", i + 1);
    lua_pop(L, 1);
  }
  dp_err *err = NULL;
  dp_const *c = dp_const_new(tt->dtype, tt->ndim, tt->dims, data, span_at(b, pos), &err);
  return put(L, b, c, err, pos);
}

/* ---------------- devices ---------------- */

/* b:vdev(pos, device_type (name|number|nil), id|nil, target|nil, scope|nil) */
static int b_vdev(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  int dt = 0;
  if (lua_type(L, 3) == LUA_TNUMBER) dt = (int)lua_tointeger(L, 3);
  else if (lua_type(L, 3) == LUA_TSTRING) {
    dt = dp_device_type_parse(lua_tostring(L, 3));
    if (dt < 0) return raise_at(L, b, DP_ERR_NAME, pos, "unknown device type '%s'", lua_tostring(L, 3));
  }
  int id = lua_isnoneornil(L, 4) ? -1 : (int)lua_tointeger(L, 4);
  dp_err *err = NULL;
  dp_target *t = NULL;
  if (lua_type(L, 5) == LUA_TSTRING) {
    t = dp_target_parse(b->ctx, lua_tostring(L, 5), &err);
    if (!t) return raise_core(L, b, err, pos);
  }
  dp_vdev *vd = dp_vdev_make(b->ctx, dt, id, t, lua_tostring(L, 6), &err);
  dp_release(t);
  return put(L, b, vd, err, pos);
}

/* ---------------- module parts ---------------- */

static dp_module *module_of(lua_State *L, dp_builder *b) {
  if (!b->mod) b->mod = dp_module_new(b->ctx);
  if (!b->mod) luaL_error(L, "devplan: out of memory");
  return b->mod;
}

/* b:ctor(pos, name, adt_name, tag, ntparams, tparams..., inputs...) */
static int b_ctor(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  const char *name = luaL_checkstring(L, 3), *adt = luaL_checkstring(L, 4);
  lua_Integer tag = luaL_checkinteger(L, 5);
  int ntp = (int)luaL_checkinteger(L, 6);
  int n = lua_gettop(L) - 6 - ntp;
  if (n < 0) return luaL_error(L, "devplan builder: ctor arguments");
  dp_type **tp = (dp_type **)scratch(L, ntp), **in = (dp_type **)scratch(L, n);
  for (int i = 0; i < ntp; i++) tp[i] = TYPE(7 + i);
  for (int i = 0; i < n; i++) in[i] = TYPE(7 + ntp + i);
  dp_ctor *c = dp_ctor_new(name, adt, (uint32_t)tag, (uint32_t)ntp, tp, (uint32_t)n, in, span_at(b, pos));
  return put(L, b, c, NULL, pos);
}

/* b:typedef(pos, name, ntparams, tparams..., ctors...): adds it to the module */
static int b_typedef(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  const char *name = luaL_checkstring(L, 3);
  int ntp = (int)luaL_checkinteger(L, 4);
  int n = lua_gettop(L) - 4 - ntp;
  if (n < 0) return luaL_error(L, "devplan builder: typedef arguments");
  dp_type **tp = (dp_type **)scratch(L, ntp);
  dp_ctor **cs = (dp_ctor **)scratch(L, n);
  for (int i = 0; i < ntp; i++) tp[i] = TYPE(5 + i);
  for (int i = 0; i < n; i++) cs[i] = (dp_ctor *)EXPR(5 + ntp + i);
  dp_module *m = module_of(L, b);
  dp_typedef *td = dp_typedef_new(name, (uint32_t)ntp, tp, (uint32_t)n, cs, span_at(b, pos));
  if (!td) return raise_at(L, b, DP_ERR_MEMORY, pos, "out of memory");
  dp_err *err = NULL;
  int r = dp_module_add_typedef(m, td, &err);
  dp_release(td);
  if (r != 0) return raise_core(L, b, err, pos);
  return 0;
}

/* b:primfn(pos, name, ret_type, ret_scope, t1, s1, t2, s2, ...): adds it */
static int b_primfn(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  const char *name = luaL_checkstring(L, 3);
  dp_buffer ret = {TYPE(4), (char *)luaL_optstring(L, 5, "")};
  int n = (lua_gettop(L) - 5) / 2;
  dp_buffer *args = (dp_buffer *)lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *args, 0);
  for (int i = 0; i < n; i++) {
    args[i].type = TYPE(6 + 2 * i);
    args[i].scope = (char *)luaL_optstring(L, 7 + 2 * i, "");
  }
  dp_module *m = module_of(L, b);
  dp_primfn *pf = dp_primfn_new(name, (uint32_t)n, args, ret, span_at(b, pos));
  if (!pf) return raise_at(L, b, DP_ERR_MEMORY, pos, "out of memory");
  dp_err *err = NULL;
  int r = dp_module_add_primfn(m, pf, &err);
  dp_release(pf);
  if (r != 0) return raise_core(L, b, err, pos);
  return 0;
}

/* b:add_func(pos, global, fn) */
static int b_add_func(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  dp_expr *g = EXPR(3), *f = EXPR(4);
  if (g->h.kind != DP_GLOBAL || f->h.kind != DP_FUNC) return luaL_error(L, "devplan builder: add_func");
  dp_err *err = NULL;
  if (dp_module_add_func(module_of(L, b), (dp_global *)g, (dp_func *)f, &err) != 0)
    return raise_core(L, b, err, pos);
  return 0;
}

/* b:module() -> the type-checked module; the builder is closed after. */
static int b_module(lua_State *L) {
  dp_builder *b = check_builder(L);
  dp_module *m = module_of(L, b);
  dp_err *err = NULL;
  drop_parse_state(b);
  if (dp_infer_module(m, &err) != 0) return raise_core(L, b, err, 0);
  dp_lua_push(L, m);
  builder_close(b);
  return 1;
}

/* b:expr(h) -> the type-checked expression (constructors of this text's
   type definitions resolved); the builder is closed after. */
static int b_expr(lua_State *L) {
  dp_builder *b = check_builder(L);
  dp_expr *e = b->result = dp_retain(EXPR(2));
  dp_err *err = NULL;
  drop_parse_state(b);
  if (dp_infer_expr(b->mod, e, &err) != 0) return raise_core(L, b, err, 0);
  dp_lua_push(L, e);
  builder_close(b);
  return 1;
}

/* ---------------- names and blocks ---------------- */

static int grow(lua_State *L, void **p, uint32_t *cap, uint32_t need, size_t elem) {
  return dp_grow(p, cap, need, elem) < 0 ? luaL_error(L, "devplan: out of memory") : 0;
}

static uint32_t slot_of(lua_State *L, dp_builder *b, const char *name, size_t len) {
  int64_t k = dp_scope_intern(&b->scope, name, len);
  if (k < 0) return (uint32_t)luaL_error(L, "devplan: out of memory");
  return (uint32_t)k;
}

static void bind_slot(lua_State *L, dp_builder *b, uint32_t slot, uint32_t h, uint32_t block) {
  if (dp_scope_bind(&b->scope, slot, h, block) != 0) luaL_error(L, "devplan: out of memory");
}

/* A NUL-terminated copy of name[0..len) in the builder's buffer. */
static const char *cname(lua_State *L, dp_builder *b, const char *name, size_t len) {
  if (len + 1 > b->capname) {
    size_t c = len + 64;
    char *p = realloc(b->namebuf, c);
    if (!p) luaL_error(L, "devplan: out of memory");
    b->namebuf = p;
    b->capname = c;
  }
  memcpy(b->namebuf, name, len);
  b->namebuf[len] = '\0';
  return b->namebuf;
}

/* b:mark() -> the undo mark; b:unbind(mark): drop the bindings made since */
static int b_mark(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_pushinteger(L, b->scope.nundo);
  return 1;
}

static int b_unbind(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer m = luaL_checkinteger(L, 2);
  if (m >= 0 && m <= b->scope.nundo) dp_scope_unbind(&b->scope, (uint32_t)m);
  return 0;
}

/* b:bind(name, h): %name means h from now on (let variables, patterns) */
static int b_bind(lua_State *L) {
  dp_builder *b = check_builder(L);
  size_t len;
  const char *name = luaL_checklstring(L, 2, &len);
  lua_Integer h = luaL_checkinteger(L, 3);
  if (h < 1 || h > b->n) return luaL_error(L, "devplan builder: bad handle");
  bind_slot(L, b, slot_of(L, b, name, len), (uint32_t)h, 0);
  return 0;
}

/* b:define(pos, name, h, param): a graph binding (or with param true, a
   function parameter) of the open block; a second one is an error. */
static int b_define(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  size_t len;
  const char *name = luaL_checklstring(L, 3, &len);
  lua_Integer h = luaL_checkinteger(L, 4);
  if (h < 1 || h > b->n || !b->block) return luaL_error(L, "devplan builder: define");
  uint32_t slot = slot_of(L, b, name, len);
  if (b->scope.slots[slot].block == b->block)
    return raise_at(L, b, DP_ERR_NAME, pos, lua_toboolean(L, 5) ? "duplicate parameter %%%s"
                    : "duplicate definition of %%%s", name);
  bind_slot(L, b, slot, (uint32_t)h, b->block);
  return 0;
}

/* b:lookup(pos, name) -> the handle %name is bound to */
static int b_lookup(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  size_t len;
  const char *name = luaL_checklstring(L, 3, &len);
  int64_t k = dp_scope_find(&b->scope, name, len);
  if (k < 0 || !b->scope.slots[k].handle)
    return raise_at(L, b, DP_ERR_NAME, pos, "unknown variable %%%s", name);
  lua_pushinteger(L, b->scope.slots[k].handle);
  return 1;
}

/* b:cache(key, h): what the fast path may reuse for key: the callee of an
   identifier, or the entry "\0kind\0index" of the metatable. */
static int b_cache(lua_State *L) {
  dp_builder *b = check_builder(L);
  size_t len;
  const char *key = luaL_checklstring(L, 2, &len);
  lua_Integer h = luaL_checkinteger(L, 3);
  if (h < 1 || h > b->n) return luaL_error(L, "devplan builder: bad handle");
  uint32_t slot = slot_of(L, b, key, len); /* (may move the slots) */
  b->scope.slots[slot].cached = (uint32_t)h;
  return 0;
}

/* b:block_open(): a new block (its definitions and lets are its own) */
static int b_block_open(lua_State *L) {
  dp_builder *b = check_builder(L);
  grow(L, (void **)&b->blocks, &b->capblocks, b->nblocks + 1, sizeof *b->blocks);
  b->blocks[b->nblocks++] = (struct open_block){b->block, b->scope.nundo, b->nlets};
  b->block = ++b->nblock;
  return 0;
}

/* b:push_let(pos, var|false, value): a let of the open block (no var: `_`) */
static int b_push_let(lua_State *L) {
  dp_builder *b = check_builder(L);
  lua_Integer pos = luaL_checkinteger(L, 2);
  uint32_t var = lua_toboolean(L, 3) ? (uint32_t)luaL_checkinteger(L, 3) : 0;
  lua_Integer val = luaL_checkinteger(L, 4);
  if (!b->nblocks || var > b->n || val < 1 || val > b->n) return luaL_error(L, "devplan builder: push_let");
  if (!var) var = keep(L, b, dp_var_new("_", NULL, NULL, span_at(b, pos)), NULL, pos);
  grow(L, (void **)&b->lets, &b->caplets, b->nlets + 1, sizeof *b->lets);
  b->lets[b->nlets++] = (struct pending_let){span_at(b, pos), var, (uint32_t)val};
  return 0;
}

/* b:block_close(body) -> the block's lets around body; its names go out of
   scope. The inner lets are held by the outer ones only (one handle). */
static int b_block_close(lua_State *L) {
  dp_builder *b = check_builder(L);
  dp_expr *body = EXPR(2);
  if (!b->nblocks) return luaL_error(L, "devplan builder: no open block");
  struct open_block ob = b->blocks[b->nblocks - 1];
  dp_expr *owned = NULL;
  for (uint32_t i = b->nlets; i-- > ob.lets;) {
    const struct pending_let *pl = &b->lets[i];
    dp_expr *v = (dp_expr *)b->objs[pl->var - 1];
    if (v->h.kind != DP_VAR) {
      dp_release(owned);
      return luaL_error(L, "devplan builder: let of a non-var");
    }
    dp_let *l = dp_let_new((dp_var *)v, (dp_expr *)b->objs[pl->val - 1], body, pl->span);
    dp_release(owned);
    if (!l) return luaL_error(L, "devplan: out of memory");
    owned = body = &l->e;
  }
  b->nlets = ob.lets;
  dp_scope_unbind(&b->scope, ob.mark);
  b->block = ob.prev;
  b->nblocks--;
  if (!owned) {
    lua_pushvalue(L, 2);
    return 1;
  }
  return put(L, b, owned, NULL, 0);
}

/* ---------------- the fast path ---------------- */

/* Character classes of names (ASCII only, as the grammar's): filled by
   dp_lua_open_build. */
enum { CH_ALNUM = 1, CH_ALPHA = 2 };
static unsigned char char_class[256];

static void init_char_class(void) {
  for (int c = 0; c < 256; c++) {
    int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    int digit = c >= '0' && c <= '9';
    char_class[c] = (unsigned char)((alpha || digit ? CH_ALNUM : 0) | (alpha ? CH_ALPHA : 0));
  }
}

#define IS_CLASS(c, k) (char_class[(unsigned char)(c)] & (k))

/* End of the name (lname or ident of the grammar) starting at offset i:
   letters, digits and _, with dotted parts that start with a letter. */
static size_t name_end(const char *t, size_t len, size_t i) {
  while (i < len && IS_CLASS(t[i], CH_ALNUM)) i++;
  while (i + 1 < len && t[i] == '.' && IS_CLASS(t[i + 1], CH_ALPHA)) {
    i += 2;
    while (i < len && IS_CLASS(t[i], CH_ALNUM)) i++;
  }
  return i;
}

/* Capture i of the statement as a 0-based offset into the text. */
static size_t cap_off(lua_State *L, dp_builder *b, int i) {
  lua_Integer p = lua_tointeger(L, i);
  if (p < 1 || (size_t)p > b->len) return (size_t)luaL_error(L, "devplan builder: bad position");
  return (size_t)p - 1;
}

/* Give up on the statement: the full grammar will parse it (it uses a
   callee or meta entry not seen yet). Nodes already made stay owned by
   the builder; bindings made are undone. */
static int fast_bail(lua_State *L, dp_builder *b, uint32_t mark) {
  for (uint32_t i = 0; i < b->nattrs; i++) dp_av_clear(&b->attrs[i].val);
  b->nattrs = b->nstk = b->ncalls = 0;
  dp_scope_unbind(&b->scope, mark);
  lua_pushboolean(L, 0);
  return 1;
}

/* The attribute `key = meta[kind][index]` (captures at k, k+1, k+2). */
static int fast_attr(lua_State *L, dp_builder *b, int k) {
  const char *t = b->text;
  size_t kp = cap_off(L, b, k), mp = cap_off(L, b, k + 1), ip = cap_off(L, b, k + 2);
  size_t ke = name_end(t, b->len, kp), me = name_end(t, b->len, mp), ie = ip;
  while (ie < b->len && t[ie] >= '0' && t[ie] <= '9') ie++;
  char key[128];
  size_t n = me - mp, d = ie - ip;
  if (ke - kp >= sizeof b->attrs->key || n + d + 2 > sizeof key) return 0;
  key[0] = '\0';
  memcpy(key + 1, t + mp, n);
  key[n + 1] = '\0';
  memcpy(key + n + 2, t + ip, d);
  int64_t slot = dp_scope_find(&b->scope, key, n + d + 2);
  uint32_t h = slot >= 0 ? b->scope.slots[slot].cached : 0;
  if (!h) return 0;
  dp_obj *o = b->objs[h - 1];
  grow(L, (void **)&b->attrs, &b->capattrs, b->nattrs + 1, sizeof *b->attrs);
  struct fast_attr *a = &b->attrs[b->nattrs];
  a->pos = (lua_Integer)kp + 1;
  memcpy(a->key, t + kp, ke - kp);
  a->key[ke - kp] = '\0';
  a->val = o->type == DP_OBJ_VDEV ? dp_av_vdev((dp_vdev *)o) : dp_av_expr((dp_expr *)o);
  b->nattrs++;
  return 1;
}

/* The call whose `)` was reached: its operands and attributes are the
   top of the stacks. */
static void fast_call_end(lua_State *L, dp_builder *b) {
  struct fast_call c = b->calls[--b->ncalls];
  attr_list a = {0, NULL, NULL};
  uint32_t na = b->nattrs - c.attrs;
  if (na) {
    a.items = dp_calloc(na, sizeof *a.items);
    a.pos = dp_calloc(na, sizeof *a.pos);
    if (!a.items || !a.pos) {
      free(a.items);
      free(a.pos);
      raise_at(L, b, DP_ERR_MEMORY, c.pos, "out of memory");
    }
    for (uint32_t i = 0; i < na; i++) {
      struct fast_attr *fa = &b->attrs[c.attrs + i];
      a.items[i].key = fa->key; /* copied by the core; lives until the call is made */
      a.items[i].val = fa->val;
      a.pos[i] = fa->pos;
      fa->val = dp_av_none();
    }
    a.n = na;
  }
  uint32_t h = make_call(L, b, c.pos, c.fn, (int)(b->nstk - c.base), b->stk + c.base, &a);
  b->nattrs = c.attrs;
  b->nstk = c.base;
  b->stk[b->nstk++] = (dp_expr *)b->objs[h - 1];
}

/* b.fast_stmt(subject, i, builder, captures...): the match-time capture of
   the parser's fast path, for `%n = E;` and `let %x = E;` where E is made
   of variables and operator calls whose attributes are meta entries.
   Captures (1-based text positions): the statement's start, for a let the
   position of its `%`, then E in text order: the position after the `%`
   of a variable, the first letter of a callee, 0 followed by three
   positions (an attribute's key, meta kind and index), the `)` closing a
   call. Returns true when the
   statement is built and bound, false to leave it to the full grammar.
   (A closure whose upvalue is the builders' metatable: checking the
   builder costs no registry look-up.) */
static int b_fast_stmt(lua_State *L) {
  dp_builder *b = lua_touserdata(L, 3);
  int ok = b && lua_getmetatable(L, 3);
  if (ok) {
    ok = lua_rawequal(L, -1, lua_upvalueindex(1));
    lua_pop(L, 1);
  }
  size_t len;
  if (!ok || !b->ctx || lua_tolstring(L, 1, &len) != b->text || !b->nblocks)
    return luaL_error(L, "devplan builder: fast_stmt");
  const char *t = b->text;
  int top = lua_gettop(L), k = 4;
  uint32_t mark = b->scope.nundo, var = 0;
  size_t sp = cap_off(L, b, k++);
  lua_Integer spos = (lua_Integer)sp + 1;
  b->nattrs = b->nstk = b->ncalls = 0;
  if (t[sp] == 'l') { /* let %x = ...: the variable is in scope in its value */
    size_t vp = cap_off(L, b, k++), e = name_end(t, len, vp + 1);
    var = keep(L, b, dp_var_new(cname(L, b, t + vp + 1, e - vp - 1), NULL, NULL, span_at(b, (lua_Integer)vp + 1)),
               NULL, (lua_Integer)vp + 1);
    bind_slot(L, b, slot_of(L, b, t + vp + 1, e - vp - 1), var, 0);
  }
  uint32_t last = 0;
  for (; k <= top; k++) {
    if (lua_tointeger(L, k) == 0) {
      if (k + 3 > top || !b->ncalls) return luaL_error(L, "devplan builder: fast_stmt attribute");
      if (!fast_attr(L, b, k + 1)) return fast_bail(L, b, mark);
      k += 3;
      continue;
    }
    size_t p = cap_off(L, b, k);
    char c = t[p];
    if (p > 0 && t[p - 1] == '%') { /* a variable: its name starts at p */
      size_t e = name_end(t, len, p);
      int64_t slot = dp_scope_find(&b->scope, t + p, e - p);
      last = slot >= 0 ? b->scope.slots[slot].handle : 0;
      if (!last)
        return raise_at(L, b, DP_ERR_NAME, (lua_Integer)p, "unknown variable %%%s",
                        cname(L, b, t + p, e - p));
      grow(L, (void **)&b->stk, &b->capstk, b->nstk + 1, sizeof *b->stk);
      b->stk[b->nstk++] = (dp_expr *)b->objs[last - 1];
    } else if (c == ')') {
      if (!b->ncalls) return luaL_error(L, "devplan builder: fast_stmt call");
      fast_call_end(L, b);
      last = b->n;
    } else {
      int64_t slot = dp_scope_find(&b->scope, t + p, name_end(t, len, p) - p);
      uint32_t h = slot >= 0 ? b->scope.slots[slot].cached : 0;
      if (!h) return fast_bail(L, b, mark);
      grow(L, (void **)&b->calls, &b->capcalls, b->ncalls + 1, sizeof *b->calls);
      b->calls[b->ncalls++] = (struct fast_call){(lua_Integer)p + 1, (dp_expr *)b->objs[h - 1], b->nstk, b->nattrs};
      /* make room for the call's result (the stack never shrinks below) */
      grow(L, (void **)&b->stk, &b->capstk, b->nstk + 1, sizeof *b->stk);
    }
  }
  if (b->nstk != 1 || b->ncalls || !last) return luaL_error(L, "devplan builder: fast_stmt expression");
  b->nstk = 0;
  if (var) {
    grow(L, (void **)&b->lets, &b->caplets, b->nlets + 1, sizeof *b->lets);
    b->lets[b->nlets++] = (struct pending_let){span_at(b, spos), var, last};
  } else {
    size_t e = name_end(t, len, sp + 1);
    uint32_t slot = slot_of(L, b, t + sp + 1, e - sp - 1);
    if (b->scope.slots[slot].block == b->block)
      return raise_at(L, b, DP_ERR_NAME, spos, "duplicate definition of %%%s", cname(L, b, t + sp + 1, e - sp - 1));
    bind_slot(L, b, slot, last, b->block);
  }
  b->fast_end = lua_tointeger(L, 2);
  lua_pushboolean(L, 1);
  return 1;
}

/* b:fast_end() -> where the last statement of the fast path ended (0: none) */
static int b_fast_end(lua_State *L) {
  dp_builder *b = luaL_checkudata(L, 1, BUILDER_META);
  lua_pushinteger(L, b->fast_end);
  return 1;
}

static const luaL_Reg builder_methods[] = {
  {"close", b_close}, {"error", b_error}, {"linecol", b_linecol}, {"get", b_get},
  {"obj", b_obj}, {"ttensor", b_ttensor}, {"ttuple", b_ttuple}, {"tfunc", b_tfunc},
  {"tref", b_tref}, {"tstorage", b_tstorage}, {"tvar", b_tvar}, {"tadt", b_tadt},
  {"op", b_op}, {"var", b_var}, {"global", b_global}, {"call", b_call}, {"fn", b_fn},
  {"let", b_let}, {"tuple", b_tuple}, {"proj", b_proj}, {"if_", b_if},
  {"ref", b_ref}, {"ref_read", b_ref_read}, {"ref_write", b_ref_write}, {"match", b_match},
  {"pwild", b_pwild}, {"pvar", b_pvar}, {"pctor", b_pctor}, {"ptuple", b_ptuple},
  {"const", b_const}, {"const_tensor", b_const_tensor}, {"vdev", b_vdev}, {"ctor", b_ctor},
  {"typedef", b_typedef}, {"primfn", b_primfn}, {"add_func", b_add_func},
  {"module", b_module}, {"expr", b_expr}, {"mark", b_mark}, {"unbind", b_unbind},
  {"bind", b_bind}, {"define", b_define}, {"lookup", b_lookup}, {"cache", b_cache},
  {"block_open", b_block_open}, {"push_let", b_push_let}, {"block_close", b_block_close},
  {"fast_end", b_fast_end}, {NULL, NULL}};

void dp_lua_open_build(lua_State *L) {
  if (luaL_newmetatable(L, BUILDER_META)) {
    lua_pushcfunction(L, b_gc);
    lua_setfield(L, -2, "__gc");
    luaL_newlib(L, builder_methods);
    lua_pushvalue(L, -2);
    lua_pushcclosure(L, b_fast_stmt, 1);
    lua_setfield(L, -2, "fast_stmt");
    lua_setfield(L, -2, "__index");
    init_char_class();
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, b_new);
  lua_setfield(L, -2, "_builder");
}
