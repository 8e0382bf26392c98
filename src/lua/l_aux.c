/*
 * The binding's auxiliary library (see l_aux.h): the state's context,
 * userdata for core objects (weak cache, metatables), option tables and
 * spans, argument checks, errors.
 */
#include <stdlib.h>
#include <string.h>
#include "l_aux.h"

static const char CACHE_KEY[] = "devplan.cache";   /* weak: lightuserdata -> userdata */
static const char METAS_KEY[] = "devplan.metas";   /* objtype -> metatable */
static const char CTX_KEY[] = "devplan.ctx";
static const char ERROR_META[] = "devplan.Error";

static int obj_gc(lua_State *L) {
  dp__lud *u = lua_touserdata(L, 1);
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

dp_ctx *dp__lua_ctx(lua_State *L) {
  dp_ctx *ctx = NULL;
  if (lua_getfield(L, LUA_REGISTRYINDEX, CTX_KEY) == LUA_TUSERDATA) {
    dp_ctx **p = lua_touserdata(L, -1);
    ctx = *p;
  }
  lua_pop(L, 1);
  if (!ctx) {
    ctx = dp_ctx_new();
    if (ctx && dp_register_builtin_ops(ctx, NULL) < 0) ctx = (dp_ctx_close(ctx), NULL);
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

void dp__lua_newmeta(lua_State *L, int type, const char *name) {
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

void dp__lua_newclass(lua_State *L, int type, const char *name, lua_CFunction index,
                      lua_CFunction tostring) {
  dp__lua_newmeta(L, type, name);
  lua_pushcfunction(L, index);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}

void dp__lua_push(lua_State *L, void *p) {
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
  dp__lud *u = lua_newuserdatauv(L, sizeof *u, 0);
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

void dp__lua_push_owned(lua_State *L, void *obj) {
  dp__lua_push(L, obj);
  dp_release(obj);
}

int dp__lua_push_new(lua_State *L, void *obj, dp_err *err) {
  if (err) {
    dp_release(obj);
    return dp__lua_error(L, err);
  }
  if (!obj) return dp__lua_oom(L);
  dp__lua_push_owned(L, obj);
  return 1;
}

int dp__lua_push_lstr(lua_State *L, char *s, size_t len) {
  if (!s) return dp__lua_oom(L);
  lua_pushlstring(L, s, len);
  free(s);
  return 1;
}

int dp__lua_push_cstr(lua_State *L, char *s) {
  return dp__lua_push_lstr(L, s, s ? strlen(s) : 0);
}

void dp__lua_push_list(lua_State *L, void *const *items, uint32_t n) {
  lua_createtable(L, (int)n, 0);
  for (uint32_t i = 0; i < n; i++) {
    dp__lua_push(L, items[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

void dp__lua_subtable(lua_State *L, const char *name) {
  if (lua_getfield(L, -1, name) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, name);
}

dp_obj *dp__lua_testobj(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TUSERDATA || !lua_getmetatable(L, idx)) return NULL;
  int has = lua_getfield(L, -1, "__dp_type") == LUA_TNUMBER;
  lua_pop(L, 2);
  if (!has) return NULL;
  dp__lud *u = lua_touserdata(L, idx);
  return u ? u->obj : NULL;
}

void *dp__lua_test(lua_State *L, int idx, int type) {
  dp_obj *o = dp__lua_testobj(L, idx);
  return o && o->type == type ? o : NULL;
}

void *dp__lua_check(lua_State *L, int idx, int type) {
  void *o = dp__lua_test(L, idx, type);
  if (!o) {
    const char *want = dp_objtype_name(type);
    luaL_typeerror(L, idx, want ? want : "object");
  }
  return o;
}

int dp__lua_push_printed(lua_State *L, int idx, int flags) {
  dp_obj *o = dp__lua_testobj(L, idx);
  if (!o || (o->type != DP_OBJ_MODULE && o->type != DP_OBJ_EXPR))
    return luaL_typeerror(L, idx, "IRModule or expression");
  dp__lua_text t;
  dp__lua_text_init(L, &t);
  dp_print_opts opts = {flags, NULL, NULL, dp__lua_ctx(L), t.block};
  size_t len = 0;
  char *s = o->type == DP_OBJ_MODULE ? dp_print_module_with((dp_module *)o, &opts, &len)
                                     : dp_print_expr_with((dp_expr *)o, &opts, &len);
  return dp__lua_text_push(L, &t, s, len);
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

void dp__lua_push_error(lua_State *L, dp_err *e) {
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
int dp__lua_error_new(lua_State *L) {
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
int dp__lua_is_error(lua_State *L) {
  luaL_checkany(L, 1);
  int is = lua_getmetatable(L, 1) && luaL_getmetatable(L, ERROR_META) != LUA_TNIL && lua_rawequal(L, -1, -2);
  lua_pushboolean(L, is);
  return 1;
}

int dp__lua_error(lua_State *L, dp_err *e) {
  dp__lua_push_error(L, e);
  return lua_error(L);
}

int dp__lua_oom(lua_State *L) {
  return dp__lua_error(L, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
}

/* The text of the error value at 1, whatever a user's code raised: a
   string as it is, a value with __tostring through it, a table's string
   field `message`, else what the value is ("an error value that is a
   table, not a message"), never "table: 0x55...". */
static int tostring_body(lua_State *L) {
  int t = lua_type(L, 1);
  if (t == LUA_TNIL) {
    lua_pushliteral(L, "an error with no value (error(nil))");
    return 1;
  }
  if ((t == LUA_TTABLE || t == LUA_TUSERDATA) && luaL_getmetafield(L, 1, "__tostring") == LUA_TNIL) {
    if (t == LUA_TTABLE && lua_getfield(L, 1, "message") == LUA_TSTRING) return 1;
    lua_pushfstring(L, "an error value that is a %s, not a message", luaL_typename(L, 1));
    return 1;
  }
  luaL_tolstring(L, 1, NULL);
  return 1;
}

int dp__lua_error_text(lua_State *L) {
  luaL_checkany(L, 1);
  lua_settop(L, 1);
  dp__lua_errtext(L);
  return 1;
}

/* A user's error value may have a __tostring that raises: converting it
   must not throw past the C code that caught the error. */
const char *dp__lua_errtext(lua_State *L) {
  if (lua_type(L, -1) == LUA_TSTRING) return lua_tostring(L, -1);
  lua_pushcfunction(L, tostring_body);
  lua_insert(L, -2);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK || lua_type(L, -1) != LUA_TSTRING) {
    lua_pop(L, 1);
    lua_pushliteral(L, "(an error value that cannot be printed)");
  }
  return lua_tostring(L, -1);
}

dp_err *dp__lua_toerr(lua_State *L, const char *what) {
  const char *msg = dp__lua_errtext(L);
  dp_err *e = dp_err_new(DP_ERR_CALLBACK, DP_NOSPAN, "%s%s%s", what ? what : "",
                         what ? ": " : "", msg ? msg : "error");
  lua_pop(L, 1);
  return e;
}

/* ---------------- options and spans ---------------- */

void dp__lua_check_opts(lua_State *L, int idx) {
  int t = lua_type(L, idx);
  if (t != LUA_TNONE && t != LUA_TNIL && t != LUA_TTABLE)
    luaL_typeerror(L, idx, "table of options");
}

void dp__lua_check_opt_keys(lua_State *L, int idx, const char *const keys[], const char *who) {
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

int dp__lua_opt_field(lua_State *L, int idx, const char *key) {
  if (lua_type(L, idx) != LUA_TTABLE) {
    lua_pushnil(L);
    return LUA_TNIL;
  }
  return lua_getfield(L, idx, key);
}

int dp__lua_item(lua_State *L, int idx, lua_Integer i, const char *key) {
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

dp_span dp__lua_opt_span(lua_State *L, int idx) {
  dp_span s = DP_NOSPAN;
  if (lua_type(L, idx) != LUA_TTABLE) return s;
  idx = lua_absindex(L, idx);
  if (lua_getfield(L, idx, "span") == LUA_TTABLE) {
    int sp = lua_gettop(L);
    s.line = span_int(L, sp, "line");
    s.col = span_int(L, sp, "col");
    if (lua_getfield(L, sp, "source") == LUA_TSTRING &&
        !(s.source = dp_ctx_source(dp__lua_ctx(L), lua_tostring(L, -1))))
      dp__lua_oom(L);
    lua_pop(L, 1);
  } else if (!lua_isnil(L, -1)) {
    luaL_error(L, "opts.span must be a table {line=, col=, source=}");
  }
  lua_pop(L, 1);
  return s;
}

dp_span dp__lua_span_opts(lua_State *L, int idx) {
  static const char *const keys[] = {"span", NULL};
  dp__lua_check_opts(L, idx);
  dp__lua_check_opt_keys(L, idx, keys, "devplan");
  return dp__lua_opt_span(L, idx);
}

void dp__lua_push_span(lua_State *L, dp_span s) {
  if (s.line == 0) {
    lua_pushnil(L);
    return;
  }
  lua_createtable(L, 0, 3);
  lua_pushstring(L, dp_ctx_source_name(dp__lua_ctx(L), s.source));
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
  dp_obj *o = dp__lua_testobj(L, idx);
  if (o && o->type == DP_OBJ_EXPR) return lua_pushfstring(L, "a %s", dp_exprkind_name(o->kind));
  if (o && o->type == DP_OBJ_TYPE) return "a Type";
  if (o && o->type == DP_OBJ_PATTERN) return "a Pattern";
  if (o && o->type == DP_OBJ_MODULE) return "an IRModule";
  if (o && o->type == DP_OBJ_VDEV) return "a VirtualDevice";
  if (o) return "another devplan object";
  return luaL_typename(L, idx);
}

dp_expr *dp__lua_check_expr(lua_State *L, int idx) {
  dp_expr *e = dp__lua_test(L, idx, DP_OBJ_EXPR);
  if (!e)
    luaL_argerror(L, idx, lua_pushfstring(L, "expression expected, got %s", describe(L, idx)));
  return e;
}

dp_var *dp__lua_check_var(lua_State *L, int idx) {
  dp_expr *e = dp__lua_test(L, idx, DP_OBJ_EXPR);
  if (!e || e->h.kind != DP_VAR)
    luaL_argerror(L, idx, lua_pushfstring(L, "var expected, got %s", describe(L, idx)));
  return (dp_var *)e;
}

dp_type *dp__lua_check_type(lua_State *L, int idx) {
  dp_type *t = dp__lua_test(L, idx, DP_OBJ_TYPE);
  if (!t) luaL_argerror(L, idx, lua_pushfstring(L, "Type expected, got %s", describe(L, idx)));
  return t;
}

dp_type *dp__lua_opt_type(lua_State *L, int idx) {
  return lua_isnoneornil(L, idx) ? NULL : dp__lua_check_type(L, idx);
}

dp_vdev *dp__lua_opt_vdev(lua_State *L, int idx, const char *what) {
  if (lua_isnoneornil(L, idx)) return NULL;
  dp_vdev *v = dp__lua_test(L, idx, DP_OBJ_VDEV);
  if (!v) luaL_error(L, "%s must be a VirtualDevice, got %s", what, describe(L, idx));
  return v;
}

static const char *want_name(lua_State *L, int type, int kind) {
  if (type == DP_OBJ_EXPR && kind) return lua_pushfstring(L, "a %s", dp_exprkind_name(kind));
  if (type == DP_OBJ_EXPR) return "an expression";
  if (type == DP_OBJ_TYPE) return "a Type";
  if (type == DP_OBJ_PATTERN) return "a Pattern";
  if (type == DP_OBJ_TYPEDEF) return "a TypeDef";
  if (type == DP_OBJ_PRIMFN) return "a PrimFn";
  return "an object";
}

void **dp__lua_check_list(lua_State *L, int idx, int type, int kind, const char *what,
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
    dp_obj *o = dp__lua_testobj(L, -1);
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

void **dp__lua_opt_list(lua_State *L, int idx, int type, int kind, const char *what,
                       void **small, uint32_t nsmall, uint32_t *n) {
  *n = 0;
  if (lua_isnoneornil(L, idx)) return small;
  return dp__lua_check_list(L, idx, type, kind, what, small, nsmall, n);
}

void **dp__lua_opt_type_params(lua_State *L, int idx, void **small, uint32_t nsmall, uint32_t *n) {
  void **tp = dp__lua_opt_list(L, idx, DP_OBJ_TYPE, 0, "type_params", small, nsmall, n);
  for (uint32_t i = 0; i < *n; i++)
    if (((dp_type *)tp[i])->h.kind != DP_TY_VAR)
      luaL_argerror(L, idx, "type parameters must be type variables (dp.type.var)");
  return tp;
}

/* ---------------- hooks: a user's function called from C ---------------- */

/* (fn, a, b) with a and b light pointers to core objects: fn(a, b). */
static int hook_body(lua_State *L) {
  for (int i = 2; i <= 3; i++) {
    dp__lua_push(L, lua_touserdata(L, i));
    lua_replace(L, i);
  }
  lua_call(L, 2, 1);
  return 1;
}

int dp__lua_call_hook(lua_State *L, int idx, void *a, void *b, const char *what, dp_err **err) {
  if (!lua_checkstack(L, 4)) {
    *err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    return -1;
  }
  lua_pushcfunction(L, hook_body);
  lua_pushvalue(L, idx);
  lua_pushlightuserdata(L, a);
  lua_pushlightuserdata(L, b);
  if (lua_pcall(L, 3, 1, 0) != LUA_OK) {
    *err = dp__lua_toerr(L, what);
    return -1;
  }
  return 0;
}

int dp__lua_hook_number(lua_State *L, const char *what, const char *unit, double *out, dp_err **err) {
  int isnum = lua_type(L, -1) == LUA_TNUMBER;
  *out = isnum ? lua_tonumber(L, -1) : 0;
  lua_pop(L, 1);
  if (isnum) return 0;
  *err = dp_err_new(DP_ERR_CALLBACK, DP_NOSPAN, "%s must return %s", what, unit);
  return -1;
}
