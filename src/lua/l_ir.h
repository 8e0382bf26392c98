/*
 * Internal header of the IR part of the Lua binding (src/lua/l_*.c):
 * the entry points of its files and the helpers they share (spans, option
 * tables, attribute values, argument checks).
 *
 * Rule for every constructor binding: do all the checks that may raise a
 * Lua error first, collecting only borrowed pointers (kept alive by the
 * Lua values on the stack); take new C references only after that, so an
 * error never leaks a half-built node.
 */
#ifndef DEVPLAN_L_IR_H
#define DEVPLAN_L_IR_H

#include "lbind.h"

/* One per file; each adds its functions to the table at the top. */
void dp_lua_open_type(lua_State *L);
void dp_lua_open_expr(lua_State *L);
void dp_lua_open_const(lua_State *L);
void dp_lua_open_module(lua_State *L);
void dp_lua_open_visit(lua_State *L);
void dp_lua_open_op(lua_State *L);

/* --- spans and options (l_ir.c) --- */
/* opts.span of the option table at idx (nil or none: no span). */
dp_span dp_lua_opt_span(lua_State *L, int idx);
/* Pushes {source=, line=, col=} or nil for an absent span. */
void dp_lua_push_span(lua_State *L, dp_span s);
/* Raises a Lua argument error unless idx is none, nil or a table. */
void dp_lua_check_opts(lua_State *L, int idx);
/* Raises an argument error naming `who` when the option table at idx (if
   a table) has a key not in `keys` (NULL-terminated): unknown options are
   errors, never ignored. */
void dp_lua_check_opt_keys(lua_State *L, int idx, const char *const keys[], const char *who);
/* Field `key` of the option table at idx pushed (nil when absent). */
int dp_lua_opt_field(lua_State *L, int idx, const char *key);
/* Pushes t[i] of the table at idx, or t[key] when t[i] is nil: entries
   written {a, b} or {name_a =, name_b =}. Returns the pushed value's type. */
int dp_lua_item(lua_State *L, int idx, lua_Integer i, const char *key);

/* --- argument checks with clear messages (l_ir.c) --- */
dp_expr *dp_lua_check_expr(lua_State *L, int idx);
dp_var *dp_lua_check_var(lua_State *L, int idx);
dp_type *dp_lua_check_type(lua_State *L, int idx);
/* nil/none -> NULL, else a type */
dp_type *dp_lua_opt_type(lua_State *L, int idx);
dp_vdev *dp_lua_opt_vdev(lua_State *L, int idx, const char *what);
/* Borrowed pointers of the list (a table) at idx, each of `type` (and,
   for expressions, kind `kind` when not 0), into a scratch buffer that the
   Lua GC owns (or `small` when it fits `nsmall`). `what` names the list in
   messages. *n receives the length. */
void **dp_lua_check_list(lua_State *L, int idx, dp_objtype type, int kind, const char *what,
                         void **small, uint32_t nsmall, uint32_t *n);
/* The same for an optional list: none or nil gives `small` with *n = 0. */
void **dp_lua_opt_list(lua_State *L, int idx, dp_objtype type, int kind, const char *what,
                       void **small, uint32_t nsmall, uint32_t *n);
/* An optional list of type parameters (each a dp.type.var) at idx. */
void **dp_lua_opt_type_params(lua_State *L, int idx, void **small, uint32_t nsmall, uint32_t *n);
/* Returns dp_lua_opt_span of the option table at idx after checking that
   it is none, nil or a table (dp_lua_check_opts): the common trailing
   `opts` argument of the constructors. */
dp_span dp_lua_span_opts(lua_State *L, int idx);

/* --- attribute values (l_attrs.c) --- */
/* dp.NONE, the None attribute value. */
void dp_lua_push_none(lua_State *L);
int dp_lua_is_none(lua_State *L, int idx);
void dp_lua_push_aval(lua_State *L, const dp_aval *v);
/* Checks that the Lua value at idx converts to an attribute value (raises
   otherwise, naming `key`). No C memory is taken. */
void dp_lua_check_aval(lua_State *L, int idx, const char *key);
/* Converts a value checked by dp_lua_check_aval (never raises); `want`
   steers numbers: DP_AK_FLOAT turns an integer into a float. Returns -1
   on out of memory (nothing held). */
int dp_lua_to_aval(lua_State *L, int idx, dp_attrkind want, dp_aval *out);
/* The attribute table at idx (nil: none) as an attribute set: checked
   against op's schema when op is not NULL (dp_op_attrs), else kept with
   keys sorted. Returns NULL for an empty or absent table. Raises on
   misuse; nothing leaks. */
dp_attrs *dp_lua_make_attrs(lua_State *L, int idx, const dp_op *op);
/* Pushes a table name -> value (the set's own values). */
void dp_lua_push_attrs(lua_State *L, const dp_attrs *a);
/* Attribute kind names ("int", "ints", ...); -1 when unknown. */
int dp_lua_attrkind(const char *name);

/* --- constants (l_const.c) --- */
/* Pushes the value of a constant: a number/boolean, or nested tables. */
void dp_lua_push_const_value(lua_State *L, const dp_const *c);

/* --- patterns, typedefs, primfns, printing (l_irmodule.c) --- */
char *dp_lua_pattern_str(const dp_pattern *p);
/* Pushes the text of the module or expression at idx (flags of print.h);
   raises a Lua argument error for anything else. */
int dp_lua_push_printed(lua_State *L, int idx, int flags);

#endif
