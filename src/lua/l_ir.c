/*
 * The IR part of the Lua binding: its entry point (dp_lua_open_ir, which
 * calls the entry of each l_*.c file) and the helpers those files share:
 * option tables, spans, argument checks with clear messages, lists.
 */
#include <string.h>
#include "l_ir.h"

void dp_lua_open_ir(lua_State *L) {
  dp_lua_push_none(L);
  lua_setfield(L, -2, "NONE");
  dp_lua_open_type(L);
  dp_lua_open_expr(L);
  dp_lua_open_const(L);
  dp_lua_open_module(L);
  dp_lua_open_visit(L);
  dp_lua_open_op(L);
}

/* ---------------- options and spans ---------------- */

void dp_lua_check_opts(lua_State *L, int idx) {
  int t = lua_type(L, idx);
  if (t != LUA_TNONE && t != LUA_TNIL && t != LUA_TTABLE)
    luaL_typeerror(L, idx, "table of options");
}

void dp_lua_check_opt_keys(lua_State *L, int idx, const char *const keys[], const char *who) {
  if (lua_type(L, idx) != LUA_TTABLE) return;
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    int known = 0;
    if (lua_type(L, -1) == LUA_TSTRING) {
      const char *k = lua_tostring(L, -1);
      for (size_t i = 0; keys[i] && !known; i++) known = strcmp(k, keys[i]) == 0;
    }
    if (!known) {
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (size_t i = 0; keys[i]; i++) {
        luaL_addstring(&b, i ? ", " : "");
        luaL_addstring(&b, keys[i]);
      }
      luaL_pushresult(&b);
      const char *list = lua_tostring(L, -1);
      const char *key = luaL_tolstring(L, -2, NULL);
      luaL_argerror(L, idx, lua_pushfstring(L, "%s: unknown option '%s' (options: %s)", who, key, list));
    }
  }
}

int dp_lua_opt_field(lua_State *L, int idx, const char *key) {
  if (lua_type(L, idx) != LUA_TTABLE) {
    lua_pushnil(L);
    return LUA_TNIL;
  }
  return lua_getfield(L, idx, key);
}

int dp_lua_item(lua_State *L, int idx, lua_Integer i, const char *key) {
  idx = lua_absindex(L, idx);
  if (lua_rawgeti(L, idx, i) != LUA_TNIL) return lua_type(L, -1);
  lua_pop(L, 1);
  return lua_getfield(L, idx, key);
}

static uint32_t span_int(lua_State *L, int idx, const char *key) {
  lua_getfield(L, idx, key);
  lua_Integer v = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
  lua_pop(L, 1);
  return v > 0 && v <= UINT32_MAX ? (uint32_t)v : 0;
}

dp_span dp_lua_opt_span(lua_State *L, int idx) {
  dp_span s = DP_NOSPAN;
  if (lua_type(L, idx) != LUA_TTABLE) return s;
  idx = lua_absindex(L, idx);
  if (lua_getfield(L, idx, "span") == LUA_TTABLE) {
    int sp = lua_gettop(L);
    s.line = span_int(L, sp, "line");
    s.col = span_int(L, sp, "col");
    if (lua_getfield(L, sp, "source") == LUA_TSTRING)
      s.source = dp_ctx_source(dp_lua_ctx(L), lua_tostring(L, -1));
    lua_pop(L, 1);
  } else if (!lua_isnil(L, -1)) {
    luaL_error(L, "opts.span must be a table {line=, col=, source=}");
  }
  lua_pop(L, 1);
  return s;
}

dp_span dp_lua_span_opts(lua_State *L, int idx) {
  static const char *const keys[] = {"span", NULL};
  dp_lua_check_opts(L, idx);
  dp_lua_check_opt_keys(L, idx, keys, "devplan");
  return dp_lua_opt_span(L, idx);
}

void dp_lua_push_span(lua_State *L, dp_span s) {
  if (s.line == 0) {
    lua_pushnil(L);
    return;
  }
  lua_createtable(L, 0, 3);
  lua_pushstring(L, dp_ctx_source_name(dp_lua_ctx(L), s.source));
  lua_setfield(L, -2, "source");
  lua_pushinteger(L, s.line);
  lua_setfield(L, -2, "line");
  lua_pushinteger(L, s.col);
  lua_setfield(L, -2, "col");
}

/* ---------------- argument checks ---------------- */

/* A short description of the value at idx for messages: "a string", "a
   Type", "a call". */
static const char *describe(lua_State *L, int idx) {
  dp_obj *o = dp_lua_testobj(L, idx);
  if (o && o->type == DP_OBJ_EXPR) return lua_pushfstring(L, "a %s", dp_exprkind_name(o->kind));
  if (o && o->type == DP_OBJ_TYPE) return "a Type";
  if (o && o->type == DP_OBJ_PATTERN) return "a Pattern";
  if (o && o->type == DP_OBJ_MODULE) return "an IRModule";
  if (o && o->type == DP_OBJ_VDEV) return "a VirtualDevice";
  if (o) return "another devplan object";
  return luaL_typename(L, idx);
}

dp_expr *dp_lua_check_expr(lua_State *L, int idx) {
  dp_expr *e = dp_lua_test(L, idx, DP_OBJ_EXPR);
  if (!e)
    luaL_argerror(L, idx, lua_pushfstring(L, "expression expected, got %s", describe(L, idx)));
  return e;
}

dp_var *dp_lua_check_var(lua_State *L, int idx) {
  dp_expr *e = dp_lua_test(L, idx, DP_OBJ_EXPR);
  if (!e || e->h.kind != DP_VAR)
    luaL_argerror(L, idx, lua_pushfstring(L, "var expected, got %s", describe(L, idx)));
  return (dp_var *)e;
}

dp_type *dp_lua_check_type(lua_State *L, int idx) {
  dp_type *t = dp_lua_test(L, idx, DP_OBJ_TYPE);
  if (!t) luaL_argerror(L, idx, lua_pushfstring(L, "Type expected, got %s", describe(L, idx)));
  return t;
}

dp_type *dp_lua_opt_type(lua_State *L, int idx) {
  return lua_isnoneornil(L, idx) ? NULL : dp_lua_check_type(L, idx);
}

dp_vdev *dp_lua_opt_vdev(lua_State *L, int idx, const char *what) {
  if (lua_isnoneornil(L, idx)) return NULL;
  dp_vdev *v = dp_lua_test(L, idx, DP_OBJ_VDEV);
  if (!v) luaL_error(L, "%s must be a VirtualDevice, got %s", what, describe(L, idx));
  return v;
}

static const char *want_name(lua_State *L, dp_objtype type, int kind) {
  if (type == DP_OBJ_EXPR && kind) return lua_pushfstring(L, "a %s", dp_exprkind_name(kind));
  if (type == DP_OBJ_EXPR) return "an expression";
  if (type == DP_OBJ_TYPE) return "a Type";
  if (type == DP_OBJ_PATTERN) return "a Pattern";
  if (type == DP_OBJ_TYPEDEF) return "a TypeDef";
  if (type == DP_OBJ_PRIMFN) return "a PrimFn";
  return "an object";
}

void **dp_lua_check_list(lua_State *L, int idx, dp_objtype type, int kind, const char *what,
                         void **small, uint32_t nsmall, uint32_t *n) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) != LUA_TTABLE)
    luaL_argerror(L, idx, lua_pushfstring(L, "%s must be a list, got %s", what, describe(L, idx)));
  lua_Unsigned len = lua_rawlen(L, idx);
  if (len > UINT32_MAX / sizeof(void *)) luaL_argerror(L, idx, "list too long");
  void **items = small;
  if (len > nsmall) items = lua_newuserdatauv(L, len * sizeof *items, 0);
  for (lua_Unsigned i = 0; i < len; i++) {
    lua_rawgeti(L, idx, (lua_Integer)i + 1);
    dp_obj *o = dp_lua_testobj(L, -1);
    if (!o || o->type != type || (kind && o->kind != kind)) {
      int at = lua_gettop(L);
      const char *want = want_name(L, type, kind);
      const char *got = describe(L, at);
      luaL_argerror(L, idx, lua_pushfstring(L, "%s[%d] must be %s, got %s", what, (int)i + 1,
                                            want, got));
    }
    items[i] = o;
    lua_pop(L, 1);
  }
  *n = (uint32_t)len;
  return items;
}

void **dp_lua_opt_list(lua_State *L, int idx, dp_objtype type, int kind, const char *what,
                       void **small, uint32_t nsmall, uint32_t *n) {
  *n = 0;
  if (lua_isnoneornil(L, idx)) return small;
  return dp_lua_check_list(L, idx, type, kind, what, small, nsmall, n);
}

void **dp_lua_opt_type_params(lua_State *L, int idx, void **small, uint32_t nsmall, uint32_t *n) {
  void **tp = dp_lua_opt_list(L, idx, DP_OBJ_TYPE, 0, "type_params", small, nsmall, n);
  for (uint32_t i = 0; i < *n; i++)
    if (((dp_type *)tp[i])->h.kind != DP_TY_VAR)
      luaL_argerror(L, idx, "type parameters must be type variables (dp.type.var)");
  return tp;
}
