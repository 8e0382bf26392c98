/*
 * The devplan executable: Lua 5.4 with the devplan module preloaded.
 *
 *   devplan COMMAND [ARGS...]        (help, parse, plan, opt: lua/devplan/cli.lua)
 *   devplan [options] [SCRIPT [ARGS...]]
 *   devplan                          the REPL on a terminal (lua/devplan/repl.lua);
 *                                    otherwise the script on standard input, as lua
 *
 * The first argument goes to the command line's router (cli.route): a
 * command name runs the command, and so does a word that is no file or a
 * model file given without a command (the command line then suggests the
 * right command instead of running the file as Lua); anything else is a
 * script. The command's result is the exit status.
 *
 * Runs SCRIPT with `arg` set as the stock `lua` does (arg[0] the script,
 * arg[1..] its arguments, negative indices the interpreter and its options)
 * and the arguments also passed as `...`. A script may start with a "#!"
 * line, so `devplan /usr/bin/busted ...` runs busted inside this process
 * (that is how the sanitizer and valgrind runs test the instrumented
 * binary). Errors print a traceback and exit with status 1.
 *
 * The project's Lua files are found from /proc/self/exe: <root>/bin/devplan
 * in the source tree uses <root>/lua; <prefix>/bin/devplan
 * when installed uses <prefix>/share/lua/5.4 (see add_lua_path).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "devplan/core.h"
#include "../lua/l_init.h"
#include "term.h"

static const char *progname = "devplan";

#if defined(__SANITIZE_ADDRESS__)
#define CLOSE_AT_EXIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CLOSE_AT_EXIT 1
#endif
#endif
#ifndef CLOSE_AT_EXIT
#define CLOSE_AT_EXIT 0
#endif

/* The Lua state, and whether it is left to the system at exit (a command
   that ran no user code): see main. */
static lua_State *volatile state;
static int leave_state;

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

/* The project's Lua files, from the executable's own path. The executable
   is a launcher: like a wrapper script, it puts the folders of its own Lua
   files first on package.path (the module itself never changes a search
   path), so that an executable runs the Lua files it was built or
   installed with:
     <root>/bin/devplan             source tree: <root>/lua
     <root>/build/asan/bin/devplan  sanitizer build: the same
     <prefix>/bin/devplan           installed: <prefix>/share/lua/5.4
   DEVPLAN_ROOT names a source tree to use instead. Nothing is changed when
   none is found (the default path may have an installed module). */
static const struct layout {
  const char *up;     /* from the executable's folder */
  const char *lua;    /* the folder of devplan/init.lua, from there */
} layouts[] = {
  {"/..", "/lua"},
  {"/../../..", "/lua"},
  {"/../share/lua/5.4", ""},
};

static int find_layout(const char *base, const struct layout *l, char *root) {
  char probe[PATH_MAX + 64];
  snprintf(probe, sizeof probe, "%s%s%s/devplan/init.lua", base, l->up, l->lua);
  if (access(probe, R_OK) != 0) return 0;
  snprintf(probe, sizeof probe, "%s%s", base, l->up);
  return realpath(probe, root) != NULL;
}

static void add_lua_path(lua_State *L) {
  char bin[PATH_MAX], root[PATH_MAX];
  const struct layout *found = NULL;
  const char *env = getenv("DEVPLAN_ROOT");
  static const struct layout tree = {"", "/lua"};
  if (env && *env && find_layout(env, &tree, root)) found = &tree;
  if (!found && realpath("/proc/self/exe", bin)) {
    char *slash = strrchr(bin, '/');
    if (slash) *slash = '\0';
    for (size_t i = 0; slash && !found && i < sizeof layouts / sizeof layouts[0]; i++)
      if (find_layout(bin, &layouts[i], root)) found = &layouts[i];
  }
  if (!found) return;
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  lua_pushfstring(L, "%s%s/?.lua;%s%s/?/init.lua;%s", root, found->lua, root, found->lua, lua_tostring(L, -1));
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

/* Calls require('devplan.cli')[fn](args...) and leaves its first nres
   results on the stack; a Lua error prints with its traceback and returns 1. */
static int call_cli(lua_State *L, const char *fn, char **args, int nargs, int nres) {
  static const char chunk[] =
    "local fn = ...\n"
    "require 'devplan'\n"
    "return require('devplan.cli')[fn](select(2, ...))\n";
  int status = luaL_loadbuffer(L, chunk, sizeof chunk - 1, "=devplan");
  if (status == LUA_OK) {
    luaL_checkstack(L, nargs + 4, "too many arguments");
    lua_pushstring(L, fn);
    for (int i = 0; i < nargs; i++) lua_pushstring(L, args[i]);
    status = docall_n(L, nargs + 1, nres);
  }
  return report(L, status) == LUA_OK ? 0 : 1;
}

/* Is argv[1] for the command line (cli.route says "command")? */
static int is_command(lua_State *L, char *arg) {
  if (call_cli(L, "route", &arg, 1, 1) != 0) return 0;
  int yes = lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "command") == 0;
  lua_pop(L, 1);
  return yes;
}

/* Runs command argv[1] with argv[2..]: cli.main's first result is the
   exit status, its second whether a user's Lua file ran (then the state is
   closed at exit); an error inside it (a bug) prints a traceback, status 1. */
static int run_subcommand(lua_State *L, char **argv, int argc) {
  create_arg_table(L, argv, argc, 1);
  if (call_cli(L, "main", argv + 1, argc - 1, 2) != 0) return 1;
  int code = lua_isinteger(L, -2) ? (int)lua_tointeger(L, -2) : 1;
  leave_state = !lua_toboolean(L, -1);
  lua_pop(L, 2);
  return code;
}

/* The usage (cli.usage) on out. */
static int print_usage(lua_State *L, FILE *out) {
  if (call_cli(L, "usage", NULL, 0, 1) != 0) return 1;
  fputs(lua_tostring(L, -1) ? lua_tostring(L, -1) : "", out);
  lua_pop(L, 1);
  return 0;
}

/* No arguments: the REPL on a terminal, else the script on standard input. */
static int run_without_arguments(lua_State *L, char **argv, int argc) {
  if (isatty(0)) {
    create_arg_table(L, argv, argc, 0);
    static const char chunk[] = "return require('devplan.repl').run()\n";
    int status = luaL_loadbuffer(L, chunk, sizeof chunk - 1, "=devplan");
    if (status == LUA_OK) status = docall(L, 0);
    return report(L, status) == LUA_OK ? 0 : 1;
  }
  char *dash[] = {argv[0], "-", NULL};
  create_arg_table(L, dash, 2, 1);
  return run_script(L, dash, 2, 1) == LUA_OK ? 0 : 1;
}

/* Large arrays (a million-node module's numbering, the printed text) are
   mapped on their own: glibc otherwise raises this threshold as such
   blocks are freed and puts the next ones in the heap, where growing one
   copies it (old and new both resident) instead of remapping it. devplan
   plan of a 1,000,000-call let chain peaks at 890 MB instead of 1,086 MB. */
static void map_large_blocks(void) {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
}

/* Fixing that threshold also fixes glibc's trim threshold at 128 KiB,
   which it would otherwise raise with it: the heap's free top goes back to
   the system whenever it passes 128 KiB and faults in again at the next
   allocation. A command does one thing once, and peaks lower so (2 MB on
   devplan plan of 1,000,000 let calls); a script or the REPL repeats its
   work, and printing a 500 KB module in a loop took 10x longer. They keep
   up to 32 MiB of free heap. */
static void keep_free_heap(void) {
#ifdef __GLIBC__
  mallopt(M_TRIM_THRESHOLD, 32 << 20);
#endif
}

/* A million-call module's nodes are small blocks from glibc's heap (the
   parser's, AnnotateVirtualDevices', Lua's own tables and strings), and on
   a virtual machine each fresh 4 KiB page of it costs a fault of some 10-20
   us: AnnotateVirtualDevices on 1,000,000 chain calls faulted 38,000 pages
   (0.82 s). Where transparent huge pages come only on request, glibc asks
   for them for its heap when its glibc.malloc.hugetlb tunable is 1: 6,700
   faults (0.44 s). Tunables are read when a program starts, so the
   executable sets it and starts itself again, once (the variable is then
   set; a user's own setting of it is kept). Not under valgrind, which an
   exec would leave, nor in the sanitizer build, whose malloc is not
   glibc's; if the exec fails, devplan goes on without. */
static void ask_huge_heap(char **argv) {
#if defined(__GLIBC__) && defined(__linux__) && !CLOSE_AT_EXIT
  static const char tunable[] = "glibc.malloc.hugetlb";
  const char *had = getenv("GLIBC_TUNABLES"), *pre = getenv("LD_PRELOAD");
  if ((had && strstr(had, tunable)) || (pre && strstr(pre, "vgpreload")) ||
      !dp_huge_pages_on_request())
    return;
  char set[4096];
  int n = snprintf(set, sizeof set, "%s%s%s=1", had ? had : "", had && *had ? ":" : "", tunable);
  if (n < 0 || (size_t)n >= sizeof set || setenv("GLIBC_TUNABLES", set, 1) != 0) return;
  execv("/proc/self/exe", argv);
  if (had) setenv("GLIBC_TUNABLES", had, 1);
  else unsetenv("GLIBC_TUNABLES");
#else
  (void)argv;
#endif
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
  lua_pushcfunction(L, luaopen_devplan_term);
  lua_setfield(L, -2, "devplan.term");
  lua_pop(L, 1);
  add_lua_path(L);
  if (argc < 2) {
    keep_free_heap();
    *status = run_without_arguments(L, argv, argc);
    return 0;
  }
  if (argv[1][0] != '-' && is_command(L, argv[1])) {
    *status = run_subcommand(L, argv, argc);
    return 0;
  }
  keep_free_heap(); /* (a script, -e code or the REPL: not a command) */
  /* options: find where the script is */
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || strcmp(a, "-") == 0) break;
    if (strcmp(a, "--") == 0) { i++; break; }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      *status = print_usage(L, stdout);
      return 0;
    }
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
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || strcmp(a, "-") == 0 || strcmp(a, "--") == 0) break;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) return -1; /* printed from Lua: cli.usage */
    if (!strcmp(a, "-v") || !strcmp(a, "--version")) {
      printf("devplan %s (%s)\n", DP_VERSION, LUA_RELEASE);
      return 0;
    }
    if (!strcmp(a, "-e")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "%s: -e needs an argument (devplan --help for the usage)\n", progname);
        return 1;
      }
      i++;
      continue;
    }
    fprintf(stderr, "%s: unknown option '%s' (devplan --help for the usage)\n", progname, a);
    return 1;
  }
  return -1;
}

/* Standard output is checked once more at the end (as coreutils'
   close_stdout): what a script printed to a full disk, or what stayed in
   the buffer, is an error too, never a silent success. */
static int check_stdout(void) {
  int err = fflush(stdout) != 0 ? errno : 0;
  if (!err && !ferror(stdout)) return 0;
  fprintf(stderr, "%s: cannot write to standard output: %s\n", progname,
          err ? strerror(err) : "a write failed");
  return 1;
}

/* The Lua state's own allocator, and the one main gives it: the same, with
   large blocks (a printed module Lua takes as a string, a big table) asking
   for huge pages as the library's do (dp_advise_huge): fewer page faults. */
static lua_Alloc lua_alloc;

static void *alloc_advised(void *ud, void *p, size_t os, size_t ns) {
  if (ns) ns = dp_huge_size(ns); /* (nothing below a megabyte) */
  return dp_advise_huge(lua_alloc(ud, p, os, ns), ns);
}

static void advise_large_blocks(lua_State *L) {
  void *ud;
  lua_alloc = lua_getallocf(L, &ud);
  lua_setallocf(L, alloc_advised, ud);
}

int main(int argc, char **argv) {
  if (argv[0] && argv[0][0]) progname = argv[0];
  map_large_blocks();
  int rc = check_options(argc, argv);
  if (rc >= 0) return check_stdout() ? 1 : rc;
  ask_huge_heap(argv);
  lua_State *L = state = luaL_newstate();
  if (!L) {
    fprintf(stderr, "%s: cannot create the Lua state: not enough memory\n", progname);
    return 1;
  }
  advise_large_blocks(L);
  int status = 0;
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  lua_pushlightuserdata(L, &status);
  if (report(L, lua_pcall(L, 3, 0, 0)) != LUA_OK) status = 1;
  /* A command that ran no user code exits without closing its state, as
     compilers skip freeing at exit (clang's -disable-free): the system
     takes the process's memory back at once, while closing the state of
     `devplan plan` on 100,000 let calls is 5.6% of the command's
     instructions. Its writes are done and checked (dp.write_file;
     standard output below; the C library flushes any other stream at
     exit); `state` keeps the memory reachable for leak checkers. A script's
     state is closed, and so is a command's that ran a user's Lua file
     (--rules, --load, --meta): their finalizers run, as lua's. The
     sanitizer build closes it always, so that its leak check still sees
     what a command's objects failed to free. */
  if (!leave_state || CLOSE_AT_EXIT) lua_close(L);
  /* (a failed run has said what went wrong, standard output included) */
  if (status == 0 && check_stdout()) status = 1;
  return status;
}
