/*
 * The Lua binding of MoveCopies (include/devplan/move.h), part of
 * dp.planner: planner.move_copies(planned, config, opts) -> module, moves
 * (dp.passes.MoveCopies wraps it).
 */
#include "l_init.h"

static const char *const KINDS[] = {NULL, "parameter", "result", "loop", "merged", "cancelled", "dead"};

static void push_move(lua_State *L, const dp_move *mv) {
  lua_createtable(L, 0, 10);
  lua_pushstring(L, mv->kind > 0 && mv->kind <= DP_MOVE_DEAD ? KINDS[mv->kind] : "?");
  lua_setfield(L, -2, "kind");
  if (mv->fn) {
    lua_pushstring(L, mv->fn);
    lua_setfield(L, -2, "fn");
  }
  if (mv->to) {
    lua_pushstring(L, mv->to);
    lua_setfield(L, -2, "to");
  }
  if (mv->value) {
    lua_pushstring(L, mv->value);
    lua_setfield(L, -2, "value");
  }
  lua_pushstring(L, mv->text ? mv->text : "");
  lua_setfield(L, -2, "text");
  if (mv->span.line) {
    lua_pushinteger(L, mv->span.line);
    lua_setfield(L, -2, "line");
    lua_pushinteger(L, mv->span.col);
    lua_setfield(L, -2, "col");
  }
  if (mv->src) {
    dp__lua_push(L, mv->src);
    lua_setfield(L, -2, "src");
  }
  if (mv->dst) {
    dp__lua_push(L, mv->dst);
    lua_setfield(L, -2, "dst");
  }
  lua_pushinteger(L, mv->count);
  lua_setfield(L, -2, "count");
}

/* planner.move_copies(planned, config, {max_new_functions =}?) -> module, moves
   (moves: a list of {kind =, fn =, to =, value =, text =, line =, col =,
   src =, dst =, count =}, with fields functions_added and rounds). */
static int l_move_copies(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_config *cfg = dp__lua_check(L, 2, DP_OBJ_CONFIG);
  dp_move_opts o = {0};
  if (!lua_isnoneornil(L, 3)) {
    static const char *const keys[] = {"max_new_functions", NULL};
    dp__lua_check_opt_keys(L, 3, keys, "devplan.planner.move_copies");
    if (dp__lua_opt_field(L, 3, "max_new_functions") != LUA_TNIL) {
      lua_Integer n = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
      if (n < 1 || n > 1000000)
        return luaL_error(L, "devplan.planner.move_copies: max_new_functions must be an integer in [1, 1000000]");
      o.max_new_functions = (uint32_t)n;
    }
    lua_pop(L, 1);
  }
  dp_moves mv = {0};
  dp_err *err = NULL;
  dp_module *r = dp_plan_move_copies(m, cfg, &o, &mv, &err);
  if (!r) return dp__lua_error(L, err);
  dp__lua_push_owned(L, r);
  lua_createtable(L, (int)mv.n, 2);
  for (uint32_t i = 0; i < mv.n; i++) {
    push_move(L, &mv.v[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_pushinteger(L, mv.functions_added);
  lua_setfield(L, -2, "functions_added");
  lua_pushinteger(L, mv.rounds);
  lua_setfield(L, -2, "rounds");
  dp_moves_clear(&mv);
  return 2;
}

void dp__lua_open_move(lua_State *L) {
  static const luaL_Reg fns[] = {{"move_copies", l_move_copies}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
