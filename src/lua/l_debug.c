/*
 * dp.debug: testing aids that are not part of planning. fail_alloc arms the
 * core's allocation failure injection (core.h: dp_debug_fail_alloc), so a
 * spec can walk every allocation of parse, inference and planning and check
 * each failure is a clean "out of memory" devplan.Error; alloc_count says
 * how many allocations ran since it was armed; rusage gives the process's
 * user and system CPU seconds and page faults apart, for benchmarks (on a
 * virtual machine the kernel's share, first touches of fresh pages, moves
 * with what the host did to them; os.clock gives only the sum); callgrind
 * switches valgrind's callgrind on and off around one step (the machine has
 * no hardware counters: bench/perf.lua --linear counts a step's
 * instructions and simulated cache misses without the parse before it);
 * capture_cut_ids lowers the size from which capture cuts the index without
 * consume, so that a spec runs that path at small sizes.
 */
#if !defined(_WIN32)
#include <sys/resource.h>
#endif
#include "l_aux.h"
#include "l_init.h"

/* valgrind's client requests are macros that do nothing outside valgrind
   (no library to link); a system without the header gets no-ops. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define DP_HAVE_CALLGRIND 1
#endif
#endif

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

/* callgrind(on) -> whether this process runs under valgrind: on = true
   zeroes callgrind's counts and starts instrumenting (a run started with
   --instr-atstart=no then counts only what follows), false stops it and
   dumps the counts (the step alone) to callgrind's output file. */
static int callgrind(lua_State *L) {
  int on = lua_toboolean(L, 1);
#if defined(DP_HAVE_CALLGRIND)
  if (on) {
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
  } else {
    CALLGRIND_DUMP_STATS;
    CALLGRIND_STOP_INSTRUMENTATION;
  }
  lua_pushboolean(L, RUNNING_ON_VALGRIND != 0);
#else
  (void)on;
  lua_pushboolean(L, 0);
#endif
  return 1;
}

/* capture_cut_ids(n) -> the cuts capture made without consume since the
   last call, and those of its cuts that moved the post order; from now on
   it cuts from n ids on (nil or 0: 2^21, as planning does; plan.h:
   dp_debug_capture_cut_ids, dp_debug_capture_post_moves). */
static int capture_cut_ids(lua_State *L) {
  lua_Integer n = luaL_optinteger(L, 1, 0);
  luaL_argcheck(L, n >= 0 && n <= (lua_Integer)UINT32_MAX, 1, "a count of ids in [0, 2^32) expected");
  lua_pushinteger(L, (lua_Integer)dp_debug_capture_cut_ids((uint32_t)n));
  lua_pushinteger(L, (lua_Integer)dp_debug_capture_post_moves());
  return 2;
}

void dp__lua_open_debug(lua_State *L) {
  static const luaL_Reg fns[] = {{"fail_alloc", fail_alloc}, {"alloc_count", alloc_count}, {"rusage", rusage},
                                 {"callgrind", callgrind}, {"capture_cut_ids", capture_cut_ids},
                                 {NULL, NULL}};
  dp__lua_subtable(L, "debug"); /* shared with dp.debug.counts (l_device.c) */
  luaL_setfuncs(L, fns, 0);
  lua_pop(L, 1);
}
