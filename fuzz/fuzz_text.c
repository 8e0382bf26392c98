/*
 * libFuzzer harness: Relay text through parse, print, re-parse and both
 * planning modes, with the properties of fuzz/props.lua checked on every
 * input, inside an embedded Lua with the devplan module (the core, the
 * planner and the binding are compiled into this binary with coverage,
 * ASan and UBSan; LPeg is Debian's lua-lpeg).
 *
 * A crash, a sanitizer report, or a failed property aborts with the
 * property and its detail on stderr, so libFuzzer saves the input.
 * Properties named in $DEVPLAN_FUZZ_SOFT (comma separated, e.g. known
 * defects another branch is fixing) are counted instead: the first few
 * inputs of each go to $DEVPLAN_FUZZ_SOFT_DIR when set, and the counts
 * are printed at exit.
 *
 * Built and run by fuzz/build.sh and fuzz/run.sh; fuzz/corpus/ is its
 * committed corpus, replayed by spec/fuzz_corpus_spec.lua.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "../src/lua/l_init.h"


static lua_State *L;
static int check_ref = LUA_NOREF;

/* The checker: a function(text) returning nil, or property and detail. */
static const char setup[] =
  "local root = ...\n"
  "package.path = root .. '/fuzz/?.lua;' .. package.path\n"
  "local props = require 'props'\n"
  "local checker = props.checker()\n"
  "return function(text)\n"
  "  local f = checker:check(text)\n"
  "  if f then return f.property, f.detail end\n"
  "end\n";

#define MAX_SOFT 16
static struct soft { char name[32]; long count; } soft[MAX_SOFT];
static int nsoft;

static void read_soft(void) {
  const char *s = getenv("DEVPLAN_FUZZ_SOFT");
  while (s && *s && nsoft < MAX_SOFT) {
    size_t n = strcspn(s, ",");
    if (n > 0 && n < sizeof soft[0].name) {
      memcpy(soft[nsoft].name, s, n);
      soft[nsoft++].name[n] = 0;
    }
    s += n + (s[n] == ',');
  }
}

static struct soft *find_soft(const char *property) {
  for (int i = 0; i < nsoft; i++)
    if (strcmp(soft[i].name, property) == 0) return &soft[i];
  return NULL;
}

static void print_soft(void) {
  for (int i = 0; i < nsoft; i++)
    fprintf(stderr, "devplan-fuzz: soft property %s failed on %ld inputs\n", soft[i].name, soft[i].count);
}

static void save_soft(const struct soft *sp, const uint8_t *data, size_t size) {
  const char *dir = getenv("DEVPLAN_FUZZ_SOFT_DIR");
  if (!dir || sp->count > 20) return;
  uint64_t h = 1469598103934665603u; /* FNV-1a: one file per distinct input, across forks */
  for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211u;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s-%016llx.relay", dir, sp->name, (unsigned long long)h);
  FILE *f = fopen(path, "wb");
  if (!f) return;
  fwrite(data, 1, size, f);
  fclose(f);
}

/* The project root: $DEVPLAN_ROOT, else three levels up from the binary
   (ROOT/build/fuzz/devplan-fuzz). */
static const char *find_root(void) {
  static char root[PATH_MAX];
  const char *env = getenv("DEVPLAN_ROOT");
  if (env) return env;
  if (!realpath("/proc/self/exe", root)) return ".";
  for (int up = 0; up < 3; up++) {
    char *slash = strrchr(root, '/');
    if (!slash || slash == root) return ".";
    *slash = 0;
  }
  return root;
}

static void setup_failed(const char *what) {
  fprintf(stderr, "devplan-fuzz: %s failed: %s\n", what, lua_tostring(L, -1));
  exit(2);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  read_soft();
  atexit(print_soft);
  const char *root = find_root();
  L = luaL_newstate();
  if (!L) return 2;
  luaL_openlibs(L);
  /* as bin/devplan in the tree: devplan.core compiled in, the Lua side from root */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_devplan_core);
  lua_setfield(L, -2, "devplan.core");
  lua_pop(L, 1);
  lua_getglobal(L, "package");
  lua_pushfstring(L, "%s/lua/?.lua;%s/lua/?/init.lua", root, root);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
  lua_getglobal(L, "require");
  lua_pushstring(L, "devplan");
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) setup_failed("require 'devplan'");
  if (luaL_loadbuffer(L, setup, sizeof setup - 1, "=fuzz_text") != LUA_OK) setup_failed("loading the setup");
  lua_pushstring(L, root);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) setup_failed("the setup");
  check_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, check_ref);
  lua_pushlstring(L, (const char *)data, size);
  if (lua_pcall(L, 1, 2, 0) != LUA_OK) {
    fprintf(stderr, "devplan-fuzz: the checker raised: %s\n", lua_tostring(L, -1));
    abort();
  }
  if (!lua_isnil(L, -2)) {
    const char *property = lua_tostring(L, -2);
    struct soft *sp = property ? find_soft(property) : NULL;
    if (!sp) {
      fprintf(stderr, "devplan-fuzz: property %s failed: %s\n", property ? property : "?",
              lua_tostring(L, -1));
      abort();
    }
    sp->count++;
    save_soft(sp, data, size);
  }
  lua_pop(L, 2);
  /* each input's objects go now, so a leak shows on the input that made it */
  lua_gc(L, LUA_GCCOLLECT);
  return 0;
}
