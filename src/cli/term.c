/*
 * devplan.term: the terminal for the REPL (lua/devplan/repl.lua) and the
 * command line's colour decision, preloaded by the executable only.
 *
 * Line editing, history and completion come from libedit (Debian's
 * libedit-dev, BSD-licensed like the rest of devplan can be) through its
 * readline-compatible interface:
 *
 *   term.isatty(fd)               -> boolean (0 stdin, 1 stdout, 2 stderr)
 *   term.readline(prompt)         -> the line without its newline, nil at end of input,
 *                                    or false when Ctrl-C dropped the line
 *   term.pcall(f, ...)            -> pcall(f, ...), with Ctrl-C while f runs an error
 *                                    "interrupted" (as lua.c: a hook set from the signal
 *                                    handler stops the Lua code at its next call, return
 *                                    or instruction count; C code runs to its end first)
 *   term.add_history(line)
 *   term.read_history(path)       -> true, or nil when there is none yet
 *   term.write_history(path, max) -> true, or nil and a message
 *   term.set_completer(f)         f(word, line_before_word) -> list of candidates
 *                                 (full words replacing `word`); nil removes it
 *
 * The completer is Lua called from inside libedit: it runs protected, and
 * an error in it completes nothing.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <editline/readline.h>
#include <lua.h>
#include <lauxlib.h>
#include "term.h"

static const char COMPLETER_KEY[] = "devplan.term.completer";

/* The state whose readline call is running (completion runs inside it). */
static lua_State *reading;

/* Candidates of the current completion, handed out one per call. */
static char **cands;
static size_t ncands, next_cand;

static void drop_candidates(void) {
  for (size_t i = next_cand; i < ncands; i++) free(cands[i]);
  free(cands);
  cands = NULL;
  ncands = next_cand = 0;
}

/* Asks the Lua completer for the candidates of `word`. */
static void gather(const char *word) {
  lua_State *L = reading;
  drop_candidates();
  if (!L || lua_getfield(L, LUA_REGISTRYINDEX, COMPLETER_KEY) != LUA_TFUNCTION) {
    if (L) lua_pop(L, 1);
    return;
  }
  lua_pushstring(L, word);
  int start = rl_point - (int)strlen(word);
  lua_pushlstring(L, rl_line_buffer, start > 0 ? (size_t)start : 0);
  if (lua_pcall(L, 2, 1, 0) != LUA_OK || lua_type(L, -1) != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  size_t n = (size_t)lua_rawlen(L, -1);
  cands = calloc(n ? n : 1, sizeof *cands);
  for (size_t i = 0; cands && i < n; i++) {
    lua_rawgeti(L, -1, (lua_Integer)i + 1);
    const char *s = lua_tostring(L, -1);
    if (s && (cands[ncands] = strdup(s))) ncands++;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

static char *generator(const char *word, int state) {
  if (state == 0) gather(word);
  if (next_cand < ncands) return cands[next_cand++]; /* libedit frees it */
  return NULL;
}

static char **complete(const char *word, int start, int end) {
  (void)start;
  (void)end;
  rl_attempted_completion_over = 1; /* never file names */
  return rl_completion_matches(word, generator);
}

/* ---------------- Ctrl-C ----------------
   While the REPL reads a line or runs a chunk, SIGINT does not end the
   process: it drops the line being edited, or stops the chunk. */

static volatile sig_atomic_t interrupted;
static lua_State *volatile running; /* the state of a term.pcall in progress */

static void stop_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  interrupted = 0;
  luaL_error(L, "interrupted");
}

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
  if (running) /* lua_sethook is safe in a signal handler (lua.c does this) */
    lua_sethook(running, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

/* Installs on_sigint (no SA_RESTART: a read in libedit returns) and gives
   the previous action back through old. */
static void catch_sigint(struct sigaction *old) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, old);
}

static int t_pcall(lua_State *L) {
  luaL_checkany(L, 1);
  struct sigaction old;
  lua_State *outer = running;
  interrupted = 0;
  running = L;
  catch_sigint(&old);
  int st = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
  sigaction(SIGINT, &old, NULL);
  running = outer;
  lua_sethook(L, NULL, 0, 0); /* a Ctrl-C after the chunk's last instruction */
  interrupted = 0;
  lua_pushboolean(L, st == LUA_OK);
  lua_insert(L, 1);
  return lua_gettop(L);
}

static int t_isatty(lua_State *L) {
  lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)));
  return 1;
}

static int t_readline(lua_State *L) {
  const char *prompt = luaL_optstring(L, 1, "> ");
  struct sigaction old;
  interrupted = 0;
  catch_sigint(&old);
  reading = L;
  char *line = readline(prompt);
  reading = NULL;
  sigaction(SIGINT, &old, NULL);
  drop_candidates();
  if (interrupted) { /* Ctrl-C: the line is dropped, the REPL goes on */
    interrupted = 0;
    free(line);
    lua_pushboolean(L, 0);
    return 1;
  }
  if (!line) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushstring(L, line);
  free(line);
  return 1;
}

static int t_add_history(lua_State *L) {
  add_history(luaL_checkstring(L, 1));
  return 0;
}

static int t_read_history(lua_State *L) {
  if (read_history(luaL_checkstring(L, 1)) != 0) return 0;
  lua_pushboolean(L, 1);
  return 1;
}

static int t_write_history(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  int max = (int)luaL_optinteger(L, 2, 1000);
  if (write_history(path) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "cannot write the history to %s", path);
    return 2;
  }
  history_truncate_file(path, max);
  lua_pushboolean(L, 1);
  return 1;
}

static int t_set_completer(lua_State *L) {
  if (!lua_isnoneornil(L, 1)) luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_settop(L, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, COMPLETER_KEY);
  return 0;
}

int luaopen_devplan_term(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"isatty", t_isatty}, {"readline", t_readline}, {"add_history", t_add_history},
    {"read_history", t_read_history}, {"write_history", t_write_history},
    {"set_completer", t_set_completer}, {"pcall", t_pcall}, {NULL, NULL}};
  rl_readline_name = "devplan";
  rl_attempted_completion_function = complete;
  rl_completion_append_character = '\0'; /* `dp.` goes on with a field, not a space */
  /* `.` and `:` belong to the word, so `dp.planner.ex` completes as one */
  static char breaks[] = " \t\n\"\\'`@$><=;|&{(,[+-*/%^~#";
  rl_basic_word_break_characters = breaks;
  luaL_newlib(L, fns);
  return 1;
}
