/*
 * luaopen_devplan: the `devplan` module.
 *
 * Builds the table of C functions (each part of the binding adds its own),
 * registers it as package.loaded.devplan, puts the project's lua/ and
 * passes/ folders on package.path, then runs the Lua side
 * (lua/devplan/prelude.lua) which adds the parser, passes and helpers.
 */
#include <dlfcn.h> /* dladdr: _GNU_SOURCE comes from the build */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lbind.h"

const char *dp_lua_root = NULL;

static int file_exists(const char *path) { return access(path, R_OK) == 0; }

/* Root of the Lua files: dp_lua_root if set (the executable), $DEVPLAN_ROOT,
   else from this module's own
   path: <root>/lib/devplan.so (source tree) or <prefix>/lib/devplan/devplan.so
   with <prefix>/share/devplan (install). */
static int find_lua_root(lua_State *L) {
  char buf[PATH_MAX], probe[PATH_MAX + 128];
  const char *candidates[4] = {NULL, NULL, NULL, NULL};
  int n = 0;
  if (dp_lua_root) candidates[n++] = dp_lua_root;
  if (getenv("DEVPLAN_ROOT")) candidates[n++] = getenv("DEVPLAN_ROOT");
  Dl_info info;
  if (dladdr((void *)luaopen_devplan, &info) && info.dli_fname && realpath(info.dli_fname, buf)) {
    char *slash = strrchr(buf, '/');
    if (slash) *slash = '\0'; /* .../lib */
    static char root1[PATH_MAX + 32], root2[PATH_MAX + 32];
    snprintf(root1, sizeof root1, "%s/..", buf);
    snprintf(root2, sizeof root2, "%s/../../share/devplan", buf);
    candidates[n++] = root1;
    candidates[n++] = root2;
  }
  for (int i = 0; i < n; i++) {
    snprintf(probe, sizeof probe, "%s/lua/devplan/prelude.lua", candidates[i]);
    if (!file_exists(probe)) continue;
    char real[PATH_MAX];
    const char *root = realpath(candidates[i], real) ? real : candidates[i];
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "path");
    const char *old = lua_tostring(L, -1);
    lua_pushfstring(L, "%s/lua/?.lua;%s/lua/?/init.lua;%s/passes/?.lua;%s", root, root, root,
                    old ? old : "");
    lua_setfield(L, -3, "path");
    lua_pop(L, 2);
    lua_pushstring(L, root);
    lua_setfield(L, -2, "root");
    return 1;
  }
  return 0;
}

int luaopen_devplan(lua_State *L) {
  dp_lua_ctx(L);
  lua_newtable(L);
  lua_pushstring(L, DP_VERSION);
  lua_setfield(L, -2, "version");
  dp_lua_open_device(L);
  dp_lua_open_ir(L);
  dp_lua_open_parse(L);
  dp_lua_open_planner(L);
  /* package.loaded.devplan = table, so the Lua side can require it */
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaded");
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, "devplan");
  lua_pop(L, 2);
  if (!find_lua_root(L))
    return luaL_error(L, "devplan: cannot find its Lua files (lua/devplan/prelude.lua) beside "
                         "the module or the executable; set DEVPLAN_ROOT to the project or "
                         "PREFIX/share/devplan folder");
  lua_getglobal(L, "require");
  lua_pushstring(L, "devplan.prelude");
  lua_call(L, 1, 1);
  if (lua_isfunction(L, -1)) {
    lua_pushvalue(L, -2);
    lua_call(L, 1, 0);
  } else {
    lua_pop(L, 1);
  }
  return 1;
}
