/*
 * Lua binding of targets, virtual devices and the compilation configuration
 * (the fixed part of lua-api.md): dp.Target, dp.VirtualDevice (callable,
 * with .join and .default), dp.CompilationConfig, and dp.debug.counts().
 * Fields are read by name and tostring prints the core's text forms. The
 * objects are interned in C and pushed through dp_lua_push, so the same C
 * object is always the same (rawequal) Lua value.
 *
 * Building from Lua tables borrows strings from the Lua stack and keeps
 * temporary arrays in userdata, so a Lua error in the middle leaks nothing.
 */
#include <stdlib.h>
#include <string.h>
#include "lbind.h"

/* Raises a devplan.Error with code "value". */
static int value_error(lua_State *L, const char *fmt, const char *a, const char *b) {
  return dp_lua_error(L, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, fmt, a, b ? b : ""));
}

/* ---------------- targets ---------------- */

static dp_target *to_target(lua_State *L, int idx);

/* One option value at the top of the stack into *o (strings stay on the
   stack or in the anchor table at `anchor`). */
static void option_value(lua_State *L, const char *key, int anchor, dp_target_opt *o) {
  o->key = (char *)key;
  switch (lua_type(L, -1)) {
  case LUA_TSTRING: o->kind = DP_OPT_STR; o->str = (char *)lua_tostring(L, -1); return;
  case LUA_TBOOLEAN: o->kind = DP_OPT_BOOL; o->num = lua_toboolean(L, -1); return;
  case LUA_TNUMBER:
    if (lua_isinteger(L, -1)) {
      o->kind = DP_OPT_INT;
      o->num = lua_tointeger(L, -1);
      return;
    }
    o->kind = DP_OPT_STR; /* a fraction: typing reports it for integer options */
    lua_pushvalue(L, -1);
    o->str = (char *)lua_tostring(L, -1);
    lua_rawseti(L, anchor, (lua_Integer)lua_rawlen(L, anchor) + 1);
    return;
  case LUA_TTABLE: {
    luaL_Buffer b;
    int n = (int)lua_rawlen(L, -1), list = lua_gettop(L);
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; i++) {
      if (i > 1) luaL_addchar(&b, ','); /* before the push: buffer use stays balanced */
      if (lua_rawgeti(L, list, i) != LUA_TSTRING)
        value_error(L, "target option %s: a list option holds strings only%s", key, NULL);
      luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    o->kind = DP_OPT_STRLIST;
    o->str = (char *)lua_tostring(L, -1);
    lua_rawseti(L, anchor, (lua_Integer)lua_rawlen(L, anchor) + 1);
    return;
  }
  default:
    value_error(L, "target option %s: expects a string, number, boolean or list, got %s", key,
                luaL_typename(L, -1));
  }
}

/* dp.Target{kind = "cuda", host = ..., arch = "sm_80", ...} */
static dp_target *target_from_table(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (lua_getfield(L, idx, "kind") != LUA_TSTRING)
    value_error(L, "Target{...}: the field 'kind' must be a string%s", "", NULL);
  const char *kind = lua_tostring(L, -1); /* anchored by the table */
  lua_pop(L, 1);
  lua_getfield(L, idx, "host");
  dp_target *host = lua_isnil(L, -1) ? NULL : to_target(L, lua_gettop(L));
  int hostslot = lua_gettop(L);
  size_t cap = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) cap++, lua_pop(L, 1);
  dp_target_opt *opts = lua_newuserdatauv(L, (cap ? cap : 1) * sizeof *opts, 0);
  memset(opts, 0, (cap ? cap : 1) * sizeof *opts);
  lua_newtable(L); /* anchor for strings made here */
  int anchor = lua_gettop(L);
  uint32_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      value_error(L, "Target{...}: option names must be strings%s", "", NULL);
    const char *key = lua_tostring(L, -2);
    if (strcmp(key, "kind") && strcmp(key, "host")) option_value(L, key, anchor, &opts[n++]);
    lua_pop(L, 1);
  }
  dp_err *e = NULL;
  dp_target *t = dp_target_make(dp_lua_ctx(L), kind, opts, n, host, &e);
  if (!t) dp_lua_error(L, e);
  lua_settop(L, hostslot - 1);
  return t;
}

/* The target described at idx (Target, string or table), anchored at idx:
   a new object replaces the description there, so the pointer stays valid
   while idx is on the stack. */
static dp_target *to_target(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  dp_target *t = dp_lua_test(L, idx, DP_OBJ_TARGET);
  if (t) return t;
  if (lua_type(L, idx) == LUA_TSTRING) {
    dp_err *e = NULL;
    t = dp_target_parse(dp_lua_ctx(L), lua_tostring(L, idx), &e);
    if (!t) dp_lua_error(L, e);
  } else if (lua_type(L, idx) == LUA_TTABLE) {
    t = target_from_table(L, idx);
  } else {
    luaL_typeerror(L, idx, "Target, target string or table");
  }
  dp_lua_push_owned(L, t);
  lua_replace(L, idx);
  return t;
}

static int target_new(lua_State *L) {
  luaL_checkany(L, 1);
  lua_settop(L, 1);
  to_target(L, 1);
  return 1;
}

static int target_with_host(lua_State *L) {
  dp_target *t = dp_lua_check(L, 1, DP_OBJ_TARGET);
  dp_target *host = lua_isnoneornil(L, 2) ? NULL : to_target(L, 2);
  dp_err *e = NULL;
  dp_target *r = dp_target_with_host(t, host, &e);
  return dp_lua_push_new(L, r, e);
}

static int target_tostring(lua_State *L) {
  return dp_lua_push_cstr(L, dp_target_str(dp_lua_check(L, 1, DP_OBJ_TARGET)));
}

static void push_options(lua_State *L, const dp_target *t) {
  lua_createtable(L, 0, (int)t->nopts);
  for (uint32_t i = 0; i < t->nopts; i++) {
    const dp_target_opt *o = &t->opts[i];
    if (o->kind == DP_OPT_INT) lua_pushinteger(L, o->num);
    else if (o->kind == DP_OPT_BOOL) lua_pushboolean(L, (int)o->num);
    else if (o->kind == DP_OPT_STR) lua_pushstring(L, o->str);
    else {
      /* a list: split the raw "a,b" form */
      lua_newtable(L);
      const char *p = o->str;
      for (int k = 1; *p; k++) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        lua_pushlstring(L, p, len);
        lua_rawseti(L, -2, k);
        p += len + (c != NULL);
      }
    }
    lua_setfield(L, -2, o->key);
  }
}

static int target_index(lua_State *L) {
  dp_target *t = dp_lua_check(L, 1, DP_OBJ_TARGET);
  const char *k = luaL_checkstring(L, 2);
  if (!strcmp(k, "kind")) lua_pushstring(L, t->kind);
  else if (!strcmp(k, "device_type")) lua_pushinteger(L, t->device_type);
  else if (!strcmp(k, "device_type_name")) lua_pushstring(L, dp_device_type_name(t->device_type));
  else if (!strcmp(k, "host")) dp_lua_push(L, t->host);
  else if (!strcmp(k, "options")) push_options(L, t);
  else if (!strcmp(k, "with_host")) lua_pushcfunction(L, target_with_host);
  else lua_pushnil(L);
  return 1;
}

/* ---------------- virtual devices ---------------- */

/* Device type at idx: a name, a number, or nil (0). Raises devplan.Error. */
static int device_type_arg(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return 0;
  if (lua_type(L, idx) == LUA_TNUMBER) {
    if (!lua_isinteger(L, idx)) value_error(L, "device_type must be an integer%s", "", NULL);
    lua_Integer n = lua_tointeger(L, idx);
    if (n < -1 || n > 1024) value_error(L, "device_type %s out of range%s", lua_tostring(L, idx), NULL);
    return n < 0 ? 0 : (int)n;
  }
  if (lua_type(L, idx) != LUA_TSTRING)
    value_error(L, "device_type must be a name or a number, got %s", luaL_typename(L, idx), NULL);
  int t = dp_device_type_parse(lua_tostring(L, idx));
  if (t < 0) value_error(L, "unknown device type '%s'%s", lua_tostring(L, idx), NULL);
  return t;
}

static void check_fields(lua_State *L, int idx, const char *what, const char *const *known) {
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    int ok = 0;
    if (lua_type(L, -1) == LUA_TSTRING)
      for (const char *const *k = known; *k && !ok; k++) ok = !strcmp(*k, lua_tostring(L, -1));
    if (!ok) value_error(L, "%s: unknown field '%s'", what, luaL_tolstring(L, -1, NULL));
  }
}

/* dp.VirtualDevice{device_type =, virtual_device_id =, target =, memory_scope =} */
static int vdev_call(lua_State *L) {
  static const char *const fields[] = {"device_type", "virtual_device_id", "target",
                                       "memory_scope", NULL};
  lua_settop(L, 2); /* 1: the VirtualDevice table, 2: fields */
  if (lua_isnil(L, 2)) lua_newtable(L), lua_replace(L, 2);
  luaL_checktype(L, 2, LUA_TTABLE);
  check_fields(L, 2, "VirtualDevice", fields);
  lua_getfield(L, 2, "device_type");        /* 3 */
  lua_getfield(L, 2, "virtual_device_id");  /* 4 */
  lua_getfield(L, 2, "target");             /* 5 */
  lua_getfield(L, 2, "memory_scope");       /* 6 */
  int type = device_type_arg(L, 3);
  lua_Integer id = -1;
  if (!lua_isnil(L, 4)) {
    if (!lua_isinteger(L, 4)) value_error(L, "virtual_device_id must be an integer%s", "", NULL);
    id = lua_tointeger(L, 4);
    if (id < -1 || id > 0x7fffffff)
      value_error(L, "virtual_device_id must be -1 (unconstrained) or >= 0, got %s",
                  lua_tostring(L, 4), NULL);
  }
  dp_target *target = lua_isnil(L, 5) ? NULL : to_target(L, 5);
  if (!lua_isnil(L, 6) && lua_type(L, 6) != LUA_TSTRING)
    value_error(L, "memory_scope must be a string%s", "", NULL);
  dp_err *e = NULL;
  dp_vdev *v = dp_vdev_make(dp_lua_ctx(L), type, (int)id, target, lua_tostring(L, 6), &e);
  return dp_lua_push_new(L, v, e);
}

static int vdev_join(lua_State *L) {
  dp_vdev *a = dp_lua_check(L, 1, DP_OBJ_VDEV), *b = dp_lua_check(L, 2, DP_OBJ_VDEV);
  dp_lua_push_owned(L, dp_vdev_join(a, b)); /* nil when no join exists */
  return 1;
}

static int vdev_default(lua_State *L) {
  dp_vdev *a = dp_lua_check(L, 1, DP_OBJ_VDEV), *b = dp_lua_check(L, 2, DP_OBJ_VDEV);
  return dp_lua_push_new(L, dp_vdev_default(a, b), NULL);
}

static int vdev_is_fully_unconstrained(lua_State *L) {
  lua_pushboolean(L, dp_vdev_is_fully_unconstrained(dp_lua_check(L, 1, DP_OBJ_VDEV)));
  return 1;
}

static int vdev_is_fully_constrained(lua_State *L) {
  lua_pushboolean(L, dp_vdev_is_fully_constrained(dp_lua_check(L, 1, DP_OBJ_VDEV)));
  return 1;
}

static int vdev_tostring(lua_State *L) {
  return dp_lua_push_cstr(L, dp_vdev_str(dp_lua_check(L, 1, DP_OBJ_VDEV)));
}

static int vdev_index(lua_State *L) {
  dp_vdev *v = dp_lua_check(L, 1, DP_OBJ_VDEV);
  const char *k = luaL_checkstring(L, 2);
  if (!strcmp(k, "device_type")) lua_pushinteger(L, v->device_type);
  else if (!strcmp(k, "device_type_name")) lua_pushstring(L, dp_device_type_name(v->device_type));
  else if (!strcmp(k, "virtual_device_id")) lua_pushinteger(L, v->virtual_device_id);
  else if (!strcmp(k, "target")) dp_lua_push(L, v->target);
  else if (!strcmp(k, "memory_scope")) lua_pushstring(L, v->memory_scope);
  else if (!strcmp(k, "is_fully_unconstrained")) lua_pushcfunction(L, vdev_is_fully_unconstrained);
  else if (!strcmp(k, "is_fully_constrained")) lua_pushcfunction(L, vdev_is_fully_constrained);
  else if (!strcmp(k, "join")) lua_pushcfunction(L, vdev_join);
  else if (!strcmp(k, "default")) lua_pushcfunction(L, vdev_default);
  else lua_pushnil(L);
  return 1;
}

/* ---------------- compilation configuration ---------------- */

/* dp.CompilationConfig{targets = {...}, host = t?, default_device_type = d?} */
static int config_new(lua_State *L) {
  static const char *const fields[] = {"targets", "host", "default_device_type", NULL};
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  check_fields(L, 1, "CompilationConfig", fields);
  lua_getfield(L, 1, "targets");             /* 2 */
  lua_getfield(L, 1, "host");                /* 3 */
  lua_getfield(L, 1, "default_device_type"); /* 4 */
  if (!lua_isnil(L, 2) && !lua_istable(L, 2))
    value_error(L, "CompilationConfig: 'targets' must be a list of targets%s", "", NULL);
  int n = lua_isnil(L, 2) ? 0 : (int)lua_rawlen(L, 2);
  dp_target *host = lua_isnil(L, 3) ? NULL : to_target(L, 3);
  int dtype = device_type_arg(L, 4);
  dp_target **ts = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *ts, 0); /* 5 */
  lua_createtable(L, n, 0);                                                   /* 6: anchors */
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 2, i);
    ts[i - 1] = to_target(L, lua_gettop(L));
    lua_rawseti(L, 6, i);
  }
  dp_err *e = NULL;
  dp_config *c = dp_config_make(dp_lua_ctx(L), ts, (uint32_t)n, host, dtype, &e);
  return dp_lua_push_new(L, c, e);
}

static int config_canonical(lua_State *L) {
  dp_config *c = dp_lua_check(L, 1, DP_OBJ_CONFIG);
  dp_vdev *v = dp_lua_check(L, 2, DP_OBJ_VDEV);
  dp_err *e = NULL;
  dp_vdev *r = dp_config_canonical(c, v, &e);
  return dp_lua_push_new(L, r, e);
}

static int config_tostring(lua_State *L) {
  dp_config *c = dp_lua_check(L, 1, DP_OBJ_CONFIG);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "CompilationConfig(targets=[");
  for (uint32_t i = 0; i < c->ntargets; i++) {
    char *s = dp_target_str(c->primitive_targets[i]);
    if (i) luaL_addstring(&b, ", ");
    luaL_addchar(&b, '"');
    luaL_addstring(&b, s ? s : "?");
    luaL_addchar(&b, '"');
    free(s);
  }
  char *h = dp_vdev_str(c->host_vdev), *d = dp_vdev_str(c->default_vdev);
  lua_pushfstring(L, "], host=%s, default=%s)", h ? h : "?", d ? d : "?");
  free(h);
  free(d);
  luaL_addvalue(&b);
  luaL_pushresult(&b);
  return 1;
}

static int config_index(lua_State *L) {
  dp_config *c = dp_lua_check(L, 1, DP_OBJ_CONFIG);
  const char *k = luaL_checkstring(L, 2);
  if (!strcmp(k, "host_target")) dp_lua_push(L, c->host_target);
  else if (!strcmp(k, "host_virtual_device")) dp_lua_push(L, c->host_vdev);
  else if (!strcmp(k, "default_virtual_device")) dp_lua_push(L, c->default_vdev);
  else if (!strcmp(k, "default_device_type")) lua_pushinteger(L, c->default_device_type);
  else if (!strcmp(k, "primitive_targets"))
    dp_lua_push_list(L, (void *const *)c->primitive_targets, c->ntargets);
  else if (!strcmp(k, "canonical")) lua_pushcfunction(L, config_canonical);
  else lua_pushnil(L);
  return 1;
}

/* ---------------- debug ---------------- */

static int debug_counts(lua_State *L) {
  size_t nt, nv, ny;
  dp_ctx_counts(dp_lua_ctx(L), &nt, &nv, &ny);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, (lua_Integer)nt);
  lua_setfield(L, -2, "targets");
  lua_pushinteger(L, (lua_Integer)nv);
  lua_setfield(L, -2, "virtual_devices");
  lua_pushinteger(L, (lua_Integer)ny);
  lua_setfield(L, -2, "types");
  return 1;
}

void dp_lua_open_device(lua_State *L) {
  dp_lua_newclass(L, DP_OBJ_TARGET, "devplan.Target", target_index, target_tostring);
  dp_lua_newclass(L, DP_OBJ_VDEV, "devplan.VirtualDevice", vdev_index, vdev_tostring);
  dp_lua_newclass(L, DP_OBJ_CONFIG, "devplan.CompilationConfig", config_index, config_tostring);
  lua_pushcfunction(L, target_new);
  lua_setfield(L, -2, "Target");
  lua_newtable(L); /* dp.VirtualDevice: callable, with join and default */
  lua_pushcfunction(L, vdev_join);
  lua_setfield(L, -2, "join");
  lua_pushcfunction(L, vdev_default);
  lua_setfield(L, -2, "default");
  lua_newtable(L);
  lua_pushcfunction(L, vdev_call);
  lua_setfield(L, -2, "__call");
  lua_setmetatable(L, -2);
  lua_setfield(L, -2, "VirtualDevice");
  lua_pushcfunction(L, config_new);
  lua_setfield(L, -2, "CompilationConfig");
  dp_lua_subtable(L, "debug");
  lua_pushcfunction(L, debug_counts);
  lua_setfield(L, -2, "counts");
  lua_pop(L, 1);
}
