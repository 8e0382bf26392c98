/*
 * luaopen_devplan_core: the C half of the `devplan` module, `devplan.core`.
 *
 * Builds the table of C functions (each part of the binding adds its own in
 * its dp_lua_open_* function) and returns it. It finds no files and changes
 * no search path: `require "devplan"` is lua/devplan/init.lua, which
 * requires this module and the parts written in Lua. A stock lua5.4 finds
 * it in lib/devplan.so through its all-in-one loader (`devplan.core` in the
 * library `devplan`); the devplan executable preloads it.
 */
#include "lbind.h"

int luaopen_devplan_core(lua_State *L) {
  dp_lua_ctx(L);
  lua_newtable(L);
  lua_pushstring(L, DP_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushcfunction(L, dp_lua_error_new);
  lua_setfield(L, -2, "Error");
  lua_pushcfunction(L, dp_lua_is_error);
  lua_setfield(L, -2, "is_error");
  dp_lua_open_device(L);
  dp_lua_open_ir(L);
  dp_lua_open_parse(L);
  dp_lua_open_planner(L);
  dp_lua_open_pattern(L);
  dp_lua_open_suggest(L);
  return 1;
}
