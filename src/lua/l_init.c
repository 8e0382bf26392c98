/*
 * luaopen_devplan_core: the C half of the `devplan` module, `devplan.core`.
 *
 * Builds the table of C functions (each part of the binding adds its own in
 * its dp__lua_open_* function) and returns it. It finds no files and changes
 * no search path: `require "devplan"` is lua/devplan/init.lua, which
 * requires this module and the parts written in Lua. A stock lua5.4 finds
 * it in lib/devplan.so through its all-in-one loader (`devplan.core` in the
 * library `devplan`); the devplan executable preloads it.
 */
#include "l_attrs.h"
#include "l_init.h"

int luaopen_devplan_core(lua_State *L) {
  dp__lua_ctx(L);
  lua_newtable(L);
  lua_pushstring(L, DP_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushcfunction(L, dp__lua_error_new);
  lua_setfield(L, -2, "Error");
  lua_pushcfunction(L, dp__lua_is_error);
  lua_setfield(L, -2, "is_error");
  lua_pushcfunction(L, dp__lua_error_text);
  lua_setfield(L, -2, "_error_text");
  dp__lua_push_none(L);
  lua_setfield(L, -2, "NONE");
  dp__lua_open_device(L);
  dp__lua_open_type(L);
  dp__lua_open_expr(L);
  dp__lua_open_const(L);
  dp__lua_open_module(L);
  dp__lua_open_visit(L);
  dp__lua_open_op(L);
  dp__lua_open_parse(L);
  dp__lua_open_planner(L);
  dp__lua_open_dfpattern(L);
  dp__lua_open_partition(L);
  dp__lua_open_annotate(L);
  dp__lua_open_suggest(L);
  dp__lua_open_debug(L);
  dp__lua_open_schedule(L);
  dp__lua_open_file(L);
  dp__lua_open_graph(L);
  dp__lua_open_onnx(L);
  return 1;
}
