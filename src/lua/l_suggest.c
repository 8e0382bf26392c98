/*
 * Lua binding of the "did you mean" utility (include/devplan/suggest.h):
 * dp.suggest(name, candidates) -> the closest candidate or nil, so Lua code
 * (the parser, passes, user scripts) words its unknown-name errors as the
 * core does.
 */
#include "l_init.h"

/* dp.suggest(name, {candidates...}) */
static int suggest(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  dp_suggest s;
  dp_suggest_init(&s, name);
  lua_Integer n = (lua_Integer)lua_rawlen(L, 2);
  for (lua_Integer i = 1; i <= n; i++) {
    /* strings stay in the table, so the borrowed best one outlives the loop */
    if (lua_rawgeti(L, 2, i) != LUA_TSTRING) luaL_argerror(L, 2, "a list of strings expected");
    dp_suggest_add(&s, lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  const char *best = dp_suggest_best(&s);
  if (best) lua_pushstring(L, best);
  else lua_pushnil(L);
  return 1;
}

void dp__lua_open_suggest(lua_State *L) {
  lua_pushcfunction(L, suggest);
  lua_setfield(L, -2, "suggest");
}
