/*
 * Attribute values between Lua and C: integers stay integers (DP_AV_INT),
 * other numbers are floats, booleans, strings, lists, dp.NONE for None,
 * virtual devices and constants. Attribute tables become attribute sets,
 * checked against the operator's schema when there is one.
 *
 * Conversion is in two passes so that a bad value never leaks: the first
 * pass checks the whole table and may raise; the second builds the C
 * values and cannot raise.
 */
#include <stdlib.h>
#include <string.h>
#include "l_attrs.h"

static const char NONE_KEY[] = "devplan.NONE";
#define MAX_LIST_DEPTH 32

static int none_tostring(lua_State *L) {
  lua_pushliteral(L, "None");
  return 1;
}

void dp__lua_push_none(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, NONE_KEY) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_createtable(L, 0, 2);
  lua_pushcfunction(L, none_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, "devplan.NONE");
  lua_setfield(L, -2, "__name");
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, NONE_KEY);
}

int dp__lua_is_none(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TTABLE) return 0;
  idx = lua_absindex(L, idx);
  dp__lua_push_none(L);
  int eq = lua_rawequal(L, idx, -1);
  lua_pop(L, 1);
  return eq;
}

/* ---------------- Lua -> C ---------------- */

static void check_aval_depth(lua_State *L, int idx, const char *key, int depth) {
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
  case LUA_TBOOLEAN: case LUA_TNUMBER: case LUA_TSTRING:
    return;
  case LUA_TUSERDATA: {
    dp_obj *o = dp__lua_testobj(L, idx);
    if (o && o->type == DP_OBJ_VDEV) return;
    if (o && o->type == DP_OBJ_EXPR && o->kind == DP_CONST) return;
    break;
  }
  case LUA_TTABLE: {
    if (dp__lua_is_none(L, idx)) return;
    if (depth >= MAX_LIST_DEPTH) luaL_error(L, "attribute '%s': lists nested too deeply", key);
    /* (each level holds a key and a value: a coroutine's stack starts small) */
    luaL_checkstack(L, 4, "attribute lists nested too deeply");
    lua_Unsigned n = lua_rawlen(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      lua_pop(L, 1);
      if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 ||
          (lua_Unsigned)lua_tointeger(L, -1) > n)
        luaL_error(L, "attribute '%s': a table value must be a list", key);
    }
    for (lua_Unsigned i = 1; i <= n; i++) {
      lua_rawgeti(L, idx, (lua_Integer)i);
      check_aval_depth(L, -1, key, depth + 1);
      lua_pop(L, 1);
    }
    return;
  }
  default:
    break;
  }
  luaL_error(L, "attribute '%s': unsupported value (%s); use a number, boolean, string, list, "
                "dp.NONE, VirtualDevice or constant", key, luaL_typename(L, idx));
}

void dp__lua_check_aval(lua_State *L, int idx, const char *key) {
  check_aval_depth(L, idx, key, 0);
}

int dp__lua_to_aval(lua_State *L, int idx, dp_attrkind want, dp_aval *out) {
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
  case LUA_TBOOLEAN:
    *out = dp_av_bool(lua_toboolean(L, idx));
    return 0;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx) && want != DP_AK_FLOAT) *out = dp_av_int(lua_tointeger(L, idx));
    else *out = dp_av_float(lua_tonumber(L, idx), 0);
    return 0;
  case LUA_TSTRING:
    *out = dp_av_string(lua_tostring(L, idx));
    return out->u.s ? 0 : -1;
  case LUA_TUSERDATA: {
    dp_obj *o = dp__lua_testobj(L, idx);
    if (o->type == DP_OBJ_VDEV) *out = dp_av_vdev((dp_vdev *)o);
    else *out = dp_av_expr((dp_expr *)o);
    return 0;
  }
  default: break;
  }
  if (dp__lua_is_none(L, idx)) {
    *out = dp_av_none();
    return 0;
  }
  uint32_t n = (uint32_t)lua_rawlen(L, idx);
  if (!lua_checkstack(L, 2)) return -1; /* (a level's value; never raises here) */
  dp_aval *items = dp_calloc(n, sizeof *items);
  if (!items) return -1;
  for (uint32_t i = 0; i < n; i++) {
    lua_rawgeti(L, idx, (lua_Integer)i + 1);
    int rc = dp__lua_to_aval(L, -1, want == DP_AK_FLOAT ? DP_AK_FLOAT : DP_AK_ANY, &items[i]);
    lua_pop(L, 1);
    if (rc < 0) {
      for (uint32_t j = 0; j < i; j++) dp_av_clear(&items[j]);
      free(items);
      return -1;
    }
  }
  *out = dp_av_list(n, items);
  return 0;
}

static int cmp_keys(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static dp_attrkind schema_kind(const dp_op *op, const char *key) {
  for (uint32_t i = 0; op && i < op->nfields; i++)
    if (strcmp(op->fields[i].name, key) == 0) return op->fields[i].kind;
  return DP_AK_ANY;
}

/* Pass 1: the keys of the table at idx, checked with their values, sorted,
   in a scratch array the GC owns (pushed on the stack). */
static const char **check_attr_table(lua_State *L, int idx, uint32_t *nout) {
  uint32_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING) luaL_error(L, "attribute names must be strings");
    dp__lua_check_aval(L, -1, lua_tostring(L, -2));
    lua_pop(L, 1);
    n++;
  }
  const char **keys = lua_newuserdatauv(L, (n ? n : 1) * sizeof *keys, 0);
  uint32_t i = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    keys[i++] = lua_tostring(L, -1); /* kept alive by the table */
  }
  qsort(keys, n, sizeof *keys, cmp_keys);
  *nout = n;
  return keys;
}

dp_attrs *dp__lua_make_attrs(lua_State *L, int idx, const dp_op *op) {
  idx = lua_absindex(L, idx);
  int has_schema = op && op->fields;
  if (lua_isnoneornil(L, idx) && !has_schema) return NULL;
  if (!lua_isnoneornil(L, idx) && lua_type(L, idx) != LUA_TTABLE)
    luaL_typeerror(L, idx, "table of attributes");
  uint32_t n = 0;
  const char **keys = NULL;
  if (!lua_isnoneornil(L, idx)) keys = check_attr_table(L, idx, &n);
  if (n == 0 && !has_schema) return NULL;
  /* Pass 2: nothing below raises until the C values are handed over. */
  dp_attr *items = n ? lua_newuserdatauv(L, n * sizeof *items, 0) : NULL;
  for (uint32_t i = 0; i < n; i++) {
    lua_pushstring(L, keys[i]);
    lua_rawget(L, idx);
    items[i].key = (char *)keys[i];
    int rc = dp__lua_to_aval(L, -1, schema_kind(op, keys[i]), &items[i].val);
    lua_pop(L, 1);
    if (rc < 0) {
      for (uint32_t j = 0; j < i; j++) dp_av_clear(&items[j].val);
      dp__lua_oom(L);
    }
  }
  dp_err *err = NULL;
  dp_attrs *a = op ? dp_op_attrs(op, n, items, &err) : dp_attrs_make(n, items, &err);
  if (!a && err) dp__lua_error(L, err);
  return a;
}

/* ---------------- C -> Lua ---------------- */

void dp__lua_push_aval(lua_State *L, const dp_aval *v) {
  switch (v->kind) {
  case DP_AV_NONE: dp__lua_push_none(L); break;
  case DP_AV_BOOL: lua_pushboolean(L, (int)v->u.i); break;
  case DP_AV_INT: lua_pushinteger(L, v->u.i); break;
  case DP_AV_FLOAT: lua_pushnumber(L, v->u.f); break;
  case DP_AV_STR: lua_pushstring(L, v->u.s); break;
  case DP_AV_VDEV: dp__lua_push(L, v->u.vdev); break;
  case DP_AV_EXPR: dp__lua_push(L, v->u.expr); break;
  case DP_AV_LIST:
    luaL_checkstack(L, 4, "attribute lists nested too deeply");
    lua_createtable(L, (int)v->n, 0);
    for (uint32_t i = 0; i < v->n; i++) {
      dp__lua_push_aval(L, &v->u.items[i]);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    break;
  default: lua_pushnil(L); break;
  }
}

void dp__lua_push_attrs(lua_State *L, const dp_attrs *a) {
  lua_createtable(L, 0, a ? (int)a->n : 0);
  for (uint32_t i = 0; a && i < a->n; i++) {
    dp__lua_push_aval(L, &a->items[i].val);
    lua_setfield(L, -2, a->items[i].key);
  }
}

static const char *const kind_names[] = {
  "any", "bool", "int", "float", "str", "ints", "int_or_ints", "int_or_none", "dtype", "vdev", NULL};

int dp__lua_attrkind(const char *name) {
  for (int i = 0; kind_names[i]; i++)
    if (strcmp(kind_names[i], name) == 0) return i; /* same order as dp_attrkind */
  return -1;
}
