/*
 * dp.onnx: importing ONNX models (C: src/import, include/devplan/onnx.h).
 *
 *   dp.onnx.load(path_or_bytes, {weights = "const" | "params" | "none",
 *                                shapes = {input = {1, 3, 224, 224}},
 *                                source = "name in errors"}) -> mod, info
 *
 * A string with a control character (every ONNX file has some: its tags
 * and lengths) is the model's bytes; any other string is a path. info.nodes
 * is the graph's node count; info.types
 * maps every ONNX value's name to the type devplan gave it; info.params,
 * with weights = "params", each weight parameter's name to its value (a
 * constant).
 */
#include <string.h>
#include "l_init.h"

static int is_bytes(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 1;
  return 0;
}

/* opts.shapes into a buffer the Lua GC owns (no C reference is taken before
   every check is done). */
static dp_onnx_shape *read_shapes(lua_State *L, int opts, uint32_t *n) {
  *n = 0;
  if (dp__lua_opt_field(L, opts, "shapes") == LUA_TNIL) {
    lua_pop(L, 1);
    return NULL;
  }
  int t = lua_gettop(L);
  if (!lua_istable(L, t)) luaL_error(L, "dp.onnx.load: shapes must be a table {input_name = {d1, d2, ...}}");
  uint32_t count = 0, ndims = 0;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    if (lua_type(L, -2) != LUA_TSTRING || !lua_istable(L, -1))
      luaL_error(L, "dp.onnx.load: shapes must map input names to lists of sizes");
    lua_Integer len = luaL_len(L, -1);
    if (len < 0 || len > 64) luaL_error(L, "dp.onnx.load: shapes[%s] has %d sizes (at most 64)", lua_tostring(L, -2), (int)len);
    count++;
    ndims += (uint32_t)len;
    lua_pop(L, 1);
  }
  size_t bytes = count * sizeof(dp_onnx_shape) + ndims * sizeof(int64_t);
  dp_onnx_shape *shapes = lua_newuserdatauv(L, bytes ? bytes : 1, 1);
  int64_t *dims = (int64_t *)(shapes + count);
  lua_createtable(L, (int)count, 0); /* keeps the name strings alive */
  lua_setiuservalue(L, -2, 1);
  lua_getiuservalue(L, -1, 1);
  int names = lua_gettop(L);
  uint32_t k = 0;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_Integer len = luaL_len(L, -1);
    shapes[k].name = lua_tostring(L, -2);
    shapes[k].ndim = (uint32_t)len;
    shapes[k].dims = dims;
    for (lua_Integer i = 1; i <= len; i++) {
      lua_geti(L, -1, i);
      int isnum;
      lua_Integer d = lua_tointegerx(L, -1, &isnum);
      if (!isnum || d < 0) luaL_error(L, "dp.onnx.load: shapes[%s][%d] must be a size (an integer >= 0)", shapes[k].name, (int)i);
      *dims++ = d;
      lua_pop(L, 1);
    }
    lua_pushvalue(L, -2);
    lua_rawseti(L, names, (lua_Integer)k + 1);
    k++;
    lua_pop(L, 1);
  }
  lua_pop(L, 1); /* names (held by the userdata) */
  lua_replace(L, t); /* the userdata stays on the stack where shapes was */
  *n = count;
  return shapes;
}

/* The import's info lives in a userdata whose __gc frees it, so a Lua error
   while it is copied into tables leaks nothing. */
static int info_gc(lua_State *L) {
  dp_onnx_info_free(lua_touserdata(L, 1));
  return 0;
}

static dp_onnx_info *new_info(lua_State *L) {
  dp_onnx_info *info = lua_newuserdatauv(L, sizeof *info, 0);
  *info = (dp_onnx_info){0};
  if (luaL_newmetatable(L, "devplan.onnx.info")) {
    lua_pushcfunction(L, info_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  return info;
}

static int l_load(lua_State *L) {
  static const char *const keys[] = {"weights", "shapes", "source", NULL};
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  dp__lua_check_opts(L, 2);
  dp__lua_check_opt_keys(L, 2, keys, "dp.onnx.load");
  dp_onnx_opts o = {0};
  static const char *const modes[] = {"const", "params", "none", NULL};
  dp__lua_opt_field(L, 2, "weights");
  if (!lua_isnil(L, -1)) {
    const char *w = lua_tostring(L, -1);
    int k = -1;
    for (int i = 0; w && modes[i]; i++)
      if (strcmp(w, modes[i]) == 0) k = i;
    if (k < 0) return luaL_error(L, "dp.onnx.load: weights must be \"const\", \"params\" or \"none\"");
    o.weights = (dp_onnx_weights)k;
  }
  lua_pop(L, 1);
  dp__lua_opt_field(L, 2, "source");
  if (!lua_isnil(L, -1) && !lua_isstring(L, -1)) return luaL_error(L, "dp.onnx.load: source must be a string");
  o.source = lua_tostring(L, -1); /* kept on the stack */
  o.shapes = read_shapes(L, 2, &o.nshapes);
  dp_ctx *ctx = dp__lua_ctx(L);
  dp_err *err = NULL;
  dp_onnx_info *ip = new_info(L), info;
  dp_module *m = is_bytes(s, len) ? dp_onnx_import(ctx, s, len, &o, ip, &err)
                                  : dp_onnx_import_file(ctx, s, &o, ip, &err);
  info = *ip;
  if (!m) return dp__lua_error(L, err ? err : dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  /* the module first: once on the stack, Lua owns it; then info is copied
     into tables (the userdata frees it, also after an error) */
  dp__lua_push_owned(L, m);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, info.nodes);
  lua_setfield(L, -2, "nodes");
  lua_createtable(L, 0, (int)info.nparams);
  for (uint32_t i = 0; i < info.nparams; i++) {
    dp__lua_push(L, info.params[i].value);
    lua_setfield(L, -2, info.params[i].name);
  }
  lua_setfield(L, -2, "params");
  lua_createtable(L, 0, (int)info.ntypes);
  for (uint32_t i = 0; i < info.ntypes; i++) {
    dp__lua_push(L, info.types[i].type);
    lua_setfield(L, -2, info.types[i].name);
  }
  lua_setfield(L, -2, "types");
  dp_onnx_info_free(ip);
  return 2;
}

void dp__lua_open_onnx(lua_State *L) {
  dp__lua_subtable(L, "onnx");
  lua_pushcfunction(L, l_load);
  lua_setfield(L, -2, "load");
  lua_pop(L, 1);
}
