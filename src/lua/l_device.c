/*
 * Lua binding of targets, virtual devices and the compilation configuration
 * (the fixed part of lua-api.md): dp.Target, dp.VirtualDevice (callable,
 * with .join and .default), dp.CompilationConfig, and dp.debug.counts().
 * Fields are read by name and tostring prints the core's text forms. The
 * objects are interned in C and pushed through dp__lua_push, so the same C
 * object is always the same (rawequal) Lua value.
 *
 * Building from Lua tables borrows strings from the Lua stack and keeps
 * temporary arrays in userdata, so a Lua error in the middle leaks nothing.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "l_init.h"

/* Raises a devplan.Error with code "value". */
static int value_error(lua_State *L, const char *fmt, const char *a, const char *b) {
  return dp__lua_error(L, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, fmt, a, b ? b : ""));
}

/* ---------------- targets ---------------- */

static dp_target *to_target(lua_State *L, int idx);

/* The declared type of option key for kind, or -1. */
static int declared_type(lua_State *L, const char *kind, const char *key) {
  dp_optkind type;
  const char *name;
  for (uint32_t i = 0; (name = dp_target_kind_option(dp__lua_ctx(L), kind, i, &type, NULL)); i++)
    if (!strcmp(name, key)) return (int)type;
  return -1;
}

static const char *type_words(int type) {
  switch (type) {
  case DP_OPT_INT: return "an integer";
  case DP_OPT_BOOL: return "a boolean";
  case DP_OPT_STRLIST: return "a list of strings";
  default: return "a string";
  }
}

/* A fraction: the core has no such value, so the error is made here (an
   undeclared option is left to the core, which names it). */
static void fraction(lua_State *L, const char *kind, const char *key, dp_target_opt *o) {
  int type = declared_type(L, kind, key);
  if (type >= 0)
    dp__lua_error(L, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                               "target option -%s of kind %s expects %s, got %s", key, kind,
                               type_words(type), lua_tostring(L, -1)));
  o->kind = DP_OPT_INT;
}

/* A list option: items borrowed from the list (anchored by the table). */
static void list_value(lua_State *L, const char *kind, const char *key, int anchor,
                       dp_target_opt *o) {
  int list = lua_gettop(L);
  lua_Integer n = (lua_Integer)lua_rawlen(L, list), count = 0;
  lua_pushnil(L);
  while (lua_next(L, list)) count++, lua_pop(L, 1);
  if (count != n) /* keys other than 1..n: a map (TVM's test_config_map) */
    dp__lua_error(L, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                               "target option -%s of kind %s: a table with keys is not an option "
                               "value (a list of strings is)", key, kind));
  o->kind = DP_OPT_STRLIST;
  o->items = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *o->items, 0);
  lua_rawseti(L, anchor, (lua_Integer)lua_rawlen(L, anchor) + 1);
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_rawgeti(L, list, i) != LUA_TSTRING)
      dp__lua_error(L, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                                 "target option -%s of kind %s: a list holds strings only, got %s",
                                 key, kind, luaL_typename(L, -1)));
    o->items[i - 1] = (char *)lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  o->nitems = (uint32_t)n;
}

/* One option value at the top of the stack into *o (strings stay in the
   table; arrays made here are userdata in the anchor table). */
static void option_value(lua_State *L, const char *kind, const char *key, int anchor,
                         dp_target_opt *o) {
  o->key = (char *)key;
  switch (lua_type(L, -1)) {
  case LUA_TSTRING: o->kind = DP_OPT_STR; o->str = (char *)lua_tostring(L, -1); return;
  case LUA_TBOOLEAN: o->kind = DP_OPT_BOOL; o->num = lua_toboolean(L, -1); return;
  case LUA_TNUMBER:
    if (!lua_isinteger(L, -1)) return fraction(L, kind, key, o);
    o->kind = DP_OPT_INT;
    o->num = lua_tointeger(L, -1);
    return;
  case LUA_TTABLE: list_value(L, kind, key, anchor, o); return;
  default:
    dp__lua_error(L, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                               "target option -%s of kind %s: expects a string, integer, boolean "
                               "or list, got %s", key, kind, luaL_typename(L, -1)));
  }
}

/* dp.Target{kind = "cuda", host = ..., arch = "sm_80", keys = {...}, ...} */
static dp_target *target_from_table(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  dp_err *e = NULL;
  if (lua_getfield(L, idx, "kind") != LUA_TSTRING)
    dp__lua_error(L, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                               "Target{...}: the field 'kind' must be a target kind name (\"cuda\", "
                               "\"llvm\", ...), got %s", luaL_typename(L, -1)));
  const char *kind = lua_tostring(L, -1); /* anchored by the table */
  lua_pop(L, 1);
  if (dp_target_kind_device_type(dp__lua_ctx(L), kind) < 0) {
    dp_target_make(dp__lua_ctx(L), kind, NULL, 0, NULL, &e); /* fails: the core's message */
    dp__lua_error(L, e);
  }
  int ht = lua_getfield(L, idx, "host");
  if (ht != LUA_TNIL && ht != LUA_TSTRING && ht != LUA_TTABLE && !dp__lua_test(L, -1, DP_OBJ_TARGET))
    dp__lua_error(L, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                               "Target{...}: the field 'host' must be a Target, a target string or "
                               "a table, got %s", luaL_typename(L, -1)));
  dp_target *host = ht == LUA_TNIL ? NULL : to_target(L, lua_gettop(L));
  int hostslot = lua_gettop(L);
  size_t cap = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) cap++, lua_pop(L, 1);
  dp_target_opt *opts = lua_newuserdatauv(L, (cap ? cap : 1) * sizeof *opts, 0);
  memset(opts, 0, (cap ? cap : 1) * sizeof *opts);
  lua_newtable(L); /* anchor for arrays made here */
  int anchor = lua_gettop(L);
  uint32_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING) {
      const char *type = luaL_typename(L, -2);
      dp__lua_error(L, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "Target{...}: option names must be strings, "
                                 "got the %s key %s", type, luaL_tolstring(L, -2, NULL)));
    }
    const char *key = lua_tostring(L, -2);
    if (strcmp(key, "kind") && strcmp(key, "host")) option_value(L, kind, key, anchor, &opts[n++]);
    lua_pop(L, 1);
  }
  dp_target *t = dp_target_make(dp__lua_ctx(L), kind, opts, n, host, &e);
  if (!t) dp__lua_error(L, e);
  lua_settop(L, hostslot - 1);
  return t;
}

/* The target described at idx (Target, string or table), anchored at idx:
   a new object replaces the description there, so the pointer stays valid
   while idx is on the stack. */
static dp_target *to_target(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  dp_target *t = dp__lua_test(L, idx, DP_OBJ_TARGET);
  if (t) return t;
  if (lua_type(L, idx) == LUA_TSTRING) {
    dp_err *e = NULL;
    t = dp_target_parse(dp__lua_ctx(L), lua_tostring(L, idx), &e);
    if (!t) dp__lua_error(L, e);
  } else if (lua_type(L, idx) == LUA_TTABLE) {
    t = target_from_table(L, idx);
  } else {
    luaL_typeerror(L, idx, "Target, target string or table");
  }
  dp__lua_push_owned(L, t);
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
  dp_target *t = dp__lua_check(L, 1, DP_OBJ_TARGET);
  dp_target *host = lua_isnoneornil(L, 2) ? NULL : to_target(L, 2);
  dp_err *e = NULL;
  dp_target *r = dp_target_with_host(t, host, &e);
  return dp__lua_push_new(L, r, e);
}

static int target_tostring(lua_State *L) {
  return dp__lua_push_cstr(L, dp_target_str(dp__lua_check(L, 1, DP_OBJ_TARGET)));
}

static void push_items(lua_State *L, const dp_target_opt *o) {
  lua_createtable(L, (int)o->nitems, 0);
  for (uint32_t i = 0; i < o->nitems; i++) {
    lua_pushstring(L, o->items[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

static void push_options(lua_State *L, const dp_target *t) {
  lua_createtable(L, 0, (int)t->nopts);
  for (uint32_t i = 0; i < t->nopts; i++) {
    const dp_target_opt *o = &t->opts[i];
    if (o->kind == DP_OPT_INT) lua_pushinteger(L, o->num);
    else if (o->kind == DP_OPT_BOOL) lua_pushboolean(L, (int)o->num);
    else if (o->kind == DP_OPT_STR) lua_pushstring(L, o->str);
    else push_items(L, o);
    lua_setfield(L, -2, o->key);
  }
}

static int target_index(lua_State *L) {
  dp_target *t = dp__lua_check(L, 1, DP_OBJ_TARGET);
  const char *k = luaL_checkstring(L, 2);
  if (!strcmp(k, "kind")) lua_pushstring(L, t->kind);
  else if (!strcmp(k, "device_type")) lua_pushinteger(L, t->device_type);
  else if (!strcmp(k, "device_type_name")) lua_pushstring(L, dp_device_type_name(t->device_type));
  else if (!strcmp(k, "host")) dp__lua_push(L, t->host);
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
  const char *name = lua_tostring(L, idx);
  int t = dp_device_type_parse(name);
  if (t < 0) {
    const char *best = dp_device_type_suggest(name);
    if (best) value_error(L, "unknown device type '%s'; did you mean '%s'?", name, best);
    value_error(L, "unknown device type '%s'%s", name, NULL);
  }
  return t;
}

/* A key of the table argument (#1 to dp.<what>) that is not one of known:
   API misuse, so an argument error naming the key, the closest known one
   and all of them. */
static void check_fields(lua_State *L, int idx, const char *what, const char *const *known) {
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    int ok = 0, is_string = lua_type(L, -1) == LUA_TSTRING;
    for (const char *const *k = known; is_string && *k && !ok; k++) ok = !strcmp(*k, lua_tostring(L, -1));
    if (ok) continue;
    const char *key = luaL_tolstring(L, -1, NULL);
    size_t n = 0;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (; known[n]; n++) {
      luaL_addstring(&b, n ? ", " : "");
      luaL_addstring(&b, known[n]);
    }
    luaL_pushresult(&b);
    const char *best = is_string ? dp_suggest_in(key, known, n) : NULL;
    luaL_error(L, "bad argument #1 to '%s' (unknown key '%s'%s%s%s known keys: %s)", what, key,
               best ? "; did you mean '" : "", best ? best : "", best ? "'?" : ";", lua_tostring(L, -1));
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
  dp_vdev *v = dp_vdev_make(dp__lua_ctx(L), type, (int)id, target, lua_tostring(L, 6), &e);
  return dp__lua_push_new(L, v, e);
}

static int vdev_join(lua_State *L) {
  dp_vdev *a = dp__lua_check(L, 1, DP_OBJ_VDEV), *b = dp__lua_check(L, 2, DP_OBJ_VDEV);
  dp__lua_push_owned(L, dp_vdev_join(a, b)); /* nil when no join exists */
  return 1;
}

static int vdev_default(lua_State *L) {
  dp_vdev *a = dp__lua_check(L, 1, DP_OBJ_VDEV), *b = dp__lua_check(L, 2, DP_OBJ_VDEV);
  return dp__lua_push_new(L, dp_vdev_default(a, b), NULL);
}

static int vdev_is_fully_unconstrained(lua_State *L) {
  lua_pushboolean(L, dp_vdev_is_fully_unconstrained(dp__lua_check(L, 1, DP_OBJ_VDEV)));
  return 1;
}

static int vdev_is_fully_constrained(lua_State *L) {
  lua_pushboolean(L, dp_vdev_is_fully_constrained(dp__lua_check(L, 1, DP_OBJ_VDEV)));
  return 1;
}

static int vdev_tostring(lua_State *L) {
  return dp__lua_push_cstr(L, dp_vdev_str(dp__lua_check(L, 1, DP_OBJ_VDEV)));
}

static int vdev_index(lua_State *L) {
  dp_vdev *v = dp__lua_check(L, 1, DP_OBJ_VDEV);
  const char *k = luaL_checkstring(L, 2);
  if (!strcmp(k, "device_type")) lua_pushinteger(L, v->device_type);
  else if (!strcmp(k, "device_type_name")) lua_pushstring(L, dp_device_type_name(v->device_type));
  else if (!strcmp(k, "virtual_device_id")) lua_pushinteger(L, v->virtual_device_id);
  else if (!strcmp(k, "target")) dp__lua_push(L, v->target);
  else if (!strcmp(k, "memory_scope")) lua_pushstring(L, v->memory_scope);
  else if (!strcmp(k, "is_fully_unconstrained")) lua_pushcfunction(L, vdev_is_fully_unconstrained);
  else if (!strcmp(k, "is_fully_constrained")) lua_pushcfunction(L, vdev_is_fully_constrained);
  else if (!strcmp(k, "join")) lua_pushcfunction(L, vdev_join);
  else if (!strcmp(k, "default")) lua_pushcfunction(L, vdev_default);
  else lua_pushnil(L);
  return 1;
}

/* ---------------- compilation configuration ---------------- */

/* The targets of a configuration at idx (a list of targets, or one string
   of comma-separated targets; a string in the list may hold several too)
   appended to the list at `out`. */
static void config_targets(lua_State *L, int idx, int out) {
  if (lua_type(L, idx) == LUA_TSTRING) {
    uint32_t n;
    dp_err *e = NULL;
    dp_target **ts = dp_targets_parse(dp__lua_ctx(L), lua_tostring(L, idx), &n, &e);
    if (!ts) dp__lua_error(L, e);
    for (uint32_t i = 0; i < n; i++) {
      dp__lua_push(L, ts[i]);
      lua_rawseti(L, out, (lua_Integer)lua_rawlen(L, out) + 1);
    }
    dp_targets_free(ts, n);
    return;
  }
  if (!lua_istable(L, idx))
    value_error(L, "CompilationConfig: 'targets' must be a list of targets or a string%s", "", NULL);
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_rawgeti(L, idx, i) == LUA_TSTRING) {
      config_targets(L, lua_gettop(L), out);
    } else {
      to_target(L, lua_gettop(L));
      lua_rawseti(L, out, (lua_Integer)lua_rawlen(L, out) + 1);
      continue;
    }
    lua_pop(L, 1);
  }
}

/* The default device type at idx: nil when not given (0); else a device
   type, 0 and -1 being invalid here. */
static int default_device_type(lua_State *L, int idx) {
  if (lua_isnil(L, idx)) return 0;
  int t = device_type_arg(L, idx);
  if (t <= 0)
    value_error(L, "CompilationConfig: invalid default device type %s (device types are 1 and up: "
                "cpu = 1, cuda = 2, ...)%s", luaL_tolstring(L, idx, NULL), NULL);
  return t;
}

/* A bandwidth value at idx (what names it: "'bandwidth'", "bandwidth
   'cpu->cuda'"): a number of bytes per second > 0 and finite, the rule of
   every bandwidth (dp_bandwidth_ok; PlanDevices' option alike). */
static double bandwidth_number(lua_State *L, int idx, const char *what) {
  int isnum = lua_type(L, idx) == LUA_TNUMBER;
  double v = isnum ? lua_tonumber(L, idx) : 0;
  if (!isnum || !dp_bandwidth_ok(v)) {
    char got[64];
    if (isnum && v != v) snprintf(got, sizeof got, "nan");
    else if (isnum) snprintf(got, sizeof got, "%g", v);
    else snprintf(got, sizeof got, "a %s", luaL_typename(L, idx));
    dp__lua_error(L, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "CompilationConfig: %s must be a number of bytes "
                                "per second > 0 and finite, got %s", what, got));
  }
  return v;
}

/* cfg (at cfg_idx) with the bandwidths at idx: a number (every pair), or
   {["cpu->cuda"] = bytes/s, ["*->cpu"] = ..., default = ...}. Replaces
   the configuration at cfg_idx. */
static void config_bandwidths(lua_State *L, int idx, int cfg_idx) {
  double dflt = 0;
  uint32_t n = 0;
  dp_bandwidth *bw = NULL;
  if (lua_type(L, idx) == LUA_TNUMBER) {
    dflt = bandwidth_number(L, idx, "'bandwidth'");
  } else if (lua_istable(L, idx)) {
    lua_Integer cap = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) cap++, lua_pop(L, 1);
    bw = lua_newuserdatauv(L, (size_t)(cap ? cap : 1) * sizeof *bw, 0); /* anchored */
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      if (lua_type(L, -2) != LUA_TSTRING)
        value_error(L, "CompilationConfig: bandwidth keys are \"SRC->DST\" strings or default%s", "", NULL);
      const char *key = lua_tostring(L, -2);
      if (!strcmp(key, "default")) {
        dflt = bandwidth_number(L, -1, "bandwidth 'default'");
      } else {
        dp_err *e = NULL;
        if (dp_bandwidth_key(key, &bw[n].src, &bw[n].dst, &e) < 0) dp__lua_error(L, e);
        lua_pushfstring(L, "bandwidth '%s'", key); /* (popped with the value) */
        bw[n++].bytes_per_second = bandwidth_number(L, -2, lua_tostring(L, -1));
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
  } else {
    value_error(L, "CompilationConfig: 'bandwidth' must be a number or a table "
                "{[\"cpu->cuda\"] = bytes per second, default = ...}, got %s", luaL_typename(L, idx), NULL);
  }
  dp_err *e = NULL;
  dp_config *c = dp_config_with_bandwidths(dp__lua_check(L, cfg_idx, DP_OBJ_CONFIG), bw, n, dflt, &e);
  if (!c) dp__lua_error(L, e);
  dp__lua_push_owned(L, c);
  lua_replace(L, cfg_idx);
}

/* cfg (at cfg_idx) with the memory budgets at idx: {cuda = bytes or
   "2GiB", ...} (device type names). Replaces the configuration at cfg_idx. */
static void config_memory(lua_State *L, int idx, int cfg_idx) {
  if (!lua_istable(L, idx))
    value_error(L, "CompilationConfig: 'memory' must be a table {cuda = bytes, ...}, got %s",
                luaL_typename(L, idx), NULL);
  lua_Integer cap = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) cap++, lua_pop(L, 1);
  dp_memory_budget *mb = lua_newuserdatauv(L, (size_t)(cap ? cap : 1) * sizeof *mb, 0); /* anchored */
  uint32_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      value_error(L, "CompilationConfig: memory budgets are keyed by device type names (cuda = bytes)%s", "", NULL);
    const char *key = lua_tostring(L, -2);
    int t = dp_device_type_parse(key);
    if (t <= 0) {
      const char *best = dp_device_type_suggest(key);
      lua_pushfstring(L, "CompilationConfig: unknown device type '%s' in 'memory'%s%s%s", key,
                      best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
      value_error(L, "%s", lua_tostring(L, -1), NULL);
    }
    double bytes = 0;
    if (lua_type(L, -1) == LUA_TNUMBER) bytes = lua_tonumber(L, -1);
    else if (lua_type(L, -1) != LUA_TSTRING || dp_bytes_parse(lua_tostring(L, -1), &bytes) < 0)
      value_error(L, "CompilationConfig: the memory budget of %s must be a number of bytes or a size "
                  "such as \"2GiB\" or \"512MB\"", key, NULL);
    mb[n++] = (dp_memory_budget){t, bytes};
    lua_pop(L, 1);
  }
  dp_err *e = NULL;
  dp_config *c = dp_config_with_memory(dp__lua_check(L, cfg_idx, DP_OBJ_CONFIG), mb, n, &e);
  if (!c) dp__lua_error(L, e);
  dp__lua_push_owned(L, c);
  lua_replace(L, cfg_idx);
}

/* dp.CompilationConfig{targets = {...} or "cuda,llvm", host = t?, default_device_type = d?,
   bandwidth = n or {["cpu->cuda"] = n, default = n}?, memory = {cuda = bytes, ...}?} */
static int config_new(lua_State *L) {
  static const char *const fields[] = {"targets", "host", "default_device_type", "bandwidth", "memory", NULL};
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  check_fields(L, 1, "CompilationConfig", fields);
  lua_getfield(L, 1, "targets");             /* 2 */
  lua_getfield(L, 1, "host");                /* 3 */
  lua_getfield(L, 1, "default_device_type"); /* 4 */
  lua_newtable(L);                           /* 5: the targets, anchored */
  if (!lua_isnil(L, 2)) config_targets(L, 2, 5);
  dp_target *host = lua_isnil(L, 3) ? NULL : to_target(L, 3);
  int dtype = default_device_type(L, 4);
  int n = (int)lua_rawlen(L, 5);
  dp_target **ts = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *ts, 0); /* 6 */
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 5, i);
    ts[i - 1] = dp__lua_test(L, -1, DP_OBJ_TARGET);
    lua_pop(L, 1);
  }
  dp_err *e = NULL;
  dp_config *c = dp_config_make(dp__lua_ctx(L), ts, (uint32_t)n, host, dtype, &e);
  dp__lua_push_new(L, c, e); /* 7 */
  lua_getfield(L, 1, "bandwidth"); /* 8 */
  if (!lua_isnil(L, 8)) config_bandwidths(L, 8, 7);
  lua_settop(L, 7);
  lua_getfield(L, 1, "memory"); /* 8 */
  if (!lua_isnil(L, 8)) config_memory(L, 8, 7);
  lua_settop(L, 7);
  return 1;
}

/* config.memory: nil, or {cuda = bytes, ...} as given. */
static void push_memory(lua_State *L, const dp_config *c) {
  if (!c->nmemory) {
    lua_pushnil(L);
    return;
  }
  lua_createtable(L, 0, (int)c->nmemory);
  for (uint32_t i = 0; i < c->nmemory; i++) {
    lua_pushnumber(L, c->memory[i].bytes);
    lua_setfield(L, -2, dp_device_type_name(c->memory[i].device_type));
  }
}

/* config.bandwidth: nil, or {["cpu->cuda"] = n, default = n} as given. */
static void push_bandwidths(lua_State *L, const dp_config *c) {
  if (!dp_config_has_bandwidths(c)) {
    lua_pushnil(L);
    return;
  }
  lua_createtable(L, 0, (int)c->nbandwidths + 1);
  for (uint32_t i = 0; i < c->nbandwidths; i++) {
    const dp_bandwidth *b = &c->bandwidths[i];
    lua_pushfstring(L, "%s->%s", b->src ? dp_device_type_name(b->src) : "*",
                    b->dst ? dp_device_type_name(b->dst) : "*");
    lua_pushnumber(L, b->bytes_per_second);
    lua_rawset(L, -3);
  }
  if (c->default_bandwidth > 0) {
    lua_pushnumber(L, c->default_bandwidth);
    lua_setfield(L, -2, "default");
  }
}

static int config_canonical(lua_State *L) {
  dp_config *c = dp__lua_check(L, 1, DP_OBJ_CONFIG);
  dp_vdev *v = dp__lua_check(L, 2, DP_OBJ_VDEV);
  dp_err *e = NULL;
  dp_vdev *r = dp_config_canonical(c, v, &e);
  return dp__lua_push_new(L, r, e);
}

static int config_tostring(lua_State *L) {
  dp_config *c = dp__lua_check(L, 1, DP_OBJ_CONFIG);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "CompilationConfig(targets=[");
  for (uint32_t i = 0; i < c->ntargets; i++) {
    char *s = dp_target_brief(c->primitive_targets[i]);
    if (!s) return dp__lua_oom(L);
    if (i) luaL_addstring(&b, ", ");
    luaL_addchar(&b, '"');
    luaL_addstring(&b, s);
    luaL_addchar(&b, '"');
    free(s);
  }
  char *h = dp_vdev_str(c->host_vdev), *d = h ? dp_vdev_str(c->default_vdev) : NULL;
  if (!d) {
    free(h);
    return dp__lua_oom(L);
  }
  lua_pushfstring(L, "], host=%s, default=%s", h, d);
  free(h);
  free(d);
  luaL_addvalue(&b);
  if (dp_config_has_bandwidths(c)) {
    char num[64];
    luaL_addstring(&b, ", bandwidth={");
    for (uint32_t i = 0; i < c->nbandwidths; i++) {
      const dp_bandwidth *p = &c->bandwidths[i];
      snprintf(num, sizeof num, "%.6g", p->bytes_per_second);
      lua_pushfstring(L, "%s\"%s->%s\"=%s", i ? ", " : "", p->src ? dp_device_type_name(p->src) : "*",
                      p->dst ? dp_device_type_name(p->dst) : "*", num);
      luaL_addvalue(&b);
    }
    if (c->default_bandwidth > 0) {
      snprintf(num, sizeof num, "%.6g", c->default_bandwidth);
      lua_pushfstring(L, "%sdefault=%s", c->nbandwidths ? ", " : "", num);
      luaL_addvalue(&b);
    }
    luaL_addchar(&b, '}');
  }
  if (c->nmemory) {
    char num[64];
    luaL_addstring(&b, ", memory={");
    for (uint32_t i = 0; i < c->nmemory; i++) {
      snprintf(num, sizeof num, "%.6g", c->memory[i].bytes);
      lua_pushfstring(L, "%s%s=%s", i ? ", " : "", dp_device_type_name(c->memory[i].device_type), num);
      luaL_addvalue(&b);
    }
    luaL_addchar(&b, '}');
  }
  luaL_addchar(&b, ')');
  luaL_pushresult(&b);
  return 1;
}

static int config_index(lua_State *L) {
  dp_config *c = dp__lua_check(L, 1, DP_OBJ_CONFIG);
  const char *k = luaL_checkstring(L, 2);
  if (!strcmp(k, "host_target")) dp__lua_push(L, c->host_target);
  else if (!strcmp(k, "host_virtual_device")) dp__lua_push(L, c->host_vdev);
  else if (!strcmp(k, "default_virtual_device")) dp__lua_push(L, c->default_vdev);
  else if (!strcmp(k, "default_device_type")) lua_pushinteger(L, c->default_device_type);
  else if (!strcmp(k, "primitive_targets"))
    dp__lua_push_list(L, (void *const *)c->primitive_targets, c->ntargets);
  else if (!strcmp(k, "canonical")) lua_pushcfunction(L, config_canonical);
  else if (!strcmp(k, "bandwidth")) push_bandwidths(L, c);
  else if (!strcmp(k, "memory")) push_memory(L, c);
  else lua_pushnil(L);
  return 1;
}

/* ---------------- the kinds ---------------- */

static const char *type_key(dp_optkind t) {
  switch (t) {
  case DP_OPT_INT: return "int";
  case DP_OPT_BOOL: return "bool";
  case DP_OPT_STRLIST: return "list";
  default: return "string";
  }
}

/* The description of kind at the top of the stack: {name =, device_type =,
   device_type_name =, keys = {...}, options = {name = type}, defaults =
   {name = default as a target string writes it}, registered = bool}. */
static void push_kind(lua_State *L, const char *kind) {
  dp_ctx *ctx = dp__lua_ctx(L);
  lua_createtable(L, 0, 7);
  lua_pushstring(L, kind);
  lua_setfield(L, -2, "name");
  int dt = dp_target_kind_device_type(ctx, kind);
  lua_pushinteger(L, dt);
  lua_setfield(L, -2, "device_type");
  lua_pushstring(L, dp_device_type_name(dt));
  lua_setfield(L, -2, "device_type_name");
  lua_pushboolean(L, dp_target_kind_registered(ctx, kind));
  lua_setfield(L, -2, "registered");
  lua_newtable(L);
  const char *keys = dp_target_kind_keys(ctx, kind);
  for (int k = 1; keys && *keys; k++) {
    const char *comma = strchr(keys, ',');
    size_t len = comma ? (size_t)(comma - keys) : strlen(keys);
    lua_pushlstring(L, keys, len);
    lua_rawseti(L, -2, k);
    keys += len + (comma != NULL);
  }
  lua_setfield(L, -2, "keys");
  lua_newtable(L);
  lua_newtable(L);
  dp_optkind type;
  const char *opt, *dflt;
  for (uint32_t j = 0; (opt = dp_target_kind_option(ctx, kind, j, &type, &dflt)); j++) {
    lua_pushstring(L, type_key(type));
    lua_setfield(L, -3, opt);
    if (dflt) {
      lua_pushstring(L, dflt);
      lua_setfield(L, -2, opt);
    }
  }
  lua_setfield(L, -3, "defaults");
  lua_setfield(L, -2, "options");
}

/* dp.target_kinds() -> { {name =, device_type =, keys = {...}, options = {name = type}, ...}, ... } */
static int target_kinds(lua_State *L) {
  const char *kind;
  lua_newtable(L);
  for (uint32_t i = 0; (kind = dp_target_kind_at(dp__lua_ctx(L), i)); i++) {
    push_kind(L, kind);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* An option default given in Lua as a target string writes it, pushed. */
static const char *default_text(lua_State *L, const char *kind, const char *name, dp_optkind type, int idx) {
  int t = lua_type(L, idx);
  if (type == DP_OPT_STR && t == LUA_TSTRING) return lua_pushstring(L, lua_tostring(L, idx));
  if (type == DP_OPT_INT && t == LUA_TNUMBER && lua_isinteger(L, idx))
    return lua_pushfstring(L, "%I", lua_tointeger(L, idx));
  if (type == DP_OPT_BOOL && t == LUA_TBOOLEAN) return lua_pushstring(L, lua_toboolean(L, idx) ? "true" : "false");
  if (type == DP_OPT_STRLIST && t == LUA_TTABLE) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    for (lua_Integer i = 1; i <= n; i++) {
      if (lua_rawgeti(L, idx, i) != LUA_TSTRING || strchr(lua_tostring(L, -1), ','))
        dp__lua_error(L, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "register_target_kind %s: the default of "
                                   "option '%s' is a list of strings without ','", kind, name));
      if (i > 1) luaL_addchar(&b, ',');
      luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    return lua_tostring(L, -1);
  }
  dp__lua_error(L, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "register_target_kind %s: the default of option "
                             "'%s' must be %s, got a %s", kind, name, type_words(type), luaL_typename(L, idx)));
  return NULL;
}

static dp_optkind option_type(lua_State *L, const char *kind, const char *name, int idx) {
  static const char *const names[] = {"string", "int", "bool", "list", NULL};
  static const dp_optkind types[] = {DP_OPT_STR, DP_OPT_INT, DP_OPT_BOOL, DP_OPT_STRLIST};
  const char *t = lua_type(L, idx) == LUA_TSTRING ? lua_tostring(L, idx) : NULL;
  for (int i = 0; t && names[i]; i++)
    if (!strcmp(t, names[i])) return types[i];
  dp__lua_error(L, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "register_target_kind %s: option '%s' needs a type: "
                             "\"string\", \"int\", \"bool\" or \"list\"", kind, name));
  return DP_OPT_STR;
}

/* dp.register_target_kind(name, {device_type =, options = {{name =, type =, default =}, ...},
   keys = {...}?}) -> the kind's description (as dp.target_kinds() gives it) */
static int register_target_kind(lua_State *L) {
  static const char *const fields[] = {"device_type", "options", "keys", NULL};
  static const char *const ofields[] = {"name", "type", "default", NULL};
  const char *name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  check_fields(L, 2, "register_target_kind", fields);
  lua_getfield(L, 2, "device_type"); /* 3 */
  if (lua_isnil(L, 3))
    dp__lua_error(L, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "register_target_kind %s: device_type is needed "
                               "(the device type its code runs on: \"cpu\", \"ext_dev\", ...)", name));
  int dt = device_type_arg(L, 3);
  lua_getfield(L, 2, "options"); /* 4 */
  if (!lua_isnil(L, 4) && !lua_istable(L, 4))
    value_error(L, "register_target_kind: options must be a list of {name =, type =, default =}%s", "", NULL);
  lua_Integer n = lua_isnil(L, 4) ? 0 : (lua_Integer)lua_rawlen(L, 4);
  dp_target_kind_opt *opts = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *opts, 0); /* 5 */
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_rawgeti(L, 4, i) != LUA_TTABLE)
      value_error(L, "register_target_kind: each option is a table {name =, type =, default =}%s", "", NULL);
    int o = lua_gettop(L);
    check_fields(L, o, "register_target_kind", ofields);
    lua_getfield(L, o, "name");
    if (lua_type(L, -1) != LUA_TSTRING)
      value_error(L, "register_target_kind: option %s needs a name (a string)", lua_tostring(L, -1), NULL);
    opts[i - 1].name = lua_tostring(L, -1); /* anchored by the option's table */
    lua_getfield(L, o, "type");
    opts[i - 1].type = option_type(L, name, opts[i - 1].name, lua_gettop(L));
    lua_getfield(L, o, "default");
    opts[i - 1].dflt = lua_isnil(L, -1) ? NULL : default_text(L, name, opts[i - 1].name, opts[i - 1].type, lua_gettop(L));
    if (opts[i - 1].dflt) lua_rawseti(L, o, 0); /* anchor the text in the option's table */
    lua_settop(L, o - 1);
  }
  lua_getfield(L, 2, "keys"); /* 6 */
  const char *keys = NULL;
  if (lua_istable(L, 6)) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_Integer nk = (lua_Integer)lua_rawlen(L, 6);
    for (lua_Integer i = 1; i <= nk; i++) {
      if (lua_rawgeti(L, 6, i) != LUA_TSTRING || strchr(lua_tostring(L, -1), ','))
        value_error(L, "register_target_kind: keys is a list of strings without ','%s", "", NULL);
      if (i > 1) luaL_addchar(&b, ',');
      luaL_addvalue(&b);
    }
    luaL_pushresult(&b); /* 7 */
    keys = lua_tostring(L, -1);
  } else if (!lua_isnil(L, 6)) {
    value_error(L, "register_target_kind: keys must be a list of strings, got %s", luaL_typename(L, 6), NULL);
  }
  dp_err *e = NULL;
  if (dp_target_kind_register(dp__lua_ctx(L), name, dt, opts, (uint32_t)n, keys, &e) < 0) dp__lua_error(L, e);
  push_kind(L, name);
  return 1;
}

/* ---------------- debug ---------------- */

static int debug_counts(lua_State *L) {
  size_t nt, nv, ny;
  dp_ctx_counts(dp__lua_ctx(L), &nt, &nv, &ny);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, (lua_Integer)nt);
  lua_setfield(L, -2, "targets");
  lua_pushinteger(L, (lua_Integer)nv);
  lua_setfield(L, -2, "virtual_devices");
  lua_pushinteger(L, (lua_Integer)ny);
  lua_setfield(L, -2, "types");
  return 1;
}

void dp__lua_open_device(lua_State *L) {
  dp__lua_newclass(L, DP_OBJ_TARGET, "devplan.Target", target_index, target_tostring);
  dp__lua_newclass(L, DP_OBJ_VDEV, "devplan.VirtualDevice", vdev_index, vdev_tostring);
  dp__lua_newclass(L, DP_OBJ_CONFIG, "devplan.CompilationConfig", config_index, config_tostring);
  lua_pushcfunction(L, target_new);
  lua_setfield(L, -2, "Target");
  lua_pushcfunction(L, target_kinds);
  lua_setfield(L, -2, "target_kinds");
  lua_pushcfunction(L, register_target_kind);
  lua_setfield(L, -2, "register_target_kind");
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
  dp__lua_subtable(L, "debug");
  lua_pushcfunction(L, debug_counts);
  lua_setfield(L, -2, "counts");
  lua_pop(L, 1);
}
