/*
 * The Lua binding of include/devplan/move.h, part of dp.planner:
 * planner.move_copies(planned, config, opts) -> module, moves
 * (dp.passes.MoveCopies wraps it), and PlanDevices' polymorphic option
 * (planner.plan_with with polymorphic = true, l_place.c).
 */
#include "l_init.h"

static const char *const KINDS[] = {NULL, "parameter", "result", "loop", "merged", "cancelled", "dead", "captured"};

static void push_move(lua_State *L, const dp_move *mv) {
  lua_createtable(L, 0, 10);
  lua_pushstring(L, mv->kind > 0 && mv->kind <= DP_MOVE_CAPTURED ? KINDS[mv->kind] : "?");
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

/* PlanDevices with polymorphic = true (l_place.c's planner.plan_with, the
   options read there; max_specialisations read here): pushes the module
   and a report {specialised =, functions_added =, copies_before = (false:
   a conflict without it), copies_after =}, or raises the error (with the
   conflicts of all_conflicts in its field `errors`). */
int dp__lua_plan_polymorphic(lua_State *L, dp_module *m, dp_config *cfg, const dp_plan_opts *o,
                              int opts_idx) {
  dp_poly_opts po = {0};
  if (dp__lua_opt_field(L, opts_idx, "max_specialisations") != LUA_TNIL) {
    lua_Integer n = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
    if (n < 1 || n > 1000000)
      return luaL_error(L, "option 'max_specialisations' must be an integer in [1, 1000000]");
    po.max_new_functions = (uint32_t)n;
  }
  lua_pop(L, 1);
  dp_poly_report rep;
  dp_conflicts all = {0};
  dp_err *err = NULL;
  dp_module *r = dp_plan_polymorphic(m, cfg, o, &po, &rep, &all, &err);
  if (!r) {
    dp__lua_push_error(L, err);
    if (all.n) {
      lua_createtable(L, (int)all.n, 0);
      for (uint32_t i = 0; i < all.n; i++) {
        dp__lua_push_error(L, all.v[i]);
        all.v[i] = NULL;
        lua_rawseti(L, -2, (lua_Integer)i + 1);
      }
      lua_setfield(L, -2, "errors");
    }
    dp_conflicts_clear(&all);
    return lua_error(L);
  }
  dp__lua_push_owned(L, r);
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, rep.specialised);
  lua_setfield(L, -2, "specialised");
  lua_pushinteger(L, rep.functions_added);
  lua_setfield(L, -2, "functions_added");
  if (rep.copies_before >= 0) lua_pushinteger(L, rep.copies_before);
  else lua_pushboolean(L, 0);
  lua_setfield(L, -2, "copies_before");
  lua_pushinteger(L, rep.copies_after);
  lua_setfield(L, -2, "copies_after");
  return 2;
}

/* Placement by cost's recompute hook (recompute = true, l_place.c). */
int h_recomputable(void *ud, dp_expr *value);
int h_recomputable(void *ud, dp_expr *value) {
  (void)ud;
  return dp_recompute_free(value);
}

/* planner.recompute(planned, config) -> module, recomputed (a list of
   {value =, fn =, line =, col =, src =, dst =, calls =}). */
static int l_recompute(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_config *cfg = dp__lua_check(L, 2, DP_OBJ_CONFIG);
  dp_recomputes rc = {0};
  dp_err *err = NULL;
  dp_module *r = dp_plan_recompute(m, cfg, &rc, &err);
  if (!r) return dp__lua_error(L, err);
  dp__lua_push_owned(L, r);
  lua_createtable(L, (int)rc.n, 0);
  for (uint32_t i = 0; i < rc.n; i++) {
    const dp_recompute *x = &rc.v[i];
    lua_createtable(L, 0, 7);
    lua_pushstring(L, x->value);
    lua_setfield(L, -2, "value");
    lua_pushstring(L, x->fn);
    lua_setfield(L, -2, "fn");
    if (x->span.line) {
      lua_pushinteger(L, x->span.line);
      lua_setfield(L, -2, "line");
      lua_pushinteger(L, x->span.col);
      lua_setfield(L, -2, "col");
    }
    dp__lua_push(L, x->src);
    lua_setfield(L, -2, "src");
    dp__lua_push(L, x->dst);
    lua_setfield(L, -2, "dst");
    lua_pushinteger(L, x->calls);
    lua_setfield(L, -2, "calls");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  dp_recomputes_clear(&rc);
  return 2;
}

void dp__lua_open_move(lua_State *L) {
  static const luaL_Reg fns[] = {{"move_copies", l_move_copies}, {"recompute", l_recompute}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
