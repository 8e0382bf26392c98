/* Placeholder until this part of the binding lands. */
#include "lbind.h"
void dp_lua_open_ir(lua_State *L) { (void)L; }
