/*
 * dp.debug: testing aids that are not part of planning. fail_alloc arms the
 * core's allocation failure injection (core.h: dp_debug_fail_alloc), so a
 * spec can walk every allocation of parse, inference and planning and check
 * each failure is a clean "out of memory" devplan.Error; alloc_count says
 * how many allocations ran since it was armed.
 */
#include "l_aux.h"
#include "l_init.h"

/* fail_alloc(n [, persistent]): n-th allocation from now fails (n = 0 or
   nil: off); persistent: that one and every later one. */
static int fail_alloc(lua_State *L) {
  lua_Integer n = luaL_optinteger(L, 1, 0);
  luaL_argcheck(L, n >= 0, 1, "a count >= 0 expected");
  dp_debug_fail_alloc((uint64_t)n, lua_toboolean(L, 2));
  return 0;
}

static int alloc_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)dp_debug_alloc_count());
  return 1;
}

void dp__lua_open_debug(lua_State *L) {
  static const luaL_Reg fns[] = {{"fail_alloc", fail_alloc}, {"alloc_count", alloc_count}, {NULL, NULL}};
  dp__lua_subtable(L, "debug"); /* shared with dp.debug.counts (l_device.c) */
  luaL_setfuncs(L, fns, 0);
  lua_pop(L, 1);
}
