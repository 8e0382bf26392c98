/*
 * dp.debug: testing aids that are not part of planning. fail_alloc arms the
 * core's allocation failure injection (core.h: dp_debug_fail_alloc), so a
 * spec can walk every allocation of parse, inference and planning and check
 * each failure is a clean "out of memory" devplan.Error; alloc_count says
 * how many allocations ran since it was armed; rusage gives the process's
 * user and system CPU seconds and page faults apart, for benchmarks (on a
 * virtual machine the kernel's share, first touches of fresh pages, moves
 * with what the host did to them; os.clock gives only the sum).
 */
#if !defined(_WIN32)
#include <sys/resource.h>
#endif
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

/* rusage() -> {user =, sys = (CPU seconds), minflt =, majflt = (page
   faults)} of this process so far. */
static int rusage(lua_State *L) {
#if !defined(_WIN32)
  struct rusage r;
  if (getrusage(RUSAGE_SELF, &r) != 0) return luaL_error(L, "dp.debug.rusage: getrusage failed");
  lua_createtable(L, 0, 4);
  lua_pushnumber(L, (lua_Number)r.ru_utime.tv_sec + (lua_Number)r.ru_utime.tv_usec / 1e6);
  lua_setfield(L, -2, "user");
  lua_pushnumber(L, (lua_Number)r.ru_stime.tv_sec + (lua_Number)r.ru_stime.tv_usec / 1e6);
  lua_setfield(L, -2, "sys");
  lua_pushinteger(L, (lua_Integer)r.ru_minflt);
  lua_setfield(L, -2, "minflt");
  lua_pushinteger(L, (lua_Integer)r.ru_majflt);
  lua_setfield(L, -2, "majflt");
  return 1;
#else
  return luaL_error(L, "dp.debug.rusage: not available on this system");
#endif
}

void dp__lua_open_debug(lua_State *L) {
  static const luaL_Reg fns[] = {{"fail_alloc", fail_alloc}, {"alloc_count", alloc_count}, {"rusage", rusage},
                                 {NULL, NULL}};
  dp__lua_subtable(L, "debug"); /* shared with dp.debug.counts (l_device.c) */
  luaL_setfuncs(L, fns, 0);
  lua_pop(L, 1);
}
