/*
 * The Lua binding's shared machinery (internal to src/lua).
 *
 * One interned or shared C object is one Lua value: dp_lua_push keeps a
 * weak cache from C pointer to userdata, so pushing the same object twice
 * gives rawequal values. Each userdata holds one reference, dropped by __gc.
 *
 * Each part of the binding registers its metatables with dp_lua_newmeta and
 * its functions into the `devplan` table in its dp_lua_open_* function.
 */
#ifndef DEVPLAN_LBIND_H
#define DEVPLAN_LBIND_H

#include <lua.h>
#include <lauxlib.h>
#include "devplan/devplan.h"

typedef struct dp_lud {
  dp_obj *obj;
} dp_lud;

/* The context of this Lua state (created by luaopen_devplan_core). */
dp_ctx *dp_lua_ctx(lua_State *L);

/* Creates the metatable for objects of `type` (name is its registry name,
   e.g. "devplan.Expr"), with __gc and __name set, and leaves it on the
   stack for the caller to fill (__index, __tostring, ...). For expressions
   and types one metatable serves all kinds. */
void dp_lua_newmeta(lua_State *L, dp_objtype type, const char *name);

/* Like dp_lua_newmeta, with __index and __tostring set; pops the metatable.
   The usual shape of a class whose fields are read by one C function. */
void dp_lua_newclass(lua_State *L, dp_objtype type, const char *name, lua_CFunction index,
                     lua_CFunction tostring);

/* Push the Lua value of obj (nil for NULL); the caller keeps its reference. */
void dp_lua_push(lua_State *L, void *obj);
/* Push and drop the caller's reference (for new references). */
void dp_lua_push_owned(lua_State *L, void *obj);
/* The ending of a binding that made obj (a new reference): pushes it and
   returns 1. With err set, releases obj and raises err instead; with obj
   NULL and no err, raises "out of memory". */
int dp_lua_push_new(lua_State *L, void *obj, dp_err *err);
/* Pushes the malloc'd string s and frees it (returns 1); NULL raises "out
   of memory". _lstr takes the length, _cstr uses strlen. */
int dp_lua_push_lstr(lua_State *L, char *s, size_t len);
int dp_lua_push_cstr(lua_State *L, char *s);
/* Pushes a list (a Lua table) of the Lua values of n C objects. */
void dp_lua_push_list(lua_State *L, void *const *items, uint32_t n);
/* Pushes t[name] of the table t at the top, first making it an empty table
   when it is not a table (parts of the binding share dp.debug, dp.passes). */
void dp_lua_subtable(lua_State *L, const char *name);

/* The object at idx if it is of `type`, else NULL / a Lua argument error. */
void *dp_lua_test(lua_State *L, int idx, dp_objtype type);
void *dp_lua_check(lua_State *L, int idx, dp_objtype type);
/* Any core object at idx, or NULL. */
dp_obj *dp_lua_testobj(lua_State *L, int idx);

/* Raise e as a Lua error (a devplan.Error value: fields message, code,
   source, line, col, notes = { {message=, line=, col=}, ... }, with a
   __tostring giving dp_err_format). Frees e. Does not return. */
int dp_lua_error(lua_State *L, dp_err *e);
/* Push e as a devplan.Error value (frees e). */
void dp_lua_pusherror(lua_State *L, dp_err *e);
/* dp.Error{message =, code =, ...} and dp.is_error(v) (see lbind.c). */
int dp_lua_error_new(lua_State *L);
int dp_lua_is_error(lua_State *L);
/* Turn the Lua error value at the top of the stack (from lua_pcall of a
   user callback) into a dp_err (DP_ERR_CALLBACK); pops it. */
dp_err *dp_lua_toerr(lua_State *L, const char *what);
/* Replaces the error value at the top of the stack by its text and returns
   it; never raises, even when the value's __tostring does. */
const char *dp_lua_errtext(lua_State *L);

/* Device types: a name ("cuda") or a number at idx; 0 for nil. Raises on
   unknown names. */
int dp_lua_check_device_type(lua_State *L, int idx);

/* Binding parts (one file each). Each adds its functions to the table at
   the top of the stack. */
void dp_lua_open_device(lua_State *L);
void dp_lua_open_ir(lua_State *L);
void dp_lua_open_parse(lua_State *L);
void dp_lua_open_planner(lua_State *L);
void dp_lua_open_pattern(lua_State *L); /* l_pattern.c: core.pattern, the C half of dp.pattern */
void dp_lua_open_suggest(lua_State *L);

/* The C half of `require "devplan"` (l_init.c). */
int luaopen_devplan_core(lua_State *L);

#endif
