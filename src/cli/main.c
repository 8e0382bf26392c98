/* Minimal placeholder until the executable lands (see the foundation work). */
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "../lua/lbind.h"
int main(int argc, char **argv) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_devplan);
  lua_setfield(L, -2, "devplan");
  lua_pop(L, 1);
  int rc = 0;
  if (argc > 2 && argv[1][0] == '-' && argv[1][1] == 'e') rc = luaL_dostring(L, argv[2]);
  else if (argc > 1) rc = luaL_dofile(L, argv[1]);
  if (rc) fprintf(stderr, "%s\n", lua_tostring(L, -1));
  lua_close(L);
  return rc ? 1 : 0;
}
