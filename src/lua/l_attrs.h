/*
 * Attribute values between Lua and C (l_attrs.c), for the binding files
 * that read or give attributes (calls, operators, patterns).
 */
#ifndef DEVPLAN_L_ATTRS_H
#define DEVPLAN_L_ATTRS_H

#include "l_aux.h"

/* dp.NONE, the None attribute value. */
void dp__lua_push_none(lua_State *L);
int dp__lua_is_none(lua_State *L, int idx);
void dp__lua_push_aval(lua_State *L, const dp_aval *v);
/* Checks that the Lua value at idx converts to an attribute value (raises
   otherwise, naming `key`). No C memory is taken. */
void dp__lua_check_aval(lua_State *L, int idx, const char *key);
/* Converts a value checked by dp__lua_check_aval (never raises); `want`
   steers numbers: DP_AK_FLOAT turns an integer into a float. Returns -1
   on out of memory (nothing held). */
int dp__lua_to_aval(lua_State *L, int idx, dp_attrkind want, dp_aval *out);
/* The attribute table at idx (nil: none) as an attribute set: checked
   against op's schema when op is not NULL (dp_op_attrs), else kept with
   keys sorted. Returns NULL for an empty or absent table. Raises on
   misuse; nothing leaks. */
dp_attrs *dp__lua_make_attrs(lua_State *L, int idx, const dp_op *op);
/* Pushes a table name -> value (the set's own values). */
void dp__lua_push_attrs(lua_State *L, const dp_attrs *a);
/* Attribute kind names ("int", "ints", ...); -1 when unknown. */
int dp__lua_attrkind(const char *name);

#endif
