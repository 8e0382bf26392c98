/*
 * Types from Lua: the dp.type constructors and the fields of Type values.
 * Types are interned by the core, so equal types are one Lua value.
 */
#include <string.h>
#include "l_init.h"

static const char *const type_kinds[] = {NULL, "tensor", "tuple", "func", "var",
                                         "adt", "ref", "storage"};

static dp_dtype check_dtype(lua_State *L, int idx, const char *dflt) {
  const char *s = dflt ? luaL_optstring(L, idx, dflt) : luaL_checkstring(L, idx);
  dp_dtype d = dp_dtype_parse(s);
  if (!d) luaL_argerror(L, idx, lua_pushfstring(L, "unknown dtype '%s'", s));
  return d;
}

/* dp.type.tensor({5, 7}, "float32"): -1 or "?" for an unknown dimension. */
static int l_tensor(lua_State *L) {
  lua_settop(L, 2); /* fixed slots: scratch buffers go above */
  luaL_checktype(L, 1, LUA_TTABLE);
  dp_dtype dt = check_dtype(L, 2, "float32");
  lua_Unsigned n = lua_rawlen(L, 1);
  if (n > 1024) luaL_argerror(L, 1, "too many dimensions");
  int64_t dims[1024];
  for (lua_Unsigned i = 0; i < n; i++) {
    lua_rawgeti(L, 1, (lua_Integer)i + 1);
    if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= -1) {
      dims[i] = lua_tointeger(L, -1);
    } else if (lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "?") == 0) {
      dims[i] = DP_DIM_ANY;
    } else {
      luaL_argerror(L, 1, lua_pushfstring(L, "shape[%d] must be an integer >= 0, -1 or \"?\"",
                                          (int)i + 1));
    }
    lua_pop(L, 1);
  }
  return dp__lua_push_new(L, dp_type_tensor(dp__lua_ctx(L), dt, (uint32_t)n, dims), NULL);
}

static int l_scalar(lua_State *L) {
  lua_settop(L, 1); /* fixed slots: scratch buffers go above */
  dp_dtype dt = check_dtype(L, 1, "float32");
  return dp__lua_push_new(L, dp_type_tensor(dp__lua_ctx(L), dt, 0, NULL), NULL);
}

static int l_tuple(lua_State *L) {
  lua_settop(L, 1); /* fixed slots: scratch buffers go above */
  void *small[16];
  uint32_t n;
  void **f = dp__lua_check_list(L, 1, DP_OBJ_TYPE, 0, "fields", small, 16, &n);
  return dp__lua_push_new(L, dp_type_tuple(dp__lua_ctx(L), n, (dp_type *const *)f), NULL);
}

/* dp.type.func({args}, ret, {type_params}?) */
static int l_func(lua_State *L) {
  lua_settop(L, 3); /* fixed slots: scratch buffers go above */
  void *sa[16], *sp[8];
  uint32_t na, np;
  void **a = dp__lua_check_list(L, 1, DP_OBJ_TYPE, 0, "args", sa, 16, &na);
  dp_type *ret = dp__lua_check_type(L, 2);
  void **p = dp__lua_opt_type_params(L, 3, sp, 8, &np);
  return dp__lua_push_new(L, dp_type_func(dp__lua_ctx(L), np, (dp_type *const *)p, na,
                                       (dp_type *const *)a, ret), NULL);
}

static int l_ref(lua_State *L) {
  lua_settop(L, 1); /* fixed slots: scratch buffers go above */
  dp_type *t = dp__lua_check_type(L, 1);
  return dp__lua_push_new(L, dp_type_ref(dp__lua_ctx(L), t), NULL);
}

static int l_var(lua_State *L) {
  lua_settop(L, 1); /* fixed slots: scratch buffers go above */
  const char *name = luaL_optstring(L, 1, "t");
  return dp__lua_push_new(L, dp_type_var_new(dp__lua_ctx(L), name), NULL);
}

static int l_adt(lua_State *L) {
  lua_settop(L, 2); /* fixed slots: scratch buffers go above */
  const char *name = luaL_checkstring(L, 1);
  void *sa[8];
  uint32_t n;
  void **a = dp__lua_opt_list(L, 2, DP_OBJ_TYPE, 0, "args", sa, 8, &n);
  return dp__lua_push_new(L, dp_type_adt(dp__lua_ctx(L), name, n, (dp_type *const *)a), NULL);
}

static int l_hole(lua_State *L) {
  lua_settop(L, 0); /* fixed slots: scratch buffers go above */
  return dp__lua_push_new(L, dp_type_hole(dp__lua_ctx(L)), NULL);
}

static int l_storage(lua_State *L) {
  lua_settop(L, 0); /* fixed slots: scratch buffers go above */
  return dp__lua_push_new(L, dp_type_storage(dp__lua_ctx(L)), NULL);
}

/* ---------------- fields ---------------- */

static int push_tensor_field(lua_State *L, const dp_tensor_type *t, const char *k) {
  char buf[32];
  if (strcmp(k, "dtype") == 0) {
    lua_pushstring(L, dp_dtype_name(t->dtype, buf));
  } else if (strcmp(k, "shape") == 0) {
    lua_createtable(L, (int)t->ndim, 0);
    for (uint32_t i = 0; i < t->ndim; i++) {
      lua_pushinteger(L, t->dims[i]);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
  } else if (strcmp(k, "ndim") == 0) {
    lua_pushinteger(L, t->ndim);
  } else {
    return 0;
  }
  return 1;
}

static int push_field(lua_State *L, const dp_type *t, const char *k) {
  if (strcmp(k, "kind") == 0) {
    lua_pushstring(L, type_kinds[t->h.kind]);
    return 1;
  }
  if (strcmp(k, "has_hole") == 0) {
    lua_pushboolean(L, (t->h.flags & DP_TYPE_HOLE) != 0);
    return 1;
  }
  switch (t->h.kind) {
  case DP_TY_TENSOR:
    return push_tensor_field(L, (const dp_tensor_type *)t, k);
  case DP_TY_TUPLE: {
    const dp_tuple_type *tt = (const dp_tuple_type *)t;
    if (strcmp(k, "fields") != 0) return 0;
    dp__lua_push_list(L, (void *const *)tt->fields, tt->n);
    return 1;
  }
  case DP_TY_FUNC: {
    const dp_func_type *f = (const dp_func_type *)t;
    if (strcmp(k, "ret") == 0) dp__lua_push(L, f->ret);
    else if (strcmp(k, "args") == 0) dp__lua_push_list(L, (void *const *)f->items + f->ntparams, f->nargs);
    else if (strcmp(k, "type_params") == 0) dp__lua_push_list(L, (void *const *)f->items, f->ntparams);
    else return 0;
    return 1;
  }
  case DP_TY_VAR: {
    const dp_type_var *v = (const dp_type_var *)t;
    if (strcmp(k, "name") == 0) lua_pushstring(L, v->name);
    else if (strcmp(k, "id") == 0) lua_pushinteger(L, (lua_Integer)v->id);
    else return 0;
    return 1;
  }
  case DP_TY_ADT: {
    const dp_adt_type *a = (const dp_adt_type *)t;
    if (strcmp(k, "name") == 0) lua_pushstring(L, a->name);
    else if (strcmp(k, "args") == 0) dp__lua_push_list(L, (void *const *)a->args, a->nargs);
    else return 0;
    return 1;
  }
  case DP_TY_REF:
    if (strcmp(k, "elem") != 0) return 0;
    dp__lua_push(L, ((const dp_ref_type *)t)->elem);
    return 1;
  default:
    return 0;
  }
}

static int type_index(lua_State *L) {
  dp_type *t = dp__lua_check(L, 1, DP_OBJ_TYPE);
  const char *k = lua_tostring(L, 2);
  if (!k || !push_field(L, t, k)) lua_pushnil(L);
  return 1;
}

static int type_tostring(lua_State *L) {
  return dp__lua_push_cstr(L, dp_type_str(dp__lua_check(L, 1, DP_OBJ_TYPE)));
}

/* dp.type.bytes(t) -> n, or nil and "unknown" / "too large" (dp_type_bytes). */
static int l_bytes(lua_State *L) {
  dp_type *t = dp__lua_check(L, 1, DP_OBJ_TYPE);
  int64_t n;
  int r = dp_type_bytes(t, &n);
  if (r < 0) return dp__lua_oom(L);
  if (r == DP_BYTES_KNOWN) {
    lua_pushinteger(L, n);
    return 1;
  }
  lua_pushnil(L);
  lua_pushstring(L, r == DP_BYTES_UNKNOWN ? "unknown" : "too large");
  return 2;
}

void dp__lua_open_type(lua_State *L) {
  dp__lua_newclass(L, DP_OBJ_TYPE, "devplan.Type", type_index, type_tostring);
  static const luaL_Reg fns[] = {
    {"tensor", l_tensor}, {"scalar", l_scalar}, {"tuple", l_tuple}, {"func", l_func},
    {"ref", l_ref}, {"var", l_var}, {"adt", l_adt}, {"storage", l_storage}, {"hole", l_hole}, {"bytes", l_bytes},
    {NULL, NULL}};
  luaL_newlib(L, fns);
  lua_setfield(L, -2, "type");
}
