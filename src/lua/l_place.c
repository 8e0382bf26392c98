/*
 * Lua binding of the placement optimiser on its own (planner.h, dp_place_problem):
 * dp.planner.solve_placement(problem) -> labels, cost. The planner's
 * min_bytes placement builds such a problem from a module's domains; this
 * entry lets a script (and the specs, against brute force) pose one
 * directly. Everything is 1-based on the Lua side.
 */
#include <stdlib.h>
#include <string.h>
#include "lbind.h"

typedef struct pctx { dp_place_problem m; uint32_t *label, *readers; } pctx;

static uint32_t int_field(lua_State *L, int t, const char *k, lua_Integer lo, lua_Integer hi,
                          lua_Integer dflt) {
  lua_getfield(L, t, k);
  lua_Integer v = dflt;
  if (!lua_isnil(L, -1)) {
    if (!lua_isinteger(L, -1)) luaL_error(L, "solve_placement: '%s' must be an integer", k);
    v = lua_tointeger(L, -1);
  }
  if (v < lo || v > hi) luaL_error(L, "solve_placement: '%s' must be in [%I, %I]", k, lo, hi);
  lua_pop(L, 1);
  return (uint32_t)v;
}

/* t[k] as an index in [1, n], 0-based. */
static uint32_t index_at(lua_State *L, int t, lua_Integer k, uint32_t n, const char *what) {
  lua_geti(L, t, k);
  if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > n)
    luaL_error(L, "solve_placement: %s must be an integer in [1, %d]", what, (int)n);
  uint32_t v = (uint32_t)(lua_tointeger(L, -1) - 1);
  lua_pop(L, 1);
  return v;
}

static int64_t cost_at(lua_State *L, int idx, const char *what) {
  if (!lua_isinteger(L, idx) || lua_tointeger(L, idx) < 0 || lua_tointeger(L, idx) > (lua_Integer)1e15)
    luaL_error(L, "solve_placement: %s must be an integer in [0, 1e15]", what);
  return (int64_t)lua_tointeger(L, idx);
}

/* problem.fixed, .allowed, .unary: tables keyed by variable. */
static void per_var(lua_State *L, pctx *c) {
  dp_place_problem *m = &c->m;
  uint32_t K = m->nlabels;
  if (lua_getfield(L, 1, "fixed") == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      lua_Integer v = lua_isinteger(L, -2) ? lua_tointeger(L, -2) : 0;
      if (v < 1 || v > m->nvars || !lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 ||
          lua_tointeger(L, -1) > K)
        luaL_error(L, "solve_placement: fixed maps variables to labels");
      m->fixed[v - 1] = (uint32_t)(lua_tointeger(L, -1) - 1);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "allowed") == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      lua_Integer v = lua_isinteger(L, -2) ? lua_tointeger(L, -2) : 0;
      if (v < 1 || v > m->nvars || !lua_istable(L, -1))
        luaL_error(L, "solve_placement: allowed maps variables to lists of labels");
      uint64_t mask = 0;
      lua_Integer n = luaL_len(L, -1);
      for (lua_Integer i = 1; i <= n; i++) mask |= (uint64_t)1 << index_at(L, -1, i, K, "a label");
      m->allowed[v - 1] = mask;
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "unary") == LUA_TTABLE) {
    m->unary = dp_calloc((size_t)m->nvars * K + 1, sizeof *m->unary);
    if (!m->unary) luaL_error(L, "out of memory");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      lua_Integer v = lua_isinteger(L, -2) ? lua_tointeger(L, -2) : 0;
      if (v < 1 || v > m->nvars || !lua_istable(L, -1))
        luaL_error(L, "solve_placement: unary maps variables to a cost per label");
      for (uint32_t l = 0; l < K; l++) {
        lua_geti(L, -1, l + 1);
        m->unary[(size_t)(v - 1) * K + l] = cost_at(L, -1, "a unary cost");
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
}

static void pair_costs(lua_State *L, pctx *c) {
  dp_place_problem *m = &c->m;
  uint32_t K = m->nlabels;
  if (lua_getfield(L, 1, "pair") == LUA_TTABLE) {
    m->pair = dp_calloc((size_t)K * K, sizeof *m->pair);
    if (!m->pair) luaL_error(L, "out of memory");
    for (uint32_t a = 0; a < K; a++) {
      if (lua_geti(L, -1, a + 1) != LUA_TTABLE) luaL_error(L, "solve_placement: pair is a K x K table");
      for (uint32_t b = 0; b < K; b++) {
        lua_geti(L, -1, b + 1);
        if (!lua_isnumber(L, -1) || lua_tonumber(L, -1) < 0)
          luaL_error(L, "solve_placement: pair costs are numbers >= 0");
        m->pair[(size_t)a * K + b] = a == b ? 0 : lua_tonumber(L, -1);
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
}

static void nets(lua_State *L, pctx *c) {
  dp_place_problem *m = &c->m;
  if (lua_getfield(L, 1, "nets") != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  lua_Integer n = luaL_len(L, -1);
  for (lua_Integer k = 1; k <= n; k++) {
    if (lua_geti(L, -1, k) != LUA_TTABLE) luaL_error(L, "solve_placement: a net is {from =, to = {...}, weight =}");
    lua_getfield(L, -1, "from");
    uint32_t src = 0;
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > m->nvars)
      luaL_error(L, "solve_placement: a net's from must be a variable");
    src = (uint32_t)(lua_tointeger(L, -1) - 1);
    lua_pop(L, 1);
    lua_getfield(L, -1, "weight");
    int64_t w = cost_at(L, -1, "a net's weight");
    lua_pop(L, 1);
    if (lua_getfield(L, -1, "to") != LUA_TTABLE) luaL_error(L, "solve_placement: a net's to is a list of variables");
    lua_Integer nr = luaL_len(L, -1);
    if (nr > m->nvars) luaL_error(L, "solve_placement: a net has more readers than variables");
    for (lua_Integer i = 1; i <= nr; i++) c->readers[i - 1] = index_at(L, -1, i, m->nvars, "a reader");
    lua_pop(L, 2);
    if (dp_place_net(m, src, c->readers, (uint32_t)nr, w) < 0) luaL_error(L, "out of memory");
  }
  lua_pop(L, 1);
}

static int solve_body(lua_State *L) {
  pctx *c = lua_touserdata(L, 2);
  luaL_checktype(L, 1, LUA_TTABLE);
  uint32_t K = int_field(L, 1, "labels", 1, 64, 2);
  uint32_t n = int_field(L, 1, "vars", 0, 10000000, 0);
  uint32_t dflt = int_field(L, 1, "default", 1, K, 1) - 1;
  if (dp_place_init(&c->m, n, K, dflt) < 0) return luaL_error(L, "out of memory");
  c->label = dp_malloc((n ? n : 1) * sizeof *c->label);
  c->readers = dp_malloc((n ? n : 1) * sizeof *c->readers);
  if (!c->label || !c->readers) return luaL_error(L, "out of memory");
  per_var(L, c);
  pair_costs(L, c);
  nets(L, c);
  int64_t e = 0;
  int rc = dp_place_solve(&c->m, c->label, &e);
  if (rc < 0) return luaL_error(L, "out of memory");
  if (rc > 0) {
    for (uint32_t v = 0; v < n; v++)
      if (c->label[v] == UINT32_MAX) return luaL_error(L, "solve_placement: variable %d may take no label", (int)v + 1);
  }
  lua_createtable(L, (int)n, 0);
  for (uint32_t v = 0; v < n; v++) {
    lua_pushinteger(L, (lua_Integer)c->label[v] + 1);
    lua_rawseti(L, -2, (lua_Integer)v + 1);
  }
  lua_pushinteger(L, (lua_Integer)e);
  return 2;
}

/* dp.planner.solve_placement{labels =, vars =, default =, fixed =, allowed =,
   unary =, pair =, nets = {{from =, to = {...}, weight =}, ...}} -> labels,
   cost. (Errors are raised after the C side's memory is freed.) */
static int l_solve_placement(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  pctx c = {0};
  lua_pushcfunction(L, solve_body);
  lua_pushvalue(L, 1);
  lua_pushlightuserdata(L, &c);
  int st = lua_pcall(L, 2, 2, 0);
  dp_place_free(&c.m);
  free(c.label);
  free(c.readers);
  if (st != LUA_OK) return lua_error(L);
  return 2;
}

void dp_lua_open_place(lua_State *L) {
  lua_pushcfunction(L, l_solve_placement);
  lua_setfield(L, -2, "solve_placement");
}
