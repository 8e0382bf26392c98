/*
 * Userdata for core objects: weak cache, metatables, errors.
 */
#include <stdlib.h>
#include <string.h>
#include "lbind.h"

static const char CACHE_KEY[] = "devplan.cache";   /* weak: lightuserdata -> userdata */
static const char METAS_KEY[] = "devplan.metas";   /* objtype -> metatable */
static const char CTX_KEY[] = "devplan.ctx";
static const char ERROR_META[] = "devplan.Error";

static int obj_gc(lua_State *L) {
  dp_lud *u = lua_touserdata(L, 1);
  if (u && u->obj) {
    dp_release(u->obj);
    u->obj = NULL;
  }
  return 0;
}

static int ctx_gc(lua_State *L) {
  dp_ctx **p = lua_touserdata(L, 1);
  if (p && *p) {
    dp_ctx_close(*p); /* ops registered from Lua may hold objects of the context */
    *p = NULL;
  }
  return 0;
}

dp_ctx *dp_lua_ctx(lua_State *L) {
  dp_ctx *ctx = NULL;
  if (lua_getfield(L, LUA_REGISTRYINDEX, CTX_KEY) == LUA_TUSERDATA) {
    dp_ctx **p = lua_touserdata(L, -1);
    ctx = *p;
  }
  lua_pop(L, 1);
  if (!ctx) {
    ctx = dp_ctx_new();
    if (!ctx) luaL_error(L, "devplan: out of memory creating the context");
    dp_ctx **p = lua_newuserdatauv(L, sizeof *p, 0);
    *p = ctx;
    lua_newtable(L);
    lua_pushcfunction(L, ctx_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, CTX_KEY);
  }
  return ctx;
}

static void get_registry_table(lua_State *L, const char *key, const char *mode) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    if (mode) {
      lua_newtable(L);
      lua_pushstring(L, mode);
      lua_setfield(L, -2, "__mode");
      lua_setmetatable(L, -2);
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, key);
  }
}

void dp_lua_newmeta(lua_State *L, dp_objtype type, const char *name) {
  luaL_newmetatable(L, name);
  lua_pushcfunction(L, obj_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushinteger(L, type);
  lua_setfield(L, -2, "__dp_type");
  get_registry_table(L, METAS_KEY, NULL);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, type);
  lua_pop(L, 1);
}

void dp_lua_newclass(lua_State *L, dp_objtype type, const char *name, lua_CFunction index,
                     lua_CFunction tostring) {
  dp_lua_newmeta(L, type, name);
  lua_pushcfunction(L, index);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}

void dp_lua_push(lua_State *L, void *p) {
  dp_obj *obj = p;
  if (!obj) {
    lua_pushnil(L);
    return;
  }
  get_registry_table(L, CACHE_KEY, "v");
  if (lua_rawgetp(L, -1, obj) == LUA_TUSERDATA) {
    lua_remove(L, -2);
    return;
  }
  lua_pop(L, 1);
  dp_lud *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->obj = dp_retain(obj);
  get_registry_table(L, METAS_KEY, NULL);
  if (lua_rawgeti(L, -1, obj->type) == LUA_TTABLE) {
    lua_setmetatable(L, -3);
  } else {
    lua_pop(L, 1);
    /* no metatable registered: still collectable */
    lua_newtable(L);
    lua_pushcfunction(L, obj_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -3);
  }
  lua_pop(L, 1);                 /* metas */
  lua_pushvalue(L, -1);
  lua_rawsetp(L, -3, obj);       /* cache[obj] = ud */
  lua_remove(L, -2);             /* cache */
}

void dp_lua_push_owned(lua_State *L, void *obj) {
  dp_lua_push(L, obj);
  dp_release(obj);
}

int dp_lua_push_new(lua_State *L, void *obj, dp_err *err) {
  if (err) {
    dp_release(obj);
    return dp_lua_error(L, err);
  }
  if (!obj) return luaL_error(L, "out of memory");
  dp_lua_push_owned(L, obj);
  return 1;
}

int dp_lua_push_lstr(lua_State *L, char *s, size_t len) {
  if (!s) return luaL_error(L, "out of memory");
  lua_pushlstring(L, s, len);
  free(s);
  return 1;
}

int dp_lua_push_cstr(lua_State *L, char *s) {
  return dp_lua_push_lstr(L, s, s ? strlen(s) : 0);
}

void dp_lua_push_list(lua_State *L, void *const *items, uint32_t n) {
  lua_createtable(L, (int)n, 0);
  for (uint32_t i = 0; i < n; i++) {
    dp_lua_push(L, items[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

void dp_lua_subtable(lua_State *L, const char *name) {
  if (lua_getfield(L, -1, name) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, name);
}

dp_obj *dp_lua_testobj(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TUSERDATA || !lua_getmetatable(L, idx)) return NULL;
  int has = lua_getfield(L, -1, "__dp_type") == LUA_TNUMBER;
  lua_pop(L, 2);
  if (!has) return NULL;
  dp_lud *u = lua_touserdata(L, idx);
  return u ? u->obj : NULL;
}

void *dp_lua_test(lua_State *L, int idx, dp_objtype type) {
  dp_obj *o = dp_lua_testobj(L, idx);
  return o && o->type == type ? o : NULL;
}

static const char *type_names[DP_OBJ__COUNT] = {
  NULL, "context", "Target", "VirtualDevice", "CompilationConfig", "Type", "Expr",
  "Pattern", "Attrs", "TypeDef", "PrimFn", "IRModule", "Domains"};

void *dp_lua_check(lua_State *L, int idx, dp_objtype type) {
  void *o = dp_lua_test(L, idx, type);
  if (!o) {
    const char *want = (unsigned)type < DP_OBJ__COUNT && type_names[type] ? type_names[type] : "object";
    luaL_typeerror(L, idx, want);
  }
  return o;
}

/* --- errors --- */

static int error_tostring(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "formatted");
  if (lua_isstring(L, -1)) return 1;
  lua_getfield(L, 1, "message");
  return 1;
}

static const char *code_names[] = {NULL, "error", "memory", "value", "type", "syntax",
                                   "name", "conflict", "callback", "verify"};

/* Fields line and col of the table at the top, when the span has a line. */
static void set_line_col(lua_State *L, dp_span s) {
  if (!s.line) return;
  lua_pushinteger(L, s.line);
  lua_setfield(L, -2, "line");
  lua_pushinteger(L, s.col);
  lua_setfield(L, -2, "col");
}

void dp_lua_pusherror(lua_State *L, dp_err *e) {
  char *formatted = dp_err_format(e);
  lua_createtable(L, 0, 8);
  lua_pushstring(L, formatted ? formatted : (e && e->msg ? e->msg : "error"));
  lua_setfield(L, -2, "formatted");
  free(formatted);
  lua_pushstring(L, e && e->msg ? e->msg : "error");
  lua_setfield(L, -2, "message");
  lua_pushstring(L, e && e->code >= 1 && e->code <= DP_ERR_VERIFY ? code_names[e->code] : "error");
  lua_setfield(L, -2, "code");
  if (e && e->span.line) {
    lua_pushstring(L, e->source ? e->source : "<unknown>");
    lua_setfield(L, -2, "source");
    set_line_col(L, e->span);
  }
  lua_createtable(L, e ? (int)e->nnotes : 0, 0);
  for (uint32_t i = 0; e && i < e->nnotes; i++) {
    lua_createtable(L, 0, 3);
    lua_pushstring(L, e->notes[i].msg);
    lua_setfield(L, -2, "message");
    set_line_col(L, e->notes[i].span);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "notes");
  if (luaL_newmetatable(L, ERROR_META)) {
    lua_pushcfunction(L, error_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushstring(L, "devplan.Error");
    lua_setfield(L, -2, "__name");
  }
  lua_setmetatable(L, -2);
  dp_err_free(e);
}

/* The string on top appended to the string at slot acc (popped). */
static void cat(lua_State *L, int acc) {
  lua_pushvalue(L, acc);
  lua_insert(L, -2);
  lua_concat(L, 2);
  lua_replace(L, acc);
}

/* "line:col: " of the table at idx appended to acc, when it has an integer line. */
static void cat_position(lua_State *L, int acc, int idx) {
  lua_getfield(L, idx, "line");
  lua_getfield(L, idx, "col");
  if (lua_isinteger(L, -2)) {
    lua_pushfstring(L, "%d:%d: ", (int)lua_tointeger(L, -2), lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : 0);
    cat(L, acc);
  }
  lua_pop(L, 2);
}

static const char *string_field(lua_State *L, int idx, const char *key, const char *dflt) {
  int t = lua_getfield(L, idx, key);
  const char *s = t == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  lua_pop(L, 1); /* the table keeps the string alive */
  if (t != LUA_TSTRING && t != LUA_TNIL)
    luaL_error(L, "devplan.Error: field '%s' must be a string, got %s", key, lua_typename(L, t));
  return s ? s : dflt;
}

/* dp.Error{message =, code = "error", source =, line =, col =, notes = {{message =, line =, col =}}}:
   the table made a devplan.Error (not raised), its `formatted` text as
   dp_err_format writes it. For passes and tools written in Lua. */
int dp_lua_error_new(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  const char *msg = string_field(L, 1, "message", NULL);
  if (!msg) return luaL_argerror(L, 1, "devplan.Error: a string 'message' is needed");
  const char *code = string_field(L, 1, "code", "error");
  int known = 0;
  for (size_t i = 1; i < sizeof code_names / sizeof code_names[0] && !known; i++)
    known = strcmp(code, code_names[i]) == 0;
  if (!known) return luaL_argerror(L, 1, lua_pushfstring(L, "devplan.Error: unknown code '%s'", code));
  lua_pushstring(L, code);
  lua_setfield(L, 1, "code");
  lua_pushliteral(L, ""); /* slot 2: the formatted text */
  lua_getfield(L, 1, "line");
  int positioned = lua_isinteger(L, -1);
  lua_pop(L, 1);
  if (positioned) {
    lua_pushstring(L, string_field(L, 1, "source", "<unknown>"));
    cat(L, 2);
    lua_pushliteral(L, ":");
    cat(L, 2);
    cat_position(L, 2, 1);
  }
  lua_pushstring(L, msg);
  cat(L, 2);
  if (lua_getfield(L, 1, "notes") == LUA_TTABLE) { /* slot 3 */
    for (lua_Integer i = 1; lua_rawgeti(L, 3, i) == LUA_TTABLE; i++) { /* slot 4 */
      lua_pushliteral(L, "\n  ");
      cat(L, 2);
      cat_position(L, 2, 4);
      lua_pushstring(L, string_field(L, 4, "message", ""));
      cat(L, 2);
      lua_pop(L, 1);
    }
    lua_pop(L, 2);
  } else {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_setfield(L, 1, "notes");
  }
  lua_setfield(L, 1, "formatted");
  if (luaL_newmetatable(L, ERROR_META)) {
    lua_pushcfunction(L, error_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushstring(L, "devplan.Error");
    lua_setfield(L, -2, "__name");
  }
  lua_setmetatable(L, 1);
  return 1;
}

/* dp.is_error(v): is v a devplan.Error? */
int dp_lua_is_error(lua_State *L) {
  luaL_checkany(L, 1);
  int is = lua_getmetatable(L, 1) && luaL_getmetatable(L, ERROR_META) != LUA_TNIL && lua_rawequal(L, -1, -2);
  lua_pushboolean(L, is);
  return 1;
}

int dp_lua_error(lua_State *L, dp_err *e) {
  dp_lua_pusherror(L, e);
  return lua_error(L);
}

static int tostring_body(lua_State *L) {
  luaL_tolstring(L, 1, NULL);
  return 1;
}

/* A user's error value may have a __tostring that raises: converting it
   must not throw past the C code that caught the error. */
const char *dp_lua_errtext(lua_State *L) {
  if (lua_type(L, -1) == LUA_TSTRING) return lua_tostring(L, -1);
  lua_pushcfunction(L, tostring_body);
  lua_insert(L, -2);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK || lua_type(L, -1) != LUA_TSTRING) {
    lua_pop(L, 1);
    lua_pushliteral(L, "(an error value that cannot be printed)");
  }
  return lua_tostring(L, -1);
}

dp_err *dp_lua_toerr(lua_State *L, const char *what) {
  const char *msg = dp_lua_errtext(L);
  dp_err *e = dp_err_new(DP_ERR_CALLBACK, DP_NOSPAN, "%s%s%s", what ? what : "",
                         what ? ": " : "", msg ? msg : "error");
  lua_pop(L, 1);
  return e;
}

int dp_lua_check_device_type(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return 0;
  if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_Integer n = luaL_checkinteger(L, idx);
    if (n < -1 || n > 1024) luaL_argerror(L, idx, "device type out of range");
    return n < 0 ? 0 : (int)n;
  }
  const char *name = luaL_checkstring(L, idx);
  int t = dp_device_type_parse(name);
  if (t < 0) luaL_error(L, "unknown device type '%s'", name);
  return t;
}
