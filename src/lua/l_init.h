/*
 * The parts of the Lua binding, one file each, opened in turn by
 * luaopen_devplan_core (l_init.c), as linit.c opens Lua's libraries. Each
 * adds its functions to the table at the top of the stack. A part uses the
 * auxiliary library (l_aux.h) and the value conversions (l_attrs.h,
 * l_const.h); no part calls another.
 */
#ifndef DEVPLAN_L_INIT_H
#define DEVPLAN_L_INIT_H

#include "l_aux.h"

void dp__lua_open_device(lua_State *L);     /* l_device.c: Target, VirtualDevice, CompilationConfig */
void dp__lua_open_type(lua_State *L);       /* l_type.c: dp.type.* */
void dp__lua_open_expr(lua_State *L);       /* l_expr.c: expressions, dp.var, dp.call, ... */
void dp__lua_open_const(lua_State *L);      /* l_const.c: dp.const */
void dp__lua_open_module(lua_State *L);     /* l_irmodule.c: IRModule, typedefs, primfns, printing */
void dp__lua_open_visit(lua_State *L);      /* l_visit.c: dp.visit, dp.rewrite */
void dp__lua_open_op(lua_State *L);         /* l_op.c: dp.op (the operator registry) */
void dp__lua_open_parse(lua_State *L);      /* l_parse.c: the parser's C half */
void dp__lua_open_planner(lua_State *L);    /* l_planner.c: dp.planner */
void dp__lua_open_dfpattern(lua_State *L);  /* l_dfpattern.c: core.pattern, the C half of dp.pattern */
void dp__lua_open_partition(lua_State *L);  /* l_partition.c: core.partition (PartitionByVirtualDevice) */
void dp__lua_open_annotate(lua_State *L);   /* l_annotate.c: core.annotate_calls (AnnotateVirtualDevices) */
void dp__lua_open_suggest(lua_State *L);    /* l_suggest.c: dp.suggest */
void dp__lua_open_debug(lua_State *L);      /* l_debug.c: dp.debug (testing aids) */
void dp__lua_open_schedule(lua_State *L);   /* l_schedule.c: core.schedule (dp.schedule, dp.costs) */
void dp__lua_open_file(lua_State *L);       /* l_file.c: dp.write_file, dp._read_text */
void dp__lua_open_graph(lua_State *L);      /* l_graph.c: core._graph, the C half of dp.graph */
void dp__lua_open_onnx(lua_State *L);       /* l_onnx.c: dp.onnx (importing ONNX models) */

/* l_place.c: raises err, with all_conflicts' errors as its field `errors`
   (PlanDevices and the latency placement report conflicts alike). */
struct dp_conflicts;
int dp__lua_raise_conflicts(lua_State *L, dp_err *err, struct dp_conflicts *all);

/* The C half of `require "devplan"` (l_init.c). */
int luaopen_devplan_core(lua_State *L);

#endif
