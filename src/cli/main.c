/*
 * The devplan executable: Lua 5.4 with the devplan module preloaded.
 *
 *   devplan [options] [SCRIPT [ARGS...]]
 *   devplan COMMAND [ARGS...]        (COMMAND: parse, plan)
 *
 * A first argument that names a subcommand and is not an existing file
 * runs the subcommand, written in Lua (lua/devplan/cli.lua); its result is
 * the exit status.
 *
 * Runs SCRIPT with `arg` set as the stock `lua` does (arg[0] the script,
 * arg[1..] its arguments, negative indices the interpreter and its options)
 * and the arguments also passed as `...`. A script may start with a "#!"
 * line, so `devplan /usr/bin/busted ...` runs busted inside this process
 * (that is how the sanitizer and valgrind runs test the instrumented
 * binary). Errors print a traceback and exit with status 1.
 *
 * The project's Lua files are found from /proc/self/exe: <root>/bin/devplan
 * in the source tree uses <root>; <prefix>/bin/devplan when installed uses
 * <prefix>/share/devplan.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "../lua/lbind.h"

static const char *progname = "devplan";

static void usage(FILE *out) {
  fprintf(out,
          "usage: %s [options] [SCRIPT [ARGS...]]\n"
          "Runs a Lua 5.4 script with the devplan module available (require \"devplan\").\n"
          "Options:\n"
          "  -e CODE      run CODE (may be repeated; runs before SCRIPT)\n"
          "  -v, --version  print the version\n"
          "  -h, --help   print this help\n"
          "  --           stop handling options\n"
          "  -            run the script read from standard input\n"
          "SCRIPT gets its arguments in `arg` (arg[0] is the script) and as `...`.\n"
          "\n"
          "       %s COMMAND [ARGS...]   (COMMAND --help for its options)\n"
          "Commands:\n"
          "  parse FILE.relay [--meta META.lua] [--types]\n"
          "          parse a module and print it\n"
          "  plan FILE.relay --target T [--target T ...] [--host T] [--default DEVTYPE]\n"
          "       [--meta META.lua] [--strict] [--explain]\n"
          "          plan devices (PlanDevices) and print the planned module;\n"
          "          --strict: no conflict resolution, --explain: why each device\n"
          "Without --meta, meta[VirtualDevice][0] is the CPU (device_type=cpu, id 0) and\n"
          "meta[VirtualDevice][1] the GPU (device_type=cuda, id 0); anything else needs --meta.\n"
          "Errors print as file:line:col: message with the source line; exit status 1.\n",
          progname, progname);
}

/* Message handler: the error with a traceback. devplan.Error tables and
   other values with __tostring print through it. */
static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) msg = lua_tostring(L, -1);
    else msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static int report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "%s: %s\n", progname, msg ? msg : "(error)");
    fflush(stderr);
    lua_pop(L, 1);
  }
  return status;
}

static int docall_n(lua_State *L, int nargs, int nres) {
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  int status = lua_pcall(L, nargs, nres, base);
  lua_remove(L, base);
  return status;
}

static int docall(lua_State *L, int nargs) { return docall_n(L, nargs, 0); }

/* The project's Lua files, from the executable's own path: <root>/bin/devplan
   in the source tree, <root>/build/asan/bin/devplan for the sanitizer build,
   <prefix>/bin/devplan with <prefix>/share/devplan when installed. The
   executable is a launcher: like a wrapper script, it puts <root>/lua and
   <root>/passes first on package.path (the module itself never changes a
   search path). Nothing is changed when DEVPLAN_ROOT is set to another
   root, or when no root is found (the default path may have an installed
   module). */
static void add_lua_path(lua_State *L) {
  static const char *const up[] = {"/..", "/../../..", "/../share/devplan"};
  char bin[PATH_MAX], probe[PATH_MAX + 64], root[PATH_MAX];
  const char *env = getenv("DEVPLAN_ROOT");
  int found = 0;
  if (env && *env) {
    snprintf(probe, sizeof probe, "%s/lua/devplan/init.lua", env);
    found = access(probe, R_OK) == 0 && realpath(env, root) != NULL;
  }
  if (!found && realpath("/proc/self/exe", bin)) {
    char *slash = strrchr(bin, '/');
    if (slash) *slash = '\0';
    for (size_t i = 0; slash && !found && i < sizeof up / sizeof up[0]; i++) {
      snprintf(probe, sizeof probe, "%s%s/lua/devplan/init.lua", bin, up[i]);
      if (access(probe, R_OK) != 0) continue;
      snprintf(probe, sizeof probe, "%s%s", bin, up[i]);
      found = realpath(probe, root) != NULL;
    }
  }
  if (!found) return;
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  lua_pushfstring(L, "%s/lua/?.lua;%s/lua/?/init.lua;%s/passes/?.lua;%s", root, root, root,
                  lua_tostring(L, -1));
  lua_setfield(L, -3, "path");
  lua_pop(L, 2);
}

/* arg table as lua.c builds it: script at index 0. */
static void create_arg_table(lua_State *L, char **argv, int argc, int script) {
  lua_createtable(L, argc - script - 1, script + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

static int run_script(lua_State *L, char **argv, int argc, int script) {
  const char *fname = argv[script];
  if (strcmp(fname, "-") == 0 && strcmp(argv[script - 1], "--") != 0) fname = NULL;
  int status = luaL_loadfile(L, fname); /* skips a first "#" line */
  if (status == LUA_OK) {
    int n = argc - script - 1;
    luaL_checkstack(L, n + 3, "too many arguments to script");
    for (int i = script + 1; i < argc; i++) lua_pushstring(L, argv[i]);
    status = docall(L, n);
  }
  return report(L, status);
}

/* Subcommands (lua/devplan/cli.lua); a file of the same name wins, so
   scripts named like a subcommand still run. */
static int is_subcommand(const char *a) {
  static const char *const names[] = {"parse", "plan"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(a, names[i]) == 0) return access(a, F_OK) != 0;
  return 0;
}

/* Runs subcommand argv[1] with argv[2..]: cli.main's result is the exit
   status; an error inside it (a bug) prints a traceback, status 1. */
static int run_subcommand(lua_State *L, char **argv, int argc) {
  static const char chunk[] =
    "require 'devplan'\n"
    "return require('devplan.cli').main(...)\n";
  create_arg_table(L, argv, argc, 1);
  int status = luaL_loadbuffer(L, chunk, sizeof chunk - 1, "=devplan");
  if (status == LUA_OK) {
    luaL_checkstack(L, argc + 3, "too many arguments");
    for (int i = 1; i < argc; i++) lua_pushstring(L, argv[i]);
    status = docall_n(L, argc - 1, 1);
  }
  if (report(L, status) != LUA_OK) return 1;
  int code = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : 1;
  lua_pop(L, 1);
  return code;
}

/* The body, run protected so that errors while setting up are reported too. */
static int pmain(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = lua_touserdata(L, 2);
  int script = 0, *status = lua_touserdata(L, 3);
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_devplan_core);
  lua_setfield(L, -2, "devplan.core");
  lua_pop(L, 1);
  add_lua_path(L);
  if (argc > 1 && is_subcommand(argv[1])) {
    *status = run_subcommand(L, argv, argc);
    return 0;
  }
  /* options: find where the script is */
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || strcmp(a, "-") == 0) break;
    if (strcmp(a, "--") == 0) { i++; break; }
    if (strcmp(a, "-e") == 0) { i++; continue; }
  }
  script = i < argc ? i : 0;
  create_arg_table(L, argv, argc, script);
  for (i = 1; i < argc && (script == 0 || i < script); i++) {
    const char *a = argv[i];
    if (strcmp(a, "-e") == 0) {
      if (luaL_loadbuffer(L, argv[i + 1], strlen(argv[i + 1]), "=(command line)") != LUA_OK ||
          docall(L, 0) != LUA_OK) {
        report(L, 1);
        *status = 1;
        return 0;
      }
      i++;
    }
  }
  if (script && run_script(L, argv, argc, script) != LUA_OK) *status = 1;
  return 0;
}

/* Checks the options before any Lua runs; returns -1 to go on, else an exit code. */
static int check_options(int argc, char **argv) {
  if (argc < 2) {
    usage(stdout);
    return 0;
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || strcmp(a, "-") == 0 || strcmp(a, "--") == 0) break;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(a, "-v") || !strcmp(a, "--version")) {
      printf("devplan %s (%s)\n", DP_VERSION, LUA_RELEASE);
      return 0;
    }
    if (!strcmp(a, "-e")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "%s: -e needs an argument\n", progname);
        usage(stderr);
        return 1;
      }
      i++;
      continue;
    }
    fprintf(stderr, "%s: unknown option '%s'\n", progname, a);
    usage(stderr);
    return 1;
  }
  return -1;
}

int main(int argc, char **argv) {
  if (argv[0] && argv[0][0]) progname = argv[0];
  int rc = check_options(argc, argv);
  if (rc >= 0) return rc;
  lua_State *L = luaL_newstate();
  if (!L) {
    fprintf(stderr, "%s: cannot create the Lua state: not enough memory\n", progname);
    return 1;
  }
  int status = 0;
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  lua_pushlightuserdata(L, &status);
  if (report(L, lua_pcall(L, 3, 0, 0)) != LUA_OK) status = 1;
  lua_close(L);
  return status;
}
