/*
 * Lua binding of PartitionByVirtualDevice (partition.h, src/planner/partition.c):
 *
 *   core.partition(mod, config, by, how?) -> mod, regions   (how "replan": the
 *     devices from planning mod again, not from its annotations: for tests)
 *   regions:count(), regions:info(i) -> name, caller, virtual device,
 *   regions:list(i, "nodes" | "inputs" | "outputs") -> expressions
 *   core.partition_targets(mod) -> {target, ...}
 *
 * lua/devplan/passes/partition_by_virtual_device.lua makes the pass of it.
 */
#include <stdlib.h>
#include <string.h>
#include "l_init.h"
#include "devplan/partition.h"

/* The regions of a partitioning (partition.h), held for Lua: a userdata
   owning the dp_regions; the lists of nodes become Lua values only when
   asked for (a million-node module hoists a million nodes). */
#define REGIONS "devplan.Regions"

static int regions_gc(lua_State *L) {
  dp_regions_clear(luaL_checkudata(L, 1, REGIONS));
  return 0;
}

static const dp_region *region_arg(lua_State *L) {
  dp_regions *rs = luaL_checkudata(L, 1, REGIONS);
  lua_Integer i = luaL_checkinteger(L, 2);
  luaL_argcheck(L, i >= 1 && i <= (lua_Integer)rs->n, 2, "no such region");
  return &rs->r[i - 1];
}

/* regions:count() -> n */
static int regions_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)((dp_regions *)luaL_checkudata(L, 1, REGIONS))->n);
  return 1;
}

/* regions:info(i) -> name, caller, virtual device */
static int regions_info(lua_State *L) {
  const dp_region *g = region_arg(L);
  lua_pushstring(L, g->global->name);
  lua_pushstring(L, g->caller);
  dp__lua_push(L, g->vdev);
  return 3;
}

/* regions:list(i, "nodes" | "inputs" | "outputs") -> list of expressions */
static int regions_list(lua_State *L) {
  static const char *const which[] = {"nodes", "inputs", "outputs", NULL};
  const dp_region *g = region_arg(L);
  switch (luaL_checkoption(L, 3, NULL, which)) {
  case 0: dp__lua_push_list(L, (void *const *)g->nodes, g->nnodes); break;
  case 1: dp__lua_push_list(L, (void *const *)g->inputs, g->ninputs); break;
  default: dp__lua_push_list(L, (void *const *)g->outputs, g->noutputs); break;
  }
  return 1;
}

/* partition(mod, config, by) -> mod, regions: PartitionByVirtualDevice
   (partition.h); regions as above (lua/devplan/passes/partition_by_virtual_device.lua
   makes them tables). */
static int l_partition(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  dp_config *cfg = dp__lua_check(L, 2, DP_OBJ_CONFIG);
  static const char *const bys[] = {"virtual_device", "target", "device_type", NULL};
  int by = luaL_checkoption(L, 3, "virtual_device", bys);
  /* (4: "replan" reads the devices through planning again, as reading them
     from the module is checked against) */
  int replan = lua_type(L, 4) == LUA_TSTRING && !strcmp(lua_tostring(L, 4), "replan");
  dp_err *err = NULL;
  dp_regions *rs = lua_newuserdatauv(L, sizeof *rs, 0);
  memset(rs, 0, sizeof *rs);
  if (luaL_newmetatable(L, REGIONS)) {
    static const luaL_Reg methods[] = {
      {"count", regions_count}, {"info", regions_info}, {"list", regions_list}, {NULL, NULL}};
    lua_pushcfunction(L, regions_gc);
    lua_setfield(L, -2, "__gc");
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
  }
  lua_setmetatable(L, -2);
  int at = lua_gettop(L);
  dp_module *r = (replan ? dp_partition_by_device_replanned : dp_partition_by_device)(m, cfg, (dp_partition_by)by, rs, &err);
  if (!r) return dp__lua_error(L, err);
  dp__lua_push_owned(L, r);
  lua_pushvalue(L, at);
  return 2;
}

/* The targets a planned module names (the virtual devices of functions,
   parameters, and on_device and device_copy attributes), each once, in the
   order a post-order walk of each function meets them: what the pass
   builds a configuration from when it is given none. */
typedef struct targets {
  dp_target **t;
  uint32_t n, cap;
  int oom;
} targets;

static void add_target(targets *ts, const dp_vdev *vd) {
  if (!vd || !vd->target || ts->oom) return;
  for (uint32_t i = 0; i < ts->n; i++)
    if (ts->t[i] == vd->target) return;
  if (dp_grow((void **)&ts->t, &ts->cap, ts->n + 1, sizeof *ts->t) < 0) ts->oom = 1;
  else ts->t[ts->n++] = vd->target;
}

static void add_attr(targets *ts, const dp_attrs *a, const char *key) {
  const dp_aval *v = a ? dp_attrs_get(a, key) : NULL;
  if (v && v->kind == DP_AV_VDEV) add_target(ts, v->u.vdev);
}

static int target_post(void *ud, dp_expr *e) {
  targets *ts = ud;
  if (e->h.kind == DP_FUNC) add_target(ts, ((dp_func *)e)->vdev);
  else if (e->h.kind == DP_VAR) add_target(ts, dp_var_vdev((dp_var *)e));
  else if (e->h.kind == DP_CALL && ((dp_call *)e)->fn->h.kind == DP_OP) {
    const dp_attrs *a = ((dp_call *)e)->attrs;
    add_attr(ts, a, "virtual_device");
    add_attr(ts, a, "src_virtual_device");
    add_attr(ts, a, "dst_virtual_device");
  }
  return ts->oom ? -1 : 0;
}

static int l_partition_targets(lua_State *L) {
  dp_module *m = dp__lua_check(L, 1, DP_OBJ_MODULE);
  targets *ts = lua_newuserdatauv(L, sizeof *ts, 0); /* (freed below; a Lua error cannot happen in between) */
  memset(ts, 0, sizeof *ts);
  dp_visitor v = {NULL, target_post, ts};
  int rc = 0;
  for (uint32_t i = 0; i < m->nfuncs && rc == 0; i++) rc = dp_visit(&m->funcs[i].fn->e, &v);
  if (rc < 0 || ts->oom) {
    free(ts->t);
    return dp__lua_oom(L);
  }
  lua_createtable(L, (int)ts->n, 0);
  for (uint32_t i = 0; i < ts->n; i++) {
    dp__lua_push(L, ts->t[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  free(ts->t);
  return 1;
}

void dp__lua_open_partition(lua_State *L) {
  lua_pushcfunction(L, l_partition);
  lua_setfield(L, -2, "partition");
  lua_pushcfunction(L, l_partition_targets);
  lua_setfield(L, -2, "partition_targets");
}
