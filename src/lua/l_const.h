/*
 * Constants between Lua and C (l_const.c): the elements of a constant
 * tensor as Lua values, for the expression binding's `const.value`.
 */
#ifndef DEVPLAN_L_CONST_H
#define DEVPLAN_L_CONST_H

#include "l_aux.h"

/* Pushes the value of a constant: a number/boolean, or nested tables. */
void dp__lua_push_const_value(lua_State *L, const dp_const *c);

#endif
