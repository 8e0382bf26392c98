/*
 * devplan.term (term.c): line editing, history, completion and isatty for
 * the REPL and the command line, preloaded by the executable.
 */
#ifndef DEVPLAN_CLI_TERM_H
#define DEVPLAN_CLI_TERM_H

#include <lua.h>

int luaopen_devplan_term(lua_State *L);

#endif
