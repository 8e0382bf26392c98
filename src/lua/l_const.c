/*
 * Constants between Lua and C: dp.const(value, dtype?) takes a number, a
 * boolean or nested tables (the shape is read from the nesting; ragged
 * input is an error), and const.value gives the elements back.
 *
 * The element buffer is a scratch userdata, so a bad element found half
 * way raises without leaking.
 */
#include <stdlib.h>
#include <string.h>
#include "l_const.h"
#include "l_init.h"

#define MAX_NDIM 64

/* ---------------- Lua -> elements ---------------- */

/* The integers dtype dt holds, as text: "from -128 to 127". */
static const char *int_range(lua_State *L, dp_dtype dt) {
  int bits = DP_DTYPE_BITS(dt);
  if (DP_DTYPE_CODE(dt) == DP_DT_UINT)
    return bits >= 64 ? "from 0 to 18446744073709551615"
                      : lua_pushfstring(L, "from 0 to %I", (lua_Integer)(((uint64_t)1 << bits) - 1));
  if (bits >= 64) return "from -9223372036854775808 to 9223372036854775807";
  lua_Integer hi = (lua_Integer)(((uint64_t)1 << (bits - 1)) - 1);
  return lua_pushfstring(L, "from %I to %I", -hi - 1, hi);
}

/* Stores the Lua value at idx as element i of buf (through the core's
   element conversions, scalar.h); returns NULL, or what is wrong with it
   in words ("is 300: int8 holds integers from -128 to 127"). */
static const char *store(lua_State *L, int idx, dp_dtype dt, void *buf, size_t i) {
  int code = DP_DTYPE_CODE(dt);
  int t = lua_type(L, idx);
  char name[32];
  dp_dtype_name(dt, name);
  if (code == DP_DT_BOOL) {
    if (t == LUA_TBOOLEAN) dp_elem_set_int(dt, buf, i, lua_toboolean(L, idx));
    else if (t == LUA_TNUMBER) dp_elem_set_int(dt, buf, i, lua_tonumber(L, idx) != 0);
    else return lua_pushfstring(L, "is a %s, not a boolean or a number (dtype bool)", luaL_typename(L, idx));
    return NULL;
  }
  if (t != LUA_TNUMBER)
    return lua_pushfstring(L, "is a %s, not a number (dtype %s)", luaL_typename(L, idx), name);
  if (code == DP_DT_FLOAT || code == DP_DT_BFLOAT) {
    dp_elem_set_real(dt, buf, i, lua_tonumber(L, idx));
    return NULL;
  }
  int isint;
  lua_Integer v = lua_tointegerx(L, idx, &isint);
  if (!isint)
    return lua_pushfstring(L, "is %s, not an integer (dtype %s)", luaL_tolstring(L, idx, NULL), name);
  if ((code == DP_DT_UINT && v < 0) ||
      !dp_dtype_fits_int(dt, v < 0, v < 0 ? 0 - (uint64_t)v : (uint64_t)v))
    return lua_pushfstring(L, "is %I: %s holds integers %s", v, name, int_range(L, dt));
  dp_elem_set_int(dt, buf, i, v);
  return NULL;
}

/* The shape, from the first element at each level. */
static uint32_t read_shape(lua_State *L, int idx, int64_t *dims, size_t *count) {
  uint32_t ndim = 0;
  *count = 1;
  lua_pushvalue(L, idx);
  while (lua_type(L, -1) == LUA_TTABLE) {
    if (ndim == MAX_NDIM) luaL_error(L, "dp.const: more than %d dimensions", MAX_NDIM);
    lua_Unsigned n = lua_rawlen(L, -1);
    dims[ndim++] = (int64_t)n;
    if (n && *count > ((size_t)1 << 40) / n) luaL_error(L, "dp.const: tensor too large");
    *count *= (size_t)n;
    if (n == 0) break;
    lua_rawgeti(L, -1, 1);
    lua_remove(L, -2);
  }
  lua_pop(L, 1);
  return ndim;
}

typedef struct fill_state {
  dp_dtype dt;
  void *buf;
  size_t next;
  uint32_t ndim;
  const int64_t *dims;
  int64_t at[MAX_NDIM];
} fill_state;

/* "dp.const: the value WHAT" (a scalar) or "dp.const: element [i][j] WHAT"
   (an element of nested tables, the path 1-based as Lua indexes it). */
static void path_error(lua_State *L, fill_state *s, uint32_t depth, const char *what) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, depth == 0 ? "dp.const: the value" : "dp.const: element ");
  for (uint32_t i = 0; i < depth; i++) {
    lua_pushfstring(L, "[%d]", (int)s->at[i] + 1);
    luaL_addvalue(&b);
  }
  luaL_addchar(&b, ' ');
  luaL_addstring(&b, what);
  luaL_pushresult(&b);
  lua_error(L);
}

/* The value at the top has depth `depth` of the nesting; depth <= 64. */
static void fill(lua_State *L, fill_state *s, uint32_t depth) {
  int idx = lua_gettop(L);
  if (depth == s->ndim) {
    luaL_checkstack(L, 6, "dp.const");
    const char *wrong = store(L, idx, s->dt, s->buf, s->next++);
    if (wrong) path_error(L, s, depth, wrong);
    return;
  }
  if (lua_type(L, idx) != LUA_TTABLE)
    path_error(L, s, depth, lua_pushfstring(L, "is a %s where a list of %d is (the first element's "
                                            "shape: ragged input)", luaL_typename(L, idx), (int)s->dims[depth]));
  if (lua_rawlen(L, idx) != (lua_Unsigned)s->dims[depth])
    path_error(L, s, depth, lua_pushfstring(L, "has %d elements where the first has %d (ragged input)",
                                            (int)lua_rawlen(L, idx), (int)s->dims[depth]));
  luaL_checkstack(L, 2, "dp.const");
  for (int64_t i = 0; i < s->dims[depth]; i++) {
    s->at[depth] = i;
    lua_rawgeti(L, idx, (lua_Integer)i + 1);
    fill(L, s, depth + 1);
    lua_pop(L, 1);
  }
}

/* dp.const(value, dtype?, {span =}?) */
static int l_const(lua_State *L) {
  lua_settop(L, 3); /* fixed slots: scratch buffers go above */
  int t = lua_type(L, 1);
  if (t != LUA_TNUMBER && t != LUA_TTABLE && t != LUA_TBOOLEAN)
    luaL_typeerror(L, 1, "number, boolean or nested tables");
  const char *dflt = t == LUA_TBOOLEAN ? "bool" : "float32";
  const char *name = luaL_optstring(L, 2, dflt);
  dp_dtype dt = dp_dtype_parse(name);
  if (!dt) luaL_argerror(L, 2, lua_pushfstring(L, "unknown dtype '%s'", name));
  if (DP_DTYPE_LANES(dt) != 1) luaL_argerror(L, 2, "vector dtypes are not constants");
  if (!dp_elem_bytes(dt)) luaL_argerror(L, 2, lua_pushfstring(L, "no constants of dtype '%s'", name));
  dp_span span = dp__lua_span_opts(L, 3);
  fill_state s;
  int64_t dims[MAX_NDIM];
  size_t count;
  s.ndim = read_shape(L, 1, dims, &count);
  s.dt = dt;
  s.dims = dims;
  s.next = 0;
  s.buf = lua_newuserdatauv(L, count * dp_dtype_bytes(dt) + 1, 0);
  lua_pushvalue(L, 1);
  fill(L, &s, 0);
  lua_pop(L, 1);
  dp_err *err = NULL;
  dp_const *c = dp_const_new(dt, s.ndim, dims, s.buf, span, &err);
  if (!c) return dp__lua_error(L, err ? err : dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  dp__lua_push_owned(L, c);
  return 1;
}

/* ---------------- elements -> Lua ---------------- */

static void push_elem(lua_State *L, const dp_const *c, size_t i) {
  double f;
  int64_t v;
  int r = dp_elem_get(c->dtype, c->data, i, &f, &v);
  if (r > 0) lua_pushnumber(L, f);
  else if (r < 0) lua_pushnil(L);
  else if (DP_DTYPE_CODE(c->dtype) == DP_DT_BOOL) lua_pushboolean(L, (int)v);
  else lua_pushinteger(L, (lua_Integer)v);
}

/* Nested tables for dimensions depth.. (depth <= ndim, bounded). */
static void push_level(lua_State *L, const dp_const *c, uint32_t depth, size_t *next) {
  if (depth == c->ndim) {
    push_elem(L, c, (*next)++);
    return;
  }
  luaL_checkstack(L, 3, "constant nested too deeply");
  int64_t n = c->shape[depth];
  lua_createtable(L, n > 0 && n < INT32_MAX ? (int)n : 0, 0);
  for (int64_t i = 0; i < n; i++) {
    push_level(L, c, depth + 1, next);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

void dp__lua_push_const_value(lua_State *L, const dp_const *c) {
  size_t next = 0;
  push_level(L, c, 0, &next);
}

void dp__lua_open_const(lua_State *L) {
  lua_pushcfunction(L, l_const);
  lua_setfield(L, -2, "const");
}
